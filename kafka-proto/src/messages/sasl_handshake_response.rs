//! SaslHandshake response (API key 17): choose a SASL mechanism.
//!
//! Versions 0-1, as in Kafka 4.1. Field lines are in wire order; [`crate::schema`] gives the syntax.

kafka_struct! {
    pub struct SaslHandshakeResponse {
        /// The error code, or 0 if there was no error.
        error_code: i16 [v ..],
        /// The mechanisms enabled in the server.
        mechanisms: Vec<String> [v ..],
    }
}
