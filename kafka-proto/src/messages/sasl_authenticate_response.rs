//! SaslAuthenticate response (API key 36): exchange SASL authentication bytes.
//!
//! Versions 0-2, as in Kafka 4.1. Field lines are in wire order; [`crate::schema`] gives the syntax.

use bytes::Bytes;

kafka_struct! {
    pub struct SaslAuthenticateResponse {
        /// The error code, or 0 if there was no error.
        error_code: i16 [v ..],
        /// The error message, or null if there was no error.
        error_message: Option<String> [v ..],
        /// The SASL authentication bytes from the server, as defined by the SASL mechanism.
        auth_bytes: Bytes [v ..],
        /// Number of milliseconds after which only re-authentication over the existing connection to create a new session can occur.
        session_lifetime_ms: i64 [v 1..],
    }
}
