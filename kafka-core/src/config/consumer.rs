//! The consumer's configuration (assign mode for now): Java's keys and defaults for fetching.
//! Group keys (`group.id`, `session.timeout.ms`, ...) arrive with consumer groups.

use std::time::Duration;

use super::parse::{self, HostPort};
use super::{config_table, ConfigError};

/// `auto.offset.reset`: where to start when there is no valid position.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
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

const I32_MAX: i64 = i32::MAX as i64;

config_table! {
    /// Consumer configuration (assign mode).
    pub struct ConsumerConfig {
        /// `bootstrap.servers`.
        bootstrap_servers: Vec<HostPort> = "bootstrap.servers", "", parse::hosts;
        /// `client.id`.
        client_id: String = "client.id", "", parse::string;
        /// `fetch.min.bytes`: the broker waits for this much data (up to `fetch.max.wait.ms`).
        fetch_min_bytes: i32 = "fetch.min.bytes", "1", parse::int(0, I32_MAX);
        /// `fetch.max.wait.ms`: how long the broker may hold a fetch for `fetch.min.bytes`.
        fetch_max_wait: Duration = "fetch.max.wait.ms", "500", parse::millis(0);
        /// `fetch.max.bytes`: the most data one fetch response may carry (soft, KIP-74).
        fetch_max_bytes: i32 = "fetch.max.bytes", "52428800", parse::int(0, I32_MAX);
        /// `max.partition.fetch.bytes`: the most data per partition per fetch (soft, KIP-74).
        max_partition_fetch_bytes: i32 = "max.partition.fetch.bytes", "1048576", parse::int(0, I32_MAX);
        /// `auto.offset.reset`.
        auto_offset_reset: OffsetReset = "auto.offset.reset", "latest", OffsetReset::parse;
        /// `isolation.level`.
        isolation_level: IsolationLevel = "isolation.level", "read_uncommitted", IsolationLevel::parse;
        /// `request.timeout.ms`.
        request_timeout: Duration = "request.timeout.ms", "30000", parse::millis(0);
        /// `retry.backoff.ms`.
        retry_backoff: Duration = "retry.backoff.ms", "100", parse::millis(0);
        /// `retry.backoff.max.ms`.
        retry_backoff_max: Duration = "retry.backoff.max.ms", "1000", parse::millis(0);
        /// `reconnect.backoff.ms`.
        reconnect_backoff: Duration = "reconnect.backoff.ms", "50", parse::millis(0);
        /// `reconnect.backoff.max.ms`.
        reconnect_backoff_max: Duration = "reconnect.backoff.max.ms", "1000", parse::millis(0);
        /// `socket.connection.setup.timeout.ms`.
        connection_setup_timeout: Duration = "socket.connection.setup.timeout.ms", "10000", parse::millis(0);
        /// `socket.connection.setup.timeout.max.ms`.
        connection_setup_timeout_max: Duration = "socket.connection.setup.timeout.max.ms", "30000", parse::millis(0);
        /// `connections.max.idle.ms`.
        connections_max_idle: Duration = "connections.max.idle.ms", "540000", parse::millis(0);
        /// `metadata.max.age.ms`.
        metadata_max_age: Duration = "metadata.max.age.ms", "300000", parse::millis(0);
        /// `check.crcs`: verify each batch's crc32c.
        check_crcs: bool = "check.crcs", "true", parse::boolean;
        /// `random.seed` (not a Java key): seeds every random choice.
        random_seed: u64 = "random.seed", "0", parse::int(0, i64::MAX);
    }
}

impl ConsumerConfig {
    /// Parses and validates a Java-style string map.
    pub fn from_map<K: AsRef<str>, V: AsRef<str>>(
        map: impl IntoIterator<Item = (K, V)>,
    ) -> Result<Self, ConfigError> {
        Self::parse_map(map)
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
                key: "group.idd".into()
            }
        );
    }
}
