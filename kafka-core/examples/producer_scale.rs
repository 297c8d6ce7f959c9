//! The producer core at scale, for counting instructions per record with callgrind: N keyed
//! 100-byte records spread by the default partitioner over P partitions of one broker
//! (`kafka_sim::SingleBroker`), acks=1 and idempotence on (the defaults), `linger.ms` 5, one
//! record each virtual microsecond. It steps the producer as the driver (`kafka-async-driver`)
//! does: after a `send` that asks for attention (`take_attention`: it opened a batch, or ran the
//! sender) it drains `poll_output` and asks `poll_timeout`, while a record appended to an open
//! batch changes neither; each 100 µs it passes time, carries bytes to and from the broker and
//! asks `poll_timeout` again. Counting only the producer's own work, every call into it made
//! through one of the [`counted`] functions:
//!
//! ```sh
//! cargo build --release -p kafka-core --example producer_scale
//! valgrind --tool=callgrind --callgrind-out-file=/dev/null \
//!   --toggle-collect='producer_scale::counted::*' \
//!   target/release/examples/producer_scale 1000 100000
//! ```
//!
//! Divide the instructions by N. The cost per record should not grow with P.
//!
//! Callgrind's `--toggle-collect` toggles: entering a matching function while collecting turns
//! collection off until it returns. Toggled on `Producer::*` itself, every producer method that
//! another one called without inlining went uncounted, and the count moved whenever inlining
//! did (moving the in-flight map into its own type made it "cost" twice as much at 10,000
//! partitions while executing the same instructions). The wrappers never call each other.

use std::collections::BTreeMap;
use std::time::Duration;

use kafka_core::net::{ConnId, Transmit};
use kafka_core::producer::{Output, ProducerEvent, ProducerRecord, SendError, Topic};
use kafka_core::{Instant, Producer, ProducerConfig};
use kafka_sim::{ScriptedBroker, SingleBroker};

/// The producer calls the count covers: each `#[inline(never)]`, so that callgrind sees it,
/// and none calls another, so that toggling never nests.
mod counted {
    use kafka_core::net::{ConnId, Machine as _};
    use kafka_core::producer::{Output, ProducerRecord, RecordToken, SendError};
    use kafka_core::{Instant, Producer};

    #[inline(never)]
    pub fn poll_output(p: &mut Producer) -> Option<Output> {
        p.poll_output()
    }

    #[inline(never)]
    pub fn handle_connected(p: &mut Producer, conn: ConnId, now: Instant) {
        p.handle_connected(conn, now)
    }

    #[inline(never)]
    pub fn handle_received(p: &mut Producer, conn: ConnId, bytes: &[u8], now: Instant) {
        p.handle_received(conn, bytes, now)
    }

    #[inline(never)]
    pub fn handle_timeout(p: &mut Producer, now: Instant) {
        p.handle_timeout(now)
    }

    #[inline(never)]
    pub fn poll_timeout(p: &mut Producer) -> Option<Instant> {
        p.poll_timeout()
    }

    #[inline(never)]
    pub fn take_attention(p: &mut Producer) -> bool {
        p.take_attention()
    }

    #[inline(never)]
    #[allow(clippy::result_large_err)] // as Producer::send_or_return
    pub fn send_or_return(
        p: &mut Producer,
        r: ProducerRecord,
        now: Instant,
    ) -> Result<RecordToken, (SendError, ProducerRecord)> {
        p.send_or_return(r, now)
    }

    #[inline(never)]
    pub fn flush(p: &mut Producer, now: Instant) {
        p.flush(now);
    }
}

/// Carries everything the producer wants to send to the broker, and the answers back.
fn pump(
    p: &mut Producer,
    cluster: &SingleBroker,
    conns: &mut BTreeMap<ConnId, ScriptedBroker>,
    delivered: &mut u64,
    now: Instant,
) {
    while let Some(o) = counted::poll_output(p) {
        match o {
            Output::Transmit(Transmit::Connect { conn, .. }) => {
                conns.insert(conn, cluster.connection());
                counted::handle_connected(p, conn, now);
            }
            Output::Transmit(Transmit::Send { conn, bytes }) => {
                let out = conns.get_mut(&conn).unwrap().receive(&bytes).unwrap();
                if !out.bytes.is_empty() {
                    counted::handle_received(p, conn, &out.bytes, now);
                }
            }
            Output::Event(ProducerEvent::Outcome(_, outcome)) => {
                panic!("every record is delivered: {outcome:?}")
            }
            Output::Event(ProducerEvent::Delivered(batch)) => *delivered += batch.len() as u64,
            _ => {}
        }
    }
}

fn main() {
    let mut args = std::env::args().skip(1);
    let partitions: usize = args.next().map_or(1000, |a| a.parse().expect("partitions"));
    let n: u64 = args.next().map_or(100_000, |a| a.parse().expect("records"));
    let cluster = SingleBroker::new("broker", 9092, partitions);
    let cfg = ProducerConfig::from_map([("bootstrap.servers", "broker:9092"), ("linger.ms", "5")])
        .unwrap();
    let mut p = Producer::new(cfg);
    let mut conns = BTreeMap::new();
    let mut now = Instant::ZERO;
    let mut delivered = 0;
    let mut wake = None;
    let topic = Topic::from("scale");
    let value = bytes::Bytes::from(vec![b'x'; 100]);
    for i in 0..n {
        let r = ProducerRecord {
            topic: topic.clone(),
            key: Some(bytes::Bytes::copy_from_slice(&i.to_be_bytes())),
            value: Some(value.clone()),
            timestamp: 1_700_000_000_000 + i as i64 / 1000,
            ..Default::default()
        };
        let mut r = r;
        // Should memory run short (buffer.memory), wait for batches to go, as a driver does on
        // BufferFull.
        while let Err((e, back)) = counted::send_or_return(&mut p, r, now) {
            assert!(matches!(e, SendError::BufferFull), "{e}");
            r = back;
            now += Duration::from_millis(1);
            counted::handle_timeout(&mut p, now);
            pump(&mut p, &cluster, &mut conns, &mut delivered, now);
        }
        if counted::take_attention(&mut p) {
            pump(&mut p, &cluster, &mut conns, &mut delivered, now);
            wake = counted::poll_timeout(&mut p);
        }
        if i % 100 == 99 {
            now += Duration::from_micros(100);
            if wake.is_some_and(|t| t <= now) {
                counted::handle_timeout(&mut p, now);
            }
            pump(&mut p, &cluster, &mut conns, &mut delivered, now);
            wake = counted::poll_timeout(&mut p);
        }
    }
    let flush = now + Duration::from_secs(10);
    counted::flush(&mut p, now);
    while delivered < n && now < flush {
        now += Duration::from_millis(1);
        counted::handle_timeout(&mut p, now);
        pump(&mut p, &cluster, &mut conns, &mut delivered, now);
    }
    assert_eq!(
        delivered, n,
        "every record delivered within 10 s of the flush"
    );
    println!("{n} records over {partitions} partitions delivered");
}
