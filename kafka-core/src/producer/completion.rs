//! Completing batches: reading Produce responses, retrying within the budgets, and resolving
//! every record token exactly once with its outcome and certainty.

use std::collections::BTreeMap;

use kafka_proto::messages::produce_response::{
    PartitionProduceResponse, ProduceResponse, TopicProduceResponse,
};
use kafka_proto::ErrorCode;

use super::accumulator::Batch;
use super::{is_leadership_error, Producer};
use super::{Certainty, Delivered, DeliveryError, Outcome, ProducerEvent, RecordToken};
use crate::config::HostPort;
use crate::time::Instant;

impl Producer {
    pub(super) fn on_produce_response(
        &mut self,
        ids: Vec<u64>,
        resp: ProduceResponse,
        version: i16,
        now: Instant,
    ) {
        self.metrics.throttled(resp.throttle_time_ms, now);
        let endpoints: BTreeMap<i32, HostPort> = resp
            .node_endpoints
            .iter()
            .filter_map(|n| {
                Some((
                    n.node_id,
                    HostPort::new(n.host.clone(), u16::try_from(n.port).ok()?),
                ))
            })
            .collect();
        let mut cursor = (0, None);
        for id in ids {
            let Some(b) = self.in_flight.take(id) else {
                continue;
            }; // expired meanwhile
            let topic_id = self
                .metadata
                .topic(&b.tp.0)
                .map(|t| t.id)
                .unwrap_or_default();
            // v13+ names topics by id, older versions by name.
            let is_topic = |t: &TopicProduceResponse| {
                if version >= 13 {
                    t.topic_id == topic_id
                } else {
                    t.name.as_str() == b.tp.0.as_str()
                }
            };
            let part = answer(&resp, &mut cursor, is_topic, b.tp.1);
            let Some(p) = part else {
                let error = DeliveryError::Broker(ErrorCode::UnknownServerError);
                self.retry_or_fail(b, error, now, true);
                continue;
            };
            match ErrorCode::from_code(p.error_code) {
                None => {
                    self.idem.acknowledge(&b);
                    self.complete(b, Some(p.base_offset), p.log_append_time_ms)
                }
                Some(e) => self.on_batch_error(b, e, p, &endpoints, now),
            }
        }
    }

    /// A partition's error for a batch in a Produce response: retried, split, renumbered under
    /// a new epoch, taken as a duplicate, or failed (saying whether it may have been written).
    fn on_batch_error(
        &mut self,
        b: Batch,
        e: ErrorCode,
        p: &PartitionProduceResponse,
        endpoints: &BTreeMap<i32, HostPort>,
        now: Instant,
    ) {
        match e {
            // In a transaction, a lost sequence or a fencing ends the transaction at once:
            // only its abort (with an epoch bump) or a new producer can go on.
            e if self.txn.is_some() && ends_transaction(e) => {
                self.fail_batch(b, DeliveryError::Broker(e), false);
            }
            // Too large for the broker: send it as two halves (they keep the sequence
            // range), down to single records, which then fail.
            ErrorCode::MessageTooLarge if b.records.len() > 1 => self.split_or_fail(b),
            // The broker already has these records from an earlier attempt.
            ErrorCode::DuplicateSequenceNumber => {
                self.idem.acknowledge(&b);
                self.complete(b, None, -1)
            }
            ErrorCode::UnknownProducerId => self.on_unknown_producer(b, p, now),
            ErrorCode::OutOfOrderSequenceNumber if self.cfg.enable_idempotence => {
                self.on_out_of_order(b, now);
            }
            e => self.on_other_error(b, e, p, endpoints, now),
        }
    }

    /// A batch too large for the broker, in two halves (see [`Accumulator::split`]), or
    /// failed when it cannot be split.
    fn split_or_fail(&mut self, b: Batch) {
        self.acc.cap_growth(&b.tp.0, b.size());
        match self.acc.split(b) {
            Ok([first, second]) => {
                self.acc.reenqueue(second);
                self.acc.reenqueue(first);
            }
            Err(b) => self.fail_batch(b, DeliveryError::Broker(ErrorCode::MessageTooLarge), false),
        }
    }

    /// UNKNOWN_PRODUCER_ID for a batch: retried as is, under a new producer id, or under a
    /// new epoch, as the response and the batch's sequence say.
    fn on_unknown_producer(&mut self, b: Batch, p: &PartitionProduceResponse, now: Instant) {
        if p.log_start_offset == -1 {
            // The broker has no state for this producer, but its log start offset is
            // unknown: it may simply be catching up. Retry as is.
        } else if b.base_sequence == 0 {
            // Refused even at sequence 0: the broker does not know the producer id at all
            // (it lost every state, as Tansu does on restart); Kafka would accept a fresh
            // start. Only a new producer id helps.
            self.idem.unknown = true;
        } else {
            // The broker lost this producer's state (retention removed it, or a broker that
            // keeps producer ids in memory restarted): start the partition over under a new
            // epoch (KIP-360) and resend. An attempt whose answer was lost stays unresolved:
            // it may have been written before the state went (found by the simulation with
            // brokers that forget producer ids, seed 304: a record written twice), so it
            // fails as possibly sent rather than renumbered.
            self.request_bump(&b.tp);
        }
        let error = DeliveryError::Broker(ErrorCode::UnknownProducerId);
        self.retry_or_fail(b, error, now, false);
    }

    /// Any other error for a batch: the leader hint or a metadata refresh first, then retried
    /// if retriable, else failed, saying whether it may have been written.
    fn on_other_error(
        &mut self,
        b: Batch,
        e: ErrorCode,
        p: &PartitionProduceResponse,
        endpoints: &BTreeMap<i32, HostPort>,
        now: Instant,
    ) {
        if p.current_leader.leader_id >= 0 {
            let (leader, epoch) = (p.current_leader.leader_id, p.current_leader.leader_epoch);
            let addr = endpoints.get(&leader).cloned();
            if self
                .metadata
                .apply_leader_hint(&b.tp.0, b.tp.1, leader, epoch, addr)
            {
                self.net.update_nodes(self.metadata.nodes(), now);
            }
        } else if is_leadership_error(e) {
            self.metadata.request_update();
        }
        // With acks=all the leader may have appended the batch and lost its
        // leadership while waiting for the followers: Kafka then answers
        // NOT_LEADER_OR_FOLLOWER, and the new leader may hold the batch (found by
        // the simulation, seed 66152: a record failed as never written while it
        // was in the log). Before an append the same code is a refusal, but the
        // client cannot tell the two apart.
        let written = may_be_written(e)
            || (e == ErrorCode::NotLeaderOrFollower && self.cfg.acks == crate::config::Acks::All);
        if e.is_retriable() {
            self.retry_or_fail(b, DeliveryError::Broker(e), now, written);
        } else {
            self.fail_batch(b, DeliveryError::Broker(e), written);
        }
    }

    /// Retries within `retries` and `delivery.timeout.ms`, else fails. `unknown` says the
    /// attempt's fate is unknown (no answer), which makes a final failure "possibly sent".
    pub(super) fn retry_or_fail(
        &mut self,
        mut b: Batch,
        error: DeliveryError,
        now: Instant,
        unknown: bool,
    ) {
        if unknown {
            b.sent = true;
            // With a sequence, only the broker's deduplication of this very sequence may
            // settle it now (see `Batch::unresolved`).
            b.unresolved |= b.base_sequence >= 0;
        }
        b.last_error = Some(Box::new((error.to_string(), now)));
        let retries_left = (b.attempts as i64) < i64::from(self.cfg.retries);
        if retries_left && b.deadline > now && self.closing.is_none_or(|d| d > now) {
            self.metrics.retried(&b.tp.0, b.records.len(), now);
            tracing::debug!(
                topic = %b.tp.0,
                partition = b.tp.1,
                records = b.records.len(),
                attempt = b.attempts + 1,
                error = %error,
                "retrying batch"
            );
            b.retry_at = Some(now + self.retry_backoff.delay(b.attempts, &mut self.rng));
            b.attempts += 1;
            if b.attempts == WARN_AFTER_ATTEMPTS && !self.retries_warned {
                // Once per episode: until a batch is delivered again.
                self.retries_warned = true;
                tracing::warn!(
                    topic = %b.tp.0,
                    partition = b.tp.1,
                    attempts = b.attempts,
                    error = %error,
                    "batches are being retried; records wait until they are delivered or time out"
                );
            }
            self.acc.reenqueue(b);
        } else {
            self.fail_batch(b, error, unknown);
        }
    }

    pub(super) fn fail_batch(&mut self, b: Batch, error: DeliveryError, unknown: bool) {
        // Its sequence is a hole the broker will never fill: the partition's later batches
        // would be out of order for good, so it starts over under a new epoch (KIP-360) once
        // nothing is in flight. (A transaction's failure aborts it, which bumps the epoch
        // there; a batch of an epoch already left behind needs nothing.)
        let current = self.idem.is_current(&b.tp, b.epoch);
        if self.txn.is_none() && b.base_sequence >= 0 && current {
            self.request_bump(&b.tp);
        }
        let code = match error {
            DeliveryError::Broker(e) => Some(e),
            _ => None,
        };
        self.fail_transaction(&error, code, b.base_sequence >= 0);
        // Certainty only weakens: once an attempt's fate was unknown, it stays possibly sent.
        let certainty = if unknown || b.sent {
            Certainty::PossiblySent
        } else {
            Certainty::NotSent
        };
        self.release(&b);
        self.metrics.failed(&b.tp.0, b.records.len(), self.now);
        tracing::warn!(
            topic = %b.tp.0,
            partition = b.tp.1,
            records = b.records.len(),
            certainty = ?certainty,
            error = %error,
            "batch failed"
        );
        for r in &b.records {
            let outcome = Outcome::Failed {
                error: error.clone(),
                certainty,
            };
            self.resolve(r.token, outcome);
        }
        self.acc.recycle(b);
    }

    pub(super) fn complete(
        &mut self,
        mut b: Batch,
        base_offset: Option<i64>,
        log_append_time: i64,
    ) {
        self.release(&b);
        if std::mem::take(&mut self.retries_warned) {
            tracing::info!(topic = %b.tp.0, partition = b.tp.1, "batches are delivered again");
        }
        let partition = b.tp.1;
        let mut records = std::mem::take(&mut b.records);
        self.acc.recycle(b);
        // Each token resolves once: one already resolved (none should be) is left out.
        self.outstanding.remove_each(&mut records, |r| r.token.0);
        if !records.is_empty() {
            self.events.push_back(ProducerEvent::Delivered(Delivered {
                partition,
                base_offset,
                log_append_time,
                records,
            }));
        }
    }

    pub(super) fn release(&mut self, b: &Batch) {
        if self.acc.pool.release(b.reserved) {
            self.events.push_back(ProducerEvent::MemoryAvailable);
        }
    }

    pub(super) fn resolve(&mut self, token: RecordToken, outcome: Outcome) {
        if self.outstanding.remove(token.0) {
            self.events
                .push_back(ProducerEvent::Outcome(token, outcome));
        }
    }
}

/// Attempts of one batch after which retries are worth a warning.
const WARN_AFTER_ATTEMPTS: u32 = 3;

/// Produce errors that do not say the batch was refused: the leader may have appended it
/// (REQUEST_TIMED_OUT: acks=all timed out waiting for the followers, and the batch may still
/// be committed; NOT_ENOUGH_REPLICAS_AFTER_APPEND: appended, to too few replicas) or may not
/// know. Such an attempt's fate is unknown, as for a lost response (found by the simulation
/// with short timeouts: a batch answered REQUEST_TIMED_OUT then expired, and failed as never
/// written while it was in the log).
fn may_be_written(e: ErrorCode) -> bool {
    matches!(
        e,
        ErrorCode::RequestTimedOut
            | ErrorCode::NotEnoughReplicasAfterAppend
            | ErrorCode::UnknownServerError
            | ErrorCode::NetworkException
            | ErrorCode::KafkaStorageError
    )
}

/// Produce errors that end a transaction at once (Java's: the sequence or the producer id is
/// lost, or the producer was fenced).
fn ends_transaction(e: ErrorCode) -> bool {
    matches!(
        e,
        ErrorCode::UnknownProducerId
            | ErrorCode::OutOfOrderSequenceNumber
            | ErrorCode::InvalidProducerEpoch
            | ErrorCode::ProducerFenced
            | ErrorCode::InvalidProducerIdMapping
            | ErrorCode::TransactionalIdAuthorizationFailed
            | ErrorCode::InvalidTxnState
            | ErrorCode::TransactionAbortable
    )
}

/// A partition's answer in a Produce response. Brokers answer in the request's order, which is
/// the order batches are completed in, so the entry after the last one found (`cursor`: its
/// topic and partition index) is tried first: a request of 10,000 partitions is then not
/// searched 10,000 times.
fn answer<'a>(
    resp: &'a ProduceResponse,
    cursor: &mut (usize, Option<usize>),
    is_topic: impl Fn(&TopicProduceResponse) -> bool,
    partition: i32,
) -> Option<&'a PartitionProduceResponse> {
    let (t, p) = *cursor;
    let next = match p {
        Some(p) => [(t, p + 1), (t + 1, 0)],
        None => [(t, 0), (t, 0)],
    };
    for (ti, pi) in next {
        let Some(topic) = resp.responses.get(ti).filter(|topic| is_topic(topic)) else {
            continue;
        };
        if let Some(found) = topic
            .partition_responses
            .get(pi)
            .filter(|x| x.index == partition)
        {
            *cursor = (ti, Some(pi));
            return Some(found);
        }
    }
    let (ti, pi, found) = resp
        .responses
        .iter()
        .enumerate()
        .filter(|(_, topic)| is_topic(topic))
        .find_map(|(ti, topic)| {
            let (pi, found) = topic
                .partition_responses
                .iter()
                .enumerate()
                .find(|(_, x)| x.index == partition)?;
            Some((ti, pi, found))
        })?;
    *cursor = (ti, Some(pi));
    Some(found)
}
