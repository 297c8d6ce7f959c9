//! GetTelemetrySubscriptions response (API key 71, KIP-714): the client's subscription.
//!
//! Version 0, as in Kafka 4.1. Field lines are in wire order; [`crate::schema`] gives the syntax.

use uuid::Uuid;

kafka_struct! {
    pub struct GetTelemetrySubscriptionsResponse {

        /// The duration in milliseconds for which the request was throttled due to a quota violation, or zero if the request did not violate any quota.
        throttle_time_ms: i32 [v ..],

        /// The error code, or 0 if there was no error.
        error_code: i16 [v ..],

        /// Assigned client instance id if ClientInstanceId was 0 in the request, else 0.
        client_instance_id: Uuid [v ..],

        /// Unique identifier for the current subscription set for this client instance.
        subscription_id: i32 [v ..],

        /// Compression types that broker accepts for the PushTelemetryRequest.
        accepted_compression_types: Vec<i8> [v ..],

        /// Configured push interval, which is the lowest configured interval in the current subscription set.
        push_interval_ms: i32 [v ..],

        /// The maximum bytes of binary data the broker accepts in PushTelemetryRequest.
        telemetry_max_bytes: i32 [v ..],

        /// Flag to indicate monotonic/counter metrics are to be emitted as deltas or cumulative values.
        delta_temporality: bool [v ..],

        /// Requested metrics prefix string match. Empty array: No metrics subscribed, Array[0] empty string: All metrics subscribed.
        requested_metrics: Vec<String> [v ..],

    }
}
