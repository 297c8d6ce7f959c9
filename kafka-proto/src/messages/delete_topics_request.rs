//! DeleteTopics request (API key 20): delete topics.
//!
//! Versions 1-6, as in Kafka 4.1. Field lines are in wire order; [`crate::schema`] gives the syntax.

use uuid::Uuid;

kafka_struct! {
    pub struct DeleteTopicState {
        /// The topic name.
        name: Option<String> [v 6.., default None],
        /// The unique topic ID.
        topic_id: Uuid [v 6..],
    }
}

kafka_struct! {
    pub struct DeleteTopicsRequest {
        /// The name or topic ID of the topic.
        topics: Vec<DeleteTopicState> [v 6..],
        /// The names of the topics to delete.
        topic_names: Vec<String> [v 1..=5],
        /// The length of time in milliseconds to wait for the deletions to complete.
        timeout_ms: i32 [v ..],
    }
}
