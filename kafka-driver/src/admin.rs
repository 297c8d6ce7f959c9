//! The admin handle and its driver session: cluster metadata, creating and deleting topics,
//! the group and offset operations (list, describe, offsets, delete, alter, list offsets),
//! and describing the cluster and its configurations.

use kafka_core::net::Machine as _;
use std::collections::BTreeMap;
use std::marker::PhantomData;

use futures_channel::{mpsc, oneshot};
use kafka_core::admin::{
    AdminError, AdminEvent, AdminResult, AlterConfigOp, ClusterDescription, ClusterMetadata,
    ConfigEntry, ConfigResource, GroupDescription, GroupListing, NewTopic, OffsetSpec, OpId,
    TopicPartition,
};
use kafka_core::config::{AdminConfig, ConfigError};
use kafka_core::Instant;

use crate::driver::{self, Session};
use crate::runtime::Runtime;

/// Starts an operation on the core.
type Start = Box<dyn FnOnce(&mut kafka_core::Admin, Instant) -> OpId + Send>;

/// What the handle asks of the driver.
pub(crate) enum Command {
    /// An operation to start on the core, and where its result goes.
    Op {
        start: Start,
        reply: oneshot::Sender<AdminResult>,
    },
    /// A metrics snapshot.
    Metrics(oneshot::Sender<kafka_core::metrics::MetricsSnapshot>),
}

/// Per-topic results of a create or delete, in request order.
pub type TopicResults = Vec<(String, Result<(), AdminError>)>;

/// A Kafka admin client. Nothing connects until the first call.
pub struct Admin<R> {
    commands: mpsc::UnboundedSender<Command>,
    _runtime: PhantomData<fn() -> R>,
}

impl<R> std::fmt::Debug for Admin<R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Admin").finish_non_exhaustive()
    }
}

fn stopped() -> AdminError {
    AdminError::Closed
}

impl<R: Runtime> Admin<R> {
    /// Starts an admin client's driver.
    pub fn new(config: AdminConfig) -> Self {
        let tokens = config.security.token_provider.clone();
        let (tx, rx) = mpsc::unbounded();
        let session = AdminSession {
            core: kafka_core::Admin::new(config),
            replies: BTreeMap::new(),
            finished: false,
        };
        R::spawn(driver::run::<R, _>(session, rx, tokens));
        Admin {
            commands: tx,
            _runtime: PhantomData,
        }
    }

    /// From Java-style settings, for example `[("bootstrap.servers", "localhost:9092")]`.
    pub fn from_map<K: AsRef<str>, V: AsRef<str>>(
        settings: impl IntoIterator<Item = (K, V)>,
    ) -> Result<Self, ConfigError> {
        Ok(Self::new(AdminConfig::from_map(settings)?))
    }

    async fn call(
        &self,
        start: impl FnOnce(&mut kafka_core::Admin, Instant) -> OpId + Send + 'static,
    ) -> Option<AdminResult> {
        let (reply, rx) = oneshot::channel();
        let cmd = Command::Op {
            start: Box::new(start),
            reply,
        };
        self.commands.unbounded_send(cmd).ok()?;
        rx.await.ok()
    }

    /// Every metric now, with the Java admin client's names (`admin-client-metrics`,
    /// `admin-client-node-metrics`); empty once the client stopped.
    pub async fn metrics(&self) -> kafka_core::metrics::MetricsSnapshot {
        let (reply, rx) = oneshot::channel();
        if self
            .commands
            .unbounded_send(Command::Metrics(reply))
            .is_err()
        {
            return Default::default();
        }
        rx.await.unwrap_or_default()
    }

    /// Describes the cluster, with `topics` (or every topic when `None`).
    pub async fn metadata(&self, topics: Option<&[&str]>) -> Result<ClusterMetadata, AdminError> {
        let topics = topics.map(|ts| ts.iter().map(|t| (*t).to_owned()).collect());
        match self.call(move |a, now| a.metadata(topics, now)).await {
            Some(AdminResult::Metadata(r)) => r,
            _ => Err(stopped()),
        }
    }

    /// Creates topics; each gets its own result.
    pub async fn create_topics(&self, topics: Vec<NewTopic>) -> TopicResults {
        let names: Vec<String> = topics.iter().map(|t| t.name.clone()).collect();
        match self.call(move |a, now| a.create_topics(topics, now)).await {
            Some(AdminResult::Topics(r)) => r,
            _ => names.into_iter().map(|n| (n, Err(stopped()))).collect(),
        }
    }

    /// The groups the cluster's brokers coordinate, by id.
    pub async fn list_groups(&self) -> Result<Vec<GroupListing>, AdminError> {
        match self.call(|a, now| a.list_groups(now)).await {
            Some(AdminResult::Groups(r)) => r,
            _ => Err(stopped()),
        }
    }

    /// Describes a group: state, assignor, members and their partitions.
    pub async fn describe_group(&self, group: &str) -> Result<GroupDescription, AdminError> {
        let group = group.to_owned();
        match self.call(move |a, now| a.describe_group(&group, now)).await {
            Some(AdminResult::GroupDescription(r)) => r,
            _ => Err(stopped()),
        }
    }

    /// A group's committed offsets, per partition (partitions without one left out).
    pub async fn list_group_offsets(
        &self,
        group: &str,
    ) -> Result<BTreeMap<TopicPartition, i64>, AdminError> {
        let group = group.to_owned();
        match self
            .call(move |a, now| a.list_group_offsets(&group, now))
            .await
        {
            Some(AdminResult::GroupOffsets(r)) => r,
            _ => Err(stopped()),
        }
    }

    /// Deletes a group; refused while it has members.
    pub async fn delete_group(&self, group: &str) -> Result<(), AdminError> {
        let group = group.to_owned();
        match self.call(move |a, now| a.delete_group(&group, now)).await {
            Some(AdminResult::Done(r)) => r,
            _ => Err(stopped()),
        }
    }

    /// Sets a group's committed offsets; refused with [`AdminError::GroupNotEmpty`] while it
    /// has members.
    pub async fn alter_group_offsets(
        &self,
        group: &str,
        offsets: BTreeMap<TopicPartition, i64>,
    ) -> Result<(), AdminError> {
        let group = group.to_owned();
        match self
            .call(move |a, now| a.alter_group_offsets(&group, offsets, now))
            .await
        {
            Some(AdminResult::Done(r)) => r,
            _ => Err(stopped()),
        }
    }

    /// Partitions' offsets: the earliest, the latest, or the first at a timestamp; each
    /// partition with its own result.
    pub async fn list_offsets(
        &self,
        partitions: Vec<TopicPartition>,
        spec: OffsetSpec,
    ) -> BTreeMap<TopicPartition, Result<i64, AdminError>> {
        let copy = partitions.clone();
        match self
            .call(move |a, now| a.list_offsets(partitions, spec, now))
            .await
        {
            Some(AdminResult::Offsets(r)) => r,
            _ => copy.into_iter().map(|tp| (tp, Err(stopped()))).collect(),
        }
    }

    /// Deletes partitions' records before these offsets (-1: every record up to the high
    /// watermark), as Java's `deleteRecords`; each partition's result is its new log start
    /// offset.
    pub async fn delete_records(
        &self,
        before: BTreeMap<TopicPartition, i64>,
    ) -> BTreeMap<TopicPartition, Result<i64, AdminError>> {
        let copy: Vec<TopicPartition> = before.keys().cloned().collect();
        match self.call(move |a, now| a.delete_records(before, now)).await {
            Some(AdminResult::Offsets(r)) => r,
            _ => copy.into_iter().map(|tp| (tp, Err(stopped()))).collect(),
        }
    }

    /// Describes the cluster: its id, controller and brokers (DescribeCluster).
    pub async fn describe_cluster(&self) -> Result<ClusterDescription, AdminError> {
        match self.call(|a, now| a.describe_cluster(now)).await {
            Some(AdminResult::Cluster(r)) => r,
            _ => Err(stopped()),
        }
    }

    /// A topic's or a broker's configuration, every key with its value and source, sorted by
    /// key; sensitive values are withheld.
    pub async fn describe_configs(
        &self,
        resource: ConfigResource,
    ) -> Result<Vec<ConfigEntry>, AdminError> {
        match self
            .call(move |a, now| a.describe_configs(resource, now))
            .await
        {
            Some(AdminResult::Configs(r)) => r,
            _ => Err(stopped()),
        }
    }

    /// Changes a topic's or a broker's configuration key by key (incrementally: keys not
    /// named keep their values), as Java's `incrementalAlterConfigs`.
    pub async fn alter_configs(
        &self,
        resource: ConfigResource,
        ops: Vec<AlterConfigOp>,
    ) -> Result<(), AdminError> {
        match self
            .call(move |a, now| a.alter_configs(resource, ops, now))
            .await
        {
            Some(AdminResult::Done(r)) => r,
            _ => Err(stopped()),
        }
    }

    /// Creates one topic.
    pub async fn create_topic(&self, topic: NewTopic) -> Result<(), AdminError> {
        first(self.create_topics(vec![topic]).await)
    }

    /// Raises topics' partition counts to these totals; each topic gets its own result
    /// (INVALID_PARTITIONS for a count not above the current one).
    pub async fn create_partitions(&self, topics: &[(&str, i32)]) -> TopicResults {
        let topics: Vec<(String, i32)> =
            topics.iter().map(|(t, n)| ((*t).to_owned(), *n)).collect();
        let names: Vec<String> = topics.iter().map(|t| t.0.clone()).collect();
        match self
            .call(move |a, now| a.create_partitions(topics, now))
            .await
        {
            Some(AdminResult::Topics(r)) => r,
            _ => names.into_iter().map(|n| (n, Err(stopped()))).collect(),
        }
    }

    /// Deletes topics by name; each gets its own result.
    pub async fn delete_topics(&self, names: &[&str]) -> TopicResults {
        let names: Vec<String> = names.iter().map(|n| (*n).to_owned()).collect();
        let copy = names.clone();
        match self.call(move |a, now| a.delete_topics(names, now)).await {
            Some(AdminResult::Topics(r)) => r,
            _ => copy.into_iter().map(|n| (n, Err(stopped()))).collect(),
        }
    }

    /// Deletes one topic.
    pub async fn delete_topic(&self, name: &str) -> Result<(), AdminError> {
        first(self.delete_topics(&[name]).await)
    }
}

fn first(results: TopicResults) -> Result<(), AdminError> {
    results
        .into_iter()
        .next()
        .map_or(Err(stopped()), |(_, r)| r)
}

struct AdminSession {
    core: kafka_core::Admin,
    replies: BTreeMap<OpId, oneshot::Sender<AdminResult>>,
    finished: bool,
}

impl Session for AdminSession {
    type Command = Command;
    type Core = kafka_core::Admin;

    fn with_core<T>(&mut self, f: impl FnOnce(&mut kafka_core::Admin) -> T) -> T {
        f(&mut self.core)
    }

    fn command(&mut self, cmd: Command, now: Instant) {
        match cmd {
            Command::Op { start, reply } => {
                let op = start(&mut self.core, now);
                self.replies.insert(op, reply);
            }
            Command::Metrics(reply) => {
                let _ = reply.send(self.core.metrics(now));
            }
        }
    }

    fn event(&mut self, ev: AdminEvent, _now: Instant) {
        if let Some(reply) = self.replies.remove(&ev.op) {
            let _ = reply.send(ev.result);
        }
    }

    fn detached(&mut self, _now: Instant) {
        self.core.abort();
        self.finished = true;
    }

    fn finished(&self) -> bool {
        self.finished
    }
}
