//! The producer core alone: 100-byte records through send → ready → drain → encoded Produce
//! bytes, with no IO. acks=0, so no responses are needed once warmed up, and a long linger, so
//! only full batches leave, as under load.
//! Run: `cargo bench -p kafka-core --bench producer`

use std::collections::BTreeMap;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use kafka_core::net::Transmit;
use kafka_core::producer::{Output, ProducerRecord};
use kafka_core::{Instant, Producer, ProducerConfig};
use kafka_sim::SingleBroker;

const N: usize = 1000;

/// A producer with metadata and a ready connection, talking to a SingleBroker.
fn warmed() -> (Producer, Instant) {
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
    p.send(ProducerRecord::new("bench", vec![0u8; 100], 1), now)
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
    (p, now)
}

fn bench(c: &mut Criterion) {
    let (mut p, now) = warmed();
    let value = bytes::Bytes::from(vec![b'x'; 100]);
    let mut g = c.benchmark_group("producer_core");
    g.throughput(Throughput::Elements(N as u64));
    g.bench_function("send_drain_encode_100B", |b| {
        b.iter(|| {
            let mut bytes = 0;
            for i in 0..N {
                let r = ProducerRecord {
                    topic: "bench".into(),
                    value: Some(value.clone()),
                    timestamp: 1_700_000_000_000 + i as i64,
                    ..Default::default()
                };
                p.send(r, now).unwrap();
            }
            while let Some(o) = p.poll_output() {
                if let Output::Transmit(Transmit::Send { bytes: b, .. }) = o {
                    bytes += b.len();
                }
            }
            assert!(bytes > N * 90, "full batches were encoded: {bytes}");
            bytes
        })
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
