//! KIP-714 client telemetry on Apache Kafka: a client-metrics subscription set through our
//! admin API, a producer that pushes the subscribed metrics in the OpenTelemetry format, and a
//! broker-side receiver (`scripts/java/TelemetrySink.java`) that decodes every push with
//! Kafka's own OpenTelemetry classes and writes its data points down. A producer with
//! `enable.metrics.push=false` never asks.

use std::time::{Duration, Instant};

use kafka_tokio::{Admin, AlterConfigOp, ConfigResource, Producer, Record};
use tests::kafka::{telemetry_sink_classpath, Cluster};
use tests::tokio_block_on as block_on;

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
    let sink = std::env::temp_dir().join(format!("kafka-rs-telemetry-{}.log", std::process::id()));
    let _ = std::fs::remove_file(&sink);
    let cluster = Cluster::start_with_classpath(
        1,
        &telemetry_sink_classpath(),
        &[
            "metric.reporters=TelemetrySink",
            &format!("telemetry.sink.file={}", sink.display()),
        ],
    );
    cluster.create_topic("telemetry", 1, 1, &[]);
    let bootstrap = cluster.bootstrap.clone();
    block_on(async move {
        let admin = Admin::from_map([("bootstrap.servers", bootstrap.as_str())]).unwrap();
        admin
            .alter_configs(
                ConfigResource::ClientMetrics("kafka-rs-producers".into()),
                vec![
                    AlterConfigOp::Set("metrics".into(), "org.apache.kafka.producer.".into()),
                    AlterConfigOp::Set("interval.ms".into(), "500".into()),
                ],
            )
            .await
            .expect("the client-metrics subscription is set through the admin API");
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
