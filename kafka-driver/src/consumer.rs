//! The assign-mode consumer handle and its driver session: the user pulls records; the driver
//! hands over a partition's fetched batches undecoded, and the handle decodes them one by one
//! on the caller's thread.

use std::collections::{BTreeMap, VecDeque};
use std::marker::PhantomData;
use std::sync::Arc;

use bytes::Bytes;
use futures_channel::{mpsc, oneshot};
use futures_util::stream::Stream;
use kafka_core::config::{ConfigError, ConsumerConfig};
use kafka_core::fetcher::{FetchError, FetchEvent, FetchedRecords, Fetcher, StartFrom};
use kafka_core::group::offsets::{CommitError, CommitId};
use kafka_core::proto::record::Headers;
use kafka_core::proto::ErrorCode;
use kafka_core::Instant;

use crate::driver::{self, Session};
use crate::runtime::Runtime;

/// A record read from a partition.
#[derive(Debug, Clone, PartialEq)]
pub struct ConsumerRecord {
    /// Its topic.
    pub topic: Arc<str>,
    /// Its partition.
    pub partition: i32,
    /// Its offset.
    pub offset: i64,
    /// Its timestamp (epoch ms).
    pub timestamp: i64,
    /// Its key.
    pub key: Option<Bytes>,
    /// Its value (`None` for a tombstone).
    pub value: Option<Bytes>,
    /// Its headers.
    pub headers: Headers,
    /// The leader epoch it was written in, if the broker says (KIP-320).
    pub leader_epoch: Option<i32>,
}

/// What the application has consumed since the driver last heard: (topic, partition, next
/// offset, leader epoch of the record before it).
type Progress = Vec<(String, i32, i64, i32)>;

/// What [`Consumer::next_event`] returns.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum ConsumerEvent {
    /// Group: these partitions are ours now.
    Assigned(Vec<(String, i32)>),
    /// Group: these partitions are being taken away. Commit what you consumed of them, then
    /// call [`Consumer::ack_revocation`] (with `enable.auto.commit` the consumer commits and
    /// acknowledges for you; `recv` also acknowledges the revocations it skips).
    Revoking(Vec<(String, i32)>),
    /// Group: these partitions were lost without a handover; do not commit them.
    Lost(Vec<(String, i32)>),
    /// A record.
    Record(ConsumerRecord),
    /// The partition's position reached its high watermark: everything written so far was
    /// read. Reported once each time the end is reached.
    EndOfPartition {
        /// The topic.
        topic: Arc<str>,
        /// The partition.
        partition: i32,
        /// The position (= the high watermark).
        offset: i64,
    },
}

/// Why the consumer could not deliver.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ConsumeError {
    /// A partition stopped with an error.
    #[error("{topic}-{partition}: {error}")]
    Partition {
        /// The topic.
        topic: Arc<str>,
        /// The partition.
        partition: i32,
        /// What went wrong.
        error: FetchError,
    },
    /// The group membership stopped for good (for example FENCED_INSTANCE_ID).
    #[error("the consumer group membership failed: {0}")]
    Group(ErrorCode),
    /// The consumer's driver has stopped.
    #[error("the consumer is closed")]
    Closed,
}

pub(crate) enum Command {
    Assign(Vec<(String, i32)>, StartFrom),
    Seek(String, i32, StartFrom),
    Pause(String, i32),
    Resume(String, i32),
    Position(String, i32, oneshot::Sender<Option<i64>>),
    Committed(String, i32, oneshot::Sender<Option<i64>>),
    Next(Progress, oneshot::Sender<FetchEvent>),
    Subscribe(Vec<String>),
    Commit(Progress, oneshot::Sender<Result<(), CommitError>>),
    AckRevocation(Progress),
    Close(Progress, oneshot::Sender<()>),
    /// The handle met corrupt data at this offset: the partition stops there.
    Corrupt(String, i32, i64),
}

/// The fetched records the handle is giving out.
struct Reading {
    topic: Arc<str>,
    partition: i32,
    leader_epoch: Option<i32>,
    records: FetchedRecords,
}

/// A Kafka consumer: in assign mode it reads chosen partitions from chosen positions; with
/// `group.id` and [`Consumer::subscribe`] it joins a consumer group. Nothing connects until the
/// first `assign` or `subscribe`.
pub struct Consumer<R> {
    commands: mpsc::UnboundedSender<Command>,
    reading: Option<Reading>,
    /// An error met while filling a `recv_batch`, returned by the next call.
    deferred: Option<ConsumeError>,
    max_poll_records: usize,
    /// Next offsets of records returned since the driver last heard: what commits carry.
    progress: BTreeMap<(Arc<str>, i32), (i64, i32)>,
    /// The driver's answer to the last request for events, until it is taken.
    asked: Option<oneshot::Receiver<FetchEvent>>,
    _runtime: PhantomData<fn() -> R>,
}

impl<R> std::fmt::Debug for Consumer<R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Consumer").finish_non_exhaustive()
    }
}

impl<R: Runtime> Consumer<R> {
    /// Starts a consumer's driver.
    pub fn new(config: ConsumerConfig) -> Self {
        let (tx, rx) = mpsc::unbounded();
        let max_poll_records = config.max_poll_records.max(1) as usize;
        let session = ConsumerSession {
            core: Fetcher::new(config),
            ready: VecDeque::new(),
            waiting: None,
            commits: BTreeMap::new(),
            closers: Vec::new(),
            finished: false,
        };
        R::spawn(driver::run::<R, _>(session, rx, std::time::Instant::now()));
        Consumer {
            commands: tx,
            reading: None,
            deferred: None,
            max_poll_records,
            progress: BTreeMap::new(),
            asked: None,
            _runtime: PhantomData,
        }
    }

    /// From Java-style settings, for example `[("bootstrap.servers", "localhost:9092")]`.
    pub fn from_map<K: AsRef<str>, V: AsRef<str>>(
        settings: impl IntoIterator<Item = (K, V)>,
    ) -> Result<Self, ConfigError> {
        Ok(Self::new(ConsumerConfig::from_map(settings)?))
    }

    fn send(&self, cmd: Command) {
        // A stopped driver shows up as `Closed` on the next `recv`.
        let _ = self.commands.unbounded_send(cmd);
    }

    /// Adds partitions to read, each starting at `start`.
    pub fn assign<T: Into<String>>(
        &mut self,
        partitions: impl IntoIterator<Item = (T, i32)>,
        start: StartFrom,
    ) {
        let ps = partitions.into_iter().map(|(t, p)| (t.into(), p)).collect();
        self.send(Command::Assign(ps, start));
    }

    /// Joins the consumer group (`group.id` must be set) subscribed to `topics`.
    pub fn subscribe<T: Into<String>>(&mut self, topics: impl IntoIterator<Item = T>) {
        let topics = topics.into_iter().map(Into::into).collect();
        self.send(Command::Subscribe(topics));
    }

    fn take_progress(&mut self) -> Progress {
        std::mem::take(&mut self.progress)
            .into_iter()
            .map(|((t, p), (o, e))| (t.to_string(), p, o, e))
            .collect()
    }

    /// Commits the offsets of every record returned so far, and waits for the outcome.
    pub async fn commit(&mut self) -> Result<(), CommitError> {
        self.commit_async().await
    }

    /// Commits the offsets of every record returned so far without waiting: the commit is
    /// on its way when this returns, and the future (which borrows nothing, and may be
    /// dropped) gives its outcome. Commits complete in the order they were made.
    pub fn commit_async(
        &mut self,
    ) -> impl std::future::Future<Output = Result<(), CommitError>> + Send + 'static {
        let (tx, rx) = oneshot::channel();
        let progress = self.take_progress();
        self.send(Command::Commit(progress, tx));
        async move { rx.await.unwrap_or(Err(CommitError::NotMember)) }
    }

    /// Acknowledges a [`ConsumerEvent::Revoking`]: the rebalance goes on.
    pub fn ack_revocation(&mut self) {
        let progress = self.take_progress();
        self.send(Command::AckRevocation(progress));
    }

    /// Leaves the group (after a last automatic commit), waiting at most `timeout`.
    pub async fn close(mut self, timeout: std::time::Duration) {
        let (tx, rx) = oneshot::channel();
        let progress = self.take_progress();
        self.send(Command::Close(progress, tx));
        // The driver bounds the leave by request.timeout.ms; `timeout` bounds the caller.
        let _ = with_deadline(rx, timeout).await;
    }

    /// Moves a partition's position; records of it not yet returned are dropped.
    pub fn seek(&mut self, topic: &str, partition: i32, start: StartFrom) {
        if self
            .reading
            .as_ref()
            .is_some_and(|r| r.is_of(topic, partition))
        {
            self.reading = None;
        }
        self.send(Command::Seek(topic.to_owned(), partition, start));
    }

    /// Stops fetching a partition (records already fetched are still returned).
    pub fn pause(&mut self, topic: &str, partition: i32) {
        self.send(Command::Pause(topic.to_owned(), partition));
    }

    /// Resumes a paused partition.
    pub fn resume(&mut self, topic: &str, partition: i32) {
        self.send(Command::Resume(topic.to_owned(), partition));
    }

    /// The offset of the next record `recv` will return for the partition, once known.
    pub async fn position(&self, topic: &str, partition: i32) -> Option<i64> {
        if let Some(r) = &self.reading {
            if r.is_of(topic, partition) {
                return Some(r.records.position());
            }
        }
        let (tx, rx) = oneshot::channel();
        self.send(Command::Position(topic.to_owned(), partition, tx));
        rx.await.ok().flatten()
    }

    /// The last committed offset of a partition of the group, if known.
    pub async fn committed(&self, topic: &str, partition: i32) -> Option<i64> {
        let (tx, rx) = oneshot::channel();
        self.send(Command::Committed(topic.to_owned(), partition, tx));
        rx.await.ok().flatten()
    }

    /// The next records: at least one, at most `max.poll.records`, of whatever is already
    /// fetched. Rebalance and end-of-partition events are skipped as by `recv`.
    pub async fn recv_batch(&mut self) -> Result<Vec<ConsumerRecord>, ConsumeError> {
        let mut out = vec![self.recv().await?];
        while out.len() < self.max_poll_records {
            match self.next_read() {
                Some(Ok(r)) => out.push(r),
                Some(Err(e)) => {
                    // The records before it are returned now, the error next time.
                    self.deferred = Some(e);
                    break;
                }
                None => break,
            }
        }
        Ok(out)
    }

    /// The next record. End-of-partition markers are skipped.
    pub async fn recv(&mut self) -> Result<ConsumerRecord, ConsumeError> {
        loop {
            match self.next_event().await? {
                ConsumerEvent::Record(r) => return Ok(r),
                // Nobody is watching rebalances: let them go on.
                ConsumerEvent::Revoking(_) => self.ack_revocation(),
                _ => {}
            }
        }
    }

    /// The next record of the fetched batches being read, decoding as it goes. A corrupt record
    /// stops its partition, in the driver too.
    fn next_read(&mut self) -> Option<Result<ConsumerRecord, ConsumeError>> {
        let reading = self.reading.as_mut()?;
        match reading.records.next() {
            Some(Ok(r)) => {
                let record = ConsumerRecord {
                    topic: reading.topic.clone(),
                    partition: reading.partition,
                    offset: r.offset,
                    timestamp: r.timestamp,
                    key: r.key,
                    value: r.value,
                    headers: r.headers,
                    leader_epoch: reading.leader_epoch,
                };
                self.progress.insert(
                    (record.topic.clone(), record.partition),
                    (record.offset + 1, reading.leader_epoch.unwrap_or(-1)),
                );
                Some(Ok(record))
            }
            Some(Err(error)) => {
                let Reading {
                    topic, partition, ..
                } = self.reading.take().expect("read above");
                if let FetchError::Corrupt { offset, .. } = &error {
                    self.send(Command::Corrupt(topic.to_string(), partition, *offset));
                }
                Some(Err(ConsumeError::Partition {
                    topic,
                    partition,
                    error,
                }))
            }
            None => {
                self.reading = None;
                None
            }
        }
    }

    /// The next record or event. Cancel-safe: dropping the future loses nothing.
    pub async fn next_event(&mut self) -> Result<ConsumerEvent, ConsumeError> {
        loop {
            if let Some(e) = self.deferred.take() {
                return Err(e);
            }
            if let Some(r) = self.next_read() {
                return r.map(ConsumerEvent::Record);
            }
            // The reply is kept on the handle, not in this future: a caller that drops the
            // future (a `select`) loses nothing, and the next call takes up the same reply.
            if self.asked.is_none() {
                let (tx, rx) = oneshot::channel();
                let progress = self.take_progress();
                self.commands
                    .unbounded_send(Command::Next(progress, tx))
                    .map_err(|_| ConsumeError::Closed)?;
                self.asked = Some(rx);
            }
            let reply = self.asked.as_mut().expect("set above").await;
            self.asked = None;
            match reply.map_err(|_| ConsumeError::Closed)? {
                FetchEvent::Records {
                    topic,
                    partition,
                    records,
                    leader_epoch,
                    ..
                } => {
                    self.reading = Some(Reading {
                        topic: topic.into(),
                        partition,
                        leader_epoch: (leader_epoch >= 0).then_some(leader_epoch),
                        records,
                    });
                }
                FetchEvent::EndOfPartition {
                    topic,
                    partition,
                    offset,
                } => {
                    return Ok(ConsumerEvent::EndOfPartition {
                        topic: topic.into(),
                        partition,
                        offset,
                    })
                }
                FetchEvent::Error {
                    topic,
                    partition,
                    error,
                } => {
                    return Err(ConsumeError::Partition {
                        topic: topic.into(),
                        partition,
                        error,
                    })
                }
                FetchEvent::Assigned(tps) => return Ok(ConsumerEvent::Assigned(tps)),
                FetchEvent::Revoking(tps) => return Ok(ConsumerEvent::Revoking(tps)),
                FetchEvent::Lost(tps) => return Ok(ConsumerEvent::Lost(tps)),
                FetchEvent::GroupFailed(e) => return Err(ConsumeError::Group(e)),
                // Commits and leaving are answered to their callers by the driver.
                _ => {}
            }
        }
    }

    /// The records as a `Stream` (each item is what `recv` would return).
    pub fn stream(&mut self) -> impl Stream<Item = Result<ConsumerRecord, ConsumeError>> + '_ {
        futures_util::stream::unfold(self, |c| async move {
            let r = c.recv().await;
            let stop = matches!(r, Err(ConsumeError::Closed));
            (!stop).then_some((r, c))
        })
    }
}

impl Reading {
    fn is_of(&self, topic: &str, partition: i32) -> bool {
        &*self.topic == topic && self.partition == partition
    }
}

fn event_is_of(e: &FetchEvent, topic: &str, partition: i32) -> bool {
    match e {
        FetchEvent::Records {
            topic: t,
            partition: p,
            ..
        }
        | FetchEvent::EndOfPartition {
            topic: t,
            partition: p,
            ..
        }
        | FetchEvent::Error {
            topic: t,
            partition: p,
            ..
        } => t == topic && *p == partition,
        _ => false,
    }
}

struct ConsumerSession {
    core: Fetcher,
    /// Fetched and not yet asked for.
    ready: VecDeque<FetchEvent>,
    waiting: Option<oneshot::Sender<FetchEvent>>,
    commits: BTreeMap<CommitId, oneshot::Sender<Result<(), CommitError>>>,
    closers: Vec<oneshot::Sender<()>>,
    finished: bool,
}

impl ConsumerSession {
    /// Drops what is held of a partition and gives its bytes back to the prefetch budget.
    fn drop_ready(&mut self, topic: &str, partition: i32, now: Instant) {
        let mut dropped = 0;
        self.ready.retain(|e| match e {
            FetchEvent::Records { bytes, .. } if event_is_of(e, topic, partition) => {
                dropped += bytes;
                false
            }
            e => !event_is_of(e, topic, partition),
        });
        self.core.release(dropped, now);
    }

    fn consumed(&mut self, progress: Progress) {
        for (t, p, o, e) in progress {
            self.core.consumed(&t, p, o, e);
        }
    }
}

impl ConsumerSession {
    fn hand_over(&mut self, now: Instant) {
        while let Some(w) = self.waiting.take() {
            let Some(ev) = self.ready.pop_front() else {
                self.waiting = Some(w);
                return;
            };
            let bytes = match &ev {
                FetchEvent::Records { bytes, .. } => *bytes,
                _ => 0,
            };
            match w.send(ev) {
                // The application holds it now: the prefetch budget has room again.
                Ok(()) if bytes > 0 => self.core.release(bytes, now),
                Ok(()) => {}
                // The caller gave up waiting: keep the data for the next ask.
                Err(ev) => self.ready.push_front(ev),
            }
        }
    }
}

impl Session for ConsumerSession {
    type Command = Command;
    type Core = Fetcher;

    fn with_core<T>(&mut self, f: impl FnOnce(&mut Fetcher) -> T) -> T {
        f(&mut self.core)
    }

    fn command(&mut self, cmd: Command, now: Instant) {
        match cmd {
            Command::Assign(ps, start) => self.core.assign(ps, start, now),
            Command::Seek(t, p, start) => {
                self.drop_ready(&t, p, now);
                self.core.seek(&t, p, start, now);
            }
            Command::Corrupt(t, p, offset) => {
                self.core.stop_corrupt(&t, p, offset);
                self.drop_ready(&t, p, now);
            }
            Command::Pause(t, p) => self.core.pause(&t, p),
            Command::Resume(t, p) => self.core.resume(&t, p, now),
            Command::Position(t, p, reply) => {
                let buffered = self.ready.iter().find_map(|e| match e {
                    FetchEvent::Records {
                        topic,
                        partition,
                        records,
                        ..
                    } if *topic == t && *partition == p => Some(records.position()),
                    _ => None,
                });
                let _ = reply.send(buffered.or_else(|| self.core.position(&t, p)));
            }
            Command::Next(progress, reply) => {
                self.consumed(progress);
                self.core.polled(now);
                self.waiting = Some(reply);
                self.hand_over(now);
            }
            Command::Subscribe(topics) => self.core.subscribe(topics, now),
            Command::Committed(t, p, reply) => {
                let _ = reply.send(self.core.committed(&t, p));
            }
            Command::Commit(progress, reply) => {
                self.consumed(progress);
                match self.core.commit(now) {
                    Some(id) => {
                        self.commits.insert(id, reply);
                    }
                    None => {
                        let _ = reply.send(Err(CommitError::NotMember));
                    }
                }
            }
            Command::AckRevocation(progress) => {
                self.consumed(progress);
                self.core.ack_revocation(now);
            }
            Command::Close(progress, reply) => {
                self.consumed(progress);
                self.closers.push(reply);
                if self.core.is_group_member() {
                    self.core.leave(now);
                } else {
                    self.finished = true;
                }
            }
        }
    }

    fn event(&mut self, ev: FetchEvent, now: Instant) {
        match ev {
            FetchEvent::Committed(id, result) => {
                if let Some(reply) = self.commits.remove(&id) {
                    let _ = reply.send(result);
                }
            }
            FetchEvent::Left => {
                for c in self.closers.drain(..) {
                    let _ = c.send(());
                }
                self.finished = true;
            }
            ev => {
                self.ready.push_back(ev);
                self.hand_over(now);
            }
        }
    }

    fn detached(&mut self, now: Instant) {
        // Dropped without close: leave the group if in one, without waiting for the answer.
        if self.core.is_group_member() {
            self.core.leave(now);
        }
        self.finished = true;
    }

    fn finished(&self) -> bool {
        self.finished
    }
}

/// Runs `f` for at most `limit` (a runtime-free timer: a thread sleeps, then wakes the task).
async fn with_deadline<F: std::future::Future>(
    f: F,
    limit: std::time::Duration,
) -> Option<F::Output> {
    let (tx, rx) = oneshot::channel::<()>();
    std::thread::spawn(move || {
        std::thread::sleep(limit);
        let _ = tx.send(());
    });
    match futures_util::future::select(std::pin::pin!(f), rx).await {
        futures_util::future::Either::Left((out, _)) => Some(out),
        futures_util::future::Either::Right(_) => None,
    }
}
