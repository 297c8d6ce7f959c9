//! DescribeGroups response (API key 15): describe consumer groups and their members.
//!
//! Versions 0-6, as in Kafka 4.1. Field lines are in wire order; [`crate::schema`] gives the syntax.

use bytes::Bytes;

kafka_struct! {
    pub struct DescribeGroupsResponse {
        /// The duration in milliseconds for which the request was throttled due to a quota violation, or zero if the request did not violate any quota.
        throttle_time_ms: i32 [v 1..],
        /// Each described group.
        groups: Vec<DescribedGroup> [v ..],
    }
}

kafka_struct! {
    pub struct DescribedGroup {
        /// The describe error, or 0 if there was no error.
        error_code: i16 [v ..],
        /// The describe error message, or null if there was no error.
        error_message: Option<String> [v 6.., default None],
        /// The group ID string.
        group_id: String [v ..],
        /// The group state string, or the empty string.
        group_state: String [v ..],
        /// The group protocol type, or the empty string.
        protocol_type: String [v ..],
        /// The group protocol data, or the empty string.
        protocol_data: String [v ..],
        /// The group members.
        members: Vec<DescribedGroupMember> [v ..],
        /// 32-bit bitfield to represent authorized operations for this group.
        authorized_operations: i32 [v 3.., default -2147483648],
    }
}

kafka_struct! {
    pub struct DescribedGroupMember {
        /// The member id.
        member_id: String [v ..],
        /// The unique identifier of the consumer instance provided by end user.
        group_instance_id: Option<String> [v 4.., default None],
        /// The client ID used in the member's latest join group request.
        client_id: String [v ..],
        /// The client host.
        client_host: String [v ..],
        /// The metadata corresponding to the current group protocol in use.
        member_metadata: Bytes [v ..],
        /// The current assignment provided by the group leader.
        member_assignment: Bytes [v ..],
    }
}
