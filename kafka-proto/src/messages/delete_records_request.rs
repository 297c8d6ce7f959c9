//! DeleteRecords request (API key 21): move partitions' log start offsets forward.
//!
//! Versions 0-2, as in Kafka 4.1. Field lines are in wire order; [`crate::schema`] gives the syntax.

kafka_struct! {
    pub struct DeleteRecordsPartition {

        /// The partition index.
        partition_index: i32 [v ..],

        /// The deletion offset.
        offset: i64 [v ..],

    }
}

kafka_struct! {
    pub struct DeleteRecordsTopic {

        /// The topic name.
        name: String [v ..],

        /// Each partition that we want to delete records from.
        partitions: Vec<DeleteRecordsPartition> [v ..],

    }
}

kafka_struct! {
    pub struct DeleteRecordsRequest {

        /// Each topic that we want to delete records from.
        topics: Vec<DeleteRecordsTopic> [v ..],

        /// How long to wait for the deletion to complete, in milliseconds.
        timeout_ms: i32 [v ..],

    }
}
