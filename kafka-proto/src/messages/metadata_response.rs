//! Metadata response (API key 3): brokers, topics, partitions and their leaders.
//!
//! Versions 0-13, as in Kafka 4.1. Field lines are in wire order; [`crate::schema`] gives the syntax.

use uuid::Uuid;

kafka_struct! {
    pub struct MetadataResponse {
        /// The duration in milliseconds for which the request was throttled due to a quota violation, or zero if the request did not violate any quota.
        throttle_time_ms: i32 [v 3..],
        /// A list of brokers present in the cluster.
        brokers: Vec<MetadataResponseBroker> [v ..],
        /// The cluster ID that responding broker belongs to.
        cluster_id: Option<String> [v 2.., default None],
        /// The ID of the controller broker.
        controller_id: i32 [v 1.., default -1],
        /// Each topic in the response.
        topics: Vec<MetadataResponseTopic> [v ..],
        /// 32-bit bitfield to represent authorized operations for this cluster.
        cluster_authorized_operations: i32 [v 8..=10, default -2147483648],
        /// The top-level error code, or 0 if there was no error.
        error_code: i16 [v 13..],
    }
}

kafka_struct! {
    pub struct MetadataResponseBroker {
        /// The broker ID.
        node_id: i32 [v ..],
        /// The broker hostname.
        host: String [v ..],
        /// The broker port.
        port: i32 [v ..],
        /// The rack of the broker, or null if it has not been assigned to a rack.
        rack: Option<String> [v 1.., default None],
    }
}

kafka_struct! {
    pub struct MetadataResponsePartition {
        /// The partition error, or 0 if there was no error.
        error_code: i16 [v ..],
        /// The partition index.
        partition_index: i32 [v ..],
        /// The ID of the leader broker.
        leader_id: i32 [v ..],
        /// The leader epoch of this partition.
        leader_epoch: i32 [v 7.., default -1],
        /// The set of all nodes that host this partition.
        replica_nodes: Vec<i32> [v ..],
        /// The set of nodes that are in sync with the leader for this partition.
        isr_nodes: Vec<i32> [v ..],
        /// The set of offline replicas of this partition.
        offline_replicas: Vec<i32> [v 5..],
    }
}

kafka_struct! {
    pub struct MetadataResponseTopic {
        /// The topic error, or 0 if there was no error.
        error_code: i16 [v ..],
        /// The topic name. Null for non-existing topics queried by ID. This is never null when ErrorCode is zero. One of Name and TopicId is always populated.
        name: Option<String> [v .., null 12..],
        /// The topic id. Zero for non-existing topics queried by name. This is never zero when ErrorCode is zero. One of Name and TopicId is always populated.
        topic_id: Uuid [v 10..],
        /// True if the topic is internal.
        is_internal: bool [v 1..],
        /// Each partition in the topic.
        partitions: Vec<MetadataResponsePartition> [v ..],
        /// 32-bit bitfield to represent authorized operations for this topic.
        topic_authorized_operations: i32 [v 8.., default -2147483648],
    }
}
