//! ApiVersions request (API key 18): discover the versions a broker supports.
//!
//! Versions 0-5, as in Kafka 4.4. Field lines are in wire order; [`crate::schema`] gives the syntax.

kafka_struct! {
    pub struct ApiVersionsRequest {
        /// The name of the client.
        client_software_name: String [v 3..],
        /// The version of the client.
        client_software_version: String [v 3..],
        /// The cluster ID the client intends to connect to (KIP-1242). Provide both ClusterId and NodeId, if known.
        cluster_id: Option<String> [v 5.., default None],
        /// The node ID the client intends to connect to (KIP-1242). Provide both ClusterId and NodeId, if known.
        node_id: i32 [v 5.., default -1],
    }
}
