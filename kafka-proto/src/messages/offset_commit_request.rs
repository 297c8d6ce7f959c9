//! OffsetCommit request (API key 8): store a group's consumed offsets.
//!
//! Versions 2-10, as in Kafka 4.4. Field lines are in wire order; [`crate::schema`] gives the syntax.

use uuid::Uuid;

kafka_struct! {
    pub struct OffsetCommitRequest {
        /// The unique group identifier.
        group_id: String [v ..],
        /// The generation of the group if using the classic group protocol or the member epoch if using the consumer protocol.
        generation_id_or_member_epoch: i32 [v .., default -1],
        /// The member ID assigned by the group coordinator.
        member_id: String [v ..],
        /// The unique identifier of the consumer instance provided by end user.
        group_instance_id: Option<String> [v 7.., default None],
        /// The time period in ms to retain the offset.
        retention_time_ms: i64 [v 2..=4, default -1],
        /// The topics to commit offsets for.
        topics: Vec<OffsetCommitRequestTopic> [v ..],
    }
}

kafka_struct! {
    pub struct OffsetCommitRequestPartition {
        /// The partition index.
        partition_index: i32 [v ..],
        /// The message offset to be committed.
        committed_offset: i64 [v ..],
        /// The leader epoch of this partition.
        committed_leader_epoch: i32 [v 6.., default -1],
        /// Any associated metadata the client wants to keep.
        committed_metadata: Option<String> [v ..],
    }
}

kafka_struct! {
    pub struct OffsetCommitRequestTopic {
        /// The topic name.
        name: String [v ..=9],
        /// The topic ID (KIP-848).
        topic_id: Uuid [v 10..],
        /// Each partition to commit offsets for.
        partitions: Vec<OffsetCommitRequestPartition> [v ..],
    }
}
