//! Metadata request (API key 3): brokers, topics, partitions and their leaders.
//!
//! Versions 0-13, as in Kafka 4.1. Field lines are in wire order; [`crate::schema`] gives the syntax.

use uuid::Uuid;

kafka_struct! {
    pub struct MetadataRequest {
        /// The topics to fetch metadata for.
        topics: Option<Vec<MetadataRequestTopic>> [v .., null 1..],
        /// If this is true, the broker may auto-create topics that we requested which do not already exist, if it is configured to do so.
        allow_auto_topic_creation: bool [v 4.., default true],
        /// Whether to include cluster authorized operations.
        include_cluster_authorized_operations: bool [v 8..=10],
        /// Whether to include topic authorized operations.
        include_topic_authorized_operations: bool [v 8..],
    }
}

kafka_struct! {
    pub struct MetadataRequestTopic {
        /// The topic id.
        topic_id: Uuid [v 10..],
        /// The topic name.
        name: Option<String> [v .., null 10..],
    }
}
