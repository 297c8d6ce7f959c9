//! The batches written to a broker and not yet answered: by id, by delivery deadline (so that
//! neither `poll_timeout` nor expiry visits every one) and by partition (so that the sender asks
//! whether a partition is busy without a scan).

use std::collections::BTreeMap;
#[allow(clippy::disallowed_types)] // seeded by nothing: `IdHasher` is deterministic
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

use super::accumulator::Batch;
use super::by_partition::ByPartition;
use crate::time::Instant;
use crate::topic::TopicKey;

/// The producer's in-flight batches.
///
/// A hash map and deadlines counted by millisecond rather than two trees: at 10,000 partitions
/// a batch holds about one record, and inserting each into, and removing it from, trees by id
/// and by deadline was 300 instructions a batch.
#[derive(Debug, Default)]
pub(super) struct InFlight {
    by_id: IdMap<Batch>,
    /// How many batches are due in each millisecond, by that millisecond's end (deadlines
    /// rounded up: a wake-up may come up to a millisecond after a deadline, never before it,
    /// which would find nothing late and spin). Batches made within a millisecond share an
    /// entry, so one sent and answered costs a search of a small tree, where an entry per
    /// batch in a tree or a heap cost 200 to 300 instructions at 10,000 partitions.
    due: BTreeMap<Instant, u32>,
    /// How many batches of each partition are in flight. A partition's count stays when it
    /// drops to zero: at many partitions nearly every batch is a partition's only one in
    /// flight, and removing its entry each time removed the topic's too, remade (its vector
    /// as long as the topic is wide) at the next send.
    per_partition: ByPartition<usize>,
}

/// The end of the millisecond `deadline` falls in (itself if it ends one).
fn due_by(deadline: Instant) -> Instant {
    const MS: u64 = 1_000_000;
    Instant::from_nanos(deadline.as_nanos().div_ceil(MS).saturating_mul(MS))
}

/// A map by batch id, hashed by [`IdHasher`]: deterministic, unlike the default hasher.
#[allow(clippy::disallowed_types)]
type IdMap<V> = HashMap<u64, V, BuildHasherDefault<IdHasher>>;

/// Hashes the producer's batch ids (a counter: a multiply spreads them well enough), where
/// the default SipHash costs more than the whole lookup.
#[derive(Debug, Default)]
pub(super) struct IdHasher(u64);

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
        *self.due.entry(due_by(b.deadline)).or_insert(0) += 1;
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
        let at = due_by(b.deadline);
        if let Some(n) = self.due.get_mut(&at) {
            *n -= 1;
            if *n == 0 {
                self.due.remove(&at);
            }
        }
        Some(b)
    }

    /// When the earliest delivery deadline has passed (up to a millisecond after it).
    #[inline]
    pub(super) fn next_due(&self) -> Option<Instant> {
        self.due.keys().next().copied()
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
