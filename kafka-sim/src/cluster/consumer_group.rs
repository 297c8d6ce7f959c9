//! The simulated cluster's coordinator for the consumer group protocol of KIP-848
//! (ConsumerGroupHeartbeat), beside the classic one: a group epoch bumped by every change of
//! membership or subscription, a server-side uniform assignor computing the target, and per
//! member reconciliation as Apache Kafka does it: a member first gives up what the target
//! took from it (its epoch stays until it acknowledges), and a partition goes to its new owner
//! only once the old one released it. Members are fenced when their session (10 s) passes
//! without a heartbeat or a revocation outlasts their rebalance timeout. Commits from a member
//! must carry its current epoch.

use std::collections::{BTreeMap, BTreeSet};

use bytes::Bytes;
use kafka_proto::messages::consumer_group_heartbeat_request::ConsumerGroupHeartbeatRequest;
use kafka_proto::messages::consumer_group_heartbeat_response::{
    Assignment, ConsumerGroupHeartbeatResponse, TopicPartitions,
};
use uuid::Uuid;

use super::SimTime;

const UNKNOWN_MEMBER_ID: i16 = 25;
const INVALID_REQUEST: i16 = 42;
const FENCED_MEMBER_EPOCH: i16 = 110;
const STALE_MEMBER_EPOCH: i16 = 113;

/// The broker's `group.consumer.session.timeout.ms` and heartbeat interval in the simulation.
const SESSION: SimTime = SimTime::from_secs(10);
const HEARTBEAT_MS: i32 = 1000;

type Tp = (String, i32);

#[derive(Debug)]
struct Member {
    epoch: i32,
    /// The epoch before the last one handed out: a member whose answer was lost heartbeats
    /// with it, and is taken back if it claims nothing it may not own (as Kafka does).
    previous_epoch: i32,
    topics: BTreeSet<String>,
    /// What the coordinator lets it own now.
    assigned: BTreeSet<Tp>,
    /// Taken from it by the target, until it acknowledges giving them up; since when.
    revoking: BTreeSet<Tp>,
    revoking_since: SimTime,
    rebalance_timeout: SimTime,
    last_seen: SimTime,
}

#[derive(Debug, Default)]
struct Group {
    epoch: i32,
    members: BTreeMap<String, Member>,
    /// The uniform assignor's target, for the group epoch.
    target: BTreeMap<String, BTreeSet<Tp>>,
}

/// Every consumer-protocol group.
#[derive(Debug, Default)]
pub(crate) struct ConsumerGroups {
    groups: BTreeMap<String, Group>,
    /// Every assignment handed out: (group, member epoch, member, partitions).
    pub(crate) handed: Vec<(String, i32, String, Vec<Tp>)>,
}

/// What the coordinator needs of the cluster's topics: name -> (id, partition count).
pub(crate) type TopicTable = BTreeMap<String, (Uuid, usize)>;

impl ConsumerGroups {
    /// Whether `group` is a consumer-protocol group (it has had a member).
    pub(crate) fn has(&self, group: &str) -> bool {
        self.groups.contains_key(group)
    }

    /// The group's members, and whether every member has reached the target.
    pub(crate) fn members(&self, group: &str) -> Option<(Vec<String>, bool)> {
        let g = self.groups.get(group)?;
        let stable = g.members.iter().all(|(id, m)| {
            m.revoking.is_empty() && g.target.get(id).is_none_or(|t| *t == m.assigned)
        });
        Some((g.members.keys().cloned().collect(), stable))
    }

    /// A heartbeat: join, stay, acknowledge or leave.
    pub(crate) fn heartbeat(
        &mut self,
        req: &ConsumerGroupHeartbeatRequest,
        topics: &TopicTable,
        now: SimTime,
    ) -> ConsumerGroupHeartbeatResponse {
        let answer = |code: i16| ConsumerGroupHeartbeatResponse {
            error_code: code,
            member_id: Some(req.member_id.clone()),
            member_epoch: -1,
            heartbeat_interval_ms: HEARTBEAT_MS,
            ..Default::default()
        };
        if req.member_id.is_empty() {
            return answer(INVALID_REQUEST);
        }
        let g = self.groups.entry(req.group_id.clone()).or_default();
        match req.member_epoch {
            -1 | -2 => {
                if g.members.remove(&req.member_id).is_some() {
                    bump(g, topics);
                }
                let mut r = answer(0);
                r.member_epoch = req.member_epoch;
                return r;
            }
            0 => {
                let Some(subscribed) = &req.subscribed_topic_names else {
                    return answer(INVALID_REQUEST);
                };
                if req.topic_partitions.as_ref().is_none_or(|t| !t.is_empty()) {
                    return answer(INVALID_REQUEST);
                }
                // A new member, or one rejoining after being fenced: whatever it held is
                // released.
                g.members.insert(
                    req.member_id.clone(),
                    Member {
                        epoch: 0,
                        previous_epoch: 0,
                        topics: subscribed.iter().cloned().collect(),
                        assigned: BTreeSet::new(),
                        revoking: BTreeSet::new(),
                        revoking_since: now,
                        rebalance_timeout: SimTime::from_millis(
                            req.rebalance_timeout_ms.max(0) as u64
                        ),
                        last_seen: now,
                    },
                );
                bump(g, topics);
            }
            e => {
                let Some(m) = g.members.get_mut(&req.member_id) else {
                    return answer(UNKNOWN_MEMBER_ID);
                };
                let claims_only_its_own = || {
                    req.topic_partitions.as_ref().is_some_and(|owned| {
                        owned.iter().all(|t| {
                            let name = topics.iter().find(|(_, (id, _))| *id == t.topic_id);
                            name.is_some_and(|(n, _)| {
                                t.partitions
                                    .iter()
                                    .all(|p| m.assigned.contains(&(n.clone(), *p)))
                            })
                        })
                    })
                };
                if e != m.epoch && !(e == m.previous_epoch && claims_only_its_own()) {
                    return answer(FENCED_MEMBER_EPOCH);
                }
                m.last_seen = now;
                let mut changed = false;
                if let Some(t) = &req.subscribed_topic_names {
                    let t: BTreeSet<String> = t.iter().cloned().collect();
                    if t != m.topics {
                        m.topics = t;
                        changed = true;
                    }
                }
                if let Some(owned) = &req.topic_partitions {
                    let names: BTreeMap<Uuid, &String> =
                        topics.iter().map(|(n, (id, _))| (*id, n)).collect();
                    let owned: BTreeSet<Tp> = owned
                        .iter()
                        .filter_map(|t| names.get(&t.topic_id).map(|n| (t, *n)))
                        .flat_map(|(t, n)| t.partitions.iter().map(|p| ((*n).clone(), *p)))
                        .collect();
                    // The revocation is done once none of it is owned any more.
                    if !m.revoking.is_empty() && m.revoking.is_disjoint(&owned) {
                        let gone = std::mem::take(&mut m.revoking);
                        m.assigned.retain(|tp| !gone.contains(tp));
                    }
                }
                if changed {
                    bump(g, topics);
                }
            }
        }
        let (epoch, assigned) = reconcile(g, &req.member_id, now);
        self.handed.push((
            req.group_id.clone(),
            epoch,
            req.member_id.clone(),
            assigned.iter().cloned().collect(),
        ));
        let mut by_topic: BTreeMap<Uuid, Vec<i32>> = BTreeMap::new();
        for (t, p) in &assigned {
            if let Some((id, _)) = topics.get(t) {
                by_topic.entry(*id).or_default().push(*p);
            }
        }
        ConsumerGroupHeartbeatResponse {
            member_id: Some(req.member_id.clone()),
            member_epoch: epoch,
            heartbeat_interval_ms: HEARTBEAT_MS,
            assignment: Some(Assignment {
                topic_partitions: by_topic
                    .into_iter()
                    .map(|(topic_id, partitions)| TopicPartitions {
                        topic_id,
                        partitions,
                        ..Default::default()
                    })
                    .collect(),
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    /// A commit's error for a consumer-protocol group (0: accepted). Outside group
    /// management (epoch -1, no member id) only an empty group takes commits.
    pub(crate) fn commit_error(
        &mut self,
        group: &str,
        member: &str,
        epoch: i32,
        now: SimTime,
    ) -> i16 {
        let Some(g) = self.groups.get_mut(group) else {
            return UNKNOWN_MEMBER_ID;
        };
        if epoch < 0 && member.is_empty() {
            return if g.members.is_empty() {
                0
            } else {
                UNKNOWN_MEMBER_ID
            };
        }
        match g.members.get_mut(member) {
            None => UNKNOWN_MEMBER_ID,
            Some(m) if epoch != m.epoch => STALE_MEMBER_EPOCH,
            Some(m) => {
                m.last_seen = now;
                0
            }
        }
    }

    /// Fences members whose session passed, or whose revocation outlasted their rebalance
    /// timeout.
    pub(crate) fn advance(&mut self, topics: &TopicTable, now: SimTime) {
        for g in self.groups.values_mut() {
            let before = g.members.len();
            g.members.retain(|_, m| {
                let revoking_late =
                    !m.revoking.is_empty() && now > m.revoking_since + m.rebalance_timeout;
                now <= m.last_seen + SESSION && !revoking_late
            });
            if g.members.len() != before {
                bump(g, topics);
            }
        }
    }

    /// When a session or a revocation may expire next.
    pub(crate) fn next_due(&self) -> Option<SimTime> {
        self.groups
            .values()
            .flat_map(|g| g.members.values())
            .flat_map(|m| {
                let session = m.last_seen + SESSION + SimTime::from_nanos(1);
                let revoke = (!m.revoking.is_empty())
                    .then(|| m.revoking_since + m.rebalance_timeout + SimTime::from_nanos(1));
                [Some(session), revoke].into_iter().flatten()
            })
            .min()
    }

    /// The assignments handed out, as the classic coordinator records them (ConsumerProtocol
    /// assignment bytes), for the shared invariant checks.
    pub(crate) fn handed_encoded(&self) -> Vec<(String, i32, String, Bytes)> {
        use kafka_proto::consumer_protocol::{ConsumerPayload, ConsumerProtocolAssignment};
        use kafka_proto::messages::consumer_protocol_assignment::TopicPartition;
        self.handed
            .iter()
            .map(|(g, epoch, member, tps)| {
                let mut by_topic: BTreeMap<&String, Vec<i32>> = BTreeMap::new();
                for (t, p) in tps {
                    by_topic.entry(t).or_default().push(*p);
                }
                let a = ConsumerProtocolAssignment {
                    assigned_partitions: by_topic
                        .into_iter()
                        .map(|(t, ps)| TopicPartition {
                            topic: t.clone(),
                            partitions: ps,
                            ..Default::default()
                        })
                        .collect(),
                    ..Default::default()
                };
                let bytes = a.encode_payload(0).unwrap_or_default();
                (g.clone(), *epoch, member.clone(), bytes)
            })
            .collect()
    }
}

/// The group changed: a new epoch and a new target (uniform: the subscribed partitions,
/// sorted, dealt round-robin to the members subscribed to each, sorted by id, keeping a
/// partition with its current holder where the count allows; stickiness is not modelled).
fn bump(g: &mut Group, topics: &TopicTable) {
    g.epoch += 1;
    let mut target: BTreeMap<String, BTreeSet<Tp>> = g
        .members
        .keys()
        .map(|id| (id.clone(), BTreeSet::new()))
        .collect();
    let all: BTreeSet<&String> = g.members.values().flat_map(|m| &m.topics).collect();
    let mut i = 0usize;
    for t in all {
        let Some((_, count)) = topics.get(t) else {
            continue;
        };
        let subscribers: Vec<&String> = g
            .members
            .iter()
            .filter(|(_, m)| m.topics.contains(t))
            .map(|(id, _)| id)
            .collect();
        for p in 0..*count {
            let owner = subscribers[i % subscribers.len()];
            target
                .get_mut(owner)
                .expect("every member has a target")
                .insert((t.clone(), p as i32));
            i += 1;
        }
    }
    g.target = target;
}

/// Moves `member` towards its target: first what it must give up (epoch unchanged), then,
/// at the group epoch, what is free of every other member. Returns its epoch and what it
/// may own now.
fn reconcile(g: &mut Group, member: &str, now: SimTime) -> (i32, BTreeSet<Tp>) {
    let target = g.target.get(member).cloned().unwrap_or_default();
    let held_elsewhere: BTreeSet<Tp> = g
        .members
        .iter()
        .filter(|(id, _)| id.as_str() != member)
        .flat_map(|(_, m)| m.assigned.iter().cloned())
        .collect();
    let m = g.members.get_mut(member).expect("a member");
    if m.revoking.is_empty() {
        let revoke: BTreeSet<Tp> = m.assigned.difference(&target).cloned().collect();
        if !revoke.is_empty() {
            m.revoking = revoke;
            m.revoking_since = now;
        }
    }
    if !m.revoking.is_empty() {
        let keep = m.assigned.difference(&m.revoking).cloned().collect();
        return (m.epoch, keep);
    }
    if m.epoch != g.epoch {
        m.previous_epoch = m.epoch;
        m.epoch = g.epoch;
    }
    for tp in target {
        if !held_elsewhere.contains(&tp) {
            m.assigned.insert(tp);
        }
    }
    (m.epoch, m.assigned.clone())
}
