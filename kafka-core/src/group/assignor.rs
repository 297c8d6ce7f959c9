//! The partition assignors of the classic group protocol: `range`, `roundrobin` and
//! `cooperative-sticky` (KIP-429), so that a group can mix our members with Java and
//! librdkafka members whoever leads it.
//!
//! `range` and `roundrobin` compute exactly what the Java assignors compute (member order
//! included: static members first). `cooperative-sticky` keeps Java's rules (balanced within
//! one partition, owned partitions kept up to the quota, higher generations win conflicting
//! claims, a moving partition is revoked before it is reassigned) but may choose differently
//! among equally sticky answers; any such answer is valid for every member, since only the
//! leader computes it. Rack awareness (KIP-881) is not implemented.
//!
//! Pure functions of the members' subscriptions and the partition counts; the group leader runs
//! one and sends the result in SyncGroup.

use std::cmp::Ordering;
use std::collections::{BTreeMap, BTreeSet};

/// A topic partition.
pub use crate::topic::TopicPartition;

/// One group member as the leader sees it (from its JoinGroup subscription).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct MemberSubscription {
    /// The member id the coordinator gave it.
    pub id: String,
    /// `group.instance.id`, for static members.
    pub instance_id: Option<String>,
    /// The topics it subscribes to.
    pub topics: Vec<String>,
    /// The partitions it owns now (ConsumerProtocol v1+; cooperative-sticky uses them).
    pub owned: Vec<TopicPartition>,
    /// The generation its ownership is from (ConsumerProtocol v2+; -1 if unknown).
    pub generation: i32,
}

/// Partitions per member id, sorted.
pub type Assignment = BTreeMap<String, Vec<TopicPartition>>;

pub use crate::config::{Assignor, RebalanceProtocol};

impl Assignor {
    /// Assigns `partitions` (partition count per topic) to `members`. Every member gets an
    /// entry, possibly empty; topics missing from `partitions` are skipped.
    pub fn assign(
        self,
        members: &[MemberSubscription],
        partitions: &BTreeMap<String, i32>,
    ) -> Assignment {
        let mut out: Assignment = members.iter().map(|m| (m.id.clone(), Vec::new())).collect();
        match self {
            Assignor::Range => range(members, partitions, &mut out),
            Assignor::RoundRobin => round_robin(members, partitions, &mut out),
            Assignor::CooperativeSticky => cooperative_sticky(members, partitions, &mut out),
        }
        for v in out.values_mut() {
            v.sort();
        }
        out
    }
}

/// Java's member order: static members first, by instance id; then the rest by member id.
fn member_order(a: &MemberSubscription, b: &MemberSubscription) -> Ordering {
    match (&a.instance_id, &b.instance_id) {
        (Some(x), Some(y)) => x.cmp(y).then_with(|| a.id.cmp(&b.id)),
        (Some(_), None) => Ordering::Less,
        (None, Some(_)) => Ordering::Greater,
        (None, None) => a.id.cmp(&b.id),
    }
}

fn sorted(members: &[MemberSubscription]) -> Vec<&MemberSubscription> {
    let mut v: Vec<&MemberSubscription> = members.iter().collect();
    v.sort_by(|a, b| member_order(a, b));
    v
}

fn range(members: &[MemberSubscription], partitions: &BTreeMap<String, i32>, out: &mut Assignment) {
    let members = sorted(members);
    for (topic, &count) in partitions {
        let subs: Vec<&&MemberSubscription> = members
            .iter()
            .filter(|m| m.topics.contains(topic))
            .collect();
        if subs.is_empty() || count <= 0 {
            continue;
        }
        let n = subs.len() as i32;
        let (per, extra) = (count / n, count % n);
        for (i, m) in subs.iter().enumerate() {
            let i = i as i32;
            let start = per * i + i.min(extra);
            let len = per + i32::from(i < extra);
            let list = out.get_mut(&m.id).expect("every member has an entry");
            list.extend((start..start + len).map(|p| (topic.clone(), p)));
        }
    }
}

fn round_robin(
    members: &[MemberSubscription],
    partitions: &BTreeMap<String, i32>,
    out: &mut Assignment,
) {
    let members = sorted(members);
    if members.is_empty() {
        return;
    }
    let mut next = 0;
    for (topic, &count) in partitions {
        if !members.iter().any(|m| m.topics.contains(topic)) {
            continue;
        }
        for p in 0..count {
            // The circular iterator moves on to the next member subscribed to the topic.
            while !members[next % members.len()].topics.contains(topic) {
                next += 1;
            }
            let m = members[next % members.len()];
            out.get_mut(&m.id)
                .expect("every member has an entry")
                .push((topic.clone(), p));
            next += 1;
        }
    }
}

/// KIP-429 on top of a sticky assignment: balanced, keeping every owned partition it can; a
/// partition that moves from one member to another is withheld this round (its owner revokes
/// it, and the follow-up rebalance assigns it).
fn cooperative_sticky(
    members: &[MemberSubscription],
    partitions: &BTreeMap<String, i32>,
    out: &mut Assignment,
) {
    let owners = current_owners(members, partitions);
    let sticky = sticky(members, partitions, &owners);
    for (member, tps) in sticky {
        let list = out.get_mut(&member).expect("every member has an entry");
        for tp in tps {
            match owners.get(&tp) {
                Some(owner) if *owner != member => {} // revoked first, assigned next time
                _ => list.push(tp),
            }
        }
    }
}

/// Who owns what now. A partition claimed by two members goes to the claim from the highest
/// generation (a member that missed a rebalance still lists partitions it lost); equal claims
/// are dropped.
fn current_owners(
    members: &[MemberSubscription],
    partitions: &BTreeMap<String, i32>,
) -> BTreeMap<TopicPartition, String> {
    let mut best: BTreeMap<TopicPartition, (i32, Option<String>)> = BTreeMap::new();
    for m in members {
        for tp in &m.owned {
            let exists = partitions
                .get(&tp.0)
                .is_some_and(|n| tp.1 >= 0 && tp.1 < *n);
            if !exists || !m.topics.contains(&tp.0) {
                continue;
            }
            let claim = best.entry(tp.clone()).or_insert((i32::MIN, None));
            match m.generation.cmp(&claim.0) {
                Ordering::Greater => *claim = (m.generation, Some(m.id.clone())),
                Ordering::Equal => claim.1 = None,
                Ordering::Less => {}
            }
        }
    }
    best.into_iter()
        .filter_map(|(tp, (_, owner))| owner.map(|o| (tp, o)))
        .collect()
}

/// The sticky assignment: every member ends within one partition of every other member that
/// could take the same partitions, and a partition stays with its owner unless balance needs
/// it elsewhere.
fn sticky(
    members: &[MemberSubscription],
    partitions: &BTreeMap<String, i32>,
    owners: &BTreeMap<TopicPartition, String>,
) -> Assignment {
    let by_id: BTreeMap<&str, &MemberSubscription> =
        members.iter().map(|m| (m.id.as_str(), m)).collect();
    let all: Vec<TopicPartition> = partitions
        .iter()
        .filter(|(t, _)| members.iter().any(|m| m.topics.contains(t)))
        .flat_map(|(t, n)| (0..*n).map(move |p| (t.clone(), p)))
        .collect();
    let mut out: Assignment = members.iter().map(|m| (m.id.clone(), Vec::new())).collect();
    if members.is_empty() || all.is_empty() {
        return out;
    }
    let same_topics = members
        .windows(2)
        .all(|w| w[0].topics.iter().collect::<BTreeSet<_>>() == w[1].topics.iter().collect());
    if same_topics {
        // Every member can take every partition: quotas are exact.
        let n = members.len();
        let (min_quota, extra) = (all.len() / n, all.len() % n);
        let mut max_slots = extra; // members allowed min_quota + 1
        let mut unassigned: BTreeSet<TopicPartition> = all.iter().cloned().collect();
        // Keep owned partitions up to the quota, the biggest owners first so that the members
        // allowed an extra partition are those that already hold one.
        let mut kept: Vec<(&str, Vec<TopicPartition>)> = members
            .iter()
            .map(|m| {
                let mut own: Vec<TopicPartition> = owners
                    .iter()
                    .filter(|(_, o)| **o == m.id)
                    .map(|(tp, _)| tp.clone())
                    .collect();
                own.sort();
                (m.id.as_str(), own)
            })
            .collect();
        kept.sort_by(|a, b| b.1.len().cmp(&a.1.len()).then_with(|| a.0.cmp(b.0)));
        for (id, own) in &kept {
            let quota = if own.len() > min_quota && max_slots > 0 {
                max_slots -= 1;
                min_quota + 1
            } else {
                min_quota
            };
            let list = out.get_mut(*id).expect("entry");
            for tp in own.iter().take(quota) {
                unassigned.remove(tp);
                list.push(tp.clone());
            }
        }
        // Fill everyone to min_quota, then hand the rest out one each to members that may
        // still take an extra one, fewest first.
        let mut order: Vec<String> = by_id.keys().map(|s| (*s).to_owned()).collect();
        order.sort_by(|a, b| out[a].len().cmp(&out[b].len()).then_with(|| a.cmp(b)));
        let mut rest = unassigned.into_iter();
        for id in &order {
            while out[id].len() < min_quota {
                let Some(tp) = rest.next() else { break };
                out.get_mut(id).expect("entry").push(tp);
            }
        }
        for id in &order {
            if max_slots == 0 {
                break;
            }
            if out[id].len() == min_quota {
                let Some(tp) = rest.next() else { break };
                out.get_mut(id).expect("entry").push(tp);
                max_slots -= 1;
            }
        }
        debug_assert!(rest.next().is_none(), "every partition has a member");
        return out;
    }
    // Members subscribe to different topics: keep owned partitions, then give each remaining
    // partition to the least-loaded member that can take it, then move partitions from the
    // most to the least loaded eligible member while that narrows the gap.
    for (tp, owner) in owners {
        if by_id
            .get(owner.as_str())
            .is_some_and(|m| m.topics.contains(&tp.0))
        {
            out.get_mut(owner).expect("entry").push(tp.clone());
        }
    }
    let owned: BTreeSet<&TopicPartition> = out.values().flatten().collect();
    let free: Vec<TopicPartition> = all
        .iter()
        .filter(|tp| !owned.contains(tp))
        .cloned()
        .collect();
    for tp in free {
        let target = eligible(members, &tp).min_by(|a, b| {
            out[&a.id]
                .len()
                .cmp(&out[&b.id].len())
                .then_with(|| a.id.cmp(&b.id))
        });
        if let Some(m) = target {
            out.get_mut(&m.id).expect("entry").push(tp);
        }
    }
    loop {
        let mut moved = false;
        for tp in &all {
            let Some(from) = out
                .iter()
                .find(|(_, v)| v.contains(tp))
                .map(|(k, _)| k.clone())
            else {
                continue;
            };
            let to = eligible(members, tp)
                .filter(|m| out[&m.id].len() + 1 < out[&from].len())
                .min_by(|a, b| {
                    out[&a.id]
                        .len()
                        .cmp(&out[&b.id].len())
                        .then_with(|| a.id.cmp(&b.id))
                })
                .map(|m| m.id.clone());
            if let Some(to) = to {
                out.get_mut(&from).expect("entry").retain(|x| x != tp);
                out.get_mut(&to).expect("entry").push(tp.clone());
                moved = true;
            }
        }
        if !moved {
            return out;
        }
    }
}

fn eligible<'a>(
    members: &'a [MemberSubscription],
    tp: &'a TopicPartition,
) -> impl Iterator<Item = &'a MemberSubscription> {
    members.iter().filter(move |m| m.topics.contains(&tp.0))
}
