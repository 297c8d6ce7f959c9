//! RecordBatch v2 against the independent `kafka-protocol` crate, under every codec, plus the
//! decoder's handling of truncated, multi-batch, control and corrupted input.

use bytes::{Bytes, BytesMut};
use indexmap_free::theirs_codec;
use kafka_proto::compression::Compression;
use kafka_proto::record::{BatchBuilder, BatchMeta, ControlRecordType, RecordBatches};
use kafka_proto::DecodeError;
use kafka_protocol::protocol::StrBytes;
use kafka_protocol::records as kr;
use proptest::prelude::*;

/// A record as both sides see it, with headers in order.
#[derive(Debug, Clone, PartialEq)]
struct Rec {
    timestamp: i64,
    key: Option<Vec<u8>>,
    value: Option<Vec<u8>>,
    headers: Vec<(String, Option<Vec<u8>>)>,
}

mod indexmap_free {
    pub fn theirs_codec(
        c: kafka_proto::compression::Compression,
    ) -> kafka_protocol::records::Compression {
        use kafka_proto::compression::Compression as C;
        use kafka_protocol::records::Compression as K;
        match c {
            C::None => K::None,
            C::Gzip => K::Gzip,
            C::Snappy => K::Snappy,
            C::Lz4 => K::Lz4,
            C::Zstd => K::Zstd,
            _ => unreachable!("every codec is listed"),
        }
    }
}

fn rec_strategy() -> impl Strategy<Value = Rec> {
    (
        1_600_000_000_000i64..1_800_000_000_000,
        proptest::option::of(proptest::collection::vec(any::<u8>(), 0..40)),
        proptest::option::of(proptest::collection::vec(any::<u8>(), 0..300)),
        proptest::collection::vec(
            proptest::option::of(proptest::collection::vec(any::<u8>(), 0..10)),
            0..3,
        ),
    )
        .prop_map(|(timestamp, key, value, hv)| Rec {
            timestamp,
            key,
            value,
            // Unique keys: kafka-protocol keeps headers in a map.
            headers: hv
                .into_iter()
                .enumerate()
                .map(|(i, v)| (format!("h{i}-é"), v))
                .collect(),
        })
}

fn codec_strategy() -> impl Strategy<Value = Compression> {
    proptest::sample::select(Compression::ALL.to_vec())
}

fn ours_encode(recs: &[Rec], codec: Compression, meta: &BatchMeta) -> Bytes {
    let mut b = BatchBuilder::new(codec, 0);
    for r in recs {
        let headers: Vec<(&str, Option<&[u8]>)> = r
            .headers
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_deref()))
            .collect();
        let before = b.size();
        let predicted = b.record_size(r.timestamp, r.key.as_deref(), r.value.as_deref(), &headers);
        b.append(r.timestamp, r.key.as_deref(), r.value.as_deref(), &headers);
        assert!(
            b.size() - before <= predicted,
            "record_size must bound the real size"
        );
    }
    b.seal(meta).unwrap()
}

fn ours_decode(data: Bytes) -> Vec<(i64, i32, Rec)> {
    let mut out = Vec::new();
    for batch in RecordBatches::new(data) {
        let batch = batch.unwrap();
        for (i, r) in batch.records().unwrap().enumerate() {
            let r = r.unwrap();
            out.push((
                r.offset,
                batch.base_sequence + i as i32,
                Rec {
                    timestamp: r.timestamp,
                    key: r.key.map(|b| b.to_vec()),
                    value: r.value.map(|b| b.to_vec()),
                    headers: r
                        .headers
                        .map(|h| (h.key_str().to_owned(), h.value.map(|v| v.to_vec())))
                        .collect(),
                },
            ));
        }
    }
    out
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn ours_encoded_reads_back_in_kafka_protocol(
        recs in proptest::collection::vec(rec_strategy(), 1..20),
        codec in codec_strategy(),
        producer_id in 0i64..1_000_000,
        epoch in 0i16..100,
        base_sequence in 0i32..1_000_000,
    ) {
        let meta = BatchMeta { base_offset: 1000, producer_id, producer_epoch: epoch, base_sequence, ..BatchMeta::default() };
        let bytes = ours_encode(&recs, codec, &meta);
        let mut input = bytes.clone();
        let set = kr::RecordBatchDecoder::decode(&mut input).map_err(|e| TestCaseError::fail(format!("{e:#}")))?;
        prop_assert_eq!(set.compression, theirs_codec(codec));
        prop_assert_eq!(set.records.len(), recs.len());
        for (i, (theirs, ours)) in set.records.iter().zip(&recs).enumerate() {
            prop_assert_eq!(theirs.offset, 1000 + i as i64);
            prop_assert_eq!(theirs.sequence, base_sequence + i as i32);
            prop_assert_eq!(theirs.producer_id, producer_id);
            prop_assert_eq!(theirs.producer_epoch, epoch);
            prop_assert_eq!(theirs.timestamp, ours.timestamp);
            prop_assert_eq!(theirs.key.as_deref(), ours.key.as_deref());
            prop_assert_eq!(theirs.value.as_deref(), ours.value.as_deref());
            let th: Vec<(String, Option<Vec<u8>>)> = theirs.headers.iter().map(|(k, v)| (k.to_string(), v.as_ref().map(|b| b.to_vec()))).collect();
            prop_assert_eq!(&th, &ours.headers);
        }
        // And ours reads its own bytes back unchanged.
        let back: Vec<Rec> = ours_decode(bytes).into_iter().map(|t| t.2).collect();
        prop_assert_eq!(back, recs);
    }

    #[test]
    fn kafka_protocol_encoded_reads_back_in_ours(
        recs in proptest::collection::vec(rec_strategy(), 1..20),
        codec in codec_strategy(),
        base_sequence in 0i32..1_000_000,
    ) {
        let theirs: Vec<kr::Record> = recs.iter().enumerate().map(|(i, r)| kr::Record {
            transactional: false,
            control: false,
            delete_horizon: false,
            partition_leader_epoch: 7,
            producer_id: 42,
            producer_epoch: 3,
            timestamp_type: kr::TimestampType::Creation,
            offset: 500 + i as i64,
            sequence: base_sequence + i as i32,
            timestamp: r.timestamp,
            key: r.key.clone().map(Bytes::from),
            value: r.value.clone().map(Bytes::from),
            headers: r.headers.iter().map(|(k, v)| (StrBytes::from_string(k.clone()), v.clone().map(Bytes::from))).collect(),
        }).collect();
        let mut buf = BytesMut::new();
        kr::RecordBatchEncoder::encode(&mut buf, theirs.iter(), &kr::RecordEncodeOptions { version: 2, compression: theirs_codec(codec) })
            .map_err(|e| TestCaseError::fail(format!("{e:#}")))?;
        let got = ours_decode(buf.freeze());
        prop_assert_eq!(got.len(), recs.len());
        for (i, ((offset, seq, rec), want)) in got.into_iter().zip(&recs).enumerate() {
            prop_assert_eq!(offset, 500 + i as i64);
            prop_assert_eq!(seq, base_sequence + i as i32);
            prop_assert_eq!(&rec, want);
        }
    }
}

fn sample_batch(base_offset: i64, n: usize, codec: Compression) -> Bytes {
    let recs: Vec<Rec> = (0..n)
        .map(|i| Rec {
            timestamp: 1_700_000_000_000 + i as i64,
            key: Some(format!("k{i}").into_bytes()),
            value: Some(vec![i as u8; 100]),
            headers: vec![],
        })
        .collect();
    ours_encode(
        &recs,
        codec,
        &BatchMeta {
            base_offset,
            ..BatchMeta::default()
        },
    )
}

#[test]
fn several_batches_and_a_truncated_last_one() {
    for codec in Compression::ALL {
        let mut data = BytesMut::new();
        data.extend_from_slice(&sample_batch(0, 10, codec));
        data.extend_from_slice(&sample_batch(10, 5, codec));
        let third = sample_batch(15, 8, codec);
        // Kafka cuts the last batch of a fetch response short.
        data.extend_from_slice(&third[..third.len() / 2]);
        let mut it = RecordBatches::new(data.freeze());
        let offsets: Vec<i64> = it
            .by_ref()
            .flat_map(|b| {
                b.unwrap()
                    .records()
                    .unwrap()
                    .map(|r| r.unwrap().offset)
                    .collect::<Vec<_>>()
            })
            .collect();
        assert_eq!(offsets, (0..15).collect::<Vec<_>>(), "{codec:?}");
        assert_eq!(it.truncated(), third.len() / 2, "{codec:?}");
    }
    // Fewer bytes than a length prefix is a truncation too, not an error.
    let mut it = RecordBatches::new(Bytes::from_static(&[0, 0, 0]));
    assert!(it.next().is_none());
    assert_eq!(it.truncated(), 3);
}

#[test]
fn crc_corruption_is_detected() {
    let batch = sample_batch(0, 3, Compression::None);
    let mut bad = BytesMut::from(&batch[..]);
    let last = bad.len() - 1;
    bad[last] ^= 0x01;
    let err = RecordBatches::new(bad.freeze())
        .next()
        .unwrap()
        .unwrap_err();
    assert!(matches!(err, DecodeError::CrcMismatch { .. }), "{err}");
}

#[test]
fn old_magic_is_a_typed_error() {
    let batch = sample_batch(0, 1, Compression::None);
    let mut old = BytesMut::from(&batch[..]);
    old[16] = 1;
    assert_eq!(
        RecordBatches::new(old.freeze())
            .next()
            .unwrap()
            .unwrap_err(),
        DecodeError::UnsupportedMagic(1)
    );
}

#[test]
fn control_batches_are_recognised() {
    // A commit marker: key = (version 0, type 1), value = (version 0, coordinator epoch 5).
    let mut b = BatchBuilder::new(Compression::None, 64);
    b.append(1, Some(&[0, 0, 0, 1]), Some(&[0, 0, 0, 0, 0, 5]), &[]);
    let bytes = b
        .seal(&BatchMeta {
            control: true,
            transactional: true,
            producer_id: 9,
            ..BatchMeta::default()
        })
        .unwrap();
    let batch = RecordBatches::new(bytes).next().unwrap().unwrap();
    assert!(batch.is_control() && batch.is_transactional());
    assert_eq!(
        batch.control_type().unwrap(),
        Some(ControlRecordType::Commit)
    );
    let plain = RecordBatches::new(sample_batch(0, 1, Compression::None))
        .next()
        .unwrap()
        .unwrap();
    assert_eq!(plain.control_type().unwrap(), None);
}

#[test]
fn golden_batch_bytes() {
    // Worked out by hand from the protocol guide: one record, key "k", value "v",
    // timestamp 1000, no headers, base offset 0, producer fields -1.
    let mut b = BatchBuilder::new(Compression::None, 0);
    b.append(1000, Some(b"k"), Some(b"v"), &[]);
    let bytes = b.seal(&BatchMeta::default()).unwrap();
    let record: &[u8] = &[
        0x10, // body length 8, zigzag-encoded
        0x00, // attributes
        0x00, // timestamp delta 0
        0x00, // offset delta 0
        0x02, b'k', // key length 1, "k"
        0x02, b'v', // value length 1, "v"
        0x00, // 0 headers
    ];
    assert_eq!(&bytes[61..], record);
    assert_eq!(&bytes[0..8], &0i64.to_be_bytes()); // base offset
    assert_eq!(
        &bytes[8..12],
        &((61 - 12 + record.len()) as i32).to_be_bytes()
    ); // batch length
    assert_eq!(&bytes[12..16], &(-1i32).to_be_bytes()); // leader epoch
    assert_eq!(bytes[16], 2); // magic
    assert_eq!(&bytes[21..23], &0i16.to_be_bytes()); // attributes
    assert_eq!(&bytes[23..27], &0i32.to_be_bytes()); // last offset delta
    assert_eq!(&bytes[27..35], &1000i64.to_be_bytes()); // base timestamp
    assert_eq!(&bytes[35..43], &1000i64.to_be_bytes()); // max timestamp
    assert_eq!(&bytes[43..51], &(-1i64).to_be_bytes()); // producer id
    assert_eq!(&bytes[51..53], &(-1i16).to_be_bytes()); // producer epoch
    assert_eq!(&bytes[53..57], &(-1i32).to_be_bytes()); // base sequence
    assert_eq!(&bytes[57..61], &1i32.to_be_bytes()); // record count
    assert_eq!(&bytes[17..21], &crc32c::crc32c(&bytes[21..]).to_be_bytes());
}

#[test]
fn producer_fields_can_be_rewritten_for_an_epoch_bump() {
    let original = sample_batch(0, 4, Compression::Lz4);
    let bumped = kafka_proto::record::rewrite_producer_fields(&original, 77, 3, 0).unwrap();
    let b = RecordBatches::new(bumped).next().unwrap().unwrap();
    assert_eq!(
        (b.producer_id, b.producer_epoch, b.base_sequence),
        (77, 3, 0)
    );
    assert_eq!(
        b.records().unwrap().count(),
        4,
        "crc recomputed, records intact"
    );
    assert!(
        kafka_proto::record::rewrite_producer_fields(&Bytes::from_static(b"short"), 1, 1, 1)
            .is_none()
    );
}
