//! DescribeGroups request (API key 15): describe consumer groups and their members.
//!
//! Versions 0-6, as in Kafka 4.1. Field lines are in wire order; [`crate::schema`] gives the syntax.

kafka_struct! {
    pub struct DescribeGroupsRequest {
        /// The names of the groups to describe.
        groups: Vec<String> [v ..],
        /// Whether to include authorized operations.
        include_authorized_operations: bool [v 3..],
    }
}
