//! One replicated partition: a log per replica, the leader and its epoch, the ISR and the high
//! watermark, idempotent-producer checks, and what an election or a follower's catch-up does
//! to the logs (truncation to the leader's, so acks=1 writes past the high watermark can be
//! lost exactly as in Kafka, and acks=all writes cannot), and what transactions leave in a log:
//! producer-epoch fencing, commit and abort markers, the last stable offset and the aborted
//! transactions a read_committed fetch is told of.

use std::collections::{BTreeMap, BTreeSet};

use bytes::{Bytes, BytesMut};
use kafka_proto::compression::Compression;
use kafka_proto::record::{BatchBuilder, BatchMeta, RecordBatch};

use super::SimTime;

/// A stored batch.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Batch {
    pub base: i64,
    /// The last offset (inclusive).
    pub last: i64,
    /// The leader epoch it was written in.
    pub epoch: i32,
    pub pid: i64,
    pub producer_epoch: i16,
    pub first_seq: i32,
    pub count: i32,
    /// Part of a transaction (data or marker).
    pub transactional: bool,
    /// A marker: `Some(true)` commits, `Some(false)` aborts.
    pub marker: Option<bool>,
    /// The batch as stored (base offset and leader epoch stamped).
    pub bytes: Bytes,
}

/// One replica's log.
#[derive(Debug, Clone, Default)]
pub(crate) struct Replica {
    pub batches: Vec<Batch>,
    /// When it last had everything the leader has.
    pub caught_up: SimTime,
}

impl Replica {
    pub(crate) fn leo(&self) -> i64 {
        self.batches.last().map_or(0, |b| b.last + 1)
    }
}

/// Why an append was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum AppendError {
    Corrupt,
    OutOfOrder,
    /// An older producer epoch than the partition has seen for the producer id.
    FencedEpoch,
}

impl AppendError {
    pub(crate) fn code(self) -> i16 {
        match self {
            AppendError::Corrupt => 2,
            AppendError::OutOfOrder => 45,
            AppendError::FencedEpoch => 47,
        }
    }
}

/// A partition of the simulated cluster.
#[derive(Debug, Clone)]
pub(crate) struct Partition {
    pub leader: Option<i32>,
    pub epoch: i32,
    pub replicas: BTreeMap<i32, Replica>,
    pub isr: BTreeSet<i32>,
    pub hw: i64,
    /// Records cut from logs by truncation after being acknowledged with acks=1 (or never
    /// acknowledged): how many, for the fault counters.
    pub truncated: u64,
    /// Some transactional batch was ever appended (the transaction scans are skipped before).
    pub has_txn: bool,
}

/// What transactions leave in a partition's log, as a fetch sees it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct TxnView {
    /// The last stable offset: below it, every transaction has its marker under the high
    /// watermark.
    pub lso: i64,
    /// Aborted transactions: (producer id, first offset, marker offset).
    pub aborted: Vec<(i64, i64, i64)>,
}

/// The fate of a transactional data batch, by the marker that follows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fate {
    /// Not part of a transaction.
    Plain,
    /// Its transaction committed.
    Committed,
    /// Its transaction aborted.
    Aborted,
    /// Its transaction has no marker (yet).
    Open,
}

impl Partition {
    pub(crate) fn new(replicas: &[i32]) -> Self {
        Partition {
            leader: replicas.first().copied(),
            epoch: 0,
            replicas: replicas.iter().map(|n| (*n, Replica::default())).collect(),
            isr: replicas.iter().copied().collect(),
            hw: 0,
            truncated: 0,
            has_txn: false,
        }
    }

    pub(crate) fn leader_log(&self) -> Option<&Replica> {
        self.replicas.get(&self.leader?)
    }

    /// Appends a produced batch on the leader; returns its base offset (the original one for
    /// a duplicate of one of a producer's last five batches).
    pub(crate) fn append(&mut self, batch: &RecordBatch, dedup: bool) -> Result<i64, AppendError> {
        let leader = self.leader.expect("append on a leader");
        let log = self
            .replicas
            .get_mut(&leader)
            .expect("the leader has a replica");
        let count = batch.last_offset_delta + 1;
        if batch.producer_id >= 0 && dedup {
            // A newer epoch (a later producer of the same transactional id, or a marker that
            // fenced this one) refuses the older.
            if log
                .batches
                .iter()
                .any(|b| b.pid == batch.producer_id && b.producer_epoch > batch.producer_epoch)
            {
                return Err(AppendError::FencedEpoch);
            }
            let mine: Vec<&Batch> = log
                .batches
                .iter()
                .filter(|b| {
                    b.pid == batch.producer_id
                        && b.producer_epoch == batch.producer_epoch
                        && b.marker.is_none()
                })
                .collect();
            if let Some(dup) = mine
                .iter()
                .rev()
                .take(5)
                .find(|b| b.first_seq == batch.base_sequence && b.count == count)
            {
                return Ok(dup.base);
            }
            // As Kafka's ProducerStateManager: a producer id the partition holds no state for
            // may start at any sequence (so a later batch can be taken while an earlier one was
            // refused); a new epoch of a known one starts at 0.
            let known = log.batches.iter().any(|b| b.pid == batch.producer_id);
            match mine.last() {
                Some(last) if batch.base_sequence != last.first_seq.wrapping_add(last.count) => {
                    return Err(AppendError::OutOfOrder)
                }
                None if known && batch.base_sequence != 0 => return Err(AppendError::OutOfOrder),
                _ => {}
            }
        }
        let base = log.leo();
        let mut stored = BytesMut::from(&batch.as_bytes()[..]);
        if stored.len() < 16 {
            return Err(AppendError::Corrupt);
        }
        // Base offset and leader epoch sit before the crc's range.
        stored[0..8].copy_from_slice(&base.to_be_bytes());
        stored[12..16].copy_from_slice(&self.epoch.to_be_bytes());
        log.batches.push(Batch {
            base,
            last: base + i64::from(count) - 1,
            epoch: self.epoch,
            pid: batch.producer_id,
            producer_epoch: batch.producer_epoch,
            first_seq: batch.base_sequence,
            count,
            transactional: batch.is_transactional(),
            marker: None,
            bytes: stored.freeze(),
        });
        self.has_txn |= batch.is_transactional();
        Ok(base)
    }

    /// Appends a transaction marker for `pid` at `producer_epoch` on the leader; returns its
    /// offset.
    pub(crate) fn append_marker(&mut self, pid: i64, producer_epoch: i16, commit: bool) -> i64 {
        let leader = self.leader.expect("a marker goes to a leader");
        let log = self
            .replicas
            .get_mut(&leader)
            .expect("the leader has a replica");
        let base = log.leo();
        // A control record: key (version 0, type: 0 abort, 1 commit), value (version 0,
        // coordinator epoch).
        let key = [0, 0, 0, u8::from(commit)];
        let mut b = BatchBuilder::new(Compression::None, 64);
        b.append(0, Some(&key), Some(&[0, 0, 0, 0, 0, 0]), &[]);
        let bytes = b
            .seal(&BatchMeta {
                base_offset: base,
                partition_leader_epoch: self.epoch,
                producer_id: pid,
                producer_epoch,
                transactional: true,
                control: true,
                ..BatchMeta::default()
            })
            .expect("a marker encodes");
        log.batches.push(Batch {
            base,
            last: base,
            epoch: self.epoch,
            pid,
            producer_epoch,
            first_seq: -1,
            count: 1,
            transactional: true,
            marker: Some(commit),
            bytes,
        });
        self.has_txn = true;
        base
    }

    /// Whether the leader's log holds, at `offset`, the marker of `pid` at `producer_epoch`.
    pub(crate) fn holds_marker(&self, offset: i64, pid: i64, producer_epoch: i16) -> bool {
        self.leader_log().is_some_and(|log| {
            log.batches.iter().any(|b| {
                b.base == offset
                    && b.marker.is_some()
                    && b.pid == pid
                    && b.producer_epoch == producer_epoch
            })
        })
    }

    /// Each batch of the leader's log with the fate of its transaction (markers `None`).
    pub(crate) fn fates(&self) -> Vec<(&Batch, Option<Fate>)> {
        let Some(log) = self.leader_log() else {
            return Vec::new();
        };
        let mut out: Vec<(&Batch, Option<Fate>)> = Vec::with_capacity(log.batches.len());
        // Per producer id: the indexes of its open transaction's batches.
        let mut open: BTreeMap<i64, Vec<usize>> = BTreeMap::new();
        for b in &log.batches {
            match (b.marker, b.transactional) {
                (Some(commit), _) => {
                    let fate = if commit {
                        Fate::Committed
                    } else {
                        Fate::Aborted
                    };
                    for i in open.remove(&b.pid).unwrap_or_default() {
                        out[i].1 = Some(fate);
                    }
                    out.push((b, None));
                }
                (None, true) => {
                    open.entry(b.pid).or_default().push(out.len());
                    out.push((b, Some(Fate::Open)));
                }
                (None, false) => out.push((b, Some(Fate::Plain))),
            }
        }
        out
    }

    /// The last stable offset and the aborted transactions, from the leader's log: a
    /// transaction is unstable from its first batch until its marker is below the high
    /// watermark.
    pub(crate) fn txn_view(&self) -> TxnView {
        let mut view = TxnView {
            lso: self.hw,
            aborted: Vec::new(),
        };
        let Some(log) = self.leader_log().filter(|_| self.has_txn) else {
            return view;
        };
        let mut open: BTreeMap<i64, i64> = BTreeMap::new();
        for b in &log.batches {
            match b.marker {
                Some(commit) => {
                    if let Some(first) = open.remove(&b.pid) {
                        if b.base >= self.hw {
                            view.lso = view.lso.min(first);
                        }
                        if !commit {
                            view.aborted.push((b.pid, first, b.base));
                        }
                    }
                }
                None if b.transactional => {
                    open.entry(b.pid).or_insert(b.base);
                }
                None => {}
            }
        }
        if let Some(first) = open.values().min() {
            view.lso = view.lso.min(*first);
        }
        view
    }

    /// Followers that are `up` copy the leader's log (truncating what diverges first); the
    /// ISR grows with replicas caught up and shrinks by those lagging over `lag`; the high
    /// watermark follows the ISR.
    pub(crate) fn replicate(&mut self, up: &dyn Fn(i32) -> bool, lag: SimTime, now: SimTime) {
        // A leader that is down (killed, not fenced yet) serves no follower.
        let Some(leader) = self.leader.filter(|l| up(*l)) else {
            return;
        };
        // The leader's log is taken out while the followers copy it (no clone of the log).
        let mut source = self
            .replicas
            .remove(&leader)
            .expect("the leader has a replica");
        source.caught_up = now;
        let leo = source.leo();
        for (node, r) in self.replicas.iter_mut() {
            if !up(*node) {
                continue;
            }
            // A follower's log is normally a prefix of the leader's: check its last batch
            // first, and compare the whole log only when that fails (after an election).
            let n = r.batches.len();
            let common = if n <= source.batches.len()
                && (n == 0 || r.batches[n - 1] == source.batches[n - 1])
            {
                n
            } else {
                r.batches
                    .iter()
                    .zip(&source.batches)
                    .take_while(|(a, b)| a == b)
                    .count()
            };
            let cut: i64 = r.batches[common..].iter().map(|b| i64::from(b.count)).sum();
            self.truncated += cut as u64;
            r.batches.truncate(common);
            r.batches.extend_from_slice(&source.batches[common..]);
            r.caught_up = now;
        }
        self.replicas.insert(leader, source);
        for (node, r) in &self.replicas {
            if r.leo() == leo && r.caught_up == now {
                self.isr.insert(*node);
            } else if now.saturating_sub(r.caught_up) > lag {
                self.isr.remove(node);
            }
        }
        let hw = self
            .isr
            .iter()
            .map(|n| self.replicas[n].leo())
            .min()
            .unwrap_or(0);
        self.hw = self.hw.max(hw).min(leo);
    }

    /// Whether some follower that is up lacks part of the leader's log.
    pub(crate) fn lagging(&self, up: &dyn Fn(i32) -> bool) -> bool {
        let Some(leader) = self.leader else {
            return false;
        };
        let leo = self.replicas[&leader].leo();
        self.replicas
            .iter()
            .any(|(n, r)| *n != leader && up(*n) && (r.leo() != leo || !self.isr.contains(n)))
    }

    /// Elects a leader among the in-sync replicas that are up (`prefer` first, if it
    /// qualifies), or none: unclean election is off. A new epoch either way.
    pub(crate) fn elect(&mut self, up: &dyn Fn(i32) -> bool, prefer: Option<i32>, pick: usize) {
        let old = self.leader;
        let candidates: Vec<i32> = self
            .isr
            .iter()
            .copied()
            .filter(|n| up(*n) && Some(*n) != old)
            .collect();
        let new = match prefer {
            Some(p) if candidates.contains(&p) => Some(p),
            _ if candidates.is_empty() => None,
            _ => Some(candidates[pick % candidates.len()]),
        };
        if new.is_none() && old.is_some_and(up) {
            return; // nobody else can lead: keep the current leader
        }
        if let Some(o) = old {
            // The last in-sync replica stays in the ISR even when it is down (as in Kafka):
            // without unclean election, only it may lead again.
            if !up(o) && self.isr.len() > 1 {
                self.isr.remove(&o);
            }
        }
        self.leader = new;
        self.epoch += 1;
        if let Some(n) = new {
            // The new leader's log is the truth: its high watermark is at least the old one
            // (every in-sync replica holds everything below it).
            let leo = self.replicas[&n].leo();
            self.hw = self.hw.min(leo);
        }
    }

    /// A partition without a leader gets one when an in-sync replica comes back.
    pub(crate) fn revive(&mut self, up: &dyn Fn(i32) -> bool) {
        if self.leader.is_none() {
            if let Some(n) = self.isr.iter().copied().find(|n| up(*n)) {
                self.leader = Some(n);
                self.epoch += 1;
                let leo = self.replicas[&n].leo();
                self.hw = self.hw.min(leo);
            }
        }
    }

    /// The end offset of `epoch` in the leader's log (OffsetForLeaderEpoch), with the epoch
    /// found: the start of the first later epoch, or the log end.
    pub(crate) fn epoch_end(&self, epoch: i32) -> (i32, i64) {
        let Some(log) = self.leader_log() else {
            return (-1, -1);
        };
        if epoch > self.epoch {
            return (-1, -1);
        }
        let found = log
            .batches
            .iter()
            .filter(|b| b.epoch <= epoch)
            .map(|b| b.epoch)
            .max()
            .unwrap_or(-1);
        let end = log
            .batches
            .iter()
            .find(|b| b.epoch > epoch)
            .map_or(log.leo(), |b| b.base);
        (found, end)
    }
}
