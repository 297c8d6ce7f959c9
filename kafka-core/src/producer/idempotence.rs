//! Idempotence bookkeeping: per-partition sequences and epochs, and the KIP-360 epoch bump
//! that lets a partition start over when the broker lost (or may have lost) its state.

use super::accumulator::{Batch, TopicPartition};
use super::{DeliveryError, Producer};

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
    /// The broker acknowledged a batch of this partition under this epoch. Until then only
    /// one batch is in flight: a broker with no state for the producer takes any sequence,
    /// so a later batch could be written while an earlier one was refused (NOT_LEADER just
    /// after the topic was created), leaving the earlier out of sequence for good.
    pub(super) confirmed: bool,
}

/// Sequences wrap at i32::MAX, as on the broker.
pub(super) fn seq_add(s: i32, n: usize) -> i32 {
    ((i64::from(s) + n as i64) % (i64::from(i32::MAX) + 1)) as i32
}

/// Whether sequence `a` comes before `b`, across the wrap (at most five batches are in
/// flight, so the two are never half the sequence space apart).
pub(super) fn seq_before(a: i32, b: i32) -> bool {
    let span = i64::from(i32::MAX) + 1;
    let ahead = (i64::from(b) - i64::from(a)).rem_euclid(span);
    ahead != 0 && ahead < span / 2
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
        if !self.bumps_requested {
            // Not one partition to visit: no bump was asked for since the last found none.
            return;
        }
        let due: Vec<TopicPartition> = self
            .sequences
            .iter()
            .filter(|((t, p), s)| s.bump && !self.in_flight_per_tp.contains(t, *p))
            .map(|((t, p), _)| (t.to_owned(), p))
            .collect();
        if due.is_empty() {
            self.bumps_requested = self.sequences.values().any(|p| p.bump);
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
                &tp,
                PartitionSequence {
                    epoch: new_epoch,
                    next: 0,
                    acked_next: 0,
                    bump: false,
                    confirmed: false,
                },
            );
            self.resequence(&tp);
        }
    }

    /// Renumbers a partition's queued batches from its new sequence start, except those that
    /// may have been written already: under a new epoch the broker could not tell them from
    /// new records, so they fail as possibly sent instead of being written twice (found on
    /// Apache Kafka: a starved machine with short timeouts wrote hundreds of records twice).
    fn resequence(&mut self, tp: &TopicPartition) {
        for b in self.acc.take_unresolved(tp) {
            let last = b.last_error.as_deref().map(|(e, _)| e.clone());
            self.fail_batch(b, DeliveryError::SequenceUnresolved { last }, true);
        }
        self.acc.reset_sequences(tp);
    }

    /// Gets a new producer id, and starts every partition over.
    fn reset_producer_id(&mut self) {
        self.producer_id = None;
        self.restart_sequences();
    }

    /// Every partition starts over at sequence 0 (a new producer id or epoch: the brokers
    /// hold no sequences for it).
    pub(super) fn restart_sequences(&mut self) {
        let all: Vec<TopicPartition> = self.sequences.keys().collect();
        self.sequences.clear();
        for tp in all {
            self.resequence(&tp);
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
            self.bumps_requested = true;
        }
    }

    /// OUT_OF_ORDER_SEQUENCE_NUMBER for an idempotent (not transactional) batch. While an
    /// earlier batch of its partition is still on its way, that one left the gap: retry in
    /// order. Otherwise the broker will never take this sequence (an earlier batch failed or
    /// expired, the broker lost its state, or it took a later batch first): the partition
    /// starts over under a new epoch, and the batch goes again renumbered, unless it may have
    /// been written already, when it fails as possibly sent.
    pub(super) fn on_out_of_order(&mut self, b: Batch, now: crate::time::Instant) {
        let error = DeliveryError::Broker(kafka_proto::ErrorCode::OutOfOrderSequenceNumber);
        let earlier_in_flight = self.in_flight.values().any(|o| {
            o.tp == b.tp
                && o.epoch == b.epoch
                && o.base_sequence >= 0
                && seq_before(o.base_sequence, b.base_sequence)
        });
        if earlier_in_flight || self.acc.has_earlier(&b.tp, b.epoch, b.base_sequence) {
            self.retry_or_fail(b, error, now, false);
            return;
        }
        self.request_bump(&b.tp);
        if b.unresolved {
            let last = Some(error.to_string());
            self.fail_batch(b, DeliveryError::SequenceUnresolved { last }, true);
        } else {
            self.retry_or_fail(b, error, now, false);
        }
    }
}
