//! The transactional producer's side of the transaction protocol, as a sans-IO sub-machine: it
//! says which request to send next (FindCoordinator, InitProducerId, AddPartitionsToTxn,
//! AddOffsetsToTxn, TxnOffsetCommit, EndTxn) and to whom, takes their responses, and reports
//! each call's result. The producer routes its requests (FindCoordinator to the least-loaded
//! node, the rest to a coordinator over a connection of its own), holds back batches of
//! partitions not yet in the transaction, and says when every record of the transaction has
//! its outcome, which a commit or an abort waits for.
//!
//! It speaks transaction version 2 (KIP-890 part 2) where the cluster finalized the
//! `transaction.version` feature at 2 or more when `init_transactions` completes: Produce v12+
//! adds partitions to the transaction, TxnOffsetCommit v5 adds the group, and each EndTxn v5
//! bumps the epoch and hands the new one back. Otherwise version 1: AddPartitionsToTxn v3 and
//! AddOffsetsToTxn first, EndTxn v4, Produce v11 and TxnOffsetCommit v4 at most (a broker
//! tells the versions apart by the requests' versions). Errors split as the Java client splits them: fatal ones
//! (fenced, not authorized for the transactional id, an invalid state) stop the producer's
//! transactions for good, abortable ones leave the application to abort and carry on.

use crate::topic::TopicKey;
use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::time::Duration;

use kafka_proto::messages::add_offsets_to_txn_request::AddOffsetsToTxnRequest;
use kafka_proto::messages::add_partitions_to_txn_request::{
    AddPartitionsToTxnRequest, AddPartitionsToTxnTopic,
};
use kafka_proto::messages::end_txn_request::EndTxnRequest;
use kafka_proto::messages::find_coordinator_request::FindCoordinatorRequest;
use kafka_proto::messages::init_producer_id_request::InitProducerIdRequest;
use kafka_proto::messages::txn_offset_commit_request::{
    TxnOffsetCommitRequest, TxnOffsetCommitRequestPartition, TxnOffsetCommitRequestTopic,
};
use kafka_proto::ErrorCode;

mod answers;
mod calls;
mod producer;
#[cfg(test)]
mod tests;

pub use calls::*;
// Kept at its old path: a group member hands it to the transaction.
pub use crate::group::GroupMetadata;

use answers::is_fatal;

use super::accumulator::TopicPartition;
use super::by_partition::ByPartition;
use crate::backoff::Backoff;
use crate::config::HostPort;
use crate::net::NodeId;
use crate::rng::Rng;
use crate::time::Instant;

/// The coordinator key types of FindCoordinator.
pub(super) const GROUP_KEY: i8 = 0;
pub(super) const TRANSACTION_KEY: i8 = 1;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum State {
    Uninitialized,
    Initializing,
    Ready,
    InTransaction,
    Committing,
    Aborting,
    /// A record or request failed: only an abort is allowed.
    AbortableError,
    Fatal,
}

impl State {
    fn words(self) -> &'static str {
        match self {
            State::Uninitialized => "before init_transactions",
            State::Initializing => "while init_transactions is running",
            State::Ready => "outside a transaction (call begin_transaction first)",
            State::InTransaction => "inside a transaction (commit or abort it first)",
            State::Committing => "while the transaction commits",
            State::Aborting => "while the transaction aborts",
            State::AbortableError => "after the transaction failed (abort it first)",
            State::Fatal => "after the producer failed for good",
        }
    }
}

/// Where a transactional request goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum TxnTarget {
    /// Any broker (the least-loaded one): FindCoordinator.
    AnyNode,
    /// The transaction coordinator, over the coordinator connection.
    Coordinator(NodeId),
    /// The group coordinator of the offsets being committed, over its coordinator connection.
    GroupCoordinator(NodeId),
}

/// A request the transaction wants sent.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum TxnRequest {
    FindCoordinator(FindCoordinatorRequest),
    InitProducerId(InitProducerIdRequest),
    AddPartitions(AddPartitionsToTxnRequest),
    AddOffsets(AddOffsetsToTxnRequest),
    TxnOffsetCommit(TxnOffsetCommitRequest),
    EndTxn(EndTxnRequest),
}

/// Which request is in flight (one at a time, as in Java's transaction manager).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Pending {
    /// The coordinator of this key type.
    Find(i8),
    Init,
    /// These partitions.
    Add(BTreeSet<TopicPartition>),
    AddOffsets,
    TxnOffsetCommit,
    End,
}

/// What the transaction sends next.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Next {
    /// FindCoordinator for the transactional id, or for this group.
    Find(i8, String),
    /// InitProducerId: the first, or an epoch bump of this id and epoch (KIP-360).
    Init(Option<(i64, i16)>),
    Add,
    AddOffsets,
    /// TxnOffsetCommit to this group coordinator.
    OffsetCommit(NodeId),
    End,
}

/// `send_offsets_to_transaction` calls, in order: each adds its group to the transaction, then
/// commits its offsets there.
#[derive(Debug, Clone)]
struct OffsetsCall {
    token: TxnToken,
    offsets: BTreeMap<TopicPartition, TxnOffset>,
    group: GroupMetadata,
    /// AddOffsetsToTxn succeeded: TxnOffsetCommit is next.
    added: bool,
}

/// The transaction state of one transactional producer.
#[derive(Debug)]
pub(crate) struct Transactions {
    transactional_id: String,
    timeout: Duration,
    backoff: Backoff,
    rng: Rng,
    state: State,
    /// The fatal cause, once the state is Fatal.
    fatal: Option<ErrorCode>,
    /// Why the transaction must abort, in the AbortableError state.
    abortable: Option<String>,
    /// The abort must bump the producer epoch (KIP-360) instead of sending EndTxn: the
    /// coordinator, or a partition leader, lost track of this producer's sequence.
    bump_epoch: bool,
    coordinator: Option<NodeId>,
    group_coordinator: Option<(String, NodeId)>,
    producer_id: Option<(i64, i16)>,
    /// Partitions in the transaction (the broker confirmed them).
    added: ByPartition<()>,
    /// The coordinator knows the transaction: a partition or a group was added to it.
    in_coordinator: bool,
    /// Partitions with records waiting to be added.
    to_add: BTreeSet<TopicPartition>,
    offsets: VecDeque<OffsetsCall>,
    /// The call waiting for the transaction's end, or for init.
    waiting: Option<TxnToken>,
    pending: Option<Pending>,
    retry_at: Option<Instant>,
    failures: u32,
    /// Coordinator addresses learned from FindCoordinator, for the producer's network.
    learned: Vec<(NodeId, HostPort)>,
    results: VecDeque<(TxnToken, Result<(), TransactionError>)>,
    /// Transaction version 2 (KIP-890 part 2), decided when init_transactions completes.
    tv2: bool,
}

impl Transactions {
    /// The transaction state for `transactional_id`, whose transactions the coordinator aborts
    /// after `timeout`.
    pub(crate) fn new(
        transactional_id: String,
        timeout: Duration,
        backoff: Backoff,
        seed: u64,
    ) -> Self {
        Transactions {
            transactional_id,
            timeout,
            backoff,
            rng: Rng::new(seed ^ 0x7478_6e73),
            state: State::Uninitialized,
            fatal: None,
            abortable: None,
            bump_epoch: false,
            coordinator: None,
            group_coordinator: None,
            producer_id: None,
            added: ByPartition::default(),
            in_coordinator: false,
            to_add: BTreeSet::new(),
            offsets: VecDeque::new(),
            waiting: None,
            pending: None,
            retry_at: None,
            failures: 0,
            learned: Vec::new(),
            results: VecDeque::new(),
            tv2: false,
        }
    }

    /// The cluster's finalized `transaction.version`: until init_transactions completes, it
    /// decides the transaction version (kept for the producer's life after, as a cluster that
    /// upgrades later is still served version 1).
    pub(crate) fn offer_version(&mut self, finalized: Option<i16>) {
        if matches!(self.state, State::Uninitialized | State::Initializing) {
            self.tv2 = finalized.is_some_and(|v| v >= 2);
        }
    }

    /// Whether the transactions speak version 2.
    pub(crate) fn tv2(&self) -> bool {
        self.tv2
    }

    /// A batch of the transaction went to its leader: with version 2, that is what tells the
    /// coordinator of the transaction (its partition joins it through the Produce).
    pub(crate) fn batch_sent(&mut self) {
        if self.tv2 && matches!(self.state, State::InTransaction | State::Committing) {
            self.in_coordinator = true;
        }
    }

    /// The producer id and epoch the producer's batches carry, once initialized.
    pub(crate) fn producer_id(&self) -> Option<(i64, i16)> {
        self.producer_id
            .filter(|_| !matches!(self.state, State::Uninitialized | State::Initializing))
    }

    /// Whether records may be sent now (inside a transaction).
    pub(crate) fn check_send(&self) -> Result<(), TransactionError> {
        match self.state {
            State::InTransaction => Ok(()),
            _ => Err(self.refusal("send")),
        }
    }

    /// Why `call` cannot run in the current state: the failure that stopped the transaction
    /// (abortable) or the producer (fatal), or the state itself.
    fn refusal(&self, call: &'static str) -> TransactionError {
        match self.state {
            State::AbortableError => self.abortable_error(),
            State::Fatal => self.fatal_error(),
            s => TransactionError::InvalidState {
                call,
                state: s.words(),
            },
        }
    }

    /// Answers `token` at once with [`Transactions::refusal`].
    fn refuse(&mut self, token: TxnToken, call: &'static str) {
        let error = self.refusal(call);
        self.results.push_back((token, Err(error)));
    }

    /// A batch for `tp` opened: the partition joins the transaction before its batches go.
    pub(crate) fn add_partition(&mut self, tp: &(impl TopicKey + AsRef<str>, i32)) {
        if self.tv2 {
            // Version 2: the Produce adds it.
            self.added.or_insert_with(tp, || ());
        } else if self.added.get(tp).is_none() {
            self.to_add.insert((tp.0.as_ref().to_owned(), tp.1));
        }
    }

    /// Whether `tp`'s batches may be sent: it is in the transaction.
    pub(crate) fn is_added(&self, tp: &(impl TopicKey, i32)) -> bool {
        self.added.get(tp).is_some()
    }

    /// `init_transactions`: gets the producer id for the transactional id, which fences any
    /// older producer with it and aborts its open transaction.
    pub(crate) fn init(&mut self, token: TxnToken) {
        match self.state {
            State::Uninitialized => {
                self.state = State::Initializing;
                self.waiting = Some(token);
            }
            State::Fatal => self.results.push_back((token, Err(self.fatal_error()))),
            // A call retried after its wait timed out (as Java allows) takes the result over.
            State::Initializing => self.reattach(token),
            s => self.results.push_back((
                token,
                Err(TransactionError::InvalidState {
                    call: "init_transactions",
                    state: s.words(),
                }),
            )),
        }
    }

    /// `begin_transaction`, local only: the broker hears of the transaction with its first
    /// partition.
    pub(crate) fn begin(&mut self) -> Result<(), TransactionError> {
        match self.state {
            State::Ready => {
                self.state = State::InTransaction;
                Ok(())
            }
            State::Fatal => Err(self.fatal_error()),
            s => Err(TransactionError::InvalidState {
                call: "begin_transaction",
                state: s.words(),
            }),
        }
    }

    /// `send_offsets_to_transaction`: the consumer's progress commits (or aborts) with the
    /// transaction.
    pub(crate) fn send_offsets(
        &mut self,
        token: TxnToken,
        offsets: BTreeMap<TopicPartition, TxnOffset>,
        group: GroupMetadata,
    ) {
        match self.state {
            State::InTransaction if offsets.is_empty() => self.results.push_back((token, Ok(()))),
            State::InTransaction => {
                let same =
                    (self.offsets.iter_mut()).find(|c| c.offsets == offsets && c.group == group);
                match same {
                    // The same call again after its wait timed out: it takes the queued one
                    // over.
                    Some(call) => {
                        let old = std::mem::replace(&mut call.token, token);
                        self.results
                            .push_back((old, Err(TransactionError::TimedOut)));
                    }
                    // Version 2: TxnOffsetCommit adds the group itself.
                    None => self.offsets.push_back(OffsetsCall {
                        token,
                        offsets,
                        group,
                        added: self.tv2,
                    }),
                }
            }
            _ => self.refuse(token, "send_offsets_to_transaction"),
        }
    }

    /// `commit_transaction`: once every record has its outcome, EndTxn(commit). A failed
    /// record turns it into an abortable error.
    pub(crate) fn commit(&mut self, token: TxnToken) {
        match self.state {
            State::InTransaction => {
                self.state = State::Committing;
                self.waiting = Some(token);
            }
            State::Committing => self.reattach(token),
            _ => self.refuse(token, "commit_transaction"),
        }
    }

    /// `abort_transaction`: the producer fails the records not yet sent; once the rest have
    /// their outcomes, EndTxn(abort) (or an epoch bump, when one is due). Whether the producer
    /// must fail its unsent records now.
    pub(crate) fn abort(&mut self, token: TxnToken) -> bool {
        match self.state {
            State::InTransaction | State::AbortableError | State::Committing => {
                let aborted = || TransactionError::Abortable {
                    cause: "aborted by abort_transaction".to_owned(),
                };
                // A commit that failed half way (its EndTxn not yet sent) is aborted instead:
                // its caller hears why.
                if let Some(t) = self.waiting.take() {
                    self.results.push_back((t, Err(aborted())));
                }
                self.fail_offsets(aborted);
                self.state = State::Aborting;
                self.waiting = Some(token);
                // Partitions not added yet have no records left to send: forget them.
                self.to_add.clear();
                true
            }
            State::Aborting => {
                self.reattach(token);
                false
            }
            _ => {
                self.refuse(token, "abort_transaction");
                false
            }
        }
    }

    /// A record of the transaction failed with `error` (and the produce error code, if the
    /// broker gave one): the transaction can no longer commit. Fencing errors are fatal.
    /// `sent`: the record's batch had a sequence, so its partition's sequence may now have a
    /// hole, which only an epoch bump clears (KIP-360).
    pub(crate) fn record_failed(&mut self, code: Option<ErrorCode>, error: &str, sent: bool) {
        if let Some(e) = code.filter(|e| is_fatal(*e)) {
            self.fail_fatal(e);
            return;
        }
        let lost = matches!(
            code,
            Some(
                ErrorCode::UnknownProducerId
                    | ErrorCode::OutOfOrderSequenceNumber
                    | ErrorCode::InvalidProducerIdMapping
            )
        );
        self.bump_epoch |= sent || lost;
        self.make_abortable(format!("a record failed: {error}"));
    }

    /// A partition's sequence may have a hole (a batch expired or failed after it was sent):
    /// the abort bumps the epoch (KIP-360).
    pub(crate) fn require_bump(&mut self) {
        self.bump_epoch = true;
    }

    /// The transaction can only abort now (a record failed, or the coordinator said so).
    pub(crate) fn is_abortable(&self) -> bool {
        self.state == State::AbortableError
    }

    /// A commit or an abort is waiting: batches go without waiting for `linger.ms`.
    pub(crate) fn is_ending(&self) -> bool {
        matches!(self.state, State::Committing | State::Aborting)
    }

    /// A call retried while the first is still running: the new token gets the result, the
    /// old one is let go.
    fn reattach(&mut self, token: TxnToken) {
        if let Some(old) = self.waiting.replace(token) {
            self.results
                .push_back((old, Err(TransactionError::TimedOut)));
        }
    }

    /// The producer closed: every waiting call fails.
    pub(crate) fn close(&mut self) {
        if let Some(t) = self.waiting.take() {
            self.results.push_back((t, Err(TransactionError::Closed)));
        }
        self.fail_offsets(|| TransactionError::Closed);
    }

    /// The coordinator at `target` is gone: it is looked up again after a backoff.
    pub(crate) fn forget(&mut self, target: TxnTarget, now: Instant) {
        match target {
            TxnTarget::Coordinator(_) => self.coordinator = None,
            TxnTarget::GroupCoordinator(_) => self.group_coordinator = None,
            TxnTarget::AnyNode => return,
        }
        self.back_off(now, None);
    }

    /// The next call result.
    pub(crate) fn poll_result(&mut self) -> Option<(TxnToken, Result<(), TransactionError>)> {
        self.results.pop_front()
    }

    /// A coordinator address the producer's network should learn.
    pub(crate) fn poll_learned(&mut self) -> Option<(NodeId, HostPort)> {
        self.learned.pop()
    }

    /// When a backed-off request is due.
    pub(crate) fn poll_timeout(&self) -> Option<Instant> {
        self.retry_at.filter(|_| self.pending.is_none())
    }

    /// What to send next, if anything. A transaction that never reached the coordinator
    /// ends here, without a request.
    fn next(&mut self, settled: bool, now: Instant) -> Option<Next> {
        if self.pending.is_some() || self.retry_at.is_some_and(|t| t > now) {
            return None;
        }
        self.retry_at = None;
        let active = matches!(
            self.state,
            State::Initializing
                | State::InTransaction
                | State::Committing
                | State::Aborting
                | State::AbortableError
        );
        if !active {
            return None;
        }
        if self.coordinator.is_none() {
            return Some(Next::Find(TRANSACTION_KEY, String::new()));
        }
        if self.state == State::Initializing {
            return Some(Next::Init(None));
        }
        let (pid, epoch) = self.producer_id?;
        let open = matches!(self.state, State::InTransaction | State::Committing);
        // Partitions first: records wait for them. Not while aborting: whatever waited to be
        // added was failed unsent.
        if open && !self.to_add.is_empty() {
            return Some(Next::Add);
        }
        if open {
            if let Some(call) = self.offsets.front() {
                if !call.added {
                    return Some(Next::AddOffsets);
                }
                return Some(match &self.group_coordinator {
                    Some((g, node)) if *g == call.group.group_id => Next::OffsetCommit(*node),
                    _ => Next::Find(GROUP_KEY, call.group.group_id.clone()),
                });
            }
        }
        let ending = matches!(self.state, State::Committing | State::Aborting);
        if !ending || !settled || !self.to_add.is_empty() {
            return None;
        }
        if self.state == State::Aborting && self.bump_epoch {
            // KIP-360: bumping the epoch aborts the open transaction on the coordinator and
            // gives the partitions whose sequences were lost a fresh start.
            return Some(Next::Init(Some((pid, epoch))));
        }
        if !self.in_coordinator {
            // Nothing reached the broker: the transaction exists only here.
            self.end_locally();
            return None;
        }
        Some(Next::End)
    }

    /// Where the next request goes, if one is due: the producer readies that connection,
    /// then takes the request with [`Transactions::poll_request`].
    pub(crate) fn target(&mut self, settled: bool, now: Instant) -> Option<TxnTarget> {
        let coordinator = self.coordinator;
        self.next(settled, now).map(|n| match (n, coordinator) {
            (Next::Find(..), _) | (_, None) => TxnTarget::AnyNode,
            (Next::OffsetCommit(node), _) => TxnTarget::GroupCoordinator(node),
            (_, Some(c)) => TxnTarget::Coordinator(c),
        })
    }

    /// The next request to send, if any. `settled`: every record sent in the transaction has
    /// its outcome (an end of the transaction waits for it).
    pub(crate) fn poll_request(
        &mut self,
        settled: bool,
        now: Instant,
    ) -> Option<(TxnTarget, TxnRequest)> {
        let next = self.next(settled, now)?;
        let to = self.coordinator.map(TxnTarget::Coordinator);
        let (pid, epoch) = self.producer_id.unwrap_or((-1, -1));
        match next {
            Next::Find(kind, _) if kind == TRANSACTION_KEY => {
                Some(self.find(kind, self.transactional_id.clone()))
            }
            Next::Find(kind, group) => Some(self.find(kind, group)),
            Next::Init(current) => Some((to?, self.init_request(current))),
            Next::Add => {
                let batch = std::mem::take(&mut self.to_add);
                let mut topics: BTreeMap<&str, Vec<i32>> = BTreeMap::new();
                for (t, p) in &batch {
                    topics.entry(t).or_default().push(*p);
                }
                let req = AddPartitionsToTxnRequest {
                    v3_and_below_transactional_id: self.transactional_id.clone(),
                    v3_and_below_producer_id: pid,
                    v3_and_below_producer_epoch: epoch,
                    v3_and_below_topics: topics
                        .into_iter()
                        .map(|(name, partitions)| AddPartitionsToTxnTopic {
                            name: name.to_owned(),
                            partitions,
                            ..Default::default()
                        })
                        .collect(),
                    ..Default::default()
                };
                self.pending = Some(Pending::Add(batch));
                Some((to?, TxnRequest::AddPartitions(req)))
            }
            Next::AddOffsets => {
                let call = self.offsets.front()?;
                let req = AddOffsetsToTxnRequest {
                    transactional_id: self.transactional_id.clone(),
                    producer_id: pid,
                    producer_epoch: epoch,
                    group_id: call.group.group_id.clone(),
                    ..Default::default()
                };
                self.pending = Some(Pending::AddOffsets);
                Some((to?, TxnRequest::AddOffsets(req)))
            }
            Next::OffsetCommit(node) => {
                let req = self.offset_commit_request(pid, epoch);
                self.pending = Some(Pending::TxnOffsetCommit);
                Some((TxnTarget::GroupCoordinator(node), req))
            }
            Next::End => {
                let req = EndTxnRequest {
                    transactional_id: self.transactional_id.clone(),
                    producer_id: pid,
                    producer_epoch: epoch,
                    committed: self.state == State::Committing,
                    ..Default::default()
                };
                self.pending = Some(Pending::End);
                Some((to?, TxnRequest::EndTxn(req)))
            }
        }
    }

    pub(super) fn find(&mut self, kind: i8, key: String) -> (TxnTarget, TxnRequest) {
        self.pending = Some(Pending::Find(kind));
        let req = FindCoordinatorRequest {
            key: key.clone(),
            key_type: kind,
            coordinator_keys: vec![key],
            ..Default::default()
        };
        (TxnTarget::AnyNode, TxnRequest::FindCoordinator(req))
    }

    pub(super) fn init_request(&mut self, current: Option<(i64, i16)>) -> TxnRequest {
        self.pending = Some(Pending::Init);
        let (producer_id, producer_epoch) = current.unwrap_or((-1, -1));
        TxnRequest::InitProducerId(InitProducerIdRequest {
            transactional_id: Some(self.transactional_id.clone()),
            transaction_timeout_ms: i32::try_from(self.timeout.as_millis()).unwrap_or(i32::MAX),
            producer_id,
            producer_epoch,
            ..Default::default()
        })
    }

    pub(super) fn offset_commit_request(&self, pid: i64, epoch: i16) -> TxnRequest {
        let call = self.offsets.front().expect("an offsets call is queued");
        let mut topics: BTreeMap<&str, Vec<TxnOffsetCommitRequestPartition>> = BTreeMap::new();
        for ((topic, partition), o) in &call.offsets {
            topics
                .entry(topic)
                .or_default()
                .push(TxnOffsetCommitRequestPartition {
                    partition_index: *partition,
                    committed_offset: o.offset,
                    committed_leader_epoch: o.leader_epoch,
                    committed_metadata: Some(String::new()),
                    ..Default::default()
                });
        }
        TxnRequest::TxnOffsetCommit(TxnOffsetCommitRequest {
            transactional_id: self.transactional_id.clone(),
            group_id: call.group.group_id.clone(),
            producer_id: pid,
            producer_epoch: epoch,
            generation_id: call.group.generation_id,
            member_id: call.group.member_id.clone(),
            group_instance_id: call.group.group_instance_id.clone(),
            topics: topics
                .into_iter()
                .map(|(name, partitions)| TxnOffsetCommitRequestTopic {
                    name: name.to_owned(),
                    partitions,
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        })
    }
}
