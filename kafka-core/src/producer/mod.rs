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
mod errors;
mod expiry;
mod idempotence;
mod in_flight;
mod pending;
mod record;
mod sender;
mod tokens;
mod transaction;

use std::collections::{BTreeMap, VecDeque};

use kafka_proto::api::ResponseBody;
use kafka_proto::messages::produce_request::{
    PartitionProduceData, ProduceRequest, TopicProduceData,
};
use kafka_proto::record::BatchMeta;
use kafka_proto::ErrorCode;

pub use accumulator::TopicPartition;
use accumulator::{record_size, Accumulator, Batch, Block, NoMemory};
pub use errors::*;
use idempotence::IdempotenceState;
use in_flight::InFlight;
use pending::{Pending, PendingRecords};
pub use record::*;
pub use transaction::{GroupMetadata, TransactionError, TxnOffset, TxnToken};

use crate::backoff::Backoff;
use crate::config::{Acks, ProducerConfig};
use crate::metadata::Metadata;
use crate::metrics::producer::{BatchSent, FirstSend, ProducerMetrics};
use crate::metrics::MetricsSnapshot;
use crate::net::{
    lane, ConnId, Expect, NetConfig, NetEvent, Network, NodeId, Purpose, RequestError,
};
use crate::partitioner::{partition_for_key, StickyPartitioner};
use crate::rng::Rng;
use crate::time::Instant;

/// Request tags, in a module of their own: `Machine`'s hidden `Tag` names this type, so it
/// is public there, and out of reach outside the crate.
mod tag {
    #[allow(unused_imports)]
    use super::*;

    /// Whose response a request waits for.
    #[derive(Debug, Clone, PartialEq, Eq)]
    pub enum Tag {
        /// A metadata refresh.
        Metadata,
        /// The idempotent producer's id.
        InitProducerId,
        /// These batches.
        Produce(Vec<u64>),
        /// The transaction's request in flight.
        Txn,
    }
}
pub(crate) use tag::Tag;

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

impl crate::net::Machine for Producer {
    type Event = ProducerEvent;
    type Tag = Tag;

    fn parts(
        &mut self,
        _: crate::net::Sealed,
    ) -> (
        &mut Network<Tag>,
        &mut std::collections::VecDeque<ProducerEvent>,
    ) {
        (&mut self.net, &mut self.events)
    }

    fn parts_ref(
        &self,
        _: crate::net::Sealed,
    ) -> (&Network<Tag>, &std::collections::VecDeque<ProducerEvent>) {
        (&self.net, &self.events)
    }

    fn step(&mut self, now: Instant, _: crate::net::Sealed) {
        self.drive(now);
    }

    /// When to call [`Producer::handle_timeout`] next. A pure query.
    fn poll_timeout(&self) -> Option<Instant> {
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
        next.at(self.closing.filter(|_| !self.closed));
        next.at(self.txn.as_ref().and_then(|t| t.poll_timeout()));
        next.0
    }

    /// Every metric at `now`, with the Java producer's names: `producer-metrics`,
    /// `producer-topic-metrics` and `producer-node-metrics`.
    fn metrics(&self, now: Instant) -> MetricsSnapshot {
        let pool = &self.acc.pool;
        MetricsSnapshot::build(now, self.cfg.metrics.window, &self.cfg.client_id, |out| {
            let available = pool.total.saturating_sub(pool.used);
            self.metrics.snapshot(out, available, pool.total);
            self.net
                .metrics(out, "producer-metrics", "producer-node-metrics");
        })
    }
}

impl Producer {
    /// A producer. Nothing connects until the first `send`.
    pub fn new(cfg: ProducerConfig) -> Self {
        crate::config::warn_notes("producer", cfg.notes());
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
            )
            .with_level(cfg.compression_level()),
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
            self.metadata.use_shared_topic(topic, now);
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
        let Some(topic) = self.metadata.topic_shared(&r.topic) else {
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
                txn.add_partition(&(&r.topic, partition));
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
        let lane = Purpose::lane(lane(partition, self.cfg.connections_per_broker));
        let acts = self.cfg.linger.is_zero()
            || self.forced()
            || self.acc.pool.waiters
            || self.txn.is_some()
            || (self.cfg.enable_idempotence && self.idem.id.is_none())
            || leader.is_none_or(|node| !self.net.has_connection(node, lane));
        if acts {
            self.attention = true;
        } else {
            // A send after its linger.ms runs the sender (see `send_or_return`), as if the
            // sender had run now and seen it: `poll_timeout` reports only instants still to
            // come, so one that passed before the IO loop's timer fired is caught here.
            let ready = self.now + self.cfg.linger;
            // The IO loop need not look again when a batch lingering already becomes ready
            // no later than this one (its wake-up is no later than that batch's, which it was
            // told of: `linger_at` is set either by the sender, which always asks for
            // attention, or here, asking for it), since the new batch's readiness and deadline
            // are later still. With keys over 10,000 partitions nearly every record opens a
            // batch, and each had the IO loop wake and ask `poll_timeout` (400 instructions,
            // and a cross-thread wake-up in the driver).
            let told = self.linger_at.is_some_and(|t| self.now < t && t <= ready);
            if !told {
                self.attention = true;
                self.linger_at = Some(self.linger_at.map_or(ready, |t| t.min(ready)));
            }
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
