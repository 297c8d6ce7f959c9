//! Fetch request (API key 1): read record batches from partition leaders.
//!
//! Versions 4-18, as in Kafka 4.1. Field lines are in wire order; [`crate::schema`] gives the syntax.

use uuid::Uuid;

kafka_struct! {
    pub struct FetchPartition {
        /// The partition index.
        partition: i32 [v ..],
        /// The current leader epoch of the partition.
        current_leader_epoch: i32 [v 9.., default -1],
        /// The message offset.
        fetch_offset: i64 [v ..],
        /// The epoch of the last fetched record or -1 if there is none.
        last_fetched_epoch: i32 [v 12.., default -1],
        /// The earliest available offset of the follower replica.  The field is only used when the request is sent by the follower.
        log_start_offset: i64 [v 5.., default -1],
        /// The maximum bytes to fetch from this partition.  See KIP-74 for cases where this limit may not be honored.
        partition_max_bytes: i32 [v ..],
        /// The directory id of the follower fetching.
        replica_directory_id: Uuid [v 17.., tag 0],
        /// The high-watermark known by the replica. -1 if the high-watermark is not known and 9223372036854775807 if the feature is not supported.
        high_watermark: i64 [v 18.., tag 1, default 9223372036854775807],
    }
}

kafka_struct! {
    pub struct FetchRequest {
        /// The clusterId if known. This is used to validate metadata fetches prior to broker registration.
        cluster_id: Option<String> [v 12.., tag 0, default None],
        /// The broker ID of the follower, of -1 if this request is from a consumer.
        replica_id: i32 [v 4..=14, default -1],
        /// The state of the replica in the follower.
        replica_state: ReplicaState [v 15.., tag 1],
        /// The maximum time in milliseconds to wait for the response.
        max_wait_ms: i32 [v ..],
        /// The minimum bytes to accumulate in the response.
        min_bytes: i32 [v ..],
        /// The maximum bytes to fetch.  See KIP-74 for cases where this limit may not be honored.
        max_bytes: i32 [v .., default 0x7fffffff],
        /// This setting controls the visibility of transactional records. Using READ_UNCOMMITTED (isolation_level = 0) makes all records visible. With READ_COMMITTED (isolation_level = 1), non-transactional and COMMITTED transactional records are visible. To be more concrete, READ_COMMITTED returns all data from offsets smaller than the current LSO (last stable offset), and enables the inclusion of the list of aborted transactions in the result, which allows consumers to discard ABORTED transactional records.
        isolation_level: i8 [v ..],
        /// The fetch session ID.
        session_id: i32 [v 7..],
        /// The fetch session epoch, which is used for ordering requests in a session.
        session_epoch: i32 [v 7.., default -1],
        /// The topics to fetch.
        topics: Vec<FetchTopic> [v ..],
        /// In an incremental fetch request, the partitions to remove.
        forgotten_topics_data: Vec<ForgottenTopic> [v 7..],
        /// Rack ID of the consumer making this request.
        rack_id: String [v 11..],
    }
}

kafka_struct! {
    pub struct FetchTopic {
        /// The name of the topic to fetch.
        topic: String [v 4..=12],
        /// The unique topic ID.
        topic_id: Uuid [v 13..],
        /// The partitions to fetch.
        partitions: Vec<FetchPartition> [v ..],
    }
}

kafka_struct! {
    pub struct ForgottenTopic {
        /// The topic name.
        topic: String [v 7..=12],
        /// The unique topic ID.
        topic_id: Uuid [v 13..],
        /// The partitions indexes to forget.
        partitions: Vec<i32> [v 7..],
    }
}

kafka_struct! {
    pub struct ReplicaState {
        /// The replica ID of the follower, or -1 if this request is from a consumer.
        replica_id: i32 [v 15.., default -1],
        /// The epoch of this follower, or -1 if not available.
        replica_epoch: i64 [v 15.., default -1],
    }
}
