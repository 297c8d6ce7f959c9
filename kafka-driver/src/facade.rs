//! Reports metrics snapshots into the `metrics` crate facade (feature `metrics`), so that the
//! exporter the application installed (Prometheus, StatsD, ...) publishes them.
//!
//! Names are Java's, as a JMX-to-Prometheus exporter would spell them: `kafka_` + group +
//! `_` + name, dashes as underscores (`kafka_producer_metrics_record_send_rate`); tags become
//! labels the same way (`client_id`, `node_id`, `topic`, `partition`). `-total` metrics are
//! counters, the rest gauges.

use std::time::Duration;

use kafka_core::metrics::{MetricKind, MetricsSnapshot};

/// How often each client's driver reports on its own.
pub(crate) const EVERY: Duration = Duration::from_secs(5);

/// Sets every metric of `snapshot` in the installed recorder.
pub fn report_metrics(snapshot: &MetricsSnapshot) {
    for m in &snapshot.metrics {
        let name = format!("kafka_{}_{}", m.group, m.name).replace('-', "_");
        let labels: Vec<metrics::Label> = m
            .tags
            .iter()
            .map(|(k, v)| metrics::Label::new(k.replace('-', "_"), v.clone()))
            .collect();
        match m.kind {
            MetricKind::Sum => {
                metrics::counter!(name, labels).absolute(m.value.max(0.0) as u64);
            }
            _ => metrics::gauge!(name, labels).set(m.value),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;
    use std::sync::atomic::{AtomicU64, Ordering};
    use std::sync::{Arc, Mutex};

    use kafka_core::metrics::{Metric, MetricKind, MetricsSnapshot};
    use metrics::{
        Counter, CounterFn, Gauge, GaugeFn, Histogram, Key, KeyName, Metadata, Recorder,
        SharedString, Unit,
    };

    /// Every value set, by name and labels.
    #[derive(Default)]
    struct Seen(Mutex<BTreeMap<String, f64>>);

    struct Cell(Arc<Seen>, String);

    impl CounterFn for Cell {
        fn increment(&self, v: u64) {
            *self.0 .0.lock().unwrap().entry(self.1.clone()).or_default() += v as f64;
        }
        fn absolute(&self, v: u64) {
            self.0 .0.lock().unwrap().insert(self.1.clone(), v as f64);
        }
    }

    impl GaugeFn for Cell {
        fn increment(&self, v: f64) {
            *self.0 .0.lock().unwrap().entry(self.1.clone()).or_default() += v;
        }
        fn decrement(&self, v: f64) {
            GaugeFn::increment(self, -v)
        }
        fn set(&self, v: f64) {
            self.0 .0.lock().unwrap().insert(self.1.clone(), v);
        }
    }

    struct Rec(Arc<Seen>, AtomicU64);

    impl Rec {
        fn cell(&self, kind: &str, key: &Key) -> Arc<Cell> {
            self.1.fetch_add(1, Ordering::Relaxed);
            let labels: Vec<String> = key
                .labels()
                .map(|l| format!("{}={}", l.key(), l.value()))
                .collect();
            Arc::new(Cell(
                self.0.clone(),
                format!("{kind} {}{{{}}}", key.name(), labels.join(",")),
            ))
        }
    }

    impl Recorder for Rec {
        fn describe_counter(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}
        fn describe_gauge(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}
        fn describe_histogram(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}
        fn register_counter(&self, key: &Key, _: &Metadata<'_>) -> Counter {
            Counter::from_arc(self.cell("counter", key))
        }
        fn register_gauge(&self, key: &Key, _: &Metadata<'_>) -> Gauge {
            Gauge::from_arc(self.cell("gauge", key))
        }
        fn register_histogram(&self, _: &Key, _: &Metadata<'_>) -> Histogram {
            Histogram::noop()
        }
    }

    #[test]
    fn snapshots_reach_the_installed_recorder_with_java_names_as_labels() {
        let seen = Arc::new(Seen::default());
        let rec = Rec(seen.clone(), AtomicU64::new(0));
        let m = |name, kind, value, tags: Vec<(&'static str, String)>| Metric {
            group: "producer-node-metrics",
            name,
            tags,
            value,
            kind,
        };
        let snapshot = MetricsSnapshot {
            metrics: vec![
                m(
                    "request-total",
                    MetricKind::Sum,
                    7.0,
                    vec![("client-id", "c".into()), ("node-id", "node-1".into())],
                ),
                m(
                    "request-latency-avg",
                    MetricKind::Gauge,
                    2.5,
                    vec![("client-id", "c".into())],
                ),
            ],
        };
        metrics::with_local_recorder(&rec, || super::report_metrics(&snapshot));
        let seen = seen.0.lock().unwrap();
        assert_eq!(
            seen.get(
                "counter kafka_producer_node_metrics_request_total{client_id=c,node_id=node-1}"
            ),
            Some(&7.0),
            "{seen:?}"
        );
        assert_eq!(
            seen.get("gauge kafka_producer_node_metrics_request_latency_avg{client_id=c}"),
            Some(&2.5),
            "{seen:?}"
        );
    }
}
