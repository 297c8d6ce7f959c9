//! RecordBatch v2 encode and decode throughput for 100-byte records, uncompressed and lz4.
//! Run: `cargo bench -p kafka-proto --bench record_batch`

use criterion::{black_box, criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use kafka_proto::compression::Compression;
use kafka_proto::record::{BatchBuilder, BatchMeta, RecordBatches};

const RECORDS: usize = 1000;
const VALUE: usize = 100;

fn value(i: usize) -> [u8; VALUE] {
    // Semi-compressible: a counter in otherwise repetitive text, like typical payloads.
    let mut v = [b'x'; VALUE];
    v[..8].copy_from_slice(&(i as u64).to_le_bytes());
    v
}

fn build(codec: Compression) -> bytes::Bytes {
    let mut b = BatchBuilder::new(codec, RECORDS * (VALUE + 16));
    for i in 0..RECORDS {
        b.append(1_700_000_000_000 + i as i64, None, Some(&value(i)), &[]);
    }
    b.seal(&BatchMeta {
        producer_id: 1,
        producer_epoch: 0,
        base_sequence: 0,
        ..BatchMeta::default()
    })
    .unwrap()
}

fn bench(c: &mut Criterion) {
    let values: Vec<[u8; VALUE]> = (0..RECORDS).map(value).collect();
    for codec in [Compression::None, Compression::Lz4] {
        let mut g = c.benchmark_group(format!("record_batch/{}", codec.name()));
        g.throughput(Throughput::Elements(RECORDS as u64));
        g.bench_function(BenchmarkId::new("encode", RECORDS), |b| {
            b.iter(|| {
                let mut builder = BatchBuilder::new(codec, RECORDS * (VALUE + 16));
                for (i, v) in values.iter().enumerate() {
                    builder.append(1_700_000_000_000 + i as i64, None, Some(v), &[]);
                }
                black_box(builder.seal(&BatchMeta::default()).unwrap())
            })
        });
        let batch = build(codec);
        g.bench_function(BenchmarkId::new("decode", RECORDS), |b| {
            b.iter(|| {
                let mut n = 0usize;
                for batch in RecordBatches::new(batch.clone()) {
                    for r in batch.unwrap().records().unwrap() {
                        n += r.unwrap().value.map_or(0, |v| v.len());
                    }
                }
                black_box(n)
            })
        });
        g.finish();
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
