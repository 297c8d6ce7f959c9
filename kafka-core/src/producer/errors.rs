//! How a record fails: refused by `send` (`SendError`), or failed after it was queued
//! (`DeliveryError`), with whether it may have been written anyway (`Certainty`).

use kafka_proto::ErrorCode;

use crate::net::RequestError;

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

/// " (last: ...)" for a timeout's message, or nothing.
fn last_cause(last: &Option<String>) -> String {
    last.as_deref()
        .map(|l| format!(" (last: {l})"))
        .unwrap_or_default()
}
