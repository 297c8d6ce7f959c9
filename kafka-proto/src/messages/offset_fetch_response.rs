//! OffsetFetch response (API key 9): read a group's committed offsets.
//!
//! Versions 1-10, as in Kafka 4.4. Field lines are in wire order; [`crate::schema`] gives the syntax.

use uuid::Uuid;

kafka_struct! {
    pub struct OffsetFetchResponse {
        /// The duration in milliseconds for which the request was throttled due to a quota violation, or zero if the request did not violate any quota.
        throttle_time_ms: i32 [v 3..],
        /// The responses per topic.
        topics: Vec<OffsetFetchResponseTopic> [v 1..=7],
        /// The top-level error code, or 0 if there was no error.
        error_code: i16 [v 2..=7],
        /// The responses per group id.
        groups: Vec<OffsetFetchResponseGroup> [v 8..],
    }
}

kafka_struct! {
    pub struct OffsetFetchResponseGroup {
        /// The group ID.
        group_id: String [v 8..],
        /// The responses per topic.
        topics: Vec<OffsetFetchResponseTopics> [v 8..],
        /// The group-level error code, or 0 if there was no error.
        error_code: i16 [v 8..],
    }
}

kafka_struct! {
    pub struct OffsetFetchResponsePartition {
        /// The partition index.
        partition_index: i32 [v 1..=7],
        /// The committed message offset.
        committed_offset: i64 [v 1..=7],
        /// The leader epoch.
        committed_leader_epoch: i32 [v 5..=7, default -1],
        /// The partition metadata.
        metadata: Option<String> [v 1..=7],
        /// The error code, or 0 if there was no error.
        error_code: i16 [v 1..=7],
    }
}

kafka_struct! {
    pub struct OffsetFetchResponsePartitions {
        /// The partition index.
        partition_index: i32 [v 8..],
        /// The committed message offset.
        committed_offset: i64 [v 8..],
        /// The leader epoch.
        committed_leader_epoch: i32 [v 8.., default -1],
        /// The partition metadata.
        metadata: Option<String> [v 8..],
        /// The partition-level error code, or 0 if there was no error.
        error_code: i16 [v 8..],
    }
}

kafka_struct! {
    pub struct OffsetFetchResponseTopic {
        /// The topic name.
        name: String [v 1..=7],
        /// The responses per partition.
        partitions: Vec<OffsetFetchResponsePartition> [v 1..=7],
    }
}

kafka_struct! {
    pub struct OffsetFetchResponseTopics {
        /// The topic name.
        name: String [v 8..=9],
        /// The topic ID (KIP-848).
        topic_id: Uuid [v 10..],
        /// The responses per partition.
        partitions: Vec<OffsetFetchResponsePartitions> [v 8..],
    }
}
