//! The connection manager's metrics: Java's selector and network-client metrics, for the
//! client as a whole (group `producer-metrics`, `consumer-metrics` or `admin-client-metrics`)
//! and per node (`…-node-metrics`, tagged `node-id` as `node-<id>`).

use std::collections::BTreeMap;

use super::NodeId;
use crate::metrics::stat::{Stat, Window};
use crate::metrics::Out;
use crate::time::Instant;

/// One node's request figures.
#[derive(Debug, Clone, Default)]
struct NodeStats {
    /// Request sizes (bytes): request-rate, request-size, outgoing-byte.
    requests: Stat,
    /// Response sizes (bytes): response-rate, incoming-byte.
    responses: Stat,
    /// Request latency (ms), send to response.
    latency: Stat,
}

/// Connection and request metrics, recorded by [`super::Network`].
#[derive(Debug, Clone, Default)]
pub struct NetMetrics {
    pub(crate) window: Window,
    created: Stat,
    closed: Stat,
    requests: Stat,
    responses: Stat,
    latency: Stat,
    /// By node id; the bootstrap connections (no node yet) are node -1, as Java's first
    /// bootstrap node is.
    nodes: BTreeMap<NodeId, NodeStats>,
}

impl NetMetrics {
    pub(crate) fn new(window: Window) -> Self {
        NetMetrics {
            window,
            ..Default::default()
        }
    }

    pub(crate) fn connection_created(&mut self, now: Instant) {
        self.created.record(1.0, now, self.window);
    }

    pub(crate) fn connection_closed(&mut self, now: Instant) {
        self.closed.record(1.0, now, self.window);
    }

    pub(crate) fn request(&mut self, node: Option<NodeId>, bytes: usize, now: Instant) {
        let w = self.window;
        self.requests.record(bytes as f64, now, w);
        self.node(node).requests.record(bytes as f64, now, w);
    }

    pub(crate) fn response(
        &mut self,
        node: Option<NodeId>,
        bytes: usize,
        latency_ms: f64,
        now: Instant,
    ) {
        let w = self.window;
        self.responses.record(bytes as f64, now, w);
        self.latency.record(latency_ms, now, w);
        let n = self.node(node);
        n.responses.record(bytes as f64, now, w);
        n.latency.record(latency_ms, now, w);
    }

    fn node(&mut self, node: Option<NodeId>) -> &mut NodeStats {
        self.nodes.entry(node.unwrap_or(-1)).or_default()
    }

    /// Adds the client-wide figures to `group` and the per-node ones to `node_group`.
    pub(crate) fn snapshot(
        &self,
        out: &mut Out<'_>,
        group: &'static str,
        node_group: &'static str,
        connections: usize,
    ) {
        out.gauge(group, "connection-count", &[], connections as f64);
        out.event_meter(
            group,
            "connection-creation-rate",
            "connection-creation-total",
            &[],
            &self.created,
        );
        out.event_meter(
            group,
            "connection-close-rate",
            "connection-close-total",
            &[],
            &self.closed,
        );
        out.meter(
            group,
            "outgoing-byte-rate",
            "outgoing-byte-total",
            &[],
            &self.requests,
        );
        out.meter(
            group,
            "incoming-byte-rate",
            "incoming-byte-total",
            &[],
            &self.responses,
        );
        out.event_meter(group, "request-rate", "request-total", &[], &self.requests);
        out.event_meter(
            group,
            "response-rate",
            "response-total",
            &[],
            &self.responses,
        );
        out.avg_max(
            group,
            "request-size-avg",
            "request-size-max",
            &[],
            &self.requests,
        );
        out.avg_max(
            group,
            "request-latency-avg",
            "request-latency-max",
            &[],
            &self.latency,
        );
        for (id, n) in &self.nodes {
            let tag = format!("node-{id}");
            let tags = [("node-id", tag.as_str())];
            out.meter(
                node_group,
                "outgoing-byte-rate",
                "outgoing-byte-total",
                &tags,
                &n.requests,
            );
            out.meter(
                node_group,
                "incoming-byte-rate",
                "incoming-byte-total",
                &tags,
                &n.responses,
            );
            out.event_meter(
                node_group,
                "request-rate",
                "request-total",
                &tags,
                &n.requests,
            );
            out.event_meter(
                node_group,
                "response-rate",
                "response-total",
                &tags,
                &n.responses,
            );
            out.avg_max(
                node_group,
                "request-size-avg",
                "request-size-max",
                &tags,
                &n.requests,
            );
            out.avg_max(
                node_group,
                "request-latency-avg",
                "request-latency-max",
                &tags,
                &n.latency,
            );
        }
    }
}
