//! The connection manager's settings, from each client's configuration.

use std::time::Duration;

use crate::backoff::Backoff;
use crate::config::{ProducerConfig, SecurityConfig};

/// The connection manager's settings.
#[derive(Debug, Clone)]
pub struct NetConfig {
    /// Which client this is (`producer`, `consumer`, `admin`), for the tracing span.
    pub kind: &'static str,
    /// `client.id`, sent in every request header.
    pub client_id: String,
    /// `request.timeout.ms`.
    pub request_timeout: Duration,
    /// `socket.connection.setup.timeout.ms` and its `.max.ms`.
    pub setup_timeout: Backoff,
    /// `reconnect.backoff.ms` and its `.max.ms`.
    pub reconnect: Backoff,
    /// `connections.max.idle.ms`.
    pub max_idle: Duration,
    /// `max.in.flight.requests.per.connection`.
    pub max_in_flight: usize,
    /// `random.seed`.
    pub seed: u64,
    /// `security.protocol`, SASL and TLS.
    pub security: SecurityConfig,
    /// `metrics.sample.window.ms` and `metrics.num.samples`.
    pub metrics_window: crate::metrics::Window,
    /// `enable.metrics.push` (KIP-714).
    pub metrics_push: bool,
    /// `metadata.recovery.strategy=rebootstrap`: when no known broker can be reached,
    /// [`super::Network::least_loaded`] goes back to `bootstrap.servers`.
    pub rebootstrap: bool,
    /// `metadata.recovery.rebootstrap.trigger.ms` (KIP-1102): with `rebootstrap`, how long the
    /// client may go without metadata (no broker to ask, or no answer) before it goes back to
    /// `bootstrap.servers`.
    pub rebootstrap_trigger: Duration,
    /// `metadata.cluster.check.enable` (KIP-1242): name the cluster and node in the handshake
    /// (only with `rebootstrap`, as Java).
    pub cluster_check: bool,
}

impl NetConfig {
    /// The network settings of a consumer configuration.
    pub fn from_consumer(c: &crate::config::ConsumerConfig) -> Self {
        NetConfig {
            kind: "consumer",
            client_id: c.client_id.clone(),
            request_timeout: c.request_timeout,
            setup_timeout: Backoff::new(c.connection_setup_timeout, c.connection_setup_timeout_max),
            reconnect: Backoff::new(c.reconnect_backoff, c.reconnect_backoff_max),
            max_idle: c.connections_max_idle,
            // One fetch per broker at a time, plus room for metadata and offset lookups.
            max_in_flight: 5,
            seed: c.random_seed,
            security: c.security.clone(),
            metrics_window: c.metrics.window,
            metrics_push: c.metrics.push,
            rebootstrap: c.metadata_recovery_strategy
                == crate::config::MetadataRecoveryStrategy::Rebootstrap,
            rebootstrap_trigger: c.metadata_recovery_rebootstrap_trigger,
            cluster_check: c.metadata_cluster_check,
        }
    }

    /// The network settings of an admin configuration.
    pub fn from_admin(c: &crate::config::AdminConfig) -> Self {
        NetConfig {
            kind: "admin",
            client_id: c.client_id.clone(),
            request_timeout: c.request_timeout,
            setup_timeout: Backoff::new(c.connection_setup_timeout, c.connection_setup_timeout_max),
            reconnect: Backoff::new(c.reconnect_backoff, c.reconnect_backoff_max),
            max_idle: c.connections_max_idle,
            max_in_flight: 5,
            seed: c.random_seed,
            security: c.security.clone(),
            metrics_window: c.metrics.window,
            metrics_push: c.metrics.push,
            rebootstrap: c.metadata_recovery_strategy
                == crate::config::MetadataRecoveryStrategy::Rebootstrap,
            rebootstrap_trigger: c.metadata_recovery_rebootstrap_trigger,
            cluster_check: c.metadata_cluster_check,
        }
    }

    /// The network settings of a producer configuration.
    pub fn from_producer(c: &ProducerConfig) -> Self {
        NetConfig {
            kind: "producer",
            client_id: c.client_id.clone(),
            request_timeout: c.request_timeout,
            setup_timeout: Backoff::new(c.connection_setup_timeout, c.connection_setup_timeout_max),
            reconnect: Backoff::new(c.reconnect_backoff, c.reconnect_backoff_max),
            max_idle: c.connections_max_idle,
            max_in_flight: c.max_in_flight,
            seed: c.random_seed,
            security: c.security.clone(),
            metrics_window: c.metrics.window,
            metrics_push: c.metrics.push,
            rebootstrap: c.metadata_recovery_strategy
                == crate::config::MetadataRecoveryStrategy::Rebootstrap,
            rebootstrap_trigger: c.metadata_recovery_rebootstrap_trigger,
            cluster_check: c.metadata_cluster_check,
        }
    }
}
