//! The producer handle and its driver session: `send` waits for buffer memory up to
//! `max.block.ms`, and each record's outcome comes back on its own [`Delivery`].

use std::collections::{BTreeMap, VecDeque};
use std::future::Future;
use std::marker::PhantomData;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use futures_channel::{mpsc, oneshot};
use futures_util::FutureExt;
use kafka_core::config::{ConfigError, ProducerConfig};
use kafka_core::producer::{
    Certainty, DeliveryError, FlushToken, Outcome, ProducerEvent, ProducerRecord, RecordToken,
    SendError as CoreSendError,
};
use kafka_core::Instant;

use crate::driver::{self, Session};
use crate::runtime::Runtime;

/// A record to send. Without a timestamp, the current wall-clock time is used.
#[derive(Debug, Clone, Default)]
pub struct Record {
    inner: ProducerRecord,
    timestamp: Option<i64>,
}

impl Record {
    /// A record with a value.
    pub fn new(topic: impl Into<String>, value: impl Into<Bytes>) -> Self {
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
    pub fn tombstone(topic: impl Into<String>, key: impl Into<Bytes>) -> Self {
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
    /// The core refused it (too large, closed, invalid partition).
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
#[derive(Debug)]
pub struct Delivery(oneshot::Receiver<Outcome>);

impl Future for Delivery {
    type Output = Result<Delivered, Failed>;
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        self.0.poll_unpin(cx).map(|r| match r {
            Ok(Outcome::Delivered {
                partition,
                offset,
                timestamp,
            }) => Ok(Delivered {
                partition,
                offset,
                timestamp,
            }),
            Ok(Outcome::Failed { error, certainty }) => Err(Failed { error, certainty }),
            // The driver vanished without an outcome: its runtime shut down.
            Err(_) => Err(Failed {
                error: DeliveryError::Closed,
                certainty: Certainty::PossiblySent,
            }),
        })
    }
}

pub(crate) enum Command {
    /// The slow path: the caller waits until the core took the record.
    Send(ProducerRecord, oneshot::Sender<Result<Delivery, SendError>>),
    /// The fast path: records wait in [`Gate::lane`]; this wakes the driver to take them all.
    Drain,
    Flush(oneshot::Sender<()>),
    Close(Duration, oneshot::Sender<()>),
}

/// Lets `send` skip the round trip to the driver while memory is plentiful.
///
/// Without back-pressure, `send` hands the record over and returns its delivery handle at once:
/// one channel push, no wake-up of the caller. Once the driver has records waiting for memory
/// (`blocked`), or the records not yet taken by the driver reach a quarter of `buffer.memory`
/// (`queued`), `send` waits for the driver's answer instead. So memory stays within
/// `buffer.memory` plus that quarter, and a blocked `send` can still be cancelled.
///
/// Fast-path records go through `lane`, a shared vector the driver empties in one go: only
/// the send that finds it empty wakes the driver, so a burst costs one lock per record and
/// one channel message per burst.
#[derive(Debug)]
struct Gate {
    blocked: AtomicBool,
    queued: AtomicUsize,
    limit: usize,
    lane: std::sync::Mutex<Lane>,
}

/// A fast-path record: the record, its size counted in [`Gate::queued`], its handle's sender.
type Queued = (ProducerRecord, usize, oneshot::Sender<Outcome>);

#[derive(Debug, Default)]
struct Lane {
    records: Vec<Queued>,
    /// The driver is gone: sends fail at once.
    closed: bool,
}

/// A Kafka producer. Share it behind an `Arc`; dropping it never blocks and fails the records
/// still pending.
pub struct Producer<R> {
    commands: mpsc::UnboundedSender<Command>,
    gate: Arc<Gate>,
    _runtime: PhantomData<fn() -> R>,
}

impl<R> std::fmt::Debug for Producer<R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Producer").finish_non_exhaustive()
    }
}

impl<R: Runtime> Producer<R> {
    /// Starts a producer's driver. Nothing connects until the first send.
    pub fn new(config: ProducerConfig) -> Self {
        let (tx, rx) = mpsc::unbounded();
        let gate = Arc::new(Gate {
            blocked: AtomicBool::new(false),
            queued: AtomicUsize::new(0),
            limit: config.buffer_memory / 4,
            lane: Default::default(),
        });
        let session = ProducerSession {
            gate: gate.clone(),
            max_block: config.max_block,
            core: kafka_core::Producer::new(config),
            pending: Pending::default(),
            spare: Vec::new(),
            waiting: VecDeque::new(),
            flushes: BTreeMap::new(),
            closers: Vec::new(),
            finished: false,
        };
        R::spawn(driver::run::<R, _>(session, rx));
        Producer {
            commands: tx,
            gate,
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
    /// While memory is plentiful it returns at once, and a record the producer refuses (too
    /// large, a bad partition) fails through its handle with [`DeliveryError::Refused`]; under
    /// back-pressure such refusals come back here as [`SendError::Rejected`].
    pub async fn send(&self, record: Record) -> Result<Delivery, SendError> {
        let mut r = record.inner;
        r.timestamp = record.timestamp.unwrap_or_else(wall_clock_ms);
        let size = approximate_size(&r);
        let g = &self.gate;
        if !g.blocked.load(Ordering::Acquire)
            && g.queued.load(Ordering::Relaxed).saturating_add(size) <= g.limit
        {
            let (tx, rx) = oneshot::channel();
            let wake = {
                let mut lane = g.lane.lock().unwrap_or_else(|e| e.into_inner());
                if lane.closed {
                    return Err(SendError::Closed);
                }
                g.queued.fetch_add(size, Ordering::Relaxed);
                lane.records.push((r, size, tx));
                lane.records.len() == 1
            };
            if wake && self.commands.unbounded_send(Command::Drain).is_err() {
                return Err(SendError::Closed);
            }
            return Ok(Delivery(rx));
        }
        let (tx, rx) = oneshot::channel();
        self.commands
            .unbounded_send(Command::Send(r, tx))
            .map_err(|_| SendError::Closed)?;
        rx.await.map_err(|_| SendError::Closed)?
    }

    /// Waits until every record sent before has its outcome.
    pub async fn flush(&self) {
        let (tx, rx) = oneshot::channel();
        if self.commands.unbounded_send(Command::Flush(tx)).is_ok() {
            let _ = rx.await;
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

/// The wall clock, for record timestamps only (data, not time).
pub(crate) fn wall_clock_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

/// The bytes a record takes in the channel, roughly (its payload plus a fixed overhead).
fn approximate_size(r: &ProducerRecord) -> usize {
    let len = |b: &Option<Bytes>| b.as_ref().map_or(0, |b| b.len());
    let headers: usize = r.headers.iter().map(|(k, v)| k.len() + len(v)).sum();
    r.topic.len() + len(&r.key) + len(&r.value) + headers + 64
}

/// The handles of records in the core, by token. Tokens come in order and outcomes nearly
/// so: a ring indexed from the oldest token, not a map.
#[derive(Default)]
struct Pending {
    base: u64,
    slots: VecDeque<Option<oneshot::Sender<Outcome>>>,
}

impl Pending {
    fn insert(&mut self, token: RecordToken, tx: oneshot::Sender<Outcome>) {
        if self.slots.is_empty() {
            self.base = token.0;
        }
        let Some(i) = token.0.checked_sub(self.base) else {
            debug_assert!(false, "tokens only grow");
            return;
        };
        let i = i as usize;
        while self.slots.len() <= i {
            self.slots.push_back(None);
        }
        self.slots[i] = Some(tx);
    }

    fn remove(&mut self, token: RecordToken) -> Option<oneshot::Sender<Outcome>> {
        let i = usize::try_from(token.0.checked_sub(self.base)?).ok()?;
        let tx = self.slots.get_mut(i)?.take();
        while self.slots.front().is_some_and(Option::is_none) {
            self.slots.pop_front();
            self.base += 1;
        }
        tx
    }
}

/// Who is told when a waiting record is taken or given up.
enum Reply {
    /// A `send` call still waiting (slow path).
    Caller(oneshot::Sender<Result<Delivery, SendError>>),
    /// A delivery handle already returned (fast path).
    Handle(oneshot::Sender<Outcome>),
}

impl Reply {
    fn is_canceled(&self) -> bool {
        match self {
            Reply::Caller(tx) => tx.is_canceled(),
            // A dropped handle only loses the observation: the record still goes.
            Reply::Handle(_) => false,
        }
    }

    fn fail(self, send: SendError, delivery: DeliveryError) {
        match self {
            Reply::Caller(tx) => {
                let _ = tx.send(Err(send));
            }
            Reply::Handle(tx) => {
                let _ = tx.send(Outcome::Failed {
                    error: delivery,
                    certainty: Certainty::NotSent,
                });
            }
        }
    }
}

/// A send waiting for buffer memory, in arrival order.
struct Waiting {
    record: ProducerRecord,
    reply: Reply,
    deadline: Instant,
}

struct ProducerSession {
    gate: Arc<Gate>,
    core: kafka_core::Producer,
    max_block: Duration,
    pending: Pending,
    /// The lane's previous vector, kept for its allocation.
    spare: Vec<Queued>,
    waiting: VecDeque<Waiting>,
    flushes: BTreeMap<FlushToken, oneshot::Sender<()>>,
    closers: Vec<oneshot::Sender<()>>,
    finished: bool,
}

impl ProducerSession {
    /// Sends waiting records in order until memory runs out again.
    fn send_waiting(&mut self, now: Instant) {
        while let Some(w) = self.waiting.pop_front() {
            if w.reply.is_canceled() {
                continue; // the caller cancelled its send: queue nothing
            }
            match self.core.send_or_return(w.record, now) {
                Ok(token) => match w.reply {
                    Reply::Caller(reply) => {
                        let (tx, rx) = oneshot::channel();
                        self.pending.insert(token, tx);
                        let _ = reply.send(Ok(Delivery(rx)));
                    }
                    Reply::Handle(tx) => {
                        self.pending.insert(token, tx);
                    }
                },
                Err((CoreSendError::BufferFull, record)) => {
                    self.waiting.push_front(Waiting { record, ..w });
                    break;
                }
                Err((e, _)) => w
                    .reply
                    .fail(SendError::Rejected(e.clone()), DeliveryError::Refused(e)),
            }
        }
        self.gate
            .blocked
            .store(!self.waiting.is_empty(), Ordering::Release);
    }

    /// The driver stops: fast-path records not taken fail, and later sends are refused.
    fn close_lane(&mut self) {
        let left = {
            let mut lane = self.gate.lane.lock().unwrap_or_else(|e| e.into_inner());
            lane.closed = true;
            std::mem::take(&mut lane.records)
        };
        for (_, _, tx) in left {
            let _ = tx.send(Outcome::Failed {
                error: DeliveryError::Closed,
                certainty: Certainty::NotSent,
            });
        }
    }

    fn fail_waiting(&mut self) {
        for w in self.waiting.drain(..) {
            w.reply.fail(SendError::Closed, DeliveryError::Closed);
        }
    }

    fn wait(&mut self, record: ProducerRecord, reply: Reply, now: Instant) {
        self.waiting.push_back(Waiting {
            record,
            reply,
            deadline: now + self.max_block,
        });
        self.send_waiting(now);
    }
}

impl Session for ProducerSession {
    type Command = Command;
    type Core = kafka_core::Producer;

    fn core(&mut self) -> &mut kafka_core::Producer {
        &mut self.core
    }

    fn command(&mut self, cmd: Command, now: Instant) {
        match cmd {
            Command::Send(record, reply) => self.wait(record, Reply::Caller(reply), now),
            Command::Drain => {
                let records = {
                    let mut lane = self.gate.lane.lock().unwrap_or_else(|e| e.into_inner());
                    std::mem::replace(&mut lane.records, std::mem::take(&mut self.spare))
                };
                let mut records = records;
                for (record, size, reply) in records.drain(..) {
                    self.gate.queued.fetch_sub(size, Ordering::Relaxed);
                    self.wait(record, Reply::Handle(reply), now);
                }
                self.spare = records;
            }
            Command::Flush(reply) => {
                let token = self.core.flush(now);
                self.flushes.insert(token, reply);
            }
            Command::Close(timeout, reply) => {
                self.fail_waiting();
                self.closers.push(reply);
                self.core.close(now + timeout, now);
            }
        }
    }

    fn event(&mut self, ev: ProducerEvent, now: Instant) {
        match ev {
            ProducerEvent::Outcome(token, outcome) => {
                if let Some(tx) = self.pending.remove(token) {
                    let _ = tx.send(outcome); // a dropped handle only loses the observation
                }
            }
            ProducerEvent::MemoryAvailable => self.send_waiting(now),
            ProducerEvent::FlushComplete(token) => {
                if let Some(tx) = self.flushes.remove(&token) {
                    let _ = tx.send(());
                }
            }
            ProducerEvent::Closed => {
                self.close_lane();
                for tx in self.closers.drain(..) {
                    let _ = tx.send(());
                }
                self.finished = true;
            }
        }
    }

    fn detached(&mut self, _now: Instant) {
        // The producer was dropped: fail what is left, never block. The outcomes are drained
        // before the driver checks `finished`.
        self.fail_waiting();
        self.close_lane();
        self.core.abort();
        self.finished = true;
    }

    fn deadline(&self) -> Option<Instant> {
        self.waiting.front().map(|w| w.deadline)
    }

    fn expire(&mut self, now: Instant) {
        while self.waiting.front().is_some_and(|w| w.deadline <= now) {
            let w = self.waiting.pop_front().expect("checked");
            w.reply.fail(SendError::Timeout, DeliveryError::BufferFull);
        }
        self.gate
            .blocked
            .store(!self.waiting.is_empty(), Ordering::Release);
    }

    fn finished(&self) -> bool {
        self.finished
    }
}
