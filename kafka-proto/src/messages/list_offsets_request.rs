//! ListOffsets request (API key 2): look up offsets by timestamp, earliest or latest.
//!
//! Versions 1-11, as in Kafka 4.4. Field lines are in wire order; [`crate::schema`] gives the syntax.

kafka_struct! {
    pub struct ListOffsetsPartition {
        /// The partition index.
        partition_index: i32 [v ..],
        /// The current leader epoch.
        current_leader_epoch: i32 [v 4.., default -1],
        /// The current timestamp.
        timestamp: i64 [v ..],
    }
}

kafka_struct! {
    pub struct ListOffsetsRequest {
        /// The broker ID of the requester, or -1 if this request is being made by a normal consumer.
        replica_id: i32 [v ..],
        /// This setting controls the visibility of transactional records. Using READ_UNCOMMITTED (isolation_level = 0) makes all records visible. With READ_COMMITTED (isolation_level = 1), non-transactional and COMMITTED transactional records are visible. To be more concrete, READ_COMMITTED returns all data from offsets smaller than the current LSO (last stable offset), and enables the inclusion of the list of aborted transactions in the result, which allows consumers to discard ABORTED transactional records.
        isolation_level: i8 [v 2..],
        /// Each topic in the request.
        topics: Vec<ListOffsetsTopic> [v ..],
        /// The timeout to await a response in milliseconds for requests that require reading from remote storage for topics enabled with tiered storage.
        timeout_ms: i32 [v 10..],
    }
}

kafka_struct! {
    pub struct ListOffsetsTopic {
        /// The topic name.
        name: String [v ..],
        /// Each partition in the request.
        partitions: Vec<ListOffsetsPartition> [v ..],
    }
}
