//! The simulated cluster's transaction coordinator: one state per `transactional.id`
//! (replicated, as `__transaction_state` is, so it survives the coordinator's moves and
//! crashes), InitProducerId with epoch bumps that fence older producers (and abort their open
//! transaction first), AddPartitionsToTxn, AddOffsetsToTxn, EndTxn, markers written to every
//! partition of a transaction until they are under the high watermark (rewritten after a
//! truncation), the group's transactional offsets made visible at the commit, and transactions
//! past their timeout aborted. Markers are written after EndTxn is answered, as Kafka writes
//! them after PrepareCommit is durable: a coordinator that moves in between leaves them to the
//! next one, and the producer's next call waits (CONCURRENT_TRANSACTIONS) until they are down.

use std::collections::{BTreeMap, BTreeSet};

use kafka_proto::api::ResponseBody;
use kafka_proto::messages::add_offsets_to_txn_request::AddOffsetsToTxnRequest;
use kafka_proto::messages::add_offsets_to_txn_response::AddOffsetsToTxnResponse;
use kafka_proto::messages::add_partitions_to_txn_request::AddPartitionsToTxnRequest;
use kafka_proto::messages::add_partitions_to_txn_response::{
    AddPartitionsToTxnPartitionResult, AddPartitionsToTxnResponse, AddPartitionsToTxnTopicResult,
};
use kafka_proto::messages::end_txn_request::EndTxnRequest;
use kafka_proto::messages::end_txn_response::EndTxnResponse;
use kafka_proto::messages::init_producer_id_request::InitProducerIdRequest;
use kafka_proto::messages::init_producer_id_response::InitProducerIdResponse;
use kafka_proto::messages::txn_offset_commit_request::TxnOffsetCommitRequest;

use super::{SimCluster, SimTime};

const UNKNOWN_TOPIC_OR_PARTITION: i16 = 3;
const INVALID_PRODUCER_EPOCH: i16 = 47;
const INVALID_TXN_STATE: i16 = 48;
const INVALID_PRODUCER_ID_MAPPING: i16 = 49;
const CONCURRENT_TRANSACTIONS: i16 = 51;
const PRODUCER_FENCED: i16 = 90;

/// Where a transaction is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TxnState {
    /// No transaction open.
    Empty,
    /// Partitions or offsets added, not yet ended.
    Ongoing,
    /// Ended: its markers are being written (`true`: commit).
    Preparing(bool),
    /// Its markers are down (`true`: it committed).
    Complete(bool),
}

/// One transactional id's state.
#[derive(Debug, Clone)]
pub(crate) struct Txn {
    pub pid: i64,
    pub epoch: i16,
    pub timeout: SimTime,
    pub state: TxnState,
    /// When the open transaction began (its first AddPartitionsToTxn or AddOffsetsToTxn).
    pub started: SimTime,
    pub partitions: BTreeSet<(String, i32)>,
    pub groups: BTreeSet<String>,
    /// While preparing: each partition's marker, once written (its offset).
    pub markers: BTreeMap<(String, i32), Option<i64>>,
}

/// Every transactional id.
#[derive(Debug, Default)]
pub(crate) struct Transactions {
    pub txns: BTreeMap<String, Txn>,
    /// Transactions the coordinator aborted for their timeout.
    pub timed_out: u64,
    /// Transactions committed and aborted (markers down).
    pub completed: (u64, u64),
}

impl Transactions {
    fn due(&self) -> Option<SimTime> {
        self.txns
            .values()
            .filter(|t| t.state == TxnState::Ongoing)
            .map(|t| t.started + t.timeout)
            .min()
    }

    fn preparing(&self) -> bool {
        self.txns
            .values()
            .any(|t| matches!(t.state, TxnState::Preparing(_)))
    }
}

/// The checks every call after InitProducerId makes: the id known, the producer current.
fn check(txn: Option<&Txn>, pid: i64, epoch: i16) -> Result<(), i16> {
    match txn {
        None => Err(INVALID_PRODUCER_ID_MAPPING),
        Some(t) if t.pid != pid => Err(INVALID_PRODUCER_ID_MAPPING),
        Some(t) if t.epoch != epoch => Err(PRODUCER_FENCED),
        Some(t) if matches!(t.state, TxnState::Preparing(_)) => Err(CONCURRENT_TRANSACTIONS),
        Some(_) => Ok(()),
    }
}

impl SimCluster {
    /// Whether `node` is the transaction coordinator.
    pub(super) fn is_txn_coordinator(&self, node: i32) -> bool {
        self.txn_node == Some(node)
    }

    pub(super) fn init_txn(&mut self, id: &str, r: &InitProducerIdRequest) -> ResponseBody {
        let answer = |error_code, producer_id, producer_epoch| {
            ResponseBody::InitProducerId(InitProducerIdResponse {
                error_code,
                producer_id,
                producer_epoch,
                ..Default::default()
            })
        };
        let now = self.now;
        let timeout = SimTime::from_millis(r.transaction_timeout_ms.max(0) as u64);
        let Some(t) = self.txn.txns.get_mut(id) else {
            self.next_producer_id += 1;
            let pid = self.next_producer_id;
            self.txn.txns.insert(
                id.to_owned(),
                Txn {
                    pid,
                    epoch: 0,
                    timeout,
                    state: TxnState::Empty,
                    started: now,
                    partitions: BTreeSet::new(),
                    groups: BTreeSet::new(),
                    markers: BTreeMap::new(),
                },
            );
            return answer(0, pid, 0);
        };
        // KIP-360: a producer that names its id and epoch may only bump its own.
        if r.producer_id >= 0 && (r.producer_id != t.pid || r.producer_epoch != t.epoch) {
            return answer(PRODUCER_FENCED, -1, -1);
        }
        match t.state {
            TxnState::Preparing(_) => answer(CONCURRENT_TRANSACTIONS, -1, -1),
            TxnState::Ongoing => {
                // The open transaction of an older producer aborts, under a bumped epoch that
                // fences it; this caller retries until the markers are down.
                t.epoch += 1;
                Self::prepare(t, false);
                answer(CONCURRENT_TRANSACTIONS, -1, -1)
            }
            TxnState::Empty | TxnState::Complete(_) => {
                t.epoch += 1;
                t.timeout = timeout;
                t.state = TxnState::Empty;
                answer(0, t.pid, t.epoch)
            }
        }
    }

    fn prepare(t: &mut Txn, commit: bool) {
        t.state = TxnState::Preparing(commit);
        t.markers = t.partitions.iter().map(|p| (p.clone(), None)).collect();
    }

    /// Opens the transaction, if it is not yet.
    fn begin(t: &mut Txn, now: SimTime) {
        if t.state != TxnState::Ongoing {
            t.state = TxnState::Ongoing;
            t.started = now;
            t.partitions.clear();
            t.groups.clear();
        }
    }

    pub(super) fn add_partitions(&mut self, r: &AddPartitionsToTxnRequest) -> ResponseBody {
        let now = self.now;
        let error = check(
            self.txn.txns.get(&r.v3_and_below_transactional_id),
            r.v3_and_below_producer_id,
            r.v3_and_below_producer_epoch,
        )
        .err();
        let mut results = Vec::new();
        let mut added = Vec::new();
        for topic in &r.v3_and_below_topics {
            let count = self.topics.get(&topic.name).map_or(0, |t| t.1.len() as i32);
            let results_by_partition = topic
                .partitions
                .iter()
                .map(|p| {
                    let code = error.unwrap_or(if (0..count).contains(p) {
                        0
                    } else {
                        UNKNOWN_TOPIC_OR_PARTITION
                    });
                    if code == 0 {
                        added.push((topic.name.clone(), *p));
                    }
                    AddPartitionsToTxnPartitionResult {
                        partition_index: *p,
                        partition_error_code: code,
                        ..Default::default()
                    }
                })
                .collect();
            results.push(AddPartitionsToTxnTopicResult {
                name: topic.name.clone(),
                results_by_partition,
                ..Default::default()
            });
        }
        if let Some(t) = self.txn.txns.get_mut(&r.v3_and_below_transactional_id) {
            if error.is_none() {
                Self::begin(t, now);
                t.partitions.extend(added);
            }
        }
        ResponseBody::AddPartitionsToTxn(AddPartitionsToTxnResponse {
            results_by_topic_v3_and_below: results,
            ..Default::default()
        })
    }

    pub(super) fn add_offsets(&mut self, r: &AddOffsetsToTxnRequest) -> ResponseBody {
        let now = self.now;
        let t = self.txn.txns.get_mut(&r.transactional_id);
        let error_code = match check(t.as_deref(), r.producer_id, r.producer_epoch) {
            Ok(()) => {
                let t = t.expect("checked");
                Self::begin(t, now);
                t.groups.insert(r.group_id.clone());
                0
            }
            Err(e) => e,
        };
        ResponseBody::AddOffsetsToTxn(AddOffsetsToTxnResponse {
            error_code,
            ..Default::default()
        })
    }

    /// Whether a TxnOffsetCommit of this producer for this group belongs to its open
    /// transaction: AddOffsetsToTxn came first, or (version 2, TxnOffsetCommit v5) it adds the
    /// group itself. `Err` with the code otherwise.
    pub(super) fn txn_offsets_check(
        &mut self,
        r: &TxnOffsetCommitRequest,
        version: i16,
    ) -> Result<(), i16> {
        let tv2 = version >= 5 && self.cfg.transaction_version >= 2;
        let now = self.now;
        let t = self.txn.txns.get_mut(&r.transactional_id);
        check(t.as_deref(), r.producer_id, r.producer_epoch)?;
        let t = t.expect("checked");
        match t.state {
            TxnState::Ongoing if t.groups.contains(&r.group_id) => Ok(()),
            _ if tv2 => {
                Self::begin(t, now);
                t.groups.insert(r.group_id.clone());
                Ok(())
            }
            _ => Err(INVALID_TXN_STATE),
        }
    }

    pub(super) fn end_txn(&mut self, r: &EndTxnRequest, version: i16) -> ResponseBody {
        // Version 2 (EndTxn v5): every end bumps the epoch, and the answer hands it back.
        let tv2 = version >= 5 && self.cfg.transaction_version >= 2;
        let t = self.txn.txns.get_mut(&r.transactional_id);
        let (error_code, bumped) = match (t, r.committed) {
            (None, _) => (INVALID_PRODUCER_ID_MAPPING, None),
            (Some(t), _) if t.pid != r.producer_id => (INVALID_PRODUCER_ID_MAPPING, None),
            // A retry of an end that already bumped the epoch.
            (Some(t), commit)
                if tv2
                    && r.producer_epoch == t.epoch - 1
                    && matches!(t.state, TxnState::Preparing(c) | TxnState::Complete(c) if c == commit) =>
            {
                (0, Some((t.pid, t.epoch)))
            }
            (Some(t), _) if t.epoch != r.producer_epoch => (PRODUCER_FENCED, None),
            (Some(t), commit) => match t.state {
                TxnState::Ongoing => {
                    if tv2 {
                        t.epoch += 1;
                    }
                    Self::prepare(t, commit);
                    (0, tv2.then_some((t.pid, t.epoch)))
                }
                // Version 2 may abort a transaction that never began, to bump the epoch.
                TxnState::Empty | TxnState::Complete(_) if tv2 && !commit => {
                    t.epoch += 1;
                    t.state = TxnState::Complete(false);
                    (0, Some((t.pid, t.epoch)))
                }
                // A retry of the same end.
                TxnState::Preparing(c) | TxnState::Complete(c) if c == commit && !tv2 => (0, None),
                TxnState::Preparing(_) => (CONCURRENT_TRANSACTIONS, None),
                _ => (INVALID_TXN_STATE, None),
            },
        };
        let (producer_id, producer_epoch) = bumped.unwrap_or((-1, -1));
        ResponseBody::EndTxn(EndTxnResponse {
            error_code,
            producer_id,
            producer_epoch,
            ..Default::default()
        })
    }

    /// Whether a producer's transactional batch may be written to a partition (KIP-890 part 1:
    /// the leader checks with the coordinator): it is in the open transaction, at the current
    /// epoch; with version 2 (Produce v12+), the Produce adds it, opening the transaction.
    pub(super) fn txn_produce_check(
        &mut self,
        pid: i64,
        epoch: i16,
        tp: (String, i32),
        version: i16,
    ) -> Result<(), i16> {
        let tv2 = version >= 12 && self.cfg.transaction_version >= 2;
        let now = self.now;
        let Some(t) = self.txn.txns.values_mut().find(|t| t.pid == pid) else {
            return Err(INVALID_TXN_STATE);
        };
        if t.epoch > epoch {
            return Err(INVALID_PRODUCER_EPOCH);
        }
        if t.epoch != epoch {
            return Err(INVALID_TXN_STATE);
        }
        match t.state {
            TxnState::Ongoing if t.partitions.contains(&tp) => Ok(()),
            // The previous transaction's markers are still going down: Kafka 4.4's leader
            // answers the coordinator's CONCURRENT_TRANSACTIONS to a version 12+ Produce (seen
            // on Kafka 4.4, #33's defect 2), which Java 4.x's producer retries.
            TxnState::Preparing(_) if tv2 => Err(CONCURRENT_TRANSACTIONS),
            _ if tv2 => {
                Self::begin(t, now);
                t.partitions.insert(tp);
                Ok(())
            }
            _ => Err(INVALID_TXN_STATE),
        }
    }

    /// Aborts transactions past their timeout (bumping the epoch, as Kafka does, so that the
    /// producer is fenced), and writes the markers of ended ones.
    pub(super) fn drive_transactions(&mut self, tick: bool) {
        let now = self.now;
        for t in self.txn.txns.values_mut() {
            if t.state == TxnState::Ongoing && now >= t.started + t.timeout {
                t.epoch += 1;
                Self::prepare(t, false);
                self.txn.timed_out += 1;
            }
        }
        if !tick {
            return;
        }
        let ids: Vec<String> = self
            .txn
            .txns
            .iter()
            .filter(|(_, t)| matches!(t.state, TxnState::Preparing(_)))
            .map(|(id, _)| id.clone())
            .collect();
        for id in ids {
            self.write_markers(&id);
        }
    }

    fn write_markers(&mut self, id: &str) {
        let t = self.txn.txns.get_mut(id).expect("listed");
        let TxnState::Preparing(commit) = t.state else {
            return;
        };
        let (pid, epoch) = (t.pid, t.epoch);
        let mut done = true;
        for ((topic, p), at) in t.markers.iter_mut() {
            let Some(part) = self
                .topics
                .get_mut(topic)
                .and_then(|t| t.1.get_mut(*p as usize))
            else {
                continue; // the topic was deleted: nothing to mark
            };
            if part.leader.is_none() {
                done = false;
                continue;
            }
            match *at {
                Some(o) if part.holds_marker(o, pid, epoch) => done &= o < part.hw,
                _ if !self.cfg.markers => {}
                _ => {
                    *at = Some(part.append_marker(pid, epoch, commit));
                    done = false;
                }
            }
        }
        if done {
            let groups = std::mem::take(&mut t.groups);
            t.state = TxnState::Complete(commit);
            t.partitions.clear();
            t.markers.clear();
            self.coordinator.end_txn(pid, &groups, commit);
            if commit {
                self.txn.completed.0 += 1;
            } else {
                self.txn.completed.1 += 1;
            }
        }
    }

    /// When the transactions have work: markers to write (at the next replication tick) or a
    /// timeout.
    pub(super) fn txn_due(&self) -> Option<SimTime> {
        let markers = self.txn.preparing().then_some(self.next_tick.max(self.now));
        markers.into_iter().chain(self.txn.due()).min()
    }

    /// Moves the transaction coordinator to another broker that is up. Its state is
    /// replicated: the new one carries on, markers included.
    pub fn move_txn_coordinator(&mut self) {
        let old = self.txn_node;
        let new = self.another_broker(old);
        if new != old {
            self.txn_node = new;
            self.stats.txn_coordinator_moves += 1;
        }
    }

    /// The transaction coordinator's broker.
    pub fn txn_coordinator(&self) -> Option<i32> {
        self.txn_node
    }

    /// Whether some transaction has ended and its markers are not all down yet.
    pub fn txn_preparing(&self) -> bool {
        self.txn.preparing()
    }

    /// Offsets committed in transactions not yet ended: (producer id, group, topic,
    /// partition).
    pub fn pending_txn_offsets(&self) -> Vec<(i64, String, String, i32)> {
        self.coordinator.pending_txn_offsets()
    }

    /// Every transactional id, with its state, producer id and epoch.
    pub fn txn_states(&self) -> Vec<(String, TxnState, i64, i16)> {
        self.txn
            .txns
            .iter()
            .map(|(id, t)| (id.clone(), t.state, t.pid, t.epoch))
            .collect()
    }

    /// A transactional id's state, producer id and epoch.
    pub fn txn_state(&self, id: &str) -> Option<(TxnState, i64, i16)> {
        self.txn.txns.get(id).map(|t| (t.state, t.pid, t.epoch))
    }
}
