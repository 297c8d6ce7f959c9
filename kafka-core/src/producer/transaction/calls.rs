//! What the application hands the transactional producer and what it hears back: call
//! tokens, offsets, and the typed errors (a consumer group's metadata, KIP-447, is the group's:
//! [`crate::group::GroupMetadata`]).

use kafka_proto::ErrorCode;

/// Identifies one transactional call (`init_transactions`, `send_offsets_to_transaction`,
/// `commit_transaction`, `abort_transaction`); its result arrives with the same token.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct TxnToken(pub u64);

/// The offset to commit for one partition: the next record to read, and the leader epoch of
/// the last one read (-1 if unknown).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TxnOffset {
    /// The next offset to read.
    pub offset: i64,
    /// The leader epoch of the record before it, or -1.
    pub leader_epoch: i32,
}

/// Why a transactional call failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum TransactionError {
    /// The producer can run no more transactions (fenced by a newer producer with the same
    /// `transactional.id`, not authorized for it, or the coordinator found it in an invalid
    /// state): close it. Every later transactional call fails with the same cause.
    #[error("the transactional producer failed for good ({0}); close it and create a new one")]
    Fatal(ErrorCode),
    /// The transaction cannot commit: abort it (`abort_transaction`), then carry on with the
    /// next one.
    #[error("the transaction cannot commit ({cause}); abort it and begin the next one")]
    Abortable {
        /// What failed: a record's error or the coordinator's answer.
        cause: String,
    },
    /// The call does not fit the producer's state (for example `begin_transaction` before
    /// `init_transactions` completed, or twice without a commit or abort between).
    #[error("`{call}` is not allowed {state}")]
    InvalidState {
        /// The call.
        call: &'static str,
        /// The state it was called in, in words.
        state: &'static str,
    },
    /// The call did not complete within `max.block.ms` (the coordinator is slow or
    /// unreachable). It goes on: call it again to wait for it.
    #[error("the transactional call did not complete within max.block.ms; call it again to keep waiting")]
    TimedOut,
    /// The producer has no `transactional.id`.
    #[error("the producer is not transactional: set transactional.id to use transactions")]
    NotTransactional,
    /// The producer closed before the call completed.
    #[error("the producer closed before the transactional call completed")]
    Closed,
}
