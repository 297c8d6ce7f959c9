//! The sans-IO core against real brokers (Tansu, and Apache Kafka itself), over the blocking test driver: what the
//! producer writes, the fetcher reads back, exactly and in order, under every codec.

use std::time::Duration;

use kafka_core::config::ConsumerConfig;
use kafka_core::fetcher::{Consumer, FetchEvent, StartFrom};
use kafka_core::producer::{Outcome, Producer, ProducerEvent, ProducerRecord};
use kafka_core::ProducerConfig;
use tests::blocking::Driver;
use tests::brokers::{Kind, TestBroker as Broker};

const N: usize = 5000;

/// Produces N records and waits for the flush. Returns the producer and its connections, for
/// the caller to keep open until it has read the records back: with acks=0 Tansu drops requests
/// it has not yet handled when the client closes the connection (docs/compat.md); Apache Kafka
/// handles every whole request it received.
fn produce(broker: &Broker, topic: &str, codec: &str, acks: &str) -> (Producer, Driver) {
    let cfg = ProducerConfig::from_map([
        ("bootstrap.servers", broker.addr.as_str()),
        ("compression.type", codec),
        ("acks", acks),
    ])
    .unwrap();
    let mut p = Producer::new(cfg);
    let mut d = Driver::default();
    for i in 0..N {
        let r = ProducerRecord::new(topic, format!("value-{i}"), 1_700_000_000_000 + i as i64)
            .with_key(format!("key-{i}"))
            .with_header("h", "v");
        p.send(r, d.now()).unwrap();
    }
    p.flush(d.now());
    let events = d.run(&mut p, Duration::from_secs(60), |e| {
        e.iter()
            .any(|e| matches!(e, ProducerEvent::FlushComplete(_)))
    });
    let outcomes: Vec<Outcome> = events
        .into_iter()
        .flat_map(ProducerEvent::per_record)
        .filter_map(|e| match e {
            ProducerEvent::Outcome(_, o) => Some(o),
            _ => None,
        })
        .collect();
    assert_eq!(
        outcomes.len(),
        N,
        "{codec}/acks={acks}: every record resolved"
    );
    for o in outcomes {
        assert!(
            matches!(o, Outcome::Delivered { .. }),
            "{codec}/acks={acks}: {o:?}"
        );
    }
    (p, d)
}

/// Reads every partition from the start until each has reached its end and `want` records
/// have come (acks=0 has no acknowledgement: the producer is done when the bytes are written, and
/// the broker may still be appending them when the first fetch reads the end).
fn consume(
    broker: &Broker,
    topic: &str,
    partitions: i32,
    want: usize,
) -> Vec<(i32, i64, String, String)> {
    let cfg = ConsumerConfig::from_map([("bootstrap.servers", broker.addr.as_str())]).unwrap();
    let mut f = Consumer::new(cfg);
    let mut d = Driver::default();
    f.assign(
        (0..partitions).map(|p| (topic.to_string(), p)),
        StartFrom::Earliest,
        d.now(),
    )
    .unwrap();
    let events = d.run(&mut f, Duration::from_secs(60), |e| {
        let ends = e
            .iter()
            .filter(|e| matches!(e, FetchEvent::EndOfPartition { .. }))
            .count();
        let records: usize = e
            .iter()
            .map(|e| match e {
                FetchEvent::Records { records, .. } => records.clone().count(),
                _ => 0,
            })
            .sum();
        ends >= partitions as usize && records >= want
    });
    let mut out = Vec::new();
    for e in events {
        match e {
            FetchEvent::Records {
                partition, records, ..
            } => {
                for r in records {
                    let r = r.expect("a well-formed record");
                    let key = String::from_utf8(r.key.unwrap().to_vec()).unwrap();
                    let value = String::from_utf8(r.value.unwrap().to_vec()).unwrap();
                    out.push((partition, r.offset, key, value));
                }
            }
            FetchEvent::Error { error, .. } => panic!("{error}"),
            FetchEvent::EndOfPartition { .. } => {}
            other => panic!("unexpected in assign mode: {other:?}"),
        }
    }
    out
}

fn produce_then_fetch_every_codec(kind: Kind) {
    let broker = Broker::shared(kind, "core_on_brokers");
    for codec in ["none", "gzip", "snappy", "lz4", "zstd"] {
        let topic = format!("codec-{codec}");
        broker.create_topic(&topic, 3);
        produce(&broker, &topic, codec, "all");
        let got = consume(&broker, &topic, 3, N);
        assert_eq!(got.len(), N, "{codec}: every record read back");
        // Per-partition order is send order, and keys went where murmur2 says.
        for p in 0..3 {
            let mine: Vec<usize> = got
                .iter()
                .filter(|r| r.0 == p)
                .map(|r| r.3.trim_start_matches("value-").parse().unwrap())
                .collect();
            assert!(
                mine.windows(2).all(|w| w[0] < w[1]),
                "{codec}: partition {p} in order"
            );
            for r in got.iter().filter(|r| r.0 == p) {
                let want = kafka_core::partitioner::partition_for_key(r.2.as_bytes(), 3) as i32;
                assert_eq!(want, p, "{codec}: {} landed on {p}", r.2);
            }
        }
    }
}

fn acks_zero_and_one(kind: Kind) {
    let broker = Broker::shared(kind, "core_on_brokers");
    for acks in ["0", "1"] {
        let topic = format!("acks-{acks}");
        broker.create_topic(&topic, 1);
        let _open = produce(&broker, &topic, "none", acks);
        assert_eq!(consume(&broker, &topic, 1, N).len(), N, "acks={acks}");
    }
}

// Every test on both brokers.

mod tansu {
    use super::*;

    #[test]
    fn produce_then_fetch_every_codec() {
        super::produce_then_fetch_every_codec(Kind::Tansu);
    }

    #[test]
    fn acks_zero_and_one() {
        super::acks_zero_and_one(Kind::Tansu);
    }
}

mod kafka {
    use super::*;

    #[test]
    fn produce_then_fetch_every_codec() {
        super::produce_then_fetch_every_codec(Kind::Kafka);
    }

    #[test]
    fn acks_zero_and_one() {
        super::acks_zero_and_one(Kind::Kafka);
    }
}
