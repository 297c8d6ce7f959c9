//! One broker connection's state: setup, the ApiVersions handshake, negotiated versions,
//! in-flight requests in send order, framing, throttling and idleness.

use std::collections::VecDeque;

use kafka_proto::api::ApiKey;
use kafka_proto::{BrokerVersions, FrameDecoder};

use super::{ConnId, NodeId, Purpose};
use crate::config::HostPort;
use crate::time::Instant;

/// Who a connection is to.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
#[non_exhaustive]
pub enum Peer {
    /// A `bootstrap.servers` entry whose node id is not known yet.
    Bootstrap,
    /// A known node, for one purpose.
    Node(NodeId, Purpose),
}

/// Where a connection is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum State {
    /// Waiting for the adapter's "connected", until the setup deadline.
    Connecting { deadline: Instant },
    /// Connected; the TLS handshake runs, within the same setup deadline.
    #[cfg_attr(not(feature = "tls"), allow(dead_code))]
    Tls { deadline: Instant },
    /// Connected; the ApiVersions exchange is in flight, then SASL authentication.
    Handshake,
    /// Versions negotiated; requests may be sent.
    Ready,
}

/// Who is waiting for a response.
#[derive(Debug, Clone)]
pub(crate) enum Tag<T> {
    /// The connection's own ApiVersions request.
    Handshake,
    /// The connection's own SaslHandshake or SaslAuthenticate request.
    Auth,
    /// A KIP-714 telemetry request.
    Telemetry,
    /// A caller's request, with the caller's tag.
    User(T),
}

/// A request sent and not yet answered.
#[derive(Debug, Clone)]
pub(crate) struct InFlight<T> {
    pub correlation_id: i32,
    pub api: ApiKey,
    pub version: i16,
    pub deadline: Instant,
    /// When it was written, for the request latency.
    pub sent: Instant,
    pub tag: Tag<T>,
}

#[derive(Debug)]
pub(crate) struct Connection<T> {
    pub id: ConnId,
    pub addr: HostPort,
    pub peer: Peer,
    pub state: State,
    pub versions: BrokerVersions,
    pub frames: FrameDecoder,
    /// Kafka answers in send order on a connection, so this is a queue.
    pub in_flight: VecDeque<InFlight<T>>,
    pub last_active: Instant,
    /// KIP-219: no new request before this instant.
    pub muted_until: Option<Instant>,
    /// A bootstrap connection no node adopted: close it once nothing is in flight.
    pub close_when_idle: bool,
    /// Correlation ids of the latest requests sent expecting no response (Produce with
    /// acks=0), oldest first: a broker that answers one anyway (Tansu does) is tolerated.
    pub unanswered: VecDeque<i32>,
    /// The TLS session, with `security.protocol` SSL or SASL_SSL.
    pub tls: Option<super::tls::Tls>,
    /// A SASL exchange in progress (the first, or a re-authentication: no new request is
    /// sent until it ends, while responses to earlier ones still arrive).
    pub sasl: Option<super::auth::Sasl>,
    /// KIP-368: when to authenticate again, before the broker's session lifetime ends.
    pub reauth_at: Option<Instant>,
    /// When the last SaslAuthenticate was sent: the broker's session cannot have started
    /// before then.
    pub auth_sent: Instant,
    /// A data connection still being set up then is reported as a node failure (see
    /// [`super::Network::handle_timeout`]); `None` for other connections.
    pub slow_wake: Option<Instant>,
    /// Its ApiVersions request named the cluster and node (KIP-1242).
    pub cluster_checked: bool,
}

/// How many unanswered correlation ids a connection remembers.
pub const UNANSWERED_MEMORY: usize = 256;

impl<T> Connection<T> {
    pub fn new(id: ConnId, addr: HostPort, peer: Peer, deadline: Instant, now: Instant) -> Self {
        Connection {
            id,
            addr,
            peer,
            state: State::Connecting { deadline },
            versions: BrokerVersions::default(),
            frames: FrameDecoder::default(),
            in_flight: VecDeque::new(),
            last_active: now,
            muted_until: None,
            close_when_idle: false,
            cluster_checked: false,
            unanswered: VecDeque::new(),
            tls: None,
            sasl: None,
            reauth_at: None,
            auth_sent: now,
            slow_wake: None,
        }
    }

    pub fn node(&self) -> Option<NodeId> {
        match self.peer {
            Peer::Node(id, _) => Some(id),
            Peer::Bootstrap => None,
        }
    }

    /// Ready, not throttled, and under the in-flight limit.
    pub fn can_send(&self, max_in_flight: usize, now: Instant) -> bool {
        self.state == State::Ready
            && self.sasl.is_none()
            && self.muted_until.is_none_or(|t| t <= now)
            && self.in_flight.len() < max_in_flight
    }

    /// The earliest instant this connection needs attention at.
    pub fn next_deadline(&self, idle: std::time::Duration) -> Option<Instant> {
        let setup = match self.state {
            State::Connecting { deadline } | State::Tls { deadline } => {
                Some(self.slow_wake.map_or(deadline, |w| w.min(deadline)))
            }
            _ => None,
        };
        let reauth = self.reauth_at.filter(|_| self.sasl.is_none());
        let token = match self.sasl {
            Some(super::auth::Sasl::AwaitingToken { deadline }) => Some(deadline),
            _ => None,
        };
        // Deadlines grow in send order, so the oldest request expires first.
        let request = self.in_flight.front().map(|f| f.deadline);
        let idle = (self.state == State::Ready && self.in_flight.is_empty())
            .then_some(self.last_active + idle);
        // Folded pairwise rather than collected and scanned: asked for every connection each
        // time the client's poll_timeout is.
        [request, idle, self.muted_until, reauth, token]
            .into_iter()
            .fold(setup, earliest)
    }
}

/// The earlier of two optional instants, either if only one is set.
fn earliest(a: Option<Instant>, b: Option<Instant>) -> Option<Instant> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, None) => a,
        (None, b) => b,
    }
}
