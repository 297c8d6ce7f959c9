//! The quickstart: create a topic, produce records with progress, read them all back through a
//! consumer group and check the count, the bytes and per-partition order, and print the
//! throughput.
//!
//! `cargo run --release -p kafka-tokio --example quickstart -- BOOTSTRAP [RECORDS] [SIZE]`

use std::time::{Duration, Instant};

use futures_util::stream::{FuturesUnordered, StreamExt};
use futures_util::FutureExt;
use kafka_tokio::{Admin, Consumer, NewTopic, Producer, Record};

const PARTITIONS: i32 = 6;

type Error = Box<dyn std::error::Error>;

#[tokio::main]
async fn main() -> Result<(), Error> {
    let mut args = std::env::args().skip(1);
    let bootstrap = args
        .next()
        .ok_or("usage: quickstart BOOTSTRAP [RECORDS] [SIZE]")?;
    let records: u64 = args.next().map_or(Ok(1_000_000), |s| s.parse())?;
    let size: usize = args.next().map_or(Ok(100), |s| s.parse())?;
    if size < 8 {
        return Err("SIZE must be at least 8 (each value starts with its sequence number)".into());
    }
    let topic = "quickstart";

    let admin = Admin::from_map([("bootstrap.servers", bootstrap.as_str())])?;
    admin.create_topic(NewTopic::new(topic, PARTITIONS)).await?;
    eprintln!("created topic '{topic}' with {PARTITIONS} partitions on {bootstrap}");

    // Produce: each value starts with its sequence number, so order can be checked per
    // partition on the way back.
    let producer = Producer::from_map([
        ("bootstrap.servers", bootstrap.as_str()),
        ("linger.ms", "5"),
    ])?;
    let start = Instant::now();
    let mut pending = FuturesUnordered::new();
    let mut delivered = 0u64;
    let mut value = vec![b'.'; size];
    for seq in 0..records {
        value[..8].copy_from_slice(&seq.to_be_bytes());
        let d = producer.send(Record::new(topic, value.clone())).await?;
        pending.push(d);
        while let Some(Some(r)) = pending.next().now_or_never() {
            r?;
            delivered += 1;
        }
        if (seq + 1).is_multiple_of(100_000) {
            eprintln!("  produced {:>9} / {records}", seq + 1);
        }
    }
    while let Some(r) = pending.next().await {
        r?;
        delivered += 1;
    }
    let produce_secs = start.elapsed().as_secs_f64();
    producer.close(Duration::from_secs(10)).await;
    assert_eq!(delivered, records);
    let mb = (records * size as u64) as f64 / 1e6;
    println!(
        "produced {records} records of {size} B in {produce_secs:.2} s: {:.0} records/s, {:.1} MB/s",
        records as f64 / produce_secs,
        mb / produce_secs
    );

    // Read everything back through a consumer group (Tansu needs short group timeouts to
    // start the group in about a second).
    let mut consumer = Consumer::from_map([
        ("bootstrap.servers", bootstrap.as_str()),
        ("group.id", "quickstart"),
        ("auto.offset.reset", "earliest"),
        ("session.timeout.ms", "2000"),
        ("heartbeat.interval.ms", "500"),
    ])?;
    consumer.subscribe([topic])?;
    let start = Instant::now();
    let mut seen = vec![false; records as usize];
    let mut last = vec![-1i64; PARTITIONS as usize];
    let (mut count, mut bytes) = (0u64, 0u64);
    while count < records {
        let r = tokio::time::timeout(Duration::from_secs(30), consumer.recv())
            .await
            .map_err(|_| format!("only {count} of {records} records came back within 30 s"))??;
        let v = r.value.as_deref().ok_or("a record without a value")?;
        let seq = u64::from_be_bytes(v[..8].try_into()?);
        let slot = seen
            .get_mut(seq as usize)
            .ok_or("a sequence number never sent")?;
        if std::mem::replace(slot, true) {
            return Err(format!("record {seq} came back twice").into());
        }
        let p = r.partition as usize;
        if seq as i64 <= last[p] {
            return Err(format!("partition {p}: record {seq} after {}", last[p]).into());
        }
        last[p] = seq as i64;
        count += 1;
        bytes += v.len() as u64;
        if count.is_multiple_of(100_000) {
            eprintln!("  consumed {count:>9} / {records}");
        }
    }
    let consume_secs = start.elapsed().as_secs_f64();
    if bytes != records * size as u64 {
        return Err(format!(
            "read {bytes} value bytes, expected {}",
            records * size as u64
        )
        .into());
    }
    println!(
        "consumed {count} records ({bytes} B) through consumer group 'quickstart' in {consume_secs:.2} s (joining included): {:.0} records/s; every record once, in order per partition",
        count as f64 / consume_secs
    );
    consumer.commit().await?;
    consumer.close(Duration::from_secs(10)).await;
    Ok(())
}
