//! KIP-714 client telemetry as a sans-IO sub-machine of the connection manager: it asks a
//! broker which metrics to push (GetTelemetrySubscriptions), then pushes them every interval
//! (PushTelemetry) in OpenTelemetry's format, as the Java client does. `enable.metrics.push`
//! turns it off; a cluster that does not offer the API (no telemetry receiver configured on
//! the broker) is never asked.

use std::collections::BTreeMap;
use std::time::Duration;

use kafka_proto::compression::Compression;
use kafka_proto::messages::get_telemetry_subscriptions_request::GetTelemetrySubscriptionsRequest;
use kafka_proto::messages::get_telemetry_subscriptions_response::GetTelemetrySubscriptionsResponse;
use kafka_proto::messages::push_telemetry_request::PushTelemetryRequest;
use kafka_proto::messages::push_telemetry_response::PushTelemetryResponse;
use kafka_proto::ErrorCode;
use uuid::Uuid;

use super::otlp::{self, Point};
use super::{MetricKind, MetricsSnapshot};
use crate::rng::Rng;
use crate::time::Instant;

/// How long to wait after a failed exchange before asking for a subscription again.
const RETRY: Duration = Duration::from_secs(30);

/// The subscription the broker gave.
#[derive(Debug, Clone)]
struct Subscription {
    id: i32,
    interval: Duration,
    delta: bool,
    /// Metric name prefixes; an empty prefix (or `*`) subscribes to everything.
    requested: Vec<String>,
    /// The compression types the broker accepts, in its order of preference.
    accepted: Vec<i8>,
}

/// Telemetry state.
#[derive(Debug)]
pub(crate) struct Telemetry {
    enabled: bool,
    /// Assigned by the first broker answer; sent with every later request.
    instance_id: Uuid,
    subscription: Option<Subscription>,
    /// When to ask for a subscription or push next (`None`: nothing planned).
    next: Option<Instant>,
    in_flight: bool,
    rng: Rng,
    /// When the sums started counting, in wall-clock nanoseconds (the first push).
    start_ns: u64,
    /// The last push's time and sum values, for delta temporality.
    last_ns: u64,
    last_sums: BTreeMap<String, f64>,
    /// Pushes the broker accepted.
    pub pushes: u64,
}

/// What the telemetry wants to send.
pub(crate) enum Want {
    Subscriptions(GetTelemetrySubscriptionsRequest),
    Push,
}

impl Telemetry {
    pub(crate) fn new(enabled: bool, seed: u64) -> Self {
        Telemetry {
            enabled,
            instance_id: Uuid::nil(),
            subscription: None,
            next: enabled.then_some(Instant::ZERO),
            in_flight: false,
            rng: Rng::new(seed ^ 0x7465_6c65),
            start_ns: 0,
            last_ns: 0,
            last_sums: BTreeMap::new(),
            pushes: 0,
        }
    }

    /// The client instance id the cluster assigned, once it did.
    pub(crate) fn instance_id(&self) -> Option<Uuid> {
        (!self.instance_id.is_nil()).then_some(self.instance_id)
    }

    /// When the telemetry has work, if it has any planned.
    pub(crate) fn deadline(&self) -> Option<Instant> {
        if self.in_flight {
            None
        } else {
            self.next
        }
    }

    /// What is due at `now`.
    pub(crate) fn due(&self, now: Instant) -> Option<Want> {
        if !self.enabled || self.in_flight || self.next.is_none_or(|t| t > now) {
            return None;
        }
        Some(match &self.subscription {
            Some(_) => Want::Push,
            None => Want::Subscriptions(GetTelemetrySubscriptionsRequest {
                client_instance_id: self.instance_id,
                ..Default::default()
            }),
        })
    }

    /// What is due cannot be sent yet (every connection that could carry it is busy or
    /// re-authenticating): look again at `until`, so that a past deadline never spins.
    pub(crate) fn postpone(&mut self, until: Instant) {
        if self.next.is_some() {
            self.next = Some(until);
        }
    }

    /// The cluster does not offer telemetry: nothing more is asked.
    pub(crate) fn unsupported(&mut self) {
        self.enabled = false;
        self.next = None;
    }

    pub(crate) fn sent(&mut self) {
        self.in_flight = true;
    }

    /// The request was lost with its connection.
    pub(crate) fn failed(&mut self, now: Instant) {
        self.in_flight = false;
        self.next = Some(now + Duration::from_secs(1));
    }

    pub(crate) fn on_subscriptions(&mut self, r: &GetTelemetrySubscriptionsResponse, now: Instant) {
        self.in_flight = false;
        match ErrorCode::from_code(r.error_code) {
            None => {}
            Some(ErrorCode::UnsupportedVersion) => return self.unsupported(),
            Some(_) => {
                self.next = Some(now + RETRY);
                return;
            }
        }
        if !r.client_instance_id.is_nil() {
            self.instance_id = r.client_instance_id;
        }
        let interval = Duration::from_millis(r.push_interval_ms.max(100) as u64);
        let first = self.subscription.is_none();
        self.subscription = Some(Subscription {
            id: r.subscription_id,
            interval,
            delta: r.delta_temporality,
            requested: r.requested_metrics.clone(),
            accepted: r.accepted_compression_types.clone(),
        });
        // The first push comes after a jittered interval (0.5 to 1.5 of it), as Java's does,
        // so that clients started together do not push together.
        let wait = if first {
            interval.mul_f64(0.5 + self.rng.unit())
        } else {
            interval
        };
        self.next = Some(now + wait);
    }

    /// The request to push `snapshot` (the metrics the subscription names), at wall-clock
    /// `wall_ns`; `None` if the subscription names none (then only the subscription is
    /// checked again after the interval).
    pub(crate) fn push_request(
        &mut self,
        snapshot: &MetricsSnapshot,
        wall_ns: u64,
        now: Instant,
    ) -> Option<PushTelemetryRequest> {
        let sub = self.subscription.clone()?;
        let wanted = |name: &str| {
            sub.requested
                .iter()
                .any(|p| p.is_empty() || p == "*" || name.starts_with(p.as_str()))
        };
        if sub.requested.is_empty() {
            // Subscribed to nothing: look again after the interval.
            self.subscription = None;
            self.next = Some(now + sub.interval);
            return None;
        }
        if self.start_ns == 0 {
            self.start_ns = wall_ns;
            self.last_ns = wall_ns;
        }
        let mut points = Vec::new();
        let mut sums = BTreeMap::new();
        for m in &snapshot.metrics {
            if !m.value.is_finite() || !wanted(&otlp::telemetry_name(m)) {
                continue;
            }
            let mut value = m.value;
            if m.kind == MetricKind::Sum && sub.delta {
                let key = format!("{}/{}/{:?}", m.group, m.name, m.tags);
                value -= self.last_sums.get(&key).copied().unwrap_or(0.0);
                sums.insert(key, m.value);
            }
            points.push(Point { metric: m, value });
        }
        let start = if sub.delta {
            self.last_ns
        } else {
            self.start_ns
        };
        let metrics = otlp::encode(&points, sub.delta, start, wall_ns);
        self.last_sums = sums;
        self.last_ns = wall_ns;
        // The first accepted compression this build has, as Java chooses; none if none is.
        let (compression_type, metrics) = sub
            .accepted
            .iter()
            .filter_map(|id| Compression::from_id(u8::try_from(*id).ok()?).ok())
            .find_map(|c| Some((c.id() as i8, c.compress(&metrics).ok()?)))
            .unwrap_or((0, metrics));
        Some(PushTelemetryRequest {
            client_instance_id: self.instance_id,
            subscription_id: sub.id,
            terminating: false,
            compression_type,
            metrics: metrics.into(),
            ..Default::default()
        })
    }

    pub(crate) fn on_push(&mut self, r: &PushTelemetryResponse, now: Instant) {
        self.in_flight = false;
        let interval = self.subscription.as_ref().map_or(RETRY, |s| s.interval);
        match ErrorCode::from_code(r.error_code) {
            None => {
                self.pushes += 1;
                self.next = Some(now + interval);
            }
            // The subscription changed: ask again now.
            Some(ErrorCode::UnknownSubscriptionId) => {
                self.subscription = None;
                self.next = Some(now);
            }
            Some(ErrorCode::TelemetryTooLarge | ErrorCode::ThrottlingQuotaExceeded) => {
                self.next = Some(now + interval);
            }
            // The broker refuses what this client sends: stop, as Java does.
            Some(ErrorCode::InvalidRequest | ErrorCode::InvalidRecord) => self.unsupported(),
            Some(_) => {
                self.subscription = None;
                self.next = Some(now + interval);
            }
        }
    }
}
