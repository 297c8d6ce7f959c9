//! IncrementalAlterConfigs response (API key 44): set, delete, append to or subtract from configurations.
//!
//! Versions 0-1, as in Kafka 4.1. Field lines are in wire order; [`crate::schema`] gives the syntax.

kafka_struct! {
    pub struct AlterConfigsResourceResponse {

        /// The resource error code.
        error_code: i16 [v ..],

        /// The resource error message, or null if there was no error.
        error_message: Option<String> [v ..],

        /// The resource type.
        resource_type: i8 [v ..],

        /// The resource name.
        resource_name: String [v ..],

    }
}

kafka_struct! {
    pub struct IncrementalAlterConfigsResponse {

        /// The duration in milliseconds for which the request was throttled due to a quota violation, or zero if the request did not violate any quota.
        throttle_time_ms: i32 [v ..],

        /// The responses for each resource.
        responses: Vec<AlterConfigsResourceResponse> [v ..],

    }
}
