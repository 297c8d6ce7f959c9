//! Golden bytes worked out by hand from the Kafka protocol guide.

use bytes::{Bytes, BytesMut};
use kafka_proto::messages::api_versions_request::ApiVersionsRequest;
use kafka_proto::messages::find_coordinator_response::FindCoordinatorResponse;
use kafka_proto::messages::heartbeat_response::HeartbeatResponse;
use kafka_proto::messages::metadata_request::{MetadataRequest, MetadataRequestTopic};
use kafka_proto::{decode_response, encode_request, Decode, Encode, ErrorCode, FrameDecoder};

#[test]
fn api_versions_v3_request_frame() {
    let req = ApiVersionsRequest {
        client_software_name: "kafka-rs".into(),
        client_software_version: "0.1".into(),
        ..Default::default()
    };
    let mut buf = BytesMut::new();
    encode_request(&mut buf, &req, 3, 1, Some("c")).unwrap();
    #[rustfmt::skip]
    let want: &[u8] = &[
        0, 0, 0, 26,            // frame size
        0, 18, 0, 3,            // ApiVersions v3
        0, 0, 0, 1,             // correlation id
        0, 1, b'c',             // client id: a classic nullable string even in header v2
        0,                      // header tagged fields
        9, b'k', b'a', b'f', b'k', b'a', b'-', b'r', b's', // compact string: len + 1
        4, b'0', b'.', b'1',
        0,                      // body tagged fields
    ];
    assert_eq!(&buf[..], want);
}

#[test]
fn metadata_request_classic_and_flexible() {
    let topics = MetadataRequest {
        topics: Some(vec![MetadataRequestTopic {
            name: Some("a".into()),
            ..Default::default()
        }]),
        ..Default::default()
    };
    let mut buf = BytesMut::new();
    topics.encode(&mut buf, 0).unwrap();
    assert_eq!(&buf[..], &[0, 0, 0, 1, 0, 1, b'a']);

    let all = MetadataRequest {
        topics: None,
        ..Default::default()
    };
    let mut buf = BytesMut::new();
    all.encode(&mut buf, 1).unwrap();
    assert_eq!(
        &buf[..],
        &[0xff, 0xff, 0xff, 0xff],
        "null array = all topics"
    );

    // v0 has no way to say "all topics": null is refused, not sent.
    let err = all.encode(&mut BytesMut::new(), 0).unwrap_err();
    assert_eq!(
        err,
        kafka_proto::EncodeError::UnexpectedNull("MetadataRequest.topics")
    );

    let mut buf = BytesMut::new();
    all.encode(&mut buf, 9).unwrap();
    // null compact array, allow_auto_topic_creation, cluster ops (v8-10), topic ops, tags
    assert_eq!(&buf[..], &[0, 1, 0, 0, 0]);

    let mut buf = BytesMut::new();
    topics.encode(&mut buf, 10).unwrap();
    let mut want = vec![2u8]; // one element: count + 1
    want.extend_from_slice(&[0; 16]); // topic id (v10+)
    want.extend_from_slice(&[2, b'a', 0]); // compact name, tagged fields
    want.extend_from_slice(&[1, 0]); // allow auto create, cluster ops (v10 still has it)
    want.extend_from_slice(&[0, 0]); // topic ops, tags
    assert_eq!(&buf[..], &want[..]);
}

#[test]
fn heartbeat_response_frames() {
    // v1: header v0 (correlation id), throttle 10 ms, REBALANCE_IN_PROGRESS (27).
    let frame = Bytes::from_static(&[0, 0, 0, 7, 0, 0, 0, 10, 0, 27]);
    let (h, resp) = decode_response::<HeartbeatResponse>(&frame, 1).unwrap();
    assert_eq!(h.correlation_id, 7);
    assert_eq!(resp.throttle_time_ms, 10);
    assert_eq!(
        ErrorCode::from_code(resp.error_code),
        Some(ErrorCode::RebalanceInProgress)
    );
    // v4 is flexible: header v1 and the body both end with an empty tagged-field section.
    let frame = Bytes::from_static(&[0, 0, 0, 8, 0, 0, 0, 0, 0, 0, 0, 0]);
    let (h, resp) = decode_response::<HeartbeatResponse>(&frame, 4).unwrap();
    assert_eq!((h.correlation_id, resp.error_code), (8, 0));
}

#[test]
fn find_coordinator_v0_response() {
    #[rustfmt::skip]
    let body = Bytes::from_static(&[
        0, 0,                     // error code
        0, 0, 0, 111,             // node id
        0, 9, b'l', b'o', b'c', b'a', b'l', b'h', b'o', b's', b't',
        0, 0, 0x23, 0x84,         // port 9092
    ]);
    let resp = FindCoordinatorResponse::decode(&body, 0).unwrap();
    assert_eq!(
        (resp.node_id, resp.host.as_str(), resp.port),
        (111, "localhost", 9092)
    );
    // One byte short is a typed error naming the field.
    let err = FindCoordinatorResponse::decode(&body.slice(..body.len() - 1), 0).unwrap_err();
    assert_eq!(
        err.to_string(),
        "FindCoordinatorResponse.port: input ended early: needed 1 more byte(s)"
    );
}

#[test]
fn frames_split_anywhere_reassemble() {
    let mut buf = BytesMut::new();
    for id in 0..3 {
        encode_request(&mut buf, &MetadataRequest::default(), 12, id, None).unwrap();
    }
    let mut d = FrameDecoder::default();
    let mut seen = 0i32;
    for b in buf.iter() {
        d.extend(&[*b]);
        while let Some(f) = d.next_frame().unwrap() {
            assert_eq!(&f[4..8], &seen.to_be_bytes());
            seen += 1;
        }
    }
    assert_eq!(seen, 3);
}

#[test]
fn tansu_style_api_versions_reply_decodes_and_negotiates() {
    use kafka_proto::messages::api_versions_response::ApiVersionsResponse;
    use kafka_proto::{ApiKey, BrokerVersions};
    #[rustfmt::skip]
    let body = Bytes::from_static(&[
        0, 0,                        // no error
        5,                           // compact array of 4 keys, unsorted, one unknown to us
        0, 3, 0, 0, 0, 12, 0,        // Metadata 0-12
        0x27, 0x0f, 0, 0, 0, 1, 0,   // key 9999: unknown, ignored
        0, 0, 0, 0, 0, 11, 0,        // Produce 0-11
        0, 18, 0, 0, 0, 4, 0,        // ApiVersions 0-4
        0, 0, 0, 0,                  // throttle
        2,                           // two tagged fields:
        1, 8, 0, 0, 0, 0, 0, 0, 0, 9, // tag 1 FinalizedFeaturesEpoch = 9
        7, 2, 0xab, 0xcd,            // tag 7: unknown, kept verbatim
    ]);
    let resp = ApiVersionsResponse::decode(&body, 3).unwrap();
    assert_eq!(resp.finalized_features_epoch, 9);
    assert_eq!(
        resp.unknown_tagged_fields.get(&7).map(|b| &b[..]),
        Some(&[0xab, 0xcd][..])
    );
    let versions = BrokerVersions::from_response(&resp);
    assert_eq!(versions.negotiate(ApiKey::Metadata), Ok(12));
    assert_eq!(versions.negotiate(ApiKey::Produce), Ok(11));
    assert_eq!(versions.negotiate(ApiKey::ApiVersions), Ok(4));
    assert!(versions.negotiate(ApiKey::Fetch).is_err());
    // Re-encoding keeps the unknown tag: nothing is lost.
    let mut again = BytesMut::new();
    resp.encode(&mut again, 3).unwrap();
    assert_eq!(
        ApiVersionsResponse::decode(&again.freeze(), 3).unwrap(),
        resp
    );
}

/// librdkafka's mock broker appends a byte to some replies; like the Java client, a response
/// decoder reads a whole body and ignores what follows. Requests stay strict.
#[test]
fn bytes_after_a_response_body_are_ignored_but_not_after_a_request() {
    let body = Bytes::from_static(&[0, 0, 0, 0, 0, 111, 0, 1, b'h', 0, 0, 0x23, 0x84, 0xAB]);
    let resp = FindCoordinatorResponse::decode(&body, 0).unwrap();
    assert_eq!((resp.node_id, resp.port), (111, 9092));
    #[cfg(feature = "broker")]
    {
        let mut buf = BytesMut::new();
        encode_request(&mut buf, &MetadataRequest::default(), 12, 1, None).unwrap();
        buf.extend_from_slice(&[0xAB]);
        let frame = Bytes::from(buf).slice(4..);
        let err = kafka_proto::header::decode_request(&frame).unwrap_err();
        assert!(
            matches!(err, kafka_proto::DecodeError::TrailingBytes(1)),
            "{err}"
        );
    }
}
