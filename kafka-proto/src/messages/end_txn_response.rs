//! EndTxn response (API key 26): commit or abort a transaction.
//!
//! Versions 0-5, as in Kafka 4.1. Field lines are in wire order; [`crate::schema`] gives the syntax.

kafka_struct! {
    pub struct EndTxnResponse {
        /// The duration in milliseconds for which the request was throttled due to a quota violation, or zero if the request did not violate any quota.
        throttle_time_ms: i32 [v ..],
        /// The error code, or 0 if there was no error.
        error_code: i16 [v ..],
        /// The producer ID.
        producer_id: i64 [v 5.., default -1],
        /// The current epoch associated with the producer.
        producer_epoch: i16 [v 5.., default -1],
    }
}
