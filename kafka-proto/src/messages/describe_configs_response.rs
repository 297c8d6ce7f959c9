//! DescribeConfigs response (API key 32): topic and broker configurations.
//!
//! Versions 1-4, as in Kafka 4.1 (version 0 was removed). Field lines are in wire order; [`crate::schema`] gives the syntax.

kafka_struct! {
    pub struct DescribeConfigsSynonym {

        /// The synonym name.
        name: String [v ..],

        /// The synonym value.
        value: Option<String> [v ..],

        /// The synonym source.
        source: i8 [v ..],

    }
}

kafka_struct! {
    pub struct DescribeConfigsResourceResult {

        /// The configuration name.
        name: String [v ..],

        /// The configuration value.
        value: Option<String> [v ..],

        /// True if the configuration is read-only.
        read_only: bool [v ..],

        /// The configuration source.
        config_source: i8 [v .., default -1],

        /// True if this configuration is sensitive.
        is_sensitive: bool [v ..],

        /// The synonyms for this configuration key.
        synonyms: Vec<DescribeConfigsSynonym> [v ..],

        /// The configuration data type. Type can be one of the following values - BOOLEAN, STRING, INT, SHORT, LONG, DOUBLE, LIST, CLASS, PASSWORD.
        config_type: i8 [v 3..],

        /// The configuration documentation.
        documentation: Option<String> [v 3..],

    }
}

kafka_struct! {
    pub struct DescribeConfigsResult {

        /// The error code, or 0 if we were able to successfully describe the configurations.
        error_code: i16 [v ..],

        /// The error message, or null if we were able to successfully describe the configurations.
        error_message: Option<String> [v ..],

        /// The resource type.
        resource_type: i8 [v ..],

        /// The resource name.
        resource_name: String [v ..],

        /// Each listed configuration.
        configs: Vec<DescribeConfigsResourceResult> [v ..],

    }
}

kafka_struct! {
    pub struct DescribeConfigsResponse {

        /// The duration in milliseconds for which the request was throttled due to a quota violation, or zero if the request did not violate any quota.
        throttle_time_ms: i32 [v ..],

        /// The results for each resource.
        results: Vec<DescribeConfigsResult> [v ..],

    }
}
