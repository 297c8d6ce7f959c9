//! The connection manager in virtual time, against scripted brokers.

use kafka_core::net::Machine as _;
use std::collections::BTreeMap;
use std::time::Duration;

use kafka_core::backoff::Backoff;
use kafka_core::config::HostPort;
use kafka_core::net::{
    ConnId, ConnectError, Expect, NetConfig, NetEvent, Network, Purpose, RequestError, Transmit,
};
use kafka_core::Instant;
use kafka_sim::proto::api::{Request, RequestBody, ResponseBody};
use kafka_sim::proto::messages::metadata_request::MetadataRequest;
use kafka_sim::proto::messages::metadata_response::MetadataResponse;
use kafka_sim::{Reply, ScriptedBroker};

type Factory = Box<dyn FnMut(&HostPort) -> Option<ScriptedBroker>>;

/// Plays the adapter: opens scripted brokers for Connect, carries bytes both ways at once.
struct Harness {
    net: Network<u32>,
    now: Instant,
    brokers: BTreeMap<ConnId, ScriptedBroker>,
    factory: Factory,
    log: Vec<Transmit>,
    events: Vec<NetEvent<u32>>,
    /// Addresses whose connects never complete (a vanished host).
    hang: std::collections::BTreeSet<String>,
    /// Every request the brokers received, in order (closed connections' too).
    broker_requests: Vec<RequestBody>,
}

fn cfg(seed: u64) -> NetConfig {
    NetConfig {
        kind: "test",
        client_id: "test".into(),
        request_timeout: Duration::from_secs(30),
        setup_timeout: Backoff::new(Duration::from_secs(10), Duration::from_secs(30)),
        reconnect: Backoff::new(Duration::from_millis(50), Duration::from_millis(1000)),
        max_idle: Duration::from_secs(540),
        max_in_flight: 5,
        seed,
        security: Default::default(),
        metrics_window: Default::default(),
        metrics_push: true,
        rebootstrap: true,
        rebootstrap_trigger: Duration::from_secs(300),
        cluster_check: true,
    }
}

fn hp(s: &str) -> HostPort {
    HostPort::parse(s).unwrap()
}

fn metadata_ok(_: &kafka_sim::proto::RequestHeader, body: &RequestBody) -> Reply {
    match body {
        RequestBody::Metadata(_) => {
            Reply::Respond(ResponseBody::Metadata(MetadataResponse::default()))
        }
        other => panic!("unexpected {other:?}"),
    }
}

impl Harness {
    fn new(seed: u64, bootstrap: &[&str], factory: Factory) -> Self {
        Harness {
            net: Network::new(cfg(seed), bootstrap.iter().map(|s| hp(s)).collect()),
            now: Instant::ZERO,
            brokers: BTreeMap::new(),
            factory,
            log: Vec::new(),
            events: Vec::new(),
            hang: Default::default(),
            broker_requests: Vec::new(),
        }
    }

    fn pump(&mut self) {
        while let Some(t) = self.net.poll_transmit() {
            self.log.push(t.clone());
            match t {
                Transmit::Connect { addr, .. } if self.hang.contains(&addr.to_string()) => {}
                Transmit::Connect { conn, addr } => match (self.factory)(&addr) {
                    Some(b) => {
                        self.brokers.insert(conn, b);
                        self.net.handle_connected(conn, self.now);
                    }
                    None => self
                        .net
                        .handle_connect_failed(conn, ConnectError::Refused, self.now),
                },
                Transmit::Send { conn, bytes } => {
                    let b = self.brokers.get_mut(&conn).expect("open");
                    let before = b.requests().len();
                    let out = b.receive(&bytes).unwrap();
                    (self.broker_requests)
                        .extend(b.requests()[before..].iter().map(|r| r.1.clone()));
                    if !out.bytes.is_empty() {
                        self.net.handle_received(conn, &out.bytes, self.now);
                    }
                    if out.closed {
                        self.brokers.remove(&conn);
                        self.net.handle_closed(conn, self.now);
                    }
                }
                Transmit::Close { conn } => {
                    self.brokers.remove(&conn);
                }
                _ => unreachable!("a variant this test does not know"),
            }
        }
        while let Some(e) = self.net.poll_event() {
            self.events.push(e);
        }
    }

    /// Moves virtual time to `t` (never backwards), firing timeouts on the way.
    fn advance_to(&mut self, t: Instant) {
        while let Some(next) = self.net.poll_timeout().filter(|n| *n <= t) {
            self.now = self.now.max(next);
            self.net.handle_timeout(self.now);
            self.pump();
        }
        self.now = self.now.max(t);
        self.net.handle_timeout(self.now);
        self.pump();
    }

    fn connects(&self) -> Vec<(ConnId, String)> {
        self.log
            .iter()
            .filter_map(|t| match t {
                Transmit::Connect { conn, addr } => Some((*conn, addr.to_string())),
                _ => None,
            })
            .collect()
    }

    fn closes(&self) -> Vec<ConnId> {
        self.log
            .iter()
            .filter_map(|t| match t {
                Transmit::Close { conn } => Some(*conn),
                _ => None,
            })
            .collect()
    }

    /// Connects node 2's data connection and its second lane, sends a Metadata request on
    /// each (the lane's a second later) and lets the data connection's time out (node 2's
    /// broker must leave them unanswered). Returns the lane, closed with it.
    fn time_out_node_2_with_its_lane(&mut self) -> ConnId {
        let mut ready = |purpose| {
            for _ in 0..3 {
                if let Some(c) = self.net.ready(2, purpose, self.now) {
                    return c;
                }
                self.pump();
            }
            panic!("node 2 not ready on {purpose:?}");
        };
        let data = ready(Purpose::Data);
        let lane = ready(Purpose::Lane(1));
        self.net
            .send(data, &MetadataRequest::default(), 1, self.now)
            .unwrap();
        self.pump();
        self.advance_to(Instant::from_millis(1_000));
        self.net
            .send(lane, &MetadataRequest::default(), 2, self.now)
            .unwrap();
        self.pump();
        self.advance_to(Instant::from_millis(30_000));
        assert_eq!(self.closes(), [data, lane], "the request timed out");
        lane
    }

    /// Gets a ready least-loaded connection, connecting as needed.
    fn least_loaded(&mut self) -> ConnId {
        self.try_least_loaded(3)
            .unwrap_or_else(|| panic!("no connection became ready: {:?}", self.log))
    }

    /// Asks for a least-loaded connection up to `tries` times, carrying bytes between.
    fn try_least_loaded(&mut self, tries: usize) -> Option<ConnId> {
        for _ in 0..tries {
            if let Some(c) = self.net.least_loaded(self.now) {
                return Some(c);
            }
            self.pump();
        }
        None
    }
}

#[test]
fn nothing_connects_until_a_request_needs_it() {
    let mut h = Harness::new(
        1,
        &["a:1", "b:2"],
        Box::new(|_| Some(ScriptedBroker::new(metadata_ok))),
    );
    h.pump();
    h.advance_to(Instant::from_millis(60_000));
    assert!(h.log.is_empty());
    assert_eq!(h.net.poll_timeout(), None);
    h.least_loaded();
    assert_eq!(h.connects().len(), 1);
}

#[test]
fn bootstrap_tries_one_server_at_a_time_in_seeded_random_order() {
    let order = |seed| {
        let mut h = Harness::new(seed, &["a:1", "b:2", "c:3", "d:4"], Box::new(|_| None));
        for _ in 0..4 {
            assert!(h.net.least_loaded(h.now).is_none());
            let before = h.connects().len();
            h.pump();
            assert_eq!(
                h.connects().len(),
                before + 1,
                "exactly one attempt at a time"
            );
            // Wait out the reconnect backoff, then ask again.
            let t = h.net.poll_timeout().unwrap();
            h.advance_to(t);
        }
        h.connects().into_iter().map(|c| c.1).collect::<Vec<_>>()
    };
    let first = order(1);
    let mut sorted = first.clone();
    sorted.sort();
    assert_eq!(
        sorted,
        ["a:1", "b:2", "c:3", "d:4"],
        "each server once per round"
    );
    assert_eq!(order(1), first, "same seed, same order");
    assert!(
        (2..30).any(|s| order(s) != first),
        "the order depends on the seed"
    );
}

#[test]
fn api_versions_falls_back_to_the_brokers_highest_and_then_negotiates() {
    // Like librdkafka's mock cluster: ApiVersions 0-2, Metadata up to 12, Produce up to 10.
    let mut h = Harness::new(
        1,
        &["a:1"],
        Box::new(|_| {
            Some(ScriptedBroker::new(metadata_ok).with_versions(vec![
                (3, 0, 12),
                (18, 0, 2),
                (0, 0, 10),
            ]))
        }),
    );
    let conn = h.least_loaded();
    let api_versions_sent: Vec<i16> = h.brokers[&conn]
        .requests()
        .iter()
        .map(|(hdr, _)| hdr.api_version)
        .collect();
    assert_eq!(
        api_versions_sent,
        [5, 2],
        "v5 refused, retried at the broker's v2"
    );
    assert_eq!(
        h.net.version(conn, kafka_sim::proto::ApiKey::Metadata),
        Some(12)
    );
    assert_eq!(
        h.net.version(conn, kafka_sim::proto::ApiKey::Produce),
        Some(10)
    );
    let v = h
        .net
        .send(conn, &MetadataRequest::default(), 7, h.now)
        .unwrap();
    assert_eq!(v, 12);
    h.pump();
    assert!(matches!(
        &h.events[..],
        [NetEvent::Response {
            tag: 7,
            version: 12,
            ..
        }]
    ));
}

#[test]
fn a_bootstrap_connection_is_adopted_by_its_node_or_closed() {
    let factory = || -> Factory { Box::new(|_| Some(ScriptedBroker::new(metadata_ok))) };
    // Adopted: the bootstrap address is node 1's.
    let mut h = Harness::new(1, &["a:1"], factory());
    let boot = h.least_loaded();
    h.net.update_nodes([(1, hp("a:1")), (2, hp("b:2"))], h.now);
    assert_eq!(h.net.ready(1, Purpose::Data, h.now), Some(boot));
    h.pump();
    assert_eq!(h.connects().len(), 1, "no second data connection to node 1");
    assert!(h.closes().is_empty());
    // A coordinator connection to the same node is separate.
    assert_eq!(h.net.ready(1, Purpose::Coordinator, h.now), None);
    h.pump();
    assert_eq!(h.connects().len(), 2);

    // Not adopted: no node has the bootstrap address; it is closed, not left as a zombie.
    let mut h = Harness::new(1, &["bootstrap:9"], factory());
    let boot = h.least_loaded();
    h.net.update_nodes([(1, hp("a:1"))], h.now);
    h.pump();
    assert_eq!(h.closes(), [boot]);
    assert!(h.net.least_loaded(h.now).is_none());
    h.pump();
    assert_eq!(h.connects().last().unwrap().1, "a:1");
}

#[test]
fn request_timeout_closes_the_connection_and_fails_the_request() {
    let mut h = Harness::new(
        1,
        &["a:1"],
        Box::new(|_| {
            Some(ScriptedBroker::new(|_, body| match body {
                RequestBody::Metadata(_) => Reply::Ignore,
                other => panic!("{other:?}"),
            }))
        }),
    );
    let conn = h.least_loaded();
    h.net
        .send(conn, &MetadataRequest::default(), 1, h.now)
        .unwrap();
    h.pump();
    h.advance_to(Instant::from_millis(29_999));
    assert!(h.events.is_empty() && h.closes().is_empty());
    h.advance_to(Instant::from_millis(30_000));
    assert_eq!(h.closes(), [conn]);
    assert!(matches!(
        &h.events[..],
        [NetEvent::Failed {
            tag: 1,
            error: RequestError::TimedOut { .. },
            ..
        }]
    ));
}

#[test]
fn idle_connections_are_closed_by_the_client() {
    let mut h = Harness::new(
        1,
        &["a:1"],
        Box::new(|_| Some(ScriptedBroker::new(metadata_ok))),
    );
    let conn = h.least_loaded();
    h.advance_to(Instant::from_millis(539_999));
    assert!(h.closes().is_empty());
    h.advance_to(Instant::from_millis(540_000));
    assert_eq!(h.closes(), [conn]);
}

#[test]
fn throttled_responses_mute_the_connection() {
    let mut h = Harness::new(
        1,
        &["a:1"],
        Box::new(|_| {
            Some(ScriptedBroker::new(|_, _| {
                Reply::Respond(ResponseBody::Metadata(MetadataResponse {
                    throttle_time_ms: 100,
                    ..Default::default()
                }))
            }))
        }),
    );
    let conn = h.least_loaded();
    h.net.update_nodes([(1, hp("a:1"))], h.now);
    h.net
        .send(conn, &MetadataRequest::default(), 1, h.now)
        .unwrap();
    h.pump();
    assert_eq!(
        h.net.ready(1, Purpose::Data, h.now),
        None,
        "muted for 100 ms"
    );
    h.advance_to(Instant::from_millis(99));
    assert_eq!(h.net.ready(1, Purpose::Data, h.now), None);
    h.advance_to(Instant::from_millis(100));
    assert_eq!(h.net.ready(1, Purpose::Data, h.now), Some(conn));
}

#[test]
fn reconnect_backoff_grows_exponentially_within_jitter_bounds() {
    let mut h = Harness::new(3, &["a:1"], Box::new(|_| None));
    let mut waits = Vec::new();
    for _ in 0..7 {
        assert!(h.net.least_loaded(h.now).is_none());
        h.pump();
        let retry = h.net.poll_timeout().expect("a retry is scheduled");
        waits.push((retry - h.now).as_millis() as u64);
        h.advance_to(retry);
    }
    let nominal = [50, 100, 200, 400, 800, 1000, 1000];
    for (w, n) in waits.iter().zip(nominal) {
        assert!(*w >= n * 8 / 10 && *w <= n * 12 / 10, "{waits:?}");
    }
    assert_ne!(waits[5], waits[6], "jittered, not fixed: {waits:?}");
}

#[test]
fn connection_setup_timeout_counts_as_a_failure() {
    // The adapter never reports back: the setup deadline (10 s ± 20%) closes the attempt.
    let mut h = Harness::new(1, &["a:1"], Box::new(|_| None));
    assert!(h.net.least_loaded(h.now).is_none());
    let t = h.net.poll_transmit().unwrap();
    let Transmit::Connect { conn, .. } = t else {
        panic!("{t:?}")
    };
    // First the client's own wake-up after a second (to try another node, were there one).
    let patience = h.net.poll_timeout().unwrap();
    assert_eq!(patience, Instant::from_millis(1000));
    h.advance_to(patience);
    assert!(h.closes().is_empty());
    let deadline = h.net.poll_timeout().unwrap();
    let ms = deadline.as_nanos() / 1_000_000;
    assert!((8_000..=12_000).contains(&ms), "{ms}");
    h.advance_to(deadline);
    assert_eq!(h.closes(), [conn]);
}

/// A request timed out on one of a broker's connections: its other connections (lanes of
/// `connections.per.broker`) are not trusted with the next metadata request while another
/// broker can be reached, since a broker that stopped answering one connection has most likely
/// stopped answering all of them (found by the simulation, seed 2997: the retry waited out a
/// second request timeout on the vanished broker's second lane). Its lanes closed with the
/// connection that timed out, so none is handed out even when nothing else answers.
#[test]
fn a_broker_that_timed_out_a_request_is_not_asked_again_while_another_answers() {
    let run = |other_refuses: bool| {
        let mut h = Harness::new(
            1,
            &["a:1"],
            Box::new(move |addr| match addr.to_string().as_str() {
                "b:2" => Some(ScriptedBroker::new(|_, body| match body {
                    RequestBody::Metadata(_) => Reply::Ignore,
                    other => panic!("{other:?}"),
                })),
                _ if other_refuses => None,
                _ => Some(ScriptedBroker::new(metadata_ok)),
            }),
        );
        h.net.update_nodes([(1, hp("a:1")), (2, hp("b:2"))], h.now);
        let lane = h.time_out_node_2_with_its_lane();
        (h.try_least_loaded(3), lane, h.connects())
    };
    let (got, lane, connects) = run(false);
    let (id, addr) = connects.last().unwrap().clone();
    assert_eq!(addr, "a:1", "{connects:?}");
    assert_eq!(
        got,
        Some(id),
        "the other broker's new connection, not {lane:?}"
    );
    let (got, lane, connects) = run(true);
    assert_ne!(
        got,
        Some(lane),
        "the lane closed with its sibling: {connects:?}"
    );
}

/// The last metadata named one broker (the others were down then), and it timed a request
/// out. Its other lane is ready, but a broker that stopped answering one connection has most
/// likely stopped answering all of them: the client starts over from bootstrap.servers first
/// (KIP-899's rebootstrap), with an address not under suspicion, and reaches a broker that came
/// back (found by the API simulation, seed 733: the metadata went to the vanished broker's
/// second lane and waited out another request timeout).
#[test]
fn a_client_whose_only_known_broker_timed_out_starts_over_before_asking_its_other_lane() {
    let mut h = Harness::new(
        1,
        &["b:2", "a:1"],
        Box::new(|addr| match addr.to_string().as_str() {
            "b:2" => Some(ScriptedBroker::new(|_, _| Reply::Ignore)),
            _ => Some(ScriptedBroker::new(metadata_ok)),
        }),
    );
    h.net.update_nodes([(2, hp("b:2"))], h.now);
    let lane = h.time_out_node_2_with_its_lane();
    let got = h.try_least_loaded(3);
    let connects = h.connects();
    let (id, addr) = connects.last().unwrap().clone();
    assert_eq!(
        addr, "a:1",
        "the bootstrap address not under suspicion: {connects:?}"
    );
    assert_eq!(got, Some(id), "its new connection, not {lane:?}");
}

/// The last metadata named one broker (the others were down then), and it vanished: its
/// connects hang until the setup timeout. The client does not wait that out: after a second it
/// starts over from bootstrap.servers and reaches a broker that came back (KIP-899's
/// rebootstrap, Java 4.x's default; found by the simulation, seeds 466 and 1277).
#[test]
fn a_client_whose_known_brokers_all_vanished_starts_over_from_bootstrap() {
    let mut h = Harness::new(
        1,
        &["a:1", "b:2"],
        Box::new(|_| Some(ScriptedBroker::new(metadata_ok))),
    );
    h.hang.insert("b:2".into());
    h.net.update_nodes([(2, hp("b:2"))], h.now);
    assert!(h.net.least_loaded(h.now).is_none());
    h.pump();
    assert_eq!(h.connects().len(), 1, "{:?}", h.connects());
    // Nothing answers; the client's own timer brings it back after a second.
    let wake = h.net.poll_timeout().expect("a wake-up");
    assert!(wake <= Instant::from_millis(1000), "{wake:?}");
    h.advance_to(wake);
    let got = h.try_least_loaded(4);
    assert!(got.is_some(), "{:?}", h.connects());
    assert_eq!(h.connects().last().unwrap().1, "a:1");
    assert!(
        h.now < Instant::from_millis(2000),
        "well before the 10 s setup timeout"
    );

    // With metadata.recovery.strategy=none it waits on the known broker.
    let mut c = cfg(1);
    c.rebootstrap = false;
    let mut h2 = Harness::new(
        1,
        &["a:1", "b:2"],
        Box::new(|_| Some(ScriptedBroker::new(metadata_ok))),
    );
    h2.net = Network::new(c, vec![hp("a:1"), hp("b:2")]);
    h2.hang.insert("b:2".into());
    h2.net.update_nodes([(2, hp("b:2"))], h2.now);
    assert!(h2.net.least_loaded(h2.now).is_none());
    h2.pump();
    h2.advance_to(Instant::from_millis(1500));
    assert!(h2.net.least_loaded(h2.now).is_none());
    h2.pump();
    assert!(
        h2.connects().iter().all(|c| c.1 == "b:2"),
        "{:?}",
        h2.connects()
    );
}

/// KIP-1102: the known broker takes connections but answers no Metadata request (say its
/// metadata is wedged), with request.timeout.ms far longer than
/// metadata.recovery.rebootstrap.trigger.ms. After the trigger the client starts over from
/// bootstrap.servers, without waiting out the request; a good answer stops the count.
#[test]
fn a_client_without_metadata_for_the_trigger_starts_over_from_bootstrap() {
    let mut c = cfg(1);
    c.request_timeout = Duration::from_secs(120);
    c.rebootstrap_trigger = Duration::from_secs(5);
    let mut h = Harness::new(
        1,
        &["a:1"],
        Box::new(|addr| match addr.to_string().as_str() {
            "b:2" => Some(ScriptedBroker::new(|_, _| Reply::Ignore)),
            _ => Some(ScriptedBroker::new(metadata_ok)),
        }),
    );
    h.net = Network::new(c, vec![hp("a:1")]);
    // A good answer from the seed: no count.
    let seed = h.least_loaded();
    h.net
        .send(seed, &MetadataRequest::default(), 1, h.now)
        .unwrap();
    h.pump();
    assert_eq!(
        h.net
            .poll_timeout()
            .filter(|t| *t <= Instant::from_millis(5_000)),
        None
    );
    // Metadata named b:2, which never answers.
    h.net.update_nodes([(2, hp("b:2"))], h.now);
    let b = h.least_loaded();
    assert_eq!(h.connects().last().unwrap().1, "b:2");
    h.net
        .send(b, &MetadataRequest::default(), 2, h.now)
        .unwrap();
    h.pump();
    h.advance_to(Instant::from_millis(4_900));
    assert_eq!(h.net.least_loaded(h.now), Some(b), "still counting");
    h.advance_to(Instant::from_millis(5_000));
    let connects = h.connects().len();
    h.try_least_loaded(3);
    assert_eq!(h.connects().len(), connects + 1, "{:?}", h.connects());
    assert_eq!(h.connects().last().unwrap().1, "a:1", "back to the seed");
}

/// A Metadata answer of REBOOTSTRAP_REQUIRED (KIP-1102) forgets the known brokers at once,
/// and the connection that said it takes no more requests.
#[test]
fn rebootstrap_required_starts_over_from_bootstrap() {
    let mut h = Harness::new(
        1,
        &["a:1"],
        Box::new(|addr| match addr.to_string().as_str() {
            "b:2" => Some(ScriptedBroker::new(|_, _| {
                Reply::Respond(ResponseBody::Metadata(MetadataResponse {
                    error_code: 129,
                    ..Default::default()
                }))
            })),
            _ => Some(ScriptedBroker::new(metadata_ok)),
        }),
    );
    h.net.update_nodes([(2, hp("b:2"))], h.now);
    let b = h.least_loaded();
    h.net
        .send(b, &MetadataRequest::default(), 1, h.now)
        .unwrap();
    h.pump();
    assert!(!h.net.knows(2), "forgotten");
    let seed = h.least_loaded();
    assert_ne!(seed, b);
    assert_eq!(h.connects().last().unwrap().1, "a:1");
}

/// KIP-1242: the handshake names the cluster and node meant (ApiVersions v5), and a broker that
/// is not that node answers REBOOTSTRAP_REQUIRED: the client forgets the addresses it knew and
/// starts over from bootstrap.servers.
#[test]
fn a_handshake_refused_with_rebootstrap_required_starts_over_from_bootstrap() {
    let mut h = Harness::new(
        1,
        &["a:1"],
        Box::new(|addr| match addr.to_string().as_str() {
            "b:2" => Some(ScriptedBroker::new(metadata_ok).refusing_handshake(129)),
            _ => Some(ScriptedBroker::new(metadata_ok)),
        }),
    );
    h.net.set_cluster_id(Some("cluster-a"));
    h.net.update_nodes([(2, hp("b:2"))], h.now);
    assert!(h.net.least_loaded(h.now).is_none());
    h.pump();
    assert!(!h.net.knows(2), "forgotten");
    h.least_loaded();
    let connects: Vec<String> = h.connects().into_iter().map(|c| c.1).collect();
    assert_eq!(connects, ["b:2", "a:1"]);
    // The handshake to node 2 named it and the cluster; the seed's named neither.
    let handshakes: Vec<(Option<String>, i32)> = (h.broker_requests.iter())
        .filter_map(|r| match r {
            RequestBody::ApiVersions(v) => Some((v.cluster_id.clone(), v.node_id)),
            _ => None,
        })
        .collect();
    assert_eq!(handshakes, [(Some("cluster-a".into()), 2), (None, -1)]);
}

/// With `metadata.cluster.check.enable=false` (or `metadata.recovery.strategy=none`, as in
/// Java) the handshake names neither the cluster nor the node.
#[test]
fn without_the_cluster_check_the_handshake_names_nothing() {
    for (check, rebootstrap) in [(false, true), (true, false)] {
        let mut c = cfg(1);
        c.cluster_check = check;
        c.rebootstrap = rebootstrap;
        let mut h = Harness::new(
            1,
            &["a:1"],
            Box::new(|_| Some(ScriptedBroker::new(metadata_ok))),
        );
        h.net = Network::new(c, vec![hp("a:1")]);
        h.net.set_cluster_id(Some("cluster-a"));
        h.net.update_nodes([(2, hp("b:2"))], h.now);
        h.least_loaded();
        let handshakes: Vec<(Option<String>, i32)> = (h.broker_requests.iter())
            .filter_map(|r| match r {
                RequestBody::ApiVersions(v) => Some((v.cluster_id.clone(), v.node_id)),
                _ => None,
            })
            .collect();
        assert_eq!(
            handshakes,
            [(None, -1)],
            "check {check}, rebootstrap {rebootstrap}"
        );
    }
}

/// A broker that speaks ApiVersions v5 but closes a handshake naming the cluster (Tansu 0.6):
/// the client connects to it again, after its reconnect backoff, without the check.
#[test]
fn a_broker_closing_the_cluster_check_is_asked_without_it() {
    let mut h = Harness::new(
        1,
        &["a:1"],
        Box::new(|_| Some(ScriptedBroker::new(metadata_ok).closing_on_cluster_check())),
    );
    h.net.set_cluster_id(Some("cluster-a"));
    h.net.update_nodes([(2, hp("b:2"))], h.now);
    assert!(h.net.least_loaded(h.now).is_none());
    h.pump();
    let wake = h.net.poll_timeout().expect("a reconnect");
    h.advance_to(wake);
    let conn = h.try_least_loaded(3).expect("connected without the check");
    assert_eq!(h.connects().last().unwrap(), &(conn, "b:2".to_string()));
    let handshakes: Vec<Option<String>> = (h.broker_requests.iter())
        .filter_map(|r| match r {
            RequestBody::ApiVersions(v) => Some(v.cluster_id.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(handshakes, [Some("cluster-a".to_string()), None]);
}

#[test]
fn same_seed_same_bytes() {
    let run = |seed| {
        let mut h = Harness::new(
            seed,
            &["a:1", "b:2", "c:3"],
            Box::new(|a: &HostPort| (a.port != 1).then(|| ScriptedBroker::new(metadata_ok))),
        );
        for i in 0..5 {
            let c = h.least_loaded();
            h.net
                .send(c, &MetadataRequest::default(), i, h.now)
                .unwrap();
            h.pump();
            h.advance_to(h.now + Duration::from_millis(10));
        }
        format!("{:?}", h.log)
    };
    assert_eq!(run(11), run(11));
}

/// Tansu answers some Produce requests sent with acks=0, which Kafka never does. Treating the
/// answer as a protocol error closed the connection, and with it requests not yet written.
#[test]
fn an_answer_to_a_request_that_expects_none_is_skipped() {
    let mut h = Harness::new(
        1,
        &["a:1"],
        Box::new(|_| Some(ScriptedBroker::new(metadata_ok))),
    );
    let conn = h.least_loaded();
    let req = MetadataRequest::default();
    let max = MetadataRequest::API_KEY.max_version();
    // The broker answers anyway.
    h.net
        .send_at_most(conn, &req, 1, Expect::Nothing, max, h.now)
        .unwrap();
    h.net.send(conn, &req, 2, h.now).unwrap();
    h.pump();
    assert!(
        h.closes().is_empty(),
        "the connection survives: {:?}",
        h.log
    );
    let tags: Vec<u32> = h
        .events
        .iter()
        .map(|e| match e {
            NetEvent::Response { tag, .. } => *tag,
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(tags, [2]);
}

/// librdkafka's mock broker answers an ApiVersions version it lacks with a hybrid reply: the
/// error says UNSUPPORTED_VERSION, and the rest, read at the version sent, gives an empty API
/// list and a 20-minute throttle. The client asks again at v0 and ignores the throttle.
#[test]
fn a_hybrid_unsupported_version_handshake_retries_at_v0_unthrottled() {
    let mut net: Network<u32> = Network::new(cfg(1), vec![hp("mock:1")]);
    let now = Instant::ZERO;
    assert!(net.least_loaded(now).is_none());
    let Some(Transmit::Connect { conn, .. }) = net.poll_transmit() else {
        panic!("connects first")
    };
    net.handle_connected(conn, now);
    let Some(Transmit::Send { bytes, .. }) = net.poll_transmit() else {
        panic!("ApiVersions")
    };
    assert_eq!(&bytes[4..8], [0, 18, 0, 5], "ApiVersions v5 first");
    // The mock's bytes, as captured: correlation id 0, UNSUPPORTED_VERSION, then a hybrid body.
    let reply = [
        0, 0, 0, 17, 0, 0, 0, 0, 0, 0x23, 1, 0, 0x12, 0, 0, 0, 2, 0, 0, 0, 0,
    ];
    net.handle_received(conn, &reply, now);
    let Some(Transmit::Send { bytes, .. }) = net.poll_transmit() else {
        panic!("asks again, on the same connection")
    };
    assert_eq!(&bytes[4..8], [0, 18, 0, 0], "ApiVersions v0");
    assert!(net.poll_transmit().is_none(), "no close");
    #[rustfmt::skip]
    let v0 = [
        0, 0, 0, 22, // size
        0, 0, 0, 1,  // correlation id
        0, 0,        // no error
        0, 0, 0, 2,  // two APIs
        0, 18, 0, 0, 0, 2,  // ApiVersions 0..=2
        0, 3, 0, 0, 0, 12,  // Metadata 0..=12
    ];
    net.handle_received(conn, &v0, now);
    assert_eq!(
        net.least_loaded(now),
        Some(conn),
        "ready at once: the failed reply's bytes are not read as a throttle"
    );
}

/// An UNSUPPORTED_VERSION handshake reply that parses at no version (here cut short after the
/// error code) is still an answer: ask again at v0 rather than drop the connection.
#[test]
fn an_unparseable_unsupported_version_handshake_retries_at_v0() {
    let mut net: Network<u32> = Network::new(cfg(1), vec![hp("mock:1")]);
    let now = Instant::ZERO;
    assert!(net.least_loaded(now).is_none());
    let Some(Transmit::Connect { conn, .. }) = net.poll_transmit() else {
        panic!("connects first")
    };
    net.handle_connected(conn, now);
    assert!(matches!(net.poll_transmit(), Some(Transmit::Send { .. })));
    // Correlation id 0, UNSUPPORTED_VERSION, then one byte: too short at v4 and at v0.
    net.handle_received(conn, &[0, 0, 0, 7, 0, 0, 0, 0, 0, 0x23, 5], now);
    let Some(Transmit::Send { bytes, .. }) = net.poll_transmit() else {
        panic!("asks again, on the same connection")
    };
    assert_eq!(&bytes[4..8], [0, 18, 0, 0], "ApiVersions v0");
    assert!(net.poll_transmit().is_none(), "no close");
}

/// KIP-714 telemetry that is due while every connection that offers it is at its in-flight
/// limit waits, and looks again later, instead of leaving a deadline in the past for the
/// driver to spin on (the API simulation's seed 150 live-locked so, on a re-authenticating
/// connection).
#[test]
fn telemetry_that_cannot_be_sent_yet_waits_without_spinning() {
    use kafka_sim::proto::api::ApiKey;
    use kafka_sim::proto::messages::get_telemetry_subscriptions_response::GetTelemetrySubscriptionsResponse;
    let every_api: Vec<(i16, i16, i16)> = ApiKey::ALL
        .iter()
        .map(|k| (k.key(), k.min_version(), k.max_version()))
        .collect();
    let mut h = Harness::new(
        1,
        &["a:1"],
        Box::new(move |_| {
            Some(
                ScriptedBroker::new(|_, body| match body {
                    RequestBody::Metadata(_) => Reply::Ignore,
                    // A refusal: asked again after 30 s.
                    RequestBody::GetTelemetrySubscriptions(_) => {
                        Reply::Respond(ResponseBody::GetTelemetrySubscriptions(
                            GetTelemetrySubscriptionsResponse {
                                error_code: 15, // COORDINATOR_NOT_AVAILABLE: any error
                                ..Default::default()
                            },
                        ))
                    }
                    other => panic!("{other:?}"),
                })
                .with_versions(every_api.clone()),
            )
        }),
    );
    let conn = h.least_loaded();
    h.pump();
    let asked = |h: &Harness| {
        h.brokers
            .values()
            .flat_map(|b| b.requests())
            .filter(|(hd, _)| hd.api_key == 71)
            .count()
    };
    assert_eq!(asked(&h), 1, "asked once the connection was ready");
    // Just before the subscription is due again, the connection fills up (5 in flight,
    // never answered: they would time out at 59 s).
    h.advance_to(Instant::from_millis(29_000));
    for tag in 0..5 {
        h.net
            .send(conn, &MetadataRequest::default(), tag, h.now)
            .unwrap();
    }
    h.pump();
    let until = Instant::from_millis(40_000);
    let mut steps = 0;
    while let Some(next) = h.net.poll_timeout().filter(|n| *n <= until) {
        steps += 1;
        assert!(steps < 1_000, "live-lock: poll_timeout stays at {next:?}");
        assert!(
            next >= h.now,
            "a deadline in the past: {next:?} at {:?}",
            h.now
        );
        h.now = next;
        h.net.handle_timeout(h.now);
        h.pump();
    }
    assert_eq!(
        asked(&h),
        1,
        "nothing could be sent while the connection was full"
    );
}

/// Against a server that accepts connections and never answers, the producer's metadata
/// timeout names it (it said only "metadata for topic t1 was not available within
/// max.block.ms").
#[test]
fn a_silent_server_is_named_by_the_metadata_timeout() {
    use kafka_core::producer::{DeliveryError, Outcome, ProducerEvent, ProducerRecord};
    let cfg = kafka_core::config::ProducerConfig::from_map([
        ("bootstrap.servers", "silent:9092"),
        ("max.block.ms", "3000"),
        ("request.timeout.ms", "30000"),
    ])
    .unwrap();
    let mut p = kafka_core::Producer::new(cfg);
    let mut now = kafka_core::Instant::ZERO;
    let token = p
        .send(ProducerRecord::new("t1", "v".to_owned(), 0), now)
        .unwrap();
    let mut failed = None;
    while now < kafka_core::Instant::from_millis(5000) && failed.is_none() {
        while let Some(o) = p.poll_output() {
            match o {
                kafka_core::net::Output::Transmit(kafka_core::net::Transmit::Connect {
                    conn,
                    ..
                }) => p.handle_connected(conn, now),
                kafka_core::net::Output::Event(ProducerEvent::Outcome(
                    t,
                    Outcome::Failed { error, .. },
                )) if t == token => failed = Some(error),
                _ => {}
            }
        }
        let Some(next) = p.poll_timeout() else { break };
        now = next.max(now);
        p.handle_timeout(now);
    }
    let Some(DeliveryError::MetadataTimeout {
        last: Some(last), ..
    }) = &failed
    else {
        panic!("{failed:?}");
    };
    assert!(
        last.contains("silent:9092") && last.contains("has not answered ApiVersions"),
        "{last}"
    );
}

/// A request timed out on one of a broker's connections: its other lanes close with it and
/// what they carried fails at once, as Java closes its one connection to the node. A metadata
/// refresh sent on an idle lane a moment before the timeout would otherwise wait out a second
/// `request.timeout.ms` (found by the simulation: a broker vanished, a producer's periodic
/// metadata went to its other lane 2.5 s into the produce's timeout, and its records waited
/// 6.1 s; seeds 84973, 92461, 96333 and 97113 of 100,000). The coordinator's connection to the
/// same broker is left to its own requests' timeouts.
#[test]
fn a_request_timed_out_on_one_lane_fails_what_its_brokers_other_lanes_carry() {
    let mut h = Harness::new(
        1,
        &["a:1"],
        Box::new(|addr| match addr.to_string().as_str() {
            "b:2" => Some(ScriptedBroker::new(|_, _| Reply::Ignore)),
            _ => Some(ScriptedBroker::new(metadata_ok)),
        }),
    );
    h.net.update_nodes([(1, hp("a:1")), (2, hp("b:2"))], h.now);
    let coordinator = loop {
        if let Some(c) = h.net.ready(2, Purpose::Coordinator, h.now) {
            break c;
        }
        h.pump();
    };
    let lane = h.time_out_node_2_with_its_lane();
    let failed: Vec<(u32, bool)> = h
        .events
        .iter()
        .filter_map(|e| match e {
            NetEvent::Failed { tag, error, .. } => {
                Some((*tag, matches!(error, RequestError::TimedOut { .. })))
            }
            _ => None,
        })
        .collect();
    assert_eq!(
        failed,
        [(1, true), (2, false)],
        "the data connection's request timed out at 30 s, the lane's failed with it, not at 31 s"
    );
    assert_eq!(h.now, Instant::from_millis(30_000));
    assert!(!h.closes().contains(&coordinator), "{:?}", h.closes());
    assert_ne!(h.net.least_loaded(h.now), Some(lane));
}
