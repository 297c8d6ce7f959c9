//! LeaveGroup request (API key 13): leave a classic consumer group.
//!
//! Versions 0-5, as in Kafka 4.1. Field lines are in wire order; [`crate::schema`] gives the syntax.

kafka_struct! {
    pub struct LeaveGroupRequest {
        /// The ID of the group to leave.
        group_id: String [v ..],
        /// The member ID to remove from the group.
        member_id: String [v 0..=2],
        /// List of leaving member identities.
        members: Vec<MemberIdentity> [v 3..],
    }
}

kafka_struct! {
    pub struct MemberIdentity {
        /// The member ID to remove from the group.
        member_id: String [v 3..],
        /// The group instance ID to remove from the group.
        group_instance_id: Option<String> [v 3.., default None],
        /// The reason why the member left the group.
        reason: Option<String> [v 5.., default None],
    }
}
