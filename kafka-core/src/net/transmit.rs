//! The connection manager's vocabulary: node and connection ids and purposes, what the adapter
//! must do (`Transmit`), and how a request ends (`NetEvent`); how it fails is in `errors`.

use bytes::Bytes;
use kafka_proto::api::ResponseBody;

use super::RequestError;
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
