//! The producer core alone, for counting instructions per record with callgrind: N 100-byte
//! records through send → drain → encoded Produce bytes (acks=0, full batches only), after
//! the same warm-up as `benches/producer.rs`. Run it for two counts and divide the difference
//! in instructions by the difference in records, so the warm-up cancels out:
//!
//! ```sh
//! cargo build --release -p kafka-core --example producer_instructions
//! valgrind --tool=callgrind --callgrind-out-file=/dev/null target/release/examples/producer_instructions 100000
//! ```

use kafka_core::net::Machine as _;
use kafka_core::net::Transmit;
use kafka_core::producer::{Output, ProducerRecord};

#[path = "../benches/common/mod.rs"]
mod common;

fn main() {
    let n: usize = std::env::args()
        .nth(1)
        .map_or(100_000, |a| a.parse().expect("a record count"));
    let (mut p, now, topic) = common::warmed();
    let value = bytes::Bytes::from(vec![b'x'; 100]);
    let mut bytes = 0;
    for i in 0..n {
        let r = ProducerRecord {
            topic: topic.clone(),
            value: Some(value.clone()),
            timestamp: 1_700_000_000_000 + i as i64,
            ..Default::default()
        };
        p.send(r, now).unwrap();
        if i % 1000 == 999 {
            while let Some(o) = p.poll_output() {
                if let Output::Transmit(Transmit::Send { bytes: b, .. }) = o {
                    bytes += b.len();
                }
            }
        }
    }
    println!("{n} records, {bytes} bytes encoded");
}
