//! Produce response (API key 0): write record batches to partition leaders.
//!
//! Versions 3-13, as in Kafka 4.1. Field lines are in wire order; [`crate::schema`] gives the syntax.

use uuid::Uuid;

kafka_struct! {
    pub struct BatchIndexAndErrorMessage {
        /// The batch index of the record that caused the batch to be dropped.
        batch_index: i32 [v 8..],
        /// The error message of the record that caused the batch to be dropped.
        batch_index_error_message: Option<String> [v 8.., default None],
    }
}

kafka_struct! {
    pub struct LeaderIdAndEpoch {
        /// The ID of the current leader or -1 if the leader is unknown.
        leader_id: i32 [v 10.., default -1],
        /// The latest known leader epoch.
        leader_epoch: i32 [v 10.., default -1],
    }
}

kafka_struct! {
    pub struct NodeEndpoint {
        /// The ID of the associated node.
        node_id: i32 [v 10..],
        /// The node's hostname.
        host: String [v 10..],
        /// The node's port.
        port: i32 [v 10..],
        /// The rack of the node, or null if it has not been assigned to a rack.
        rack: Option<String> [v 10.., default None],
    }
}

kafka_struct! {
    pub struct PartitionProduceResponse {
        /// The partition index.
        index: i32 [v ..],
        /// The error code, or 0 if there was no error.
        error_code: i16 [v ..],
        /// The base offset.
        base_offset: i64 [v ..],
        /// The timestamp returned by broker after appending the messages. If CreateTime is used for the topic, the timestamp will be -1.  If LogAppendTime is used for the topic, the timestamp will be the broker local time when the messages are appended.
        log_append_time_ms: i64 [v .., default -1],
        /// The log start offset.
        log_start_offset: i64 [v 5.., default -1],
        /// The batch indices of records that caused the batch to be dropped.
        record_errors: Vec<BatchIndexAndErrorMessage> [v 8..],
        /// The global error message summarizing the common root cause of the records that caused the batch to be dropped.
        error_message: Option<String> [v 8.., default None],
        /// The leader broker that the producer should use for future requests.
        current_leader: LeaderIdAndEpoch [v 10.., tag 0],
    }
}

kafka_struct! {
    pub struct ProduceResponse {
        /// Each produce response.
        responses: Vec<TopicProduceResponse> [v ..],
        /// The duration in milliseconds for which the request was throttled due to a quota violation, or zero if the request did not violate any quota.
        throttle_time_ms: i32 [v ..],
        /// Endpoints for all current-leaders enumerated in PartitionProduceResponses, with errors NOT_LEADER_OR_FOLLOWER.
        node_endpoints: Vec<NodeEndpoint> [v 10.., tag 0],
    }
}

kafka_struct! {
    pub struct TopicProduceResponse {
        /// The topic name.
        name: String [v 3..=12],
        /// The unique topic ID
        topic_id: Uuid [v 13..],
        /// Each partition that we produced to within the topic.
        partition_responses: Vec<PartitionProduceResponse> [v ..],
    }
}
