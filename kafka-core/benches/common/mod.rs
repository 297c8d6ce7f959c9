//! The warmed-up producer the core benchmark and `examples/producer_instructions.rs` share.

use kafka_core::net::Machine as _;
use std::collections::BTreeMap;
use std::time::Duration;

use kafka_core::net::Transmit;
use kafka_core::producer::{Output, ProducerRecord, Topic};
use kafka_core::{Instant, Producer, ProducerConfig};
use kafka_sim::SingleBroker;

/// A producer with metadata and a ready connection, talking to a SingleBroker, and the topic
/// it warmed up with: records are sent with clones of it, the idiom `Topic` documents (one
/// allocation shared by every record of a topic).
pub fn warmed() -> (Producer, Instant, Topic) {
    let cluster = SingleBroker::new("broker", 9092, 1);
    let cfg = ProducerConfig::from_map([
        ("bootstrap.servers", "broker:9092"),
        ("acks", "0"),
        ("linger.ms", "60000"),
        ("batch.size", "16384"),
    ])
    .unwrap();
    let mut p = Producer::new(cfg);
    let mut conns = BTreeMap::new();
    let mut now = Instant::ZERO;
    let topic = Topic::from("bench");
    p.send(ProducerRecord::new(topic.clone(), vec![0u8; 100], 1), now)
        .unwrap();
    p.flush(now); // send the warm-up record without waiting for linger
    for _ in 0..50 {
        while let Some(o) = p.poll_output() {
            match o {
                Output::Transmit(Transmit::Connect { conn, .. }) => {
                    conns.insert(conn, cluster.connection());
                    p.handle_connected(conn, now);
                }
                Output::Transmit(Transmit::Send { conn, bytes }) => {
                    let out = conns.get_mut(&conn).unwrap().receive(&bytes).unwrap();
                    p.handle_received(conn, &out.bytes, now);
                }
                _ => {}
            }
        }
        now += Duration::from_millis(1);
        p.handle_timeout(now);
    }
    assert_eq!(
        cluster.records("bench", 0).len(),
        1,
        "warm-up record delivered"
    );
    (p, now, topic)
}
