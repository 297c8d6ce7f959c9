//! The codec against Apache Kafka's own message classes (the kafka-clients jar `scripts/kafka`
//! uses, 4.4): for every API, every version we declare, both directions, random values from
//! our encoder are read by Kafka's generated class and written back at the same version
//! (`KafkaPeer codec`). The bytes must come back identical, and decode to the same value.
//!
//! `kafka-proto`'s differential test checks the same against the `kafka-protocol` crate, which
//! stops at Kafka 4.1: this one also covers the versions Kafka 4.2-4.4 added (ApiVersions v5,
//! OffsetCommit and OffsetFetch v10, TxnOffsetCommit v6, ListOffsets v11, DeleteGroups v3), and
//! fails for a version we declare that Kafka does not know.

use std::io::Write;
use std::process::{Command, Stdio};

use bytes::BytesMut;
use kafka_proto::api::{implemented, ApiKey, RequestBody, ResponseBody};
use kafka_proto::testkit::{random_request, random_response, Gen};
use tests::kafka::peer_classpath;

/// Random values per (API, version, direction).
const CASES: u64 = 24;

#[derive(Debug, Clone, PartialEq)]
enum Body {
    Request(RequestBody),
    Response(ResponseBody),
}

impl Body {
    fn random(key: ApiKey, version: i16, request: bool, seed: u64) -> Body {
        let g = &mut Gen::new(seed);
        if request {
            Body::Request(random_request(key, version, g))
        } else {
            Body::Response(random_response(key, version, g))
        }
    }

    fn encode(&self, version: i16) -> Vec<u8> {
        let mut b = BytesMut::new();
        match self {
            Body::Request(r) => r.encode(&mut b, version),
            Body::Response(r) => r.encode(&mut b, version),
        }
        .expect("a random value encodes at its version");
        b.to_vec()
    }

    fn decode(key: ApiKey, version: i16, request: bool, bytes: &[u8]) -> Body {
        let bytes = bytes::Bytes::copy_from_slice(bytes);
        if request {
            Body::Request(RequestBody::decode(key, version, &bytes).expect("decodes"))
        } else {
            Body::Response(ResponseBody::decode(key, version, &bytes).expect("decodes"))
        }
    }
}

#[test]
fn every_api_version_and_direction_matches_kafkas_own_classes() {
    // Every (API, version) we declare, as requests and responses.
    let mut versions: Vec<(ApiKey, i16)> = implemented().into_iter().map(|t| (t.0, t.1)).collect();
    versions.sort();
    versions.dedup();
    let mut cases = Vec::new();
    for (key, version) in &versions {
        for request in [true, false] {
            for i in 0..CASES {
                let seed = (u64::from(key.key() as u16) << 40) ^ ((*version as u64) << 32) ^ i;
                cases.push((
                    *key,
                    *version,
                    request,
                    Body::random(*key, *version, request, seed),
                ));
            }
        }
    }
    let mut input = String::new();
    for (key, version, request, body) in &cases {
        let hex: String = body
            .encode(*version)
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        let dir = if *request { "req" } else { "resp" };
        input.push_str(&format!("{} {version} {dir} {hex}\n", key.key()));
    }
    let mut child = Command::new("java")
        .arg("-cp")
        .arg(peer_classpath())
        .args(["KafkaPeer", "codec"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("run java (scripts/setup installs a JDK)");
    let mut stdin = child.stdin.take().unwrap();
    let writer = std::thread::spawn(move || stdin.write_all(input.as_bytes()));
    let out = child.wait_with_output().unwrap();
    writer.join().unwrap().unwrap();
    assert!(out.status.success(), "KafkaPeer codec failed");
    let lines: Vec<&str> = std::str::from_utf8(&out.stdout).unwrap().lines().collect();
    assert_eq!(lines.len(), cases.len(), "one answer per message");
    let mut failures = Vec::new();
    for ((key, version, request, ours), line) in cases.iter().zip(lines) {
        let what = format!(
            "{key} v{version} {}",
            if *request { "request" } else { "response" }
        );
        let Some(hex) = line.strip_prefix("ok ") else {
            failures.push(format!(
                "{what}: Kafka could not read our bytes: {line}\n  {ours:?}"
            ));
            continue;
        };
        let theirs: Vec<u8> = (0..hex.len() / 2)
            .map(|i| u8::from_str_radix(&hex[2 * i..2 * i + 2], 16).unwrap())
            .collect();
        if theirs != ours.encode(*version) {
            failures.push(format!("{what}: Kafka wrote other bytes back\n  {ours:?}"));
            continue;
        }
        let back = Body::decode(*key, *version, *request, &theirs);
        if &back != ours {
            failures.push(format!("{what}: decoded to another value\n  {back:?}"));
        }
    }
    // Each kind of failure once (the first line names API, version, direction and cause).
    let mut kinds: Vec<&String> = Vec::new();
    for f in &failures {
        let head = |s: &str| s.lines().next().unwrap_or("").to_owned();
        if kinds.iter().all(|k| head(k) != head(f)) {
            kinds.push(f);
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} messages differ from Kafka {}'s classes, {} ways:\n{}",
        failures.len(),
        cases.len(),
        tests::kafka::version(),
        kinds.len(),
        kinds
            .iter()
            .map(|k| k.as_str())
            .collect::<Vec<_>>()
            .join("\n")
    );
    eprintln!(
        "{} messages over {} (API, version) pairs match Kafka {}",
        cases.len(),
        versions.len(),
        tests::kafka::version()
    );
}
