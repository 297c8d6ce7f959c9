//! The scale cell: keyed records spread over 1, 100, 1,000 and 10,000 partitions, ours
//! (`kafka-cli perf produce --keys`, the path users run) beside librdkafka (the bench's
//! BaseProducer with the same keys and a murmur2 partitioner: `rdkafka_performance` takes only
//! one fixed key), on one Apache Kafka node and on Tansu. The report gives each client's CPU
//! per record at each size and against its own at one partition, peak RSS, the connections it
//! held and the broker's CPU.

use std::fmt::Write as _;

use crate::clients::{Job, CLI};
use crate::{brokers_flag, flag, measure, median, BrokerKind, Measured};

const RDKAFKA: &str = "rdkafka-base";

/// Distinct keys, taken in turn: ten or more per partition at every size.
const KEYS: u64 = 100_000;

pub fn run(a: &[String]) {
    let records: u64 = flag(a, "--records").map_or(1_000_000, |v| v.parse().expect("--records N"));
    let rounds: usize = flag(a, "--rounds").map_or(3, |v| v.parse().expect("--rounds N"));
    let out = flag(a, "--out").unwrap_or_else(|| "docs/benchmarks-scale.md".into());
    let sizes: Vec<u32> = flag(a, "--partitions").map_or(vec![1, 100, 1000, 10_000], |v| {
        v.split(',')
            .map(|s| s.parse().expect("partitions"))
            .collect()
    });
    let brokers = brokers_flag(a, "kafka,tansu");
    let clients = [CLI, RDKAFKA];
    let mut sections = Vec::new();
    for &broker in &brokers {
        // One Apache Kafka node for the whole section, a topic per size that every client and
        // round writes to (10,000 partitions a client would be more than one node on this
        // machine holds); Tansu fresh for each run, as in the matrix.
        let kafka = (broker == BrokerKind::Kafka).then(|| tests::kafka::Cluster::start(1));
        let mut rows = Vec::new();
        for &partitions in &sizes {
            eprintln!(
                "{}: {partitions} partitions, {records} keyed 100 B records per client",
                broker.name()
            );
            let topic = format!("scale-{partitions}");
            if let Some(cluster) = &kafka {
                create_on_kafka(cluster, &topic, partitions);
                warm_up(&cluster.bootstrap, &topic);
            }
            let mut runs: Vec<Vec<Measured>> = vec![Vec::new(); clients.len()];
            let mut failed = vec![0usize; clients.len()];
            for round in 0..rounds {
                let mut order: Vec<usize> = (0..clients.len()).collect();
                order.rotate_left(round % clients.len());
                for i in order {
                    let tansu = kafka.is_none().then(|| {
                        let b = tests::broker::Broker::start();
                        b.create_topic(&topic, partitions);
                        warm_up(&b.addr, &topic);
                        b
                    });
                    let (addr, pid) = match (&kafka, &tansu) {
                        (Some(c), _) => (c.bootstrap.clone(), c.pid(1)),
                        (None, Some(b)) => (b.addr.clone(), Some(b.pid())),
                        (None, None) => unreachable!("one of the two"),
                    };
                    // A client that fails a run (records expired, say) is reported as
                    // failed, and the cell goes on.
                    let job = keyed_job(clients[i], &addr, &topic, records);
                    let run = std::panic::catch_unwind(|| measure(&job, pid));
                    let Ok(m) = run else {
                        eprintln!("  round {round} {:>12}: FAILED", clients[i]);
                        failed[i] += 1;
                        continue;
                    };
                    eprintln!(
                        "  round {round} {:>12}: {:>9.0} records/s, {:.3} CPU µs per record, {:.0} MB peak RSS, {} connections, broker {:.3} CPU µs per record",
                        clients[i],
                        m.records_per_sec(),
                        us(&m),
                        m.peak_rss_mb,
                        m.peak_connections,
                        broker_us(&m)
                    );
                    runs[i].push(m);
                }
            }
            let medians = runs
                .iter()
                .zip(&failed)
                .map(|(r, &f)| Figures {
                    median: (!r.is_empty()).then(|| median(r)),
                    failed: f,
                })
                .collect();
            rows.push((partitions, medians));
        }
        sections.push((broker, rows));
    }
    let md = report(&sections, records, rounds, &crate::commit());
    std::fs::write(&out, md).expect("write the report");
    eprintln!("wrote {out}");
}

/// Creates the topic on Apache Kafka. The controller takes at most 10,000 records in one
/// operation (a topic of 10,000 partitions is 10,001), so a wider topic is created at 5,000
/// partitions and grown with CreatePartitions (`kafka-cli topic alter`).
fn create_on_kafka(cluster: &tests::kafka::Cluster, topic: &str, partitions: u32) {
    cluster.create_topic(topic, partitions.min(5000), 1, &[]);
    if partitions > 5000 {
        let cli = std::env::var("KAFKA_CLI").expect("KAFKA_CLI: the path of a release kafka-cli");
        let ok = std::process::Command::new(cli)
            .args(["-b", &cluster.bootstrap, "topic", "alter", topic])
            .args(["--partitions", &partitions.to_string()])
            .status()
            .expect("run kafka-cli topic alter")
            .success();
        assert!(ok, "growing {topic} to {partitions} partitions failed");
    }
}

/// Writes every key once before a size is measured, untimed: a broker takes seconds to bring
/// up a thousand new partitions (Apache Kafka answers NOT_LEADER_OR_FOLLOWER meanwhile), and
/// the first client to write would pay for that alone (at 1,000 partitions ours, first in the
/// round, took 48 s for 300,000 records on a fresh topic and 1.5 s on the next run).
fn warm_up(addr: &str, topic: &str) {
    measure(&keyed_job(CLI, addr, topic, KEYS), None);
}

/// One client's run of the cell: `count` records of 100 B keyed in turn from [`KEYS`], acks=1,
/// no compression, unthrottled.
fn keyed_job(client: &str, addr: &str, topic: &str, count: u64) -> Job {
    Job {
        client: client.into(),
        role: "produce".into(),
        brokers: addr.into(),
        topic: topic.into(),
        count,
        size: 100,
        acks: "1".into(),
        compression: "none".into(),
        rate: 0,
        security: Vec::new(),
        keys: KEYS,
    }
}

fn us(m: &Measured) -> f64 {
    m.cpu_secs / m.records.max(1) as f64 * 1e6
}

fn broker_us(m: &Measured) -> f64 {
    m.broker_cpu_secs.unwrap_or(0.0) / m.records.max(1) as f64 * 1e6
}

/// A client's figures at one size: the median of its runs that succeeded, and how many failed.
struct Figures {
    median: Option<Measured>,
    failed: usize,
}

type Section = (BrokerKind, Vec<(u32, Vec<Figures>)>);

fn report(sections: &[Section], records: u64, rounds: usize, commit: &str) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "# The scale cell: keyed records over many partitions\n");
    let _ = writeln!(
        s,
        "Generated by `scripts/bench scale` (`kafka-bench scale --records {records} --rounds \
         {rounds}`) on commit {commit}, in one run on this machine. Each client sends \
         {records} records of 100 B, each with a key taken in turn from {KEYS} distinct keys \
         (murmur2 spreads them over every partition), acks=1, no compression, linger.ms=5, \
         one connection, each client's own `batch.size` (16 KiB for ours, which reserves a \
         block sized from the partition's last batch and doubles it up to that, and for Java's, \
         which reserves all of it per open batch; librdkafka's 1 MB, not reserved): ours through `kafka-cli perf produce --keys {KEYS}` (the path users \
         run), librdkafka through the bench's BaseProducer with `partitioner=murmur2_random` \
         (its own `rdkafka_performance` takes one fixed key only). On Apache Kafka (one node) \
         every client writes into one topic per size; on Tansu each run gets a fresh broker. \
         Before it is measured, every topic gets each key once (untimed), so that no client \
         pays for the broker bringing its new partitions up. \
         CPU is the client's own (user and system, from `wait4`), connections the most TCP \
         connections it held at once, the broker's CPU read from `/proc` around each run. \
         Each figure is the median of {rounds} rounds.\n"
    );
    let _ = writeln!(
        s,
        "Records in flight are bounded differently: ours by `buffer.memory` (32 MB) and `perf \
         produce`'s window of 100,000 undelivered records (peak RSS is a goal here), \
         librdkafka's queue by the bench's `queue.buffering.max.messages=10000000` and 2 GB \
         (room for the whole run, as `rdkafka_performance` gives itself). Where the broker \
         sets the pace, records per batch follow the records waiting per partition: on one \
         Apache Kafka node at 10,000 partitions each batch costs the broker about a \
         millisecond (writes to its segment and index files, `jstack`), so records/s there \
         measure batch sizes, and ours are capped by the window (about 10 records per \
         partition in flight).\n"
    );
    let _ = writeln!(
        s,
        "Goals (issue #34): ours at 10,000 partitions at most 1.3× ours at 1, below \
         librdkafka's at every size; peak RSS within `buffer.memory` + 16 MB (48 MB); at most \
         brokers + 1 connections (2).\n"
    );
    for (broker, rows) in sections {
        let _ = writeln!(s, "## {}\n", broker.name());
        let _ = writeln!(
            s,
            "| partitions | ours CPU µs/record | × ours at 1 | librdkafka CPU µs/record | ours ÷ librdkafka | ours records/s | librdkafka records/s | peak RSS MB (ours / librdkafka) | connections (ours / librdkafka) | broker CPU µs/record (ours / librdkafka) |"
        );
        let _ = writeln!(s, "|---:|---:|---:|---:|---:|---:|---:|---|---|---|");
        let base = rows.first().and_then(|(_, f)| f[0].median.as_ref()).map(us);
        for (partitions, figures) in rows {
            let cell = |f: &Figures, show: &dyn Fn(&Measured) -> String| match &f.median {
                Some(m) if f.failed == 0 => show(m),
                Some(m) => format!("{} ({} failed)", show(m), f.failed),
                None => format!("failed ({} of {rounds})", f.failed),
            };
            let (o, r) = (&figures[0], &figures[1]);
            let ratio = |num: Option<f64>, den: Option<f64>| match (num, den) {
                (Some(a), Some(b)) => format!("{:.2}", a / b.max(1e-12)),
                _ => "–".into(),
            };
            let (ou, ru) = (o.median.as_ref().map(us), r.median.as_ref().map(us));
            let both = |show: &dyn Fn(&Measured) -> String| {
                format!("{} / {}", cell(o, show), cell(r, show))
            };
            let _ = writeln!(
                s,
                "| {partitions} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
                cell(o, &|m| format!("{:.3}", us(m))),
                ratio(ou, base),
                cell(r, &|m| format!("{:.3}", us(m))),
                ratio(ou, ru),
                cell(o, &|m| format!("{:.0}", m.records_per_sec())),
                cell(r, &|m| format!("{:.0}", m.records_per_sec())),
                both(&|m| format!("{:.0}", m.peak_rss_mb)),
                both(&|m| m.peak_connections.to_string()),
                both(&|m| format!("{:.3}", broker_us(m))),
            );
        }
        let _ = writeln!(s);
    }
    s
}
