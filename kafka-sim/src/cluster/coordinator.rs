//! The simulated cluster's classic-protocol group coordinator, with Kafka's phases: a join
//! waits for every known member (or the rebalance timeout), SyncGroup waits for the leader's
//! assignment, sessions expire without heartbeats, and commits are checked against the
//! generation; offsets committed in a transaction wait for its marker. Answers that wait are handed back later through [`Coordinator::poll_ready`].

use std::collections::{BTreeMap, BTreeSet, VecDeque};

use bytes::Bytes;
use kafka_proto::api::ResponseBody;
use kafka_proto::messages::heartbeat_request::HeartbeatRequest;
use kafka_proto::messages::heartbeat_response::HeartbeatResponse;
use kafka_proto::messages::join_group_request::JoinGroupRequest;
use kafka_proto::messages::join_group_response::{JoinGroupResponse, JoinGroupResponseMember};
use kafka_proto::messages::leave_group_request::LeaveGroupRequest;
use kafka_proto::messages::leave_group_response::LeaveGroupResponse;
use kafka_proto::messages::offset_commit_request::OffsetCommitRequest;
use kafka_proto::messages::offset_fetch_request::OffsetFetchRequest;
use kafka_proto::messages::sync_group_request::SyncGroupRequest;
use kafka_proto::messages::sync_group_response::SyncGroupResponse;
use kafka_proto::messages::txn_offset_commit_request::TxnOffsetCommitRequest;
use kafka_proto::messages::txn_offset_commit_response::{
    TxnOffsetCommitResponse, TxnOffsetCommitResponsePartition, TxnOffsetCommitResponseTopic,
};

use super::consumer_group::ConsumerGroups;
use super::{SimTime, Slot};
use crate::group::{offset_commit, offset_fetch};

const ILLEGAL_GENERATION: i16 = 22;
const UNKNOWN_MEMBER_ID: i16 = 25;
const REBALANCE_IN_PROGRESS: i16 = 27;
const MEMBER_ID_REQUIRED: i16 = 79;
const UNSTABLE_OFFSET_COMMIT: i16 = 88;

#[derive(Debug)]
struct Member {
    protocols: Vec<(String, Bytes)>,
    session: SimTime,
    rebalance: SimTime,
    last_seen: SimTime,
    /// Its JoinGroup waiting for the join phase to end.
    joining: Option<(Slot, i16)>,
    /// Its SyncGroup waiting for the leader's assignment.
    syncing: Option<(Slot, i16)>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    Empty,
    /// Waiting for members to (re)join, until the deadline.
    Preparing(SimTime),
    /// Joined; waiting for the leader's SyncGroup.
    Completing,
    Stable,
}

#[derive(Debug)]
struct Group {
    generation: i32,
    phase: Phase,
    members: BTreeMap<String, Member>,
    leader: Option<String>,
    protocol: Option<String>,
    assignments: BTreeMap<String, Bytes>,
}

impl Default for Group {
    fn default() -> Self {
        Group {
            generation: 0,
            phase: Phase::Empty,
            members: BTreeMap::new(),
            leader: None,
            protocol: None,
            assignments: BTreeMap::new(),
        }
    }
}

/// A committed offset's place: (group, topic, partition).
type OffsetKey = (String, String, i32);

/// Committed offsets, (offset, leader epoch) by group, topic and partition: nested so that the
/// simulation's checks, which read every partition's offset after each step, look them up
/// without allocating a key (two `String`s a lookup were 9% of an API simulation seed).
#[derive(Debug, Default)]
struct Offsets(BTreeMap<String, TopicOffsets>);

/// One group's offsets: (offset, leader epoch) by topic and partition.
type TopicOffsets = BTreeMap<String, BTreeMap<i32, (i64, i32)>>;

impl Offsets {
    fn get(&self, group: &str, topic: &str, p: i32) -> Option<(i64, i32)> {
        self.0.get(group)?.get(topic)?.get(&p).copied()
    }

    fn insert(&mut self, group: &str, topic: &str, p: i32, v: (i64, i32)) {
        let topics = match self.0.get_mut(group) {
            Some(t) => t,
            None => self.0.entry(group.to_owned()).or_default(),
        };
        let partitions = match topics.get_mut(topic) {
            Some(p) => p,
            None => topics.entry(topic.to_owned()).or_default(),
        };
        partitions.insert(p, v);
    }
}

/// Every group, and the offsets store (it survives coordinator moves, as the replicated
/// `__consumer_offsets` does).
#[derive(Debug, Default)]
pub(crate) struct Coordinator {
    groups: BTreeMap<String, Group>,
    offsets: Offsets,
    next_member: u64,
    ready: VecDeque<(Slot, i16, ResponseBody)>,
    /// Every assignment handed out: (group, generation, member, assignment).
    pub(crate) handed: Vec<(String, i32, String, Bytes)>,
    /// Offsets committed inside transactions, per producer id, until the transaction ends.
    txn_offsets: BTreeMap<i64, BTreeMap<OffsetKey, (i64, i32)>>,
    /// The groups of the consumer protocol (KIP-848); the offsets store is shared.
    pub(crate) consumer: ConsumerGroups,
}

fn ms(v: i32) -> SimTime {
    SimTime::from_millis(v.max(0) as u64)
}

impl Coordinator {
    /// Answers that became ready: (slot, version, body).
    pub(crate) fn poll_ready(&mut self) -> Option<(Slot, i16, ResponseBody)> {
        self.ready.pop_front()
    }

    /// A group's members, and whether it is stable (not rebalancing).
    pub(crate) fn members(&self, group: &str) -> (Vec<String>, bool) {
        if let Some(m) = self.consumer.members(group) {
            return m;
        }
        match self.groups.get(group) {
            Some(g) => (
                g.members.keys().cloned().collect(),
                g.phase == Phase::Stable,
            ),
            None => (Vec::new(), false),
        }
    }

    pub(crate) fn committed(&self, group: &str, topic: &str, p: i32) -> Option<(i64, i32)> {
        self.offsets.get(group, topic, p)
    }

    /// The coordinator moved: every waiting answer is lost with its connection, and members
    /// find the new one and rejoin.
    pub(crate) fn failover(&mut self) {
        self.ready.clear();
        for g in self.groups.values_mut() {
            for m in g.members.values_mut() {
                m.joining = None;
                m.syncing = None;
            }
        }
    }

    pub(crate) fn join(
        &mut self,
        slot: Slot,
        version: i16,
        req: &JoinGroupRequest,
        now: SimTime,
    ) -> Option<ResponseBody> {
        let g = self.groups.entry(req.group_id.clone()).or_default();
        if req.member_id.is_empty() {
            self.next_member += 1;
            let id = format!("member-{}", self.next_member);
            if version >= 4 {
                // KIP-394: the member id first, then the join with it.
                g.members.insert(
                    id.clone(),
                    Member {
                        protocols: Vec::new(),
                        session: ms(req.session_timeout_ms),
                        rebalance: ms(req.rebalance_timeout_ms),
                        last_seen: now,
                        joining: None,
                        syncing: None,
                    },
                );
                return Some(ResponseBody::JoinGroup(JoinGroupResponse {
                    error_code: MEMBER_ID_REQUIRED,
                    member_id: id,
                    ..Default::default()
                }));
            }
            return self.join_as(slot, version, req, id, now);
        }
        if !g.members.contains_key(&req.member_id) {
            return Some(ResponseBody::JoinGroup(JoinGroupResponse {
                error_code: UNKNOWN_MEMBER_ID,
                member_id: req.member_id.clone(),
                ..Default::default()
            }));
        }
        self.join_as(slot, version, req, req.member_id.clone(), now)
    }

    fn join_as(
        &mut self,
        slot: Slot,
        version: i16,
        req: &JoinGroupRequest,
        id: String,
        now: SimTime,
    ) -> Option<ResponseBody> {
        let g = self.groups.get_mut(&req.group_id).expect("made by join");
        let rebalance = if req.rebalance_timeout_ms > 0 {
            ms(req.rebalance_timeout_ms)
        } else {
            ms(req.session_timeout_ms)
        };
        let m = g.members.entry(id).or_insert_with(|| Member {
            protocols: Vec::new(),
            session: SimTime::ZERO,
            rebalance,
            last_seen: now,
            joining: None,
            syncing: None,
        });
        m.protocols = req
            .protocols
            .iter()
            .map(|p| (p.name.clone(), p.metadata.clone()))
            .collect();
        m.session = ms(req.session_timeout_ms);
        m.rebalance = rebalance;
        m.last_seen = now;
        m.joining = Some((slot, version));
        if !matches!(g.phase, Phase::Preparing(_)) {
            Self::prepare(g, &mut self.ready, now);
        }
        self.complete_joins(&req.group_id.clone(), now);
        None
    }

    /// Starts a rebalance: waiting syncs learn of it, and members have the longest rebalance
    /// timeout to rejoin.
    fn prepare(g: &mut Group, ready: &mut VecDeque<(Slot, i16, ResponseBody)>, now: SimTime) {
        let timeout = g
            .members
            .values()
            .map(|m| m.rebalance)
            .max()
            .unwrap_or_default();
        g.phase = Phase::Preparing(now + timeout);
        for m in g.members.values_mut() {
            if let Some((slot, v)) = m.syncing.take() {
                ready.push_back((
                    slot,
                    v,
                    ResponseBody::SyncGroup(SyncGroupResponse {
                        error_code: REBALANCE_IN_PROGRESS,
                        ..Default::default()
                    }),
                ));
            }
        }
    }

    /// Ends the join phase once every member rejoined, or at its deadline without the rest.
    fn complete_joins(&mut self, group: &str, now: SimTime) {
        let Some(g) = self.groups.get_mut(group) else {
            return;
        };
        let Phase::Preparing(deadline) = g.phase else {
            return;
        };
        let all = g.members.values().all(|m| m.joining.is_some());
        if !all && now < deadline {
            return;
        }
        g.members.retain(|_, m| m.joining.is_some());
        if g.members.is_empty() {
            g.phase = Phase::Empty;
            g.generation += 1;
            return;
        }
        g.generation += 1;
        g.assignments.clear();
        let first = g.members.values().next().expect("not empty");
        let chosen = first.protocols.iter().map(|p| p.0.clone()).find(|name| {
            g.members
                .values()
                .all(|m| m.protocols.iter().any(|p| &p.0 == name))
        });
        g.protocol.clone_from(&chosen);
        if !g.leader.as_ref().is_some_and(|l| g.members.contains_key(l)) {
            g.leader = g.members.keys().next().cloned();
        }
        let leader = g.leader.clone().unwrap_or_default();
        let list: Vec<JoinGroupResponseMember> = g
            .members
            .iter()
            .map(|(id, m)| JoinGroupResponseMember {
                member_id: id.clone(),
                metadata: m
                    .protocols
                    .iter()
                    .find(|p| Some(&p.0) == chosen.as_ref())
                    .map(|p| p.1.clone())
                    .unwrap_or_default(),
                ..Default::default()
            })
            .collect();
        for (id, m) in g.members.iter_mut() {
            let (slot, v) = m.joining.take().expect("all joined");
            m.last_seen = now;
            self.ready.push_back((
                slot,
                v,
                ResponseBody::JoinGroup(JoinGroupResponse {
                    generation_id: g.generation,
                    protocol_type: Some("consumer".into()),
                    protocol_name: chosen.clone(),
                    leader: leader.clone(),
                    member_id: id.clone(),
                    members: if *id == leader {
                        list.clone()
                    } else {
                        Vec::new()
                    },
                    ..Default::default()
                }),
            ));
        }
        g.phase = Phase::Completing;
    }

    pub(crate) fn sync(
        &mut self,
        slot: Slot,
        version: i16,
        req: &SyncGroupRequest,
        now: SimTime,
    ) -> Option<ResponseBody> {
        let error = |code| {
            Some(ResponseBody::SyncGroup(SyncGroupResponse {
                error_code: code,
                ..Default::default()
            }))
        };
        let Coordinator {
            groups,
            handed,
            ready,
            ..
        } = self;
        let Some(g) = groups.get_mut(&req.group_id) else {
            return error(UNKNOWN_MEMBER_ID);
        };
        let Some(m) = g.members.get_mut(&req.member_id) else {
            return error(UNKNOWN_MEMBER_ID);
        };
        m.last_seen = now;
        if req.generation_id != g.generation {
            return error(ILLEGAL_GENERATION);
        }
        match g.phase {
            Phase::Preparing(_) | Phase::Empty => error(REBALANCE_IN_PROGRESS),
            Phase::Stable => {
                let body = g
                    .assignments
                    .get(&req.member_id)
                    .cloned()
                    .unwrap_or_default();
                handed.push((
                    req.group_id.clone(),
                    g.generation,
                    req.member_id.clone(),
                    body.clone(),
                ));
                Some(Self::assignment(g, body))
            }
            Phase::Completing => {
                m.syncing = Some((slot, version));
                if g.leader.as_deref() == Some(req.member_id.as_str()) {
                    for a in &req.assignments {
                        g.assignments
                            .insert(a.member_id.clone(), a.assignment.clone());
                    }
                    g.phase = Phase::Stable;
                    let waiting: Vec<(String, Slot, i16)> = g
                        .members
                        .iter_mut()
                        .filter_map(|(id, m)| m.syncing.take().map(|(s, v)| (id.clone(), s, v)))
                        .collect();
                    for (id, slot, v) in waiting {
                        let body = g.assignments.get(&id).cloned().unwrap_or_default();
                        handed.push((req.group_id.clone(), g.generation, id, body.clone()));
                        ready.push_back((slot, v, Self::assignment(g, body)));
                    }
                }
                None
            }
        }
    }

    fn assignment(g: &Group, body: Bytes) -> ResponseBody {
        ResponseBody::SyncGroup(SyncGroupResponse {
            protocol_type: Some("consumer".into()),
            protocol_name: g.protocol.clone(),
            assignment: body,
            ..Default::default()
        })
    }

    pub(crate) fn heartbeat(&mut self, req: &HeartbeatRequest, now: SimTime) -> ResponseBody {
        let code = match self
            .groups
            .get_mut(&req.group_id)
            .and_then(|g| Some((g.phase, g.generation, g.members.get_mut(&req.member_id)?)))
        {
            None => UNKNOWN_MEMBER_ID,
            Some((phase, generation, m)) => {
                m.last_seen = now;
                match phase {
                    Phase::Preparing(_) => REBALANCE_IN_PROGRESS,
                    _ if req.generation_id != generation => ILLEGAL_GENERATION,
                    _ => 0,
                }
            }
        };
        ResponseBody::Heartbeat(HeartbeatResponse {
            error_code: code,
            ..Default::default()
        })
    }

    pub(crate) fn leave(&mut self, req: &LeaveGroupRequest, now: SimTime) -> ResponseBody {
        let ids: Vec<String> = if req.members.is_empty() {
            vec![req.member_id.clone()]
        } else {
            req.members.iter().map(|m| m.member_id.clone()).collect()
        };
        if let Some(g) = self.groups.get_mut(&req.group_id) {
            let mut gone = false;
            for id in ids {
                gone |= g.members.remove(&id).is_some();
            }
            if gone {
                self.rebalance_after_loss(&req.group_id.clone(), now);
            }
        }
        ResponseBody::LeaveGroup(LeaveGroupResponse::default())
    }

    fn rebalance_after_loss(&mut self, group: &str, now: SimTime) {
        let g = self.groups.get_mut(group).expect("exists");
        if g.members.is_empty() {
            g.phase = Phase::Empty;
            g.generation += 1;
            return;
        }
        if !matches!(g.phase, Phase::Preparing(_)) {
            Self::prepare(g, &mut self.ready, now);
        }
        self.complete_joins(group, now);
    }

    /// Expires sessions and ends join phases at their deadline.
    pub(crate) fn advance(&mut self, now: SimTime) {
        let names: Vec<String> = self.groups.keys().cloned().collect();
        for name in names {
            let g = self.groups.get_mut(&name).expect("listed");
            let before = g.members.len();
            g.members
                .retain(|_, m| m.joining.is_some() || now <= m.last_seen + m.session);
            if g.members.len() != before {
                self.rebalance_after_loss(&name, now);
            } else {
                self.complete_joins(&name, now);
            }
        }
    }

    /// When a session may expire or a join phase end.
    pub(crate) fn next_due(&self) -> Option<SimTime> {
        self.groups
            .values()
            .flat_map(|g| {
                let deadline = match g.phase {
                    Phase::Preparing(d) => Some(d),
                    _ => None,
                };
                g.members
                    .values()
                    .filter(|m| m.joining.is_none())
                    .map(|m| m.last_seen + m.session + SimTime::from_nanos(1))
                    .chain(deadline)
            })
            .chain(self.consumer.next_due())
            .min()
    }

    pub(crate) fn commit(&mut self, req: &OffsetCommitRequest, now: SimTime) -> ResponseBody {
        let generation = req.generation_id_or_member_epoch;
        let error = match self.groups.get_mut(&req.group_id) {
            _ if self.consumer.has(&req.group_id) => {
                self.consumer
                    .commit_error(&req.group_id, &req.member_id, generation, now)
            }
            // A commit outside group management (a consumer that assigns its partitions, or
            // an admin): Kafka takes it only while the group has no members.
            None if generation < 0 => 0,
            Some(g) if generation < 0 && req.member_id.is_empty() => {
                if g.members.is_empty() {
                    0
                } else {
                    UNKNOWN_MEMBER_ID
                }
            }
            None => UNKNOWN_MEMBER_ID,
            Some(g) => match g.members.get_mut(&req.member_id) {
                None => UNKNOWN_MEMBER_ID,
                Some(m) => {
                    m.last_seen = now;
                    if generation != g.generation {
                        ILLEGAL_GENERATION
                    } else if g.phase == Phase::Completing {
                        REBALANCE_IN_PROGRESS
                    } else {
                        0
                    }
                }
            },
        };
        let offsets = &mut self.offsets;
        offset_commit(req, error, |t, p, offset, epoch| {
            offsets.insert(&req.group_id, t, p, (offset, epoch));
        })
    }

    pub(crate) fn fetch_offsets(&self, req: &OffsetFetchRequest) -> ResponseBody {
        offset_fetch(req, |g, t, p| {
            let key = (g.to_owned(), t.to_owned(), p);
            // KIP-447: a stable read waits for the open transactions' offsets.
            if req.require_stable && self.txn_offsets.values().any(|o| o.contains_key(&key)) {
                return Err(UNSTABLE_OFFSET_COMMIT);
            }
            Ok(self.committed(g, t, p))
        })
    }

    /// Offsets committed in open transactions: (producer id, group, topic, partition).
    pub(crate) fn pending_txn_offsets(&self) -> Vec<(i64, String, String, i32)> {
        self.txn_offsets
            .iter()
            .flat_map(|(pid, o)| o.keys().map(|(g, t, p)| (*pid, g.clone(), t.clone(), *p)))
            .collect()
    }

    /// A TxnOffsetCommit (the transaction coordinator checked the producer): with KIP-447's
    /// member and generation, a member no longer in the group's generation is refused, so that
    /// a fenced zombie cannot commit.
    pub(crate) fn txn_commit(
        &mut self,
        req: &TxnOffsetCommitRequest,
        txn_error: i16,
    ) -> ResponseBody {
        let error = if txn_error != 0 {
            txn_error
        } else if req.generation_id < 0 && req.member_id.is_empty() {
            0
        } else {
            match self.groups.get(&req.group_id) {
                None => ILLEGAL_GENERATION,
                Some(g) if !g.members.contains_key(&req.member_id) => UNKNOWN_MEMBER_ID,
                Some(g) if g.generation != req.generation_id => ILLEGAL_GENERATION,
                Some(_) => 0,
            }
        };
        let pending = self.txn_offsets.entry(req.producer_id).or_default();
        let topics = req
            .topics
            .iter()
            .map(|t| TxnOffsetCommitResponseTopic {
                name: t.name.clone(),
                partitions: t
                    .partitions
                    .iter()
                    .map(|p| {
                        if error == 0 {
                            pending.insert(
                                (req.group_id.clone(), t.name.clone(), p.partition_index),
                                (p.committed_offset, p.committed_leader_epoch),
                            );
                        }
                        TxnOffsetCommitResponsePartition {
                            partition_index: p.partition_index,
                            error_code: error,
                            ..Default::default()
                        }
                    })
                    .collect(),
                ..Default::default()
            })
            .collect();
        ResponseBody::TxnOffsetCommit(TxnOffsetCommitResponse {
            topics,
            ..Default::default()
        })
    }

    /// A transaction's marker reached the offsets of `groups`: its offsets become the groups'
    /// committed ones at a commit, and are dropped at an abort.
    pub(crate) fn end_txn(&mut self, pid: i64, groups: &BTreeSet<String>, commit: bool) {
        let Some(pending) = self.txn_offsets.remove(&pid) else {
            return;
        };
        for (key, offset) in pending {
            if commit && groups.contains(&key.0) {
                self.offsets.insert(&key.0, &key.1, key.2, offset);
            }
        }
    }
}
