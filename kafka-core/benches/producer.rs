//! The producer core alone: 100-byte records through send → ready → drain → encoded Produce
//! bytes, with no IO. acks=0, so no responses are needed once warmed up, and a long linger, so
//! only full batches leave, as under load.
//! Run: `cargo bench -p kafka-core --bench producer`

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use kafka_core::net::Machine as _;
use kafka_core::net::Transmit;
use kafka_core::producer::{Output, ProducerRecord};

mod common;
use common::warmed;

const N: usize = 1000;

fn bench(c: &mut Criterion) {
    let (mut p, now, topic) = warmed();
    let value = bytes::Bytes::from(vec![b'x'; 100]);
    let mut g = c.benchmark_group("producer_core");
    g.throughput(Throughput::Elements(N as u64));
    g.bench_function("send_drain_encode_100B", |b| {
        b.iter(|| {
            let mut bytes = 0;
            for i in 0..N {
                let r = ProducerRecord {
                    topic: topic.clone(),
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
