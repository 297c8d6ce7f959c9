//! The connection manager's vocabulary: connection ids and purposes, what the adapter must
//! do (`Transmit`), and how requests end or fail (`NetEvent`, `RequestError`, `SendError`,
//! `ConnectError`).

use bytes::Bytes;
use kafka_proto::api::ResponseBody;
use kafka_proto::{DecodeError, NegotiationError};

use crate::config::HostPort;

/// A broker's node id.
pub type NodeId = i32;

/// A connection, as numbered by the core. The adapter maps it to a socket.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ConnId(pub u64);

/// Why a connection to a node exists. The coordinator gets its own, so heartbeats never queue
/// behind a long-polling fetch.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[non_exhaustive]
pub enum Purpose {
    /// Produce, fetch, metadata.
    Data,
    /// Group coordination.
    Coordinator,
    /// An extra connection for producing or fetching (lane 1 and up of
    /// `connections.per.broker`; lane 0 is the data connection), so a broker that serves each
    /// connection's requests one at a time serves partitions pinned to different lanes side
    /// by side.
    Lane(u8),
}

/// The connection to its leader that a partition's requests take, of `connections.per.broker`:
/// always the same one, so its produce requests reach the broker in order (and, with
/// idempotence, its sequences too), and its fetch session stays on one connection.
pub(crate) fn lane(partition: i32, lanes: usize) -> usize {
    partition.unsigned_abs() as usize % lanes.max(1)
}

impl Purpose {
    /// The connection of lane `n` of `connections.per.broker`: lane 0 is the data connection
    /// (which metadata and the rest use too).
    pub fn lane(n: usize) -> Purpose {
        match n {
            0 => Purpose::Data,
            n => Purpose::Lane(n.min(u8::MAX as usize) as u8),
        }
    }
}

/// What the adapter must do on the network.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Transmit {
    /// Open a TCP connection (resolving the host) and report back with `handle_connected` or
    /// `handle_connect_failed`.
    Connect {
        /// The connection's id.
        conn: ConnId,
        /// Where to.
        addr: HostPort,
    },
    /// Write these bytes, in order, after those sent before on the connection. A request may
    /// take several: a produce request's large record batches each come in their own, from
    /// the producer's buffers (a vectored write sends them together without a copy).
    Send {
        /// The connection.
        conn: ConnId,
        /// The bytes.
        bytes: Bytes,
    },
    /// Close the connection. No `handle_closed` is expected for it.
    Close {
        /// The connection.
        conn: ConnId,
    },
}

/// Whether the broker answers a request: every request but a Produce with acks=0.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Expect {
    /// A response follows, and with it an event.
    Response,
    /// Complete once written (Produce with acks=0): no response, no event.
    Nothing,
}

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
    #[error("TLS with {addr} failed: {reason}")]
    Tls {
        /// The broker's address.
        addr: HostPort,
        /// What went wrong, and the fix.
        reason: String,
    },
}

/// A request's outcome, for the caller that sent it.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum NetEvent<T> {
    /// The response arrived.
    Response {
        /// The connection it came on.
        conn: ConnId,
        /// The node, if known.
        node: Option<NodeId>,
        /// The caller's tag.
        tag: T,
        /// The version the request was sent at.
        version: i16,
        /// The response.
        body: ResponseBody,
    },
    /// It never will.
    Failed {
        /// The connection it was sent on.
        conn: ConnId,
        /// The node, if known.
        node: Option<NodeId>,
        /// The caller's tag.
        tag: T,
        /// Why.
        error: RequestError,
    },
}

/// Why a request could not be sent.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SendError {
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
