//! The broker side of TLS and SASL for the simulated cluster: a rustls server whose CA and
//! certificate (Ed25519, so every handshake has the same length and a seed replays exactly)
//! are made once per process, and SASL PLAIN and SCRAM-SHA-256/512 with session lifetimes,
//! enforced as Kafka does: a request before authentication, or after the session ended
//! without re-authentication, closes the connection.

use std::collections::BTreeMap;
use std::sync::{Arc, OnceLock};

use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine;
use hmac::{Hmac, Mac};
use sha2::{Digest, Sha256, Sha512};

use crate::scripted::SimTime;

/// SASL as a simulated cluster's listener has it.
#[derive(Debug, Clone)]
pub struct SaslConfig {
    /// The enabled mechanisms (`sasl.enabled.mechanisms`).
    pub mechanisms: Vec<String>,
    /// Users and their passwords (PLAIN's JAAS users and SCRAM's credentials at once).
    pub users: BTreeMap<String, String>,
    /// `connections.max.reauth.ms`: sessions end this long after they start.
    pub session_lifetime: Option<SimTime>,
}

/// A simulated cluster's listener security.
#[derive(Debug, Clone, Default)]
pub struct Security {
    /// TLS on every connection.
    pub tls: bool,
    /// SASL on every connection.
    pub sasl: Option<SaslConfig>,
}

struct Pki {
    ca_pem: String,
    server: Arc<rustls::ServerConfig>,
}

/// The CA (PEM), and the broker's chain and key (DER): Ed25519 keys and signatures, and fixed
/// serial numbers, so that every process makes certificates of the same lengths. (rcgen's
/// default serial is a hash of the random public key, encoded as an integer without leading
/// zeros: one certificate in 128 came out a byte shorter, and so did every TLS handshake of
/// that process, so about one run in 60 of a TLS seed did not replay.)
fn certificates() -> (
    String,
    Vec<rustls::pki_types::CertificateDer<'static>>,
    Vec<u8>,
) {
    use rcgen::{BasicConstraints, CertificateParams, IsCa, KeyPair, SerialNumber, PKCS_ED25519};
    let mut ca = CertificateParams::new(Vec::<String>::new()).expect("CA params");
    ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca.serial_number = Some(SerialNumber::from(1u64));
    let ca_key = KeyPair::generate_for(&PKCS_ED25519).expect("an Ed25519 key");
    let ca_cert = ca.self_signed(&ca_key).expect("the CA");
    let names: Vec<String> = (1..=16).map(|n| format!("broker-{n}")).collect();
    let mut leaf = CertificateParams::new(names).expect("leaf params");
    leaf.serial_number = Some(SerialNumber::from(2u64));
    let key = KeyPair::generate_for(&PKCS_ED25519).expect("an Ed25519 key");
    let cert = leaf
        .signed_by(&key, &ca_cert, &ca_key)
        .expect("the broker's cert");
    (
        ca_cert.pem(),
        vec![cert.der().clone(), ca_cert.der().clone()],
        key.serialize_der(),
    )
}

fn pki() -> &'static Pki {
    static PKI: OnceLock<Pki> = OnceLock::new();
    PKI.get_or_init(|| {
        let (ca_pem, chain, key) = certificates();
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let mut server = rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .expect("TLS versions")
            .with_no_client_auth()
            .with_single_cert(chain, rustls::pki_types::PrivateKeyDer::Pkcs8(key.into()))
            .expect("the broker's key");
        // No resumption: a session cache shared by every run in the process would make a
        // handshake's length (full or resumed) depend on earlier runs, and a seed would not
        // replay.
        server.session_storage = Arc::new(rustls::server::NoServerSessionStorage {});
        server.send_tls13_tickets = 0;
        Pki {
            ca_pem,
            server: Arc::new(server),
        }
    })
}

/// The PEM of the CA that signed the simulated brokers' certificate (which names
/// `broker-1` to `broker-16`), for clients' `ssl.ca.pem`.
pub fn ca_pem() -> &'static str {
    &pki().ca_pem
}

pub(crate) fn tls_session() -> rustls::ServerConnection {
    let mut s = rustls::ServerConnection::new(pki().server.clone()).expect("a server session");
    s.set_buffer_limit(None);
    s
}

/// Where a connection's authentication is.
#[derive(Debug, Clone)]
pub(crate) enum Auth {
    /// Nothing yet (or a SaslHandshake for `mechanism` was answered).
    Pending { mechanism: Option<String> },
    /// SCRAM's first round is done.
    Scram {
        mechanism: String,
        user: String,
        nonce: String,
        first_bare: String,
        server_first: String,
    },
    /// Authenticated, until `expires`; a re-authentication's handshake keeps it valid.
    Done {
        expires: Option<SimTime>,
        reauth: Option<String>,
    },
}

/// What a SaslAuthenticate answers: (error code, message, bytes, session lifetime in ms).
pub(crate) type AuthAnswer = (i16, Option<String>, Vec<u8>, i64);

fn hmac(sha512: bool, key: &[u8], data: &[u8]) -> Vec<u8> {
    if sha512 {
        let mut m = Hmac::<Sha512>::new_from_slice(key).expect("any key");
        m.update(data);
        m.finalize().into_bytes().to_vec()
    } else {
        let mut m = Hmac::<Sha256>::new_from_slice(key).expect("any key");
        m.update(data);
        m.finalize().into_bytes().to_vec()
    }
}

const SALT: &[u8] = b"kafka-sim-salt-1";
const ITERATIONS: u32 = 4096;

/// The salted password of a user, computed once per (mechanism, password).
fn salted(sha512: bool, password: &str) -> Vec<u8> {
    use std::sync::Mutex;
    static CACHE: Mutex<BTreeMap<(bool, String), Vec<u8>>> = Mutex::new(BTreeMap::new());
    let mut cache = CACHE.lock().expect("not poisoned");
    cache
        .entry((sha512, password.to_owned()))
        .or_insert_with(|| {
            let mut out = vec![0u8; if sha512 { 64 } else { 32 }];
            if sha512 {
                pbkdf2::pbkdf2_hmac::<Sha512>(password.as_bytes(), SALT, ITERATIONS, &mut out);
            } else {
                pbkdf2::pbkdf2_hmac::<Sha256>(password.as_bytes(), SALT, ITERATIONS, &mut out);
            }
            out
        })
        .clone()
}

fn failed(mechanism: &str) -> AuthAnswer {
    (
        58,
        Some(format!(
            "Authentication failed during authentication due to invalid credentials with SASL mechanism {mechanism}"
        )),
        Vec::new(),
        0,
    )
}

/// Answers one SaslAuthenticate: the new state and the answer. `counter` makes server
/// nonces (fixed length).
pub(crate) fn authenticate(
    cfg: &SaslConfig,
    state: &Auth,
    bytes: &[u8],
    now: SimTime,
    counter: u64,
) -> (Auth, AuthAnswer) {
    let lifetime = cfg.session_lifetime;
    let done = Auth::Done {
        expires: lifetime.map(|l| now + l),
        reauth: None,
    };
    let lifetime_ms = lifetime.map_or(0, |l| l.as_millis() as i64);
    let fail = |m: &str, s: &Auth| (s.clone(), failed(m));
    let mechanism = match state {
        Auth::Pending { mechanism: Some(m) } => m.clone(),
        Auth::Done {
            reauth: Some(m), ..
        } => m.clone(),
        Auth::Scram {
            mechanism,
            user,
            nonce,
            first_bare,
            server_first,
        } => {
            // The client-final message: check the proof.
            let sha512 = mechanism == "SCRAM-SHA-512";
            let text = std::str::from_utf8(bytes).unwrap_or("");
            let Some((without_proof, proof)) = text.rsplit_once(",p=") else {
                return fail(mechanism, state);
            };
            let Some(password) = cfg.users.get(user) else {
                return fail(mechanism, state);
            };
            if without_proof != format!("c=biws,r={nonce}") {
                return fail(mechanism, state);
            }
            let salted = salted(sha512, password);
            let client_key = hmac(sha512, &salted, b"Client Key");
            let stored_key = if sha512 {
                Sha512::digest(&client_key).to_vec()
            } else {
                Sha256::digest(&client_key).to_vec()
            };
            let auth_message = format!("{first_bare},{server_first},{without_proof}");
            let signature = hmac(sha512, &stored_key, auth_message.as_bytes());
            let proof = B64.decode(proof).unwrap_or_default();
            let recovered: Vec<u8> = proof.iter().zip(&signature).map(|(a, b)| a ^ b).collect();
            let recovered_stored = if sha512 {
                Sha512::digest(&recovered).to_vec()
            } else {
                Sha256::digest(&recovered).to_vec()
            };
            if proof.len() != signature.len() || recovered_stored != stored_key {
                return fail(mechanism, state);
            }
            let server_key = hmac(sha512, &salted, b"Server Key");
            let v = hmac(sha512, &server_key, auth_message.as_bytes());
            let reply = format!("v={}", B64.encode(v)).into_bytes();
            return (done, (0, None, reply, lifetime_ms));
        }
        _ => {
            return (
                state.clone(),
                (34, Some("no SaslHandshake first".into()), Vec::new(), 0),
            )
        }
    };
    match mechanism.as_str() {
        "PLAIN" => {
            let mut parts = bytes.split(|b| *b == 0);
            let (_authz, user, pw) = (parts.next(), parts.next(), parts.next());
            let ok = match (user, pw) {
                (Some(u), Some(p)) => std::str::from_utf8(u)
                    .ok()
                    .and_then(|u| cfg.users.get(u))
                    .is_some_and(|want| want.as_bytes() == p),
                _ => false,
            };
            if ok {
                (done, (0, None, Vec::new(), lifetime_ms))
            } else {
                (
                    state.clone(),
                    (
                        58,
                        Some("Authentication failed: Invalid username or password".into()),
                        Vec::new(),
                        0,
                    ),
                )
            }
        }
        m @ ("SCRAM-SHA-256" | "SCRAM-SHA-512") => {
            let text = std::str::from_utf8(bytes).unwrap_or("");
            let Some(first_bare) = text.strip_prefix("n,,") else {
                return fail(m, state);
            };
            let mut user = None;
            let mut cnonce = None;
            for a in first_bare.split(',') {
                if let Some(u) = a.strip_prefix("n=") {
                    user = Some(u.replace("=2C", ",").replace("=3D", "="));
                } else if let Some(r) = a.strip_prefix("r=") {
                    cnonce = Some(r.to_owned());
                }
            }
            let (Some(user), Some(cnonce)) = (user, cnonce) else {
                return fail(m, state);
            };
            let nonce = format!("{cnonce}{counter:016x}");
            let server_first = format!("r={nonce},s={},i={ITERATIONS}", B64.encode(SALT));
            let next = Auth::Scram {
                mechanism: m.to_owned(),
                user,
                nonce,
                first_bare: first_bare.to_owned(),
                server_first: server_first.clone(),
            };
            (next, (0, None, server_first.into_bytes(), 0))
        }
        m => fail(m, state),
    }
}

#[cfg(test)]
mod tests {
    /// Every process makes certificates of the same lengths (each makes its own keys), so a
    /// seed's TLS handshakes have the same lengths in every run. With rcgen's default serial
    /// numbers about one set in 64 differs, so 400 sets all but always show it.
    #[test]
    fn certificates_have_the_same_lengths_whatever_the_keys() {
        type Made = (
            String,
            Vec<rustls::pki_types::CertificateDer<'static>>,
            Vec<u8>,
        );
        let lengths = |(ca, chain, key): Made| {
            let chain: Vec<usize> = chain.iter().map(|c| c.len()).collect();
            (ca.len(), chain, key.len())
        };
        let first = lengths(super::certificates());
        for _ in 0..400 {
            assert_eq!(lengths(super::certificates()), first);
        }
    }
}
