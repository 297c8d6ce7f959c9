//! Committed offsets in virtual time: OffsetFetch on assignment (both response shapes),
//! manual and automatic commits of consumed offsets only, in order, and their error paths.

use std::time::Duration;

use kafka_core::group::offsets::{CommitError, Committed, OffsetEvent, OffsetRequest, Offsets};
use kafka_core::Instant;
use kafka_proto::api::ResponseBody;
use kafka_proto::messages::offset_commit_request::OffsetCommitRequest;
use kafka_proto::messages::offset_commit_response::{
    OffsetCommitResponse, OffsetCommitResponsePartition, OffsetCommitResponseTopic,
};
use kafka_proto::messages::offset_fetch_response::{
    OffsetFetchResponse, OffsetFetchResponseGroup, OffsetFetchResponsePartition,
    OffsetFetchResponsePartitions, OffsetFetchResponseTopic, OffsetFetchResponseTopics,
};
use kafka_proto::ErrorCode;

fn ms(n: u64) -> Instant {
    Instant::from_millis(n)
}

fn tp(p: i32) -> (String, i32) {
    ("t".to_owned(), p)
}

fn offsets(auto: Option<u64>) -> Offsets {
    Offsets::new(
        "g",
        None,
        auto.map(Duration::from_millis),
        Duration::from_millis(100),
    )
}

fn commit_ok(parts: &[i32], code: i16) -> ResponseBody {
    ResponseBody::OffsetCommit(OffsetCommitResponse {
        topics: vec![OffsetCommitResponseTopic {
            name: "t".into(),
            partitions: parts
                .iter()
                .map(|p| OffsetCommitResponsePartition {
                    partition_index: *p,
                    error_code: code,
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        }],
        ..Default::default()
    })
}

/// The partitions a commit request names (one topic).
fn partitions_of(c: &OffsetCommitRequest) -> Vec<i32> {
    c.topics[0]
        .partitions
        .iter()
        .map(|p| p.partition_index)
        .collect()
}

fn events(o: &mut Offsets) -> Vec<OffsetEvent> {
    std::iter::from_fn(|| o.poll_event()).collect()
}

const GEN: Option<(i32, &str)> = Some((4, "me"));

#[test]
fn assigned_partitions_fetch_their_committed_offsets_in_either_shape() {
    let mut o = offsets(None);
    o.assigned(&[tp(0), tp(1)], ms(0));
    let Some(OffsetRequest::Fetch(f)) = o.poll_request(GEN, ms(0)) else {
        panic!("OffsetFetch")
    };
    assert_eq!(
        f.groups[0].topics.as_ref().unwrap()[0].partition_indexes,
        [0, 1]
    );
    assert_eq!(f.topics.as_ref().unwrap()[0].partition_indexes, [0, 1]);
    assert!(o.poll_request(GEN, ms(0)).is_none(), "one fetch at a time");
    // v8+: per group; partition 1 has nothing committed (-1).
    let grouped = ResponseBody::OffsetFetch(OffsetFetchResponse {
        groups: vec![OffsetFetchResponseGroup {
            group_id: "g".into(),
            topics: vec![OffsetFetchResponseTopics {
                name: "t".into(),
                partitions: vec![
                    OffsetFetchResponsePartitions {
                        partition_index: 0,
                        committed_offset: 42,
                        committed_leader_epoch: 3,
                        ..Default::default()
                    },
                    OffsetFetchResponsePartitions {
                        partition_index: 1,
                        committed_offset: -1,
                        ..Default::default()
                    },
                ],
                ..Default::default()
            }],
            ..Default::default()
        }],
        ..Default::default()
    });
    o.handle_response(grouped, ms(1));
    let c42 = Committed {
        offset: 42,
        leader_epoch: 3,
    };
    assert_eq!(
        events(&mut o),
        [OffsetEvent::Fetched(vec![
            (tp(0), Some(c42)),
            (tp(1), None)
        ])]
    );
    assert_eq!(o.committed(&tp(0)), Some(c42));

    // v1-7: flat; a partition error asks again after the backoff.
    o.assigned(&[tp(2), tp(3)], ms(2));
    assert!(matches!(
        o.poll_request(GEN, ms(2)),
        Some(OffsetRequest::Fetch(_))
    ));
    let flat = ResponseBody::OffsetFetch(OffsetFetchResponse {
        topics: vec![OffsetFetchResponseTopic {
            name: "t".into(),
            partitions: vec![
                OffsetFetchResponsePartition {
                    partition_index: 2,
                    committed_offset: 7,
                    ..Default::default()
                },
                OffsetFetchResponsePartition {
                    partition_index: 3,
                    error_code: ErrorCode::UnstableOffsetCommit.code(),
                    ..Default::default()
                },
            ],
            ..Default::default()
        }],
        ..Default::default()
    });
    o.handle_response(flat, ms(3));
    let c7 = Committed {
        offset: 7,
        leader_epoch: -1,
    };
    assert_eq!(
        events(&mut o),
        [OffsetEvent::Fetched(vec![(tp(2), Some(c7))])]
    );
    assert!(o.poll_request(GEN, ms(50)).is_none(), "backs off");
    let Some(OffsetRequest::Fetch(f)) = o.poll_request(GEN, ms(103)) else {
        panic!("asks again")
    };
    assert_eq!(
        f.groups[0].topics.as_ref().unwrap()[0].partition_indexes,
        [3]
    );
}

#[test]
fn a_manual_commit_sends_only_what_was_consumed_and_reports_its_outcome() {
    let mut o = offsets(None);
    o.consumed(&tp(0), 10, 2);
    o.consumed(&tp(1), 5, 2);
    let first = o.commit();
    let Some(OffsetRequest::Commit(c)) = o.poll_request(GEN, ms(0)) else {
        panic!("OffsetCommit")
    };
    assert_eq!(
        (c.generation_id_or_member_epoch, c.member_id.as_str()),
        (4, "me")
    );
    let sent: Vec<(i32, i64, i32)> = c.topics[0]
        .partitions
        .iter()
        .map(|p| {
            (
                p.partition_index,
                p.committed_offset,
                p.committed_leader_epoch,
            )
        })
        .collect();
    assert_eq!(sent, [(0, 10, 2), (1, 5, 2)]);
    o.consumed(&tp(0), 12, 2);
    let second = o.commit();
    assert!(
        o.poll_request(GEN, ms(0)).is_none(),
        "commits go one at a time, in order"
    );
    o.handle_response(commit_ok(&[0, 1], 0), ms(1));
    let Some(OffsetRequest::Commit(c)) = o.poll_request(GEN, ms(1)) else {
        panic!("the second commit")
    };
    assert_eq!(c.topics[0].partitions.len(), 1, "only what changed since");
    assert_eq!(c.topics[0].partitions[0].committed_offset, 12);
    o.handle_response(commit_ok(&[0], 0), ms(2));
    assert_eq!(
        events(&mut o),
        [
            OffsetEvent::Commit(first, Ok(())),
            OffsetEvent::Commit(second, Ok(()))
        ]
    );
    // Nothing new: an empty commit succeeds without a request.
    let third = o.commit();
    assert!(o.poll_request(GEN, ms(3)).is_none());
    assert_eq!(events(&mut o), [OffsetEvent::Commit(third, Ok(()))]);
}

#[test]
fn commit_errors_are_retried_or_reported_by_kind() {
    let mut o = offsets(None);
    o.consumed(&tp(0), 10, -1);
    let id = o.commit();
    o.poll_request(GEN, ms(0)).unwrap();
    o.handle_response(
        commit_ok(&[0], ErrorCode::CoordinatorLoadInProgress.code()),
        ms(0),
    );
    assert!(events(&mut o).is_empty(), "retriable: kept");
    assert!(o.poll_request(GEN, ms(50)).is_none(), "after the backoff");
    o.poll_request(GEN, ms(100)).unwrap();
    o.handle_response(
        commit_ok(&[0], ErrorCode::RebalanceInProgress.code()),
        ms(100),
    );
    assert_eq!(
        events(&mut o),
        [OffsetEvent::Commit(
            id,
            Err(CommitError::Rebalanced(ErrorCode::RebalanceInProgress))
        )]
    );
    assert_eq!(o.committed(&tp(0)), None);
    // Without a live generation nothing can be committed.
    let id = o.commit();
    assert!(o.poll_request(None, ms(200)).is_none());
    assert_eq!(
        events(&mut o),
        [OffsetEvent::Commit(id, Err(CommitError::NotMember))]
    );
    // A lost connection keeps the commit for the next attempt.
    let id = o.commit();
    o.poll_request(GEN, ms(300)).unwrap();
    o.handle_failure(true, ms(300));
    assert!(o.poll_request(GEN, ms(300)).is_none());
    o.poll_request(GEN, ms(400)).unwrap();
    o.handle_response(commit_ok(&[0], 0), ms(400));
    assert_eq!(events(&mut o), [OffsetEvent::Commit(id, Ok(()))]);
}

#[test]
fn automatic_commits_run_on_their_interval_and_only_when_something_changed() {
    let mut o = offsets(Some(5000));
    o.assigned(&[], ms(0));
    assert_eq!(o.poll_timeout(), Some(ms(5000)));
    o.consumed(&tp(0), 3, -1);
    assert!(o.poll_request(GEN, ms(4999)).is_none());
    let Some(OffsetRequest::Commit(c)) = o.poll_request(GEN, ms(5000)) else {
        panic!("the automatic commit")
    };
    assert_eq!(c.topics[0].partitions[0].committed_offset, 3);
    o.handle_response(commit_ok(&[0], 0), ms(5001));
    assert!(
        events(&mut o).is_empty(),
        "automatic commits report nothing"
    );
    assert_eq!(o.poll_timeout(), Some(ms(10_000)));
    assert!(
        o.poll_request(GEN, ms(10_000)).is_none(),
        "nothing new to commit"
    );
    o.removed(&[tp(0)]);
    o.consumed(&tp(1), 8, -1);
    let Some(OffsetRequest::Commit(c)) = o.poll_request(GEN, ms(15_000)) else {
        panic!("the next automatic commit")
    };
    assert_eq!(
        c.topics[0].partitions[0].partition_index, 1,
        "revoked partitions are gone"
    );
}

/// A commit queued (the coordinator unreachable) or to be retried must not carry partitions
/// lost meanwhile: sent in the next generation, it would move back their new owner's offsets
/// (found by the simulation, seed 43579).
#[test]
fn queued_commits_forget_partitions_that_went_away() {
    let mut o = offsets(None);
    o.consumed(&tp(0), 10, 2);
    o.consumed(&tp(1), 7, 2);
    o.commit(); // queued: no request goes out while the coordinator is unreachable
    o.removed(&[tp(1)]);
    let Some(OffsetRequest::Commit(c)) = o.poll_request(Some((5, "me")), ms(1)) else {
        panic!("OffsetCommit")
    };
    let sent = partitions_of(&c);
    assert_eq!(
        sent,
        [0],
        "partition 1 went away before the commit was sent"
    );
}

#[test]
fn a_retried_commit_forgets_partitions_that_went_away() {
    let mut o = offsets(None);
    o.consumed(&tp(0), 10, 2);
    o.consumed(&tp(1), 7, 2);
    o.commit();
    assert!(matches!(
        o.poll_request(GEN, ms(0)),
        Some(OffsetRequest::Commit(_))
    ));
    // The coordinator is loading: the commit is retried after a backoff...
    o.handle_response(commit_ok(&[0, 1], 14), ms(1));
    // ...by when partition 1 was lost in a rebalance.
    o.removed(&[tp(1)]);
    let Some(OffsetRequest::Commit(c)) = o.poll_request(Some((5, "me")), ms(500)) else {
        panic!("the retried OffsetCommit")
    };
    let sent = partitions_of(&c);
    assert_eq!(sent, [0]);
}

/// A consumer that assigns its own partitions commits with generation -1, which Kafka accepts
/// only into an empty group; UNKNOWN_MEMBER_ID then means "this group has members", not "the
/// group rebalanced": the error says so and names the group (a member of a generation that
/// gets UNKNOWN_MEMBER_ID has been dropped, and hears it as a rebalance).
#[test]
fn a_commit_outside_the_group_into_a_group_with_members_names_the_cause() {
    let mut o = offsets(None);
    o.consumed(&tp(0), 10, -1);
    let id = o.commit();
    let Some(OffsetRequest::Commit(c)) = o.poll_request(Some((-1, "")), ms(0)) else {
        panic!("OffsetCommit")
    };
    assert_eq!(c.generation_id_or_member_epoch, -1);
    o.handle_response(commit_ok(&[0], ErrorCode::UnknownMemberId.code()), ms(1));
    let got = events(&mut o);
    assert_eq!(
        got,
        [OffsetEvent::Commit(
            id,
            Err(CommitError::GroupInUse("g".into()))
        )]
    );
    let OffsetEvent::Commit(_, Err(e)) = &got[0] else {
        unreachable!()
    };
    assert!(e.to_string().contains("group.id of its own"), "{e}");
    // The same answer to a member of a generation is a rebalance.
    let id = o.commit();
    o.poll_request(GEN, ms(2)).unwrap();
    o.handle_response(commit_ok(&[0], ErrorCode::UnknownMemberId.code()), ms(3));
    assert_eq!(
        events(&mut o),
        [OffsetEvent::Commit(
            id,
            Err(CommitError::Rebalanced(ErrorCode::UnknownMemberId))
        )]
    );
}
