//! The fetcher in a consumer group: it drives the membership and offsets sub-machines over
//! the shared connection manager (FindCoordinator to the least-loaded node; everything else
//! to the coordinator over a connection of its own, so heartbeats never wait behind a
//! long-polling fetch), and turns assignments into partitions to fetch.

use std::collections::BTreeMap;

use kafka_proto::api::ResponseBody;

use super::{FetchEvent, Fetcher, StartFrom, Tag};
use crate::config::{ConsumerConfig, OffsetReset};
use crate::group::membership::{GroupEvent, GroupRequest, Membership};
use crate::group::offsets::{CommitId, OffsetEvent, OffsetRequest, Offsets};
use crate::net::{ConnId, Purpose, SendError};
use crate::producer::TopicPartition;
use crate::time::Instant;

/// The group side of a fetcher.
#[derive(Debug)]
pub(super) struct Group {
    membership: Membership,
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
}

impl Group {
    pub(super) fn new(cfg: &ConsumerConfig) -> Option<Group> {
        let membership = Membership::new(cfg)?;
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
        })
    }
}

impl Fetcher {
    /// Joins the group (`group.id`) subscribed to `topics`. Nothing connects before this (or
    /// an `assign`). Panics without a `group.id`: assign mode has no subscriptions.
    pub fn subscribe(&mut self, topics: Vec<String>, now: Instant) {
        let g = self
            .group
            .as_mut()
            .expect("subscribe needs group.id in the consumer config");
        for t in &topics {
            self.metadata.use_topic(t, now);
        }
        g.membership.subscribe(topics, now);
        self.drive(now);
    }

    /// The application asked for records (it is alive: `max.poll.interval.ms`).
    pub fn polled(&mut self, now: Instant) {
        if let Some(g) = &mut self.group {
            g.membership.polled(now);
        }
        self.drive(now);
    }

    /// The application has consumed `partition` up to `next_offset` - 1, a record written in
    /// `leader_epoch` (the `leader_epoch` of its [`FetchEvent::Records`]; -1 after a seek):
    /// what commits will carry.
    pub fn consumed(&mut self, topic: &str, partition: i32, next_offset: i64, leader_epoch: i32) {
        if let Some(g) = &mut self.group {
            g.offsets
                .consumed(&(topic.to_owned(), partition), next_offset, leader_epoch);
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

    /// Commits every consumed offset; [`FetchEvent::Committed`] reports the outcome.
    pub fn commit(&mut self, now: Instant) -> Option<CommitId> {
        let g = self.group.as_mut()?;
        let id = g.offsets.commit();
        g.user_commits.push(id);
        self.drive(now);
        Some(id)
    }

    /// The application finished with a [`FetchEvent::Revoking`].
    pub fn ack_revocation(&mut self, now: Instant) {
        if let Some(g) = &mut self.group {
            if g.revoke_commit.is_some() {
                // The automatic commit of the revoked partitions acknowledges when it ends.
                return;
            }
            let gone = std::mem::take(&mut g.revoking);
            g.offsets.removed(&gone);
            g.membership.revoked(now);
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

    pub(super) fn group_timeout(&self) -> Option<Instant> {
        let g = self.group.as_ref()?;
        [g.membership.poll_timeout(), g.offsets.poll_timeout()]
            .into_iter()
            .flatten()
            .min()
    }

    /// One step of the group: requests out, events in. Handling an event can make a request
    /// due (a rejoin after a revocation's commit, LeaveGroup after the last commit), so another
    /// round follows while events came, a few at most.
    pub(super) fn drive_group(&mut self, now: Instant) {
        let Some(g) = &mut self.group else { return };
        g.membership.handle_timeout(now);
        for _ in 0..3 {
            self.leader_assignment(now);
            self.group_requests(now);
            if !self.group_events(now) {
                break;
            }
        }
    }

    fn group_requests(&mut self, now: Instant) {
        let Some(g) = &mut self.group else { return };
        if !g.membership.is_active() {
            return; // not subscribed (or left): connect nothing
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
            let g = self.group.as_mut().expect("checked");
            if let Some((_, req)) = g.membership.poll_request(now) {
                if self.send_group(conn, &req, now).is_err() {
                    let g = self.group.as_mut().expect("checked");
                    g.membership.handle_failure(now);
                }
            }
        }

        // Offsets, on the coordinator's connection too, in a live generation.
        if let Some((node, _)) = &coordinator {
            if let Some(conn) = self.net.ready(*node, Purpose::Coordinator, now) {
                let g = self.group.as_mut().expect("checked");
                let (generation, member) = g.membership.generation();
                let live = g
                    .membership
                    .is_stable()
                    .then(|| (generation, member.to_owned()));
                let req = g
                    .offsets
                    .poll_request(live.as_ref().map(|(g, m)| (*g, m.as_str())), now);
                let sent = match &req {
                    Some(OffsetRequest::Fetch(r)) => Some((
                        false,
                        self.net.send(conn, r, Tag::Offsets(false), true, now),
                    )),
                    Some(OffsetRequest::Commit(r)) => {
                        Some((true, self.net.send(conn, r, Tag::Offsets(true), true, now)))
                    }
                    None => None,
                };
                if let Some((commit, Err(_))) = sent {
                    let g = self.group.as_mut().expect("checked");
                    g.offsets.handle_failure(commit, now);
                }
            }
        }
    }

    fn send_group(
        &mut self,
        conn: ConnId,
        req: &GroupRequest,
        now: Instant,
    ) -> Result<i16, SendError> {
        let net = &mut self.net;
        match req {
            GroupRequest::FindCoordinator(r) => net.send(conn, r, Tag::Group, true, now),
            GroupRequest::JoinGroup(r) => net.send(conn, r, Tag::Group, true, now),
            GroupRequest::SyncGroup(r) => net.send(conn, r, Tag::Group, true, now),
            GroupRequest::Heartbeat(r) => net.send(conn, r, Tag::Group, true, now),
            GroupRequest::LeaveGroup(r) => net.send(conn, r, Tag::Group, true, now),
        }
    }

    /// Handles the sub-machines' events; returns whether there were any.
    fn group_events(&mut self, now: Instant) -> bool {
        let mut any = false;
        loop {
            let Some(g) = &mut self.group else { return any };
            let event = match g.membership.poll_event() {
                Some(e) => Some(Ok(e)),
                None => g.offsets.poll_event().map(Err),
            };
            let Some(event) = event else { return any };
            any = true;
            match event {
                Ok(GroupEvent::Assigned(tps)) => {
                    g.offsets.assigned(&tps, now);
                    for tp in &tps {
                        self.metadata.use_topic(&tp.0, now);
                        let mut part = Self::part(StartFrom::Latest);
                        part.awaiting_committed = true;
                        self.parts.insert(tp.clone(), part);
                    }
                    self.events.push_back(FetchEvent::Assigned(tps));
                }
                Ok(GroupEvent::Revoking(tps)) => {
                    for tp in &tps {
                        self.parts.remove(tp);
                    }
                    g.revoking.extend(tps.iter().cloned());
                    if g.auto_commit {
                        // Commit what was consumed, then let the rebalance go on.
                        g.revoke_commit = Some(g.offsets.commit());
                    }
                    self.events.push_back(FetchEvent::Revoking(tps));
                }
                Ok(GroupEvent::Lost(tps)) => {
                    for tp in &tps {
                        self.parts.remove(tp);
                    }
                    g.offsets.removed(&tps);
                    self.events.push_back(FetchEvent::Lost(tps));
                }
                Ok(GroupEvent::Fatal(e)) => self.events.push_back(FetchEvent::GroupFailed(e)),
                Ok(GroupEvent::Left) => self.events.push_back(FetchEvent::Left),
                Err(OffsetEvent::Fetched(list)) => {
                    for (tp, committed) in list {
                        let Some(p) = self.parts.get_mut(&tp) else {
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
                            None => {
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
            }
        }
    }

    /// As the group leader: assign once every subscribed topic's partition count is known.
    fn leader_assignment(&mut self, now: Instant) {
        let Some(g) = &mut self.group else { return };
        let Some(topics) = g.membership.topics_to_assign() else {
            return;
        };
        let mut counts = BTreeMap::new();
        let mut missing = false;
        for t in topics {
            self.metadata.use_topic(&t, now);
            match self.metadata.topic(&t) {
                Some(info) => {
                    counts.insert(t, info.partitions.len() as i32);
                }
                None => missing = true,
            }
        }
        if !missing {
            g.membership.assign(&counts, now);
        }
    }

    pub(super) fn on_group_response(&mut self, tag: Tag, body: ResponseBody, now: Instant) {
        let Some(g) = &mut self.group else { return };
        match tag {
            Tag::Group => g.membership.handle_response(body, now),
            Tag::Offsets(_) => g.offsets.handle_response(body, now),
            _ => unreachable!("only group tags come here"),
        }
    }

    pub(super) fn on_group_failure(&mut self, tag: Tag, now: Instant) {
        let Some(g) = &mut self.group else { return };
        match tag {
            Tag::Group => g.membership.handle_failure(now),
            Tag::Offsets(commit) => g.offsets.handle_failure(commit, now),
            _ => unreachable!("only group tags come here"),
        }
    }
}
