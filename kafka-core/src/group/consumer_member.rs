//! Group membership under the consumer protocol of KIP-848 (Kafka 4.0+), as a sans-IO
//! sub-machine beside the classic [`super::membership::Membership`]: one request,
//! ConsumerGroupHeartbeat, joins, stays alive, acknowledges and leaves; the broker computes
//! the assignment, and the member reconciles towards it as Java's consumer does: partitions
//! taken away are revoked first (the application commits what it consumed of them), and
//! only then are the new ones taken; the next heartbeat says what is owned.
//!
//! Epochs replace generations: commits carry the member epoch. A member the coordinator
//! fenced (FENCED_MEMBER_EPOCH, UNKNOWN_MEMBER_ID) loses what it owned and joins again with
//! epoch 0 and the same member id, which the client generates (ConsumerGroupHeartbeat v1).

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::time::Duration;

use kafka_proto::api::ResponseBody;
use kafka_proto::messages::consumer_group_heartbeat_request::{
    ConsumerGroupHeartbeatRequest, TopicPartitions,
};
use kafka_proto::messages::consumer_group_heartbeat_response::ConsumerGroupHeartbeatResponse;
use kafka_proto::ErrorCode;
use uuid::Uuid;

use super::assignor::TopicPartition;
use super::membership::{GroupEvent, GroupRequest, Target};
use crate::backoff::Backoff;
use crate::config::{ConsumerConfig, HostPort};
use crate::metadata::Metadata;
use crate::net::NodeId;
use crate::rng::Rng;
use crate::time::Instant;

/// The epoch a heartbeat carries to join (or rejoin after being fenced).
const JOIN_EPOCH: i32 = 0;
/// The epoch a dynamic member leaves with.
const LEAVE_EPOCH: i32 = -1;
/// The epoch a static member leaves with: its assignment is kept for its return.
const STATIC_LEAVE_EPOCH: i32 = -2;

/// What the member subscribes to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Subscription {
    /// These topics.
    Topics(Vec<String>),
    /// The topics whose names match this regular expression, evaluated by the broker (RE2/J
    /// syntax).
    Pattern(String),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// Not subscribed.
    Idle,
    /// Subscribed: joining, reconciling or stable (the epoch says which).
    Active,
    /// A leave heartbeat is due or in flight.
    Leaving,
    Left,
    Failed,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Pending {
    Find,
    Heartbeat,
    Leave,
}

/// The fields the coordinator has acknowledged, so later heartbeats can leave them out
/// (KIP-848: null means unchanged). Forgotten after any failure: the next heartbeat is whole.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
struct Sent {
    subscription: Option<Subscription>,
    owned: Option<BTreeSet<(Uuid, i32)>>,
}

/// The member's side of the consumer group protocol (KIP-848).
#[derive(Debug)]
pub struct ConsumerMembership {
    group_id: String,
    instance_id: Option<String>,
    /// `client.rack`, sent with each whole heartbeat (the coordinator's assignors may place
    /// partitions by rack).
    rack: Option<String>,
    rebalance_timeout: Duration,
    remote_assignor: Option<String>,
    backoff: Backoff,
    rng: Rng,

    state: State,
    subscription: Option<Subscription>,
    coordinator: Option<(NodeId, HostPort)>,
    member_id: String,
    epoch: i32,
    heartbeat_interval: Duration,
    next_heartbeat: Instant,
    pending: Option<Pending>,
    /// What the request in flight carried, acknowledged when it is answered.
    in_flight: Option<Sent>,
    sent: Sent,
    retry_at: Option<Instant>,
    failures: u32,
    /// The latest assignment the coordinator gave, by topic id.
    target: Option<BTreeSet<(Uuid, i32)>>,
    /// A new target arrived whose topic names are not all known: metadata is asked once for it.
    names_wanted: bool,
    owned: BTreeMap<TopicPartition, Uuid>,
    /// Partitions handed to the application to revoke, awaiting [`ConsumerMembership::revoked`].
    revoking: Option<Vec<TopicPartition>>,
    last_poll: Instant,
    rejoin_on_poll: bool,
    want_coordinator: bool,
    events: VecDeque<GroupEvent>,
}

impl ConsumerMembership {
    /// A membership for `cfg.group_id` (which must be set).
    pub fn new(cfg: &ConsumerConfig) -> Option<ConsumerMembership> {
        let mut rng = Rng::new(cfg.random_seed ^ 0x6b69_7038);
        // ConsumerGroupHeartbeat v1: the member id is the client's, kept for its lifetime.
        let member_id = Uuid::from_u64_pair(rng.next_u64(), rng.next_u64()).to_string();
        Some(ConsumerMembership {
            group_id: cfg.group_id.clone()?,
            instance_id: cfg.group_instance_id.clone(),
            rack: (!cfg.client_rack.is_empty()).then(|| cfg.client_rack.clone()),
            rebalance_timeout: cfg.max_poll_interval,
            remote_assignor: cfg.group_remote_assignor.clone(),
            backoff: Backoff::new(cfg.retry_backoff, cfg.retry_backoff_max),
            rng,
            state: State::Idle,
            subscription: None,
            coordinator: None,
            member_id,
            epoch: JOIN_EPOCH,
            heartbeat_interval: cfg.heartbeat_interval,
            next_heartbeat: Instant::ZERO,
            pending: None,
            in_flight: None,
            sent: Sent::default(),
            retry_at: None,
            failures: 0,
            target: None,
            names_wanted: false,
            owned: BTreeMap::new(),
            revoking: None,
            last_poll: Instant::ZERO,
            rejoin_on_poll: false,
            want_coordinator: false,
            events: VecDeque::new(),
        })
    }

    /// Subscribes (a changed subscription goes out with the next heartbeat, at once).
    pub fn subscribe(&mut self, subscription: Subscription, now: Instant) {
        let subscription = match subscription {
            Subscription::Topics(mut t) => {
                t.sort();
                t.dedup();
                Subscription::Topics(t)
            }
            p => p,
        };
        self.last_poll = now;
        if self.subscription.as_ref() == Some(&subscription) && self.state == State::Active {
            return;
        }
        self.subscription = Some(subscription);
        if matches!(self.state, State::Idle | State::Left) {
            self.state = State::Active;
            self.epoch = JOIN_EPOCH;
            self.sent = Sent::default();
        }
        self.next_heartbeat = now;
    }

    /// Whether the member has a subscription.
    pub fn is_subscribed(&self) -> bool {
        self.subscription.is_some()
    }

    /// The application polled (`max.poll.interval.ms`); returns true if that rejoined a
    /// member that had left because the application stopped polling.
    pub fn polled(&mut self, now: Instant) -> bool {
        self.last_poll = self.last_poll.max(now);
        if self.state == State::Left && std::mem::take(&mut self.rejoin_on_poll) {
            self.state = State::Active;
            self.epoch = JOIN_EPOCH;
            self.sent = Sent::default();
            self.next_heartbeat = now;
            return true;
        }
        false
    }

    /// The application finished a [`GroupEvent::Revoking`] (committed what it consumed): the
    /// partitions are released, the rest of the assignment is taken, and the next heartbeat,
    /// at once, acknowledges.
    pub fn revoked(&mut self, now: Instant) {
        if let Some(gone) = self.revoking.take() {
            for tp in gone {
                self.owned.remove(&tp);
            }
            self.next_heartbeat = now;
        }
    }

    /// Leaves the group: a dynamic member with epoch -1, a static one with -2 (its partitions
    /// wait for it, as its session outlives restarts).
    pub fn leave(&mut self, _now: Instant) {
        if self.state == State::Left {
            self.rejoin_on_poll = false;
            self.finish_leaving();
            return;
        }
        if !matches!(self.state, State::Active) {
            self.finish_leaving();
            return;
        }
        if self.coordinator.is_none() || self.epoch <= JOIN_EPOCH && self.pending.is_none() {
            // Never joined (nothing to undo at the coordinator).
            self.finish_leaving();
            return;
        }
        self.state = State::Leaving;
    }

    fn finish_leaving(&mut self) {
        self.state = State::Left;
        self.epoch = JOIN_EPOCH;
        self.target = None;
        self.revoking = None;
        self.owned.clear();
        if !self.rejoin_on_poll {
            self.subscription = None;
            self.events.push_back(GroupEvent::Left);
        }
    }

    /// Whether the member is in the group or on its way in or out.
    pub fn is_active(&self) -> bool {
        matches!(self.state, State::Active | State::Leaving)
    }

    /// Whether the consumer never subscribed (assign mode).
    pub fn is_idle(&self) -> bool {
        self.state == State::Idle
    }

    /// Whether something other than the membership needs the coordinator.
    pub fn want_coordinator(&mut self, want: bool) {
        self.want_coordinator = want;
    }

    /// Whether [`ConsumerMembership::poll_request`] may have something to send.
    pub fn needs_requests(&self) -> bool {
        self.is_active() || (self.want_coordinator && self.state != State::Failed)
    }

    /// The coordinator refused a request as not the coordinator: it is found again.
    pub fn forget_coordinator(&mut self) {
        if self.pending.is_none() {
            self.coordinator_gone();
        }
    }

    /// The partitions owned now (a revocation under way still counts its partitions).
    pub fn owned(&self) -> Vec<TopicPartition> {
        self.owned.keys().cloned().collect()
    }

    /// The member epoch and member id, for commits (OffsetCommit v9 carries the epoch where
    /// the classic protocol carries the generation).
    pub fn generation(&self) -> (i32, &str) {
        (self.epoch, &self.member_id)
    }

    /// The group, epoch, member id and instance id, for a transaction's offsets.
    pub fn group_metadata(&self) -> super::GroupMetadata {
        super::GroupMetadata {
            group_id: self.group_id.clone(),
            generation_id: if self.epoch > 0 { self.epoch } else { -1 },
            member_id: self.member_id.clone(),
            group_instance_id: self.instance_id.clone(),
        }
    }

    /// The coordinator, once found.
    pub fn coordinator(&self) -> Option<&(NodeId, HostPort)> {
        self.coordinator.as_ref()
    }

    /// Whether a [`GroupEvent::Revoking`] awaits [`ConsumerMembership::revoked`].
    pub fn is_revoking(&self) -> bool {
        self.revoking.is_some()
    }

    /// Whether the member holds a live epoch (commits are allowed).
    pub fn is_stable(&self) -> bool {
        self.state == State::Active && self.epoch > JOIN_EPOCH
    }

    /// Moves towards the coordinator's target assignment, resolving topic ids with
    /// `metadata`: revoke first, and take the new partitions once the revocation is
    /// acknowledged. Ids no answer has named yet ask for a listing of every topic (once per
    /// assignment or heartbeat); the resolved part goes ahead meanwhile, as in Java.
    pub fn reconcile(&mut self, metadata: &mut Metadata, now: Instant) {
        if self.state != State::Active || self.revoking.is_some() {
            return;
        }
        let Some(target) = &self.target else { return };
        let mut resolved = BTreeMap::new();
        let mut unresolved = false;
        for (id, p) in target {
            match metadata.topic_name(*id) {
                Some(name) => {
                    resolved.insert((name.to_owned(), *p), *id);
                }
                None => unresolved = true,
            }
        }
        if unresolved && std::mem::take(&mut self.names_wanted) {
            metadata.request_all_topics();
        }
        let revoked: Vec<TopicPartition> = self
            .owned
            .keys()
            .filter(|tp| !target.contains(&(self.owned[*tp], tp.1)))
            .cloned()
            .collect();
        if !revoked.is_empty() {
            self.events.push_back(GroupEvent::Revoking(revoked.clone()));
            self.revoking = Some(revoked);
            return;
        }
        let added: Vec<TopicPartition> = resolved
            .keys()
            .filter(|tp| !self.owned.contains_key(*tp))
            .cloned()
            .collect();
        if !added.is_empty() {
            for tp in &added {
                self.owned.insert(tp.clone(), resolved[tp]);
            }
            self.events.push_back(GroupEvent::Assigned(added));
            // Acknowledge at once: the coordinator waits for it to move the group on.
            self.next_heartbeat = now;
        }
    }

    fn owned_ids(&self) -> BTreeSet<(Uuid, i32)> {
        self.owned.iter().map(|(tp, id)| (*id, tp.1)).collect()
    }

    /// Everything owned is lost (another member may have it now): reported, and forgotten
    /// with the assignment being reconciled.
    fn lose_all(&mut self) {
        let lost: Vec<TopicPartition> = std::mem::take(&mut self.owned).into_keys().collect();
        if !lost.is_empty() {
            self.events.push_back(GroupEvent::Lost(lost));
        }
        self.revoking = None;
        self.target = None;
    }

    /// The membership is fenced: what it owned is lost, and it joins again with epoch 0.
    fn fenced(&mut self, now: Instant) {
        self.lose_all();
        self.epoch = JOIN_EPOCH;
        self.sent = Sent::default();
        self.next_heartbeat = now;
    }

    fn fail(&mut self, code: ErrorCode) {
        self.state = State::Failed;
        self.lose_all();
        self.events.push_back(GroupEvent::Fatal(code));
    }

    fn back_off(&mut self, now: Instant) {
        self.retry_at = Some(now + self.backoff.delay(self.failures, &mut self.rng));
        self.failures = self.failures.saturating_add(1);
    }

    fn coordinator_gone(&mut self) {
        self.coordinator = None;
        self.sent = Sent::default();
    }

    /// The next request to send, and where.
    pub fn poll_request(&mut self, now: Instant) -> Option<(Target, GroupRequest)> {
        if self.pending.is_some() || self.retry_at.is_some_and(|t| t > now) {
            return None;
        }
        let outside = matches!(self.state, State::Idle | State::Left | State::Failed);
        if outside && !(self.want_coordinator && self.state != State::Failed) {
            return None;
        }
        let Some((node, _)) = self.coordinator.clone() else {
            if self.state == State::Leaving {
                self.finish_leaving();
                return None;
            }
            self.pending = Some(Pending::Find);
            let req = super::find_coordinator_request(&self.group_id);
            return Some((Target::AnyNode, GroupRequest::FindCoordinator(req)));
        };
        let to = Target::Coordinator(node);
        match self.state {
            State::Leaving => {
                self.pending = Some(Pending::Leave);
                let epoch = if self.instance_id.is_some() {
                    STATIC_LEAVE_EPOCH
                } else {
                    LEAVE_EPOCH
                };
                let req = ConsumerGroupHeartbeatRequest {
                    group_id: self.group_id.clone(),
                    member_id: self.member_id.clone(),
                    member_epoch: epoch,
                    instance_id: self.instance_id.clone(),
                    ..Default::default()
                };
                Some((to, GroupRequest::ConsumerHeartbeat(req)))
            }
            State::Active if now >= self.next_heartbeat => {
                self.pending = Some(Pending::Heartbeat);
                self.next_heartbeat = now + self.heartbeat_interval;
                Some((
                    to,
                    GroupRequest::ConsumerHeartbeat(self.heartbeat_request()),
                ))
            }
            _ => None,
        }
    }

    /// A heartbeat: whole when joining or after a failure, otherwise only what changed since
    /// the coordinator last acknowledged it.
    fn heartbeat_request(&mut self) -> ConsumerGroupHeartbeatRequest {
        let whole = self.epoch == JOIN_EPOCH || self.sent == Sent::default();
        let owned = self.owned_ids();
        let mut req = ConsumerGroupHeartbeatRequest {
            group_id: self.group_id.clone(),
            member_id: self.member_id.clone(),
            member_epoch: self.epoch,
            ..Default::default()
        };
        let mut carried = self.sent.clone();
        if whole {
            req.instance_id = self.instance_id.clone();
            req.rack_id = self.rack.clone();
            req.rebalance_timeout_ms = millis(self.rebalance_timeout);
            req.server_assignor = self.remote_assignor.clone();
        }
        if whole || self.sent.subscription != self.subscription {
            match &self.subscription {
                Some(Subscription::Topics(t)) => req.subscribed_topic_names = Some(t.clone()),
                Some(Subscription::Pattern(p)) => req.subscribed_topic_regex = Some(p.clone()),
                None => req.subscribed_topic_names = Some(Vec::new()),
            }
            carried.subscription = self.subscription.clone();
        }
        if whole || self.sent.owned.as_ref() != Some(&owned) {
            // Joining, nothing is owned: the coordinator requires an empty list.
            let owned = if self.epoch == JOIN_EPOCH {
                BTreeSet::new()
            } else {
                owned
            };
            req.topic_partitions = Some(by_topic(&owned));
            carried.owned = Some(owned);
        }
        self.in_flight = Some(carried);
        req
    }

    /// The request in flight failed (disconnected or timed out): the coordinator is found
    /// again and the next heartbeat is whole.
    pub fn handle_failure(&mut self, now: Instant) {
        self.in_flight = None;
        match self.pending.take() {
            Some(Pending::Find) => self.back_off(now),
            Some(Pending::Leave) => self.finish_leaving(),
            Some(Pending::Heartbeat) => {
                self.coordinator_gone();
                self.back_off(now);
            }
            None => {}
        }
    }

    /// The request could not be sent at all: the broker does not speak the protocol
    /// (ConsumerGroupHeartbeat needs Apache Kafka 4.0, or 3.7+ with the new coordinator).
    pub fn unsupported(&mut self) {
        self.pending = None;
        self.in_flight = None;
        self.fail(ErrorCode::UnsupportedVersion);
    }

    /// The response to the request in flight.
    pub fn handle_response(&mut self, body: ResponseBody, now: Instant) {
        let Some(pending) = self.pending.take() else {
            return;
        };
        let carried = self.in_flight.take();
        match (pending, body) {
            (Pending::Find, ResponseBody::FindCoordinator(r)) => {
                let (code, node, addr) = super::found_coordinator(&r);
                match (code, addr) {
                    (None, Some(addr)) if node >= 0 => {
                        self.failures = 0;
                        self.retry_at = None;
                        self.coordinator = Some((node, addr));
                        self.next_heartbeat = now;
                    }
                    (Some(e), _) if fatal(e) => self.fail(e),
                    _ => self.back_off(now),
                }
            }
            (Pending::Leave, ResponseBody::ConsumerGroupHeartbeat(_)) => self.finish_leaving(),
            (Pending::Heartbeat, ResponseBody::ConsumerGroupHeartbeat(r)) => {
                if self.state != State::Active {
                    return; // left meanwhile
                }
                self.on_heartbeat(r, carried, now);
            }
            _ => debug_assert!(false, "a response that does not answer the request"),
        }
    }

    fn on_heartbeat(
        &mut self,
        r: ConsumerGroupHeartbeatResponse,
        carried: Option<Sent>,
        now: Instant,
    ) {
        match ErrorCode::from_code(r.error_code) {
            None => {
                self.failures = 0;
                self.retry_at = None;
                if let Some(id) = r.member_id.filter(|m| !m.is_empty()) {
                    // Version 0: the coordinator names the member.
                    self.member_id = id;
                }
                self.epoch = r.member_epoch;
                if let Ok(ms) = u64::try_from(r.heartbeat_interval_ms) {
                    if ms > 0 {
                        self.heartbeat_interval = Duration::from_millis(ms);
                    }
                }
                // A heartbeat acknowledged sooner (after an assignment) keeps that time.
                self.next_heartbeat = self.next_heartbeat.min(now + self.heartbeat_interval);
                if let Some(c) = carried {
                    self.sent = c;
                }
                if let Some(a) = r.assignment {
                    self.target = Some(
                        a.topic_partitions
                            .iter()
                            .flat_map(|t| t.partitions.iter().map(|p| (t.topic_id, *p)))
                            .collect(),
                    );
                    self.names_wanted = true;
                } else if self.target.is_some() {
                    // Still waiting for names, or for nothing: ask again once per heartbeat.
                    self.names_wanted = true;
                }
            }
            // GROUP_ID_NOT_FOUND: the group is gone (deleted while the member was away):
            // join it anew.
            Some(
                ErrorCode::FencedMemberEpoch
                | ErrorCode::UnknownMemberId
                | ErrorCode::GroupIdNotFound,
            ) => self.fenced(now),
            Some(ErrorCode::NotCoordinator | ErrorCode::CoordinatorNotAvailable) => {
                self.coordinator_gone()
            }
            Some(e) if fatal(e) => self.fail(e),
            // COORDINATOR_LOAD_IN_PROGRESS and other retriable errors: again, whole.
            Some(_) => {
                self.sent = Sent::default();
                self.back_off(now);
            }
        }
    }

    /// Time passed: an application that stopped polling for `max.poll.interval.ms` has its
    /// partitions lost, and the member leaves; polling again rejoins.
    pub fn handle_timeout(&mut self, now: Instant) {
        if self.retry_at.is_some_and(|t| t <= now) {
            self.retry_at = None;
        }
        if self.poll_deadline().is_some_and(|t| now > t) {
            self.lose_all();
            self.rejoin_on_poll = true;
            if self.coordinator.is_none() || self.epoch <= JOIN_EPOCH && self.pending.is_none() {
                self.finish_leaving();
            } else {
                self.state = State::Leaving;
            }
        }
    }

    fn poll_deadline(&self) -> Option<Instant> {
        (self.state == State::Active).then(|| self.last_poll + self.rebalance_timeout)
    }

    /// The next event for the application.
    pub fn poll_event(&mut self) -> Option<GroupEvent> {
        self.events.pop_front()
    }

    /// Every time the membership wants to be woken at (some may have passed).
    pub fn deadlines(&self) -> impl Iterator<Item = Instant> {
        if matches!(self.state, State::Idle | State::Left | State::Failed) {
            let wanted = self.want_coordinator && self.state != State::Failed;
            let retry = self
                .retry_at
                .filter(|_| wanted && self.pending.is_none() && self.coordinator.is_none());
            return [retry, None, None].into_iter().flatten();
        }
        let idle = self.pending.is_none();
        let heartbeat = (idle && self.coordinator.is_some()).then_some(self.next_heartbeat);
        let retry = self.retry_at.filter(|_| idle);
        let poll = self.poll_deadline().map(|t| t + Duration::from_nanos(1));
        [retry, heartbeat, poll].into_iter().flatten()
    }
}

fn by_topic(owned: &BTreeSet<(Uuid, i32)>) -> Vec<TopicPartitions> {
    let mut out: Vec<TopicPartitions> = Vec::new();
    for (id, p) in owned {
        match out.last_mut() {
            Some(t) if t.topic_id == *id => t.partitions.push(*p),
            _ => out.push(TopicPartitions {
                topic_id: *id,
                partitions: vec![*p],
                ..Default::default()
            }),
        }
    }
    out
}

/// Errors no retry fixes: the membership stops and the application hears why.
fn fatal(e: ErrorCode) -> bool {
    matches!(
        e,
        ErrorCode::FencedInstanceId
            | ErrorCode::UnreleasedInstanceId
            | ErrorCode::GroupAuthorizationFailed
            | ErrorCode::TopicAuthorizationFailed
            | ErrorCode::InvalidGroupId
            | ErrorCode::InvalidRequest
            | ErrorCode::InvalidRegularExpression
            | ErrorCode::UnsupportedAssignor
            | ErrorCode::GroupMaxSizeReached
            | ErrorCode::UnsupportedVersion
    )
}

fn millis(d: Duration) -> i32 {
    i32::try_from(d.as_millis()).unwrap_or(i32::MAX)
}

#[path = "consumer_member_tests.rs"]
#[cfg(test)]
mod tests;
