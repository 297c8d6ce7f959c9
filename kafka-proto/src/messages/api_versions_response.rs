//! ApiVersions response (API key 18): discover the versions a broker supports.
//!
//! Versions 0-5, as in Kafka 4.4. Field lines are in wire order; [`crate::schema`] gives the syntax.

kafka_struct! {
    pub struct ApiVersion {
        /// The API index.
        api_key: i16 [v ..],
        /// The minimum supported version, inclusive.
        min_version: i16 [v ..],
        /// The maximum supported version, inclusive.
        max_version: i16 [v ..],
    }
}

kafka_struct! {
    pub struct ApiVersionsResponse {
        /// The top-level error code.
        error_code: i16 [v ..],
        /// The APIs supported by the broker.
        api_keys: Vec<ApiVersion> [v ..],
        /// The duration in milliseconds for which the request was throttled due to a quota violation, or zero if the request did not violate any quota.
        throttle_time_ms: i32 [v 1..],
        /// Features supported by the broker. Note: in v0-v3, features with MinSupportedVersion = 0 are omitted.
        supported_features: Vec<SupportedFeatureKey> [v 3.., tag 0],
        /// The monotonically increasing epoch for the finalized features information. Valid values are >= 0. A value of -1 is special and represents unknown epoch.
        finalized_features_epoch: i64 [v 3.., tag 1, default -1],
        /// List of cluster-wide finalized features. The information is valid only if FinalizedFeaturesEpoch >= 0.
        finalized_features: Vec<FinalizedFeatureKey> [v 3.., tag 2],
        /// Set by a KRaft controller if the required configurations for ZK migration are present.
        zk_migration_ready: bool [v 3.., tag 3],
    }
}

kafka_struct! {
    pub struct FinalizedFeatureKey {
        /// The name of the feature.
        name: String [v 3..],
        /// The cluster-wide finalized max version level for the feature.
        max_version_level: i16 [v 3..],
        /// The cluster-wide finalized min version level for the feature.
        min_version_level: i16 [v 3..],
    }
}

kafka_struct! {
    pub struct SupportedFeatureKey {
        /// The name of the feature.
        name: String [v 3..],
        /// The minimum supported version for the feature.
        min_version: i16 [v 3..],
        /// The maximum supported version for the feature.
        max_version: i16 [v 3..],
    }
}
