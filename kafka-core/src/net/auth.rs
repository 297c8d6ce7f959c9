//! SASL on a connection: SaslHandshake and SaslAuthenticate after ApiVersions, and KIP-368
//! re-authentication before the broker's session lifetime ends, with no request failed.

use std::time::Duration;

use bytes::Bytes;
use kafka_proto::api::{ApiKey, ResponseBody};
use kafka_proto::messages::sasl_authenticate_request::SaslAuthenticateRequest;
use kafka_proto::messages::sasl_handshake_request::SaslHandshakeRequest;
use kafka_proto::ErrorCode;

use super::connection::{State, Tag};
use super::failure::Closing;
use super::{stamp, AuthError, ConnId, Network, RequestError};
use crate::config::SaslMechanism;
use crate::sasl::{Exchange, OAuthToken};
use crate::time::Instant;

/// Where a connection's SASL exchange is.
#[derive(Debug)]
pub(crate) enum Sasl {
    /// SaslHandshake is in flight.
    Handshake,
    /// SaslAuthenticate rounds are in flight.
    Authenticate(Exchange),
    /// OAUTHBEARER: waiting for the application's token, until `deadline`.
    AwaitingToken { deadline: Instant },
}

impl<T> Network<T> {
    /// Starts authenticating `conn` (after ApiVersions, or again for KIP-368).
    pub(super) fn start_sasl(&mut self, conn: ConnId, now: Instant) {
        let mechanism = self.cfg.security.sasl.mechanism.name();
        let Some(c) = self.conns.get_mut(&conn) else {
            return;
        };
        c.sasl = Some(Sasl::Handshake);
        c.reauth_at = None;
        let version = c.versions.negotiate(ApiKey::SaslHandshake).unwrap_or(1);
        let req = SaslHandshakeRequest {
            mechanism: mechanism.into(),
            ..Default::default()
        };
        let timeout = self.cfg.request_timeout;
        if self
            .write(conn, &req, version, Some(Tag::Auth), timeout, now)
            .is_err()
        {
            self.fail_connection(
                conn,
                now,
                |addr| RequestError::Disconnected { addr },
                Closing::Ours,
            );
        }
    }

    fn send_authenticate(&mut self, conn: ConnId, bytes: Vec<u8>, now: Instant) {
        let Some(c) = self.conns.get(&conn) else {
            return;
        };
        let version = match c.versions.negotiate(ApiKey::SaslAuthenticate) {
            Ok(v) => v,
            Err(_) => {
                return self.auth_failed(conn, now, |addr, mechanism| AuthError::Protocol {
                    addr,
                    mechanism,
                    reason: "the broker does not speak SaslAuthenticate (Kafka 1.0 or later)"
                        .into(),
                })
            }
        };
        let req = SaslAuthenticateRequest {
            auth_bytes: Bytes::from(bytes),
            ..Default::default()
        };
        let timeout = self.cfg.request_timeout;
        if self
            .write(conn, &req, version, Some(Tag::Auth), timeout, now)
            .is_err()
        {
            return self.fail_connection(
                conn,
                now,
                |addr| RequestError::Disconnected { addr },
                Closing::Ours,
            );
        }
        if let Some(c) = self.conns.get_mut(&conn) {
            c.auth_sent = now;
        }
    }

    /// A SaslHandshake or SaslAuthenticate response.
    pub(super) fn on_auth(&mut self, conn: ConnId, body: ResponseBody, now: Instant) {
        match body {
            ResponseBody::SaslHandshake(r) => {
                if r.error_code == ErrorCode::IllegalSaslState.code() {
                    // ILLEGAL_SASL_STATE: Kafka answers so a handshake on a listener that
                    // speaks no SASL (its request handler, not an authenticator, saw it), and a
                    // re-authentication sooner than a second after the last. Only a ready
                    // connection re-authenticates.
                    let again = self
                        .conns
                        .get(&conn)
                        .is_some_and(|c| c.state == State::Ready);
                    let reason = if again {
                        "the broker refused to re-authenticate (ILLEGAL_SASL_STATE): Kafka \
                         allows one re-authentication a second, so the session it gave was \
                         too short (an OAUTHBEARER token close to expiry?)"
                    } else {
                        "this listener does not speak SASL (the broker answered the SASL \
                         handshake with ILLEGAL_SASL_STATE): connect to the broker's \
                         SASL_PLAINTEXT or SASL_SSL listener, or set security.protocol to \
                         PLAINTEXT or SSL to match this one"
                    };
                    return self.auth_failed(conn, now, |addr, mechanism| AuthError::Protocol {
                        addr,
                        mechanism,
                        reason: reason.into(),
                    });
                }
                if r.error_code != 0 {
                    let enabled = r.mechanisms.clone();
                    return self.auth_failed(conn, now, |addr, mechanism| {
                        AuthError::UnsupportedMechanism {
                            addr,
                            mechanism,
                            enabled,
                        }
                    });
                }
                if self.cfg.security.sasl.mechanism == SaslMechanism::OAuthBearer {
                    match self.fresh_token() {
                        Ok(true) => {}
                        Ok(false) => {
                            // The application's provider is asked; the exchange goes on
                            // when its token comes (`set_token`), within request.timeout.ms.
                            self.token_wanted = true;
                            let deadline = now + self.cfg.request_timeout;
                            if let Some(c) = self.conns.get_mut(&conn) {
                                c.sasl = Some(Sasl::AwaitingToken { deadline });
                            }
                            return;
                        }
                        Err(reason) => {
                            return self.auth_failed(conn, now, |addr, mechanism| {
                                AuthError::Protocol {
                                    addr,
                                    mechanism,
                                    reason,
                                }
                            })
                        }
                    }
                }
                self.begin_exchange(conn, now);
            }
            ResponseBody::SaslAuthenticate(r) => {
                if r.error_code != 0 {
                    let code = kafka_proto::ErrorCode::from_code(r.error_code);
                    let message = r
                        .error_message
                        .clone()
                        .or_else(|| code.map(|c| c.to_string()))
                        .unwrap_or_else(|| format!("error {}", r.error_code));
                    return self.auth_failed(conn, now, |addr, mechanism| AuthError::Refused {
                        addr,
                        mechanism,
                        message,
                    });
                }
                let Some(c) = self.conns.get_mut(&conn) else {
                    return;
                };
                let step = match &mut c.sasl {
                    Some(Sasl::Authenticate(x)) => x.step(&r.auth_bytes, &mut self.salt_cache),
                    _ => Err("a SaslAuthenticate response came with no exchange open".into()),
                };
                match step {
                    Ok(Some(next)) => self.send_authenticate(conn, next, now),
                    Ok(None) => self.authenticated(conn, r.session_lifetime_ms, now),
                    Err(reason) => {
                        self.auth_failed(conn, now, |addr, mechanism| AuthError::Protocol {
                            addr,
                            mechanism,
                            reason,
                        })
                    }
                }
            }
            _ => unreachable!("tagged as authentication"),
        }
    }

    /// Sends the mechanism's first message.
    fn begin_exchange(&mut self, conn: ConnId, now: Instant) {
        let token = self.token.as_ref().map(|(t, _)| t.clone());
        let (exchange, first) =
            Exchange::start(&self.cfg.security.sasl, &mut self.rng, token.as_ref());
        if let Some(c) = self.conns.get_mut(&conn) {
            c.sasl = Some(Sasl::Authenticate(exchange));
        }
        self.send_authenticate(conn, first, now);
    }

    fn awaiting_token(&self) -> Vec<ConnId> {
        self.conns
            .values()
            .filter(|c| matches!(c.sasl, Some(Sasl::AwaitingToken { .. })))
            .map(|c| c.id)
            .collect()
    }

    /// Fails connections that waited for a token past their deadline.
    pub(super) fn expire_token_waits(&mut self, now: Instant) {
        let late: Vec<ConnId> = self
            .conns
            .values()
            .filter(|c| matches!(c.sasl, Some(Sasl::AwaitingToken { deadline }) if deadline <= now))
            .map(|c| c.id)
            .collect();
        for conn in late {
            self.auth_failed(conn, now, |addr, mechanism| AuthError::Protocol {
                addr,
                mechanism,
                reason: "the OAUTHBEARER token provider gave no token within request.timeout.ms"
                    .into(),
            });
        }
    }

    fn authenticated(&mut self, conn: ConnId, lifetime_ms: i64, now: Instant) {
        let Some(sent) = self.conns.get(&conn).map(|c| c.auth_sent) else {
            return;
        };
        // Between 85% and 95% of the session's lifetime, as Java does, so that a client's
        // connections do not all re-authenticate at once; counted from when the last
        // SaslAuthenticate was sent (the broker's session began after that), less one round
        // trip, so that a request sent just before re-authenticating still reaches the broker
        // within the session (found by the simulation: 200 ms sessions on a slow link, where
        // a request counted from the response arrived 1 ms after the broker's session ended).
        let reauth = (lifetime_ms > 0).then(|| {
            let share = 0.85 + 0.10 * self.rng.unit();
            let rtt = now.saturating_duration_since(sent);
            let lifetime = Duration::from_millis((lifetime_ms as f64 * share) as u64);
            sent + lifetime.saturating_sub(rtt)
        });
        let Some(c) = self.conns.get_mut(&conn) else {
            return;
        };
        c.sasl = None;
        c.reauth_at = reauth;
        tracing::info!(
            conn = conn.0,
            addr = %c.addr,
            mechanism = self.cfg.security.sasl.mechanism.name(),
            session_ms = lifetime_ms,
            "authenticated"
        );
        if c.state != State::Ready {
            c.state = State::Ready;
            let addr = c.addr.clone();
            self.failures.remove(&addr);
            self.recovery.broker_found(true, now);
        }
    }

    /// Authentication failed: the connection closes, and the failure is kept for the client
    /// to fail what waits on it ([`Network::take_auth_failure`]).
    pub(super) fn auth_failed(
        &mut self,
        conn: ConnId,
        now: Instant,
        error: impl FnOnce(crate::config::HostPort, &'static str) -> AuthError,
    ) {
        let mechanism = self.cfg.security.sasl.mechanism.name();
        let Some(c) = self.conns.get(&conn) else {
            return;
        };
        let e = error(c.addr.clone(), mechanism);
        tracing::error!(conn = conn.0, addr = %c.addr, mechanism, error = %e, "authentication failed");
        self.last_problem = stamp(now, e.to_string());
        self.auth_failure = Some(e);
        self.fail_connection(
            conn,
            now,
            |addr| RequestError::Disconnected { addr },
            Closing::Ours,
        );
    }

    /// Starts re-authenticating ready connections whose session is about to end.
    pub(super) fn reauthenticate_due(&mut self, now: Instant) {
        let due: Vec<ConnId> = self
            .conns
            .values()
            .filter(|c| {
                c.state == State::Ready && c.sasl.is_none() && c.reauth_at.is_some_and(|t| t <= now)
            })
            .map(|c| c.id)
            .collect();
        for conn in due {
            self.start_sasl(conn, now);
        }
    }

    /// An authentication failure (SASL or TLS) since the last call: the client fails the
    /// operations waiting for a connection with it, as Java does, rather than retrying until
    /// their timeouts.
    pub fn take_auth_failure(&mut self) -> Option<AuthError> {
        self.auth_failure.take()
    }

    /// Whether an unexpired OAUTHBEARER token is at hand (made here when the configuration
    /// asks for unsecured ones); `Ok(false)`: the application's provider must be asked.
    fn fresh_token(&mut self) -> Result<bool, String> {
        let wall_ms = self.wall_ms;
        // Refreshed at 80% of its lifetime, as Java's sasl.login.refresh.window.factor: a
        // session is never shorter than the token's remaining life, and one re-authenticated
        // with a token about to expire would be too short to re-authenticate again (Kafka
        // allows one re-authentication a second; found on Apache Kafka with 3 s tokens).
        if let Some((t, at)) = &self.token {
            let refresh_at = at + (t.expires_at_ms - at) * 4 / 5;
            if wall_ms < refresh_at && wall_ms < t.expires_at_ms {
                return Ok(true);
            }
        }
        if self.cfg.security.token_provider.is_some() {
            return Ok(false);
        }
        match &self.cfg.security.sasl.unsecured_subject {
            Some(subject) => {
                let lifetime = self.cfg.security.sasl.unsecured_lifetime_s;
                self.token = Some((OAuthToken::unsecured(subject, wall_ms, lifetime), wall_ms));
                Ok(true)
            }
            None => Err("no unexpired OAUTHBEARER token: set a token provider \
                         (security.token_provider) or configure unsecured tokens for testing \
                         (sasl.oauthbearer.config=principal=NAME)"
                .into()),
        }
    }

    /// The OAUTHBEARER token to authenticate with from now on: connections waiting for one
    /// go on with it.
    pub fn set_token(&mut self, token: OAuthToken, now: Instant) {
        let wall_ms = self.wall_ms;
        self.token = Some((token, wall_ms));
        self.token_wanted = false;
        for conn in self.awaiting_token() {
            self.begin_exchange(conn, now);
        }
    }

    /// The token provider failed: connections waiting for a token fail as unauthenticated.
    pub fn token_failed(&mut self, why: &str, now: Instant) {
        self.token_wanted = false;
        for conn in self.awaiting_token() {
            self.auth_failed(conn, now, |addr, mechanism| AuthError::Protocol {
                addr,
                mechanism,
                reason: format!("the OAUTHBEARER token provider failed: {why}"),
            });
        }
    }

    /// Whether a connection waits for an OAUTHBEARER token the application must fetch (an
    /// output: the driver calls the provider, then [`Network::set_token`]). Answers true once
    /// per need.
    pub fn poll_token_request(&mut self) -> bool {
        std::mem::take(&mut self.token_wanted)
    }
}
