//! PushTelemetry response (API key 72, KIP-714).
//!
//! Version 0, as in Kafka 4.1. Field lines are in wire order; [`crate::schema`] gives the syntax.

kafka_struct! {
    pub struct PushTelemetryResponse {

        /// The duration in milliseconds for which the request was throttled due to a quota violation, or zero if the request did not violate any quota.
        throttle_time_ms: i32 [v ..],

        /// The error code, or 0 if there was no error.
        error_code: i16 [v ..],

    }
}
