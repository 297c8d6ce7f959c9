//! A one-node cluster with an in-memory log: enough to produce to and fetch from in examples,
//! doctests and users' own simulations. Topics are created on first use, idempotent producers
//! are deduplicated by sequence, an empty Fetch long-polls for its `max_wait_ms`, leader epoch 0
//! is stamped on what is written (and answered by OffsetForLeaderEpoch), and a small group
//! coordinator keeps consumer groups and their offsets, all as a real broker does.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use kafka_proto::api::{RequestBody, ResponseBody};
use kafka_proto::messages::fetch_request::FetchRequest;
use kafka_proto::messages::fetch_response::{FetchResponse, FetchableTopicResponse, PartitionData};
use kafka_proto::messages::init_producer_id_response::InitProducerIdResponse;
use kafka_proto::messages::list_offsets_request::ListOffsetsRequest;
use kafka_proto::messages::list_offsets_response::{
    ListOffsetsPartitionResponse, ListOffsetsResponse, ListOffsetsTopicResponse,
};
use kafka_proto::messages::metadata_response::{
    MetadataResponse, MetadataResponseBroker, MetadataResponsePartition, MetadataResponseTopic,
};
use kafka_proto::messages::offset_for_leader_epoch_request::OffsetForLeaderEpochRequest;
use kafka_proto::messages::offset_for_leader_epoch_response::{
    EpochEndOffset, OffsetForLeaderEpochResponse, OffsetForLeaderTopicResult,
};
use kafka_proto::messages::produce_request::ProduceRequest;
use kafka_proto::messages::produce_response::{
    PartitionProduceResponse, ProduceResponse, TopicProduceResponse,
};
use kafka_proto::record::RecordBatches;
use uuid::Uuid;

use crate::scripted::{Reply, ScriptedBroker};

/// A stored record: key and value.
pub type StoredRecord = (Option<Bytes>, Option<Bytes>);

/// One partition's log: whole batches with broker-assigned base offsets.
#[derive(Debug, Clone, Default)]
struct Log {
    batches: Vec<(i64, Bytes)>,
    end: i64,
}

#[derive(Debug, Default)]
struct State {
    host: String,
    port: i32,
    partitions: usize,
    topics: BTreeMap<String, (Uuid, Vec<Log>)>,
    next_seq: BTreeMap<(i64, Uuid, i32), i32>,
    next_producer_id: i64,
    groups: crate::group::Groups,
    sessions: crate::fetch_session::Sessions,
    /// How long the coordinator holds each JoinGroup before answering (as a coordinator
    /// waits for the group's members to rejoin, up to the rebalance timeout).
    join_delay: Duration,
}

/// One broker (node 1) with an in-memory log. Clone it freely: clones share the log.
#[derive(Debug, Clone)]
pub struct SingleBroker {
    state: Arc<Mutex<State>>,
}

impl SingleBroker {
    /// A broker advertising `host:port`, creating topics with `partitions` partitions.
    pub fn new(host: &str, port: u16, partitions: usize) -> Self {
        let state = State {
            host: host.to_owned(),
            port: i32::from(port),
            partitions: partitions.max(1),
            next_producer_id: 1000,
            ..Default::default()
        };
        SingleBroker {
            state: Arc::new(Mutex::new(state)),
        }
    }

    /// The broker moves to a new address (a replaced host, a new IP behind the same
    /// bootstrap name): metadata and FindCoordinator name `host:port` from now on. Connections
    /// to the old address are the caller's to close.
    pub fn move_to(&self, host: &str, port: u16) {
        let mut s = self.state.lock().expect("not poisoned");
        s.host = host.to_owned();
        s.port = i32::from(port);
    }

    /// The address the broker advertises.
    pub fn address(&self) -> String {
        let s = self.state.lock().expect("not poisoned");
        format!("{}:{}", s.host, s.port)
    }

    /// Holds every JoinGroup this long before answering it.
    pub fn hold_joins(&self, delay: Duration) {
        self.state.lock().expect("not poisoned").join_delay = delay;
    }

    /// The broker side of one new connection.
    pub fn connection(&self) -> ScriptedBroker {
        let state = self.state.clone();
        ScriptedBroker::new(move |header, body| {
            let mut s = state.lock().expect("not poisoned");
            match body {
                RequestBody::FindCoordinator(_) => {
                    let (host, port) = (s.host.clone(), s.port);
                    Reply::Respond(s.groups.find_coordinator(&host, port))
                }
                RequestBody::JoinGroup(req) => {
                    let answer = Reply::Respond(s.groups.join(req, header.api_version));
                    match s.join_delay {
                        d if d.is_zero() => answer,
                        d => Reply::After(d, Box::new(answer)),
                    }
                }
                RequestBody::SyncGroup(req) => Reply::Respond(s.groups.sync(req)),
                RequestBody::Heartbeat(req) => Reply::Respond(s.groups.heartbeat(req)),
                RequestBody::LeaveGroup(req) => Reply::Respond(s.groups.leave(req)),
                RequestBody::OffsetCommit(req) => Reply::Respond(s.groups.commit(req)),
                RequestBody::OffsetFetch(req) => Reply::Respond(s.groups.fetch_offsets(req)),
                RequestBody::Metadata(req) => {
                    Reply::Respond(ResponseBody::Metadata(s.metadata(req)))
                }
                RequestBody::InitProducerId(_) => {
                    s.next_producer_id += 1;
                    Reply::Respond(ResponseBody::InitProducerId(InitProducerIdResponse {
                        producer_id: s.next_producer_id,
                        producer_epoch: 0,
                        ..Default::default()
                    }))
                }
                RequestBody::Produce(req) => match s.produce(req) {
                    Some(resp) => Reply::Respond(ResponseBody::Produce(resp)),
                    None => Reply::Ignore, // acks=0: no response
                },
                RequestBody::ListOffsets(req) => {
                    Reply::Respond(ResponseBody::ListOffsets(s.list_offsets(req)))
                }
                RequestBody::OffsetForLeaderEpoch(req) => {
                    Reply::Respond(ResponseBody::OffsetForLeaderEpoch(s.epoch_ends(req)))
                }
                RequestBody::Fetch(req) => {
                    let (resp, empty) = s.fetch(req);
                    let body = Reply::Respond(ResponseBody::Fetch(resp));
                    if empty {
                        // Long-poll: with nothing to return, wait out max_wait_ms.
                        let wait = Duration::from_millis(req.max_wait_ms.max(0) as u64);
                        Reply::After(wait, Box::new(body))
                    } else {
                        body
                    }
                }
                // Anything else is beyond this small broker: close, as a broker does on a
                // request it cannot handle.
                _ => Reply::Close,
            }
        })
    }

    /// How many requests of a group API (`"JoinGroup"`, `"Heartbeat"`, `"OffsetCommit"`, ...)
    /// the coordinator answered.
    pub fn group_requests(&self, api: &str) -> usize {
        let s = self.state.lock().expect("not poisoned");
        s.groups.counts.get(api).copied().unwrap_or(0)
    }

    /// A group's committed (offset, leader epoch) for a partition, if any.
    pub fn committed(&self, group: &str, topic: &str, partition: i32) -> Option<(i64, i32)> {
        let s = self.state.lock().expect("not poisoned");
        s.groups.committed(group, topic, partition)
    }

    /// KIP-227 fetch sessions opened, and incremental fetches answered.
    pub fn fetch_sessions(&self) -> (usize, usize) {
        let s = self.state.lock().expect("not poisoned");
        (s.sessions.opened, s.sessions.incremental)
    }

    /// Forgets every fetch session, as a restarted broker does: the next incremental fetch
    /// gets FETCH_SESSION_ID_NOT_FOUND.
    pub fn evict_fetch_sessions(&self) {
        let mut s = self.state.lock().expect("not poisoned");
        s.sessions.evict_all();
    }

    /// The records of one partition, in offset order.
    pub fn records(&self, topic: &str, partition: usize) -> Vec<StoredRecord> {
        let s = self.state.lock().expect("not poisoned");
        let Some(log) = s.topics.get(topic).and_then(|t| t.1.get(partition)) else {
            return Vec::new();
        };
        let mut out = Vec::new();
        for (_, batch) in &log.batches {
            for b in RecordBatches::new(batch.clone()).flatten() {
                for r in b.records().into_iter().flatten().flatten() {
                    out.push((r.key, r.value));
                }
            }
        }
        out
    }
}

impl State {
    fn topic(&mut self, name: &str) -> &mut (Uuid, Vec<Log>) {
        let n = self.topics.len() as u128;
        let partitions = self.partitions;
        self.topics.entry(name.to_owned()).or_insert_with(|| {
            (
                Uuid::from_u128(0x5157_0000 + n + 1),
                vec![Log::default(); partitions],
            )
        })
    }

    fn by_id(&self, id: Uuid) -> Option<String> {
        self.topics
            .iter()
            .find(|(_, v)| v.0 == id)
            .map(|(k, _)| k.clone())
    }

    fn metadata(
        &mut self,
        req: &kafka_proto::messages::metadata_request::MetadataRequest,
    ) -> MetadataResponse {
        let names: Vec<String> = req
            .topics
            .iter()
            .flatten()
            .filter_map(|t| t.name.clone())
            .collect();
        let topics = names
            .into_iter()
            .map(|name| {
                let (id, parts) = self.topic(&name).clone();
                MetadataResponseTopic {
                    name: Some(name),
                    topic_id: id,
                    partitions: (0..parts.len() as i32)
                        .map(|p| MetadataResponsePartition {
                            partition_index: p,
                            leader_id: 1,
                            leader_epoch: 0,
                            replica_nodes: vec![1],
                            isr_nodes: vec![1],
                            ..Default::default()
                        })
                        .collect(),
                    ..Default::default()
                }
            })
            .collect();
        MetadataResponse {
            brokers: vec![MetadataResponseBroker {
                node_id: 1,
                host: self.host.clone(),
                port: self.port,
                ..Default::default()
            }],
            controller_id: 1,
            topics,
            ..Default::default()
        }
    }

    fn produce(&mut self, req: &ProduceRequest) -> Option<ProduceResponse> {
        let mut responses = Vec::new();
        for t in &req.topic_data {
            let name = if t.topic_id.is_nil() {
                t.name.clone()
            } else {
                self.by_id(t.topic_id).unwrap_or_default()
            };
            let parts = t
                .partition_data
                .iter()
                .map(|p| self.append(&name, p.index, p.records.clone().unwrap_or_default()))
                .collect();
            responses.push(TopicProduceResponse {
                name: t.name.clone(),
                topic_id: t.topic_id,
                partition_responses: parts,
                ..Default::default()
            });
        }
        (req.acks != 0).then(|| ProduceResponse {
            responses,
            ..Default::default()
        })
    }

    fn append(&mut self, topic: &str, partition: i32, data: Bytes) -> PartitionProduceResponse {
        let mut resp = PartitionProduceResponse {
            index: partition,
            base_offset: -1,
            ..Default::default()
        };
        let id = self.topic(topic).0;
        if partition < 0 || partition as usize >= self.partitions {
            resp.error_code = 3; // UNKNOWN_TOPIC_OR_PARTITION
            return resp;
        }
        for batch in RecordBatches::new(data) {
            let Ok(batch) = batch else {
                resp.error_code = 2; // CORRUPT_MESSAGE
                return resp;
            };
            if batch.producer_id >= 0 {
                let key = (batch.producer_id, id, partition);
                let expected = *self.next_seq.get(&key).unwrap_or(&0);
                if batch.base_sequence != expected {
                    // 46 DUPLICATE_SEQUENCE_NUMBER, 45 OUT_OF_ORDER_SEQUENCE_NUMBER
                    resp.error_code = if batch.base_sequence < expected {
                        46
                    } else {
                        45
                    };
                    return resp;
                }
                self.next_seq.insert(key, expected + batch.record_count);
            }
            let log = &mut self.topic(topic).1[partition as usize];
            // The broker assigns offsets: base offset and leader epoch sit before the crc's range.
            let mut stored = BytesMut::from(&batch.as_bytes()[..]);
            stored[0..8].copy_from_slice(&log.end.to_be_bytes());
            stored[12..16].copy_from_slice(&0i32.to_be_bytes());
            if resp.base_offset < 0 {
                resp.base_offset = log.end;
            }
            log.batches.push((log.end, stored.freeze()));
            log.end += i64::from(batch.last_offset_delta) + 1;
        }
        resp
    }

    /// OffsetForLeaderEpoch: this broker has always led, in epoch 0, so epoch 0 ends at the
    /// log end and later epochs are unknown.
    fn epoch_ends(&mut self, req: &OffsetForLeaderEpochRequest) -> OffsetForLeaderEpochResponse {
        let topics = req
            .topics
            .iter()
            .map(|t| OffsetForLeaderTopicResult {
                topic: t.topic.clone(),
                partitions: t
                    .partitions
                    .iter()
                    .map(|p| {
                        let mut r = EpochEndOffset {
                            partition: p.partition,
                            ..Default::default()
                        };
                        match self.topic(&t.topic).1.get(p.partition.max(0) as usize) {
                            None => r.error_code = 3, // UNKNOWN_TOPIC_OR_PARTITION
                            Some(_) if p.current_leader_epoch > 0 => r.error_code = 75, // UNKNOWN_LEADER_EPOCH
                            Some(log) if p.leader_epoch <= 0 => {
                                r.leader_epoch = 0;
                                r.end_offset = log.end;
                            }
                            Some(_) => {} // an epoch after ours: undefined (-1, -1)
                        }
                        r
                    })
                    .collect(),
                ..Default::default()
            })
            .collect();
        OffsetForLeaderEpochResponse {
            topics,
            ..Default::default()
        }
    }

    fn list_offsets(&mut self, req: &ListOffsetsRequest) -> ListOffsetsResponse {
        let topics = req
            .topics
            .iter()
            .map(|t| {
                let partitions = t
                    .partitions
                    .iter()
                    .map(|p| {
                        let mut r = ListOffsetsPartitionResponse {
                            partition_index: p.partition_index,
                            timestamp: -1,
                            ..Default::default()
                        };
                        match self.topic(&t.name).1.get(p.partition_index.max(0) as usize) {
                            None => r.error_code = 3,
                            Some(log) => {
                                r.offset = match p.timestamp {
                                    -2 => 0,       // earliest
                                    -1 => log.end, // latest
                                    ts => log
                                        .batches
                                        .iter()
                                        .find(|(_, b)| {
                                            RecordBatches::new(b.clone())
                                                .flatten()
                                                .any(|b| b.max_timestamp >= ts)
                                        })
                                        .map_or(-1, |(base, _)| *base),
                                };
                            }
                        }
                        r
                    })
                    .collect();
                ListOffsetsTopicResponse {
                    name: t.name.clone(),
                    partitions,
                    ..Default::default()
                }
            })
            .collect();
        ListOffsetsResponse {
            topics,
            ..Default::default()
        }
    }

    /// Answers a fetch; true if it carries no records (so it should long-poll).
    fn fetch(&mut self, req: &FetchRequest) -> (FetchResponse, bool) {
        let names: BTreeMap<Uuid, String> = self
            .topics
            .iter()
            .map(|(name, (id, _))| (*id, name.clone()))
            .collect();
        let name = |id: Uuid, name: &str| {
            if id.is_nil() {
                name.to_owned()
            } else {
                names.get(&id).cloned().unwrap_or_default()
            }
        };
        let plan = match self.sessions.plan(req, name) {
            Ok(plan) => plan,
            Err(error_code) => {
                let resp = FetchResponse {
                    error_code,
                    ..Default::default()
                };
                return (resp, false);
            }
        };
        let mut empty = true;
        let mut budget = req.max_bytes.max(0) as usize;
        // Topics in the order first named, each with its partitions.
        let mut responses: Vec<FetchableTopicResponse> = Vec::new();
        for w in &plan.wanted {
            let mut data = PartitionData {
                partition_index: w.partition,
                ..Default::default()
            };
            let logs = &self.topic(&w.name).1;
            match logs.get(w.partition.max(0) as usize) {
                None => data.error_code = 3,
                Some(log) if w.offset < 0 || w.offset > log.end => data.error_code = 1,
                Some(log) => {
                    data.high_watermark = log.end;
                    data.last_stable_offset = log.end;
                    data.log_start_offset = 0;
                    let mut out = BytesMut::new();
                    let limit = (w.max_bytes.max(0) as usize).min(budget);
                    let first_in_response = empty;
                    for (base, batch) in &log.batches {
                        let next = RecordBatches::new(batch.clone())
                            .flatten()
                            .map(|b| b.next_offset())
                            .next();
                        if next.is_some_and(|n| n <= w.offset) || *base < 0 {
                            continue;
                        }
                        // KIP-74: the first batch of the first partition with data goes
                        // whole even past the limits; nothing else does.
                        let exempt = out.is_empty() && first_in_response;
                        if !exempt && out.len() + batch.len() > limit {
                            break;
                        }
                        out.extend_from_slice(batch);
                    }
                    budget = budget.saturating_sub(out.len());
                    empty &= out.is_empty();
                    data.records = Some(out.freeze());
                }
            }
            let has_records = data.records.as_ref().is_some_and(|r| !r.is_empty());
            let news = self.sessions.news(
                plan.session_id,
                w,
                has_records,
                data.error_code != 0,
                data.high_watermark,
            );
            if plan.incremental && !news {
                continue;
            }
            let topic = match responses
                .iter_mut()
                .position(|t| t.topic == w.name && t.topic_id == w.topic_id)
            {
                Some(i) => &mut responses[i],
                None => {
                    responses.push(FetchableTopicResponse {
                        topic: w.name.clone(),
                        topic_id: w.topic_id,
                        ..Default::default()
                    });
                    responses.last_mut().expect("pushed")
                }
            };
            topic.partitions.push(data);
        }
        (
            FetchResponse {
                session_id: plan.session_id,
                responses,
                ..Default::default()
            },
            empty,
        )
    }
}
