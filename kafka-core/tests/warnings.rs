//! An outage shows at the warn level once per episode, not once per attempt (a 30 s broker
//! stop logged nothing above INFO): a connection that keeps failing is one warning however
//! often it is retried. Its own test binary, so the process-wide subscriber sees only it.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use kafka_core::config::ProducerConfig;
use kafka_core::net::{ConnectError, Output, Transmit};
use kafka_core::producer::{Producer, ProducerRecord};
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

#[test]
fn a_broker_that_stays_down_is_one_warning() {
    let buf = Captured(Arc::new(Mutex::new(Vec::new())));
    let writer = buf.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_max_level(tracing::Level::WARN)
        .with_writer(move || writer.clone())
        .with_ansi(false)
        .finish();
    tracing::subscriber::set_global_default(subscriber).expect("the only subscriber here");

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
    let text = String::from_utf8(buf.0.lock().unwrap().clone()).unwrap();
    let warnings = text.matches("connections keep failing").count();
    assert!(refused > 20, "{refused} connects");
    assert_eq!(warnings, 1, "{refused} refused connects: {text}");
    assert!(
        text.contains("WARN") && text.contains("down:9092"),
        "{text}"
    );
}
