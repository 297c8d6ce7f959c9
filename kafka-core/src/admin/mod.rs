//! The sans-IO admin client: cluster metadata, creating and deleting topics, adding partitions,
//! the group and offset operations of `groups`, and describing the cluster and describing and
//! altering configurations (`configs`).
//!
//! - Metadata goes to the least-loaded node; CreateTopics and DeleteTopics go to the
//!   controller that metadata names, as does CreatePartitions (NOT_CONTROLLER refreshes it and
//!   retries); group
//!   operations to the group's coordinator; ListGroups to every broker; ListOffsets to each
//!   partition's leader.
//! - Each operation is bounded by `default.api.timeout.ms`, retries included; each request by
//!   `request.timeout.ms`. Retriable errors retry with backoff, per topic.
//! - Every operation ends in exactly one [`AdminEvent`].

use std::collections::{BTreeMap, BTreeSet, VecDeque};

use kafka_proto::api::ResponseBody;
use kafka_proto::messages::create_partitions_request::{
    CreatePartitionsRequest, CreatePartitionsTopic,
};
use kafka_proto::messages::create_topics_request::{
    CreatableTopic, CreatableTopicConfig, CreateTopicsRequest,
};
use kafka_proto::messages::delete_topics_request::{DeleteTopicState, DeleteTopicsRequest};
use kafka_proto::messages::metadata_request::{MetadataRequest, MetadataRequestTopic};
use kafka_proto::messages::metadata_response::MetadataResponse;
use kafka_proto::ErrorCode;
use uuid::Uuid;

mod answers;
mod configs;
mod groups;

pub use configs::{AlterConfigOp, ClusterDescription, ConfigEntry, ConfigResource, ConfigSource};
use configs::{SingleOp, SingleRequest};
use groups::{GroupAction, GroupOp, ListGroupsOp, ListOffsetsOp};
pub use groups::{GroupDescription, GroupListing, MemberDescription, TopicPartition};
// Shared with the consumer's lookups, so defined below both clients; their paths here stay.
pub use crate::lookup::{AdminError, OffsetSpec};

use crate::backoff::Backoff;
use crate::config::{AdminConfig, HostPort};
use crate::metadata::broker_addresses;
use crate::net::{ConnId, NetConfig, NetEvent, Network, NodeId, Purpose, RequestSendError};
use crate::rng::Rng;
use crate::time::Instant;

/// An operation's id, returned when it starts and repeated in its [`AdminEvent`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct OpId(pub u64);

/// A topic to create.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewTopic {
    /// Its name.
    pub name: String,
    /// Its partition count, or -1 for the broker's default.
    pub partitions: i32,
    /// Its replication factor, or -1 for the broker's default.
    pub replication_factor: i16,
    /// Topic configs (`cleanup.policy`, `retention.ms`, ...).
    pub configs: Vec<(String, String)>,
}

impl NewTopic {
    /// A topic with `partitions` partitions and the broker's default replication.
    pub fn new(name: impl Into<String>, partitions: i32) -> Self {
        NewTopic {
            name: name.into(),
            partitions,
            replication_factor: -1,
            configs: Vec::new(),
        }
    }
}

/// A broker, as metadata lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BrokerMetadata {
    /// Its node id.
    pub id: NodeId,
    /// Its advertised address.
    pub addr: HostPort,
    /// Its rack, if configured.
    pub rack: Option<String>,
}

/// A partition, as metadata lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PartitionMetadata {
    /// Its index.
    pub partition: i32,
    /// Its leader, if it has one.
    pub leader: Option<NodeId>,
    /// The leader epoch (-1 if the broker does not say).
    pub leader_epoch: i32,
    /// Replica node ids.
    pub replicas: Vec<NodeId>,
    /// In-sync replica node ids.
    pub isr: Vec<NodeId>,
    /// A partition error, such as LEADER_NOT_AVAILABLE.
    pub error: Option<ErrorCode>,
}

/// A topic, as metadata lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TopicMetadata {
    /// Its name.
    pub name: String,
    /// Its id (nil from brokers before Kafka 2.8).
    pub id: Uuid,
    /// Whether it is internal (`__consumer_offsets`).
    pub internal: bool,
    /// A topic error, such as UNKNOWN_TOPIC_OR_PARTITION.
    pub error: Option<ErrorCode>,
    /// Its partitions, by index.
    pub partitions: Vec<PartitionMetadata>,
}

/// The cluster, as one Metadata response describes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClusterMetadata {
    /// The cluster id, if the broker reports one.
    pub cluster_id: Option<String>,
    /// The controller's node id, if known.
    pub controller: Option<NodeId>,
    /// The brokers, by id.
    pub brokers: Vec<BrokerMetadata>,
    /// The topics asked for (or all of them), by name.
    pub topics: Vec<TopicMetadata>,
}

impl ClusterMetadata {
    fn from_response(r: &MetadataResponse) -> Self {
        let mut brokers: Vec<BrokerMetadata> = r
            .brokers
            .iter()
            .filter_map(|b| {
                Some(BrokerMetadata {
                    id: b.node_id,
                    addr: HostPort::new(b.host.clone(), u16::try_from(b.port).ok()?),
                    rack: b.rack.clone(),
                })
            })
            .collect();
        brokers.sort_by_key(|b| b.id);
        let mut topics: Vec<TopicMetadata> = r
            .topics
            .iter()
            .map(|t| {
                let mut partitions: Vec<PartitionMetadata> = t
                    .partitions
                    .iter()
                    .map(|p| PartitionMetadata {
                        partition: p.partition_index,
                        leader: (p.leader_id >= 0).then_some(p.leader_id),
                        leader_epoch: p.leader_epoch,
                        replicas: p.replica_nodes.clone(),
                        isr: p.isr_nodes.clone(),
                        error: ErrorCode::from_code(p.error_code),
                    })
                    .collect();
                partitions.sort_by_key(|p| p.partition);
                TopicMetadata {
                    name: t.name.clone().unwrap_or_default(),
                    id: t.topic_id,
                    internal: t.is_internal,
                    error: ErrorCode::from_code(t.error_code),
                    partitions,
                }
            })
            .collect();
        topics.sort_by(|a, b| a.name.cmp(&b.name));
        ClusterMetadata {
            cluster_id: r.cluster_id.clone(),
            controller: (r.controller_id >= 0).then_some(r.controller_id),
            brokers,
            topics,
        }
    }
}

/// What an operation produced.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum AdminResult {
    /// A metadata request's answer.
    Metadata(Result<ClusterMetadata, AdminError>),
    /// Per-topic results of a create or delete, in request order.
    Topics(Vec<(String, Result<(), AdminError>)>),
    /// The groups every broker coordinates.
    Groups(Result<Vec<GroupListing>, AdminError>),
    /// A group's description.
    GroupDescription(Result<GroupDescription, AdminError>),
    /// A group's committed offsets, per partition (partitions without one left out).
    GroupOffsets(Result<BTreeMap<TopicPartition, i64>, AdminError>),
    /// A group deleted, or its offsets altered.
    Done(Result<(), AdminError>),
    /// Partitions' offsets listed, each with its result.
    Offsets(BTreeMap<TopicPartition, Result<i64, AdminError>>),
    /// The cluster described.
    Cluster(Result<ClusterDescription, AdminError>),
    /// A resource's configuration, sorted by key.
    Configs(Result<Vec<ConfigEntry>, AdminError>),
}

/// An operation ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AdminEvent {
    /// Which.
    pub op: OpId,
    /// How.
    pub result: AdminResult,
}

/// What the admin client asks of its driver.
pub type Output = crate::net::Output<AdminEvent>;

/// Request tags, in a module of their own: `Machine`'s hidden `Tag` names this type, so it
/// is public there, and out of reach outside the crate.
mod tag {
    #[allow(unused_imports)]
    use super::*;

    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub enum Tag {
        /// A refresh to learn the controller.
        Refresh,
        Op(OpId),
        /// An operation's FindCoordinator.
        Find(OpId),
        /// An operation's metadata (the brokers, or the partitions' leaders).
        Meta(OpId),
        /// An operation's request to one broker of several.
        Node(OpId, NodeId),
    }
}
use tag::Tag;

#[derive(Debug, Clone)]
enum Kind {
    Metadata(Option<Vec<String>>),
    Create(Vec<NewTopic>, i32),
    Delete(Vec<String>, i32),
    /// Topics and their new partition counts.
    Partitions(Vec<(String, i32)>, i32),
    ListGroups(ListGroupsOp),
    Group(GroupOp),
    ListOffsets(ListOffsetsOp),
    /// One request to any broker, or to a given one.
    Single(SingleOp),
}

#[derive(Debug, Clone)]
struct Op {
    kind: Kind,
    deadline: Instant,
    in_flight: bool,
    /// The brokers with a request of this operation in flight (ListGroups, ListOffsets).
    at: BTreeSet<NodeId>,
    retry_at: Option<Instant>,
    failures: u32,
    last_problem: Option<String>,
    /// Per-topic results so far, by topic name (create/delete only).
    done: BTreeMap<String, Result<(), AdminError>>,
}

/// The admin client state machine.
#[derive(Debug)]
pub struct Admin {
    cfg: AdminConfig,
    net: Network<Tag>,
    controller: Option<NodeId>,
    refreshing: bool,
    next_op: u64,
    ops: BTreeMap<OpId, Op>,
    events: VecDeque<AdminEvent>,
    backoff: Backoff,
    rng: Rng,
    now: Instant,
}

impl crate::net::Machine for Admin {
    type Event = AdminEvent;
    type Tag = Tag;

    fn parts(
        &mut self,
        _: crate::net::Sealed,
    ) -> (
        &mut Network<Tag>,
        &mut std::collections::VecDeque<AdminEvent>,
    ) {
        (&mut self.net, &mut self.events)
    }

    fn parts_ref(
        &self,
        _: crate::net::Sealed,
    ) -> (&Network<Tag>, &std::collections::VecDeque<AdminEvent>) {
        (&self.net, &self.events)
    }

    fn step(&mut self, now: Instant, _: crate::net::Sealed) {
        self.drive(now);
    }

    /// When to call [`Admin::handle_timeout`] next. A pure query.
    fn poll_timeout(&self) -> Option<Instant> {
        // A retry time that passed is not a wake-up: the request waits for a connection,
        // whose events wake the client (returned, it made the driver spin; found by the
        // simulation, seed 1169).
        let ops = self
            .ops
            .values()
            .flat_map(|o| [Some(o.deadline), o.retry_at.filter(|t| *t > self.now)])
            .flatten();
        self.net.poll_timeout().into_iter().chain(ops).min()
    }

    /// Every metric at `now`, with the Java admin client's names (`admin-client-metrics`,
    /// `admin-client-node-metrics`): its connections and requests.
    fn metrics(&self, now: Instant) -> crate::metrics::MetricsSnapshot {
        let (window, id) = (self.cfg.metrics.window, &self.cfg.client_id);
        crate::metrics::MetricsSnapshot::build(now, window, id, |out| {
            self.net
                .metrics(out, "admin-client-metrics", "admin-client-node-metrics")
        })
    }
}

impl Admin {
    /// An admin client. Nothing connects until the first operation.
    pub fn new(cfg: AdminConfig) -> Self {
        crate::config::warn_notes("admin", cfg.notes());
        Admin {
            net: Network::new(NetConfig::from_admin(&cfg), cfg.bootstrap_servers.clone()),
            controller: None,
            refreshing: false,
            next_op: 0,
            ops: BTreeMap::new(),
            events: VecDeque::new(),
            backoff: Backoff::new(cfg.retry_backoff, cfg.retry_backoff_max),
            rng: Rng::new(cfg.random_seed ^ 0x6164_6d69),
            now: Instant::ZERO,
            cfg,
        }
    }

    /// Describes the cluster: brokers, controller, and `topics` (all of them when `None`).
    pub fn metadata(&mut self, topics: Option<Vec<String>>, now: Instant) -> OpId {
        self.start(Kind::Metadata(topics), now)
    }

    /// Creates topics; the broker waits up to `timeout_ms` for them to exist.
    pub fn create_topics(&mut self, topics: Vec<NewTopic>, now: Instant) -> OpId {
        let timeout = self.broker_timeout();
        self.start(Kind::Create(topics, timeout), now)
    }

    /// Deletes topics by name.
    pub fn delete_topics(&mut self, topics: Vec<String>, now: Instant) -> OpId {
        let timeout = self.broker_timeout();
        self.start(Kind::Delete(topics, timeout), now)
    }

    /// Raises topics' partition counts to these totals (CreatePartitions, at the controller).
    pub fn create_partitions(&mut self, topics: Vec<(String, i32)>, now: Instant) -> OpId {
        let timeout = self.broker_timeout();
        self.start(Kind::Partitions(topics, timeout), now)
    }

    /// Lists the groups every broker coordinates.
    pub fn list_groups(&mut self, now: Instant) -> OpId {
        self.start(Kind::ListGroups(ListGroupsOp::default()), now)
    }

    /// Describes a group: its state, protocol and members with their assignments.
    pub fn describe_group(&mut self, group: &str, now: Instant) -> OpId {
        self.group_op(group, GroupAction::Describe, now)
    }

    /// A group's committed offsets.
    pub fn list_group_offsets(&mut self, group: &str, now: Instant) -> OpId {
        self.group_op(group, GroupAction::Offsets, now)
    }

    /// Deletes a group (it must have no members).
    pub fn delete_group(&mut self, group: &str, now: Instant) -> OpId {
        self.group_op(group, GroupAction::Delete, now)
    }

    /// Sets a group's committed offsets (it must have no members: [`AdminError::GroupNotEmpty`]
    /// otherwise).
    pub fn alter_group_offsets(
        &mut self,
        group: &str,
        offsets: BTreeMap<TopicPartition, i64>,
        now: Instant,
    ) -> OpId {
        self.group_op(group, GroupAction::Alter(offsets), now)
    }

    /// Lists partitions' offsets: the earliest, the latest, or the first at a timestamp.
    pub fn list_offsets(
        &mut self,
        partitions: Vec<TopicPartition>,
        spec: OffsetSpec,
        now: Instant,
    ) -> OpId {
        let op = ListOffsetsOp {
            spec,
            delete_before: None,
            partitions,
            leaders: None,
            results: BTreeMap::new(),
        };
        self.start(Kind::ListOffsets(op), now)
    }

    /// Deletes partitions' records before these offsets (-1: every record, up to the high
    /// watermark), at their leaders (DeleteRecords); each partition's result is its new log
    /// start offset.
    pub fn delete_records(&mut self, before: BTreeMap<TopicPartition, i64>, now: Instant) -> OpId {
        let op = ListOffsetsOp {
            spec: OffsetSpec::Earliest,
            partitions: before.keys().cloned().collect(),
            delete_before: Some(before),
            leaders: None,
            results: BTreeMap::new(),
        };
        self.start(Kind::ListOffsets(op), now)
    }

    /// Describes the cluster (DescribeCluster): its id, controller and brokers.
    pub fn describe_cluster(&mut self, now: Instant) -> OpId {
        self.start(Kind::Single(SingleOp::DescribeCluster), now)
    }

    /// A topic's or a broker's configuration (DescribeConfigs), every key with its value and
    /// source; sensitive values are withheld.
    pub fn describe_configs(&mut self, resource: ConfigResource, now: Instant) -> OpId {
        self.start(Kind::Single(SingleOp::DescribeConfigs(resource)), now)
    }

    /// Changes a topic's or a broker's configuration key by key (IncrementalAlterConfigs):
    /// keys not named keep their values.
    pub fn alter_configs(
        &mut self,
        resource: ConfigResource,
        ops: Vec<AlterConfigOp>,
        now: Instant,
    ) -> OpId {
        self.start(Kind::Single(SingleOp::AlterConfigs(resource, ops)), now)
    }

    fn group_op(&mut self, group: &str, action: GroupAction, now: Instant) -> OpId {
        let op = GroupOp {
            group: group.to_owned(),
            action,
            coordinator: None,
            classic: false,
            empty_consumer: None,
        };
        self.start(Kind::Group(op), now)
    }

    /// Fails every operation still running, at once.
    pub fn abort(&mut self) {
        for (op, o) in std::mem::take(&mut self.ops) {
            self.finish(op, o, AdminError::Closed);
        }
    }

    /// How long the broker may take, inside our own request timeout.
    fn broker_timeout(&self) -> i32 {
        i32::try_from(self.cfg.request_timeout.as_millis()).unwrap_or(i32::MAX)
    }

    fn start(&mut self, kind: Kind, now: Instant) -> OpId {
        let op = OpId(self.next_op);
        self.next_op += 1;
        self.ops.insert(
            op,
            Op {
                kind,
                deadline: now + self.cfg.default_api_timeout,
                in_flight: false,
                at: BTreeSet::new(),
                retry_at: None,
                failures: 0,
                last_problem: None,
                done: BTreeMap::new(),
            },
        );
        self.drive(now);
        op
    }

    fn drive(&mut self, now: Instant) {
        self.now = self.now.max(now);
        let now = self.now;
        while let Some(e) = self.net.poll_event() {
            self.on_event(e, now);
        }
        if let Some(e) = self.net.take_auth_failure() {
            // Operations waiting for a connection fail; one with a request in flight is
            // answered on a connection that did authenticate.
            let waiting: Vec<OpId> = self
                .ops
                .iter()
                .filter(|(_, o)| !o.in_flight)
                .map(|(id, _)| *id)
                .collect();
            for id in waiting {
                let o = self.ops.remove(&id).expect("listed above");
                self.finish(id, o, AdminError::Authentication(e.clone()));
            }
        }
        // An operation ends at its deadline even with a request in flight (whose answer is
        // then ignored): the caller hears within default.api.timeout.ms, as in Java.
        let expired: Vec<OpId> = self
            .ops
            .iter()
            .filter(|(_, o)| o.deadline <= now)
            .map(|(id, _)| *id)
            .collect();
        for id in expired {
            let o = self.ops.remove(&id).expect("listed above");
            let last = o
                .last_problem
                .clone()
                .or_else(|| self.net.last_problem().map(str::to_owned));
            self.finish(id, o, AdminError::Timeout { last });
        }
        let ids: Vec<OpId> = self.ops.keys().copied().collect();
        for id in ids {
            self.try_send(id, now);
        }
    }

    fn try_send(&mut self, id: OpId, now: Instant) {
        let o = &self.ops[&id];
        if o.in_flight || o.retry_at.is_some_and(|t| t > now) {
            return;
        }
        if matches!(
            o.kind,
            Kind::ListGroups(_) | Kind::Group(_) | Kind::ListOffsets(_)
        ) {
            return self.try_send_more(id, now);
        }
        let done: Vec<String> = o.done.keys().cloned().collect();
        let open = |name: &String| !done.contains(name);
        let sent = match o.kind.clone() {
            Kind::Single(op) => {
                let conn = match op.broker() {
                    None => self.net.least_loaded(now),
                    Some(node) => self.node_conn(node, now),
                };
                let Some(conn) = conn else {
                    return;
                };
                match op.request() {
                    SingleRequest::Cluster(r) => self.net.send(conn, &r, Tag::Op(id), now),
                    SingleRequest::Describe(r) => self.net.send(conn, &r, Tag::Op(id), now),
                    SingleRequest::Alter(r) => self.net.send(conn, &r, Tag::Op(id), now),
                }
            }
            Kind::Metadata(topics) => {
                let Some(conn) = self.net.least_loaded(now) else {
                    return;
                };
                let req = metadata_request(topics);
                self.net.send(conn, &req, Tag::Op(id), now)
            }
            Kind::Create(topics, timeout_ms) => {
                let Some(conn) = self.controller_conn(now) else {
                    return;
                };
                let req = create_topics_request(&topics, open, timeout_ms);
                self.net.send(conn, &req, Tag::Op(id), now)
            }
            Kind::ListGroups(_) | Kind::Group(_) | Kind::ListOffsets(_) => return,
            Kind::Partitions(topics, timeout_ms) => {
                let Some(conn) = self.controller_conn(now) else {
                    return;
                };
                let req = create_partitions_request(&topics, open, timeout_ms);
                self.net.send(conn, &req, Tag::Op(id), now)
            }
            Kind::Delete(names, timeout_ms) => {
                let Some(conn) = self.controller_conn(now) else {
                    return;
                };
                let names: Vec<String> = names.into_iter().filter(open).collect();
                let req = delete_topics_request(names, timeout_ms);
                self.net.send(conn, &req, Tag::Op(id), now)
            }
        };
        match sent {
            Ok(_) => self.ops.get_mut(&id).expect("exists").in_flight = true,
            Err(RequestSendError::Version(e)) => {
                let o = self.ops.remove(&id).expect("exists");
                self.finish(id, o, AdminError::Unsupported(e));
            }
            Err(e) => self.retry(id, e.to_string(), now),
        }
    }

    /// A given broker's connection, learning the brokers first if needed.
    fn node_conn(&mut self, node: NodeId, now: Instant) -> Option<ConnId> {
        if self.net.nodes().contains_key(&node) {
            return self.net.ready(node, Purpose::Data, now);
        }
        self.refresh(now);
        None
    }

    /// The controller's connection, learning who it is first if needed.
    fn controller_conn(&mut self, now: Instant) -> Option<ConnId> {
        match self.controller {
            Some(node) => self.node_conn(node, now),
            None => {
                self.refresh(now);
                None
            }
        }
    }

    /// Asks any broker for the brokers and the controller, unless a refresh is in flight.
    fn refresh(&mut self, now: Instant) {
        if self.refreshing {
            return;
        }
        if let Some(conn) = self.net.least_loaded(now) {
            let req = metadata_request(Some(Vec::new()));
            if self.net.send(conn, &req, Tag::Refresh, now).is_ok() {
                self.refreshing = true;
            }
        }
    }

    fn learn(&mut self, resp: &MetadataResponse, now: Instant) {
        self.net.set_cluster_id(resp.cluster_id.as_deref());
        let nodes: Vec<(NodeId, HostPort)> = broker_addresses(resp).collect();
        if !nodes.is_empty() {
            self.net.update_nodes(nodes, now);
        }
        self.controller = (resp.controller_id >= 0).then_some(resp.controller_id);
        if self.controller.is_none() {
            // Brokers without a controller id (Metadata v0): any broker will do.
            self.controller = self.net.nodes().keys().next().copied();
        }
    }
}

fn metadata_request(topics: Option<Vec<String>>) -> MetadataRequest {
    MetadataRequest {
        topics: topics.map(|ts| {
            ts.into_iter()
                .map(|t| MetadataRequestTopic {
                    name: Some(t),
                    ..Default::default()
                })
                .collect()
        }),
        allow_auto_topic_creation: false,
        ..Default::default()
    }
}

/// CreateTopics for the topics `open` still names (not yet answered).
fn create_topics_request(
    topics: &[NewTopic],
    open: impl Fn(&String) -> bool,
    timeout_ms: i32,
) -> CreateTopicsRequest {
    CreateTopicsRequest {
        topics: (topics.iter())
            .filter(|t| open(&t.name))
            .map(|t| CreatableTopic {
                name: t.name.clone(),
                num_partitions: t.partitions,
                replication_factor: t.replication_factor,
                assignments: Vec::new(),
                configs: (t.configs.iter())
                    .map(|(k, v)| CreatableTopicConfig {
                        name: k.clone(),
                        value: Some(v.clone()),
                        ..Default::default()
                    })
                    .collect(),
                ..Default::default()
            })
            .collect(),
        timeout_ms,
        validate_only: false,
        ..Default::default()
    }
}

/// CreatePartitions for the topics `open` still names.
fn create_partitions_request(
    topics: &[(String, i32)],
    open: impl Fn(&String) -> bool,
    timeout_ms: i32,
) -> CreatePartitionsRequest {
    CreatePartitionsRequest {
        topics: (topics.iter())
            .filter(|t| open(&t.0))
            .map(|(name, count)| CreatePartitionsTopic {
                name: name.clone(),
                count: *count,
                assignments: None,
                ..Default::default()
            })
            .collect(),
        timeout_ms,
        validate_only: false,
        ..Default::default()
    }
}

/// DeleteTopics by name. v6 names topics in `topics`, older versions in `topic_names`; the
/// encoder writes whichever the negotiated version has.
fn delete_topics_request(names: Vec<String>, timeout_ms: i32) -> DeleteTopicsRequest {
    DeleteTopicsRequest {
        topics: (names.iter())
            .map(|n| DeleteTopicState {
                name: Some(n.clone()),
                topic_id: Uuid::nil(),
                ..Default::default()
            })
            .collect(),
        topic_names: names,
        timeout_ms,
        ..Default::default()
    }
}
