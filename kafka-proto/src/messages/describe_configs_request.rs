//! DescribeConfigs request (API key 32): topic and broker configurations.
//!
//! Versions 1-4, as in Kafka 4.1 (version 0 was removed). Field lines are in wire order; [`crate::schema`] gives the syntax.

kafka_struct! {
    pub struct DescribeConfigsResource {

        /// The resource type.
        resource_type: i8 [v ..],

        /// The resource name.
        resource_name: String [v ..],

        /// The configuration keys to list, or null to list all configuration keys.
        configuration_keys: Option<Vec<String>> [v .., default None],

    }
}

kafka_struct! {
    pub struct DescribeConfigsRequest {

        /// The resources whose configurations we want to describe.
        resources: Vec<DescribeConfigsResource> [v ..],

        /// True if we should include all synonyms.
        include_synonyms: bool [v ..],

        /// True if we should include configuration documentation.
        include_documentation: bool [v 3..],

    }
}
