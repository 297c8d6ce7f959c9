//! The ConsumerProtocol Subscription payload (v0-3), carried inside JoinGroup and SyncGroup.

use bytes::Bytes;

kafka_struct! {
    pub struct ConsumerProtocolSubscription {
        /// The topics that the member wants to consume.
        topics: Vec<String> [v ..],
        /// User data that will be passed back to the consumer.
        user_data: Option<Bytes> [v .., default None],
        /// The partitions that the member owns.
        owned_partitions: Vec<TopicPartition> [v 1..],
        /// The generation id of the member.
        generation_id: i32 [v 2.., default -1],
        /// The rack id of the member.
        rack_id: Option<String> [v 3.., default None],
    }
}

kafka_struct! {
    pub struct TopicPartition {
        /// The topic name.
        topic: String [v 1..],
        /// The partition ids.
        partitions: Vec<i32> [v 1..],
    }
}
