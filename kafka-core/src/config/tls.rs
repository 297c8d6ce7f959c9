//! The TLS client a configuration builds once (rustls with ring): trust roots, the client's
//! certificate for mutual TLS, the hostname check, and certificate validity judged on a wall
//! clock that comes in as an input, never read here.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::WebPkiServerVerifier;
use rustls::crypto::ring;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
use rustls::{
    CertificateError, ClientConfig, DigitallySignedStruct, RootCertStore, SignatureScheme,
};

use super::security::TlsSettings;
use super::ConfigError;

/// The wall clock rustls judges certificate validity by: set by the client's owner through
/// `handle_wall_clock` (the driver passes the runtime's wall clock), so a simulation decides
/// what time it is. Unset, every certificate is refused with "no current time".
#[derive(Debug, Default)]
struct WallClock(AtomicU64);

impl rustls::time_provider::TimeProvider for WallClock {
    fn current_time(&self) -> Option<UnixTime> {
        match self.0.load(Ordering::Relaxed) {
            0 => None,
            s => Some(UnixTime::since_unix_epoch(std::time::Duration::from_secs(
                s,
            ))),
        }
    }
}

/// Verifies the chain as webpki does, but accepts a certificate for another name
/// (`ssl.endpoint.identification.algorithm` empty or `none`).
#[derive(Debug)]
struct AnyName(Arc<WebPkiServerVerifier>);

impl ServerCertVerifier for AnyName {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        match self
            .0
            .verify_server_cert(end_entity, intermediates, server_name, ocsp, now)
        {
            // webpki checks the name last, so the chain and validity passed.
            Err(rustls::Error::InvalidCertificate(
                CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. },
            )) => Ok(ServerCertVerified::assertion()),
            other => other,
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.supported_verify_schemes()
    }
}

/// A built TLS client configuration, shared by every connection of a client.
#[derive(Clone)]
pub struct TlsClient {
    config: Arc<ClientConfig>,
    clock: Arc<WallClock>,
}

impl std::fmt::Debug for TlsClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TlsClient").finish_non_exhaustive()
    }
}

fn invalid(key: &'static str, origin: String, rule: String) -> ConfigError {
    ConfigError::InvalidValue {
        key,
        value: origin,
        rule,
    }
}

/// The client's private key from PEM: PKCS#8, PKCS#1 RSA or SEC1 EC, or encrypted PKCS#8
/// (`ENCRYPTED PRIVATE KEY`) with `ssl.key.password`. Errors name where the key came from,
/// never its contents or the password.
fn private_key(s: &TlsSettings, pem: &str) -> Result<PrivateKeyDer<'static>, ConfigError> {
    if !pem.contains("-----BEGIN ENCRYPTED PRIVATE KEY-----") {
        return PrivateKeyDer::from_pem_slice(pem.as_bytes()).map_err(|_| {
            invalid(
                "ssl.key.location",
                s.origin("key"),
                "a PEM private key (PKCS#8, PKCS#1 RSA or SEC1 EC)".into(),
            )
        });
    }
    let Some(password) = &s.key_password else {
        return Err(invalid(
            "ssl.key.password",
            s.origin("key"),
            "the password of the encrypted private key (the key is ENCRYPTED PRIVATE KEY)".into(),
        ));
    };
    let start = pem
        .find("-----BEGIN ENCRYPTED PRIVATE KEY-----")
        .expect("checked above");
    let (_, doc) = pkcs8::SecretDocument::from_pem(&pem[start..]).map_err(|_| {
        invalid(
            "ssl.key.location",
            s.origin("key"),
            "a well-formed ENCRYPTED PRIVATE KEY PEM block".into(),
        )
    })?;
    let info = pkcs8::EncryptedPrivateKeyInfo::try_from(doc.as_bytes()).map_err(|_| {
        invalid(
            "ssl.key.location",
            s.origin("key"),
            "an encrypted PKCS#8 key".into(),
        )
    })?;
    let plain = info.decrypt(password.expose()).map_err(|_| {
        invalid(
            "ssl.key.password",
            "<redacted>".into(),
            format!(
                "the password that decrypts the private key of {} (this one does not, or the \
                 key's cipher is not PBES2 with AES-CBC)",
                s.origin("key")
            ),
        )
    })?;
    Ok(PrivateKeyDer::Pkcs8(plain.as_bytes().to_vec().into()))
}

impl TlsClient {
    /// Builds the client from the settings: parses every PEM, loads the system's roots when
    /// no CA is given. Errors name the setting and the fix, never a key's contents.
    pub fn new(s: &TlsSettings) -> Result<TlsClient, ConfigError> {
        let mut roots = RootCertStore::empty();
        if let Some(pem) = &s.ca_pem {
            let certs: Vec<CertificateDer<'static>> =
                CertificateDer::pem_slice_iter(pem.as_bytes())
                    .collect::<Result<_, _>>()
                    .map_err(|e| {
                        invalid(
                            "ssl.ca.location",
                            s.origin("ca"),
                            format!("PEM certificates ({e})"),
                        )
                    })?;
            let (added, _) = roots.add_parsable_certificates(certs);
            if added == 0 {
                return Err(invalid(
                    "ssl.ca.location",
                    s.origin("ca"),
                    "at least one CA certificate in PEM (-----BEGIN CERTIFICATE-----)".into(),
                ));
            }
        } else {
            let found = rustls_native_certs::load_native_certs();
            roots.add_parsable_certificates(found.certs);
            if roots.is_empty() {
                return Err(invalid(
                    "ssl.ca.location",
                    String::new(),
                    "the system's trust store has no certificates: set ssl.ca.location to the \
                     CA that signed the brokers' certificates"
                        .into(),
                ));
            }
        }
        let provider = Arc::new(ring::default_provider());
        let clock = Arc::new(WallClock::default());
        let webpki = WebPkiServerVerifier::builder_with_provider(Arc::new(roots), provider.clone())
            .build()
            .map_err(|e| {
                invalid(
                    "ssl.ca.location",
                    s.origin("ca"),
                    format!("usable CA certificates ({e})"),
                )
            })?;
        let verifier: Arc<dyn ServerCertVerifier> = if s.verify_hostname {
            webpki
        } else {
            Arc::new(AnyName(webpki))
        };
        let builder = ClientConfig::builder_with_details(provider, clock.clone())
            .with_safe_default_protocol_versions()
            .map_err(|e| invalid("ssl.enabled.protocols", String::new(), e.to_string()))?
            .dangerous()
            .with_custom_certificate_verifier(verifier);
        let config = match (&s.cert_pem, &s.key_pem) {
            (None, None) => builder.with_no_client_auth(),
            (Some(cert), Some(key)) => {
                let chain: Vec<CertificateDer<'static>> =
                    CertificateDer::pem_slice_iter(cert.as_bytes())
                        .collect::<Result<_, _>>()
                        .map_err(|e| {
                            invalid(
                                "ssl.certificate.location",
                                s.origin("cert"),
                                format!("PEM certificates ({e})"),
                            )
                        })?;
                if chain.is_empty() {
                    return Err(invalid(
                        "ssl.certificate.location",
                        s.origin("cert"),
                        "a PEM certificate chain (-----BEGIN CERTIFICATE-----)".into(),
                    ));
                }
                let key = private_key(s, key.expose())?;
                builder.with_client_auth_cert(chain, key).map_err(|e| {
                    invalid(
                        "ssl.certificate.location",
                        s.origin("cert"),
                        format!("a certificate matching the private key ({e})"),
                    )
                })?
            }
            (Some(_), None) | (None, Some(_)) => {
                return Err(ConfigError::Conflict {
                    key: "ssl.certificate.location",
                    other: "ssl.key.location",
                    reason: "mutual TLS needs both the client certificate and its private key"
                        .into(),
                })
            }
        };
        Ok(TlsClient {
            config: Arc::new(config),
            clock,
        })
    }

    /// Sets the wall clock certificates are judged by, in seconds since the Unix epoch.
    pub fn set_wall_clock(&self, unix_secs: u64) {
        self.clock.0.store(unix_secs.max(1), Ordering::Relaxed);
    }

    /// A new client session for `host`.
    /// `Err(None)`: `host` cannot be a TLS server name.
    pub(crate) fn session(
        &self,
        host: &str,
    ) -> Result<rustls::ClientConnection, Option<rustls::Error>> {
        let name = ServerName::try_from(host.to_owned()).map_err(|_| None)?;
        let mut conn = rustls::ClientConnection::new(self.config.clone(), name).map_err(Some)?;
        // Requests are encrypted as they are sent; no limit, the producer's memory bounds them.
        conn.set_buffer_limit(None);
        Ok(conn)
    }
}
