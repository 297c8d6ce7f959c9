//! LeaveGroup response (API key 13): leave a classic consumer group.
//!
//! Versions 0-5, as in Kafka 4.1. Field lines are in wire order; [`crate::schema`] gives the syntax.

kafka_struct! {
    pub struct LeaveGroupResponse {
        /// The duration in milliseconds for which the request was throttled due to a quota violation, or zero if the request did not violate any quota.
        throttle_time_ms: i32 [v 1..],
        /// The error code, or 0 if there was no error.
        error_code: i16 [v ..],
        /// List of leaving member responses.
        members: Vec<MemberResponse> [v 3..],
    }
}

kafka_struct! {
    pub struct MemberResponse {
        /// The member ID to remove from the group.
        member_id: String [v 3..],
        /// The group instance ID to remove from the group.
        group_instance_id: Option<String> [v 3..],
        /// The error code, or 0 if there was no error.
        error_code: i16 [v 3..],
    }
}
