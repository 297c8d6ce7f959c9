//! What goes into the producer and what comes out: records, tokens, outcomes and events (how
//! a record fails is in `errors`).

use bytes::Bytes;

use super::{Certainty, DeliveryError};
pub use crate::topic::Topic;

/// A record to send. `timestamp` is CreateTime in epoch ms; the adapter fills it from the wall
/// clock when the user leaves it empty (the core never reads a clock).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ProducerRecord {
    /// The topic.
    pub topic: Topic,
    /// A fixed partition, or `None` to let the partitioner choose.
    pub partition: Option<i32>,
    /// The key.
    pub key: Option<Bytes>,
    /// The value (`None` is a tombstone).
    pub value: Option<Bytes>,
    /// Headers, in order.
    pub headers: Vec<(String, Option<Bytes>)>,
    /// CreateTime, epoch milliseconds.
    pub timestamp: i64,
}

impl ProducerRecord {
    /// A record with a value and a timestamp.
    pub fn new(topic: impl Into<Topic>, value: impl Into<Bytes>, timestamp: i64) -> Self {
        ProducerRecord {
            topic: topic.into(),
            value: Some(value.into()),
            timestamp,
            ..Default::default()
        }
    }

    /// Sets the key.
    pub fn with_key(mut self, key: impl Into<Bytes>) -> Self {
        self.key = Some(key.into());
        self
    }

    /// Fixes the partition.
    pub fn with_partition(mut self, partition: i32) -> Self {
        self.partition = Some(partition);
        self
    }

    /// Adds a header.
    pub fn with_header(mut self, key: impl Into<String>, value: impl Into<Bytes>) -> Self {
        self.headers.push((key.into(), Some(value.into())));
        self
    }
}

/// Identifies one sent record; its outcome carries the same token.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct RecordToken(pub u64);

/// Identifies one flush.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct FlushToken(pub u64);

/// What happened to a record. Every token gets exactly one outcome.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Outcome {
    /// The broker acknowledged it.
    Delivered {
        /// The partition it went to.
        partition: i32,
        /// Its offset; `None` with acks=0 and for duplicates of an earlier write.
        offset: Option<i64>,
        /// The timestamp the log holds (CreateTime, or LogAppendTime if the topic uses it).
        timestamp: i64,
    },
    /// It failed.
    Failed {
        /// Why.
        error: DeliveryError,
        /// Whether it may have been written anyway.
        certainty: Certainty,
    },
}

/// One record's bookkeeping inside a batch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct RecordMeta {
    pub token: RecordToken,
    pub timestamp: i64,
}

/// A batch's records, all delivered: one event for the batch instead of one per record, so
/// that a response's outcomes cost the core a move rather than an event per record. Each
/// record's [`Outcome::Delivered`] comes from [`outcomes`](Self::outcomes).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Delivered {
    pub(crate) partition: i32,
    /// The first record's offset; `None` with acks=0 and for a duplicate of an earlier write.
    pub(crate) base_offset: Option<i64>,
    /// The broker's LogAppendTime, or -1 (the records keep their CreateTime).
    pub(crate) log_append_time: i64,
    pub(crate) records: Vec<RecordMeta>,
}

impl Delivered {
    /// The partition the records went to.
    pub fn partition(&self) -> i32 {
        self.partition
    }

    /// How many records were delivered.
    pub fn len(&self) -> usize {
        self.records.len()
    }

    /// Whether it holds no record.
    pub fn is_empty(&self) -> bool {
        self.records.is_empty()
    }

    /// Each record's token and outcome, in the batch's order.
    pub fn outcomes(&self) -> impl ExactSizeIterator<Item = (RecordToken, Outcome)> + '_ {
        self.records
            .iter()
            .enumerate()
            .map(|(i, r)| (r.token, self.outcome_at(i, r)))
    }

    /// The outcome of the record with `token`, if it is in this batch.
    pub fn outcome(&self, token: RecordToken) -> Option<Outcome> {
        let i = self.records.iter().position(|r| r.token == token)?;
        Some(self.outcome_at(i, &self.records[i]))
    }

    fn outcome_at(&self, i: usize, r: &RecordMeta) -> Outcome {
        Outcome::Delivered {
            partition: self.partition,
            // A broker's number: never trusted not to overflow.
            offset: self.base_offset.and_then(|o| o.checked_add(i as i64)),
            timestamp: if self.log_append_time >= 0 {
                self.log_append_time
            } else {
                r.timestamp
            },
        }
    }
}

/// Something the user should know about.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ProducerEvent {
    /// A record's outcome: a failure, or a delivery not reported as part of a batch.
    Outcome(RecordToken, Outcome),
    /// A batch's records were delivered (each record's outcome: [`Delivered::outcomes`]).
    Delivered(Delivered),
    /// Every record sent before this flush has its outcome.
    FlushComplete(FlushToken),
    /// Memory was freed after a [`SendError::BufferFull`]: sending may succeed now.
    MemoryAvailable,
    /// `close` finished: nothing is left in flight.
    Closed,
    /// A transactional call (`init_transactions`, `send_offsets_to_transaction`,
    /// `commit_transaction`, `abort_transaction`) completed.
    Transaction(super::TxnToken, Result<(), super::TransactionError>),
}

impl ProducerEvent {
    /// This event with a batch's deliveries spelled out, one [`ProducerEvent::Outcome`] per
    /// record in the batch's order, for code that handles records one at a time; any other
    /// event comes out as it is.
    pub fn per_record(self) -> PerRecord {
        match self {
            ProducerEvent::Delivered(batch) => PerRecord::Batch(batch, 0),
            other => PerRecord::One(Some(other)),
        }
    }
}

/// The events of [`ProducerEvent::per_record`].
#[derive(Debug)]
pub enum PerRecord {
    /// An event that is not a batch.
    #[doc(hidden)]
    One(Option<ProducerEvent>),
    /// A batch, and how many of its records came out.
    #[doc(hidden)]
    Batch(Delivered, usize),
}

impl Iterator for PerRecord {
    type Item = ProducerEvent;

    fn next(&mut self) -> Option<ProducerEvent> {
        match self {
            PerRecord::One(e) => e.take(),
            PerRecord::Batch(batch, next) => {
                let r = *batch.records.get(*next)?;
                let outcome = batch.outcome_at(*next, &r);
                *next += 1;
                Some(ProducerEvent::Outcome(r.token, outcome))
            }
        }
    }
}

/// What the producer asks of its driver.
pub type Output = crate::net::Output<ProducerEvent>;
