//! `produce`: one record per stdin line, and `perf produce`: a timed load with latencies.

use std::time::{Duration, Instant};

use bytes::Bytes;
use futures_util::stream::{FuturesUnordered, StreamExt};
use futures_util::FutureExt;
use indicatif::{ProgressBar, ProgressStyle};
use kafka_tokio::{Delivered, Deliveries, Failed, Producer, ProducerConfig, Record, Topic};
use tokio::io::AsyncBufReadExt;

use crate::args::{settings, Idiom, ProduceArgs};
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
    /// The 1-based input line of the first failure, for `produce`.
    first_line: Option<u64>,
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

    /// A record of input line `line` resolved.
    fn add_line(&mut self, line: u64, r: Result<Delivered, Failed>) {
        if r.is_err() && self.first.is_none() {
            self.first_line = Some(line);
        }
        self.add(r);
    }
}

pub async fn produce(cluster: Cluster, brokers: &str, a: ProduceArgs) -> CliResult<()> {
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
    let transactional = extra.iter().any(|(k, _)| k == "transactional.id");
    if a.abort && !transactional {
        return Err(
            "--abort ends a transaction: give the producer one with -X transactional.id=ID".into(),
        );
    }
    let producer = producer(brokers, extra)?;
    let topic = cluster.topic(&a.topic).await?;
    cluster.close();
    if transactional {
        // The whole input is one transaction.
        producer
            .init_transactions()
            .await
            .map_err(|e| format!("init_transactions: {e}"))?;
        producer
            .begin_transaction()
            .map_err(|e| format!("begin_transaction: {e}"))?;
    }
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
    let mut pending = Deliveries::new();
    let mut tally = Tally::default();
    let mut sent = 0u64;
    let mut line_no = 0u64;
    loop {
        line.clear();
        let n = stdin
            .read_until(b'\n', &mut line)
            .await
            .map_err(|e| format!("reading stdin: {e}"))?;
        if n == 0 {
            break;
        }
        line_no += 1;
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
            .map_err(|e| format!("line {line_no}: {e}"))?;
        pending.push(delivery, line_no);
        sent += 1;
        while let Some(Some((n, r))) = pending.next().now_or_never() {
            tally.add_line(n, r);
        }
    }
    let ended = if !transactional {
        None
    } else if a.abort {
        // Written first, then aborted: the records are in the log, and only read_committed
        // readers skip them (what an operator checking isolation wants to see).
        producer.flush().await;
        Some(producer.abort_transaction().await.map(|()| "aborted"))
    } else {
        Some(producer.commit_transaction().await.map(|()| "committed"))
    };
    while let Some((n, r)) = pending.next().await {
        match r {
            // Records the abort failed before they were sent: what was asked.
            Err(f) if a.abort && f.error == kafka_tokio::DeliveryError::TransactionAborted => {}
            r => tally.add_line(n, r),
        }
    }
    producer.close(Duration::from_secs(30)).await;
    match ended {
        Some(Ok(how)) => eprintln!("{how} one transaction of {sent} records"),
        Some(Err(e)) => {
            let what = if a.abort { "abort" } else { "commit" };
            return Err(format!("the transaction did not {what}: {e}"));
        }
        None => {}
    }
    match tally.first {
        None => Ok(()),
        Some(f) => Err(format!(
            "{} of {} records failed; the first, line {}: {f}",
            tally.failed,
            tally.failed + tally.delivered,
            tally.first_line.unwrap_or(0)
        )),
    }
}

/// Waits for the oldest delivery in the window, then takes every one after it that is done.
async fn take_oldest(
    window: &mut Deliveries<Instant>,
    tally: &mut Tally,
    latencies: &mut Latencies,
) {
    let Some((sent, r)) = window.next().await else {
        return;
    };
    tally.add(r);
    let now = Instant::now();
    latencies.add(now, sent);
    while let Some(Some((sent, r))) = window.next().now_or_never() {
        tally.add(r);
        latencies.add(now, sent);
    }
}

/// Delivery latencies in microseconds, to three significant digits: a histogram of fixed
/// size, where a list of every latency cost 4 MB per million records of the run's peak RSS
/// (which the benchmarks report, and hold to `buffer.memory` + 16 MB).
struct Latencies(hdrhistogram::Histogram<u64>);

impl Latencies {
    fn new() -> Self {
        // 1 µs to an hour (longer ones count as an hour): about 200 KB.
        let h = hdrhistogram::Histogram::new_with_bounds(1, 3_600_000_000, 3);
        Latencies(h.expect("valid bounds and precision"))
    }

    fn add(&mut self, now: Instant, sent: Instant) {
        let micros = now.duration_since(sent).as_micros();
        self.0
            .saturating_record(micros.min(u64::MAX as u128) as u64);
    }

    fn len(&self) -> u64 {
        self.0.len()
    }

    /// The `q` quantile in milliseconds, if any latency was recorded.
    fn millis(&self, q: f64) -> Option<f64> {
        (!self.0.is_empty()).then(|| self.0.value_at_quantile(q) as f64 / 1000.0)
    }
}

/// `n` distinct keys (`key-0`, `key-1`, ...) in one allocation, each handed out as a slice of
/// it: a reference count per record, as a key the application holds costs, without a `Bytes`
/// and a buffer per key (5 MB of the run's peak RSS at 100,000 keys).
struct Keys {
    all: Bytes,
    /// Key `k` is `all[ends[k - 1]..ends[k]]` (from 0 for the first).
    ends: Vec<u32>,
}

impl Keys {
    fn new(n: u64) -> Self {
        let mut all = Vec::new();
        let mut ends = Vec::with_capacity(n as usize);
        for k in 0..n {
            use std::io::Write as _;
            write!(all, "key-{k}").expect("writing to a Vec");
            ends.push(u32::try_from(all.len()).expect("keys fit in 4 GB"));
        }
        Keys {
            all: Bytes::from(all),
            ends,
        }
    }

    fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }

    fn get(&self, k: usize) -> Bytes {
        let start = if k == 0 { 0 } else { self.ends[k - 1] as usize };
        self.all.slice(start..self.ends[k] as usize)
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
    pub idiom: Idiom,
    /// Distinct keys taken in turn, 0 for none.
    pub keys: u64,
    pub config: Vec<String>,
    pub json: bool,
}

/// Outstanding deliveries `perf produce` keeps before it waits for the oldest: enough to keep
/// `buffer.memory` (32 MB) busy with small records, so that the window never sets the pace.
const WINDOW: usize = 100_000;

/// Sends `a.count` records as fast as the producer takes them, with the API's fastest idiom
/// (see the README): one [`Topic`] and one value shared by every record, and a window of
/// [`Deliveries`] taken oldest first. Outcomes come nearly in order, so the oldest is almost
/// always the next one due; a `FuturesUnordered` of deliveries costs a task and a wake-up per
/// record on top (`--idiom` measures the others).
pub async fn perf(cluster: Cluster, brokers: &str, a: PerfArgs) -> CliResult<()> {
    let producer = producer(brokers, settings(&a.config)?)?;
    cluster.topic(&a.topic).await?;
    cluster.close();
    let bar = if a.json {
        ProgressBar::hidden()
    } else {
        ProgressBar::new(a.count)
    };
    bar.set_style(
        ProgressStyle::with_template("{bar:40} {pos}/{len} records, {per_sec}, eta {eta} {msg}")
            .expect("a valid template"),
    );
    // One shared value and topic: records differ only in their position in the batch.
    let value = Bytes::from(vec![b'x'; a.size]);
    let topic = Topic::from(a.topic.as_str());
    // Made before the clock starts, so a key costs the run what a key held by the application
    // costs: a reference count.
    let keys = Keys::new(a.keys);
    let start = Instant::now();
    let mut latencies = Latencies::new();
    let mut window: Deliveries<Instant> = Deliveries::new();
    let mut tally = Tally::default();
    // Send times are read every 64 records and after any send that waited for memory: a
    // record's latency is off by at most 64 sends' time (microseconds), and a clock read per
    // record would cost a tenth of the record.
    let mut clock = start;
    let mut unordered = FuturesUnordered::new();
    for i in 0..a.count {
        if i % 64 == 0 {
            clock = Instant::now();
        }
        let mut record = match a.idiom {
            Idiom::StringTopic => Record::new(a.topic.clone(), value.clone()),
            _ => Record::new(topic.clone(), value.clone()),
        };
        if !keys.is_empty() {
            record = record.key(keys.get((i % a.keys) as usize));
        }
        let mut send = std::pin::pin!(producer.send(record));
        let d = match send.as_mut().now_or_never() {
            Some(d) => d,
            None => {
                let d = send.await;
                clock = Instant::now();
                d
            }
        };
        let d = d.map_err(|e| format!("record {i}: {e}"))?;
        match a.idiom {
            Idiom::Deliveries | Idiom::StringTopic => {
                window.push(d, clock);
                if window.len() >= WINDOW {
                    take_oldest(&mut window, &mut tally, &mut latencies).await;
                }
            }
            Idiom::FuturesUnordered => {
                let sent = clock;
                unordered.push(d.map(move |r| (r, sent)));
                let mut now = None;
                while let Some(Some((r, sent))) = unordered.next().now_or_never() {
                    tally.add(r);
                    latencies.add(*now.get_or_insert_with(Instant::now), sent);
                }
            }
            Idiom::Detached => drop(d),
        }
        if i % 65_536 == 0 {
            bar.set_position(i);
        }
    }
    while !window.is_empty() {
        take_oldest(&mut window, &mut tally, &mut latencies).await;
        bar.set_position(latencies.len());
    }
    while let Some((r, sent)) = unordered.next().await {
        tally.add(r);
        latencies.add(Instant::now(), sent);
    }
    if a.idiom == Idiom::Detached {
        // Nothing says how each record fared: only that every one has an outcome.
        producer.flush().await;
    }
    let seconds = start.elapsed().as_secs_f64();
    bar.finish_and_clear();
    let metrics = producer.metrics();
    producer.close(Duration::from_secs(30)).await;
    if let Some(f) = tally.first {
        return Err(format!(
            "{} of {} records failed; the first: {f}",
            tally.failed, a.count
        ));
    }
    // No latencies with `--idiom detached`: its records' outcomes are never read.
    let pct = |q: f64| latencies.millis(q);
    let bytes = a.count * a.size as u64;
    let rps = a.count as f64 / seconds;
    let mbps = bytes as f64 / seconds / 1e6;
    let (p50, p99, p999) = (pct(0.50), pct(0.99), pct(0.999));
    if a.json {
        let out = serde_json::json!({
            "records": a.count,
            "bytes": bytes,
            "seconds": seconds,
            "records_per_sec": rps,
            "mb_per_sec": mbps,
            "p50_ms": p50,
            "p99_ms": p99,
            "p99_9_ms": p999,
            "metrics": crate::format::headline(&metrics, "producer-metrics", PRODUCER_HEADLINE),
        });
        println!("{out}");
    } else {
        let latency = match (p50, p99, p999) {
            (Some(p50), Some(p99), Some(p999)) => {
                format!(", delivery latency p50 {p50:.1} ms, p99 {p99:.1} ms, p99.9 {p999:.1} ms")
            }
            _ => String::new(),
        };
        println!(
            "{} records of {} B in {seconds:.2} s: {rps:.0} records/s, {mbps:.1} MB/s{latency}",
            a.count, a.size
        );
        let m = |name| metrics.get("producer-metrics", name).unwrap_or(f64::NAN);
        println!(
            "request latency avg {:.1} ms (max {:.0}), batch size avg {:.0} B (max {:.0}), \
             {:.0} records per request, queue time avg {:.1} ms (max {:.0}); the last {} s",
            m("request-latency-avg"),
            m("request-latency-max"),
            m("batch-size-avg"),
            m("batch-size-max"),
            m("records-per-request-avg"),
            m("record-queue-time-avg"),
            m("record-queue-time-max"),
            window_seconds(&a.config),
        );
    }
    Ok(())
}

/// The producer metrics `perf produce --json` reports (Java's names).
const PRODUCER_HEADLINE: &[&str] = &[
    "request-latency-avg",
    "request-latency-max",
    "batch-size-avg",
    "batch-size-max",
    "records-per-request-avg",
    "record-queue-time-avg",
    "record-queue-time-max",
    "compression-rate-avg",
    "produce-throttle-time-avg",
    "record-send-total",
    "record-retry-total",
    "record-error-total",
    "bufferpool-wait-time-ns-total",
    "buffer-available-bytes",
];

/// The span the windowed metrics cover: `metrics.sample.window.ms` × `metrics.num.samples`.
fn window_seconds(config: &[String]) -> u64 {
    let get = |key: &str, default: u64| {
        config
            .iter()
            .filter_map(|kv| kv.split_once('='))
            .find(|(k, _)| k.trim() == key)
            .and_then(|(_, v)| v.trim().parse().ok())
            .unwrap_or(default)
    };
    get("metrics.sample.window.ms", 30_000) * get("metrics.num.samples", 2) / 1000
}
