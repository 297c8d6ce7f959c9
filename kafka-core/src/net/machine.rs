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
    /// The wall clock in seconds since the Unix epoch, for TLS certificate validity (and
    /// OAUTHBEARER tokens): pass it before `handle_connected`.
    fn handle_wall_clock(&mut self, unix_secs: u64);
    /// The next output.
    fn poll_output(&mut self) -> Option<Output<Self::Event>>;
    /// When to call `handle_timeout` next. A pure query.
    fn poll_timeout(&self) -> Option<Instant>;
}
