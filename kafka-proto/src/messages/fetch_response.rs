//! Fetch response (API key 1): read record batches from partition leaders.
//!
//! Versions 4-18, as in Kafka 4.1. Field lines are in wire order; [`crate::schema`] gives the syntax.

use bytes::Bytes;
use uuid::Uuid;

kafka_struct! {
    pub struct AbortedTransaction {
        /// The producer id associated with the aborted transaction.
        producer_id: i64 [v ..],
        /// The first offset in the aborted transaction.
        first_offset: i64 [v ..],
    }
}

kafka_struct! {
    pub struct EpochEndOffset {
        /// The largest epoch.
        epoch: i32 [v 12.., default -1],
        /// The end offset of the epoch.
        end_offset: i64 [v 12.., default -1],
    }
}

kafka_struct! {
    pub struct FetchResponse {
        /// The duration in milliseconds for which the request was throttled due to a quota violation, or zero if the request did not violate any quota.
        throttle_time_ms: i32 [v ..],
        /// The top level response error code.
        error_code: i16 [v 7..],
        /// The fetch session ID, or 0 if this is not part of a fetch session.
        session_id: i32 [v 7..],
        /// The response topics.
        responses: Vec<FetchableTopicResponse> [v ..],
        /// Endpoints for all current-leaders enumerated in PartitionData, with errors NOT_LEADER_OR_FOLLOWER & FENCED_LEADER_EPOCH.
        node_endpoints: Vec<NodeEndpoint> [v 16.., tag 0],
    }
}

kafka_struct! {
    pub struct FetchableTopicResponse {
        /// The topic name.
        topic: String [v 4..=12],
        /// The unique topic ID.
        topic_id: Uuid [v 13..],
        /// The topic partitions.
        partitions: Vec<PartitionData> [v ..],
    }
}

kafka_struct! {
    pub struct LeaderIdAndEpoch {
        /// The ID of the current leader or -1 if the leader is unknown.
        leader_id: i32 [v 12.., default -1],
        /// The latest known leader epoch.
        leader_epoch: i32 [v 12.., default -1],
    }
}

kafka_struct! {
    pub struct NodeEndpoint {
        /// The ID of the associated node.
        node_id: i32 [v 16..],
        /// The node's hostname.
        host: String [v 16..],
        /// The node's port.
        port: i32 [v 16..],
        /// The rack of the node, or null if it has not been assigned to a rack.
        rack: Option<String> [v 16.., default None],
    }
}

kafka_struct! {
    pub struct PartitionData {
        /// The partition index.
        partition_index: i32 [v ..],
        /// The error code, or 0 if there was no fetch error.
        error_code: i16 [v ..],
        /// The current high water mark.
        high_watermark: i64 [v ..],
        /// The last stable offset (or LSO) of the partition. This is the last offset such that the state of all transactional records prior to this offset have been decided (ABORTED or COMMITTED).
        last_stable_offset: i64 [v .., default -1],
        /// The current log start offset.
        log_start_offset: i64 [v 5.., default -1],
        /// In case divergence is detected based on the `LastFetchedEpoch` and `FetchOffset` in the request, this field indicates the largest epoch and its end offset such that subsequent records are known to diverge.
        diverging_epoch: EpochEndOffset [v 12.., tag 0],
        /// The current leader of the partition.
        current_leader: LeaderIdAndEpoch [v 12.., tag 1],
        /// In the case of fetching an offset less than the LogStartOffset, this is the end offset and epoch that should be used in the FetchSnapshot request.
        snapshot_id: SnapshotId [v 12.., tag 2],
        /// The aborted transactions.
        aborted_transactions: Option<Vec<AbortedTransaction>> [v ..],
        /// The preferred read replica for the consumer to use on its next fetch request.
        preferred_read_replica: i32 [v 11.., default -1],
        /// The record data.
        records: Option<Bytes> [v ..],
    }
}

kafka_struct! {
    pub struct SnapshotId {
        /// The end offset of the epoch.
        end_offset: i64 [v .., default -1],
        /// The largest epoch.
        epoch: i32 [v .., default -1],
    }
}
