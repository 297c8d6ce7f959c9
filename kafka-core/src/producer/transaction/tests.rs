//! The transaction sub-machine alone: each call's requests, answers and errors, driven by hand.

use std::collections::BTreeMap;
use std::time::Duration;

use kafka_proto::api::ResponseBody;
use kafka_proto::messages::add_offsets_to_txn_response::AddOffsetsToTxnResponse;
use kafka_proto::messages::add_partitions_to_txn_response::{
    AddPartitionsToTxnPartitionResult, AddPartitionsToTxnResponse, AddPartitionsToTxnTopicResult,
};
use kafka_proto::messages::end_txn_response::EndTxnResponse;
use kafka_proto::messages::find_coordinator_response::{Coordinator, FindCoordinatorResponse};
use kafka_proto::messages::init_producer_id_response::InitProducerIdResponse;
use kafka_proto::messages::txn_offset_commit_response::{
    TxnOffsetCommitResponse, TxnOffsetCommitResponsePartition, TxnOffsetCommitResponseTopic,
};
use kafka_proto::ErrorCode;

use super::*;

const T0: Instant = Instant::ZERO;

fn txn() -> Transactions {
    Transactions::new(
        "tx-1".into(),
        Duration::from_secs(60),
        Backoff::new(Duration::from_millis(100), Duration::from_secs(1)),
        7,
    )
}

fn found(node: i32) -> ResponseBody {
    ResponseBody::FindCoordinator(FindCoordinatorResponse {
        coordinators: vec![Coordinator {
            key: "k".into(),
            node_id: node,
            host: "broker".into(),
            port: 9092,
            ..Default::default()
        }],
        ..Default::default()
    })
}

fn producer_id(pid: i64, epoch: i16, error: Option<ErrorCode>) -> ResponseBody {
    ResponseBody::InitProducerId(InitProducerIdResponse {
        error_code: error.map_or(0, |e| e.code()),
        producer_id: pid,
        producer_epoch: epoch,
        ..Default::default()
    })
}

fn added(tps: &[(&str, i32)], error: Option<ErrorCode>) -> ResponseBody {
    let mut topics: BTreeMap<&str, Vec<AddPartitionsToTxnPartitionResult>> = BTreeMap::new();
    for (t, p) in tps {
        topics
            .entry(t)
            .or_default()
            .push(AddPartitionsToTxnPartitionResult {
                partition_index: *p,
                partition_error_code: error.map_or(0, |e| e.code()),
                ..Default::default()
            });
    }
    ResponseBody::AddPartitionsToTxn(AddPartitionsToTxnResponse {
        results_by_topic_v3_and_below: topics
            .into_iter()
            .map(
                |(name, results_by_partition)| AddPartitionsToTxnTopicResult {
                    name: name.into(),
                    results_by_partition,
                    ..Default::default()
                },
            )
            .collect(),
        ..Default::default()
    })
}

fn ended(error: Option<ErrorCode>) -> ResponseBody {
    ResponseBody::EndTxn(EndTxnResponse {
        error_code: error.map_or(0, |e| e.code()),
        ..Default::default()
    })
}

/// Member m-1 of group g, generation 5.
fn member_of_g() -> GroupMetadata {
    GroupMetadata {
        generation_id: 5,
        member_id: "m-1".into(),
        ..GroupMetadata::new("g")
    }
}

/// Offset 42 (leader epoch 2) of in-1.
fn offsets_in_1() -> BTreeMap<TopicPartition, TxnOffset> {
    BTreeMap::from([(
        tp("in", 1),
        TxnOffset {
            offset: 42,
            leader_epoch: 2,
        },
    )])
}

fn tp(t: &str, p: i32) -> TopicPartition {
    (t.to_owned(), p)
}

/// A transaction state past init_transactions: coordinator 2, producer id 7, epoch 3.
fn initialized() -> Transactions {
    let mut t = txn();
    t.init(TxnToken(0));
    let (to, req) = t.poll_request(true, T0).expect("find the coordinator");
    assert_eq!(to, TxnTarget::AnyNode);
    let TxnRequest::FindCoordinator(f) = req else {
        panic!("{req:?}")
    };
    assert_eq!(
        (f.key_type, f.coordinator_keys),
        (1, vec!["tx-1".to_owned()])
    );
    t.handle_response(&found(2), T0);
    assert_eq!(t.poll_learned().map(|(n, _)| n), Some(2));
    let (to, req) = t.poll_request(true, T0).expect("init the producer id");
    assert_eq!(to, TxnTarget::Coordinator(2));
    let TxnRequest::InitProducerId(i) = req else {
        panic!("{req:?}")
    };
    assert_eq!(i.transactional_id.as_deref(), Some("tx-1"));
    assert_eq!(i.transaction_timeout_ms, 60_000);
    assert_eq!((i.producer_id, i.producer_epoch), (-1, -1));
    assert_eq!(t.producer_id(), None, "no id before the answer");
    t.handle_response(&producer_id(7, 3, None), T0);
    assert_eq!(t.poll_result(), Some((TxnToken(0), Ok(()))));
    assert_eq!(t.producer_id(), Some((7, 3)));
    t
}

/// Begins a transaction and adds `t0-0` to it.
fn with_partition(t: &mut Transactions) {
    t.begin().expect("begin");
    t.add_partition(&tp("t0", 0));
    assert!(!t.is_added(&tp("t0", 0)));
    let (to, req) = t.poll_request(false, T0).expect("add the partition");
    assert_eq!(to, TxnTarget::Coordinator(2));
    let TxnRequest::AddPartitions(a) = req else {
        panic!("{req:?}")
    };
    assert_eq!(a.v3_and_below_transactional_id, "tx-1");
    assert_eq!(
        (a.v3_and_below_producer_id, a.v3_and_below_producer_epoch),
        (7, 3)
    );
    assert_eq!(a.v3_and_below_topics[0].partitions, vec![0]);
    t.handle_response(&added(&[("t0", 0)], None), T0);
    assert!(t.is_added(&tp("t0", 0)));
}

#[test]
fn calls_out_of_order_are_refused_with_the_state_named() {
    let mut t = txn();
    let e = t.begin().unwrap_err();
    assert!(
        matches!(
            e,
            TransactionError::InvalidState {
                call: "begin_transaction",
                ..
            }
        ),
        "{e:?}"
    );
    assert!(e.to_string().contains("before init_transactions"), "{e}");
    assert!(t.check_send().is_err(), "no send before init");
    let mut t = initialized();
    assert!(t.check_send().is_err(), "no send outside a transaction");
    t.commit(TxnToken(1));
    assert!(matches!(
        t.poll_result(),
        Some((TxnToken(1), Err(TransactionError::InvalidState { .. })))
    ));
    t.begin().unwrap();
    assert!(t.begin().is_err(), "begin twice");
    t.check_send()
        .expect("sends are allowed inside a transaction");
}

#[test]
fn a_commit_waits_for_every_record_then_ends_the_transaction() {
    let mut t = initialized();
    with_partition(&mut t);
    t.commit(TxnToken(1));
    assert_eq!(
        t.poll_request(false, T0),
        None,
        "records are still in flight"
    );
    let (to, req) = t.poll_request(true, T0).expect("EndTxn");
    assert_eq!(to, TxnTarget::Coordinator(2));
    let TxnRequest::EndTxn(e) = req else {
        panic!("{req:?}")
    };
    assert!(e.committed);
    assert_eq!((e.producer_id, e.producer_epoch), (7, 3));
    t.handle_response(&ended(None), T0);
    assert_eq!(t.poll_result(), Some((TxnToken(1), Ok(()))));
    assert!(
        !t.is_added(&tp("t0", 0)),
        "the next transaction starts empty"
    );
    t.begin().expect("the next transaction");
}

#[test]
fn a_transaction_the_broker_never_heard_of_ends_without_a_request() {
    let mut t = initialized();
    t.begin().unwrap();
    t.commit(TxnToken(1));
    assert_eq!(t.poll_request(true, T0), None);
    assert_eq!(t.poll_result(), Some((TxnToken(1), Ok(()))));
}

#[test]
fn a_moved_coordinator_is_found_again_and_the_request_retried() {
    let mut t = initialized();
    t.begin().unwrap();
    t.add_partition(&tp("t0", 0));
    t.poll_request(false, T0).expect("add");
    t.handle_response(&added(&[("t0", 0)], Some(ErrorCode::NotCoordinator)), T0);
    assert!(!t.is_added(&tp("t0", 0)));
    assert_eq!(t.poll_request(false, T0), None, "backing off");
    let later = T0 + Duration::from_secs(2);
    let (to, _) = t.poll_request(false, later).expect("find it again");
    assert_eq!(to, TxnTarget::AnyNode);
    t.handle_response(&found(3), later);
    let (to, req) = t.poll_request(false, later).expect("add again");
    assert_eq!(to, TxnTarget::Coordinator(3));
    assert!(matches!(req, TxnRequest::AddPartitions(_)));
    t.handle_response(&added(&[("t0", 0)], None), later);
    assert!(t.is_added(&tp("t0", 0)));
}

#[test]
fn a_lost_connection_looks_the_coordinator_up_again() {
    let mut t = initialized();
    with_partition(&mut t);
    t.commit(TxnToken(1));
    t.poll_request(true, T0).expect("EndTxn");
    t.handle_failure(T0);
    let later = T0 + Duration::from_secs(2);
    let (to, _) = t.poll_request(true, later).expect("find");
    assert_eq!(to, TxnTarget::AnyNode);
    t.handle_response(&found(2), later);
    let (_, req) = t.poll_request(true, later).expect("EndTxn again");
    assert!(matches!(req, TxnRequest::EndTxn(ref e) if e.committed));
    t.handle_response(&ended(None), later);
    assert_eq!(t.poll_result(), Some((TxnToken(1), Ok(()))));
}

#[test]
fn concurrent_transactions_retry_soon() {
    let mut t = initialized();
    with_partition(&mut t);
    t.commit(TxnToken(1));
    t.poll_request(true, T0).expect("EndTxn");
    t.handle_response(&ended(Some(ErrorCode::ConcurrentTransactions)), T0);
    assert_eq!(t.poll_timeout(), Some(T0 + Duration::from_millis(20)));
    let (_, req) = t
        .poll_request(true, T0 + Duration::from_millis(20))
        .expect("again");
    assert!(matches!(req, TxnRequest::EndTxn(_)));
}

#[test]
fn a_fenced_producer_fails_every_later_call() {
    let mut t = initialized();
    with_partition(&mut t);
    t.commit(TxnToken(1));
    t.poll_request(true, T0).expect("EndTxn");
    t.handle_response(&ended(Some(ErrorCode::ProducerFenced)), T0);
    assert_eq!(
        t.poll_result(),
        Some((
            TxnToken(1),
            Err(TransactionError::Fatal(ErrorCode::ProducerFenced))
        ))
    );
    assert_eq!(
        t.begin(),
        Err(TransactionError::Fatal(ErrorCode::ProducerFenced))
    );
    assert_eq!(
        t.check_send(),
        Err(TransactionError::Fatal(ErrorCode::ProducerFenced))
    );
    assert!(!t.abort(TxnToken(2)));
    assert!(matches!(
        t.poll_result(),
        Some((TxnToken(2), Err(TransactionError::Fatal(_))))
    ));
    assert_eq!(t.poll_request(true, T0), None, "nothing more is sent");
}

#[test]
fn a_failed_record_makes_the_commit_fail_and_the_abort_carry_on() {
    let mut t = initialized();
    with_partition(&mut t);
    t.record_failed(
        Some(ErrorCode::MessageTooLarge),
        "the broker rejected the record",
        false,
    );
    t.commit(TxnToken(1));
    let Some((TxnToken(1), Err(TransactionError::Abortable { cause }))) = t.poll_result() else {
        panic!("the commit fails")
    };
    assert!(cause.contains("rejected"), "{cause}");
    assert!(t.check_send().is_err());
    assert!(
        t.abort(TxnToken(2)),
        "the producer fails its unsent records"
    );
    let (_, req) = t.poll_request(true, T0).expect("EndTxn(abort)");
    let TxnRequest::EndTxn(e) = req else {
        panic!("{req:?}")
    };
    assert!(!e.committed);
    t.handle_response(&ended(None), T0);
    assert_eq!(t.poll_result(), Some((TxnToken(2), Ok(()))));
    t.begin().expect("carry on");
}

#[test]
fn a_lost_sequence_aborts_with_an_epoch_bump() {
    let mut t = initialized();
    with_partition(&mut t);
    t.record_failed(
        Some(ErrorCode::UnknownProducerId),
        "unknown producer id",
        true,
    );
    assert!(t.abort(TxnToken(1)));
    let (to, req) = t.poll_request(true, T0).expect("bump");
    assert_eq!(to, TxnTarget::Coordinator(2));
    let TxnRequest::InitProducerId(i) = req else {
        panic!("an epoch bump, not EndTxn: {req:?}")
    };
    assert_eq!((i.producer_id, i.producer_epoch), (7, 3));
    t.handle_response(&producer_id(7, 4, None), T0);
    assert_eq!(t.poll_result(), Some((TxnToken(1), Ok(()))));
    assert_eq!(t.producer_id(), Some((7, 4)));
    t.begin().expect("the next transaction");
}

#[test]
fn offsets_join_the_transaction_through_the_group_coordinator() {
    let mut t = initialized();
    with_partition(&mut t);
    let group = member_of_g();
    let offsets = offsets_in_1();
    t.send_offsets(TxnToken(1), offsets, group);
    let (to, req) = t.poll_request(false, T0).expect("AddOffsetsToTxn");
    assert_eq!(to, TxnTarget::Coordinator(2));
    assert!(matches!(req, TxnRequest::AddOffsets(ref a) if a.group_id == "g"));
    t.handle_response(
        &ResponseBody::AddOffsetsToTxn(AddOffsetsToTxnResponse::default()),
        T0,
    );
    let (to, req) = t.poll_request(false, T0).expect("find the group");
    assert_eq!(to, TxnTarget::AnyNode);
    assert!(matches!(req, TxnRequest::FindCoordinator(ref f) if f.key_type == 0));
    t.handle_response(&found(1), T0);
    let (to, req) = t.poll_request(false, T0).expect("TxnOffsetCommit");
    assert_eq!(to, TxnTarget::GroupCoordinator(1));
    let TxnRequest::TxnOffsetCommit(c) = req else {
        panic!("{req:?}")
    };
    assert_eq!((c.generation_id, c.member_id.as_str()), (5, "m-1"));
    assert_eq!(c.topics[0].partitions[0].committed_offset, 42);
    assert_eq!(c.topics[0].partitions[0].committed_leader_epoch, 2);
    t.handle_response(&offsets_answer(None), T0);
    assert_eq!(t.poll_result(), Some((TxnToken(1), Ok(()))));
}

fn offsets_answer(error: Option<ErrorCode>) -> ResponseBody {
    ResponseBody::TxnOffsetCommit(TxnOffsetCommitResponse {
        topics: vec![TxnOffsetCommitResponseTopic {
            name: "in".into(),
            partitions: vec![TxnOffsetCommitResponsePartition {
                partition_index: 1,
                error_code: error.map_or(0, |e| e.code()),
                ..Default::default()
            }],
            ..Default::default()
        }],
        ..Default::default()
    })
}

#[test]
fn a_zombie_members_offsets_are_refused_and_the_transaction_aborts() {
    let mut t = initialized();
    t.begin().unwrap();
    let offsets = BTreeMap::from([(
        tp("in", 1),
        TxnOffset {
            offset: 42,
            leader_epoch: -1,
        },
    )]);
    let group = GroupMetadata {
        generation_id: 4,
        member_id: "old".into(),
        ..GroupMetadata::new("g")
    };
    t.send_offsets(TxnToken(1), offsets, group);
    t.poll_request(false, T0).expect("AddOffsetsToTxn");
    t.handle_response(
        &ResponseBody::AddOffsetsToTxn(AddOffsetsToTxnResponse::default()),
        T0,
    );
    t.poll_request(false, T0).expect("find the group");
    t.handle_response(&found(1), T0);
    t.poll_request(false, T0).expect("TxnOffsetCommit");
    t.handle_response(&offsets_answer(Some(ErrorCode::IllegalGeneration)), T0);
    let Some((TxnToken(1), Err(TransactionError::Abortable { cause }))) = t.poll_result() else {
        panic!("the offsets are refused")
    };
    assert!(cause.contains("rebalance"), "{cause}");
    t.commit(TxnToken(2));
    assert!(matches!(
        t.poll_result(),
        Some((TxnToken(2), Err(TransactionError::Abortable { .. })))
    ));
    assert!(t.abort(TxnToken(3)));
    let (_, req) = t
        .poll_request(true, T0)
        .expect("EndTxn(abort): the group was added");
    assert!(matches!(req, TxnRequest::EndTxn(ref e) if !e.committed));
}

#[test]
fn an_unauthorized_transactional_id_is_fatal_at_init() {
    let mut t = txn();
    t.init(TxnToken(0));
    t.poll_request(true, T0).expect("find");
    t.handle_response(&found(2), T0);
    t.poll_request(true, T0).expect("init");
    t.handle_response(
        &producer_id(-1, -1, Some(ErrorCode::TransactionalIdAuthorizationFailed)),
        T0,
    );
    assert_eq!(
        t.poll_result(),
        Some((
            TxnToken(0),
            Err(TransactionError::Fatal(
                ErrorCode::TransactionalIdAuthorizationFailed
            ))
        ))
    );
}

#[test]
fn close_fails_the_waiting_calls() {
    let mut t = txn();
    t.init(TxnToken(0));
    t.close();
    assert_eq!(
        t.poll_result(),
        Some((TxnToken(0), Err(TransactionError::Closed)))
    );
}

/// Found by the transaction simulation: an abort behind an AddPartitionsToTxn answered
/// CONCURRENT_TRANSACTIONS put the partition back to be added, and waited for it for ever.
#[test]
fn an_abort_does_not_wait_for_partitions_refused_while_it_began() {
    let mut t = initialized();
    t.begin().expect("begin");
    t.add_partition(&tp("t0", 0));
    t.poll_request(false, T0).expect("AddPartitionsToTxn");
    assert!(t.abort(TxnToken(1)), "the unsent records fail");
    t.handle_response(
        &added(&[("t0", 0)], Some(ErrorCode::ConcurrentTransactions)),
        T0,
    );
    assert_eq!(t.poll_request(true, T0 + Duration::from_secs(1)), None);
    assert_eq!(
        t.poll_result(),
        Some((TxnToken(1), Ok(()))),
        "nothing reached the coordinator: the abort ends here"
    );
}

/// Found by the transaction simulation: a group coordinator whose broker left the metadata
/// is looked up again instead of waited for.
#[test]
fn a_forgotten_group_coordinator_is_found_again() {
    let mut t = initialized();
    with_partition(&mut t);
    let group = member_of_g();
    let offsets = offsets_in_1();
    t.send_offsets(TxnToken(1), offsets, group);
    t.poll_request(false, T0).expect("AddOffsetsToTxn");
    t.handle_response(
        &ResponseBody::AddOffsetsToTxn(AddOffsetsToTxnResponse::default()),
        T0,
    );
    t.poll_request(false, T0).expect("find the group");
    t.handle_response(&found(1), T0);
    assert_eq!(t.target(false, T0), Some(TxnTarget::GroupCoordinator(1)));
    t.forget(TxnTarget::GroupCoordinator(1), T0);
    let later = t.poll_timeout().expect("a backoff");
    let (to, req) = t.poll_request(false, later).expect("find the group again");
    assert_eq!(to, TxnTarget::AnyNode);
    assert!(matches!(req, TxnRequest::FindCoordinator(ref f) if f.key_type == 0));
}

/// `send_offsets_to_transaction` called again after its wait timed out takes the queued call
/// over instead of queueing the same offsets twice.
#[test]
fn the_same_offsets_again_take_the_waiting_call_over() {
    let mut t = initialized();
    with_partition(&mut t);
    let group = member_of_g();
    let offsets = offsets_in_1();
    t.send_offsets(TxnToken(1), offsets.clone(), group.clone());
    t.send_offsets(TxnToken(2), offsets, group);
    assert_eq!(
        t.poll_result(),
        Some((TxnToken(1), Err(TransactionError::TimedOut)))
    );
    assert_eq!(t.offsets.len(), 1);
}

/// Past init_transactions on a cluster that finalized `transaction.version` 2.
fn initialized_tv2() -> Transactions {
    let mut t = txn();
    t.offer_version(Some(2));
    t.init(TxnToken(0));
    t.poll_request(true, T0).expect("find the coordinator");
    t.handle_response(&found(2), T0);
    t.poll_request(true, T0).expect("init the producer id");
    t.handle_response(&producer_id(7, 3, None), T0);
    assert_eq!(t.poll_result(), Some((TxnToken(0), Ok(()))));
    // Decided at init: a later finalized level changes nothing.
    t.offer_version(Some(1));
    assert!(t.tv2());
    t
}

/// Version 2: partitions join through the Produce (no AddPartitionsToTxn), the transaction
/// reaches the coordinator with the first batch sent, and EndTxn's new epoch is the next
/// transaction's.
#[test]
fn version_2_adds_partitions_by_produce_and_takes_endtxns_epoch() {
    let mut t = initialized_tv2();
    t.begin().expect("begin");
    t.add_partition(&tp("t0", 0));
    assert!(
        t.is_added(&tp("t0", 0)),
        "no AddPartitionsToTxn to wait for"
    );
    assert_eq!(t.poll_request(false, T0), None);
    t.batch_sent();
    t.commit(TxnToken(1));
    let (to, req) = t.poll_request(true, T0).expect("EndTxn");
    assert_eq!(to, TxnTarget::Coordinator(2));
    assert!(matches!(req, TxnRequest::EndTxn(ref e) if e.committed && e.producer_epoch == 3));
    t.handle_response(
        &ResponseBody::EndTxn(EndTxnResponse {
            producer_id: 7,
            producer_epoch: 4,
            ..Default::default()
        }),
        T0,
    );
    assert_eq!(t.poll_result(), Some((TxnToken(1), Ok(()))));
    assert_eq!(t.producer_id(), Some((7, 4)), "the bumped epoch");
}

/// Version 2: a transaction whose records never went ends without a request.
#[test]
fn version_2_without_a_batch_sent_ends_locally() {
    let mut t = initialized_tv2();
    t.begin().expect("begin");
    t.add_partition(&tp("t0", 0));
    assert!(t.abort(TxnToken(1)));
    assert_eq!(t.poll_request(true, T0), None);
    assert_eq!(t.poll_result(), Some((TxnToken(1), Ok(()))));
}

/// Version 2: offsets go straight to the group coordinator (no AddOffsetsToTxn), and they put
/// the transaction on the coordinator.
#[test]
fn version_2_sends_offsets_without_add_offsets() {
    let mut t = initialized_tv2();
    t.begin().expect("begin");
    let group = member_of_g();
    let offsets = offsets_in_1();
    t.send_offsets(TxnToken(1), offsets, group);
    let (to, req) = t.poll_request(false, T0).expect("find the group");
    assert_eq!(to, TxnTarget::AnyNode);
    assert!(matches!(req, TxnRequest::FindCoordinator(ref f) if f.key_type == 0));
    t.handle_response(&found(1), T0);
    let (to, req) = t.poll_request(false, T0).expect("TxnOffsetCommit");
    assert_eq!(to, TxnTarget::GroupCoordinator(1));
    assert!(matches!(req, TxnRequest::TxnOffsetCommit(_)));
    t.handle_response(&offsets_answer(None), T0);
    assert_eq!(t.poll_result(), Some((TxnToken(1), Ok(()))));
    t.commit(TxnToken(2));
    let (_, req) = t
        .poll_request(true, T0)
        .expect("EndTxn: the offsets are in the transaction");
    assert!(matches!(req, TxnRequest::EndTxn(_)));
}
