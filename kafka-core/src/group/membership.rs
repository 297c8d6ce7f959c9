//! Group membership in the classic protocol, as a sans-IO sub-machine: it says which request
//! to send next (FindCoordinator, JoinGroup, SyncGroup, Heartbeat, LeaveGroup) and to whom,
//! takes their responses, and reports assignment changes. The consumer routes its requests
//! (FindCoordinator to the least-loaded node, the rest to the coordinator over a connection of
//! its own) and feeds back responses and failures.
//!
//! Error handling follows the Java consumer: KIP-394's member-id retry, coordinator moves and
//! loads, rebalances, fenced static members, and lost memberships (ILLEGAL_GENERATION,
//! UNKNOWN_MEMBER_ID, an expired session or `max.poll.interval.ms`).

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::time::Duration;

use kafka_proto::api::ResponseBody;
use kafka_proto::messages::find_coordinator_request::FindCoordinatorRequest;
use kafka_proto::messages::heartbeat_request::HeartbeatRequest;
use kafka_proto::messages::join_group_request::{JoinGroupRequest, JoinGroupRequestProtocol};
use kafka_proto::messages::leave_group_request::{LeaveGroupRequest, MemberIdentity};
use kafka_proto::messages::sync_group_request::{SyncGroupRequest, SyncGroupRequestAssignment};
use kafka_proto::ErrorCode;

use super::assignor::{Assignor, MemberSubscription, RebalanceProtocol, TopicPartition};
use super::payload;
use crate::backoff::Backoff;
use crate::config::{ConsumerConfig, HostPort};
use crate::net::NodeId;
use crate::rng::Rng;
use crate::time::Instant;

/// Where a group request goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Target {
    /// Any broker (the least-loaded one): FindCoordinator.
    AnyNode,
    /// The group coordinator, over its own connection.
    Coordinator(NodeId),
}

/// A request the membership wants sent.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum GroupRequest {
    /// Find the coordinator.
    FindCoordinator(FindCoordinatorRequest),
    /// Join (or rejoin) the group.
    JoinGroup(JoinGroupRequest),
    /// Sync: the leader sends the assignment, followers get theirs.
    SyncGroup(SyncGroupRequest),
    /// Stay alive.
    Heartbeat(HeartbeatRequest),
    /// Leave.
    LeaveGroup(LeaveGroupRequest),
    /// The consumer protocol's one request (KIP-848): join, stay, acknowledge, leave.
    ConsumerHeartbeat(
        kafka_proto::messages::consumer_group_heartbeat_request::ConsumerGroupHeartbeatRequest,
    ),
}

/// What the application must hear about.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum GroupEvent {
    /// These partitions are now ours: fetch them from their committed offsets.
    Assigned(Vec<TopicPartition>),
    /// These partitions are being taken away. Stop fetching them, commit what was consumed,
    /// then call [`Membership::revoked`]; the rebalance waits for it.
    Revoking(Vec<TopicPartition>),
    /// These partitions were lost without a clean handover (the membership expired): another
    /// member may already own them, so nothing of them may be committed.
    Lost(Vec<TopicPartition>),
    /// The membership stopped for good.
    Fatal(ErrorCode),
    /// We left the group (after [`Membership::leave`]).
    Left,
}

#[derive(Debug, Clone, PartialEq)]
enum State {
    /// Not subscribed.
    Idle,
    /// Ready to join once a coordinator is known and any backoff passed.
    NeedJoin,
    /// Eager protocol: waiting for the application to finish revoking before rejoining.
    RevokingBeforeJoin,
    Joining,
    /// The leader waits for partition counts of these topics.
    Assigning {
        members: Vec<MemberSubscription>,
        assignor: Assignor,
    },
    /// SyncGroup to send (`Some`) or in flight (`None`).
    Syncing(Option<SyncGroupRequest>),
    Stable,
    /// Cooperative protocol: waiting for the application to finish revoking, then rejoining.
    RevokingAfterSync,
    Leaving,
    Left,
    Failed,
}

/// Which request is in flight (one at a time).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Pending {
    Find,
    Join,
    Sync,
    Heartbeat,
    Leave,
}

/// The member's side of the group protocol.
#[derive(Debug)]
pub struct Membership {
    group_id: String,
    instance_id: Option<String>,
    /// `client.rack`, in the subscription's rack field (v3) for the leader's assignor.
    rack: Option<String>,
    session_timeout: Duration,
    heartbeat_interval: Duration,
    rebalance_timeout: Duration,
    assignors: Vec<Assignor>,
    backoff: Backoff,
    rng: Rng,

    state: State,
    topics: Vec<String>,
    coordinator: Option<(NodeId, HostPort)>,
    member_id: String,
    generation: i32,
    protocol: Option<Assignor>,
    owned: Vec<TopicPartition>,
    pending: Option<Pending>,
    retry_at: Option<Instant>,
    failures: u32,
    next_heartbeat: Instant,
    last_heartbeat_ok: Instant,
    last_poll: Instant,
    /// Left because the application stopped polling: its next poll rejoins.
    rejoin_on_poll: bool,
    /// Offsets need the coordinator (a consumer outside group management commits too).
    want_coordinator: bool,
    events: VecDeque<GroupEvent>,
}

impl Membership {
    /// A membership for `cfg.group_id` (which must be set).
    pub fn new(cfg: &ConsumerConfig) -> Option<Membership> {
        Some(Membership {
            group_id: cfg.group_id.clone()?,
            instance_id: cfg.group_instance_id.clone(),
            rack: (!cfg.client_rack.is_empty()).then(|| cfg.client_rack.clone()),
            session_timeout: cfg.session_timeout,
            heartbeat_interval: cfg.heartbeat_interval,
            rebalance_timeout: cfg.max_poll_interval,
            assignors: cfg.assignors.clone(),
            backoff: Backoff::new(cfg.retry_backoff, cfg.retry_backoff_max),
            rng: Rng::new(cfg.random_seed ^ 0x6772_6f75),
            state: State::Idle,
            topics: Vec::new(),
            coordinator: None,
            member_id: String::new(),
            generation: -1,
            protocol: None,
            owned: Vec::new(),
            pending: None,
            retry_at: None,
            failures: 0,
            next_heartbeat: Instant::ZERO,
            last_heartbeat_ok: Instant::ZERO,
            last_poll: Instant::ZERO,
            rejoin_on_poll: false,
            want_coordinator: false,
            events: VecDeque::new(),
        })
    }

    /// Subscribes to `topics` (a changed subscription rejoins).
    pub fn subscribe(&mut self, mut topics: Vec<String>, now: Instant) {
        topics.sort();
        topics.dedup();
        if topics == self.topics && self.state != State::Idle {
            return;
        }
        self.topics = topics;
        self.last_poll = now;
        match self.state {
            State::Idle | State::Stable => self.rejoin(),
            _ => {} // a join under way picks the new topics up at the next rebalance
        }
    }

    /// Whether the member has a subscription (the group decides its partitions).
    pub fn is_subscribed(&self) -> bool {
        !self.topics.is_empty()
    }

    /// The application asked for records (or is waiting for them): it is alive
    /// (`max.poll.interval.ms`). Returns true if that made the member rejoin the group, having
    /// left it when the application stopped polling: it has requests to send.
    pub fn polled(&mut self, now: Instant) -> bool {
        self.last_poll = self.last_poll.max(now);
        if self.state == State::Left && std::mem::take(&mut self.rejoin_on_poll) {
            // Left after max.poll.interval.ms: polling again rejoins, as in Java.
            self.member_id.clear();
            self.state = State::NeedJoin;
            return true;
        }
        false
    }

    /// The application finished with a [`GroupEvent::Revoking`] (committed what it consumed).
    pub fn revoked(&mut self, _now: Instant) {
        if matches!(
            self.state,
            State::RevokingBeforeJoin | State::RevokingAfterSync
        ) {
            self.state = State::NeedJoin;
            self.retry_at = None;
        }
    }

    /// Leaves the group (static members do not: their session outlives restarts).
    pub fn leave(&mut self, _now: Instant) {
        if self.state == State::Left {
            // Already out (after max.poll.interval.ms): now for good.
            self.rejoin_on_poll = false;
            self.finish_leaving();
            return;
        }
        if self.instance_id.is_some() || self.member_id.is_empty() || self.coordinator.is_none() {
            self.finish_leaving();
            return;
        }
        self.state = State::Leaving;
    }

    fn finish_leaving(&mut self) {
        self.state = State::Left;
        // Only a leave the application asked for is reported: one forced by a stalled
        // application (max.poll.interval.ms) was reported as `Lost`, and its next poll rejoins.
        if !self.rejoin_on_poll {
            self.topics.clear();
            self.events.push_back(GroupEvent::Left);
        }
    }

    /// Whether the member is in the group or on its way in (subscribed, not left or failed).
    pub fn is_active(&self) -> bool {
        !matches!(self.state, State::Idle | State::Left | State::Failed)
    }

    /// Whether the consumer never subscribed: it is outside group management (assign mode).
    pub fn is_idle(&self) -> bool {
        self.state == State::Idle
    }

    /// Whether something other than the membership needs the coordinator (commits and
    /// lookups of committed offsets): it is found even when not in the group.
    pub fn want_coordinator(&mut self, want: bool) {
        self.want_coordinator = want;
    }

    /// Whether [`Membership::poll_request`] may have something to send.
    pub fn needs_requests(&self) -> bool {
        self.is_active() || (self.want_coordinator && self.state != State::Failed)
    }

    /// Something the assignment depended on changed (a subscribed topic's partitions): a
    /// stable member rejoins. Returns whether it did.
    pub fn rejoin_needed(&mut self) -> bool {
        if self.state == State::Stable {
            self.rejoin();
            return true;
        }
        false
    }

    /// The coordinator refused a request as not the coordinator (or not available): it is
    /// found again.
    pub fn forget_coordinator(&mut self) {
        if self.pending.is_none() {
            self.coordinator_gone();
        }
    }

    /// The partitions owned now.
    pub fn owned(&self) -> &[TopicPartition] {
        &self.owned
    }

    /// The generation and member id, for commits.
    pub fn generation(&self) -> (i32, &str) {
        (self.generation, &self.member_id)
    }

    /// The group, generation, member id and instance id, for a transaction's offsets.
    pub fn group_metadata(&self) -> super::GroupMetadata {
        super::GroupMetadata {
            group_id: self.group_id.clone(),
            generation_id: self.generation,
            member_id: self.member_id.clone(),
            group_instance_id: self.instance_id.clone(),
        }
    }

    /// The coordinator, once found (the consumer must be able to connect to it).
    pub fn coordinator(&self) -> Option<&(NodeId, HostPort)> {
        self.coordinator.as_ref()
    }

    /// Whether a [`GroupEvent::Revoking`] awaits [`Membership::revoked`].
    pub fn is_revoking(&self) -> bool {
        matches!(
            self.state,
            State::RevokingAfterSync | State::RevokingBeforeJoin
        )
    }

    /// Whether the member owns partitions in a live generation (commits are allowed).
    pub fn is_stable(&self) -> bool {
        matches!(
            self.state,
            State::Stable | State::RevokingAfterSync | State::RevokingBeforeJoin
        )
    }

    /// As the leader: the topics whose partition counts [`Membership::assign`] needs.
    pub fn topics_to_assign(&self) -> Option<BTreeSet<String>> {
        match &self.state {
            State::Assigning { members, .. } => Some(
                members
                    .iter()
                    .flat_map(|m| m.topics.iter().cloned())
                    .collect(),
            ),
            _ => None,
        }
    }

    /// As the leader: computes the assignment from partition counts and sends SyncGroup.
    pub fn assign(&mut self, counts: &BTreeMap<String, i32>, _now: Instant) {
        let State::Assigning { members, assignor } = &self.state else {
            return;
        };
        let assignment = assignor.assign(members, counts);
        let assignments = assignment
            .into_iter()
            .map(|(member_id, tps)| SyncGroupRequestAssignment {
                member_id,
                assignment: payload::encode_assignment(&tps).unwrap_or_default(),
                ..Default::default()
            })
            .collect();
        self.send_sync(assignments);
    }

    fn send_sync(&mut self, assignments: Vec<SyncGroupRequestAssignment>) {
        self.state = State::Syncing(Some(SyncGroupRequest {
            group_id: self.group_id.clone(),
            generation_id: self.generation,
            member_id: self.member_id.clone(),
            group_instance_id: self.instance_id.clone(),
            protocol_type: Some("consumer".into()),
            protocol_name: self.protocol.map(|a| a.name().to_owned()),
            assignments,
            ..Default::default()
        }));
    }

    /// Starts a rebalance: under the eager protocol everything owned is revoked first.
    fn rejoin(&mut self) {
        let eager = self.protocol.map(Assignor::protocol) != Some(RebalanceProtocol::Cooperative);
        if eager && !self.owned.is_empty() {
            let all = std::mem::take(&mut self.owned);
            self.events.push_back(GroupEvent::Revoking(all));
            self.state = State::RevokingBeforeJoin;
        } else {
            self.state = State::NeedJoin;
        }
    }

    /// The membership is gone (generation or member id no longer valid): what we owned is
    /// lost, and we join again as a new member of the next generation.
    fn lose(&mut self, reset_member_id: bool) {
        if !self.owned.is_empty() {
            self.events
                .push_back(GroupEvent::Lost(std::mem::take(&mut self.owned)));
        }
        if reset_member_id {
            self.member_id.clear();
        }
        self.generation = -1;
        self.state = State::NeedJoin;
    }

    fn fail(&mut self, code: ErrorCode) {
        self.state = State::Failed;
        if !self.owned.is_empty() {
            self.events
                .push_back(GroupEvent::Lost(std::mem::take(&mut self.owned)));
        }
        self.events.push_back(GroupEvent::Fatal(code));
    }

    fn back_off(&mut self, now: Instant) {
        self.retry_at = Some(now + self.backoff.delay(self.failures, &mut self.rng));
        self.failures = self.failures.saturating_add(1);
    }

    fn coordinator_gone(&mut self) {
        self.coordinator = None;
        match self.state {
            State::Joining | State::Syncing(_) | State::Assigning { .. } => {
                self.state = State::NeedJoin
            }
            _ => {}
        }
    }

    /// The next request to send, and where. Sending it is the caller's job; it reports back
    /// with [`Membership::handle_response`] or [`Membership::handle_failure`].
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
        match &mut self.state {
            State::NeedJoin => {
                self.pending = Some(Pending::Join);
                self.state = State::Joining;
                Some((to, GroupRequest::JoinGroup(self.join_request())))
            }
            State::Syncing(req) => {
                let req = req.take()?;
                self.pending = Some(Pending::Sync);
                Some((to, GroupRequest::SyncGroup(req)))
            }
            State::Leaving => {
                self.pending = Some(Pending::Leave);
                Some((to, GroupRequest::LeaveGroup(self.leave_request())))
            }
            State::Stable | State::RevokingAfterSync | State::RevokingBeforeJoin
                if now >= self.next_heartbeat && !self.member_id.is_empty() =>
            {
                self.pending = Some(Pending::Heartbeat);
                self.next_heartbeat = now + self.heartbeat_interval;
                Some((to, GroupRequest::Heartbeat(self.heartbeat_request())))
            }
            _ => None,
        }
    }

    fn join_request(&self) -> JoinGroupRequest {
        let owned = match self.protocol.map(Assignor::protocol) {
            Some(RebalanceProtocol::Cooperative) => self.owned.clone(),
            _ => Vec::new(),
        };
        let metadata = payload::encode_subscription(
            &self.topics,
            &owned,
            self.generation,
            self.rack.as_deref(),
        )
        .unwrap_or_default();
        JoinGroupRequest {
            group_id: self.group_id.clone(),
            session_timeout_ms: millis(self.session_timeout),
            rebalance_timeout_ms: millis(self.rebalance_timeout),
            member_id: self.member_id.clone(),
            group_instance_id: self.instance_id.clone(),
            protocol_type: "consumer".into(),
            protocols: self
                .assignors
                .iter()
                .map(|a| JoinGroupRequestProtocol {
                    name: a.name().into(),
                    metadata: metadata.clone(),
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        }
    }

    fn heartbeat_request(&self) -> HeartbeatRequest {
        HeartbeatRequest {
            group_id: self.group_id.clone(),
            generation_id: self.generation,
            member_id: self.member_id.clone(),
            group_instance_id: self.instance_id.clone(),
            ..Default::default()
        }
    }

    fn leave_request(&self) -> LeaveGroupRequest {
        LeaveGroupRequest {
            group_id: self.group_id.clone(),
            member_id: self.member_id.clone(),
            members: vec![MemberIdentity {
                member_id: self.member_id.clone(),
                group_instance_id: self.instance_id.clone(),
                reason: Some("the consumer is closing".into()),
                ..Default::default()
            }],
            ..Default::default()
        }
    }

    /// The request in flight failed (disconnected or timed out).
    pub fn handle_failure(&mut self, now: Instant) {
        match self.pending.take() {
            Some(Pending::Find) => self.back_off(now),
            Some(Pending::Leave) => self.finish_leaving(),
            Some(_) => self.coordinator_gone(),
            None => {}
        }
    }

    /// The response to the request in flight.
    pub fn handle_response(&mut self, body: ResponseBody, now: Instant) {
        let Some(pending) = self.pending.take() else {
            return;
        };
        if matches!(self.state, State::Leaving | State::Left)
            && matches!(pending, Pending::Join | Pending::Sync | Pending::Heartbeat)
        {
            // The member left, or is leaving (the application stopped polling), while this
            // was in flight: whatever it says, nothing is joined or owned. A join that gave
            // us a member id is undone with LeaveGroup, so the group need not wait for us.
            if let ResponseBody::JoinGroup(r) = &body {
                if !r.member_id.is_empty() && self.coordinator.is_some() {
                    self.member_id.clone_from(&r.member_id);
                    self.state = State::Leaving;
                }
            }
            return;
        }
        match (pending, body) {
            (Pending::Find, ResponseBody::FindCoordinator(r)) => {
                let (code, node, addr) = super::found_coordinator(&r);
                match (code, addr) {
                    (None, Some(addr)) if node >= 0 => {
                        self.failures = 0;
                        self.retry_at = None;
                        self.coordinator = Some((node, addr));
                        // A new coordinator has heard nothing from us yet.
                        self.next_heartbeat = now;
                        self.last_heartbeat_ok = now;
                    }
                    (Some(e), _) if self.fatal(e) => self.fail(e),
                    _ => self.back_off(now),
                }
            }
            (Pending::Join, ResponseBody::JoinGroup(r)) => self.on_join(r, now),
            (Pending::Sync, ResponseBody::SyncGroup(r)) => {
                match ErrorCode::from_code(r.error_code) {
                    None => self.on_assignment(&r.assignment, now),
                    Some(e) => self.on_sync_error(e, now),
                }
            }
            (Pending::Heartbeat, ResponseBody::Heartbeat(r)) => {
                match ErrorCode::from_code(r.error_code) {
                    None => {
                        self.failures = 0;
                        self.last_heartbeat_ok = now;
                    }
                    Some(ErrorCode::RebalanceInProgress) => {
                        if self.state == State::Stable {
                            self.rejoin();
                        }
                    }
                    Some(ErrorCode::IllegalGeneration) => self.lose(false),
                    Some(ErrorCode::UnknownMemberId) => self.lose(true),
                    Some(e) if is_coordinator_error(e) => self.coordinator_gone(),
                    Some(e) if self.fatal(e) => self.fail(e),
                    Some(_) => self.back_off(now),
                }
            }
            (Pending::Leave, ResponseBody::LeaveGroup(_)) => {
                self.member_id.clear();
                self.generation = -1;
                self.finish_leaving();
            }
            _ => debug_assert!(false, "a response that does not answer the request"),
        }
    }

    fn fatal(&self, e: ErrorCode) -> bool {
        matches!(
            e,
            ErrorCode::FencedInstanceId
                | ErrorCode::GroupAuthorizationFailed
                | ErrorCode::InvalidGroupId
                | ErrorCode::InconsistentGroupProtocol
                | ErrorCode::GroupMaxSizeReached
                | ErrorCode::InvalidSessionTimeout
                | ErrorCode::UnsupportedVersion
        )
    }

    fn on_join(
        &mut self,
        r: kafka_proto::messages::join_group_response::JoinGroupResponse,
        now: Instant,
    ) {
        match ErrorCode::from_code(r.error_code) {
            None => {
                self.failures = 0;
                self.retry_at = None;
                self.member_id = r.member_id;
                self.generation = r.generation_id;
                self.protocol = r.protocol_name.as_deref().and_then(Assignor::from_name);
                let Some(assignor) = self.protocol else {
                    // The group chose an assignor we do not have: only possible if the
                    // coordinator ignored our protocol list.
                    return self.fail(ErrorCode::InconsistentGroupProtocol);
                };
                if r.leader == self.member_id {
                    let members = r
                        .members
                        .iter()
                        .filter_map(|m| {
                            payload::decode_member(
                                &m.member_id,
                                m.group_instance_id.as_deref(),
                                &m.metadata,
                            )
                            .ok()
                        })
                        .collect();
                    self.state = State::Assigning { members, assignor };
                } else {
                    self.send_sync(Vec::new());
                }
            }
            // KIP-394: the coordinator assigned a member id; join again with it, at once.
            Some(ErrorCode::MemberIdRequired) => {
                self.member_id = r.member_id;
                self.state = State::NeedJoin;
            }
            // The coordinator removed us (the session expired): what we owned went to
            // others in a generation we were not part of. A cooperative member that rejoined
            // still claiming it would be handed it back as though kept, reading and committing
            // on from where it was (found by the simulation, seed 4619).
            Some(ErrorCode::UnknownMemberId) => self.lose(true),
            Some(e) if is_coordinator_error(e) => {
                self.coordinator_gone();
                self.state = State::NeedJoin;
            }
            Some(e) if self.fatal(e) => self.fail(e),
            // COORDINATOR_LOAD_IN_PROGRESS, REBALANCE_IN_PROGRESS and other retriable errors.
            Some(_) => {
                self.state = State::NeedJoin;
                self.back_off(now);
            }
        }
    }

    fn on_sync_error(&mut self, e: ErrorCode, now: Instant) {
        match e {
            ErrorCode::RebalanceInProgress => self.state = State::NeedJoin,
            ErrorCode::IllegalGeneration => self.lose(false),
            ErrorCode::UnknownMemberId => self.lose(true),
            e if is_coordinator_error(e) => {
                self.coordinator_gone();
                self.state = State::NeedJoin;
            }
            e if self.fatal(e) => self.fail(e),
            _ => {
                self.state = State::NeedJoin;
                self.back_off(now);
            }
        }
    }

    fn on_assignment(&mut self, bytes: &bytes::Bytes, now: Instant) {
        let assigned = match payload::decode_assignment(bytes) {
            Ok(a) => a,
            Err(_) => {
                // A leader that wrote garbage: rejoin and hope for a better one.
                self.state = State::NeedJoin;
                return self.back_off(now);
            }
        };
        let before: BTreeSet<TopicPartition> = self.owned.iter().cloned().collect();
        let after: BTreeSet<TopicPartition> = assigned.iter().cloned().collect();
        let revoked: Vec<TopicPartition> = before.difference(&after).cloned().collect();
        let added: Vec<TopicPartition> = after.difference(&before).cloned().collect();
        self.owned = assigned;
        self.last_heartbeat_ok = now;
        self.next_heartbeat = now + self.heartbeat_interval;
        self.state = State::Stable;
        if !revoked.is_empty() {
            // Cooperative: give these up, then rejoin so the group can hand them over.
            self.events.push_back(GroupEvent::Revoking(revoked));
            self.state = State::RevokingAfterSync;
        }
        if !added.is_empty() {
            self.events.push_back(GroupEvent::Assigned(added));
        }
    }

    /// When the application must poll next, while the member is in the group or joining it
    /// (the driver joins without the application; a member whose application is away past
    /// `max.poll.interval.ms` must not keep or take partitions).
    fn poll_deadline(&self) -> Option<Instant> {
        let active = self.is_active() && !matches!(self.state, State::Leaving);
        active.then(|| self.last_poll + self.rebalance_timeout)
    }

    /// Time passed: an application that stopped polling for `max.poll.interval.ms` has its
    /// partitions lost, and the member leaves (whether or not the coordinator can be reached:
    /// the member knows it is over); an expired session means the coordinator must be found
    /// again.
    pub fn handle_timeout(&mut self, now: Instant) {
        // A retry time that passed is spent: requests check it against now, and kept it would
        // stand before later deadlines in `poll_timeout`.
        if self.retry_at.is_some_and(|t| t <= now) {
            self.retry_at = None;
        }
        if self.poll_deadline().is_some_and(|t| now > t) {
            // Leave, so the group can move on without waiting for the session to expire.
            // Polling again rejoins.
            self.lose(false);
            self.rejoin_on_poll = true;
            if self.member_id.is_empty() || self.coordinator.is_none() {
                self.finish_leaving();
            } else {
                self.state = State::Leaving;
                // A request in flight is answered first; LeaveGroup goes next.
            }
            return;
        }
        if self.is_stable()
            && self.coordinator.is_some()
            && now >= self.last_heartbeat_ok + self.session_timeout
        {
            // No heartbeat got through for a whole session: the coordinator has likely
            // dropped us; find it again (a heartbeat then says whether we are still in).
            self.coordinator_gone();
        }
    }

    /// The next event for the application.
    pub fn poll_event(&mut self) -> Option<GroupEvent> {
        self.events.pop_front()
    }

    /// When [`Membership::poll_request`] or [`Membership::handle_timeout`] has work next: a
    /// retry, the next heartbeat (which also checks `max.poll.interval.ms`), or the session's
    /// end. A pure query.
    pub fn poll_timeout(&self) -> Option<Instant> {
        self.deadlines().min()
    }

    /// Every time the membership wants to be woken at, which [`Membership::poll_timeout`] is
    /// the earliest of. Some may have passed (a heartbeat due while its connection is being
    /// made): a caller that skips passed times must skip them one by one, for the earliest
    /// one passed would hide the rest (found by the simulation, seed 5201: a heartbeat due
    /// during a broker's crash hid the `max.poll.interval.ms` deadline, and a stalled member
    /// kept its partitions 0.5 s past it).
    pub fn deadlines(&self) -> impl Iterator<Item = Instant> {
        if matches!(self.state, State::Idle | State::Left | State::Failed) {
            // Outside the group the coordinator may still be wanted (for commits and offset
            // lookups): a FindCoordinator that failed is retried at its time.
            let wanted = self.want_coordinator && self.state != State::Failed;
            let retry = self
                .retry_at
                .filter(|_| wanted && self.pending.is_none() && self.coordinator.is_none());
            return [retry, None, None, None].into_iter().flatten();
        }
        let live = self.is_stable() && self.coordinator.is_some();
        let heartbeat = (live && self.pending.is_none()).then_some(self.next_heartbeat);
        let session = live.then_some(self.last_heartbeat_ok + self.session_timeout);
        let retry = self.retry_at.filter(|_| self.pending.is_none());
        // Just past the deadline: it expires when passed, not reached.
        let poll = self.poll_deadline().map(|t| t + Duration::from_nanos(1));
        [retry, heartbeat, session, poll].into_iter().flatten()
    }
}

fn is_coordinator_error(e: ErrorCode) -> bool {
    matches!(
        e,
        ErrorCode::NotCoordinator | ErrorCode::CoordinatorNotAvailable
    )
}

fn millis(d: Duration) -> i32 {
    i32::try_from(d.as_millis()).unwrap_or(i32::MAX)
}
