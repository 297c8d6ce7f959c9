//! DescribeCluster response (API key 60): the cluster id, controller and brokers.
//!
//! Versions 0-2, as in Kafka 4.1. Field lines are in wire order; [`crate::schema`] gives the syntax.

kafka_struct! {
    pub struct DescribeClusterBroker {

        /// The broker ID.
        broker_id: i32 [v ..],

        /// The broker hostname.
        host: String [v ..],

        /// The broker port.
        port: i32 [v ..],

        /// The rack of the broker, or null if it has not been assigned to a rack.
        rack: Option<String> [v .., default None],

        /// Whether the broker is fenced
        is_fenced: bool [v 2..],

    }
}

kafka_struct! {
    pub struct DescribeClusterResponse {

        /// The duration in milliseconds for which the request was throttled due to a quota violation, or zero if the request did not violate any quota.
        throttle_time_ms: i32 [v ..],

        /// The top-level error code, or 0 if there was no error
        error_code: i16 [v ..],

        /// The top-level error message, or null if there was no error.
        error_message: Option<String> [v .., default None],

        /// The endpoint type that was described. 1=brokers, 2=controllers.
        endpoint_type: i8 [v 1.., default 1],

        /// The cluster ID that responding broker belongs to.
        cluster_id: String [v ..],

        /// The ID of the controller broker.
        controller_id: i32 [v .., default -1],

        /// Each broker in the response.
        brokers: Vec<DescribeClusterBroker> [v ..],

        /// 32-bit bitfield to represent authorized operations for this cluster.
        cluster_authorized_operations: i32 [v .., default -2147483648],

    }
}
