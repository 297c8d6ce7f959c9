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
use futures_util::future::Either;
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
    /// Records wait in [`Gate::lane`]; this wakes the driver to take them all.
    Drain,
    Flush(oneshot::Sender<()>),
    Close(Duration, oneshot::Sender<()>),
}

/// Lets `send` hand records over without a round trip to the driver.
///
/// While the gate is open, `send` pushes the record into `lane` and returns its delivery
/// handle at once. The gate closes while the driver has records waiting for memory
/// (`blocked`), or while the records not yet taken by the driver reach a quarter of
/// `buffer.memory` (`queued`). A closed gate makes `send` wait for `opened`, not for a reply
/// from the driver: under back-pressure a sender wakes once per freed batch, not once per
/// record. So memory stays within `buffer.memory` plus that quarter, and a blocked `send`
/// queues nothing and can be cancelled.
///
/// `lane` is a shared vector the driver empties in one go: only the send that finds it empty
/// wakes the driver, so a burst costs one lock per record and one channel message per burst.
#[derive(Debug)]
struct Gate {
    blocked: AtomicBool,
    queued: AtomicUsize,
    limit: usize,
    lane: std::sync::Mutex<Lane>,
    /// Fired when the gate may have opened.
    opened: event_listener::Event,
}

impl Gate {
    /// Whether a record of `size` may go into the lane now. One record always may when the
    /// lane is empty, however large, so that the core can refuse it with a reason.
    fn admits(&self, size: usize) -> bool {
        if self.blocked.load(Ordering::Acquire) {
            return false;
        }
        let queued = self.queued.load(Ordering::Acquire);
        queued == 0 || queued.saturating_add(size) <= self.limit
    }

    /// Wakes every waiting `send` if the gate is open.
    fn notify_if_open(&self) {
        if !self.blocked.load(Ordering::Acquire) {
            self.opened.notify(usize::MAX);
        }
    }
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
    max_block: Duration,
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
            opened: event_listener::Event::new(),
        });
        let max_block = config.max_block;
        let session = ProducerSession {
            gate: gate.clone(),
            max_block,
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
    /// A record the producer refuses (too large, a bad partition) fails through its handle
    /// with [`DeliveryError::Refused`].
    pub async fn send(&self, record: Record) -> Result<Delivery, SendError> {
        let mut r = record.inner;
        r.timestamp = record.timestamp.unwrap_or_else(wall_clock_ms);
        let size = approximate_size(&r);
        let g = &self.gate;
        let mut timer: Option<R::Timer> = None;
        loop {
            if g.admits(size) {
                return self.enqueue(r, size);
            }
            let listener = g.opened.listen();
            // Checked again once listening: the driver may have opened the gate in between.
            if g.admits(size) {
                continue;
            }
            let timer =
                timer.get_or_insert_with(|| R::timer(std::time::Instant::now() + self.max_block));
            if let Either::Right(_) = futures_util::future::select(listener, timer).await {
                return Err(SendError::Timeout);
            }
        }
    }

    /// Puts a record into the lane, waking the driver if the lane was empty.
    fn enqueue(&self, record: ProducerRecord, size: usize) -> Result<Delivery, SendError> {
        let (tx, rx) = oneshot::channel();
        let wake = {
            let mut lane = self.gate.lane.lock().unwrap_or_else(|e| e.into_inner());
            if lane.closed {
                return Err(SendError::Closed);
            }
            self.gate.queued.fetch_add(size, Ordering::AcqRel);
            lane.records.push((record, size, tx));
            lane.records.len() == 1
        };
        if wake && self.commands.unbounded_send(Command::Drain).is_err() {
            return Err(SendError::Closed);
        }
        Ok(Delivery(rx))
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

/// Fails a record whose handle was already returned.
fn fail(reply: oneshot::Sender<Outcome>, error: DeliveryError) {
    let _ = reply.send(Outcome::Failed {
        error,
        certainty: Certainty::NotSent,
    });
}

/// A record taken from the lane, waiting for buffer memory, in arrival order.
struct Waiting {
    record: ProducerRecord,
    reply: oneshot::Sender<Outcome>,
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
            match self.core.send_or_return(w.record, now) {
                Ok(token) => self.pending.insert(token, w.reply),
                Err((CoreSendError::BufferFull, record)) => {
                    self.waiting.push_front(Waiting { record, ..w });
                    break;
                }
                Err((e, _)) => fail(w.reply, DeliveryError::Refused(e)),
            }
        }
        self.gate
            .blocked
            .store(!self.waiting.is_empty(), Ordering::Release);
    }

    /// The driver stops: records not taken fail, and later sends are refused.
    fn close_lane(&mut self) {
        let left = {
            let mut lane = self.gate.lane.lock().unwrap_or_else(|e| e.into_inner());
            lane.closed = true;
            std::mem::take(&mut lane.records)
        };
        for (_, _, tx) in left {
            fail(tx, DeliveryError::Closed);
        }
        // Waiting sends wake up to find the lane closed.
        self.gate.blocked.store(false, Ordering::Release);
        self.gate.queued.store(0, Ordering::Release);
        self.gate.opened.notify(usize::MAX);
    }

    fn fail_waiting(&mut self) {
        for w in self.waiting.drain(..) {
            fail(w.reply, DeliveryError::Closed);
        }
    }

    /// Hands a record from the lane to the core, or queues it behind the records already
    /// waiting for memory (they go first, in order).
    fn take(&mut self, record: ProducerRecord, reply: oneshot::Sender<Outcome>, now: Instant) {
        let record = if self.waiting.is_empty() {
            match self.core.send_or_return(record, now) {
                Ok(token) => return self.pending.insert(token, reply),
                Err((CoreSendError::BufferFull, record)) => record,
                Err((e, _)) => return fail(reply, DeliveryError::Refused(e)),
            }
        } else {
            record
        };
        // The core said so when it refused, and will say MemoryAvailable when it frees some.
        self.gate.blocked.store(true, Ordering::Release);
        self.waiting.push_back(Waiting {
            record,
            reply,
            deadline: now + self.max_block,
        });
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
            Command::Drain => {
                let records = {
                    let mut lane = self.gate.lane.lock().unwrap_or_else(|e| e.into_inner());
                    std::mem::replace(&mut lane.records, std::mem::take(&mut self.spare))
                };
                let mut records = records;
                for (record, size, reply) in records.drain(..) {
                    self.gate.queued.fetch_sub(size, Ordering::AcqRel);
                    self.take(record, reply, now);
                }
                self.spare = records;
                self.gate.notify_if_open();
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
            ProducerEvent::MemoryAvailable => {
                self.send_waiting(now);
                self.gate.notify_if_open();
            }
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
            fail(w.reply, DeliveryError::BufferFull);
        }
        self.gate
            .blocked
            .store(!self.waiting.is_empty(), Ordering::Release);
        self.gate.notify_if_open();
    }

    fn finished(&self) -> bool {
        self.finished
    }
}
