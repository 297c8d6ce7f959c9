//! The simulated cluster's data-plane requests: Metadata, Produce (acks 0, 1 and all, with
//! `min.insync.replicas`), Fetch (up to the high watermark, leader epochs checked, KIP-74 byte
//! limits, long polls; read_committed up to the last stable offset, with the aborted
//! transactions), ListOffsets, OffsetForLeaderEpoch, FindCoordinator, InitProducerId, and
//! Produce's transaction checks (KIP-890 part 1).

use bytes::{Bytes, BytesMut};
use kafka_proto::api::{RequestBody, ResponseBody};
use kafka_proto::messages::add_offsets_to_txn_response::AddOffsetsToTxnResponse;
use kafka_proto::messages::add_partitions_to_txn_response::{
    AddPartitionsToTxnPartitionResult, AddPartitionsToTxnResponse, AddPartitionsToTxnTopicResult,
};
use kafka_proto::messages::end_txn_response::EndTxnResponse;
use kafka_proto::messages::fetch_request::FetchRequest;
use kafka_proto::messages::fetch_response::AbortedTransaction;
use kafka_proto::messages::fetch_response::{FetchResponse, FetchableTopicResponse, PartitionData};
use kafka_proto::messages::find_coordinator_request::FindCoordinatorRequest;
use kafka_proto::messages::find_coordinator_response::{Coordinator, FindCoordinatorResponse};
use kafka_proto::messages::heartbeat_response::HeartbeatResponse;
use kafka_proto::messages::init_producer_id_response::InitProducerIdResponse;
use kafka_proto::messages::join_group_response::JoinGroupResponse;
use kafka_proto::messages::leave_group_response::LeaveGroupResponse;
use kafka_proto::messages::list_offsets_request::ListOffsetsRequest;
use kafka_proto::messages::list_offsets_response::{
    ListOffsetsPartitionResponse, ListOffsetsResponse, ListOffsetsTopicResponse,
};
use kafka_proto::messages::metadata_request::MetadataRequest;
use kafka_proto::messages::metadata_response::{
    MetadataResponse, MetadataResponseBroker, MetadataResponsePartition, MetadataResponseTopic,
};
use kafka_proto::messages::offset_commit_request::OffsetCommitRequest;
use kafka_proto::messages::offset_fetch_request::OffsetFetchRequest;
use kafka_proto::messages::offset_for_leader_epoch_request::OffsetForLeaderEpochRequest;
use kafka_proto::messages::offset_for_leader_epoch_response::{
    EpochEndOffset, OffsetForLeaderEpochResponse, OffsetForLeaderTopicResult,
};
use kafka_proto::messages::produce_request::ProduceRequest;
use kafka_proto::messages::produce_response::{
    PartitionProduceResponse, ProduceResponse, TopicProduceResponse,
};
use kafka_proto::messages::sync_group_response::SyncGroupResponse;
use kafka_proto::messages::txn_offset_commit_response::{
    TxnOffsetCommitResponse, TxnOffsetCommitResponsePartition, TxnOffsetCommitResponseTopic,
};
use kafka_proto::record::RecordBatches;
use uuid::Uuid;

use super::{Answer, PendingPart, PendingProduce, SimCluster, SimTime, Slot};

const OFFSET_OUT_OF_RANGE: i16 = 1;
const UNKNOWN_TOPIC_OR_PARTITION: i16 = 3;
const LEADER_NOT_AVAILABLE: i16 = 5;
const NOT_LEADER_OR_FOLLOWER: i16 = 6;
const REQUEST_TIMED_OUT: i16 = 7;
const COORDINATOR_NOT_AVAILABLE: i16 = 15;
const NOT_COORDINATOR: i16 = 16;
const NOT_ENOUGH_REPLICAS: i16 = 19;
const NOT_ENOUGH_REPLICAS_AFTER_APPEND: i16 = 20;
const UNKNOWN_PRODUCER_ID: i16 = 59;
const FENCED_LEADER_EPOCH: i16 = 74;
const UNKNOWN_LEADER_EPOCH: i16 = 75;

pub(crate) fn init_producer_id(id: i64) -> ResponseBody {
    ResponseBody::InitProducerId(InitProducerIdResponse {
        producer_id: id,
        producer_epoch: 0,
        ..Default::default()
    })
}

pub(crate) fn is_group_api(body: &RequestBody) -> bool {
    matches!(
        body,
        RequestBody::JoinGroup(_)
            | RequestBody::SyncGroup(_)
            | RequestBody::Heartbeat(_)
            | RequestBody::LeaveGroup(_)
            | RequestBody::OffsetCommit(_)
            | RequestBody::OffsetFetch(_)
            | RequestBody::TxnOffsetCommit(_)
            | RequestBody::ConsumerGroupHeartbeat(_)
    )
}

/// The requests only the transaction coordinator serves.
pub(crate) fn is_txn_api(body: &RequestBody) -> bool {
    matches!(
        body,
        RequestBody::AddPartitionsToTxn(_)
            | RequestBody::AddOffsetsToTxn(_)
            | RequestBody::EndTxn(_)
    )
}

/// NOT_COORDINATOR in the shape of each group or transaction API.
pub(crate) fn not_coordinator(body: &RequestBody) -> ResponseBody {
    let e = NOT_COORDINATOR;
    match body {
        RequestBody::JoinGroup(_) => ResponseBody::JoinGroup(JoinGroupResponse {
            error_code: e,
            ..Default::default()
        }),
        RequestBody::SyncGroup(_) => ResponseBody::SyncGroup(SyncGroupResponse {
            error_code: e,
            ..Default::default()
        }),
        RequestBody::Heartbeat(_) => ResponseBody::Heartbeat(HeartbeatResponse {
            error_code: e,
            ..Default::default()
        }),
        RequestBody::LeaveGroup(_) => ResponseBody::LeaveGroup(LeaveGroupResponse {
            error_code: e,
            ..Default::default()
        }),
        RequestBody::ConsumerGroupHeartbeat(_) => ResponseBody::ConsumerGroupHeartbeat(
            kafka_proto::messages::consumer_group_heartbeat_response::ConsumerGroupHeartbeatResponse {
                error_code: e,
                member_epoch: -1,
                ..Default::default()
            },
        ),
        RequestBody::OffsetCommit(r) => commit_error(r, e),
        RequestBody::OffsetFetch(r) => fetch_offsets_error(r, e),
        RequestBody::InitProducerId(_) => ResponseBody::InitProducerId(InitProducerIdResponse {
            error_code: e,
            producer_id: -1,
            producer_epoch: -1,
            ..Default::default()
        }),
        RequestBody::AddOffsetsToTxn(_) => ResponseBody::AddOffsetsToTxn(AddOffsetsToTxnResponse {
            error_code: e,
            ..Default::default()
        }),
        RequestBody::EndTxn(_) => ResponseBody::EndTxn(EndTxnResponse {
            error_code: e,
            ..Default::default()
        }),
        RequestBody::AddPartitionsToTxn(r) => {
            ResponseBody::AddPartitionsToTxn(AddPartitionsToTxnResponse {
                results_by_topic_v3_and_below: r
                    .v3_and_below_topics
                    .iter()
                    .map(|t| AddPartitionsToTxnTopicResult {
                        name: t.name.clone(),
                        results_by_partition: t
                            .partitions
                            .iter()
                            .map(|p| AddPartitionsToTxnPartitionResult {
                                partition_index: *p,
                                partition_error_code: e,
                                ..Default::default()
                            })
                            .collect(),
                        ..Default::default()
                    })
                    .collect(),
                ..Default::default()
            })
        }
        RequestBody::TxnOffsetCommit(r) => ResponseBody::TxnOffsetCommit(TxnOffsetCommitResponse {
            topics: r
                .topics
                .iter()
                .map(|t| TxnOffsetCommitResponseTopic {
                    name: t.name.clone(),
                    partitions: t
                        .partitions
                        .iter()
                        .map(|p| TxnOffsetCommitResponsePartition {
                            partition_index: p.partition_index,
                            error_code: e,
                            ..Default::default()
                        })
                        .collect(),
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        }),
        _ => unreachable!("only group and transaction APIs"),
    }
}

fn commit_error(r: &OffsetCommitRequest, e: i16) -> ResponseBody {
    crate::group::offset_commit(r, e, |_, _, _, _| {})
}

fn fetch_offsets_error(r: &OffsetFetchRequest, e: i16) -> ResponseBody {
    use kafka_proto::messages::offset_fetch_response::{
        OffsetFetchResponse, OffsetFetchResponseGroup,
    };
    ResponseBody::OffsetFetch(OffsetFetchResponse {
        error_code: e,
        groups: r
            .groups
            .iter()
            .map(|g| OffsetFetchResponseGroup {
                group_id: g.group_id.clone(),
                error_code: e,
                ..Default::default()
            })
            .collect(),
        ..Default::default()
    })
}

impl SimCluster {
    pub(super) fn topic_name(&self, id: Uuid, name: &str) -> String {
        if id.is_nil() {
            return name.to_owned();
        }
        self.topics
            .iter()
            .find(|(_, t)| t.0 == id)
            .map(|(n, _)| n.clone())
            .unwrap_or_default()
    }

    /// Whether the partition's leader is not ready for Produce yet. The first Produce of each
    /// leader epoch starts a moment (none for half of them, else 20 µs to 40 ms, fixed by the
    /// seed, the partition and the epoch) in which it is refused.
    fn leader_warming(&mut self, topic: &str, partition: i32) -> bool {
        if !self.warmups {
            return false;
        }
        let Some(epoch) = self.partition(topic, partition).map(|p| p.epoch) else {
            return false;
        };
        let now = self.now;
        let key = (topic.to_owned(), partition);
        match self.warming.get(&key) {
            Some((e, until)) if *e == epoch => now < *until,
            _ => {
                let mut h = self.seed ^ 0x9e37_79b9_7f4a_7c15;
                for x in [partition as u64, epoch as u64, topic.len() as u64] {
                    h = (h ^ x).wrapping_mul(0x100_0000_01b3).rotate_left(17);
                }
                // Log-uniform from 20 µs to 40 ms: a window that ends while the first
                // batch's refusal is on its way back (under a round trip) must be common, for
                // a later batch to land first (defect 0 of #33).
                let us = if h.is_multiple_of(2) {
                    0
                } else {
                    let unit = ((h >> 11) % 1_000_000) as f64 / 1_000_000.0;
                    (20.0 * 2000f64.powf(unit)) as u64
                };
                let until = now + SimTime::from_micros(us);
                self.warming.insert(key, (epoch, until));
                now < until
            }
        }
    }

    /// A partition's error for a request at `node` carrying `epoch` (-1: unchecked).
    fn leadership(&self, node: i32, topic: &str, partition: i32, epoch: i32) -> Option<i16> {
        let Some(p) = self.partition(topic, partition) else {
            return Some(UNKNOWN_TOPIC_OR_PARTITION);
        };
        if p.leader != Some(node) {
            return Some(NOT_LEADER_OR_FOLLOWER);
        }
        if epoch >= 0 && epoch < p.epoch {
            return Some(FENCED_LEADER_EPOCH);
        }
        if epoch > p.epoch {
            return Some(UNKNOWN_LEADER_EPOCH);
        }
        None
    }

    pub(super) fn metadata(&self, req: &MetadataRequest) -> ResponseBody {
        let names: Vec<String> = match &req.topics {
            None => self.topics.keys().cloned().collect(),
            Some(ts) => ts
                .iter()
                .map(|t| self.topic_name(t.topic_id, t.name.as_deref().unwrap_or("")))
                .collect(),
        };
        let topics = names
            .into_iter()
            .map(|name| match self.topics.get(&name) {
                None => MetadataResponseTopic {
                    error_code: UNKNOWN_TOPIC_OR_PARTITION,
                    name: Some(name),
                    ..Default::default()
                },
                Some((id, parts)) => MetadataResponseTopic {
                    name: Some(name.clone()),
                    topic_id: *id,
                    partitions: parts
                        .iter()
                        .enumerate()
                        .map(|(i, p)| MetadataResponsePartition {
                            error_code: if p.leader.is_some() {
                                0
                            } else {
                                LEADER_NOT_AVAILABLE
                            },
                            partition_index: i as i32,
                            leader_id: p.leader.unwrap_or(-1),
                            leader_epoch: p.epoch,
                            replica_nodes: p.replicas.keys().copied().collect(),
                            isr_nodes: p.isr.iter().copied().collect(),
                            offline_replicas: p
                                .replicas
                                .keys()
                                .copied()
                                .filter(|n| !self.is_up(*n))
                                .collect(),
                            ..Default::default()
                        })
                        .collect(),
                    ..Default::default()
                },
            })
            .collect();
        ResponseBody::Metadata(MetadataResponse {
            brokers: self
                .up
                .union(&self.listed_down)
                .map(|n| {
                    let (host, port) = SimCluster::address(*n);
                    MetadataResponseBroker {
                        node_id: *n,
                        host,
                        port: i32::from(port),
                        rack: self.cfg.racks.then(|| rack_of(*n)),
                        ..Default::default()
                    }
                })
                .collect(),
            cluster_id: Some("sim".into()),
            controller_id: self.up.iter().next().copied().unwrap_or(-1),
            topics,
            ..Default::default()
        })
    }

    pub(super) fn find_coordinator(&self, req: &FindCoordinatorRequest) -> ResponseBody {
        // Key type 1: a transactional id's coordinator.
        let node = if req.key_type == 1 {
            self.txn_node
        } else {
            self.coordinator_node
        };
        let (error_code, node_id, host, port) = match node {
            Some(n) => {
                let (host, port) = SimCluster::address(n);
                (0, n, host, i32::from(port))
            }
            None => (COORDINATOR_NOT_AVAILABLE, -1, String::new(), -1),
        };
        let mut keys = req.coordinator_keys.clone();
        if keys.is_empty() {
            keys.push(req.key.clone());
        }
        ResponseBody::FindCoordinator(FindCoordinatorResponse {
            error_code,
            node_id,
            host: host.clone(),
            port,
            coordinators: keys
                .into_iter()
                .map(|key| Coordinator {
                    key,
                    node_id,
                    host: host.clone(),
                    port,
                    error_code,
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        })
    }

    pub(super) fn produce(
        &mut self,
        node: i32,
        slot: Slot,
        version: i16,
        req: &ProduceRequest,
    ) -> Answer {
        let mut parts = Vec::new();
        let all = req.acks == -1;
        for t in &req.topic_data {
            let name = self.topic_name(t.topic_id, &t.name);
            for pd in &t.partition_data {
                let (code, base, last) =
                    self.append(node, &name, pd.index, pd.records.as_ref(), all, version);
                let epoch = self.partition(&name, pd.index).map_or(-1, |p| p.epoch);
                parts.push(PendingPart {
                    topic: name.clone(),
                    topic_id: t.topic_id,
                    partition: pd.index,
                    epoch,
                    need: last + 1,
                    base,
                    // acks=all waits for the ISR to hold the records.
                    answer: (code != 0 || !all).then_some(code),
                });
            }
        }
        if req.acks == 0 {
            return Answer::None;
        }
        let pending = PendingProduce {
            slot,
            version,
            node,
            deadline: self.now + SimTime::from_millis(req.timeout_ms.max(0) as u64),
            parts,
        };
        if pending.parts.iter().all(|p| p.answer.is_some()) {
            return Answer::Now(produce_response(&pending));
        }
        self.pending.push(pending);
        Answer::Later
    }

    /// Appends one partition's records: (error, base offset, last offset).
    fn append(
        &mut self,
        node: i32,
        topic: &str,
        partition: i32,
        records: Option<&bytes::Bytes>,
        all: bool,
        version: i16,
    ) -> (i16, i64, i64) {
        if let Some(e) = self.leadership(node, topic, partition, -1) {
            return (e, -1, -1);
        }
        if self.leader_warming(topic, partition) {
            return (NOT_LEADER_OR_FOLLOWER, -1, -1);
        }
        let (min_insync, dedup) = (self.cfg.min_insync, self.cfg.dedup);
        let isr = self.partition(topic, partition).map_or(0, |p| p.isr.len());
        if all && isr < min_insync {
            self.stats.not_enough_replicas += 1;
            return (NOT_ENOUGH_REPLICAS, -1, -1);
        }
        let mut first = None;
        let mut last = -1;
        for batch in RecordBatches::new(records.cloned().unwrap_or_default()) {
            let Ok(batch) = batch else {
                return (2, -1, -1); // CORRUPT_MESSAGE
            };
            if batch.producer_id >= 0
                && !batch.is_transactional()
                && batch.producer_id <= self.forgotten_producers
            {
                self.stats.unknown_producer += 1;
                return (UNKNOWN_PRODUCER_ID, -1, -1);
            }
            if batch.is_transactional() {
                let tp = (topic.to_owned(), partition);
                if let Err(code) =
                    self.txn_produce_check(batch.producer_id, batch.producer_epoch, tp, version)
                {
                    return (code, -1, -1);
                }
            }
            let p = self
                .topics
                .get_mut(topic)
                .and_then(|t| t.1.get_mut(partition as usize))
                .expect("checked by leadership");
            match p.append(&batch, dedup) {
                Ok(base) => {
                    first.get_or_insert(base);
                    last = base + i64::from(batch.last_offset_delta);
                }
                Err(e) => return (e.code(), -1, -1),
            }
        }
        (0, first.unwrap_or(-1), last)
    }

    /// Completes acks=all requests whose records the ISR now holds (or that lost their
    /// leadership, or timed out).
    pub(super) fn answer_pending(&mut self) {
        let now = self.now;
        let min_insync = self.cfg.min_insync;
        let mut done = Vec::new();
        for (i, pending) in self.pending.iter_mut().enumerate() {
            for part in pending.parts.iter_mut().filter(|p| p.answer.is_none()) {
                let p = self
                    .topics
                    .get(&part.topic)
                    .and_then(|t| t.1.get(part.partition as usize));
                let Some(p) = p else { continue };
                part.answer = if p.leader != Some(pending.node) || p.epoch != part.epoch {
                    Some(NOT_LEADER_OR_FOLLOWER)
                } else if p.hw >= part.need {
                    Some(if p.isr.len() < min_insync {
                        NOT_ENOUGH_REPLICAS_AFTER_APPEND
                    } else {
                        0
                    })
                } else if now >= pending.deadline {
                    Some(REQUEST_TIMED_OUT)
                } else {
                    None
                };
            }
            if pending.parts.iter().all(|p| p.answer.is_some()) {
                done.push(i);
            }
        }
        for i in done.into_iter().rev() {
            let pending = self.pending.remove(i);
            let body = produce_response(&pending);
            self.fill(
                pending.slot,
                pending.version,
                kafka_proto::api::ApiKey::Produce.key(),
                &body,
            );
        }
    }

    /// A Fetch: each partition from the leader, up to the high watermark. With nothing to
    /// return it waits out `max_wait_ms` (parked), unless `last` (the wait is over).
    pub(super) fn fetch(
        &mut self,
        node: i32,
        slot: Slot,
        version: i16,
        req: &FetchRequest,
        last: bool,
    ) -> Answer {
        let mut empty = true;
        let mut budget = req.max_bytes.max(0) as usize;
        let mut responses = Vec::new();
        for t in &req.topics {
            let name = self.topic_name(t.topic_id, &t.topic);
            let mut partitions = Vec::new();
            for fp in &t.partitions {
                let mut data = PartitionData {
                    partition_index: fp.partition,
                    ..Default::default()
                };
                let epoch = fp.current_leader_epoch;
                match self.leadership(node, &name, fp.partition, epoch) {
                    None => {}
                    Some(NOT_LEADER_OR_FOLLOWER)
                        if self.serves_follower_read(node, &name, fp.partition, epoch, req) => {}
                    Some(e) => {
                        data.error_code = e;
                        empty = false;
                        partitions.push(data);
                        continue;
                    }
                }
                let p = self.partition(&name, fp.partition).expect("checked");
                if let Some(replica) = self.preferred_replica(p, node, fp.fetch_offset, req) {
                    // KIP-392: the leader names the replica in the consumer's rack, at once and
                    // without records.
                    data.preferred_read_replica = replica;
                    data.high_watermark = p.hw;
                    data.records = Some(Bytes::new());
                    empty = false;
                    partitions.push(data);
                    continue;
                }
                // The leader's log, or an in-sync follower's (a consumer's rack-aware read).
                let log = p.replicas.get(&node).expect("a replica on this node");
                if fp.fetch_offset < 0 || fp.fetch_offset > log.leo() {
                    data.error_code = OFFSET_OUT_OF_RANGE;
                    empty = false;
                    partitions.push(data);
                    continue;
                }
                let view = p.txn_view();
                let committed = req.isolation_level == 1;
                // read_committed stops at the last stable offset and is told which
                // transactions below it aborted.
                let limit_offset = if committed { view.lso } else { p.hw }.min(log.leo());
                data.high_watermark = p.hw;
                data.last_stable_offset = view.lso;
                data.log_start_offset = 0;
                if committed && self.cfg.aborted_list {
                    data.aborted_transactions = Some(
                        view.aborted
                            .iter()
                            .filter(|a| a.2 >= fp.fetch_offset && a.1 < view.lso)
                            .map(|a| AbortedTransaction {
                                producer_id: a.0,
                                first_offset: a.1,
                                ..Default::default()
                            })
                            .collect(),
                    );
                }
                let mut out = BytesMut::new();
                let limit = (fp.partition_max_bytes.max(0) as usize).min(budget);
                let first_in_response = empty;
                for b in &log.batches {
                    if b.last < fp.fetch_offset {
                        continue;
                    }
                    if b.last >= limit_offset {
                        break; // consumers see committed records only
                    }
                    // KIP-74: the first batch of the response goes whole.
                    let exempt = out.is_empty() && first_in_response;
                    if !exempt && out.len() + b.bytes.len() > limit {
                        break;
                    }
                    out.extend_from_slice(&b.bytes);
                }
                budget = budget.saturating_sub(out.len());
                empty &= out.is_empty();
                data.records = Some(out.freeze());
                partitions.push(data);
            }
            responses.push(FetchableTopicResponse {
                topic: t.topic.clone(),
                topic_id: t.topic_id,
                partitions,
                ..Default::default()
            });
        }
        if empty && !last && req.max_wait_ms > 0 {
            let due = self.now + SimTime::from_millis(req.max_wait_ms as u64);
            self.parked
                .push((due, slot, version, node, RequestBody::Fetch(req.clone())));
            return Answer::Later;
        }
        Answer::Now(ResponseBody::Fetch(FetchResponse {
            responses,
            ..Default::default()
        }))
    }

    /// Whether `node`, a follower of the partition, serves a consumer's fetch (see
    /// [`ClusterConfig::racks`]): racks on, a consumer naming a rack, `node` in the ISR, the
    /// leader epoch current or not given.
    fn serves_follower_read(
        &self,
        node: i32,
        topic: &str,
        partition: i32,
        epoch: i32,
        req: &FetchRequest,
    ) -> bool {
        let Some(p) = self.partition(topic, partition) else {
            return false;
        };
        self.cfg.racks
            && req.replica_id < 0
            && !req.rack_id.is_empty()
            && p.leader.is_some()
            && p.isr.contains(&node)
            && p.replicas.contains_key(&node)
            && (epoch < 0 || epoch == p.epoch)
    }

    /// The replica a leader at `node` points a consumer fetching from `offset` to (KIP-392):
    /// the in-sync follower in the rack the fetch names that has the offset (as Kafka's
    /// `findPreferredReadReplica`), if racks are on.
    fn preferred_replica(
        &self,
        p: &super::Partition,
        node: i32,
        offset: i64,
        req: &FetchRequest,
    ) -> Option<i32> {
        if !self.cfg.racks || req.replica_id >= 0 || p.leader != Some(node) {
            return None;
        }
        p.isr.iter().copied().find(|r| {
            *r != node
                && rack_of(*r) == req.rack_id
                && p.replicas.get(r).is_some_and(|log| log.leo() >= offset)
        })
    }

    pub(super) fn list_offsets(&self, node: i32, req: &ListOffsetsRequest) -> ResponseBody {
        let topics = req
            .topics
            .iter()
            .map(|t| ListOffsetsTopicResponse {
                name: t.name.clone(),
                partitions: t
                    .partitions
                    .iter()
                    .map(|lp| {
                        let mut r = ListOffsetsPartitionResponse {
                            partition_index: lp.partition_index,
                            ..Default::default()
                        };
                        match self.leadership(
                            node,
                            &t.name,
                            lp.partition_index,
                            lp.current_leader_epoch,
                        ) {
                            Some(e) => r.error_code = e,
                            None => {
                                let p = self.partition(&t.name, lp.partition_index).expect("ok");
                                r.offset = match (lp.timestamp, req.isolation_level) {
                                    (-2, _) => 0,
                                    (_, 1) => p.txn_view().lso,
                                    _ => p.hw,
                                };
                                r.leader_epoch = p.epoch;
                            }
                        }
                        r
                    })
                    .collect(),
                ..Default::default()
            })
            .collect();
        ResponseBody::ListOffsets(ListOffsetsResponse {
            topics,
            ..Default::default()
        })
    }

    pub(super) fn epoch_ends(&self, node: i32, req: &OffsetForLeaderEpochRequest) -> ResponseBody {
        let topics = req
            .topics
            .iter()
            .map(|t| OffsetForLeaderTopicResult {
                topic: t.topic.clone(),
                partitions: t
                    .partitions
                    .iter()
                    .map(|op| {
                        let mut r = EpochEndOffset {
                            partition: op.partition,
                            ..Default::default()
                        };
                        match self.leadership(node, &t.topic, op.partition, op.current_leader_epoch)
                        {
                            Some(e) => r.error_code = e,
                            None => {
                                let p = self.partition(&t.topic, op.partition).expect("ok");
                                (r.leader_epoch, r.end_offset) = p.epoch_end(op.leader_epoch);
                            }
                        }
                        r
                    })
                    .collect(),
                ..Default::default()
            })
            .collect();
        ResponseBody::OffsetForLeaderEpoch(OffsetForLeaderEpochResponse {
            topics,
            ..Default::default()
        })
    }
}

fn produce_response(p: &PendingProduce) -> ResponseBody {
    let mut topics: Vec<TopicProduceResponse> = Vec::new();
    for part in &p.parts {
        let code = part.answer.unwrap_or(REQUEST_TIMED_OUT);
        let i = match topics.iter().position(|t| t.name == part.topic) {
            Some(i) => i,
            None => {
                topics.push(TopicProduceResponse {
                    name: part.topic.clone(),
                    topic_id: part.topic_id,
                    ..Default::default()
                });
                topics.len() - 1
            }
        };
        topics[i]
            .partition_responses
            .push(PartitionProduceResponse {
                index: part.partition,
                error_code: code,
                base_offset: if code == 0 { part.base } else { -1 },
                // The simulated logs are never truncated from the start (the client reads it
                // with UNKNOWN_PRODUCER_ID: -1 would say the broker is catching up).
                log_start_offset: 0,
                ..Default::default()
            });
    }
    ResponseBody::Produce(ProduceResponse {
        responses: topics,
        ..Default::default()
    })
}

/// A broker's rack when the cluster has racks ([`ClusterConfig::racks`]).
pub(crate) fn rack_of(node: i32) -> String {
    format!("rack-{node}")
}
