//! Writes seed inputs for the fuzz targets: valid encodings of every API, version and codec.
//! Run: `cargo run -p kafka-proto --features testkit --example fuzz_seeds -- fuzz/corpus`

use std::path::Path;

use bytes::BytesMut;
use kafka_proto::api::{ApiKey, RequestBody, ResponseBody};
use kafka_proto::compression::Compression;
use kafka_proto::record::{BatchBuilder, BatchMeta};
use kafka_proto::testkit::{Gen, Random};

fn write(dir: &Path, target: &str, name: &str, data: &[u8]) {
    let d = dir.join(target);
    std::fs::create_dir_all(&d).unwrap();
    std::fs::write(d.join(name), data).unwrap();
}

macro_rules! random_bodies {
    ($key:expr, $ctx:expr, $g:expr, $($api:ident: $req:ty, $resp:ty;)*) => {
        match $key {
            $( ApiKey::$api => (
                RequestBody::$api(<$req>::random($g, $ctx)),
                ResponseBody::$api(<$resp>::random($g, $ctx)),
            ), )*
            other => panic!("no seed generator for {other}"),
        }
    };
}

fn main() {
    use kafka_proto::messages::*;
    let out = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "fuzz/corpus".into());
    let out = Path::new(&out);
    let mut g = Gen::new(0x5eed);
    let mut n = 0;
    for (ai, &key) in ApiKey::ALL.iter().enumerate() {
        for (vi, version) in (key.min_version()..=key.max_version()).enumerate() {
            let ctx = key.ctx(version);
            let (req, resp) = random_bodies!(key, ctx, &mut g,
                Produce: produce_request::ProduceRequest, produce_response::ProduceResponse;
                Fetch: fetch_request::FetchRequest, fetch_response::FetchResponse;
                ListOffsets: list_offsets_request::ListOffsetsRequest, list_offsets_response::ListOffsetsResponse;
                Metadata: metadata_request::MetadataRequest, metadata_response::MetadataResponse;
                OffsetCommit: offset_commit_request::OffsetCommitRequest, offset_commit_response::OffsetCommitResponse;
                OffsetFetch: offset_fetch_request::OffsetFetchRequest, offset_fetch_response::OffsetFetchResponse;
                FindCoordinator: find_coordinator_request::FindCoordinatorRequest, find_coordinator_response::FindCoordinatorResponse;
                JoinGroup: join_group_request::JoinGroupRequest, join_group_response::JoinGroupResponse;
                Heartbeat: heartbeat_request::HeartbeatRequest, heartbeat_response::HeartbeatResponse;
                LeaveGroup: leave_group_request::LeaveGroupRequest, leave_group_response::LeaveGroupResponse;
                SyncGroup: sync_group_request::SyncGroupRequest, sync_group_response::SyncGroupResponse;
                DescribeGroups: describe_groups_request::DescribeGroupsRequest, describe_groups_response::DescribeGroupsResponse;
                ListGroups: list_groups_request::ListGroupsRequest, list_groups_response::ListGroupsResponse;
                SaslHandshake: sasl_handshake_request::SaslHandshakeRequest, sasl_handshake_response::SaslHandshakeResponse;
                ApiVersions: api_versions_request::ApiVersionsRequest, api_versions_response::ApiVersionsResponse;
                CreateTopics: create_topics_request::CreateTopicsRequest, create_topics_response::CreateTopicsResponse;
                DeleteTopics: delete_topics_request::DeleteTopicsRequest, delete_topics_response::DeleteTopicsResponse;
                InitProducerId: init_producer_id_request::InitProducerIdRequest, init_producer_id_response::InitProducerIdResponse;
                OffsetForLeaderEpoch: offset_for_leader_epoch_request::OffsetForLeaderEpochRequest, offset_for_leader_epoch_response::OffsetForLeaderEpochResponse;
                AddPartitionsToTxn: add_partitions_to_txn_request::AddPartitionsToTxnRequest, add_partitions_to_txn_response::AddPartitionsToTxnResponse;
                AddOffsetsToTxn: add_offsets_to_txn_request::AddOffsetsToTxnRequest, add_offsets_to_txn_response::AddOffsetsToTxnResponse;
                EndTxn: end_txn_request::EndTxnRequest, end_txn_response::EndTxnResponse;
                TxnOffsetCommit: txn_offset_commit_request::TxnOffsetCommitRequest, txn_offset_commit_response::TxnOffsetCommitResponse;
                SaslAuthenticate: sasl_authenticate_request::SaslAuthenticateRequest, sasl_authenticate_response::SaslAuthenticateResponse;
                ConsumerGroupHeartbeat: consumer_group_heartbeat_request::ConsumerGroupHeartbeatRequest, consumer_group_heartbeat_response::ConsumerGroupHeartbeatResponse;
            );
            let (a, vi) = (ai as u8, vi as u8);
            let mut rb = BytesMut::new();
            req.encode(&mut rb, version).unwrap();
            let mut sb = BytesMut::new();
            resp.encode(&mut sb, version).unwrap();
            let name = format!("{key}-v{version}");
            write(out, "response", &name, &[&[a, vi][..], &sb].concat());
            write(
                out,
                "roundtrip",
                &format!("{name}-req"),
                &[&[a, vi * 4][..], &rb].concat(),
            );
            write(
                out,
                "roundtrip",
                &format!("{name}-resp"),
                &[&[a, vi * 4 + 1][..], &sb].concat(),
            );
            // A framed request for the frame decoder.
            let mut framed = vec![3u8, 20];
            framed.extend_from_slice(&(rb.len() as i32).to_be_bytes());
            framed.extend_from_slice(&rb);
            write(out, "frame", &name, &framed);
            n += 4;
        }
    }
    for codec in Compression::ALL {
        let mut b = BatchBuilder::new(codec, 1024);
        for i in 0..5u8 {
            b.append(
                1_700_000_000_000 + i64::from(i),
                Some(&[i; 3]),
                Some(&[i; 40]),
                &[("h", Some(&b"v"[..]))],
            );
        }
        let batch = b.seal(&BatchMeta::default()).unwrap();
        write(
            out,
            "record_batch",
            codec.name(),
            &[&[1u8][..], &batch].concat(),
        );
        n += 1;
    }
    println!("wrote {n} seeds under {}", out.display());
}
