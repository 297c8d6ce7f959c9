//! The consumer protocol's membership (KIP-848), driven by hand: joining, reconciling
//! (revoke before assign), acknowledging, fencing, leaving and unknown topic ids.

use std::time::Duration;

use kafka_proto::api::ResponseBody;
use kafka_proto::messages::consumer_group_heartbeat_request::ConsumerGroupHeartbeatRequest;
use kafka_proto::messages::consumer_group_heartbeat_response::{
    Assignment, ConsumerGroupHeartbeatResponse, TopicPartitions,
};
use kafka_proto::messages::find_coordinator_response::FindCoordinatorResponse;
use kafka_proto::messages::metadata_response::{
    MetadataResponse, MetadataResponsePartition, MetadataResponseTopic,
};
use kafka_proto::ErrorCode;
use uuid::Uuid;

use super::*;
use crate::backoff::Backoff;

const T1: Uuid = Uuid::from_u128(1);
const T2: Uuid = Uuid::from_u128(2);

fn member(extra: &[(&str, &str)]) -> ConsumerMembership {
    let mut settings = vec![
        ("bootstrap.servers", "a:1"),
        ("group.id", "g"),
        ("group.protocol", "consumer"),
    ];
    settings.extend_from_slice(extra);
    ConsumerMembership::new(&ConsumerConfig::from_map(settings).unwrap()).unwrap()
}

fn metadata(topics: &[(&str, Uuid)]) -> Metadata {
    let mut m = Metadata::new(
        Duration::from_secs(300),
        Duration::from_secs(300),
        Backoff::new(Duration::from_millis(100), Duration::from_millis(1000)),
        1,
    );
    for (name, _) in topics {
        m.use_topic(name, Instant::ZERO);
    }
    m.poll_request(Instant::ZERO);
    let resp = MetadataResponse {
        topics: topics
            .iter()
            .map(|(name, id)| MetadataResponseTopic {
                name: Some((*name).into()),
                topic_id: *id,
                partitions: (0..4)
                    .map(|p| MetadataResponsePartition {
                        partition_index: p,
                        leader_id: 1,
                        ..Default::default()
                    })
                    .collect(),
                ..Default::default()
            })
            .collect(),
        ..Default::default()
    };
    m.handle_response(&resp, Instant::ZERO);
    m
}

fn at(ms: u64) -> Instant {
    Instant::ZERO + Duration::from_millis(ms)
}

/// Subscribes and finds the coordinator; returns the first heartbeat.
fn joined(m: &mut ConsumerMembership) -> ConsumerGroupHeartbeatRequest {
    m.subscribe(Subscription::Topics(vec!["b".into(), "a".into()]), at(0));
    let (to, req) = m.poll_request(at(0)).unwrap();
    assert_eq!(to, Target::AnyNode);
    assert!(matches!(req, GroupRequest::FindCoordinator(_)));
    m.handle_response(
        ResponseBody::FindCoordinator(FindCoordinatorResponse {
            node_id: 7,
            host: "c".into(),
            port: 9092,
            ..Default::default()
        }),
        at(1),
    );
    heartbeat(m, at(1))
}

fn heartbeat(m: &mut ConsumerMembership, now: Instant) -> ConsumerGroupHeartbeatRequest {
    match m.poll_request(now) {
        Some((Target::Coordinator(7), GroupRequest::ConsumerHeartbeat(r))) => r,
        other => panic!("expected a heartbeat, got {other:?}"),
    }
}

fn answer(
    m: &mut ConsumerMembership,
    epoch: i32,
    assignment: Option<&[(Uuid, &[i32])]>,
    now: Instant,
) {
    let assignment = assignment.map(|a| Assignment {
        topic_partitions: a
            .iter()
            .map(|(id, ps)| TopicPartitions {
                topic_id: *id,
                partitions: ps.to_vec(),
                ..Default::default()
            })
            .collect(),
        ..Default::default()
    });
    m.handle_response(
        ResponseBody::ConsumerGroupHeartbeat(ConsumerGroupHeartbeatResponse {
            member_epoch: epoch,
            heartbeat_interval_ms: 5000,
            assignment,
            ..Default::default()
        }),
        now,
    );
}

fn error(m: &mut ConsumerMembership, e: ErrorCode, now: Instant) {
    m.handle_response(
        ResponseBody::ConsumerGroupHeartbeat(ConsumerGroupHeartbeatResponse {
            error_code: e.code(),
            ..Default::default()
        }),
        now,
    );
}

fn events(m: &mut ConsumerMembership) -> Vec<GroupEvent> {
    std::iter::from_fn(|| m.poll_event()).collect()
}

fn tps(list: &[(&str, i32)]) -> Vec<TopicPartition> {
    list.iter().map(|(t, p)| ((*t).to_owned(), *p)).collect()
}

/// `client.rack` goes in the whole heartbeat that joins (for the coordinator's rack-aware
/// assignors), not in the incremental ones after it; without it, no rack is sent.
#[test]
fn the_rack_is_sent_when_joining() {
    let mut m = member(&[("client.rack", "use1-az2")]);
    let first = joined(&mut m);
    assert_eq!(first.rack_id.as_deref(), Some("use1-az2"));
    answer(&mut m, 1, Some(&[]), at(2));
    assert_eq!(
        heartbeat(&mut m, at(10_000)).rack_id,
        None,
        "an incremental heartbeat"
    );
    let mut m = member(&[]);
    assert_eq!(joined(&mut m).rack_id, None);
}

#[test]
fn joins_with_a_whole_heartbeat_then_sends_only_changes() {
    let mut m = member(&[("max.poll.interval.ms", "60000")]);
    let first = joined(&mut m);
    assert_eq!(first.member_epoch, 0);
    assert!(!first.member_id.is_empty(), "v1: the client names itself");
    assert_eq!(first.rebalance_timeout_ms, 60_000);
    assert_eq!(
        first.subscribed_topic_names,
        Some(vec!["a".to_owned(), "b".to_owned()])
    );
    assert_eq!(
        first.topic_partitions,
        Some(Vec::new()),
        "joining: empty, not null"
    );
    assert!(m.poll_request(at(1)).is_none(), "one request at a time");

    let mut md = metadata(&[("a", T1), ("b", T2)]);
    answer(&mut m, 3, Some(&[(T1, &[0, 1]), (T2, &[2])]), at(2));
    assert!(m.is_stable());
    assert_eq!(m.generation(), (3, first.member_id.as_str()));
    m.reconcile(&mut md, at(2));
    assert_eq!(
        events(&mut m),
        [GroupEvent::Assigned(tps(&[("a", 0), ("a", 1), ("b", 2)]))]
    );
    // The assignment is acknowledged at once, with what is owned now.
    let ack = heartbeat(&mut m, at(2));
    assert_eq!(ack.member_epoch, 3);
    assert_eq!(ack.member_id, first.member_id);
    assert_eq!(ack.subscribed_topic_names, None, "unchanged: left out");
    assert_eq!(ack.rebalance_timeout_ms, -1);
    let owned = ack.topic_partitions.unwrap();
    assert_eq!(owned.len(), 2);
    assert_eq!(
        (owned[0].topic_id, owned[0].partitions.clone()),
        (T1, vec![0, 1])
    );
    answer(&mut m, 3, None, at(3));
    // Next, after the interval the broker gave, with nothing changed.
    assert!(m.poll_request(at(4000)).is_none());
    let quiet = heartbeat(&mut m, at(5003));
    assert_eq!(quiet.topic_partitions, None);
    assert_eq!(quiet.subscribed_topic_names, None);
    // A failure makes the next heartbeat whole.
    m.handle_failure(at(5004));
    assert!(m.coordinator().is_none());
}

#[test]
fn revokes_before_taking_the_new_partitions() {
    let mut m = member(&[]);
    joined(&mut m);
    let mut md = metadata(&[("a", T1), ("b", T2)]);
    answer(&mut m, 1, Some(&[(T1, &[0, 1])]), at(2));
    m.reconcile(&mut md, at(2));
    events(&mut m);
    heartbeat(&mut m, at(2));
    // The broker moves a-1 away and gives b-0.
    answer(&mut m, 2, Some(&[(T1, &[0]), (T2, &[0])]), at(3));
    m.reconcile(&mut md, at(3));
    assert_eq!(events(&mut m), [GroupEvent::Revoking(tps(&[("a", 1)]))]);
    assert!(m.is_revoking());
    // Nothing is taken, and nothing more revoked, until the application is done.
    m.reconcile(&mut md, at(4));
    assert!(events(&mut m).is_empty());
    m.revoked(at(5));
    m.reconcile(&mut md, at(5));
    assert_eq!(events(&mut m), [GroupEvent::Assigned(tps(&[("b", 0)]))]);
    let ack = heartbeat(&mut m, at(5));
    let owned: Vec<(Uuid, Vec<i32>)> = ack
        .topic_partitions
        .unwrap()
        .into_iter()
        .map(|t| (t.topic_id, t.partitions))
        .collect();
    assert_eq!(owned, [(T1, vec![0]), (T2, vec![0])]);
}

#[test]
fn a_fenced_member_loses_its_partitions_and_rejoins_with_epoch_zero() {
    let mut m = member(&[]);
    let first = joined(&mut m);
    let mut md = metadata(&[("a", T1)]);
    answer(&mut m, 4, Some(&[(T1, &[0])]), at(2));
    m.reconcile(&mut md, at(2));
    events(&mut m);
    heartbeat(&mut m, at(2));
    error(&mut m, ErrorCode::FencedMemberEpoch, at(3));
    assert_eq!(events(&mut m), [GroupEvent::Lost(tps(&[("a", 0)]))]);
    assert!(!m.is_stable(), "no commits with a fenced epoch");
    let again = heartbeat(&mut m, at(3));
    assert_eq!(again.member_epoch, 0);
    assert_eq!(again.member_id, first.member_id, "the same member id");
    assert!(again.subscribed_topic_names.is_some(), "whole");
    assert_eq!(again.topic_partitions, Some(Vec::new()));
}

#[test]
fn fatal_errors_stop_the_membership() {
    let mut m = member(&[("group.instance.id", "i1")]);
    let first = joined(&mut m);
    assert_eq!(first.instance_id.as_deref(), Some("i1"));
    error(&mut m, ErrorCode::UnreleasedInstanceId, at(2));
    assert_eq!(
        events(&mut m),
        [GroupEvent::Fatal(ErrorCode::UnreleasedInstanceId)]
    );
    assert!(m.poll_request(at(10_000)).is_none());
}

#[test]
fn leaves_with_epoch_minus_one_or_minus_two_when_static() {
    for (extra, epoch) in [(None, -1), (Some("i1"), -2)] {
        let settings: Vec<(&str, &str)> = extra
            .map(|i| ("group.instance.id", i))
            .into_iter()
            .collect();
        let mut m = member(&settings);
        joined(&mut m);
        answer(&mut m, 1, Some(&[]), at(2));
        m.leave(at(3));
        let leave = heartbeat(&mut m, at(3));
        assert_eq!(leave.member_epoch, epoch);
        answer(&mut m, epoch, None, at(4));
        assert_eq!(events(&mut m), [GroupEvent::Left]);
        assert!(!m.is_active());
        assert!(m.poll_request(at(10_000)).is_none());
    }
}

#[test]
fn unknown_topic_ids_ask_for_every_topic_and_the_known_part_goes_ahead() {
    let mut m = member(&[]);
    joined(&mut m);
    let mut md = metadata(&[("a", T1)]);
    md.poll_request(at(2)); // nothing due
    answer(&mut m, 1, Some(&[(T1, &[0]), (T2, &[1])]), at(2));
    m.reconcile(&mut md, at(2));
    assert_eq!(events(&mut m), [GroupEvent::Assigned(tps(&[("a", 0)]))]);
    let req = md.poll_request(at(500)).expect("a listing of every topic");
    assert_eq!(req.topics, None);
    // Once named, the rest is taken.
    md.handle_response(
        &MetadataResponse {
            topics: vec![MetadataResponseTopic {
                name: Some("b".into()),
                topic_id: T2,
                ..Default::default()
            }],
            ..Default::default()
        },
        at(501),
    );
    m.reconcile(&mut md, at(501));
    assert_eq!(events(&mut m), [GroupEvent::Assigned(tps(&[("b", 1)]))]);
}

#[test]
fn a_stalled_application_loses_its_partitions_and_rejoins_on_poll() {
    let mut m = member(&[("max.poll.interval.ms", "10000")]);
    joined(&mut m);
    let mut md = metadata(&[("a", T1)]);
    answer(&mut m, 1, Some(&[(T1, &[0])]), at(2));
    m.reconcile(&mut md, at(2));
    events(&mut m);
    heartbeat(&mut m, at(2));
    answer(&mut m, 1, None, at(3));
    m.handle_timeout(at(10_001));
    assert_eq!(events(&mut m), [GroupEvent::Lost(tps(&[("a", 0)]))]);
    let leave = heartbeat(&mut m, at(10_001));
    assert_eq!(leave.member_epoch, -1);
    answer(&mut m, -1, None, at(10_002));
    assert!(
        events(&mut m).is_empty(),
        "a forced leave is reported as the loss"
    );
    assert!(m.polled(at(20_000)));
    let rejoin = heartbeat(&mut m, at(20_000));
    assert_eq!(rejoin.member_epoch, 0);
}
