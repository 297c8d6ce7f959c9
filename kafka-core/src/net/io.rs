//! The network surface every client state machine shares, generated once: the five network
//! inputs and `poll_output`.

/// Gives a state machine that owns a `net: Network<_>`, a `drive(now)` step and an
/// `events` queue its network surface: the five network inputs, each passed to the
/// connection manager and followed by one step, and `poll_output` over its `Output` type
/// (network actions first, then user events).
macro_rules! network_io {
    ($ty:ty, $event:ty) => {
        impl $ty {
            /// Whether [`poll_output`](Self::poll_output) has something (a pure query).
            pub fn has_output(&self) -> bool {
                self.net.has_transmit() || !self.events.is_empty()
            }

            /// The next output: network actions first, then user events.
            pub fn poll_output(&mut self) -> Option<$crate::net::Output<$event>> {
                if let Some(t) = self.net.poll_transmit() {
                    return Some($crate::net::Output::Transmit(t));
                }
                self.events.pop_front().map($crate::net::Output::Event)
            }

            /// The adapter connected a connection.
            pub fn handle_connected(&mut self, conn: $crate::net::ConnId, now: $crate::Instant) {
                self.net.handle_connected(conn, now);
                self.drive(now);
            }

            /// The adapter could not connect (refused, unreachable, DNS failure).
            pub fn handle_connect_failed(
                &mut self,
                conn: $crate::net::ConnId,
                error: $crate::net::ConnectError,
                now: $crate::Instant,
            ) {
                self.net.handle_connect_failed(conn, error, now);
                self.drive(now);
            }

            /// Bytes arrived on a connection.
            pub fn handle_received(
                &mut self,
                conn: $crate::net::ConnId,
                data: &[u8],
                now: $crate::Instant,
            ) {
                self.net.handle_received(conn, data, now);
                self.drive(now);
            }

            /// A connection closed.
            pub fn handle_closed(&mut self, conn: $crate::net::ConnId, now: $crate::Instant) {
                self.net.handle_closed(conn, now);
                self.drive(now);
            }

            /// Time passed: expire, retry, linger.
            pub fn handle_timeout(&mut self, now: $crate::Instant) {
                self.net.handle_timeout(now);
                self.drive(now);
            }

            /// The wall clock, in seconds since the Unix epoch, that TLS certificates are
            /// judged by and OAUTHBEARER tokens are issued at: an input like every clock
            /// reading (the driver passes its runtime's when a connection opens).
            pub fn handle_wall_clock(&mut self, unix_secs: u64) {
                self.net.set_wall_clock(unix_secs);
            }

            /// The OAUTHBEARER token to authenticate with from now on (the application's
            /// token provider answers here; connections use it as they authenticate or
            /// re-authenticate).
            pub fn set_oauth_token(&mut self, token: $crate::sasl::OAuthToken) {
                self.net.set_token(token);
            }
        }

        impl $crate::net::Machine for $ty {
            type Event = $event;
            fn handle_connected(&mut self, conn: $crate::net::ConnId, now: $crate::Instant) {
                <$ty>::handle_connected(self, conn, now)
            }
            fn handle_connect_failed(
                &mut self,
                conn: $crate::net::ConnId,
                error: $crate::net::ConnectError,
                now: $crate::Instant,
            ) {
                <$ty>::handle_connect_failed(self, conn, error, now)
            }
            fn handle_received(
                &mut self,
                conn: $crate::net::ConnId,
                data: &[u8],
                now: $crate::Instant,
            ) {
                <$ty>::handle_received(self, conn, data, now)
            }
            fn handle_closed(&mut self, conn: $crate::net::ConnId, now: $crate::Instant) {
                <$ty>::handle_closed(self, conn, now)
            }
            fn handle_timeout(&mut self, now: $crate::Instant) {
                <$ty>::handle_timeout(self, now)
            }
            fn handle_wall_clock(&mut self, unix_secs: u64) {
                <$ty>::handle_wall_clock(self, unix_secs)
            }
            fn poll_output(&mut self) -> Option<$crate::net::Output<$event>> {
                <$ty>::poll_output(self)
            }
            fn poll_timeout(&self) -> Option<$crate::Instant> {
                <$ty>::poll_timeout(self)
            }
        }
    };
}
pub(crate) use network_io;
