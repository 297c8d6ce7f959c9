//! SyncGroup response (API key 14): distribute and receive partition assignments.
//!
//! Versions 0-5, as in Kafka 4.1. Field lines are in wire order; [`crate::schema`] gives the syntax.

use bytes::Bytes;

kafka_struct! {
    pub struct SyncGroupResponse {
        /// The duration in milliseconds for which the request was throttled due to a quota violation, or zero if the request did not violate any quota.
        throttle_time_ms: i32 [v 1..],
        /// The error code, or 0 if there was no error.
        error_code: i16 [v ..],
        /// The group protocol type.
        protocol_type: Option<String> [v 5.., default None],
        /// The group protocol name.
        protocol_name: Option<String> [v 5.., default None],
        /// The member assignment.
        assignment: Bytes [v ..],
    }
}
