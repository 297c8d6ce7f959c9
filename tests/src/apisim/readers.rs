//! Consumers that `assign` their partitions beside the subscribed members: readers in a group
//! of their own ("a", whose commits must succeed and move forward), and an outsider that
//! assigns a partition of "t" under the members' group id ("g"), whose commits Kafka accepts
//! only while that group is empty and must otherwise be refused with a typed error, in time.

use std::cell::Cell;
use std::collections::{BTreeMap, BTreeSet};
use std::rc::Rc;
use std::time::Duration;

use futures_util::future::{select, Either};
use kafka_driver::{CommitError, ConsumeError, Consumer, FetchError, StartFrom, SubscribeError};

use super::apps::{bootstrap, Shared};
use crate::sim::apps::Dice;
use crate::simrt::{self, SimRuntime};

/// `default.api.timeout.ms` of the readers: every commit and lookup ends within it.
pub const API_TIMEOUT: Duration = Duration::from_millis(5000);

/// The group of the assigning readers.
pub const OWN_GROUP: &str = "a";

/// Control of a reader from the run.
#[derive(Debug, Default)]
pub struct ReaderCtl {
    /// The run asks the reader to close.
    pub leave: Cell<bool>,
    /// The reader's task ended (closed, dropped, or failed).
    pub finished: Cell<bool>,
    /// It was dropped on purpose, so the run starts another on its partitions.
    pub dropped: Cell<bool>,
}

/// An assign-mode reader of `partitions` of "t" with `group.id` `group`: [`OWN_GROUP`], or
/// "g" for the outsider.
pub async fn reader(
    id: usize,
    seed: u64,
    group: &'static str,
    partitions: Vec<i32>,
    ctl: Rc<ReaderCtl>,
    shared: Shared,
) {
    let me = format!("reader {id} ({group}, t-{partitions:?})");
    if let Err(message) = read(&me, id, seed, group, &partitions, &ctl, &shared).await {
        shared.borrow_mut().fail(message);
    }
    ctl.finished.set(true);
}

async fn read(
    me: &str,
    id: usize,
    seed: u64,
    group: &'static str,
    partitions: &[i32],
    ctl: &ReaderCtl,
    shared: &Shared,
) -> Result<(), String> {
    let outsider = group != OWN_GROUP;
    let mut dice = Dice::new(seed ^ 0x7265_6164 ^ (id as u64).wrapping_mul(0x9e37));
    let settings: Vec<(&str, String)> = vec![
        ("bootstrap.servers", bootstrap()),
        ("group.id", group.into()),
        ("client.id", format!("reader-{id}")),
        ("enable.auto.commit", "false".into()),
        ("auto.offset.reset", "earliest".into()),
        ("fetch.max.wait.ms", "100".into()),
        ("request.timeout.ms", "3000".into()),
        (
            "default.api.timeout.ms",
            API_TIMEOUT.as_millis().to_string(),
        ),
        ("retry.backoff.ms", "50".into()),
        ("reconnect.backoff.ms", "20".into()),
        ("reconnect.backoff.max.ms", "500".into()),
        ("metadata.max.age.ms", "5000".into()),
        ("max.partition.fetch.bytes", "5120".into()),
        ("max.poll.records", (1 + dice.below(200)).to_string()),
        (
            "random.seed",
            seed.wrapping_add(1000 + id as u64).to_string(),
        ),
    ];
    let settings = settings
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v))
        .chain(super::apps::security());
    let mut c = Consumer::<SimRuntime>::from_map(settings).expect("valid simulation settings");
    c.assign(partitions.iter().map(|p| ("t", *p)), StartFrom::Committed)
        .map_err(|e| format!("{me}: assign refused: {e}"))?;
    // A consumer that assigned may not also join the group.
    match c.subscribe(["t"]) {
        Err(SubscribeError::Assigned) => {}
        other => return Err(format!("{me}: subscribe after assign gave {other:?}")),
    }
    // Per partition: the last offset handed, and the lowest (what a commit cannot go below).
    let mut last: BTreeMap<i32, i64> = BTreeMap::new();
    let mut lowest: BTreeMap<i32, i64> = BTreeMap::new();
    // Partitions handed records (or sought) since the last commit: a commit must store them.
    let mut fresh: BTreeSet<i32> = BTreeSet::new();
    let mut paused: BTreeSet<i32> = BTreeSet::new();
    let mut resume_at: Option<kafka_core::Instant> = None;
    loop {
        if ctl.leave.get() {
            let began = simrt::now();
            c.close(Duration::from_secs(10)).await;
            let took = simrt::now() - began;
            if took > Duration::from_secs(10) + Duration::from_millis(1) {
                return Err(format!("{me}: close took {took:?}, past its 10 s timeout"));
            }
            return Ok(());
        }
        if resume_at.is_some_and(|t| simrt::now() >= t) {
            resume_at = None;
            for p in std::mem::take(&mut paused) {
                c.resume("t", p);
            }
        }
        match dice.below(1000) {
            0 if !outsider => {
                shared.borrow_mut().notes.push(format!("{me} dropped"));
                ctl.dropped.set(true);
                drop(c);
                return Ok(());
            }
            1..=30 => {
                let fresh: BTreeMap<i32, i64> = std::mem::take(&mut fresh)
                    .iter()
                    .map(|p| (*p, last[p]))
                    .collect();
                commit(me, &mut c, group, &fresh, &lowest, shared).await?;
            }
            31..=40 => {
                // Seek back to an offset handed before.
                let handed: Vec<(i32, i64)> = last
                    .iter()
                    .filter(|(p, o)| **o >= lowest[*p])
                    .map(|(p, o)| {
                        (
                            *p,
                            lowest[p] + dice.below((o - lowest[p] + 1) as u64) as i64,
                        )
                    })
                    .collect();
                if let Some((p, offset)) = handed.get(dice.below(3) as usize).copied() {
                    {
                        let mut l = shared.borrow_mut();
                        l.seeks += 1;
                        l.notes.push(format!("{me} seeks t-{p} back to {offset}"));
                        if outsider {
                            l.rewinds.entry(p).or_default().push(offset);
                        } else {
                            l.own.rewinds.entry(p).or_default().push(offset);
                        }
                    }
                    c.seek("t", p, StartFrom::Offset(offset));
                    // Commits carry the position sought from now on.
                    last.insert(p, offset - 1);
                    fresh.insert(p);
                }
            }
            41..=50 => {
                let p = partitions[dice.below(partitions.len() as u64) as usize];
                if paused.insert(p) {
                    c.pause("t", p);
                    resume_at = Some(simrt::now() + Duration::from_millis(50 + dice.below(1000)));
                }
            }
            _ => {
                let got = {
                    let next = std::pin::pin!(c.recv_batch());
                    let d = Duration::from_millis(50 + dice.below(400));
                    match select(next, simrt::sleep(d)).await {
                        Either::Left((b, _)) => Some(b),
                        Either::Right(_) => None,
                    }
                };
                let records = match got {
                    Some(Ok(records)) => records,
                    // Told once per default.api.timeout.ms that a partition has no known
                    // leader; the consumer keeps trying. True only around a time the
                    // cluster had none (the report waits behind the records fetched before
                    // it: seconds, for a slow reader).
                    Some(Err(ConsumeError::Partition {
                        partition,
                        error: FetchError::NotAvailable { .. },
                        ..
                    })) => {
                        let mut l = shared.borrow_mut();
                        let near = match l.leaderless.get(&partition) {
                            Some(None) => true,
                            Some(Some(back)) => simrt::now() <= *back + 4 * API_TIMEOUT,
                            None => false,
                        };
                        if !near {
                            return Err(format!(
                                "{me}: told t-{partition} has no leader, which it had all along (since {:?})",
                                l.leaderless.get(&partition)
                            ));
                        }
                        l.notes
                            .push(format!("{me} told t-{partition} has no known leader"));
                        continue;
                    }
                    Some(Err(e)) => return Err(format!("{me}: recv_batch failed: {e}")),
                    None => continue,
                };
                let mut l = shared.borrow_mut();
                if let (Some(a), Some(b)) = (records.first(), records.last()) {
                    l.notes.push(format!(
                        "{me} handed {} records, t-{} {} .. t-{} {}",
                        records.len(),
                        a.partition,
                        a.offset,
                        b.partition,
                        b.offset
                    ));
                }
                for r in records {
                    let p = r.partition;
                    if !partitions.contains(&p) || &*r.topic != "t" {
                        return Err(format!(
                            "{me}: handed {}-{p} offset {}, a partition it did not assign",
                            r.topic, r.offset
                        ));
                    }
                    if last.get(&p).is_some_and(|o| r.offset <= *o) {
                        return Err(format!(
                            "{me}: handed t-{p} offset {} after {}, with no seek between",
                            r.offset, last[&p]
                        ));
                    }
                    last.insert(p, r.offset);
                    fresh.insert(p);
                    let low = lowest.entry(p).or_insert(r.offset);
                    *low = (*low).min(r.offset);
                    if outsider {
                        l.outsider_handed.entry(p).or_default().insert(r.offset);
                    } else {
                        l.own.handed.entry(p).or_default().insert(r.offset);
                    }
                    l.consumed += 1;
                }
            }
        }
    }
}

/// Commits what was handed, and checks the outcome: in its own group a commit succeeds (or
/// times out under faults) and is read back; in the members' group it is refused as
/// [`CommitError::GroupInUse`] unless the group is empty. Either ends within
/// `default.api.timeout.ms`.
async fn commit(
    me: &str,
    c: &mut Consumer<SimRuntime>,
    group: &str,
    fresh: &BTreeMap<i32, i64>,
    lowest: &BTreeMap<i32, i64>,
    shared: &Shared,
) -> Result<(), String> {
    let outsider = group != OWN_GROUP;
    if outsider {
        // Should the group be empty, the commit moves its offsets, possibly back to no lower
        // than what the outsider was handed first.
        let mut l = shared.borrow_mut();
        for (p, o) in lowest {
            l.rewinds.entry(*p).or_default().push(*o);
        }
    }
    let began = simrt::now();
    let r = c.commit().await;
    let took = simrt::now() - began;
    {
        let mut l = shared.borrow_mut();
        l.notes.push(format!("{me} commit: {r:?}"));
        l.commits.0 += 1;
        if took > API_TIMEOUT + Duration::from_millis(1) {
            return Err(format!(
                "{me}: commit took {took:?}, past default.api.timeout.ms ({API_TIMEOUT:?}): {r:?}"
            ));
        }
        if outsider && matches!(r, Ok(()) | Err(CommitError::Timeout { .. })) {
            // The group was empty (or may have been): the outsider's commit moved its offsets,
            // so the members go on from there, and what the outsider read counts as read.
            let handed = std::mem::take(&mut l.outsider_handed);
            for (p, offsets) in handed {
                l.handed.entry(p).or_default().extend(offsets);
            }
            if r.is_ok() {
                l.accepted_outsiders += 1;
            }
        }
        match (&r, outsider) {
            (Ok(()), _) => l.commits.1 += 1,
            (Err(CommitError::GroupInUse(g)), true) if g == group => {
                l.refused_outsiders += 1;
                // Refused: nothing moved.
                for (p, o) in lowest {
                    let seeks = l.rewinds.entry(*p).or_default();
                    if let Some(i) = seeks.iter().rposition(|to| to == o) {
                        seeks.swap_remove(i);
                    }
                }
            }
            (Err(CommitError::Timeout { .. }), _) | (Err(CommitError::Rebalanced(_)), true) => {}
            (Err(e), _) => return Err(format!("{me}: commit failed: {e:?}")),
        }
    }
    if r.is_ok() && !outsider {
        // Read back: in a group of its own, the commit is what the group holds now.
        for (p, o) in fresh {
            let began = simrt::now();
            match c.committed("t", *p).await {
                Ok(Some(at)) if at == o + 1 => {}
                Err(CommitError::Timeout { .. }) => {}
                other => {
                    return Err(format!(
                        "{me}: t-{p} committed up to {o}, read back as {other:?}"
                    ))
                }
            }
            let took = simrt::now() - began;
            if took > API_TIMEOUT + Duration::from_millis(1) {
                return Err(format!("{me}: committed() took {took:?}"));
            }
        }
    }
    Ok(())
}

/// Which partitions the readers of "a" take: every partition of "t", split between two.
pub fn own_split(seed: u64) -> [Vec<i32>; 2] {
    match seed % 3 {
        0 => [vec![0], vec![1, 2]],
        1 => [vec![0, 1], vec![2]],
        _ => [vec![1], vec![0, 2]],
    }
}

/// Handed, rewinds and commits seen of group "a", kept apart from "g"'s.
#[derive(Debug, Default)]
pub struct OwnGroup {
    /// Per partition: offsets handed to a reader of "a".
    pub handed: BTreeMap<i32, BTreeSet<i64>>,
    /// Per partition: offsets a reader of "a" seeked back to.
    pub rewinds: BTreeMap<i32, Vec<i64>>,
    /// The committed offsets of "a" last seen.
    pub seen: BTreeMap<i32, i64>,
}
