//! The batches written to a broker and not yet answered: by id, by delivery deadline (so that
//! neither `poll_timeout` nor expiry visits every one) and by partition (so that the sender asks
//! whether a partition is busy without a scan).

use std::cmp::Reverse;
use std::collections::BinaryHeap;
#[allow(clippy::disallowed_types)] // seeded by nothing: `IdHasher` is deterministic
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

use super::accumulator::Batch;
use super::by_partition::ByPartition;
use crate::time::Instant;
use crate::topic::TopicKey;

/// The producer's in-flight batches.
///
/// A hash map and a heap rather than trees: at 10,000 partitions a batch holds about one
/// record, and inserting each into, and removing it from, two trees (by id and by deadline) was
/// 300 instructions a batch.
#[derive(Debug, Default)]
pub(super) struct InFlight {
    by_id: IdMap<Batch>,
    /// By exact delivery deadline, earliest on top (a request's batches come in partition
    /// order, not deadline order: kept sorted in a deque, inserting them cost 350 instructions
    /// each; counted per millisecond and rounded up, a batch could expire up to a millisecond
    /// late, past its first record's own deadline by more than a batch's open span, which the
    /// simulation found, seed 623 of 1,500). An entry whose batch left (answered, failed) stays
    /// until it reaches the top, where [`InFlight::take`] drops it, so the top is always a
    /// batch in flight; when stale entries outnumber the live ones they are swept out.
    due: BinaryHeap<Reverse<(Instant, u64)>>,
    /// How many batches of each partition are in flight. A partition's count stays when it
    /// drops to zero: at many partitions nearly every batch is a partition's only one in
    /// flight, and removing its entry each time removed the topic's too, remade (its vector
    /// as long as the topic is wide) at the next send.
    per_partition: ByPartition<usize>,
}

/// A map by batch id, hashed by [`IdHasher`]: deterministic, unlike the default hasher.
#[allow(clippy::disallowed_types)]
type IdMap<V> = HashMap<u64, V, BuildHasherDefault<IdHasher>>;

/// Hashes the producer's batch ids (a counter: a multiply spreads them well enough), where
/// the default SipHash costs more than the whole lookup.
#[derive(Debug, Default)]
struct IdHasher(u64);

impl Hasher for IdHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.0 = (self.0.rotate_left(8) ^ u64::from(*b)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        }
    }

    fn write_u64(&mut self, n: u64) {
        self.0 = (self.0 ^ n).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }
}

impl InFlight {
    /// A batch was written in a request that expects an answer.
    #[inline]
    pub(super) fn insert(&mut self, b: Batch) {
        *self.per_partition.or_insert_with(&b.tp, || 0) += 1;
        self.due.push(Reverse((b.deadline, b.id)));
        self.by_id.insert(b.id, b);
    }

    /// Takes a batch out (answered, failed or expired); `None` when it is not in flight (its
    /// answer came after it expired).
    #[inline]
    pub(super) fn take(&mut self, id: u64) -> Option<Batch> {
        let b = self.by_id.remove(&id)?;
        if let Some(n) = self.per_partition.get_mut(&b.tp) {
            *n -= 1;
        }
        self.tidy_due();
        Some(b)
    }

    /// Whether a deadline entry still names a batch in flight.
    fn live(by_id: &IdMap<Batch>, (at, id): (Instant, u64)) -> bool {
        by_id.get(&id).is_some_and(|b| b.deadline == at)
    }

    /// Drops stale entries from the top, and sweeps them all out when they outnumber the live
    /// ones (from the heap itself: rebuilt from the map, the sweep walked the map's whole
    /// capacity, 200 instructions a batch at 10,000 partitions).
    fn tidy_due(&mut self) {
        while let Some(Reverse(top)) = self.due.peek() {
            if Self::live(&self.by_id, *top) {
                break;
            }
            self.due.pop();
        }
        if self.due.len() > 2 * self.by_id.len() + 64 {
            let by_id = &self.by_id;
            (self.due).retain(|Reverse(entry)| Self::live(by_id, *entry));
        }
    }

    /// The earliest delivery deadline.
    #[inline]
    pub(super) fn next_due(&self) -> Option<Instant> {
        self.due.peek().map(|Reverse((at, _))| *at)
    }

    /// The batches whose delivery deadline passed, in the order they were sent.
    pub(super) fn late(&self, now: Instant) -> Vec<u64> {
        if self.next_due().is_none_or(|at| at > now) {
            return Vec::new();
        }
        let mut late: Vec<u64> = (self.by_id.values())
            .filter(|b| b.deadline <= now)
            .map(|b| b.id)
            .collect();
        late.sort_unstable();
        late
    }

    /// Every batch's id, in the order they were sent.
    pub(super) fn ids(&self) -> Vec<u64> {
        let mut ids: Vec<u64> = self.by_id.keys().copied().collect();
        ids.sort_unstable();
        ids
    }

    /// Every batch in flight, in no particular order.
    pub(super) fn batches(&self) -> impl Iterator<Item = &Batch> + '_ {
        self.by_id.values()
    }

    /// Whether nothing is in flight.
    pub(super) fn is_empty(&self) -> bool {
        self.by_id.is_empty()
    }

    /// Whether a batch of the partition is in flight.
    #[inline]
    pub(super) fn is_busy(&self, topic: &(impl TopicKey + ?Sized), partition: i32) -> bool {
        (self.per_partition.get_in(topic, partition)).is_some_and(|n| *n > 0)
    }
}
