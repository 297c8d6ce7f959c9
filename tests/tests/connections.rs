//! The brief's connection economy, side by side with the Java client, on Apache Kafka: the
//! TCP connections a producer (sending to one partition) and a group consumer (under each
//! group protocol, classic and KIP-848's consumer protocol) open, none before it has work, counted
//! with `ss` while they run, against one node and against three nodes all listed in
//! `bootstrap.servers`. The Java client finds connections by node id alone, so its bootstrap
//! connection is never reused and lingers; ours is adopted by host and port as the node's
//! connection, control requests ride the connections already open, and only the group
//! coordinator gets one of its own.
//!
//! The three-node cluster also runs rack-aware (`broker.rack` per node, the
//! `RackAwareReplicaSelector`), and after the counts a consumer with `client.rack` reads from
//! its rack's replica, then from the leader once that replica stops (KIP-392): started once,
//! the cluster serves both, one after the other.
//!
//! This binary holds one test: the process's own connections are the client's.

use std::collections::BTreeSet;
use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use kafka_tokio::{Admin, Consumer, Producer, Record, StartFrom};
use tests::kafka::{peer_classpath, Cluster};

/// Samples `pid`'s established TCP connections to `ports` every 10 ms until `stop`; returns
/// every distinct one seen.
fn sampler(
    pid: u32,
    ports: Vec<String>,
    stop: Arc<AtomicBool>,
) -> std::thread::JoinHandle<BTreeSet<String>> {
    std::thread::spawn(move || {
        let mut seen = BTreeSet::new();
        let needle = format!("pid={pid},");
        loop {
            let done = stop.load(Ordering::Relaxed);
            let out = Command::new("ss")
                .args(["-tnpH", "state", "established"])
                .output()
                .expect("ss (iproute2) is installed");
            for line in String::from_utf8_lossy(&out.stdout).lines() {
                if !line.contains(&needle) {
                    continue;
                }
                let cols: Vec<&str> = line.split_whitespace().collect();
                let (local, peer) = (cols[2], cols[3]);
                if ports.iter().any(|p| peer.ends_with(&format!(":{p}"))) {
                    seen.insert(format!("{local} -> {peer}"));
                }
            }
            if done {
                return seen;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    })
}

/// This process's established connections to the cluster now.
fn established(bootstrap: &str) -> usize {
    let stop = Arc::new(AtomicBool::new(true));
    sampler(std::process::id(), ports(bootstrap), stop)
        .join()
        .unwrap()
        .len()
}

fn ports(bootstrap: &str) -> Vec<String> {
    bootstrap
        .split(',')
        .map(|a| a.rsplit(':').next().unwrap().to_owned())
        .collect()
}

fn block_on<F: std::future::Future>(f: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(f)
}

/// Counts this process's connections while `work` runs.
fn ours(bootstrap: &str, work: impl FnOnce()) -> usize {
    let stop = Arc::new(AtomicBool::new(false));
    let s = sampler(std::process::id(), ports(bootstrap), stop.clone());
    work();
    stop.store(true, Ordering::Relaxed);
    let seen = s.join().unwrap();
    eprintln!("ours: {seen:#?}");
    seen.len()
}

/// Counts the Java peer's connections while it runs `args`, fed `lines` 100 ms apart; a group
/// member runs until it has printed `records` records (a fixed wait would stop a peer that a
/// loaded machine started slowly before it did its work, and count nothing), then one second more,
/// as ours does after its commit.
fn java(bootstrap: &str, args: &[&str], lines: Vec<String>, records: usize) -> usize {
    let mut child = Command::new("java")
        .arg("-cp")
        .arg(peer_classpath())
        .arg("KafkaPeer")
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("run java");
    let stop = Arc::new(AtomicBool::new(false));
    let s = sampler(child.id(), ports(bootstrap), stop.clone());
    let (read_tx, read_rx) = std::sync::mpsc::channel();
    let stdout = child.stdout.take().unwrap();
    std::thread::spawn(move || {
        let mut n = 0;
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            if line.starts_with("record\t") {
                n += 1;
                if n == records {
                    let _ = read_tx.send(());
                }
            }
        }
    });
    let mut stdin = child.stdin.take().unwrap();
    for l in lines {
        writeln!(stdin, "{l}").unwrap();
        std::thread::sleep(Duration::from_millis(100));
    }
    if records > 0 {
        read_rx
            .recv_timeout(Duration::from_secs(120))
            .unwrap_or_else(|_| {
                panic!("the Java peer ({args:?}) read fewer than {records} records in 120 s")
            });
        std::thread::sleep(Duration::from_secs(1));
    }
    drop(stdin);
    child.wait().unwrap();
    stop.store(true, Ordering::Relaxed);
    let seen = s.join().unwrap();
    eprintln!("java: {seen:#?}");
    assert!(!seen.is_empty(), "the Java peer ({args:?}) never connected");
    seen.len()
}

struct Counts {
    producer: (usize, usize),
    consumer: (usize, usize),
    /// Under the consumer group protocol of KIP-848 (`group.protocol=consumer`).
    consumer_848: (usize, usize),
}

/// Counts our group consumer's connections while it reads 40 records, commits and closes.
fn our_consumer(b: &str, topic: &str, group: &str, protocol: &str) -> usize {
    ours(b, || {
        block_on(async {
            let mut consumer = Consumer::from_map([
                ("bootstrap.servers", b),
                ("group.id", group),
                ("group.protocol", protocol),
                ("auto.offset.reset", "earliest"),
            ])
            .unwrap();
            // Nothing connects before the consumer has something to do.
            tokio::time::sleep(Duration::from_millis(500)).await;
            assert_eq!(established(b), 0, "{protocol}: connected at construction");
            consumer.subscribe([topic]).unwrap();
            for _ in 0..40 {
                consumer.recv().await.unwrap();
            }
            consumer.commit().await.unwrap();
            tokio::time::sleep(Duration::from_secs(1)).await;
            consumer.close(Duration::from_secs(5)).await;
        })
    })
}

fn measure(c: &Cluster, topic: &str) -> Counts {
    let b = c.bootstrap.as_str();
    let ours_producer = ours(b, || {
        block_on(async {
            let p = Producer::from_map([("bootstrap.servers", b)]).unwrap();
            for i in 0..20 {
                p.send(Record::new(topic, format!("o{i}")))
                    .await
                    .unwrap()
                    .await
                    .unwrap();
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            p.close(Duration::from_secs(5)).await;
        })
    });
    let lines = (0..20)
        .map(|i| format!("-1\t-1\t-\t6a{i:02x}\t-"))
        .collect();
    let java_producer = java(b, &["produce", b, topic], lines, 0);
    let ours_consumer = our_consumer(b, topic, &format!("conns-{topic}"), "classic");
    let ours_848 = our_consumer(b, topic, &format!("conns-848-{topic}"), "consumer");
    let java_group = format!("conns-java-{topic}");
    let java_consumer = java(b, &["member", b, &java_group, topic], vec![], 40);
    let java_848_group = format!("conns-java-848-{topic}");
    let java_848 = java(
        b,
        &[
            "member",
            b,
            &java_848_group,
            topic,
            "group.protocol=consumer",
        ],
        vec![],
        40,
    );
    Counts {
        producer: (java_producer, ours_producer),
        consumer: (java_consumer, ours_consumer),
        consumer_848: (java_848, ours_848),
    }
}

#[test]
fn connections_side_by_side_with_the_java_client() {
    let table = Arc::new(Mutex::new(Vec::new()));
    for nodes in [1, 3] {
        let c = if nodes == 3 {
            Cluster::start_with(nodes, "PLAINTEXT", &RACKS)
        } else {
            Cluster::start(nodes)
        };
        c.create_topic("one", 1, nodes as u16, &[]);
        let n = measure(&c, "one");
        table.lock().unwrap().push(format!(
            "| {nodes} node(s), all in bootstrap.servers | {} | {} | {} | {} | {} | {} |",
            n.producer.0,
            n.producer.1,
            n.consumer.0,
            n.consumer.1,
            n.consumer_848.0,
            n.consumer_848.1
        ));
        // The brief's ideal: the bootstrap connection becomes a node's connection, control
        // requests ride the open ones, and only the coordinator gets its own.
        let (producer_max, consumer_max) = if nodes == 1 { (1, 2) } else { (2, 3) };
        assert!(
            n.producer.1 <= producer_max,
            "{nodes} node(s): our producer opened {}",
            n.producer.1
        );
        assert!(
            n.consumer.1 <= consumer_max,
            "{nodes} node(s): our consumer opened {}",
            n.consumer.1
        );
        assert!(
            n.consumer_848.1 <= consumer_max,
            "{nodes} node(s): our consumer-protocol consumer opened {}",
            n.consumer_848.1
        );
        assert!(
            n.consumer_848.1 <= n.consumer_848.0,
            "never more than Java's consumer-protocol consumer"
        );
        assert!(
            n.producer.1 <= n.producer.0,
            "never more than Java's producer"
        );
        assert!(
            n.consumer.1 <= n.consumer.0,
            "never more than Java's consumer"
        );
        if nodes == 3 {
            rack_aware_fetching(&c);
        }
    }
    eprintln!(
        "| cluster | Java producer | our producer | Java group consumer | our group consumer | Java, group.protocol=consumer | ours, group.protocol=consumer |\n|---|---:|---:|---:|---:|---:|---:|\n{}",
        table.lock().unwrap().join("\n")
    );
}

/// A rack per node, and the leaders' choice of a replica in the fetching client's rack.
const RACKS: [&str; 2] = [
    "broker.rack=rack-{id}",
    "replica.selector.class=org.apache.kafka.common.replica.RackAwareReplicaSelector",
];

/// The bytes our consumer has received from each node.
async fn bytes_by_node(consumer: &mut Consumer) -> [f64; 4] {
    let m = consumer.metrics().await;
    let mut by = [0.0; 4];
    for (id, b) in by.iter_mut().enumerate().skip(1) {
        let tag = format!("node-{id}");
        *b = m
            .find(
                "consumer-node-metrics",
                "incoming-byte-total",
                &[("node-id", &tag)],
            )
            .unwrap_or(0.0);
    }
    by
}

/// KIP-392 on Apache Kafka: a consumer in a follower's rack reads the records from that
/// follower, not the leader; when the follower stops, it reads the next ones from the leader.
fn rack_aware_fetching(c: &Cluster) {
    const N: usize = 300;
    let b = c.bootstrap.as_str();
    c.create_topic("racked", 1, 3, &[]);
    block_on(async {
        let admin = Admin::from_map([("bootstrap.servers", b)]).unwrap();
        let leader = loop {
            let md = admin.metadata(Some(&["racked"])).await.unwrap();
            let leader = md.topics.first().and_then(|t| t.partitions.first()?.leader);
            if let Some(l) = leader {
                break l as usize;
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        };
        let follower = (1..=3).find(|n| *n != leader).unwrap();
        let producer = Producer::from_map([("bootstrap.servers", b)]).unwrap();
        let value = vec![b'r'; 1000];
        let send = |from: usize| {
            let (producer, value) = (&producer, value.clone());
            async move {
                for i in from..from + N {
                    let d = producer.send(Record::new("racked", value.clone()).key(i.to_string()));
                    d.await.unwrap().await.unwrap();
                }
            }
        };
        send(0).await;
        let rack = format!("rack-{follower}");
        let mut consumer = Consumer::from_map([
            ("bootstrap.servers", b),
            ("client.rack", rack.as_str()),
            ("metadata.max.age.ms", "60000"),
        ])
        .unwrap();
        consumer
            .assign([("racked", 0)], StartFrom::Earliest)
            .unwrap();
        for _ in 0..N {
            consumer.recv().await.unwrap();
        }
        let by = bytes_by_node(&mut consumer).await;
        eprintln!(
            "leader {leader}, follower {follower} (client.rack={rack}): bytes by node {by:?}"
        );
        assert!(
            by[follower] > (N * 1000) as f64 && by[leader] < (N * 1000 / 10) as f64,
            "the records came from the follower in the client's rack: bytes by node {by:?}"
        );
        // The follower stops: the next records come from the leader.
        c.kill(follower);
        send(N).await;
        for _ in 0..N {
            tokio::time::timeout(Duration::from_secs(60), consumer.recv())
                .await
                .expect("records after the follower stopped")
                .unwrap();
        }
        let after = bytes_by_node(&mut consumer).await;
        eprintln!("after node {follower} stopped: bytes by node {after:?}");
        assert!(
            after[leader] - by[leader] > (N * 1000) as f64,
            "the leader served the records once the follower stopped: {by:?} -> {after:?}"
        );
        consumer.close(Duration::from_secs(5)).await;
        producer.close(Duration::from_secs(5)).await;
        c.restart(follower);
    });
}
