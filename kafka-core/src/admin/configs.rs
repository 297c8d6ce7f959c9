//! The admin client's one-request operations beyond topics and groups: describing the
//! cluster (DescribeCluster), and describing and incrementally altering topic and broker
//! configurations (DescribeConfigs, IncrementalAlterConfigs). A topic's configuration goes to
//! any broker; a broker's to that broker, as Java sends it (a broker answers only for itself).

use kafka_proto::api::ResponseBody;
use kafka_proto::messages::describe_cluster_request::DescribeClusterRequest;
use kafka_proto::messages::describe_configs_request::{
    DescribeConfigsRequest, DescribeConfigsResource,
};
use kafka_proto::messages::incremental_alter_configs_request::{
    AlterConfigsResource, AlterableConfig, IncrementalAlterConfigsRequest,
};
use kafka_proto::ErrorCode;

use super::{AdminError, AdminResult, BrokerMetadata, NodeId};
use crate::config::HostPort;

/// What a configuration belongs to.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
#[non_exhaustive]
pub enum ConfigResource {
    /// A topic, by name.
    Topic(String),
    /// A broker, by node id.
    Broker(NodeId),
    /// A client-metrics subscription (KIP-714), by name: its `metrics` (name prefixes),
    /// `interval.ms` and `match` settings say what clients push, and how often.
    ClientMetrics(String),
}

impl ConfigResource {
    fn wire(&self) -> (i8, String) {
        match self {
            ConfigResource::Topic(t) => (2, t.clone()),
            ConfigResource::Broker(id) => (4, id.to_string()),
            ConfigResource::ClientMetrics(name) => (16, name.clone()),
        }
    }

    /// The broker a request about it must go to (`None`: any).
    pub(super) fn broker(&self) -> Option<NodeId> {
        match self {
            ConfigResource::Broker(id) => Some(*id),
            ConfigResource::Topic(_) | ConfigResource::ClientMetrics(_) => None,
        }
    }
}

/// Where a configuration's value comes from (Java's `ConfigEntry.ConfigSource`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ConfigSource {
    /// Set on the topic.
    DynamicTopic,
    /// Set on this broker at run time.
    DynamicBroker,
    /// Set at run time as every broker's default.
    DynamicDefaultBroker,
    /// From the broker's `server.properties`.
    StaticBroker,
    /// Kafka's default.
    Default,
    /// A broker logger's level.
    DynamicBrokerLogger,
    /// Another source, or one the broker did not say.
    Unknown,
}

impl ConfigSource {
    fn from_wire(v: i8) -> Self {
        match v {
            1 => ConfigSource::DynamicTopic,
            2 => ConfigSource::DynamicBroker,
            3 => ConfigSource::DynamicDefaultBroker,
            4 => ConfigSource::StaticBroker,
            5 => ConfigSource::Default,
            6 => ConfigSource::DynamicBrokerLogger,
            _ => ConfigSource::Unknown,
        }
    }

    /// Java's name for it (`DYNAMIC_TOPIC_CONFIG`, `DEFAULT_CONFIG`, ...).
    pub fn java_name(self) -> &'static str {
        match self {
            ConfigSource::DynamicTopic => "DYNAMIC_TOPIC_CONFIG",
            ConfigSource::DynamicBroker => "DYNAMIC_BROKER_CONFIG",
            ConfigSource::DynamicDefaultBroker => "DYNAMIC_DEFAULT_BROKER_CONFIG",
            ConfigSource::StaticBroker => "STATIC_BROKER_CONFIG",
            ConfigSource::Default => "DEFAULT_CONFIG",
            ConfigSource::DynamicBrokerLogger => "DYNAMIC_BROKER_LOGGER_CONFIG",
            ConfigSource::Unknown => "UNKNOWN",
        }
    }
}

/// One configuration entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigEntry {
    /// The key.
    pub name: String,
    /// The value; `None` for a sensitive value (the broker never sends it) or an unset one.
    pub value: Option<String>,
    /// Where the value comes from.
    pub source: ConfigSource,
    /// Whether it is sensitive (a password): its value is withheld.
    pub sensitive: bool,
    /// Whether it cannot be altered at run time.
    pub read_only: bool,
}

/// An incremental change to one configuration key (IncrementalAlterConfigs).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum AlterConfigOp {
    /// Sets the key.
    Set(String, String),
    /// Removes the key's override: it falls back to its default.
    Delete(String),
    /// Appends to a list-valued key.
    Append(String, String),
    /// Removes from a list-valued key.
    Subtract(String, String),
}

/// The cluster, as DescribeCluster describes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClusterDescription {
    /// The cluster id.
    pub cluster_id: String,
    /// The controller's node id, if there is one (a KRaft cluster names a broker that
    /// forwards to the active controller).
    pub controller: Option<NodeId>,
    /// The brokers.
    pub brokers: Vec<BrokerMetadata>,
}

/// A one-request operation.
#[derive(Debug, Clone)]
pub(super) enum SingleOp {
    DescribeCluster,
    DescribeConfigs(ConfigResource),
    AlterConfigs(ConfigResource, Vec<AlterConfigOp>),
}

/// Its request, by kind.
pub(super) enum SingleRequest {
    Cluster(DescribeClusterRequest),
    Describe(DescribeConfigsRequest),
    Alter(IncrementalAlterConfigsRequest),
}

impl SingleOp {
    /// The broker it must go to (`None`: any).
    pub(super) fn broker(&self) -> Option<NodeId> {
        match self {
            SingleOp::DescribeCluster => None,
            SingleOp::DescribeConfigs(r) | SingleOp::AlterConfigs(r, _) => r.broker(),
        }
    }

    pub(super) fn request(&self) -> SingleRequest {
        match self {
            SingleOp::DescribeCluster => SingleRequest::Cluster(DescribeClusterRequest {
                endpoint_type: 1,
                ..Default::default()
            }),
            SingleOp::DescribeConfigs(r) => {
                let (resource_type, resource_name) = r.wire();
                SingleRequest::Describe(DescribeConfigsRequest {
                    resources: vec![DescribeConfigsResource {
                        resource_type,
                        resource_name,
                        configuration_keys: None,
                        ..Default::default()
                    }],
                    ..Default::default()
                })
            }
            SingleOp::AlterConfigs(r, ops) => {
                let (resource_type, resource_name) = r.wire();
                let configs = ops
                    .iter()
                    .map(|op| {
                        let (name, operation, value) = match op {
                            AlterConfigOp::Set(k, v) => (k, 0, Some(v.clone())),
                            AlterConfigOp::Delete(k) => (k, 1, None),
                            AlterConfigOp::Append(k, v) => (k, 2, Some(v.clone())),
                            AlterConfigOp::Subtract(k, v) => (k, 3, Some(v.clone())),
                        };
                        AlterableConfig {
                            name: name.clone(),
                            config_operation: operation,
                            value,
                            ..Default::default()
                        }
                    })
                    .collect();
                SingleRequest::Alter(IncrementalAlterConfigsRequest {
                    resources: vec![AlterConfigsResource {
                        resource_type,
                        resource_name,
                        configs,
                        ..Default::default()
                    }],
                    validate_only: false,
                    ..Default::default()
                })
            }
        }
    }

    /// The result an error ends it with.
    pub(super) fn failed(&self, e: AdminError) -> AdminResult {
        match self {
            SingleOp::DescribeCluster => AdminResult::Cluster(Err(e)),
            SingleOp::DescribeConfigs(_) => AdminResult::Configs(Err(e)),
            SingleOp::AlterConfigs(..) => AdminResult::Done(Err(e)),
        }
    }

    /// Reads its answer: the result, or why to ask again.
    pub(super) fn answer(&self, body: ResponseBody) -> Result<AdminResult, String> {
        // As Java: a resource's error ends the operation (UNKNOWN_TOPIC_OR_PARTITION is
        // retriable elsewhere, but here it means the topic does not exist); only a timeout
        // at the broker is asked again.
        let check = |code: i16, message: Option<String>| match ErrorCode::from_code(code) {
            None => Ok(None),
            Some(c @ ErrorCode::RequestTimedOut) => Err(c.to_string()),
            Some(code) => Ok(Some(AdminError::Broker { code, message })),
        };
        match (self, body) {
            (SingleOp::DescribeCluster, ResponseBody::DescribeCluster(r)) => {
                if let Some(e) = check(r.error_code, r.error_message)? {
                    return Ok(self.failed(e));
                }
                let brokers = r
                    .brokers
                    .into_iter()
                    .filter_map(|b| {
                        let port = u16::try_from(b.port).ok()?;
                        Some(BrokerMetadata {
                            id: b.broker_id,
                            addr: HostPort::new(b.host, port),
                            rack: b.rack,
                        })
                    })
                    .collect();
                Ok(AdminResult::Cluster(Ok(ClusterDescription {
                    cluster_id: r.cluster_id,
                    controller: (r.controller_id >= 0).then_some(r.controller_id),
                    brokers,
                })))
            }
            (SingleOp::DescribeConfigs(_), ResponseBody::DescribeConfigs(r)) => {
                let Some(res) = r.results.into_iter().next() else {
                    return Err("the resource was not described".into());
                };
                if let Some(e) = check(res.error_code, res.error_message)? {
                    return Ok(self.failed(e));
                }
                let mut entries: Vec<ConfigEntry> = res
                    .configs
                    .into_iter()
                    .map(|c| ConfigEntry {
                        // A sensitive value is never shown, whatever the broker sent.
                        value: if c.is_sensitive { None } else { c.value },
                        name: c.name,
                        source: ConfigSource::from_wire(c.config_source),
                        sensitive: c.is_sensitive,
                        read_only: c.read_only,
                    })
                    .collect();
                entries.sort_by(|a, b| a.name.cmp(&b.name));
                Ok(AdminResult::Configs(Ok(entries)))
            }
            (SingleOp::AlterConfigs(..), ResponseBody::IncrementalAlterConfigs(r)) => {
                let Some(res) = r.responses.into_iter().next() else {
                    return Err("the resource was not altered".into());
                };
                match check(res.error_code, res.error_message)? {
                    Some(e) => Ok(self.failed(e)),
                    None => Ok(AdminResult::Done(Ok(()))),
                }
            }
            _ => Err("an answer of another kind".into()),
        }
    }
}
