//! The consumer core alone, for counting instructions per record with callgrind: N 100-byte
//! records, written first into a simulated broker by a producer, then read by a fetcher from
//! the start, every record's value touched as an application would. Only the reading counts,
//! answered from a recording of the broker's answers (so the simulated broker's work is left
//! out):
//!
//! ```sh
//! cargo build --release -p kafka-core --example consumer_instructions
//! valgrind --tool=callgrind --callgrind-out-file=/dev/null \
//!   --toggle-collect='consumer_instructions::read_all' \
//!   target/release/examples/consumer_instructions 100000
//! ```
//!
//! Instructions collected divided by N is the consumer's cost per record: the fetch requests,
//! the decoding of the answers, the record iterator and the events (#34 asks for 300 or less).

use kafka_core::net::Machine as _;
use std::collections::BTreeMap;
use std::time::Duration;

use kafka_core::fetcher::{FetchEvent, StartFrom};
use kafka_core::net::{ConnId, Output, Transmit};
use kafka_core::producer::{ProducerRecord, Topic};
use kafka_core::{Consumer, ConsumerConfig, Instant, Producer, ProducerConfig};
use kafka_sim::{ScriptedBroker, SingleBroker};

fn main() {
    let n: usize = std::env::args()
        .nth(1)
        .map_or(100_000, |a| a.parse().expect("a record count"));
    let cluster = SingleBroker::new("broker", 9092, 1);
    write(&cluster, n);
    // First against the broker, keeping what the network brought back; then the measured
    // run, a fresh fetcher with the same inputs (it is deterministic), answered from that
    // recording, so that the simulated broker's own work is not counted.
    let mut conns = BTreeMap::new();
    let mut recorded = Vec::new();
    let live = read_with(n, |t| {
        let back = carry(t, &cluster, &mut conns);
        recorded.push(back.clone());
        back
    });
    let mut replay = recorded.into_iter();
    let (read, bytes) = read_all(n, &mut || replay.next().expect("the same requests"));
    assert_eq!(
        (read, bytes),
        live,
        "the replay reads what the broker served"
    );
    println!("{read} records, {bytes} value bytes read");
}

/// Writes `n` records of 100 bytes to partition 0 of "bench".
fn write(cluster: &SingleBroker, n: usize) {
    let cfg = ProducerConfig::from_map([
        ("bootstrap.servers", "broker:9092"),
        ("acks", "1"),
        ("linger.ms", "5"),
        ("batch.size", "16384"),
    ])
    .unwrap();
    let mut p = Producer::new(cfg);
    let mut conns = BTreeMap::new();
    let mut now = Instant::ZERO;
    let topic = Topic::from("bench");
    let value = bytes::Bytes::from(vec![b'x'; 100]);
    for i in 0..n {
        let r = ProducerRecord {
            topic: topic.clone(),
            partition: Some(0),
            value: Some(value.clone()),
            timestamp: 1_700_000_000_000 + i as i64,
            ..Default::default()
        };
        while p.send(r.clone(), now).is_err() {
            now += Duration::from_millis(1);
            p.handle_timeout(now);
            pump_producer(&mut p, cluster, &mut conns, now);
        }
        pump_producer(&mut p, cluster, &mut conns, now);
    }
    p.flush(now);
    while cluster.records("bench", 0).len() < n {
        now += Duration::from_millis(1);
        p.handle_timeout(now);
        pump_producer(&mut p, cluster, &mut conns, now);
    }
}

fn pump_producer(
    p: &mut Producer,
    cluster: &SingleBroker,
    conns: &mut BTreeMap<ConnId, ScriptedBroker>,
    now: Instant,
) {
    while let Some(o) = p.poll_output() {
        if let Output::Transmit(t) = o {
            match carry(t, cluster, conns) {
                Back::Connected(c) => p.handle_connected(c, now),
                Back::Received(c, b) => p.handle_received(c, &b, now),
                Back::Nothing => {}
            }
        }
    }
}

/// What the network brings back for one transmit.
#[derive(Clone)]
enum Back {
    Connected(ConnId),
    Received(ConnId, Vec<u8>),
    Nothing,
}

/// Plays the network for one transmit: opens a broker connection, or hands bytes over and
/// returns the answer.
fn carry(
    t: Transmit,
    cluster: &SingleBroker,
    conns: &mut BTreeMap<ConnId, ScriptedBroker>,
) -> Back {
    match t {
        Transmit::Connect { conn, .. } => {
            conns.insert(conn, cluster.connection());
            Back::Connected(conn)
        }
        Transmit::Send { conn, bytes } => {
            let out = conns.get_mut(&conn).unwrap().receive(&bytes).unwrap();
            if out.bytes.is_empty() {
                Back::Nothing
            } else {
                Back::Received(conn, out.bytes.to_vec())
            }
        }
        _ => Back::Nothing,
    }
}

/// The measured run: reads answered from a recording.
#[inline(never)]
fn read_all(n: usize, next: &mut dyn FnMut() -> Back) -> (usize, usize) {
    read_with(n, |_| next())
}

/// Reads partition 0 of "bench" from the start until `n` records came, every transmit handed
/// to `network`.
fn read_with(n: usize, mut network: impl FnMut(Transmit) -> Back) -> (usize, usize) {
    let cfg = ConsumerConfig::from_map([("bootstrap.servers", "broker:9092")]).unwrap();
    let mut f = Consumer::new(cfg);
    let mut now = Instant::ZERO;
    f.assign([("bench".to_string(), 0)], StartFrom::Earliest, now)
        .unwrap();
    let (mut read, mut value_bytes) = (0, 0);
    while read < n {
        while let Some(o) = f.poll_output() {
            match o {
                Output::Transmit(t) => match network(t) {
                    Back::Connected(c) => f.handle_connected(c, now),
                    Back::Received(c, b) => f.handle_received(c, &b, now),
                    Back::Nothing => {}
                },
                Output::Event(FetchEvent::Records { records, bytes, .. }) => {
                    for r in records {
                        let r = r.expect("a well-formed record");
                        value_bytes += r.value.as_ref().map_or(0, |v| v.len());
                        read += 1;
                    }
                    f.release(bytes, now);
                }
                _ => {}
            }
        }
        now += Duration::from_millis(1);
        f.handle_timeout(now);
    }
    (read, value_bytes)
}
