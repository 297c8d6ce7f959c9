//! An outage shows at the warn level once per episode, not once per attempt (a 30 s broker
//! stop logged nothing above INFO): a connection that keeps failing is one warning however
//! often it is retried; an automatic commit the broker keeps refusing is one warning until one
//! succeeds. Its own test binary, so the process-wide subscriber sees only these tests; each
//! counts its own message.

use kafka_core::net::Machine as _;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use kafka_core::config::ProducerConfig;
use kafka_core::group::offsets::{OffsetRequest, Offsets};
use kafka_core::net::{ConnectError, Output, Transmit};
use kafka_core::producer::{Producer, ProducerRecord};
use kafka_core::proto::api::ResponseBody;
use kafka_core::proto::messages::offset_commit_response::{
    OffsetCommitResponse, OffsetCommitResponsePartition, OffsetCommitResponseTopic,
};
use kafka_core::Instant;

#[derive(Clone)]
struct Captured(Arc<Mutex<Vec<u8>>>);

impl std::io::Write for Captured {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(b);
        Ok(b.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// What was logged at WARN and above, by every test of this binary.
fn captured() -> String {
    static BUF: OnceLock<Captured> = OnceLock::new();
    let buf = BUF.get_or_init(|| {
        let buf = Captured(Arc::new(Mutex::new(Vec::new())));
        let writer = buf.clone();
        let subscriber = tracing_subscriber::fmt()
            .with_max_level(tracing::Level::WARN)
            .with_writer(move || writer.clone())
            .with_ansi(false)
            .finish();
        tracing::subscriber::set_global_default(subscriber).expect("the only subscriber here");
        buf
    });
    String::from_utf8(buf.0.lock().unwrap().clone()).unwrap()
}

#[test]
fn a_broker_that_stays_down_is_one_warning() {
    captured();

    let cfg = ProducerConfig::from_map([
        ("bootstrap.servers", "down:9092"),
        ("reconnect.backoff.max.ms", "200"),
        ("max.block.ms", "10000"),
    ])
    .unwrap();
    let mut p = Producer::new(cfg);
    let mut now = Instant::ZERO;
    p.send(ProducerRecord::new("t", "v".to_owned(), 0), now)
        .unwrap();
    let mut refused = 0;
    while now < Instant::from_millis(8000) {
        while let Some(o) = p.poll_output() {
            if let Output::Transmit(Transmit::Connect { conn, .. }) = o {
                refused += 1;
                p.handle_connect_failed(conn, ConnectError::Refused, now);
            }
        }
        now = p
            .poll_timeout()
            .unwrap_or(now + Duration::from_millis(100))
            .max(now + Duration::from_millis(1));
        p.handle_timeout(now);
    }
    let text = captured();
    let warnings = text.matches("connections keep failing").count();
    assert!(refused > 20, "{refused} connects");
    assert_eq!(warnings, 1, "{refused} refused connects: {text}");
    assert!(
        text.contains("WARN") && text.contains("down:9092"),
        "{text}"
    );
}

/// One automatic commit round: consume up to `offset`, let the interval pass, and answer the
/// commit with `error`.
fn auto_commit_answered(o: &mut Offsets, offset: i64, error: i16, now: &mut Instant) {
    let tp = ("t".to_string(), 0);
    o.consumed(&tp, offset, 0);
    *now += Duration::from_millis(500);
    o.handle_timeout(*now, None);
    let Some(OffsetRequest::Commit(req)) = o.poll_request(Some((1, "m")), *now) else {
        panic!("an automatic commit is due");
    };
    assert_eq!(req.topics[0].partitions[0].committed_offset, offset);
    o.handle_response(
        ResponseBody::OffsetCommit(OffsetCommitResponse {
            topics: vec![OffsetCommitResponseTopic {
                name: "t".into(),
                partitions: vec![OffsetCommitResponsePartition {
                    partition_index: 0,
                    error_code: error,
                    ..Default::default()
                }],
                ..Default::default()
            }],
            ..Default::default()
        }),
        *now,
    );
    while o.poll_event().is_some() {}
}

#[test]
fn an_automatic_commit_refused_again_and_again_is_one_warning_until_one_succeeds() {
    captured();
    const FENCED_LEADER_EPOCH: i16 = 74;
    let warnings = || captured().matches("an automatic commit failed").count();
    let mut o = Offsets::new(
        "g",
        None,
        Some(Duration::from_millis(500)),
        Duration::from_millis(100),
    );
    let mut now = Instant::ZERO;
    o.assigned(&[], now);
    // Nobody awaits an automatic commit: its refusal is the warning or nothing.
    for offset in 1..=5 {
        auto_commit_answered(&mut o, offset, FENCED_LEADER_EPOCH, &mut now);
    }
    assert_eq!(warnings(), 1, "{}", captured());
    assert!(captured().contains("FENCED_LEADER_EPOCH"), "{}", captured());
    // A commit that succeeds ends the episode: the next refusal is a new one.
    auto_commit_answered(&mut o, 6, 0, &mut now);
    assert_eq!(warnings(), 1);
    auto_commit_answered(&mut o, 7, FENCED_LEADER_EPOCH, &mut now);
    assert_eq!(warnings(), 2, "{}", captured());
}
