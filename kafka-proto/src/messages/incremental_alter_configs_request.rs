//! IncrementalAlterConfigs request (API key 44): set, delete, append to or subtract from configurations.
//!
//! Versions 0-1, as in Kafka 4.1. Field lines are in wire order; [`crate::schema`] gives the syntax.

kafka_struct! {
    pub struct AlterableConfig {

        /// The configuration key name.
        name: String [v ..],

        /// The type (Set, Delete, Append, Subtract) of operation.
        config_operation: i8 [v ..],

        /// The value to set for the configuration key.
        value: Option<String> [v ..],

    }
}

kafka_struct! {
    pub struct AlterConfigsResource {

        /// The resource type.
        resource_type: i8 [v ..],

        /// The resource name.
        resource_name: String [v ..],

        /// The configurations.
        configs: Vec<AlterableConfig> [v ..],

    }
}

kafka_struct! {
    pub struct IncrementalAlterConfigsRequest {

        /// The incremental updates for each resource.
        resources: Vec<AlterConfigsResource> [v ..],

        /// True if we should validate the request, but not change the configurations.
        validate_only: bool [v ..],

    }
}
