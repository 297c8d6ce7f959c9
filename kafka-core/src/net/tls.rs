//! One connection's TLS session: ciphertext in, plaintext out, and the reverse, on rustls's
//! own sans-IO state machine.

use std::io::{Read, Write};

use bytes::Bytes;

/// A TLS client session.
pub(crate) struct Tls(rustls::ClientConnection);

impl std::fmt::Debug for Tls {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tls")
            .field("handshaking", &self.0.is_handshaking())
            .finish()
    }
}

impl Tls {
    pub fn new(conn: rustls::ClientConnection) -> Self {
        Tls(conn)
    }

    pub fn handshaking(&self) -> bool {
        self.0.is_handshaking()
    }

    /// Takes ciphertext, returning the plaintext it completes, or why the session failed
    /// (a certificate refused, an alert, bytes that are not TLS).
    pub fn receive(&mut self, mut data: &[u8], plain: &mut Vec<u8>) -> Result<(), String> {
        while !data.is_empty() {
            self.0.read_tls(&mut data).map_err(|e| e.to_string())?;
            let state = self.0.process_new_packets().map_err(describe)?;
            let n = state.plaintext_bytes_to_read();
            if n > 0 {
                let start = plain.len();
                plain.resize(start + n, 0);
                self.0
                    .reader()
                    .read_exact(&mut plain[start..])
                    .map_err(|e| e.to_string())?;
            }
        }
        Ok(())
    }

    /// Encrypts `parts` (one request) into TLS records.
    pub fn send(&mut self, parts: &[Bytes]) -> Result<(), String> {
        let mut w = self.0.writer();
        for p in parts {
            w.write_all(p).map_err(|e| e.to_string())?;
        }
        Ok(())
    }

    /// The TLS records to write, if any.
    pub fn output(&mut self) -> Option<Bytes> {
        if !self.0.wants_write() {
            return None;
        }
        let mut out = Vec::new();
        while self.0.wants_write() {
            if self.0.write_tls(&mut out).is_err() {
                break;
            }
        }
        Some(Bytes::from(out))
    }
}

/// A rustls error in words a user can act on.
fn describe(e: rustls::Error) -> String {
    use rustls::{CertificateError as C, Error as E};
    match e {
        E::InvalidCertificate(C::UnknownIssuer) => "the broker's certificate is not signed by a \
            trusted CA: set ssl.ca.location to the CA that signed it"
            .into(),
        E::InvalidCertificate(C::NotValidForName | C::NotValidForNameContext { .. }) => {
            "the broker's certificate does not name the host connected to: connect by a name \
             the certificate lists, or set ssl.endpoint.identification.algorithm=none"
                .into()
        }
        E::InvalidCertificate(C::Expired | C::ExpiredContext { .. }) => {
            "the broker's certificate has expired: renew it".into()
        }
        E::InvalidCertificate(C::NotValidYet | C::NotValidYetContext { .. }) => {
            "the broker's certificate is not valid yet: check the clocks".into()
        }
        E::FailedToGetCurrentTime => "no wall clock was given to judge certificates by \
            (call handle_wall_clock)"
            .into(),
        E::AlertReceived(a) => format!(
            "the broker refused the TLS handshake ({a:?}): if it asks for a client \
             certificate, set ssl.certificate.location and ssl.key.location"
        ),
        E::InvalidMessage(_) | E::InappropriateMessage { .. } => {
            "the broker does not speak TLS on this port: is the listener PLAINTEXT or \
             SASL_PLAINTEXT? (see security.protocol)"
                .into()
        }
        other => other.to_string(),
    }
}
