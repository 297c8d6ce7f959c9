//! The batches written to a broker and not yet answered: by id, by delivery deadline (so that
//! neither `poll_timeout` nor expiry visits every one) and by partition (so that the sender asks
//! whether a partition is busy without a scan).

use std::collections::{BTreeMap, BTreeSet};

use super::accumulator::Batch;
use super::by_partition::ByPartition;
use crate::time::Instant;

/// The producer's in-flight batches.
#[derive(Debug, Default)]
pub(super) struct InFlight {
    by_id: BTreeMap<u64, Batch>,
    /// By delivery deadline.
    due: BTreeSet<(Instant, u64)>,
    /// How many batches of each partition are in flight. A partition's count stays when it
    /// drops to zero: at many partitions nearly every batch is a partition's only one in
    /// flight, and removing its entry each time removed the topic's too, remade (its vector
    /// as long as the topic is wide) at the next send.
    per_partition: ByPartition<usize>,
}

impl InFlight {
    /// A batch was written in a request that expects an answer.
    #[inline]
    pub(super) fn insert(&mut self, b: Batch) {
        *self.per_partition.or_insert_with(&b.tp, || 0) += 1;
        self.due.insert((b.deadline, b.id));
        self.by_id.insert(b.id, b);
    }

    /// Takes a batch out (answered, failed or expired); `None` when it is not in flight (its
    /// answer came after it expired).
    #[inline]
    pub(super) fn take(&mut self, id: u64) -> Option<Batch> {
        let b = self.by_id.remove(&id)?;
        self.due.remove(&(b.deadline, id));
        if let Some(n) = self.per_partition.get_mut(&b.tp) {
            *n -= 1;
        }
        Some(b)
    }

    /// The earliest delivery deadline.
    #[inline]
    pub(super) fn next_due(&self) -> Option<Instant> {
        self.due.first().map(|(at, _)| *at)
    }

    /// The batches whose delivery deadline passed, in the order they were sent.
    pub(super) fn late(&self, now: Instant) -> Vec<u64> {
        let mut late: Vec<u64> = self
            .due
            .iter()
            .take_while(|(at, _)| *at <= now)
            .map(|(_, id)| *id)
            .collect();
        late.sort_unstable();
        late
    }

    /// Every batch's id, in the order they were sent.
    pub(super) fn ids(&self) -> Vec<u64> {
        self.by_id.keys().copied().collect()
    }

    /// Every batch in flight.
    pub(super) fn batches(&self) -> impl Iterator<Item = &Batch> + '_ {
        self.by_id.values()
    }

    /// Whether nothing is in flight.
    pub(super) fn is_empty(&self) -> bool {
        self.by_id.is_empty()
    }

    /// Whether a batch of the partition is in flight.
    #[inline]
    pub(super) fn is_busy(&self, topic: &str, partition: i32) -> bool {
        (self.per_partition.get_in(topic, partition)).is_some_and(|n| *n > 0)
    }
}
