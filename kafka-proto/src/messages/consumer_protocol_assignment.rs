//! The ConsumerProtocol Assignment payload (v0-3), carried inside JoinGroup and SyncGroup.

use bytes::Bytes;

kafka_struct! {
    pub struct ConsumerProtocolAssignment {
        /// The list of topics and partitions assigned to this consumer.
        assigned_partitions: Vec<TopicPartition> [v ..],
        /// User data.
        user_data: Option<Bytes> [v .., default None],
    }
}

kafka_struct! {
    pub struct TopicPartition {
        /// The topic name.
        topic: String [v ..],
        /// The list of partitions assigned to this consumer.
        partitions: Vec<i32> [v ..],
    }
}
