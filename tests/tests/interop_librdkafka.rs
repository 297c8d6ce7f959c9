//! Interop with librdkafka (the `rdkafka` crate), on Tansu, on librdkafka's own 3-broker mock
//! cluster, and on Apache Kafka for transactions:
//! - what our producer writes, librdkafka reads back exactly, under every codec;
//! - what librdkafka writes, our consumer reads back exactly, under every codec;
//! - keyed records land on the partitions librdkafka's `murmur2_random` picks (Java's);
//! - on the mock cluster (old API versions, leaders spread over 3 brokers), the idempotent
//!   producer loses and duplicates nothing while leaders move and a broker goes down;
//! - on Apache Kafka, each side's transactions read by the other's read_committed consumer.

use std::collections::BTreeMap;
use std::time::Duration;

use kafka_tokio::{Admin, Consumer, NewTopic, Producer, Record, StartFrom};
use rdkafka::config::ClientConfig;
use rdkafka::consumer::{BaseConsumer, Consumer as _};
use rdkafka::message::{Header, Headers as _, Message, OwnedHeaders};
use rdkafka::mocking::MockCluster;
use rdkafka::producer::{FutureProducer, FutureRecord};
use rdkafka::{Offset, Timestamp, TopicPartitionList};
use tests::broker::Broker;

const CODECS: [&str; 5] = ["none", "gzip", "snappy", "lz4", "zstd"];

/// One record as both sides describe it.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct Rec {
    partition: i32,
    key: Vec<u8>,
    value: Vec<u8>,
    headers: Vec<(String, Vec<u8>)>,
    timestamp: i64,
}

fn sample(codec: &str, n: usize, partitions: i32) -> Vec<Rec> {
    (0..n)
        .map(|i| Rec {
            partition: (i % partitions as usize) as i32,
            key: format!("key-{i}").into_bytes(),
            value: format!("{codec} value {i} {}", "x".repeat(i % 300)).into_bytes(),
            headers: vec![
                ("i".into(), i.to_string().into_bytes()),
                ("codec".into(), codec.as_bytes().to_vec()),
            ],
            timestamp: 1_650_000_000_000 + i as i64,
        })
        .collect()
}

/// Reads `n` records from every partition with librdkafka.
fn rdkafka_read(bootstrap: &str, topic: &str, partitions: i32, n: usize) -> Vec<Rec> {
    let c: BaseConsumer = ClientConfig::new()
        .set("bootstrap.servers", bootstrap)
        .set("group.id", "interop-reader")
        .set("enable.auto.commit", "false")
        .create()
        .unwrap();
    let mut tpl = TopicPartitionList::new();
    for p in 0..partitions {
        tpl.add_partition_offset(topic, p, Offset::Beginning)
            .unwrap();
    }
    c.assign(&tpl).unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    let mut out = Vec::new();
    while out.len() < n {
        assert!(
            std::time::Instant::now() < deadline,
            "librdkafka read only {} of {n}",
            out.len()
        );
        let Some(m) = c.poll(Duration::from_millis(100)) else {
            continue;
        };
        let m = m.unwrap();
        let headers = m
            .headers()
            .map(|h| {
                h.iter()
                    .map(|h| (h.key.to_owned(), h.value.unwrap_or_default().to_vec()))
                    .collect()
            })
            .unwrap_or_default();
        let Timestamp::CreateTime(timestamp) = m.timestamp() else {
            panic!("expected CreateTime, got {:?}", m.timestamp())
        };
        out.push(Rec {
            partition: m.partition(),
            key: m.key().unwrap_or_default().to_vec(),
            value: m.payload().unwrap_or_default().to_vec(),
            headers,
            timestamp,
        });
    }
    out
}

/// Reads `n` records from every partition with our consumer.
async fn our_read(bootstrap: &str, topic: &str, partitions: i32, n: usize) -> Vec<Rec> {
    let mut c = Consumer::from_map([("bootstrap.servers", bootstrap)]).unwrap();
    c.assign((0..partitions).map(|p| (topic, p)), StartFrom::Earliest)
        .unwrap();
    let mut out = Vec::new();
    while out.len() < n {
        let r = tokio::time::timeout(Duration::from_secs(60), c.recv())
            .await
            .unwrap_or_else(|_| panic!("we read only {} of {n}", out.len()))
            .unwrap();
        out.push(Rec {
            partition: r.partition,
            key: r.key.unwrap_or_default().to_vec(),
            value: r.value.unwrap_or_default().to_vec(),
            headers: r
                .headers
                .map(|h| {
                    let k = String::from_utf8(h.key.to_vec()).unwrap();
                    (k, h.value.unwrap_or_default().to_vec())
                })
                .collect(),
            timestamp: r.timestamp,
        });
    }
    out
}

/// Per partition, in offset order: the order each side must agree on.
fn by_partition(mut recs: Vec<Rec>) -> BTreeMap<i32, Vec<Rec>> {
    let mut out: BTreeMap<i32, Vec<Rec>> = BTreeMap::new();
    for r in recs.drain(..) {
        out.entry(r.partition).or_default().push(r);
    }
    out
}

#[test]
fn librdkafka_reads_exactly_what_we_write_under_every_codec() {
    let broker = Broker::start();
    let rt = tests::tokio_runtime();
    for codec in CODECS {
        let topic = format!("ours-{codec}");
        let sent = sample(codec, 600, 2);
        rt.block_on(async {
            let admin = Admin::from_map([("bootstrap.servers", broker.addr.as_str())]).unwrap();
            admin.create_topic(NewTopic::new(&topic, 2)).await.unwrap();
            let p = Producer::from_map([
                ("bootstrap.servers", broker.addr.as_str()),
                ("compression.type", codec),
            ])
            .unwrap();
            let mut handles = Vec::new();
            for r in &sent {
                let mut rec = Record::new(&topic, r.value.clone())
                    .key(r.key.clone())
                    .partition(r.partition)
                    .timestamp(r.timestamp);
                for (k, v) in &r.headers {
                    rec = rec.header(k.clone(), v.clone());
                }
                handles.push(p.send(rec).await.unwrap());
            }
            for h in handles {
                h.await.unwrap();
            }
            p.close(Duration::from_secs(5)).await;
        });
        let got = rdkafka_read(&broker.addr, &topic, 2, sent.len());
        assert_eq!(by_partition(got), by_partition(sent), "codec {codec}");
    }
}

#[test]
fn we_read_exactly_what_librdkafka_writes_under_every_codec() {
    let broker = Broker::start();
    let rt = tests::tokio_runtime();
    for codec in CODECS {
        let topic = format!("theirs-{codec}");
        let sent = sample(codec, 600, 2);
        rt.block_on(async {
            let admin = Admin::from_map([("bootstrap.servers", broker.addr.as_str())]).unwrap();
            admin.create_topic(NewTopic::new(&topic, 2)).await.unwrap();
            let p: FutureProducer = ClientConfig::new()
                .set("bootstrap.servers", &broker.addr)
                .set("compression.codec", codec)
                .set("linger.ms", "5")
                .create()
                .unwrap();
            let mut futures = Vec::new();
            for r in &sent {
                let mut headers = OwnedHeaders::new();
                for (k, v) in &r.headers {
                    headers = headers.insert(Header {
                        key: k,
                        value: Some(v),
                    });
                }
                let rec = FutureRecord::to(&topic)
                    .key(&r.key)
                    .payload(&r.value)
                    .partition(r.partition)
                    .timestamp(r.timestamp)
                    .headers(headers);
                futures.push(p.send_result(rec).unwrap());
            }
            for f in futures {
                f.await.unwrap().unwrap();
            }
            let got = our_read(&broker.addr, &topic, 2, sent.len()).await;
            assert_eq!(by_partition(got), by_partition(sent), "codec {codec}");
        });
    }
}

#[test]
fn keyed_records_land_where_librdkafka_murmur2_puts_them() {
    let broker = Broker::start();
    tests::tokio_runtime().block_on(async {
        let admin = Admin::from_map([("bootstrap.servers", broker.addr.as_str())]).unwrap();
        admin.create_topic(NewTopic::new("keys", 7)).await.unwrap();
        let theirs: FutureProducer = ClientConfig::new()
            .set("bootstrap.servers", &broker.addr)
            .set("partitioner", "murmur2_random")
            .create()
            .unwrap();
        let ours = Producer::from_map([("bootstrap.servers", broker.addr.as_str())]).unwrap();
        let mut spread = std::collections::BTreeSet::new();
        for i in 0..300 {
            let key = format!("user-{i}-{}", "k".repeat(i % 17));
            let t = theirs
                .send(
                    FutureRecord::to("keys").key(&key).payload("x"),
                    Duration::from_secs(10),
                )
                .await
                .unwrap();
            let o = ours
                .send(Record::new("keys", "x").key(key.clone()))
                .await
                .unwrap()
                .await
                .unwrap();
            assert_eq!(o.partition, t.partition, "key {key:?}");
            spread.insert(o.partition);
        }
        assert_eq!(spread.len(), 7, "the keys cover every partition");
        ours.close(Duration::from_secs(5)).await;
    });
}

#[test]
fn on_a_three_broker_mock_cluster_nothing_is_lost_or_duplicated_while_leaders_move() {
    let mock = MockCluster::new(3).unwrap();
    let bootstrap = mock.bootstrap_servers();
    const PARTS: i32 = 6;
    const N: u64 = 30_000;
    mock.create_topic("moving", PARTS, 3).unwrap();
    for p in 0..PARTS {
        mock.partition_leader("moving", p, Some(1 + p % 3)).unwrap();
    }
    tests::tokio_runtime().block_on(async {
        let producer = Producer::from_map([
            ("bootstrap.servers", bootstrap.as_str()),
            ("acks", "all"),
            ("linger.ms", "2"),
            ("retry.backoff.ms", "20"),
        ])
        .unwrap();
        let mut handles = Vec::new();
        for seq in 0..N {
            if seq == N / 3 {
                // Every leader moves to the next broker.
                for p in 0..PARTS {
                    mock.partition_leader("moving", p, Some(1 + (p + 1) % 3))
                        .unwrap();
                }
            }
            if seq == N / 2 {
                // Broker 2 goes down after its partitions move to broker 3.
                for p in 0..PARTS {
                    if 1 + (p + 1) % 3 == 2 {
                        mock.partition_leader("moving", p, Some(3)).unwrap();
                    }
                }
                mock.broker_down(2).unwrap();
            }
            if seq == 3 * N / 4 {
                mock.broker_up(2).unwrap();
                for p in 0..PARTS {
                    mock.partition_leader("moving", p, Some(1 + p % 3)).unwrap();
                }
            }
            let r = Record::new("moving", seq.to_be_bytes().to_vec())
                .partition((seq % PARTS as u64) as i32);
            handles.push(producer.send(r).await.unwrap());
            if seq % 1000 == 999 {
                // Let the cluster changes meet requests in flight.
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
        }
        for (seq, h) in handles.into_iter().enumerate() {
            tokio::time::timeout(Duration::from_secs(120), h)
                .await
                .expect("resolved")
                .unwrap_or_else(|e| panic!("record {seq}: {e}"));
        }
        producer.close(Duration::from_secs(5)).await;

        let got = our_read(&bootstrap, "moving", PARTS, N as usize).await;
        let mut seen = vec![false; N as usize];
        let mut last: BTreeMap<i32, i64> = BTreeMap::new();
        for r in got {
            let seq = u64::from_be_bytes(r.value[..8].try_into().unwrap());
            assert_eq!(r.partition as u64, seq % PARTS as u64);
            assert!(
                !std::mem::replace(&mut seen[seq as usize], true),
                "record {seq} duplicated"
            );
            let prev = last.insert(r.partition, seq as i64).unwrap_or(-1);
            assert!(
                seq as i64 > prev,
                "partition {}: {seq} after {prev}",
                r.partition
            );
        }
        assert!(seen.iter().all(|s| *s), "every record is in the log");
    });
}

/// One of our consumers and one librdkafka consumer in one group on 6 partitions, with the
/// range and then the cooperative-sticky assignor: each gets some partitions, together they
/// read every new record exactly once, and when librdkafka's leaves, ours takes over from the
/// committed offsets.
#[test]
fn our_consumer_and_librdkafka_share_a_group() {
    for assignor in ["range", "cooperative-sticky"] {
        let broker = Broker::start();
        let rt = tests::tokio_runtime();
        let topic = format!("mixed-{assignor}");
        let group = format!("mixed-group-{assignor}");
        rt.block_on(async {
            let admin = Admin::from_map([("bootstrap.servers", broker.addr.as_str())]).unwrap();
            admin.create_topic(NewTopic::new(&topic, 6)).await.unwrap();
        });
        let common = [
            ("session.timeout.ms", "2000"),
            ("heartbeat.interval.ms", "500"),
            ("auto.offset.reset", "earliest"),
            ("partition.assignment.strategy", assignor),
        ];
        // librdkafka's member, polling on its own thread.
        let (tx, rx) = std::sync::mpsc::channel::<(usize, Vec<u32>)>();
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let theirs = {
            let (addr, topic, group, stop) = (
                broker.addr.clone(),
                topic.clone(),
                group.clone(),
                stop.clone(),
            );
            std::thread::spawn(move || {
                let mut cfg = ClientConfig::new();
                cfg.set("bootstrap.servers", &addr)
                    .set("group.id", &group)
                    .set("enable.auto.commit", "true")
                    .set("auto.commit.interval.ms", "200");
                for (k, v) in common {
                    cfg.set(k, v);
                }
                let c: BaseConsumer = cfg.create().unwrap();
                c.subscribe(&[&topic]).unwrap();
                while !stop.load(std::sync::atomic::Ordering::SeqCst) {
                    let mut values = Vec::new();
                    if let Some(Ok(m)) = c.poll(Duration::from_millis(50)) {
                        let v = std::str::from_utf8(m.payload().unwrap()).unwrap();
                        values.push(v.parse().unwrap());
                        c.store_offset_from_message(&m).ok();
                    }
                    let owned = c.assignment().map_or(0, |a| a.count());
                    if tx.send((owned, values)).is_err() {
                        break;
                    }
                }
                c.commit_consumer_state(rdkafka::consumer::CommitMode::Sync)
                    .ok();
                drop(c); // leaves the group
            })
        };
        rt.block_on(async {
            let mut ours = Consumer::from_map(
                [
                    ("bootstrap.servers", broker.addr.as_str()),
                    ("group.id", group.as_str()),
                ]
                .into_iter()
                .chain(common),
            )
            .unwrap();
            ours.subscribe([topic.as_str()]).unwrap();
            let mut our_owned = 0usize;
            let mut their_owned = 0usize;
            let mut seen: BTreeMap<u32, usize> = BTreeMap::new();
            let mut produced = false;
            let deadline = tokio::time::Instant::now() + Duration::from_secs(90);
            // Both join; once both own partitions, 600 records go out; both read them.
            while seen.len() < 600 {
                assert!(
                    tokio::time::Instant::now() < deadline,
                    "{assignor}: stuck at {} of 600, owned {our_owned}+{their_owned}",
                    seen.len()
                );
                while let Ok((owned, values)) = rx.try_recv() {
                    their_owned = owned;
                    for v in values {
                        *seen.entry(v).or_default() += 1;
                    }
                }
                if !produced && our_owned > 0 && their_owned > 0 && our_owned + their_owned == 6 {
                    produced = true;
                    let p =
                        Producer::from_map([("bootstrap.servers", broker.addr.as_str())]).unwrap();
                    for i in 0..600u32 {
                        drop(
                            p.send(Record::new(topic.as_str(), i.to_string()))
                                .await
                                .unwrap(),
                        );
                    }
                    p.close(Duration::from_secs(5)).await;
                }
                match tokio::time::timeout(Duration::from_millis(100), ours.next_event()).await {
                    Ok(Ok(kafka_tokio::ConsumerEvent::Record(r))) => {
                        let v: u32 = std::str::from_utf8(r.value.as_deref().unwrap())
                            .unwrap()
                            .parse()
                            .unwrap();
                        *seen.entry(v).or_default() += 1;
                    }
                    Ok(Ok(kafka_tokio::ConsumerEvent::Assigned(tps))) => our_owned += tps.len(),
                    Ok(Ok(kafka_tokio::ConsumerEvent::Revoking(tps))) => {
                        our_owned -= tps.len();
                        ours.ack_revocation();
                    }
                    Ok(Ok(kafka_tokio::ConsumerEvent::Lost(tps))) => our_owned -= tps.len(),
                    Ok(Ok(_)) | Err(_) => {}
                    Ok(Err(e)) => panic!("{e}"),
                }
            }
            assert!(
                seen.values().all(|n| *n == 1),
                "{assignor}: exactly once: {seen:?}"
            );
            assert!(
                our_owned > 0 && their_owned > 0,
                "{assignor}: both own partitions"
            );
            // librdkafka's member leaves: ours takes every partition, from the committed offsets.
            stop.store(true, std::sync::atomic::Ordering::SeqCst);
            while rx.recv().is_ok() {}
            theirs.join().unwrap();
            let p = Producer::from_map([("bootstrap.servers", broker.addr.as_str())]).unwrap();
            for i in 600..900u32 {
                drop(
                    p.send(Record::new(topic.as_str(), i.to_string()))
                        .await
                        .unwrap(),
                );
            }
            p.close(Duration::from_secs(5)).await;
            let mut after = BTreeMap::new();
            while after.len() < 300 {
                assert!(
                    tokio::time::Instant::now() < deadline + Duration::from_secs(60),
                    "{assignor}: takeover stuck at {}",
                    after.len()
                );
                match tokio::time::timeout(Duration::from_millis(200), ours.next_event()).await {
                    Ok(Ok(kafka_tokio::ConsumerEvent::Record(r))) => {
                        let v: u32 = std::str::from_utf8(r.value.as_deref().unwrap())
                            .unwrap()
                            .parse()
                            .unwrap();
                        assert!(
                            v >= 600,
                            "{assignor}: {v} was read again after the takeover"
                        );
                        *after.entry(v).or_insert(0) += 1;
                    }
                    Ok(Ok(kafka_tokio::ConsumerEvent::Revoking(_))) => ours.ack_revocation(),
                    Ok(Ok(_)) | Err(_) => {}
                    Ok(Err(e)) => panic!("{e}"),
                }
            }
            ours.close(Duration::from_secs(10)).await;
        });
    }
}

/// On the 3-broker mock cluster our group consumer reads on while the group coordinator moves
/// and partition leaders move: nothing is skipped.
#[test]
fn on_the_mock_cluster_a_group_consumer_survives_coordinator_and_leader_moves() {
    let mock = MockCluster::new(3).unwrap();
    let bootstrap = mock.bootstrap_servers();
    const PARTS: i32 = 6;
    const N: u32 = 3_000;
    mock.create_topic("moves", PARTS, 3).unwrap();
    for p in 0..PARTS {
        mock.partition_leader("moves", p, Some(1 + p % 3)).unwrap();
    }
    mock.coordinator(rdkafka::mocking::MockCoordinator::Group("movers".into()), 1)
        .unwrap();
    // The mock advertises flexible versions of the group APIs that its handlers misread (an
    // i32 where a compact array count is, v0-2 fields for LeaveGroup v3+) and drops the
    // connection; librdkafka itself never sends them. Cap them where the mock works.
    use rdkafka::types::RDKafkaApiKey;
    for (api, max) in [
        (RDKafkaApiKey::JoinGroup, 5),
        (RDKafkaApiKey::SyncGroup, 3),
        (RDKafkaApiKey::LeaveGroup, 2),
    ] {
        mock.apiversion(api, Some(0), Some(max)).unwrap();
    }
    tests::tokio_runtime().block_on(async {
        let p = Producer::from_map([("bootstrap.servers", bootstrap.as_str())]).unwrap();
        let mut hs = Vec::new();
        for i in 0..N {
            hs.push(p.send(Record::new("moves", i.to_string())).await.unwrap());
        }
        for h in hs {
            h.await.unwrap();
        }
        p.close(Duration::from_secs(5)).await;

        let mut c = Consumer::from_map([
            ("bootstrap.servers", bootstrap.as_str()),
            ("group.id", "movers"),
            ("auto.offset.reset", "earliest"),
            ("session.timeout.ms", "6000"),
            ("heartbeat.interval.ms", "500"),
            ("max.partition.fetch.bytes", "2048"),
        ])
        .unwrap();
        c.subscribe(["moves"]).unwrap();
        let mut seen = std::collections::BTreeSet::new();
        let mut count = 0;
        while seen.len() < N as usize {
            let r = tokio::time::timeout(Duration::from_secs(60), c.recv())
                .await
                .unwrap_or_else(|_| panic!("stuck at {} of {N}", seen.len()))
                .unwrap();
            seen.insert(
                std::str::from_utf8(r.value.as_deref().unwrap())
                    .unwrap()
                    .parse::<u32>()
                    .unwrap(),
            );
            count += 1;
            if count == 1_000 {
                mock.coordinator(rdkafka::mocking::MockCoordinator::Group("movers".into()), 2)
                    .unwrap();
            }
            if count == 2_000 {
                for p in 0..PARTS {
                    mock.partition_leader("moves", p, Some(1 + (p + 1) % 3))
                        .unwrap();
                }
            }
        }
        assert_eq!(seen.len(), N as usize, "nothing skipped");
        c.close(Duration::from_secs(10)).await;
    });
}

/// Every value of `topic` (2 partitions) to its end, as librdkafka's consumer with
/// `isolation` reads it.
fn rdkafka_read_to_end(bootstrap: &str, topic: &str, isolation: &str) -> Vec<String> {
    let c: BaseConsumer = ClientConfig::new()
        .set("bootstrap.servers", bootstrap)
        .set("group.id", "interop-txn-reader")
        .set("enable.auto.commit", "false")
        .set("enable.partition.eof", "true")
        .set("isolation.level", isolation)
        .create()
        .unwrap();
    let mut tpl = TopicPartitionList::new();
    for p in 0..2 {
        tpl.add_partition_offset(topic, p, Offset::Beginning)
            .unwrap();
    }
    c.assign(&tpl).unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    let mut ends = std::collections::BTreeSet::new();
    let mut out = Vec::new();
    while ends.len() < 2 {
        assert!(
            std::time::Instant::now() < deadline,
            "librdkafka's {isolation} reader did not reach the ends ({} records)",
            out.len()
        );
        match c.poll(Duration::from_millis(100)) {
            Some(Ok(m)) => {
                out.push(String::from_utf8_lossy(m.payload().unwrap_or_default()).to_string())
            }
            Some(Err(rdkafka::error::KafkaError::PartitionEOF(p))) => {
                ends.insert(p);
            }
            Some(Err(e)) => panic!("librdkafka's reader: {e}"),
            None => {}
        }
    }
    out
}

/// On Apache Kafka: our transactions (committed, aborted, committed) read by librdkafka's
/// read_committed consumer, which skips the aborted one; librdkafka's transactional
/// producer's, read by ours, the committed ones only.
#[test]
fn transactions_cross_between_librdkafka_and_us_on_kafka() {
    use rdkafka::producer::Producer as _;
    let kafka = tests::kafka::Cluster::start(1);
    let bootstrap = kafka.bootstrap.clone();
    kafka.create_topic("tx-ours", 2, 1, &[]);
    kafka.create_topic("tx-rdkafka", 2, 1, &[]);
    let rt = tests::tokio_runtime();
    rt.block_on(tests::kafka::write_three_transactions(
        bootstrap.as_str(),
        "tx-ours",
        "interop-ours",
    ));
    let committed = rdkafka_read_to_end(&bootstrap, "tx-ours", "read_committed");
    assert_eq!(committed.len(), 100, "{committed:?}");
    assert!(
        committed.iter().all(|v| !v.starts_with("ab")),
        "librdkafka's read_committed consumer saw an aborted record"
    );
    let all = rdkafka_read_to_end(&bootstrap, "tx-ours", "read_uncommitted");
    assert_eq!(all.iter().filter(|v| v.starts_with("ab")).count(), 50);

    // librdkafka's transactions, read by ours.
    let theirs: FutureProducer = ClientConfig::new()
        .set("bootstrap.servers", &bootstrap)
        .set("transactional.id", "interop-rdkafka")
        .create()
        .unwrap();
    theirs.init_transactions(Duration::from_secs(30)).unwrap();
    for (tag, commit) in [("r1", true), ("rab", false), ("r2", true)] {
        theirs.begin_transaction().unwrap();
        for i in 0..40 {
            let v = format!("{tag}-{i}");
            let r = FutureRecord::<(), String>::to("tx-rdkafka").payload(&v);
            rt.block_on(theirs.send(r, Duration::from_secs(10)))
                .map_err(|(e, _)| e)
                .unwrap();
        }
        if commit {
            theirs.commit_transaction(Duration::from_secs(30)).unwrap();
        } else {
            theirs.abort_transaction(Duration::from_secs(30)).unwrap();
        }
    }
    drop(theirs);
    let seen: Vec<String> = rt.block_on(async {
        let mut consumer = Consumer::from_map([
            ("bootstrap.servers", bootstrap.as_str()),
            ("isolation.level", "read_committed"),
        ])
        .unwrap();
        consumer
            .assign((0..2).map(|p| ("tx-rdkafka", p)), StartFrom::Earliest)
            .unwrap();
        let mut ends = std::collections::BTreeSet::new();
        let mut values = Vec::new();
        while ends.len() < 2 {
            let e = tokio::time::timeout(Duration::from_secs(30), consumer.next_event())
                .await
                .expect("records within 30 s")
                .unwrap();
            match e {
                kafka_tokio::ConsumerEvent::Record(r) => {
                    values.push(String::from_utf8(r.value.unwrap().to_vec()).unwrap())
                }
                kafka_tokio::ConsumerEvent::EndOfPartition { partition, .. } => {
                    ends.insert(partition);
                }
                _ => {}
            }
        }
        values
    });
    assert_eq!(seen.len(), 80, "{seen:?}");
    assert!(seen.iter().all(|v| !v.starts_with("rab")), "{seen:?}");
}
