//! Which connection takes a request any broker can answer (Metadata, FindCoordinator,
//! InitProducerId): a ready one to a broker not under suspicion, else a new one, else the
//! bootstrap list again.

use std::collections::BTreeMap;
use std::time::Duration;

use super::connection::{Peer, State};
use super::{ConnId, Network, NodeId, Purpose};
use crate::config::HostPort;
use crate::time::Instant;

/// How long a metadata request waits on a connection being set up before another node is
/// tried too (see [`Network::least_loaded`]), and how long a leader's connect may stay on its
/// way before metadata is asked again (see [`Network::handle_timeout`]).
pub(super) const CONNECT_PATIENCE: Duration = Duration::from_secs(1);

impl<T> Network<T> {
    /// The ready data connection with the fewest requests in flight, for requests any broker
    /// can answer (Metadata, FindCoordinator, InitProducerId). With none ready, it starts a
    /// connection: to a known node, or before metadata, to the next bootstrap server.
    ///
    /// A broker whose last connection failed (a request timed out, a connect was refused)
    /// and that has not completed a handshake since is under suspicion: its other
    /// connections (the lanes of `connections.per.broker`) are taken only when no other
    /// broker can be reached. A broker that stopped answering one connection has most likely
    /// stopped answering all of them, and a metadata request sent there waits out another
    /// `request.timeout.ms` (found by the simulation: after a broker vanished, a producer
    /// sent metadata to its second lane and its records waited 7 s, not 4, seed 2997).
    pub fn least_loaded(&mut self, now: Instant) -> Option<ConnId> {
        if self.recovery.take_due() && self.cfg.rebootstrap {
            // KIP-1102: no metadata for metadata.recovery.rebootstrap.trigger.ms (no broker
            // to ask, or none answering), whatever the known brokers' state.
            tracing::info!(
                "no metadata for metadata.recovery.rebootstrap.trigger.ms; starting over from bootstrap.servers (metadata.recovery.strategy=rebootstrap)"
            );
            self.rebootstrap();
            // The brokers' open connections brought no metadata in all that time: nothing more
            // is asked of them, and they close once idle (found by the test of a broker that
            // answered no metadata until the trigger, asked again on its open connection).
            for c in self.conns.values_mut() {
                if matches!(c.peer, Peer::Node(..)) {
                    c.close_when_idle = true;
                }
            }
        }
        let found = self.pick_least_loaded(now);
        self.recovery.broker_found(found.is_some(), now);
        found
    }

    /// [`Network::least_loaded`]'s choice.
    fn pick_least_loaded(&mut self, now: Instant) -> Option<ConnId> {
        if let Some(best) = self.least_loaded_ready(false, now) {
            return Some(best);
        }
        // A connection on its way is waited for while young: a live broker answers a connect
        // within milliseconds, a vanished one (a pulled cable, a frozen host) never, and its
        // connect hangs until socket.connection.setup.timeout.ms (10-30 s) while every
        // metadata request waits on it. After CONNECT_PATIENCE another node is tried too
        // (found by the simulation: clients waited on a vanished broker for 50 s, seeds 466
        // and 1277).
        //
        // Patience is counted per address from its oldest attempt: a lane's connect to a
        // broker whose data connection has been on its way for a second says nothing new
        // (found by the simulation: a producer's lane reconnects kept a client waiting on a
        // vanished broker a second longer, seed 1717).
        let mut oldest: BTreeMap<&HostPort, Instant> = BTreeMap::new();
        for c in self.conns.values() {
            if c.state != State::Ready && !c.close_when_idle {
                let t = oldest.entry(&c.addr).or_insert(c.last_active);
                *t = (*t).min(c.last_active);
            }
        }
        let patience = oldest
            .into_values()
            .map(|t| t + CONNECT_PATIENCE)
            .filter(|t| *t > now)
            .min();
        if patience.is_some() {
            // One is on its way; if it is still on its way then, another node is tried.
            self.patience_wake = patience;
            return None;
        }
        if let Some(node) = self.node_to_connect(now) {
            let addr = self.nodes[&node].clone();
            self.connect(addr, Peer::Node(node, Purpose::Data), now);
            self.patience_wake = Some(now + CONNECT_PATIENCE);
            return None;
        }
        if self.cfg.rebootstrap && !self.nodes.is_empty() && self.none_trusted(now) {
            // KIP-899, as Java 4.x by default: every broker the last metadata named is out of
            // reach or under suspicion (say it named one broker, the others being down then,
            // and that one vanished): the bootstrap list may lead to the ones that came back
            // (found by the simulation: every client of seeds 466 and 1277 waited on a
            // vanished broker). This goes before a suspect broker's other lane: a metadata
            // request sent there waits out another request.timeout.ms (found by the API
            // simulation, seed 733: the producer knew only the broker that vanished, and asked
            // its second lane).
            tracing::info!(
                "none of the known brokers can be reached; starting over from bootstrap.servers (metadata.recovery.strategy=rebootstrap)"
            );
            self.rebootstrap();
            self.connect_bootstrap(now);
            return None;
        }
        if self.nodes.is_empty() && self.connect_bootstrap(now) {
            return None;
        }
        // Nothing else to try: a suspect broker may still answer.
        self.least_loaded_ready(true, now)
    }

    /// Whether the last connection to `addr` failed with no handshake since.
    fn suspect(&self, addr: &HostPort) -> bool {
        self.failures.get(addr).is_some_and(|f| f.count > 0)
    }

    /// The ready data connection with the fewest requests in flight, among those to brokers
    /// under suspicion or among the others.
    fn least_loaded_ready(&self, suspect: bool, now: Instant) -> Option<ConnId> {
        let max = self.cfg.max_in_flight;
        self.conns
            .values()
            .filter(|c| !matches!(c.peer, Peer::Node(_, Purpose::Coordinator)))
            .filter(|c| !c.close_when_idle && c.can_send(max, now))
            .filter(|c| self.suspect(&c.addr) == suspect)
            .min_by_key(|c| (c.in_flight.len(), c.id))
            .map(|c| c.id)
    }

    /// A known node with no data connection that may be connected to now, picked at random
    /// (seeded) among those not under suspicion if there are any.
    fn node_to_connect(&mut self, now: Instant) -> Option<NodeId> {
        let mut candidates: Vec<(NodeId, bool)> = self
            .nodes
            .iter()
            .filter(|(n, a)| {
                !self.by_node.contains_key(&(**n, Purpose::Data)) && self.may_connect(a, now)
            })
            .map(|(n, a)| (*n, self.suspect(a)))
            .collect();
        if candidates.iter().any(|(_, suspect)| !suspect) {
            candidates.retain(|(_, suspect)| !suspect);
        }
        if candidates.is_empty() {
            return None;
        }
        let i = self.rng.below(candidates.len() as u64) as usize;
        Some(candidates[i].0)
    }

    /// Whether every known node is under suspicion or out of reach: no connection to it
    /// ready, and one on its way for longer than CONNECT_PATIENCE or a reconnect backoff to
    /// wait.
    fn none_trusted(&self, now: Instant) -> bool {
        self.nodes.iter().all(|(n, addr)| {
            let ready = self
                .conns
                .values()
                .any(|c| c.state == State::Ready && c.node() == Some(*n));
            let pending = self.by_node.contains_key(&(*n, Purpose::Data));
            self.suspect(addr) || (!ready && (pending || !self.may_connect(addr, now)))
        })
    }

    /// Connects to a bootstrap address that may be tried and has no connection on its way:
    /// the next one not under suspicion, else the one whose last failure is oldest (it had the
    /// longest to come back; found by the API simulation, seed 733: after the only broker the
    /// client knew vanished, every bootstrap address had failed once, and the one tried first
    /// was the one that had just timed out, for another second of patience). Whether one was
    /// started.
    fn connect_bootstrap(&mut self, now: Instant) -> bool {
        let n = self.bootstrap.len();
        let pick = (0..n)
            .map(|k| (self.bootstrap_next + k) % n)
            .filter(|i| {
                let addr = &self.bootstrap[*i];
                let busy =
                    (self.conns.values()).any(|c| c.addr == *addr && c.state != State::Ready);
                !busy && self.may_connect(addr, now)
            })
            .min_by_key(|i| {
                let addr = &self.bootstrap[*i];
                let last = self
                    .failures
                    .get(addr)
                    .filter(|f| f.count > 0)
                    .map(|f| f.last);
                // Not suspect first (None), in turn; then the oldest failure.
                (last.is_some(), last)
            });
        let Some(i) = pick else {
            return false;
        };
        self.bootstrap_next = i;
        self.connect(self.bootstrap[i].clone(), Peer::Bootstrap, now);
        self.patience_wake = Some(now + CONNECT_PATIENCE);
        true
    }
}
