//! The consumer's core, the fetcher: reads partitions, assigned by the application or by its
//! consumer group, from a chosen or committed position (resolved with
//! ListOffsets), fetching from each partition's leader, and hands records to the user as
//! zero-copy slices of the response.
//!
//! - One Fetch at a time per broker connection, with `fetch.min.bytes`, `fetch.max.wait.ms`,
//!   `fetch.max.bytes` and `max.partition.fetch.bytes`. With `connections.per.broker` above
//!   1, a broker's partitions are split over that many connections (partition `p` on lane
//!   `p % n`), each with its own fetch in flight and fetch session.
//! - Batches are crc-checked, control batches skipped, and a truncated last batch ends the
//!   partition's data. Records are decoded only as the application reads them
//!   ([`FetchedRecords`]), one batch at a time, skipping those before the position (a fetch
//!   returns whole batches): prefetched data stays compressed.
//! - The high watermark comes from Fetch (Tansu's ListOffsets "latest" is not the true end),
//!   and reaching it is reported once as [`FetchEvent::EndOfPartition`].
//! - OFFSET_OUT_OF_RANGE applies `auto.offset.reset`; leadership errors refresh metadata.
//!
//! - One prefetch budget (`queued.max.messages.kbytes`) across all partitions and brokers:
//!   each Fetch asks for at most the room left (and at most its connection's share of the
//!   budget, so that no broker starves), and none goes out while it is spent. The
//!   driver gives bytes back with [`Consumer::release`] as the application takes records.
//!
//! - `isolation.level=read_committed` skips the batches of aborted transactions (from the
//!   response's aborted-transaction list up to each ABORT marker) and every control batch.
//!
//! - KIP-227 fetch sessions, one per connection, where the broker supports them (Fetch v7+):
//!   after a full fetch, each Fetch names only the partitions whose position moved, and those
//!   to forget.
//!
//! - KIP-320: every position remembers the leader epoch of the record before it. When a
//!   partition's leader epoch moves on (or a committed offset with an epoch is taken up), the
//!   position is checked with OffsetForLeaderEpoch before fetching on: a log truncated below it
//!   moves it back to where the logs diverge (or stops the partition with
//!   `auto.offset.reset=none`). Fetches carry the current leader epoch, so a stale leader
//!   answers FENCED_LEADER_EPOCH and metadata is refreshed.

use std::collections::{BTreeMap, BTreeSet, VecDeque};

use kafka_proto::api::ApiKey;
use kafka_proto::api::ResponseBody;
use kafka_proto::messages::fetch_request::{
    FetchPartition, FetchRequest, FetchTopic, ForgottenTopic,
};
use kafka_proto::messages::list_offsets_response::ListOffsetsResponse;
use kafka_proto::{DecodeError, ErrorCode};

use crate::backoff::Backoff;
use crate::config::ConsumerConfig;
use crate::group::offsets::{CommitError, CommitId, LookupId};
use crate::metadata::Metadata;
use crate::metrics::consumer::ConsumerMetrics;
use crate::metrics::MetricsSnapshot;
use crate::net::{lane, Expect, NetConfig, NetEvent, Network, NodeId, Purpose};
use crate::rng::Rng;
use crate::time::Instant;
use crate::topic::TopicPartition;

pub use group::{check_pattern, SubscribeError};
pub use lookup::{FoundOffsets, OffsetsId};
pub use records::FetchedRecords;

mod group;
mod health;
mod lookup;
mod records;
mod requests;
mod response;
mod session;
mod timers;
mod validate;

/// Where to start reading a partition.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum StartFrom {
    /// The oldest retained offset.
    Earliest,
    /// The end of the log.
    Latest,
    /// This offset.
    Offset(i64),
    /// The consumer group's committed offset (`group.id`), or where `auto.offset.reset`
    /// says when there is none: where a Java consumer starts a partition it assigns itself.
    Committed,
}

/// Why a partition stopped or skipped data.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum FetchError {
    /// The position is outside the log and `auto.offset.reset=none`.
    #[error("offset {0} is out of range and auto.offset.reset is none; seek to a valid offset")]
    OffsetOutOfRange(i64),
    /// The log was truncated below the position (KIP-320: an unclean leader change) and
    /// `auto.offset.reset=none`. `divergent` is the first offset known to differ, when the
    /// broker knows it; seek there (or elsewhere) to go on.
    #[error("the log was truncated below offset {offset} (first divergent offset: {divergent:?}) and auto.offset.reset is none; seek to go on")]
    LogTruncation {
        /// The position the truncation was found at.
        offset: i64,
        /// The end offset of the position's leader epoch on the new leader.
        divergent: Option<i64>,
    },
    /// The broker returned an error that retrying will not fix.
    #[error("the broker refused the fetch: {0}")]
    Broker(ErrorCode),
    /// No leader was known for the partition for `default.api.timeout.ms`: the topic or the
    /// partition may not exist, or its brokers are down. Reported once per timeout; the
    /// consumer keeps trying.
    #[error("no leader known for the partition within default.api.timeout.ms: does the topic (and partition) exist?{}", last.as_deref().map(|l| format!(" (last problem: {l})")).unwrap_or_default())]
    NotAvailable {
        /// The last connection problem seen, if any.
        last: Option<String>,
    },
    /// A batch was corrupt (crc, lengths, decompression); the partition stopped at it.
    #[error("corrupt data at offset {offset}: {error}")]
    Corrupt {
        /// The position where it was found.
        offset: i64,
        /// What was wrong.
        error: DecodeError,
    },
}

/// What the fetcher tells the user.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum FetchEvent {
    /// Records, in offset order, for one partition.
    Records {
        /// The topic.
        topic: String,
        /// The partition.
        partition: i32,
        /// The records, decoded as they are read (zero-copy slices of the fetched data, or of
        /// one decompressed batch at a time).
        records: FetchedRecords,
        /// The leader epoch the records were written in (-1 if unknown): commits carry it so
        /// that a later reader can detect truncation (KIP-320).
        leader_epoch: i32,
        /// The partition's high watermark at the time of the fetch.
        high_watermark: i64,
        /// What these records count against `queued.max.messages.kbytes`: the driver gives
        /// it back with [`Consumer::release`] once the application has taken them.
        bytes: usize,
    },
    /// The position reached the partition's end: the high watermark, or under read_committed
    /// the last stable offset (which lags it while a transaction is open or its markers are on
    /// their way).
    EndOfPartition {
        /// The topic.
        topic: String,
        /// The partition.
        partition: i32,
        /// The position: the end reached.
        offset: i64,
    },
    /// Group: these partitions are ours now; they are read from their committed offsets (or
    /// from `auto.offset.reset` where none is committed).
    Assigned(Vec<TopicPartition>),
    /// Group: these partitions are being taken away, and fetching them stopped. Commit what
    /// was consumed, then call [`Consumer::ack_revocation`] (done for you with
    /// `enable.auto.commit`, after its commit).
    Revoking(Vec<TopicPartition>),
    /// Group: these partitions were lost without a clean handover; nothing of them may be
    /// committed.
    Lost(Vec<TopicPartition>),
    /// A commit asked for with [`Consumer::commit`] finished.
    Committed(CommitId, Result<(), CommitError>),
    /// A lookup asked for with [`Consumer::lookup_committed`] finished: each partition's
    /// committed offset (`None`: nothing committed).
    CommittedOffsets(
        LookupId,
        Result<Vec<(TopicPartition, Option<i64>)>, CommitError>,
    ),
    /// A lookup asked for with [`Consumer::lookup_offsets`] finished: per partition, the
    /// offset and its record's timestamp (`None`: no record at or after the time asked).
    Offsets(OffsetsId, Result<FoundOffsets, crate::lookup::AdminError>),
    /// The group membership stopped for good (for example FENCED_INSTANCE_ID).
    GroupFailed(ErrorCode),
    /// As the group's leader: a subscribed topic has no metadata (it does not exist, or is
    /// not authorised), so the assignment left it out. The group rebalances when it appears.
    UnknownTopic(String),
    /// The consumer left its group.
    Left,
    /// No broker answered for `default.api.timeout.ms` while the consumer had partitions to
    /// read or a group to join: `last` says why. Reported once per timeout; the consumer keeps
    /// trying.
    Unreachable {
        /// The last connection problem seen, if any.
        last: Option<String>,
    },
    /// A connection could not authenticate (SASL or TLS): Java's consumer throws this from
    /// `poll`. The consumer keeps trying, with backoff, in case the credentials are fixed.
    AuthenticationFailed(crate::net::AuthError),
    /// A partition error.
    Error {
        /// The topic.
        topic: String,
        /// The partition.
        partition: i32,
        /// What went wrong.
        error: FetchError,
    },
}

/// A broker and one of its `connections.per.broker` (lane 0 is the data connection).
type Lane = (NodeId, usize);

/// What the fetcher asks of its driver.
pub type Output = crate::net::Output<FetchEvent>;

/// Request tags, in a module of their own: `Machine`'s hidden `Tag` names this type, so it
/// is public there, and out of reach outside the crate.
mod tag {
    #[allow(unused_imports)]
    use super::*;

    #[derive(Debug, Clone, PartialEq, Eq)]
    pub enum Tag {
        Metadata,
        ListOffsets(Vec<Req>),
        /// A Fetch of these partitions, from these offsets; `true` if incremental (KIP-227), when
        /// the partitions absent from the response simply have nothing new.
        Fetch(Lane, Vec<(Req, i64)>, bool),
        /// A membership request (FindCoordinator, JoinGroup, SyncGroup, Heartbeat, LeaveGroup).
        Group,
        /// OffsetFetch (false) or OffsetCommit (true).
        Offsets(bool),
        /// OffsetForLeaderEpoch: checking positions after a leader change (KIP-320).
        Validate(Vec<Req>),
        /// ListOffsets for an application's lookup.
        Lookup(OffsetsId, Vec<TopicPartition>),
    }
}
use tag::Tag;

/// A partition as a request asked about it: with its generation then, so that an answer that
/// comes after a seek, a reassignment or a reset (which start a new generation) is not taken
/// for the partition's new position.
type Req = (TopicPartition, u64);

#[derive(Debug, Clone)]
struct Part {
    /// A new one at each assignment, seek and reset.
    gen: u64,
    position: Option<i64>,
    /// Where a missing position comes from.
    start: StartFrom,
    high_watermark: i64,
    /// The generation of the request in flight for it, if any.
    busy: Option<u64>,
    retry_at: Option<Instant>,
    failures: u32,
    paused: bool,
    stopped: bool,
    end_reported: bool,
    /// Assigned by the group: the position comes from the committed offset, once fetched.
    awaiting_committed: bool,
    /// The position came from ListOffsets "latest": a batch it falls inside of was already
    /// whole in the log then, so the true end was past it.
    from_latest: bool,
    /// The leader epoch of the record before the position (-1 if unknown).
    epoch: i32,
    /// The partition's leader epoch the position was last checked against (-1 if unknown).
    leader_epoch: i32,
    /// The position must be checked with OffsetForLeaderEpoch before fetching from it.
    validate: bool,
    /// Since when no leader is known for it (the topic or partition may not exist).
    unknown_since: Option<Instant>,
    /// KIP-392: the replica its leader told it to read from (`client.rack`), until when.
    read_replica: Option<(NodeId, Instant)>,
}

/// The consumer's state machine: fetching, and (with `group.id`) group membership and
/// committed offsets. (Its module keeps the name `fetcher`, for the fetch events and errors
/// it holds.)
#[derive(Debug)]
pub struct Consumer {
    cfg: ConsumerConfig,
    net: Network<Tag>,
    metadata: Metadata,
    parts: BTreeMap<TopicPartition, Part>,
    /// The connections with a Fetch in flight.
    fetching: BTreeSet<Lane>,
    events: VecDeque<FetchEvent>,
    backoff: Backoff,
    rng: Rng,
    now: Instant,
    /// The application's offset lookups under way.
    lookups: lookup::Lookups,
    /// Bytes of records handed out and not yet released by the driver.
    buffered: usize,
    /// Bytes that fetches in flight may still bring, in all and per connection.
    reserved: usize,
    reservations: BTreeMap<Lane, usize>,
    fetch_seq: usize,
    /// The connection the next round of fetches starts with (each gets its turn).
    node_turn: usize,
    /// KIP-227 fetch sessions, per connection.
    sessions: BTreeMap<Lane, session::FetchSession>,
    group: Option<group::Group>,
    /// The last partition generation handed out.
    next_gen: u64,
    /// Since when the fetcher has had work but no metadata from any broker.
    unreachable_since: Option<Instant>,
    /// Java's consumer metrics (the connection ones are the network's).
    metrics: ConsumerMetrics,
    /// When each connection's Fetch in flight was sent, for `fetch-latency`.
    fetch_sent: BTreeMap<Lane, Instant>,
    /// When partitions' `retry_at` and `unknown_since` timers fire, for `poll_timeout`.
    part_timers: timers::PartTimers,
    /// Leaders fetched from without `client.rack` until the instant: they named a preferred
    /// read replica this client has no address for (KIP-392).
    rackless: BTreeMap<NodeId, Instant>,
}

/// The consumer's state machine by its old name (users call it a consumer).
#[deprecated(since = "0.1.0", note = "renamed `Consumer`")]
pub type Fetcher = Consumer;

/// [`Consumer::answered`], on the partitions alone (so that the rest of the fetcher stays
/// free to borrow).
fn answered<'a>(
    parts: &'a mut BTreeMap<TopicPartition, Part>,
    tp: &TopicPartition,
    gen: u64,
) -> Option<&'a mut Part> {
    let p = parts.get_mut(tp)?;
    if p.busy == Some(gen) {
        p.busy = None;
    }
    (p.gen == gen).then_some(p)
}

const EARLIEST: i64 = -2;
const LATEST: i64 = -1;

impl crate::net::Machine for Consumer {
    type Event = FetchEvent;
    type Tag = Tag;

    fn parts(
        &mut self,
        _: crate::net::Sealed,
    ) -> (
        &mut Network<Tag>,
        &mut std::collections::VecDeque<FetchEvent>,
    ) {
        (&mut self.net, &mut self.events)
    }

    fn parts_ref(
        &self,
        _: crate::net::Sealed,
    ) -> (&Network<Tag>, &std::collections::VecDeque<FetchEvent>) {
        (&self.net, &self.events)
    }

    fn step(&mut self, now: Instant, _: crate::net::Sealed) {
        self.drive(now);
    }

    /// When to call [`Consumer::handle_timeout`] next. A pure query.
    fn poll_timeout(&self) -> Option<Instant> {
        let future = |t: Instant| (t > self.now).then_some(t);
        let parts = self.part_timers.next_after(self.now);
        debug_assert!(
            self.part_timers_scanned()
                .is_none_or(|t| parts.is_some_and(|p| p <= t)),
            "a partition timer was set without its entry in part_timers"
        );
        let refresh = self.metadata.next_refresh().and_then(future);
        self.net
            .poll_timeout()
            .into_iter()
            .chain(parts)
            .chain(refresh)
            .chain(self.group_timeout().and_then(future))
            .chain(self.health_timeout())
            .chain(self.lookups.timeout(self.now))
            .min()
    }

    /// Every metric at `now`, with the Java consumer's names: `consumer-metrics`,
    /// `consumer-fetch-manager-metrics` (client-wide, per topic and per partition),
    /// `consumer-coordinator-metrics` (with `group.id`) and `consumer-node-metrics`.
    fn metrics(&self, now: Instant) -> MetricsSnapshot {
        let parts = &self.parts;
        let fetched =
            |topic: &str, partition: i32| parts.contains_key(&(topic.to_owned(), partition));
        MetricsSnapshot::build(now, self.cfg.metrics.window, &self.cfg.client_id, |out| {
            self.metrics
                .snapshot(out, parts.len(), self.group.is_some(), fetched);
            self.net
                .metrics(out, "consumer-metrics", "consumer-node-metrics");
        })
    }
}

impl Consumer {
    /// A fetcher. Nothing connects until partitions are assigned.
    pub fn new(cfg: ConsumerConfig) -> Self {
        crate::config::warn_notes("consumer", cfg.notes());
        let backoff = Backoff::new(cfg.retry_backoff, cfg.retry_backoff_max);
        Consumer {
            net: Network::new(
                NetConfig::from_consumer(&cfg),
                cfg.bootstrap_servers.clone(),
            ),
            metadata: Metadata::new(
                cfg.metadata_max_age,
                std::time::Duration::MAX,
                backoff,
                cfg.random_seed,
            ),
            parts: BTreeMap::new(),
            fetching: BTreeSet::new(),
            events: VecDeque::new(),
            backoff,
            rng: Rng::new(cfg.random_seed ^ 0x6665_7463),
            lookups: lookup::Lookups::default(),
            now: Instant::ZERO,
            buffered: 0,
            reserved: 0,
            reservations: BTreeMap::new(),
            fetch_seq: 0,
            node_turn: 0,
            sessions: BTreeMap::new(),
            group: group::Group::new(&cfg),
            next_gen: 0,
            unreachable_since: None,
            metrics: ConsumerMetrics::new(cfg.metrics.window),
            fetch_sent: BTreeMap::new(),
            part_timers: timers::PartTimers::default(),
            rackless: BTreeMap::new(),
            cfg,
        }
    }

    /// The application took `records` records of `topic` (for `records-consumed-rate`; the
    /// driver reports what its handles returned).
    pub fn record_consumed(&mut self, topic: &str, records: u64, now: Instant) {
        self.metrics.consumed(topic, records, now);
    }

    /// Record batches of `bytes` bytes of `topic` went to the application (for
    /// `bytes-consumed-rate`).
    pub fn record_handed(&mut self, topic: &str, bytes: usize, now: Instant) {
        self.metrics.handed(topic, bytes, now);
    }

    /// Adds partitions to read, starting at `start`. Refused on a consumer that subscribed
    /// (its group decides its partitions).
    pub fn assign(
        &mut self,
        partitions: impl IntoIterator<Item = (String, i32)>,
        start: StartFrom,
        now: Instant,
    ) -> Result<(), SubscribeError> {
        if self
            .group
            .as_ref()
            .is_some_and(|g| g.membership.is_subscribed())
        {
            return Err(SubscribeError::Subscribed);
        }
        let mut from_committed = Vec::new();
        for tp in partitions {
            self.metadata.use_topic(&tp.0, now);
            self.next_gen += 1;
            self.parts
                .insert(tp.clone(), Self::part(start, self.next_gen));
            from_committed.push(tp);
        }
        if start != StartFrom::Committed {
            from_committed.clear();
        }
        self.start_from_committed(&from_committed, now);
        self.drive(now);
        Ok(())
    }

    fn part(start: StartFrom, gen: u64) -> Part {
        Part {
            gen,
            position: match start {
                StartFrom::Offset(o) => Some(o),
                _ => None,
            },
            start,
            high_watermark: -1,
            busy: None,
            retry_at: None,
            failures: 0,
            paused: false,
            stopped: false,
            end_reported: false,
            awaiting_committed: false,
            from_latest: false,
            epoch: -1,
            leader_epoch: -1,
            validate: false,
            unknown_since: None,
            read_replica: None,
        }
    }

    /// Moves an assigned partition's position. A fetch in flight for it is discarded.
    ///
    /// Commits carry the new position from then on, as Java's do: the offset sought (or, for
    /// `Earliest` and `Latest`, nothing until records are read again).
    pub fn seek(&mut self, topic: &str, partition: i32, start: StartFrom, now: Instant) {
        let tp = (topic.to_owned(), partition);
        if let Some(p) = self.parts.get_mut(&tp) {
            let busy = p.busy;
            self.next_gen += 1;
            *p = Self::part(start, self.next_gen);
            p.busy = busy;
            let to = match start {
                StartFrom::Offset(o) => Some(o),
                _ => None,
            };
            self.seeked(&tp, to);
            if start == StartFrom::Committed {
                self.start_from_committed(&[tp], now);
            }
        }
        self.drive(now);
    }

    /// The application met corrupt data at `offset` while reading [`FetchedRecords`] (which
    /// yielded [`FetchError::Corrupt`]): the partition stops there, as when the fetcher finds a
    /// corrupt batch itself, until a [`Consumer::seek`]. The driver drops what it still holds
    /// of the partition and releases its bytes; a fetch in flight for it is discarded.
    pub fn stop_corrupt(&mut self, topic: &str, partition: i32, offset: i64) {
        if let Some(p) = self.parts.get_mut(&(topic.to_owned(), partition)) {
            p.position = Some(offset);
            p.stopped = true;
        }
    }

    /// Stops fetching a partition until [`Consumer::resume`].
    pub fn pause(&mut self, topic: &str, partition: i32) {
        if let Some(p) = self.parts.get_mut(&(topic.to_owned(), partition)) {
            p.paused = true;
        }
    }

    /// Resumes a paused partition.
    pub fn resume(&mut self, topic: &str, partition: i32, now: Instant) {
        if let Some(p) = self.parts.get_mut(&(topic.to_owned(), partition)) {
            p.paused = false;
        }
        self.drive(now);
    }

    /// The next offset to be read, once known.
    pub fn position(&self, topic: &str, partition: i32) -> Option<i64> {
        self.parts.get(&(topic.to_owned(), partition))?.position
    }

    /// The last high watermark Fetch reported (-1 before the first response).
    pub fn high_watermark(&self, topic: &str, partition: i32) -> i64 {
        self.parts
            .get(&(topic.to_owned(), partition))
            .map_or(-1, |p| p.high_watermark)
    }

    /// The application has taken records worth `bytes` (the `bytes` of their
    /// [`FetchEvent::Records`]): the prefetch budget has room again.
    pub fn release(&mut self, bytes: usize, now: Instant) {
        self.buffered = self.buffered.saturating_sub(bytes);
        self.drive(now);
    }

    /// Bytes of fetched records not yet released.
    pub fn buffered(&self) -> usize {
        self.buffered
    }

    fn budget(&self) -> usize {
        self.cfg.queued_max_kbytes as usize * 1024
    }

    fn unreserve(&mut self, lane: Lane) {
        if let Some(n) = self.reservations.remove(&lane) {
            self.reserved = self.reserved.saturating_sub(n);
        }
    }

    fn on_event(&mut self, e: NetEvent<Tag>, now: Instant) {
        match e {
            NetEvent::Response {
                tag: Tag::Metadata,
                body: ResponseBody::Metadata(resp),
                ..
            } => {
                self.metadata.handle_response(&resp, now);
                // Not after a refusal: after REBOOTSTRAP_REQUIRED the network forgot the
                // known brokers, to start over from bootstrap.servers.
                if resp.error_code == 0 {
                    self.net.set_cluster_id(resp.cluster_id.as_deref());
                    self.net.update_nodes(self.metadata.nodes(), now);
                }
                self.match_pattern(now);
                self.check_assignment_snapshot();
            }
            NetEvent::Failed {
                tag: Tag::Metadata, ..
            } => self.metadata.handle_failure(now),
            NetEvent::Response {
                tag: Tag::ListOffsets(tps),
                body: ResponseBody::ListOffsets(resp),
                ..
            } => {
                self.on_list_offsets(tps, resp, now);
            }
            NetEvent::Response {
                tag: Tag::Lookup(id, tps),
                body: ResponseBody::ListOffsets(resp),
                ..
            } => self.on_lookup(id, tps, Some(resp), now),
            NetEvent::Failed {
                tag: Tag::Lookup(id, tps),
                ..
            } => self.on_lookup(id, tps, None, now),
            NetEvent::Response {
                tag: Tag::Fetch(key, tps, incremental),
                body: ResponseBody::Fetch(resp),
                version,
                ..
            } => {
                self.fetching.remove(&key);
                self.unreserve(key);
                if let Some(sent) = self.fetch_sent.remove(&key) {
                    let bytes = resp
                        .responses
                        .iter()
                        .flat_map(|t| &t.partitions)
                        .map(|p| p.records.as_ref().map_or(0, |r| r.len()))
                        .sum();
                    self.metrics.fetched(sent, bytes, now);
                }
                if let Some(s) = self.sessions.get_mut(&key) {
                    s.answered(resp.error_code, resp.session_id);
                }
                self.on_fetch(key.0, tps, resp, version, incremental, now);
            }
            NetEvent::Response {
                tag: Tag::Validate(tps),
                body: ResponseBody::OffsetForLeaderEpoch(resp),
                ..
            } => self.on_validate(tps, resp, now),
            NetEvent::Response {
                tag: tag @ (Tag::Group | Tag::Offsets(_)),
                body,
                ..
            } => self.on_group_response(tag, body, now),
            NetEvent::Failed {
                tag: tag @ (Tag::Group | Tag::Offsets(_)),
                ..
            } => self.on_group_failure(tag, now),
            NetEvent::Failed { tag, .. } => {
                // The connection failed: find the leader again, then retry with backoff.
                let tps = match tag {
                    Tag::Fetch(key, tps, _) => {
                        // A replica read from (KIP-392) that cannot be reached gives its
                        // partitions back to their leaders at once.
                        for ((tp, _), _) in &tps {
                            if let Some(p) = self.parts.get_mut(tp) {
                                if p.read_replica.is_some_and(|(node, _)| node == key.0) {
                                    p.read_replica = None;
                                }
                            }
                        }
                        self.fetching.remove(&key);
                        self.fetch_sent.remove(&key);
                        self.unreserve(key);
                        if let Some(s) = self.sessions.get_mut(&key) {
                            s.reset();
                        }
                        tps.into_iter().map(|(req, _)| req).collect()
                    }
                    Tag::ListOffsets(reqs) | Tag::Validate(reqs) => reqs,
                    Tag::Metadata | Tag::Group | Tag::Offsets(_) | Tag::Lookup(..) => {
                        unreachable!("handled above")
                    }
                };
                self.metadata.request_update();
                for (tp, gen) in tps {
                    self.retry_later(&tp, gen, now);
                }
            }
            NetEvent::Response { .. } => {
                debug_assert!(false, "response type does not match its request")
            }
        }
    }

    /// The requests for these partitions, at their current generations.
    fn reqs(&self, tps: &[TopicPartition]) -> Vec<Req> {
        tps.iter()
            .map(|tp| (tp.clone(), self.parts[tp].gen))
            .collect()
    }

    fn mark_busy(&mut self, tps: &[TopicPartition]) {
        for tp in tps {
            let p = self.parts.get_mut(tp).expect("assigned");
            p.busy = Some(p.gen);
        }
    }

    /// A request for `tp` at generation `gen` was answered (or failed): the partition is no
    /// longer busy with it. Returns the partition if the answer still concerns it: no seek,
    /// reassignment or reset started a new generation since (found by the simulation: the
    /// answer to a fetch sent before a rebalance was taken for the reassigned partition, beside
    /// its own fetch, and records went out twice).
    fn answered(&mut self, tp: &TopicPartition, gen: u64) -> Option<&mut Part> {
        answered(&mut self.parts, tp, gen)
    }

    fn retry_later(&mut self, tp: &TopicPartition, gen: u64, now: Instant) {
        let delay = match self.parts.get(tp) {
            Some(p) => self.backoff.delay(p.failures, &mut self.rng),
            None => return,
        };
        if let Some(p) = answered(&mut self.parts, tp, gen) {
            p.retry_at = Some(now + delay);
            p.failures = p.failures.saturating_add(1);
            self.part_timers.push(now + delay);
        }
    }

    fn partition_error(&mut self, tp: &TopicPartition, gen: u64, e: ErrorCode, now: Instant) {
        if e.is_retriable()
            || matches!(
                e,
                ErrorCode::FencedLeaderEpoch | ErrorCode::UnknownLeaderEpoch
            )
        {
            // Leadership moved or is moving: refresh and try again.
            self.metadata.request_update();
            self.retry_later(tp, gen, now);
            return;
        }
        match self.answered(tp, gen) {
            Some(p) => p.stopped = true,
            None => return,
        }
        self.events.push_back(FetchEvent::Error {
            topic: tp.0.clone(),
            partition: tp.1,
            error: FetchError::Broker(e),
        });
    }

    fn on_list_offsets(&mut self, tps: Vec<Req>, resp: ListOffsetsResponse, now: Instant) {
        for (tp, gen) in tps {
            let found = resp
                .topics
                .iter()
                .filter(|t| t.name == tp.0)
                .flat_map(|t| &t.partitions)
                .find(|p| p.partition_index == tp.1)
                .map(|p| (p.error_code, p.offset));
            match found {
                Some((0, offset)) => {
                    if let Some(p) = self.answered(&tp, gen) {
                        p.failures = 0;
                        if p.position.is_none() {
                            p.position = Some(offset);
                            p.from_latest = p.start == StartFrom::Latest;
                        }
                    }
                }
                Some((code, _)) => {
                    let e = ErrorCode::from_code(code).expect("non-zero");
                    self.partition_error(&tp, gen, e, now);
                }
                None => self.retry_later(&tp, gen, now),
            }
        }
    }
}
