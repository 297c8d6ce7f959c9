//! The sans-IO connection manager: it decides when to connect, to which server, with which
//! request versions, and when to give up, and leaves every socket operation to the caller.
//!
//! - Nothing connects until a caller needs a connection ([`Network::ready`] or
//!   [`Network::least_loaded`]).
//! - Bootstrap tries one server at a time, in an order shuffled by the seed.
//! - Every connection starts with ApiVersions; an UNSUPPORTED_VERSION reply is retried at the
//!   highest version the broker listed. Each request then uses the highest common version.
//! - Connections are keyed by (node, purpose). A bootstrap connection is adopted as a node's
//!   data connection when its host:port equals the node's, or closed once idle: no zombies.
//! - Request timeouts close the connection (its responses can no longer be trusted to arrive),
//!   failed connections back off exponentially with jitter, idle ones are closed, and a
//!   response's `throttle_time_ms` mutes its connection (KIP-219).

mod auth;
mod config;
mod connection;
mod errors;
mod failure;
mod least_loaded;
mod machine;
mod metrics;
mod rebootstrap;
mod receive;
mod telemetry;
mod timers;
#[cfg(feature = "tls")]
mod tls;
#[cfg(not(feature = "tls"))]
mod tls {
    //! Without the `tls` feature there is no TLS session: configuration refuses SSL first.
    #[derive(Debug)]
    pub(crate) enum Tls {}
    impl Tls {
        pub fn handshaking(&self) -> bool {
            match *self {}
        }
        pub fn receive(&mut self, _: &[u8], _: &mut Vec<u8>) -> Result<(), super::TlsError> {
            match *self {}
        }
        pub fn send(&mut self, _: &[bytes::Bytes]) -> Result<(), String> {
            match *self {}
        }
        pub fn output(&mut self) -> Option<bytes::Bytes> {
            match *self {}
        }
    }
}
mod transmit;

use std::collections::{BTreeMap, VecDeque};
use std::time::Duration;

use bytes::BytesMut;
use kafka_proto::api::{ApiKey, Request, ResponseBody};
use kafka_proto::header::{decode_response_body, peek_correlation_id};
use kafka_proto::messages::api_versions_request::ApiVersionsRequest;
use kafka_proto::wire::Encoder;
use kafka_proto::{encode_request_into, BrokerVersions, DecodeError, ErrorCode, NegotiationError};

use crate::config::HostPort;
use crate::metrics::telemetry::Telemetry;
use crate::rng::Rng;
use crate::time::Instant;
pub use config::NetConfig;
pub use connection::Peer;
use connection::{Connection, InFlight, State, Tag};
pub use errors::{AuthError, ConnectError, RequestError, RequestSendError, TlsError};
use failure::Closing;
/// [`RequestSendError`] by its old name (the producer's and the driver's `SendError`s are
/// about records).
#[deprecated(since = "0.1.0", note = "renamed `RequestSendError`")]
pub type SendError = RequestSendError;
pub(crate) use machine::Sealed;
pub use machine::{Machine, Output};
use metrics::NetMetrics;
pub(crate) use transmit::lane;
pub use transmit::{ConnId, Expect, NetEvent, NodeId, Purpose, Transmit};

/// Byte fields (record batches) this large are sent from their own buffers, in a
/// [`Transmit::Send`] each, rather than copied into the request: smaller ones cost less to
/// copy than a write of their own. Below `batch.size` (16 KiB by default): a batch is closed
/// when the next record would not fit, so at 16 KiB the default batches were always copied
/// (about 110 instructions a 100-byte record, callgrind).
const SPLICE_MIN: usize = 4 * 1024;

/// Consecutive failures to one address, the last one's time, and when it may be tried again.
#[derive(Debug, Clone, Copy, Default)]
struct Failures {
    count: u32,
    last: Instant,
    retry_at: Option<Instant>,
}

/// A problem seen at `now`, for [`Network::last_problem`].
fn stamp(now: Instant, problem: String) -> Option<(String, Instant)> {
    Some((problem, now))
}

/// A connection's node, for logs (`None`: a bootstrap connection).
fn peer_node(peer: &Peer) -> Option<NodeId> {
    match peer {
        Peer::Node(id, _) => Some(*id),
        Peer::Bootstrap => None,
    }
}

/// The newest version of `api` the clients send, where it is older than the codec's: the
/// versions that name topics only by id (OffsetCommit and OffsetFetch v10, TxnOffsetCommit v6,
/// Kafka 4.2-4.4) wait until the group and transaction code fills in topic ids, as Java stays
/// below them while it lacks an id.
fn client_max_version(api: ApiKey) -> i16 {
    match api {
        ApiKey::OffsetCommit | ApiKey::OffsetFetch => 9,
        ApiKey::TxnOffsetCommit => 5,
        _ => api.max_version(),
    }
}

/// The client software name and version sent in ApiVersions v3+ (KIP-511).
const SOFTWARE_NAME: &str = "kafka-rs";

/// Consecutive failures to reach an address after which an outage is worth a warning.
const WARN_AFTER_FAILURES: u32 = 3;

/// The connection manager. `T` is the caller's tag for matching responses to its requests.
#[derive(Debug)]
pub struct Network<T> {
    cfg: NetConfig,
    rng: Rng,
    conns: BTreeMap<ConnId, Connection<T>>,
    by_node: BTreeMap<(NodeId, Purpose), ConnId>,
    nodes: BTreeMap<NodeId, HostPort>,
    bootstrap: Vec<HostPort>,
    bootstrap_next: usize,
    failures: BTreeMap<HostPort, Failures>,
    next_conn: u64,
    next_correlation: i32,
    transmits: VecDeque<Transmit>,
    events: VecDeque<NetEvent<T>>,
    /// The size of the last request of each API, by key: the next one's buffer starts that
    /// large, so a megabyte Produce request is not grown (and copied) by doubling.
    frame_hint: Vec<usize>,
    /// The last connection problem, and when, for errors and timeouts to name.
    last_problem: Option<(String, Instant)>,
    /// When a connection least_loaded waits on has been on its way for CONNECT_PATIENCE.
    patience_wake: Option<Instant>,
    /// How long the client has gone without metadata (KIP-1102's trigger).
    recovery: rebootstrap::Rebootstrap,
    /// The cluster id metadata named: sent in the ApiVersions handshake with the node id
    /// (KIP-1242), so that a broker reached at a stale address says so.
    cluster_id: Option<String>,
    /// Addresses whose broker closed a handshake that named the cluster: asked without.
    no_cluster_check: std::collections::BTreeSet<HostPort>,
    /// A connection to a known node failed since [`Network::take_node_failure`] last said.
    node_failed: bool,
    /// Nodes whose coordinator connection failed or closed since
    /// [`Network::take_coordinator_failure`] last asked about them.
    coordinator_failed: std::collections::BTreeSet<NodeId>,
    /// An authentication failure not yet taken by the client.
    auth_failure: Option<AuthError>,
    /// The OAUTHBEARER token to authenticate with, and when it came (wall clock, ms).
    token: Option<(crate::sasl::OAuthToken, i64)>,
    /// SCRAM's salted password, kept between this client's authentications.
    salt_cache: crate::sasl::scram::SaltCache,
    /// Plaintext decrypted from TLS records, reused between reads.
    plain: Vec<u8>,
    /// The wall clock last given, in milliseconds since the Unix epoch (0: never).
    wall_ms: i64,
    /// A connection waits for the application's OAUTHBEARER token, not yet asked for.
    token_wanted: bool,
    /// The cluster's finalized features (name, max version level), from the ApiVersions
    /// answer with the highest features epoch so far.
    features: (i64, BTreeMap<String, i16>),
    /// Connection and request metrics.
    metrics: NetMetrics,
    /// KIP-714 telemetry.
    telemetry: Telemetry,
    /// The client's tracing span: every event of its inputs is inside it.
    span: tracing::Span,
}

impl<T> Network<T> {
    /// A manager that will bootstrap from `bootstrap` (tried one at a time, in seeded random order).
    pub fn new(cfg: NetConfig, bootstrap: Vec<HostPort>) -> Self {
        let mut rng = Rng::new(cfg.seed);
        let metrics_window = cfg.metrics_window;
        let (metrics_push, seed) = (cfg.metrics_push, cfg.seed);
        let span = tracing::info_span!("kafka", client = cfg.kind, client_id = %cfg.client_id);
        let mut bootstrap = bootstrap;
        rng.shuffle(&mut bootstrap);
        Network {
            cfg,
            rng,
            conns: BTreeMap::new(),
            by_node: BTreeMap::new(),
            nodes: BTreeMap::new(),
            bootstrap,
            bootstrap_next: 0,
            failures: BTreeMap::new(),
            next_conn: 0,
            next_correlation: 0,
            transmits: VecDeque::new(),
            events: VecDeque::new(),
            frame_hint: Vec::new(),
            last_problem: None,
            patience_wake: None,
            recovery: Default::default(),
            cluster_id: None,
            no_cluster_check: Default::default(),
            node_failed: false,
            coordinator_failed: Default::default(),
            auth_failure: None,
            token: None,
            salt_cache: Default::default(),
            plain: Vec::new(),
            wall_ms: 0,
            token_wanted: false,
            features: (-1, BTreeMap::new()),
            metrics: NetMetrics::new(metrics_window),
            telemetry: Telemetry::new(metrics_push, seed),
            span,
        }
    }

    /// Learns the cluster's nodes from metadata. A bootstrap connection whose address is a
    /// node's becomes that node's data connection (unless it has one); any other is closed
    /// once nothing is in flight on it.
    pub fn update_nodes(
        &mut self,
        nodes: impl IntoIterator<Item = (NodeId, HostPort)>,
        now: Instant,
    ) {
        self.nodes = nodes.into_iter().collect();
        let bootstrap: Vec<ConnId> = self
            .conns
            .values()
            .filter(|c| c.peer == Peer::Bootstrap)
            .map(|c| c.id)
            .collect();
        for id in bootstrap {
            let addr = self.conns[&id].addr.clone();
            let adopt = self
                .nodes
                .iter()
                .find(|(node, a)| {
                    **a == addr && !self.by_node.contains_key(&(**node, Purpose::Data))
                })
                .map(|(node, _)| *node);
            let conn = self.conns.get_mut(&id).expect("listed above");
            match adopt {
                Some(node) => {
                    conn.peer = Peer::Node(node, Purpose::Data);
                    self.by_node.insert((node, Purpose::Data), id);
                }
                None => conn.close_when_idle = true,
            }
        }
        self.close_idle_bootstrap(now);
    }

    /// The cluster id the latest metadata named (KIP-1242's handshake check).
    pub fn set_cluster_id(&mut self, cluster_id: Option<&str>) {
        if self.cluster_id.as_deref() != cluster_id {
            self.cluster_id = cluster_id.map(str::to_owned);
        }
    }

    /// Learns one node's address (a group coordinator found by FindCoordinator) if metadata
    /// has not listed it.
    pub fn learn_node(&mut self, node: NodeId, addr: HostPort) {
        self.nodes.entry(node).or_insert(addr);
    }

    /// Forgets the known nodes and starts over from `bootstrap.servers` (KIP-899): for when no
    /// known broker can be reached, or a broker answered REBOOTSTRAP_REQUIRED. Open connections
    /// stay until idle; new metadata decides which are adopted. An address whose last
    /// connection failed stays under suspicion (its open lanes are not asked first) until a
    /// connection to it completes its handshake, and in its reconnect backoff: starting over
    /// had cleared the backoff, and a broker that closed every new connection during its
    /// handshake (a connection quota; Tansu on a v5 ApiVersions naming its cluster) was
    /// reconnected to in a loop (found by the simulation's connection-quota fault: 46 of 300
    /// seeds opened more than 40 connections a second).
    pub fn rebootstrap(&mut self) {
        self.recovery.reset();
        self.nodes.clear();
        self.bootstrap_next = 0;
    }

    /// The nodes known from metadata.
    pub fn nodes(&self) -> &BTreeMap<NodeId, HostPort> {
        &self.nodes
    }

    /// A feature's finalized version level in the cluster (ApiVersions v3+, the newest epoch
    /// seen), e.g. `transaction.version`; `None` if no broker finalized it.
    pub fn finalized_feature(&self, name: &str) -> Option<i16> {
        self.features.1.get(name).copied()
    }

    /// Whether the latest metadata (or a FindCoordinator answer) named `node`: a node the
    /// cluster no longer lists cannot be connected to until it is named again.
    pub fn knows(&self, node: NodeId) -> bool {
        self.nodes.contains_key(&node)
    }

    /// Whether a connection to `node` for `purpose` exists (connecting, or connected).
    pub fn has_connection(&self, node: NodeId, purpose: Purpose) -> bool {
        self.by_node.contains_key(&(node, purpose))
    }

    /// The connection to `node` for `purpose` if it can take a request now. Otherwise starts
    /// connecting (unless backing off) and returns `None`; try again after the next event.
    pub fn ready(&mut self, node: NodeId, purpose: Purpose, now: Instant) -> Option<ConnId> {
        if let Some(id) = self.by_node.get(&(node, purpose)) {
            let c = &self.conns[id];
            return c.can_send(self.cfg.max_in_flight, now).then_some(c.id);
        }
        let addr = self.nodes.get(&node)?.clone();
        if self.may_connect(&addr, now) {
            self.connect(addr, Peer::Node(node, purpose), now);
        }
        None
    }

    /// Sends a request on a ready connection at the highest version both sides speak; its
    /// response (or failure) comes as an event with `tag`. Returns the version used.
    pub fn send<R: Request>(
        &mut self,
        conn: ConnId,
        request: &R,
        tag: T,
        now: Instant,
    ) -> Result<i16, RequestSendError> {
        self.send_at_most(
            conn,
            request,
            tag,
            Expect::Response,
            R::API_KEY.max_version(),
            now,
        )
    }

    /// [`Network::send`], waiting `timeout` for the response instead of `request.timeout.ms`
    /// (a JoinGroup, which the coordinator holds for up to the rebalance timeout).
    pub fn send_timeout<R: Request>(
        &mut self,
        conn: ConnId,
        request: &R,
        tag: T,
        timeout: Duration,
        now: Instant,
    ) -> Result<i16, RequestSendError> {
        self.send_impl(
            conn,
            request,
            tag,
            Expect::Response,
            R::API_KEY.max_version(),
            timeout,
            now,
        )
    }

    /// [`Network::send`], at no version above `max_version` (for requests whose newest
    /// version needs data the caller lacks, such as Produce v13's topic ids). With
    /// [`Expect::Nothing`] (Produce with acks=0) the request is complete once written, and no
    /// event follows.
    pub fn send_at_most<R: Request>(
        &mut self,
        conn: ConnId,
        request: &R,
        tag: T,
        expect: Expect,
        max_version: i16,
        now: Instant,
    ) -> Result<i16, RequestSendError> {
        let timeout = self.cfg.request_timeout;
        self.send_impl(conn, request, tag, expect, max_version, timeout, now)
    }

    #[allow(clippy::too_many_arguments)]
    fn send_impl<R: Request>(
        &mut self,
        conn: ConnId,
        request: &R,
        tag: T,
        expect: Expect,
        max_version: i16,
        timeout: Duration,
        now: Instant,
    ) -> Result<i16, RequestSendError> {
        let max = self.cfg.max_in_flight;
        let c = self
            .conns
            .get(&conn)
            .filter(|c| c.can_send(max, now))
            .ok_or(RequestSendError::NotReady(conn))?;
        let version = (c.versions.negotiate(R::API_KEY)?)
            .min(max_version)
            .min(client_max_version(R::API_KEY));
        if version < R::API_KEY.min_version() {
            return Err(RequestSendError::Version(
                NegotiationError::NotSupportedByBroker {
                    api: R::API_KEY,
                    ours_min: R::API_KEY.min_version(),
                    ours_max: max_version,
                },
            ));
        }
        self.write(
            conn,
            request,
            version,
            (expect == Expect::Response).then_some(Tag::User(tag)),
            timeout,
            now,
        )?;
        Ok(version)
    }

    /// The negotiated version of `api` on a ready connection.
    pub fn version(&self, conn: ConnId, api: ApiKey) -> Option<i16> {
        let c = self.conns.get(&conn)?;
        if c.state != State::Ready {
            return None;
        }
        let v = c.versions.negotiate(api).ok()?;
        Some(v.min(client_max_version(api)))
    }

    /// The node a connection belongs to, if known.
    pub fn node_of(&self, conn: ConnId) -> Option<NodeId> {
        self.conns.get(&conn).and_then(|c| c.node())
    }

    /// Requests in flight on a connection.
    pub fn in_flight(&self, conn: ConnId) -> usize {
        self.conns.get(&conn).map_or(0, |c| c.in_flight.len())
    }

    fn write<R: Request>(
        &mut self,
        conn: ConnId,
        request: &R,
        version: i16,
        tag: Option<Tag<T>>,
        timeout: Duration,
        now: Instant,
    ) -> Result<(), RequestSendError> {
        let correlation_id = self.next_correlation;
        self.next_correlation = self.next_correlation.wrapping_add(1) & i32::MAX;
        let key = usize::try_from(R::API_KEY.key()).unwrap_or(0);
        let hint = self.frame_hint.get(key).copied().unwrap_or(0);
        let mut enc = Encoder::splicing(BytesMut::with_capacity(hint), SPLICE_MIN);
        let client_id = (!self.cfg.client_id.is_empty()).then_some(self.cfg.client_id.as_str());
        encode_request_into(&mut enc, request, version, correlation_id, client_id)?;
        if self.frame_hint.len() <= key {
            self.frame_hint.resize(key + 1, 0);
        }
        // A little over the last size: a batch may grow by a few records between requests.
        self.frame_hint[key] = enc.len() + enc.len() / 8;
        let deadline = now + timeout;
        if R::API_KEY == ApiKey::Metadata {
            self.recovery.metadata_sent(now);
        }
        let c = self.conns.get_mut(&conn).expect("checked by the caller");
        self.metrics.request(c.node(), enc.len(), now);
        self.span.in_scope(|| {
            tracing::trace!(
                conn = conn.0,
                node = c.node(),
                api = ?R::API_KEY,
                version,
                correlation_id,
                bytes = enc.len(),
                "request"
            )
        });
        if let Some(tag) = tag {
            c.in_flight.push_back(InFlight {
                correlation_id,
                api: R::API_KEY,
                version,
                deadline,
                sent: now,
                tag,
            });
        } else {
            if c.unanswered.len() == connection::UNANSWERED_MEMORY {
                c.unanswered.pop_front();
            }
            c.unanswered.push_back(correlation_id);
        }
        c.last_active = now;
        match &mut c.tls {
            Some(tls) => {
                // Encrypted records are written as rustls makes them; a failure to encrypt
                // leaves nothing to send, and the request times out like any lost one.
                if tls.send(&enc.into_parts()).is_ok() {
                    self.transmits
                        .extend(tls.output().map(|bytes| Transmit::Send { conn, bytes }));
                }
            }
            None => self.transmits.extend(
                enc.into_parts()
                    .into_iter()
                    .map(|bytes| Transmit::Send { conn, bytes }),
            ),
        }
        Ok(())
    }

    fn may_connect(&self, addr: &HostPort, now: Instant) -> bool {
        self.failures
            .get(addr)
            .and_then(|f| f.retry_at)
            .is_none_or(|t| t <= now)
    }

    fn connect(&mut self, addr: HostPort, peer: Peer, now: Instant) -> ConnId {
        let id = ConnId(self.next_conn);
        self.next_conn += 1;
        let attempts = self.failures.get(&addr).map_or(0, |f| f.count);
        let deadline = now + self.cfg.setup_timeout.delay(attempts, &mut self.rng);
        if let Peer::Node(node, purpose) = peer {
            self.by_node.insert((node, purpose), id);
        }
        self.metrics.connection_created(now);
        // Connections and requests also start from a client's sends, outside its inputs'
        // span: their events enter it themselves.
        self.span.in_scope(
            || tracing::debug!(conn = id.0, %addr, node = ?peer_node(&peer), "connecting"),
        );
        self.transmits.push_back(Transmit::Connect {
            conn: id,
            addr: addr.clone(),
        });
        let mut c = Connection::new(id, addr, peer, deadline, now);
        if matches!(c.peer, Peer::Node(_, p) if p != Purpose::Coordinator) {
            c.slow_wake = Some(now + least_loaded::CONNECT_PATIENCE);
        }
        self.conns.insert(id, c);
        id
    }

    /// The adapter connected the socket: the ApiVersions handshake starts.
    pub fn handle_connected(&mut self, conn: ConnId, now: Instant) {
        let Some(c) = self.conns.get_mut(&conn) else {
            return;
        };
        let State::Connecting { deadline } = c.state else {
            return;
        };
        tracing::debug!(conn = conn.0, addr = %c.addr, "connected");
        if self.cfg.security.protocol.tls() {
            return self.start_tls(conn, deadline, now);
        }
        c.state = State::Handshake;
        self.send_api_versions(conn, ApiKey::ApiVersions.max_version(), now);
    }

    /// Starts the TLS handshake, within the connection's setup deadline.
    #[cfg(feature = "tls")]
    fn start_tls(&mut self, conn: ConnId, deadline: Instant, now: Instant) {
        let c = self.conns.get_mut(&conn).expect("present");
        let session = self
            .cfg
            .security
            .tls_client
            .as_ref()
            .ok_or_else(|| TlsError::Other {
                message: "no TLS client was configured".to_owned(),
            })
            .and_then(|t| {
                t.session(&c.addr.host).map_err(|e| match e {
                    Some(e) => tls::cause(e),
                    None => TlsError::InvalidServerName {
                        host: c.addr.host.clone(),
                    },
                })
            });
        match session {
            Ok(session) => {
                let mut tls = tls::Tls::new(session);
                c.state = State::Tls { deadline };
                self.transmits
                    .extend(tls.output().map(|bytes| Transmit::Send { conn, bytes }));
                c.tls = Some(tls);
            }
            Err(cause) => self.auth_failed(conn, now, |addr, _| AuthError::Tls { addr, cause }),
        }
    }

    #[cfg(not(feature = "tls"))]
    fn start_tls(&mut self, conn: ConnId, _deadline: Instant, now: Instant) {
        self.auth_failed(conn, now, |addr, _| AuthError::Tls {
            addr,
            cause: TlsError::NotBuilt,
        })
    }

    /// Sets the wall clock that TLS certificates are judged by and OAUTHBEARER tokens are
    /// refreshed by: an input like every clock reading. The driver passes the runtime's.
    pub fn set_wall_clock(&mut self, since_epoch: Duration) {
        self.wall_ms = i64::try_from(since_epoch.as_millis()).unwrap_or(i64::MAX);
        let unix_secs = since_epoch.as_secs();
        #[cfg(feature = "tls")]
        if let Some(t) = &self.cfg.security.tls_client {
            t.set_wall_clock(unix_secs);
        }
        #[cfg(not(feature = "tls"))]
        let _ = unix_secs;
    }

    fn send_api_versions(&mut self, conn: ConnId, version: i16, now: Instant) {
        // KIP-1242 (v5): the cluster and node this connection means to reach, both or neither,
        // so that a broker now at that address but not that node answers REBOOTSTRAP_REQUIRED.
        let Some(c) = self.conns.get_mut(&conn) else {
            return;
        };
        let check = self.cfg.cluster_check && self.cfg.rebootstrap;
        let (cluster_id, node_id) = match (&self.cluster_id, c.node()) {
            (Some(cluster), Some(node)) if check && !self.no_cluster_check.contains(&c.addr) => {
                (Some(cluster.clone()), node)
            }
            _ => (None, -1),
        };
        c.cluster_checked = cluster_id.is_some();
        let req = ApiVersionsRequest {
            client_software_name: SOFTWARE_NAME.into(),
            client_software_version: env!("CARGO_PKG_VERSION").into(),
            cluster_id,
            node_id,
            ..Default::default()
        };
        if self
            .write(
                conn,
                &req,
                version,
                Some(Tag::Handshake),
                self.cfg.request_timeout,
                now,
            )
            .is_err()
        {
            self.fail_connection(
                conn,
                now,
                |addr| RequestError::Disconnected { addr },
                Closing::Ours,
            );
        }
    }

    /// The adapter could not connect (refused, unreachable, DNS failure).
    pub fn handle_connect_failed(&mut self, conn: ConnId, error: ConnectError, now: Instant) {
        if let Some(c) = self.conns.get(&conn) {
            self.last_problem = stamp(now, format!("could not connect to {}: {error}", c.addr));
        }
        self.fail_connection(
            conn,
            now,
            |addr| RequestError::Disconnected { addr },
            Closing::AlreadyClosed,
        );
    }

    /// The peer closed the connection, or the socket failed.
    pub fn handle_closed(&mut self, conn: ConnId, now: Instant) {
        if let Some(c) = self.conns.get(&conn) {
            self.last_problem = stamp(
                now,
                if c.state == State::Ready {
                    format!("{} closed the connection", c.addr)
                } else if matches!(c.state, State::Tls { .. }) {
                    format!(
                        "{} closed the connection during the TLS handshake (is the listener \
                         SSL or SASL_SSL? see security.protocol)",
                        c.addr
                    )
                } else if c.sasl.is_some() {
                    format!(
                        "{} closed the connection during SASL authentication (is the listener \
                         SASL_PLAINTEXT or SASL_SSL? see security.protocol)",
                        c.addr
                    )
                } else {
                    format!(
                        "{} closed the connection during the ApiVersions handshake (is it a Kafka \
                     listener, and does it need TLS or SASL? see security.protocol)",
                        c.addr
                    )
                },
            );
            if c.state == State::Handshake && c.cluster_checked {
                // A broker that speaks ApiVersions v5 but cannot take its cluster check
                // (KIP-1242; Tansu 0.6 closes such a connection): asked without from now on,
                // as an older broker is. Without this a group coordinator on Tansu was never
                // reached.
                tracing::info!(
                    addr = %c.addr,
                    "the broker closed a handshake naming the cluster and node (KIP-1242); connecting without that check"
                );
                self.no_cluster_check.insert(c.addr.clone());
            }
        }
        self.fail_connection(
            conn,
            now,
            |addr| RequestError::Disconnected { addr },
            Closing::AlreadyClosed,
        );
    }

    /// The last connection problem seen (a refused connect, a timeout, a server that does not
    /// speak Kafka...), for errors and timeouts to name.
    pub fn last_problem(&self) -> Option<&str> {
        self.last_problem.as_ref().map(|(p, _)| p.as_str())
    }

    /// Whether a connection to a known node failed (refused, closed, timed out) since the
    /// last call: its leaderships may have moved, so metadata should be refreshed, as Java's
    /// network client asks on every disconnection.
    pub fn take_node_failure(&mut self) -> bool {
        std::mem::take(&mut self.node_failed)
    }

    /// Whether a coordinator connection to `node` failed (refused, closed, timed out) since
    /// this was last asked: the coordinator is then unknown, and found again at once, as
    /// Java's coordinator marks itself dead on a disconnect (otherwise a member reconnects to
    /// a killed coordinator's node until its session runs out; found on a 3-node Kafka,
    /// where `commit` blocked for about 42 s).
    pub fn take_coordinator_failure(&mut self, node: NodeId) -> bool {
        self.coordinator_failed.remove(&node)
    }

    /// What the network is waiting on now, when no problem was seen yet: the longest
    /// unanswered request (a server that accepts connections and never answers), or a
    /// connection still being set up. For a timeout to name when nothing failed outright.
    pub fn waiting_on(&self, now: Instant) -> Option<String> {
        let oldest = (self.conns.values())
            .filter_map(|c| c.in_flight.front().map(|f| (f.sent, f.api, &c.addr)))
            .min_by_key(|(sent, _, _)| *sent);
        if let Some((sent, api, addr)) = oldest {
            let waited = now.saturating_duration_since(sent).as_secs_f64();
            return Some(format!(
                "{addr} accepted the connection but has not answered {api:?} for {waited:.1} s (is it a Kafka broker, and is security.protocol right?)"
            ));
        }
        (self.conns.values())
            .find(|c| c.state != State::Ready)
            .map(|c| format!("the connection to {} is still being set up", c.addr))
    }

    /// [`Network::last_problem`], with when it was seen.
    pub fn last_problem_seen(&self) -> Option<(&str, Instant)> {
        self.last_problem.as_ref().map(|(p, at)| (p.as_str(), *at))
    }

    /// Whether a network action waits for the adapter.
    pub fn has_transmit(&self) -> bool {
        !self.transmits.is_empty()
    }

    /// The next network action for the adapter.
    pub fn poll_transmit(&mut self) -> Option<Transmit> {
        self.transmits.pop_front()
    }

    /// The next request outcome for the caller.
    pub fn poll_event(&mut self) -> Option<NetEvent<T>> {
        self.events.pop_front()
    }

    /// The client's tracing span (events of its inputs happen inside it).
    pub fn span(&self) -> &tracing::Span {
        &self.span
    }

    /// Adds the connection metrics to a snapshot: client-wide to `group`, per node to
    /// `node_group`.
    pub(crate) fn metrics(
        &self,
        out: &mut crate::metrics::Out<'_>,
        group: &'static str,
        node_group: &'static str,
    ) {
        self.metrics
            .snapshot(out, group, node_group, self.conns.len());
    }
}
