//! A seeded, simulated Kafka cluster: N brokers with replicated partitions (leaders, ISR, high
//! watermark, leader epochs, `min.insync.replicas`, no unclean election), idempotent-producer
//! checks, a classic group coordinator with an offsets store, and faults (crash, restart,
//! leader moves, coordinator moves). It speaks real Kafka bytes on each connection; answers on
//! a connection keep request order even when some wait (acks=all, long polls, joins).
//!
//! It knows nothing of the network: the caller (see [`crate::net::SimNet`]) delivers each
//! connection's bytes with [`SimCluster::receive`] and takes what the brokers write from
//! [`SimCluster::poll_transmit`].

use std::collections::{BTreeMap, BTreeSet, VecDeque};

use bytes::{Bytes, BytesMut};
use kafka_proto::api::{ApiKey, RequestBody, ResponseBody};
use kafka_proto::record::RecordBatches;
use kafka_proto::{decode_request, encode_response, FrameDecoder, RequestHeader};
use uuid::Uuid;

use crate::scripted::api_versions_answer;
pub use crate::scripted::SimTime;
use crate::security::{self, Auth, Security};

mod admin;
mod consumer_group;
mod coordinator;
mod faults;
mod handlers;
mod inspect;
mod partition;
mod txn;

use coordinator::Coordinator;
pub use partition::Fate;
use partition::Partition;
pub use txn::TxnState;

/// A connection, as the caller names it.
pub type ConnKey = u64;

/// One answer's place in its connection's order.
pub(crate) type Slot = (ConnKey, u64);

/// The shape of a simulated cluster.
#[derive(Debug, Clone)]
pub struct ClusterConfig {
    /// Brokers, numbered 1..=N.
    pub brokers: i32,
    /// Topics and their partition counts.
    pub topics: Vec<(String, i32)>,
    /// Replicas per partition (at most `brokers`).
    pub replication: i32,
    /// `min.insync.replicas`.
    pub min_insync: usize,
    /// How often followers copy their leaders.
    pub replication_interval: SimTime,
    /// `replica.lag.time.max.ms`: a follower behind for longer leaves the ISR.
    pub replica_lag: SimTime,
    /// The `(api key, min, max)` versions each broker advertises (missing: every API this
    /// codec knows).
    pub versions: BTreeMap<i32, Vec<(i16, i16, i16)>>,
    /// Idempotent producers' retries are deduplicated (turn off to inject a broker bug).
    pub dedup: bool,
    /// TLS and SASL on every connection.
    pub security: Security,
    /// The transaction coordinator writes its markers (turn off to inject a broker bug: ended
    /// transactions complete without them, so their records never become stable).
    pub markers: bool,
    /// read_committed fetches are told of aborted transactions (turn off to inject a broker
    /// bug: their records reach read_committed consumers).
    pub aborted_list: bool,
    /// The finalized `transaction.version` feature (KIP-890): 2 serves transaction version 2
    /// (partitions added by Produce v12+, groups by TxnOffsetCommit v5, an epoch bump at each
    /// EndTxn v5) beside version 1; 1 (or 0) advertises version 1 only.
    pub transaction_version: i16,
    /// Brokers keep the idempotent producer ids they issued in memory only, as Tansu does: once
    /// a broker restarts, a Produce under an id issued before answers UNKNOWN_PRODUCER_ID
    /// whatever its sequence, until the producer asks for a new id (a fault, off by default:
    /// Kafka keeps producer state in its log's snapshots).
    pub forget_producers: bool,
    /// Each broker is in a rack of its own, `rack-N` (named in Metadata), and leaders choose
    /// replicas as Kafka's `RackAwareReplicaSelector`: a consumer fetching with the rack of an
    /// in-sync follower is pointed at it (KIP-392), and followers serve consumers' fetches up
    /// to the high watermark. Off by default.
    pub racks: bool,
}

impl Default for ClusterConfig {
    fn default() -> Self {
        ClusterConfig {
            brokers: 3,
            topics: vec![("t".into(), 3)],
            replication: 3,
            min_insync: 2,
            replication_interval: SimTime::from_millis(5),
            replica_lag: SimTime::from_millis(100),
            versions: BTreeMap::new(),
            dedup: true,
            security: Security::default(),
            markers: true,
            aborted_list: true,
            transaction_version: 2,
            forget_producers: false,
            racks: false,
        }
    }
}

/// What a broker writes on a connection.
#[derive(Debug, Clone, PartialEq)]
pub enum BrokerWrite {
    /// Bytes, in order.
    Bytes(Bytes),
    /// The broker closed the connection (after what it wrote before).
    Close,
}

#[derive(Debug)]
struct Conn {
    node: i32,
    frames: FrameDecoder,
    next_slot: u64,
    /// Answers in request order, with their correlation ids: `None` until ready.
    slots: VecDeque<(u64, i32, Option<Bytes>)>,
    /// The TLS session, with `security.tls`.
    tls: Option<rustls::ServerConnection>,
    /// SASL: where authentication is.
    auth: Auth,
    /// When the last re-authentication began: Kafka allows one a second.
    last_reauth: Option<SimTime>,
}

/// A produce request waiting for acks=all.
#[derive(Debug)]
pub(crate) struct PendingProduce {
    slot: Slot,
    version: i16,
    node: i32,
    deadline: SimTime,
    parts: Vec<PendingPart>,
}

/// One partition of a produce request.
#[derive(Debug)]
pub(crate) struct PendingPart {
    topic: String,
    topic_id: Uuid,
    partition: i32,
    /// The leader epoch the records were appended in.
    epoch: i32,
    /// The high watermark that acknowledges them.
    need: i64,
    base: i64,
    /// The error code, once answered.
    answer: Option<i16>,
}

/// Counters of what happened, for the simulation's fault checks.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ClusterStats {
    /// Records cut from logs by truncation (acks=1 writes the new leader never had).
    pub truncated_records: u64,
    /// Leader elections (failovers and moves).
    pub elections: u64,
    /// Coordinator moves.
    pub coordinator_moves: u64,
    /// Broker crashes.
    pub crashes: u64,
    /// Produce requests refused with NOT_ENOUGH_REPLICAS.
    pub not_enough_replicas: u64,
    /// Produce requests refused with UNKNOWN_PRODUCER_ID (an id a restart forgot).
    pub unknown_producer: u64,
    /// SASL authentications that succeeded (re-authentications included), and failed.
    pub authentications: (u64, u64),
    /// Connections closed for a request after their SASL session ended (a client that did
    /// not re-authenticate in time).
    pub expired_sessions: u64,
    /// Connections closed for a request after their SASL session ended that the client
    /// sent in time: the network (a black hole) held it past the session's end. Kafka closes
    /// those too; no client can help it.
    pub late_expired_sessions: u64,
    /// Connections closed for a request before authentication.
    pub unauthenticated: u64,
    /// Re-authentications refused for coming within a second of the last.
    pub early_reauths: u64,
    /// TLS sessions that failed.
    pub tls_failures: u64,
    /// Transaction coordinator moves.
    pub txn_coordinator_moves: u64,
    /// Transactions the coordinator aborted for their timeout.
    pub txn_timeouts: u64,
    /// Transactions completed: committed, aborted (every marker under the high watermark).
    pub txn_completed: (u64, u64),
}

/// The cluster.
#[derive(Debug)]
pub struct SimCluster {
    cfg: ClusterConfig,
    now: SimTime,
    /// When the bytes being received were due (see [`SimCluster::receive_due`]).
    due: SimTime,
    up: BTreeSet<i32>,
    topics: BTreeMap<String, (Uuid, Vec<Partition>)>,
    conns: BTreeMap<ConnKey, Conn>,
    out: VecDeque<(ConnKey, BrokerWrite)>,
    coordinator_node: Option<i32>,
    coordinator: Coordinator,
    /// The transaction coordinator's broker (another partition than the groups' in Kafka:
    /// it starts on the last broker).
    txn_node: Option<i32>,
    txn: txn::Transactions,
    pending: Vec<PendingProduce>,
    /// Empty fetches answered at their long-poll deadline: (due, slot, version, node, request).
    parked: Vec<(SimTime, Slot, i16, i32, RequestBody)>,
    next_tick: SimTime,
    next_producer_id: i64,
    /// With [`ClusterConfig::forget_producers`], the producer ids up to this one were issued
    /// before a broker last restarted: Produce requests under them (idempotent, not
    /// transactional) are refused.
    forgotten_producers: i64,
    picks: u64,
    /// Topics created through CreateTopics (for their ids).
    created_topics: u64,
    stats: ClusterStats,
    /// Per partition, the leader epoch a Produce last found and until when that leader is
    /// not ready yet: as a Kafka broker that metadata already names leader (a topic just
    /// created, a leader just elected) answers NOT_LEADER_OR_FOLLOWER for a moment.
    warming: BTreeMap<(String, i32), (i32, SimTime)>,
    /// The seed, for those moments' lengths.
    seed: u64,
    /// Whether leaders have those moments (a fault, off unless asked).
    warmups: bool,
    /// Brokers killed and not fenced yet that metadata still lists (see [`SimCluster::kill`]).
    listed_down: BTreeSet<i32>,
}

impl SimCluster {
    /// Leaders refuse Produce for a moment after each election and at the start, as a Kafka
    /// broker does while it becomes leader (a topic just created, a leader just moved).
    pub fn leader_warmups(&mut self, on: bool) {
        self.warmups = on;
    }

    /// A cluster with every broker up. `seed` varies the topic ids and elections.
    pub fn new(cfg: ClusterConfig, seed: u64) -> Self {
        let brokers: Vec<i32> = (1..=cfg.brokers).collect();
        let rf = cfg.replication.clamp(1, cfg.brokers.max(1)) as usize;
        let topics = cfg
            .topics
            .iter()
            .enumerate()
            .map(|(i, (name, n))| {
                let parts = (0..*n)
                    .map(|p| {
                        let replicas: Vec<i32> = (0..rf)
                            .map(|r| brokers[(p as usize + r) % brokers.len()])
                            .collect();
                        Partition::new(&replicas)
                    })
                    .collect();
                let id = Uuid::from_u64_pair(seed | 1, i as u64 + 1);
                (name.clone(), (id, parts))
            })
            .collect();
        SimCluster {
            up: brokers.iter().copied().collect(),
            coordinator_node: brokers.first().copied(),
            txn_node: brokers.last().copied(),
            txn: txn::Transactions::default(),
            cfg,
            now: SimTime::ZERO,
            due: SimTime::ZERO,
            topics,
            conns: BTreeMap::new(),
            out: VecDeque::new(),
            coordinator: Coordinator::default(),
            pending: Vec::new(),
            parked: Vec::new(),
            next_tick: SimTime::ZERO,
            next_producer_id: 1000,
            forgotten_producers: -1,
            picks: seed,
            created_topics: 0,
            stats: ClusterStats::default(),
            warming: BTreeMap::new(),
            seed,
            warmups: false,
            listed_down: BTreeSet::new(),
        }
    }

    /// A broker's advertised address: `broker-N:9092`.
    pub fn address(node: i32) -> (String, u16) {
        (format!("broker-{node}"), 9092)
    }

    /// The broker at an address, if any.
    pub fn node_at(&self, host: &str, port: u16) -> Option<i32> {
        let n: i32 = host.strip_prefix("broker-")?.parse().ok()?;
        (port == 9092 && (1..=self.cfg.brokers).contains(&n)).then_some(n)
    }

    /// Whether a broker is up.
    pub fn is_up(&self, node: i32) -> bool {
        self.up.contains(&node)
    }

    /// A connection to `node` opens; false if the broker is down.
    pub fn accept(&mut self, conn: ConnKey, node: i32) -> bool {
        if !self.is_up(node) {
            return false;
        }
        let auth = match self.cfg.security.sasl {
            Some(_) => Auth::Pending { mechanism: None },
            None => Auth::Done {
                expires: None,
                reauth: None,
            },
        };
        self.conns.insert(
            conn,
            Conn {
                node,
                frames: FrameDecoder::default(),
                next_slot: 0,
                slots: VecDeque::new(),
                tls: self.cfg.security.tls.then(security::tls_session),
                auth,
                last_reauth: None,
            },
        );
        true
    }

    /// Changes (or adds) a user's password: the next authentications with the old one fail,
    /// and sessions already authenticated last until they end.
    pub fn set_password(&mut self, user: &str, password: &str) {
        if let Some(s) = &mut self.cfg.security.sasl {
            s.users.insert(user.to_owned(), password.to_owned());
        }
    }

    /// The client closed a connection (or it broke).
    pub fn closed(&mut self, conn: ConnKey) {
        self.conns.remove(&conn);
    }

    /// Bytes from the client on a connection.
    pub fn receive(&mut self, conn: ConnKey, data: &[u8], now: SimTime) {
        self.receive_due(conn, data, now, now);
    }

    /// Bytes the network delivered at `now` that were due at `due` (earlier when the
    /// network held them): a session counts as the client's fault to have lapsed only if it
    /// ended before the request was due.
    pub fn receive_due(&mut self, conn: ConnKey, data: &[u8], due: SimTime, now: SimTime) {
        self.due = due.min(now);
        self.now = self.now.max(now);
        let Some(c) = self.conns.get_mut(&conn) else {
            return;
        };
        match &mut c.tls {
            Some(tls) => {
                let mut rest = data;
                let mut plain = Vec::new();
                while !rest.is_empty() {
                    let ok = tls.read_tls(&mut rest).is_ok()
                        && match tls.process_new_packets() {
                            Ok(st) => {
                                let n = st.plaintext_bytes_to_read();
                                let start = plain.len();
                                plain.resize(start + n, 0);
                                std::io::Read::read_exact(&mut tls.reader(), &mut plain[start..])
                                    .is_ok()
                            }
                            Err(_) => false,
                        };
                    if !ok {
                        self.stats.tls_failures += 1;
                        self.tls_out(conn);
                        return self.close(conn);
                    }
                }
                c.frames.extend(&plain);
                self.tls_out(conn);
            }
            None => c.frames.extend(data),
        }
        loop {
            let Some(c) = self.conns.get_mut(&conn) else {
                return;
            };
            let frame = match c.frames.next_frame() {
                Ok(Some(f)) => f,
                Ok(None) => break,
                Err(_) => return self.close(conn),
            };
            let Ok((header, body)) = decode_request(&frame) else {
                return self.close(conn); // as Kafka does with a malformed request
            };
            let node = c.node;
            let slot = (conn, c.next_slot);
            c.next_slot += 1;
            c.slots.push_back((slot.1, header.correlation_id, None));
            match self.dispatch(node, slot, &header, &body) {
                Answer::Now(body) => self.fill(slot, header.api_version, header.api_key, &body),
                Answer::At(body, v) => self.fill(slot, v, header.api_key, &body),
                Answer::Later => {}
                Answer::None => {
                    if let Some(c) = self.conns.get_mut(&conn) {
                        c.slots.retain(|s| s.0 != slot.1);
                    }
                    self.flush(conn);
                }
            }
        }
    }

    fn dispatch(
        &mut self,
        node: i32,
        slot: Slot,
        header: &RequestHeader,
        body: &RequestBody,
    ) -> Answer {
        let v = header.api_version;
        let now = self.now;
        let coordinator = self.coordinator_node == Some(node);
        if let Some(answer) = self.authenticate(slot, body) {
            return answer;
        }
        match body {
            RequestBody::ApiVersions(_) => self.api_versions(node, v),
            RequestBody::Metadata(r) => Answer::Now(self.metadata(r)),
            RequestBody::InitProducerId(r) => match r.transactional_id.as_deref() {
                Some(id) if !id.is_empty() && !self.is_txn_coordinator(node) => {
                    Answer::Now(handlers::not_coordinator(body))
                }
                Some(id) if !id.is_empty() => Answer::Now(self.init_txn(id, r)),
                _ => {
                    self.next_producer_id += 1;
                    Answer::Now(handlers::init_producer_id(self.next_producer_id))
                }
            },
            _ if !self.is_txn_coordinator(node) && handlers::is_txn_api(body) => {
                Answer::Now(handlers::not_coordinator(body))
            }
            RequestBody::AddPartitionsToTxn(r) => Answer::Now(self.add_partitions(r)),
            RequestBody::AddOffsetsToTxn(r) => Answer::Now(self.add_offsets(r)),
            RequestBody::EndTxn(r) => Answer::Now(self.end_txn(r, v)),
            RequestBody::Produce(r) => self.produce(node, slot, v, r),
            RequestBody::Fetch(r) => self.fetch(node, slot, v, r, false),
            RequestBody::ListOffsets(r) => Answer::Now(self.list_offsets(node, r)),
            RequestBody::OffsetForLeaderEpoch(r) => Answer::Now(self.epoch_ends(node, r)),
            RequestBody::FindCoordinator(r) => Answer::Now(self.find_coordinator(r)),
            RequestBody::CreateTopics(r) => Answer::Now(self.create_topics(r)),
            RequestBody::DeleteTopics(r) => Answer::Now(self.delete_topics(r)),
            _ if !coordinator && handlers::is_group_api(body) => {
                Answer::Now(handlers::not_coordinator(body))
            }
            RequestBody::JoinGroup(r) => self.coordinator.join(slot, v, r, now).into(),
            RequestBody::SyncGroup(r) => self.coordinator.sync(slot, v, r, now).into(),
            RequestBody::Heartbeat(r) => Answer::Now(self.coordinator.heartbeat(r, now)),
            RequestBody::LeaveGroup(r) => Answer::Now(self.coordinator.leave(r, now)),
            RequestBody::ConsumerGroupHeartbeat(r) => {
                let table = self.topic_table();
                let answer = self.coordinator.consumer.heartbeat(r, &table, now);
                Answer::Now(ResponseBody::ConsumerGroupHeartbeat(answer))
            }
            RequestBody::OffsetCommit(r) => Answer::Now(self.coordinator.commit(r, now)),
            RequestBody::OffsetFetch(r) => Answer::Now(self.coordinator.fetch_offsets(r)),
            RequestBody::TxnOffsetCommit(r) => {
                let txn = self.txn_offsets_check(r, v).err().unwrap_or(0);
                Answer::Now(self.coordinator.txn_commit(r, txn))
            }
            _ => {
                self.close(slot.0);
                Answer::None
            }
        }
    }

    /// SASL: answers SaslHandshake and SaslAuthenticate, and closes the connection for any
    /// other request before authentication or after the session ended (as Kafka does).
    /// `None`: the request may be served.
    fn authenticate(&mut self, slot: Slot, body: &RequestBody) -> Option<Answer> {
        use kafka_proto::messages::sasl_authenticate_response::SaslAuthenticateResponse;
        use kafka_proto::messages::sasl_handshake_response::SaslHandshakeResponse;
        let sasl = self.cfg.security.sasl.as_ref()?;
        let c = self.conns.get_mut(&slot.0)?;
        let now = self.now;
        match body {
            RequestBody::ApiVersions(_) => None,
            RequestBody::SaslHandshake(_)
                if matches!(c.auth, Auth::Done { .. })
                    && c.last_reauth
                        .is_some_and(|t| now < t + SimTime::from_secs(1)) =>
            {
                // As Kafka: a re-authentication within a second of the last is not one; the
                // request goes to the ordinary handler, which answers ILLEGAL_SASL_STATE.
                self.stats.early_reauths += 1;
                Some(Answer::Now(ResponseBody::SaslHandshake(
                    SaslHandshakeResponse {
                        error_code: 34,
                        ..Default::default()
                    },
                )))
            }
            RequestBody::SaslHandshake(r) => {
                if matches!(c.auth, Auth::Done { .. }) {
                    c.last_reauth = Some(now);
                }
                let enabled = sasl.mechanisms.contains(&r.mechanism);
                if enabled {
                    c.auth = match &c.auth {
                        Auth::Done { expires, .. } => Auth::Done {
                            expires: *expires,
                            reauth: Some(r.mechanism.clone()),
                        },
                        _ => Auth::Pending {
                            mechanism: Some(r.mechanism.clone()),
                        },
                    };
                }
                Some(Answer::Now(ResponseBody::SaslHandshake(
                    SaslHandshakeResponse {
                        error_code: if enabled { 0 } else { 33 },
                        mechanisms: sasl.mechanisms.clone(),
                        ..Default::default()
                    },
                )))
            }
            RequestBody::SaslAuthenticate(r) => {
                self.picks = self.picks.wrapping_add(1);
                let (next, (code, message, bytes, lifetime)) =
                    security::authenticate(sasl, &c.auth, &r.auth_bytes, now, self.picks);
                c.auth = next;
                match (code, &c.auth) {
                    (0, Auth::Done { .. }) => self.stats.authentications.0 += 1,
                    (0, _) => {}
                    _ => self.stats.authentications.1 += 1,
                }
                Some(Answer::Now(ResponseBody::SaslAuthenticate(
                    SaslAuthenticateResponse {
                        error_code: code,
                        error_message: message,
                        auth_bytes: Bytes::from(bytes),
                        session_lifetime_ms: lifetime,
                        ..Default::default()
                    },
                )))
            }
            _ => match &c.auth {
                Auth::Done { expires, .. } if expires.is_none_or(|e| e > now) => None,
                Auth::Done { expires, .. } => {
                    if expires.is_some_and(|e| e > self.due) {
                        self.stats.late_expired_sessions += 1;
                    } else {
                        self.stats.expired_sessions += 1;
                    }
                    self.close(slot.0);
                    Some(Answer::None)
                }
                _ => {
                    self.stats.unauthenticated += 1;
                    self.close(slot.0);
                    Some(Answer::None)
                }
            },
        }
    }

    /// Writes what the TLS session has to send.
    fn tls_out(&mut self, conn: ConnKey) {
        let Some(tls) = self.conns.get_mut(&conn).and_then(|c| c.tls.as_mut()) else {
            return;
        };
        let mut out = Vec::new();
        while tls.wants_write() {
            if tls.write_tls(&mut out).is_err() {
                break;
            }
        }
        if !out.is_empty() {
            self.out
                .push_back((conn, BrokerWrite::Bytes(Bytes::from(out))));
        }
    }

    fn api_versions(&self, node: i32, version: i16) -> Answer {
        let table: Vec<(i16, i16, i16)> = self
            .cfg
            .versions
            .get(&node)
            .cloned()
            .unwrap_or_else(crate::scripted::default_versions);
        // Answered as the codec's newest ApiVersions, whatever the table says of it.
        let (mut body, at) =
            api_versions_answer(&table, ApiKey::ApiVersions.max_version(), version);
        if let ResponseBody::ApiVersions(r) = &mut body {
            use kafka_proto::messages::api_versions_response::FinalizedFeatureKey;
            let level = self.cfg.transaction_version;
            if level > 0 {
                r.finalized_features_epoch = 1;
                r.finalized_features = vec![FinalizedFeatureKey {
                    name: "transaction.version".into(),
                    max_version_level: level,
                    min_version_level: level,
                    ..Default::default()
                }];
            }
        }
        match at {
            Some(at) => Answer::At(body, at),
            None => Answer::Now(body),
        }
    }

    /// Encodes an answer into its slot and writes out what is ready in order.
    fn fill(&mut self, slot: Slot, version: i16, api_key: i16, body: &ResponseBody) {
        let Some(c) = self.conns.get_mut(&slot.0) else {
            return;
        };
        let Some(key) = ApiKey::from_i16(api_key) else {
            return;
        };
        let Some(s) = c.slots.iter_mut().find(|s| s.0 == slot.1) else {
            return;
        };
        let mut buf = BytesMut::new();
        encode_response(&mut buf, key, version, s.1, body)
            .expect("the simulated cluster answers at the request's version");
        s.2 = Some(buf.freeze());
        self.flush(slot.0);
    }

    fn flush(&mut self, conn: ConnKey) {
        let Some(c) = self.conns.get_mut(&conn) else {
            return;
        };
        let mut out = BytesMut::new();
        while c.slots.front().is_some_and(|s| s.2.is_some()) {
            let (_, _, bytes) = c.slots.pop_front().expect("checked");
            out.extend_from_slice(&bytes.expect("checked"));
        }
        if out.is_empty() {
            return;
        }
        match &mut c.tls {
            Some(tls) => {
                if std::io::Write::write_all(&mut tls.writer(), &out).is_ok() {
                    self.tls_out(conn);
                }
            }
            None => self.out.push_back((conn, BrokerWrite::Bytes(out.freeze()))),
        }
    }

    fn close(&mut self, conn: ConnKey) {
        if self.conns.remove(&conn).is_some() {
            self.out.push_back((conn, BrokerWrite::Close));
        }
    }

    /// What the brokers wrote: (connection, bytes or close).
    pub fn poll_transmit(&mut self) -> Option<(ConnKey, BrokerWrite)> {
        self.out.pop_front()
    }

    /// Moves the cluster's clock: replication, the ISR, acks=all answers, long polls, group
    /// sessions and join deadlines.
    pub fn advance(&mut self, now: SimTime) {
        self.now = self.now.max(now);
        let now = self.now;
        let tick = now >= self.next_tick;
        if tick {
            self.replicate();
            self.next_tick = now + self.cfg.replication_interval;
        }
        self.answer_pending();
        // Markers go down at replication ticks, after EndTxn was answered (as Kafka writes
        // them after PrepareCommit): a coordinator crash can fall in between.
        self.drive_transactions(tick);
        // Usually nothing parked is due: only then are the lists rebuilt.
        let due: Vec<_> = if !self.parked.iter().any(|p| p.0 <= now) {
            Vec::new()
        } else {
            let (due, rest) = std::mem::take(&mut self.parked)
                .into_iter()
                .partition(|p| p.0 <= now);
            self.parked = rest;
            due
        };
        for (_, slot, v, node, req) in due {
            if let RequestBody::Fetch(r) = &req {
                if let Answer::Now(body) = self.fetch(node, slot, v, r, true) {
                    self.fill(slot, v, ApiKey::Fetch.key(), &body);
                }
            }
        }
        self.coordinator.advance(now);
        let table = self.topic_table();
        self.coordinator.consumer.advance(&table, now);
        while let Some((slot, v, body)) = self.coordinator.poll_ready() {
            let key = match body {
                ResponseBody::JoinGroup(_) => ApiKey::JoinGroup,
                _ => ApiKey::SyncGroup,
            };
            self.fill(slot, v, key.key(), &body);
        }
    }

    /// When [`SimCluster::advance`] has work next.
    pub fn next_due(&self) -> Option<SimTime> {
        let up = |n: i32| self.up.contains(&n);
        let lagging = self
            .topics
            .values()
            .flat_map(|t| &t.1)
            .any(|p| p.lagging(&up));
        let tick = (lagging || !self.pending.is_empty()).then_some(self.next_tick.max(self.now));
        let pending = self.pending.iter().map(|p| p.deadline);
        let parked = self.parked.iter().map(|p| p.0);
        tick.into_iter()
            .chain(pending)
            .chain(parked)
            .chain(self.coordinator.next_due())
            .chain(self.txn_due())
            .min()
    }

    fn replicate(&mut self) {
        let up = self.up.clone();
        let up = |n: i32| up.contains(&n);
        let (lag, now) = (self.cfg.replica_lag, self.now);
        for (_, parts) in self.topics.values_mut() {
            for p in parts.iter_mut() {
                let before = p.truncated;
                p.replicate(&up, lag, now);
                self.stats.truncated_records += p.truncated - before;
            }
        }
    }

    fn pick(&mut self) -> usize {
        // A small LCG: elections vary with the seed, and replay exactly.
        self.picks = self
            .picks
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (self.picks >> 33) as usize
    }
}

/// How a request is answered.
pub(crate) enum Answer {
    /// Now, at the request's version.
    Now(ResponseBody),
    /// Now, at this version.
    At(ResponseBody, i16),
    /// Later, through its slot.
    Later,
    /// Never (acks=0, or the connection was closed).
    None,
}

impl From<Option<ResponseBody>> for Answer {
    fn from(b: Option<ResponseBody>) -> Self {
        match b {
            Some(b) => Answer::Now(b),
            None => Answer::Later,
        }
    }
}
