//! Committed offsets as a sans-IO sub-machine: OffsetFetch for newly assigned partitions, and
//! OffsetCommit of what the application consumed, by hand or every
//! `auto.commit.interval.ms`. Requests go to the group coordinator; the consumer routes them
//! and feeds back the answers.
//!
//! Only offsets of records already handed to the application are committed, with the leader
//! epoch of the record (KIP-320). One commit is in flight at a time, in order, so committed
//! offsets never move backwards unless the application seeked back.
//!
//! The application's commits and its lookups of committed offsets (any partition, owned or
//! not) each have a deadline (`default.api.timeout.ms`): retriable errors are retried until
//! then, and the timeout names the last cause seen. A coordinator that moved is reported, so
//! that the consumer finds it again.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::time::Duration;

use kafka_proto::api::ResponseBody;
use kafka_proto::messages::offset_commit_request::{
    OffsetCommitRequest, OffsetCommitRequestPartition, OffsetCommitRequestTopic,
};
use kafka_proto::messages::offset_fetch_request::{
    OffsetFetchRequest, OffsetFetchRequestGroup, OffsetFetchRequestTopic, OffsetFetchRequestTopics,
};
use kafka_proto::ErrorCode;

use super::assignor::TopicPartition;
use crate::time::Instant;

/// An offset and the leader epoch of the record before it (-1 if unknown).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Committed {
    /// The next offset to read.
    pub offset: i64,
    /// The leader epoch of the last record read, for truncation detection.
    pub leader_epoch: i32,
}

/// A commit's id, returned by [`Offsets::commit`] and repeated in its outcome.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct CommitId(pub u64);

/// Why a commit failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum CommitError {
    /// The group rebalanced or our membership expired; these offsets belong to a generation
    /// that is over. Another member may own the partitions now.
    #[error("the group rebalanced before the commit ({0}); consume again and commit after the rebalance")]
    Rebalanced(ErrorCode),
    /// The broker refused the commit.
    #[error("the broker refused the commit: {0}")]
    Broker(ErrorCode),
    /// The consumer is not in a group generation that may commit.
    #[error("not a member of a live group generation; no commit is possible")]
    NotMember,
    /// A consumer that assigns its partitions itself committed into a group that has members
    /// (Kafka answers UNKNOWN_MEMBER_ID): such commits are accepted only while the group is
    /// empty, so that they cannot move the offsets of partitions a member owns.
    #[error("group `{0}` has active members, so a consumer that assigns its partitions itself may not commit into it; use a group.id of its own")]
    GroupInUse(String),
    /// Not done within `default.api.timeout.ms`; `last` is the last cause seen.
    #[error("not done within default.api.timeout.ms{}", last.as_deref().map(|l| format!(" (last: {l})")).unwrap_or_default())]
    Timeout {
        /// The last error or condition seen while retrying, if any.
        last: Option<String>,
    },
    /// The consumer was closed, or its driver stopped.
    #[error("the consumer is closed")]
    Closed,
}

/// A lookup's id, returned by [`Offsets::lookup`] and repeated in its outcome.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct LookupId(pub u64);

/// The committed offsets a lookup found (`None`: nothing committed).
pub type LookupResult = Result<Vec<(TopicPartition, Option<Committed>)>, CommitError>;

/// What the consumer must act on.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum OffsetEvent {
    /// Committed offsets for partitions asked about (`None`: nothing committed, so the
    /// `auto.offset.reset` policy decides).
    Fetched(Vec<(TopicPartition, Option<Committed>)>),
    /// A commit ended.
    Commit(CommitId, Result<(), CommitError>),
    /// A lookup of committed offsets ended.
    Looked(LookupId, LookupResult),
}

/// A request for the coordinator.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum OffsetRequest {
    /// Read committed offsets.
    Fetch(OffsetFetchRequest),
    /// Commit offsets.
    Commit(OffsetCommitRequest),
}

#[derive(Debug)]
struct Commit {
    id: CommitId,
    offsets: BTreeMap<TopicPartition, Committed>,
    /// An automatic commit: its failure is not reported.
    auto: bool,
    /// When it fails with a timeout (the application's commits).
    deadline: Option<Instant>,
    /// Its outcome went out already (it timed out while in flight).
    reported: bool,
}

/// The application's lookup of committed offsets.
#[derive(Debug)]
struct Lookup {
    id: LookupId,
    tps: Vec<TopicPartition>,
    deadline: Option<Instant>,
    reported: bool,
}

/// The OffsetFetch in flight: for newly assigned partitions, or for a lookup.
#[derive(Debug)]
enum Fetching {
    Assigned(Vec<TopicPartition>),
    Lookup(Lookup),
}

/// The offsets side of a group member.
#[derive(Debug)]
pub struct Offsets {
    group_id: String,
    instance_id: Option<String>,
    auto_commit: Option<Duration>,
    /// An automatic commit was refused and none succeeded since (warned about once).
    auto_commit_warned: bool,
    consumed: BTreeMap<TopicPartition, Committed>,
    committed: BTreeMap<TopicPartition, Committed>,
    to_fetch: BTreeSet<TopicPartition>,
    fetching: Option<Fetching>,
    lookups: VecDeque<Lookup>,
    next_lookup: u64,
    commits: VecDeque<Commit>,
    committing: bool,
    /// The commit in flight was sent outside group management (generation -1).
    committing_outside: bool,
    next_commit: u64,
    next_auto: Option<Instant>,
    retry_backoff: Duration,
    retry_at: Option<Instant>,
    events: VecDeque<OffsetEvent>,
    /// The last error seen, for timeouts to name.
    last_error: Option<String>,
    /// The coordinator answered that it is not (or not yet) the coordinator.
    coordinator_moved: bool,
}

impl Offsets {
    /// Offsets for `group_id`; with `auto_commit`, consumed offsets are committed on that
    /// interval.
    pub fn new(
        group_id: &str,
        instance_id: Option<&str>,
        auto_commit: Option<Duration>,
        retry_backoff: Duration,
    ) -> Self {
        Offsets {
            group_id: group_id.to_owned(),
            instance_id: instance_id.map(str::to_owned),
            auto_commit,
            auto_commit_warned: false,
            consumed: BTreeMap::new(),
            committed: BTreeMap::new(),
            to_fetch: BTreeSet::new(),
            fetching: None,
            lookups: VecDeque::new(),
            next_lookup: 0,
            commits: VecDeque::new(),
            committing: false,
            committing_outside: false,
            next_commit: 0,
            next_auto: None,
            retry_backoff,
            retry_at: None,
            events: VecDeque::new(),
            last_error: None,
            coordinator_moved: false,
        }
    }

    /// Partitions were assigned: their committed offsets are needed.
    pub fn assigned(&mut self, tps: &[TopicPartition], now: Instant) {
        // A new tenure reads on from the committed offset: what was consumed in an earlier
        // one (a loss the application never saw) must not be committed over it.
        for tp in tps {
            self.consumed.remove(tp);
        }
        self.to_fetch.extend(tps.iter().cloned());
        if let Some(every) = self.auto_commit {
            self.next_auto.get_or_insert(now + every);
        }
    }

    /// Partitions went away (revoked or lost): forget them. Commit before, if at all.
    ///
    /// Commits still queued (or to be retried) forget them too: sent later, in the next
    /// generation, they would move back the offsets their new owner commits (found by the
    /// simulation, seed 43579).
    pub fn removed(&mut self, tps: &[TopicPartition]) {
        for tp in tps {
            self.to_fetch.remove(tp);
            self.consumed.remove(tp);
            self.committed.remove(tp);
            for c in &mut self.commits {
                c.offsets.remove(tp);
            }
        }
    }

    /// The application received records of `tp` up to `next_offset` - 1, the last from
    /// `leader_epoch`; or it seeked to `next_offset`.
    pub fn consumed(&mut self, tp: &TopicPartition, next_offset: i64, leader_epoch: i32) {
        let c = Committed {
            offset: next_offset,
            leader_epoch,
        };
        self.consumed.insert(tp.clone(), c);
    }

    /// Forgets what was consumed of `tp` (a seek to a position not known yet): commits carry
    /// nothing for it until records are read again.
    pub fn forget_consumed(&mut self, tp: &TopicPartition) {
        self.consumed.remove(tp);
    }

    /// The last committed offset known for `tp`.
    pub fn committed(&self, tp: &TopicPartition) -> Option<Committed> {
        self.committed.get(tp).copied()
    }

    /// Commits everything consumed and not yet committed, with no deadline.
    pub fn commit(&mut self) -> CommitId {
        self.enqueue(false, None)
    }

    /// Commits everything consumed and not yet committed; retriable errors are retried until
    /// `deadline`, when it fails with [`CommitError::Timeout`].
    pub fn commit_by(&mut self, deadline: Instant) -> CommitId {
        self.enqueue(false, Some(deadline))
    }

    /// Commits these offsets (not what was consumed); retriable errors are retried until
    /// `deadline`.
    pub fn commit_offsets(
        &mut self,
        offsets: BTreeMap<TopicPartition, Committed>,
        deadline: Instant,
    ) -> CommitId {
        let id = CommitId(self.next_commit);
        self.next_commit += 1;
        self.commits.push_back(Commit {
            id,
            offsets,
            auto: false,
            deadline: Some(deadline),
            reported: false,
        });
        id
    }

    fn enqueue(&mut self, auto: bool, deadline: Option<Instant>) -> CommitId {
        let id = CommitId(self.next_commit);
        self.next_commit += 1;
        // What is already committed when the commit goes out is dropped then, in
        // `poll_request`: an earlier commit still in flight may cover it.
        let offsets = self.consumed.clone();
        self.commits.push_back(Commit {
            id,
            offsets,
            auto,
            deadline,
            reported: false,
        });
        id
    }

    /// Looks up the committed offsets of `tps` (owned or not), until `deadline`.
    pub fn lookup(&mut self, tps: Vec<TopicPartition>, deadline: Option<Instant>) -> LookupId {
        let id = LookupId(self.next_lookup);
        self.next_lookup += 1;
        self.lookups.push_back(Lookup {
            id,
            tps,
            deadline,
            reported: false,
        });
        id
    }

    /// Whether commits or fetches are waiting to be sent or answered (close waits for them).
    pub fn busy(&self) -> bool {
        self.committing
            || !self.commits.is_empty()
            || self.fetching.is_some()
            || !self.lookups.is_empty()
    }

    /// Whether a request waits to go to the coordinator (so it must be found, even by a
    /// consumer outside group management).
    pub fn wants_coordinator(&self) -> bool {
        !self.commits.is_empty() || !self.to_fetch.is_empty() || !self.lookups.is_empty()
    }

    /// Whether a coordinator answered that it is not one (or not available) since the last
    /// call: the consumer must find it again.
    pub fn take_coordinator_moved(&mut self) -> bool {
        std::mem::take(&mut self.coordinator_moved)
    }

    /// Commits that cannot be sent now (the consumer is in no generation that may commit)
    /// fail at once, rather than wait.
    pub fn fail_queued_commits(&mut self) {
        let first = usize::from(self.committing).min(self.commits.len());
        for c in self.commits.split_off(first) {
            self.finish(c, Err(CommitError::NotMember));
        }
    }

    /// Time passed: commits and lookups past their deadline fail with a timeout, naming the
    /// last error seen (or else `fallback`, the last connection problem).
    pub fn handle_timeout(&mut self, now: Instant, fallback: Option<&str>) {
        let last = self
            .last_error
            .clone()
            .or_else(|| fallback.map(str::to_owned));
        let expired = |d: Option<Instant>| d.is_some_and(|d| d <= now);
        // A retry time that passed is spent (the request goes out when the coordinator is
        // ready); kept, it would stand before every later deadline in `poll_timeout` (found
        // by the simulation, seed 145: a commit outlived default.api.timeout.ms by 4 s).
        if expired(self.retry_at) {
            self.retry_at = None;
        }
        let mut i = 0;
        while i < self.commits.len() {
            let c = &mut self.commits[i];
            if c.reported || !expired(c.deadline) {
                i += 1;
                continue;
            }
            if i == 0 && self.committing {
                // In flight: its answer is awaited only to keep order.
                c.reported = true;
                let id = c.id;
                self.events.push_back(OffsetEvent::Commit(
                    id,
                    Err(CommitError::Timeout { last: last.clone() }),
                ));
                i += 1;
                continue;
            }
            if let Some(c) = self.commits.remove(i) {
                self.finish(c, Err(CommitError::Timeout { last: last.clone() }));
            }
        }
        let mut kept = VecDeque::new();
        for l in std::mem::take(&mut self.lookups) {
            if expired(l.deadline) {
                let result = Err(CommitError::Timeout { last: last.clone() });
                self.events.push_back(OffsetEvent::Looked(l.id, result));
            } else {
                kept.push_back(l);
            }
        }
        self.lookups = kept;
        if let Some(Fetching::Lookup(l)) = &mut self.fetching {
            if !l.reported && expired(l.deadline) {
                l.reported = true;
                let result = Err(CommitError::Timeout { last });
                self.events.push_back(OffsetEvent::Looked(l.id, result));
            }
        }
    }

    /// The next request, given the member's generation (commits need a live one).
    pub fn poll_request(
        &mut self,
        generation: Option<(i32, &str)>,
        now: Instant,
    ) -> Option<OffsetRequest> {
        if self.retry_at.is_some_and(|t| t > now) {
            return None;
        }
        self.retry_at = None;
        if self.next_auto.is_some_and(|t| t <= now) {
            self.next_auto = self.auto_commit.map(|every| now + every);
            if self
                .consumed
                .iter()
                .any(|(tp, c)| self.committed.get(tp) != Some(c))
            {
                self.enqueue(true, None);
            }
        }
        if !self.committing {
            // Taken off the queue while it is looked at, and put back first if it goes.
            if let Some(mut c) = self.commits.pop_front() {
                // What an earlier commit already covered need not go again.
                let committed = &self.committed;
                c.offsets.retain(|tp, o| committed.get(tp) != Some(o));
                let Some((generation, member_id)) = generation else {
                    self.finish(c, Err(CommitError::NotMember));
                    return self.poll_request(None, now);
                };
                if c.offsets.is_empty() {
                    self.finish(c, Ok(()));
                    return self.poll_request(Some((generation, member_id)), now);
                }
                self.committing = true;
                self.committing_outside = generation < 0;
                let req = self.commit_request(&c, generation, member_id);
                self.commits.push_front(c);
                return Some(OffsetRequest::Commit(req));
            }
        }
        if self.fetching.is_none() && !self.to_fetch.is_empty() {
            let tps: Vec<TopicPartition> = std::mem::take(&mut self.to_fetch).into_iter().collect();
            let req = self.fetch_request(&tps);
            self.fetching = Some(Fetching::Assigned(tps));
            return Some(OffsetRequest::Fetch(req));
        }
        if self.fetching.is_none() {
            if let Some(l) = self.lookups.pop_front() {
                let req = self.fetch_request(&l.tps);
                self.fetching = Some(Fetching::Lookup(l));
                return Some(OffsetRequest::Fetch(req));
            }
        }
        None
    }

    fn commit_request(&self, c: &Commit, generation: i32, member_id: &str) -> OffsetCommitRequest {
        let mut topics: BTreeMap<&str, Vec<OffsetCommitRequestPartition>> = BTreeMap::new();
        for ((t, p), o) in &c.offsets {
            topics
                .entry(t)
                .or_default()
                .push(OffsetCommitRequestPartition {
                    partition_index: *p,
                    committed_offset: o.offset,
                    committed_leader_epoch: o.leader_epoch,
                    committed_metadata: Some(String::new()),
                    ..Default::default()
                });
        }
        OffsetCommitRequest {
            group_id: self.group_id.clone(),
            generation_id_or_member_epoch: generation,
            member_id: member_id.to_owned(),
            group_instance_id: self.instance_id.clone(),
            retention_time_ms: -1,
            topics: topics
                .into_iter()
                .map(|(name, partitions)| OffsetCommitRequestTopic {
                    name: name.to_owned(),
                    partitions,
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        }
    }

    fn fetch_request(&self, tps: &[TopicPartition]) -> OffsetFetchRequest {
        let mut topics: BTreeMap<&str, Vec<i32>> = BTreeMap::new();
        for (t, p) in tps {
            topics.entry(t).or_default().push(*p);
        }
        // v8+ asks per group; older versions at the top level. The encoder writes whichever
        // the negotiated version has.
        OffsetFetchRequest {
            group_id: self.group_id.clone(),
            topics: Some(
                topics
                    .iter()
                    .map(|(t, ps)| OffsetFetchRequestTopic {
                        name: (*t).to_owned(),
                        partition_indexes: ps.clone(),
                        ..Default::default()
                    })
                    .collect(),
            ),
            groups: vec![OffsetFetchRequestGroup {
                group_id: self.group_id.clone(),
                topics: Some(
                    topics
                        .iter()
                        .map(|(t, ps)| OffsetFetchRequestTopics {
                            name: (*t).to_owned(),
                            partition_indexes: ps.clone(),
                            ..Default::default()
                        })
                        .collect(),
                ),
                ..Default::default()
            }],
            // Wait out pending transactional commits (KIP-447), as Java does.
            require_stable: true,
            ..Default::default()
        }
    }

    fn finish(&mut self, c: Commit, result: Result<(), CommitError>) {
        if result.is_ok() {
            self.committed.extend(c.offsets);
            self.auto_commit_warned = false;
        } else if let (true, Err(e @ CommitError::Broker(_))) = (c.auto, &result) {
            // Nobody awaits an automatic commit: a broker's refusal would go unseen, and
            // the next one (the same offsets) may meet the same. Once an episode.
            if !self.auto_commit_warned {
                self.auto_commit_warned = true;
                tracing::warn!(error = %e, "an automatic commit failed; the next one tries again");
            }
        }
        // An automatic commit reports nothing: a failed one is retried by the next.
        if !c.auto && !c.reported {
            self.events.push_back(OffsetEvent::Commit(c.id, result));
        }
    }

    /// Notes a retriable error: the last cause a timeout names, and whether the coordinator
    /// moved.
    fn note_error(&mut self, e: ErrorCode) {
        if matches!(
            e,
            ErrorCode::NotCoordinator | ErrorCode::CoordinatorNotAvailable
        ) {
            self.coordinator_moved = true;
        }
        self.last_error = Some(format!("the coordinator answered {e}"));
    }

    /// The answer to the request in flight (OffsetFetch or OffsetCommit).
    pub fn handle_response(&mut self, body: ResponseBody, now: Instant) {
        match body {
            ResponseBody::OffsetCommit(r) if self.committing => {
                self.committing = false;
                let c = self.commits.pop_front().expect("a commit in flight");
                let error = r
                    .topics
                    .iter()
                    .flat_map(|t| &t.partitions)
                    .find_map(|p| ErrorCode::from_code(p.error_code));
                match error {
                    None => self.finish(c, Ok(())),
                    Some(e) if is_retriable_commit(e) && !c.reported => {
                        self.note_error(e);
                        self.commits.push_front(c);
                        self.retry_at = Some(now + self.retry_backoff);
                    }
                    Some(e) if is_retriable_commit(e) => {
                        // Timed out already: its outcome went out.
                        self.note_error(e);
                    }
                    Some(ErrorCode::UnknownMemberId) if self.committing_outside => {
                        self.finish(c, Err(CommitError::GroupInUse(self.group_id.clone())))
                    }
                    Some(
                        e @ (ErrorCode::RebalanceInProgress
                        | ErrorCode::IllegalGeneration
                        | ErrorCode::UnknownMemberId
                        | ErrorCode::FencedInstanceId
                        | ErrorCode::FencedMemberEpoch),
                    ) => self.finish(c, Err(CommitError::Rebalanced(e))),
                    Some(e) => self.finish(c, Err(CommitError::Broker(e))),
                }
            }
            ResponseBody::OffsetFetch(r) => {
                let Some(fetching) = self.fetching.take() else {
                    return;
                };
                let (group_error, parts) = offset_fetch_answers(&r);
                if let Some(e) = ErrorCode::from_code(group_error) {
                    // COORDINATOR_LOAD_IN_PROGRESS, NOT_COORDINATOR, UNSTABLE_OFFSET_COMMIT...:
                    // ask again after the backoff.
                    self.note_error(e);
                    self.retry(fetching, now);
                    return;
                }
                let mut out = Vec::new();
                let mut again = Vec::new();
                let asked = match &fetching {
                    Fetching::Assigned(tps) => tps,
                    Fetching::Lookup(l) => &l.tps,
                };
                for tp in asked {
                    let found = parts.iter().find(|p| &p.tp == tp);
                    match found {
                        Some(p) if p.error != 0 => {
                            if let Some(e) = ErrorCode::from_code(p.error) {
                                self.note_error(e);
                            }
                            again.push(tp.clone());
                        }
                        Some(p) if p.offset >= 0 => {
                            let c = Committed {
                                offset: p.offset,
                                leader_epoch: p.epoch,
                            };
                            out.push((tp.clone(), Some(c)));
                        }
                        _ => out.push((tp.clone(), None)),
                    }
                }
                match fetching {
                    Fetching::Assigned(_) => {
                        for (tp, c) in &out {
                            if let Some(c) = c {
                                self.committed.insert(tp.clone(), *c);
                            }
                        }
                        if !again.is_empty() {
                            self.retry(Fetching::Assigned(again), now);
                        }
                        if !out.is_empty() {
                            self.events.push_back(OffsetEvent::Fetched(out));
                        }
                    }
                    // A lookup answers whole, or is asked again.
                    Fetching::Lookup(l) if !again.is_empty() => {
                        self.retry(Fetching::Lookup(l), now)
                    }
                    Fetching::Lookup(l) if l.reported => {}
                    Fetching::Lookup(l) => {
                        self.events.push_back(OffsetEvent::Looked(l.id, Ok(out)))
                    }
                }
            }
            _ => debug_assert!(false, "a response that does not answer the request"),
        }
    }

    /// An OffsetFetch is asked again after the backoff (a lookup that timed out meanwhile
    /// is dropped).
    fn retry(&mut self, fetching: Fetching, now: Instant) {
        self.retry_at = Some(now + self.retry_backoff);
        match fetching {
            Fetching::Assigned(tps) => self.to_fetch.extend(tps),
            Fetching::Lookup(l) if l.reported => {}
            Fetching::Lookup(l) => self.lookups.push_front(l),
        }
    }

    /// The request in flight got no answer: it is asked again (a commit keeps its place).
    pub fn handle_failure(&mut self, commit: bool, now: Instant) {
        self.last_error = Some("the connection to the coordinator failed".into());
        self.retry_at = Some(now + self.retry_backoff);
        if commit {
            self.committing = false;
        } else if let Some(fetching) = self.fetching.take() {
            self.retry(fetching, now);
        }
    }

    /// The next event.
    pub fn poll_event(&mut self) -> Option<OffsetEvent> {
        self.events.pop_front()
    }

    /// The next automatic commit, retry or deadline. A pure query.
    pub fn poll_timeout(&self) -> Option<Instant> {
        self.deadlines().min()
    }

    /// Every time the offsets want to be woken at, passed ones included (see
    /// [`crate::group::membership::Membership::deadlines`]).
    pub fn deadlines(&self) -> impl Iterator<Item = Instant> + '_ {
        let commits = self
            .commits
            .iter()
            .filter(|c| !c.reported)
            .filter_map(|c| c.deadline);
        let lookups = self.lookups.iter().filter_map(|l| l.deadline);
        let looking = match &self.fetching {
            Some(Fetching::Lookup(l)) if !l.reported => l.deadline,
            _ => None,
        };
        self.next_auto
            .into_iter()
            .chain(self.retry_at)
            .chain(commits)
            .chain(lookups)
            .chain(looking)
    }
}

/// One partition of an OffsetFetch answer, whichever shape it came in.
pub(crate) struct Answer {
    pub(crate) tp: TopicPartition,
    pub(crate) offset: i64,
    pub(crate) epoch: i32,
    pub(crate) error: i16,
}

/// An OffsetFetch answer's group error and partitions: v8+ nests them in a group, older
/// versions answer flat (the two shapes have the same fields under different types).
pub(crate) fn offset_fetch_answers(
    r: &kafka_proto::messages::offset_fetch_response::OffsetFetchResponse,
) -> (i16, Vec<Answer>) {
    macro_rules! answers {
        ($topics:expr) => {
            $topics
                .iter()
                .flat_map(|t| {
                    t.partitions.iter().map(|p| Answer {
                        tp: (t.name.clone(), p.partition_index),
                        offset: p.committed_offset,
                        epoch: p.committed_leader_epoch,
                        error: p.error_code,
                    })
                })
                .collect()
        };
    }
    match r.groups.first() {
        Some(g) => (g.error_code, answers!(g.topics)),
        None => (r.error_code, answers!(r.topics)),
    }
}

fn is_retriable_commit(e: ErrorCode) -> bool {
    matches!(
        e,
        ErrorCode::CoordinatorLoadInProgress
            | ErrorCode::CoordinatorNotAvailable
            | ErrorCode::NotCoordinator
            | ErrorCode::RequestTimedOut
            | ErrorCode::UnknownTopicOrPartition
            // KIP-848: the member's epoch moved on since the request was made; it is made
            // again with the new one.
            | ErrorCode::StaleMemberEpoch
    )
}
