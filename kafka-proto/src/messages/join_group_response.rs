//! JoinGroup response (API key 11): join a classic consumer group.
//!
//! Versions 0-9, as in Kafka 4.1. Field lines are in wire order; [`crate::schema`] gives the syntax.

use bytes::Bytes;

kafka_struct! {
    pub struct JoinGroupResponse {
        /// The duration in milliseconds for which the request was throttled due to a quota violation, or zero if the request did not violate any quota.
        throttle_time_ms: i32 [v 2..],
        /// The error code, or 0 if there was no error.
        error_code: i16 [v ..],
        /// The generation ID of the group.
        generation_id: i32 [v .., default -1],
        /// The group protocol name.
        protocol_type: Option<String> [v 7.., default None],
        /// The group protocol selected by the coordinator.
        protocol_name: Option<String> [v .., null 7..],
        /// The leader of the group.
        leader: String [v ..],
        /// True if the leader must skip running the assignment.
        skip_assignment: bool [v 9..],
        /// The member ID assigned by the group coordinator.
        member_id: String [v ..],
        /// The group members.
        members: Vec<JoinGroupResponseMember> [v ..],
    }
}

kafka_struct! {
    pub struct JoinGroupResponseMember {
        /// The group member ID.
        member_id: String [v ..],
        /// The unique identifier of the consumer instance provided by end user.
        group_instance_id: Option<String> [v 5.., default None],
        /// The group member metadata.
        metadata: Bytes [v ..],
    }
}
