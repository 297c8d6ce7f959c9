//! AddPartitionsToTxn response (API key 24): add partitions to a transaction.
//!
//! Versions 0-5, as in Kafka 4.1. Field lines are in wire order; [`crate::schema`] gives the syntax.

kafka_struct! {
    pub struct AddPartitionsToTxnPartitionResult {
        /// The partition indexes.
        partition_index: i32 [v ..],
        /// The response error code.
        partition_error_code: i16 [v ..],
    }
}

kafka_struct! {
    pub struct AddPartitionsToTxnResponse {
        /// Duration in milliseconds for which the request was throttled due to a quota violation, or zero if the request did not violate any quota.
        throttle_time_ms: i32 [v ..],
        /// The response top level error code.
        error_code: i16 [v 4..],
        /// Results categorized by transactional ID.
        results_by_transaction: Vec<AddPartitionsToTxnResult> [v 4..],
        /// The results for each topic.
        results_by_topic_v3_and_below: Vec<AddPartitionsToTxnTopicResult> [v 0..=3],
    }
}

kafka_struct! {
    pub struct AddPartitionsToTxnResult {
        /// The transactional id corresponding to the transaction.
        transactional_id: String [v 4..],
        /// The results for each topic.
        topic_results: Vec<AddPartitionsToTxnTopicResult> [v 4..],
    }
}

kafka_struct! {
    pub struct AddPartitionsToTxnTopicResult {
        /// The topic name.
        name: String [v ..],
        /// The results for each partition.
        results_by_partition: Vec<AddPartitionsToTxnPartitionResult> [v ..],
    }
}
