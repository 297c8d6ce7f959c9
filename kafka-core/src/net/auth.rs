//! SASL on a connection: SaslHandshake and SaslAuthenticate after ApiVersions, and KIP-368
//! re-authentication before the broker's session lifetime ends, with no request failed.

use std::time::Duration;

use bytes::Bytes;
use kafka_proto::api::{ApiKey, ResponseBody};
use kafka_proto::messages::sasl_authenticate_request::SaslAuthenticateRequest;
use kafka_proto::messages::sasl_handshake_request::SaslHandshakeRequest;

use super::connection::{State, Tag};
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
            self.fail_connection(conn, now, |addr| RequestError::Disconnected { addr }, true);
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
                true,
            );
        }
        if let Some(c) = self.conns.get_mut(&conn) {
            c.auth_sent = now;
        }
    }

    /// A SaslHandshake or SaslAuthenticate response.
    pub(super) fn on_auth(&mut self, conn: ConnId, body: ResponseBody, now: Instant) {
        let mechanism = self.cfg.security.sasl.mechanism.name();
        match body {
            ResponseBody::SaslHandshake(r) => {
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
                    if let Err(reason) = self.fresh_token() {
                        return self.auth_failed(conn, now, |addr, mechanism| {
                            AuthError::Protocol {
                                addr,
                                mechanism,
                                reason,
                            }
                        });
                    }
                }
                let token = self.token.clone();
                let (exchange, first) =
                    Exchange::start(&self.cfg.security.sasl, &mut self.rng, token.as_ref());
                if let Some(c) = self.conns.get_mut(&conn) {
                    c.sasl = Some(Sasl::Authenticate(exchange));
                }
                self.send_authenticate(conn, first, now);
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
                    Some(Sasl::Authenticate(x)) => x.step(&r.auth_bytes),
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
            _ => {
                let _ = mechanism;
                unreachable!("tagged as authentication")
            }
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
        if c.state != State::Ready {
            c.state = State::Ready;
            let addr = c.addr.clone();
            self.failures.remove(&addr);
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
        self.last_problem = stamp(now, e.to_string());
        self.auth_failure = Some(e);
        self.fail_connection(conn, now, |addr| RequestError::Disconnected { addr }, true);
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

    /// Makes sure an unexpired OAUTHBEARER token is at hand: the application's, or an
    /// unsecured one when the configuration asks for those.
    fn fresh_token(&mut self) -> Result<(), String> {
        let wall_ms = i64::try_from(self.wall_secs.saturating_mul(1000)).unwrap_or(i64::MAX);
        if self
            .token
            .as_ref()
            .is_some_and(|t| t.expires_at_ms > wall_ms)
        {
            return Ok(());
        }
        match &self.cfg.security.sasl.unsecured_subject {
            Some(subject) => {
                let lifetime = self.cfg.security.sasl.unsecured_lifetime_s;
                self.token = Some(OAuthToken::unsecured(subject, wall_ms, lifetime));
                Ok(())
            }
            None => Err(
                "no unexpired OAUTHBEARER token: supply one with set_oauth_token, \
                         or configure an unsecured one (sasl.oauthbearer.config=principal=NAME)"
                    .into(),
            ),
        }
    }

    /// The OAUTHBEARER token to authenticate with from now on.
    pub fn set_token(&mut self, token: OAuthToken) {
        self.token = Some(token);
    }
}
