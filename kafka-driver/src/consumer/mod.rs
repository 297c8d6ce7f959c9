//! The consumer handle (assign and group modes) and its driver session: the user pulls records; the driver
//! hands over a partition's fetched batches undecoded, and the handle decodes them one by one
//! on the caller's thread.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::marker::PhantomData;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use futures_channel::{mpsc, oneshot};
use futures_util::stream::Stream;
use kafka_core::admin::{AdminError, OffsetSpec};
use kafka_core::config::{ConfigError, ConsumerConfig};
use kafka_core::fetcher::{
    Consumer as CoreConsumer, FetchError, FetchEvent, FetchedRecords, StartFrom, SubscribeError,
};
use kafka_core::group::offsets::CommitError;
use kafka_core::proto::record::Headers;
use kafka_core::proto::ErrorCode;

use crate::driver;
use crate::runtime::Runtime;

mod offsets;
mod receive;
mod session;

use session::ConsumerSession;

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

impl ConsumerRecord {
    /// The offset to commit once this record is processed (the next one, with this record's
    /// leader epoch), as `Producer::send_offsets_to_transaction` takes it.
    pub fn next_offset(&self) -> kafka_core::producer::TxnOffset {
        kafka_core::producer::TxnOffset {
            offset: self.offset.saturating_add(1),
            leader_epoch: self.leader_epoch.unwrap_or(-1),
        }
    }
}

/// What the application has consumed since the driver last heard: (topic, partition, next
/// offset, leader epoch of the record before it, the partition's revocation count when the
/// records were handed over: which tenure they belong to).
type Progress = Vec<(String, i32, i64, i32, u64)>;
/// Records the application took, by topic.
type Taken = Vec<(Arc<str>, u64)>;

/// A rebalance listener (see [`Consumer::on_rebalance`]).
type RebalanceListener = Box<dyn FnMut(&ConsumerEvent) + Send>;

/// Committed offsets looked up, per partition (`None`: nothing committed).
type Committed = Result<Vec<((String, i32), Option<i64>)>, CommitError>;
type Found = Result<kafka_core::fetcher::FoundOffsets, AdminError>;

/// An offset and its record's timestamp, as `offsets_for_times` finds them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OffsetAndTimestamp {
    /// The first offset whose record's timestamp is at or after the time asked.
    pub offset: i64,
    /// That record's timestamp (epoch ms).
    pub timestamp: i64,
}

/// An event the session hands over, with the number of times its partition was revoked or
/// lost by then (records of a partition revoked since are not returned).
pub(crate) struct Handed {
    event: FetchEvent,
    revocations: u64,
    /// Seeks of the records' partition the session had done when it handed them over.
    seeks: u64,
}

/// What the handle shares with its session without a round trip: evidence that the
/// application polls, and the partitions revoked or lost.
#[derive(Default)]
pub(crate) struct HandleShared {
    /// When `next_event`, `recv` or `recv_batch` was last called, in the runtime's
    /// nanoseconds (0: never). A time, not a count: a call served from the handle's buffer
    /// sends the session nothing, so the session notices it only when it next wakes, and
    /// `max.poll.interval.ms` counts from the call, not from then.
    last_call: AtomicU64,
    /// The handle waits for the session's answer: the application is polling.
    waiting: AtomicBool,
    /// Revocations and losses so far, over all partitions (the handle looks at `revoked`
    /// only when it moved).
    epoch: AtomicU64,
    /// Per partition, how often it was revoked or lost.
    revoked: Mutex<BTreeMap<(String, i32), u64>>,
}

impl HandleShared {
    fn last_call(&self) -> u64 {
        self.last_call.load(Ordering::Relaxed)
    }

    fn is_waiting(&self) -> bool {
        self.waiting.load(Ordering::Relaxed)
    }

    fn revoked_map(&self) -> std::sync::MutexGuard<'_, BTreeMap<(String, i32), u64>> {
        self.revoked.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The session drops these partitions: what the handle is reading of them goes too.
    fn revoked(&self, tps: &[(String, i32)]) {
        let mut map = self.revoked_map();
        for tp in tps {
            *map.entry(tp.clone()).or_default() += 1;
        }
        self.epoch.fetch_add(1, Ordering::Release);
    }

    fn revocations(&self, topic: &str, partition: i32) -> u64 {
        self.revoked_map()
            .get(&(topic.to_owned(), partition))
            .copied()
            .unwrap_or(0)
    }
}

/// Marks the handle as waiting for its session while it lives.
struct Waiting<'a>(&'a HandleShared);

impl<'a> Waiting<'a> {
    fn new(shared: &'a HandleShared) -> Self {
        shared.waiting.store(true, Ordering::Relaxed);
        Waiting(shared)
    }
}

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        self.0.waiting.store(false, Ordering::Relaxed);
    }
}

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
    /// The partition's position reached its end: the high watermark, or for a read_committed
    /// reader the last stable offset (which lags it while a transaction is open or its
    /// markers are on their way). Reported once each time the end is reached.
    EndOfPartition {
        /// The topic.
        topic: Arc<str>,
        /// The partition.
        partition: i32,
        /// The position: the end reached.
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
    /// A subscribed topic has no metadata (it does not exist, or is not authorised): the
    /// group assigned it nothing, and rebalances when it appears. Reported by the group's
    /// leader.
    #[error("subscribed topic `{0}` does not exist (or is not authorised); the group assigns it when it appears")]
    UnknownTopic(String),
    /// No broker answered for `default.api.timeout.ms`; the consumer keeps trying.
    #[error("no broker answered within default.api.timeout.ms{}; check bootstrap.servers and that the cluster is up", last.as_deref().map(|l| format!(" (last problem: {l})")).unwrap_or_default())]
    Unreachable {
        /// The last connection problem seen, if any.
        last: Option<String>,
    },
    /// A connection could not authenticate (SASL or TLS). The consumer keeps trying, with
    /// backoff, so a fixed credential or certificate is picked up.
    #[error(transparent)]
    Authentication(kafka_core::net::AuthError),
    /// The consumer's driver has stopped.
    #[error("the consumer is closed")]
    Closed,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    Subscribed,
    Assigned,
}

pub(crate) enum Command {
    Assign(Vec<(String, i32)>, StartFrom),
    Seek(String, i32, StartFrom),
    Pause(String, i32),
    Resume(String, i32),
    Position(String, i32, oneshot::Sender<Option<i64>>),
    GroupMetadata(oneshot::Sender<Option<kafka_core::producer::GroupMetadata>>),
    Committed(Vec<(String, i32)>, oneshot::Sender<Committed>),
    /// Looks up partitions' offsets (log start, end, or by time).
    Offsets(Vec<((String, i32), OffsetSpec)>, oneshot::Sender<Found>),
    /// The application's progress, the records it took of each topic since the last ask
    /// (for the metrics), and where the next event goes.
    Next(Progress, Taken, oneshot::Sender<Handed>),
    /// A metrics snapshot, after counting the records taken since the last report.
    Metrics(Taken, oneshot::Sender<kafka_core::metrics::MetricsSnapshot>),
    Subscribe(Vec<String>),
    SubscribePattern(String),
    Commit(Progress, oneshot::Sender<Result<(), CommitError>>),
    /// Commits these (topic, partition, next offset), not what was consumed.
    CommitOffsets(
        Vec<(String, i32, i64)>,
        oneshot::Sender<Result<(), CommitError>>,
    ),
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
    /// How often the partition had been revoked or lost when these were handed over.
    revocations: u64,
    /// Records given out of these so far (for `records-consumed-rate`).
    taken: u64,
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
    progress: BTreeMap<(Arc<str>, i32), (i64, i32, u64)>,
    /// Records given out by topic since the driver last heard, for the metrics.
    taken: Taken,
    /// The driver's answer to the last request for events, until it is taken.
    asked: Option<oneshot::Receiver<Handed>>,
    /// Shared with the session.
    shared: Arc<HandleShared>,
    /// `shared.epoch` when the handle last looked.
    seen_epoch: u64,
    /// `enable.auto.commit`: the handle acknowledges revocations itself.
    auto_commit: bool,
    /// Whether `group.id` is set.
    has_group: bool,
    /// How this consumer picks its partitions, once it has (subscribe and assign exclude each
    /// other, as in the Java client).
    mode: Option<Mode>,
    /// The partitions the group gave this member, as the events handed out so far say.
    assignment: BTreeSet<(Arc<str>, i32)>,
    /// Called with every rebalance event the handle takes.
    /// In a mutex only so that the consumer is `Sync`: a `&Consumer` held across an await
    /// (`group_metadata`, `committed`, `position`) keeps the future `Send`, for `tokio::spawn`.
    /// Only `&mut self` calls it, through `get_mut`: never locked.
    listener: Option<std::sync::Mutex<RebalanceListener>>,
    /// Seeks made per partition: records handed over before the session did as many were
    /// fetched from the old position, and are dropped.
    seeks: BTreeMap<(Arc<str>, i32), u64>,
    _runtime: PhantomData<fn() -> R>,
}

impl<R> std::fmt::Debug for Consumer<R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Consumer").finish_non_exhaustive()
    }
}

impl<R: Runtime> Consumer<R> {
    /// Starts a consumer's driver.
    pub fn new(mut config: ConsumerConfig) -> Self {
        if !config.is_explicit("random.seed") {
            // The core's choices are reproducible from the seed; a real consumer needs its
            // own (its member id under the consumer protocol comes from it).
            config.random_seed = R::seed();
        }
        let tokens = config.security.token_provider.clone();
        let (tx, rx) = mpsc::unbounded();
        let max_poll_records = config.max_poll_records.max(1) as usize;
        let has_group = config.group_id.is_some();
        let auto_commit = config.enable_auto_commit && has_group;
        let shared = Arc::new(HandleShared::default());
        let session = ConsumerSession {
            core: CoreConsumer::new(config),
            ready: VecDeque::new(),
            waiting: None,
            commits: BTreeMap::new(),
            lookups: BTreeMap::new(),
            offset_lookups: BTreeMap::new(),
            closers: Vec::new(),
            finished: false,
            shared: shared.clone(),
            seen_call: 0,
            seeks: BTreeMap::new(),
            revoking: BTreeSet::new(),
        };
        R::spawn(driver::run::<R, _>(session, rx, tokens));
        Consumer {
            commands: tx,
            reading: None,
            deferred: None,
            max_poll_records,
            progress: BTreeMap::new(),
            taken: Vec::new(),
            asked: None,
            shared,
            seen_epoch: 0,
            auto_commit,
            has_group,
            mode: None,
            assignment: BTreeSet::new(),
            listener: None,
            seeks: BTreeMap::new(),
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

    /// Adds partitions to read, each starting at `start`. With a `group.id`, [`commit`]
    /// stores their offsets in that group (Kafka accepts such commits only while the group has
    /// no members). Refused on a consumer that subscribed.
    ///
    /// [`commit`]: Consumer::commit
    pub fn assign<T: Into<String>>(
        &mut self,
        partitions: impl IntoIterator<Item = (T, i32)>,
        start: StartFrom,
    ) -> Result<(), SubscribeError> {
        if self.mode == Some(Mode::Subscribed) {
            return Err(SubscribeError::Subscribed);
        }
        let ps: Vec<(String, i32)> = partitions.into_iter().map(|(t, p)| (t.into(), p)).collect();
        if !ps.is_empty() {
            self.mode = Some(Mode::Assigned);
        }
        self.send(Command::Assign(ps, start));
        Ok(())
    }

    /// Joins the consumer group (`group.id` must be set) subscribed to `topics`.
    pub fn subscribe<T: Into<String>>(
        &mut self,
        topics: impl IntoIterator<Item = T>,
    ) -> Result<(), SubscribeError> {
        let topics: Vec<String> = topics.into_iter().map(Into::into).collect();
        if !self.has_group {
            return Err(SubscribeError::NoGroupId);
        }
        if topics.is_empty() {
            return Err(SubscribeError::NoTopics);
        }
        if self.mode == Some(Mode::Assigned) {
            return Err(SubscribeError::Assigned);
        }
        self.mode = Some(Mode::Subscribed);
        self.send(Command::Subscribe(topics));
        Ok(())
    }

    /// Joins the consumer group (`group.id` must be set) subscribed to every topic whose whole
    /// name matches the regular expression `pattern`, including topics created later, as
    /// Java's `subscribe(Pattern)`. Under `group.protocol=consumer` the broker evaluates it
    /// (RE2/J syntax, Kafka 4.0+); under the classic protocol this consumer matches it against
    /// the list of topics, refreshed every `metadata.max.age.ms`. Internal topics never match.
    pub fn subscribe_pattern(&mut self, pattern: &str) -> Result<(), SubscribeError> {
        if !self.has_group {
            return Err(SubscribeError::NoGroupId);
        }
        if self.mode == Some(Mode::Assigned) {
            return Err(SubscribeError::Assigned);
        }
        // Checked here, so that a bad pattern is the caller's error, not the driver's.
        kafka_core::fetcher::check_pattern(pattern)?;
        self.mode = Some(Mode::Subscribed);
        self.send(Command::SubscribePattern(pattern.to_owned()));
        Ok(())
    }

    fn take_progress(&mut self) -> Progress {
        std::mem::take(&mut self.progress)
            .into_iter()
            .map(|((t, p), (o, e, tenure))| (t.to_string(), p, o, e, tenure))
            .collect()
    }

    /// Commits these offsets (the next record to read per partition), as Java's
    /// `commitSync(offsets)`, and waits for the outcome. What was consumed is not committed
    /// by it.
    pub async fn commit_offsets<T: Into<String>>(
        &mut self,
        offsets: impl IntoIterator<Item = ((T, i32), i64)>,
    ) -> Result<(), CommitError> {
        self.commit_offsets_async(offsets).await
    }

    /// [`Consumer::commit_offsets`] without waiting: the commit is on its way when this
    /// returns, and the future (which borrows nothing) gives its outcome.
    pub fn commit_offsets_async<T: Into<String>>(
        &mut self,
        offsets: impl IntoIterator<Item = ((T, i32), i64)>,
    ) -> impl std::future::Future<Output = Result<(), CommitError>> + Send + 'static {
        let (tx, rx) = oneshot::channel();
        let offsets = offsets
            .into_iter()
            .map(|((t, p), o)| (t.into(), p, o))
            .collect();
        self.send(Command::CommitOffsets(offsets, tx));
        async move { rx.await.unwrap_or(Err(CommitError::Closed)) }
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
        async move { rx.await.unwrap_or(Err(CommitError::Closed)) }
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
        let _ = with_deadline::<R, _>(rx, timeout).await;
    }

    /// Moves a partition's position; records of it not yet returned are dropped. Commits
    /// carry the new position from then on (for `Earliest` and `Latest`, nothing until
    /// records of it are read again), as Java's do.
    pub fn seek(&mut self, topic: &str, partition: i32, start: StartFrom) {
        if self
            .reading
            .as_ref()
            .is_some_and(|r| r.is_of(topic, partition))
        {
            self.reading = None;
        }
        let tp = (Arc::from(topic), partition);
        self.progress.remove(&tp);
        *self.seeks.entry(tp).or_default() += 1;
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

    /// Every metric now, with the Java consumer's names (`consumer-fetch-manager-metrics`,
    /// `consumer-coordinator-metrics`, `consumer-metrics`, `consumer-node-metrics`). Records
    /// count as consumed once the application has read them and asks for more.
    pub async fn metrics(&mut self) -> kafka_core::metrics::MetricsSnapshot {
        // What the application has read so far counts, up to this instant.
        if let Some(r) = self.reading.as_mut().filter(|r| r.taken > 0) {
            self.taken
                .push((r.topic.clone(), std::mem::take(&mut r.taken)));
        }
        let (tx, rx) = oneshot::channel();
        let taken = std::mem::take(&mut self.taken);
        self.send(Command::Metrics(taken, tx));
        rx.await.unwrap_or_default()
    }

    /// The partitions the consumer group gave this member, as far as the events handed out so
    /// far tell (`recv` and `recv_batch` take rebalance events in their stride, and they count
    /// too). Empty in assign mode.
    pub fn assignment(&self) -> Vec<(Arc<str>, i32)> {
        self.assignment.iter().cloned().collect()
    }

    /// The records as a `Stream` borrowing the consumer for as long as it lives (each item is
    /// what `recv` would return). The consumer is itself a `Stream` too, which leaves it free
    /// between items: `while let Some(r) = consumer.next().await { consumer.commit().await?; }`.
    pub fn stream(&mut self) -> impl Stream<Item = Result<ConsumerRecord, ConsumeError>> + '_ {
        futures_util::stream::unfold(self, |c| async move {
            let r = c.recv().await;
            let stop = matches!(r, Err(ConsumeError::Closed));
            (!stop).then_some((r, c))
        })
    }
}

/// The consumer is a `Stream` of records (each item is what `recv` would return; it ends when
/// the consumer is closed). `StreamExt::next` borrows it only while it waits, so `commit`,
/// `seek`, `pause` and the rest stay usable between items. Waiting is cancel-safe (the
/// pending answer is kept on the consumer, as for `recv`), which is what lets each poll make
/// a fresh `recv` future.
impl<R: Runtime> Stream for Consumer<R> {
    type Item = Result<ConsumerRecord, ConsumeError>;

    fn poll_next(
        self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Self::Item>> {
        use std::future::Future;
        let this = self.get_mut();
        let fut = std::pin::pin!(this.recv());
        match fut.poll(cx) {
            std::task::Poll::Ready(Err(ConsumeError::Closed)) => std::task::Poll::Ready(None),
            std::task::Poll::Ready(r) => std::task::Poll::Ready(Some(r)),
            std::task::Poll::Pending => std::task::Poll::Pending,
        }
    }
}

impl Reading {
    fn is_of(&self, topic: &str, partition: i32) -> bool {
        &*self.topic == topic && self.partition == partition
    }
}

/// Runs `f` for at most `limit`, on the runtime's timer.
async fn with_deadline<R: Runtime, F: std::future::Future>(
    f: F,
    limit: std::time::Duration,
) -> Option<F::Output> {
    let timer = R::timer(R::now() + limit);
    match futures_util::future::select(std::pin::pin!(f), timer).await {
        futures_util::future::Either::Left((out, _)) => Some(out),
        futures_util::future::Either::Right(_) => None,
    }
}
