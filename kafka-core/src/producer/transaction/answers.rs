//! The coordinators' answers to the transaction's requests, and what each error means: a
//! coordinator that moved or is busy (ask again), an abortable transaction, or a fatal one.

use std::collections::BTreeSet;
use std::time::Duration;

use kafka_proto::api::ResponseBody;
use kafka_proto::messages::add_partitions_to_txn_response::AddPartitionsToTxnResponse;
use kafka_proto::messages::find_coordinator_response::FindCoordinatorResponse;
use kafka_proto::messages::txn_offset_commit_response::TxnOffsetCommitResponse;
use kafka_proto::ErrorCode;

use super::{Pending, State, TransactionError, Transactions, GROUP_KEY, TRANSACTION_KEY};
use crate::time::Instant;
use crate::topic::TopicPartition;

/// How soon a request the coordinator answered CONCURRENT_TRANSACTIONS is tried again: the
/// transaction before is being completed, which takes a few milliseconds (as Java's 20 ms).
const CONCURRENT_RETRY: Duration = Duration::from_millis(20);

impl Transactions {
    /// A response to the request in flight.
    pub(crate) fn handle_response(&mut self, body: &ResponseBody, now: Instant) {
        let Some(pending) = self.pending.take() else {
            return;
        };
        match (pending, body) {
            (Pending::Find(kind), ResponseBody::FindCoordinator(r)) => self.on_find(kind, r, now),
            (Pending::Init, ResponseBody::InitProducerId(r)) => {
                match ErrorCode::from_code(r.error_code) {
                    None => self.on_producer_id(r.producer_id, r.producer_epoch),
                    Some(e) => self.on_error(e, now, |t, e| t.fail_fatal(e)),
                }
            }
            (Pending::Add(parts), ResponseBody::AddPartitionsToTxn(r)) => {
                self.on_add_partitions(parts, r, now)
            }
            (Pending::AddOffsets, ResponseBody::AddOffsetsToTxn(r)) => {
                match ErrorCode::from_code(r.error_code) {
                    None => {
                        self.failures = 0;
                        self.in_coordinator = true;
                        if let Some(call) = self.offsets.front_mut() {
                            call.added = true;
                        }
                    }
                    Some(e) => self.on_error(e, now, |t, e| t.abort_for(e, "AddOffsetsToTxn")),
                }
            }
            (Pending::TxnOffsetCommit, ResponseBody::TxnOffsetCommit(r)) => {
                self.on_txn_offset_commit(r, now)
            }
            (Pending::End, ResponseBody::EndTxn(r)) => match ErrorCode::from_code(r.error_code) {
                None => {
                    self.failures = 0;
                    // Version 2: every EndTxn bumps the epoch, and the next transaction runs
                    // under the one it hands back.
                    if self.tv2 && r.producer_id >= 0 && r.producer_epoch >= 0 {
                        self.producer_id = Some((r.producer_id, r.producer_epoch));
                    }
                    self.end_locally();
                }
                Some(e) => self.on_error(e, now, |t, e| t.abort_for(e, "EndTxn")),
            },
            // An answer of another kind: ask again.
            _ => self.back_off(now, None),
        }
    }

    /// AddPartitionsToTxn answered: the partitions it took are in the transaction, the rest
    /// go again unless an error ends it.
    fn on_add_partitions(
        &mut self,
        parts: BTreeSet<TopicPartition>,
        r: &AddPartitionsToTxnResponse,
        now: Instant,
    ) {
        let mut error = None;
        let mut answered = BTreeSet::new();
        for topic in &r.results_by_topic_v3_and_below {
            for p in &topic.results_by_partition {
                let tp = (topic.name.clone(), p.partition_index);
                match ErrorCode::from_code(p.partition_error_code) {
                    None if parts.contains(&tp) => {
                        answered.insert(tp.clone());
                        self.added.insert(&tp, ());
                        self.in_coordinator = true;
                    }
                    None => {}
                    // OPERATION_NOT_ATTEMPTED: another partition's error stopped it.
                    Some(ErrorCode::OperationNotAttempted) => {}
                    Some(e) => error = error.or(Some(e)),
                }
            }
        }
        // The rest go again, unless the error ends the transaction; not while
        // aborting: their records were failed unsent (found by the transaction
        // simulation: an abort behind an AddPartitionsToTxn answered
        // CONCURRENT_TRANSACTIONS waited for them for ever).
        if self.state != State::Aborting {
            self.to_add
                .extend(parts.into_iter().filter(|tp| !answered.contains(tp)));
        }
        match error {
            None if self.to_add.is_empty() => self.failures = 0,
            None => self.back_off(now, None),
            Some(e) => self.on_error(e, now, |t, e| t.abort_for(e, "AddPartitionsToTxn")),
        }
    }

    /// TxnOffsetCommit answered: the offsets call done, the group coordinator looked up again,
    /// the transaction made abortable (a fenced generation), or the error handled.
    fn on_txn_offset_commit(&mut self, r: &TxnOffsetCommitResponse, now: Instant) {
        let error = r
            .topics
            .iter()
            .flat_map(|t| &t.partitions)
            .find_map(|p| ErrorCode::from_code(p.error_code));
        match error {
            None => {
                self.failures = 0;
                // Version 2: the group joined the transaction with its offsets.
                self.in_coordinator |= self.tv2;
                if let Some(call) = self.offsets.pop_front() {
                    self.results.push_back((call.token, Ok(())));
                }
            }
            // The group coordinator moved: find it again.
            Some(ErrorCode::NotCoordinator | ErrorCode::CoordinatorNotAvailable) => {
                self.group_coordinator = None;
                self.back_off(now, None);
            }
            // KIP-447: the member's generation is gone (a rebalance gave its
            // partitions to another member), so its progress must not commit.
            Some(
                e @ (ErrorCode::UnknownMemberId
                | ErrorCode::IllegalGeneration
                | ErrorCode::FencedInstanceId),
            ) => self.make_abortable(format!(
                "the group refused the consumer's offsets ({e}): a rebalance moved its \
                 partitions to another member"
            )),
            Some(e) => self.on_error(e, now, |t, e| t.abort_for(e, "TxnOffsetCommit")),
        }
    }

    /// The request in flight failed without an answer (its connection broke or timed out):
    /// the coordinator is looked up again, as in Java, and the request goes again.
    pub(crate) fn handle_failure(&mut self, now: Instant) {
        match self.pending.take() {
            Some(Pending::Add(parts)) => {
                if self.state != State::Aborting {
                    self.to_add.extend(parts);
                }
                self.coordinator = None;
            }
            Some(Pending::TxnOffsetCommit | Pending::Find(GROUP_KEY)) => {
                self.group_coordinator = None
            }
            Some(_) => self.coordinator = None,
            None => return,
        }
        self.back_off(now, None);
    }

    pub(super) fn on_find(&mut self, kind: i8, r: &FindCoordinatorResponse, now: Instant) {
        let (code, node, addr) = crate::coordinator::found_coordinator(r);
        match (code, addr) {
            (None, Some(addr)) if node >= 0 => {
                self.failures = 0;
                self.learned.push((node, addr));
                if kind == TRANSACTION_KEY {
                    self.coordinator = Some(node);
                } else if let Some(call) = self.offsets.front() {
                    self.group_coordinator = Some((call.group.group_id.clone(), node));
                }
            }
            (Some(ErrorCode::GroupAuthorizationFailed), _) => {
                self.make_abortable("not authorized for the consumer group".to_owned())
            }
            (Some(e), _) if is_fatal(e) => self.fail_fatal(e),
            _ => self.back_off(now, None),
        }
    }

    /// InitProducerId answered: the first id, or a bumped epoch after an abort (KIP-360).
    pub(super) fn on_producer_id(&mut self, pid: i64, epoch: i16) {
        self.failures = 0;
        self.producer_id = Some((pid, epoch));
        match self.state {
            State::Initializing => {
                self.state = State::Ready;
                if let Some(t) = self.waiting.take() {
                    self.results.push_back((t, Ok(())));
                }
            }
            State::Aborting => {
                // The bump aborted the open transaction on the coordinator.
                self.bump_epoch = false;
                self.end_locally();
            }
            _ => {}
        }
    }

    /// An error code in a coordinator's answer: the coordinator moved, is busy, or the error
    /// ends the call (`otherwise`).
    pub(super) fn on_error(
        &mut self,
        e: ErrorCode,
        now: Instant,
        otherwise: impl FnOnce(&mut Self, ErrorCode),
    ) {
        match e {
            ErrorCode::NotCoordinator | ErrorCode::CoordinatorNotAvailable => {
                self.coordinator = None;
                self.back_off(now, None);
            }
            ErrorCode::ConcurrentTransactions => self.back_off(now, Some(CONCURRENT_RETRY)),
            ErrorCode::CoordinatorLoadInProgress
            | ErrorCode::UnknownTopicOrPartition
            | ErrorCode::RequestTimedOut => self.back_off(now, None),
            e if is_fatal(e) => self.fail_fatal(e),
            // The producer id is unknown to the coordinator: abort with an epoch bump.
            ErrorCode::UnknownProducerId | ErrorCode::InvalidProducerIdMapping => {
                self.bump_epoch = true;
                otherwise(self, e)
            }
            e if e.is_retriable() => self.back_off(now, None),
            e => otherwise(self, e),
        }
    }

    /// A request's error makes the transaction abortable; an abort's own EndTxn that fails
    /// this way is retried (with the epoch bump, when one is due).
    pub(super) fn abort_for(&mut self, e: ErrorCode, request: &str) {
        if self.state == State::Aborting {
            if e == ErrorCode::InvalidTxnState {
                self.fail_fatal(e);
            }
            // Retried at the next poll (as an epoch bump if the error asked for one).
            return;
        }
        match e {
            ErrorCode::InvalidTxnState | ErrorCode::InvalidTransactionTimeout => self.fail_fatal(e),
            ErrorCode::TopicAuthorizationFailed => {
                self.make_abortable(format!("{request}: not authorized for a topic ({e})"))
            }
            ErrorCode::GroupAuthorizationFailed => {
                self.make_abortable(format!("{request}: not authorized for the group ({e})"))
            }
            e => self.make_abortable(format!("{request} failed: {e}")),
        }
    }

    pub(super) fn back_off(&mut self, now: Instant, delay: Option<Duration>) {
        let delay = delay.unwrap_or_else(|| self.backoff.delay(self.failures, &mut self.rng));
        self.retry_at = Some(now + delay);
        self.failures = self.failures.saturating_add(1);
    }

    /// The transaction ended (committed, or aborted): ready for the next.
    pub(super) fn end_locally(&mut self) {
        self.state = State::Ready;
        self.added.clear();
        self.to_add.clear();
        self.in_coordinator = false;
        self.abortable = None;
        self.fail_offsets(|| TransactionError::Abortable {
            cause: "the transaction ended before its offsets were sent".to_owned(),
        });
        if let Some(t) = self.waiting.take() {
            self.results.push_back((t, Ok(())));
        }
    }

    pub(super) fn make_abortable(&mut self, cause: String) {
        if matches!(self.state, State::Fatal | State::Aborting) {
            return;
        }
        let committing = self.state == State::Committing;
        self.state = State::AbortableError;
        if self.abortable.is_none() {
            self.abortable = Some(cause);
        }
        let error = self.abortable_error();
        if committing {
            if let Some(t) = self.waiting.take() {
                self.results.push_back((t, Err(error.clone())));
            }
        }
        self.fail_offsets(|| error.clone());
    }

    pub(super) fn fail_fatal(&mut self, e: ErrorCode) {
        self.state = State::Fatal;
        self.fatal = Some(e);
        if let Some(t) = self.waiting.take() {
            self.results.push_back((t, Err(TransactionError::Fatal(e))));
        }
        self.fail_offsets(|| TransactionError::Fatal(e));
    }

    pub(super) fn fail_offsets(&mut self, error: impl Fn() -> TransactionError) {
        while let Some(call) = self.offsets.pop_front() {
            self.results.push_back((call.token, Err(error())));
        }
    }

    pub(super) fn abortable_error(&self) -> TransactionError {
        TransactionError::Abortable {
            cause: self
                .abortable
                .clone()
                .unwrap_or_else(|| "the transaction failed".to_owned()),
        }
    }

    /// The fatal cause, once the producer failed for good.
    pub(crate) fn fatal_code(&self) -> Option<ErrorCode> {
        self.fatal.filter(|_| self.state == State::Fatal)
    }

    pub(super) fn fatal_error(&self) -> TransactionError {
        TransactionError::Fatal(self.fatal.unwrap_or(ErrorCode::UnknownServerError))
    }
}

/// Errors after which the producer can run no more transactions (Java's fatal errors).
pub(super) fn is_fatal(e: ErrorCode) -> bool {
    matches!(
        e,
        ErrorCode::ProducerFenced
            | ErrorCode::InvalidProducerEpoch
            | ErrorCode::TransactionalIdAuthorizationFailed
            | ErrorCode::ClusterAuthorizationFailed
            | ErrorCode::TransactionCoordinatorFenced
            | ErrorCode::UnsupportedVersion
            | ErrorCode::UnsupportedForMessageFormat
            | ErrorCode::InvalidTransactionTimeout
    )
}
