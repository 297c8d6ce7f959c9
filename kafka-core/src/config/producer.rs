//! The producer's configuration: Java's keys and defaults, and Java's cross-key rules
//! (delivery-timeout floor, idempotence conflicts).

use std::time::Duration;

use kafka_proto::compression::Compression;

use super::parse::{self, HostPort};
use super::{config_table, ConfigError};

/// `acks`: how many replicas must have a record before the broker answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Acks {
    /// `0`: no answer at all; a record completes when it is written to the socket.
    None,
    /// `1`: the leader has it.
    Leader,
    /// `all` (or `-1`): every in-sync replica has it.
    All,
}

impl Acks {
    /// The value sent in Produce requests.
    pub fn wire_value(self) -> i16 {
        match self {
            Acks::None => 0,
            Acks::Leader => 1,
            Acks::All => -1,
        }
    }

    fn parse(key: &'static str, v: &str) -> Result<Acks, ConfigError> {
        match v.trim() {
            "0" => Ok(Acks::None),
            "1" => Ok(Acks::Leader),
            "all" | "-1" => Ok(Acks::All),
            _ => Err(ConfigError::InvalidValue {
                key,
                value: v.to_owned(),
                rule: "expected 0, 1, all or -1".into(),
            }),
        }
    }
}

/// `metadata.recovery.strategy`: what to do when every known broker is unreachable.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum MetadataRecoveryStrategy {
    /// Keep trying the known brokers.
    None,
    /// Go back to `bootstrap.servers` (KIP-899).
    Rebootstrap,
}

impl MetadataRecoveryStrategy {
    pub(crate) fn parse(key: &'static str, v: &str) -> Result<Self, ConfigError> {
        match v.trim() {
            "none" => Ok(MetadataRecoveryStrategy::None),
            "rebootstrap" => Ok(MetadataRecoveryStrategy::Rebootstrap),
            _ => Err(ConfigError::InvalidValue {
                key,
                value: v.to_owned(),
                rule: "expected none or rebootstrap".into(),
            }),
        }
    }
}

const I32_MAX: i64 = i32::MAX as i64;

config_table! {
    client = super::java_keys::Client::Producer;
    /// Producer configuration. Build it with [`ProducerConfig::from_map`] or [`ProducerConfig::builder`];
    /// both apply the same validation.
    pub struct ProducerConfig {
        /// `bootstrap.servers`: where to fetch the first metadata from.
        bootstrap_servers: Vec<HostPort> = "bootstrap.servers", "", parse::hosts;
        /// `client.id`: sent in every request header.
        client_id: String = "client.id", "", parse::string;
        /// `acks`.
        acks: Acks = "acks", "all", Acks::parse;
        /// `enable.idempotence`: exactly-once per partition within a producer session.
        enable_idempotence: bool = "enable.idempotence", "true", parse::boolean;
        /// `transactional.id`: makes the producer transactional (`init_transactions` and the
        /// rest); a newer producer with the same id fences this one.
        transactional_id: Option<String> = "transactional.id", "", parse::optional;
        /// `transaction.timeout.ms`: how long the coordinator lets a transaction stay open
        /// before aborting it (at most the broker's `transaction.max.timeout.ms`).
        transaction_timeout: Duration = "transaction.timeout.ms", "60000", parse::millis(1);
        /// `compression.type`.
        compression: Compression = "compression.type", "none", parse::compression;
        /// `compression.gzip.level` (KIP-390): 1 (fastest) to 9 (smallest), -1 the default (6).
        compression_gzip_level: i32 = "compression.gzip.level", "-1", parse::gzip_level;
        /// `compression.lz4.level` (KIP-390), 1 to 17: accepted, not applied (the pure-Rust
        /// lz4 encoder has one level, its fast mode; a level set with lz4 warns).
        compression_lz4_level: i32 = "compression.lz4.level", "9", parse::int(1, 17);
        /// `compression.zstd.level` (KIP-390), -131072 to 22: accepted, not applied (the
        /// pure-Rust zstd encoder has one level, about zstd's 1; a level set with zstd warns).
        compression_zstd_level: i32 = "compression.zstd.level", "3", parse::int(-131_072, 22);
        /// `batch.size`: target bytes per partition batch.
        batch_size: usize = "batch.size", "16384", parse::int(0, I32_MAX);
        /// `linger.ms`: how long a batch waits for more records.
        linger: Duration = "linger.ms", "5", parse::millis(0);
        /// `buffer.memory`: bytes of records the producer may hold.
        buffer_memory: usize = "buffer.memory", "33554432", parse::int(0, i64::MAX);
        /// `max.block.ms`: how long `send` may wait for memory or metadata.
        max_block: Duration = "max.block.ms", "60000", parse::millis(0);
        /// `max.request.size`: the largest Produce request, and so the largest record.
        max_request_size: usize = "max.request.size", "1048576", parse::int(0, I32_MAX);
        /// `request.timeout.ms`: how long one request may wait for its response.
        request_timeout: Duration = "request.timeout.ms", "30000", parse::millis(0);
        /// `delivery.timeout.ms`: how long a record may take from `send` to its outcome.
        delivery_timeout: Duration = "delivery.timeout.ms", "120000", parse::millis(0);
        /// `retries`.
        retries: i32 = "retries", "2147483647", parse::int(0, I32_MAX);
        /// `retry.backoff.ms`: the first retry backoff.
        retry_backoff: Duration = "retry.backoff.ms", "100", parse::millis(0);
        /// `retry.backoff.max.ms`: the exponential retry backoff's ceiling.
        retry_backoff_max: Duration = "retry.backoff.max.ms", "1000", parse::millis(0);
        /// `reconnect.backoff.ms`: the first reconnect backoff.
        reconnect_backoff: Duration = "reconnect.backoff.ms", "50", parse::millis(0);
        /// `reconnect.backoff.max.ms`: the reconnect backoff's ceiling.
        reconnect_backoff_max: Duration = "reconnect.backoff.max.ms", "1000", parse::millis(0);
        /// `socket.connection.setup.timeout.ms`: the first connection-setup timeout.
        connection_setup_timeout: Duration = "socket.connection.setup.timeout.ms", "10000", parse::millis(0);
        /// `socket.connection.setup.timeout.max.ms`: its exponential ceiling.
        connection_setup_timeout_max: Duration = "socket.connection.setup.timeout.max.ms", "30000", parse::millis(0);
        /// `connections.max.idle.ms`: the client closes connections idle for longer.
        connections_max_idle: Duration = "connections.max.idle.ms", "540000", parse::millis(0);
        /// `metadata.max.age.ms`: metadata is refreshed at least this often.
        metadata_max_age: Duration = "metadata.max.age.ms", "300000", parse::millis(0);
        /// `metadata.max.idle.ms`: topics not produced to for this long are dropped from metadata.
        metadata_max_idle: Duration = "metadata.max.idle.ms", "300000", parse::millis(5000);
        /// `metadata.recovery.strategy`.
        metadata_recovery_strategy: MetadataRecoveryStrategy = "metadata.recovery.strategy", "rebootstrap", MetadataRecoveryStrategy::parse;
        /// `metadata.recovery.rebootstrap.trigger.ms`: how long without metadata (no reachable
        /// broker, or none answering) before rebootstrapping (KIP-1102).
        metadata_recovery_rebootstrap_trigger: Duration = "metadata.recovery.rebootstrap.trigger.ms", "300000", parse::millis(0);
        /// `metadata.cluster.check.enable` (KIP-1242, Java 4.4): the handshake names the cluster
        /// and node it means to reach, so that a broker at a stale address answers
        /// REBOOTSTRAP_REQUIRED. Without effect under `metadata.recovery.strategy=none`.
        metadata_cluster_check: bool = "metadata.cluster.check.enable", "true", parse::boolean;
        /// `max.in.flight.requests.per.connection`.
        max_in_flight: usize = "max.in.flight.requests.per.connection", "5", parse::int(1, I32_MAX);
        /// `partitioner.ignore.keys`: spread keyed records like keyless ones.
        partitioner_ignore_keys: bool = "partitioner.ignore.keys", "false", parse::boolean;
        /// `partitioner.adaptive.partitioning.enable`: weight partition choice by broker queue length.
        partitioner_adaptive: bool = "partitioner.adaptive.partitioning.enable", "true", parse::boolean;
        /// `partitioner.availability.timeout.ms`: skip partitions whose leader has been slow this long (0 = off).
        partitioner_availability_timeout: Duration = "partitioner.availability.timeout.ms", "0", parse::millis(0);
        /// `connections.per.broker` (not a Java key): connections that carry Produce requests
        /// to each broker, 1 as in the Java client. A broker serves each connection's
        /// requests one at a time (Kafka mutes a connection while its request is handled), so
        /// with more, the partitions a broker leads are written side by side. Partition `p`
        /// always takes connection `p % n`, so its requests (and sequences) stay in order.
        connections_per_broker: usize = "connections.per.broker", "1", parse::int(1, 16);
        /// `random.seed` (not a Java key): seeds every random choice (jitter, bootstrap order,
        /// partition choice), so the same inputs always give the same behaviour.
        random_seed: u64 = "random.seed", "0", parse::int(0, i64::MAX);
    }
}

impl ProducerConfig {
    /// Parses and validates a Java-style string map (`"linger.ms" => "5"`).
    pub fn from_map<K: AsRef<str>, V: AsRef<str>>(
        map: impl IntoIterator<Item = (K, V)>,
    ) -> Result<Self, ConfigError> {
        Self::parse_map(map)?.validate()
    }

    /// The level record batches are compressed at (see
    /// [`Compression::compress_at`](kafka_proto::compression::Compression::compress_at)):
    /// `compression.gzip.level` with gzip, else the codec's default.
    pub fn compression_level(&self) -> Option<i32> {
        (self.compression == Compression::Gzip && self.compression_gzip_level != -1)
            .then_some(self.compression_gzip_level)
    }

    /// A typed builder.
    pub fn builder() -> ProducerConfigBuilder {
        ProducerConfigBuilder {
            settings: Vec::new(),
        }
    }

    /// Java's producer-specific cross-key rules.
    fn validate(mut self) -> Result<Self, ConfigError> {
        // delivery.timeout.ms must cover one linger plus one request.
        let floor = self.linger + self.request_timeout;
        if self.delivery_timeout < floor {
            if self.is_explicit("delivery.timeout.ms") {
                return Err(ConfigError::Conflict {
                    key: "delivery.timeout.ms",
                    other: "linger.ms + request.timeout.ms",
                    reason: format!(
                        "it must be at least {} ms; raise it or lower the other two",
                        floor.as_millis()
                    ),
                });
            }
            self.delivery_timeout = floor;
        }
        // Idempotence needs acks=all, retries and at most 5 requests in flight. If it was asked
        // for explicitly, a conflict is an error; if only defaulted, the explicit setting wins.
        let conflicts = [
            ("acks", self.acks != Acks::All, "idempotence needs acks=all"),
            (
                "retries",
                self.retries == 0,
                "idempotence needs retries > 0",
            ),
            (
                "max.in.flight.requests.per.connection",
                self.max_in_flight > 5,
                "idempotence allows at most 5 requests in flight",
            ),
        ];
        for (key, conflicting, reason) in conflicts {
            if !(self.enable_idempotence && conflicting) {
                continue;
            }
            if self.is_explicit("enable.idempotence") {
                return Err(ConfigError::Conflict {
                    key,
                    other: "enable.idempotence",
                    reason: format!("{reason}; change `{key}` or set enable.idempotence=false"),
                });
            }
            if self.is_explicit(key) {
                self.enable_idempotence = false;
            }
        }
        // KIP-390's lz4 and zstd levels cannot be applied by the pure-Rust encoders: say so
        // once, here, rather than take the setting without a word.
        for (codec, key) in [
            (Compression::Lz4, "compression.lz4.level"),
            (Compression::Zstd, "compression.zstd.level"),
        ] {
            if self.compression == codec && self.is_explicit(key) {
                self.notes.push(format!(
                    "`{key}` is not applied: this client's pure-Rust {} encoder has one level \
                     (batches are compressed at it)",
                    codec.name()
                ));
            }
        }
        // Transactions are built on idempotence (as in Java).
        if self.transactional_id.is_some() && !self.enable_idempotence {
            return Err(ConfigError::Conflict {
                key: "transactional.id",
                other: "enable.idempotence",
                reason: "transactions need idempotence: set acks=all, retries > 0 and \
                         max.in.flight.requests.per.connection <= 5, and leave \
                         enable.idempotence on"
                    .into(),
            });
        }
        Ok(self)
    }
}

/// Builds a [`ProducerConfig`] with typed setters; `build` validates like [`ProducerConfig::from_map`].
#[derive(Debug, Clone)]
pub struct ProducerConfigBuilder {
    settings: Vec<(String, String)>,
}

impl ProducerConfigBuilder {
    /// Sets any key from its string form, as in Java properties.
    pub fn set(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
        self.settings.push((key.into(), value.into()));
        self
    }

    fn ms(self, key: &str, d: Duration) -> Self {
        self.set(key, d.as_millis().to_string())
    }

    /// `bootstrap.servers`.
    pub fn bootstrap_servers(self, servers: impl Into<String>) -> Self {
        self.set("bootstrap.servers", servers)
    }
    /// `client.id`.
    pub fn client_id(self, id: impl Into<String>) -> Self {
        self.set("client.id", id)
    }
    /// `acks`.
    pub fn acks(self, acks: Acks) -> Self {
        let v = match acks {
            Acks::None => "0",
            Acks::Leader => "1",
            Acks::All => "all",
        };
        self.set("acks", v)
    }
    /// `enable.idempotence`.
    pub fn idempotence(self, on: bool) -> Self {
        self.set("enable.idempotence", on.to_string())
    }
    /// `transactional.id`.
    pub fn transactional_id(self, id: impl Into<String>) -> Self {
        self.set("transactional.id", id)
    }
    /// `transaction.timeout.ms`.
    pub fn transaction_timeout(self, d: Duration) -> Self {
        self.ms("transaction.timeout.ms", d)
    }
    /// `compression.type`.
    pub fn compression(self, c: Compression) -> Self {
        self.set("compression.type", c.name())
    }
    /// `batch.size`.
    pub fn batch_size(self, bytes: usize) -> Self {
        self.set("batch.size", bytes.to_string())
    }
    /// `linger.ms`.
    pub fn linger(self, d: Duration) -> Self {
        self.ms("linger.ms", d)
    }
    /// `buffer.memory`.
    pub fn buffer_memory(self, bytes: usize) -> Self {
        self.set("buffer.memory", bytes.to_string())
    }
    /// `max.block.ms`.
    pub fn max_block(self, d: Duration) -> Self {
        self.ms("max.block.ms", d)
    }
    /// `request.timeout.ms`.
    pub fn request_timeout(self, d: Duration) -> Self {
        self.ms("request.timeout.ms", d)
    }
    /// `delivery.timeout.ms`.
    pub fn delivery_timeout(self, d: Duration) -> Self {
        self.ms("delivery.timeout.ms", d)
    }
    /// `retries`.
    pub fn retries(self, n: i32) -> Self {
        self.set("retries", n.to_string())
    }
    /// `max.in.flight.requests.per.connection`.
    pub fn max_in_flight(self, n: usize) -> Self {
        self.set("max.in.flight.requests.per.connection", n.to_string())
    }
    /// `connections.per.broker` (not a Java key).
    pub fn connections_per_broker(self, n: usize) -> Self {
        self.set("connections.per.broker", n.to_string())
    }
    /// `random.seed`.
    pub fn random_seed(self, seed: u64) -> Self {
        self.set("random.seed", seed.to_string())
    }

    /// Validates and builds.
    pub fn build(self) -> Result<ProducerConfig, ConfigError> {
        ProducerConfig::from_map(self.settings)
    }
}

#[cfg(test)]
mod tests {
    /// KIP-390: `compression.gzip.level` is validated as Java does and applied with gzip
    /// only; lz4 and zstd levels are accepted with a note saying they are not applied.
    #[test]
    fn compression_levels() {
        let cfg = |pairs: &[(&str, &str)]| {
            let mut map = vec![("bootstrap.servers", "b:1")];
            map.extend_from_slice(pairs);
            ProducerConfig::from_map(map)
        };
        let c = cfg(&[
            ("compression.type", "gzip"),
            ("compression.gzip.level", "1"),
        ])
        .unwrap();
        assert_eq!(c.compression_level(), Some(1));
        assert!(c.notes().is_empty(), "{:?}", c.notes());
        let c = cfg(&[("compression.type", "gzip")]).unwrap();
        assert_eq!(c.compression_level(), None, "-1: the codec's default");
        let c = cfg(&[("compression.type", "lz4"), ("compression.gzip.level", "9")]).unwrap();
        assert_eq!(
            c.compression_level(),
            None,
            "a gzip level does not apply to lz4"
        );
        for bad in ["0", "10", "-2", "fast"] {
            let e = cfg(&[("compression.gzip.level", bad)]).unwrap_err();
            assert!(e.to_string().contains("1 (fastest) to 9"), "{bad}: {e}");
        }
        let c = cfg(&[
            ("compression.type", "zstd"),
            ("compression.zstd.level", "19"),
        ])
        .unwrap();
        assert_eq!(c.compression_level(), None);
        assert!(
            c.notes()
                .iter()
                .any(|n| n.contains("`compression.zstd.level` is not applied")),
            "{:?}",
            c.notes()
        );
        assert!(cfg(&[("compression.zstd.level", "23")]).is_err());
        assert!(cfg(&[("compression.lz4.level", "18")]).is_err());
    }

    use super::*;

    fn map(pairs: &[(&str, &str)]) -> Result<ProducerConfig, ConfigError> {
        ProducerConfig::from_map(
            [("bootstrap.servers", "localhost:9092")]
                .iter()
                .chain(pairs)
                .copied(),
        )
    }

    #[test]
    fn java_defaults() {
        let c = map(&[]).unwrap();
        assert_eq!(c.acks, Acks::All);
        assert!(c.enable_idempotence);
        assert_eq!(c.batch_size, 16384);
        assert_eq!(c.linger, Duration::from_millis(5));
        assert_eq!(c.buffer_memory, 32 << 20);
        assert_eq!(c.max_request_size, 1 << 20);
        assert_eq!(c.delivery_timeout, Duration::from_millis(120_000));
        assert_eq!(c.retries, i32::MAX);
        assert_eq!(c.max_in_flight, 5);
        assert_eq!(c.connections_max_idle, Duration::from_millis(540_000));
        assert_eq!(
            c.metadata_recovery_strategy,
            MetadataRecoveryStrategy::Rebootstrap
        );
        assert_eq!(c.compression, Compression::None);
        let java_keys = [
            "bootstrap.servers",
            "client.id",
            "acks",
            "enable.idempotence",
            "transactional.id",
            "transaction.timeout.ms",
            "compression.type",
            "batch.size",
            "linger.ms",
            "buffer.memory",
            "max.block.ms",
            "max.request.size",
            "request.timeout.ms",
            "delivery.timeout.ms",
            "retries",
            "retry.backoff.ms",
            "retry.backoff.max.ms",
            "reconnect.backoff.ms",
            "reconnect.backoff.max.ms",
            "socket.connection.setup.timeout.ms",
            "socket.connection.setup.timeout.max.ms",
            "connections.max.idle.ms",
            "metadata.max.age.ms",
            "metadata.max.idle.ms",
            "metadata.recovery.strategy",
            "metadata.recovery.rebootstrap.trigger.ms",
            "metadata.cluster.check.enable",
            "max.in.flight.requests.per.connection",
            "partitioner.ignore.keys",
            "partitioner.adaptive.partitioning.enable",
            "partitioner.availability.timeout.ms",
            "compression.gzip.level",
            "compression.lz4.level",
            "compression.zstd.level",
        ];
        for key in java_keys {
            assert!(
                ProducerConfig::KEYS.iter().any(|(k, _)| *k == key),
                "{key} missing"
            );
        }
        // Plus the project's own: random.seed and connections.per.broker (default 1, as Java).
        let own = ["random.seed", "connections.per.broker"];
        for key in own {
            assert!(ProducerConfig::KEYS.iter().any(|(k, _)| *k == key), "{key}");
        }
        assert_eq!(ProducerConfig::KEYS.len(), java_keys.len() + own.len());
        let c = map(&[]).unwrap();
        assert_eq!(c.connections_per_broker, 1);
        assert_eq!(c.transactional_id, None);
        assert_eq!(c.transaction_timeout, Duration::from_secs(60));
    }

    #[test]
    fn errors_name_the_key_and_rule() {
        let e = map(&[("linger.msx", "5")]).unwrap_err();
        assert_eq!(
            e,
            ConfigError::UnknownKey {
                key: "linger.msx".into(),
                client: super::super::java_keys::Client::Producer,
            }
        );
        assert!(e.to_string().contains("#producerconfigs"), "{e}");
        // A consumer key in a producer's map: accepted, with a note.
        let c = map(&[("group.id", "g"), ("enable.auto.commit", "false")]).unwrap();
        assert_eq!(c.notes().len(), 2, "{:?}", c.notes());
        assert!(e.to_string().contains("linger.msx"));
        let e = map(&[("linger.ms", "soon")]).unwrap_err();
        assert_eq!(
            e.to_string(),
            "invalid value `soon` for `linger.ms`: expected milliseconds, at least 0"
        );
        let e = map(&[("acks", "2")]).unwrap_err();
        assert!(e.to_string().contains("expected 0, 1, all or -1"), "{e}");
        let e = map(&[("max.in.flight.requests.per.connection", "0")]).unwrap_err();
        assert!(e.to_string().contains("from 1 to"), "{e}");
        let e = ProducerConfig::from_map([("acks", "1")]).unwrap_err();
        assert!(e.to_string().contains("bootstrap.servers"), "{e}");
    }

    #[test]
    fn delivery_timeout_floor() {
        // Defaulted: quietly raised to linger + request timeout.
        let c = map(&[("linger.ms", "100000"), ("request.timeout.ms", "30000")]).unwrap();
        assert_eq!(c.delivery_timeout, Duration::from_millis(130_000));
        // Explicit and too low: an error.
        let e = map(&[
            ("delivery.timeout.ms", "1000"),
            ("request.timeout.ms", "30000"),
        ])
        .unwrap_err();
        assert!(
            matches!(
                e,
                ConfigError::Conflict {
                    key: "delivery.timeout.ms",
                    ..
                }
            ),
            "{e}"
        );
    }

    #[test]
    fn idempotence_conflicts() {
        for (key, value) in [
            ("acks", "1"),
            ("retries", "0"),
            ("max.in.flight.requests.per.connection", "6"),
        ] {
            // Explicit idempotence: each conflict is an error naming the key.
            let e = map(&[("enable.idempotence", "true"), (key, value)]).unwrap_err();
            assert!(
                matches!(e, ConfigError::Conflict { key: k, .. } if k == key),
                "{key}: {e}"
            );
            // Defaulted idempotence: the explicit setting quietly turns it off.
            let c = map(&[(key, value)]).unwrap();
            assert!(!c.enable_idempotence, "{key}");
        }
        assert!(map(&[("acks", "all")]).unwrap().enable_idempotence);
        assert!(
            map(&[("acks", "-1"), ("enable.idempotence", "true")])
                .unwrap()
                .enable_idempotence
        );
    }

    #[test]
    fn builder_matches_the_map() {
        let built = ProducerConfig::builder()
            .bootstrap_servers("a:1,b:2")
            .acks(Acks::Leader)
            .compression(Compression::Lz4)
            .linger(Duration::from_millis(20))
            .random_seed(7)
            .build()
            .unwrap();
        let mapped = ProducerConfig::from_map([
            ("bootstrap.servers", "a:1,b:2"),
            ("acks", "1"),
            ("compression.type", "lz4"),
            ("linger.ms", "20"),
            ("random.seed", "7"),
        ])
        .unwrap();
        assert_eq!(built, mapped);
        assert!(
            !built.enable_idempotence,
            "acks=1 turns defaulted idempotence off"
        );
        assert_eq!(
            built.bootstrap_servers,
            vec![HostPort::new("a", 1), HostPort::new("b", 2)]
        );
    }
}
