//! The group consumer in virtual time against `SingleBroker`'s coordinator: the connection
//! pattern (nothing at construction; FindCoordinator to the least-loaded node; the coordinator
//! on a connection of its own; the bootstrap connection adopted, not left as a zombie),
//! heartbeats that go on while a fetch long-polls, and commits that a new member resumes from.

use kafka_core::net::Machine as _;
use std::collections::BTreeMap;
use std::time::Duration;

use kafka_core::config::ConsumerConfig;
use kafka_core::fetcher::{Consumer, FetchEvent, StartFrom, SubscribeError};
use kafka_core::net::{ConnId, Transmit};
use kafka_core::producer::{self, ProducerEvent, ProducerRecord};
use kafka_core::{Instant, Producer, ProducerConfig};
use kafka_sim::proto::api::RequestBody;
use kafka_sim::{ScriptedBroker, SimTime, SingleBroker};

struct Harness {
    f: Consumer,
    now: Instant,
    cluster: SingleBroker,
    brokers: BTreeMap<ConnId, ScriptedBroker>,
    /// (connection, API key) of every request sent.
    sent: Vec<(ConnId, i16)>,
    connects: Vec<ConnId>,
    closes: Vec<ConnId>,
    events: Vec<FetchEvent>,
    /// New connections are refused (the coordinator's node was killed).
    refuse: bool,
}

fn sim(t: Instant) -> SimTime {
    SimTime::from_nanos(t.as_nanos())
}

impl Harness {
    fn new(cluster: &SingleBroker, group: &str) -> Harness {
        Self::with(cluster, group, &[])
    }

    fn with(cluster: &SingleBroker, group: &str, extra: &[(&str, &str)]) -> Harness {
        let mut settings = vec![
            ("bootstrap.servers", "broker:9092"),
            ("group.id", group),
            ("session.timeout.ms", "2000"),
            ("heartbeat.interval.ms", "500"),
            ("fetch.max.wait.ms", "5000"),
            ("auto.offset.reset", "earliest"),
            ("auto.commit.interval.ms", "1000"),
        ];
        settings.extend_from_slice(extra);
        let cfg = ConsumerConfig::from_map(settings).unwrap();
        Harness {
            f: Consumer::new(cfg),
            now: Instant::ZERO,
            cluster: cluster.clone(),
            brokers: BTreeMap::new(),
            sent: Vec::new(),
            connects: Vec::new(),
            closes: Vec::new(),
            events: Vec::new(),
            refuse: false,
        }
    }

    fn pump(&mut self) {
        while let Some(o) = self.f.poll_output() {
            match o {
                kafka_core::net::Output::Transmit(Transmit::Connect { conn, .. })
                    if self.refuse =>
                {
                    self.connects.push(conn);
                    let refused = kafka_core::net::ConnectError::Refused;
                    self.f.handle_connect_failed(conn, refused, self.now);
                }
                kafka_core::net::Output::Transmit(Transmit::Connect { conn, .. }) => {
                    self.connects.push(conn);
                    self.brokers.insert(conn, self.cluster.connection());
                    self.brokers.get_mut(&conn).unwrap().advance(sim(self.now));
                    self.f.handle_connected(conn, self.now);
                }
                kafka_core::net::Output::Transmit(Transmit::Send { conn, bytes }) => {
                    self.sent
                        .push((conn, i16::from_be_bytes([bytes[4], bytes[5]])));
                    let b = self.brokers.get_mut(&conn).unwrap();
                    let out = b.receive(&bytes).unwrap();
                    if !out.bytes.is_empty() {
                        self.f.handle_received(conn, &out.bytes, self.now);
                    }
                }
                kafka_core::net::Output::Transmit(Transmit::Close { conn }) => {
                    self.closes.push(conn);
                    self.brokers.remove(&conn);
                }
                kafka_core::net::Output::Event(e) => self.events.push(e),
                _ => unreachable!("a variant this test does not know"),
            }
        }
    }

    fn advance_to(&mut self, t: Instant) {
        self.pump();
        loop {
            let broker_due = self.brokers.values().filter_map(|b| b.next_due()).min();
            let next = [
                self.f.poll_timeout(),
                broker_due.map(|d| Instant::from_nanos(d.as_nanos() as u64)),
            ]
            .into_iter()
            .flatten()
            .min();
            let Some(next) = next.filter(|n| *n <= t) else {
                break;
            };
            assert!(next >= self.now, "time never goes back");
            self.now = next;
            self.sync_brokers();
            self.f.handle_timeout(self.now);
            self.pump();
        }
        self.now = t;
        // The brokers' clocks too, so that a request sent now is answered in the present.
        self.sync_brokers();
        self.f.handle_timeout(t);
        self.pump();
    }

    fn sync_brokers(&mut self) {
        let conns: Vec<ConnId> = self.brokers.keys().copied().collect();
        for c in conns {
            let out = self.brokers.get_mut(&c).unwrap().advance(sim(self.now));
            if !out.bytes.is_empty() {
                self.f.handle_received(c, &out.bytes, self.now);
            }
        }
    }

    fn on(&self, api: i16) -> Vec<ConnId> {
        let mut v: Vec<ConnId> = self
            .sent
            .iter()
            .filter(|(_, a)| *a == api)
            .map(|(c, _)| *c)
            .collect();
        v.dedup();
        v
    }

    fn values(&self) -> Vec<String> {
        self.events
            .iter()
            .flat_map(|e| match e {
                FetchEvent::Records { records, .. } => records
                    .clone()
                    .map(Result::unwrap)
                    .map(|r| String::from_utf8(r.value.clone().unwrap().to_vec()).unwrap())
                    .collect(),
                _ => vec![],
            })
            .collect()
    }
}

const FETCH: i16 = 1;
const FIND_COORDINATOR: i16 = 10;
const JOIN_GROUP: i16 = 11;
const HEARTBEAT: i16 = 12;

#[test]
fn the_connection_pattern_and_heartbeats_during_a_long_poll() {
    let cluster = SingleBroker::new("broker", 9092, 2);
    let mut h = Harness::new(&cluster, "g");
    h.advance_to(Instant::from_millis(10_000));
    assert!(h.connects.is_empty(), "nothing connects at construction");
    assert_eq!(h.f.poll_timeout(), None);

    let start = h.now;
    h.f.subscribe(vec!["t".into()], start).unwrap();
    h.advance_to(start + Duration::from_secs(10));
    assert_eq!(h.connects.len(), 2, "bootstrap, then the coordinator's own");
    let (boot, coord) = (h.connects[0], h.connects[1]);
    assert_eq!(
        h.on(FIND_COORDINATOR),
        [boot],
        "FindCoordinator to the least-loaded node"
    );
    assert_eq!(h.on(JOIN_GROUP), [coord]);
    assert_eq!(h.on(HEARTBEAT), [coord]);
    assert_eq!(
        h.on(FETCH),
        [boot],
        "the bootstrap connection was adopted for data"
    );
    assert!(h.closes.is_empty(), "no zombie, nothing closed");
    assert!(
        matches!(&h.events[0], FetchEvent::Assigned(tps) if tps.len() == 2),
        "{:?}",
        h.events
    );
    // Fetches long-poll for 5 s while heartbeats go on every 500 ms on their own connection.
    let heartbeats = h.sent.iter().filter(|(_, a)| *a == HEARTBEAT).count();
    assert!(heartbeats >= 15, "{heartbeats} heartbeats in 10 s");
    assert_eq!(
        cluster.group_requests("JoinGroup"),
        2,
        "KIP-394 join, then no rejoin"
    );
}

/// Produces `n` records to partition `p` of "t".
fn produce(cluster: &SingleBroker, n: usize) {
    let cfg = ProducerConfig::from_map([("bootstrap.servers", "broker:9092")]).unwrap();
    let mut p = Producer::new(cfg);
    let mut now = Instant::ZERO;
    let mut conns = BTreeMap::new();
    for i in 0..n {
        p.send(
            ProducerRecord::new("t", format!("v{i}"), 1).with_partition(0),
            now,
        )
        .unwrap();
    }
    p.flush(now);
    let mut delivered = 0;
    while delivered < n {
        while let Some(o) = p.poll_output() {
            match o {
                producer::Output::Transmit(Transmit::Connect { conn, .. }) => {
                    conns.insert(conn, cluster.connection());
                    p.handle_connected(conn, now);
                }
                producer::Output::Transmit(Transmit::Send { conn, bytes }) => {
                    let out = conns.get_mut(&conn).unwrap().receive(&bytes).unwrap();
                    p.handle_received(conn, &out.bytes, now);
                }
                producer::Output::Event(ProducerEvent::Delivered(batch)) => {
                    delivered += batch.len()
                }
                producer::Output::Event(ProducerEvent::Outcome(_, o)) => panic!("{o:?}"),
                _ => {}
            }
        }
        now += Duration::from_millis(1);
        p.handle_timeout(now);
        assert!(now < Instant::from_millis(10_000), "producing stalled");
    }
}

#[test]
fn a_new_member_resumes_from_the_committed_offsets() {
    let cluster = SingleBroker::new("broker", 9092, 1);
    produce(&cluster, 50);
    let mut h = Harness::new(&cluster, "resume");
    h.f.subscribe(vec!["t".into()], h.now).unwrap();
    h.advance_to(Instant::from_millis(3000));
    assert_eq!(h.values().len(), 50, "from earliest: nothing committed yet");
    // The application took the first 30, written in leader epoch 0.
    let epochs: Vec<i32> = h
        .events
        .iter()
        .filter_map(|e| match e {
            FetchEvent::Records { leader_epoch, .. } => Some(*leader_epoch),
            _ => None,
        })
        .collect();
    assert!(epochs.iter().all(|e| *e == 0), "{epochs:?}");
    h.f.consumed("t", 0, 30, 0);
    let now = h.now;
    h.f.leave(now); // commits first (enable.auto.commit), then leaves
    h.advance_to(now + Duration::from_secs(1));
    assert!(h.events.contains(&FetchEvent::Left), "{:?}", h.events);
    assert_eq!(cluster.group_requests("LeaveGroup"), 1);

    let mut h2 = Harness::new(&cluster, "resume");
    h2.f.subscribe(vec!["t".into()], Instant::ZERO).unwrap();
    h2.advance_to(Instant::from_millis(3000));
    let got = h2.values();
    assert_eq!(
        got.first().map(String::as_str),
        Some("v30"),
        "from the committed offset"
    );
    assert_eq!(got.len(), 20);
    // KIP-320: the committed epoch was checked against the leader's log before reading on.
    assert_eq!(cluster.committed("resume", "t", 0), Some((30, 0)));
    let checks = h2
        .brokers
        .values()
        .flat_map(|b| b.requests())
        .filter(|(_, r)| matches!(r, RequestBody::OffsetForLeaderEpoch(_)))
        .count();
    assert_eq!(checks, 1);
}

/// A coordinator whose connection closes while nothing is in flight (its node was killed
/// between heartbeats) is looked up again at once, not reconnected to until the session runs
/// out: Java marks the coordinator unknown on a disconnect (on a 3-node Kafka, `commit` blocked
/// for about 42 s after kill -9 of the coordinator's node).
#[test]
fn a_lost_coordinator_connection_finds_the_coordinator_again_at_once() {
    let cluster = SingleBroker::new("broker", 9092, 1);
    let mut h = Harness::with(&cluster, "lost", &[("session.timeout.ms", "45000")]);
    h.f.subscribe(vec!["t".into()], h.now).unwrap();
    h.advance_to(Instant::from_millis(3000));
    assert_eq!(h.connects.len(), 2, "bootstrap, then the coordinator's own");
    let coord = h.connects[1];
    let count = |h: &Harness| {
        h.sent
            .iter()
            .filter(|(_, a)| *a == FIND_COORDINATOR)
            .count()
    };
    let finds = count(&h);
    // Just after a heartbeat's answer: nothing is in flight on it.
    let at = h.now;
    h.brokers.remove(&coord);
    h.refuse = true;
    h.f.handle_closed(coord, at);
    h.pump();
    h.advance_to(at + Duration::from_millis(1500));
    assert!(
        count(&h) > finds,
        "FindCoordinator within 1.5 s of the coordinator's loss: {:?}",
        h.sent
    );
}

thread_local! {
    /// What the process-wide subscriber logged on this thread (see [`logged`]).
    static LOGGED: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// A `tracing` writer into the calling thread's [`LOGGED`].
struct ThreadLog;

impl std::io::Write for ThreadLog {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        LOGGED.with(|l| l.borrow_mut().extend_from_slice(b));
        Ok(b.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// What was logged at WARN and above on this thread: each test runs on a thread of its own,
/// and its client on that thread. One process-wide subscriber, not a scoped one per test:
/// tracing caches whether anyone wants a log line when some thread first meets it, and a
/// test thread without a subscriber could cache "no one" while another test's scoped
/// subscriber was being set (its warning then went unrecorded, about 1 run in 20).
fn logged() -> String {
    static INIT: std::sync::Once = std::sync::Once::new();
    INIT.call_once(|| {
        let subscriber = tracing_subscriber::fmt()
            .with_max_level(tracing::Level::WARN)
            .with_writer(|| ThreadLog)
            .with_ansi(false)
            .finish();
        tracing::subscriber::set_global_default(subscriber).expect("the only subscriber here");
    });
    LOGGED.with(|l| String::from_utf8_lossy(&l.borrow()).into_owned())
}

/// A coordinator out of reach is one warning however many lookups and connects fail while it
/// is (librdkafka's mock showed five in 400 ms), and a new one once a coordinator answered.
#[test]
fn a_coordinator_out_of_reach_is_one_warning_an_episode() {
    logged();
    let warnings = || {
        logged()
            .matches("lost the connection to the group coordinator")
            .count()
    };
    {
        let cluster = SingleBroker::new("broker", 9092, 1);
        // Lookups go to the bootstrap connection, where Kafka answers them after the fetch
        // long-polling there: a short wait makes many lookups and refused connects.
        let settings = [
            ("session.timeout.ms", "45000"),
            ("fetch.max.wait.ms", "100"),
        ];
        let mut h = Harness::with(&cluster, "warned", &settings);
        h.f.subscribe(vec!["t".into()], h.now).unwrap();
        h.advance_to(Instant::from_millis(3000));
        let lose = |h: &mut Harness| {
            let coord = *h.connects.last().unwrap();
            h.brokers.remove(&coord);
            h.refuse = true;
            let at = h.now;
            h.f.handle_closed(coord, at);
            h.pump();
            let finds = h.sent.len();
            h.advance_to(at + Duration::from_millis(3000));
            assert!(h.sent.len() > finds, "looked up again: {:?}", h.sent);
        };
        lose(&mut h);
        let refused = h.connects.len();
        assert!(
            refused > 4,
            "lookups and refused connects: {}",
            h.connects.len()
        );
        assert_eq!(warnings(), 1, "{}", logged());
        // The coordinator is back and answers: the episode ends.
        h.refuse = false;
        let now = h.now;
        h.advance_to(now + Duration::from_millis(3000));
        assert!(h.connects.len() > refused, "reconnected");
        lose(&mut h);
        assert_eq!(warnings(), 2, "{}", logged());
    }
}

/// `max.poll.interval.ms`: an application that stops asking for records is taken out of the
/// group (LeaveGroup, its partitions lost and no longer fetched), without a `Left` that would
/// end the consumer; its next poll rejoins and reading goes on from the committed offsets.
#[test]
fn a_stalled_application_leaves_and_its_next_poll_rejoins() {
    let cluster = SingleBroker::new("broker", 9092, 1);
    produce(&cluster, 20);
    let mut h = Harness::with(
        &cluster,
        "stall",
        &[
            ("max.poll.interval.ms", "4000"),
            ("fetch.max.wait.ms", "500"),
        ],
    );
    h.f.subscribe(vec!["t".into()], h.now).unwrap();
    h.advance_to(Instant::from_millis(1000));
    assert_eq!(h.values().len(), 20);
    h.f.consumed("t", 0, 20, 0);
    h.advance_to(Instant::from_millis(3000)); // an automatic commit
    assert_eq!(cluster.committed("stall", "t", 0), Some((20, 0)));
    assert_eq!(cluster.group_requests("LeaveGroup"), 0);

    // No poll since subscribing at 0: out after 4 s.
    h.advance_to(Instant::from_millis(4600));
    assert_eq!(cluster.group_requests("LeaveGroup"), 1);
    assert!(
        h.events
            .iter()
            .any(|e| matches!(e, FetchEvent::Lost(tps) if tps == &[("t".to_string(), 0)])),
        "{:?}",
        h.events
    );
    assert!(!h.events.contains(&FetchEvent::Left), "{:?}", h.events);
    let fetches = h.sent.iter().filter(|(_, a)| *a == FETCH).count();
    produce(&cluster, 5);
    h.advance_to(Instant::from_millis(9000));
    assert_eq!(
        h.sent.iter().filter(|(_, a)| *a == FETCH).count(),
        fetches,
        "a lost partition is not fetched"
    );
    assert_eq!(h.values().len(), 20);

    // The application polls again: a new member joins and reads on from offset 20.
    let joins = cluster.group_requests("JoinGroup");
    let now = h.now;
    h.f.polled(now);
    h.advance_to(now + Duration::from_secs(2));
    assert!(cluster.group_requests("JoinGroup") > joins);
    let got = h.values();
    assert_eq!(got.len(), 25, "{got:?}");
    assert_eq!(got[20], "v0", "the second batch, from offset 20");
}

/// Static membership: JoinGroup names the instance, and leaving sends no LeaveGroup (the
/// session outlives a restart), while the offsets are still committed first.
#[test]
fn a_static_member_commits_but_does_not_leave() {
    let cluster = SingleBroker::new("broker", 9092, 1);
    produce(&cluster, 10);
    let mut h = Harness::with(&cluster, "static", &[("group.instance.id", "i-1")]);
    h.f.subscribe(vec!["t".into()], h.now).unwrap();
    h.advance_to(Instant::from_millis(2000));
    assert_eq!(h.values().len(), 10);
    let joins: Vec<Option<String>> = h
        .brokers
        .values()
        .flat_map(|b| b.requests())
        .filter_map(|(_, r)| match r {
            RequestBody::JoinGroup(j) => Some(j.group_instance_id.clone()),
            _ => None,
        })
        .collect();
    assert!(!joins.is_empty());
    assert!(
        joins.iter().all(|i| i.as_deref() == Some("i-1")),
        "{joins:?}"
    );
    h.f.consumed("t", 0, 10, 0);
    let now = h.now;
    h.f.leave(now);
    h.advance_to(now + Duration::from_secs(1));
    assert!(h.events.contains(&FetchEvent::Left), "{:?}", h.events);
    assert_eq!(cluster.committed("static", "t", 0), Some((10, 0)));
    assert_eq!(cluster.group_requests("LeaveGroup"), 0);
}

/// JoinGroup timed out after request.timeout.ms, although a coordinator holds it until the
/// group's members rejoin, for up to the rebalance timeout: a member joining a group whose
/// rebalance took longer than request.timeout.ms never got in. Java waits max(request
/// timeout, rebalance timeout + 5 s) (found by reading membership.rs).
#[test]
fn a_join_held_past_request_timeout_is_waited_for() {
    let cluster = SingleBroker::new("broker", 9092, 1);
    cluster.hold_joins(Duration::from_secs(10));
    let mut h = Harness::with(
        &cluster,
        "slow",
        &[
            ("request.timeout.ms", "3000"),
            ("max.poll.interval.ms", "8000"),
        ],
    );
    h.f.subscribe(vec!["t".into()], h.now).unwrap();
    // Polling all along, so max.poll.interval.ms does not end the membership.
    for s in 1..=25 {
        h.f.polled(h.now);
        h.advance_to(Instant::from_millis(s * 1000));
    }
    let coordinator = h.on(JOIN_GROUP);
    assert_eq!(coordinator.len(), 1, "every join on one connection");
    assert!(
        !h.closes.contains(&coordinator[0]),
        "the coordinator's connection did not time out: {:?}",
        h.closes
    );
    assert!(
        h.events
            .iter()
            .any(|e| matches!(e, FetchEvent::Assigned(tps) if tps == &[("t".to_string(), 0)])),
        "joined after the coordinator's 10 s (twice: KIP-394's member id first): {:?}",
        h.events
    );
}

/// Records of a revoked or lost partition still in the application's hands were reported
/// through `consumed` after the revocation (no ownership check there), and the next
/// automatic commit, in a later generation, sent them: a commit for a partition another
/// member owned by then (found by reading fetcher/group.rs; the user-API simulation's
/// committed-offset checks catch its effect).
#[test]
fn a_report_about_a_partition_no_longer_held_is_not_committed() {
    let cluster = SingleBroker::new("broker", 9092, 2);
    let mut h = Harness::with(&cluster, "g", &[("enable.auto.commit", "false")]);
    h.f.subscribe(vec!["t".into()], h.now).unwrap();
    h.advance_to(Instant::from_millis(500));
    assert!(h
        .events
        .iter()
        .any(|e| matches!(e, FetchEvent::Assigned(tps) if tps.len() == 2)));
    // The partitions go away (a stall past max.poll.interval.ms loses them)...
    h.advance_to(Instant::from_millis(400_000));
    assert!(
        h.events.iter().any(|e| matches!(e, FetchEvent::Lost(_))),
        "{:?}",
        h.events
    );
    // ...and then the application reports what it had taken of partition 1.
    h.f.consumed("t", 1, 42, -1);
    // It polls again: the member rejoins and gets its partitions back.
    h.f.polled(h.now);
    let later = h.now + Duration::from_millis(2000);
    h.advance_to(later);
    let id = h.f.commit(h.now).unwrap();
    let later = h.now + Duration::from_millis(500);
    h.advance_to(later);
    assert!(h
        .events
        .iter()
        .any(|e| matches!(e, FetchEvent::Committed(c, Ok(())) if *c == id)));
    assert_eq!(
        cluster.committed("g", "t", 1),
        None,
        "the report from the lost tenure was dropped, not committed in the new generation"
    );
}

/// A revocation the application never acknowledged, because it stalled past
/// max.poll.interval.ms, stayed open after the membership was lost: a late report of what it
/// had taken was accepted, its acknowledgement queued a commit, and that commit went out in the
/// member's next generation, moving the group's offset back over the commits of the owners in
/// between (found by the user-API simulation, seed 24694, which shows the commit). The
/// revocation is void now: its partitions are reported lost (before the fix this test saw no
/// `Lost`), and nothing of them is committed.
#[test]
fn a_revocation_left_unacknowledged_past_max_poll_interval_is_void() {
    let cluster = SingleBroker::new("broker", 9092, 2);
    let mut h = Harness::with(&cluster, "void", &[("max.poll.interval.ms", "4000")]);
    h.f.subscribe(vec!["t".into()], h.now).unwrap();
    h.advance_to(Instant::from_millis(500));
    let both = vec![("t".to_string(), 0), ("t".to_string(), 1)];
    assert!(h.events.contains(&FetchEvent::Assigned(both.clone())));
    // A new subscription rebalances; eager, so everything is revoked first...
    let now = h.now;
    h.f.subscribe(vec!["t".into(), "u".into()], now).unwrap();
    h.advance_to(now + Duration::from_millis(100));
    assert!(h.events.contains(&FetchEvent::Revoking(both.clone())));
    // ...and the application stalls without acknowledging it.
    h.advance_to(Instant::from_millis(6000));
    let revoking = h
        .events
        .iter()
        .position(|e| *e == FetchEvent::Revoking(both.clone()));
    let lost = h
        .events
        .iter()
        .position(|e| *e == FetchEvent::Lost(both.clone()));
    assert!(
        lost > revoking,
        "the unfinished revocation is reported lost: {:?}",
        h.events
    );
    // It comes back: reports what it took, acknowledges, polls, and rejoins.
    h.f.consumed("t", 1, 42, -1);
    let now = h.now;
    h.f.ack_revocation(now);
    h.f.polled(now);
    h.advance_to(now + Duration::from_secs(3));
    assert!(h.f.is_group_member());
    assert_eq!(
        cluster.committed("void", "t", 1),
        None,
        "nothing of the void revocation was committed in the new generation"
    );
}

/// A consumer either subscribes or assigns (as in Java): the core refuses the other, so that
/// no partition is fetched and committed outside the group's rules.
#[test]
fn subscribe_and_assign_exclude_each_other() {
    let cluster = SingleBroker::new("broker", 9092, 1);
    let mut member = Harness::new(&cluster, "both");
    member.f.subscribe(vec!["t".into()], member.now).unwrap();
    assert_eq!(
        member
            .f
            .assign([("t".to_string(), 0)], StartFrom::Earliest, member.now),
        Err(SubscribeError::Subscribed)
    );
    let mut reader = Harness::new(&cluster, "both");
    reader
        .f
        .assign([("t".to_string(), 0)], StartFrom::Earliest, reader.now)
        .unwrap();
    assert_eq!(
        reader.f.subscribe(vec!["t".into()], reader.now),
        Err(SubscribeError::Assigned)
    );
}
