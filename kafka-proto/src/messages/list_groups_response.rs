//! ListGroups response (API key 16): list the groups a broker coordinates.
//!
//! Versions 0-5, as in Kafka 4.1. Field lines are in wire order; [`crate::schema`] gives the syntax.

kafka_struct! {
    pub struct ListGroupsResponse {
        /// The duration in milliseconds for which the request was throttled due to a quota violation, or zero if the request did not violate any quota.
        throttle_time_ms: i32 [v 1..],
        /// The error code, or 0 if there was no error.
        error_code: i16 [v ..],
        /// Each group in the response.
        groups: Vec<ListedGroup> [v ..],
    }
}

kafka_struct! {
    pub struct ListedGroup {
        /// The group ID.
        group_id: String [v ..],
        /// The group protocol type.
        protocol_type: String [v ..],
        /// The group state name.
        group_state: String [v 4..],
        /// The group type name.
        group_type: String [v 5..],
    }
}
