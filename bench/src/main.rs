//! Benchmarks side by side with librdkafka, the Java client and rskafka, in one run on the same
//! broker: each through our harness and librdkafka and Java through their own perf tools too.
//!
//! - `kafka-bench matrix [--records N] [--rounds R] [--brokers tansu,kafka] [--out FILE]`: on
//!   each broker, for each cell of the matrix (record size × acks × compression), R rounds (3
//!   unless told) of each producer in its own child process, against a freshly started Tansu of
//!   its own or into a topic of its own on the cell's Apache Kafka node, in an order that
//!   rotates from cell to cell and round to round; the report gives each figure's median;
//!   then every consumer reads what rdkafka-base wrote, on its broker. CPU time and peak RSS come from `wait4`;
//!   the broker's CPU time during each producer's run from `/proc`.
//!   Then the open-loop latency at a fixed offered rate. Writes the report with its plot.
//! - `kafka-bench tls [--records N] [--rounds R] [--out docs/benchmarks-tls.md]`: the TLS
//!   cell, on Apache Kafka (`tests::kafka::Cluster`): ours-tokio and rdkafka-base, 100 B and
//!   10 KiB, acks=1, over PLAINTEXT and over SSL (mutual TLS) on the same broker.
//! - `kafka-bench observability [--records N] [--rounds R] [--out docs/benchmarks-observability.md]`:
//!   `kafka-cli perf produce` with metrics and tracing on against both compiled out, 100 B
//!   records, on Apache Kafka: the client's CPU per record of each.
//! - `kafka-bench child CLIENT ROLE BROKERS TOPIC COUNT SIZE ACKS COMPRESSION RATE`: one run,
//!   one JSON line on stdout.

mod clients;
mod null;
mod observability;
mod report;
mod scale;
mod tls;
mod txn;

use std::process::{Command, Stdio};

use clients::Job;

/// What the parent measured of one child.
#[derive(Debug, Clone, Default)]
pub struct Measured {
    pub client: String,
    pub records: u64,
    pub secs: f64,
    pub cpu_secs: f64,
    pub peak_rss_mb: f64,
    pub latency_us: Option<[u64; 3]>,
    /// The broker's CPU seconds during the run (a producer's broker is its own).
    pub broker_cpu_secs: Option<f64>,
    /// The slowest and fastest of those runs, in records/s.
    pub records_per_sec_range: (f64, f64),
    /// The most TCP connections the client held at once (sampled every 20 ms).
    pub peak_connections: usize,
}

impl Measured {
    pub fn records_per_sec(&self) -> f64 {
        self.records as f64 / self.secs.max(1e-9)
    }
    pub fn cpu_per_million(&self) -> f64 {
        self.cpu_secs / (self.records as f64 / 1e6).max(1e-9)
    }
    pub fn broker_cpu_per_million(&self) -> Option<f64> {
        Some(self.broker_cpu_secs? / (self.records as f64 / 1e6).max(1e-9))
    }
    /// The share of the machine's cores that the client and its broker kept busy.
    pub fn machine_busy(&self, cores: usize) -> Option<f64> {
        Some((self.cpu_secs + self.broker_cpu_secs?) / (self.secs.max(1e-9) * cores as f64))
    }
}

/// One cell of the matrix.
#[derive(Debug, Clone)]
pub struct Cell {
    pub size: usize,
    pub acks: &'static str,
    pub compression: &'static str,
    pub records: u64,
    pub producers: Vec<Measured>,
    pub consumers: Vec<Measured>,
}

/// The broker a matrix runs on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BrokerKind {
    /// Tansu (memory storage), freshly started for each producer run.
    Tansu,
    /// Apache Kafka, one node (`scripts/kafka`), freshly started for each cell.
    Kafka,
}

impl BrokerKind {
    pub fn name(self) -> &'static str {
        match self {
            BrokerKind::Tansu => "Tansu",
            BrokerKind::Kafka => "Apache Kafka",
        }
    }

    /// The producers compared on this broker. Java's ProducerPerformance runs on Apache Kafka
    /// only: against Tansu 0.6 the Java client 4.x sends nothing within a minute.
    pub fn producers(self) -> Vec<&'static str> {
        let mut v = vec![
            clients::CLI,
            "ours-tokio",
            clients::THREE_CONNECTIONS,
            "ours-asyncstd",
            "rdkafka-base",
            clients::RDKAFKA_PERF,
            "rdkafka-future",
            "rskafka",
            clients::FRANZ,
        ];
        if self == BrokerKind::Kafka {
            v.push(clients::JAVA_PERF);
        }
        v
    }

    /// The consumers compared on this broker (Java's ConsumerPerformance on Apache Kafka only,
    /// as above).
    pub fn consumers(self) -> Vec<&'static str> {
        let mut v = vec![
            clients::CLI,
            "ours-tokio",
            "rdkafka-base",
            clients::RDKAFKA_PERF,
            "rdkafka-stream",
            clients::FRANZ,
        ];
        if self == BrokerKind::Kafka {
            v.push(clients::JAVA_PERF);
        }
        v
    }

    /// The producers of the out-of-the-box cell, each with its own defaults: ours through the
    /// CLI, and every peer through its authors' tool (the defaults a user meets first).
    pub fn out_of_the_box(self) -> Vec<&'static str> {
        let mut v = vec![clients::CLI, clients::RDKAFKA_PERF, clients::FRANZ];
        if self == BrokerKind::Kafka {
            v.push(clients::JAVA_PERF);
        }
        v
    }

    /// Bytes each client writes in a cell at most: Tansu holds them in memory and is
    /// restarted for each run; Apache Kafka writes them to disk for the whole cell.
    pub fn cell_bytes(self) -> u64 {
        match self {
            BrokerKind::Tansu => 2 << 30,
            BrokerKind::Kafka => 256 << 20,
        }
    }
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        Some("child") => child(&args[1..]),
        Some("matrix") => matrix(&args[1..]),
        Some("tls") => tls::run(&args[1..]),
        Some("txn") => txn::run(&args[1..]),
        Some("observability") => observability::run(&args[1..]),
        Some("null") => null::run(&args[1..]),
        Some("scale") => scale::run(&args[1..]),
        _ => {
            eprintln!(
                "usage: kafka-bench matrix [--records N] [--rounds R] [--out FILE] | null [--records N] [--rounds R] [--sizes 100,1024] | scale [--records N] [--rounds R] [--partitions 1,100,1000,10000] [--brokers kafka,tansu] | tls [--records N] [--rounds R] [--out FILE] | observability [--records N] [--rounds R] [--out FILE] | child ..."
            );
            std::process::exit(2);
        }
    }
}

fn child(a: &[String]) {
    let [client, role, brokers, topic, count, size, acks, compression, rate] = a else {
        panic!("child takes 9 arguments, got {a:?}");
    };
    let job = Job {
        client: client.clone(),
        role: role.clone(),
        brokers: brokers.clone(),
        topic: topic.clone(),
        count: count.parse().expect("count"),
        size: size.parse().expect("size"),
        acks: acks.clone(),
        compression: compression.clone(),
        rate: rate.parse().expect("rate"),
        security: clients::security_from_env(),
        keys: clients::keys_from_env(),
    };
    let mut done = clients::run(&job);
    done.latencies_us.sort_unstable();
    let pct = |q: f64| -> u64 {
        let v = &done.latencies_us;
        if v.is_empty() {
            0
        } else {
            v[((v.len() - 1) as f64 * q) as usize]
        }
    };
    println!(
        "{}",
        serde_json::json!({
            "records": done.records,
            "secs": done.secs,
            "p50_us": pct(0.5), "p99_us": pct(0.99), "p999_us": pct(0.999),
        })
    );
}

/// A process's user and system CPU seconds so far, from `/proc/PID/stat`.
fn process_cpu_secs(pid: u32) -> f64 {
    let stat =
        std::fs::read_to_string(format!("/proc/{pid}/stat")).expect("the broker's /proc stat");
    // The fields after the command name (which may hold spaces) in its parentheses: utime and
    // stime are the 14th and 15th of the whole line, in clock ticks.
    let rest = &stat[stat.rfind(')').expect("stat has (comm)") + 2..];
    let f: Vec<&str> = rest.split(' ').collect();
    let ticks: f64 = f[11].parse::<f64>().expect("utime") + f[12].parse::<f64>().expect("stime");
    // SAFETY: sysconf only reads a configuration value.
    ticks / unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as f64
}

/// The TCP connections (established or being set up) that process `pid` holds: its socket
/// inodes matched against the kernel's TCP tables. 0 once it has exited.
///
/// A peer's own tool runs as the child's child, so its descendants' sockets count too.
pub(crate) fn tcp_connections(pid: u32) -> usize {
    let mut pids = vec![pid];
    let mut i = 0;
    while let Some(&p) = pids.get(i) {
        i += 1;
        let Ok(tasks) = std::fs::read_dir(format!("/proc/{p}/task")) else {
            continue;
        };
        for task in tasks.flatten() {
            let children =
                std::fs::read_to_string(task.path().join("children")).unwrap_or_default();
            pids.extend(
                children
                    .split_whitespace()
                    .filter_map(|c| c.parse::<u32>().ok()),
            );
        }
    }
    let inodes: std::collections::HashSet<String> = pids
        .iter()
        .filter_map(|p| std::fs::read_dir(format!("/proc/{p}/fd")).ok())
        .flatten()
        .flatten()
        .filter_map(|fd| std::fs::read_link(fd.path()).ok())
        .filter_map(|l| {
            let l = l.to_string_lossy().into_owned();
            Some(l.strip_prefix("socket:[")?.strip_suffix(']')?.to_owned())
        })
        .collect();
    ["tcp", "tcp6"]
        .iter()
        .filter_map(|t| std::fs::read_to_string(format!("/proc/{pid}/net/{t}")).ok())
        .flat_map(|table| {
            table
                .lines()
                .skip(1)
                .filter(|l| {
                    let f: Vec<&str> = l.split_whitespace().collect();
                    // st 01 ESTABLISHED, 02 SYN_SENT; field 9 is the inode.
                    f.len() > 9 && matches!(f[3], "01" | "02") && inodes.contains(f[9])
                })
                .map(|_| ())
                .collect::<Vec<_>>()
        })
        .count()
}

/// Runs one child and measures it, and the CPU time `broker_pid` spent meanwhile.
pub(crate) fn measure(job: &Job, broker_pid: Option<u32>) -> Measured {
    let broker_before = broker_pid.map(process_cpu_secs);
    let exe = std::env::current_exe().expect("own path");
    // Reaped below with wait4, which also gives its CPU time and peak RSS.
    #[allow(clippy::zombie_processes)]
    let child = Command::new(exe)
        .arg("child")
        .args([
            &job.client,
            &job.role,
            &job.brokers,
            &job.topic,
            &job.count.to_string(),
            &job.size.to_string(),
            &job.acks,
            &job.compression,
            &job.rate.to_string(),
        ])
        .env("BENCH_KEYS", job.keys.to_string())
        .env(
            "BENCH_SECURITY",
            job.security
                .iter()
                .map(|(k, v)| format!("{k}={v}\n"))
                .collect::<String>(),
        )
        .stdout(Stdio::piped())
        .spawn()
        .expect("spawn a child");
    let pid = child.id() as libc::pid_t;
    let sampling = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(true));
    let sampler = {
        let sampling = sampling.clone();
        std::thread::spawn(move || {
            let mut peak = 0;
            while sampling.load(std::sync::atomic::Ordering::Relaxed) {
                peak = peak.max(tcp_connections(pid as u32));
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
            peak
        })
    };
    let mut stdout = child.stdout.expect("piped");
    let mut out = String::new();
    std::io::Read::read_to_string(&mut stdout, &mut out).expect("child output");
    sampling.store(false, std::sync::atomic::Ordering::Relaxed);
    let peak_connections = sampler.join().expect("the sampler");
    let mut status = 0;
    // SAFETY: a zeroed rusage is a valid out-parameter; wait4 reaps our own child.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    let r = unsafe { libc::wait4(pid, &mut status, 0, &mut ru) };
    assert_eq!(r, pid, "wait4");
    let broker_cpu_secs = broker_pid
        .zip(broker_before)
        .map(|(b, t)| process_cpu_secs(b) - t);
    assert!(
        libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
        "{} {} failed (status {status}); its output: {out}",
        job.client,
        job.role
    );
    let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    let v: serde_json::Value = serde_json::from_str(out.trim()).expect("one JSON line");
    let lat = [
        v["p50_us"].as_u64().unwrap_or(0),
        v["p99_us"].as_u64().unwrap_or(0),
        v["p999_us"].as_u64().unwrap_or(0),
    ];
    let mut m = Measured {
        client: job.client.clone(),
        records: v["records"].as_u64().unwrap_or(0),
        // `kafka-cli perf --json` says "seconds".
        secs: v["secs"].as_f64().or(v["seconds"].as_f64()).unwrap_or(0.0),
        cpu_secs: tv(ru.ru_utime) + tv(ru.ru_stime),
        peak_rss_mb: ru.ru_maxrss as f64 / 1024.0,
        latency_us: (job.rate > 0).then_some(lat),
        broker_cpu_secs,
        records_per_sec_range: (0.0, 0.0),
        peak_connections,
    };
    // One run is its own slowest and fastest.
    m.records_per_sec_range = (m.records_per_sec(), m.records_per_sec());
    m
}

/// A client's figures over a cell's rounds: the median of each (of an even count, the mean of
/// the middle two) and the largest peak RSS, with the range of records/s.
pub(crate) fn median(runs: &[Measured]) -> Measured {
    fn mid(mut v: Vec<f64>) -> f64 {
        v.sort_by(f64::total_cmp);
        let n = v.len();
        if n % 2 == 1 {
            v[n / 2]
        } else {
            (v[n / 2 - 1] + v[n / 2]) / 2.0
        }
    }
    let first = runs.first().expect("at least one round");
    let rates: Vec<f64> = runs.iter().map(Measured::records_per_sec).collect();
    let brokers: Option<Vec<f64>> = runs.iter().map(|m| m.broker_cpu_secs).collect();
    Measured {
        client: first.client.clone(),
        records: first.records,
        secs: mid(runs.iter().map(|m| m.secs).collect()),
        cpu_secs: mid(runs.iter().map(|m| m.cpu_secs).collect()),
        peak_rss_mb: runs.iter().map(|m| m.peak_rss_mb).fold(0.0, f64::max),
        latency_us: first.latency_us,
        broker_cpu_secs: brokers.map(mid),
        records_per_sec_range: (
            rates.iter().copied().fold(f64::INFINITY, f64::min),
            rates.iter().copied().fold(0.0, f64::max),
        ),
        peak_connections: runs.iter().map(|m| m.peak_connections).max().unwrap_or(0),
    }
}

/// Whose topic the consumers read (the same for every consumer).
const CONSUMED_TOPIC_PRODUCER: &str = "rdkafka-base";

/// Where a producer writes in a cell: a fresh Tansu of its own, or a topic of its own on the
/// cell's Apache Kafka node.
enum Target {
    Tansu(tests::broker::Broker),
    Kafka { bootstrap: String, pid: Option<u32> },
}

impl Target {
    fn addr(&self) -> String {
        match self {
            Target::Tansu(b) => b.addr.clone(),
            Target::Kafka { bootstrap, .. } => bootstrap.clone(),
        }
    }
    fn pid(&self) -> Option<u32> {
        match self {
            Target::Tansu(b) => Some(b.pid()),
            Target::Kafka { pid, .. } => *pid,
        }
    }
}

/// One cell of the matrix: `rounds` rounds of every producer, each on a broker of its own (or
/// a topic of its own on the cell's Apache Kafka), then of every consumer (if any); `k` (the
/// cell's number) and the round rotate the order of clients.
#[allow(clippy::too_many_arguments)]
fn run_cell(
    broker: BrokerKind,
    (producers, consumers): (Vec<&'static str>, Vec<&'static str>),
    size: usize,
    acks: &'static str,
    compression: &'static str,
    n: u64,
    k: usize,
    rounds: usize,
) -> Cell {
    // Every client's rounds, in the order of `producers` and `consumers`.
    let mut produced: Vec<Vec<Measured>> = vec![Vec::new(); producers.len()];
    let mut consumed_runs: Vec<Vec<Measured>> = vec![Vec::new(); consumers.len()];
    let kafka = (broker == BrokerKind::Kafka).then(|| tests::kafka::Cluster::start(1));
    for round in 0..rounds {
        if rounds > 1 {
            eprintln!("  round {}/{rounds}", round + 1);
        }
        // Alternate: each cell and round starts with a different client.
        let mut order: Vec<usize> = (0..producers.len()).collect();
        order.rotate_left((k + round) % producers.len());
        // On Tansu each producer gets a broker of its own, freshly started: Tansu keeps
        // everything in memory, and a broker still holding (or freeing) another client's
        // 2 GiB would not be the same broker. The consumers then read what rdkafka-base
        // wrote, on its broker.
        let mut consumed = None;
        for i in order {
            let client = producers[i];
            let topic = format!("bench-{client}-{round}");
            let target = match &kafka {
                None => {
                    let b = tests::broker::Broker::start();
                    b.create_topic(&topic, 3);
                    Target::Tansu(b)
                }
                Some(cluster) => {
                    cluster.create_topic(&topic, 3, 1, &[]);
                    Target::Kafka {
                        bootstrap: cluster.bootstrap.clone(),
                        pid: cluster.pid(1),
                    }
                }
            };
            let m = measure(
                &Job {
                    client: client.into(),
                    role: "produce".into(),
                    brokers: target.addr(),
                    topic: topic.clone(),
                    count: n,
                    size,
                    acks: acks.into(),
                    compression: compression.into(),
                    rate: 0,
                    security: Vec::new(),
                    keys: 0,
                },
                target.pid(),
            );
            eprintln!(
                    "    {client:>19}: {:>10.0} records/s, {:.2} CPU-s per 1M, {:.0} MB peak RSS, broker {:.2} CPU-s per 1M",
                    m.records_per_sec(),
                    m.cpu_per_million(),
                    m.peak_rss_mb,
                    m.broker_cpu_per_million().unwrap_or(0.0)
                );
            produced[i].push(m);
            if client == CONSUMED_TOPIC_PRODUCER {
                consumed = Some((target, topic));
            }
        }
        if consumers.is_empty() {
            continue;
        }
        let (target, topic) = consumed.expect("rdkafka-base is among the producers");
        let mut order: Vec<usize> = (0..consumers.len()).collect();
        order.rotate_left((k + round) % consumers.len());
        for i in order {
            let client = consumers[i];
            let m = measure(
                &Job {
                    client: client.into(),
                    role: "consume".into(),
                    brokers: target.addr(),
                    topic: topic.clone(),
                    count: n,
                    size,
                    acks: acks.into(),
                    compression: compression.into(),
                    rate: 0,
                    security: Vec::new(),
                    keys: 0,
                },
                None,
            );
            eprintln!(
                "    {client:>19} (consume): {:>10.0} records/s, {:.2} CPU-s per 1M",
                m.records_per_sec(),
                m.cpu_per_million()
            );
            consumed_runs[i].push(m);
        }
    }
    Cell {
        size,
        acks,
        compression,
        records: n,
        producers: produced.iter().map(|r| median(r)).collect(),
        consumers: consumed_runs.iter().map(|r| median(r)).collect(),
    }
}

/// `--brokers tansu,kafka`: the brokers a cell runs on, in order, `default` when absent.
pub(crate) fn brokers_flag(a: &[String], default: &str) -> Vec<BrokerKind> {
    flag(a, "--brokers")
        .unwrap_or_else(|| default.into())
        .split(',')
        .map(|b| match b {
            "tansu" => BrokerKind::Tansu,
            "kafka" => BrokerKind::Kafka,
            other => panic!("--brokers takes tansu and kafka, not {other}"),
        })
        .collect()
}

pub(crate) fn flag(a: &[String], name: &str) -> Option<String> {
    a.iter()
        .position(|x| x == name)
        .and_then(|i| a.get(i + 1).cloned())
}

/// The commit measured (read before the run: the binaries are built from it), with a mark
/// when the tree had changes.
pub(crate) fn commit() -> String {
    let git = |args: &[&str]| {
        Command::new("git")
            .args(args)
            .output()
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
            .unwrap_or_default()
    };
    let mut commit = git(&["rev-parse", "--short", "HEAD"]);
    if !git(&["status", "--porcelain", "--untracked-files=no"]).is_empty() {
        commit.push_str(" (with uncommitted changes)");
    }
    commit
}

fn matrix(a: &[String]) {
    let records: u64 = flag(a, "--records").map_or(5_000_000, |v| v.parse().expect("--records N"));
    let out = flag(a, "--out").unwrap_or_else(|| "docs/benchmarks.md".into());
    let rate: u64 = flag(a, "--rate").map_or(100_000, |v| v.parse().expect("--rate N"));
    let latency_secs: u64 = flag(a, "--latency-secs").map_or(20, |v| v.parse().expect("secs"));
    let rounds: usize = flag(a, "--rounds").map_or(3, |v| v.parse().expect("--rounds N"));
    assert!(rounds >= 1, "--rounds takes 1 or more");
    let sizes: Vec<usize> = flag(a, "--sizes").map_or(vec![10, 100, 1024, 10240], |v| {
        v.split(',').map(|s| s.parse().expect("sizes")).collect()
    });
    let brokers = brokers_flag(a, "tansu,kafka");
    let commit = commit();
    let began = std::time::Instant::now();
    let mut sections = Vec::new();
    let total = (sizes.len() * 4 + 1) * brokers.len();
    let mut k = 0;
    for &broker in &brokers {
        let mut cells = Vec::new();
        for &size in &sizes {
            for acks in ["1", "all"] {
                for compression in ["none", "lz4"] {
                    k += 1;
                    // 5M records, or the broker's bytes per client and cell, whichever is fewer.
                    let n = records.min(broker.cell_bytes() / size as u64);
                    eprintln!(
                        "[{k}/{total}, {:.0} min in] {}: {size} B, acks={acks}, {compression}: {n} records per client",
                        began.elapsed().as_secs_f64() / 60.0,
                        broker.name()
                    );
                    let clients = (broker.producers(), broker.consumers());
                    cells.push(run_cell(
                        broker,
                        clients,
                        size,
                        acks,
                        compression,
                        n,
                        k,
                        rounds,
                    ));
                }
            }
        }
        // Out of the box: each producer with its own defaults, 100 B records.
        k += 1;
        let n = records.min(broker.cell_bytes() / 100);
        eprintln!(
            "[{k}/{total}, {:.0} min in] {}: 100 B, out of the box: {n} records per client",
            began.elapsed().as_secs_f64() / 60.0,
            broker.name()
        );
        let defaults = clients::DEFAULTS;
        let clients = (broker.out_of_the_box(), Vec::new());
        cells.push(run_cell(
            broker, clients, 100, defaults, defaults, n, k, rounds,
        ));
        sections.push((broker, cells));
    }
    // Open-loop latency: 100 B, acks=1, no compression, at a fixed offered rate.
    eprintln!("open-loop latency at {rate} records/s for {latency_secs} s");
    let mut latency = Vec::new();
    for client in ["ours-tokio", "rdkafka-base"] {
        let broker = tests::broker::Broker::start();
        broker.create_topic("latency", 3);
        let m = measure(
            &Job {
                client: client.into(),
                role: "produce".into(),
                brokers: broker.addr.clone(),
                topic: "latency".into(),
                count: rate * latency_secs,
                size: 100,
                acks: "1".into(),
                compression: "none".into(),
                rate,
                security: Vec::new(),
                keys: 0,
            },
            None,
        );
        eprintln!("    {client:>16}: p50/p99/p99.9 {:?} µs", m.latency_us);
        latency.push(m);
    }
    let sizes_flag: Vec<String> = sizes.iter().map(|s| s.to_string()).collect();
    let command = format!(
        "kafka-bench matrix --records {records} --rounds {rounds} --sizes {}",
        sizes_flag.join(",")
    );
    let md = report::markdown(&sections, &latency, rate, rounds, &command, &commit);
    std::fs::write(&out, md).expect("write the report");
    let svg_path = std::path::Path::new(&out).with_extension("svg");
    std::fs::write(&svg_path, report::svg(&sections[0].1)).expect("write the plot");
    eprintln!("wrote {out} and {}", svg_path.display());
}
