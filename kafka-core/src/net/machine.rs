//! The surface every sans-IO client shares: five network inputs, one output queue and one
//! deadline. Drivers and simulations are written once against [`Machine`].

use std::collections::VecDeque;

use super::{ConnId, ConnectError, Network, Transmit};
use crate::metrics::MetricsSnapshot;
use crate::time::Instant;

/// One output of a client state machine: a network action or a user event.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Output<E> {
    /// A network action for the driver.
    Transmit(Transmit),
    /// A user event.
    Event(E),
}

/// A sans-IO client (producer, consumer, admin) as a driver sees it: its network inputs, its
/// outputs and its deadline, written once here for the three clients.
///
/// The contract: after every `handle_*` call, drain [`Machine::poll_output`] until `None`, then
/// sleep until [`Machine::poll_timeout`] (or the next input) and call
/// [`Machine::handle_timeout`] with the time then.
///
/// Each network input goes to the client's connection manager and is followed by one step of
/// the client. The hidden items are what these provided methods need of a client: only this
/// crate's clients implement the trait (its [`Sealed`] argument cannot be named elsewhere).
pub trait Machine {
    /// Its user events.
    type Event;

    /// The tag its requests carry.
    #[doc(hidden)]
    type Tag;

    /// Its connection manager and its queue of user events.
    #[doc(hidden)]
    fn parts(&mut self, _: Sealed) -> (&mut Network<Self::Tag>, &mut VecDeque<Self::Event>);

    /// [`Machine::parts`], to read.
    #[doc(hidden)]
    fn parts_ref(&self, _: Sealed) -> (&Network<Self::Tag>, &VecDeque<Self::Event>);

    /// One step of the client after an input.
    #[doc(hidden)]
    fn step(&mut self, now: Instant, _: Sealed);

    /// When to call [`Machine::handle_timeout`] next. A pure query.
    fn poll_timeout(&self) -> Option<Instant>;

    /// Every metric at `now`, with the Java client's names.
    fn metrics(&self, now: Instant) -> MetricsSnapshot;

    /// A connection the machine asked for is open.
    fn handle_connected(&mut self, conn: ConnId, now: Instant) {
        let _span = self.parts_ref(Sealed).0.span().clone().entered();
        self.parts(Sealed).0.handle_connected(conn, now);
        self.step(now, Sealed);
        push_telemetry(self, now);
    }

    /// A connection could not be opened (refused, unreachable, DNS failure): `error` says
    /// why, and errors and timeouts name it.
    fn handle_connect_failed(&mut self, conn: ConnId, error: ConnectError, now: Instant) {
        let _span = self.parts_ref(Sealed).0.span().clone().entered();
        self.parts(Sealed).0.handle_connect_failed(conn, error, now);
        self.step(now, Sealed);
    }

    /// Bytes arrived on a connection.
    fn handle_received(&mut self, conn: ConnId, data: &[u8], now: Instant) {
        let _span = self.parts_ref(Sealed).0.span().clone().entered();
        self.parts(Sealed).0.handle_received(conn, data, now);
        self.step(now, Sealed);
        push_telemetry(self, now);
    }

    /// A connection closed (by the peer or an IO error).
    fn handle_closed(&mut self, conn: ConnId, now: Instant) {
        let _span = self.parts_ref(Sealed).0.span().clone().entered();
        self.parts(Sealed).0.handle_closed(conn, now);
        self.step(now, Sealed);
    }

    /// Time passed: expire, retry, linger.
    fn handle_timeout(&mut self, now: Instant) {
        let _span = self.parts_ref(Sealed).0.span().clone().entered();
        self.parts(Sealed).0.handle_timeout(now);
        self.step(now, Sealed);
        push_telemetry(self, now);
    }

    /// The wall clock (time since the Unix epoch) that TLS certificates are judged by and
    /// OAUTHBEARER tokens are refreshed by: an input like every clock reading (pass it before
    /// `handle_connected`, and keep it current; the driver passes its runtime's every round).
    fn handle_wall_clock(&mut self, since_epoch: std::time::Duration) {
        self.parts(Sealed).0.set_wall_clock(since_epoch);
    }

    /// Whether the application must fetch an OAUTHBEARER token (an output: true once per
    /// need; answer with [`Machine::set_oauth_token`] or [`Machine::handle_token_error`]).
    fn poll_token_request(&mut self) -> bool {
        self.parts(Sealed).0.poll_token_request()
    }

    /// The OAUTHBEARER token to authenticate with from now on: the answer to
    /// [`Machine::poll_token_request`] (or a token pushed before one is asked for).
    /// Connections waiting for it go on.
    fn set_oauth_token(&mut self, token: crate::sasl::OAuthToken, now: Instant) {
        self.parts(Sealed).0.set_token(token, now);
        self.step(now, Sealed);
    }

    /// The token provider failed: what waits for a connection fails as unauthenticated,
    /// naming `why`.
    fn handle_token_error(&mut self, why: &str, now: Instant) {
        self.parts(Sealed).0.token_failed(why, now);
        self.step(now, Sealed);
    }

    /// Whether [`Machine::poll_output`] has something (a pure query).
    fn has_output(&self) -> bool {
        let (net, events) = self.parts_ref(Sealed);
        net.has_transmit() || !events.is_empty()
    }

    /// The next output: network actions first, then user events.
    fn poll_output(&mut self) -> Option<Output<Self::Event>> {
        let (net, events) = self.parts(Sealed);
        if let Some(t) = net.poll_transmit() {
            return Some(Output::Transmit(t));
        }
        events.pop_front().map(Output::Event)
    }

    /// The client instance id the cluster assigned for telemetry (KIP-714), once it did
    /// (`enable.metrics.push`, with a broker that has a telemetry receiver).
    fn client_instance_id(&self) -> Option<uuid::Uuid> {
        self.parts_ref(Sealed).0.client_instance_id()
    }

    /// Telemetry pushes the brokers accepted (KIP-714).
    fn telemetry_pushes(&self) -> u64 {
        self.parts_ref(Sealed).0.telemetry_pushes()
    }
}

/// Pushes the metrics the cluster subscribed to (KIP-714) when due.
fn push_telemetry<M: Machine + ?Sized>(m: &mut M, now: Instant) {
    if m.parts(Sealed).0.telemetry_wants_push(now) {
        let snapshot = m.metrics(now);
        m.parts(Sealed).0.push_telemetry(&snapshot, now);
    }
}

/// The argument that keeps [`Machine`]'s hidden items to this crate: public, so that the
/// trait may name it, in a module nobody outside can reach.
mod sealed {
    #[derive(Debug, Clone, Copy)]
    pub struct Sealed;
}
pub(crate) use sealed::Sealed;
