//! ListOffsets response (API key 2): look up offsets by timestamp, earliest or latest.
//!
//! Versions 1-11, as in Kafka 4.4. Field lines are in wire order; [`crate::schema`] gives the syntax.

kafka_struct! {
    pub struct ListOffsetsPartitionResponse {
        /// The partition index.
        partition_index: i32 [v ..],
        /// The partition error code, or 0 if there was no error.
        error_code: i16 [v ..],
        /// The timestamp associated with the returned offset.
        timestamp: i64 [v .., default -1],
        /// The returned offset.
        offset: i64 [v .., default -1],
        /// The leader epoch associated with the returned offset.
        leader_epoch: i32 [v 4.., default -1],
    }
}

kafka_struct! {
    pub struct ListOffsetsResponse {
        /// The duration in milliseconds for which the request was throttled due to a quota violation, or zero if the request did not violate any quota.
        throttle_time_ms: i32 [v 2..],
        /// Each topic in the response.
        topics: Vec<ListOffsetsTopicResponse> [v ..],
    }
}

kafka_struct! {
    pub struct ListOffsetsTopicResponse {
        /// The topic name.
        name: String [v ..],
        /// Each partition in the response.
        partitions: Vec<ListOffsetsPartitionResponse> [v ..],
    }
}
