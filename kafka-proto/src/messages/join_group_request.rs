//! JoinGroup request (API key 11): join a classic consumer group.
//!
//! Versions 0-9, as in Kafka 4.1. Field lines are in wire order; [`crate::schema`] gives the syntax.

use bytes::Bytes;

kafka_struct! {
    pub struct JoinGroupRequest {
        /// The group identifier.
        group_id: String [v ..],
        /// The coordinator considers the consumer dead if it receives no heartbeat after this timeout in milliseconds.
        session_timeout_ms: i32 [v ..],
        /// The maximum time in milliseconds that the coordinator will wait for each member to rejoin when rebalancing the group.
        rebalance_timeout_ms: i32 [v 1.., default -1],
        /// The member id assigned by the group coordinator.
        member_id: String [v ..],
        /// The unique identifier of the consumer instance provided by end user.
        group_instance_id: Option<String> [v 5.., default None],
        /// The unique name the for class of protocols implemented by the group we want to join.
        protocol_type: String [v ..],
        /// The list of protocols that the member supports.
        protocols: Vec<JoinGroupRequestProtocol> [v ..],
        /// The reason why the member (re-)joins the group.
        reason: Option<String> [v 8.., default None],
    }
}

kafka_struct! {
    pub struct JoinGroupRequestProtocol {
        /// The protocol name.
        name: String [v ..],
        /// The protocol metadata.
        metadata: Bytes [v ..],
    }
}
