//! The Java client (`kafka-clients` of the Kafka version under test, through
//! `scripts/java/KafkaPeer.java`) as a peer, on Apache Kafka: what ours writes Java reads
//! exactly, and the reverse, under every codec, with headers, null keys and values and
//! timestamps; keyed records land where Java's built-in partitioner puts them; and Java and
//! our members share a consumer group.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use kafka_tokio::{Consumer, ConsumerEvent, Producer, Record, StartFrom};
use tests::kafka::{owned_by, peer, Cluster, JavaMember};
use tests::tokio_block_on as block_on;

fn cluster() -> &'static Cluster {
    static C: OnceLock<Cluster> = OnceLock::new();
    C.get_or_init(|| Cluster::start(1))
}

/// A record as the peer's lines carry it.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Rec {
    partition: i32,
    timestamp: i64,
    key: Option<Vec<u8>>,
    value: Option<Vec<u8>>,
    headers: Vec<(String, Option<Vec<u8>>)>,
}

fn hex(b: &Option<Vec<u8>>) -> String {
    match b {
        None => "-".into(),
        Some(b) => b.iter().map(|x| format!("{x:02x}")).collect(),
    }
}

fn unhex(s: &str) -> Option<Vec<u8>> {
    (s != "-").then(|| {
        (0..s.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
            .collect()
    })
}

/// The i-th record of a run: every partition, null keys and values now and then, headers
/// with and without values, explicit timestamps, values of several sizes.
fn sample(i: usize) -> Rec {
    let headers = match i % 3 {
        0 => vec![],
        1 => vec![("h1".into(), Some(format!("x{i}").into_bytes()))],
        _ => vec![
            ("h1".into(), Some(format!("x{i}").into_bytes())),
            ("h2".into(), None),
        ],
    };
    Rec {
        partition: (i % 3) as i32,
        timestamp: 1_600_000_000_000 + i as i64,
        key: (!i.is_multiple_of(10)).then(|| format!("k{i}").into_bytes()),
        value: (!i.is_multiple_of(13))
            .then(|| format!("v{i}-{}", "x".repeat(i % 200)).into_bytes()),
        headers,
    }
}

/// `partition offset timestamp key value headers`, as the peer prints a consumed record.
fn parse_consumed(line: &str) -> (i64, Rec) {
    let f: Vec<&str> = line.split('\t').collect();
    let headers = if f[5] == "-" {
        vec![]
    } else {
        f[5].split(',')
            .map(|h| {
                let (k, v) = h.split_once(':').unwrap();
                (k.to_owned(), unhex(v))
            })
            .collect()
    };
    let rec = Rec {
        partition: f[0].parse().unwrap(),
        timestamp: f[2].parse().unwrap(),
        key: unhex(f[3]),
        value: unhex(f[4]),
        headers,
    };
    (f[1].parse().unwrap(), rec)
}

const CODECS: [&str; 5] = ["none", "gzip", "snappy", "lz4", "zstd"];
const N: usize = 400;

#[test]
fn java_reads_exactly_what_we_write_under_every_codec() {
    let c = cluster();
    for codec in CODECS {
        let topic = format!("to-java-{codec}");
        c.create_topic(&topic, 3, 1, &[]);
        let placed: Vec<(i32, i64)> = block_on(async {
            let p = Producer::from_map([
                ("bootstrap.servers", c.bootstrap.as_str()),
                ("compression.type", codec),
            ])
            .unwrap();
            let mut ds = Vec::new();
            for i in 0..N {
                let s = sample(i);
                let mut r = Record::new(topic.as_str(), s.value.clone().unwrap_or_default())
                    .partition(s.partition)
                    .timestamp(s.timestamp);
                if s.value.is_none() {
                    r = r.no_value();
                }
                if let Some(k) = s.key {
                    r = r.key(k);
                }
                for (k, v) in s.headers {
                    r = match v {
                        Some(v) => r.header(k, v),
                        None => r.header_null(k),
                    };
                }
                ds.push(p.send(r).await.unwrap());
            }
            let mut out = Vec::new();
            for d in ds {
                let d = d.await.unwrap();
                out.push((d.partition, d.offset.unwrap()));
            }
            p.close(Duration::from_secs(5)).await;
            out
        });
        let (ok, stdout, stderr) = peer(
            &["consume", &c.bootstrap, &topic, &N.to_string(), "60"],
            None,
        );
        assert!(ok, "{codec}: the Java consumer failed: {stderr}");
        let got: BTreeMap<(i32, i64), Rec> = stdout
            .lines()
            .map(parse_consumed)
            .map(|(o, r)| ((r.partition, o), r))
            .collect();
        assert_eq!(got.len(), N, "{codec}");
        for (i, at) in placed.iter().enumerate() {
            assert_eq!(
                got.get(at),
                Some(&sample(i)),
                "{codec}: record {i} at {at:?}"
            );
        }
    }
}

#[test]
fn we_read_exactly_what_java_writes_under_every_codec() {
    let c = cluster();
    for codec in CODECS {
        let topic = format!("from-java-{codec}");
        c.create_topic(&topic, 3, 1, &[]);
        let lines: String = (0..N)
            .map(|i| {
                let s = sample(i);
                let headers = if s.headers.is_empty() {
                    "-".to_owned()
                } else {
                    s.headers
                        .iter()
                        .map(|(k, v)| format!("{k}:{}", hex(v)))
                        .collect::<Vec<_>>()
                        .join(",")
                };
                format!(
                    "{}\t{}\t{}\t{}\t{headers}\n",
                    s.partition,
                    s.timestamp,
                    hex(&s.key),
                    hex(&s.value)
                )
            })
            .collect();
        let setting = format!("compression.type={codec}");
        let (ok, stdout, stderr) = peer(&["produce", &c.bootstrap, &topic, &setting], Some(&lines));
        assert!(ok, "{codec}: the Java producer failed: {stderr}");
        let placed: Vec<(i32, i64)> = stdout
            .lines()
            .map(|l| {
                let (p, o) = l.split_once('\t').unwrap();
                (p.parse().unwrap(), o.parse().unwrap())
            })
            .collect();
        assert_eq!(placed.len(), N);
        let got: BTreeMap<(i32, i64), Rec> = block_on(async {
            let mut consumer =
                Consumer::from_map([("bootstrap.servers", c.bootstrap.as_str())]).unwrap();
            consumer
                .assign((0..3).map(|p| (topic.as_str(), p)), StartFrom::Earliest)
                .unwrap();
            let mut out = BTreeMap::new();
            while out.len() < N {
                let r = tokio::time::timeout(Duration::from_secs(30), consumer.recv())
                    .await
                    .expect("records within 30 s")
                    .unwrap();
                let rec = Rec {
                    partition: r.partition,
                    timestamp: r.timestamp,
                    key: r.key.map(|k| k.to_vec()),
                    value: r.value.map(|v| v.to_vec()),
                    headers: r
                        .headers
                        .map(|h| (h.key_str().to_owned(), h.value.map(|v| v.to_vec())))
                        .collect(),
                };
                out.insert((r.partition, r.offset), rec);
            }
            out
        });
        for (i, at) in placed.iter().enumerate() {
            assert_eq!(
                got.get(at),
                Some(&sample(i)),
                "{codec}: record {i} at {at:?}"
            );
        }
    }
}

/// 10,000 keys: ours (the murmur2 partitioner, and where our producer actually writes) agrees
/// with Java's `BuiltInPartitioner.partitionForKey`.
#[test]
fn keyed_records_land_where_javas_partitioner_puts_them() {
    const PARTITIONS: u32 = 7;
    let keys: Vec<Vec<u8>> = (0..10_000u32)
        .map(|i| {
            let len = (i % 37) as usize;
            (0..len)
                .map(|j| (i.wrapping_mul(31).wrapping_add(j as u32 * 7)) as u8)
                .collect()
        })
        .collect();
    let input: String = keys
        .iter()
        .map(|k| format!("{}\n", hex(&Some(k.clone()))))
        .collect();
    let (ok, stdout, stderr) = peer(&["partition", &PARTITIONS.to_string()], Some(&input));
    assert!(ok, "{stderr}");
    let java: Vec<i32> = stdout.lines().map(|l| l.parse().unwrap()).collect();
    assert_eq!(java.len(), keys.len());
    for (k, want) in keys.iter().zip(&java) {
        let ours = kafka_core::partitioner::partition_for_key(k, PARTITIONS) as i32;
        assert_eq!(ours, *want, "key {k:?}");
    }
    // And where the producer really puts them.
    let c = cluster();
    c.create_topic("keyed", PARTITIONS, 1, &[]);
    let placed = block_on(async {
        let p = Producer::from_map([("bootstrap.servers", c.bootstrap.as_str())]).unwrap();
        let mut ds = Vec::new();
        for k in &keys {
            ds.push(
                p.send(Record::new("keyed", "v").key(k.clone()))
                    .await
                    .unwrap(),
            );
        }
        let mut out = Vec::new();
        for d in ds {
            out.push(d.await.unwrap().partition);
        }
        out
    });
    assert_eq!(placed, java, "our producer writes where Java would");
}

/// A classic Java member with this assignor (ours' names).
fn java_member(bootstrap: &str, group: &str, topic: &str, assignor: &str) -> JavaMember {
    let class = match assignor {
        "range" => "org.apache.kafka.clients.consumer.RangeAssignor",
        _ => "org.apache.kafka.clients.consumer.CooperativeStickyAssignor",
    };
    let strategy = format!("partition.assignment.strategy={class}");
    JavaMember::start(
        bootstrap,
        group,
        topic,
        &[
            &strategy,
            "session.timeout.ms=6000",
            "heartbeat.interval.ms=500",
        ],
    )
}

/// Java members and ours in one classic group, range then cooperative-sticky: through a
/// member joining and one leaving, every record is consumed exactly once, and the final
/// assignments cover every partition once.
#[test]
fn java_and_our_members_share_a_group() {
    let c = cluster();
    for assignor in ["range", "cooperative-sticky"] {
        let topic = format!("mixed-{assignor}");
        let group = format!("g-{assignor}");
        c.create_topic(&topic, 6, 1, &[]);
        let produce = |from: usize, to: usize| {
            block_on(async {
                let p = Producer::from_map([("bootstrap.servers", c.bootstrap.as_str())]).unwrap();
                let mut ds = Vec::new();
                for i in from..to {
                    ds.push(
                        p.send(Record::new(topic.as_str(), format!("m{i}")))
                            .await
                            .unwrap(),
                    );
                }
                for d in ds {
                    d.await.unwrap();
                }
            })
        };
        produce(0, 3000);
        let java1 = java_member(&c.bootstrap, &group, &topic, assignor);
        // Ours, on a thread of its own: commits what it read before each revocation.
        let ours_seen = Arc::new(Mutex::new(Vec::<String>::new()));
        let ours_now = Arc::new(Mutex::new(Vec::new()));
        let stop_ours = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let ours = {
            let (bootstrap, topic, group) = (c.bootstrap.clone(), topic.clone(), group.clone());
            let (seen, stop, now) = (ours_seen.clone(), stop_ours.clone(), ours_now.clone());
            std::thread::spawn(move || {
                block_on(async move {
                    let mut consumer = Consumer::from_map([
                        ("bootstrap.servers", bootstrap.as_str()),
                        ("group.id", group.as_str()),
                        ("partition.assignment.strategy", assignor),
                        ("auto.offset.reset", "earliest"),
                        ("enable.auto.commit", "false"),
                        ("session.timeout.ms", "6000"),
                        ("heartbeat.interval.ms", "500"),
                    ])
                    .unwrap();
                    consumer.subscribe([topic.as_str()]).unwrap();
                    let mut last_assignment = Vec::new();
                    while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                        let ev =
                            tokio::time::timeout(Duration::from_millis(200), consumer.next_event())
                                .await;
                        match ev {
                            Ok(Ok(ConsumerEvent::Record(r))) => seen
                                .lock()
                                .unwrap()
                                .push(String::from_utf8(r.value.unwrap().to_vec()).unwrap()),
                            Ok(Ok(ConsumerEvent::Revoking(_))) => {
                                consumer.commit().await.unwrap();
                                consumer.ack_revocation();
                            }
                            Ok(Ok(ConsumerEvent::Assigned(_) | ConsumerEvent::Lost(_))) => {}
                            Ok(Ok(_)) => {}
                            Ok(Err(e)) => panic!("our member: {e}"),
                            Err(_) => {
                                let _ = consumer.commit().await;
                            }
                        }
                        last_assignment = consumer.assignment();
                        now.lock().unwrap().clone_from(&last_assignment);
                    }
                    let _ = consumer.commit().await;
                    consumer.close(Duration::from_secs(10)).await;
                    last_assignment
                })
            })
        };
        // A second Java member joins while records flow; then the first leaves.
        let deadline = Instant::now() + Duration::from_secs(60);
        while java1.records() + ours_seen.lock().unwrap().len() < 1000 {
            assert!(Instant::now() < deadline, "{assignor}: consuming started");
            std::thread::sleep(Duration::from_millis(50));
        }
        let java2 = java_member(&c.bootstrap, &group, &topic, assignor);
        produce(3000, 4500);
        std::thread::sleep(Duration::from_secs(3));
        let lines1 = java1.stop();
        produce(4500, 6000);
        // Everything read, by someone.
        let consumed = |l2: &[String]| {
            lines1
                .iter()
                .chain(l2)
                .filter(|l| l.starts_with("record"))
                .count()
                + ours_seen.lock().unwrap().len()
        };
        let deadline = Instant::now() + Duration::from_secs(60);
        while consumed(&java2.lines.lock().unwrap()) < 6000 {
            assert!(
                Instant::now() < deadline,
                "{assignor}: not all consumed in time"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
        // The assignment settles: java2 and ours come to hold every partition between them,
        // once. (A fixed 2 s wait failed once on a loaded machine: an eager rebalance was
        // still under way, both members holding nothing.)
        let deadline = Instant::now() + Duration::from_secs(30);
        let settled = |java2_owned: &BTreeSet<i32>, ours_owned: &BTreeSet<i32>| {
            java2_owned.is_disjoint(ours_owned) && java2_owned.len() + ours_owned.len() == 6
        };
        let (java2_owned, ours_owned) = loop {
            let java2_owned = owned_by(&java2.lines.lock().unwrap());
            let ours_owned: BTreeSet<i32> =
                ours_now.lock().unwrap().iter().map(|(_, p)| *p).collect();
            if settled(&java2_owned, &ours_owned) || Instant::now() > deadline {
                break (java2_owned, ours_owned);
            }
            std::thread::sleep(Duration::from_millis(100));
        };
        stop_ours.store(true, std::sync::atomic::Ordering::Relaxed);
        ours.join().expect("our member ran");
        let lines2_final = java2.stop();
        let mut all: Vec<String> = lines1
            .iter()
            .chain(&lines2_final)
            .filter(|l| l.starts_with("record"))
            .map(|l| l.split('\t').nth(3).unwrap().to_owned())
            .map(|h| String::from_utf8(unhex(&h).unwrap()).unwrap())
            .collect();
        all.extend(ours_seen.lock().unwrap().iter().cloned());
        let distinct: BTreeSet<&String> = all.iter().collect();
        assert_eq!(distinct.len(), 6000, "{assignor}: every record consumed");
        assert_eq!(all.len(), 6000, "{assignor}: none twice");
        // Before the end, java2 and ours held every partition between them, once.
        assert!(
            settled(&java2_owned, &ours_owned),
            "{assignor}: within 30 s of the last record, java2 held {java2_owned:?} and ours \
             {ours_owned:?}: not every partition once"
        );
    }
}

/// Our transactions, read by Java's read_committed consumer: the records of an aborted
/// transaction (written, then aborted) between two committed ones are skipped; Java's
/// transactions, read by ours: the committed one only.
#[test]
fn transactions_cross_between_java_and_us_with_read_committed() {
    let c = cluster();
    c.create_topic("tx-ours", 2, 1, &[]);
    block_on(tests::kafka::write_three_transactions(
        c.bootstrap.as_str(),
        "tx-ours",
        "interop-ours",
    ));
    let read = |isolation: &str, count: &str| {
        let setting = format!("isolation.level={isolation}");
        let (ok, stdout, stderr) = peer(
            &["consume", &c.bootstrap, "tx-ours", count, "30", &setting],
            None,
        );
        assert!(ok, "Java's {isolation} consumer: {stderr}");
        stdout
            .lines()
            .map(|l| String::from_utf8(parse_consumed(l).1.value.unwrap()).unwrap())
            .collect::<Vec<String>>()
    };
    let committed = read("read_committed", "100");
    assert_eq!(committed.len(), 100);
    assert!(
        committed.iter().all(|v| !v.starts_with("ab")),
        "Java's read_committed consumer saw an aborted record"
    );
    let all = read("read_uncommitted", "150");
    assert_eq!(all.iter().filter(|v| v.starts_with("ab")).count(), 50);

    // Java's transactions, read by ours.
    c.create_topic("tx-java", 2, 1, &[]);
    let lines = |tag: &str| -> String {
        (0..40)
            .map(|i| {
                format!(
                    "-1\t-1\t-\t{}\t-\n",
                    hex(&Some(format!("{tag}-{i}").into_bytes()))
                )
            })
            .collect()
    };
    for (tag, abort) in [("j1", false), ("jab", true), ("j2", false)] {
        let abort_setting = format!("peer.abort={abort}");
        let (ok, _, stderr) = peer(
            &[
                "produce",
                &c.bootstrap,
                "tx-java",
                "transactional.id=interop-java",
                &abort_setting,
            ],
            Some(&lines(tag)),
        );
        assert!(ok, "Java's transactional producer ({tag}): {stderr}");
    }
    let seen: Vec<String> = block_on(async {
        let mut consumer = Consumer::from_map([
            ("bootstrap.servers", c.bootstrap.as_str()),
            ("isolation.level", "read_committed"),
        ])
        .unwrap();
        consumer
            .assign((0..2).map(|p| ("tx-java", p)), StartFrom::Earliest)
            .unwrap();
        let mut ends = BTreeSet::new();
        let mut values = Vec::new();
        while ends.len() < 2 {
            let e = tokio::time::timeout(Duration::from_secs(30), consumer.next_event())
                .await
                .expect("records within 30 s")
                .unwrap();
            match e {
                ConsumerEvent::Record(r) => {
                    values.push(String::from_utf8(r.value.unwrap().to_vec()).unwrap())
                }
                ConsumerEvent::EndOfPartition { partition, .. } => {
                    ends.insert(partition);
                }
                _ => {}
            }
        }
        values
    });
    assert_eq!(seen.len(), 80, "j1 and j2: {seen:?}");
    assert!(seen.iter().all(|v| !v.starts_with("jab")));
}
