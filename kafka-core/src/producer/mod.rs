//! The sans-IO producer: partitioning, batching, sending, retries, idempotence and outcomes.
//!
//! Inputs are [`Producer::send`], [`Producer::flush`], [`Producer::close`], the network facts
//! (`handle_connected`, `handle_connect_failed`, `handle_received`, `handle_closed`) and
//! [`Producer::handle_timeout`], each with `now`. Outputs are drained from
//! [`Producer::poll_output`] until it returns `None`; [`Producer::poll_timeout`] says when to
//! call `handle_timeout` next.

mod accumulator;
mod by_partition;
mod completion;
mod idempotence;
mod in_flight;
mod pending;
mod tokens;
mod transaction;
mod transactional;
mod types;

use std::collections::{BTreeMap, VecDeque};

use kafka_proto::api::ResponseBody;
use kafka_proto::messages::produce_request::{
    PartitionProduceData, ProduceRequest, TopicProduceData,
};
use kafka_proto::record::BatchMeta;
use kafka_proto::ErrorCode;

pub use accumulator::TopicPartition;
use accumulator::{record_size, Accumulator, Batch, Block, NoMemory};
use idempotence::IdempotenceState;
use in_flight::InFlight;
use pending::{Pending, PendingRecords};
pub use transaction::{GroupMetadata, TransactionError, TxnOffset, TxnToken};
pub use types::*;

use crate::backoff::Backoff;
use crate::config::{Acks, MetadataRecoveryStrategy, ProducerConfig};
use crate::metadata::Metadata;
use crate::metrics::producer::{BatchSent, FirstSend, ProducerMetrics};
use crate::metrics::MetricsSnapshot;
use crate::net::{
    lane, ConnId, Expect, NetConfig, NetEvent, Network, NodeId, Purpose, RequestError,
};
use crate::partitioner::{partition_for_key, StickyPartitioner};
use crate::rng::Rng;
use crate::time::Instant;

/// Whose response a request waits for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Tag {
    /// A metadata refresh.
    Metadata,
    /// The idempotent producer's id.
    InitProducerId,
    /// These batches.
    Produce(Vec<u64>),
    /// The transaction's request in flight.
    Txn,
}

/// Why [`Producer::append`] handed a record back.
enum NotAppended {
    /// Its topic's metadata is not known yet.
    NoMetadata,
    /// `buffer.memory` is used up.
    NoMemory,
}

/// How long a send's mark of its topic as used stands for later sends to it.
const USE_MEMO: std::time::Duration = std::time::Duration::from_secs(1);

/// Errors that mean the partition's leader moved: refresh metadata before retrying.
fn is_leadership_error(e: ErrorCode) -> bool {
    matches!(
        e,
        ErrorCode::NotLeaderOrFollower
            | ErrorCode::LeaderNotAvailable
            | ErrorCode::UnknownTopicOrPartition
            | ErrorCode::FencedLeaderEpoch
            | ErrorCode::KafkaStorageError
            | ErrorCode::UnknownTopicId
            | ErrorCode::InconsistentTopicId
    )
}

/// The producer state machine.
#[derive(Debug)]
pub struct Producer {
    cfg: ProducerConfig,
    net: Network<Tag>,
    metadata: Metadata,
    acc: Accumulator,
    partitioner: StickyPartitioner,
    retry_backoff: Backoff,
    rng: Rng,
    now: Instant,
    events: VecDeque<ProducerEvent>,
    next_token: u64,
    outstanding: tokens::Outstanding,
    flushes: Vec<(FlushToken, u64)>,
    next_flush: u64,
    /// The records waiting for their topic's metadata.
    pending: PendingRecords,
    /// The batches written and not yet answered.
    in_flight: InFlight,
    /// The queued partitions without a known leader (a superset: checked when used), and the
    /// metadata generation it was last rebuilt at, so the sender does not look up every
    /// queued partition's leader each time it runs.
    leaderless: (std::collections::BTreeSet<TopicPartition>, Option<u64>),
    /// The producer id, its epochs and each partition's sequences.
    idem: IdempotenceState,
    closing: Option<Instant>,
    closed: bool,
    /// Since when a due metadata refresh has found no broker to send to.
    no_broker_since: Option<Instant>,
    /// Since when each leader's connection (by lane) has had ready batches it could not take
    /// (for `partitioner.availability.timeout.ms`).
    stalled_since: BTreeMap<(NodeId, usize), Instant>,
    /// When the next open batch's linger.ms ends, as of the last step. A send after it runs
    /// the step: sends advance `now` without stepping, and `poll_timeout` only looks ahead.
    linger_at: Option<Instant>,
    /// Until when ready batches are held back while their leader's connection has a request in
    /// flight, as of the last step (see [`Producer::send_round`]). A send after it runs the
    /// step, as after `linger_at`.
    holding: Option<Instant>,
    /// The topic the last send marked as used in the metadata, when, and the metadata's
    /// [`Metadata::removals`] then: sends to it within [`USE_MEMO`] skip the metadata lookup
    /// that marking takes, unless a topic was dropped since.
    used: Option<(Topic, Instant, u64)>,
    /// [`Metadata::removals`] when the accumulator last dropped the queues of topics no
    /// longer wanted (see [`Accumulator::forget_idle_topics`]).
    queues_pruned: u64,
    /// The producer did work an IO loop must act on (see [`Producer::take_attention`]).
    attention: bool,
    /// The transaction state, with `transactional.id`.
    txn: Option<transaction::Transactions>,
    next_txn_token: u64,
    /// Java's producer metrics (the connection ones are the network's).
    metrics: ProducerMetrics,
    /// A warning said batches are being retried, and none was delivered since.
    retries_warned: bool,
}

crate::net::network_io!(Producer, ProducerEvent);

impl Producer {
    /// A producer. Nothing connects until the first `send`.
    pub fn new(cfg: ProducerConfig) -> Self {
        let net = Network::new(
            NetConfig::from_producer(&cfg),
            cfg.bootstrap_servers.clone(),
        );
        let retry_backoff = Backoff::new(cfg.retry_backoff, cfg.retry_backoff_max);
        Producer {
            metadata: Metadata::new(
                cfg.metadata_max_age,
                cfg.metadata_max_idle,
                retry_backoff,
                cfg.random_seed,
            ),
            acc: Accumulator::new(
                cfg.batch_size,
                // As librdkafka's batches: at most 1 MB, and within a request.
                cfg.max_request_size.min(1 << 20),
                cfg.linger,
                cfg.compression,
                cfg.buffer_memory,
            ),
            partitioner: StickyPartitioner::new(
                cfg.batch_size,
                cfg.partitioner_adaptive,
                cfg.random_seed ^ 0x7061_7274,
            ),
            rng: Rng::new(cfg.random_seed ^ 0x7072_6f64),
            retry_backoff,
            net,
            now: Instant::ZERO,
            events: VecDeque::new(),
            next_token: 0,
            outstanding: tokens::Outstanding::default(),
            flushes: Vec::new(),
            next_flush: 0,
            pending: PendingRecords::default(),
            in_flight: InFlight::default(),
            leaderless: Default::default(),
            idem: IdempotenceState::default(),
            closing: None,
            closed: false,
            no_broker_since: None,
            stalled_since: BTreeMap::new(),
            linger_at: None,
            holding: None,
            used: None,
            queues_pruned: 0,
            attention: false,
            txn: cfg.transactional_id.clone().map(|id| {
                transaction::Transactions::new(
                    id,
                    cfg.transaction_timeout,
                    retry_backoff,
                    cfg.random_seed,
                )
            }),
            next_txn_token: 0,
            metrics: ProducerMetrics::new(cfg.metrics.window),
            retries_warned: false,
            cfg,
        }
    }

    /// The configuration in force (after validation).
    pub fn config(&self) -> &ProducerConfig {
        &self.cfg
    }

    /// Every metric at `now`, with the Java producer's names: `producer-metrics`,
    /// `producer-topic-metrics` and `producer-node-metrics`.
    pub fn metrics(&self, now: Instant) -> MetricsSnapshot {
        let pool = &self.acc.pool;
        MetricsSnapshot::build(now, self.cfg.metrics.window, &self.cfg.client_id, |out| {
            let available = pool.total.saturating_sub(pool.used);
            self.metrics.snapshot(out, available, pool.total);
            self.net
                .metrics(out, "producer-metrics", "producer-node-metrics");
        })
    }

    /// A send waited `waited` for buffer memory (the driver waits; Java's
    /// `bufferpool-wait-time-total`).
    pub fn record_buffer_wait(&mut self, waited: std::time::Duration) {
        self.metrics.buffer_waited(waited);
    }

    /// Queues a record. On success its outcome arrives later as a
    /// [`ProducerEvent::Outcome`] with the returned token. Errors leave nothing queued.
    pub fn send(&mut self, record: ProducerRecord, now: Instant) -> Result<RecordToken, SendError> {
        self.send_or_return(record, now).map_err(|(e, _)| e)
    }

    /// [`Producer::send`], handing the record back on error, so that a driver can hold it
    /// while it waits for memory after [`SendError::BufferFull`] and send it again.
    // Returning the record by value is the point; boxing would allocate on every refusal.
    #[allow(clippy::result_large_err)]
    pub fn send_or_return(
        &mut self,
        record: ProducerRecord,
        now: Instant,
    ) -> Result<RecordToken, (SendError, ProducerRecord)> {
        self.now = self.now.max(now);
        if self.closing.is_some() {
            return Err((SendError::Closed, record));
        }
        if let Some(p) = record.partition.filter(|p| *p < 0) {
            return Err((SendError::InvalidPartition(p), record));
        }
        if let Some(Err(e)) = self.txn.as_ref().map(|t| t.check_send()) {
            return Err((SendError::Transaction(e), record));
        }
        let size = record_size(&record) + kafka_proto::record::BATCH_HEADER_LEN;
        for (limit_name, limit) in [
            ("max.request.size", self.cfg.max_request_size),
            ("buffer.memory", self.cfg.buffer_memory),
        ] {
            if size > limit {
                return Err((
                    SendError::RecordTooLarge {
                        size,
                        limit_name,
                        limit,
                    },
                    record,
                ));
            }
        }
        // Tokens are never reused, even by a refused send: outcomes are matched by token.
        let token = RecordToken(self.next_token);
        self.next_token += 1;
        self.use_topic(&record.topic, now);
        // Outstanding before appending: an append may resolve the token at once.
        self.outstanding.insert(token.0);
        let deadline = now + self.cfg.delivery_timeout;
        let wake = match self.append(token, record, deadline, Block::Whole) {
            Ok(wake) => wake,
            Err((NotAppended::NoMemory, record)) => {
                self.outstanding.remove(token.0);
                // A waiter makes every batch ready: send them now, or nothing frees
                // memory until linger.ms.
                self.drive(now);
                return Err((SendError::BufferFull, record));
            }
            Err((NotAppended::NoMetadata, record)) => {
                // Wait (up to max.block.ms) for the topic's metadata, holding its memory
                // meanwhile.
                if self.acc.pool.used + size > self.acc.pool.total {
                    self.acc.pool.waiters = true;
                    self.outstanding.remove(token.0);
                    self.drive(now);
                    return Err((SendError::BufferFull, record));
                }
                self.acc.pool.take(size);
                // Only the first record waiting for a topic wakes the sender (to ask for its
                // metadata); the others change nothing it would act on, and a burst sent before
                // the metadata arrives would otherwise run the sender once per record.
                self.pending.push_back(Pending {
                    token,
                    record,
                    deadline: now + self.cfg.max_block,
                    size,
                })
            }
        };
        // Only a batch just filled to batch.size, or a new one that needs the sender (see
        // `new_batch_acts`), runs it at once; appending to an open batch changes nothing it
        // would act on. A send after a batch's linger.ms or hold ended runs it too.
        let due = |t: Option<Instant>| t.is_some_and(|t| t <= now);
        if wake || due(self.linger_at) || due(self.holding) {
            self.drive(now);
        }
        Ok(token)
    }

    /// Marks `topic` as used (so its metadata is kept and refreshed), at most once per
    /// [`USE_MEMO`] for a run of sends to one topic: an idle topic is dropped only after
    /// `metadata.max.idle.ms` (at least 5 s) unused, so a mark up to a second old is as good.
    /// A topic dropped for a fatal error is marked again at its next send.
    fn use_topic(&mut self, topic: &Topic, now: Instant) {
        let removals = self.metadata.removals();
        let fresh = self
            .used
            .as_ref()
            .is_some_and(|(t, at, r)| *r == removals && now < *at + USE_MEMO && t == topic);
        if !fresh {
            self.metadata.use_topic(topic, now);
            self.used = Some((topic.clone(), now, removals));
        }
    }

    /// Partitions and appends a record, or hands it back while its topic's metadata is unknown
    /// or memory is short. Returns whether the sender should run now (a batch filled, the
    /// record resolved at once, or a new batch that needs it: see `new_batch_acts`).
    #[allow(clippy::result_large_err)] // the record comes back by value, as above
    fn append(
        &mut self,
        token: RecordToken,
        r: ProducerRecord,
        deadline: Instant,
        fit: Block,
    ) -> Result<bool, (NotAppended, ProducerRecord)> {
        let Some(topic) = self.metadata.topic(&r.topic) else {
            return Err((NotAppended::NoMetadata, r));
        };
        let count = topic.partitions.len() as u32;
        let partition = match (r.partition, &r.key) {
            (Some(p), _) if p as u32 >= count => {
                let error = DeliveryError::UnknownPartition {
                    topic: r.topic.to_string(),
                    partition: p,
                    count: count as usize,
                };
                self.metrics.failed(&r.topic, 1, self.now);
                self.resolve(
                    token,
                    Outcome::Failed {
                        error,
                        certainty: Certainty::NotSent,
                    },
                );
                return Ok(true);
            }
            (Some(p), _) => p,
            (None, Some(key)) if !self.cfg.partitioner_ignore_keys => {
                partition_for_key(key, count) as i32
            }
            (None, _) => {
                let (acc, parts) = (&self.acc, &topic.partitions);
                // A leader that could not take ready batches for
                // partitioner.availability.timeout.ms makes its partitions unavailable.
                let (stalled, timeout, now, lanes) = (
                    &self.stalled_since,
                    self.cfg.partitioner_availability_timeout,
                    self.now,
                    self.cfg.connections_per_broker,
                );
                let available = |p: u32| {
                    parts[p as usize].leader.is_some_and(|leader| {
                        timeout.is_zero()
                            || stalled
                                .get(&(leader, lane(p as i32, lanes)))
                                .is_none_or(|since| now < *since + timeout)
                    })
                };
                // Queue lengths are read only when switching partitions, so the key is built then.
                let queue_len = |p: u32| acc.queue_len(&r.topic, p as i32);
                self.partitioner
                    .partition(&r.topic, count, available, queue_len) as i32
            }
        };
        let leader = topic
            .partitions
            .get(partition as usize)
            .and_then(|p| p.leader);
        let appended = match self
            .acc
            .append(partition, &r, token, self.now, deadline, fit)
        {
            Ok(a) => a,
            Err(NoMemory) => return Err((NotAppended::NoMemory, r)),
        };
        if appended.new_batch {
            if let Some(txn) = &mut self.txn {
                // The partition joins the transaction before its first batch goes.
                txn.add_partition(&(r.topic.to_string(), partition));
            }
        }
        if r.partition.is_none() && (r.key.is_none() || self.cfg.partitioner_ignore_keys) {
            self.partitioner.on_append(
                &r.topic,
                partition as u32,
                appended.bytes,
                appended.new_batch,
            );
        }
        Ok(appended.filled || (appended.new_batch && self.new_batch_acts(leader, partition)))
    }

    /// Whether a batch just opened (not full) gives the sender something to do now. Usually
    /// not: it becomes ready when its linger.ms passes, which `poll_timeout` answers from the
    /// accumulator's index, so the IO loop is only told to look again (`attention`). With keys
    /// over 10,000 partitions nearly every record opens a batch, and running the whole sender
    /// for each (expiry, metadata, every ready partition) was most of a record's cost. It does
    /// when the batch is ready at once (linger.ms 0, a flush or close, a send waiting for
    /// memory), or when something must start before it can go: a producer id, the partition's
    /// place in the transaction, its leader, or a connection to it.
    fn new_batch_acts(&mut self, leader: Option<NodeId>, partition: i32) -> bool {
        self.attention = true;
        let lane = Purpose::lane(lane(partition, self.cfg.connections_per_broker));
        let acts = self.cfg.linger.is_zero()
            || self.forced()
            || self.acc.pool.waiters
            || self.txn.is_some()
            || (self.cfg.enable_idempotence && self.idem.id.is_none())
            || leader.is_none_or(|node| !self.net.has_connection(node, lane));
        if !acts {
            // A send after its linger.ms runs the sender (see `send_or_return`), as if the
            // sender had run now and seen it: `poll_timeout` reports only instants still to
            // come, so one that passed before the IO loop's timer fired is caught here.
            let ready = self.now + self.cfg.linger;
            self.linger_at = Some(self.linger_at.map_or(ready, |t| t.min(ready)));
        }
        acts
    }

    /// Whether the producer did work, since the last call, that its IO loop must act on: it
    /// may have outputs to drain or an earlier [`poll_timeout`](Self::poll_timeout). An
    /// adapter that calls [`send`](Self::send) from another thread than its IO loop wakes
    /// the loop when this says so; appending to an open batch never does.
    pub fn take_attention(&mut self) -> bool {
        std::mem::take(&mut self.attention)
    }

    /// Asks for every record sent so far to complete; [`ProducerEvent::FlushComplete`] follows.
    /// Batches are sent without waiting for `linger.ms` meanwhile.
    pub fn flush(&mut self, now: Instant) -> FlushToken {
        let token = FlushToken(self.next_flush);
        self.next_flush += 1;
        self.flushes.push((token, self.next_token));
        self.drive(now);
        token
    }

    /// Stops accepting records and drains what is queued; anything left at `deadline` fails
    /// with [`DeliveryError::Closed`]. [`ProducerEvent::Closed`] follows.
    pub fn close(&mut self, deadline: Instant, now: Instant) {
        self.closing = Some(self.closing.map_or(deadline, |d| d.min(deadline)));
        self.drive(now);
    }

    /// Fails every record not yet resolved, at once (for an adapter dropping the producer).
    pub fn abort(&mut self) {
        self.fail_everything();
        if let Some(txn) = &mut self.txn {
            txn.close();
        }
        self.take_transaction_results();
    }

    /// When to call [`Producer::handle_timeout`] next. A pure query.
    pub fn poll_timeout(&self) -> Option<Instant> {
        // Asked after every input a driver passes in (each new batch, at many partitions), so
        // it folds the candidates one by one rather than building and scanning a list.
        let now = self.now;
        let mut next = Wake(None);
        next.at(self.net.poll_timeout());
        next.future(self.metadata.next_refresh(), now);
        next.future(self.acc.next_ready(now, self.forced()), now);
        next.future(self.holding, now);
        next.at(self.acc.next_deadline());
        next.at(self.in_flight.next_due());
        next.at(self.pending.next_deadline());
        next.future(self.idem.retry_at(), now);
        next.future(
            self.no_broker_since
                .map(|t| t + self.cfg.metadata_recovery_rebootstrap_trigger),
            now,
        );
        next.at(self.closing.filter(|_| !self.closed));
        next.at(self.txn.as_ref().and_then(|t| t.poll_timeout()));
        next.0
    }

    /// The main step: handle what the network reported, then expire, refresh and send.
    fn drive(&mut self, now: Instant) {
        self.attention = true;
        self.now = self.now.max(now);
        let now = self.now;
        while let Some(e) = self.net.poll_event() {
            self.on_net_event(e, now);
        }
        if self.net.take_node_failure() {
            // A leader's connection failed: it may lead no more (found on Apache Kafka, where
            // a killed leader stays in metadata until the controller fences it, and the
            // producer kept retrying it until the next periodic refresh).
            self.metadata.request_update();
        }
        if let Some(e) = self.net.take_auth_failure() {
            self.fail_unsent(DeliveryError::Authentication(e));
        }
        if self.metadata.removals() != self.queues_pruned {
            self.queues_pruned = self.metadata.removals();
            let metadata = &self.metadata;
            (self.acc).forget_idle_topics(|t| metadata.topic(t).is_some());
        }
        self.expire(now);
        self.place_pending(now);
        self.refresh_metadata(now);
        self.init_producer_id(now);
        self.apply_epoch_bumps();
        self.drive_transaction(now);
        self.send_ready(now);
        // Sending may have asked for metadata (a leader it cannot reach), due already since
        // the last refresh was longer ago than the backoff: poll_timeout passes over a refresh
        // already due, so it goes now or waits for its connection (found by the simulation:
        // a partition whose leader had been killed waited 15 s for its delivery timeout,
        // seed 4380).
        self.refresh_metadata(now);
        self.finish_flushes_and_close(now);
    }

    fn refresh_metadata(&mut self, now: Instant) {
        if self.metadata.next_refresh().is_none_or(|t| t > now) {
            return;
        }
        let Some(conn) = self.net.least_loaded(now) else {
            // No broker to ask. After metadata.recovery.rebootstrap.trigger.ms of that, go back
            // to bootstrap.servers (KIP-899), if the strategy allows.
            let since = *self.no_broker_since.get_or_insert(now);
            let rebootstrap =
                self.cfg.metadata_recovery_strategy == MetadataRecoveryStrategy::Rebootstrap;
            if rebootstrap && now >= since + self.cfg.metadata_recovery_rebootstrap_trigger {
                self.net.rebootstrap();
                self.no_broker_since = None;
                self.net.least_loaded(now);
            }
            return;
        };
        self.no_broker_since = None;
        if let Some(req) = self.metadata.poll_request(now) {
            if self.net.send(conn, &req, Tag::Metadata, now).is_err() {
                self.metadata.handle_failure(now);
            }
        }
    }

    fn init_producer_id(&mut self, now: Instant) {
        // A transactional producer's id comes from its transaction coordinator.
        if self.cfg.enable_idempotence && self.txn.is_none() && !self.acc.is_empty() {
            self.idem.request_id(&mut self.net, now);
        }
    }

    /// Sends what is ready, round after round: a round takes one batch per partition, and
    /// more may be ready behind it (a burst placed at once when metadata came) with nothing
    /// else to wake the producer (acks=0 has no response; their linger passed already). It
    /// stops when a round sends nothing (connections at their in-flight limit, or nothing
    /// ready).
    fn send_ready(&mut self, now: Instant) {
        while self.send_round(now) {}
    }

    /// One round of [`Producer::send_ready`]; whether another may send more.
    fn send_round(&mut self, now: Instant) -> bool {
        if self.cfg.enable_idempotence && self.idem.id.is_none() {
            return false;
        }
        let force = self.forced();
        let metadata = &self.metadata;
        let txn = &self.txn;
        let in_flight = &self.in_flight;
        let sequences = &self.idem.sequences;
        let idempotent = self.cfg.enable_idempotence;
        let acc = &self.acc;
        let (ready, linger) = acc.ready(now, force, |tp| {
            // With idempotence, a retry waits until the partition has nothing else in flight,
            // so its sequences reach the broker in order.
            let busy = in_flight.is_busy(&tp.0, tp.1);
            let retry_behind_in_flight = idempotent && acc.front_is_retry(tp) && busy;
            // Until the broker has taken one batch under this epoch, one at a time (see
            // `PartitionSequence::confirmed`).
            let unconfirmed = idempotent && busy && sequences.get(tp).is_some_and(|p| !p.confirmed);
            let bump_pending = sequences.get(tp).is_some_and(|p| p.bump);
            // A partition's batches wait until it is in the transaction.
            let not_added = txn.as_ref().is_some_and(|t| !t.is_added(tp));
            metadata.leader(&tp.0, tp.1).is_none()
                || retry_behind_in_flight
                || unconfirmed
                || bump_pending
                || not_added
        });
        self.linger_at = linger;
        // By leader, and by connection to it when there are several.
        let mut by_conn: BTreeMap<(NodeId, usize), Vec<(Topic, i32)>> = BTreeMap::new();
        let lanes = self.cfg.connections_per_broker;
        // A partition without a leader (not elected yet, or it moved) waits for metadata,
        // which must then be asked for: nothing else would wake its batches.
        let mut unknown_leader = self.any_leaderless();
        for tp in ready {
            match self.metadata.leader(&tp.0, tp.1) {
                Some(node) => by_conn
                    .entry((node, lane(tp.1, lanes)))
                    .or_default()
                    .push(tp),
                None => unknown_leader = true,
            }
        }
        if unknown_leader {
            self.metadata.request_update();
        }
        // Whether a partition sent from this round has more queued behind (only then may
        // another round send anything).
        let mut more = false;
        // Batches that are ready only because their linger.ms passed wait, up to a second
        // linger.ms, while their connection has a request in flight: a broker serves one
        // request per connection at a time, so a Produce sent now would wait behind it there
        // anyway, and the batches that become ready meanwhile go with it in one request. With
        // keys spread over 1,000 partitions nearly every batch lingers alone, and sending each
        // as its linger ends made a request per few records, costing both sides CPU.
        let may_hold = !force && !self.cfg.linger.is_zero();
        self.holding = None;
        for ((node, lane), partitions) in by_conn {
            let purpose = Purpose::lane(lane);
            let Some(conn) = self.net.ready(node, purpose, now) else {
                if !self.net.knows(node) {
                    // The leader is a broker the last metadata did not list (it was down when
                    // asked): only another refresh can name one to connect to (found on
                    // librdkafka's mock cluster, where such a partition waited until its
                    // records' delivery timeout).
                    self.metadata.request_update();
                }
                self.stalled_since.entry((node, lane)).or_insert(now);
                // Their batches wait: once full, they may grow rather than queue more.
                self.acc.waiting(&partitions);
                continue;
            };
            self.stalled_since.remove(&(node, lane));
            if may_hold && self.net.in_flight(conn) > 0 {
                // None (the least) if any of them may not wait.
                let until = (partitions.iter())
                    .map(|(t, p)| self.acc.hold_until(t, *p))
                    .min()
                    .flatten();
                if let Some(until) = until.filter(|t| *t > now) {
                    self.holding = Some(self.holding.map_or(until, |h| h.min(until)));
                    continue;
                }
            }
            let batches = self.acc.drain(&partitions, self.cfg.max_request_size);
            // A request that could not be written (its batches went back) is no progress.
            if !batches.is_empty() && self.send_batches(conn, batches, now) {
                more |= partitions
                    .iter()
                    .any(|tp| self.acc.queue_len(&tp.0, tp.1) > 0);
            }
        }
        more
    }

    /// Whether a queued partition has no known leader. The list is rebuilt from every queue
    /// only when metadata may have taken a leader away; partitions queued since are added as
    /// their queues open.
    fn any_leaderless(&mut self) -> bool {
        let (set, generation) = &mut self.leaderless;
        let metadata = &self.metadata;
        if *generation != Some(metadata.generation()) {
            *generation = Some(metadata.generation());
            self.acc.drain_opened();
            set.clear();
            set.extend(
                self.acc
                    .partitions()
                    .filter(|(t, p)| metadata.leader(t, *p).is_none())
                    .map(|(t, p)| (t.to_owned(), p)),
            );
        } else {
            for (t, p) in self.acc.drain_opened() {
                if metadata.leader(&t, p).is_none() {
                    set.insert((t.to_string(), p));
                }
            }
        }
        let acc = &self.acc;
        set.retain(|(t, p)| acc.queue_len(t, *p) > 0 && metadata.leader(t, *p).is_none());
        !set.is_empty()
    }

    /// Writes one Produce request; whether it was written (else its batches went back).
    fn send_batches(&mut self, conn: ConnId, mut batches: Vec<Batch>, now: Instant) -> bool {
        let (pid, epoch) = self.idem.id.unwrap_or((-1, -1));
        // By topic, in name order as a map would give them; found from the back, where the
        // batch before (drained in topic order) left its topic, rather than by cloning each
        // batch's topic name into a map key.
        let mut topics: Vec<TopicProduceData> = Vec::new();
        for b in &mut batches {
            let (mut base_sequence, mut batch_epoch) = (-1, epoch);
            if self.cfg.enable_idempotence {
                (batch_epoch, base_sequence) =
                    self.idem.assign(&b.tp, b.base_sequence, b.records.len());
            }
            let uncompressed = b.size();
            let first = b.sealed.is_none();
            let bytes = b.seal(&BatchMeta {
                producer_id: pid,
                producer_epoch: batch_epoch,
                base_sequence,
                transactional: self.txn.is_some(),
                ..BatchMeta::default()
            });
            if first {
                self.acc.observe_ratio(uncompressed, bytes.len());
            }
            let first = first.then(|| FirstSend {
                uncompressed,
                queue_ms: now.saturating_duration_since(b.created).as_secs_f64() * 1e3,
            });
            let sent = BatchSent {
                topic: &b.tp.0,
                records: b.records.len(),
                bytes: bytes.len(),
                first,
            };
            self.metrics.batch_sent(sent, now);
            let topic_id = self
                .metadata
                .topic(&b.tp.0)
                .map(|t| t.id)
                .unwrap_or_default();
            let at = match topics.iter().rposition(|t| t.name == b.tp.0) {
                Some(at) => at,
                None => {
                    topics.push(TopicProduceData {
                        name: b.tp.0.clone(),
                        topic_id,
                        ..Default::default()
                    });
                    topics.len() - 1
                }
            };
            topics[at].partition_data.push(PartitionProduceData {
                index: b.tp.1,
                records: Some(bytes),
                ..Default::default()
            });
        }
        topics.sort_by(|a, b| a.name.cmp(&b.name));
        let req = ProduceRequest {
            transactional_id: self.cfg.transactional_id.clone(),
            acks: self.cfg.acks.wire_value(),
            timeout_ms: self.cfg.request_timeout.as_millis().min(i32::MAX as u128) as i32,
            topic_data: topics,
            ..Default::default()
        };
        let ids: Vec<u64> = batches.iter().map(|b| b.id).collect();
        let expect = if self.cfg.acks == Acks::None {
            Expect::Nothing
        } else {
            Expect::Response
        };
        // Produce v13 names topics only by id: without every id, stay at v12 (as Java does).
        // Inside transactions of version 1, v11 at most: v12 is version 2's, whose Produce
        // adds the partition to the transaction (KIP-890).
        let all_ids = req.topic_data.iter().all(|t| !t.topic_id.is_nil());
        let max_version = match &self.txn {
            Some(t) if !t.tv2() => 11,
            _ if all_ids => 13,
            _ => 12,
        };
        let sent = self
            .net
            .send_at_most(conn, &req, Tag::Produce(ids), expect, max_version, now);
        if sent.is_ok() {
            if let Some(t) = &mut self.txn {
                t.batch_sent();
            }
            let records = batches.iter().map(|b| b.records.len()).sum();
            self.metrics.request_sent(records, now);
        }
        match sent {
            Ok(_) if expect == Expect::Nothing => {
                // acks=0: complete once written, with no offset.
                for b in batches {
                    self.complete(b, None, -1);
                }
            }
            Ok(_) => {
                for b in batches {
                    self.in_flight.insert(b);
                }
            }
            Err(_) => {
                for b in batches {
                    self.acc.reenqueue(b);
                }
                return false;
            }
        }
        true
    }

    fn on_net_event(&mut self, e: NetEvent<Tag>, now: Instant) {
        match e {
            NetEvent::Response {
                tag: Tag::Metadata,
                body: ResponseBody::Metadata(resp),
                ..
            } if resp.error_code == ErrorCode::RebootstrapRequired.code() => {
                self.metadata.handle_failure(now);
                self.net.rebootstrap();
            }
            NetEvent::Response {
                tag: Tag::Metadata,
                body: ResponseBody::Metadata(resp),
                ..
            } => {
                let update = self.metadata.handle_response(&resp, now);
                self.net.update_nodes(self.metadata.nodes(), now);
                // A recreated topic has no producer state on the broker: its partitions'
                // sequences start over at 0.
                for topic in &update.recreated {
                    for tp in self.idem.topic_recreated(topic) {
                        self.acc.reset_sequences(&tp);
                    }
                }
                for (topic, error) in update.topic_errors {
                    self.fail_topic(&topic, DeliveryError::Broker(error));
                }
            }
            NetEvent::Failed {
                tag: Tag::Metadata, ..
            } => self.metadata.handle_failure(now),
            NetEvent::Response {
                tag: Tag::InitProducerId,
                body: ResponseBody::InitProducerId(resp),
                ..
            } => {
                let fatal = self
                    .idem
                    .handle_id(&resp, &self.retry_backoff, &mut self.rng, now);
                if let Some(e) = fatal {
                    self.fail_everything_with(DeliveryError::Broker(e), Certainty::NotSent);
                }
            }
            NetEvent::Failed {
                tag: Tag::InitProducerId,
                ..
            } => self
                .idem
                .handle_id_failure(&self.retry_backoff, &mut self.rng, now),
            NetEvent::Response {
                tag: Tag::Produce(ids),
                body: ResponseBody::Produce(resp),
                version,
                ..
            } => {
                self.on_produce_response(ids, resp, version, now);
            }
            NetEvent::Failed {
                tag: Tag::Produce(ids),
                error,
                ..
            } => {
                for id in ids {
                    if let Some(b) = self.in_flight.take(id) {
                        self.retry_or_fail(b, DeliveryError::Request(error.clone()), now, true);
                    }
                }
            }
            NetEvent::Response {
                tag: Tag::Txn,
                body,
                ..
            } => {
                if let Some(txn) = &mut self.txn {
                    txn.handle_response(&body, now);
                }
            }
            NetEvent::Failed { tag: Tag::Txn, .. } => {
                if let Some(txn) = &mut self.txn {
                    txn.handle_failure(now);
                }
            }
            NetEvent::Response { tag, .. } => {
                debug_assert!(false, "response type does not match its request: {tag:?}");
            }
        }
    }

    /// A delivery timeout naming the later of the batch's last error and the last connection
    /// problem.
    fn timeout_error(&self, b: &Batch) -> DeliveryError {
        let batch = b.last_error.as_deref().map(|(e, at)| (e.as_str(), *at));
        let net = self.net.last_problem_seen();
        let last = match (batch, net) {
            (Some((e, at)), Some((p, seen))) => Some(if seen > at { p } else { e }),
            (b, n) => b.or(n).map(|(e, _)| e),
        };
        DeliveryError::DeliveryTimeout {
            last: last.map(str::to_owned),
        }
    }

    fn expire(&mut self, now: Instant) {
        for b in self.acc.expire(now) {
            if b.base_sequence >= 0 {
                // A retry that expired in the queue leaves a hole in its partition's
                // sequences, whether or not an earlier attempt was written: later batches
                // would be out of order for good, so the partition starts over under a new
                // epoch (KIP-360; found on Apache Kafka with its broker down past the
                // delivery timeout).
                self.request_bump(&b.tp);
            }
            let error = self.timeout_error(&b);
            self.fail_batch(b, error, false);
        }
        for id in self.in_flight.late(now) {
            // Its response, if it comes, is ignored.
            let b = self.in_flight.take(id).expect("listed above");
            // Its sequence's fate is unknown: the partition must start over (KIP-360).
            self.request_bump(&b.tp);
            let error = self.timeout_error(&b);
            self.fail_batch(b, error, true);
        }
        while let Some(p) = self.pending.take_expired(now) {
            let last =
                (self.net.last_problem().map(str::to_owned)).or_else(|| self.net.waiting_on(now));
            let error = DeliveryError::MetadataTimeout {
                topic: p.record.topic.to_string(),
                last,
            };
            self.fail_pending(p, error);
        }
    }

    /// Fails a record that never left the pending queue: it was never sent.
    fn fail_pending(&mut self, p: Pending, error: DeliveryError) {
        self.free_pending(p.size);
        self.metrics.failed(&p.record.topic, 1, self.now);
        self.fail_transaction(&error, None, false);
        let outcome = Outcome::Failed {
            error,
            certainty: Certainty::NotSent,
        };
        self.resolve(p.token, outcome);
    }

    fn free_pending(&mut self, size: usize) {
        if self.acc.pool.release(size) {
            self.events.push_back(ProducerEvent::MemoryAvailable);
        }
    }

    /// Moves records whose topic metadata arrived into batches, in send order, until memory
    /// runs short. Cheap when nothing can move: sends for a topic whose metadata is on its way
    /// each step the producer, and a full scan per send would be quadratic.
    fn place_pending(&mut self, now: Instant) {
        if !self.pending.any_topic(|t| self.metadata.topic(t).is_some()) {
            return;
        }
        let mut skipped = VecDeque::new();
        // How many records at the front of `pending` were looked at ahead of their turn: those
        // of known topics have their memory back in the pool already.
        let mut ahead: usize = 0;
        // Records skipped or placed leave `queue` directly: a skipped one's topic still counts.
        while let Some(p) = self.pending.queue.pop_front() {
            let released = ahead > 0;
            ahead = ahead.saturating_sub(1);
            if self.metadata.topic(&p.record.topic).is_none() {
                skipped.push_back(p);
                continue;
            }
            if !released {
                self.acc.pool.used -= p.size.min(self.acc.pool.used);
            }
            // Memory comes back a batch's worth ahead, so that these records share batches.
            // Freed one at a time, each would find only its own size free (a burst sent before
            // the metadata fills the pool) and open a one-record batch; and those small blocks
            // would last, each taken again at its size when freed.
            while self.acc.pool.free() < self.cfg.batch_size && ahead < self.pending.queue.len() {
                let q = &self.pending.queue[ahead];
                if self.metadata.topic(&q.record.topic).is_some() {
                    self.acc.pool.used -= q.size.min(self.acc.pool.used);
                }
                ahead += 1;
            }
            let deadline = now + self.cfg.delivery_timeout;
            // Forgotten first: the append takes the record (and its topic) by value.
            self.pending.forget(&p.record.topic);
            let Pending {
                token,
                record,
                deadline: max_block,
                size,
            } = p;
            if let Err((_, record)) = self.append(token, record, deadline, Block::AtLeastRecord) {
                // Batches took more than these records' sizes (the unused ends of full
                // batches): this record and those freed ahead hold their memory again, and
                // wait for more to free. Keep the waiters flag as it is: a user send may still
                // be waiting for memory, and only a release should clear it (with a
                // MemoryAvailable event). Later records wait too, so none overtakes this one.
                let held: usize = (self.pending.queue.iter().take(ahead))
                    .filter(|q| self.metadata.topic(&q.record.topic).is_some())
                    .map(|q| q.size)
                    .sum();
                self.acc.pool.take(size + held);
                self.pending.put_back(Pending {
                    token,
                    record,
                    deadline: max_block,
                    size,
                });
                break;
            }
        }
        while let Some(p) = skipped.pop_back() {
            self.pending.queue.push_front(p);
        }
    }

    fn fail_topic(&mut self, topic: &str, error: DeliveryError) {
        for p in self.pending.take_topic(topic) {
            self.fail_pending(p, error.clone());
        }
    }

    /// Fails every record not in flight: those waiting for metadata, and batches waiting for
    /// a connection (each as sent or not, as its history says).
    fn fail_unsent(&mut self, error: DeliveryError) {
        for b in self.acc.take_all() {
            if b.base_sequence >= 0 {
                // Its sequences leave a hole: the partition starts over (KIP-360).
                self.request_bump(&b.tp);
            }
            self.fail_batch(b, error.clone(), false);
        }
        for p in self.pending.take_all() {
            self.fail_pending(p, error.clone());
        }
    }

    fn fail_everything(&mut self) {
        self.fail_everything_with(DeliveryError::Closed, Certainty::NotSent);
    }

    fn fail_everything_with(&mut self, error: DeliveryError, certainty: Certainty) {
        for b in self.acc.take_all() {
            let unknown = certainty == Certainty::PossiblySent;
            self.fail_batch(b, error.clone(), unknown);
        }
        for id in self.in_flight.ids() {
            let b = self.in_flight.take(id).expect("listed");
            self.fail_batch(b, error.clone(), true);
        }
        for p in self.pending.take_all() {
            self.fail_pending(p, error.clone());
        }
    }

    fn finish_flushes_and_close(&mut self, now: Instant) {
        let lowest = self.outstanding.first().unwrap_or(u64::MAX);
        let (done, waiting): (Vec<_>, Vec<_>) = self
            .flushes
            .drain(..)
            .partition(|(_, upto)| lowest >= *upto);
        self.flushes = waiting;
        for (token, _) in done {
            self.events.push_back(ProducerEvent::FlushComplete(token));
        }
        let Some(deadline) = self.closing else { return };
        if self.closed {
            return;
        }
        if deadline <= now {
            self.fail_everything();
        }
        if self.outstanding.is_empty() {
            self.closed = true;
            if let Some(txn) = &mut self.txn {
                txn.close();
            }
            self.take_transaction_results();
            self.events.push_back(ProducerEvent::Closed);
        }
    }
}

impl From<RequestError> for DeliveryError {
    fn from(e: RequestError) -> Self {
        DeliveryError::Request(e)
    }
}

/// The earliest of several optional instants, folded one at a time (see
/// [`Producer::poll_timeout`]).
struct Wake(Option<Instant>);

impl Wake {
    fn at(&mut self, t: Option<Instant>) {
        if let Some(t) = t {
            self.0 = Some(self.0.map_or(t, |n| n.min(t)));
        }
    }

    /// Only an instant after `now`: one already due is acted on by the step that just ran.
    fn future(&mut self, t: Option<Instant>, now: Instant) {
        self.at(t.filter(|t| *t > now));
    }
}
