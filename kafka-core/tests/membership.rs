//! Group membership's every path, in virtual time, by feeding typed responses to the
//! sub-machine: joins (with KIP-394's member-id retry), leader assignment, heartbeats,
//! rebalances under both protocols, lost memberships, coordinator moves, fatal errors,
//! `max.poll.interval.ms`, and leaving.

use std::collections::BTreeMap;
use std::time::Duration;

use bytes::Bytes;
use kafka_core::config::ConsumerConfig;
use kafka_core::group::membership::{GroupEvent, GroupRequest, Membership, Target};
use kafka_core::group::payload;
use kafka_core::Instant;
use kafka_proto::api::ResponseBody;
use kafka_proto::messages::find_coordinator_response::FindCoordinatorResponse;
use kafka_proto::messages::heartbeat_response::HeartbeatResponse;
use kafka_proto::messages::join_group_response::{JoinGroupResponse, JoinGroupResponseMember};
use kafka_proto::messages::leave_group_response::LeaveGroupResponse;
use kafka_proto::messages::sync_group_response::SyncGroupResponse;
use kafka_proto::ErrorCode;

fn membership(extra: &[(&str, &str)]) -> Membership {
    let mut map = vec![
        ("bootstrap.servers", "b:1"),
        ("group.id", "g"),
        ("session.timeout.ms", "2000"),
        ("heartbeat.interval.ms", "500"),
        ("max.poll.interval.ms", "10000"),
    ];
    map.extend_from_slice(extra);
    Membership::new(&ConsumerConfig::from_map(map).unwrap()).unwrap()
}

fn ms(n: u64) -> Instant {
    Instant::from_millis(n)
}

fn tp(t: &str, p: i32) -> (String, i32) {
    (t.to_owned(), p)
}

fn found(node: i32) -> ResponseBody {
    ResponseBody::FindCoordinator(FindCoordinatorResponse {
        node_id: node,
        host: "coord".into(),
        port: 9092,
        ..Default::default()
    })
}

fn joined(me: &str, leader: &str, generation: i32, protocol: &str) -> ResponseBody {
    ResponseBody::JoinGroup(JoinGroupResponse {
        member_id: me.into(),
        leader: leader.into(),
        generation_id: generation,
        protocol_name: Some(protocol.into()),
        ..Default::default()
    })
}

fn join_error(code: ErrorCode, member_id: &str) -> ResponseBody {
    ResponseBody::JoinGroup(JoinGroupResponse {
        error_code: code.code(),
        member_id: member_id.into(),
        ..Default::default()
    })
}

fn synced(assigned: &[(String, i32)]) -> ResponseBody {
    ResponseBody::SyncGroup(SyncGroupResponse {
        assignment: payload::encode_assignment(assigned).unwrap(),
        ..Default::default()
    })
}

fn sync_error(code: ErrorCode) -> ResponseBody {
    ResponseBody::SyncGroup(SyncGroupResponse {
        error_code: code.code(),
        assignment: Bytes::new(),
        ..Default::default()
    })
}

fn heartbeat(code: Option<ErrorCode>) -> ResponseBody {
    ResponseBody::Heartbeat(HeartbeatResponse {
        error_code: code.map_or(0, |c| c.code()),
        ..Default::default()
    })
}

fn request(m: &mut Membership, now: Instant) -> (Target, GroupRequest) {
    m.poll_request(now).expect("a request is due")
}

fn events(m: &mut Membership) -> Vec<GroupEvent> {
    std::iter::from_fn(|| m.poll_event()).collect()
}

/// Subscribes and joins as a follower that gets `assigned` in generation 1.
fn join(m: &mut Membership, protocol: &str, assigned: &[(String, i32)]) {
    m.subscribe(vec!["t".into()], ms(0));
    let (to, r) = request(m, ms(0));
    assert_eq!(to, Target::AnyNode, "FindCoordinator goes to any node");
    assert!(matches!(r, GroupRequest::FindCoordinator(ref f) if f.key == "g"));
    m.handle_response(found(7), ms(0));
    let (to, r) = request(m, ms(0));
    assert_eq!(to, Target::Coordinator(7));
    let GroupRequest::JoinGroup(j) = r else {
        panic!("{r:?}")
    };
    assert_eq!(j.member_id, "");
    assert_eq!(
        j.protocols
            .iter()
            .map(|p| p.name.as_str())
            .collect::<Vec<_>>(),
        ["range", "cooperative-sticky"],
        "Java's default order"
    );
    assert_eq!(
        (j.session_timeout_ms, j.rebalance_timeout_ms),
        (2000, 10000)
    );
    // KIP-394: the first join only gets a member id.
    m.handle_response(join_error(ErrorCode::MemberIdRequired, "me"), ms(0));
    let (_, r) = request(m, ms(0));
    let GroupRequest::JoinGroup(j) = r else {
        panic!("{r:?}")
    };
    assert_eq!(j.member_id, "me", "rejoins at once with the id");
    m.handle_response(joined("me", "other", 1, protocol), ms(0));
    let (_, r) = request(m, ms(0));
    let GroupRequest::SyncGroup(s) = r else {
        panic!("{r:?}")
    };
    assert!(s.assignments.is_empty(), "followers send no assignment");
    assert_eq!((s.generation_id, s.member_id.as_str()), (1, "me"));
    m.handle_response(synced(assigned), ms(0));
    assert_eq!(events(m), [GroupEvent::Assigned(assigned.to_vec())]);
}

#[test]
fn a_follower_joins_syncs_and_heartbeats_on_its_interval() {
    let mut m = membership(&[]);
    join(&mut m, "range", &[tp("t", 0), tp("t", 1)]);
    assert!(
        m.poll_request(ms(499)).is_none(),
        "not before heartbeat.interval.ms"
    );
    assert_eq!(m.poll_timeout(), Some(ms(500)));
    m.polled(ms(400));
    let (_, r) = request(&mut m, ms(500));
    assert!(
        matches!(r, GroupRequest::Heartbeat(ref h) if h.generation_id == 1 && h.member_id == "me")
    );
    assert!(m.poll_request(ms(600)).is_none(), "one request at a time");
    m.handle_response(heartbeat(None), ms(510));
    assert_eq!(m.poll_timeout(), Some(ms(1000)));
    assert_eq!(m.owned(), [tp("t", 0), tp("t", 1)]);
}

#[test]
fn the_leader_assigns_with_the_chosen_assignor() {
    let mut m = membership(&[]);
    m.subscribe(vec!["t".into()], ms(0));
    request(&mut m, ms(0));
    m.handle_response(found(1), ms(0));
    request(&mut m, ms(0));
    let sub = payload::encode_subscription(&["t".into()], &[], -1, None).unwrap();
    let member = |id: &str| JoinGroupResponseMember {
        member_id: id.into(),
        metadata: sub.clone(),
        ..Default::default()
    };
    m.handle_response(
        ResponseBody::JoinGroup(JoinGroupResponse {
            member_id: "a".into(),
            leader: "a".into(),
            generation_id: 3,
            protocol_name: Some("range".into()),
            members: vec![member("a"), member("b")],
            ..Default::default()
        }),
        ms(0),
    );
    assert!(
        m.poll_request(ms(0)).is_none(),
        "waits for partition counts"
    );
    assert_eq!(
        m.topics_to_assign()
            .unwrap()
            .into_iter()
            .collect::<Vec<_>>(),
        ["t"]
    );
    m.assign(&BTreeMap::from([("t".to_owned(), 5)]), ms(0));
    let (_, r) = request(&mut m, ms(0));
    let GroupRequest::SyncGroup(s) = r else {
        panic!("{r:?}")
    };
    let got: BTreeMap<String, Vec<(String, i32)>> = s
        .assignments
        .iter()
        .map(|a| {
            (
                a.member_id.clone(),
                payload::decode_assignment(&a.assignment).unwrap(),
            )
        })
        .collect();
    assert_eq!(got["a"], [tp("t", 0), tp("t", 1), tp("t", 2)]);
    assert_eq!(got["b"], [tp("t", 3), tp("t", 4)]);
}

#[test]
fn an_eager_rebalance_revokes_everything_before_rejoining() {
    let mut m = membership(&[]);
    join(&mut m, "range", &[tp("t", 0), tp("t", 1)]);
    request(&mut m, ms(500));
    m.handle_response(heartbeat(Some(ErrorCode::RebalanceInProgress)), ms(500));
    assert_eq!(
        events(&mut m),
        [GroupEvent::Revoking(vec![tp("t", 0), tp("t", 1)])]
    );
    assert!(
        !matches!(
            m.poll_request(ms(500)),
            Some((_, GroupRequest::JoinGroup(_)))
        ),
        "no rejoin before the application has revoked"
    );
    m.revoked(ms(600));
    let (_, r) = request(&mut m, ms(1000));
    let GroupRequest::JoinGroup(j) = r else {
        panic!("{r:?}")
    };
    let sub = payload::decode_member("me", None, &j.protocols[0].metadata).unwrap();
    assert!(
        sub.owned.is_empty(),
        "eager members own nothing when they rejoin"
    );
}

#[test]
fn a_cooperative_rebalance_revokes_only_what_moves_then_rejoins() {
    let mut m = membership(&[]);
    join(
        &mut m,
        "cooperative-sticky",
        &[tp("t", 0), tp("t", 1), tp("t", 2)],
    );
    request(&mut m, ms(500));
    m.handle_response(heartbeat(Some(ErrorCode::RebalanceInProgress)), ms(500));
    assert!(
        events(&mut m).is_empty(),
        "cooperative: nothing revoked up front"
    );
    let (_, r) = request(&mut m, ms(500));
    let GroupRequest::JoinGroup(j) = r else {
        panic!("{r:?}")
    };
    let sub = payload::decode_member("me", None, &j.protocols[1].metadata).unwrap();
    assert_eq!(
        sub.owned.len(),
        3,
        "owned partitions go into the subscription"
    );
    assert_eq!(sub.generation, 1);
    m.handle_response(joined("me", "other", 2, "cooperative-sticky"), ms(500));
    request(&mut m, ms(500));
    m.handle_response(synced(&[tp("t", 0), tp("t", 1)]), ms(500));
    assert_eq!(events(&mut m), [GroupEvent::Revoking(vec![tp("t", 2)])]);
    assert!(
        m.is_stable(),
        "still a member while revoking: commits are allowed"
    );
    m.revoked(ms(600));
    let (_, r) = request(&mut m, ms(600));
    assert!(
        matches!(r, GroupRequest::JoinGroup(_)),
        "the follow-up rebalance"
    );
    m.handle_response(joined("me", "other", 3, "cooperative-sticky"), ms(600));
    request(&mut m, ms(600));
    m.handle_response(synced(&[tp("t", 0), tp("t", 1)]), ms(600));
    assert!(events(&mut m).is_empty(), "nothing changes for us");
}

#[test]
fn an_illegal_generation_or_unknown_member_loses_the_partitions() {
    for (code, keeps_id) in [
        (ErrorCode::IllegalGeneration, true),
        (ErrorCode::UnknownMemberId, false),
    ] {
        let mut m = membership(&[]);
        join(&mut m, "range", &[tp("t", 0)]);
        request(&mut m, ms(500));
        m.handle_response(heartbeat(Some(code)), ms(500));
        assert_eq!(
            events(&mut m),
            [GroupEvent::Lost(vec![tp("t", 0)])],
            "{code}"
        );
        assert!(!m.is_stable(), "no commits after a loss");
        let (_, r) = request(&mut m, ms(500));
        let GroupRequest::JoinGroup(j) = r else {
            panic!("{r:?}")
        };
        assert_eq!(j.member_id == "me", keeps_id, "{code}");
    }
}

#[test]
fn a_rejoin_refused_as_unknown_member_loses_what_it_still_claimed() {
    let mut m = membership(&[]);
    join(&mut m, "cooperative-sticky", &[tp("t", 0), tp("t", 1)]);
    request(&mut m, ms(500));
    m.handle_response(heartbeat(Some(ErrorCode::RebalanceInProgress)), ms(500));
    let (_, r) = request(&mut m, ms(500));
    assert!(matches!(r, GroupRequest::JoinGroup(_)), "{r:?}");
    // The session expired meanwhile: the group went on without us.
    m.handle_response(join_error(ErrorCode::UnknownMemberId, "me"), ms(500));
    assert_eq!(
        events(&mut m),
        [GroupEvent::Lost(vec![tp("t", 0), tp("t", 1)])],
        "partitions the group gave away are lost, not kept"
    );
    let (_, r) = request(&mut m, ms(500));
    let GroupRequest::JoinGroup(j) = r else {
        panic!("{r:?}")
    };
    assert_eq!(j.member_id, "", "joins as a new member");
    let sub = payload::decode_member("new", None, &j.protocols[1].metadata).unwrap();
    assert!(sub.owned.is_empty(), "claims nothing: {:?}", sub.owned);
    assert_eq!(sub.generation, -1);
}

#[test]
fn sync_errors_rejoin() {
    for (code, lost) in [
        (ErrorCode::RebalanceInProgress, false),
        (ErrorCode::IllegalGeneration, false),
        (ErrorCode::UnknownMemberId, false),
        (ErrorCode::NotCoordinator, false),
    ] {
        let mut m = membership(&[]);
        m.subscribe(vec!["t".into()], ms(0));
        request(&mut m, ms(0));
        m.handle_response(found(1), ms(0));
        request(&mut m, ms(0));
        m.handle_response(joined("me", "other", 1, "range"), ms(0));
        request(&mut m, ms(0));
        m.handle_response(sync_error(code), ms(0));
        assert_eq!(events(&mut m).is_empty(), !lost);
        let mut next = request(&mut m, ms(0)).1;
        if code == ErrorCode::NotCoordinator {
            assert!(matches!(next, GroupRequest::FindCoordinator(_)), "{code}");
            m.handle_response(found(2), ms(0));
            next = request(&mut m, ms(0)).1;
        }
        assert!(
            matches!(next, GroupRequest::JoinGroup(_)),
            "{code}: {next:?}"
        );
    }
}

#[test]
fn a_moved_coordinator_is_found_again_and_heartbeats_resume() {
    let mut m = membership(&[]);
    join(&mut m, "range", &[tp("t", 0)]);
    request(&mut m, ms(500));
    m.handle_response(heartbeat(Some(ErrorCode::NotCoordinator)), ms(500));
    let (to, r) = request(&mut m, ms(500));
    assert_eq!(to, Target::AnyNode);
    assert!(matches!(r, GroupRequest::FindCoordinator(_)));
    m.handle_response(found(9), ms(510));
    let (to, r) = request(&mut m, ms(510));
    assert_eq!(to, Target::Coordinator(9));
    assert!(
        matches!(r, GroupRequest::Heartbeat(_)),
        "the membership is still valid"
    );
    assert!(events(&mut m).is_empty());
}

#[test]
fn a_disconnect_mid_join_finds_the_coordinator_and_joins_again() {
    let mut m = membership(&[]);
    m.subscribe(vec!["t".into()], ms(0));
    request(&mut m, ms(0));
    m.handle_response(found(1), ms(0));
    request(&mut m, ms(0));
    m.handle_failure(ms(10));
    assert!(matches!(
        request(&mut m, ms(10)).1,
        GroupRequest::FindCoordinator(_)
    ));
    m.handle_failure(ms(20)); // FindCoordinator failed too: back off
    assert!(m.poll_request(ms(20)).is_none());
    let retry = m.poll_timeout().unwrap();
    assert!(retry > ms(20) && retry <= ms(20 + 120), "{retry:?}");
    assert!(matches!(
        request(&mut m, retry).1,
        GroupRequest::FindCoordinator(_)
    ));
    m.handle_response(found(1), retry);
    assert!(matches!(
        request(&mut m, retry).1,
        GroupRequest::JoinGroup(_)
    ));
}

#[test]
fn a_loading_coordinator_is_retried_with_backoff() {
    let mut m = membership(&[]);
    m.subscribe(vec!["t".into()], ms(0));
    request(&mut m, ms(0));
    m.handle_response(found(1), ms(0));
    request(&mut m, ms(0));
    m.handle_response(join_error(ErrorCode::CoordinatorLoadInProgress, ""), ms(0));
    assert!(m.poll_request(ms(0)).is_none(), "backs off");
    let at = m.poll_timeout().unwrap();
    assert!(matches!(request(&mut m, at).1, GroupRequest::JoinGroup(_)));
}

#[test]
fn a_fenced_static_member_stops_for_good() {
    let mut m = membership(&[("group.instance.id", "i-1")]);
    join(&mut m, "range", &[tp("t", 0)]);
    request(&mut m, ms(500));
    m.handle_response(heartbeat(Some(ErrorCode::FencedInstanceId)), ms(500));
    assert_eq!(
        events(&mut m),
        [
            GroupEvent::Lost(vec![tp("t", 0)]),
            GroupEvent::Fatal(ErrorCode::FencedInstanceId)
        ]
    );
    assert!(m.poll_request(ms(10_000)).is_none());
    assert_eq!(m.poll_timeout(), None);
}

#[test]
fn an_expired_session_finds_the_coordinator_again() {
    let mut m = membership(&[]);
    join(&mut m, "range", &[tp("t", 0)]);
    request(&mut m, ms(500));
    m.handle_failure(ms(600)); // the heartbeat's connection died
    assert!(matches!(
        request(&mut m, ms(600)).1,
        GroupRequest::FindCoordinator(_)
    ));
    // The coordinator is back, but heartbeats time out for a whole session.
    m.handle_response(found(1), ms(700));
    m.handle_timeout(ms(2699));
    assert!(m.coordinator().is_some());
    m.handle_timeout(ms(2700));
    assert!(
        m.coordinator().is_none(),
        "session.timeout.ms without a heartbeat"
    );
}

#[test]
fn an_application_that_stops_polling_leaves_and_rejoins_when_it_polls_again() {
    let mut m = membership(&[]);
    join(&mut m, "range", &[tp("t", 0)]);
    let mut now = 500;
    loop {
        // A driver calls handle_timeout at poll_timeout: the poll deadline is one of them.
        assert!(m.poll_timeout().is_some_and(|t| t <= ms(10_001)));
        m.handle_timeout(ms(now));
        let (_, r) = request(&mut m, ms(now));
        match r {
            GroupRequest::Heartbeat(_) => m.handle_response(heartbeat(None), ms(now)),
            GroupRequest::LeaveGroup(l) => {
                assert_eq!(l.members[0].member_id, "me");
                break;
            }
            other => panic!("{other:?}"),
        }
        now += 500;
    }
    assert!(
        now > 10_000 && now <= 10_500,
        "left at max.poll.interval.ms: {now}"
    );
    assert_eq!(events(&mut m), [GroupEvent::Lost(vec![tp("t", 0)])]);
    m.handle_response(
        ResponseBody::LeaveGroup(LeaveGroupResponse::default()),
        ms(now),
    );
    assert_eq!(
        events(&mut m),
        [],
        "not `Left`: the application did not ask to leave"
    );
    assert!(
        m.poll_request(ms(now + 1000)).is_none(),
        "out until the next poll"
    );
    m.polled(ms(now + 2000));
    let (_, r) = request(&mut m, ms(now + 2000));
    let GroupRequest::JoinGroup(j) = r else {
        panic!("{r:?}")
    };
    assert_eq!(j.member_id, "", "a new member");
}

#[test]
fn dynamic_members_leave_and_static_members_do_not() {
    let mut m = membership(&[]);
    join(&mut m, "range", &[tp("t", 0)]);
    m.leave(ms(100));
    let (_, r) = request(&mut m, ms(100));
    assert!(matches!(r, GroupRequest::LeaveGroup(ref l) if l.member_id == "me"));
    m.handle_response(
        ResponseBody::LeaveGroup(LeaveGroupResponse::default()),
        ms(110),
    );
    assert_eq!(events(&mut m), [GroupEvent::Left]);

    let mut m = membership(&[("group.instance.id", "i-1")]);
    join(&mut m, "range", &[tp("t", 0)]);
    m.leave(ms(100));
    assert!(
        m.poll_request(ms(100)).is_none(),
        "a static member keeps its session"
    );
    assert_eq!(events(&mut m), [GroupEvent::Left]);
    let _ = Duration::ZERO;
}

/// `client.rack` travels in the subscription's rack field (v3), for the leader's assignor;
/// without it the field is null.
#[test]
fn the_subscription_carries_the_rack() {
    use kafka_proto::consumer_protocol::{ConsumerPayload as _, ConsumerProtocolSubscription};
    for (settings, want) in [
        (&[("client.rack", "rack-2")][..], Some("rack-2")),
        (&[][..], None),
    ] {
        let mut m = membership(settings);
        m.subscribe(vec!["t".into()], ms(0));
        request(&mut m, ms(0));
        m.handle_response(found(7), ms(0));
        let (_, r) = request(&mut m, ms(0));
        let GroupRequest::JoinGroup(j) = r else {
            panic!("{r:?}")
        };
        for p in &j.protocols {
            let (_, sub) = ConsumerProtocolSubscription::decode_payload(&p.metadata).unwrap();
            assert_eq!(sub.rack_id.as_deref(), want, "{}", p.name);
        }
    }
}
