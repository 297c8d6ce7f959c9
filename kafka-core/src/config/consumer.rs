//! The consumer's configuration: Java's keys and defaults for fetching and for groups.

use std::time::Duration;

use super::parse::{self, HostPort};
use super::Assignor;
use super::{config_table, ConfigError};

/// `auto.offset.reset`: where to start when there is no valid position.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum OffsetReset {
    /// The oldest retained offset.
    Earliest,
    /// The end of the log: only new records.
    Latest,
    /// No reset: report an error.
    None,
}

impl OffsetReset {
    fn parse(key: &'static str, v: &str) -> Result<Self, ConfigError> {
        match v.trim() {
            "earliest" => Ok(OffsetReset::Earliest),
            "latest" => Ok(OffsetReset::Latest),
            "none" => Ok(OffsetReset::None),
            _ => Err(ConfigError::InvalidValue {
                key,
                value: v.to_owned(),
                rule: "expected earliest, latest or none".into(),
            }),
        }
    }
}

/// `isolation.level`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum IsolationLevel {
    /// Every record, including those of open and aborted transactions.
    ReadUncommitted,
    /// Only committed records, up to the last stable offset.
    ReadCommitted,
}

impl IsolationLevel {
    /// The value sent in Fetch and ListOffsets.
    pub fn wire_value(self) -> i8 {
        match self {
            IsolationLevel::ReadUncommitted => 0,
            IsolationLevel::ReadCommitted => 1,
        }
    }

    fn parse(key: &'static str, v: &str) -> Result<Self, ConfigError> {
        match v.trim() {
            "read_uncommitted" => Ok(IsolationLevel::ReadUncommitted),
            "read_committed" => Ok(IsolationLevel::ReadCommitted),
            _ => Err(ConfigError::InvalidValue {
                key,
                value: v.to_owned(),
                rule: "expected read_uncommitted or read_committed".into(),
            }),
        }
    }
}

/// `group.protocol`: how a consumer takes part in its group.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum GroupProtocol {
    /// The classic protocol: JoinGroup and SyncGroup, the leader member assigns.
    Classic,
    /// The consumer protocol of KIP-848 (Kafka 4.0+): ConsumerGroupHeartbeat, the broker
    /// assigns, and rebalances move only the partitions that change owner.
    Consumer,
}

impl GroupProtocol {
    fn parse(key: &'static str, v: &str) -> Result<Self, ConfigError> {
        match v.trim().to_ascii_lowercase().as_str() {
            "classic" => Ok(GroupProtocol::Classic),
            "consumer" => Ok(GroupProtocol::Consumer),
            _ => Err(ConfigError::InvalidValue {
                key,
                value: v.to_owned(),
                rule: "expected classic or consumer".into(),
            }),
        }
    }
}

const I32_MAX: i64 = i32::MAX as i64;

/// `partition.assignment.strategy`: assignor names (or Java class names), most preferred first.
fn assignors(key: &'static str, v: &str) -> Result<Vec<Assignor>, ConfigError> {
    let list: Vec<Assignor> = v
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|name| {
            // Java configs name classes; the last segment says which.
            let short = match name.rsplit('.').next().unwrap_or(name) {
                "RangeAssignor" => "range",
                "RoundRobinAssignor" => "roundrobin",
                "CooperativeStickyAssignor" => "cooperative-sticky",
                other => other,
            };
            Assignor::from_name(short).ok_or_else(|| ConfigError::InvalidValue {
                key,
                value: v.to_owned(),
                rule: format!(
                    "unknown assignor `{name}`: expected range, roundrobin or cooperative-sticky"
                ),
            })
        })
        .collect::<Result<_, _>>()?;
    if list.is_empty() {
        return Err(ConfigError::InvalidValue {
            key,
            value: v.to_owned(),
            rule: "expected at least one assignor".into(),
        });
    }
    Ok(list)
}

config_table! {
    client = super::java_keys::Client::Consumer;
    /// Consumer configuration: fetching, and with `group.id`, the consumer group.
    pub struct ConsumerConfig {
        /// `bootstrap.servers`.
        bootstrap_servers: Vec<HostPort> = "bootstrap.servers", "", parse::hosts;
        /// `client.id`.
        client_id: String = "client.id", "", parse::string;
        /// `client.rack`: the rack (availability zone) the consumer runs in, sent in Fetch so
        /// that a broker with a rack-aware `replica.selector.class` points it at a replica in
        /// its rack (KIP-392), which it then reads from.
        client_rack: String = "client.rack", "", parse::string;
        /// `fetch.min.bytes`: the broker waits for this much data (up to `fetch.max.wait.ms`).
        fetch_min_bytes: i32 = "fetch.min.bytes", "1", parse::int(0, I32_MAX);
        /// `fetch.max.wait.ms`: how long the broker may hold a fetch for `fetch.min.bytes`.
        fetch_max_wait: Duration = "fetch.max.wait.ms", "500", parse::millis(0);
        /// `fetch.max.bytes`: the most data one fetch response may carry (soft, KIP-74).
        fetch_max_bytes: i32 = "fetch.max.bytes", "52428800", parse::int(0, I32_MAX);
        /// `max.partition.fetch.bytes`: the most data per partition per fetch (soft, KIP-74).
        max_partition_fetch_bytes: i32 = "max.partition.fetch.bytes", "1048576", parse::int(0, I32_MAX);
        /// `queued.max.messages.kbytes` (librdkafka's name; Java has none): the budget for
        /// fetched records not yet taken by the application, across all partitions. Fetching
        /// pauses while it is spent; it may be exceeded by one batch (brokers return a
        /// partition's first batch whole, KIP-74: while the room left is below
        /// `max.partition.fetch.bytes`, fetches go one at a time). Batches larger than
        /// `max.partition.fetch.bytes` may exceed it by one batch per fetch in flight.
        queued_max_kbytes: i32 = "queued.max.messages.kbytes", "65536", parse::int(1, 2_097_151);
        /// `auto.offset.reset`.
        auto_offset_reset: OffsetReset = "auto.offset.reset", "latest", OffsetReset::parse;
        /// `isolation.level`.
        isolation_level: IsolationLevel = "isolation.level", "read_uncommitted", IsolationLevel::parse;
        /// `request.timeout.ms`.
        request_timeout: Duration = "request.timeout.ms", "30000", parse::millis(0);
        /// `default.api.timeout.ms`: how long a blocking call (a commit, a lookup of committed
        /// offsets, close) retries before it fails with a timeout.
        default_api_timeout: Duration = "default.api.timeout.ms", "60000", parse::millis(0);
        /// `retry.backoff.ms`.
        retry_backoff: Duration = "retry.backoff.ms", "100", parse::millis(0);
        /// `retry.backoff.max.ms`.
        retry_backoff_max: Duration = "retry.backoff.max.ms", "1000", parse::millis(0);
        /// `reconnect.backoff.ms`.
        reconnect_backoff: Duration = "reconnect.backoff.ms", "50", parse::millis(0);
        /// `reconnect.backoff.max.ms`.
        reconnect_backoff_max: Duration = "reconnect.backoff.max.ms", "1000", parse::millis(0);
        /// `metadata.recovery.strategy`: with `rebootstrap` (Java 4.x's default), a client that
        /// can reach none of the brokers it knows goes back to `bootstrap.servers` (KIP-899).
        metadata_recovery_strategy: super::producer::MetadataRecoveryStrategy = "metadata.recovery.strategy", "rebootstrap", super::producer::MetadataRecoveryStrategy::parse;
        /// `metadata.recovery.rebootstrap.trigger.ms`: how long without metadata (no reachable
        /// broker, or none answering) before rebootstrapping (KIP-1102).
        metadata_recovery_rebootstrap_trigger: Duration = "metadata.recovery.rebootstrap.trigger.ms", "300000", parse::millis(0);
        /// `metadata.cluster.check.enable` (KIP-1242, Java 4.4): the handshake names the cluster
        /// and node it means to reach, so that a broker at a stale address answers
        /// REBOOTSTRAP_REQUIRED. Without effect under `metadata.recovery.strategy=none`.
        metadata_cluster_check: bool = "metadata.cluster.check.enable", "true", parse::boolean;
        /// `socket.connection.setup.timeout.ms`.
        connection_setup_timeout: Duration = "socket.connection.setup.timeout.ms", "10000", parse::millis(0);
        /// `socket.connection.setup.timeout.max.ms`.
        connection_setup_timeout_max: Duration = "socket.connection.setup.timeout.max.ms", "30000", parse::millis(0);
        /// `connections.max.idle.ms`.
        connections_max_idle: Duration = "connections.max.idle.ms", "540000", parse::millis(0);
        /// `metadata.max.age.ms`.
        metadata_max_age: Duration = "metadata.max.age.ms", "300000", parse::millis(0);
        /// `group.id`: the consumer group (none: assign mode only).
        group_id: Option<String> = "group.id", "", parse::optional;
        /// `group.instance.id`: makes the member static (KIP-345).
        group_instance_id: Option<String> = "group.instance.id", "", parse::optional;
        /// `session.timeout.ms`: the coordinator drops a member silent for this long.
        session_timeout: Duration = "session.timeout.ms", "45000", parse::millis(1);
        /// `heartbeat.interval.ms`.
        heartbeat_interval: Duration = "heartbeat.interval.ms", "3000", parse::millis(1);
        /// `max.poll.interval.ms`: the member leaves when the application stops polling for
        /// longer; also the rebalance timeout.
        max_poll_interval: Duration = "max.poll.interval.ms", "300000", parse::millis(1);
        /// `max.poll.records`: the most records one poll returns.
        max_poll_records: i32 = "max.poll.records", "500", parse::int(1, I32_MAX);
        /// `partition.assignment.strategy`.
        assignors: Vec<Assignor> = "partition.assignment.strategy", "range,cooperative-sticky", assignors;
        /// `group.protocol`: `classic` (the default, as in Java 4.x) or `consumer` (KIP-848).
        group_protocol: GroupProtocol = "group.protocol", "classic", GroupProtocol::parse;
        /// `group.remote.assignor`: under the consumer protocol, the broker-side assignor to
        /// ask for (`uniform` or `range` on Apache Kafka); unset, the broker's default.
        group_remote_assignor: Option<String> = "group.remote.assignor", "", parse::optional;
        /// `enable.auto.commit`.
        enable_auto_commit: bool = "enable.auto.commit", "true", parse::boolean;
        /// `auto.commit.interval.ms`.
        auto_commit_interval: Duration = "auto.commit.interval.ms", "5000", parse::millis(0);
        /// `check.crcs`: verify each batch's crc32c.
        check_crcs: bool = "check.crcs", "true", parse::boolean;
        /// `connections.per.broker` (not a Java key): connections that carry Fetch requests
        /// to each broker, 1 as in the Java client. A broker answers each connection's
        /// fetches one at a time, so with more, the partitions a broker leads are read side
        /// by side. Partition `p` always takes connection `p % n`, with a fetch session
        /// (KIP-227) and a share of the prefetch budget of its own.
        connections_per_broker: usize = "connections.per.broker", "1", parse::int(1, 16);
        /// `random.seed` (not a Java key): seeds every random choice.
        random_seed: u64 = "random.seed", "0", parse::int(0, i64::MAX);
    }
}

impl ConsumerConfig {
    /// Parses and validates a Java-style string map.
    pub fn from_map<K: AsRef<str>, V: AsRef<str>>(
        map: impl IntoIterator<Item = (K, V)>,
    ) -> Result<Self, ConfigError> {
        let c = Self::parse_map(map)?;
        if c.group_protocol == GroupProtocol::Consumer {
            // As Java: under the consumer protocol the broker owns these (KIP-848's
            // group.consumer.* broker settings); a value set here would be silently ignored.
            for key in [
                "session.timeout.ms",
                "heartbeat.interval.ms",
                "partition.assignment.strategy",
            ] {
                if c.is_explicit(key) {
                    return Err(ConfigError::Conflict {
                        key: "group.protocol",
                        other: key,
                        reason: "the consumer protocol (KIP-848) leaves the session, heartbeats \
                                 and assignment to the broker: drop this setting (the broker's \
                                 group.consumer.* settings decide), or set \
                                 group.protocol=classic"
                            .into(),
                    });
                }
            }
        } else if c.group_remote_assignor.is_some() {
            return Err(ConfigError::Conflict {
                key: "group.remote.assignor",
                other: "group.protocol",
                reason: "a remote assignor is chosen only under group.protocol=consumer".into(),
            });
        }
        if c.group_id.is_some() && c.heartbeat_interval >= c.session_timeout {
            return Err(ConfigError::Conflict {
                key: "heartbeat.interval.ms",
                other: "session.timeout.ms",
                reason: "heartbeats must come more often than the session times out (Java \
                         suggests a third of it)"
                    .into(),
            });
        }
        Ok(c)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_and_errors() {
        let c = ConsumerConfig::from_map([("bootstrap.servers", "a:1")]).unwrap();
        assert_eq!(c.fetch_max_wait, Duration::from_millis(500));
        assert_eq!(c.fetch_max_bytes, 52_428_800);
        assert_eq!(c.max_partition_fetch_bytes, 1_048_576);
        assert_eq!(c.auto_offset_reset, OffsetReset::Latest);
        assert_eq!(c.assignors, [Assignor::Range, Assignor::CooperativeSticky]);
        assert_eq!(c.group_id, None);
        let c = ConsumerConfig::from_map([
            ("bootstrap.servers", "a:1"),
            ("group.id", "g"),
            (
                "partition.assignment.strategy",
                "org.apache.kafka.clients.consumer.CooperativeStickyAssignor, roundrobin",
            ),
        ])
        .unwrap();
        assert_eq!(c.group_id.as_deref(), Some("g"));
        assert_eq!(
            c.assignors,
            [Assignor::CooperativeSticky, Assignor::RoundRobin]
        );
        let e = ConsumerConfig::from_map([
            ("bootstrap.servers", "a:1"),
            ("partition.assignment.strategy", "sticky"),
        ])
        .unwrap_err();
        assert!(e.to_string().contains("unknown assignor `sticky`"), "{e}");
        let e = ConsumerConfig::from_map([
            ("bootstrap.servers", "a:1"),
            ("group.id", "g"),
            ("session.timeout.ms", "2000"),
            ("heartbeat.interval.ms", "3000"),
        ])
        .unwrap_err();
        assert!(matches!(e, ConfigError::Conflict { .. }), "{e}");
        let e = ConsumerConfig::from_map([
            ("bootstrap.servers", "a:1"),
            ("auto.offset.reset", "smallest"),
        ])
        .unwrap_err();
        assert!(e.to_string().contains("earliest, latest or none"), "{e}");
        let e = ConsumerConfig::from_map([("bootstrap.servers", "a:1"), ("group.idd", "g")])
            .unwrap_err();
        assert_eq!(
            e,
            ConfigError::UnknownKey {
                key: "group.idd".into(),
                client: super::super::java_keys::Client::Consumer,
            }
        );
        assert!(
            e.to_string().contains("#consumerconfigs"),
            "the consumer's docs, not the producer's: {e}"
        );
    }

    #[test]
    fn group_protocol() {
        let c = ConsumerConfig::from_map([("bootstrap.servers", "a:1")]).unwrap();
        assert_eq!(c.group_protocol, GroupProtocol::Classic);
        let c = ConsumerConfig::from_map([
            ("bootstrap.servers", "a:1"),
            ("group.protocol", "CONSUMER"),
            ("group.remote.assignor", "uniform"),
        ])
        .unwrap();
        assert_eq!(c.group_protocol, GroupProtocol::Consumer);
        assert_eq!(c.group_remote_assignor.as_deref(), Some("uniform"));
        let e = ConsumerConfig::from_map([
            ("bootstrap.servers", "a:1"),
            ("group.protocol", "consumer"),
            ("session.timeout.ms", "10000"),
        ])
        .unwrap_err();
        assert!(e.to_string().contains("session.timeout.ms"), "{e}");
        let e = ConsumerConfig::from_map([
            ("bootstrap.servers", "a:1"),
            ("group.remote.assignor", "uniform"),
        ])
        .unwrap_err();
        assert!(e.to_string().contains("group.protocol=consumer"), "{e}");
        let e = ConsumerConfig::from_map([("bootstrap.servers", "a:1"), ("group.protocol", "new")])
            .unwrap_err();
        assert!(e.to_string().contains("classic or consumer"), "{e}");
    }

    /// One settings map serves every client: a producer key, or a Java consumer key this
    /// client has no use for, is accepted with a note (it was refused, and the error sent
    /// consumer users to the producer docs).
    #[test]
    fn another_clients_keys_are_accepted_with_a_note() {
        let c = ConsumerConfig::from_map([
            ("bootstrap.servers", "a:1"),
            ("acks", "all"),
            ("linger.ms", "5"),
            (
                "key.deserializer",
                "org.apache.kafka.common.serialization.StringDeserializer",
            ),
        ])
        .unwrap();
        assert_eq!(c.notes().len(), 3, "{:?}", c.notes());
        assert!(c.notes()[0].contains("`acks` is a producer setting; the consumer ignores it"));
        assert!(c.notes()[2].contains("Java consumer setting this client does not use"));
    }
}
