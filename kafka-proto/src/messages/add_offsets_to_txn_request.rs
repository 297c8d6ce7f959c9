//! AddOffsetsToTxn request (API key 25): add a group's offsets to a transaction.
//!
//! Versions 0-4, as in Kafka 4.1. Field lines are in wire order; [`crate::schema`] gives the syntax.

kafka_struct! {
    pub struct AddOffsetsToTxnRequest {
        /// The transactional id corresponding to the transaction.
        transactional_id: String [v ..],
        /// Current producer id in use by the transactional id.
        producer_id: i64 [v ..],
        /// Current epoch associated with the producer id.
        producer_epoch: i16 [v ..],
        /// The unique group identifier.
        group_id: String [v ..],
    }
}
