//! The broker side of the wire for tests and simulations. The scripted broker arrives with the
//! kafka-core issue and the simulated cluster with the simulation issue; today it exposes the
//! codec's broker directions, which is all it may depend on.
pub use kafka_proto as proto;
