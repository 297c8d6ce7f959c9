//! The admin handle and its driver session: cluster metadata, and creating and deleting
//! topics.

use std::collections::BTreeMap;
use std::marker::PhantomData;

use futures_channel::{mpsc, oneshot};
use kafka_core::admin::{AdminError, AdminEvent, AdminResult, ClusterMetadata, NewTopic, OpId};
use kafka_core::config::{AdminConfig, ConfigError};
use kafka_core::Instant;

use crate::driver::{self, Session};
use crate::runtime::Runtime;

pub(crate) enum Command {
    Metadata(Option<Vec<String>>, oneshot::Sender<AdminResult>),
    Create(Vec<NewTopic>, oneshot::Sender<AdminResult>),
    Delete(Vec<String>, oneshot::Sender<AdminResult>),
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
        cmd: impl FnOnce(oneshot::Sender<AdminResult>) -> Command,
    ) -> Option<AdminResult> {
        let (tx, rx) = oneshot::channel();
        self.commands.unbounded_send(cmd(tx)).ok()?;
        rx.await.ok()
    }

    /// Describes the cluster, with `topics` (or every topic when `None`).
    pub async fn metadata(&self, topics: Option<&[&str]>) -> Result<ClusterMetadata, AdminError> {
        let topics = topics.map(|ts| ts.iter().map(|t| (*t).to_owned()).collect());
        match self.call(|tx| Command::Metadata(topics, tx)).await {
            Some(AdminResult::Metadata(r)) => r,
            _ => Err(stopped()),
        }
    }

    /// Creates topics; each gets its own result.
    pub async fn create_topics(&self, topics: Vec<NewTopic>) -> TopicResults {
        let names: Vec<String> = topics.iter().map(|t| t.name.clone()).collect();
        match self.call(|tx| Command::Create(topics, tx)).await {
            Some(AdminResult::Topics(r)) => r,
            _ => names.into_iter().map(|n| (n, Err(stopped()))).collect(),
        }
    }

    /// Creates one topic.
    pub async fn create_topic(&self, topic: NewTopic) -> Result<(), AdminError> {
        first(self.create_topics(vec![topic]).await)
    }

    /// Deletes topics by name; each gets its own result.
    pub async fn delete_topics(&self, names: &[&str]) -> TopicResults {
        let names: Vec<String> = names.iter().map(|n| (*n).to_owned()).collect();
        let copy = names.clone();
        match self.call(|tx| Command::Delete(names, tx)).await {
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
        let (op, reply) = match cmd {
            Command::Metadata(topics, reply) => (self.core.metadata(topics, now), reply),
            Command::Create(topics, reply) => (self.core.create_topics(topics, now), reply),
            Command::Delete(names, reply) => (self.core.delete_topics(names, now), reply),
        };
        self.replies.insert(op, reply);
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
