//! CreatePartitions response (API key 37): add partitions to topics.
//!
//! Versions 0-3, as in Kafka 4.1. Field lines are in wire order; [`crate::schema`] gives the syntax.

kafka_struct! {
    pub struct CreatePartitionsResponse {
        /// The duration in milliseconds for which the request was throttled due to a quota violation, or zero if the request did not violate any quota.
        throttle_time_ms: i32 [v ..],
        /// The partition creation results for each topic.
        results: Vec<CreatePartitionsTopicResult> [v ..],
    }
}

kafka_struct! {
    pub struct CreatePartitionsTopicResult {
        /// The topic name.
        name: String [v ..],
        /// The result error, or zero if there was no error.
        error_code: i16 [v ..],
        /// The result message, or null if there was no error.
        error_message: Option<String> [v .., default None],
    }
}
