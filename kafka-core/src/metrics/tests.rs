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

mod telemetry {
    use std::time::Duration;

    use kafka_proto::messages::get_telemetry_subscriptions_response::GetTelemetrySubscriptionsResponse;
    use kafka_proto::messages::push_telemetry_response::PushTelemetryResponse;

    use super::super::telemetry::{Telemetry, Want};
    use super::super::{Metric, MetricKind, MetricsSnapshot};
    use crate::time::Instant;

    fn snapshot(total: f64) -> MetricsSnapshot {
        let m = |name, kind, value| Metric {
            group: "producer-metrics",
            name,
            tags: vec![("client-id", "c".into())],
            value,
            kind,
        };
        MetricsSnapshot {
            metrics: vec![
                m("record-send-total", MetricKind::Sum, total),
                m("record-send-rate", MetricKind::Gauge, 1.0),
                m("batch-size-avg", MetricKind::Gauge, f64::NAN),
            ],
        }
    }

    fn subscription(requested: &[&str], delta: bool) -> GetTelemetrySubscriptionsResponse {
        GetTelemetrySubscriptionsResponse {
            client_instance_id: uuid::Uuid::from_u128(7),
            subscription_id: 3,
            push_interval_ms: 1000,
            delta_temporality: delta,
            requested_metrics: requested.iter().map(|s| (*s).to_owned()).collect(),
            ..Default::default()
        }
    }

    fn at(ms: u64) -> Instant {
        Instant::from_millis(ms)
    }

    #[test]
    fn subscribes_then_pushes_deltas_after_a_jittered_first_interval() {
        let mut t = Telemetry::new(true, 1);
        assert!(
            matches!(t.due(at(0)), Some(Want::Subscriptions(r)) if r.client_instance_id.is_nil())
        );
        t.sent();
        assert!(t.due(at(0)).is_none(), "one request at a time");
        t.on_subscriptions(
            &subscription(&["org.apache.kafka.producer.record."], true),
            at(0),
        );
        assert_eq!(t.instance_id(), Some(uuid::Uuid::from_u128(7)));
        let first = t.deadline().unwrap();
        assert!(first >= at(500) && first <= at(1500), "{first:?}");
        assert!(matches!(t.due(first), Some(Want::Push)));
        let r = t.push_request(&snapshot(10.0), 1_000, first).unwrap();
        assert_eq!((r.subscription_id, r.compression_type), (3, 0));
        let body = r.metrics.to_vec();
        let has = |s: &[u8]| body.windows(s.len()).any(|w| w == s);
        assert!(has(b"org.apache.kafka.producer.record.send.total"));
        assert!(has(b"org.apache.kafka.producer.record.send.rate"));
        assert!(!has(b"batch.size"), "not subscribed (and NaN)");
        assert!(has(&10f64.to_le_bytes()));
        t.sent();
        t.on_push(&PushTelemetryResponse::default(), first);
        assert_eq!(t.pushes, 1);
        assert_eq!(t.deadline(), Some(first + Duration::from_secs(1)));
        // Delta temporality: the next push carries 15 - 10.
        let r = t
            .push_request(&snapshot(15.0), 2_000, first + Duration::from_secs(1))
            .unwrap();
        assert!(r.metrics.windows(8).any(|w| w == 5f64.to_le_bytes()));
    }

    #[test]
    fn broker_errors_resubscribe_back_off_or_stop() {
        let mut t = Telemetry::new(true, 1);
        t.on_subscriptions(&subscription(&[""], false), at(0));
        t.sent();
        let error = |code: i16| PushTelemetryResponse {
            error_code: code,
            ..Default::default()
        };
        t.on_push(&error(117), at(5)); // UNKNOWN_SUBSCRIPTION_ID: ask again now
        assert!(
            matches!(t.due(at(5)), Some(Want::Subscriptions(r)) if r.client_instance_id == uuid::Uuid::from_u128(7))
        );
        t.on_subscriptions(&subscription(&[""], false), at(5));
        t.on_push(&error(118), at(10)); // TELEMETRY_TOO_LARGE: the next interval
        assert_eq!(t.deadline(), Some(at(1010)));
        t.on_push(&error(87), at(20)); // INVALID_RECORD: stop for good
        assert_eq!(t.deadline(), None);
        assert!(t.due(at(1_000_000)).is_none());
    }

    #[test]
    fn nothing_subscribed_means_no_push_and_a_later_look() {
        let mut t = Telemetry::new(true, 1);
        t.on_subscriptions(&subscription(&[], false), at(0));
        let due = t.deadline().unwrap();
        assert!(t.push_request(&snapshot(1.0), 1, due).is_none());
        assert!(matches!(
            t.due(due + Duration::from_secs(1)),
            Some(Want::Subscriptions(_))
        ));
        assert!(
            Telemetry::new(false, 1).due(at(0)).is_none(),
            "enable.metrics.push=false"
        );
    }
}
