//! The sans-IO Kafka client core: deterministic state machines that make every Kafka decision
//! and never touch a socket, a clock or a thread.
//!
//! Every input carries `now` (an [`Instant`] on the caller's clock), and every random choice
//! comes from `random.seed`, so the same inputs always produce the same outputs.
//!
//! Built so far: configuration ([`config`]), time ([`time`]) and the Java-compatible partitioner
//! ([`partitioner`]). The connection manager, metadata, producer and fetcher are being built
//! on these (see the kafka-core issue).
#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod backoff;
pub mod config;
pub mod metadata;
pub mod net;
pub mod partitioner;
pub mod producer;
pub mod rng;
pub mod time;

pub use config::{Acks, ConfigError, ProducerConfig};
pub use kafka_proto as proto;
pub use time::Instant;
