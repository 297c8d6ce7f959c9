//! A connection that failed: what was in flight fails with a typed cause, the reconnect
//! backs off, and idle bootstrap connections close.

use super::*;

/// Who ends a connection being dropped: this side (the adapter must close its socket), or
/// the peer or the socket, which already did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Closing {
    Ours,
    AlreadyClosed,
}

impl<T> Network<T> {
    /// Removes a connection, fails what was in flight, and schedules the reconnect backoff.
    pub(super) fn fail_connection(
        &mut self,
        conn: ConnId,
        now: Instant,
        error: impl Fn(HostPort) -> RequestError,
        closing: Closing,
    ) {
        let Some(c) = self.remove(conn, closing, now) else {
            return;
        };
        tracing::info!(
            conn = conn.0,
            addr = %c.addr,
            node = c.node(),
            in_flight = c.in_flight.len(),
            problem = self.last_problem.as_ref().map(|p| p.0.as_str()),
            "connection failed"
        );
        let f = self.failures.entry(c.addr.clone()).or_default();
        let delay = self.cfg.reconnect.delay(f.count, &mut self.rng);
        f.count = f.count.saturating_add(1);
        f.last = now;
        if f.count == WARN_AFTER_FAILURES {
            // Once per outage (the count starts over when a connection is ready again), so
            // that an outage shows at the warn level without a line per attempt.
            tracing::warn!(
                addr = %c.addr,
                node = c.node(),
                failures = f.count,
                problem = self.last_problem.as_ref().map(|p| p.0.as_str()),
                "connections keep failing; retrying with backoff"
            );
        }
        f.retry_at = Some(now + delay);
        if c.peer == Peer::Bootstrap {
            self.bootstrap_next += 1;
        } else {
            self.node_failed = true;
        }
        if let Peer::Node(node, Purpose::Coordinator) = c.peer {
            self.coordinator_failed.insert(node);
        }
        self.fail_in_flight(c, now, error);
    }

    /// Fails every request in flight on a connection already removed.
    fn fail_in_flight(
        &mut self,
        c: Connection<T>,
        now: Instant,
        error: impl Fn(HostPort) -> RequestError,
    ) {
        let (conn, node) = (c.id, c.node());
        if c.in_flight.iter().any(|r| matches!(r.tag, Tag::Telemetry)) {
            self.telemetry.failed(now);
        }
        for req in c.in_flight {
            if let Tag::User(tag) = req.tag {
                self.events.push_back(NetEvent::Failed {
                    conn,
                    node,
                    tag,
                    error: error(c.addr.clone()),
                });
            }
        }
    }

    /// After a request to a broker timed out, closes its other data connections (the lanes of
    /// `connections.per.broker`), failing what they carry, as Java closes its one connection
    /// to the node: a broker that stopped answering one connection has most likely stopped
    /// answering all of them. A request already in flight on another lane (a metadata refresh
    /// sent there a moment before the timeout) would otherwise wait out a second
    /// `request.timeout.ms` while the records behind it wait too (found by the simulation:
    /// a broker vanished, a producer's periodic metadata went to its idle lane 2.5 s into the
    /// produce's timeout, and its records were resolved 6.1 s after the fault, seeds 84973,
    /// 92461, 96333 and 97113 of 100,000). The group coordinator's connection is left alone,
    /// as Java's is: its own requests time it out.
    pub(super) fn fail_lanes_of(&mut self, node: NodeId, now: Instant) {
        let lanes: Vec<ConnId> = (self.conns.values())
            .filter(
                |c| matches!(c.peer, Peer::Node(n, Purpose::Data | Purpose::Lane(_)) if n == node),
            )
            .map(|c| c.id)
            .collect();
        for id in lanes {
            if let Some(c) = self.remove(id, Closing::Ours, now) {
                tracing::debug!(
                    conn = id.0,
                    node,
                    in_flight = c.in_flight.len(),
                    "closing a lane to a broker that timed out a request"
                );
                self.fail_in_flight(c, now, |addr| RequestError::Disconnected { addr });
            }
        }
    }

    pub(super) fn remove(
        &mut self,
        conn: ConnId,
        closing: Closing,
        now: Instant,
    ) -> Option<Connection<T>> {
        let c = self.conns.remove(&conn)?;
        self.metrics.connection_closed(now);
        if let Peer::Node(node, purpose) = c.peer {
            if self.by_node.get(&(node, purpose)) == Some(&conn) {
                self.by_node.remove(&(node, purpose));
            }
        }
        if closing == Closing::Ours {
            self.transmits.push_back(Transmit::Close { conn });
        }
        Some(c)
    }

    pub(super) fn close_idle_bootstrap(&mut self, now: Instant) {
        let idle: Vec<ConnId> = self
            .conns
            .values()
            .filter(|c| c.close_when_idle && c.in_flight.is_empty())
            .map(|c| c.id)
            .collect();
        for id in idle {
            self.remove(id, Closing::Ours, now);
        }
    }
}
