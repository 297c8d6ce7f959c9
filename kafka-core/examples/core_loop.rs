//! Pushes N 100-byte records through the producer core (send → batch → drain → encoded
//! Produce bytes, acks=0, no IO) for instruction counting:
//! `valgrind --tool=callgrind target/release/examples/core_loop 200000`, minus the run with 0.

use kafka_core::net::Machine as _;
use std::collections::BTreeMap;
use std::time::Duration;

use kafka_core::net::Transmit;
use kafka_core::producer::{Output, ProducerRecord};
use kafka_core::{Instant, Producer, ProducerConfig};
use kafka_sim::SingleBroker;

fn main() {
    let n: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(100_000);
    let cluster = SingleBroker::new("broker", 9092, 1);
    let cfg = ProducerConfig::from_map([
        ("bootstrap.servers", "broker:9092"),
        ("acks", "0"),
        ("linger.ms", "60000"),
    ])
    .expect("valid config");
    let mut p = Producer::new(cfg);
    let mut conns = BTreeMap::new();
    let mut now = Instant::ZERO;
    // Warm up: metadata, connection, one record delivered.
    p.send(ProducerRecord::new("t", vec![0u8; 100], 1), now)
        .expect("queued");
    p.flush(now);
    for _ in 0..50 {
        while let Some(o) = p.poll_output() {
            match o {
                Output::Transmit(Transmit::Connect { conn, .. }) => {
                    conns.insert(conn, cluster.connection());
                    p.handle_connected(conn, now);
                }
                Output::Transmit(Transmit::Send { conn, bytes }) => {
                    let out = conns
                        .get_mut(&conn)
                        .expect("open")
                        .receive(&bytes)
                        .expect("valid");
                    p.handle_received(conn, &out.bytes, now);
                }
                _ => {}
            }
        }
        now += Duration::from_millis(1);
        p.handle_timeout(now);
    }
    let value = bytes::Bytes::from(vec![b'x'; 100]);
    let mut sent = 0usize;
    for i in 0..n {
        let r = ProducerRecord {
            topic: "t".into(),
            value: Some(value.clone()),
            timestamp: 1_700_000_000_000 + i as i64,
            ..Default::default()
        };
        p.send(r, now).expect("queued");
        if i % 1000 == 999 {
            while let Some(o) = p.poll_output() {
                if let Output::Transmit(Transmit::Send { bytes, .. }) = o {
                    sent += bytes.len();
                }
            }
        }
    }
    println!("{n} records, {sent} bytes of Produce requests");
}
