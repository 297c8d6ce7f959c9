//! The fuzz harnesses, shared by the cargo-fuzz targets in `fuzz/` and by the tests that replay
//! their corpora, so that CI runs exactly what the fuzzer ran.
//!
//! Each function accepts any bytes. It panics only when a property breaks: a decoder panicking,
//! or a decode → encode → decode round trip changing a value.

use bytes::{Bytes, BytesMut};

use crate::api::{ApiKey, RequestBody, ResponseBody};
use crate::consumer_protocol::{
    ConsumerPayload, ConsumerProtocolAssignment, ConsumerProtocolSubscription,
};
use crate::frame::FrameDecoder;
use crate::record::RecordBatches;

/// Picks an API and one of its versions from two bytes.
fn api_and_version(a: u8, b: u8) -> (ApiKey, i16) {
    let key = ApiKey::ALL[a as usize % ApiKey::ALL.len()];
    let span = (key.max_version() - key.min_version() + 1) as u8;
    (key, key.min_version() + i16::from(b % span))
}

/// The frame decoder, fed in chunks whose size and limit come from the input.
pub fn frame(data: &[u8]) {
    let [chunk, limit, rest @ ..] = data else {
        return;
    };
    let mut d = FrameDecoder::new(1usize << (limit % 24));
    for piece in rest.chunks(usize::from(chunk % 17) + 1) {
        d.extend(piece);
        loop {
            match d.next_frame() {
                Ok(Some(f)) => assert!(f.len() < (1 << 24)),
                Ok(None) => break,
                Err(_) => return,
            }
        }
    }
}

/// Every response decoder (and the framed form), with the API and version from the input.
pub fn response(data: &[u8]) {
    let [a, b, rest @ ..] = data else {
        return;
    };
    let (key, version) = api_and_version(*a, *b);
    let body = Bytes::copy_from_slice(rest);
    let _ = ResponseBody::decode(key, version, &body);
    let _ = crate::header::decode_response_body(key, version, &body);
}

/// The record-batch decoder with decompression. If the first byte is odd, the first batch's
/// crc is fixed up first, so the fuzzer gets past the checksum into records and codecs.
pub fn record_batch(data: &[u8]) {
    let [flags, rest @ ..] = data else {
        return;
    };
    let mut buf = BytesMut::from(rest);
    if flags & 1 == 1 && buf.len() >= 61 {
        let len = i32::from_be_bytes([buf[8], buf[9], buf[10], buf[11]]);
        let end = (12 + len.max(49) as usize).min(buf.len());
        let crc = crc32c::crc32c(&buf[21..end]);
        buf[17..21].copy_from_slice(&crc.to_be_bytes());
    }
    let mut batches = RecordBatches::new(buf.freeze()).with_max_decompressed(4 << 20);
    for batch in batches.by_ref() {
        let Ok(batch) = batch else { break };
        let _ = batch.control_type();
        let Ok(records) = batch.records() else {
            continue;
        };
        for record in records {
            let Ok(record) = record else { break };
            for h in record.headers {
                let _ = h.key_str();
            }
        }
    }
    let _ = batches.truncated();
}

/// Decode → encode → decode for requests, responses and consumer-protocol payloads: whatever
/// decodes must re-encode, and decode again to the same value and the same bytes.
pub fn roundtrip(data: &[u8]) {
    let [a, b, rest @ ..] = data else {
        return;
    };
    let body = Bytes::copy_from_slice(rest);
    match b % 4 {
        0 => {
            let (key, version) = api_and_version(*a, b / 4);
            if let Ok(v1) = RequestBody::decode(key, version, &body) {
                let mut b1 = BytesMut::new();
                v1.encode(&mut b1, version)
                    .expect("a decoded request must re-encode");
                let b1 = b1.freeze();
                let v2 =
                    RequestBody::decode(key, version, &b1).expect("re-encoded request must decode");
                assert_eq!(v1, v2, "{key} v{version} request changed in a round trip");
                let mut b2 = BytesMut::new();
                v2.encode(&mut b2, version).unwrap();
                assert_eq!(b1, b2, "{key} v{version} request encoding is not stable");
            }
        }
        1 | 2 => {
            let (key, version) = api_and_version(*a, b / 4);
            // ApiVersions' v0 fallback would decode at another version; compare at the one asked.
            if key == ApiKey::ApiVersions {
                return;
            }
            if let Ok(v1) = ResponseBody::decode(key, version, &body) {
                let mut b1 = BytesMut::new();
                v1.encode(&mut b1, version)
                    .expect("a decoded response must re-encode");
                let b1 = b1.freeze();
                let v2 = ResponseBody::decode(key, version, &b1)
                    .expect("re-encoded response must decode");
                assert_eq!(v1, v2, "{key} v{version} response changed in a round trip");
                let mut b2 = BytesMut::new();
                v2.encode(&mut b2, version).unwrap();
                assert_eq!(b1, b2, "{key} v{version} response encoding is not stable");
            }
        }
        _ => {
            payload_roundtrip::<ConsumerProtocolSubscription>(&body);
            payload_roundtrip::<ConsumerProtocolAssignment>(&body);
        }
    }
}

fn payload_roundtrip<T: ConsumerPayload + PartialEq + std::fmt::Debug>(body: &Bytes) {
    if let Ok((version, v1)) = T::decode_payload(body) {
        let version = version.min(crate::consumer_protocol::MAX_VERSION);
        let b1 = v1
            .encode_payload(version)
            .expect("a decoded payload must re-encode");
        let (_, v2) = T::decode_payload(&b1).expect("re-encoded payload must decode");
        assert_eq!(v1, v2, "consumer-protocol payload changed in a round trip");
    }
}
