//! DeleteGroups request (API key 42): delete consumer groups that have no members.
//!
//! Versions 0-3, as in Kafka 4.4. Field lines are in wire order; [`crate::schema`] gives the syntax.

kafka_struct! {
    pub struct DeleteGroupsRequest {
        /// The group names to delete.
        groups_names: Vec<String> [v ..],
    }
}
