//! SyncGroup request (API key 14): distribute and receive partition assignments.
//!
//! Versions 0-5, as in Kafka 4.1. Field lines are in wire order; [`crate::schema`] gives the syntax.

use bytes::Bytes;

kafka_struct! {
    pub struct SyncGroupRequest {
        /// The unique group identifier.
        group_id: String [v ..],
        /// The generation of the group.
        generation_id: i32 [v ..],
        /// The member ID assigned by the group.
        member_id: String [v ..],
        /// The unique identifier of the consumer instance provided by end user.
        group_instance_id: Option<String> [v 3.., default None],
        /// The group protocol type.
        protocol_type: Option<String> [v 5.., default None],
        /// The group protocol name.
        protocol_name: Option<String> [v 5.., default None],
        /// Each assignment.
        assignments: Vec<SyncGroupRequestAssignment> [v ..],
    }
}

kafka_struct! {
    pub struct SyncGroupRequestAssignment {
        /// The ID of the member to assign.
        member_id: String [v ..],
        /// The member assignment.
        assignment: Bytes [v ..],
    }
}
