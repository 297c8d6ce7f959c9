//! The client side of the SASL mechanisms Kafka speaks: PLAIN, SCRAM-SHA-256/512 and
//! OAUTHBEARER, each a message in and a message out, for the connection manager to carry in
//! SaslAuthenticate requests.

pub(crate) mod scram;

use base64::engine::general_purpose::STANDARD;
use base64::Engine;

// The token types are configuration (`security.token_provider` holds one), kept with it so
// that `config` names nothing above it; their paths here stay.
pub use crate::config::{OAuthToken, TokenFuture, TokenProvider};
use crate::config::{SaslMechanism, SaslSettings, Secret};
use crate::rng::Rng;

/// One authentication exchange in progress.
#[derive(Debug)]
pub(crate) enum Exchange {
    /// A one-message mechanism (PLAIN, OAUTHBEARER): the server's empty answer ends it.
    OneShot,
    /// SCRAM's two round trips.
    Scram(scram::Scram),
}

impl Exchange {
    /// Starts an exchange: the first message to send. OAUTHBEARER needs its token.
    pub fn start(s: &SaslSettings, rng: &mut Rng, token: Option<&OAuthToken>) -> (Self, Vec<u8>) {
        let user = s.username.as_deref().unwrap_or_default();
        let password = s.password.as_ref().map_or("", Secret::expose);
        match s.mechanism {
            SaslMechanism::ScramSha256 | SaslMechanism::ScramSha512 => {
                let hash = if s.mechanism == SaslMechanism::ScramSha256 {
                    scram::Hash::Sha256
                } else {
                    scram::Hash::Sha512
                };
                let nonce: Vec<u8> = (0..3).flat_map(|_| rng.next_u64().to_le_bytes()).collect();
                let (x, first) = scram::Scram::start(hash, user, password, STANDARD.encode(nonce));
                (Exchange::Scram(x), first)
            }
            SaslMechanism::OAuthBearer => {
                let token = token.map_or("", |t| t.value.expose());
                let msg = format!("n,,\x01auth=Bearer {token}\x01\x01");
                (Exchange::OneShot, msg.into_bytes())
            }
            // PLAIN (RFC 4616): no authorization id, the user, the password.
            _ => (
                Exchange::OneShot,
                format!("\0{user}\0{password}").into_bytes(),
            ),
        }
    }

    /// The server's answer: the next message, or `None` when the exchange is complete.
    pub fn step(
        &mut self,
        server: &[u8],
        cache: &mut scram::SaltCache,
    ) -> Result<Option<Vec<u8>>, String> {
        match self {
            Exchange::OneShot => Ok(None),
            Exchange::Scram(s) => s.step(server, cache),
        }
    }
}

#[cfg(test)]
mod tests {
    use base64::engine::general_purpose::URL_SAFE_NO_PAD;

    use super::*;

    #[test]
    fn plain_and_oauthbearer_messages_have_rfc_shapes_and_tokens_are_unsecured_jws() {
        let s = SaslSettings {
            mechanism: SaslMechanism::Plain,
            username: Some("alice".into()),
            password: Some(Secret::new("pw")),
            ..Default::default()
        };
        let (_, m) = Exchange::start(&s, &mut Rng::new(1), None);
        assert_eq!(m, b"\0alice\0pw");
        let t = OAuthToken::unsecured("alice", 1_700_000_000_123, 60);
        assert_eq!(t.expires_at_ms, 1_700_000_060_000);
        let parts: Vec<&str> = t.value.expose().split('.').collect();
        assert_eq!(parts.len(), 3);
        assert_eq!(parts[2], "");
        let claims = String::from_utf8(URL_SAFE_NO_PAD.decode(parts[1]).unwrap()).unwrap();
        assert_eq!(
            claims,
            r#"{"iat":1700000000,"exp":1700000060,"sub":"alice"}"#
        );
        let o = SaslSettings {
            mechanism: SaslMechanism::OAuthBearer,
            ..Default::default()
        };
        let (_, m) = Exchange::start(&o, &mut Rng::new(1), Some(&t));
        let m = String::from_utf8(m).unwrap();
        assert!(m.starts_with("n,,\x01auth=Bearer ey") && m.ends_with("\x01\x01"));
    }
}
