//! OffsetForLeaderEpoch response (API key 23): find the end offset of a leader epoch (KIP-320 truncation detection).
//!
//! Versions 2-4, as in Kafka 4.1. Field lines are in wire order; [`crate::schema`] gives the syntax.

kafka_struct! {
    pub struct EpochEndOffset {
        /// The error code 0, or if there was no error.
        error_code: i16 [v ..],
        /// The partition index.
        partition: i32 [v ..],
        /// The leader epoch of the partition.
        leader_epoch: i32 [v .., default -1],
        /// The end offset of the epoch.
        end_offset: i64 [v .., default -1],
    }
}

kafka_struct! {
    pub struct OffsetForLeaderEpochResponse {
        /// The duration in milliseconds for which the request was throttled due to a quota violation, or zero if the request did not violate any quota.
        throttle_time_ms: i32 [v ..],
        /// Each topic we fetched offsets for.
        topics: Vec<OffsetForLeaderTopicResult> [v ..],
    }
}

kafka_struct! {
    pub struct OffsetForLeaderTopicResult {
        /// The topic name.
        topic: String [v ..],
        /// Each partition in the topic we fetched offsets for.
        partitions: Vec<EpochEndOffset> [v ..],
    }
}
