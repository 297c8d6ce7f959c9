//! The API table: every API's key, version range and flexible-version boundary, declared once,
//! and the typed and dynamic entry points generated from it.

use std::fmt::Debug;

use bytes::{Bytes, BytesMut};

use crate::messages::*;
use crate::wire::{Ctx, Encoder, Reader, Wire};
use crate::{DecodeError, EncodeError};

/// Encodes a message body (no header, no size prefix) at a version.
pub trait Encode {
    /// Appends the body encoded at `version` to an [`Encoder`] (which may keep large byte
    /// fields out of its buffer).
    fn encode_into(&self, enc: &mut Encoder, version: i16) -> Result<(), EncodeError>;

    /// Appends the body encoded at `version`.
    fn encode(&self, buf: &mut BytesMut, version: i16) -> Result<(), EncodeError> {
        Encoder::wrap(buf, |enc| self.encode_into(enc, version))
    }
}

/// Decodes a message body (no header, no size prefix) at a version.
pub trait Decode: Sized {
    /// Decodes exactly the whole of `buf` at `version`; leftover bytes are an error.
    fn decode(buf: &Bytes, version: i16) -> Result<Self, DecodeError>;
}

/// A request this client sends.
pub trait Request: Encode + Debug + Clone + PartialEq + Default {
    /// The API this request belongs to.
    const API_KEY: ApiKey;
    /// The response the broker answers with.
    type Response: Response;
}

/// A response this client receives.
pub trait Response: Decode + Debug + Clone + PartialEq + Default {
    /// The API this response belongs to.
    const API_KEY: ApiKey;
}

fn check_version(key: ApiKey, version: i16) -> Option<Ctx> {
    if key.supports(version) {
        Some(key.ctx(version))
    } else {
        None
    }
}

pub(crate) fn encode_body<T: Wire>(
    msg: &T,
    key: ApiKey,
    buf: &mut Encoder,
    version: i16,
) -> Result<(), EncodeError> {
    let ctx = check_version(key, version).ok_or(EncodeError::UnsupportedVersion {
        api: key.name(),
        version,
    })?;
    msg.write(buf, ctx)
}

/// Decodes a response body. A broker that does not support the requested ApiVersions version
/// answers UNSUPPORTED_VERSION with a v0 body (and, like every ApiVersions reply, a v0 header)
/// listing what it does support. As in the Java client, a body that does not parse at the
/// requested version is parsed again at v0. No other API has this rule.
///
/// Bytes after a complete response body are ignored, as the Java client ignores them:
/// librdkafka's mock broker, for one, appends a byte to some Metadata replies. Requests (the
/// broker side) stay strict.
fn decode_response_body<T: Wire>(key: ApiKey, buf: &Bytes, version: i16) -> Result<T, DecodeError> {
    match read_body(key, buf, version, false) {
        Err(_) if key == ApiKey::ApiVersions && version != 0 => read_body(key, buf, 0, false),
        other => other,
    }
}

#[cfg(feature = "broker")]
pub(crate) fn decode_body<T: Wire>(
    key: ApiKey,
    buf: &Bytes,
    version: i16,
) -> Result<T, DecodeError> {
    read_body(key, buf, version, true)
}

fn read_body<T: Wire>(
    key: ApiKey,
    buf: &Bytes,
    version: i16,
    strict: bool,
) -> Result<T, DecodeError> {
    let ctx = check_version(key, version).ok_or(DecodeError::UnsupportedVersion {
        api: key.name(),
        version,
    })?;
    let mut r = Reader::new(buf);
    let msg = T::read(&mut r, ctx)?;
    if strict {
        r.finish()?;
    }
    Ok(msg)
}

macro_rules! kafka_apis {
    ($(
        $name:ident = $key:literal, $req_mod:ident :: $req:ident, $resp_mod:ident :: $resp:ident,
        $min:literal ..= $max:literal, flexible $flex:expr;
    )*) => {
        /// Every API this codec implements.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        #[non_exhaustive]
        #[repr(i16)]
        pub enum ApiKey {
            $( #[doc = concat!("API key ", stringify!($key), ".")] $name = $key, )*
        }

        impl ApiKey {
            /// Every API, in key order.
            pub const ALL: &'static [ApiKey] = &[$(ApiKey::$name),*];

            /// The API with this numeric key, if this codec implements it.
            pub fn from_i16(key: i16) -> Option<ApiKey> {
                match key {
                    $( $key => Some(ApiKey::$name), )*
                    _ => None,
                }
            }

            /// The numeric key.
            pub fn key(self) -> i16 {
                self as i16
            }

            /// The API's name, as Kafka spells it.
            pub fn name(self) -> &'static str {
                match self {
                    $( ApiKey::$name => stringify!($name), )*
                }
            }

            /// The lowest version this codec implements (Kafka 4.0's minimum).
            pub fn min_version(self) -> i16 {
                match self {
                    $( ApiKey::$name => $min, )*
                }
            }

            /// The highest stable version this codec implements (Kafka 4.1's maximum).
            pub fn max_version(self) -> i16 {
                match self {
                    $( ApiKey::$name => $max, )*
                }
            }

            /// The first flexible version (compact encodings and tagged fields), if any.
            pub fn first_flexible_version(self) -> Option<i16> {
                match self {
                    $( ApiKey::$name => $flex, )*
                }
            }
        }

        $(
            impl Request for $req_mod::$req {
                const API_KEY: ApiKey = ApiKey::$name;
                type Response = $resp_mod::$resp;
            }
            impl Response for $resp_mod::$resp {
                const API_KEY: ApiKey = ApiKey::$name;
            }
            impl Encode for $req_mod::$req {
                fn encode_into(&self, enc: &mut Encoder, version: i16) -> Result<(), EncodeError> {
                    encode_body(self, ApiKey::$name, enc, version)
                }
            }
            impl Decode for $resp_mod::$resp {
                fn decode(buf: &Bytes, version: i16) -> Result<Self, DecodeError> {
                    decode_response_body(ApiKey::$name, buf, version)
                }
            }
            #[cfg(feature = "broker")]
            impl Decode for $req_mod::$req {
                fn decode(buf: &Bytes, version: i16) -> Result<Self, DecodeError> {
                    decode_body(ApiKey::$name, buf, version)
                }
            }
            #[cfg(feature = "broker")]
            impl Encode for $resp_mod::$resp {
                fn encode_into(&self, enc: &mut Encoder, version: i16) -> Result<(), EncodeError> {
                    encode_body(self, ApiKey::$name, enc, version)
                }
            }
        )*

        /// Any response body, for code that handles responses by API key at run time.
        #[derive(Debug, Clone, PartialEq)]
        #[non_exhaustive]
        pub enum ResponseBody {
            $( #[doc = concat!("A ", stringify!($name), " response.")] $name($resp_mod::$resp), )*
        }

        impl ResponseBody {
            /// Decodes a response body for `key` at `version`.
            pub fn decode(key: ApiKey, version: i16, buf: &Bytes) -> Result<Self, DecodeError> {
                match key {
                    $( ApiKey::$name => Ok(ResponseBody::$name(Decode::decode(buf, version)?)), )*
                }
            }

            /// The API this response belongs to.
            pub fn api_key(&self) -> ApiKey {
                match self {
                    $( ResponseBody::$name(_) => ApiKey::$name, )*
                }
            }

            /// Encodes the body at `version` (broker side).
            #[cfg(feature = "broker")]
            pub fn encode(&self, buf: &mut BytesMut, version: i16) -> Result<(), EncodeError> {
                match self {
                    $( ResponseBody::$name(m) => m.encode(buf, version), )*
                }
            }
        }

        /// Any request body, as a broker receives it (feature `broker`).
        #[cfg(feature = "broker")]
        #[derive(Debug, Clone, PartialEq)]
        #[non_exhaustive]
        pub enum RequestBody {
            $( #[doc = concat!("A ", stringify!($name), " request.")] $name($req_mod::$req), )*
        }

        #[cfg(feature = "broker")]
        impl RequestBody {
            /// Decodes a request body for `key` at `version`.
            pub fn decode(key: ApiKey, version: i16, buf: &Bytes) -> Result<Self, DecodeError> {
                match key {
                    $( ApiKey::$name => Ok(RequestBody::$name(Decode::decode(buf, version)?)), )*
                }
            }

            /// The API this request belongs to.
            pub fn api_key(&self) -> ApiKey {
                match self {
                    $( RequestBody::$name(_) => ApiKey::$name, )*
                }
            }

            /// Encodes the body at `version`.
            pub fn encode(&self, buf: &mut BytesMut, version: i16) -> Result<(), EncodeError> {
                match self {
                    $( RequestBody::$name(m) => m.encode(buf, version), )*
                }
            }
        }
    };
}

/// The API table, declared once: each row's key, request and response types, versions and
/// first flexible version, handed to a macro (`kafka_apis` below; the testkit's random bodies).
macro_rules! api_table {
    ($m:ident) => {
        $m! {
            Produce = 0, produce_request::ProduceRequest, produce_response::ProduceResponse, 3..=13, flexible Some(9);
            Fetch = 1, fetch_request::FetchRequest, fetch_response::FetchResponse, 4..=18, flexible Some(12);
            ListOffsets = 2, list_offsets_request::ListOffsetsRequest, list_offsets_response::ListOffsetsResponse, 1..=11, flexible Some(6);
            Metadata = 3, metadata_request::MetadataRequest, metadata_response::MetadataResponse, 0..=13, flexible Some(9);
            OffsetCommit = 8, offset_commit_request::OffsetCommitRequest, offset_commit_response::OffsetCommitResponse, 2..=10, flexible Some(8);
            OffsetFetch = 9, offset_fetch_request::OffsetFetchRequest, offset_fetch_response::OffsetFetchResponse, 1..=10, flexible Some(6);
            FindCoordinator = 10, find_coordinator_request::FindCoordinatorRequest, find_coordinator_response::FindCoordinatorResponse, 0..=6, flexible Some(3);
            JoinGroup = 11, join_group_request::JoinGroupRequest, join_group_response::JoinGroupResponse, 0..=9, flexible Some(6);
            Heartbeat = 12, heartbeat_request::HeartbeatRequest, heartbeat_response::HeartbeatResponse, 0..=4, flexible Some(4);
            LeaveGroup = 13, leave_group_request::LeaveGroupRequest, leave_group_response::LeaveGroupResponse, 0..=5, flexible Some(4);
            SyncGroup = 14, sync_group_request::SyncGroupRequest, sync_group_response::SyncGroupResponse, 0..=5, flexible Some(4);
            DescribeGroups = 15, describe_groups_request::DescribeGroupsRequest, describe_groups_response::DescribeGroupsResponse, 0..=6, flexible Some(5);
            ListGroups = 16, list_groups_request::ListGroupsRequest, list_groups_response::ListGroupsResponse, 0..=5, flexible Some(3);
            SaslHandshake = 17, sasl_handshake_request::SaslHandshakeRequest, sasl_handshake_response::SaslHandshakeResponse, 0..=1, flexible None;
            ApiVersions = 18, api_versions_request::ApiVersionsRequest, api_versions_response::ApiVersionsResponse, 0..=5, flexible Some(3);
            CreateTopics = 19, create_topics_request::CreateTopicsRequest, create_topics_response::CreateTopicsResponse, 2..=7, flexible Some(5);
            DeleteTopics = 20, delete_topics_request::DeleteTopicsRequest, delete_topics_response::DeleteTopicsResponse, 1..=6, flexible Some(4);
            DeleteRecords = 21, delete_records_request::DeleteRecordsRequest, delete_records_response::DeleteRecordsResponse, 0..=2, flexible Some(2);
            InitProducerId = 22, init_producer_id_request::InitProducerIdRequest, init_producer_id_response::InitProducerIdResponse, 0..=5, flexible Some(2);
            OffsetForLeaderEpoch = 23, offset_for_leader_epoch_request::OffsetForLeaderEpochRequest, offset_for_leader_epoch_response::OffsetForLeaderEpochResponse, 2..=4, flexible Some(4);
            AddPartitionsToTxn = 24, add_partitions_to_txn_request::AddPartitionsToTxnRequest, add_partitions_to_txn_response::AddPartitionsToTxnResponse, 0..=5, flexible Some(3);
            AddOffsetsToTxn = 25, add_offsets_to_txn_request::AddOffsetsToTxnRequest, add_offsets_to_txn_response::AddOffsetsToTxnResponse, 0..=4, flexible Some(3);
            EndTxn = 26, end_txn_request::EndTxnRequest, end_txn_response::EndTxnResponse, 0..=5, flexible Some(3);
            TxnOffsetCommit = 28, txn_offset_commit_request::TxnOffsetCommitRequest, txn_offset_commit_response::TxnOffsetCommitResponse, 0..=6, flexible Some(3);
            DescribeConfigs = 32, describe_configs_request::DescribeConfigsRequest, describe_configs_response::DescribeConfigsResponse, 1..=4, flexible Some(4);
            SaslAuthenticate = 36, sasl_authenticate_request::SaslAuthenticateRequest, sasl_authenticate_response::SaslAuthenticateResponse, 0..=2, flexible Some(2);
            CreatePartitions = 37, create_partitions_request::CreatePartitionsRequest, create_partitions_response::CreatePartitionsResponse, 0..=3, flexible Some(2);
            DeleteGroups = 42, delete_groups_request::DeleteGroupsRequest, delete_groups_response::DeleteGroupsResponse, 0..=3, flexible Some(2);
            IncrementalAlterConfigs = 44, incremental_alter_configs_request::IncrementalAlterConfigsRequest, incremental_alter_configs_response::IncrementalAlterConfigsResponse, 0..=1, flexible Some(1);
            DescribeCluster = 60, describe_cluster_request::DescribeClusterRequest, describe_cluster_response::DescribeClusterResponse, 0..=2, flexible Some(0);
            ConsumerGroupHeartbeat = 68, consumer_group_heartbeat_request::ConsumerGroupHeartbeatRequest, consumer_group_heartbeat_response::ConsumerGroupHeartbeatResponse, 0..=1, flexible Some(0);
            ConsumerGroupDescribe = 69, consumer_group_describe_request::ConsumerGroupDescribeRequest, consumer_group_describe_response::ConsumerGroupDescribeResponse, 0..=1, flexible Some(0);
            GetTelemetrySubscriptions = 71, get_telemetry_subscriptions_request::GetTelemetrySubscriptionsRequest, get_telemetry_subscriptions_response::GetTelemetrySubscriptionsResponse, 0..=0, flexible Some(0);
            PushTelemetry = 72, push_telemetry_request::PushTelemetryRequest, push_telemetry_response::PushTelemetryResponse, 0..=0, flexible Some(0);
        }
    };
}
#[cfg(feature = "testkit")]
pub(crate) use api_table;

api_table!(kafka_apis);

impl ApiKey {
    /// Whether this codec implements `version` of the API.
    pub fn supports(self, version: i16) -> bool {
        (self.min_version()..=self.max_version()).contains(&version)
    }

    /// Whether `version` uses the flexible encoding.
    pub fn is_flexible(self, version: i16) -> bool {
        self.first_flexible_version().is_some_and(|f| version >= f)
    }

    /// The encoding context for a version.
    pub fn ctx(self, version: i16) -> Ctx {
        Ctx {
            version,
            flexible: self.is_flexible(version),
        }
    }

    /// The request header version: 2 for flexible versions, else 1.
    pub fn request_header_version(self, version: i16) -> i16 {
        if self.is_flexible(version) {
            2
        } else {
            1
        }
    }

    /// The response header version: 1 for flexible versions, else 0.
    ///
    /// ApiVersions always answers with header v0, so that a client can read the reply
    /// before it knows which versions the broker speaks.
    pub fn response_header_version(self, version: i16) -> i16 {
        if self != ApiKey::ApiVersions && self.is_flexible(version) {
            1
        } else {
            0
        }
    }
}

impl std::fmt::Display for ApiKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// Which side of the wire a body belongs to, for coverage listings.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
pub enum Direction {
    /// Client encodes a request.
    RequestEncode,
    /// Client decodes a response.
    ResponseDecode,
    /// Broker decodes a request (feature `broker`).
    RequestDecode,
    /// Broker encodes a response (feature `broker`).
    ResponseEncode,
}

/// Every (API, version, direction) this build implements, derived from the API table.
pub fn implemented() -> Vec<(ApiKey, i16, Direction)> {
    let mut dirs = vec![Direction::RequestEncode, Direction::ResponseDecode];
    if cfg!(feature = "broker") {
        dirs.extend([Direction::RequestDecode, Direction::ResponseEncode]);
    }
    let mut out = Vec::new();
    for &key in ApiKey::ALL {
        for v in key.min_version()..=key.max_version() {
            for &d in &dirs {
                out.push((key, v, d));
            }
        }
    }
    out
}

macro_rules! throttled {
    ($($name:ident),* $(,)?) => {
        impl ResponseBody {
            /// How long the broker asks the client to hold off this connection (KIP-219), in ms.
            /// Zero for responses without the field, or versions before it.
            pub fn throttle_time_ms(&self) -> i32 {
                match self {
                    $( ResponseBody::$name(r) => r.throttle_time_ms, )*
                    _ => 0,
                }
            }
        }
    };
}

// Every response with a `throttle_time_ms` field (all but the SASL ones).
throttled!(
    Produce,
    Fetch,
    ListOffsets,
    Metadata,
    OffsetCommit,
    OffsetFetch,
    FindCoordinator,
    JoinGroup,
    Heartbeat,
    LeaveGroup,
    SyncGroup,
    DescribeGroups,
    ListGroups,
    ApiVersions,
    CreateTopics,
    DeleteTopics,
    InitProducerId,
    OffsetForLeaderEpoch,
    AddPartitionsToTxn,
    AddOffsetsToTxn,
    EndTxn,
    TxnOffsetCommit,
    CreatePartitions,
    DeleteGroups,
    ConsumerGroupHeartbeat,
    DeleteRecords,
    DescribeConfigs,
    IncrementalAlterConfigs,
    DescribeCluster,
    ConsumerGroupDescribe,
    GetTelemetrySubscriptions,
    PushTelemetry,
);

macro_rules! top_level_errors {
    ($($name:ident),* $(,)?) => {
        impl ResponseBody {
            /// The response's top-level error code, for responses that have one (0: none;
            /// also 0 for responses whose errors are per topic, partition or group).
            pub fn top_level_error(&self) -> i16 {
                match self {
                    $( ResponseBody::$name(r) => r.error_code, )*
                    _ => 0,
                }
            }
        }
    };
}

top_level_errors!(
    ApiVersions,
    Metadata,
    FindCoordinator,
    JoinGroup,
    Heartbeat,
    LeaveGroup,
    SyncGroup,
    ListGroups,
    SaslHandshake,
    SaslAuthenticate,
    InitProducerId,
    AddOffsetsToTxn,
    EndTxn,
    DescribeCluster,
    ConsumerGroupHeartbeat,
    GetTelemetrySubscriptions,
    PushTelemetry,
    Fetch,
    OffsetFetch,
);
