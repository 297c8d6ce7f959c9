//! Idempotence bookkeeping: per-partition sequences and epochs, and the KIP-360 epoch bump
//! that lets a partition start over when the broker lost (or may have lost) its state.

use crate::topic::TopicKey;
use kafka_proto::messages::init_producer_id_request::InitProducerIdRequest;
use kafka_proto::messages::init_producer_id_response::InitProducerIdResponse;
use kafka_proto::ErrorCode;

use super::accumulator::{Batch, TopicPartition};
use super::by_partition::ByPartition;
use super::in_flight::InFlight;
use super::{DeliveryError, Producer, Tag};
use crate::backoff::Backoff;
use crate::net::Network;
use crate::rng::Rng;
use crate::time::Instant;

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

impl PartitionSequence {
    /// A partition starting over at sequence 0 under `epoch`.
    fn starting(epoch: i16) -> Self {
        PartitionSequence {
            epoch,
            next: 0,
            acked_next: 0,
            bump: false,
            confirmed: false,
        }
    }
}

/// The idempotent producer's identity and sequences: the producer id and epoch in force, the
/// InitProducerId request that gets them (with its backoff), and each partition's
/// [`PartitionSequence`]. It owns this state; the producer hands it the network, and renumbers
/// the queued batches of the partitions it names.
#[derive(Debug, Default)]
pub(super) struct IdempotenceState {
    /// The producer id and epoch batches are sealed under (a transactional producer's come
    /// from its coordinator).
    pub(super) id: Option<(i64, i16)>,
    /// An InitProducerId request is in flight.
    requesting: bool,
    /// InitProducerId attempts failed in a row, for the backoff.
    failures: u32,
    /// No InitProducerId before this.
    retry_at: Option<Instant>,
    /// The broker refused sequence 0 as UNKNOWN_PRODUCER_ID: a new producer id is due once
    /// nothing is in flight.
    pub(super) unknown: bool,
    /// Each partition's sequences.
    pub(super) sequences: ByPartition<PartitionSequence>,
    /// An epoch bump may be pending for some partition (see [`IdempotenceState::bump_epochs`]).
    bumps_requested: bool,
}

impl IdempotenceState {
    /// Asks for a producer id unless one is known, asked for, or backing off.
    pub(super) fn request_id(&mut self, net: &mut Network<Tag>, now: Instant) {
        if self.id.is_some() || self.requesting || self.retry_at.is_some_and(|t| t > now) {
            return;
        }
        let Some(conn) = net.least_loaded(now) else {
            return;
        };
        let req = InitProducerIdRequest {
            transactional_id: None,
            transaction_timeout_ms: i32::MAX,
            producer_id: -1,
            producer_epoch: -1,
            ..Default::default()
        };
        if net.send(conn, &req, Tag::InitProducerId, now).is_ok() {
            self.requesting = true;
        }
    }

    /// InitProducerId's answer; the error when it is fatal (everything waiting fails).
    pub(super) fn handle_id(
        &mut self,
        resp: &InitProducerIdResponse,
        backoff: &Backoff,
        rng: &mut Rng,
        now: Instant,
    ) -> Option<ErrorCode> {
        self.requesting = false;
        match ErrorCode::from_code(resp.error_code) {
            None => {
                self.id = Some((resp.producer_id, resp.producer_epoch));
                self.failures = 0;
                None
            }
            Some(e) if !e.is_retriable() && e != ErrorCode::CoordinatorNotAvailable => Some(e),
            Some(_) => {
                self.back_off(backoff, rng, now);
                None
            }
        }
    }

    /// InitProducerId went unanswered (its connection failed or it timed out).
    pub(super) fn handle_id_failure(&mut self, backoff: &Backoff, rng: &mut Rng, now: Instant) {
        self.requesting = false;
        self.back_off(backoff, rng, now);
    }

    fn back_off(&mut self, backoff: &Backoff, rng: &mut Rng, now: Instant) {
        self.retry_at = Some(now + backoff.delay(self.failures, rng));
        self.failures = self.failures.saturating_add(1);
    }

    /// When the next InitProducerId may go.
    pub(super) fn retry_at(&self) -> Option<Instant> {
        self.retry_at
    }

    /// The epoch and base sequence a batch of `records` records is sealed with: the sequence
    /// it kept from an earlier attempt (`kept` ≥ 0), else the partition's next.
    #[inline]
    pub(super) fn assign(
        &mut self,
        tp: &(impl TopicKey, i32),
        kept: i32,
        records: usize,
    ) -> (i16, i32) {
        let epoch = self.id.map_or(-1, |(_, e)| e);
        let part = self
            .sequences
            .or_insert_with(tp, || PartitionSequence::starting(epoch));
        let base = if kept >= 0 {
            kept
        } else {
            let s = part.next;
            part.next = seq_add(s, records);
            s
        };
        (part.epoch, base)
    }

    /// The broker took a batch, so the next expected sequence moves past it.
    #[inline]
    pub(super) fn acknowledge(&mut self, b: &Batch) {
        if let Some(p) = self.sequences.get_mut(&b.tp) {
            if b.base_sequence >= 0 && b.epoch == p.epoch {
                p.acked_next = seq_add(b.base_sequence, b.records.len());
                p.confirmed = true;
            }
        }
    }

    /// Whether `epoch` is the one the partition's batches are sealed under now.
    #[inline]
    pub(super) fn is_current(&self, tp: &(impl TopicKey, i32), epoch: i16) -> bool {
        self.sequences.get(tp).is_some_and(|p| p.epoch == epoch)
    }

    /// A recreated topic has no producer state on the broker: its partitions start over at
    /// sequence 0 (same epoch). The partitions whose queued batches must be renumbered.
    pub(super) fn topic_recreated(&mut self, topic: &str) -> Vec<TopicPartition> {
        let tps: Vec<TopicPartition> = self.sequences.keys().filter(|tp| tp.0 == topic).collect();
        for tp in &tps {
            if let Some(part) = self.sequences.get_mut(tp) {
                part.next = 0;
                part.acked_next = 0;
                part.confirmed = false;
            }
        }
        tps
    }

    /// Marks a partition for an epoch bump once nothing of it is in flight.
    pub(super) fn request_bump(&mut self, tp: &(impl TopicKey, i32)) {
        if let Some(p) = self.sequences.get_mut(tp) {
            p.bump = true;
            self.bumps_requested = true;
        }
    }

    /// KIP-360: the partitions marked for a bump with nothing in flight start over at sequence
    /// 0 under the next epoch; an epoch overflow, or a broker that does not know the producer
    /// id at all (once nothing is in flight), drops the id instead. The partitions whose
    /// queued batches must be renumbered.
    pub(super) fn bump_epochs(&mut self, in_flight: &InFlight) -> Vec<TopicPartition> {
        let Some((pid, epoch)) = self.id else {
            return Vec::new();
        };
        if self.unknown && in_flight.is_empty() {
            self.unknown = false;
            return self.forget_id();
        }
        if !self.bumps_requested {
            // Not one partition to visit: no bump was asked for since the last found none.
            return Vec::new();
        }
        let due: Vec<TopicPartition> = self
            .sequences
            .iter()
            .filter(|((t, p), s)| s.bump && !in_flight.is_busy(t, *p))
            .map(|((t, p), _)| (t.to_owned(), p))
            .collect();
        if due.is_empty() {
            self.bumps_requested = self.sequences.values().any(|p| p.bump);
            return due;
        }
        if epoch == i16::MAX {
            // No higher epoch exists.
            return self.forget_id();
        }
        let new_epoch = epoch + 1;
        self.id = Some((pid, new_epoch));
        for tp in &due {
            self.sequences
                .insert(tp, PartitionSequence::starting(new_epoch));
        }
        due
    }

    /// Drops the producer id (a new one is asked for): every partition starts over.
    fn forget_id(&mut self) -> Vec<TopicPartition> {
        self.id = None;
        self.restart()
    }

    /// Every partition starts over at sequence 0 (a new producer id or epoch: the brokers
    /// hold no sequences for it). The partitions whose queued batches must be renumbered.
    pub(super) fn restart(&mut self) -> Vec<TopicPartition> {
        let all: Vec<TopicPartition> = self.sequences.keys().collect();
        self.sequences.clear();
        all
    }
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
    /// KIP-360 for the idempotent producer (see [`IdempotenceState::bump_epochs`]). A
    /// transactional producer's epoch is the coordinator's: it bumps it when the transaction
    /// aborts (see `transaction`).
    pub(super) fn apply_epoch_bumps(&mut self) {
        if self.txn.is_some() {
            return;
        }
        for tp in self.idem.bump_epochs(&self.in_flight) {
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

    /// Every partition starts over at sequence 0 (a new producer id or epoch: the brokers
    /// hold no sequences for it).
    pub(super) fn restart_sequences(&mut self) {
        for tp in self.idem.restart() {
            self.resequence(&tp);
        }
    }

    /// Marks a partition for an epoch bump (idempotent producers only).
    pub(super) fn request_bump(&mut self, tp: &(impl TopicKey, i32)) {
        if let Some(txn) = &mut self.txn {
            txn.require_bump();
            return;
        }
        self.idem.request_bump(tp);
    }

    /// OUT_OF_ORDER_SEQUENCE_NUMBER for an idempotent (not transactional) batch. While an
    /// earlier batch of its partition is still on its way, that one left the gap: retry in
    /// order. Otherwise the broker will never take this sequence (an earlier batch failed or
    /// expired, the broker lost its state, or it took a later batch first): the partition
    /// starts over under a new epoch, and the batch goes again renumbered, unless it may have
    /// been written already, when it fails as possibly sent.
    pub(super) fn on_out_of_order(&mut self, b: Batch, now: crate::time::Instant) {
        let error = DeliveryError::Broker(kafka_proto::ErrorCode::OutOfOrderSequenceNumber);
        let earlier_in_flight = self.in_flight.batches().any(|o| {
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
