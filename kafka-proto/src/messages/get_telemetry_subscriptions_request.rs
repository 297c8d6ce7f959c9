//! GetTelemetrySubscriptions request (API key 71, KIP-714): which metrics the broker wants the
//! client to push, and how often.
//!
//! Version 0, as in Kafka 4.1. Field lines are in wire order; [`crate::schema`] gives the syntax.

use uuid::Uuid;

kafka_struct! {
    pub struct GetTelemetrySubscriptionsRequest {

        /// Unique id for this client instance, must be set to 0 on the first request.
        client_instance_id: Uuid [v ..],

    }
}
