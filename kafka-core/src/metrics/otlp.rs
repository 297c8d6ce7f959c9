//! OpenTelemetry's `MetricsData` (opentelemetry-proto `metrics/v1`) in protobuf, as KIP-714
//! pushes it: only what a client sends (gauges and sums of doubles with string attributes),
//! written directly. Names follow Java's KIP-714 mapping: `org.apache.kafka.` + the group
//! without `-metrics` + `.` + the name, dashes as dots (`org.apache.kafka.producer.record.send.rate`);
//! tags become attributes with dashes as underscores (`node_id`, `topic`, `partition`), without
//! `client-id`, which the broker knows from the connection.

use super::{Metric, MetricKind};

/// KIP-714's name of a metric.
pub fn telemetry_name(m: &Metric) -> String {
    let group = m.group.strip_suffix("-metrics").unwrap_or(m.group);
    format!("org.apache.kafka.{group}.{}", m.name).replace('-', ".")
}

/// A protobuf writer for one message: fields appended in order, nested messages through a
/// closure that writes into a fresh buffer (their length prefixes it).
struct Pb(Vec<u8>);

impl Pb {
    fn varint(&mut self, mut v: u64) {
        while v >= 0x80 {
            self.0.push((v as u8) | 0x80);
            v >>= 7;
        }
        self.0.push(v as u8);
    }

    fn key(&mut self, field: u32, wire: u8) {
        self.varint(u64::from(field) << 3 | u64::from(wire));
    }

    fn bytes(&mut self, field: u32, b: &[u8]) {
        self.key(field, 2);
        self.varint(b.len() as u64);
        self.0.extend_from_slice(b);
    }

    fn string(&mut self, field: u32, s: &str) {
        self.bytes(field, s.as_bytes());
    }

    fn message(&mut self, field: u32, f: impl FnOnce(&mut Pb)) {
        let mut inner = Pb(Vec::new());
        f(&mut inner);
        self.bytes(field, &inner.0);
    }

    fn fixed64(&mut self, field: u32, v: u64) {
        self.key(field, 1);
        self.0.extend_from_slice(&v.to_le_bytes());
    }

    fn double(&mut self, field: u32, v: f64) {
        self.fixed64(field, v.to_bits());
    }

    fn uint(&mut self, field: u32, v: u64) {
        self.key(field, 0);
        self.varint(v);
    }
}

/// One data point to push.
pub struct Point<'a> {
    /// The metric (name, tags, kind).
    pub metric: &'a Metric,
    /// The value to send (a delta for sums under delta temporality).
    pub value: f64,
}

/// Encodes `points` as one `MetricsData` with one resource and one scope. `start_ns` is when the
/// sums started counting (the client's start, or the last push under delta temporality);
/// `now_ns` the wall clock now, both in nanoseconds since the Unix epoch.
pub fn encode(points: &[Point<'_>], delta: bool, start_ns: u64, now_ns: u64) -> Vec<u8> {
    let mut out = Pb(Vec::new());
    // MetricsData.resource_metrics = 1
    out.message(1, |rm| {
        // ResourceMetrics.resource = 1 (no attributes: the broker adds the client's own)
        rm.message(1, |_| {});
        // ResourceMetrics.scope_metrics = 2
        rm.message(2, |sm| {
            // ScopeMetrics.scope = 1: InstrumentationScope { name = 1, version = 2 }
            sm.message(1, |scope| {
                scope.string(1, "kafka-rs");
                scope.string(2, env!("CARGO_PKG_VERSION"));
            });
            for p in points {
                // ScopeMetrics.metrics = 2
                sm.message(2, |metric| {
                    metric.string(1, &telemetry_name(p.metric));
                    let point = |dp: &mut Pb| {
                        if p.metric.kind == MetricKind::Sum {
                            // NumberDataPoint.start_time_unix_nano = 2
                            dp.fixed64(2, start_ns);
                        }
                        dp.fixed64(3, now_ns); // time_unix_nano
                        dp.double(4, p.value); // as_double
                        for (k, v) in &p.metric.tags {
                            if *k == "client-id" {
                                continue;
                            }
                            // NumberDataPoint.attributes = 7: KeyValue { key = 1, value = 2 }
                            dp.message(7, |kv| {
                                kv.string(1, &k.replace('-', "_"));
                                kv.message(2, |any| any.string(1, v)); // AnyValue.string_value
                            });
                        }
                    };
                    match p.metric.kind {
                        // Metric.sum = 7: Sum { data_points = 1, aggregation_temporality = 2,
                        // is_monotonic = 3 }
                        MetricKind::Sum => metric.message(7, |sum| {
                            sum.message(1, point);
                            sum.uint(2, if delta { 1 } else { 2 });
                            sum.uint(3, 1);
                        }),
                        // Metric.gauge = 5: Gauge { data_points = 1 }
                        _ => metric.message(5, |gauge| gauge.message(1, point)),
                    }
                });
            }
        });
    });
    out.0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_follow_java() {
        let m = Metric {
            group: "producer-node-metrics",
            name: "request-latency-avg",
            tags: vec![],
            value: 0.0,
            kind: MetricKind::Gauge,
        };
        assert_eq!(
            telemetry_name(&m),
            "org.apache.kafka.producer.node.request.latency.avg"
        );
    }

    #[test]
    fn a_gauge_encodes_as_protobuf() {
        let m = Metric {
            group: "consumer-metrics",
            name: "x",
            tags: vec![("client-id", "c".into()), ("node-id", "node-1".into())],
            value: 1.5,
            kind: MetricKind::Gauge,
        };
        let b = encode(
            &[Point {
                metric: &m,
                value: 1.5,
            }],
            false,
            1,
            2,
        );
        // MetricsData { resource_metrics (field 1, length-delimited) ... }
        assert_eq!(b[0], 0x0a);
        let name = b"org.apache.kafka.consumer.x";
        assert!(b.windows(name.len()).any(|w| w == name));
        assert!(b.windows(7).any(|w| w == b"node_id"));
        assert!(!b.windows(9).any(|w| w == b"client_id"));
        assert!(b.windows(8).any(|w| w == 1.5f64.to_le_bytes()));
    }
}
