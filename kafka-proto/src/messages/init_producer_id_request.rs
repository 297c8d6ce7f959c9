//! InitProducerId request (API key 22): obtain a producer id and epoch for idempotence or transactions.
//!
//! Versions 0-5, as in Kafka 4.1. Field lines are in wire order; [`crate::schema`] gives the syntax.

kafka_struct! {
    pub struct InitProducerIdRequest {
        /// The transactional id, or null if the producer is not transactional.
        transactional_id: Option<String> [v ..],
        /// The time in ms to wait before aborting idle transactions sent by this producer. This is only relevant if a TransactionalId has been defined.
        transaction_timeout_ms: i32 [v ..],
        /// The producer id. This is used to disambiguate requests if a transactional id is reused following its expiration.
        producer_id: i64 [v 3.., default -1],
        /// The producer's current epoch. This will be checked against the producer epoch on the broker, and the request will return an error if they do not match.
        producer_epoch: i16 [v 3.., default -1],
    }
}
