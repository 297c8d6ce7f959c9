//! The sans-IO Kafka client core: deterministic state machines that make every Kafka decision
//! and never touch a socket, a clock or a thread.
//!
//! # The run-loop contract
//!
//! - **Inputs** carry `now`, an [`Instant`] on the caller's monotonic clock (real or virtual):
//!   user commands ([`Producer::send`], `flush`, `close`), network facts (`handle_connected`,
//!   `handle_connect_failed`, `handle_received`, `handle_closed`) and `handle_timeout`.
//! - **Outputs** are drained from `poll_output` until it returns `None`: connect to a host:port
//!   under a connection id the core chose, send bytes on a connection, close one, or a user event.
//! - **`poll_timeout`** is a pure query: the instant at which to call `handle_timeout` next.
//! - These network inputs and outputs are the [`net::Machine`] trait's, written once for the
//!   three clients ([`Producer`], [`Consumer`], [`Admin`]): bring it into scope to drive one,
//!   or write a driver once for all three against it.
//! - **Randomness** (jitter, bootstrap order, partition choice) comes only from `random.seed`,
//!   so the same inputs always give byte-identical outputs.
//!
//! Record timestamps are wall-clock data, not time: they arrive on the record, and adapters fill
//! them in when the user leaves them out.
//!
//! # Example: a producer driven by hand
//!
//! The "network" here is [`kafka_sim::SingleBroker`], a one-node broker with an in-memory log;
//! an adapter does the same with sockets and a timer.
//!
//! ```
//! use kafka_core::net::{Machine, Transmit};
//! use kafka_core::producer::{Outcome, Output, ProducerEvent, ProducerRecord};
//! use kafka_core::{Instant, Producer, ProducerConfig};
//! use kafka_sim::SingleBroker;
//!
//! let cluster = SingleBroker::new("broker", 9092, 3);
//! let config = ProducerConfig::from_map([("bootstrap.servers", "broker:9092")]).unwrap();
//! let mut producer = Producer::new(config); // connects nothing yet
//! let mut now = Instant::ZERO;
//! let mut conns = std::collections::BTreeMap::new();
//!
//! let token = producer.send(ProducerRecord::new("greetings", "hello", 1_700_000_000_000), now).unwrap();
//! let outcome = 'run: loop {
//!     while let Some(output) = producer.poll_output() {
//!         match output {
//!             Output::Transmit(Transmit::Connect { conn, addr }) => {
//!                 assert_eq!(addr.to_string(), "broker:9092");
//!                 conns.insert(conn, cluster.connection());
//!                 producer.handle_connected(conn, now);
//!             }
//!             Output::Transmit(Transmit::Send { conn, bytes }) => {
//!                 let reply = conns.get_mut(&conn).unwrap().receive(&bytes).unwrap();
//!                 producer.handle_received(conn, &reply.bytes, now);
//!             }
//!             Output::Transmit(Transmit::Close { conn }) => drop(conns.remove(&conn)),
//!             // Deliveries come a batch at a time; a failure, a record at a time.
//!             Output::Event(ProducerEvent::Delivered(batch)) => {
//!                 if let Some(outcome) = batch.outcome(token) {
//!                     break 'run outcome;
//!                 }
//!             }
//!             Output::Event(ProducerEvent::Outcome(t, outcome)) if t == token => break 'run outcome,
//!             _ => {} // other events, and kinds of output added later (non_exhaustive)
//!         }
//!     }
//!     now = producer.poll_timeout().expect("work is pending"); // jump virtual time
//!     producer.handle_timeout(now);
//! };
//! assert!(matches!(outcome, Outcome::Delivered { offset: Some(0), .. }));
//! assert!(now.as_nanos() >= 5_000_000, "linger.ms (5) passed in virtual time");
//! ```
#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod admin;
#[doc(hidden)] // internal: the retry schedule behind NetConfig, not a stable API
pub mod backoff;
pub mod config;
mod coordinator;
pub mod fetcher;
pub mod group;
mod lookup;
pub mod metadata;
pub mod metrics;
pub mod net;
pub mod partitioner;
pub mod producer;
mod rng;
pub mod sasl;
pub mod time;
pub mod topic;

pub use admin::Admin;
pub use config::{Acks, AdminConfig, ConfigError, ConsumerConfig, ProducerConfig};
pub use fetcher::Consumer;
#[allow(deprecated)]
pub use fetcher::Fetcher;
pub use kafka_proto as proto;
pub use producer::Producer;
pub use time::Instant;
