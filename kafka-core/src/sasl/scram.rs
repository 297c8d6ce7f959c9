//! The client side of SCRAM-SHA-256 and SCRAM-SHA-512 (RFC 5802, RFC 7677), without channel
//! binding, as Kafka speaks them: two round trips, and the server's signature checked.

use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine;
use hmac::{Hmac, Mac};
use sha2::{Digest, Sha256, Sha512};

/// Kafka's bounds on the iteration count (ScramMechanism's minimum and maximum): fewer is
/// weak, more is a denial of service on the client.
const MIN_ITERATIONS: u32 = 4096;
const MAX_ITERATIONS: u32 = 16384;

/// The hash of a SCRAM mechanism.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Hash {
    /// SCRAM-SHA-256.
    Sha256,
    /// SCRAM-SHA-512.
    Sha512,
}

impl Hash {
    fn hmac(self, key: &[u8], data: &[u8]) -> Vec<u8> {
        match self {
            Hash::Sha256 => {
                let mut m = Hmac::<Sha256>::new_from_slice(key).expect("HMAC takes any key");
                m.update(data);
                m.finalize().into_bytes().to_vec()
            }
            Hash::Sha512 => {
                let mut m = Hmac::<Sha512>::new_from_slice(key).expect("HMAC takes any key");
                m.update(data);
                m.finalize().into_bytes().to_vec()
            }
        }
    }

    fn digest(self, data: &[u8]) -> Vec<u8> {
        match self {
            Hash::Sha256 => Sha256::digest(data).to_vec(),
            Hash::Sha512 => Sha512::digest(data).to_vec(),
        }
    }

    fn salted_password(self, password: &[u8], salt: &[u8], iterations: u32) -> Vec<u8> {
        match self {
            Hash::Sha256 => {
                let mut out = [0u8; 32];
                pbkdf2::pbkdf2_hmac::<Sha256>(password, salt, iterations, &mut out);
                out.to_vec()
            }
            Hash::Sha512 => {
                let mut out = [0u8; 64];
                pbkdf2::pbkdf2_hmac::<Sha512>(password, salt, iterations, &mut out);
                out.to_vec()
            }
        }
    }
}

/// The last SaltedPassword a client derived, with the mechanism, salt and iteration count it
/// came from. RFC 5802 (section 5.1) lets a client keep it: a client reconnecting or
/// re-authenticating (KIP-368, as often as the broker's session lifetime asks) then skips the
/// 4,096 to 16,384 PBKDF2 rounds while the server's salt and count stay the same. It is as
/// secret as the password, so it is never printed.
#[derive(Default)]
pub(crate) struct SaltCache(Option<(Hash, Vec<u8>, u32, Vec<u8>)>);

impl SaltCache {
    fn salted(&mut self, h: Hash, password: &[u8], salt: &[u8], iterations: u32) -> &[u8] {
        let hit =
            matches!(&self.0, Some((ch, cs, ci, _)) if *ch == h && cs == salt && *ci == iterations);
        if !hit {
            let salted = h.salted_password(password, salt, iterations);
            self.0 = Some((h, salt.to_vec(), iterations, salted));
        }
        self.0.as_ref().map_or(&[], |(_, _, _, s)| s)
    }
}

impl std::fmt::Debug for SaltCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SaltCache(..)")
    }
}

/// Where the exchange is.
#[derive(Debug)]
enum Stage {
    /// The client-first message is sent.
    SentFirst {
        first_bare: String,
    },
    /// The client-final message is sent; the server must prove it knows the password too.
    SentFinal {
        server_signature: Vec<u8>,
    },
    Done,
}

/// One SCRAM exchange.
pub struct Scram {
    hash: Hash,
    password: Vec<u8>,
    nonce: String,
    stage: Stage,
}

impl std::fmt::Debug for Scram {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Scram")
            .field("hash", &self.hash)
            .finish_non_exhaustive()
    }
}

/// RFC 5802's saslname: `=` and `,` escaped.
fn sasl_name(user: &str) -> String {
    user.replace('=', "=3D").replace(',', "=2C")
}

impl Scram {
    /// Starts an exchange for `user` with a client nonce (printable, no comma), returning
    /// the client-first message.
    pub fn start(hash: Hash, user: &str, password: &str, nonce: String) -> (Scram, Vec<u8>) {
        let first_bare = format!("n={},r={nonce}", sasl_name(user));
        let message = format!("n,,{first_bare}").into_bytes();
        let scram = Scram {
            hash,
            password: password.as_bytes().to_vec(),
            nonce,
            stage: Stage::SentFirst { first_bare },
        };
        (scram, message)
    }

    /// Takes the server's message: the client-final message to send next, or `None` when the
    /// server has proven itself and the exchange is complete. An error says what was wrong.
    /// `cache` keeps the salted password across exchanges of one client.
    pub fn step(
        &mut self,
        server: &[u8],
        cache: &mut SaltCache,
    ) -> Result<Option<Vec<u8>>, String> {
        let text = std::str::from_utf8(server)
            .map_err(|_| "the server's SCRAM message is not UTF-8".to_owned())?;
        match std::mem::replace(&mut self.stage, Stage::Done) {
            Stage::SentFirst { first_bare } => {
                self.final_message(&first_bare, text, cache).map(Some)
            }
            Stage::SentFinal { server_signature } => {
                let attrs = attributes(text);
                if let Some(e) = attrs.iter().find(|(k, _)| *k == 'e') {
                    return Err(format!("the server refused the proof: {}", e.1));
                }
                let v = attrs
                    .iter()
                    .find(|(k, _)| *k == 'v')
                    .and_then(|(_, v)| B64.decode(v).ok())
                    .ok_or("the server-final message has no verifier")?;
                if v != server_signature {
                    return Err("the server's signature is wrong: it does not know the \
                                password (is this the broker you meant?)"
                        .into());
                }
                Ok(None)
            }
            Stage::Done => Err("the server sent a message after the exchange ended".into()),
        }
    }

    fn final_message(
        &mut self,
        first_bare: &str,
        server_first: &str,
        cache: &mut SaltCache,
    ) -> Result<Vec<u8>, String> {
        let attrs = attributes(server_first);
        let get = |k: char| attrs.iter().find(|(a, _)| *a == k).map(|(_, v)| *v);
        if let Some(e) = get('e') {
            return Err(format!("the server refused: {e}"));
        }
        let nonce = get('r').ok_or("the server-first message has no nonce")?;
        if !nonce.starts_with(&self.nonce) || nonce.len() == self.nonce.len() {
            return Err("the server's nonce does not extend the client's".into());
        }
        let salt = get('s')
            .and_then(|s| B64.decode(s).ok())
            .ok_or("the server-first message has no valid salt")?;
        let iterations: u32 = get('i')
            .and_then(|i| i.parse().ok())
            .ok_or("the server-first message has no iteration count")?;
        if !(MIN_ITERATIONS..=MAX_ITERATIONS).contains(&iterations) {
            return Err(format!(
                "the server asks for {iterations} iterations, outside {MIN_ITERATIONS}..={MAX_ITERATIONS}"
            ));
        }
        let h = self.hash;
        let salted = cache.salted(h, &self.password, &salt, iterations);
        let client_key = h.hmac(salted, b"Client Key");
        let stored_key = h.digest(&client_key);
        let without_proof = format!("c=biws,r={nonce}");
        let auth_message = format!("{first_bare},{server_first},{without_proof}");
        let client_signature = h.hmac(&stored_key, auth_message.as_bytes());
        let proof: Vec<u8> = client_key
            .iter()
            .zip(&client_signature)
            .map(|(a, b)| a ^ b)
            .collect();
        let server_key = h.hmac(salted, b"Server Key");
        self.stage = Stage::SentFinal {
            server_signature: h.hmac(&server_key, auth_message.as_bytes()),
        };
        Ok(format!("{without_proof},p={}", B64.encode(proof)).into_bytes())
    }
}

/// `k=value` attributes of a SCRAM message.
fn attributes(text: &str) -> Vec<(char, &str)> {
    text.split(',')
        .filter_map(|a| {
            let mut chars = a.chars();
            let k = chars.next()?;
            a.get(1..)?.strip_prefix('=').map(|v| (k, v))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const RFC7677_SERVER_FIRST: &[u8] =
        b"r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096";

    /// RFC 7677, section 3: the SCRAM-SHA-256 exchange for user "user", password "pencil".
    #[test]
    fn rfc7677_test_vector() {
        let (mut s, first) = Scram::start(
            Hash::Sha256,
            "user",
            "pencil",
            "rOprNGfwEbeRWgbNEkqO".into(),
        );
        assert_eq!(first, b"n,,n=user,r=rOprNGfwEbeRWgbNEkqO");
        let fin = s
            .step(RFC7677_SERVER_FIRST, &mut SaltCache::default())
            .unwrap()
            .unwrap();
        assert_eq!(
            String::from_utf8(fin).unwrap(),
            "c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ="
        );
        assert_eq!(
            s.step(
                b"v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=",
                &mut SaltCache::default()
            )
            .unwrap(),
            None
        );
    }

    /// RFC 5802's exchange shape with SHA-512: a server signature that does not match is
    /// refused, as is a server nonce that does not extend ours and too few iterations.
    #[test]
    fn a_wrong_server_signature_nonce_or_iteration_count_is_refused() {
        let server_first = b"r=abc123xyz,s=QSXCR+Q6sek8bf92,i=4096";
        let (mut s, _) = Scram::start(Hash::Sha512, "u=,x", "pw", "abc123".into());
        assert!(s
            .step(server_first, &mut SaltCache::default())
            .unwrap()
            .is_some());
        let e = s.step(b"v=AAAA", &mut SaltCache::default()).unwrap_err();
        assert!(e.contains("signature"), "{e}");
        let (mut s, first) = Scram::start(Hash::Sha512, "u=,x", "pw", "abc123".into());
        assert_eq!(first, b"n,,n=u=3D=2Cx,r=abc123");
        assert!(s
            .step(
                b"r=zzz,s=QSXCR+Q6sek8bf92,i=4096",
                &mut SaltCache::default()
            )
            .is_err());
        let (mut s, _) = Scram::start(Hash::Sha512, "u", "pw", "abc123".into());
        assert!(s
            .step(
                b"r=abc123x,s=QSXCR+Q6sek8bf92,i=100",
                &mut SaltCache::default()
            )
            .is_err());
        let (mut s, _) = Scram::start(Hash::Sha512, "u", "pw", "abc123".into());
        let e = s
            .step(b"e=unknown-user", &mut SaltCache::default())
            .unwrap_err();
        assert!(e.contains("unknown-user"), "{e}");
    }

    /// The kept salted password gives the same proof as a fresh derivation, and a server that
    /// changes the salt or the iteration count gets a proof derived anew.
    #[test]
    fn the_kept_salted_password_serves_only_its_salt_and_count() {
        let proof = |server_first: &[u8], cache: &mut SaltCache| {
            let (mut s, _) = Scram::start(
                Hash::Sha256,
                "user",
                "pencil",
                "rOprNGfwEbeRWgbNEkqO".into(),
            );
            s.step(server_first, cache).unwrap().unwrap()
        };
        let mut cache = SaltCache::default();
        let first = proof(RFC7677_SERVER_FIRST, &mut cache);
        assert_eq!(proof(RFC7677_SERVER_FIRST, &mut cache), first);
        for other in [
            &b"r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=QSXCR+Q6sek8bf92,i=4096"[..],
            b"r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=5000",
        ] {
            let kept = proof(other, &mut cache);
            assert_ne!(kept, first);
            assert_eq!(kept, proof(other, &mut SaltCache::default()));
            assert_eq!(proof(RFC7677_SERVER_FIRST, &mut cache), first);
        }
    }
}
