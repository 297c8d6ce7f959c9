//! CreateTopics request (API key 19): create topics.
//!
//! Versions 2-7, as in Kafka 4.1. Field lines are in wire order; [`crate::schema`] gives the syntax.

kafka_struct! {
    pub struct CreatableReplicaAssignment {
        /// The partition index.
        partition_index: i32 [v ..],
        /// The brokers to place the partition on.
        broker_ids: Vec<i32> [v ..],
    }
}

kafka_struct! {
    pub struct CreatableTopic {
        /// The topic name.
        name: String [v ..],
        /// The number of partitions to create in the topic, or -1 if we are either specifying a manual partition assignment or using the default partitions.
        num_partitions: i32 [v ..],
        /// The number of replicas to create for each partition in the topic, or -1 if we are either specifying a manual partition assignment or using the default replication factor.
        replication_factor: i16 [v ..],
        /// The manual partition assignment, or the empty array if we are using automatic assignment.
        assignments: Vec<CreatableReplicaAssignment> [v ..],
        /// The custom topic configurations to set.
        configs: Vec<CreatableTopicConfig> [v ..],
    }
}

kafka_struct! {
    pub struct CreatableTopicConfig {
        /// The configuration name.
        name: String [v ..],
        /// The configuration value.
        value: Option<String> [v ..],
    }
}

kafka_struct! {
    pub struct CreateTopicsRequest {
        /// The topics to create.
        topics: Vec<CreatableTopic> [v ..],
        /// How long to wait in milliseconds before timing out the request.
        timeout_ms: i32 [v .., default 60000],
        /// If true, check that the topics can be created as specified, but don't create anything.
        validate_only: bool [v ..],
    }
}
