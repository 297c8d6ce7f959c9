//! The network surface every client state machine shares, generated once: the five network
//! inputs and `poll_output`.

/// Gives a state machine that owns a `net: Network<_>`, a `drive(now)` step and an
/// `events` queue its network surface: the five network inputs, each passed to the
/// connection manager and followed by one step, and `poll_output` over its `Output` type
/// (network actions first, then user events).
macro_rules! network_io {
    ($ty:ty, $event:ty) => {
        impl $ty {
            /// Pushes the metrics the cluster subscribed to (KIP-714) when due.
            fn push_telemetry(&mut self, now: $crate::Instant) {
                if self.net.telemetry_wants_push(now) {
                    let snapshot = self.metrics(now);
                    self.net.push_telemetry(&snapshot, now);
                }
            }

            /// The client instance id the cluster assigned for telemetry (KIP-714), once it
            /// did (`enable.metrics.push`, with a broker that has a telemetry receiver).
            pub fn client_instance_id(&self) -> Option<uuid::Uuid> {
                self.net.client_instance_id()
            }

            /// Telemetry pushes the brokers accepted (KIP-714).
            pub fn telemetry_pushes(&self) -> u64 {
                self.net.telemetry_pushes()
            }

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
                let _span = self.net.span().clone().entered();
                self.net.handle_connected(conn, now);
                self.drive(now);
                self.push_telemetry(now);
            }

            /// The adapter could not connect (refused, unreachable, DNS failure).
            pub fn handle_connect_failed(
                &mut self,
                conn: $crate::net::ConnId,
                error: $crate::net::ConnectError,
                now: $crate::Instant,
            ) {
                let _span = self.net.span().clone().entered();
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
                let _span = self.net.span().clone().entered();
                self.net.handle_received(conn, data, now);
                self.drive(now);
                self.push_telemetry(now);
            }

            /// A connection closed.
            pub fn handle_closed(&mut self, conn: $crate::net::ConnId, now: $crate::Instant) {
                let _span = self.net.span().clone().entered();
                self.net.handle_closed(conn, now);
                self.drive(now);
            }

            /// Time passed: expire, retry, linger.
            pub fn handle_timeout(&mut self, now: $crate::Instant) {
                let _span = self.net.span().clone().entered();
                self.net.handle_timeout(now);
                self.drive(now);
                self.push_telemetry(now);
            }

            /// The wall clock (time since the Unix epoch) that TLS certificates are judged by
            /// and OAUTHBEARER tokens are refreshed by: an input like every clock reading
            /// (the driver passes its runtime's every round).
            pub fn handle_wall_clock(&mut self, since_epoch: std::time::Duration) {
                self.net.set_wall_clock(since_epoch);
            }

            /// The OAUTHBEARER token to authenticate with from now on: the answer to
            /// [`poll_token_request`](Self::poll_token_request) (or a token pushed before
            /// one is asked for). Connections waiting for it go on.
            pub fn set_oauth_token(
                &mut self,
                token: $crate::sasl::OAuthToken,
                now: $crate::Instant,
            ) {
                self.net.set_token(token, now);
                self.drive(now);
            }

            /// The token provider failed: what waits for a connection fails as
            /// unauthenticated, naming `why`.
            pub fn handle_token_error(&mut self, why: &str, now: $crate::Instant) {
                self.net.token_failed(why, now);
                self.drive(now);
            }

            /// Whether the application must fetch an OAUTHBEARER token (an output: true once
            /// per need; answer with [`set_oauth_token`](Self::set_oauth_token) or
            /// [`handle_token_error`](Self::handle_token_error)).
            pub fn poll_token_request(&mut self) -> bool {
                self.net.poll_token_request()
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
            fn handle_wall_clock(&mut self, since_epoch: std::time::Duration) {
                <$ty>::handle_wall_clock(self, since_epoch)
            }
            fn poll_token_request(&mut self) -> bool {
                <$ty>::poll_token_request(self)
            }
            fn set_oauth_token(&mut self, token: $crate::sasl::OAuthToken, now: $crate::Instant) {
                <$ty>::set_oauth_token(self, token, now)
            }
            fn handle_token_error(&mut self, why: &str, now: $crate::Instant) {
                <$ty>::handle_token_error(self, why, now)
            }
            fn poll_output(&mut self) -> Option<$crate::net::Output<$event>> {
                <$ty>::poll_output(self)
            }
            fn poll_timeout(&self) -> Option<$crate::Instant> {
                <$ty>::poll_timeout(self)
            }
            fn metrics(&self, now: $crate::Instant) -> $crate::metrics::MetricsSnapshot {
                <$ty>::metrics(self, now)
            }
        }
    };
}
pub(crate) use network_io;
