//! ListGroups request (API key 16): list the groups a broker coordinates.
//!
//! Versions 0-5, as in Kafka 4.1. Field lines are in wire order; [`crate::schema`] gives the syntax.

kafka_struct! {
    pub struct ListGroupsRequest {
        /// The states of the groups we want to list. If empty, all groups are returned with their state.
        states_filter: Vec<String> [v 4..],
        /// The types of the groups we want to list. If empty, all groups are returned with their type.
        types_filter: Vec<String> [v 5..],
    }
}
