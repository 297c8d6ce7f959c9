//! FindCoordinator request (API key 10): locate a group or transaction coordinator.
//!
//! Versions 0-6, as in Kafka 4.1. Field lines are in wire order; [`crate::schema`] gives the syntax.

kafka_struct! {
    pub struct FindCoordinatorRequest {
        /// The coordinator key.
        key: String [v 0..=3],
        /// The coordinator key type. (group, transaction, share).
        key_type: i8 [v 1..],
        /// The coordinator keys.
        coordinator_keys: Vec<String> [v 4..],
    }
}
