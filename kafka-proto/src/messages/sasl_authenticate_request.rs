//! SaslAuthenticate request (API key 36): exchange SASL authentication bytes.
//!
//! Versions 0-2, as in Kafka 4.1. Field lines are in wire order; [`crate::schema`] gives the syntax.

use bytes::Bytes;

kafka_struct! {
    pub struct SaslAuthenticateRequest {
        /// The SASL authentication bytes from the client, as defined by the SASL mechanism.
        auth_bytes: Bytes [v ..],
    }
}
