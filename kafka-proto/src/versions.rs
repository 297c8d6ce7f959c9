//! Version negotiation: from a broker's ApiVersions reply, the highest version both sides speak.

use thiserror::Error;

use crate::api::ApiKey;
use crate::messages::api_versions_response::ApiVersionsResponse;

/// No version of an API is spoken by both this client and the broker.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum NegotiationError {
    /// The broker did not list the API at all.
    #[error("the broker does not support {api} at any version (this client needs {ours_min}-{ours_max})")]
    NotSupportedByBroker {
        /// The API.
        api: ApiKey,
        /// Our lowest version.
        ours_min: i16,
        /// Our highest version.
        ours_max: i16,
    },
    /// The broker's range and ours do not overlap.
    #[error("no common version of {api}: the broker speaks {broker_min}-{broker_max}, this client {ours_min}-{ours_max}")]
    NoCommonVersion {
        /// The API.
        api: ApiKey,
        /// The broker's lowest version.
        broker_min: i16,
        /// The broker's highest version.
        broker_max: i16,
        /// Our lowest version.
        ours_min: i16,
        /// Our highest version.
        ours_max: i16,
    },
}

/// The versions a broker advertised, and what they mean for each API we speak.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BrokerVersions {
    // (key, min, max), sorted by key. Brokers (Tansu among them) may list keys in any order.
    ranges: Vec<(i16, i16, i16)>,
}

impl BrokerVersions {
    /// Collects the ranges from an ApiVersions response.
    pub fn from_response(resp: &ApiVersionsResponse) -> Self {
        Self::from_ranges(
            resp.api_keys
                .iter()
                .map(|k| (k.api_key, k.min_version, k.max_version)),
        )
    }

    /// Collects `(api key, min, max)` ranges in any order.
    pub fn from_ranges(ranges: impl IntoIterator<Item = (i16, i16, i16)>) -> Self {
        let mut ranges: Vec<_> = ranges.into_iter().collect();
        ranges.sort_unstable();
        ranges.dedup_by_key(|r| r.0);
        BrokerVersions { ranges }
    }

    /// The broker's range for an API, if it listed it.
    pub fn broker_range(&self, api: ApiKey) -> Option<(i16, i16)> {
        self.ranges
            .binary_search_by_key(&api.key(), |r| r.0)
            .ok()
            .map(|i| (self.ranges[i].1, self.ranges[i].2))
    }

    /// The highest version of `api` both sides support.
    pub fn negotiate(&self, api: ApiKey) -> Result<i16, NegotiationError> {
        let (ours_min, ours_max) = (api.min_version(), api.max_version());
        let (broker_min, broker_max) =
            self.broker_range(api)
                .ok_or(NegotiationError::NotSupportedByBroker {
                    api,
                    ours_min,
                    ours_max,
                })?;
        let v = ours_max.min(broker_max);
        if v < ours_min.max(broker_min) {
            return Err(NegotiationError::NoCommonVersion {
                api,
                broker_min,
                broker_max,
                ours_min,
                ours_max,
            });
        }
        Ok(v)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::Decode;
    use bytes::Bytes;

    #[test]
    fn picks_the_highest_common_version_from_an_unsorted_list() {
        let b = BrokerVersions::from_ranges([(3, 0, 12), (0, 0, 11), (18, 0, 4), (1, 0, 17)]);
        assert_eq!(b.negotiate(ApiKey::Metadata), Ok(12));
        assert_eq!(b.negotiate(ApiKey::Produce), Ok(11));
        assert_eq!(b.negotiate(ApiKey::Fetch), Ok(17));
        assert_eq!(b.negotiate(ApiKey::ApiVersions), Ok(4));
    }

    #[test]
    fn typed_errors_when_nothing_overlaps() {
        let b = BrokerVersions::from_ranges([(0, 0, 2)]);
        assert_eq!(
            b.negotiate(ApiKey::Produce),
            Err(NegotiationError::NoCommonVersion {
                api: ApiKey::Produce,
                broker_min: 0,
                broker_max: 2,
                ours_min: 3,
                ours_max: 13
            })
        );
        assert!(matches!(
            b.negotiate(ApiKey::Fetch),
            Err(NegotiationError::NotSupportedByBroker { .. })
        ));
    }

    #[test]
    fn unsupported_version_reply_is_read_at_v0() {
        // A v0 body: error 35 (UNSUPPORTED_VERSION), then [ApiVersions 0..=2].
        let body = Bytes::from_static(&[0, 35, 0, 0, 0, 1, 0, 18, 0, 0, 0, 2]);
        // The typed decoder falls back to v0 by itself.
        let resp = ApiVersionsResponse::decode(&body, 3).unwrap();
        assert_eq!(resp.error_code, 35);
        assert_eq!(resp.api_keys.len(), 1);
        assert_eq!(resp.api_keys[0].api_key, 18);
        assert_eq!(resp.api_keys[0].max_version, 2);
    }
}
