//! OffsetCommit response (API key 8): store a group's consumed offsets.
//!
//! Versions 2-10, as in Kafka 4.4. Field lines are in wire order; [`crate::schema`] gives the syntax.

use uuid::Uuid;

kafka_struct! {
    pub struct OffsetCommitResponse {
        /// The duration in milliseconds for which the request was throttled due to a quota violation, or zero if the request did not violate any quota.
        throttle_time_ms: i32 [v 3..],
        /// The responses for each topic.
        topics: Vec<OffsetCommitResponseTopic> [v ..],
    }
}

kafka_struct! {
    pub struct OffsetCommitResponsePartition {
        /// The partition index.
        partition_index: i32 [v ..],
        /// The error code, or 0 if there was no error.
        error_code: i16 [v ..],
    }
}

kafka_struct! {
    pub struct OffsetCommitResponseTopic {
        /// The topic name.
        name: String [v ..=9],
        /// The topic ID (KIP-848).
        topic_id: Uuid [v 10..],
        /// The responses for each partition in the topic.
        partitions: Vec<OffsetCommitResponsePartition> [v ..],
    }
}
