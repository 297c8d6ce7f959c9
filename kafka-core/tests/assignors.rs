//! The assignors against hand-computed assignments (the Java assignors' documented examples),
//! and cooperative-sticky's balance and stickiness as properties.

use std::collections::{BTreeMap, BTreeSet};

use kafka_core::group::{Assignment, Assignor, MemberSubscription};
use proptest::prelude::*;

fn member(id: &str, topics: &[&str]) -> MemberSubscription {
    MemberSubscription {
        id: id.into(),
        topics: topics.iter().map(|t| (*t).to_owned()).collect(),
        generation: -1,
        ..Default::default()
    }
}

fn counts(c: &[(&str, i32)]) -> BTreeMap<String, i32> {
    c.iter().map(|(t, n)| ((*t).to_owned(), *n)).collect()
}

fn tps(list: &[(&str, i32)]) -> Vec<(String, i32)> {
    list.iter().map(|(t, p)| ((*t).to_owned(), *p)).collect()
}

#[test]
fn range_gives_contiguous_ranges_per_topic() {
    // Java's RangeAssignor example: two consumers, two topics of three partitions.
    let members = [member("C0", &["t0", "t1"]), member("C1", &["t0", "t1"])];
    let a = Assignor::Range.assign(&members, &counts(&[("t0", 3), ("t1", 3)]));
    assert_eq!(a["C0"], tps(&[("t0", 0), ("t0", 1), ("t1", 0), ("t1", 1)]));
    assert_eq!(a["C1"], tps(&[("t0", 2), ("t1", 2)]));
}

#[test]
fn range_orders_static_members_first() {
    let mut b = member("a-dynamic", &["t"]);
    b.instance_id = None;
    let mut s = member("z-static", &["t"]);
    s.instance_id = Some("instance-1".into());
    let a = Assignor::Range.assign(&[b, s], &counts(&[("t", 3)]));
    assert_eq!(a["z-static"], tps(&[("t", 0), ("t", 1)]));
    assert_eq!(a["a-dynamic"], tps(&[("t", 2)]));
}

#[test]
fn roundrobin_deals_partitions_in_turn() {
    let members = [member("C0", &["t0", "t1"]), member("C1", &["t0", "t1"])];
    let a = Assignor::RoundRobin.assign(&members, &counts(&[("t0", 3), ("t1", 3)]));
    assert_eq!(a["C0"], tps(&[("t0", 0), ("t0", 2), ("t1", 1)]));
    assert_eq!(a["C1"], tps(&[("t0", 1), ("t1", 0), ("t1", 2)]));
}

#[test]
fn roundrobin_skips_members_not_subscribed() {
    // Java's RoundRobinAssignor example with different subscriptions.
    let members = [
        member("C0", &["t0"]),
        member("C1", &["t0", "t1"]),
        member("C2", &["t0", "t1", "t2"]),
    ];
    let a = Assignor::RoundRobin.assign(&members, &counts(&[("t0", 1), ("t1", 2), ("t2", 3)]));
    assert_eq!(a["C0"], tps(&[("t0", 0)]));
    assert_eq!(a["C1"], tps(&[("t1", 0)]));
    assert_eq!(a["C2"], tps(&[("t1", 1), ("t2", 0), ("t2", 1), ("t2", 2)]));
}

#[test]
fn names_and_protocols() {
    for a in [
        Assignor::Range,
        Assignor::RoundRobin,
        Assignor::CooperativeSticky,
    ] {
        assert_eq!(Assignor::from_name(a.name()), Some(a));
    }
    assert_eq!(Assignor::from_name("sticky"), None);
}

/// Sets each member's owned partitions to what `a` gave it, in `generation`.
fn own(members: &mut [MemberSubscription], a: &Assignment, generation: i32) {
    for m in members.iter_mut() {
        m.owned = a[&m.id].clone();
        m.generation = generation;
    }
}

#[test]
fn cooperative_sticky_revokes_before_it_reassigns() {
    let parts = counts(&[("t", 6)]);
    let mut members = vec![member("A", &["t"]), member("B", &["t"])];
    let first = Assignor::CooperativeSticky.assign(&members, &parts);
    assert_eq!((first["A"].len(), first["B"].len()), (3, 3));
    own(&mut members, &first, 1);
    // C joins: two partitions must move to it, but not in this rebalance.
    members.push(member("C", &["t"]));
    let second = Assignor::CooperativeSticky.assign(&members, &parts);
    assert!(
        second["C"].is_empty(),
        "nothing is handed over while still owned"
    );
    assert_eq!(
        second["A"].len() + second["B"].len(),
        4,
        "each gives up one"
    );
    assert!(
        second["A"].iter().all(|tp| first["A"].contains(tp)),
        "A keeps what it keeps"
    );
    own(&mut members, &second, 2);
    let third = Assignor::CooperativeSticky.assign(&members, &parts);
    assert_eq!(third["A"], second["A"], "sticky");
    assert_eq!(third["B"], second["B"], "sticky");
    assert_eq!(third["C"].len(), 2, "the revoked partitions arrive");
}

fn check_settled(members: &[MemberSubscription], a: &Assignment, parts: &BTreeMap<String, i32>) {
    let all: usize = parts.values().map(|n| *n as usize).sum();
    let assigned: Vec<&(String, i32)> = a.values().flatten().collect();
    let unique: BTreeSet<&(String, i32)> = assigned.iter().copied().collect();
    assert_eq!(unique.len(), assigned.len(), "no partition twice");
    assert_eq!(assigned.len(), all, "every partition once settled");
    let sizes: Vec<usize> = members.iter().map(|m| a[&m.id].len()).collect();
    let (min, max) = (sizes.iter().min().unwrap(), sizes.iter().max().unwrap());
    assert!(max - min <= 1, "balanced: {sizes:?}");
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    /// Members come and go over rebalances. Each rebalance never hands a partition straight
    /// from one member to another; after the follow-up rebalance every partition is assigned
    /// once, members are within one partition of each other, and each member kept as many of
    /// its partitions as balance allows.
    #[test]
    fn cooperative_sticky_is_balanced_and_sticky(
        partitions in 1i32..40,
        steps in proptest::collection::vec((0usize..6, any::<bool>()), 1..8),
    ) {
        let parts = counts(&[("t", partitions)]);
        let mut members = vec![member("m0", &["t"])];
        let mut generation = 0;
        let mut next_id = 1;
        for (pick, join) in steps {
            if join || members.len() == 1 {
                members.push(member(&format!("m{next_id}"), &["t"]));
                next_id += 1;
            } else {
                members.remove(pick % members.len());
            }
            // The rebalance after a change, then the follow-up for the revoked partitions.
            for round in 0..2 {
                generation += 1;
                let before: BTreeMap<String, Vec<(String, i32)>> =
                    members.iter().map(|m| (m.id.clone(), m.owned.clone())).collect();
                let a = Assignor::CooperativeSticky.assign(&members, &parts);
                let owner: BTreeMap<&(String, i32), &String> = before
                    .iter()
                    .flat_map(|(id, v)| v.iter().map(move |tp| (tp, id)))
                    .collect();
                for (id, v) in &a {
                    for tp in v {
                        if let Some(o) = owner.get(tp) {
                            prop_assert_eq!(*o, id, "no direct handover of {:?}", tp);
                        }
                    }
                }
                let n = members.len();
                let quota = partitions as usize / n;
                for m in &members {
                    let kept = a[&m.id].iter().filter(|tp| m.owned.contains(tp)).count();
                    prop_assert!(kept >= m.owned.len().min(quota), "{} kept {kept} of {:?}", m.id, m.owned);
                }
                own(&mut members, &a, generation);
                if round == 1 {
                    check_settled(&members, &a, &parts);
                }
            }
        }
    }
}

#[test]
fn cooperative_sticky_with_different_subscriptions_assigns_everything_it_can() {
    let members = [
        member("A", &["t0"]),
        member("B", &["t0", "t1"]),
        member("C", &["t1"]),
    ];
    let parts = counts(&[("t0", 4), ("t1", 4), ("t2", 3)]);
    let a = Assignor::CooperativeSticky.assign(&members, &parts);
    let total: usize = a.values().map(Vec::len).sum();
    assert_eq!(total, 8, "t2 has no subscriber");
    assert!(a["A"].iter().all(|tp| tp.0 == "t0"));
    assert!(a["C"].iter().all(|tp| tp.0 == "t1"));
    let sizes: Vec<usize> = a.values().map(Vec::len).collect();
    assert!(
        sizes.iter().max().unwrap() - sizes.iter().min().unwrap() <= 1,
        "{a:?}"
    );
}
