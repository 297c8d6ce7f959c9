//! TxnOffsetCommit response (API key 28): commit offsets inside a transaction.
//!
//! Versions 0-6, as in Kafka 4.4. Field lines are in wire order; [`crate::schema`] gives the syntax.

use uuid::Uuid;

kafka_struct! {
    pub struct TxnOffsetCommitResponse {
        /// The duration in milliseconds for which the request was throttled due to a quota violation, or zero if the request did not violate any quota.
        throttle_time_ms: i32 [v ..],
        /// The responses for each topic.
        topics: Vec<TxnOffsetCommitResponseTopic> [v ..],
    }
}

kafka_struct! {
    pub struct TxnOffsetCommitResponsePartition {
        /// The partition index.
        partition_index: i32 [v ..],
        /// The error code, or 0 if there was no error.
        error_code: i16 [v ..],
    }
}

kafka_struct! {
    pub struct TxnOffsetCommitResponseTopic {
        /// The topic name.
        name: String [v ..=5],
        /// The topic ID (KIP-1319).
        topic_id: Uuid [v 6..],
        /// The responses for each partition in the topic.
        partitions: Vec<TxnOffsetCommitResponsePartition> [v ..],
    }
}
