//! The tokio adapter. Its driver arrives with the adapters issue; today it re-exports the core.
pub use kafka_core as core;
