//! AddPartitionsToTxn request (API key 24): add partitions to a transaction.
//!
//! Versions 0-5, as in Kafka 4.1. Field lines are in wire order; [`crate::schema`] gives the syntax.

kafka_struct! {
    pub struct AddPartitionsToTxnRequest {
        /// List of transactions to add partitions to.
        transactions: Vec<AddPartitionsToTxnTransaction> [v 4..],
        /// The transactional id corresponding to the transaction.
        v3_and_below_transactional_id: String [v 0..=3],
        /// Current producer id in use by the transactional id.
        v3_and_below_producer_id: i64 [v 0..=3],
        /// Current epoch associated with the producer id.
        v3_and_below_producer_epoch: i16 [v 0..=3],
        /// The partitions to add to the transaction.
        v3_and_below_topics: Vec<AddPartitionsToTxnTopic> [v 0..=3],
    }
}

kafka_struct! {
    pub struct AddPartitionsToTxnTopic {
        /// The name of the topic.
        name: String [v ..],
        /// The partition indexes to add to the transaction.
        partitions: Vec<i32> [v ..],
    }
}

kafka_struct! {
    pub struct AddPartitionsToTxnTransaction {
        /// The transactional id corresponding to the transaction.
        transactional_id: String [v 4..],
        /// Current producer id in use by the transactional id.
        producer_id: i64 [v 4..],
        /// Current epoch associated with the producer id.
        producer_epoch: i16 [v 4..],
        /// Boolean to signify if we want to check if the partition is in the transaction rather than add it.
        verify_only: bool [v 4..],
        /// The partitions to add to the transaction.
        topics: Vec<AddPartitionsToTxnTopic> [v 4..],
    }
}
