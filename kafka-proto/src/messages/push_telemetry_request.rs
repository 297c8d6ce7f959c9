//! PushTelemetry request (API key 72, KIP-714): the subscribed metrics, OTLP-encoded.
//!
//! Version 0, as in Kafka 4.1. Field lines are in wire order; [`crate::schema`] gives the syntax.

use bytes::Bytes;
use uuid::Uuid;

kafka_struct! {
    pub struct PushTelemetryRequest {

        /// Unique id for this client instance.
        client_instance_id: Uuid [v ..],

        /// Unique identifier for the current subscription.
        subscription_id: i32 [v ..],

        /// Client is terminating the connection.
        terminating: bool [v ..],

        /// Compression codec used to compress the metrics.
        compression_type: i8 [v ..],

        /// Metrics encoded in OpenTelemetry MetricsData v1 protobuf format.
        metrics: Bytes [v ..],

    }
}
