//! Every client recovers when its brokers move (KIP-899's rebootstrap, Java 4.x's default):
//! the producer, the consumer and the admin client each learned the broker's address from
//! metadata, the broker moved to a new one behind the same bootstrap name, and the client
//! reaches it through `bootstrap.servers` again, with nothing lost.

use std::collections::BTreeMap;
use std::time::Duration;

use kafka_core::admin::{Admin, AdminResult, OpId};
use kafka_core::config::{AdminConfig, ConsumerConfig, ProducerConfig};
use kafka_core::fetcher::{Consumer, FetchEvent, StartFrom};
use kafka_core::net::{ConnId, ConnectError, Machine, Output, Transmit};
use kafka_core::producer::{Outcome, Producer, ProducerEvent, ProducerRecord};
use kafka_core::Instant;
use kafka_sim::proto::api::{RequestBody, ResponseBody};
use kafka_sim::proto::messages::metadata_response::MetadataResponse;
use kafka_sim::proto::ErrorCode;
use kafka_sim::{Reply, ScriptedBroker, SimTime, SingleBroker};

/// The bootstrap name, which keeps leading to the broker wherever it moves (a DNS alias, a
/// load balancer).
const SEED: &str = "seed:9092";

/// Plays the binding for one client: connects to the seed and to the broker's current
/// address, refuses every other, carries bytes both ways.
struct Harness<M: Machine> {
    m: M,
    now: Instant,
    broker: SingleBroker,
    conns: BTreeMap<ConnId, (String, ScriptedBroker)>,
    events: Vec<M::Event>,
    connects: Vec<String>,
    /// An address that still accepts connections but whose broker knows its metadata is
    /// stale: it answers Metadata with REBOOTSTRAP_REQUIRED (KIP-1102) and closes on
    /// anything else.
    stale: Option<String>,
}

impl<M: Machine> Harness<M> {
    fn new(m: M, broker: &SingleBroker) -> Self {
        Harness {
            m,
            now: Instant::ZERO,
            broker: broker.clone(),
            conns: BTreeMap::new(),
            events: Vec::new(),
            connects: Vec::new(),
            stale: None,
        }
    }

    fn pump(&mut self) {
        while let Some(o) = self.m.poll_output() {
            match o {
                Output::Transmit(Transmit::Connect { conn, addr }) => {
                    let addr = addr.to_string();
                    self.connects.push(addr.clone());
                    if addr == SEED || addr == self.broker.address() {
                        self.conns.insert(conn, (addr, self.broker.connection()));
                        self.m.handle_connected(conn, self.now);
                    } else if self.stale.as_ref() == Some(&addr) {
                        self.conns.insert(conn, (addr, rebootstrap_required()));
                        self.m.handle_connected(conn, self.now);
                    } else {
                        self.m
                            .handle_connect_failed(conn, ConnectError::Refused, self.now);
                    }
                }
                Output::Transmit(Transmit::Send { conn, bytes }) => {
                    let Some((_, b)) = self.conns.get_mut(&conn) else {
                        continue;
                    };
                    let out = b.receive(&bytes).expect("well-formed requests");
                    if !out.bytes.is_empty() {
                        self.m.handle_received(conn, &out.bytes, self.now);
                    }
                    if out.closed {
                        self.conns.remove(&conn);
                        self.m.handle_closed(conn, self.now);
                    }
                }
                Output::Transmit(Transmit::Close { conn }) => {
                    self.conns.remove(&conn);
                }
                Output::Event(e) => self.events.push(e),
                _ => {}
            }
        }
    }

    /// Runs the client for `d` of virtual time.
    fn run_for(&mut self, d: Duration) {
        let until = self.now + d;
        let mut stuck = 0;
        loop {
            self.pump();
            let next = (self.conns.values())
                .filter_map(|(_, b)| b.next_due())
                .map(|t| Instant::from_nanos(t.as_nanos() as u64))
                .chain(self.m.poll_timeout())
                .min();
            let Some(next) = next.filter(|t| *t <= until) else {
                break;
            };
            stuck = if next <= self.now { stuck + 1 } else { 0 };
            assert!(stuck < 1000, "woken at {next:?} again and again");
            self.now = self.now.max(next);
            let now = SimTime::from_nanos(self.now.as_nanos());
            let ids: Vec<ConnId> = self.conns.keys().copied().collect();
            for id in ids {
                let out = self.conns.get_mut(&id).expect("open").1.advance(now);
                if !out.bytes.is_empty() {
                    self.m.handle_received(id, &out.bytes, self.now);
                }
            }
            self.m.handle_timeout(self.now);
        }
        self.now = until;
    }

    /// The broker moves to `host:port`: its old address refuses connections from now on,
    /// and the connections to it drop; unless it is `stale`, where they stay open.
    fn broker_moves(&mut self, host: &str, port: u16) {
        let old = self.broker.address();
        self.broker.move_to(host, port);
        let dropped: Vec<ConnId> = (self.conns.iter())
            .filter(|(_, (addr, _))| *addr == old)
            .map(|(id, _)| *id)
            .collect();
        for id in dropped {
            if self.stale.as_ref() == Some(&old) {
                // The connection stays, with a stale broker behind it.
                self.conns.get_mut(&id).expect("open").1 = rebootstrap_required();
            } else {
                self.conns.remove(&id);
                self.m.handle_closed(id, self.now);
            }
        }
    }
}

/// A broker that answers every Metadata request with REBOOTSTRAP_REQUIRED.
fn rebootstrap_required() -> ScriptedBroker {
    ScriptedBroker::new(|_, body| match body {
        RequestBody::Metadata(_) => Reply::Respond(ResponseBody::Metadata(MetadataResponse {
            error_code: ErrorCode::RebootstrapRequired.code(),
            ..Default::default()
        })),
        // A broker of another cluster, say, that took the old address: nothing it answers
        // helps, so it answers nothing.
        _ => Reply::Ignore,
    })
}

impl Harness<Admin> {
    /// The address of the first broker that operation `op`'s metadata answer named.
    fn broker_named(&self, op: OpId) -> String {
        let e = (self.events.iter().find(|e| e.op == op))
            .unwrap_or_else(|| panic!("no answer: {:?} {:?}", self.events, self.connects));
        match &e.result {
            AdminResult::Metadata(Ok(m)) => m.brokers[0].addr.to_string(),
            other => panic!("{other:?}"),
        }
    }
}

fn produce(broker: &SingleBroker, values: &[&str]) {
    let cfg = ProducerConfig::from_map([("bootstrap.servers", SEED), ("linger.ms", "0")]).unwrap();
    let mut h = Harness::new(Producer::new(cfg), broker);
    for v in values {
        h.m.send(ProducerRecord::new("t", v.to_string(), 0), h.now)
            .unwrap();
    }
    h.run_for(Duration::from_secs(2));
    let delivered = (h.events.iter())
        .filter(|e| {
            matches!(
                e,
                ProducerEvent::Delivered(_) | ProducerEvent::Outcome(_, Outcome::Delivered { .. })
            )
        })
        .count();
    assert!(delivered > 0, "{:?}", h.events);
}

fn values(events: &[FetchEvent]) -> Vec<String> {
    (events.iter())
        .flat_map(|e| match e {
            FetchEvent::Records { records, .. } => (records.clone())
                .map(|r| String::from_utf8(r.unwrap().value.unwrap().to_vec()).unwrap())
                .collect(),
            _ => Vec::new(),
        })
        .collect()
}

#[test]
fn a_consumer_whose_broker_moved_reads_on_from_its_new_address() {
    let broker = SingleBroker::new("old", 1, 1);
    produce(&broker, &["a", "b"]);
    let cfg = ConsumerConfig::from_map([("bootstrap.servers", SEED)]).unwrap();
    let mut h = Harness::new(Consumer::new(cfg), &broker);
    h.m.assign([("t".to_string(), 0)], StartFrom::Earliest, h.now)
        .unwrap();
    h.run_for(Duration::from_secs(2));
    assert_eq!(values(&h.events), ["a", "b"]);
    assert!(
        h.connects.contains(&"old:1".to_string()),
        "{:?}",
        h.connects
    );

    h.broker_moves("new", 2);
    produce(&broker, &["c"]);
    h.run_for(Duration::from_secs(10));
    assert_eq!(values(&h.events), ["a", "b", "c"], "read on, nothing twice");
    assert!(
        h.connects.contains(&"new:2".to_string()),
        "{:?}",
        h.connects
    );
}

#[test]
fn an_admin_client_whose_broker_moved_answers_from_its_new_address() {
    let broker = SingleBroker::new("old", 1, 1);
    produce(&broker, &["a"]);
    let cfg = AdminConfig::from_map([("bootstrap.servers", SEED)]).unwrap();
    let mut h = Harness::new(Admin::new(cfg), &broker);
    let first = h.m.metadata(None, h.now);
    h.run_for(Duration::from_secs(1));
    h.broker_moves("new", 2);
    // Ask the old broker first (the admin client prefers a known node over the seed).
    h.run_for(Duration::from_secs(1));
    let second = h.m.metadata(None, h.now);
    h.run_for(Duration::from_secs(10));
    assert_eq!(h.broker_named(first), "old:1");
    assert_eq!(h.broker_named(second), "new:2");
    assert!(
        h.connects.ends_with(&[SEED.to_string()]),
        "{:?}",
        h.connects
    );
}

#[test]
fn a_producer_whose_broker_moved_delivers_to_its_new_address() {
    let broker = SingleBroker::new("old", 1, 1);
    let cfg = ProducerConfig::from_map([("bootstrap.servers", SEED), ("linger.ms", "0")]).unwrap();
    let mut h = Harness::new(Producer::new(cfg), &broker);
    h.m.send(ProducerRecord::new("t", "a", 0), h.now).unwrap();
    h.run_for(Duration::from_secs(1));
    h.broker_moves("new", 2);
    h.m.send(ProducerRecord::new("t", "b", 0), h.now).unwrap();
    h.run_for(Duration::from_secs(10));
    let stored: Vec<_> = (broker.records("t", 0).into_iter())
        .map(|(_, v)| v.unwrap())
        .collect();
    assert_eq!(stored, ["a", "b"], "each once");
    assert!(h.connects.iter().any(|a| a == SEED), "{:?}", h.connects);
    assert!(
        h.connects.contains(&"new:2".to_string()),
        "{:?}",
        h.connects
    );
}

/// The connection to the old address stays open, and the broker behind it answers Metadata
/// with REBOOTSTRAP_REQUIRED (KIP-1102) and nothing else: at its next metadata refresh the
/// consumer starts over from the seed and reads on from the new address, well before its
/// fetch times out (it had taken the error-only answer for metadata, and waited out
/// request.timeout.ms).
#[test]
fn a_consumer_told_rebootstrap_required_starts_over_from_bootstrap() {
    let broker = SingleBroker::new("old", 1, 1);
    produce(&broker, &["a"]);
    let cfg =
        ConsumerConfig::from_map([("bootstrap.servers", SEED), ("metadata.max.age.ms", "1000")])
            .unwrap();
    let mut h = Harness::new(Consumer::new(cfg), &broker);
    h.m.assign([("t".to_string(), 0)], StartFrom::Earliest, h.now)
        .unwrap();
    h.run_for(Duration::from_secs(2));
    assert_eq!(values(&h.events), ["a"]);
    h.stale = Some("old:1".into());
    h.broker_moves("new", 2);
    produce(&broker, &["b"]);
    h.run_for(Duration::from_secs(10));
    assert_eq!(values(&h.events), ["a", "b"], "{:?}", h.connects);
}

/// As above, for the admin client: its operation is retried through the seed.
#[test]
fn an_admin_client_told_rebootstrap_required_starts_over_from_bootstrap() {
    let broker = SingleBroker::new("old", 1, 1);
    let cfg = AdminConfig::from_map([("bootstrap.servers", SEED)]).unwrap();
    let mut h = Harness::new(Admin::new(cfg), &broker);
    h.m.metadata(None, h.now);
    h.run_for(Duration::from_secs(1));
    assert_eq!(h.connects, [SEED]);
    h.stale = Some("old:1".into());
    h.broker_moves("new", 2);
    h.events.clear();
    let op = h.m.metadata(None, h.now);
    h.run_for(Duration::from_secs(10));
    assert_eq!(h.broker_named(op), "new:2");
    // The next operation goes to the node metadata named, which says to start over.
    assert_eq!(h.connects, [SEED, "old:1", SEED]);
}
