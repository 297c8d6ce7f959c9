//! The broker side of the wire for tests and simulations: today the [`ScriptedBroker`] and a [`SingleBroker`] with an in-memory log, later a
//! seeded simulated cluster. It depends only on the codec's `broker` feature, never on
//! kafka-core, so kafka-core's own tests and doctests can use it.
#![warn(missing_docs)]

mod fetch_session;
mod group;
pub mod scripted;
pub mod single;

pub use kafka_proto as proto;
pub use scripted::{Output, Reply, ScriptedBroker, SimTime};
pub use single::SingleBroker;
