//! The fetcher in a consumer group: it drives the membership and offsets sub-machines over
//! the shared connection manager (FindCoordinator to the least-loaded node; everything else
//! to the coordinator over a connection of its own, so heartbeats never wait behind a
//! long-polling fetch), and turns assignments into partitions to fetch.

use std::collections::BTreeMap;

use kafka_proto::api::ResponseBody;

use super::{Consumer, FetchEvent, StartFrom, Tag};
use crate::config::{ConsumerConfig, OffsetReset};
use crate::group::member::Member;
use crate::group::membership::{GroupEvent, GroupRequest};
use crate::group::offsets::{CommitId, LookupId, OffsetEvent, OffsetRequest, Offsets};
use crate::group::GroupMetadata;
use crate::net::{ConnId, Network, Purpose, RequestSendError};
use crate::time::Instant;
use crate::topic::TopicPartition;

/// Why [`Consumer::subscribe`] or [`Consumer::assign`] refused. As in the Java client, a
/// consumer either subscribes (the group decides its partitions) or assigns them itself, never
/// both: partitions of both kinds would be fetched, committed and revoked under different rules.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SubscribeError {
    /// The consumer has no `group.id`.
    #[error("subscribe needs a consumer group: set group.id in the consumer's config (or read chosen partitions with assign)")]
    NoGroupId,
    /// The topic list is empty.
    #[error("subscribe needs at least one topic")]
    NoTopics,
    /// `assign` on a consumer that subscribed.
    #[error("assign is refused: this consumer subscribed, so its group decides its partitions; read chosen partitions with a consumer that does not subscribe")]
    Subscribed,
    /// `subscribe` on a consumer that assigned partitions itself.
    #[error("subscribe is refused: this consumer assigned partitions itself; join the group with a consumer that does not assign")]
    Assigned,
    /// `subscribe_pattern` with a pattern that is not a regular expression.
    #[error("the subscription pattern is not a valid regular expression: {0}")]
    InvalidPattern(String),
}

/// Checks a subscription pattern, as [`Consumer::subscribe_pattern`] would.
pub fn check_pattern(pattern: &str) -> Result<(), SubscribeError> {
    whole_name_pattern(pattern).map(drop)
}

/// The pattern, matching whole topic names only (as Java's `Pattern.matches` and the
/// broker's RE2/J `matches`).
fn whole_name_pattern(pattern: &str) -> Result<regex::Regex, SubscribeError> {
    regex::Regex::new(&format!("^(?:{pattern})$"))
        .map_err(|e| SubscribeError::InvalidPattern(e.to_string()))
}

/// The group side of a fetcher.
#[derive(Debug)]
pub(super) struct Group {
    pub(super) membership: Member,
    offsets: Offsets,
    auto_commit: bool,
    /// The automatic commit made before acknowledging a revocation.
    revoke_commit: Option<CommitId>,
    /// Partitions revoked but not yet acknowledged: their offsets may still be committed.
    revoking: Vec<TopicPartition>,
    /// Commits the application asked for (the others are internal).
    user_commits: Vec<CommitId>,
    /// The last automatic commit, after which the member leaves.
    leave_commit: Option<CommitId>,
    /// As the leader: since when it has been assigning (it waits for a metadata answer given
    /// since, for topics it does not know).
    assigning_since: Option<Instant>,
    /// As the leader: the generation and partition counts its assignment was made with.
    snapshot: Option<(i32, BTreeMap<String, i32>)>,
    /// A pattern subscription under the classic protocol, matched against the listing of
    /// every topic (whole names, as Java's `Pattern.matches`).
    pattern: Option<regex::Regex>,
    /// The loss of the coordinator was warned about, and nothing came back from one since:
    /// one warning an episode, however many lookups and connects fail in it.
    coordinator_warned: bool,
}

impl Group {
    pub(super) fn new(cfg: &ConsumerConfig) -> Option<Group> {
        let membership = Member::new(cfg)?;
        let group_id = cfg.group_id.as_deref().expect("a membership has a group");
        Some(Group {
            membership,
            offsets: Offsets::new(
                group_id,
                cfg.group_instance_id.as_deref(),
                cfg.enable_auto_commit.then_some(cfg.auto_commit_interval),
                cfg.retry_backoff,
            ),
            auto_commit: cfg.enable_auto_commit,
            revoke_commit: None,
            revoking: Vec::new(),
            user_commits: Vec::new(),
            leave_commit: None,
            assigning_since: None,
            snapshot: None,
            pattern: None,
            coordinator_warned: false,
        })
    }
}

impl Consumer {
    /// The group metadata a transactional producer commits this consumer's progress with
    /// (`send_offsets_to_transaction`, KIP-447): the group, and the generation and member id
    /// of this member as of its last join (-1 and empty outside group management). `None`
    /// without `group.id`.
    pub fn group_metadata(&self) -> Option<GroupMetadata> {
        self.group.as_ref().map(|g| g.membership.group_metadata())
    }

    /// Joins the group (`group.id`) subscribed to `topics`. Nothing connects before this (or
    /// an `assign`).
    pub fn subscribe(&mut self, topics: Vec<String>, now: Instant) -> Result<(), SubscribeError> {
        let Some(g) = self.group.as_mut() else {
            return Err(SubscribeError::NoGroupId);
        };
        if topics.is_empty() {
            return Err(SubscribeError::NoTopics);
        }
        if !g.membership.is_subscribed() && !self.parts.is_empty() {
            return Err(SubscribeError::Assigned);
        }
        for t in &topics {
            self.metadata.use_topic(t, now);
        }
        if g.pattern.take().is_some() {
            self.metadata.set_list_all(false);
        }
        g.membership.subscribe(topics, now);
        self.drive(now);
        Ok(())
    }

    /// Joins the group (`group.id`) subscribed to every topic whose whole name matches the
    /// regular expression `pattern`, now and as topics come and go. Under the consumer protocol
    /// the broker evaluates it (RE2/J syntax); under the classic one it is matched against the
    /// listing of every topic, refreshed every `metadata.max.age.ms`, as Java does. Internal
    /// topics never match.
    pub fn subscribe_pattern(&mut self, pattern: &str, now: Instant) -> Result<(), SubscribeError> {
        let Some(g) = self.group.as_mut() else {
            return Err(SubscribeError::NoGroupId);
        };
        if !g.membership.is_subscribed() && !self.parts.is_empty() {
            return Err(SubscribeError::Assigned);
        }
        let re = whole_name_pattern(pattern)?;
        if g.membership.subscribe_pattern(pattern, now) {
            g.pattern = None;
        } else {
            g.pattern = Some(re);
            self.metadata.set_list_all(true);
            self.match_pattern(now);
        }
        self.drive(now);
        Ok(())
    }

    /// A classic pattern subscription: the topics the latest listing matches become the
    /// subscription (a change rejoins). Until some topic matches, the member waits outside
    /// the group.
    pub(super) fn match_pattern(&mut self, now: Instant) {
        let Some(g) = &mut self.group else { return };
        let Some(re) = &g.pattern else { return };
        let matched: Vec<String> = self
            .metadata
            .listed()
            .iter()
            .filter(|t| re.is_match(t))
            .cloned()
            .collect();
        if matched.is_empty() {
            return;
        }
        for t in &matched {
            self.metadata.use_topic(t, now);
        }
        g.membership.subscribe(matched, now);
    }

    /// The application asked for records, or is waiting for them: it is alive
    /// (`max.poll.interval.ms`). Cheap: call it as often as the application polls. A member
    /// that left the group because the application had stopped polling rejoins.
    pub fn polled(&mut self, now: Instant) {
        self.polled_at(now, now);
    }

    /// As [`Consumer::polled`], for a poll at `at` (no later than `now`) that is noticed only
    /// now: `max.poll.interval.ms` counts from `at`, so that noticing late never stretches it.
    pub fn polled_at(&mut self, at: Instant, now: Instant) {
        self.metrics.polled(at.min(now));
        if self
            .group
            .as_mut()
            .is_some_and(|g| g.membership.polled(at.min(now)))
        {
            self.drive(now);
        }
    }

    /// The application has consumed `partition` up to `next_offset` - 1, a record written in
    /// `leader_epoch` (the `leader_epoch` of its [`FetchEvent::Records`]; -1 after a seek):
    /// what commits will carry.
    ///
    /// Only partitions the consumer holds count (assigned, or revoked and not yet
    /// acknowledged): a report that arrives after a partition was revoked or lost is dropped,
    /// so that no later commit, in another generation, carries it.
    pub fn consumed(&mut self, topic: &str, partition: i32, next_offset: i64, leader_epoch: i32) {
        let tp = (topic.to_owned(), partition);
        if let Some(g) = &mut self.group {
            if self.parts.contains_key(&tp) || g.revoking.contains(&tp) {
                g.offsets.consumed(&tp, next_offset, leader_epoch);
            }
        }
    }

    /// Partitions of the consumer's own choosing start at the group's committed offsets: with
    /// a `group.id` those are fetched (and auto-commit runs), without one `auto.offset.reset`
    /// decides at once.
    pub(super) fn start_from_committed(&mut self, tps: &[TopicPartition], now: Instant) {
        match &mut self.group {
            Some(g) => {
                g.offsets.assigned(tps, now);
                for tp in tps {
                    if let Some(p) = self.parts.get_mut(tp) {
                        p.awaiting_committed = true;
                    }
                }
            }
            None => {
                for tp in tps {
                    self.nothing_committed(tp);
                }
            }
        }
    }

    /// A partition to start at its committed offset has none: `auto.offset.reset` decides.
    fn nothing_committed(&mut self, tp: &TopicPartition) {
        let Some(p) = self.parts.get_mut(tp) else {
            return;
        };
        p.start = match self.cfg.auto_offset_reset {
            OffsetReset::Earliest => StartFrom::Earliest,
            // `none` also starts at the end, reported below.
            _ => StartFrom::Latest,
        };
        if self.cfg.auto_offset_reset == OffsetReset::None {
            p.stopped = true;
            self.events.push_back(FetchEvent::Error {
                topic: tp.0.clone(),
                partition: tp.1,
                error: super::FetchError::OffsetOutOfRange(-1),
            });
        }
    }

    /// A seek moved a partition's position: commits carry the new position (`Some`, after a
    /// seek to an offset) or nothing for it until records are read again (`None`).
    pub(super) fn seeked(&mut self, tp: &TopicPartition, to: Option<i64>) {
        if let Some(g) = &mut self.group {
            match to {
                Some(offset) if self.parts.contains_key(tp) => g.offsets.consumed(tp, offset, -1),
                _ => g.offsets.forget_consumed(tp),
            }
        }
    }

    /// The last committed offset known for a partition (fetched on assignment or committed
    /// since).
    pub fn committed(&self, topic: &str, partition: i32) -> Option<i64> {
        let g = self.group.as_ref()?;
        g.offsets
            .committed(&(topic.to_owned(), partition))
            .map(|c| c.offset)
    }

    /// Commits every consumed offset; [`FetchEvent::Committed`] reports the outcome, within
    /// `default.api.timeout.ms`. Outside group management (assign mode) it commits with
    /// generation -1, as Java does. `None` without a `group.id`.
    pub fn commit(&mut self, now: Instant) -> Option<CommitId> {
        let g = self.group.as_mut()?;
        let id = g.offsets.commit_by(now + self.cfg.default_api_timeout);
        g.user_commits.push(id);
        self.drive(now);
        Some(id)
    }

    /// Commits these offsets (topic, partition, next offset to read), as Java's
    /// `commitSync(offsets)`: not what was consumed. [`FetchEvent::Committed`] reports the
    /// outcome, within `default.api.timeout.ms`. `None` without a `group.id`.
    pub fn commit_offsets(
        &mut self,
        offsets: Vec<(String, i32, i64)>,
        now: Instant,
    ) -> Option<CommitId> {
        let g = self.group.as_mut()?;
        let offsets = offsets
            .into_iter()
            .map(|(t, p, offset)| {
                let c = crate::group::offsets::Committed {
                    offset,
                    leader_epoch: -1,
                };
                ((t, p), c)
            })
            .collect();
        let id = g
            .offsets
            .commit_offsets(offsets, now + self.cfg.default_api_timeout);
        g.user_commits.push(id);
        self.drive(now);
        Some(id)
    }

    /// Looks up the group's committed offsets of `tps` (whether this consumer holds them or
    /// not) with OffsetFetch; [`FetchEvent::CommittedOffsets`] reports them, within
    /// `default.api.timeout.ms`. `None` without a `group.id`.
    pub fn lookup_committed(&mut self, tps: Vec<TopicPartition>, now: Instant) -> Option<LookupId> {
        let g = self.group.as_mut()?;
        let id = g
            .offsets
            .lookup(tps, Some(now + self.cfg.default_api_timeout));
        self.drive(now);
        Some(id)
    }

    /// The application finished with a [`FetchEvent::Revoking`] (after [`Consumer::consumed`]
    /// reported the last records it took). With `enable.auto.commit`, what was consumed is
    /// committed first, and the rebalance goes on when that commit ends.
    pub fn ack_revocation(&mut self, now: Instant) {
        if let Some(g) = &mut self.group {
            if g.revoke_commit.is_some() || g.revoking.is_empty() {
                // Acknowledged already (the commit acknowledges when it ends), or nothing
                // is being revoked.
                return;
            }
            if g.auto_commit {
                g.revoke_commit = Some(g.offsets.commit());
            } else {
                let gone = std::mem::take(&mut g.revoking);
                g.offsets.removed(&gone);
                g.membership.revoked(now);
            }
        }
        self.drive(now);
    }

    /// Leaves the group (after a last automatic commit); [`FetchEvent::Left`] follows.
    pub fn leave(&mut self, now: Instant) {
        if let Some(g) = &mut self.group {
            if g.auto_commit && g.membership.is_stable() {
                // Commit first: after LeaveGroup the generation is over.
                g.leave_commit = Some(g.offsets.commit());
            } else {
                g.membership.leave(now);
            }
        }
        self.drive(now);
    }

    /// Whether the consumer is in a group (or joining one): closing it must leave.
    pub fn is_group_member(&self) -> bool {
        self.group
            .as_ref()
            .is_some_and(|g| g.membership.is_active())
    }

    /// The group's next wake-up after now. Each part's time is taken only if still ahead: a
    /// retry time already passed (waiting on the coordinator, say) must not hide a later
    /// deadline (found by the simulation, seed 145: a commit outlived default.api.timeout.ms
    /// by 4 s behind an offsets retry time that had passed).
    pub(super) fn group_timeout(&self) -> Option<Instant> {
        let g = self.group.as_ref()?;
        // Passed times are skipped one by one: the earliest passed one must not hide the
        // rest (seed 5201).
        g.membership
            .deadlines()
            .chain(g.offsets.deadlines())
            .filter(|t| *t > self.now)
            .min()
    }

    /// One step of the group: requests out, events in. Handling an event can make a request
    /// due (a rejoin after a revocation's commit, LeaveGroup after the last commit), so another
    /// round follows while events came, a few at most.
    pub(super) fn drive_group(&mut self, now: Instant) {
        let Some(g) = &mut self.group else { return };
        g.membership.handle_timeout(now);
        g.offsets.handle_timeout(now, self.net.last_problem());
        for _ in 0..3 {
            self.leader_assignment(now);
            if let Some(g) = &mut self.group {
                g.membership.reconcile(&mut self.metadata, now);
            }
            self.group_requests(now);
            if !self.group_events(now) {
                break;
            }
        }
    }

    fn group_requests(&mut self, now: Instant) {
        let Some(g) = &mut self.group else { return };
        let lost = g
            .membership
            .coordinator()
            .is_some_and(|(node, _)| self.net.take_coordinator_failure(*node));
        if lost && !g.coordinator_warned {
            g.coordinator_warned = true;
            tracing::warn!(
                problem = self.net.last_problem(),
                "lost the connection to the group coordinator; looking it up again"
            );
        } else if lost {
            tracing::debug!(
                problem = self.net.last_problem(),
                "the group coordinator is still out of reach; looking it up again"
            );
        }
        if g.offsets.take_coordinator_moved() || lost {
            g.membership.forget_coordinator();
        }
        // Commits carry the generation they are made in: a live one, or -1 outside group
        // management (assign mode, as Java commits). A member between generations (joining,
        // or dropped after max.poll.interval.ms) cannot commit: its commits fail at once.
        let generation = if g.membership.is_stable() {
            let (generation, member) = g.membership.generation();
            Some((generation, member.to_owned()))
        } else if g.membership.is_idle() {
            Some((-1, String::new()))
        } else {
            None
        };
        if generation.is_none() {
            g.offsets.fail_queued_commits();
        }
        // The coordinator is needed by the membership, and by offsets even outside it.
        g.membership.want_coordinator(g.offsets.wants_coordinator());
        if !g.membership.needs_requests() {
            return; // not subscribed (or left) and nothing to commit: connect nothing
        }
        // Membership: FindCoordinator to any node, the rest to the coordinator.
        let coordinator = g.membership.coordinator().cloned();
        let conn = match &coordinator {
            None => self.net.least_loaded(now),
            Some((node, addr)) => {
                self.net.learn_node(*node, addr.clone());
                self.net.ready(*node, Purpose::Coordinator, now)
            }
        };
        if let Some(conn) = conn {
            if let Some((_, req)) = g.membership.poll_request(now) {
                match send_group(&mut self.net, &self.cfg, conn, &req, now) {
                    Ok(_) => {}
                    Err(RequestSendError::Version(_)) => g.membership.handle_unsupported(now),
                    Err(_) => g.membership.handle_failure(now),
                }
            }
        }

        // Offsets, on the coordinator's connection too.
        if let Some((node, _)) = &coordinator {
            if let Some(conn) = self.net.ready(*node, Purpose::Coordinator, now) {
                let req = g
                    .offsets
                    .poll_request(generation.as_ref().map(|(g, m)| (*g, m.as_str())), now);
                let sent = match &req {
                    Some(OffsetRequest::Fetch(r)) => {
                        Some((false, self.net.send(conn, r, Tag::Offsets(false), now)))
                    }
                    Some(OffsetRequest::Commit(r)) => {
                        Some((true, self.net.send(conn, r, Tag::Offsets(true), now)))
                    }
                    None => None,
                };
                match sent {
                    Some((commit, Err(_))) => g.offsets.handle_failure(commit, now),
                    Some((true, Ok(_))) => self.metrics.commit_sent(now),
                    _ => {}
                }
            }
        }
    }

    /// Handles the sub-machines' events; returns whether there were any.
    fn group_events(&mut self, now: Instant) -> bool {
        let mut any = self.void_revocation();
        loop {
            let Some(g) = &mut self.group else { return any };
            let event = match g.membership.poll_event() {
                Some(e) => Some(Ok(e)),
                None => g.offsets.poll_event().map(Err),
            };
            let Some(event) = event else {
                return self.void_revocation() || any;
            };
            any = true;
            match event {
                Ok(GroupEvent::Assigned(tps)) => {
                    g.offsets.assigned(&tps, now);
                    for tp in &tps {
                        self.metadata.use_topic(&tp.0, now);
                        self.next_gen += 1;
                        let mut part = Self::part(StartFrom::Latest, self.next_gen);
                        part.awaiting_committed = true;
                        self.parts.insert(tp.clone(), part);
                    }
                    tracing::info!(partitions = ?tps, "partitions assigned");
                    self.events.push_back(FetchEvent::Assigned(tps));
                }
                Ok(GroupEvent::Revoking(tps)) => {
                    for tp in &tps {
                        self.parts.remove(tp);
                    }
                    // The application acknowledges (and with auto-commit, its consumed
                    // offsets are committed) once it reported what it took.
                    g.revoking.extend(tps.iter().cloned());
                    tracing::info!(partitions = ?tps, "partitions revoked");
                    self.events.push_back(FetchEvent::Revoking(tps));
                }
                Ok(GroupEvent::Lost(tps)) => {
                    for tp in &tps {
                        self.parts.remove(tp);
                    }
                    g.offsets.removed(&tps);
                    tracing::warn!(partitions = ?tps, "partitions lost");
                    self.events.push_back(FetchEvent::Lost(tps));
                }
                Ok(GroupEvent::Fatal(e)) => {
                    tracing::error!(error = %e, "group membership failed");
                    self.events.push_back(FetchEvent::GroupFailed(e))
                }
                Ok(GroupEvent::Left) => self.events.push_back(FetchEvent::Left),
                Err(OffsetEvent::Fetched(list)) => {
                    for (tp, committed) in list {
                        // A partition sought elsewhere meanwhile keeps the seek.
                        let Some(p) = self.parts.get_mut(&tp).filter(|p| p.awaiting_committed)
                        else {
                            continue;
                        };
                        p.awaiting_committed = false;
                        match committed {
                            Some(c) => {
                                p.position = Some(c.offset);
                                // KIP-320: a committed epoch is checked against the leader's
                                // log before reading on from it.
                                p.epoch = c.leader_epoch;
                                p.validate = c.leader_epoch >= 0;
                            }
                            None => self.nothing_committed(&tp),
                        }
                    }
                }
                Err(OffsetEvent::Commit(id, result)) => {
                    if g.revoke_commit == Some(id) {
                        g.revoke_commit = None;
                        let gone = std::mem::take(&mut g.revoking);
                        g.offsets.removed(&gone);
                        g.membership.revoked(now);
                    }
                    if g.leave_commit == Some(id) {
                        g.leave_commit = None;
                        g.membership.leave(now);
                    }
                    if let Some(i) = g.user_commits.iter().position(|c| *c == id) {
                        g.user_commits.swap_remove(i);
                        self.events.push_back(FetchEvent::Committed(id, result));
                    }
                }
                Err(OffsetEvent::Looked(id, result)) => {
                    let result = result.map(|list| {
                        list.into_iter()
                            .map(|(tp, c)| (tp, c.map(|c| c.offset)))
                            .collect()
                    });
                    self.events
                        .push_back(FetchEvent::CommittedOffsets(id, result));
                }
            }
        }
    }

    /// A revocation the application had not finished when the membership was lost (it
    /// stalled past max.poll.interval.ms, or the session expired) is void: its partitions are
    /// lost, not handed over, and what was consumed of them must not go out in a later
    /// generation's commit (found by the simulation, seed 24694). Returns whether it was.
    fn void_revocation(&mut self) -> bool {
        let Some(g) = &mut self.group else {
            return false;
        };
        if g.revoking.is_empty() || g.membership.is_revoking() {
            return false;
        }
        let gone = std::mem::take(&mut g.revoking);
        g.offsets.removed(&gone);
        self.events.push_back(FetchEvent::Lost(gone));
        true
    }

    /// As the group leader: assign the subscribed topics' partitions. A topic with no
    /// metadata once a refresh answered after the join (it does not exist, or is not
    /// authorised) is left out and reported, as Java does, rather than holding the whole group
    /// (the leader sends no heartbeat while it assigns).
    fn leader_assignment(&mut self, now: Instant) {
        let Some(g) = &mut self.group else { return };
        let Some(topics) = g.membership.topics_to_assign() else {
            g.assigning_since = None;
            return;
        };
        let since = *g.assigning_since.get_or_insert(now);
        let mut counts = BTreeMap::new();
        let mut missing = Vec::new();
        for t in topics {
            self.metadata.use_topic(&t, now);
            match self.metadata.topic(&t) {
                Some(info) => {
                    counts.insert(t, info.partitions.len() as i32);
                }
                None => missing.push(t),
            }
        }
        if !missing.is_empty() {
            let answered = self.metadata.refreshed_at().is_some_and(|at| at >= since);
            if !answered {
                self.metadata.request_update();
                return;
            }
            for topic in &missing {
                self.events
                    .push_back(FetchEvent::UnknownTopic(topic.clone()));
            }
        }
        g.membership.assign(&counts, now);
        g.assigning_since = None;
        // Unknown topics count as having no partitions: when one appears, the leader rejoins.
        for topic in missing {
            counts.insert(topic, 0);
        }
        g.snapshot = Some((g.membership.generation().0, counts));
    }

    /// As the leader of a stable generation: a subscribed topic's partition count changed
    /// (a topic created, partitions added) since the assignment was made, so the group
    /// rebalances, as Java's leader does.
    pub(super) fn check_assignment_snapshot(&mut self) {
        let Some(g) = &mut self.group else { return };
        let Some((generation, counts)) = &g.snapshot else {
            return;
        };
        if *generation != g.membership.generation().0 {
            g.snapshot = None;
            return;
        }
        let changed = counts.iter().any(|(t, n)| {
            let now = self
                .metadata
                .topic(t)
                .map_or(0, |i| i.partitions.len() as i32);
            now != *n
        });
        if changed && g.membership.rejoin_needed() {
            g.snapshot = None;
        }
    }

    pub(super) fn on_group_response(&mut self, tag: Tag, body: ResponseBody, now: Instant) {
        if tag == Tag::Offsets(true) {
            self.metrics.commit_answered(now);
        }
        let Some(g) = &mut self.group else { return };
        // An answer from the coordinator (not a lookup's, which any broker gives) ends an
        // episode of its loss.
        if !matches!(body, ResponseBody::FindCoordinator(_)) {
            g.coordinator_warned = false;
        }
        match tag {
            Tag::Group => g.membership.handle_response(body, now),
            Tag::Offsets(_) => g.offsets.handle_response(body, now),
            _ => unreachable!("only group tags come here"),
        }
    }

    pub(super) fn on_group_failure(&mut self, tag: Tag, now: Instant) {
        if tag == Tag::Offsets(true) {
            self.metrics.commit_failed();
        }
        let Some(g) = &mut self.group else { return };
        match tag {
            Tag::Group => g.membership.handle_failure(now),
            Tag::Offsets(commit) => g.offsets.handle_failure(commit, now),
            _ => unreachable!("only group tags come here"),
        }
    }
}

/// Sends a membership request: given the network and the configuration, not the consumer,
/// so that the caller keeps its hold on the group's state.
fn send_group(
    net: &mut Network<Tag>,
    cfg: &ConsumerConfig,
    conn: ConnId,
    req: &GroupRequest,
    now: Instant,
) -> Result<i16, RequestSendError> {
    match req {
        GroupRequest::FindCoordinator(r) => net.send(conn, r, Tag::Group, now),
        // The coordinator holds a JoinGroup until the group's members have rejoined, for
        // up to the rebalance timeout: Java waits that long, plus 5 s.
        GroupRequest::JoinGroup(r) => {
            let timeout = cfg
                .request_timeout
                .max(cfg.max_poll_interval + std::time::Duration::from_secs(5));
            net.send_timeout(conn, r, Tag::Group, timeout, now)
        }
        GroupRequest::SyncGroup(r) => net.send(conn, r, Tag::Group, now),
        GroupRequest::Heartbeat(r) => net.send(conn, r, Tag::Group, now),
        GroupRequest::LeaveGroup(r) => net.send(conn, r, Tag::Group, now),
        GroupRequest::ConsumerHeartbeat(r) => net.send(conn, r, Tag::Group, now),
    }
}
