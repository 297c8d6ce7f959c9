//! OffsetForLeaderEpoch request (API key 23): find the end offset of a leader epoch (KIP-320 truncation detection).
//!
//! Versions 2-4, as in Kafka 4.1. Field lines are in wire order; [`crate::schema`] gives the syntax.

kafka_struct! {
    pub struct OffsetForLeaderEpochRequest {
        /// The broker ID of the follower, of -1 if this request is from a consumer.
        replica_id: i32 [v 3.., default -2],
        /// Each topic to get offsets for.
        topics: Vec<OffsetForLeaderTopic> [v ..],
    }
}

kafka_struct! {
    pub struct OffsetForLeaderPartition {
        /// The partition index.
        partition: i32 [v ..],
        /// An epoch used to fence consumers/replicas with old metadata. If the epoch provided by the client is larger than the current epoch known to the broker, then the UNKNOWN_LEADER_EPOCH error code will be returned. If the provided epoch is smaller, then the FENCED_LEADER_EPOCH error code will be returned.
        current_leader_epoch: i32 [v .., default -1],
        /// The epoch to look up an offset for.
        leader_epoch: i32 [v ..],
    }
}

kafka_struct! {
    pub struct OffsetForLeaderTopic {
        /// The topic name.
        topic: String [v ..],
        /// Each partition to get offsets for.
        partitions: Vec<OffsetForLeaderPartition> [v ..],
    }
}
