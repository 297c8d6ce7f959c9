//! CreatePartitions request (API key 37): add partitions to topics.
//!
//! Versions 0-3, as in Kafka 4.1. Field lines are in wire order; [`crate::schema`] gives the syntax.

kafka_struct! {
    pub struct CreatePartitionsAssignment {
        /// The assigned broker IDs.
        broker_ids: Vec<i32> [v ..],
    }
}

kafka_struct! {
    pub struct CreatePartitionsTopic {
        /// The topic name.
        name: String [v ..],
        /// The new partition count.
        count: i32 [v ..],
        /// The new partition assignments.
        assignments: Option<Vec<CreatePartitionsAssignment>> [v ..],
    }
}

kafka_struct! {
    pub struct CreatePartitionsRequest {
        /// Each topic that we want to create new partitions inside.
        topics: Vec<CreatePartitionsTopic> [v ..],
        /// The time in ms to wait for the partitions to be created.
        timeout_ms: i32 [v ..],
        /// If true, then validate the request, but don't actually increase the number of partitions.
        validate_only: bool [v ..],
    }
}
