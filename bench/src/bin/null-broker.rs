//! A broker that stores nothing: it answers ApiVersions, Metadata, InitProducerId and Produce
//! (every batch accepted at the next offset of its partition) and drops the records. In the
//! benchmark's null-broker cell each producer writes to one of these, so its records/s are
//! bounded by the client alone, not by a broker's log.
//!
//! `null-broker [--port P] [--partitions N]`: listens on 127.0.0.1:P (0: any free port), prints
//! `127.0.0.1:PORT` on its first line of stdout, and serves until killed. Every topic it is
//! asked about exists, with N partitions (3 unless told). One thread per connection: a client
//! on one connection gets a core of the broker's to itself.
//!
//! Built only on the codec's broker side (`kafka-proto`'s `broker` feature), like `kafka-sim`.

use std::collections::HashMap;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex};

use bytes::BytesMut;
use kafka_proto::api::{ApiKey, RequestBody, ResponseBody};
use kafka_proto::messages::api_versions_response::{ApiVersion, ApiVersionsResponse};
use kafka_proto::messages::init_producer_id_response::InitProducerIdResponse;
use kafka_proto::messages::metadata_response::{
    MetadataResponse, MetadataResponseBroker, MetadataResponsePartition, MetadataResponseTopic,
};
use kafka_proto::messages::produce_response::{
    PartitionProduceResponse, ProduceResponse, TopicProduceResponse,
};
use kafka_proto::{decode_request, encode_response, FrameDecoder, RequestHeader};
use uuid::Uuid;

/// What every connection shares: the partition count, the advertised port, each partition's
/// next offset (so that base offsets grow as a broker's would) and producer ids.
struct Shared {
    port: i32,
    partitions: i32,
    /// Next offset per (topic id, partition).
    offsets: Mutex<HashMap<(Uuid, i32), i64>>,
    next_producer_id: AtomicI64,
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let flag = |name: &str| {
        args.iter()
            .position(|a| a == name)
            .and_then(|i| args.get(i + 1))
            .map(|v| {
                v.parse::<u32>()
                    .unwrap_or_else(|_| panic!("{name} takes a number"))
            })
    };
    let port = flag("--port").unwrap_or(0) as u16;
    let partitions = flag("--partitions").unwrap_or(3).max(1) as i32;
    let listener = TcpListener::bind(("127.0.0.1", port)).expect("bind 127.0.0.1");
    let addr = listener.local_addr().expect("local address");
    println!("{addr}");
    std::io::stdout().flush().expect("stdout");
    let shared = Arc::new(Shared {
        port: i32::from(addr.port()),
        partitions,
        offsets: Mutex::new(HashMap::new()),
        next_producer_id: AtomicI64::new(1000),
    });
    for stream in listener.incoming() {
        let Ok(stream) = stream else { continue };
        let shared = shared.clone();
        std::thread::spawn(move || serve(stream, &shared));
    }
}

/// One connection: frames in, answers out, until the client closes or sends what this broker
/// does not speak.
fn serve(mut stream: TcpStream, shared: &Shared) {
    let _ = stream.set_nodelay(true);
    let mut frames = FrameDecoder::default();
    let mut buf = vec![0u8; 256 * 1024];
    let mut out = BytesMut::new();
    loop {
        let n = match stream.read(&mut buf) {
            Ok(0) | Err(_) => return,
            Ok(n) => n,
        };
        frames.extend(&buf[..n]);
        loop {
            let frame = match frames.next_frame() {
                Ok(Some(f)) => f,
                Ok(None) => break,
                Err(_) => return,
            };
            let (header, body) = match decode_request(&frame) {
                Ok(r) => r,
                Err(_) => match too_new_api_versions(&frame) {
                    // A newer ApiVersions than the codec's (Java 4.4 sends v5): answered in
                    // v0 with UNSUPPORTED_VERSION and the versions spoken, as a broker does,
                    // and the client asks again at one it shares.
                    Some(correlation_id) => {
                        let Answer::RespondAt(body, v) = api_versions(i16::MAX) else {
                            unreachable!("too new")
                        };
                        if encode_response(&mut out, ApiKey::ApiVersions, v, correlation_id, &body)
                            .is_err()
                        {
                            return;
                        }
                        continue;
                    }
                    None => return,
                },
            };
            let Some(key) = ApiKey::from_i16(header.api_key) else {
                return;
            };
            let (answer, version) = match answer(shared, &header, &body) {
                Answer::Respond(body) => (body, header.api_version),
                Answer::RespondAt(body, version) => (body, version),
                Answer::Nothing => continue,
                Answer::Close => return,
            };
            if encode_response(&mut out, key, version, header.correlation_id, &answer).is_err() {
                return;
            }
        }
        if !out.is_empty() {
            if stream.write_all(&out).is_err() {
                return;
            }
            out.clear();
        }
    }
}

enum Answer {
    Respond(ResponseBody),
    RespondAt(ResponseBody, i16),
    /// acks=0: a Produce that gets no answer.
    Nothing,
    Close,
}

fn answer(shared: &Shared, header: &RequestHeader, body: &RequestBody) -> Answer {
    match body {
        RequestBody::ApiVersions(_) => api_versions(header.api_version),
        RequestBody::Metadata(req) => {
            let names: Vec<String> = req
                .topics
                .iter()
                .flatten()
                .filter_map(|t| t.name.clone())
                .collect();
            Answer::Respond(ResponseBody::Metadata(metadata(shared, names)))
        }
        RequestBody::InitProducerId(_) => {
            Answer::Respond(ResponseBody::InitProducerId(InitProducerIdResponse {
                producer_id: shared.next_producer_id.fetch_add(1, Ordering::Relaxed),
                producer_epoch: 0,
                ..Default::default()
            }))
        }
        RequestBody::Produce(req) => {
            let mut offsets = shared.offsets.lock().expect("not poisoned");
            let responses = req
                .topic_data
                .iter()
                .map(|t| {
                    let id = if t.topic_id.is_nil() {
                        topic_id(&t.name)
                    } else {
                        t.topic_id
                    };
                    let partition_responses = t
                        .partition_data
                        .iter()
                        .map(|p| {
                            let records = p.records.as_deref().map_or(0, record_count);
                            let next = offsets.entry((id, p.index)).or_default();
                            let base_offset = *next;
                            *next += records;
                            PartitionProduceResponse {
                                index: p.index,
                                base_offset,
                                ..Default::default()
                            }
                        })
                        .collect();
                    TopicProduceResponse {
                        name: t.name.clone(),
                        topic_id: t.topic_id,
                        partition_responses,
                        ..Default::default()
                    }
                })
                .collect();
            if req.acks == 0 {
                Answer::Nothing
            } else {
                Answer::Respond(ResponseBody::Produce(ProduceResponse {
                    responses,
                    ..Default::default()
                }))
            }
        }
        other => {
            // Named on stderr, so that a client that stalls here says why.
            eprintln!(
                "null-broker: closing on {:?}, which it does not answer",
                other.api_key()
            );
            Answer::Close
        }
    }
}

/// The correlation id of an ApiVersions request at a version past the codec's, read from the
/// header's fixed fields (key, version, correlation id) that every version shares.
fn too_new_api_versions(frame: &[u8]) -> Option<i32> {
    let key = i16::from_be_bytes(frame.get(0..2)?.try_into().ok()?);
    let version = i16::from_be_bytes(frame.get(2..4)?.try_into().ok()?);
    let correlation_id = i32::from_be_bytes(frame.get(4..8)?.try_into().ok()?);
    (key == ApiKey::ApiVersions.key() && version > ApiKey::ApiVersions.max_version())
        .then_some(correlation_id)
}

/// Every API the codec speaks but KIP-714 telemetry (as Apache Kafka without a telemetry
/// receiver); a request newer than ApiVersions' own range gets UNSUPPORTED_VERSION in v0.
fn api_versions(version: i16) -> Answer {
    let api_keys = ApiKey::ALL
        .iter()
        .filter(|k| !matches!(k, ApiKey::GetTelemetrySubscriptions | ApiKey::PushTelemetry))
        .map(|k| ApiVersion {
            api_key: k.key(),
            min_version: k.min_version(),
            max_version: k.max_version(),
            ..Default::default()
        })
        .collect();
    let too_new = version > ApiKey::ApiVersions.max_version();
    let body = ResponseBody::ApiVersions(ApiVersionsResponse {
        error_code: if too_new { 35 } else { 0 },
        api_keys,
        ..Default::default()
    });
    if too_new {
        Answer::RespondAt(body, 0)
    } else {
        Answer::Respond(body)
    }
}

fn metadata(shared: &Shared, names: Vec<String>) -> MetadataResponse {
    let topics = names
        .into_iter()
        .map(|name| MetadataResponseTopic {
            topic_id: topic_id(&name),
            name: Some(name),
            partitions: (0..shared.partitions)
                .map(|p| MetadataResponsePartition {
                    partition_index: p,
                    leader_id: 1,
                    leader_epoch: 0,
                    replica_nodes: vec![1],
                    isr_nodes: vec![1],
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        })
        .collect();
    MetadataResponse {
        brokers: vec![MetadataResponseBroker {
            node_id: 1,
            host: "127.0.0.1".into(),
            port: shared.port,
            ..Default::default()
        }],
        cluster_id: Some("null-broker".into()),
        controller_id: 1,
        topics,
        ..Default::default()
    }
}

/// A topic's id, derived from its name so that every connection agrees on it.
fn topic_id(name: &str) -> Uuid {
    let mut h: u128 = 0x6c62_272e_07bb_0142_62b8_2175_6295_c58d;
    for b in name.bytes() {
        h = (h ^ u128::from(b)).wrapping_mul(0x0000_0000_0100_0000_0000_0000_0000_013b);
    }
    Uuid::from_u128(h | 1)
}

/// The records in a Produce's record set: the sum of each v2 batch's record count (at byte 57
/// of the batch, after its 61-byte header's earlier fields), walking batch by batch on their
/// lengths. A truncated or older-format set counts what it could read.
fn record_count(set: &[u8]) -> i64 {
    let mut n = 0i64;
    let mut at = 0usize;
    while let Some(header) = set.get(at..at + 61) {
        let len = i32::from_be_bytes(header[8..12].try_into().expect("4 bytes"));
        n += i64::from(i32::from_be_bytes(header[57..61].try_into().expect("4 bytes")).max(0));
        at += 12 + len.max(0) as usize;
    }
    n
}
