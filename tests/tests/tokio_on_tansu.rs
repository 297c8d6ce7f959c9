//! The tokio adapter against a real broker (Tansu): delivery, back-pressure, max.block.ms and
//! dropping a producer with records in flight.

use std::time::{Duration, Instant};

use kafka_core::config::ConsumerConfig;
use kafka_core::fetcher::{FetchEvent, Fetcher, StartFrom};
use kafka_core::producer::DeliveryError;
use kafka_tokio::{Producer, Record, SendError};
use tests::blocking::Driver;
use tests::broker::Broker;

fn read_back(broker: &Broker, topic: &str) -> Vec<String> {
    let cfg = ConsumerConfig::from_map([("bootstrap.servers", broker.addr.as_str())]).unwrap();
    let mut f = Fetcher::new(cfg);
    let mut d = Driver::default();
    f.assign([(topic.to_string(), 0)], StartFrom::Earliest, d.now());
    let events = d.run(&mut f, Duration::from_secs(60), |e| {
        e.iter()
            .any(|e| matches!(e, FetchEvent::EndOfPartition { .. }))
    });
    events
        .into_iter()
        .flat_map(|e| match e {
            FetchEvent::Records { records, .. } => records
                .into_iter()
                .map(|r| String::from_utf8(r.value.unwrap().to_vec()).unwrap())
                .collect(),
            _ => vec![],
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn delivers_everything_in_order() {
    let broker = Broker::start();
    broker.create_topic("tokio-all", 1);
    let producer = Producer::from_map([
        ("bootstrap.servers", broker.addr.as_str()),
        ("compression.type", "lz4"),
    ])
    .unwrap();
    let mut handles = Vec::new();
    for i in 0..20_000 {
        handles.push(
            producer
                .send(Record::new("tokio-all", format!("r{i}")))
                .await
                .unwrap(),
        );
    }
    producer.flush().await;
    let mut last = -1;
    for h in handles {
        let d = h.await.unwrap();
        let offset = d.offset.unwrap();
        assert!(offset > last, "offsets follow send order");
        last = offset;
    }
    producer.close(Duration::from_secs(5)).await;
    let got = read_back(&broker, "tokio-all");
    let want: Vec<String> = (0..20_000).map(|i| format!("r{i}")).collect();
    assert_eq!(got, want);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_small_buffer_applies_back_pressure_without_losing_records() {
    let broker = Broker::start();
    broker.create_topic("tokio-bp", 1);
    let producer = Producer::from_map([
        ("bootstrap.servers", broker.addr.as_str()),
        ("buffer.memory", "65536"),
        ("batch.size", "16384"),
    ])
    .unwrap();
    let mut handles = Vec::new();
    for i in 0..5_000 {
        // 5000 x ~1 KB is far more than 64 KB: sends must wait for deliveries.
        handles.push(
            producer
                .send(Record::new("tokio-bp", format!("{i:0>1000}")))
                .await
                .unwrap(),
        );
    }
    for h in handles {
        h.await.unwrap();
    }
    producer.close(Duration::from_secs(5)).await;
    assert_eq!(read_back(&broker, "tokio-bp").len(), 5_000);
}

fn unreachable_addr() -> String {
    // Bound then dropped: nothing listens there.
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    l.local_addr().unwrap().to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn send_gives_up_after_max_block_when_memory_stays_full() {
    let producer = Producer::from_map([
        ("bootstrap.servers", unreachable_addr().as_str()),
        ("buffer.memory", "40000"),
        ("max.block.ms", "300"),
    ])
    .unwrap();
    // The topic's metadata never arrives, so records wait holding memory until it runs out.
    let mut results = Vec::new();
    let start = Instant::now();
    for _ in 0..100 {
        match producer.send(Record::new("t", vec![0u8; 1000])).await {
            Ok(h) => results.push(h),
            Err(e) => {
                assert_eq!(e, SendError::Timeout);
                break;
            }
        }
    }
    let waited = start.elapsed();
    assert!(results.len() < 100, "memory ran out");
    assert!(
        waited >= Duration::from_millis(300) && waited < Duration::from_secs(5),
        "{waited:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropping_the_producer_fails_pending_records_without_blocking() {
    let producer =
        Producer::from_map([("bootstrap.servers", unreachable_addr().as_str())]).unwrap();
    let mut handles = Vec::new();
    for i in 0..10 {
        handles.push(
            producer
                .send(Record::new("t", format!("{i}")))
                .await
                .unwrap(),
        );
    }
    let start = Instant::now();
    drop(producer);
    assert!(
        start.elapsed() < Duration::from_millis(100),
        "drop never blocks"
    );
    for h in handles {
        let err = tokio::time::timeout(Duration::from_secs(5), h)
            .await
            .expect("resolved, not hung")
            .unwrap_err();
        assert_eq!(err.error, DeliveryError::Closed);
    }
}
