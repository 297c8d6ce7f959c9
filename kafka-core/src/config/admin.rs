//! The admin client's configuration: Java's AdminClientConfig keys and defaults that this
//! client uses.

use std::time::Duration;

use super::parse::{self, HostPort};
use super::{config_table, ConfigError};

config_table! {
    client = super::java_keys::Client::Admin;
    /// Admin client configuration.
    pub struct AdminConfig {
        /// `bootstrap.servers`.
        bootstrap_servers: Vec<HostPort> = "bootstrap.servers", "", parse::hosts;
        /// `client.id`.
        client_id: String = "client.id", "", parse::string;
        /// `request.timeout.ms`: one request's bound.
        request_timeout: Duration = "request.timeout.ms", "30000", parse::millis(0);
        /// `default.api.timeout.ms`: one operation's bound, retries included.
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
        /// `connections.max.idle.ms` (the admin client's default is 5 minutes).
        connections_max_idle: Duration = "connections.max.idle.ms", "300000", parse::millis(0);
        /// `random.seed` (not a Java key): seeds every random choice.
        random_seed: u64 = "random.seed", "0", parse::int(0, i64::MAX);
    }
}

impl AdminConfig {
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

    /// `kafka-cli -X connections.per.broker=1 perf produce` failed before producing: the CLI
    /// gives its global settings to the admin client too, which refused the project's own
    /// producer and consumer key (found running the benchmark through the CLI).
    #[test]
    fn the_projects_own_producer_and_consumer_keys_are_noted_not_refused() {
        let c = AdminConfig::from_map([
            ("bootstrap.servers", "a:1"),
            ("connections.per.broker", "3"),
        ])
        .unwrap();
        assert_eq!(
            c.notes(),
            ["`connections.per.broker` is a producer and consumer setting; the admin ignores it"]
        );
        assert!(AdminConfig::from_map([
            ("bootstrap.servers", "a:1"),
            ("connections.per.brokr", "3")
        ])
        .is_err());
    }
}
