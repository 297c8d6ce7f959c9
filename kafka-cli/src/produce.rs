//! `produce`: one record per stdin line, and `perf produce`: a timed load with latencies.

use std::time::{Duration, Instant};

use bytes::Bytes;
use futures_util::stream::{FuturesUnordered, StreamExt};
use futures_util::FutureExt;
use indicatif::{ProgressBar, ProgressStyle};
use kafka_tokio::{Delivered, Failed, Producer, ProducerConfig, Record};
use tokio::io::AsyncBufReadExt;

use crate::args::{settings, ProduceArgs};
use crate::cluster::{CliResult, Cluster};

fn producer(brokers: &str, extra: Vec<(String, String)>) -> CliResult<Producer> {
    let mut map = vec![("bootstrap.servers".to_owned(), brokers.to_owned())];
    map.extend(extra);
    let cfg = ProducerConfig::from_map(map).map_err(|e| format!("producer config: {e}"))?;
    for note in cfg.notes() {
        eprintln!("note: {note}");
    }
    Ok(Producer::new(cfg))
}

/// Counts outcomes and keeps the first failure.
#[derive(Default)]
struct Tally {
    delivered: u64,
    failed: u64,
    first: Option<Failed>,
}

impl Tally {
    fn add(&mut self, r: Result<Delivered, Failed>) {
        match r {
            Ok(_) => self.delivered += 1,
            Err(f) => {
                self.failed += 1;
                self.first.get_or_insert(f);
            }
        }
    }
}

pub async fn produce(cluster: &Cluster, brokers: &str, a: ProduceArgs) -> CliResult<()> {
    let mut extra = settings(&a.config)?;
    if let Some(z) = a.compression {
        extra.push(("compression.type".into(), z.name().into()));
    }
    let headers: Vec<(String, Bytes)> = a
        .headers
        .iter()
        .map(|h| {
            h.split_once('=')
                .map(|(k, v)| (k.to_owned(), Bytes::copy_from_slice(v.as_bytes())))
                .ok_or_else(|| format!("-H {h}: expected name=value"))
        })
        .collect::<CliResult<_>>()?;
    let producer = producer(brokers, extra)?;
    let topic = cluster.topic(&a.topic).await?;
    if let Some(p) = a.partition {
        if p < 0 || p as usize >= topic.partitions.len() {
            return Err(format!(
                "-p {p}: topic '{}' has partitions 0..{}",
                a.topic,
                topic.partitions.len()
            ));
        }
    }
    let delim = a.key_delimiter.as_deref().map(str::as_bytes);
    let mut stdin = tokio::io::BufReader::new(tokio::io::stdin());
    let mut line = Vec::new();
    let mut pending = FuturesUnordered::new();
    let mut tally = Tally::default();
    loop {
        line.clear();
        let n = stdin
            .read_until(b'\n', &mut line)
            .await
            .map_err(|e| format!("reading stdin: {e}"))?;
        if n == 0 {
            break;
        }
        if line.last() == Some(&b'\n') {
            line.pop();
            if line.last() == Some(&b'\r') {
                line.pop();
            }
        }
        let (key, value) = match delim.and_then(|d| find(&line, d).map(|i| (i, d.len()))) {
            Some((i, len)) => (
                Some(Bytes::copy_from_slice(&line[..i])),
                Bytes::copy_from_slice(&line[i + len..]),
            ),
            None => (None, Bytes::copy_from_slice(&line)),
        };
        let mut r = Record::new(a.topic.clone(), value);
        if let Some(k) = key {
            r = r.key(k);
        }
        if let Some(p) = a.partition {
            r = r.partition(p);
        }
        for (k, v) in &headers {
            r = r.header(k.clone(), v.clone());
        }
        let delivery = producer
            .send(r)
            .await
            .map_err(|e| format!("record {}: {e}", tally.delivered + tally.failed + 1))?;
        pending.push(delivery);
        while let Some(Some(r)) = pending.next().now_or_never() {
            tally.add(r);
        }
    }
    while let Some(r) = pending.next().await {
        tally.add(r);
    }
    producer.close(Duration::from_secs(30)).await;
    match tally.first {
        None => Ok(()),
        Some(f) => Err(format!(
            "{} of {} records failed; the first: {f}",
            tally.failed,
            tally.failed + tally.delivered
        )),
    }
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    if needle.is_empty() {
        return None;
    }
    hay.windows(needle.len()).position(|w| w == needle)
}

pub struct PerfArgs {
    pub topic: String,
    pub count: u64,
    pub size: usize,
    pub config: Vec<String>,
    pub json: bool,
}

pub async fn perf(cluster: &Cluster, brokers: &str, a: PerfArgs) -> CliResult<()> {
    let producer = producer(brokers, settings(&a.config)?)?;
    cluster.topic(&a.topic).await?;
    let bar = if a.json {
        ProgressBar::hidden()
    } else {
        ProgressBar::new(a.count)
    };
    bar.set_style(
        ProgressStyle::with_template("{bar:40} {pos}/{len} records, {per_sec}, eta {eta} {msg}")
            .expect("a valid template"),
    );
    // One shared value: records differ only in their position in the batch.
    let value = Bytes::from(vec![b'x'; a.size]);
    let start = Instant::now();
    let mut latencies: Vec<u32> = Vec::with_capacity(a.count as usize);
    let mut pending = FuturesUnordered::new();
    let mut tally = Tally::default();
    let mut done = |r: Result<Delivered, Failed>, sent: Instant, lat: &mut Vec<u32>| {
        lat.push(sent.elapsed().as_micros().min(u32::MAX as u128) as u32);
        tally.add(r);
    };
    for i in 0..a.count {
        let sent = Instant::now();
        let d = producer
            .send(Record::new(a.topic.clone(), value.clone()))
            .await
            .map_err(|e| format!("record {i}: {e}"))?;
        pending.push(d.map(move |r| (r, sent)));
        while let Some(Some((r, sent))) = pending.next().now_or_never() {
            done(r, sent, &mut latencies);
        }
        if i.is_multiple_of(4096) {
            bar.set_position(latencies.len() as u64);
        }
    }
    while let Some((r, sent)) = pending.next().await {
        done(r, sent, &mut latencies);
        if latencies.len().is_multiple_of(4096) {
            bar.set_position(latencies.len() as u64);
        }
    }
    let seconds = start.elapsed().as_secs_f64();
    bar.finish_and_clear();
    producer.close(Duration::from_secs(30)).await;
    if let Some(f) = tally.first {
        return Err(format!(
            "{} of {} records failed; the first: {f}",
            tally.failed, a.count
        ));
    }
    latencies.sort_unstable();
    let pct = |q: f64| {
        let i = ((latencies.len() as f64 * q).ceil() as usize).clamp(1, latencies.len()) - 1;
        latencies[i] as f64 / 1000.0
    };
    let bytes = a.count * a.size as u64;
    let rps = a.count as f64 / seconds;
    let mbps = bytes as f64 / seconds / 1e6;
    let (p50, p99) = (pct(0.50), pct(0.99));
    if a.json {
        let out = serde_json::json!({
            "records": a.count,
            "bytes": bytes,
            "seconds": seconds,
            "records_per_sec": rps,
            "mb_per_sec": mbps,
            "p50_ms": p50,
            "p99_ms": p99,
        });
        println!("{out}");
    } else {
        println!(
            "{} records of {} B in {seconds:.2} s: {rps:.0} records/s, {mbps:.1} MB/s, delivery latency p50 {p50:.1} ms, p99 {p99:.1} ms",
            a.count, a.size
        );
    }
    Ok(())
}
