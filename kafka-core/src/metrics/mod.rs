//! Client metrics as plain data: the Java client's names, groups, tags and windowed
//! statistics, recorded with the caller's `now`, and the typed snapshot every client returns.
//!
//! Each client keeps its numbers in plain structs ([`stat::Stat`] per sensor) and measures
//! them only when asked: `metrics(now)` on the producer, the fetcher (consumer) and the admin
//! client returns a [`MetricsSnapshot`], a list of [`Metric`]s named as Java names them
//! (`record-send-rate` in group `producer-metrics`, tagged `client-id`, and so on), so that
//! dashboards and alerts built for the Java client carry over. Rates follow Java's
//! `metrics.sample.window.ms` and `metrics.num.samples`.
//!
//! Without the `record-metrics` feature (on by default) nothing is recorded: the snapshot
//! still lists the gauges, and every windowed figure reads as nothing happened.

pub(crate) mod consumer;
pub mod otlp;
pub(crate) mod producer;
pub mod stat;
pub(crate) mod telemetry;

use std::collections::BTreeMap;
use std::fmt::Write as _;

// The settings are configuration, kept with every client's configuration (so that `config`
// names nothing above it); their paths here stay.
pub use crate::config::{MetricsConfig, RecordingLevel, Window};

use crate::time::Instant;

/// What kind of number a metric is, for exporters (OpenTelemetry, Prometheus).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum MetricKind {
    /// A value that goes up and down (rates, averages, maxima, counts of things held).
    Gauge,
    /// A cumulative total since the client started (the `-total` metrics).
    Sum,
}

/// One metric's value at the snapshot's instant.
#[derive(Debug, Clone, PartialEq)]
pub struct Metric {
    /// Java's metric group: `producer-metrics`, `producer-topic-metrics`,
    /// `consumer-fetch-manager-metrics`, `consumer-coordinator-metrics`, ...
    pub group: &'static str,
    /// Java's metric name: `record-send-rate`, `request-latency-avg`, ...
    pub name: &'static str,
    /// Java's tags, in its order: `client-id` first, then `node-id`, `topic`, `partition`.
    pub tags: Vec<(&'static str, String)>,
    /// The value; NaN where Java reports NaN (an average or maximum of nothing).
    pub value: f64,
    /// Gauge or cumulative sum.
    pub kind: MetricKind,
}

impl Metric {
    /// The value of tag `key`, if the metric has it.
    pub fn tag(&self, key: &str) -> Option<&str> {
        self.tags
            .iter()
            .find(|(k, _)| *k == key)
            .map(|(_, v)| v.as_str())
    }
}

/// Every metric of one client at one instant.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct MetricsSnapshot {
    /// The metrics, grouped as Java groups them.
    pub metrics: Vec<Metric>,
}

impl MetricsSnapshot {
    /// The value of the client-wide metric `name` in `group` (the one tagged with nothing but
    /// `client-id`).
    pub fn get(&self, group: &str, name: &str) -> Option<f64> {
        self.find(group, name, &[])
    }

    /// The value of metric `name` in `group` whose tags other than `client-id` are exactly
    /// `tags` (say `[("topic", "orders"), ("partition", "0")]`).
    pub fn find(&self, group: &str, name: &str, tags: &[(&str, &str)]) -> Option<f64> {
        self.metrics
            .iter()
            .find(|m| {
                m.group == group
                    && m.name == name
                    && m.tags.iter().filter(|(k, _)| *k != "client-id").count() == tags.len()
                    && tags.iter().all(|(k, v)| m.tag(k) == Some(v))
            })
            .map(|m| m.value)
    }

    /// The snapshot as a JSON array of `{"group", "name", "tags", "value"}` objects (NaN and
    /// infinities as `null`, which JSON has no number for).
    pub fn to_json(&self) -> String {
        let mut s = String::with_capacity(self.metrics.len() * 96);
        s.push('[');
        for (i, m) in self.metrics.iter().enumerate() {
            if i > 0 {
                s.push(',');
            }
            s.push_str("{\"group\":");
            json_str(&mut s, m.group);
            s.push_str(",\"name\":");
            json_str(&mut s, m.name);
            s.push_str(",\"tags\":{");
            for (j, (k, v)) in m.tags.iter().enumerate() {
                if j > 0 {
                    s.push(',');
                }
                json_str(&mut s, k);
                s.push(':');
                json_str(&mut s, v);
            }
            s.push_str("},\"value\":");
            if m.value.is_finite() {
                let _ = write!(s, "{}", m.value);
            } else {
                s.push_str("null");
            }
            s.push('}');
        }
        s.push(']');
        s
    }
}

fn json_str(out: &mut String, v: &str) {
    out.push('"');
    for c in v.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

impl MetricsSnapshot {
    /// A snapshot of what `f` adds at `now`, tagged with `client_id`.
    pub(crate) fn build(
        now: Instant,
        window: Window,
        client_id: &str,
        f: impl FnOnce(&mut Out<'_>),
    ) -> Self {
        let mut metrics = Vec::new();
        f(&mut Out {
            metrics: &mut metrics,
            now,
            window,
            client_id,
        });
        MetricsSnapshot { metrics }
    }
}

/// The entry of `key` in a map by name, made on first use: the name is copied once, not at
/// every record.
pub(crate) fn named<'a, T: Default>(map: &'a mut BTreeMap<String, T>, key: &str) -> &'a mut T {
    if !map.contains_key(key) {
        map.insert(key.to_owned(), T::default());
    }
    map.get_mut(key).expect("inserted")
}

/// Adds metrics to a snapshot: the measuring instant, the window and the client's tags.
pub(crate) struct Out<'a> {
    pub metrics: &'a mut Vec<Metric>,
    pub now: Instant,
    pub window: Window,
    pub client_id: &'a str,
}

impl Out<'_> {
    /// Adds a gauge tagged `client-id` and `tags`.
    pub fn gauge(
        &mut self,
        group: &'static str,
        name: &'static str,
        tags: &[(&'static str, &str)],
        value: f64,
    ) {
        self.push(group, name, tags, value, MetricKind::Gauge);
    }

    /// Adds a cumulative total.
    pub fn sum(
        &mut self,
        group: &'static str,
        name: &'static str,
        tags: &[(&'static str, &str)],
        value: f64,
    ) {
        self.push(group, name, tags, value, MetricKind::Sum);
    }

    fn push(
        &mut self,
        group: &'static str,
        name: &'static str,
        tags: &[(&'static str, &str)],
        value: f64,
        kind: MetricKind,
    ) {
        let mut t = Vec::with_capacity(tags.len() + 1);
        t.push(("client-id", self.client_id.to_owned()));
        t.extend(tags.iter().map(|(k, v)| (*k, (*v).to_owned())));
        self.metrics.push(Metric {
            group,
            name,
            tags: t,
            value,
            kind,
        });
    }

    /// `{prefix}-rate` and `{prefix}-total` of a [`stat::Stat`]'s values (Java's `Meter`).
    pub fn meter(
        &mut self,
        group: &'static str,
        rate: &'static str,
        total: &'static str,
        tags: &[(&'static str, &str)],
        s: &stat::Stat,
    ) {
        let (now, w) = (self.now, self.window);
        self.gauge(group, rate, tags, s.rate(now, w));
        self.sum(group, total, tags, s.total());
    }

    /// A `Meter` over the number of events rather than their values.
    pub fn event_meter(
        &mut self,
        group: &'static str,
        rate: &'static str,
        total: &'static str,
        tags: &[(&'static str, &str)],
        s: &stat::Stat,
    ) {
        let (now, w) = (self.now, self.window);
        self.gauge(group, rate, tags, s.event_rate(now, w));
        self.sum(group, total, tags, s.events() as f64);
    }

    /// `-avg` and `-max` of a [`stat::Stat`].
    pub fn avg_max(
        &mut self,
        group: &'static str,
        avg: &'static str,
        max: &'static str,
        tags: &[(&'static str, &str)],
        s: &stat::Stat,
    ) {
        let (now, w) = (self.now, self.window);
        self.gauge(group, avg, tags, s.avg(now, w));
        self.gauge(group, max, tags, s.max(now, w));
    }

    /// `-avg` of a [`stat::Stat`].
    pub fn avg(
        &mut self,
        group: &'static str,
        avg: &'static str,
        tags: &[(&'static str, &str)],
        s: &stat::Stat,
    ) {
        let (now, w) = (self.now, self.window);
        self.gauge(group, avg, tags, s.avg(now, w));
    }
}

#[cfg(test)]
mod tests;
