//! Observability on Apache Kafka, on one node with a broker-side KIP-714 telemetry receiver
//! (`scripts/java/TelemetrySink.java`, which decodes every push with Kafka's own OpenTelemetry
//! classes and writes its data points down):
//! - our headline metrics beside the Java client's own for the same workload;
//! - the tracing of one produce request, field by field;
//! - KIP-714: a client-metrics subscription set through our admin API, a producer that pushes
//!   the subscribed metrics, and one with `enable.metrics.push=false` that never asks.

use std::path::PathBuf;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use kafka_tokio::{Admin, AlterConfigOp, ConfigResource, Consumer, Producer, Record, StartFrom};
use tests::kafka::{peer, telemetry_sink_classpath, Cluster};
use tests::tokio_block_on as block_on;

/// Where the receiver writes.
fn sink() -> PathBuf {
    std::env::temp_dir().join(format!("kafka-rs-telemetry-{}.log", std::process::id()))
}

fn cluster() -> &'static Cluster {
    static C: OnceLock<Cluster> = OnceLock::new();
    C.get_or_init(|| {
        let _ = std::fs::remove_file(sink());
        Cluster::start_with_classpath(
            1,
            &telemetry_sink_classpath(),
            &[
                "metric.reporters=TelemetrySink",
                &format!("telemetry.sink.file={}", sink().display()),
            ],
        )
    })
}

/// The Java client's client-wide metrics from the peer's `metric GROUP NAME VALUE` lines.
fn java_metric(stderr: &str, group: &str, name: &str) -> f64 {
    stderr
        .lines()
        .filter_map(|l| l.strip_prefix("metric "))
        .find_map(|l| {
            let mut f = l.splitn(3, ' ');
            (f.next() == Some(group) && f.next() == Some(name))
                .then(|| f.next()?.parse().ok())
                .flatten()
        })
        .unwrap_or_else(|| panic!("the Java client has no {group}/{name}:\n{stderr}"))
}

const N: usize = 200;
const SIZE: usize = 100;

#[test]
fn headline_metrics_match_the_java_clients_for_the_same_workload() {
    let c = cluster();
    c.create_topic("m-java", 1, 1, &[]);
    c.create_topic("m-ours", 1, 1, &[]);
    // The workload: N records of SIZE bytes, no key, each sent once the one before was
    // acknowledged (so every batch and request holds one record), linger.ms=5 both.
    let value = "78".repeat(SIZE);
    let lines: String = (0..N).map(|_| format!("-1\t-1\t-\t{value}\t-\n")).collect();
    let (ok, _, java) = peer(
        &[
            "produce",
            &c.bootstrap,
            "m-java",
            "peer.sync=true",
            "peer.metrics=true",
            "linger.ms=5",
        ],
        Some(&lines),
    );
    assert!(ok, "the Java producer failed: {java}");
    let (ok, _, java_consumer) = peer(
        &[
            "consume",
            &c.bootstrap,
            "m-java",
            &N.to_string(),
            "30",
            "peer.metrics=true",
        ],
        None,
    );
    assert!(ok, "the Java consumer failed: {java_consumer}");
    let bootstrap = c.bootstrap.clone();
    let (ours, ours_consumer) = block_on(async move {
        let p = Producer::from_map([
            ("bootstrap.servers", bootstrap.as_str()),
            ("linger.ms", "5"),
        ])
        .unwrap();
        for _ in 0..N {
            p.send(Record::new("m-ours", vec![b'x'; SIZE]))
                .await
                .unwrap()
                .await
                .unwrap();
        }
        let m = p.metrics();
        p.close(Duration::from_secs(5)).await;
        let mut consumer = Consumer::from_map([("bootstrap.servers", bootstrap.as_str())]).unwrap();
        consumer
            .assign([("m-ours", 0)], StartFrom::Earliest)
            .unwrap();
        for _ in 0..N {
            consumer.recv().await.unwrap();
        }
        let cm = consumer.metrics().await;
        (m, cm)
    });
    let g = "producer-metrics";
    let ours_of = |name: &str| ours.get(g, name).unwrap();
    let mut table = String::new();
    for name in [
        "record-send-total",
        "record-error-total",
        "record-retry-total",
        "records-per-request-avg",
        "batch-size-avg",
        "batch-size-max",
        "compression-rate-avg",
        "record-queue-time-avg",
        "request-latency-avg",
    ] {
        table += &format!(
            "  {name:<26} ours {:>10.3}   Java {:>10.3}\n",
            ours_of(name),
            java_metric(&java, g, name)
        );
    }
    let fetch = "consumer-fetch-manager-metrics";
    table += &format!(
        "  {:<26} ours {:>10.3}   Java {:>10.3}\n",
        "records-consumed-total",
        ours_consumer.get(fetch, "records-consumed-total").unwrap(),
        java_metric(&java_consumer, fetch, "records-consumed-total")
    );
    eprintln!("the same workload, our producer and consumer beside Java's:\n{table}");
    // Counted the same way: exactly.
    for name in [
        "record-send-total",
        "record-error-total",
        "record-retry-total",
        "records-per-request-avg",
        "batch-size-avg",
        "batch-size-max",
        "compression-rate-avg",
    ] {
        assert_eq!(
            ours_of(name),
            java_metric(&java, g, name),
            "{name}:\n{table}"
        );
    }
    assert_eq!(ours_of("record-send-total"), N as f64);
    assert_eq!(
        ours_consumer.get(fetch, "records-consumed-total"),
        Some(java_metric(&java_consumer, fetch, "records-consumed-total"))
    );
    // Timed ones: both measure the same span (a one-record batch waits out linger.ms=5
    // before it is sent; the request takes some time), without comparing the machines'
    // speeds.
    for who in [
        ours_of("record-queue-time-avg"),
        java_metric(&java, g, "record-queue-time-avg"),
    ] {
        assert!((4.0..1000.0).contains(&who), "queue time {who}:\n{table}");
    }
    for who in [
        ours_of("request-latency-avg"),
        java_metric(&java, g, "request-latency-avg"),
    ] {
        assert!(who > 0.0 && who < 1000.0, "request latency {who}:\n{table}");
    }
}

/// A `tracing` writer into a shared buffer.
#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<u8>>>);

impl std::io::Write for Captured {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(b);
        Ok(b.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[test]
fn one_produce_request_is_traced_with_its_fields() {
    let c = cluster();
    c.create_topic("m-traced", 1, 1, &[]);
    let captured = Captured::default();
    let writer = captured.clone();
    tracing::subscriber::set_global_default(
        tracing_subscriber::fmt()
            .with_max_level(tracing::Level::TRACE)
            .with_writer(move || writer.clone())
            .with_ansi(false)
            .finish(),
    )
    .expect("the only subscriber of this test binary");
    let bootstrap = c.bootstrap.clone();
    block_on(async move {
        let p = Producer::from_map([
            ("bootstrap.servers", bootstrap.as_str()),
            ("client.id", "traced"),
        ])
        .unwrap();
        p.send(Record::new("m-traced", "one"))
            .await
            .unwrap()
            .await
            .unwrap();
        p.close(Duration::from_secs(5)).await;
    });
    let out = String::from_utf8(captured.0.lock().unwrap().clone()).unwrap();
    let ours: Vec<&str> = out
        .lines()
        .filter(|l| l.contains("client_id=traced"))
        .collect();
    eprintln!("the tracing of one produce (client.id=traced):");
    for l in &ours {
        eprintln!("  {l}");
    }
    let has = |what: &[&str]| ours.iter().any(|l| what.iter().all(|w| l.contains(w)));
    assert!(has(&["connecting", "addr="]), "{out}");
    assert!(has(&["connection ready", "api_versions="]), "{out}");
    assert!(has(&["metadata refreshed", "brokers=1"]), "{out}");
    assert!(
        has(&["TRACE", "request", "api=Produce", "correlation_id="]),
        "{out}"
    );
    assert!(
        has(&["DEBUG", "response", "api=Produce", "latency_us=", "node=1"]),
        "{out}"
    );
    assert!(ours
        .iter()
        .all(|l| l.contains("kafka{client=\"producer\" client_id=traced}")));
}

/// Polls `f` every 100 ms until it holds, for at most `limit`.
async fn until(what: &str, limit: Duration, mut f: impl FnMut() -> bool) {
    let start = Instant::now();
    while !f() {
        assert!(start.elapsed() < limit, "{what}: not within {limit:?}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[test]
fn the_producer_pushes_the_subscribed_metrics_to_the_broker() {
    let sink = sink();
    let cluster = cluster();
    cluster.create_topic("telemetry", 1, 1, &[]);
    let bootstrap = cluster.bootstrap.clone();
    block_on(async move {
        let admin = Admin::from_map([("bootstrap.servers", bootstrap.as_str())]).unwrap();
        let resource = ConfigResource::ClientMetrics("kafka-rs-producers".into());
        admin
            .alter_configs(
                resource.clone(),
                vec![
                    AlterConfigOp::Set("metrics".into(), "org.apache.kafka.producer.".into()),
                    AlterConfigOp::Set("interval.ms".into(), "500".into()),
                    // Only these two producers: the other tests' clients push nothing.
                    AlterConfigOp::Set("match".into(), "client_id=telemetry-o.*".into()),
                ],
            )
            .await
            .expect("the client-metrics subscription is set through the admin API");
        // The controller acknowledges the change before the broker applies it: a producer
        // that asked in between would get an empty subscription and, as Java's does, ask
        // again only after the broker's default interval (5 minutes). CI failed on this.
        let start = Instant::now();
        loop {
            let entries = admin.describe_configs(resource.clone()).await;
            let applied = entries.as_ref().is_ok_and(|e| {
                e.iter()
                    .any(|c| c.name == "interval.ms" && c.value.as_deref() == Some("500"))
            });
            if applied {
                break;
            }
            assert!(
                start.elapsed() < Duration::from_secs(30),
                "the broker never showed the subscription: {entries:?}"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        let pushing = Producer::from_map([
            ("bootstrap.servers", bootstrap.as_str()),
            ("client.id", "telemetry-on"),
            ("linger.ms", "0"),
        ])
        .unwrap();
        let silent = Producer::from_map([
            ("bootstrap.servers", bootstrap.as_str()),
            ("client.id", "telemetry-off"),
            ("enable.metrics.push", "false"),
        ])
        .unwrap();
        for i in 0..100 {
            pushing
                .send(Record::new("telemetry", format!("r{i}")))
                .await
                .unwrap()
                .await
                .unwrap();
        }
        silent
            .send(Record::new("telemetry", "x"))
            .await
            .unwrap()
            .await
            .unwrap();
        let before = pushing.telemetry_pushes();
        until(
            "two pushes after the records",
            Duration::from_secs(30),
            || pushing.telemetry_pushes() >= before + 2,
        )
        .await;
        let id = pushing
            .client_instance_id()
            .expect("an instance id from the broker");
        assert_eq!(
            silent.client_instance_id(),
            None,
            "enable.metrics.push=false asks nothing"
        );
        assert_eq!(silent.telemetry_pushes(), 0);
        let log = std::fs::read_to_string(&sink).expect("the receiver wrote the pushes");
        let ours: Vec<&str> = log
            .lines()
            .filter(|l| l.starts_with(&id.to_string()))
            .collect();
        assert!(!log.contains("UNDECODABLE"), "{log}");
        assert!(
            !log.contains("telemetry-off"),
            "the silent producer pushed:\n{log}"
        );
        let value = |name: &str| -> Vec<f64> {
            ours.iter()
                .filter(|l| l.split(' ').nth(2) == Some(name))
                .filter_map(|l| l.split(' ').nth(3)?.parse().ok())
                .collect()
        };
        // Apache Kafka asks for delta temporality: each push carries what was added since
        // the one before, so the pushes add up to the total.
        let sent = value("org.apache.kafka.producer.record.send.total");
        assert!(sent.len() >= 2, "{ours:#?}");
        assert_eq!(
            sent.iter().sum::<f64>(),
            100.0,
            "the pushes count every record once: {sent:?}"
        );
        assert_eq!(
            sent.last(),
            Some(&0.0),
            "nothing was sent since the push before: {sent:?}"
        );
        assert!(ours
            .iter()
            .all(|l| l.split(' ').nth(1) == Some("telemetry-on")));
        assert!(
            ours.iter().any(
                |l| l.contains("org.apache.kafka.producer.node.request.latency.avg")
                    && l.contains("node_id=node-1")
            ),
            "per-node metrics carry their node: {ours:#?}"
        );
        assert!(
            ours.iter()
                .all(|l| l.contains(" org.apache.kafka.producer.")),
            "only the subscribed prefix is pushed"
        );
        // For the closing note: what the broker received.
        let latest: Vec<&&str> = ours.iter().rev().take(12).collect();
        eprintln!(
            "the broker's receiver saw {} data points from {id}; the last:",
            ours.len()
        );
        for l in latest.iter().rev() {
            eprintln!("  {l}");
        }
        pushing.close(Duration::from_secs(5)).await;
        silent.close(Duration::from_secs(5)).await;
    });
}
