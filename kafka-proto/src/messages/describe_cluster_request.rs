//! DescribeCluster request (API key 60): the cluster id, controller and brokers.
//!
//! Versions 0-2, as in Kafka 4.1. Field lines are in wire order; [`crate::schema`] gives the syntax.

kafka_struct! {
    pub struct DescribeClusterRequest {

        /// Whether to include cluster authorized operations.
        include_cluster_authorized_operations: bool [v ..],

        /// The endpoint type to describe. 1=brokers, 2=controllers.
        endpoint_type: i8 [v 1.., default 1],

        /// Whether to include fenced brokers when listing brokers.
        include_fenced_brokers: bool [v 2..],

    }
}
