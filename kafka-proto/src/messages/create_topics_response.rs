//! CreateTopics response (API key 19): create topics.
//!
//! Versions 2-7, as in Kafka 4.1. Field lines are in wire order; [`crate::schema`] gives the syntax.

use uuid::Uuid;

kafka_struct! {
    pub struct CreatableTopicConfigs {
        /// The configuration name.
        name: String [v 5..],
        /// The configuration value.
        value: Option<String> [v 5..],
        /// True if the configuration is read-only.
        read_only: bool [v 5..],
        /// The configuration source.
        config_source: i8 [v 5.., default -1],
        /// True if this configuration is sensitive.
        is_sensitive: bool [v 5..],
    }
}

kafka_struct! {
    pub struct CreatableTopicResult {
        /// The topic name.
        name: String [v ..],
        /// The unique topic ID.
        topic_id: Uuid [v 7..],
        /// The error code, or 0 if there was no error.
        error_code: i16 [v ..],
        /// The error message, or null if there was no error.
        error_message: Option<String> [v ..],
        /// Optional topic config error returned if configs are not returned in the response.
        topic_config_error_code: i16 [v 5.., tag 0],
        /// Number of partitions of the topic.
        num_partitions: i32 [v 5.., default -1],
        /// Replication factor of the topic.
        replication_factor: i16 [v 5.., default -1],
        /// Configuration of the topic.
        configs: Option<Vec<CreatableTopicConfigs>> [v 5..],
    }
}

kafka_struct! {
    pub struct CreateTopicsResponse {
        /// The duration in milliseconds for which the request was throttled due to a quota violation, or zero if the request did not violate any quota.
        throttle_time_ms: i32 [v ..],
        /// Results for each topic we tried to create.
        topics: Vec<CreatableTopicResult> [v ..],
    }
}
