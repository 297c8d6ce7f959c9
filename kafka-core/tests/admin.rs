//! The admin client's state machine in virtual time, against a scripted broker: every
//! operation ends within `default.api.timeout.ms`, even with its request still in flight, and
//! retriable answers are retried until it.

use kafka_core::net::Machine as _;
use std::collections::BTreeMap;

use kafka_core::admin::{Admin, AdminError, AdminEvent, AdminResult, NewTopic};
use kafka_core::config::AdminConfig;
use kafka_core::net::{ConnId, Output, Transmit};
use kafka_core::Instant;
use kafka_sim::proto::api::{RequestBody, ResponseBody};
use kafka_sim::proto::messages::create_topics_response::{
    CreatableTopicResult, CreateTopicsResponse,
};
use kafka_sim::proto::messages::delete_topics_response::{
    DeletableTopicResult, DeleteTopicsResponse,
};
use kafka_sim::proto::messages::metadata_response::{MetadataResponse, MetadataResponseBroker};
use kafka_sim::proto::ErrorCode;
use kafka_sim::{Reply, ScriptedBroker, SimTime};

fn sim(t: Instant) -> SimTime {
    SimTime::from_nanos(t.as_nanos())
}

/// A one-broker cluster whose CreateTopics answers come from `create`.
fn broker(create: fn(usize) -> Reply) -> ScriptedBroker {
    let mut creates = 0;
    ScriptedBroker::new(move |_, body| match body {
        RequestBody::Metadata(_) => Reply::Respond(ResponseBody::Metadata(MetadataResponse {
            brokers: vec![MetadataResponseBroker {
                node_id: 1,
                host: "broker".into(),
                port: 9092,
                ..Default::default()
            }],
            controller_id: 1,
            ..Default::default()
        })),
        RequestBody::CreateTopics(_) => {
            creates += 1;
            create(creates)
        }
        // Deleting: the controller knows no topic but "new".
        RequestBody::DeleteTopics(req) => {
            Reply::Respond(ResponseBody::DeleteTopics(DeleteTopicsResponse {
                responses: (req.topics.iter())
                    .map(|t| DeletableTopicResult {
                        name: t.name.clone(),
                        error_code: if t.name.as_deref() == Some("new") {
                            0
                        } else {
                            ErrorCode::UnknownTopicOrPartition.code()
                        },
                        ..Default::default()
                    })
                    .collect(),
                ..Default::default()
            }))
        }
        other => panic!("{other:?}"),
    })
}

fn created(code: Option<ErrorCode>) -> Reply {
    Reply::Respond(ResponseBody::CreateTopics(CreateTopicsResponse {
        topics: vec![CreatableTopicResult {
            name: "new".into(),
            error_code: code.map_or(0, ErrorCode::code),
            ..Default::default()
        }],
        ..Default::default()
    }))
}

/// Runs `admin` against one scripted broker per connection until `until`; returns its events
/// with the time each came out.
fn run(
    admin: &mut Admin,
    make: fn() -> ScriptedBroker,
    until: Instant,
) -> Vec<(Instant, AdminEvent)> {
    let mut brokers: BTreeMap<ConnId, ScriptedBroker> = BTreeMap::new();
    let mut now = Instant::ZERO;
    let mut events = Vec::new();
    // Wake-ups asked for at a time already handled: a few are normal, endless ones are a
    // busy loop (a deadline the client never acts on).
    let mut stuck = 0;
    loop {
        while let Some(o) = admin.poll_output() {
            match o {
                Output::Transmit(Transmit::Connect { conn, .. }) => {
                    brokers.insert(conn, make());
                    admin.handle_connected(conn, now);
                }
                Output::Transmit(Transmit::Send { conn, bytes }) => {
                    let b = brokers.get_mut(&conn).expect("connected");
                    let out = b.receive(&bytes).expect("well-formed requests");
                    if !out.bytes.is_empty() {
                        admin.handle_received(conn, &out.bytes, now);
                    }
                }
                Output::Transmit(Transmit::Close { conn }) => {
                    brokers.remove(&conn);
                }
                Output::Event(e) => events.push((now, e)),
                _ => {}
            }
        }
        let next = brokers
            .values()
            .filter_map(|b| b.next_due())
            .map(|t| Instant::from_nanos(t.as_nanos() as u64))
            .chain(admin.poll_timeout())
            .min();
        let Some(next) = next.filter(|t| *t <= until) else {
            return events;
        };
        stuck = if next <= now { stuck + 1 } else { 0 };
        assert!(
            stuck < 1000,
            "the admin client asks to be woken at {next:?} again and again, and does nothing then"
        );
        now = now.max(next);
        for (conn, b) in brokers.iter_mut() {
            let out = b.advance(sim(now));
            if !out.bytes.is_empty() {
                admin.handle_received(*conn, &out.bytes, now);
            }
        }
        admin.handle_timeout(now);
    }
}

fn admin() -> Admin {
    Admin::new(
        AdminConfig::from_map([
            ("bootstrap.servers", "broker:9092"),
            ("request.timeout.ms", "30000"),
            ("default.api.timeout.ms", "5000"),
            ("retry.backoff.ms", "100"),
        ])
        .unwrap(),
    )
}

/// An operation whose request is never answered did not end at its `default.api.timeout.ms`
/// (5 s) but asked to be woken at that deadline again and again, doing nothing, until
/// `request.timeout.ms` (30 s here): a busy loop in the driver, and a caller waiting six times
/// as long as it asked. It ends at its deadline now, with a timeout error.
#[test]
fn an_unanswered_operation_ends_at_default_api_timeout_not_request_timeout() {
    let mut a = admin();
    a.create_topics(vec![NewTopic::new("new", 1)], Instant::ZERO);
    let events = run(
        &mut a,
        || broker(|_| Reply::Ignore),
        Instant::from_millis(60_000),
    );
    assert_eq!(events.len(), 1, "{events:?}");
    let (at, e) = &events[0];
    assert_eq!(
        *at,
        Instant::from_millis(5000),
        "at the operation's deadline"
    );
    match &e.result {
        AdminResult::Topics(r) => {
            assert!(matches!(r[0].1, Err(AdminError::Timeout { .. })), "{r:?}")
        }
        other => panic!("{other:?}"),
    }
}

/// Retriable answers are retried after the backoff, and the success that follows is reported;
/// an error that retrying cannot fix is reported at once.
#[test]
fn retriable_answers_are_retried_and_final_ones_reported() {
    let mut a = admin();
    a.create_topics(vec![NewTopic::new("new", 1)], Instant::ZERO);
    let events = run(
        &mut a,
        || {
            broker(|n| match n {
                1 | 2 => created(Some(ErrorCode::RequestTimedOut)),
                _ => created(None),
            })
        },
        Instant::from_millis(60_000),
    );
    assert_eq!(events.len(), 1, "{events:?}");
    assert_eq!(
        events[0].1.result,
        AdminResult::Topics(vec![("new".into(), Ok(()))])
    );
    assert!(events[0].0 >= Instant::from_millis(200), "two backoffs");

    let mut a = admin();
    a.create_topics(vec![NewTopic::new("new", 1)], Instant::ZERO);
    let events = run(
        &mut a,
        || broker(|_| created(Some(ErrorCode::TopicAlreadyExists))),
        Instant::from_millis(60_000),
    );
    match &events[..] {
        [(at, e)] => {
            assert_eq!(*at, Instant::ZERO);
            assert!(
                matches!(
                    &e.result,
                    AdminResult::Topics(r) if matches!(r[0].1, Err(AdminError::Broker { code: ErrorCode::TopicAlreadyExists, .. }))
                ),
                "{e:?}"
            );
        }
        other => panic!("{other:?}"),
    }
}

/// Deleting a topic that does not exist fails that topic at once with
/// UNKNOWN_TOPIC_OR_PARTITION, as Java does, instead of retrying until the timeout and then
/// blaming reachability; the other topics of the call are deleted.
#[test]
fn deleting_a_missing_topic_fails_it_at_once() {
    let mut a = admin();
    a.delete_topics(vec!["new".into(), "missing".into()], Instant::ZERO);
    let events = run(
        &mut a,
        || broker(|_| created(None)),
        Instant::from_millis(60_000),
    );
    let [(at, e)] = &events[..] else {
        panic!("{events:?}")
    };
    assert_eq!(*at, Instant::ZERO, "answered at once");
    let AdminResult::Topics(r) = &e.result else {
        panic!("{e:?}")
    };
    let by_name: BTreeMap<&str, &Result<(), AdminError>> =
        r.iter().map(|(n, res)| (n.as_str(), res)).collect();
    assert_eq!(by_name["new"], &Ok(()));
    assert!(
        matches!(
            by_name["missing"],
            Err(AdminError::Broker {
                code: ErrorCode::UnknownTopicOrPartition,
                ..
            })
        ),
        "{r:?}"
    );
}
