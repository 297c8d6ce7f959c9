//! OffsetFetch request (API key 9): read a group's committed offsets.
//!
//! Versions 1-10, as in Kafka 4.4. Field lines are in wire order; [`crate::schema`] gives the syntax.

use uuid::Uuid;

kafka_struct! {
    pub struct OffsetFetchRequest {
        /// The group to fetch offsets for.
        group_id: String [v 1..=7],
        /// Each topic we would like to fetch offsets for, or null to fetch offsets for all topics.
        topics: Option<Vec<OffsetFetchRequestTopic>> [v 1..=7, null 2..=7],
        /// Each group we would like to fetch offsets for.
        groups: Vec<OffsetFetchRequestGroup> [v 8..],
        /// Whether broker should hold on returning unstable offsets but set a retriable error code for the partitions.
        require_stable: bool [v 7..],
    }
}

kafka_struct! {
    pub struct OffsetFetchRequestGroup {
        /// The group ID.
        group_id: String [v 8..],
        /// The member id.
        member_id: Option<String> [v 9.., default None],
        /// The member epoch if using the new consumer protocol (KIP-848).
        member_epoch: i32 [v 9.., default -1],
        /// Each topic we would like to fetch offsets for, or null to fetch offsets for all topics.
        topics: Option<Vec<OffsetFetchRequestTopics>> [v 8..],
    }
}

kafka_struct! {
    pub struct OffsetFetchRequestTopic {
        /// The topic name.
        name: String [v 1..=7],
        /// The partition indexes we would like to fetch offsets for.
        partition_indexes: Vec<i32> [v 1..=7],
    }
}

kafka_struct! {
    pub struct OffsetFetchRequestTopics {
        /// The topic name.
        name: String [v 8..=9],
        /// The topic ID (KIP-848).
        topic_id: Uuid [v 10..],
        /// The partition indexes we would like to fetch offsets for.
        partition_indexes: Vec<i32> [v 8..],
    }
}
