//! The transactional producer's calls (`init_transactions`, `begin_transaction`,
//! `send_offsets_to_transaction`, `commit_transaction`, `abort_transaction`) and the step that
//! routes the transaction's requests to its coordinators.

use super::{TxnRequest, TxnTarget};
use crate::producer::{
    DeliveryError, GroupMetadata, Producer, ProducerEvent, Tag, TopicPartition, TransactionError,
    TxnOffset, TxnToken,
};
use kafka_proto::ErrorCode;

use crate::net::{Expect, Purpose};
use crate::time::Instant;

/// AddPartitionsToTxn v4 and up are the brokers' own (KIP-890); clients send v3 at most.
const ADD_PARTITIONS_MAX: i16 = 3;
/// EndTxn and TxnOffsetCommit: v5 is transaction version 2 (KIP-890 part 2), v4 at most is
/// version 1.
const TV1_END_TXN_MAX: i16 = 4;
const TV1_TXN_OFFSET_COMMIT_MAX: i16 = 4;
const TV2_MAX: i16 = 5;

impl Producer {
    /// Whether the producer has a `transactional.id`.
    pub fn is_transactional(&self) -> bool {
        self.txn.is_some()
    }

    /// The transaction version in use (KIP-890): 2 where the cluster finalized
    /// `transaction.version` 2 by the time `init_transactions` completed, else 1; `None`
    /// before that, or without `transactional.id`.
    pub fn transaction_version(&self) -> Option<u8> {
        let t = self.txn.as_ref()?;
        t.producer_id()?;
        Some(if t.tv2() { 2 } else { 1 })
    }

    /// `init_transactions`: gets the producer id for `transactional.id` from its transaction
    /// coordinator, which fences any older producer with the same id and aborts the
    /// transaction it left open. Its result arrives as [`ProducerEvent::Transaction`] with the
    /// returned token.
    pub fn init_transactions(&mut self, now: Instant) -> TxnToken {
        self.txn_call(now, |t, token| {
            t.init(token);
            false
        })
    }

    /// `begin_transaction`: records sent from now on belong to a new transaction. Local: the
    /// coordinator hears of the transaction with its first partition.
    pub fn begin_transaction(&mut self) -> Result<(), TransactionError> {
        match &mut self.txn {
            Some(t) => t.begin(),
            None => Err(TransactionError::NotTransactional),
        }
    }

    /// `send_offsets_to_transaction`: commits a consumer's progress (the next offsets to
    /// read) with the transaction, so that it counts only if the transaction commits. The
    /// group coordinator refuses it if `group`'s generation is no longer current (KIP-447): a
    /// zombie cannot commit.
    pub fn send_offsets_to_transaction(
        &mut self,
        offsets: impl IntoIterator<Item = (TopicPartition, TxnOffset)>,
        group: GroupMetadata,
        now: Instant,
    ) -> TxnToken {
        let offsets = offsets.into_iter().collect();
        self.txn_call(now, |t, token| {
            t.send_offsets(token, offsets, group);
            false
        })
    }

    /// `commit_transaction`: sends what is batched at once, waits for every record's outcome,
    /// then commits. If a record failed, the result is [`TransactionError::Abortable`]: abort.
    pub fn commit_transaction(&mut self, now: Instant) -> TxnToken {
        self.txn_call(now, |t, token| {
            t.commit(token);
            false
        })
    }

    /// `abort_transaction`: records not yet sent fail at once
    /// ([`DeliveryError::TransactionAborted`], not sent); once the rest have their outcomes,
    /// the transaction aborts, and read_committed consumers never see its records.
    pub fn abort_transaction(&mut self, now: Instant) -> TxnToken {
        self.txn_call(now, |t, token| t.abort(token))
    }

    /// Runs a transactional call under a new token (answered at once when the producer is not
    /// transactional). `call` says whether the records not yet sent fail now (an abort).
    fn txn_call(
        &mut self,
        now: Instant,
        call: impl FnOnce(&mut super::Transactions, TxnToken) -> bool,
    ) -> TxnToken {
        let token = TxnToken(self.next_txn_token);
        self.next_txn_token += 1;
        match &mut self.txn {
            Some(t) => {
                if call(t, token) {
                    self.fail_unsent(DeliveryError::TransactionAborted);
                }
            }
            None => self.events.push_back(ProducerEvent::Transaction(
                token,
                Err(TransactionError::NotTransactional),
            )),
        }
        self.drive(now);
        token
    }

    /// A record failed with `error` (`code`: the broker's, for a produced batch): its
    /// transaction can no longer commit. Records failed by the abort itself, or by closing,
    /// change nothing. `sent`: its batch had a sequence.
    pub(in crate::producer) fn fail_transaction(
        &mut self,
        error: &DeliveryError,
        code: Option<ErrorCode>,
        sent: bool,
    ) {
        let Some(txn) = &mut self.txn else { return };
        if !matches!(
            error,
            DeliveryError::TransactionAborted | DeliveryError::Closed
        ) {
            txn.record_failed(code, &error.to_string(), sent);
        }
    }

    /// Batches go without waiting for `linger.ms`: a flush, a close, or the end of a
    /// transaction waits for them.
    pub(in crate::producer) fn forced(&self) -> bool {
        !self.flushes.is_empty()
            || self.closing.is_some()
            || self.txn.as_ref().is_some_and(|t| t.is_ending())
    }

    /// Takes up the transaction's producer id, and sends its next requests.
    pub(in crate::producer) fn drive_transaction(&mut self, now: Instant) {
        if self.txn.as_ref().is_some_and(|t| t.is_abortable()) && !self.acc.is_empty() {
            // As Java's sender: records of a transaction that can only abort are never sent
            // (their partitions would never be added); they fail now rather than at their
            // delivery timeout (librdkafka's mock cluster: a minute's wait after the chaos).
            for b in self.acc.take_never_sent() {
                self.fail_batch(b, DeliveryError::TransactionAborted, false);
            }
        }
        let Some(txn) = &self.txn else {
            return;
        };
        let (id, fatal) = (txn.producer_id(), txn.fatal_code());
        let finalized = self.net.finalized_feature("transaction.version");
        let txn = self.txn.as_mut().expect("checked above");
        txn.offer_version(finalized);
        let tv2 = txn.tv2();
        if id.is_some() && self.idem.id != id {
            // A new id or epoch: init, or a bump at an abort.
            self.idem.id = id;
            self.restart_sequences();
        }
        if let Some(code) = fatal {
            // Fenced or unauthorized for good: what waits to be sent never will be (its
            // partitions may never join), so it fails now rather than at delivery.timeout.ms.
            if !self.acc.is_empty() {
                self.fail_unsent(DeliveryError::Broker(code));
            }
        }
        // Every record of the transaction has its outcome: it may end.
        let settled = self.outstanding.is_empty();
        loop {
            let txn = self.txn.as_mut().expect("checked above");
            while let Some((node, addr)) = txn.poll_learned() {
                self.net.learn_node(node, addr);
            }
            let Some(target) = txn.target(settled, now) else {
                break;
            };
            let conn = match target {
                TxnTarget::AnyNode => self.net.least_loaded(now),
                TxnTarget::Coordinator(node) | TxnTarget::GroupCoordinator(node) => {
                    if self.net.take_coordinator_failure(node) {
                        // Its connection failed or closed: look it up again, as Java marks
                        // the coordinator unknown on a disconnect.
                        let txn = self.txn.as_mut().expect("checked above");
                        txn.forget(target, now);
                        continue;
                    }
                    self.net.ready(node, Purpose::Coordinator, now)
                }
            };
            let Some(conn) = conn else {
                if let TxnTarget::Coordinator(node) | TxnTarget::GroupCoordinator(node) = target {
                    if !self.net.knows(node) {
                        // The coordinator's broker left the metadata (it crashed): no
                        // connection will come, so the coordinator is looked up again (found
                        // by the transaction simulation, where such a producer waited for
                        // ever).
                        let txn = self.txn.as_mut().expect("checked above");
                        txn.forget(target, now);
                        continue;
                    }
                }
                break; // connecting: its event wakes the producer
            };
            let txn = self.txn.as_mut().expect("checked above");
            let Some((_, req)) = txn.poll_request(settled, now) else {
                break;
            };
            let net = &mut self.net;
            let sent = match &req {
                TxnRequest::FindCoordinator(r) => net.send(conn, r, Tag::Txn, now),
                TxnRequest::InitProducerId(r) => net.send(conn, r, Tag::Txn, now),
                TxnRequest::AddPartitions(r) => {
                    net.send_at_most(conn, r, Tag::Txn, Expect::Response, ADD_PARTITIONS_MAX, now)
                }
                TxnRequest::AddOffsets(r) => net.send(conn, r, Tag::Txn, now),
                TxnRequest::TxnOffsetCommit(r) => {
                    let max = if tv2 {
                        TV2_MAX
                    } else {
                        TV1_TXN_OFFSET_COMMIT_MAX
                    };
                    net.send_at_most(conn, r, Tag::Txn, Expect::Response, max, now)
                }
                TxnRequest::EndTxn(r) => {
                    let max = if tv2 { TV2_MAX } else { TV1_END_TXN_MAX };
                    net.send_at_most(conn, r, Tag::Txn, Expect::Response, max, now)
                }
            };
            if sent.is_err() {
                let txn = self.txn.as_mut().expect("checked above");
                txn.handle_failure(now);
                break;
            }
        }
        self.take_transaction_results();
    }

    /// Moves the transaction's call results into the producer's events.
    pub(in crate::producer) fn take_transaction_results(&mut self) {
        while let Some((token, result)) = self.txn.as_mut().and_then(|t| t.poll_result()) {
            self.events
                .push_back(ProducerEvent::Transaction(token, result));
        }
    }
}
