//! Produce request (API key 0): write record batches to partition leaders.
//!
//! Versions 3-13, as in Kafka 4.1. Field lines are in wire order; [`crate::schema`] gives the syntax.

use bytes::Bytes;
use uuid::Uuid;

kafka_struct! {
    pub struct PartitionProduceData {
        /// The partition index.
        index: i32 [v ..],
        /// The record data to be produced.
        records: Option<Bytes> [v ..],
    }
}

kafka_struct! {
    pub struct ProduceRequest {
        /// The transactional ID, or null if the producer is not transactional.
        transactional_id: Option<String> [v .., default None],
        /// The number of acknowledgments the producer requires the leader to have received before considering a request complete. Allowed values: 0 for no acknowledgments, 1 for only the leader and -1 for the full ISR.
        acks: i16 [v ..],
        /// The timeout to await a response in milliseconds.
        timeout_ms: i32 [v ..],
        /// Each topic to produce to.
        topic_data: Vec<TopicProduceData> [v ..],
    }
}

kafka_struct! {
    pub struct TopicProduceData {
        /// The topic name.
        name: String [v 3..=12],
        /// The unique topic ID
        topic_id: Uuid [v 13..],
        /// Each partition to produce to.
        partition_data: Vec<PartitionProduceData> [v ..],
    }
}
