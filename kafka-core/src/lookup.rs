//! What the admin client and the consumer share for lookups any broker answers (ListOffsets):
//! which offset to find ([`OffsetSpec`]), and why a lookup, or any admin operation, failed
//! ([`AdminError`]). The clients name this module; it names none of them.

use kafka_proto::{ErrorCode, NegotiationError};

/// Which offset of a partition to list.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OffsetSpec {
    /// The log start.
    Earliest,
    /// The log end (the high watermark).
    Latest,
    /// The first offset whose timestamp is at or after this (epoch ms); the log end if none.
    Timestamp(i64),
}

impl OffsetSpec {
    pub(crate) fn wire(self) -> i64 {
        match self {
            OffsetSpec::Earliest => -2,
            OffsetSpec::Latest => -1,
            OffsetSpec::Timestamp(t) => t,
        }
    }
}

/// Why an admin operation (or one topic of it) failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum AdminError {
    /// The broker answered with an error that retrying will not fix.
    #[error("the broker refused: {code}{}", message.as_deref().map(|m| format!(" ({m})")).unwrap_or_default())]
    Broker {
        /// The error code.
        code: ErrorCode,
        /// The broker's message, if any.
        message: Option<String>,
    },
    /// `default.api.timeout.ms` passed without an answer.
    #[error("no answer within default.api.timeout.ms{}; is the broker reachable?", last.as_deref().map(|m| format!(" (last problem: {m})")).unwrap_or_default())]
    Timeout {
        /// The last retriable problem seen, if any.
        last: Option<String>,
    },
    /// The broker does not support the request at any version we speak.
    #[error(transparent)]
    Unsupported(#[from] NegotiationError),
    /// A connection could not authenticate (SASL or TLS): fatal to the operation, as in Java.
    #[error(transparent)]
    Authentication(crate::net::AuthError),
    /// The admin client was closed (dropped), or its driver stopped, before the answer.
    #[error("the admin client is closed")]
    Closed,
    /// A group's offsets can be altered only while it has no members (stop its consumers
    /// first).
    #[error("group {group} has active members: stop its consumers, then alter its offsets")]
    GroupNotEmpty {
        /// The group.
        group: String,
    },
}
