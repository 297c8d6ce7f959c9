//! No panic on any input: random bytes, and mutations of valid encodings, go through every
//! decoder via the fuzz harnesses, so CI covers what the fuzzer covers.

use bytes::BytesMut;
use kafka_proto::api::{ApiKey, RequestBody};
use kafka_proto::compression::Compression;
use kafka_proto::record::{BatchBuilder, BatchMeta};
use kafka_proto::testkit::fuzz;
use kafka_proto::testkit::{Gen, Random};
use proptest::prelude::*;

/// A valid request body, as bytes, for an API picked by index.
fn valid_request(api: usize, version_pick: u8, seed: u64) -> (u8, u8, Vec<u8>) {
    use kafka_proto::messages::*;
    let key = ApiKey::ALL[api % ApiKey::ALL.len()];
    let span = (key.max_version() - key.min_version() + 1) as u8;
    let vi = version_pick % span;
    let version = key.min_version() + i16::from(vi);
    let ctx = key.ctx(version);
    let g = &mut Gen::new(seed);
    // A handful of structurally rich requests; the response side is covered by random bytes.
    let body = match key {
        ApiKey::Produce => RequestBody::Produce(produce_request::ProduceRequest::random(g, ctx)),
        ApiKey::Fetch => RequestBody::Fetch(fetch_request::FetchRequest::random(g, ctx)),
        ApiKey::Metadata => {
            RequestBody::Metadata(metadata_request::MetadataRequest::random(g, ctx))
        }
        ApiKey::JoinGroup => {
            RequestBody::JoinGroup(join_group_request::JoinGroupRequest::random(g, ctx))
        }
        ApiKey::OffsetFetch => {
            RequestBody::OffsetFetch(offset_fetch_request::OffsetFetchRequest::random(g, ctx))
        }
        _ => RequestBody::CreateTopics(create_topics_request::CreateTopicsRequest::random(
            g,
            ApiKey::CreateTopics.ctx(ApiKey::CreateTopics.max_version()),
        )),
    };
    let (key, version) = match body.api_key() {
        ApiKey::CreateTopics if key != ApiKey::CreateTopics => {
            (ApiKey::CreateTopics, ApiKey::CreateTopics.max_version())
        }
        _ => (key, version),
    };
    let mut buf = BytesMut::new();
    body.encode(&mut buf, version).unwrap();
    let ai = ApiKey::ALL.iter().position(|k| *k == key).unwrap() as u8;
    (ai, (version - key.min_version()) as u8, buf.to_vec())
}

fn mutate(mut data: Vec<u8>, edits: &[(u16, u8, u8)]) -> Vec<u8> {
    for &(pos, kind, byte) in edits {
        if data.is_empty() {
            data.push(byte);
            continue;
        }
        let i = pos as usize % data.len();
        match kind % 4 {
            0 => data[i] ^= byte | 1,
            1 => data.truncate(i),
            2 => data.insert(i, byte),
            _ => data[i] = 0xff,
        }
    }
    data
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn random_bytes_never_panic_any_decoder(a in any::<u8>(), b in any::<u8>(), body in proptest::collection::vec(any::<u8>(), 0..512)) {
        let input = [&[a, b][..], &body].concat();
        fuzz::response(&input);
        fuzz::roundtrip(&input);
        fuzz::frame(&input);
        fuzz::record_batch(&input);
    }

    #[test]
    fn mutated_valid_messages_never_panic_and_round_trip(
        api in any::<usize>(), vpick in any::<u8>(), seed in any::<u64>(),
        edits in proptest::collection::vec((any::<u16>(), any::<u8>(), any::<u8>()), 1..4),
    ) {
        let (a, vi, body) = valid_request(api, vpick, seed);
        // Unmutated, the request must decode and round-trip; mutated, it must not panic.
        let key = ApiKey::ALL[a as usize];
        let decoded = RequestBody::decode(key, key.min_version() + i16::from(vi), &bytes::Bytes::from(body.clone()));
        prop_assert!(decoded.is_ok(), "{key}: {decoded:?}");
        fuzz::roundtrip(&[&[a, vi * 4][..], &body].concat());
        let bad = mutate(body, &edits);
        fuzz::roundtrip(&[&[a, vi * 4][..], &bad].concat());
        fuzz::roundtrip(&[&[a, vi * 4 + 1][..], &bad].concat());
        fuzz::response(&[&[a, vi][..], &bad].concat());
    }

    #[test]
    fn mutated_record_batches_never_panic(
        codec in proptest::sample::select(Compression::ALL.to_vec()),
        n in 1u8..20,
        edits in proptest::collection::vec((any::<u16>(), any::<u8>(), any::<u8>()), 1..4),
    ) {
        let mut b = BatchBuilder::new(codec, 0);
        for i in 0..n {
            b.append(i64::from(i), Some(&[i; 4]), Some(&[i; 64]), &[("k", Some(&[i][..]))]);
        }
        let batch = b.seal(&BatchMeta::default()).unwrap().to_vec();
        // Flag 1: the harness fixes the crc so the mutation reaches the records and the codec.
        fuzz::record_batch(&[&[1u8][..], &mutate(batch.clone(), &edits)].concat());
        fuzz::record_batch(&[&[0u8][..], &mutate(batch, &edits)].concat());
    }
}
