//! The broker side of the wire for tests and simulations: the [`ScriptedBroker`], a
//! [`SingleBroker`] with an in-memory log, and a seeded simulated cluster ([`SimCluster`]) with
//! its network ([`SimNet`]). It depends only on the codec's `broker` feature, never on
//! kafka-core, so kafka-core's own tests and doctests can use it.
#![warn(missing_docs)]

pub mod cluster;
mod fetch_session;
mod group;
pub mod net;
pub mod scripted;
pub mod security;
pub mod single;

pub use cluster::{BrokerWrite, ClusterConfig, ClusterStats, ConnKey, Fate, SimCluster, TxnState};
pub use kafka_proto as proto;
pub use net::{Delivery, NetConfig, NetStats, SimNet};
pub use scripted::{Output, Reply, ScriptedBroker, SimTime};
pub use security::{SaslConfig, Security};
pub use single::SingleBroker;
