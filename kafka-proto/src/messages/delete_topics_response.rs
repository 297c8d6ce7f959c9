//! DeleteTopics response (API key 20): delete topics.
//!
//! Versions 1-6, as in Kafka 4.1. Field lines are in wire order; [`crate::schema`] gives the syntax.

use uuid::Uuid;

kafka_struct! {
    pub struct DeletableTopicResult {
        /// The topic name.
        name: Option<String> [v .., null 6..],
        /// The unique topic ID.
        topic_id: Uuid [v 6..],
        /// The deletion error, or 0 if the deletion succeeded.
        error_code: i16 [v ..],
        /// The error message, or null if there was no error.
        error_message: Option<String> [v 5.., default None],
    }
}

kafka_struct! {
    pub struct DeleteTopicsResponse {
        /// The duration in milliseconds for which the request was throttled due to a quota violation, or zero if the request did not violate any quota.
        throttle_time_ms: i32 [v ..],
        /// The results for each topic we tried to delete.
        responses: Vec<DeletableTopicResult> [v ..],
    }
}
