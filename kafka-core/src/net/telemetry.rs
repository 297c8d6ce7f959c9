//! The connection manager's side of KIP-714 telemetry: it carries the telemetry sub-machine's
//! requests on a ready connection and its answers back. The client supplies the metrics
//! (see [`Network::telemetry_wants_push`]).

use kafka_proto::api::{ApiKey, ResponseBody};

use super::connection::{State, Tag};
use super::{ConnId, Network};
use crate::metrics::telemetry::Want;
use crate::metrics::MetricsSnapshot;
use crate::time::Instant;

/// How long telemetry waits before looking again for a connection that can carry it, when
/// those that offer it are busy (found by the API simulation, seed 150: a re-authenticating
/// connection left the deadline in the past, and the driver spun).
const BLOCKED: std::time::Duration = std::time::Duration::from_millis(100);

impl<T> Network<T> {
    /// A ready connection to send telemetry on, if one can take a request. `Err(())` if
    /// connections are ready but none offers the API: the cluster has no telemetry receiver.
    fn telemetry_conn(&self, now: Instant) -> Result<Option<ConnId>, ()> {
        let max = self.cfg.max_in_flight;
        let (mut ready, mut offered) = (false, false);
        for c in self.conns.values().filter(|c| c.state == State::Ready) {
            ready = true;
            if c.versions
                .negotiate(ApiKey::GetTelemetrySubscriptions)
                .is_ok()
                && c.versions.negotiate(ApiKey::PushTelemetry).is_ok()
            {
                offered = true;
                if c.can_send(max, now) {
                    return Ok(Some(c.id));
                }
            }
        }
        if ready && !offered {
            return Err(());
        }
        Ok(None)
    }

    /// Asks for the telemetry subscription when due.
    pub(super) fn telemetry_step(&mut self, now: Instant) {
        let Some(Want::Subscriptions(req)) = self.telemetry.due(now) else {
            return;
        };
        match self.telemetry_conn(now) {
            Err(()) => self.telemetry.unsupported(),
            Ok(None) => self.telemetry.postpone(now + BLOCKED),
            Ok(Some(conn)) => {
                let timeout = self.cfg.request_timeout;
                if self
                    .write(conn, &req, 0, Some(Tag::Telemetry), timeout, now)
                    .is_ok()
                {
                    self.telemetry.sent();
                }
            }
        }
    }

    /// Whether a telemetry push is due and can be sent: the client then passes its metrics
    /// to [`Network::push_telemetry`]. A push no connection can carry now is put off.
    pub fn telemetry_wants_push(&mut self, now: Instant) -> bool {
        if !matches!(self.telemetry.due(now), Some(Want::Push)) {
            return false;
        }
        match self.telemetry_conn(now) {
            Ok(Some(_)) => true,
            Ok(None) => {
                self.telemetry.postpone(now + BLOCKED);
                false
            }
            Err(()) => {
                self.telemetry.unsupported();
                false
            }
        }
    }

    /// Pushes the subscribed part of `snapshot` (KIP-714).
    pub fn push_telemetry(&mut self, snapshot: &MetricsSnapshot, now: Instant) {
        let Ok(Some(conn)) = self.telemetry_conn(now) else {
            return;
        };
        let wall_ns = u64::try_from(self.wall_ms)
            .unwrap_or(0)
            .saturating_mul(1_000_000);
        let Some(req) = self.telemetry.push_request(snapshot, wall_ns, now) else {
            return;
        };
        let timeout = self.cfg.request_timeout;
        if self
            .write(conn, &req, 0, Some(Tag::Telemetry), timeout, now)
            .is_ok()
        {
            tracing::debug!(
                subscription = req.subscription_id,
                bytes = req.metrics.len(),
                "pushing telemetry"
            );
            self.telemetry.sent();
        }
    }

    /// The client instance id the cluster assigned for telemetry (KIP-714), once it did.
    pub fn client_instance_id(&self) -> Option<uuid::Uuid> {
        self.telemetry.instance_id()
    }

    /// Telemetry pushes the brokers accepted.
    pub fn telemetry_pushes(&self) -> u64 {
        self.telemetry.pushes
    }

    pub(super) fn on_telemetry(&mut self, body: ResponseBody, now: Instant) {
        match body {
            ResponseBody::GetTelemetrySubscriptions(r) => {
                tracing::debug!(
                    error = r.error_code,
                    subscription = r.subscription_id,
                    interval_ms = r.push_interval_ms,
                    metrics = r.requested_metrics.len(),
                    "telemetry subscription"
                );
                self.telemetry.on_subscriptions(&r, now)
            }
            ResponseBody::PushTelemetry(r) => {
                tracing::debug!(error = r.error_code, "telemetry pushed");
                self.telemetry.on_push(&r, now)
            }
            _ => self.telemetry.failed(now),
        }
    }
}
