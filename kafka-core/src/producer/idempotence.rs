//! Idempotence bookkeeping: per-partition sequences and epochs, and the KIP-360 epoch bump
//! that lets a partition start over when the broker lost (or may have lost) its state.

use super::accumulator::TopicPartition;
use super::Producer;

/// Idempotence bookkeeping for one partition. Epochs are per partition on the broker, so a
/// bump (KIP-360) moves only the partition that lost its sequence state.
#[derive(Debug, Clone, Copy)]
pub(super) struct PartitionSequence {
    /// The epoch this partition's batches are sealed under.
    pub(super) epoch: i16,
    /// The next sequence to assign.
    pub(super) next: i32,
    /// The sequence after the last acknowledged batch: what the broker expects next.
    pub(super) acked_next: i32,
    /// An epoch bump is due once nothing is in flight for the partition.
    pub(super) bump: bool,
}

/// Sequences wrap at i32::MAX, as on the broker.
pub(super) fn seq_add(s: i32, n: usize) -> i32 {
    ((i64::from(s) + n as i64) % (i64::from(i32::MAX) + 1)) as i32
}

impl Producer {
    /// KIP-360 for the idempotent producer: a partition whose sequence state the broker lost
    /// (or may have: a batch expired in flight) restarts at sequence 0 under a higher epoch,
    /// once nothing of it is in flight. An epoch overflow, or a broker that does not know the
    /// producer id at all, asks for a new producer id.
    pub(super) fn apply_epoch_bumps(&mut self) {
        let Some((pid, epoch)) = self.producer_id else {
            return;
        };
        if self.txn.is_some() {
            // A transactional producer's epoch is the coordinator's: it bumps it when the
            // transaction aborts (see `transaction`).
            return;
        }
        if self.pid_unknown && self.in_flight_per_tp.is_empty() {
            self.pid_unknown = false;
            self.reset_producer_id();
            return;
        }
        let due: Vec<TopicPartition> = self
            .sequences
            .iter()
            .filter(|(tp, p)| p.bump && !self.in_flight_per_tp.contains_key(*tp))
            .map(|(tp, _)| tp.clone())
            .collect();
        if due.is_empty() {
            return;
        }
        if epoch == i16::MAX {
            // No higher epoch exists.
            self.reset_producer_id();
            return;
        }
        let new_epoch = epoch + 1;
        self.producer_id = Some((pid, new_epoch));
        for tp in due {
            self.sequences.insert(
                tp.clone(),
                PartitionSequence {
                    epoch: new_epoch,
                    next: 0,
                    acked_next: 0,
                    bump: false,
                },
            );
            self.acc.reset_sequences(&tp);
        }
    }

    /// Gets a new producer id, and starts every partition over.
    fn reset_producer_id(&mut self) {
        self.producer_id = None;
        self.restart_sequences();
    }

    /// Every partition starts over at sequence 0 (a new producer id or epoch: the brokers
    /// hold no sequences for it).
    pub(super) fn restart_sequences(&mut self) {
        let all: Vec<TopicPartition> = self.sequences.keys().cloned().collect();
        self.sequences.clear();
        for tp in all {
            self.acc.reset_sequences(&tp);
        }
    }

    /// Marks a partition for an epoch bump (idempotent producers only).
    pub(super) fn request_bump(&mut self, tp: &TopicPartition) {
        if let Some(txn) = &mut self.txn {
            txn.require_bump();
            return;
        }
        if let Some(p) = self.sequences.get_mut(tp) {
            p.bump = true;
        }
    }
}
