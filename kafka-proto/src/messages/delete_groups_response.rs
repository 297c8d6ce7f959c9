//! DeleteGroups response (API key 42): delete consumer groups that have no members.
//!
//! Versions 0-3, as in Kafka 4.4. Field lines are in wire order; [`crate::schema`] gives the syntax.

kafka_struct! {
    pub struct DeleteGroupsResponse {
        /// The duration in milliseconds for which the request was throttled due to a quota violation, or zero if the request did not violate any quota.
        throttle_time_ms: i32 [v ..],
        /// The deletion results.
        results: Vec<DeletableGroupResult> [v ..],
    }
}

kafka_struct! {
    pub struct DeletableGroupResult {
        /// The group id.
        group_id: String [v ..],
        /// The deletion error, or 0 if the deletion succeeded.
        error_code: i16 [v ..],
        /// The error message, or null if there was no error.
        error_message: Option<String> [v 3.., default None],
    }
}
