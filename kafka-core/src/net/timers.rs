//! Time on the network: connection setups, requests and idle connections that expire,
//! throttles that lift, and the next instant any of it is due.

use super::failure::Closing;
use super::*;

impl<T> Network<T> {
    /// Expires connection setups, requests and idle connections, and lifts throttles.
    pub fn handle_timeout(&mut self, now: Instant) {
        // Past: the caller's drive, which follows, asks least_loaded again.
        self.patience_wake = self.patience_wake.filter(|t| *t > now);
        self.recovery
            .handle_timeout(self.cfg.rebootstrap_trigger, now);
        let ids: Vec<ConnId> = self.conns.keys().copied().collect();
        for id in ids {
            // A lane closed with a sibling that timed out is gone.
            let Some(c) = self.conns.get(&id) else {
                continue;
            };
            if let State::Connecting { deadline } | State::Tls { deadline } = c.state {
                if deadline <= now {
                    let what = if matches!(c.state, State::Tls { .. }) {
                        "no TLS handshake with"
                    } else {
                        "no connection to"
                    };
                    self.last_problem = stamp(
                        now,
                        format!(
                            "{what} {} within socket.connection.setup.timeout.ms",
                            c.addr
                        ),
                    );
                    self.fail_connection(
                        id,
                        now,
                        |addr| RequestError::Disconnected { addr },
                        Closing::Ours,
                    );
                    continue;
                }
                if c.slow_wake.is_some_and(|t| t <= now) {
                    // A live broker answers a connect within milliseconds; one that vanished
                    // (a frozen host, a pulled cable) never does, and its connect hangs until
                    // socket.connection.setup.timeout.ms (10 s and more). Its leaderships
                    // have likely moved: metadata is asked again, each second while it hangs,
                    // rather than waiting out the setup timeout (found by the simulation: a
                    // broker vanished just after it restarted, and on a seed with 5-minute
                    // metadata every producer waited on its connect for 10 s, seed 20999).
                    self.node_failed = true;
                    let c = self.conns.get_mut(&id).expect("present");
                    c.slow_wake = Some(now + least_loaded::CONNECT_PATIENCE);
                }
            }
            let c = &self.conns[&id];
            if let Some(f) = c.in_flight.front().filter(|f| f.deadline <= now) {
                self.last_problem = stamp(
                    now,
                    format!(
                        "{} did not answer {:?} within request.timeout.ms",
                        c.addr, f.api
                    ),
                );
                let data_node = match c.peer {
                    Peer::Node(n, Purpose::Data | Purpose::Lane(_)) => Some(n),
                    _ => None,
                };
                self.fail_connection(
                    id,
                    now,
                    |addr| RequestError::TimedOut { addr },
                    Closing::Ours,
                );
                if let Some(node) = data_node {
                    self.fail_lanes_of(node, now);
                }
                continue;
            }
            if c.state == State::Ready
                && c.in_flight.is_empty()
                && c.last_active + self.cfg.max_idle <= now
            {
                self.remove(id, Closing::Ours, now);
                continue;
            }
            let c = self.conns.get_mut(&id).expect("present");
            if c.muted_until.is_some_and(|t| t <= now) {
                c.muted_until = None;
            }
        }
        for f in self.failures.values_mut() {
            if f.retry_at.is_some_and(|t| t <= now) {
                f.retry_at = None;
            }
        }
        self.reauthenticate_due(now);
        self.expire_token_waits(now);
        self.telemetry_step(now);
    }

    /// The next instant [`Network::handle_timeout`] has work at. A pure query.
    pub fn poll_timeout(&self) -> Option<Instant> {
        // One pass over the connections (a client asks after every input it is given).
        let mut next: Option<Instant> = None;
        let mut earliest = |t: Instant| next = Some(next.map_or(t, |n| n.min(t)));
        let (mut any_ready, mut any_on_its_way) = (false, false);
        for c in self.conns.values() {
            if let Some(t) = c.next_deadline(self.cfg.max_idle) {
                earliest(t);
            }
            if c.state == State::Ready {
                any_ready = true;
            } else {
                any_on_its_way = true;
            }
        }
        for t in self.failures.values().filter_map(|f| f.retry_at) {
            earliest(t);
        }
        // Telemetry only while a connection can carry it.
        if let Some(t) = self.telemetry.deadline().filter(|_| any_ready) {
            earliest(t);
        }
        // Only while a connection is still on its way (a refused one left nothing to wait on).
        if let Some(t) = self.patience_wake.filter(|_| any_on_its_way) {
            earliest(t);
        }
        if self.cfg.rebootstrap {
            if let Some(t) = self.recovery.deadline(self.cfg.rebootstrap_trigger) {
                earliest(t);
            }
        }
        next
    }
}
