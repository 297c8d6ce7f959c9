//! Heartbeat request (API key 12): keep a classic group membership alive.
//!
//! Versions 0-4, as in Kafka 4.1. Field lines are in wire order; [`crate::schema`] gives the syntax.

kafka_struct! {
    pub struct HeartbeatRequest {
        /// The group id.
        group_id: String [v ..],
        /// The generation of the group.
        generation_id: i32 [v ..],
        /// The member ID.
        member_id: String [v ..],
        /// The unique identifier of the consumer instance provided by end user.
        group_instance_id: Option<String> [v 3.., default None],
    }
}
