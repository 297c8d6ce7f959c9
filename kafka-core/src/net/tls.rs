//! One connection's TLS session: ciphertext in, plaintext out, and the reverse, on rustls's
//! own sans-IO state machine.

use std::io::{Read, Write};

use bytes::Bytes;

use super::TlsError;

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
    pub fn receive(&mut self, mut data: &[u8], plain: &mut Vec<u8>) -> Result<(), TlsError> {
        while !data.is_empty() {
            self.0.read_tls(&mut data).map_err(io_cause)?;
            let state = self.0.process_new_packets().map_err(cause)?;
            let n = state.plaintext_bytes_to_read();
            if n > 0 {
                let start = plain.len();
                plain.resize(start + n, 0);
                self.0
                    .reader()
                    .read_exact(&mut plain[start..])
                    .map_err(io_cause)?;
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

/// A rustls error as a cause a program can match (its message says the fix).
pub(crate) fn cause(e: rustls::Error) -> TlsError {
    use rustls::{CertificateError as C, Error as E};
    match e {
        E::InvalidCertificate(C::UnknownIssuer) => TlsError::UntrustedCertificate,
        E::InvalidCertificate(C::NotValidForName | C::NotValidForNameContext { .. }) => {
            TlsError::CertificateNameMismatch
        }
        E::InvalidCertificate(C::Expired | C::ExpiredContext { .. }) => {
            TlsError::CertificateExpired
        }
        E::InvalidCertificate(C::NotValidYet | C::NotValidYetContext { .. }) => {
            TlsError::CertificateNotValidYet
        }
        E::FailedToGetCurrentTime => TlsError::NoWallClock,
        E::AlertReceived(a) => TlsError::HandshakeRefused {
            alert: format!("{a:?}"),
        },
        E::InvalidMessage(_) | E::InappropriateMessage { .. } => TlsError::NotTls,
        other => TlsError::Other {
            message: other.to_string(),
        },
    }
}

/// An IO error of rustls's buffers (bytes it could not take).
fn io_cause(e: std::io::Error) -> TlsError {
    TlsError::Other {
        message: e.to_string(),
    }
}
