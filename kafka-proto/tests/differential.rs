//! Differential tests against the independent `kafka-protocol` crate (Kafka 4.1 schemas).
//!
//! For every API, version and direction, proptest picks seeds for random version-valid values.
//! Each value goes through our encoder and their decoder and encoder, then through our decoder:
//! the bytes must match exactly and the value must come back unchanged. The set of covered
//! (API, version, direction) triples must equal the set our own API table declares, but for
//! the versions Kafka 4.2-4.4 added, which `kafka-protocol` does not know: those (listed in
//! [`NEWER_THAN_KAFKA_PROTOCOL`]) are checked against Kafka's own Java message classes by
//! `tests/tests/codec_java.rs`, with every other version too.

use std::collections::BTreeSet;
use std::fmt::Debug;
use std::sync::Mutex;

use bytes::{Bytes, BytesMut};
use kafka_proto::api::{implemented, Direction};
use kafka_proto::consumer_protocol::ConsumerPayload;
use kafka_proto::messages::*;
use kafka_proto::testkit::{Gen, Random};
use kafka_proto::{ApiKey, Decode, Encode};
use kafka_protocol::messages as kp;
use kafka_protocol::protocol::{Decodable, Encodable, Message};
use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};

static COVERED: Mutex<BTreeSet<(ApiKey, i16, Direction)>> = Mutex::new(BTreeSet::new());

const CASES: u32 = 48;

/// The newest version of each API that `kafka-protocol` 0.18 (Kafka 4.1) lacks, where ours is
/// newer (Kafka 4.4's).
const NEWER_THAN_KAFKA_PROTOCOL: &[(ApiKey, i16)] = &[
    (ApiKey::ListOffsets, 11),
    (ApiKey::OffsetCommit, 10),
    (ApiKey::OffsetFetch, 10),
    (ApiKey::ApiVersions, 5),
    (ApiKey::TxnOffsetCommit, 6),
    (ApiKey::DeleteGroups, 3),
];

/// Our bytes through their codec and back, for one seed.
fn one<O, T>(key: ApiKey, version: i16, seed: u64) -> Result<(), TestCaseError>
where
    O: Random + Encode + Decode + PartialEq + Debug,
    T: Encodable + Decodable + Debug,
{
    let ours = O::random(&mut Gen::new(seed), key.ctx(version));
    let mut buf = BytesMut::new();
    ours.encode(&mut buf, version)
        .map_err(|e| TestCaseError::fail(format!("our encode failed: {e}")))?;
    let ours_bytes = buf.freeze();

    let mut input = ours_bytes.clone();
    let theirs = T::decode(&mut input, version).map_err(|e| {
        TestCaseError::fail(format!(
            "kafka-protocol could not decode our bytes: {e:#}\n{ours:?}"
        ))
    })?;
    prop_assert!(
        input.is_empty(),
        "kafka-protocol left {} byte(s) unread",
        input.len()
    );

    let mut theirs_buf = BytesMut::new();
    theirs
        .encode(&mut theirs_buf, version)
        .map_err(|e| TestCaseError::fail(format!("kafka-protocol could not re-encode: {e:#}")))?;
    let theirs_bytes = theirs_buf.freeze();
    prop_assert_eq!(&theirs_bytes, &ours_bytes, "byte mismatch for {:?}", ours);

    let back = O::decode(&theirs_bytes, version).map_err(|e| {
        TestCaseError::fail(format!("we could not decode kafka-protocol's bytes: {e}"))
    })?;
    prop_assert_eq!(back, ours);
    Ok(())
}

fn run<O, T>(key: ApiKey, dirs: [Direction; 2])
where
    O: Random + Encode + Decode + PartialEq + Debug,
    T: Encodable + Decodable + Message + Debug,
{
    for version in key.min_version()..=key.max_version().min(T::VERSIONS.max) {
        let mut runner = TestRunner::new(Config {
            cases: CASES,
            failure_persistence: None,
            ..Config::default()
        });
        if let Err(e) = runner.run(&any::<u64>(), |seed| one::<O, T>(key, version, seed)) {
            panic!(
                "{key} v{version} ({} / {}): {e}",
                std::any::type_name::<O>(),
                std::any::type_name::<T>()
            );
        }
        let mut covered = COVERED.lock().unwrap();
        for d in dirs {
            covered.insert((key, version, d));
        }
    }
}

macro_rules! differential {
    ($($key:ident: $req:ty => $kreq:ty, $resp:ty => $kresp:ty;)*) => {
        fn all_apis() {
            $(
                // Our request encoder and (broker feature) request decoder.
                run::<$req, $kreq>(ApiKey::$key, [Direction::RequestEncode, Direction::RequestDecode]);
                // Our response decoder and (broker feature) response encoder.
                run::<$resp, $kresp>(ApiKey::$key, [Direction::ResponseDecode, Direction::ResponseEncode]);
            )*
        }
    };
}

differential! {
    Produce: produce_request::ProduceRequest => kp::ProduceRequest, produce_response::ProduceResponse => kp::ProduceResponse;
    Fetch: fetch_request::FetchRequest => kp::FetchRequest, fetch_response::FetchResponse => kp::FetchResponse;
    ListOffsets: list_offsets_request::ListOffsetsRequest => kp::ListOffsetsRequest, list_offsets_response::ListOffsetsResponse => kp::ListOffsetsResponse;
    Metadata: metadata_request::MetadataRequest => kp::MetadataRequest, metadata_response::MetadataResponse => kp::MetadataResponse;
    OffsetCommit: offset_commit_request::OffsetCommitRequest => kp::OffsetCommitRequest, offset_commit_response::OffsetCommitResponse => kp::OffsetCommitResponse;
    OffsetFetch: offset_fetch_request::OffsetFetchRequest => kp::OffsetFetchRequest, offset_fetch_response::OffsetFetchResponse => kp::OffsetFetchResponse;
    FindCoordinator: find_coordinator_request::FindCoordinatorRequest => kp::FindCoordinatorRequest, find_coordinator_response::FindCoordinatorResponse => kp::FindCoordinatorResponse;
    JoinGroup: join_group_request::JoinGroupRequest => kp::JoinGroupRequest, join_group_response::JoinGroupResponse => kp::JoinGroupResponse;
    Heartbeat: heartbeat_request::HeartbeatRequest => kp::HeartbeatRequest, heartbeat_response::HeartbeatResponse => kp::HeartbeatResponse;
    LeaveGroup: leave_group_request::LeaveGroupRequest => kp::LeaveGroupRequest, leave_group_response::LeaveGroupResponse => kp::LeaveGroupResponse;
    SyncGroup: sync_group_request::SyncGroupRequest => kp::SyncGroupRequest, sync_group_response::SyncGroupResponse => kp::SyncGroupResponse;
    DescribeGroups: describe_groups_request::DescribeGroupsRequest => kp::DescribeGroupsRequest, describe_groups_response::DescribeGroupsResponse => kp::DescribeGroupsResponse;
    ListGroups: list_groups_request::ListGroupsRequest => kp::ListGroupsRequest, list_groups_response::ListGroupsResponse => kp::ListGroupsResponse;
    SaslHandshake: sasl_handshake_request::SaslHandshakeRequest => kp::SaslHandshakeRequest, sasl_handshake_response::SaslHandshakeResponse => kp::SaslHandshakeResponse;
    ApiVersions: api_versions_request::ApiVersionsRequest => kp::ApiVersionsRequest, api_versions_response::ApiVersionsResponse => kp::ApiVersionsResponse;
    CreateTopics: create_topics_request::CreateTopicsRequest => kp::CreateTopicsRequest, create_topics_response::CreateTopicsResponse => kp::CreateTopicsResponse;
    DeleteTopics: delete_topics_request::DeleteTopicsRequest => kp::DeleteTopicsRequest, delete_topics_response::DeleteTopicsResponse => kp::DeleteTopicsResponse;
    InitProducerId: init_producer_id_request::InitProducerIdRequest => kp::InitProducerIdRequest, init_producer_id_response::InitProducerIdResponse => kp::InitProducerIdResponse;
    OffsetForLeaderEpoch: offset_for_leader_epoch_request::OffsetForLeaderEpochRequest => kp::OffsetForLeaderEpochRequest, offset_for_leader_epoch_response::OffsetForLeaderEpochResponse => kp::OffsetForLeaderEpochResponse;
    AddPartitionsToTxn: add_partitions_to_txn_request::AddPartitionsToTxnRequest => kp::AddPartitionsToTxnRequest, add_partitions_to_txn_response::AddPartitionsToTxnResponse => kp::AddPartitionsToTxnResponse;
    AddOffsetsToTxn: add_offsets_to_txn_request::AddOffsetsToTxnRequest => kp::AddOffsetsToTxnRequest, add_offsets_to_txn_response::AddOffsetsToTxnResponse => kp::AddOffsetsToTxnResponse;
    EndTxn: end_txn_request::EndTxnRequest => kp::EndTxnRequest, end_txn_response::EndTxnResponse => kp::EndTxnResponse;
    TxnOffsetCommit: txn_offset_commit_request::TxnOffsetCommitRequest => kp::TxnOffsetCommitRequest, txn_offset_commit_response::TxnOffsetCommitResponse => kp::TxnOffsetCommitResponse;
    SaslAuthenticate: sasl_authenticate_request::SaslAuthenticateRequest => kp::SaslAuthenticateRequest, sasl_authenticate_response::SaslAuthenticateResponse => kp::SaslAuthenticateResponse;
    CreatePartitions: create_partitions_request::CreatePartitionsRequest => kp::CreatePartitionsRequest, create_partitions_response::CreatePartitionsResponse => kp::CreatePartitionsResponse;
    DeleteGroups: delete_groups_request::DeleteGroupsRequest => kp::DeleteGroupsRequest, delete_groups_response::DeleteGroupsResponse => kp::DeleteGroupsResponse;
    ConsumerGroupHeartbeat: consumer_group_heartbeat_request::ConsumerGroupHeartbeatRequest => kp::ConsumerGroupHeartbeatRequest, consumer_group_heartbeat_response::ConsumerGroupHeartbeatResponse => kp::ConsumerGroupHeartbeatResponse;
    DeleteRecords: delete_records_request::DeleteRecordsRequest => kp::DeleteRecordsRequest, delete_records_response::DeleteRecordsResponse => kp::DeleteRecordsResponse;
    DescribeConfigs: describe_configs_request::DescribeConfigsRequest => kp::DescribeConfigsRequest, describe_configs_response::DescribeConfigsResponse => kp::DescribeConfigsResponse;
    IncrementalAlterConfigs: incremental_alter_configs_request::IncrementalAlterConfigsRequest => kp::IncrementalAlterConfigsRequest, incremental_alter_configs_response::IncrementalAlterConfigsResponse => kp::IncrementalAlterConfigsResponse;
    DescribeCluster: describe_cluster_request::DescribeClusterRequest => kp::DescribeClusterRequest, describe_cluster_response::DescribeClusterResponse => kp::DescribeClusterResponse;
    ConsumerGroupDescribe: consumer_group_describe_request::ConsumerGroupDescribeRequest => kp::ConsumerGroupDescribeRequest, consumer_group_describe_response::ConsumerGroupDescribeResponse => kp::ConsumerGroupDescribeResponse;
    GetTelemetrySubscriptions: get_telemetry_subscriptions_request::GetTelemetrySubscriptionsRequest => kp::GetTelemetrySubscriptionsRequest, get_telemetry_subscriptions_response::GetTelemetrySubscriptionsResponse => kp::GetTelemetrySubscriptionsResponse;
    PushTelemetry: push_telemetry_request::PushTelemetryRequest => kp::PushTelemetryRequest, push_telemetry_response::PushTelemetryResponse => kp::PushTelemetryResponse;
}

#[test]
fn every_api_version_and_direction_matches_kafka_protocol() {
    all_apis();
    let covered = COVERED.lock().unwrap().clone();
    let declared: BTreeSet<_> = implemented().into_iter().collect();
    println!(
        "covered {} (API, version, direction) triples:",
        covered.len()
    );
    for key in ApiKey::ALL {
        let versions: BTreeSet<i16> = covered
            .iter()
            .filter(|t| t.0 == *key)
            .map(|t| t.1)
            .collect();
        let dirs: BTreeSet<Direction> = covered
            .iter()
            .filter(|t| t.0 == *key)
            .map(|t| t.2)
            .collect();
        println!(
            "  {key:<24} v{}-v{} {:?}",
            versions.first().unwrap(),
            versions.last().unwrap(),
            dirs
        );
    }
    assert!(
        covered.is_subset(&declared),
        "covered triples the API table lacks"
    );
    // What kafka-protocol could not check: only the versions listed as newer than its own.
    let uncovered: BTreeSet<_> = declared.difference(&covered).collect();
    println!("newer than kafka-protocol (see tests/tests/codec_java.rs): {uncovered:?}");
    for t in &uncovered {
        assert!(
            NEWER_THAN_KAFKA_PROTOCOL.contains(&(t.0, t.1)),
            "{t:?} is declared but not covered: a version newer than kafka-protocol's belongs \
             in NEWER_THAN_KAFKA_PROTOCOL (and tests/tests/codec_java.rs checks it)"
        );
    }
    for (key, version) in NEWER_THAN_KAFKA_PROTOCOL {
        assert!(
            uncovered.iter().any(|t| t.0 == *key && t.1 == *version),
            "{key} v{version} is covered by kafka-protocol now: drop it from the list"
        );
    }
    // 4 directions for every version of every API: the broker feature is on in this test.
    assert_eq!(declared.len() % 4, 0);
}

/// The ConsumerProtocol payloads, v0-3, with their i16 version prefix.
fn payload<O, T>(name: &str)
where
    O: Random + ConsumerPayload + PartialEq + Debug,
    T: Encodable + Decodable + Debug,
{
    for version in 0..=3i16 {
        let mut runner = TestRunner::new(Config {
            cases: CASES,
            failure_persistence: None,
            ..Config::default()
        });
        let ctx = kafka_proto::wire::Ctx {
            version,
            flexible: false,
        };
        runner
            .run(&any::<u64>(), |seed| {
                let ours = O::random(&mut Gen::new(seed), ctx);
                let bytes = ours.encode_payload(version).unwrap();
                prop_assert_eq!(&bytes[..2], &version.to_be_bytes()[..]);
                let mut body = bytes.slice(2..);
                let theirs = T::decode(&mut body, version)
                    .map_err(|e| TestCaseError::fail(format!("{e:#}")))?;
                prop_assert!(body.is_empty());
                let mut out = BytesMut::new();
                out.extend_from_slice(&version.to_be_bytes());
                theirs.encode(&mut out, version).unwrap();
                let out: Bytes = out.freeze();
                prop_assert_eq!(&out, &bytes);
                let (v, back) = O::decode_payload(&out).unwrap();
                prop_assert_eq!(v, version);
                prop_assert_eq!(back, ours);
                Ok(())
            })
            .unwrap_or_else(|e| panic!("{name} v{version}: {e}"));
    }
}

#[test]
fn consumer_protocol_payloads_match_kafka_protocol() {
    payload::<
        consumer_protocol_subscription::ConsumerProtocolSubscription,
        kp::ConsumerProtocolSubscription,
    >("Subscription");
    payload::<
        consumer_protocol_assignment::ConsumerProtocolAssignment,
        kp::ConsumerProtocolAssignment,
    >("Assignment");
}
