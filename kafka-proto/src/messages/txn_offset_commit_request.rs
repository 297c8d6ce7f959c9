//! TxnOffsetCommit request (API key 28): commit offsets inside a transaction.
//!
//! Versions 0-6, as in Kafka 4.4. Field lines are in wire order; [`crate::schema`] gives the syntax.

use uuid::Uuid;

kafka_struct! {
    pub struct TxnOffsetCommitRequest {
        /// The ID of the transaction.
        transactional_id: String [v ..],
        /// The ID of the group.
        group_id: String [v ..],
        /// The current producer ID in use by the transactional ID.
        producer_id: i64 [v ..],
        /// The current epoch associated with the producer ID.
        producer_epoch: i16 [v ..],
        /// The generation of the consumer.
        generation_id: i32 [v 3.., default -1],
        /// The member ID assigned by the group coordinator.
        member_id: String [v 3..],
        /// The unique identifier of the consumer instance provided by end user.
        group_instance_id: Option<String> [v 3.., default None],
        /// Each topic that we want to commit offsets for.
        topics: Vec<TxnOffsetCommitRequestTopic> [v ..],
    }
}

kafka_struct! {
    pub struct TxnOffsetCommitRequestPartition {
        /// The index of the partition within the topic.
        partition_index: i32 [v ..],
        /// The message offset to be committed.
        committed_offset: i64 [v ..],
        /// The leader epoch of the last consumed record.
        committed_leader_epoch: i32 [v 2.., default -1],
        /// Any associated metadata the client wants to keep.
        committed_metadata: Option<String> [v ..],
    }
}

kafka_struct! {
    pub struct TxnOffsetCommitRequestTopic {
        /// The topic name.
        name: String [v ..=5],
        /// The topic ID (KIP-1319).
        topic_id: Uuid [v 6..],
        /// The partitions inside the topic that we want to commit offsets for.
        partitions: Vec<TxnOffsetCommitRequestPartition> [v ..],
    }
}
