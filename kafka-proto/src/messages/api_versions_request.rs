//! ApiVersions request (API key 18): discover the versions a broker supports.
//!
//! Versions 0-4, as in Kafka 4.1. Field lines are in wire order; [`crate::schema`] gives the syntax.

kafka_struct! {
    pub struct ApiVersionsRequest {
        /// The name of the client.
        client_software_name: String [v 3..],
        /// The version of the client.
        client_software_version: String [v 3..],
    }
}
