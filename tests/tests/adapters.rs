//! Both adapters against real brokers, with one suite instantiated for each runtime (tokio,
//! smol and async-std, the last two through kafka-asyncstd) and each broker (Tansu, and Apache
//! Kafka itself). It covers every acks
//! level and codec with keys, headers and timestamps, idempotence, back-pressure, the admin
//! client, the consumer's controls, and a broker crash mid-stream.

use std::future::Future;
use std::time::Duration;

/// Runs `f`, failing the test if it takes longer than `limit` (works under every runtime:
/// async-io's timer has its own reactor thread).
pub async fn within<F: Future>(limit: Duration, what: &str, f: F) -> F::Output {
    use futures_util::future::{select, Either};
    let timer = async_io::Timer::after(limit);
    match select(std::pin::pin!(f), timer).await {
        Either::Left((out, _)) => out,
        Either::Right(_) => panic!("{what} did not finish within {limit:?}"),
    }
}

fn unreachable_addr() -> String {
    // Bound then dropped: nothing listens there.
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    l.local_addr().unwrap().to_string()
}

macro_rules! suite {
    ($name:ident, $krate:ident, $block_on:path, $kind:expr) => {
        mod $name {
            use std::collections::BTreeMap;
            use std::time::{Duration, Instant};

            use futures_util::StreamExt;
            use tests::brokers::{Kind, TestBroker as Broker};
            use $krate::{
                Admin, AdminError, Consumer, ConsumerEvent, DeliveryError, ErrorCode, NewTopic,
                Producer, Record, SendError, StartFrom,
            };

            use super::{unreachable_addr, within};

            fn admin(broker: &Broker) -> Admin {
                Admin::from_map([("bootstrap.servers", broker.addr.as_str())]).unwrap()
            }

            fn consumer(broker: &Broker) -> Consumer {
                consumer_over(broker, "1")
            }

            /// A consumer fetching over `conns` connections to the broker.
            fn consumer_over(broker: &Broker, conns: &str) -> Consumer {
                Consumer::from_map([
                    ("bootstrap.servers", broker.addr.as_str()),
                    ("connections.per.broker", conns),
                ])
                .unwrap()
            }

            /// Waits until every partition's leader answers: on Kafka a new topic's leaders
            /// take a moment to start serving, and acks=0 records sent before are lost (the
            /// broker closes the connection on an error it cannot answer), as with any client.
            async fn serving(broker: &Broker, topic: &str, partitions: i32) {
                let mut c = consumer(broker);
                c.assign((0..partitions).map(|p| (topic, p)), StartFrom::Latest)
                    .unwrap();
                within(Duration::from_secs(30), "the topic's leaders", async {
                    loop {
                        let mut all = true;
                        for p in 0..partitions {
                            all &= c.position(topic, p).await.is_some();
                        }
                        if all {
                            break;
                        }
                        async_io::Timer::after(Duration::from_millis(50)).await;
                    }
                })
                .await;
            }

            /// Reads `topic`'s `partitions` from the start until `count` records arrived.
            async fn read(
                broker: &Broker,
                topic: &str,
                partitions: i32,
                count: usize,
            ) -> Vec<$krate::ConsumerRecord> {
                read_over(broker, topic, partitions, count, "1").await
            }

            /// Reads as [`read`] does, fetching over `conns` connections.
            async fn read_over(
                broker: &Broker,
                topic: &str,
                partitions: i32,
                count: usize,
                conns: &str,
            ) -> Vec<$krate::ConsumerRecord> {
                let mut c = consumer_over(broker, conns);
                c.assign((0..partitions).map(|p| (topic, p)), StartFrom::Earliest)
                    .unwrap();
                let mut out = Vec::new();
                within(
                    Duration::from_secs(60),
                    &format!("reading back {topic}"),
                    async {
                        while out.len() < count {
                            out.push(c.recv().await.unwrap());
                        }
                    },
                )
                .await;
                out
            }

            #[test]
            fn every_acks_level_and_codec_round_trips_keys_headers_and_timestamps() {
                $block_on(async {
                    let broker = Broker::shared($kind, module_path!());
                    let admin = admin(&broker);
                    const N: usize = 2_000;
                    for acks in ["0", "1", "all"] {
                        for codec in ["none", "gzip", "snappy", "lz4", "zstd"] {
                            let topic = format!("rt-{acks}-{codec}");
                            admin.create_topic(NewTopic::new(&topic, 3)).await.unwrap();
                            serving(&broker, &topic, 3).await;
                            let idempotent = if acks == "all" { "true" } else { "false" };
                            // Two codecs of each acks level write, and are read back, over a
                            // connection per partition: order and exactly-once must hold
                            // across them too.
                            let lanes = if matches!(codec, "snappy" | "zstd") {
                                "3"
                            } else {
                                "1"
                            };
                            let producer = Producer::from_map([
                                ("bootstrap.servers", broker.addr.as_str()),
                                ("acks", acks),
                                ("compression.type", codec),
                                ("enable.idempotence", idempotent),
                                ("linger.ms", "2"),
                                ("connections.per.broker", lanes),
                            ])
                            .unwrap();
                            let mut handles = Vec::new();
                            for i in 0..N {
                                let r = Record::new(&topic, format!("value-{i}"))
                                    .key(format!("key-{}", i % 50))
                                    .header("seq", i.to_string())
                                    .header("codec", codec)
                                    .timestamp(1_600_000_000_000 + i as i64);
                                handles.push(producer.send(r).await.unwrap());
                            }
                            let mut placed = BTreeMap::new();
                            for (i, h) in handles.into_iter().enumerate() {
                                let d = h.await.unwrap_or_else(|e| {
                                    panic!("acks={acks} {codec} record {i}: {e}")
                                });
                                assert_eq!(d.offset.is_some(), acks != "0");
                                placed.insert(i, d.partition);
                            }
                            // Read back while the producer is still open: with acks=0 the
                            // deliveries only say the requests were handed to the socket.
                            let got = read_over(&broker, &topic, 3, N, lanes).await;
                            producer.close(Duration::from_secs(5)).await;
                            assert_eq!(got.len(), N, "acks={acks} {codec}");
                            let mut last_seq: BTreeMap<i32, i64> = BTreeMap::new();
                            let mut seen = vec![false; N];
                            for r in &got {
                                let hs: Vec<_> = r.headers.clone().collect();
                                assert_eq!(hs.len(), 2);
                                assert_eq!(&hs[0].key[..], b"seq");
                                let seq: usize = std::str::from_utf8(hs[0].value.as_ref().unwrap())
                                    .unwrap()
                                    .parse()
                                    .unwrap();
                                assert_eq!(hs[1].value.as_deref(), Some(codec.as_bytes()));
                                assert!(!seen[seq], "record {seq} duplicated");
                                seen[seq] = true;
                                assert_eq!(
                                    r.value.as_deref(),
                                    Some(format!("value-{seq}").as_bytes())
                                );
                                assert_eq!(
                                    r.key.as_deref(),
                                    Some(format!("key-{}", seq % 50).as_bytes())
                                );
                                assert_eq!(r.timestamp, 1_600_000_000_000 + seq as i64);
                                assert_eq!(r.partition, placed[&seq], "the delivered partition");
                                let last = last_seq.insert(r.partition, seq as i64).unwrap_or(-1);
                                assert!(seq as i64 > last, "per-partition order is send order");
                            }
                            let mut parts: Vec<i32> = placed.values().copied().collect();
                            parts.dedup();
                            assert!(last_seq.len() > 1, "keys spread over partitions");
                        }
                    }
                })
            }

            #[test]
            fn a_small_buffer_applies_back_pressure_without_losing_records() {
                $block_on(async {
                    let broker = Broker::shared($kind, module_path!());
                    admin(&broker)
                        .create_topic(NewTopic::new("bp", 1))
                        .await
                        .unwrap();
                    let producer = Producer::from_map([
                        ("bootstrap.servers", broker.addr.as_str()),
                        ("buffer.memory", "65536"),
                        ("batch.size", "16384"),
                    ])
                    .unwrap();
                    let mut handles = Vec::new();
                    for i in 0..5_000 {
                        // 5000 x ~1 KB is far more than 64 KB: sends must wait for deliveries.
                        let r = Record::new("bp", format!("{i:0>1000}"));
                        handles.push(producer.send(r).await.unwrap());
                    }
                    let mut last = -1;
                    for h in handles {
                        let offset = h.await.unwrap().offset.unwrap();
                        assert!(offset > last);
                        last = offset;
                    }
                    producer.close(Duration::from_secs(5)).await;
                    let got = read(&broker, "bp", 1, 5_000).await;
                    for (i, r) in got.iter().enumerate() {
                        assert_eq!(r.value.as_deref(), Some(format!("{i:0>1000}").as_bytes()));
                    }
                })
            }

            #[test]
            fn send_gives_up_after_max_block_when_memory_stays_full() {
                $block_on(async {
                    let broker = Broker::exclusive($kind);
                    admin(&broker)
                        .create_topic(NewTopic::new("mb", 1))
                        .await
                        .unwrap();
                    let producer = Producer::from_map([
                        ("bootstrap.servers", broker.addr.as_str()),
                        ("buffer.memory", "40000"),
                        ("max.block.ms", "300"),
                    ])
                    .unwrap();
                    producer
                        .send(Record::new("mb", "warm-up"))
                        .await
                        .unwrap()
                        .await
                        .unwrap();
                    // A frozen broker answers nothing: in-flight records hold their memory.
                    broker.pause();
                    let mut queued = Vec::new();
                    let start = Instant::now();
                    let err = loop {
                        match producer.send(Record::new("mb", vec![0u8; 1000])).await {
                            Ok(h) => queued.push(h),
                            Err(e) => break e,
                        }
                        assert!(queued.len() < 100, "memory never ran out");
                    };
                    let waited = start.elapsed();
                    broker.resume();
                    assert_eq!(err, SendError::Timeout);
                    assert!(
                        waited >= Duration::from_millis(300) && waited < Duration::from_secs(5),
                        "{waited:?}"
                    );
                    // Handles returned before the driver saw memory run out either deliver
                    // once the broker thaws, or fail as never sent after max.block.ms.
                    let mut delivered = 0;
                    for h in queued {
                        match within(Duration::from_secs(60), "an outcome", h).await {
                            Ok(_) => delivered += 1,
                            Err(f) => assert_eq!(
                                (f.error, f.certainty),
                                (DeliveryError::BufferFull, $krate::Certainty::NotSent)
                            ),
                        }
                    }
                    assert!(delivered > 0, "records that got memory were delivered");
                })
            }

            #[test]
            fn send_refuses_a_record_larger_than_a_request_at_once() {
                $block_on(async {
                    // Nothing to connect to: the size is checked before anything else.
                    let producer = Producer::from_map([
                        ("bootstrap.servers", unreachable_addr().as_str()),
                        ("max.request.size", "1000"),
                    ])
                    .unwrap();
                    let err = producer
                        .send(Record::new("t", vec![0u8; 2000]))
                        .await
                        .unwrap_err();
                    match err {
                        SendError::Rejected($krate::CoreSendError::RecordTooLarge {
                            limit_name,
                            limit,
                            ..
                        }) => assert_eq!((limit_name, limit), ("max.request.size", 1000)),
                        other => panic!("expected RecordTooLarge, got {other:?}"),
                    }
                    // The producer still takes records that fit.
                    producer.send(Record::new("t", "small")).await.unwrap();
                })
            }

            /// A producer whose broker never answers, with ten records pending.
            pub(crate) async fn ten_records_pending() -> (Producer, Vec<$krate::Delivery>) {
                let producer =
                    Producer::from_map([("bootstrap.servers", unreachable_addr().as_str())])
                        .unwrap();
                let mut handles = Vec::new();
                for i in 0..10 {
                    handles.push(
                        producer
                            .send(Record::new("t", format!("{i}")))
                            .await
                            .unwrap(),
                    );
                }
                (producer, handles)
            }

            #[test]
            fn dropping_the_producer_fails_pending_records_without_blocking() {
                $block_on(async {
                    let (producer, handles) = ten_records_pending().await;
                    let start = Instant::now();
                    drop(producer);
                    assert!(
                        start.elapsed() < Duration::from_millis(100),
                        "drop never blocks"
                    );
                    for h in handles {
                        let err = within(Duration::from_secs(5), "an outcome", h)
                            .await
                            .unwrap_err();
                        assert_eq!(err.error, DeliveryError::Closed);
                    }
                })
            }

            #[test]
            fn cancelling_a_blocked_send_queues_nothing() {
                $block_on(async {
                    let broker = Broker::shared($kind, module_path!());
                    // The driver runs on the runtime's other threads: between the second send
                    // finding memory full (which makes the first batch ready at once) and its
                    // first poll returning, a descheduled test thread can let the first batch be
                    // sent and acknowledged, and the send then succeed. That round is not a
                    // blocked send; the scenario runs again on a new topic, up to five times.
                    for attempt in 0..5 {
                        let topic = format!("cancel-{attempt}");
                        admin(&broker)
                            .create_topic(NewTopic::new(topic.as_str(), 1))
                            .await
                            .unwrap();
                        let producer = Producer::from_map([
                            ("bootstrap.servers", broker.addr.as_str()),
                            ("buffer.memory", "20000"),
                            ("batch.size", "16384"),
                            ("linger.ms", "200"),
                        ])
                        .unwrap();
                        // Fill memory, then start a send that must wait, and abandon it.
                        let first = producer
                            .send(Record::new(topic.as_str(), vec![b'a'; 15_000]))
                            .await
                            .unwrap();
                        let went_through = {
                            let blocked =
                                producer.send(Record::new(topic.as_str(), vec![b'x'; 15_000]));
                            let mut blocked = std::pin::pin!(blocked);
                            let poll = futures_util::poll!(blocked.as_mut());
                            poll.is_ready()
                        }; // dropped: cancelled
                        if went_through {
                            producer.close(Duration::from_secs(5)).await;
                            continue;
                        }
                        let last = producer.send(Record::new(topic.as_str(), "z")).await.unwrap();
                        first.await.unwrap();
                        last.await.unwrap();
                        producer.close(Duration::from_secs(5)).await;
                        let got = read(&broker, &topic, 1, 2).await;
                        assert_eq!(got[0].value.as_ref().unwrap().len(), 15_000);
                        assert_eq!(got[1].value.as_deref(), Some(&b"z"[..]));
                        let mut c = consumer(&broker);
                        c.assign([(topic.as_str(), 0)], StartFrom::Offset(2)).unwrap();
                        let end = within(Duration::from_secs(10), "end", c.next_event())
                            .await
                            .unwrap();
                        assert!(
                            matches!(end, ConsumerEvent::EndOfPartition { offset: 2, .. }),
                            "the cancelled record was never written: {end:?}"
                        );
                        return;
                    }
                    panic!("the second send never waited for memory in five tries");
                })
            }

            #[test]
            fn admin_creates_describes_and_deletes_topics() {
                $block_on(async {
                    let broker = Broker::shared($kind, module_path!());
                    let admin = admin(&broker);
                    admin.create_topic(NewTopic::new("adm", 4)).await.unwrap();
                    let again = admin
                        .create_topic(NewTopic::new("adm", 4))
                        .await
                        .unwrap_err();
                    assert!(
                        matches!(
                            again,
                            AdminError::Broker {
                                code: ErrorCode::TopicAlreadyExists,
                                ..
                            }
                        ),
                        "{again}"
                    );
                    // Kafka answers CreateTopics once its controller committed the topic; the
                    // broker answering Metadata applies that a moment later.
                    described(&admin, "adm", true).await;
                    let md = admin.metadata(Some(&["adm"])).await.unwrap();
                    assert_eq!(md.brokers.len(), 1);
                    assert_eq!(md.brokers[0].addr.to_string(), broker.addr);
                    let t = &md.topics[0];
                    assert_eq!((t.name.as_str(), t.error), ("adm", None));
                    assert_eq!(t.partitions.len(), 4);
                    assert!(t
                        .partitions
                        .iter()
                        .all(|p| p.leader == Some(md.brokers[0].id)));
                    let all = admin.metadata(None).await.unwrap();
                    assert!(all.topics.iter().any(|t| t.name == "adm"));
                    admin.delete_topic("adm").await.unwrap();
                    described(&admin, "adm", false).await;
                })
            }

            /// Waits until the cluster's description shows `topic` (or no longer does), for
            /// 10 s at most: Kafka's brokers apply their controller's changes a moment after it
            /// answered.
            async fn described(admin: &Admin, topic: &str, exists: bool) {
                let what = format!(
                    "metadata showing {topic} {}",
                    if exists { "created" } else { "deleted" }
                );
                within(Duration::from_secs(10), &what, async {
                    loop {
                        let md = admin.metadata(None).await.unwrap();
                        let found = md
                            .topics
                            .iter()
                            .any(|t| t.name == topic && t.error.is_none());
                        if found == exists {
                            return;
                        }
                        async_io::Timer::after(Duration::from_millis(50)).await;
                    }
                })
                .await
            }

            #[test]
            fn the_consumer_seeks_pauses_and_reports_positions() {
                $block_on(async {
                    let broker = Broker::shared($kind, module_path!());
                    admin(&broker)
                        .create_topic(NewTopic::new("ctl", 1))
                        .await
                        .unwrap();
                    let producer =
                        Producer::from_map([("bootstrap.servers", broker.addr.as_str())]).unwrap();
                    for i in 0..100 {
                        drop(
                            producer
                                .send(Record::new("ctl", format!("{i}")))
                                .await
                                .unwrap(),
                        );
                    }
                    producer.close(Duration::from_secs(5)).await;
                    let mut c = consumer(&broker);
                    c.assign([("ctl", 0)], StartFrom::Offset(50)).unwrap();
                    let r = within(Duration::from_secs(10), "recv", c.recv())
                        .await
                        .unwrap();
                    assert_eq!((r.offset, r.value.as_deref()), (50, Some(&b"50"[..])));
                    assert_eq!(c.position("ctl", 0).await, Some(51));
                    c.seek("ctl", 0, StartFrom::Offset(10));
                    let r = within(Duration::from_secs(10), "recv", c.recv())
                        .await
                        .unwrap();
                    assert_eq!(r.offset, 10);
                    c.pause("ctl", 0);
                    c.resume("ctl", 0);
                    let rest: Vec<i64> = within(
                        Duration::from_secs(10),
                        "stream",
                        c.stream()
                            .take(39)
                            .map(|r| r.unwrap().offset)
                            .collect::<Vec<_>>(),
                    )
                    .await;
                    assert_eq!(rest, (11..50).collect::<Vec<_>>());
                    // The consumer is a Stream itself: between items it stays free for seek,
                    // pause and position.
                    let mut seen = Vec::new();
                    let mut sought = false;
                    while seen.len() < 50 {
                        let r = within(Duration::from_secs(10), "next", c.next())
                            .await
                            .expect("not closed")
                            .unwrap();
                        seen.push(r.offset);
                        if r.offset == 60 && !std::mem::replace(&mut sought, true) {
                            // Back to 55, once, read again from there.
                            c.seek("ctl", 0, StartFrom::Offset(55));
                            c.pause("ctl", 0);
                            c.resume("ctl", 0);
                        }
                    }
                    let mut expected: Vec<i64> = (50..=60).collect();
                    expected.extend(55..94);
                    assert_eq!(seen, expected);
                    c.seek("ctl", 0, StartFrom::Offset(94));
                    c.pause("ctl", 0);
                    c.resume("ctl", 0);
                    let rest: Vec<i64> = within(
                        Duration::from_secs(10),
                        "stream",
                        (&mut c)
                            .take(6)
                            .map(|r| r.unwrap().offset)
                            .collect::<Vec<_>>(),
                    )
                    .await;
                    assert_eq!(rest, (94..100).collect::<Vec<_>>());
                    assert_eq!(c.position("ctl", 0).await, Some(100));
                    let end = within(Duration::from_secs(10), "end", c.next_event())
                        .await
                        .unwrap();
                    assert!(matches!(
                        end,
                        ConsumerEvent::EndOfPartition { offset: 100, .. }
                    ));
                })
            }

            fn group_consumer(broker: &Broker, group: &str) -> Consumer {
                Consumer::from_map([
                    ("bootstrap.servers", broker.addr.as_str()),
                    ("group.id", group),
                    ("session.timeout.ms", "2000"),
                    ("heartbeat.interval.ms", "500"),
                    ("auto.offset.reset", "earliest"),
                    ("auto.commit.interval.ms", "200"),
                ])
                .unwrap()
            }

            async fn produce_values(broker: &Broker, topic: &str, range: std::ops::Range<u32>) {
                let p = Producer::from_map([("bootstrap.servers", broker.addr.as_str())]).unwrap();
                let mut hs = Vec::new();
                for i in range {
                    hs.push(p.send(Record::new(topic, i.to_string())).await.unwrap());
                }
                for h in hs {
                    h.await.unwrap();
                }
                p.close(Duration::from_secs(5)).await;
            }

            fn value(r: &$krate::ConsumerRecord) -> u32 {
                std::str::from_utf8(r.value.as_deref().unwrap())
                    .unwrap()
                    .parse()
                    .unwrap()
            }

            #[test]
            fn a_group_member_resumes_from_its_committed_offsets() {
                $block_on(async {
                    let broker = Broker::shared($kind, module_path!());
                    admin(&broker)
                        .create_topic(NewTopic::new("grp", 3))
                        .await
                        .unwrap();
                    produce_values(&broker, "grp", 0..300).await;
                    let mut c = group_consumer(&broker, "g1");
                    c.subscribe(["grp"]).unwrap();
                    let mut seen = std::collections::BTreeSet::new();
                    within(Duration::from_secs(30), "first member", async {
                        while seen.len() < 300 {
                            seen.insert(value(&c.recv().await.unwrap()));
                        }
                    })
                    .await;
                    // An async-style commit: sent at once, its outcome awaited later.
                    let outcome = c.commit_async();
                    assert!(
                        c.position("grp", 0).await.is_some(),
                        "the consumer is free meanwhile"
                    );
                    outcome.await.unwrap();
                    // Keyless records stick to a partition per batch: some may have none.
                    let committed = [
                        c.committed("grp", 0).await.unwrap().unwrap_or(0),
                        c.committed("grp", 1).await.unwrap().unwrap_or(0),
                        c.committed("grp", 2).await.unwrap().unwrap_or(0),
                    ];
                    assert_eq!(committed.iter().sum::<i64>(), 300, "{committed:?}");
                    c.close(Duration::from_secs(10)).await;

                    produce_values(&broker, "grp", 300..400).await;
                    let mut c = group_consumer(&broker, "g1");
                    c.subscribe(["grp"]).unwrap();
                    let mut again = Vec::new();
                    within(Duration::from_secs(30), "the restarted member", async {
                        while again.len() < 100 {
                            let batch = c.recv_batch().await.unwrap();
                            assert!(batch.len() <= 500, "max.poll.records");
                            again.extend(batch.iter().map(value));
                        }
                    })
                    .await;
                    again.sort();
                    assert_eq!(
                        again,
                        (300..400).collect::<Vec<_>>(),
                        "from the committed offsets on"
                    );
                    c.close(Duration::from_secs(10)).await;
                })
            }

            /// `max.poll.interval.ms`: an application that stops calling `recv` is taken out
            /// of the group; its next `recv` rejoins and reading goes on (the consumer is not
            /// closed by it).
            #[test]
            fn a_stalled_application_rejoins_on_its_next_recv() {
                $block_on(async {
                    let broker = Broker::shared($kind, module_path!());
                    admin(&broker)
                        .create_topic(NewTopic::new("stall", 1))
                        .await
                        .unwrap();
                    produce_values(&broker, "stall", 0..50).await;
                    let mut c = Consumer::from_map([
                        ("bootstrap.servers", broker.addr.as_str()),
                        ("group.id", "stalling"),
                        ("session.timeout.ms", "2000"),
                        ("heartbeat.interval.ms", "500"),
                        ("max.poll.interval.ms", "2500"),
                        ("auto.offset.reset", "earliest"),
                    ])
                    .unwrap();
                    c.subscribe(["stall"]).unwrap();
                    let mut events = Vec::new();
                    within(Duration::from_secs(30), "the first 50", async {
                        let mut n = 0;
                        while n < 50 {
                            match c.next_event().await.unwrap() {
                                ConsumerEvent::Record(_) => n += 1,
                                e => events.push(e),
                            }
                        }
                    })
                    .await;
                    c.commit().await.unwrap();
                    // No recv for longer than max.poll.interval.ms.
                    async_io::Timer::after(Duration::from_secs(4)).await;
                    produce_values(&broker, "stall", 50..80).await;
                    let mut again = std::collections::BTreeSet::new();
                    within(Duration::from_secs(30), "after the stall", async {
                        while again.len() < 30 {
                            match c.next_event().await.unwrap() {
                                ConsumerEvent::Record(r) => {
                                    again.insert(value(&r));
                                }
                                e => events.push(e),
                            }
                        }
                    })
                    .await;
                    assert_eq!(again, (50..80).collect(), "from the committed offset on");
                    let lost = events
                        .iter()
                        .position(|e| matches!(e, ConsumerEvent::Lost(_)))
                        .expect("the stall lost the partition");
                    assert!(
                        events[lost..]
                            .iter()
                            .any(|e| matches!(e, ConsumerEvent::Assigned(_))),
                        "then it was assigned again: {events:?}"
                    );
                    c.close(Duration::from_secs(10)).await;
                })
            }

            /// Static membership (`group.instance.id`) against a real coordinator: the same
            /// instance, closed and back within its session, reads on from its committed
            /// offsets.
            #[test]
            fn a_static_member_comes_back_without_leaving() {
                $block_on(async {
                    let broker = Broker::shared($kind, module_path!());
                    admin(&broker)
                        .create_topic(NewTopic::new("static", 2))
                        .await
                        .unwrap();
                    produce_values(&broker, "static", 0..100).await;
                    let member = || {
                        Consumer::from_map([
                            ("bootstrap.servers", broker.addr.as_str()),
                            ("group.id", "statics"),
                            ("group.instance.id", "instance-1"),
                            ("session.timeout.ms", "6000"),
                            ("heartbeat.interval.ms", "500"),
                            ("auto.offset.reset", "earliest"),
                        ])
                        .unwrap()
                    };
                    let mut c = member();
                    c.subscribe(["static"]).unwrap();
                    let mut seen = std::collections::BTreeSet::new();
                    within(Duration::from_secs(30), "the first run", async {
                        while seen.len() < 100 {
                            seen.insert(value(&c.recv().await.unwrap()));
                        }
                    })
                    .await;
                    c.commit().await.unwrap();
                    // No LeaveGroup (checked in virtual time, where requests are counted).
                    c.close(Duration::from_secs(10)).await;

                    produce_values(&broker, "static", 100..150).await;
                    let mut c = member();
                    c.subscribe(["static"]).unwrap();
                    let mut again = Vec::new();
                    within(Duration::from_secs(30), "the same instance again", async {
                        while again.len() < 50 {
                            again.push(value(&c.recv().await.unwrap()));
                        }
                    })
                    .await;
                    again.sort();
                    assert_eq!(again, (100..150).collect::<Vec<_>>());
                    c.close(Duration::from_secs(10)).await;
                })
            }

            /// The next event of either member, with which one it was.
            async fn either(
                a: &mut Consumer,
                b: &mut Consumer,
            ) -> (usize, Result<ConsumerEvent, $krate::ConsumeError>) {
                let fa = std::pin::pin!(a.next_event());
                let fb = std::pin::pin!(b.next_event());
                match futures_util::future::select(fa, fb).await {
                    futures_util::future::Either::Left((e, _)) => (0, e),
                    futures_util::future::Either::Right((e, _)) => (1, e),
                }
            }

            #[test]
            fn two_members_share_the_partitions_and_read_everything() {
                $block_on(async {
                    let broker = Broker::shared($kind, module_path!());
                    admin(&broker)
                        .create_topic(NewTopic::new("share", 6))
                        .await
                        .unwrap();
                    produce_values(&broker, "share", 0..600).await;
                    let mut a = group_consumer(&broker, "g2");
                    a.subscribe(["share"]).unwrap();
                    let mut owned = [0usize; 2];
                    let mut first = 0;
                    within(Duration::from_secs(30), "the first member", async {
                        while first < 600 {
                            match a.next_event().await.unwrap() {
                                ConsumerEvent::Record(_) => first += 1,
                                ConsumerEvent::Assigned(tps) => owned[0] += tps.len(),
                                _ => {}
                            }
                        }
                    })
                    .await;
                    assert_eq!(owned[0], 6, "alone, it owns everything");
                    // A second member joins: the group rebalances until each owns some.
                    let mut b = group_consumer(&broker, "g2");
                    b.subscribe(["share"]).unwrap();
                    let mut seen = std::collections::BTreeSet::new();
                    let mut rebalanced = false;
                    within(
                        Duration::from_secs(60),
                        "the rebalance, then both reading",
                        async {
                            loop {
                                let (i, ev) = either(&mut a, &mut b).await;
                                match ev.unwrap() {
                                    ConsumerEvent::Record(r) => {
                                        assert!(
                                            value(&r) >= 600,
                                            "nothing read twice: {}",
                                            value(&r)
                                        );
                                        seen.insert(value(&r));
                                    }
                                    ConsumerEvent::Assigned(tps) => owned[i] += tps.len(),
                                    ConsumerEvent::Revoking(tps) | ConsumerEvent::Lost(tps) => {
                                        owned[i] -= tps.len();
                                        if i == 0 {
                                            a.ack_revocation()
                                        } else {
                                            b.ack_revocation()
                                        }
                                    }
                                    _ => {}
                                }
                                if !rebalanced
                                    && owned[0] > 0
                                    && owned[1] > 0
                                    && owned[0] + owned[1] == 6
                                {
                                    rebalanced = true;
                                    produce_values(&broker, "share", 600..1200).await;
                                }
                                if seen.len() == 600 {
                                    break;
                                }
                            }
                        },
                    )
                    .await;
                    assert!(
                        owned[0] > 0 && owned[1] > 0,
                        "both members own partitions: {owned:?}"
                    );
                    a.close(Duration::from_secs(10)).await;
                    b.close(Duration::from_secs(10)).await;
                })
            }

            #[test]
            fn a_broker_crash_mid_stream_resolves_every_record() {
                $block_on(async {
                    let mut broker = Broker::exclusive($kind);
                    broker.create_topic("crash", 1);
                    let producer = Producer::from_map([
                        ("bootstrap.servers", broker.addr.as_str()),
                        ("delivery.timeout.ms", "6000"),
                        ("request.timeout.ms", "2000"),
                        ("linger.ms", "5"),
                    ])
                    .unwrap();
                    let send = |i: usize| producer.send(Record::new("crash", format!("{i}")));
                    let mut before = Vec::new();
                    for i in 0..2_000 {
                        before.push(send(i).await.unwrap());
                    }
                    for h in before {
                        h.await.unwrap();
                    }
                    // Crash with records in the accumulator and in flight.
                    let mut handles = Vec::new();
                    for i in 2_000..3_000 {
                        handles.push(send(i).await.unwrap());
                        if i == 2_500 {
                            broker.kill();
                        }
                    }
                    broker.restart();
                    broker.create_topic("crash", 1);
                    let mut after = Vec::new();
                    for i in 3_000..4_000 {
                        after.push(send(i).await.unwrap());
                    }
                    let (mut delivered, mut failed) = (0, 0);
                    let mut why = std::collections::BTreeMap::new();
                    within(Duration::from_secs(30), "every outcome", async {
                        for h in handles.into_iter().chain(after) {
                            match h.await {
                                Ok(_) => delivered += 1,
                                Err(f) => {
                                    assert!(
                                        matches!(
                                            f.error,
                                            DeliveryError::DeliveryTimeout { .. }
                                                | DeliveryError::Broker(_)
                                                | DeliveryError::Request(_)
                                                // In flight at the crash, and its
                                                // partition started over: never resent.
                                                | DeliveryError::SequenceUnresolved { .. }
                                        ),
                                        "a typed failure: {f}"
                                    );
                                    failed += 1;
                                    *why.entry(f.to_string()).or_insert(0) += 1;
                                }
                            }
                        }
                    })
                    .await;
                    assert_eq!(delivered + failed, 2_000, "every record resolved once");
                    assert!(
                        delivered > 0,
                        "the producer recovered after the restart: {why:?}"
                    );
                    producer.close(Duration::from_secs(5)).await;
                })
            }
        }
    };
}

suite!(
    on_tokio_tansu,
    kafka_tokio,
    tests::tokio_block_on,
    Kind::Tansu
);
suite!(on_smol_tansu, kafka_asyncstd, smol::block_on, Kind::Tansu);
suite!(
    on_async_std_tansu,
    kafka_asyncstd,
    async_std::task::block_on,
    Kind::Tansu
);
suite!(
    on_tokio_kafka,
    kafka_tokio,
    tests::tokio_block_on,
    Kind::Kafka
);
suite!(on_smol_kafka, kafka_asyncstd, smol::block_on, Kind::Kafka);
suite!(
    on_async_std_kafka,
    kafka_asyncstd,
    async_std::task::block_on,
    Kind::Kafka
);

/// A producer whose runtime shuts down under it (its driver task dropped, not finished): the
/// records still pending fail as closed rather than wait forever, and later sends fail too.
#[test]
fn a_runtime_shut_down_under_the_producer_fails_its_pending_records() {
    use kafka_tokio::{DeliveryError, Record, SendError};
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let (producer, handles) = rt.block_on(on_tokio_tansu::ten_records_pending());
    drop(rt);
    // Polled on no runtime at all: only the driver's going away can resolve them.
    for h in handles {
        let err = futures_executor_block_on(h).unwrap_err();
        assert_eq!(err.error, DeliveryError::Closed);
    }
    let again = futures_executor_block_on(producer.send(Record::new("t", "late")));
    assert!(matches!(again, Err(SendError::Closed)), "{again:?}");
}

/// Polls a future to completion on this thread, with a waker that unparks it.
fn futures_executor_block_on<F: Future>(f: F) -> F::Output {
    use std::task::{Context, Poll, Wake, Waker};
    struct Unpark(std::thread::Thread);
    impl Wake for Unpark {
        fn wake(self: std::sync::Arc<Self>) {
            self.0.unpark();
        }
    }
    let waker = Waker::from(std::sync::Arc::new(Unpark(std::thread::current())));
    let mut cx = Context::from_waker(&waker);
    let mut f = std::pin::pin!(f);
    let start = std::time::Instant::now();
    loop {
        if let Poll::Ready(out) = f.as_mut().poll(&mut cx) {
            return out;
        }
        assert!(
            start.elapsed() < Duration::from_secs(5),
            "did not finish within 5 s"
        );
        std::thread::park_timeout(Duration::from_millis(100));
    }
}

/// A session timeout below the broker's `group.min.session.timeout.ms` (1000 on the test
/// clusters) is refused by Apache Kafka with INVALID_SESSION_TIMEOUT: the member reports it as a
/// typed error that names the broker setting, instead of retrying the join forever.
#[test]
fn a_session_timeout_the_broker_refuses_is_a_typed_error() {
    use kafka_tokio::{ConsumeError, Consumer, ErrorCode};
    use tests::brokers::{Kind, TestBroker as Broker};
    tests::tokio_block_on(async {
        let broker = Broker::shared(Kind::Kafka, module_path!());
        broker.create_topic("short-session", 1);
        let mut c = Consumer::from_map([
            ("bootstrap.servers", broker.addr.as_str()),
            ("group.id", "short-session"),
            ("session.timeout.ms", "500"),
            ("heartbeat.interval.ms", "100"),
        ])
        .unwrap();
        c.subscribe(["short-session"]).unwrap();
        let got = within(Duration::from_secs(20), "the join's answer", c.recv()).await;
        match got {
            Err(ConsumeError::Group(code)) => {
                assert_eq!(code, ErrorCode::InvalidSessionTimeout);
                let text = ConsumeError::Group(code).to_string();
                assert!(text.contains("group.min.session.timeout.ms"), "{text}");
            }
            other => panic!("expected INVALID_SESSION_TIMEOUT, got {other:?}"),
        }
        c.close(Duration::from_secs(5)).await;
    })
}

/// Compiled, not run: the futures of `&Consumer` calls (which hold the consumer across an
/// await) are `Send`, so a `tokio::spawn`ed task may call them; a rebalance listener that made
/// the consumer not `Sync` once broke this.
#[allow(dead_code)]
fn consumer_futures_are_send(c: &kafka_tokio::Consumer) {
    fn send<T: Send>(_: T) {}
    send(c.group_metadata());
    send(c.committed("t", 0));
    send(c.position("t", 0));
}
