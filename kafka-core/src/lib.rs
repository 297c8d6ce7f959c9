//! The sans-IO Kafka client core. Its state machines arrive with the kafka-core issue; today it re-exports the codec.
pub use kafka_proto as proto;
