//! The user API and driver loop shared by `kafka-tokio` and `kafka-asyncstd`.
//!
//! A client handle ([`Producer`], [`Consumer`], [`Admin`]) talks to one driver task over a
//! channel. The driver owns the sockets and one timer, feeds bytes and time into the sans-IO
//! core from `kafka-core`, and carries the core's outputs back out. It makes no Kafka
//! decision. The only runtime-specific code is the [`Runtime`] trait: spawn, connect, timer.
//!
//! Users depend on an adapter crate, which names the runtime; this crate is for writing a new
//! adapter.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod admin;
mod consumer;
mod driver;
#[cfg(feature = "metrics")]
mod facade;
mod producer;
mod runtime;

pub use admin::{Admin, TopicResults};
pub use consumer::{ConsumeError, Consumer, ConsumerEvent, ConsumerRecord, OffsetAndTimestamp};
#[cfg(feature = "metrics")]
pub use facade::report_metrics;
pub use kafka_core::admin::{
    AdminError, AlterConfigOp, BrokerMetadata, ClusterDescription, ClusterMetadata, ConfigEntry,
    ConfigResource, ConfigSource, GroupDescription, GroupListing, MemberDescription, NewTopic,
    OffsetSpec, PartitionMetadata, TopicMetadata,
};
pub use kafka_core::config::{Acks, Assignor, IsolationLevel, OffsetReset};
pub use kafka_core::config::{AdminConfig, ConfigError, ConsumerConfig, ProducerConfig};
pub use kafka_core::config::{SaslMechanism, Secret, SecurityProtocol};
pub use kafka_core::fetcher::{FetchError, StartFrom, SubscribeError};
pub use kafka_core::group::offsets::CommitError;
pub use kafka_core::metrics::{Metric, MetricKind, MetricsSnapshot};
pub use kafka_core::net::{AuthError, ConnectError, RequestError, TlsError};
/// Why the producer refused a record (inside [`SendError::Rejected`] and
/// [`DeliveryError::Refused`]).
pub use kafka_core::producer::SendError as CoreSendError;
pub use kafka_core::producer::{Certainty, DeliveryError, Topic};
pub use kafka_core::producer::{GroupMetadata, TransactionError, TxnOffset};
pub use kafka_core::proto::compression::Compression;
pub use kafka_core::proto::record::{Header, Headers};
pub use kafka_core::proto::{DecodeError, ErrorCode, NegotiationError};
pub use kafka_core::sasl::{OAuthToken, TokenFuture, TokenProvider};
pub use kafka_core::Instant;
pub use producer::{Delivered, Deliveries, Delivery, Failed, Producer, Record, SendError};
pub use runtime::{os_clock, Connecting, Runtime};
pub use uuid::Uuid;
