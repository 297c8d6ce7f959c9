//! DeleteRecords response (API key 21): move partitions' log start offsets forward.
//!
//! Versions 0-2, as in Kafka 4.1. Field lines are in wire order; [`crate::schema`] gives the syntax.

kafka_struct! {
    pub struct DeleteRecordsPartitionResult {

        /// The partition index.
        partition_index: i32 [v ..],

        /// The partition low water mark.
        low_watermark: i64 [v ..],

        /// The deletion error code, or 0 if the deletion succeeded.
        error_code: i16 [v ..],

    }
}

kafka_struct! {
    pub struct DeleteRecordsTopicResult {

        /// The topic name.
        name: String [v ..],

        /// Each partition that we wanted to delete records from.
        partitions: Vec<DeleteRecordsPartitionResult> [v ..],

    }
}

kafka_struct! {
    pub struct DeleteRecordsResponse {

        /// The duration in milliseconds for which the request was throttled due to a quota violation, or zero if the request did not violate any quota.
        throttle_time_ms: i32 [v ..],

        /// Each topic that we wanted to delete records from.
        topics: Vec<DeleteRecordsTopicResult> [v ..],

    }
}
