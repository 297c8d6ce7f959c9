//! The surface every sans-IO client shares: five network inputs, one output queue and one
//! deadline. Drivers and simulations are written once against [`Machine`].

use super::{ConnId, ConnectError, Transmit};
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

/// A sans-IO client (producer, fetcher, admin, ...) as a driver sees it.
///
/// The contract: after every `handle_*` call, drain [`Machine::poll_output`] until `None`, then
/// sleep until [`Machine::poll_timeout`] (or the next input) and call
/// [`Machine::handle_timeout`] with the time then.
pub trait Machine {
    /// Its user events.
    type Event;
    /// A connection the machine asked for is open.
    fn handle_connected(&mut self, conn: ConnId, now: Instant);
    /// A connection could not be opened (refused, unreachable, DNS failure): `error` says
    /// why, and errors and timeouts name it.
    fn handle_connect_failed(&mut self, conn: ConnId, error: ConnectError, now: Instant);
    /// Bytes arrived on a connection.
    fn handle_received(&mut self, conn: ConnId, data: &[u8], now: Instant);
    /// A connection closed (by the peer or an IO error).
    fn handle_closed(&mut self, conn: ConnId, now: Instant);
    /// Time passed.
    fn handle_timeout(&mut self, now: Instant);
    /// The wall clock (time since the Unix epoch), for TLS certificate validity and
    /// OAUTHBEARER token refresh: pass it before `handle_connected`, and keep it current.
    fn handle_wall_clock(&mut self, since_epoch: std::time::Duration);
    /// Whether the application's OAUTHBEARER token provider must be asked (true once per
    /// need); answer with `set_oauth_token` or `handle_token_error`.
    fn poll_token_request(&mut self) -> bool;
    /// An OAUTHBEARER token from the application's provider.
    fn set_oauth_token(&mut self, token: crate::sasl::OAuthToken, now: Instant);
    /// The token provider failed.
    fn handle_token_error(&mut self, why: &str, now: Instant);
    /// The next output.
    fn poll_output(&mut self) -> Option<Output<Self::Event>>;
    /// When to call `handle_timeout` next. A pure query.
    fn poll_timeout(&self) -> Option<Instant>;
    /// Every metric at `now`, with the Java client's names.
    fn metrics(&self, now: Instant) -> crate::metrics::MetricsSnapshot;
}
