use super::*;
use crate::config::ProducerConfig;

#[test]
fn json_escapes_and_writes_nan_as_null() {
    let s = MetricsSnapshot {
        metrics: vec![Metric {
            group: "producer-topic-metrics",
            name: "record-send-rate",
            tags: vec![("client-id", "a\"b\\c\n".into()), ("topic", "t".into())],
            value: f64::NAN,
            kind: MetricKind::Gauge,
        }],
    };
    assert_eq!(
        s.to_json(),
        r#"[{"group":"producer-topic-metrics","name":"record-send-rate","tags":{"client-id":"a\"b\\c\u000a","topic":"t"},"value":null}]"#
    );
    assert!(s
        .find(
            "producer-topic-metrics",
            "record-send-rate",
            &[("topic", "t")]
        )
        .unwrap()
        .is_nan());
    assert_eq!(s.get("producer-topic-metrics", "record-send-rate"), None);
}

#[test]
fn java_metrics_keys_are_validated() {
    let base = [("bootstrap.servers", "b:9092")];
    let with = |k: &'static str, v: &'static str| {
        ProducerConfig::from_map(base.into_iter().chain([(k, v)]))
    };
    let c = with("metrics.sample.window.ms", "1000").unwrap();
    assert_eq!(c.metrics.window.length, std::time::Duration::from_secs(1));
    assert_eq!(
        with("metrics.num.samples", "5")
            .unwrap()
            .metrics
            .window
            .samples,
        5
    );
    assert!(with("metrics.num.samples", "0").is_err());
    assert_eq!(
        with("metrics.recording.level", "debug")
            .unwrap()
            .metrics
            .recording_level,
        RecordingLevel::Debug
    );
    assert!(with("metrics.recording.level", "LOUD").is_err());
    assert!(!with("enable.metrics.push", "false").unwrap().metrics.push);
    assert!(
        ProducerConfig::from_map(base).unwrap().metrics.push,
        "on by default, as in Java"
    );
}
