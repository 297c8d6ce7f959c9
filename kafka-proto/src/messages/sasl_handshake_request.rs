//! SaslHandshake request (API key 17): choose a SASL mechanism.
//!
//! Versions 0-1, as in Kafka 4.1. Field lines are in wire order; [`crate::schema`] gives the syntax.

kafka_struct! {
    pub struct SaslHandshakeRequest {
        /// The SASL mechanism chosen by the client.
        mechanism: String [v ..],
    }
}
