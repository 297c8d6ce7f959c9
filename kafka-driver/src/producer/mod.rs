//! The producer handle and its driver session: `send` waits for buffer memory up to
//! `max.block.ms`, and each record's outcome comes back on its own [`Delivery`].

use kafka_core::net::Machine as _;
use std::collections::{BTreeMap, VecDeque};
use std::future::Future;
use std::marker::PhantomData;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use bytes::Bytes;
use futures_channel::{mpsc, oneshot};
use futures_util::future::Either;
use kafka_core::config::{ConfigError, ProducerConfig};
use kafka_core::producer::{
    Certainty, DeliveryError, FlushToken, GroupMetadata, Outcome, Output, ProducerEvent,
    ProducerRecord, RecordToken, SendError as CoreSendError, Topic, TransactionError, TxnOffset,
    TxnToken,
};
use kafka_core::Instant;

use crate::driver::{self, Session};

mod deliveries;
mod pending;

pub use deliveries::Deliveries;

use crate::runtime::Runtime;
use pending::{Pending, Polled};

/// A record to send. Without a timestamp, the current wall-clock time is used.
#[derive(Debug, Clone, Default)]
pub struct Record {
    inner: ProducerRecord,
    timestamp: Option<i64>,
}

impl Record {
    /// A record with a value. A topic named by `&str` or `String` is copied for each record;
    /// a [`Topic`] made once and cloned per record is shared instead.
    pub fn new(topic: impl Into<Topic>, value: impl Into<Bytes>) -> Self {
        Record {
            inner: ProducerRecord {
                topic: topic.into(),
                value: Some(value.into()),
                ..Default::default()
            },
            timestamp: None,
        }
    }
    /// A record without a value (a tombstone, with a key).
    pub fn tombstone(topic: impl Into<Topic>, key: impl Into<Bytes>) -> Self {
        Record {
            inner: ProducerRecord {
                topic: topic.into(),
                key: Some(key.into()),
                ..Default::default()
            },
            timestamp: None,
        }
    }
    /// Sets the key.
    pub fn key(mut self, key: impl Into<Bytes>) -> Self {
        self.inner.key = Some(key.into());
        self
    }
    /// Fixes the partition.
    pub fn partition(mut self, partition: i32) -> Self {
        self.inner.partition = Some(partition);
        self
    }
    /// Adds a header.
    pub fn header(mut self, key: impl Into<String>, value: impl Into<Bytes>) -> Self {
        self.inner.headers.push((key.into(), Some(value.into())));
        self
    }
    /// Adds a header with no value (null, as Java's `Header` with a null value).
    pub fn header_null(mut self, key: impl Into<String>) -> Self {
        self.inner.headers.push((key.into(), None));
        self
    }
    /// Drops the value: a record with a null value (with a key, a tombstone).
    pub fn no_value(mut self) -> Self {
        self.inner.value = None;
        self
    }
    /// Sets the CreateTime (epoch milliseconds).
    pub fn timestamp(mut self, ms: i64) -> Self {
        self.timestamp = Some(ms);
        self
    }
}

/// Why `send` did not queue the record.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SendError {
    /// The producer refused it (too large, an invalid partition).
    #[error(transparent)]
    Rejected(#[from] CoreSendError),
    /// `buffer.memory` stayed full for `max.block.ms`.
    #[error("buffer.memory stayed full for max.block.ms; the broker may be slow or unreachable")]
    Timeout,
    /// The producer's driver has stopped.
    #[error("the producer is closed")]
    Closed,
}

/// A delivered record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Delivered {
    /// Its partition.
    pub partition: i32,
    /// Its offset (absent with acks=0 and for duplicates).
    pub offset: Option<i64>,
    /// The timestamp the log holds.
    pub timestamp: i64,
}

/// A failed record, and whether it may have been written anyway.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{error} ({certainty:?})")]
pub struct Failed {
    /// Why.
    pub error: DeliveryError,
    /// Whether it may be in the log.
    pub certainty: Certainty,
}

/// Resolves to the record's outcome. Dropping it does not cancel the record.
///
/// It reads the record's slot in the producer's table of pending outcomes: no allocation or
/// channel per record, and the driver fills the slots of a whole response under one lock.
pub struct Delivery {
    shared: Arc<Shared>,
    token: RecordToken,
    /// The outcome was taken (a finished future is not polled again, but may be dropped).
    taken: bool,
}

impl std::fmt::Debug for Delivery {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Delivery")
            .field("token", &self.token)
            .finish_non_exhaustive()
    }
}

impl Future for Delivery {
    type Output = Result<Delivered, Failed>;
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let outcome = match self.shared.pending().poll(self.token, cx) {
            Polled::Waiting => return Poll::Pending,
            Polled::Ready(outcome) => outcome,
            // Taken already, or never there: only a bug gets here.
            Polled::Missing => pending::closed(),
        };
        self.taken = true;
        Poll::Ready(to_result(outcome))
    }
}

/// A record's outcome as the API gives it.
fn to_result(outcome: Outcome) -> Result<Delivered, Failed> {
    match outcome {
        Outcome::Delivered {
            partition,
            offset,
            timestamp,
        } => Ok(Delivered {
            partition,
            offset,
            timestamp,
        }),
        Outcome::Failed { error, certainty } => Err(Failed { error, certainty }),
        // An outcome this driver does not know (a newer core): a failure, to be safe.
        _ => Err(Failed {
            error: DeliveryError::Closed,
            certainty: Certainty::PossiblySent,
        }),
    }
}

impl Drop for Delivery {
    fn drop(&mut self) {
        if !self.taken {
            // Nobody will read the outcome: its slot is freed when it comes (or now).
            self.shared.pending().forget(self.token);
        }
    }
}

pub(crate) enum Command {
    /// A send made the core do work (a new batch, a metadata request): drain it, re-arm the
    /// timer.
    Wake,
    Flush(oneshot::Sender<()>),
    Close(Duration, oneshot::Sender<()>),
    /// A transactional call, answered when the core reports its result.
    Txn(TxnCall, oneshot::Sender<Result<(), TransactionError>>),
}

/// The transactional calls that wait for a coordinator.
pub(crate) enum TxnCall {
    Init,
    Offsets(Vec<((String, i32), TxnOffset)>, GroupMetadata),
    Commit,
    Abort,
}

/// What the handles share with the driver.
///
/// `send` appends to the batch on the caller's thread, under the core's lock, as the Java
/// client's `send` appends to its accumulator: a record never crosses threads on its own,
/// only whole batches do. The driver takes the same lock to carry bytes and time in and
/// outputs out, and is woken only when a send made the core do work it must act on (about
/// once per batch).
struct Shared {
    core: Mutex<Locked>,
    /// Delivery handles by token. Locked after `core` when both are held.
    pending: Mutex<Pending>,
    /// Fired when the core frees buffer memory, and when the driver stops.
    memory: event_listener::Event,
    /// The driver has stopped: sends fail at once.
    stopped: AtomicBool,
}

/// What the core's lock guards.
struct Locked {
    producer: kafka_core::Producer,
    wall: WallClock,
    /// The deadline the driver's timer was last armed at, when it last went idle (`None`: no
    /// timer, or not idle yet).
    armed: Option<Instant>,
}

impl Locked {
    /// Whether the driver must run for what a send just made the core do: only for outputs
    /// (a request to write, an outcome) or a deadline before the driver's timer. A send that
    /// opened a batch behind requests at their in-flight limit needs neither: the driver runs
    /// when their responses come.
    fn take_wake(&mut self) -> bool {
        let p = &mut self.producer;
        p.take_attention()
            && (p.has_output()
                || p.poll_timeout()
                    .is_some_and(|t| self.armed.is_none_or(|armed| t < armed)))
    }
}

/// Record timestamps: the wall clock read at most once a second and carried forward by the
/// monotonic clock in between, so that a send reads one clock instead of two (each read costs
/// about as much as appending a small record). A wall-clock step shows within a second.
struct WallClock {
    /// The runtime's wall clock (µs since the epoch).
    read: fn() -> i64,
    /// When it was last read, on the core's clock, and what it said (µs since the epoch).
    read_at: Option<(Instant, i64)>,
}

impl WallClock {
    const RESYNC: Duration = Duration::from_secs(1);

    /// The wall clock in epoch milliseconds at `now`.
    fn ms_at(&mut self, now: Instant) -> i64 {
        let (at, us) = match self.read_at {
            Some((at, us)) if now.saturating_duration_since(at) < Self::RESYNC => (at, us),
            _ => {
                let us = (self.read)();
                self.read_at = Some((now, us));
                (now, us)
            }
        };
        let since = now.saturating_duration_since(at).as_micros() as i64;
        (us + since) / 1000
    }
}

impl Shared {
    fn core(&self) -> MutexGuard<'_, Locked> {
        self.core.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn pending(&self) -> MutexGuard<'_, Pending> {
        self.pending.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// Whether an event carries record outcomes (one record's, or a delivered batch's).
fn carries_outcomes(ev: &ProducerEvent) -> bool {
    matches!(ev, ProducerEvent::Outcome(..) | ProducerEvent::Delivered(_))
}

/// Resolves the outcomes an event carries into their pending sends, collecting the wakers to
/// wake once the lock is let go; any other event is ignored.
fn resolve_outcomes(pending: &mut Pending, ev: ProducerEvent, wakers: &mut Vec<Waker>) {
    match ev {
        ProducerEvent::Outcome(token, outcome) => wakers.extend(pending.resolve(token, outcome)),
        ProducerEvent::Delivered(batch) => {
            for (token, outcome) in batch.outcomes() {
                wakers.extend(pending.resolve(token, outcome));
            }
        }
        _ => {}
    }
}

/// A Kafka producer. Share it behind an `Arc`; dropping it never blocks and fails the records
/// still pending.
pub struct Producer<R> {
    commands: mpsc::UnboundedSender<Command>,
    shared: Arc<Shared>,
    max_block: Duration,
    _runtime: PhantomData<fn() -> R>,
}

impl<R> std::fmt::Debug for Producer<R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Producer").finish_non_exhaustive()
    }
}

/// The state a producer's handle and its driver session share, and the session.
fn parts(config: ProducerConfig, wall_clock_us: fn() -> i64) -> (Arc<Shared>, ProducerSession) {
    let shared = Arc::new(Shared {
        core: Mutex::new(Locked {
            producer: kafka_core::Producer::new(config),
            wall: WallClock {
                read: wall_clock_us,
                read_at: None,
            },
            armed: None,
        }),
        pending: Mutex::new(Pending::default()),
        memory: event_listener::Event::new(),
        stopped: AtomicBool::new(false),
    });
    let session = ProducerSession {
        shared: shared.clone(),
        flushes: BTreeMap::new(),
        txn_calls: BTreeMap::new(),
        closers: Vec::new(),
        finished: false,
    };
    (shared, session)
}

impl<R: Runtime> Producer<R> {
    /// Starts a producer's driver. Nothing connects until the first send.
    pub fn new(config: ProducerConfig) -> Self {
        let tokens = config.security.token_provider.clone();
        let (tx, rx) = mpsc::unbounded();
        let max_block = config.max_block;
        let (shared, session) = parts(config, R::wall_clock_us);
        R::spawn(driver::run::<R, _>(session, rx, tokens));
        Producer {
            commands: tx,
            shared,
            max_block,
            _runtime: PhantomData,
        }
    }

    /// From Java-style settings, for example `[("bootstrap.servers", "localhost:9092")]`.
    pub fn from_map<K: AsRef<str>, V: AsRef<str>>(
        settings: impl IntoIterator<Item = (K, V)>,
    ) -> Result<Self, ConfigError> {
        Ok(Self::new(ProducerConfig::from_map(settings)?))
    }

    /// Queues a record, waiting up to `max.block.ms` for buffer memory, and returns the handle
    /// to its outcome. Cancelling this future before it returns leaves nothing queued.
    ///
    /// A record the producer refuses at once (too large, a partition the topic does not have
    /// once its metadata is known) fails with [`SendError::Rejected`]; one whose topic is not
    /// known yet is refused later, through its handle, with [`DeliveryError::Refused`] or
    /// [`DeliveryError::UnknownPartition`].
    pub async fn send(&self, record: Record) -> Result<Delivery, SendError> {
        let mut r = record.inner;
        let mut stamp = record.timestamp;
        let mut timer: Option<R::Timer> = None;
        // Since when the send has waited for buffer memory.
        let mut waiting: Option<Instant> = None;
        loop {
            let (listener, wake) = {
                let mut locked = self.shared.core();
                if self.shared.stopped.load(Ordering::Acquire) {
                    return Err(SendError::Closed);
                }
                let now = R::now();
                // Stamped once, at the first attempt, as Java stamps before waiting for memory.
                r.timestamp = *stamp.get_or_insert_with(|| locked.wall.ms_at(now));
                let core = &mut locked.producer;
                match core.send_or_return(r, now) {
                    Ok(token) => {
                        if let Some(since) = waiting {
                            core.record_buffer_wait(now.saturating_duration_since(since));
                        }
                        // Under the core's lock, so that the outcome (which the driver takes
                        // from the core under it too) finds the slot.
                        self.shared.pending().insert(token);
                        let wake = locked.take_wake();
                        drop(locked);
                        if wake {
                            self.wake();
                        }
                        return Ok(Delivery {
                            shared: self.shared.clone(),
                            token,
                            taken: false,
                        });
                    }
                    Err((CoreSendError::BufferFull, back)) => {
                        r = back;
                        waiting.get_or_insert(now);
                        // Listening before the lock is let go: the driver frees memory (and
                        // fires the event) only under it, so no wake-up is missed.
                        (self.shared.memory.listen(), locked.take_wake())
                    }
                    Err((CoreSendError::Closed, _)) => return Err(SendError::Closed),
                    Err((e, _)) => return Err(SendError::Rejected(e)),
                }
            };
            // Running out of memory made every batch ready: the driver sends them.
            if wake {
                self.wake();
            }
            let timer = timer.get_or_insert_with(|| R::timer(R::now() + self.max_block));
            if let Either::Right(_) = futures_util::future::select(listener, timer).await {
                return Err(SendError::Timeout);
            }
        }
    }

    fn wake(&self) {
        // A closed channel means the driver is gone; the next send says so.
        let _ = self.commands.unbounded_send(Command::Wake);
    }

    /// Waits until every record sent before has its outcome.
    pub async fn flush(&self) {
        let (tx, rx) = oneshot::channel();
        if self.commands.unbounded_send(Command::Flush(tx)).is_ok() {
            let _ = rx.await;
        }
    }

    /// `init_transactions` (with `transactional.id`): gets the producer id for the
    /// transactional id, fencing any older producer with the same id and aborting the
    /// transaction it left open. Waits up to `max.block.ms`
    /// ([`TransactionError::TimedOut`]: call it again to keep waiting).
    pub async fn init_transactions(&self) -> Result<(), TransactionError> {
        self.txn_call(TxnCall::Init).await
    }

    /// Every metric now, with the Java producer's names (`producer-metrics`,
    /// `producer-topic-metrics`, `producer-node-metrics`). Cheap: the figures are kept as
    /// they happen and only measured here.
    pub fn metrics(&self) -> kafka_core::metrics::MetricsSnapshot {
        self.shared.core().producer.metrics(R::now())
    }

    /// The client instance id the cluster assigned for telemetry (KIP-714): `None` until a
    /// broker with a telemetry receiver answered, or with `enable.metrics.push=false`.
    pub fn client_instance_id(&self) -> Option<uuid::Uuid> {
        self.shared.core().producer.client_instance_id()
    }

    /// How many telemetry pushes (KIP-714) the brokers accepted.
    pub fn telemetry_pushes(&self) -> u64 {
        self.shared.core().producer.telemetry_pushes()
    }

    /// The transaction version in use (KIP-890): 2 where the cluster finalized
    /// `transaction.version` 2 by the time `init_transactions` completed, else 1; `None`
    /// before, or without `transactional.id`.
    pub fn transaction_version(&self) -> Option<u8> {
        self.shared.core().producer.transaction_version()
    }

    /// `begin_transaction`: records sent from now on belong to a new transaction.
    pub fn begin_transaction(&self) -> Result<(), TransactionError> {
        self.shared.core().producer.begin_transaction()
    }

    /// `send_offsets_to_transaction`: commits a consumer's progress (the next offset to read
    /// per partition) with the transaction, checked against the consumer's group generation
    /// (`Consumer::group_metadata`, KIP-447) so that a zombie member cannot commit.
    pub async fn send_offsets_to_transaction<T: Into<String>>(
        &self,
        offsets: impl IntoIterator<Item = ((T, i32), TxnOffset)>,
        group: GroupMetadata,
    ) -> Result<(), TransactionError> {
        let offsets = offsets
            .into_iter()
            .map(|((t, p), o)| ((t.into(), p), o))
            .collect();
        self.txn_call(TxnCall::Offsets(offsets, group)).await
    }

    /// `commit_transaction`: sends what is batched, waits for every record's outcome, then
    /// commits. [`TransactionError::Abortable`] if a record failed: abort, then go on.
    pub async fn commit_transaction(&self) -> Result<(), TransactionError> {
        self.txn_call(TxnCall::Commit).await
    }

    /// `abort_transaction`: records not yet sent fail ([`DeliveryError::TransactionAborted`]),
    /// and none of the transaction's records reach a read_committed consumer.
    pub async fn abort_transaction(&self) -> Result<(), TransactionError> {
        self.txn_call(TxnCall::Abort).await
    }

    async fn txn_call(&self, call: TxnCall) -> Result<(), TransactionError> {
        let (tx, rx) = oneshot::channel();
        if self
            .commands
            .unbounded_send(Command::Txn(call, tx))
            .is_err()
        {
            return Err(TransactionError::Closed);
        }
        let timer = R::timer(R::now() + self.max_block);
        match futures_util::future::select(rx, timer).await {
            Either::Left((Ok(result), _)) => result,
            Either::Left((Err(_), _)) => Err(TransactionError::Closed),
            Either::Right(_) => Err(TransactionError::TimedOut),
        }
    }

    /// Sends what is queued, then closes; records left after `timeout` fail.
    pub async fn close(self, timeout: Duration) {
        let (tx, rx) = oneshot::channel();
        if self
            .commands
            .unbounded_send(Command::Close(timeout, tx))
            .is_ok()
        {
            let _ = rx.await;
        }
    }
}

struct ProducerSession {
    shared: Arc<Shared>,
    flushes: BTreeMap<FlushToken, oneshot::Sender<()>>,
    txn_calls: BTreeMap<TxnToken, oneshot::Sender<Result<(), TransactionError>>>,
    closers: Vec<oneshot::Sender<()>>,
    finished: bool,
}

impl ProducerSession {
    /// The driver stops: later sends fail, and sends waiting for memory wake up to see it.
    fn stop(&mut self) {
        self.shared.stopped.store(true, Ordering::Release);
        self.shared.memory.notify(usize::MAX);
        self.finished = true;
    }
}

impl Drop for ProducerSession {
    fn drop(&mut self) {
        // The driver is gone (its runtime shut down, or it finished): nothing will resolve
        // the records still waiting, so they fail now rather than hang. Under the core's lock,
        // as `send` checks `stopped` under it before inserting its slot: a send either
        // inserted before `close_all` (and is failed by it) or sees `stopped`.
        let wakers = {
            let _core = self.shared.core();
            self.shared.stopped.store(true, Ordering::Release);
            self.shared.pending().close_all()
        };
        self.shared.memory.notify(usize::MAX);
        for w in wakers {
            w.wake();
        }
    }
}

impl Session for ProducerSession {
    type Command = Command;
    type Core = kafka_core::Producer;

    fn with_core<T>(&mut self, f: impl FnOnce(&mut kafka_core::Producer) -> T) -> T {
        f(&mut self.shared.core().producer)
    }

    fn command(&mut self, cmd: Command, now: Instant) {
        match cmd {
            // The driver drains the core and re-arms its timer after every command.
            Command::Wake => {}
            Command::Flush(reply) => {
                let token = self.shared.core().producer.flush(now);
                self.flushes.insert(token, reply);
            }
            Command::Close(timeout, reply) => {
                self.closers.push(reply);
                self.shared.core().producer.close(now + timeout, now);
            }
            Command::Txn(call, reply) => {
                let core = &mut self.shared.core().producer;
                let token = match call {
                    TxnCall::Init => core.init_transactions(now),
                    TxnCall::Offsets(offsets, group) => {
                        core.send_offsets_to_transaction(offsets, group, now)
                    }
                    TxnCall::Commit => core.commit_transaction(now),
                    TxnCall::Abort => core.abort_transaction(now),
                };
                self.txn_calls.insert(token, reply);
            }
        }
    }

    fn event(&mut self, ev: ProducerEvent, _now: Instant) {
        match ev {
            // `drain_into` resolves these; this serves any that come another way.
            ev if carries_outcomes(&ev) => {
                let mut wakers = Vec::new();
                resolve_outcomes(&mut self.shared.pending(), ev, &mut wakers);
                wakers.into_iter().for_each(Waker::wake);
            }
            ProducerEvent::MemoryAvailable => {
                self.shared.memory.notify(usize::MAX);
            }
            ProducerEvent::FlushComplete(token) => {
                if let Some(tx) = self.flushes.remove(&token) {
                    let _ = tx.send(());
                }
            }
            ProducerEvent::Transaction(token, result) => {
                if let Some(tx) = self.txn_calls.remove(&token) {
                    let _ = tx.send(result);
                }
            }
            ProducerEvent::Closed => {
                for tx in self.closers.drain(..) {
                    let _ = tx.send(());
                }
                self.stop();
            }
            // Events a newer core may add: nothing for this driver to do.
            _ => {}
        }
    }

    fn drain_into(&mut self, outputs: &mut VecDeque<Output>) {
        let mut wakers = Vec::new();
        {
            let mut locked = self.shared.core();
            // Locked after `core`, as `send` does; taken at the first outcome.
            let mut pending = None;
            while let Some(out) = locked.producer.poll_output() {
                match out {
                    // Resolved here, a whole response's records under one lock.
                    Output::Event(ev) if carries_outcomes(&ev) => {
                        let pending = pending.get_or_insert_with(|| self.shared.pending());
                        resolve_outcomes(pending, ev, &mut wakers);
                    }
                    other => outputs.push_back(other),
                }
            }
        }
        for w in wakers {
            w.wake();
        }
    }

    fn next_timeout(&mut self) -> Option<Instant> {
        let mut locked = self.shared.core();
        let next = locked.producer.poll_timeout();
        locked.armed = next;
        next
    }

    fn detached(&mut self, _now: Instant) {
        // The producer was dropped: fail what is left, never block. The outcomes are drained
        // before the driver checks `finished`.
        self.shared.core().producer.abort();
        self.stop();
    }

    fn finished(&self) -> bool {
        self.finished
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_send_wakes_the_driver_only_for_outputs_or_an_earlier_deadline() {
        let config = ProducerConfig::from_map([("bootstrap.servers", "b:9092")]).unwrap();
        let mut locked = Locked {
            producer: kafka_core::Producer::new(config),
            wall: WallClock {
                read: crate::runtime::os_clock::wall_clock_us,
                read_at: None,
            },
            armed: None,
        };
        let now = Instant::from_millis(1);
        let record = ProducerRecord::new("t", "v", 1);
        locked.producer.send_or_return(record, now).unwrap();
        assert!(
            locked.take_wake(),
            "the first send has a connection to open"
        );
        while locked.producer.poll_output().is_some() {}
        // The driver went idle with its timer at the core's next deadline (the connect's).
        let next = locked.producer.poll_timeout().expect("a connect deadline");
        locked.armed = Some(next);
        // A flush makes the core step, but it has nothing to write and no earlier deadline.
        locked.producer.flush(now);
        assert!(!locked.producer.has_output());
        assert!(
            !locked.take_wake(),
            "nothing for the driver before its timer"
        );
        // The same step with the driver's timer later, or unarmed, needs the driver.
        for armed in [Some(next + Duration::from_secs(1)), None] {
            locked.armed = armed;
            locked.producer.flush(now);
            assert!(locked.take_wake(), "armed at {armed:?}");
        }
    }

    #[test]
    fn record_timestamps_follow_the_monotonic_clock_between_wall_clock_reads() {
        let t0 = Instant::from_nanos(5_000_000_000);
        let mut wall = WallClock {
            read: crate::runtime::os_clock::wall_clock_us,
            read_at: Some((t0, 1_000_000)), // the wall clock said 1,000 ms at t0
        };
        assert_eq!(wall.ms_at(t0), 1_000);
        assert_eq!(wall.ms_at(t0 + Duration::from_micros(2_500)), 1_002);
        assert_eq!(wall.ms_at(t0 + Duration::from_millis(999)), 1_999);
        // A second on, the wall clock is read again (now, not 2,000 ms after the epoch).
        let now_ms = crate::runtime::os_clock::wall_clock_us() / 1000;
        let read = wall.ms_at(t0 + Duration::from_secs(1));
        assert!((read - now_ms).abs() < 1_000, "{read} vs {now_ms}");
    }

    /// `ProducerSession::drop` set `stopped` without the core's lock, while `send` checks it
    /// under that lock and then inserts its slot: a send racing a shutdown could insert after
    /// `close_all`, leaving a `Delivery` that never resolves (found by reading the code). Here
    /// the send's side holds the lock while the session drops on another thread.
    #[test]
    #[allow(clippy::disallowed_methods)] // a real thread races the test's lock
    fn a_send_racing_the_driver_shutdown_still_resolves() {
        let config = ProducerConfig::from_map([("bootstrap.servers", "b:9092")]).unwrap();
        let (shared, session) = parts(config, crate::runtime::os_clock::wall_clock_us);
        // `send`: the core's lock, then `stopped`...
        let core = shared.core();
        assert!(!shared.stopped.load(Ordering::Acquire));
        let dropper = std::thread::spawn(move || drop(session));
        std::thread::sleep(Duration::from_millis(50));
        // ...then the slot, still under the lock.
        let token = RecordToken(0);
        shared.pending().insert(token);
        drop(core);
        dropper.join().unwrap();
        let waker = futures_util::task::noop_waker();
        let mut cx = Context::from_waker(&waker);
        assert!(
            matches!(shared.pending().poll(token, &mut cx), Polled::Ready(_)),
            "the record sent as the driver stopped has its outcome"
        );
    }
}
