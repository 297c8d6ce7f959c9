//! A batch of records for one partition: its builder until drained, then its sealed bytes,
//! and what retries, idempotence and completion need to know about it.

use bytes::Bytes;
use kafka_proto::record::{rewrite_producer_fields, BatchBuilder, BatchMeta};

use crate::producer::record::RecordMeta;
use crate::time::Instant;
use crate::topic::Topic;

/// A batch of records for one partition, boxed: batches move between the queues, requests in
/// flight and completion, and at many partitions a batch holds about one record, so moving its
/// 224 bytes at each step was a tenth of a batch's cost; a queue's room is then a few pointers,
/// small enough to keep when the queue empties.
pub(crate) type Batch = Box<BatchData>;

/// What a [`Batch`] holds.
#[derive(Debug)]
pub(crate) struct BatchData {
    pub id: u64,
    pub tp: (Topic, i32),
    pub(super) builder: Option<BatchBuilder>,
    /// The sealed bytes, once drained (retries resend the same bytes and sequence).
    pub sealed: Option<Bytes>,
    pub records: Vec<RecordMeta>,
    pub created: Instant,
    /// Until when it takes records (see [`Accumulator::append`]), fixed when it opens so that
    /// each append compares one instant.
    pub open_until: Instant,
    /// The latest of its records' delivery deadlines (`send` + `delivery.timeout.ms`).
    pub deadline: Instant,
    pub attempts: u32,
    pub retry_at: Option<Instant>,
    /// Pool bytes this batch holds until it completes.
    pub reserved: usize,
    /// It reached `batch.size` (or could not grow): ready to send, without waiting for
    /// `linger.ms`.
    pub full: bool,
    /// No more records go in: it reached its growth cap, memory was short, or it was split.
    pub closed: bool,
    /// It was ready, but its leader's connection could not take it (requests at
    /// `max.in.flight.requests.per.connection`, or not connected): full, it may grow.
    pub waited: bool,
    /// Idempotence: the first record's sequence, fixed at the first drain (-1: unassigned,
    /// also after an epoch bump, which renumbers the partition's queued batches).
    pub base_sequence: i32,
    /// Idempotence: the producer epoch the batch was sealed under.
    pub epoch: i16,
    /// Whether an attempt's fate is unknown (sent, then no answer): a final failure is then
    /// "possibly sent". A definitive broker answer does not clear it: certainty only weakens.
    pub sent: bool,
    /// Idempotence: an attempt may have been written and no answer since said whether. Such
    /// a batch is only ever resent with its own producer id, epoch and sequence, which the
    /// broker deduplicates: renumbered under a new epoch it could be written twice.
    pub unresolved: bool,
    /// Why its last attempt failed, and when, for a timeout to name (boxed: rare, and
    /// batches are many).
    pub last_error: Option<Box<(String, Instant)>>,
}

impl BatchData {
    /// Seals the batch (once) with the producer fields.
    pub fn seal(&mut self, meta: &BatchMeta) -> Bytes {
        if let Some(b) = self.builder.take() {
            // Encoding into a pre-sized buffer cannot fail except on compression, whose codecs
            // are checked at configuration time.
            self.sealed = Some(b.seal(meta).expect("sealing a batch with an enabled codec"));
        } else if (self.base_sequence, self.epoch) != (meta.base_sequence, meta.producer_epoch) {
            // Re-sent under a bumped epoch (KIP-360): new producer fields, same records.
            let old = self.sealed.as_ref().expect("a drained batch is sealed");
            let new = rewrite_producer_fields(
                old,
                meta.producer_id,
                meta.producer_epoch,
                meta.base_sequence,
            )
            .expect("a batch this producer sealed");
            self.sealed = Some(new);
        }
        self.base_sequence = meta.base_sequence;
        self.epoch = meta.producer_epoch;
        self.sealed.clone().expect("sealed above")
    }

    pub fn size(&self) -> usize {
        match (&self.sealed, &self.builder) {
            (Some(s), _) => s.len(),
            (None, Some(b)) => b.size(),
            (None, None) => 0,
        }
    }
}
