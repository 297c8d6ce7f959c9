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
