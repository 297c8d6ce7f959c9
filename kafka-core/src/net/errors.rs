//! How the connection manager's work fails: a request without an answer (`RequestError`), one
//! that could not be sent (`RequestSendError`), a connection that could not be opened
//! (`ConnectError`) or authenticated (`AuthError`, with TLS's typed cause `TlsError`).

use kafka_proto::{DecodeError, NegotiationError};

use super::ConnId;
use crate::config::HostPort;

/// Why a request got no response.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RequestError {
    /// The connection closed first; the broker may or may not have processed the request.
    #[error("the connection to {addr} closed before the response arrived")]
    Disconnected {
        /// The broker's address.
        addr: HostPort,
    },
    /// No response within `request.timeout.ms`; the connection was closed.
    #[error("no response from {addr} within request.timeout.ms")]
    TimedOut {
        /// The broker's address.
        addr: HostPort,
    },
    /// The broker answered the ApiVersions handshake with an error; the connection was
    /// closed.
    #[error("{addr} refused the ApiVersions handshake: {code}")]
    Handshake {
        /// The broker's address.
        addr: HostPort,
        /// The error it answered.
        code: kafka_proto::ErrorCode,
    },
    /// The response could not be decoded; the connection was closed.
    #[error("malformed response from {addr}: {error}")]
    Malformed {
        /// The broker's address.
        addr: HostPort,
        /// What was wrong.
        error: DecodeError,
    },
}

/// Why a connection could not authenticate: fatal to the operations waiting on it (Java's
/// AuthenticationException), never retried forever.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum AuthError {
    /// The broker refused the credentials.
    #[error(
        "{addr} refused SASL {mechanism} authentication ({message}): check sasl.username and \
         sasl.password (or sasl.jaas.config) against the users the cluster knows"
    )]
    Refused {
        /// The broker's address.
        addr: HostPort,
        /// The mechanism.
        mechanism: &'static str,
        /// What the broker said (never a secret: it has none of ours to say).
        message: String,
    },
    /// The broker does not enable the mechanism.
    #[error(
        "{addr} does not enable SASL mechanism {mechanism} (it enables {}): set sasl.mechanism \
         to one of those",
        enabled.join(", ")
    )]
    UnsupportedMechanism {
        /// The broker's address.
        addr: HostPort,
        /// The mechanism asked for.
        mechanism: &'static str,
        /// The mechanisms the broker enables.
        enabled: Vec<String>,
    },
    /// The exchange went wrong (a SCRAM server that cannot prove it knows the password, a
    /// malformed message, a listener that does not do SASL).
    #[error("SASL {mechanism} authentication with {addr} failed: {reason}")]
    Protocol {
        /// The broker's address.
        addr: HostPort,
        /// The mechanism.
        mechanism: &'static str,
        /// What went wrong.
        reason: String,
    },
    /// The TLS handshake failed: an untrusted, expired or misnamed certificate, a refused
    /// client certificate, or a listener that does not speak TLS.
    #[error("TLS with {addr} failed: {cause}")]
    Tls {
        /// The broker's address.
        addr: HostPort,
        /// What went wrong; its message says the fix.
        cause: TlsError,
    },
}

/// Why TLS with a broker failed, as a program can tell the cases apart (its message names the
/// setting that fixes each).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum TlsError {
    /// The broker's certificate is not signed by a CA the client trusts.
    #[error(
        "the broker's certificate is not signed by a trusted CA: set ssl.ca.location to the CA \
         that signed it"
    )]
    UntrustedCertificate,
    /// The broker's certificate does not name the host connected to.
    #[error(
        "the broker's certificate does not name the host connected to: connect by a name the \
         certificate lists, or set ssl.endpoint.identification.algorithm=none"
    )]
    CertificateNameMismatch,
    /// The broker's certificate has expired.
    #[error("the broker's certificate has expired: renew it")]
    CertificateExpired,
    /// The broker's certificate is not valid yet.
    #[error("the broker's certificate is not valid yet: check the clocks")]
    CertificateNotValidYet,
    /// No wall clock was passed in to judge certificates by.
    #[error("no wall clock was given to judge certificates by (call handle_wall_clock)")]
    NoWallClock,
    /// The broker ended the handshake with an alert (often: it wants a client certificate).
    #[error(
        "the broker refused the TLS handshake ({alert}): if it asks for a client certificate, \
         set ssl.certificate.location and ssl.key.location"
    )]
    HandshakeRefused {
        /// The TLS alert it sent.
        alert: String,
    },
    /// What came back is not TLS: the listener is PLAINTEXT or SASL_PLAINTEXT.
    #[error(
        "the broker does not speak TLS on this port: is the listener PLAINTEXT or \
         SASL_PLAINTEXT? (see security.protocol)"
    )]
    NotTls,
    /// The host connected to cannot be a TLS server name.
    #[error("`{host}` is not a valid TLS server name")]
    InvalidServerName {
        /// The host.
        host: String,
    },
    /// This build of the client has no TLS (kafka-core's `tls` feature is off).
    #[error("this build has no TLS (kafka-core's `tls` feature)")]
    NotBuilt,
    /// Another failure of the TLS library, in its words.
    #[error("{message}")]
    Other {
        /// rustls's description.
        message: String,
    },
}

/// Why a request could not be sent.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RequestSendError {
    /// The connection is not ready (check [`Network::ready`] first).
    #[error("connection {0:?} is not ready to send")]
    NotReady(ConnId),
    /// No version both sides speak.
    #[error(transparent)]
    Version(#[from] NegotiationError),
    /// The request could not be encoded.
    #[error(transparent)]
    Encode(#[from] kafka_proto::EncodeError),
}

/// Why a connection could not be opened, as the adapter saw it (it names the cause in
/// timeouts and errors).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ConnectError {
    /// Nothing accepts connections there.
    #[error("connection refused (is a broker listening on that port?)")]
    Refused,
    /// The host name did not resolve.
    #[error(
        "the host name did not resolve (check bootstrap.servers and the advertised listeners)"
    )]
    NotResolved,
    /// No route to the host or network.
    #[error("the host is unreachable")]
    Unreachable,
    /// Anything else, as the operating system described it.
    #[error("{0}")]
    Other(String),
}

impl ConnectError {
    /// The cause of a failed connect, from the operating system's error.
    pub fn from_io(e: &std::io::Error) -> Self {
        use std::io::ErrorKind;
        match e.kind() {
            ErrorKind::ConnectionRefused | ErrorKind::ConnectionReset => ConnectError::Refused,
            ErrorKind::HostUnreachable | ErrorKind::NetworkUnreachable => ConnectError::Unreachable,
            _ => {
                let text = e.to_string();
                // Resolvers report through io::ErrorKind::Other (or Uncategorized), with
                // words like these (glibc, musl, Windows, async-net).
                let lower = text.to_ascii_lowercase();
                if [
                    "lookup",
                    "resolve",
                    "name or service",
                    "nodename",
                    "no such host",
                ]
                .iter()
                .any(|w| lower.contains(w))
                {
                    ConnectError::NotResolved
                } else {
                    ConnectError::Other(text)
                }
            }
        }
    }
}
