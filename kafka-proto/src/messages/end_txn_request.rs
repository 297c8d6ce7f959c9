//! EndTxn request (API key 26): commit or abort a transaction.
//!
//! Versions 0-5, as in Kafka 4.1. Field lines are in wire order; [`crate::schema`] gives the syntax.

kafka_struct! {
    pub struct EndTxnRequest {
        /// The ID of the transaction to end.
        transactional_id: String [v ..],
        /// The producer ID.
        producer_id: i64 [v ..],
        /// The current epoch associated with the producer.
        producer_epoch: i16 [v ..],
        /// True if the transaction was committed, false if it was aborted.
        committed: bool [v ..],
    }
}
