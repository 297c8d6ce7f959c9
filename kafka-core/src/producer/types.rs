//! What goes into the producer and what comes out: records, tokens, outcomes and typed errors.

use bytes::Bytes;
use kafka_proto::ErrorCode;

use crate::net::RequestError;
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

/// Whether a failed record may have been written anyway.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
#[non_exhaustive]
pub enum Certainty {
    /// It was never sent, or the broker said it did not write it: retrying cannot duplicate it.
    NotSent,
    /// It was sent and no answer came back, or the answer was ambiguous: it may be in the log.
    PossiblySent,
}

/// Why a record failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum DeliveryError {
    /// `delivery.timeout.ms` passed before the record was acknowledged; `last` is the last
    /// cause seen (its last attempt's error, or the last connection problem).
    #[error(
        "delivery.timeout.ms expired before the record was acknowledged{}",
        last_cause(last)
    )]
    DeliveryTimeout {
        /// The last cause seen, if any.
        last: Option<String>,
    },
    /// The topic's metadata did not arrive within `max.block.ms`.
    #[error("metadata for topic `{topic}` was not available within max.block.ms: check the topic exists and the broker is reachable{}", last_cause(last))]
    MetadataTimeout {
        /// The topic.
        topic: String,
        /// The last cause seen (a connection problem), if any.
        last: Option<String>,
    },
    /// The broker rejected the batch with an error that retrying cannot fix.
    #[error("the broker rejected the record: {0}")]
    Broker(ErrorCode),
    /// The last attempt's request failed and no retries were left.
    #[error("the request failed: {0}")]
    Request(RequestError),
    /// The partition does not exist.
    #[error("partition {partition} does not exist in topic `{topic}` ({count} partitions)")]
    UnknownPartition {
        /// The topic.
        topic: String,
        /// The requested partition.
        partition: i32,
        /// How many it has.
        count: usize,
    },
    /// The producer was closed (or dropped) before the record completed.
    #[error("the producer closed before the record was delivered")]
    Closed,
    /// The producer refused the record when it was sent (for adapters whose `send` returns
    /// before the core sees the record).
    #[error(transparent)]
    Refused(SendError),
    /// A connection could not authenticate (SASL credentials or mechanism, or TLS): the
    /// records waiting for a connection fail at once, as in Java, rather than at their
    /// timeouts. Records sent before are not affected.
    #[error(transparent)]
    Authentication(crate::net::AuthError),
    /// `buffer.memory` stayed full for `max.block.ms` (for adapters whose `send` returns
    /// before memory is granted).
    #[error("buffer.memory stayed full for max.block.ms; the broker may be slow or unreachable")]
    BufferFull,
    /// The record's transaction was aborted before the record was sent.
    #[error("the record's transaction was aborted before it was sent")]
    TransactionAborted,
    /// With idempotence: an earlier attempt may have been written, and the broker can no
    /// longer say whether (its sequence was lost, or an earlier batch left a gap). Sending it
    /// again under a new sequence could write it twice, so it is not sent again.
    #[error(
        "an earlier attempt may have been written and the broker can no longer tell (its sequence was lost); not sent again, so as never to write it twice{}",
        last_cause(last)
    )]
    SequenceUnresolved {
        /// The last cause seen, if any.
        last: Option<String>,
    },
}

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

/// Why `send` refused a record outright (nothing was queued).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SendError {
    /// `buffer.memory` is used up. Wait for [`ProducerEvent::MemoryAvailable`] (up to
    /// `max.block.ms`) and send again.
    #[error("buffer.memory is full; wait for memory to free and retry")]
    BufferFull,
    /// The record can never fit: larger than `max.request.size` or `buffer.memory`.
    #[error("the record is {size} bytes, above {limit_name} ({limit}); raise it or send smaller records")]
    RecordTooLarge {
        /// The record's encoded size.
        size: usize,
        /// The limit's name.
        limit_name: &'static str,
        /// The limit.
        limit: usize,
    },
    /// The producer is closing or closed.
    #[error("the producer is closed")]
    Closed,
    /// A negative partition number.
    #[error("invalid partition {0}")]
    InvalidPartition(i32),
    /// A transactional producer sends only inside a transaction it may still commit.
    #[error(transparent)]
    Transaction(super::TransactionError),
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

/// " (last: ...)" for a timeout's message, or nothing.
fn last_cause(last: &Option<String>) -> String {
    last.as_deref()
        .map(|l| format!(" (last: {l})"))
        .unwrap_or_default()
}
