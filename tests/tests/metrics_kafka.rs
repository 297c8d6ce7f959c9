//! Metrics and tracing on Apache Kafka: our headline metrics beside the Java client's own for
//! the same workload on the same broker, and the tracing of one produce request.

use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use kafka_tokio::{Consumer, Producer, Record, StartFrom};
use tests::kafka::{peer, Cluster};
use tests::tokio_block_on as block_on;

fn cluster() -> &'static Cluster {
    static C: OnceLock<Cluster> = OnceLock::new();
    C.get_or_init(|| Cluster::start(1))
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
