//! The benchmarked clients, each run in a child process of its own: this project through
//! `kafka-cli perf produce` and in the bench's loop on tokio and on async-std, librdkafka's
//! BaseProducer, FutureProducer, BaseConsumer and StreamConsumer, and rskafka.
//! Each returns what it did; the parent measures CPU time and peak RSS with `wait4`.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures_util::{FutureExt, StreamExt};

/// One client run.
#[derive(Debug, Clone)]
pub struct Job {
    pub client: String,
    pub role: String,
    pub brokers: String,
    pub topic: String,
    pub count: u64,
    pub size: usize,
    pub acks: String,
    pub compression: String,
    /// Records per second offered (open loop), 0 for as fast as possible.
    pub rate: u64,
    /// Security settings (`security.protocol`, `ssl.*`), the same keys for every client;
    /// passed to the child in `BENCH_SECURITY`, one `key=value` a line.
    pub security: Vec<(String, String)>,
    /// Distinct keys the records take in turn (0: no keys); passed in `BENCH_KEYS`.
    pub keys: u64,
}

/// The key count a child was given (`BENCH_KEYS`).
pub fn keys_from_env() -> u64 {
    std::env::var("BENCH_KEYS").map_or(0, |v| v.parse().expect("BENCH_KEYS: a number"))
}

/// The keys a keyed run takes in turn, the same bytes for every client.
pub fn keys_of(j: &Job) -> Vec<Vec<u8>> {
    (0..j.keys)
        .map(|k| format!("key-{k}").into_bytes())
        .collect()
}

/// The security settings a child was given (`BENCH_SECURITY`).
pub fn security_from_env() -> Vec<(String, String)> {
    std::env::var("BENCH_SECURITY")
        .unwrap_or_default()
        .lines()
        .filter_map(|l| l.split_once('='))
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect()
}

/// What a run did.
#[derive(Debug, Default)]
pub struct Done {
    pub records: u64,
    pub secs: f64,
    /// Delivery latencies in microseconds, from each record's intended send time.
    pub latencies_us: Vec<u64>,
}

const PARTITIONS: i32 = 3;

/// The acks and compression of the out-of-the-box cell: each client with its own defaults, only
/// the brokers and the topic given.
pub const DEFAULTS: &str = "default";

/// The job runs a client out of the box.
pub fn out_of_the_box(j: &Job) -> bool {
    j.acks == DEFAULTS
}
/// Outstanding deliveries a closed-loop producer keeps before awaiting the oldest.
const WINDOW: usize = 100_000;

/// The settings every producer gets (as each client spells them).
pub fn ours_producer_config(j: &Job) -> Vec<(String, String)> {
    let idempotent = if j.acks == "all" { "true" } else { "false" };
    // One connection, as every peer produces; THREE_CONNECTIONS is the same client on a
    // connection per partition, to show how much the broker serving connections in parallel
    // adds.
    let connections = if j.client == THREE_CONNECTIONS {
        "3"
    } else {
        "1"
    };
    [
        ("bootstrap.servers", j.brokers.as_str()),
        ("acks", j.acks.as_str()),
        ("compression.type", j.compression.as_str()),
        ("linger.ms", "5"),
        ("batch.size", "1000000"),
        ("max.request.size", "1048576"),
        ("enable.idempotence", idempotent),
        // This project's setting (not Java's or librdkafka's): the broker serves each
        // connection's requests one at a time.
        ("connections.per.broker", connections),
    ]
    .into_iter()
    .filter(|(k, _)| !scale_default(j, k))
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .chain(j.security.iter().cloned())
    .collect()
}

/// Whether a keyed run (the scale cell) leaves setting `key` to the client's default: a batch
/// of 1 MB per partition is the matrix's choice for one stream of records into 3 partitions,
/// and no choice for thousands (ours and Java's reserve `batch.size` of `buffer.memory` for
/// each open batch: 32 of them at 1 MB). Each client then batches as its users' do.
fn scale_default(j: &Job, key: &str) -> bool {
    j.keys > 0 && matches!(key, "batch.size" | "max.request.size" | "message.max.bytes")
}

/// ours-tokio with `connections.per.broker=3`: a connection per partition.
pub const THREE_CONNECTIONS: &str = "ours-tokio-3conn";

/// `kafka-cli perf produce`, the tool a user runs first (the path comes from `KAFKA_CLI`).
pub const CLI: &str = "ours-cli";

/// librdkafka's own `rdkafka_performance`, built from the source `rdkafka-sys` ships (the path
/// comes from `RDKAFKA_PERFORMANCE`).
pub const RDKAFKA_PERF: &str = "rdkafka_performance";

/// franz-go (`kgo`) through `bench/franz`, a fixed-count harness (franz-go's own bench program
/// has no record count; the path comes from `FRANZ_BENCH`).
pub const FRANZ: &str = "franz-go";

/// The Java client's own `ProducerPerformance` and `ConsumerPerformance` (`kafka-tools`; the
/// jar directory comes from `KAFKA_JARS`).
pub const JAVA_PERF: &str = "java-perf";

pub fn rdkafka_producer_config(j: &Job) -> Vec<(String, String)> {
    let idempotent = if j.acks == "all" { "true" } else { "false" };
    [
        ("bootstrap.servers", j.brokers.as_str()),
        ("acks", j.acks.as_str()),
        ("compression.type", j.compression.as_str()),
        ("linger.ms", "5"),
        ("batch.size", "1000000"),
        ("message.max.bytes", "1048576"),
        ("enable.idempotence", idempotent),
        // Room for every record in flight, as rdkafka_performance gives itself: the loop below
        // never waits for the queue.
        ("queue.buffering.max.messages", "10000000"),
        ("queue.buffering.max.kbytes", "2097151"),
        // Keys spread as Java's (and ours) spread them: murmur2, not librdkafka's crc32
        // default, so every client's records land on the same partitions.
        ("partitioner", "murmur2_random"),
    ]
    .into_iter()
    .filter(|(k, _)| !scale_default(j, k))
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .chain(j.security.iter().cloned())
    .collect()
}

/// rskafka takes ready batches: up to about 900 kB of records per request, with their framing
/// (Apache Kafka refuses a batch over `message.max.bytes`, 1 MB and 12 bytes), at most 10,000.
pub fn rskafka_batch(size: usize) -> usize {
    (900_000 / (size + 20)).clamp(1, 10_000)
}

pub fn run(j: &Job) -> Done {
    if let Some((name, per_txn)) = crate::txn::per_txn(&j.client) {
        return match name {
            "ours-tokio-txn" => tokio_rt().block_on(crate::txn::ours(j, per_txn)),
            "rdkafka-txn" => crate::txn::rdkafka(j, per_txn),
            other => panic!("no transactional client {other}"),
        };
    }
    match (j.client.as_str(), j.role.as_str()) {
        ("ours-tokio" | THREE_CONNECTIONS, "produce") => tokio_rt().block_on(ours_tokio_produce(j)),
        (CLI, _) => exec_cli(j),
        (RDKAFKA_PERF, role) => rdkafka_performance(j, role),
        (JAVA_PERF, role) => java_performance(j, role),
        (FRANZ, role) => franz(j, role),
        ("ours-asyncstd", "produce") => smol::block_on(ours_asyncstd_produce(j)),
        ("ours-tokio", "consume") => tokio_rt().block_on(ours_tokio_consume(j)),
        ("rdkafka-base", "produce") => rdkafka_base_produce(j),
        ("rdkafka-future", "produce") => tokio_rt().block_on(rdkafka_future_produce(j)),
        ("rdkafka-stream", "consume") => tokio_rt().block_on(rdkafka_stream_consume(j)),
        ("rdkafka-base", "consume") => rdkafka_base_consume(j),
        ("rskafka", "produce") => tokio_rt().block_on(rskafka_produce(j)),
        (c, r) => panic!("unknown client {c} for {r}"),
    }
}

fn tokio_rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a tokio runtime")
}

/// The intended send time of record `i` at `rate` per second (open loop).
fn intended(start: Instant, i: u64, rate: u64) -> Instant {
    start + Duration::from_nanos(i * 1_000_000_000 / rate)
}

macro_rules! ours_produce {
    ($name:ident, $krate:ident, $sleep:expr, $yield_now:expr) => {
        async fn $name(j: &Job) -> Done {
            use $krate::{Producer, Record, Topic};
            let p = Producer::from_map(ours_producer_config(j)).expect("valid config");
            // Shared, as an application holding its payloads in `Bytes` (and its topic in a
            // `Topic`) would send them.
            let value = bytes::Bytes::from(bytes_of(j.size));
            let topic = Topic::from(j.topic.as_str());
            let start = Instant::now();
            let mut done = Done::default();
            if j.rate > 0 {
                // Open loop: the latency counts from the intended time, so time spent under
                // back-pressure is not hidden.
                let mut pending = futures_util::stream::FuturesUnordered::new();
                for i in 0..j.count {
                    let due = intended(start, i, j.rate);
                    while Instant::now() < due {
                        // Take what completed while waiting. The wait is in whole milliseconds,
                        // as BaseProducer's `poll(due - now)` (librdkafka's timeout counts
                        // milliseconds): under one, take only what is ready, and spin to the
                        // intended time, as that loop does. A timer's rounding would make
                        // every send late and count against the client.
                        let wait = Duration::from_millis((due - Instant::now()).as_millis() as u64);
                        if wait.is_zero() {
                            while let Some(Some(t)) = pending.next().now_or_never() {
                                done.latencies_us.push(t);
                            }
                            $yield_now.await;
                            continue;
                        }
                        let next = pending.next();
                        match futures_util::future::select(
                            std::pin::pin!(next),
                            std::pin::pin!($sleep(wait)),
                        )
                        .await
                        {
                            futures_util::future::Either::Left((Some(t), _)) => {
                                done.latencies_us.push(t)
                            }
                            _ => {}
                        }
                    }
                    let d = p
                        .send(Record::new(topic.clone(), value.clone()))
                        .await
                        .expect("send");
                    pending.push(async move {
                        d.await.expect("delivered");
                        due.elapsed().as_micros() as u64
                    });
                }
                while let Some(t) = pending.next().await {
                    done.latencies_us.push(t);
                }
            } else {
                // The API's bulk idiom (as `kafka-cli perf produce`): outcomes in send order.
                let mut pending = $krate::Deliveries::new();
                let keys: Vec<bytes::Bytes> = keys_of(j).into_iter().map(Into::into).collect();
                for i in 0..j.count {
                    let mut record = Record::new(topic.clone(), value.clone());
                    if !keys.is_empty() {
                        record = record.key(keys[(i % j.keys) as usize].clone());
                    }
                    let d = p.send(record).await.expect("send");
                    pending.push(d, ());
                    if pending.len() >= WINDOW {
                        pending.next().await.expect("full").1.expect("delivered");
                    }
                }
                while let Some(((), outcome)) = pending.next().await {
                    outcome.expect("delivered");
                }
            }
            done.secs = start.elapsed().as_secs_f64();
            done.records = j.count;
            p.close(Duration::from_secs(10)).await;
            done
        }
    };
}

ours_produce!(
    ours_tokio_produce,
    kafka_tokio,
    tokio::time::sleep,
    tokio::task::yield_now()
);
ours_produce!(
    ours_asyncstd_produce,
    kafka_asyncstd,
    |d| async move {
        smol::Timer::after(d).await;
    },
    smol::future::yield_now()
);

fn bytes_of(size: usize) -> Vec<u8> {
    (0..size).map(|i| b'a' + (i % 26) as u8).collect()
}

async fn ours_tokio_consume(j: &Job) -> Done {
    use kafka_tokio::{Consumer, StartFrom};
    // One connection to the broker, as librdkafka fetches.
    let mut c = Consumer::from_map([
        ("bootstrap.servers", j.brokers.as_str()),
        ("connections.per.broker", "1"),
    ])
    .expect("config");
    c.assign(
        (0..PARTITIONS).map(|p| (j.topic.as_str(), p)),
        StartFrom::Earliest,
    )
    .expect("assign");
    let start = Instant::now();
    let mut n = 0;
    while n < j.count {
        n += c.recv_batch().await.expect("records").len() as u64;
    }
    Done {
        records: n,
        secs: start.elapsed().as_secs_f64(),
        ..Done::default()
    }
}

struct Latencies {
    start: Instant,
    rate: u64,
    seen: Mutex<Vec<u64>>,
    failed: std::sync::atomic::AtomicU64,
}

/// The delivery-report context (a local type around the shared state). Its callback does no
/// allocation and takes no lock per record unless latencies are measured (open loop), as
/// `rdkafka_performance`'s own callback counts.
struct Ctx(Arc<Latencies>);

impl rdkafka::ClientContext for Ctx {}

impl rdkafka::producer::ProducerContext for Ctx {
    /// The record's index, carried in the opaque pointer itself (no `Box`).
    type DeliveryOpaque = usize;
    fn delivery(&self, r: &rdkafka::message::DeliveryResult<'_>, i: usize) {
        let l = &self.0;
        if r.is_err() {
            l.failed.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        }
        if l.rate > 0 {
            let t = intended(l.start, i as u64, l.rate).elapsed().as_micros() as u64;
            l.seen.lock().expect("not poisoned").push(t);
        }
    }
}

fn rdkafka_config(pairs: Vec<(String, String)>) -> rdkafka::ClientConfig {
    let mut c = rdkafka::ClientConfig::new();
    for (k, v) in pairs {
        c.set(k, v);
    }
    c
}

fn rdkafka_base_produce(j: &Job) -> Done {
    use rdkafka::producer::{BaseProducer, BaseRecord, Producer};
    let ctx = Arc::new(Latencies {
        start: Instant::now(),
        rate: j.rate,
        seen: Mutex::new(Vec::new()),
        failed: Default::default(),
    });
    let p: BaseProducer<Ctx> = rdkafka_config(rdkafka_producer_config(j))
        .create_with_context(Ctx(ctx.clone()))
        .expect("config");
    let value = bytes_of(j.size);
    let keys = keys_of(j);
    let start = ctx.start;
    for i in 0..j.count {
        if j.rate > 0 {
            let due = intended(start, i, j.rate);
            while Instant::now() < due {
                p.poll(due - Instant::now());
            }
        }
        let mut record = BaseRecord::<[u8], [u8], usize>::with_opaque_to(&j.topic, i as usize)
            .payload(&value[..]);
        if !keys.is_empty() {
            record = record.key(&keys[(i % j.keys) as usize][..]);
        }
        loop {
            match p.send(record) {
                Ok(()) => break,
                Err((_, r)) => {
                    // QueueFull: serve delivery reports, then try again.
                    record = r;
                    p.poll(Duration::from_millis(1));
                }
            }
        }
        // Delivery reports every 1,000 sends (every send in the open loop, whose latencies
        // count from them), not a poll per record.
        if j.rate > 0 || i % 1000 == 999 {
            p.poll(Duration::ZERO);
        }
    }
    p.flush(Duration::from_secs(120)).expect("flushed");
    let failed = ctx.failed.load(std::sync::atomic::Ordering::Relaxed);
    assert_eq!(failed, 0, "librdkafka failed {failed} records");
    let latencies_us = std::mem::take(&mut *ctx.seen.lock().expect("not poisoned"));
    Done {
        records: j.count,
        secs: start.elapsed().as_secs_f64(),
        latencies_us,
    }
}

async fn rdkafka_future_produce(j: &Job) -> Done {
    use rdkafka::producer::{FutureProducer, FutureRecord};
    let p: FutureProducer = rdkafka_config(rdkafka_producer_config(j))
        .create()
        .expect("config");
    let value = bytes_of(j.size);
    let start = Instant::now();
    let mut pending = VecDeque::new();
    for _ in 0..j.count {
        let mut record = FutureRecord::<(), [u8]>::to(&j.topic).payload(&value[..]);
        let d = loop {
            match p.send_result(record) {
                Ok(d) => break d,
                Err((_, r)) => {
                    record = r;
                    // QueueFull: wait for the oldest delivery to make room.
                    if let Some(d) = pending.pop_front() {
                        let d: rdkafka::producer::DeliveryFuture = d;
                        d.await.expect("not cancelled").expect("delivered");
                    } else {
                        tokio::time::sleep(Duration::from_millis(1)).await;
                    }
                }
            }
        };
        pending.push_back(d);
        if pending.len() >= WINDOW {
            let d = pending.pop_front().expect("full");
            d.await.expect("not cancelled").expect("delivered");
        }
    }
    for d in pending {
        d.await.expect("not cancelled").expect("delivered");
    }
    Done {
        records: j.count,
        secs: start.elapsed().as_secs_f64(),
        ..Done::default()
    }
}

/// Replaces this child with `kafka-cli perf produce` (with the settings ours-tokio gets, or none
/// out of the box) or `kafka-cli perf consume`, the tool a user runs; `wait4` in the parent
/// measures it, and its `--json` line is the report.
fn exec_cli(j: &Job) -> Done {
    use std::os::unix::process::CommandExt;
    let cli = std::env::var("KAFKA_CLI").expect("KAFKA_CLI: the path of a release kafka-cli");
    let mut cmd = std::process::Command::new(cli);
    cmd.args(["-b", &j.brokers]);
    if j.role == "produce" {
        if !out_of_the_box(j) {
            x_settings(&mut cmd, ours_producer_config(j));
        }
        cmd.args(["perf", "produce", "-t", &j.topic, "--json"]);
        cmd.args(["-n", &j.count.to_string(), "-s", &j.size.to_string()]);
        if j.keys > 0 {
            cmd.args(["--keys", &j.keys.to_string()]);
        }
    } else {
        x_settings(&mut cmd, j.security.clone());
        cmd.args(["perf", "consume", "-t", &j.topic, "--json"]);
        cmd.args(["-n", &j.count.to_string()]);
    }
    panic!("exec {cmd:?}: {}", cmd.exec());
}

/// Passes settings to a tool as `-X key=value` (kafka-cli's and rdkafka_performance's flag),
/// but for the broker list, which the tool takes as `-b`.
fn x_settings(cmd: &mut std::process::Command, settings: Vec<(String, String)>) {
    for (k, v) in settings {
        if k != "bootstrap.servers" {
            cmd.args(["-X", &format!("{k}={v}")]);
        }
    }
}

/// Runs a peer's own tool as this child's child (its CPU time and peak RSS reach the parent's
/// `wait4` through this process's), and reads its summary: (records, seconds) from `parse`.
fn run_tool(mut cmd: std::process::Command, parse: impl Fn(&str) -> Option<(u64, f64)>) -> Done {
    let out = cmd.output().unwrap_or_else(|e| panic!("run {cmd:?}: {e}"));
    let text = format!(
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "{cmd:?} failed: {text}");
    let (records, secs) = parse(&text).unwrap_or_else(|| panic!("no summary from {cmd:?}: {text}"));
    Done {
        records,
        secs,
        ..Done::default()
    }
}

/// The first number after `before` in `text`, up to the next non-digit.
fn number_after(text: &str, before: &str) -> Option<f64> {
    let at = text.find(before)? + before.len();
    let digits: String = text[at..]
        .trim_start()
        .chars()
        .take_while(|c| c.is_ascii_digit() || *c == '.')
        .collect();
    digits.parse().ok()
}

/// `rdkafka_performance -P` or `-C`, with the settings rdkafka-base gets.
fn rdkafka_performance(j: &Job, role: &str) -> Done {
    let bin = std::env::var("RDKAFKA_PERFORMANCE").expect("RDKAFKA_PERFORMANCE: its path");
    let mut cmd = std::process::Command::new(bin);
    cmd.args([
        "-t",
        &j.topic,
        "-b",
        &j.brokers,
        "-c",
        &j.count.to_string(),
        "-q",
    ]);
    if role == "produce" {
        cmd.args(["-P", "-s", &j.size.to_string()]);
        if out_of_the_box(j) {
            // The library's own default: the tool sets linger.ms=1000 for itself.
            cmd.args(["-X", "linger.ms=5"]);
        } else {
            x_settings(&mut cmd, rdkafka_producer_config(j));
        }
        // "% N messages produced (B bytes), N delivered (offset O, F failed) in Tms: ..."
        run_tool(cmd, |t| {
            let line = t.lines().find(|l| l.contains("messages produced"))?;
            let failed: u64 = line
                .split(" failed)")
                .next()?
                .rsplit(' ')
                .next()?
                .parse()
                .ok()?;
            assert_eq!(failed, 0, "rdkafka_performance failed records: {line}");
            let delivered = number_after(line, "bytes), ")?;
            let ms = number_after(line, " in ")?;
            Some((delivered as u64, ms / 1000.0))
        })
    } else {
        cmd.arg("-C").args(["-o", "beginning"]);
        for p in 0..PARTITIONS {
            cmd.args(["-p", &p.to_string()]);
        }
        // "% N messages (B bytes) consumed in Tms: ..."
        run_tool(cmd, |t| {
            let line = t.lines().find(|l| l.contains(") consumed in "))?;
            Some((
                number_after(line, "% ")? as u64,
                number_after(line, "consumed in ")? / 1000.0,
            ))
        })
    }
}

/// franz-go's harness (`bench/franz/main.go`), with the cell's settings; it prints the JSON
/// line `measure` reads.
fn franz(j: &Job, role: &str) -> Done {
    let bin = std::env::var("FRANZ_BENCH").expect("FRANZ_BENCH: the franz-bench binary");
    let mut cmd = std::process::Command::new(bin);
    cmd.args([role, &j.brokers, &j.topic, &j.count.to_string()]);
    if role == "produce" {
        cmd.args([&j.size.to_string(), &j.acks, &j.compression]);
    }
    run_tool(cmd, |t| {
        let v: serde_json::Value =
            serde_json::from_str(t.lines().find(|l| l.starts_with('{'))?).ok()?;
        Some((v["records"].as_u64()?, v["secs"].as_f64()?))
    })
}

/// Java's `ProducerPerformance` (closed loop: `--throughput -1`) or `ConsumerPerformance`, with
/// the settings rdkafka-base gets, as Java spells them.
fn java_performance(j: &Job, role: &str) -> Done {
    let jars = std::env::var("KAFKA_JARS").expect("KAFKA_JARS: the Apache Kafka jar directory");
    let mut cmd = std::process::Command::new("java");
    cmd.args(["-cp", &format!("{jars}/*")]);
    if role == "produce" {
        cmd.arg("org.apache.kafka.tools.ProducerPerformance");
        cmd.args(["--topic", &j.topic, "--num-records", &j.count.to_string()]);
        cmd.args(["--record-size", &j.size.to_string(), "--throughput", "-1"]);
        cmd.arg("--producer-props");
        if out_of_the_box(j) {
            cmd.arg(format!("bootstrap.servers={}", j.brokers));
        } else {
            for (k, v) in java_producer_config(j) {
                cmd.arg(format!("{k}={v}"));
            }
        }
        // "N records sent, R records/sec (M MB/sec), ..."
        run_tool(cmd, |t| {
            let line = t.lines().rev().find(|l| l.contains(" records sent, "))?;
            let n = number_after(line, "")?;
            let rate = number_after(line, "records sent, ")?;
            Some((n as u64, n / rate))
        })
    } else {
        cmd.arg("org.apache.kafka.tools.ConsumerPerformance");
        cmd.args(["--bootstrap-server", &j.brokers, "--topic", &j.topic]);
        cmd.args(["--num-records", &j.count.to_string(), "--timeout", "120000"]);
        cmd.arg("--hide-header");
        // One CSV line: start, end, MB, MB/s, records, records/s, rebalance ms, fetch ms, ...;
        // the fetch time (after the group's join) is the one comparable with the others'.
        run_tool(cmd, |t| {
            let line = t.lines().rev().find(|l| l.split(',').count() >= 8)?;
            let f: Vec<&str> = line.split(',').map(str::trim).collect();
            Some((f[4].parse().ok()?, f[7].parse::<f64>().ok()? / 1000.0))
        })
    }
}

/// The producer settings in Java's names (the same as librdkafka's here, but for the
/// batch size and request size limits).
pub fn java_producer_config(j: &Job) -> Vec<(String, String)> {
    ours_producer_config(j)
        .into_iter()
        .filter(|(k, _)| k != "connections.per.broker")
        .collect()
}

/// librdkafka's BaseConsumer, polled in a loop: its fastest consumer API.
fn rdkafka_base_consume(j: &Job) -> Done {
    let c: rdkafka::consumer::BaseConsumer = rdkafka_assigned(j);
    let start = Instant::now();
    let mut n = 0;
    while n < j.count {
        if let Some(m) = c.poll(Duration::from_millis(100)) {
            m.expect("a record");
            n += 1;
        }
    }
    Done {
        records: n,
        secs: start.elapsed().as_secs_f64(),
        ..Done::default()
    }
}

/// A librdkafka consumer (default fetch settings) assigned the topic's partitions from the
/// beginning.
fn rdkafka_assigned<C>(j: &Job) -> C
where
    C: rdkafka::consumer::Consumer + rdkafka::config::FromClientConfig,
{
    use rdkafka::{Offset, TopicPartitionList};
    let c: C = rdkafka_config(vec![
        ("bootstrap.servers".into(), j.brokers.clone()),
        ("group.id".into(), "bench".into()),
        ("enable.auto.commit".into(), "false".into()),
    ])
    .create()
    .expect("config");
    let mut tpl = TopicPartitionList::new();
    for p in 0..PARTITIONS {
        tpl.add_partition_offset(&j.topic, p, Offset::Beginning)
            .expect("valid");
    }
    c.assign(&tpl).expect("assigned");
    c
}

async fn rdkafka_stream_consume(j: &Job) -> Done {
    let c: rdkafka::consumer::StreamConsumer = rdkafka_assigned(j);
    let start = Instant::now();
    let mut stream = c.stream();
    let mut n = 0;
    while n < j.count {
        stream.next().await.expect("a stream").expect("a record");
        n += 1;
    }
    Done {
        records: n,
        secs: start.elapsed().as_secs_f64(),
        ..Done::default()
    }
}

async fn rskafka_produce(j: &Job) -> Done {
    use rskafka::client::partition::{Compression, UnknownTopicHandling};
    use rskafka::client::ClientBuilder;
    use rskafka::record::Record;
    let client = ClientBuilder::new(vec![j.brokers.clone()])
        .build()
        .await
        .expect("client");
    let compression = match j.compression.as_str() {
        "lz4" => Compression::Lz4,
        _ => Compression::NoCompression,
    };
    let batch = rskafka_batch(j.size);
    let value = bytes_of(j.size);
    let start = Instant::now();
    let per_partition = j.count / PARTITIONS as u64;
    let mut tasks = Vec::new();
    for p in 0..PARTITIONS {
        let n = if p == 0 {
            j.count - per_partition * (PARTITIONS as u64 - 1)
        } else {
            per_partition
        };
        let pc = client
            .partition_client(j.topic.clone(), p, UnknownTopicHandling::Retry)
            .await
            .expect("partition client");
        let value = value.clone();
        tasks.push(tokio::spawn(async move {
            let mut left = n;
            while left > 0 {
                let k = left.min(batch as u64);
                let ms = std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .expect("after 1970")
                    .as_millis() as i64;
                let timestamp =
                    rskafka::chrono::DateTime::from_timestamp_millis(ms).expect("in range");
                // Batches are built ready for rskafka, as its API asks.
                let records = (0..k)
                    .map(|_| Record {
                        key: None,
                        value: Some(value.clone()),
                        headers: Default::default(),
                        timestamp,
                    })
                    .collect();
                pc.produce(records, compression).await.expect("produced");
                left -= k;
            }
        }));
    }
    for t in tasks {
        t.await.expect("task");
    }
    Done {
        records: j.count,
        secs: start.elapsed().as_secs_f64(),
        ..Done::default()
    }
}
