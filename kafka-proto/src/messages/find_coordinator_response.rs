//! FindCoordinator response (API key 10): locate a group or transaction coordinator.
//!
//! Versions 0-6, as in Kafka 4.1. Field lines are in wire order; [`crate::schema`] gives the syntax.

kafka_struct! {
    pub struct Coordinator {
        /// The coordinator key.
        key: String [v 4..],
        /// The node id.
        node_id: i32 [v 4..],
        /// The host name.
        host: String [v 4..],
        /// The port.
        port: i32 [v 4..],
        /// The error code, or 0 if there was no error.
        error_code: i16 [v 4..],
        /// The error message, or null if there was no error.
        error_message: Option<String> [v 4..],
    }
}

kafka_struct! {
    pub struct FindCoordinatorResponse {
        /// The duration in milliseconds for which the request was throttled due to a quota violation, or zero if the request did not violate any quota.
        throttle_time_ms: i32 [v 1..],
        /// The error code, or 0 if there was no error.
        error_code: i16 [v 0..=3],
        /// The error message, or null if there was no error.
        error_message: Option<String> [v 1..=3],
        /// The node id.
        node_id: i32 [v 0..=3],
        /// The host name.
        host: String [v 0..=3],
        /// The port.
        port: i32 [v 0..=3],
        /// Each coordinator result in the response.
        coordinators: Vec<Coordinator> [v 4..],
    }
}
