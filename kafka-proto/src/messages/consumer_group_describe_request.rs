//! ConsumerGroupDescribe request (API key 69): describe consumer groups of the KIP-848 protocol.
//!
//! Versions 0-1, as in Kafka 4.1. Field lines are in wire order; [`crate::schema`] gives the syntax.

kafka_struct! {
    pub struct ConsumerGroupDescribeRequest {

        /// The ids of the groups to describe.
        group_ids: Vec<String> [v ..],

        /// Whether to include authorized operations.
        include_authorized_operations: bool [v ..],

    }
}
