//! The transactional producer in virtual time against a scripted cluster with a transaction
//! coordinator (node 2) and a group coordinator (node 3): a broker-like check of every request's
//! producer id and epoch, partitions that must be added before their batches, and commit and
//! abort markers deciding what a read_committed reader would see.

use kafka_core::net::Machine as _;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use kafka_core::config::{ConfigError, HostPort, ProducerConfig};
use kafka_core::net::{ConnId, Transmit};
use kafka_core::producer::{
    Certainty, DeliveryError, GroupMetadata, Outcome, Output, Producer, ProducerEvent,
    ProducerRecord, RecordToken, SendError, TransactionError, TxnOffset, TxnToken,
};
use kafka_core::Instant;
use kafka_sim::proto::api::{RequestBody, ResponseBody};
use kafka_sim::proto::messages::add_offsets_to_txn_response::AddOffsetsToTxnResponse;
use kafka_sim::proto::messages::add_partitions_to_txn_response::{
    AddPartitionsToTxnPartitionResult, AddPartitionsToTxnResponse, AddPartitionsToTxnTopicResult,
};
use kafka_sim::proto::messages::end_txn_response::EndTxnResponse;
use kafka_sim::proto::messages::find_coordinator_response::{Coordinator, FindCoordinatorResponse};
use kafka_sim::proto::messages::init_producer_id_response::InitProducerIdResponse;
use kafka_sim::proto::messages::metadata_response::{
    MetadataResponse, MetadataResponseBroker, MetadataResponsePartition, MetadataResponseTopic,
};
use kafka_sim::proto::messages::produce_response::{
    PartitionProduceResponse, ProduceResponse, TopicProduceResponse,
};
use kafka_sim::proto::messages::txn_offset_commit_response::{
    TxnOffsetCommitResponse, TxnOffsetCommitResponsePartition, TxnOffsetCommitResponseTopic,
};
use kafka_sim::proto::record::RecordBatches;
use kafka_sim::proto::ErrorCode;
use kafka_sim::{Reply, ScriptedBroker};

const PARTITIONS: i32 = 2;
const TXN_COORDINATOR: i32 = 2;
const GROUP_COORDINATOR: i32 = 3;

/// The cluster's view of one transactional id, as its coordinator keeps it.
#[derive(Debug, Default)]
struct TxnState {
    producer_id: i64,
    epoch: i16,
    partitions: BTreeSet<i32>,
    /// Records written in the open transaction, by partition.
    open: BTreeMap<i32, Vec<String>>,
    offsets: BTreeMap<(String, i32), i64>,
    has_group: bool,
}

#[derive(Debug, Default)]
struct Cluster {
    txns: BTreeMap<String, TxnState>,
    /// What a read_committed reader sees, by partition.
    committed: BTreeMap<i32, Vec<String>>,
    /// Committed group offsets.
    group_offsets: BTreeMap<(String, i32), i64>,
    /// The group's current generation (TxnOffsetCommit from another is refused, KIP-447).
    generation: i32,
    /// Every request's API name, in order.
    log: Vec<&'static str>,
    aborts: usize,
    /// The next this many Produce partitions are answered CONCURRENT_TRANSACTIONS, as a
    /// transaction version 2 broker does while the previous transaction's markers are being
    /// written.
    concurrent: usize,
    /// The next Produce partition is refused with this (not retriable) error.
    refuse: Option<ErrorCode>,
}

fn node_addr(node: i32) -> HostPort {
    HostPort::new(format!("broker{node}"), 9092)
}

fn err(e: ErrorCode) -> i16 {
    e.code()
}

impl Cluster {
    fn metadata(&self) -> MetadataResponse {
        MetadataResponse {
            brokers: (1..=3)
                .map(|n| MetadataResponseBroker {
                    node_id: n,
                    host: node_addr(n).host,
                    port: 9092,
                    ..Default::default()
                })
                .collect(),
            topics: vec![MetadataResponseTopic {
                name: Some("t".into()),
                topic_id: uuid::Uuid::from_u128(7),
                partitions: (0..PARTITIONS)
                    .map(|p| MetadataResponsePartition {
                        partition_index: p,
                        leader_id: 1,
                        ..Default::default()
                    })
                    .collect(),
                ..Default::default()
            }],
            ..Default::default()
        }
    }

    /// The error for a request of `txn` with `pid`/`epoch` that is not the current one.
    fn fenced(&self, txn: &str, pid: i64, epoch: i16) -> Option<ErrorCode> {
        let t = self.txns.get(txn)?;
        if t.producer_id != pid {
            Some(ErrorCode::InvalidProducerIdMapping)
        } else if epoch < t.epoch {
            Some(ErrorCode::ProducerFenced)
        } else {
            None
        }
    }

    fn end(&mut self, txn: &str, commit: bool) {
        let t = self.txns.get_mut(txn).expect("known");
        let open = std::mem::take(&mut t.open);
        let offsets = std::mem::take(&mut t.offsets);
        if commit {
            for (p, records) in open {
                self.committed.entry(p).or_default().extend(records);
            }
            self.group_offsets.extend(offsets);
        } else {
            self.aborts += 1;
        }
        t.partitions.clear();
        t.has_group = false;
    }

    fn handle(&mut self, node: i32, body: &RequestBody) -> Reply {
        self.log.push(body_name(body));
        let body = match body {
            RequestBody::Metadata(_) => ResponseBody::Metadata(self.metadata()),
            RequestBody::FindCoordinator(r) => {
                let node = if r.key_type == 1 {
                    TXN_COORDINATOR
                } else {
                    GROUP_COORDINATOR
                };
                ResponseBody::FindCoordinator(FindCoordinatorResponse {
                    node_id: node,
                    host: node_addr(node).host,
                    port: 9092,
                    coordinators: r
                        .coordinator_keys
                        .iter()
                        .map(|k| Coordinator {
                            key: k.clone(),
                            node_id: node,
                            host: node_addr(node).host,
                            port: 9092,
                            ..Default::default()
                        })
                        .collect(),
                    ..Default::default()
                })
            }
            RequestBody::InitProducerId(r) => {
                assert_eq!(
                    node, TXN_COORDINATOR,
                    "InitProducerId goes to the coordinator"
                );
                let id = r.transactional_id.clone().expect("a transactional id");
                let had_open = self.txns.get(&id).is_some_and(|t| !t.partitions.is_empty());
                if had_open {
                    // A new producer (or an epoch bump) aborts the open transaction.
                    self.end(&id, false);
                }
                let t = self.txns.entry(id).or_insert_with(|| TxnState {
                    producer_id: 500,
                    epoch: -1,
                    ..Default::default()
                });
                t.epoch += 1;
                ResponseBody::InitProducerId(InitProducerIdResponse {
                    producer_id: t.producer_id,
                    producer_epoch: t.epoch,
                    ..Default::default()
                })
            }
            RequestBody::AddPartitionsToTxn(r) => {
                assert_eq!(node, TXN_COORDINATOR);
                let id = &r.v3_and_below_transactional_id;
                let error = self.fenced(
                    id,
                    r.v3_and_below_producer_id,
                    r.v3_and_below_producer_epoch,
                );
                if error.is_none() {
                    let t = self.txns.get_mut(id).expect("known");
                    for topic in &r.v3_and_below_topics {
                        t.partitions.extend(&topic.partitions);
                    }
                }
                ResponseBody::AddPartitionsToTxn(AddPartitionsToTxnResponse {
                    results_by_topic_v3_and_below: r
                        .v3_and_below_topics
                        .iter()
                        .map(|topic| AddPartitionsToTxnTopicResult {
                            name: topic.name.clone(),
                            results_by_partition: topic
                                .partitions
                                .iter()
                                .map(|p| AddPartitionsToTxnPartitionResult {
                                    partition_index: *p,
                                    partition_error_code: error.map_or(0, err),
                                    ..Default::default()
                                })
                                .collect(),
                            ..Default::default()
                        })
                        .collect(),
                    ..Default::default()
                })
            }
            RequestBody::Produce(req) => {
                let id = req.transactional_id.clone().expect("a transactional id");
                let mut topics = Vec::new();
                for t in &req.topic_data {
                    let mut parts = Vec::new();
                    for p in &t.partition_data {
                        let batch = RecordBatches::new(p.records.clone().unwrap())
                            .next()
                            .unwrap()
                            .unwrap();
                        assert!(batch.is_transactional(), "a transactional batch");
                        let mut resp = PartitionProduceResponse {
                            index: p.index,
                            base_offset: 0,
                            ..Default::default()
                        };
                        match self.fenced(&id, batch.producer_id, batch.producer_epoch) {
                            Some(e) => resp.error_code = err(e),
                            None if self.refuse.is_some() => {
                                resp.error_code = err(self.refuse.take().expect("checked"));
                            }
                            None if self.concurrent > 0 => {
                                self.concurrent -= 1;
                                resp.error_code = err(ErrorCode::ConcurrentTransactions);
                            }
                            None => {
                                let state = self.txns.get_mut(&id).expect("known");
                                assert!(
                                    state.partitions.contains(&p.index),
                                    "partition {} produced to before it was added",
                                    p.index
                                );
                                let open = state.open.entry(p.index).or_default();
                                for r in batch.records().unwrap() {
                                    let v = r.unwrap().value.unwrap();
                                    open.push(String::from_utf8(v.to_vec()).unwrap());
                                }
                            }
                        }
                        parts.push(resp);
                    }
                    topics.push(TopicProduceResponse {
                        name: t.name.clone(),
                        topic_id: t.topic_id,
                        partition_responses: parts,
                        ..Default::default()
                    });
                }
                ResponseBody::Produce(ProduceResponse {
                    responses: topics,
                    ..Default::default()
                })
            }
            RequestBody::AddOffsetsToTxn(r) => {
                let error = self.fenced(&r.transactional_id, r.producer_id, r.producer_epoch);
                if error.is_none() {
                    self.txns
                        .get_mut(&r.transactional_id)
                        .expect("known")
                        .has_group = true;
                }
                ResponseBody::AddOffsetsToTxn(AddOffsetsToTxnResponse {
                    error_code: error.map_or(0, err),
                    ..Default::default()
                })
            }
            RequestBody::TxnOffsetCommit(r) => {
                assert_eq!(
                    node, GROUP_COORDINATOR,
                    "offsets go to the group coordinator"
                );
                let error = if r.generation_id >= 0 && r.generation_id != self.generation {
                    Some(ErrorCode::IllegalGeneration)
                } else {
                    self.fenced(&r.transactional_id, r.producer_id, r.producer_epoch)
                };
                if error.is_none() {
                    let t = self.txns.get_mut(&r.transactional_id).expect("known");
                    assert!(t.has_group, "TxnOffsetCommit before AddOffsetsToTxn");
                    for topic in &r.topics {
                        for p in &topic.partitions {
                            t.offsets.insert(
                                (topic.name.clone(), p.partition_index),
                                p.committed_offset,
                            );
                        }
                    }
                }
                ResponseBody::TxnOffsetCommit(TxnOffsetCommitResponse {
                    topics: r
                        .topics
                        .iter()
                        .map(|topic| TxnOffsetCommitResponseTopic {
                            name: topic.name.clone(),
                            partitions: topic
                                .partitions
                                .iter()
                                .map(|p| TxnOffsetCommitResponsePartition {
                                    partition_index: p.partition_index,
                                    error_code: error.map_or(0, err),
                                    ..Default::default()
                                })
                                .collect(),
                            ..Default::default()
                        })
                        .collect(),
                    ..Default::default()
                })
            }
            RequestBody::EndTxn(r) => {
                assert_eq!(node, TXN_COORDINATOR);
                let error = self.fenced(&r.transactional_id, r.producer_id, r.producer_epoch);
                if error.is_none() {
                    self.end(&r.transactional_id, r.committed);
                }
                ResponseBody::EndTxn(EndTxnResponse {
                    error_code: error.map_or(0, err),
                    ..Default::default()
                })
            }
            other => panic!("unexpected request {other:?}"),
        };
        Reply::Respond(body)
    }
}

fn body_name(b: &RequestBody) -> &'static str {
    match b {
        RequestBody::Metadata(_) => "Metadata",
        RequestBody::FindCoordinator(_) => "FindCoordinator",
        RequestBody::InitProducerId(_) => "InitProducerId",
        RequestBody::AddPartitionsToTxn(_) => "AddPartitionsToTxn",
        RequestBody::Produce(_) => "Produce",
        RequestBody::AddOffsetsToTxn(_) => "AddOffsetsToTxn",
        RequestBody::TxnOffsetCommit(_) => "TxnOffsetCommit",
        RequestBody::EndTxn(_) => "EndTxn",
        _ => "other",
    }
}

/// Plays the adapter for one producer against the shared cluster.
struct Harness {
    p: Producer,
    now: Instant,
    cluster: Arc<Mutex<Cluster>>,
    brokers: BTreeMap<ConnId, (i32, ScriptedBroker)>,
    /// Bytes on their way to the transaction coordinator, which is a few milliseconds away
    /// while the partition leader is near: a batch sent before its partition's
    /// AddPartitionsToTxn was answered would reach the leader first.
    in_transit: Vec<(Instant, ConnId, bytes::Bytes)>,
    events: Vec<ProducerEvent>,
}

/// How long bytes take to reach the transaction coordinator.
const COORDINATOR_LATENCY: Duration = Duration::from_millis(3);

impl Harness {
    fn new(cluster: &Arc<Mutex<Cluster>>, settings: &[(&str, &str)]) -> Self {
        let mut map = vec![
            ("bootstrap.servers", "broker1:9092"),
            ("transactional.id", "tx-1"),
        ];
        map.extend_from_slice(settings);
        Harness {
            p: Producer::new(ProducerConfig::from_map(map).unwrap()),
            now: Instant::ZERO,
            cluster: cluster.clone(),
            brokers: BTreeMap::new(),
            in_transit: Vec::new(),
            events: Vec::new(),
        }
    }

    fn pump(&mut self) {
        while let Some(o) = self.p.poll_output() {
            match o {
                Output::Event(e) => self.events.extend(e.per_record()),
                Output::Transmit(Transmit::Connect { conn, addr }) => {
                    let node: i32 = addr.host.trim_start_matches("broker").parse().unwrap();
                    let cluster = self.cluster.clone();
                    let broker = ScriptedBroker::new(move |_, body| {
                        cluster.lock().unwrap().handle(node, body)
                    });
                    self.brokers.insert(conn, (node, broker));
                    self.p.handle_connected(conn, self.now);
                }
                Output::Transmit(Transmit::Send { conn, bytes }) => match self.brokers.get(&conn) {
                    Some((TXN_COORDINATOR, _)) => {
                        let due = self.now + COORDINATOR_LATENCY;
                        self.in_transit.push((due, conn, bytes));
                    }
                    Some(_) => self.deliver(conn, &bytes),
                    None => {}
                },
                Output::Transmit(Transmit::Close { conn }) => {
                    self.brokers.remove(&conn);
                }
                _ => unreachable!("a variant this test does not know"),
            }
        }
    }

    fn deliver(&mut self, conn: ConnId, bytes: &[u8]) {
        let Some((_, b)) = self.brokers.get_mut(&conn) else {
            return;
        };
        let out = b.receive(bytes).unwrap();
        if !out.bytes.is_empty() {
            self.p.handle_received(conn, &out.bytes, self.now);
        }
    }

    fn ms(&mut self, ms: u64) {
        let end = self.now + Duration::from_millis(ms);
        self.pump();
        loop {
            let arrival = self.in_transit.iter().map(|t| t.0).min();
            let next = [self.p.poll_timeout(), arrival]
                .into_iter()
                .flatten()
                .min()
                .filter(|n| *n <= end);
            let Some(next) = next else { break };
            self.now = self.now.max(next);
            let now = self.now;
            let (due, later): (Vec<_>, Vec<_>) =
                self.in_transit.drain(..).partition(|t| t.0 <= now);
            self.in_transit = later;
            for (_, conn, bytes) in due {
                self.deliver(conn, &bytes);
            }
            self.p.handle_timeout(self.now);
            self.pump();
        }
        self.now = end;
        self.p.handle_timeout(self.now);
        self.pump();
    }

    fn send(&mut self, value: &str) -> Result<RecordToken, SendError> {
        let r = self.p.send(
            ProducerRecord::new("t", value.to_owned(), 1_700_000_000_000),
            self.now,
        );
        self.pump();
        r
    }

    fn result(&self, token: TxnToken) -> Option<Result<(), TransactionError>> {
        let mut found = self.events.iter().filter_map(|e| match e {
            ProducerEvent::Transaction(t, r) if *t == token => Some(r.clone()),
            _ => None,
        });
        let first = found.next();
        assert!(found.next().is_none(), "a call resolved twice");
        first
    }

    fn outcome(&self, token: RecordToken) -> Option<&Outcome> {
        self.events.iter().find_map(|e| match e {
            ProducerEvent::Outcome(t, o) if *t == token => Some(o),
            _ => None,
        })
    }

    /// Calls init_transactions and waits for it.
    fn init(&mut self) {
        let t = self.p.init_transactions(self.now);
        self.ms(50);
        assert_eq!(self.result(t), Some(Ok(())), "{:?}", self.events);
    }
}

fn cluster() -> Arc<Mutex<Cluster>> {
    Arc::new(Mutex::new(Cluster {
        generation: 1,
        ..Default::default()
    }))
}

#[test]
fn a_transaction_commits_its_records_and_offsets_together() {
    let c = cluster();
    let mut h = Harness::new(&c, &[("linger.ms", "1000")]);
    h.init();
    h.p.begin_transaction().unwrap();
    let tokens: Vec<RecordToken> = (0..5).map(|i| h.send(&format!("r{i}")).unwrap()).collect();
    let group = GroupMetadata {
        generation_id: 1,
        member_id: "m".into(),
        ..GroupMetadata::new("g")
    };
    let offsets = h.p.send_offsets_to_transaction(
        [(
            ("in".to_owned(), 0),
            TxnOffset {
                offset: 17,
                leader_epoch: -1,
            },
        )],
        group,
        h.now,
    );
    h.ms(10);
    assert_eq!(h.result(offsets), Some(Ok(())));
    assert!(
        c.lock().unwrap().committed.is_empty(),
        "nothing is visible before the commit"
    );
    // The commit sends the lingering batches at once, then ends the transaction.
    let commit = h.p.commit_transaction(h.now);
    h.ms(10);
    assert_eq!(h.result(commit), Some(Ok(())), "{:?}", h.events);
    for t in &tokens {
        assert!(
            matches!(h.outcome(*t), Some(Outcome::Delivered { .. })),
            "{:?}",
            h.outcome(*t)
        );
    }
    let cl = c.lock().unwrap();
    let mut seen: Vec<String> = cl.committed.values().flatten().cloned().collect();
    seen.sort();
    assert_eq!(seen, ["r0", "r1", "r2", "r3", "r4"]);
    assert_eq!(cl.group_offsets.get(&("in".to_owned(), 0)), Some(&17));
    // Partitions join before their batches; the end comes after every Produce.
    let log = &cl.log;
    let first_produce = log.iter().position(|n| *n == "Produce").unwrap();
    let first_add = log.iter().position(|n| *n == "AddPartitionsToTxn").unwrap();
    let last_produce = log.iter().rposition(|n| *n == "Produce").unwrap();
    let end = log.iter().position(|n| *n == "EndTxn").unwrap();
    assert!(first_add < first_produce && last_produce < end, "{log:?}");
}

/// Under transaction version 2 a busy coordinator's Produce answers CONCURRENT_TRANSACTIONS
/// while the previous transaction's markers are still being written: Java 4.x retries it, and
/// so does this producer, so the transaction commits (found with two transactional writers on a
/// 3-node Kafka, where 11 of 12 runs failed their transaction).
#[test]
fn concurrent_transactions_on_produce_is_retried_and_the_transaction_commits() {
    let c = cluster();
    c.lock().unwrap().concurrent = 3;
    let mut h = Harness::new(&c, &[("linger.ms", "0")]);
    h.init();
    h.p.begin_transaction().unwrap();
    let tokens: Vec<RecordToken> = (0..4).map(|i| h.send(&format!("r{i}")).unwrap()).collect();
    h.ms(2000);
    let commit = h.p.commit_transaction(h.now);
    h.ms(2000);
    assert_eq!(h.result(commit), Some(Ok(())), "{:?}", h.events);
    for t in &tokens {
        assert!(
            matches!(h.outcome(*t), Some(Outcome::Delivered { .. })),
            "{:?}",
            h.outcome(*t)
        );
    }
    let cl = c.lock().unwrap();
    assert_eq!(cl.concurrent, 0, "every refusal was answered");
    let mut seen: Vec<String> = cl.committed.values().flatten().cloned().collect();
    seen.sort();
    assert_eq!(seen, ["r0", "r1", "r2", "r3"], "each record once");
}

#[test]
fn an_abort_fails_the_unsent_records_and_hides_the_sent_ones() {
    let c = cluster();
    let mut h = Harness::new(&c, &[("linger.ms", "60000")]);
    h.init();
    h.p.begin_transaction().unwrap();
    let sent = h.send("kept-back").unwrap();
    h.p.flush(h.now);
    h.ms(10);
    assert!(matches!(h.outcome(sent), Some(Outcome::Delivered { .. })));
    let unsent = h.send("never").unwrap();
    let abort = h.p.abort_transaction(h.now);
    h.ms(10);
    assert_eq!(h.result(abort), Some(Ok(())), "{:?}", h.events);
    assert_eq!(
        h.outcome(unsent),
        Some(&Outcome::Failed {
            error: DeliveryError::TransactionAborted,
            certainty: Certainty::NotSent
        })
    );
    {
        let cl = c.lock().unwrap();
        assert!(cl.committed.is_empty(), "{:?}", cl.committed);
        assert_eq!(cl.aborts, 1);
    }
    // The producer carries on with the next transaction.
    h.p.begin_transaction().unwrap();
    h.send("next").unwrap();
    let commit = h.p.commit_transaction(h.now);
    h.ms(10);
    assert_eq!(h.result(commit), Some(Ok(())));
    let cl = c.lock().unwrap();
    let seen: Vec<String> = cl.committed.values().flatten().cloned().collect();
    assert_eq!(seen, ["next"]);
}

/// Once a record of the transaction failed (it can only abort now), records still waiting in
/// the accumulator fail at once as aborted and not sent, as Java's sender fails them, instead
/// of sitting out `delivery.timeout.ms` (librdkafka's mock cluster: a minute's wait).
#[test]
fn records_of_a_transaction_that_can_only_abort_fail_at_once() {
    let c = cluster();
    c.lock().unwrap().refuse = Some(ErrorCode::InvalidRecord);
    let mut h = Harness::new(&c, &[("linger.ms", "60000")]);
    h.init();
    h.p.begin_transaction().unwrap();
    let on = |partition: i32, v: &str| {
        let mut r = ProducerRecord::new("t", v.to_owned(), 1_700_000_000_000);
        r.partition = Some(partition);
        r
    };
    let refused = h.p.send(on(0, "refused"), h.now).unwrap();
    h.p.flush(h.now);
    // Partition 0 is being added (the coordinator is 3 ms away); a record for partition 1
    // waits in a batch that lingers for a minute.
    h.ms(1);
    let waiting = h.p.send(on(1, "waiting"), h.now).unwrap();
    h.ms(100);
    assert!(
        matches!(h.outcome(refused), Some(Outcome::Failed { .. })),
        "{:?}",
        h.outcome(refused)
    );
    assert_eq!(
        h.outcome(waiting),
        Some(&Outcome::Failed {
            error: DeliveryError::TransactionAborted,
            certainty: Certainty::NotSent
        }),
        "within 100 ms of the failure, not at delivery.timeout.ms"
    );
    let abort = h.p.abort_transaction(h.now);
    h.ms(20);
    assert_eq!(h.result(abort), Some(Ok(())), "{:?}", h.events);
    assert!(c.lock().unwrap().committed.is_empty());
}

#[test]
fn a_newer_producer_with_the_same_id_fences_the_older_one() {
    let c = cluster();
    let mut old = Harness::new(&c, &[]);
    old.init();
    old.p.begin_transaction().unwrap();
    old.send("zombie").unwrap();
    old.ms(20);
    let mut new = Harness::new(&c, &[]);
    new.init();
    // The new producer's init aborted the old one's open transaction.
    assert_eq!(c.lock().unwrap().aborts, 1);
    let commit = old.p.commit_transaction(old.now);
    old.ms(20);
    assert_eq!(
        old.result(commit),
        Some(Err(TransactionError::Fatal(ErrorCode::ProducerFenced)))
    );
    // Every later call fails with the same cause.
    assert_eq!(
        old.p.begin_transaction(),
        Err(TransactionError::Fatal(ErrorCode::ProducerFenced))
    );
    assert!(matches!(
        old.send("more"),
        Err(SendError::Transaction(TransactionError::Fatal(
            ErrorCode::ProducerFenced
        )))
    ));
    assert!(c.lock().unwrap().committed.is_empty());
    // The new one commits.
    new.p.begin_transaction().unwrap();
    new.send("fresh").unwrap();
    let commit = new.p.commit_transaction(new.now);
    new.ms(20);
    assert_eq!(new.result(commit), Some(Ok(())));
    let seen: Vec<String> = c
        .lock()
        .unwrap()
        .committed
        .values()
        .flatten()
        .cloned()
        .collect();
    assert_eq!(seen, ["fresh"]);
}

#[test]
fn a_zombie_members_offsets_are_refused_and_its_transaction_cannot_commit() {
    let c = cluster();
    let mut h = Harness::new(&c, &[]);
    h.init();
    h.p.begin_transaction().unwrap();
    h.send("out").unwrap();
    // The group moved to generation 2 since this member read its records.
    c.lock().unwrap().generation = 2;
    let group = GroupMetadata {
        generation_id: 1,
        member_id: "m".into(),
        ..GroupMetadata::new("g")
    };
    let offsets = h.p.send_offsets_to_transaction(
        [(
            ("in".to_owned(), 0),
            TxnOffset {
                offset: 5,
                leader_epoch: -1,
            },
        )],
        group,
        h.now,
    );
    h.ms(20);
    assert!(
        matches!(
            h.result(offsets),
            Some(Err(TransactionError::Abortable { .. }))
        ),
        "{:?}",
        h.result(offsets)
    );
    let commit = h.p.commit_transaction(h.now);
    h.ms(20);
    assert!(matches!(
        h.result(commit),
        Some(Err(TransactionError::Abortable { .. }))
    ));
    let abort = h.p.abort_transaction(h.now);
    h.ms(20);
    assert_eq!(h.result(abort), Some(Ok(())));
    let cl = c.lock().unwrap();
    assert!(cl.committed.is_empty() && cl.group_offsets.is_empty());
}

#[test]
fn calls_outside_their_state_are_refused_typed() {
    let c = cluster();
    let mut h = Harness::new(&c, &[]);
    assert!(matches!(
        h.send("early"),
        Err(SendError::Transaction(
            TransactionError::InvalidState { .. }
        ))
    ));
    h.init();
    assert!(matches!(
        h.send("outside"),
        Err(SendError::Transaction(
            TransactionError::InvalidState { .. }
        ))
    ));
    let commit = h.p.commit_transaction(h.now);
    h.pump();
    assert!(matches!(
        h.result(commit),
        Some(Err(TransactionError::InvalidState { .. }))
    ));
    // A producer without transactional.id.
    let mut plain =
        Producer::new(ProducerConfig::from_map([("bootstrap.servers", "broker1:9092")]).unwrap());
    assert_eq!(
        plain.begin_transaction(),
        Err(TransactionError::NotTransactional)
    );
    let t = plain.init_transactions(Instant::ZERO);
    let mut got = None;
    while let Some(o) = plain.poll_output() {
        if let Output::Event(ProducerEvent::Transaction(tok, r)) = o {
            assert_eq!(tok, t);
            got = Some(r);
        }
    }
    assert_eq!(got, Some(Err(TransactionError::NotTransactional)));
}

#[test]
fn transactions_need_idempotence() {
    let e = ProducerConfig::from_map([
        ("bootstrap.servers", "b:9092"),
        ("transactional.id", "x"),
        ("enable.idempotence", "false"),
    ])
    .unwrap_err();
    assert!(
        matches!(
            e,
            ConfigError::Conflict {
                key: "transactional.id",
                ..
            }
        ),
        "{e:?}"
    );
    assert!(e.to_string().contains("idempotence"), "{e}");
    let cfg = ProducerConfig::from_map([
        ("bootstrap.servers", "b:9092"),
        ("transactional.id", "x"),
        ("transaction.timeout.ms", "5000"),
    ])
    .unwrap();
    assert_eq!(cfg.transactional_id.as_deref(), Some("x"));
    assert_eq!(cfg.transaction_timeout, Duration::from_secs(5));
    assert!(cfg.notes().is_empty(), "{:?}", cfg.notes());
}
