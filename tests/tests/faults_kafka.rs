//! Faults on a real 3-node Apache Kafka cluster, with Kafka's own system tests as the anchor
//! (an idempotent producer through bounces, then checking what was acknowledged). A topic of
//! 6 partitions, replication factor 3, `min.insync.replicas=2`. While an idempotent acks=all
//! producer sends and a group member reads, in turn:
//! - kill -9 of a partition leader, and its restart;
//! - a rolling restart of all three nodes (SIGTERM, controlled shutdown);
//! - SIGSTOP of one node past `request.timeout.ms`, then SIGCONT;
//! - the active controller's node killed, then the group coordinator's.
//!
//! After them: every record resolved; every acknowledged record present exactly once, at the
//! offset acknowledged, in send order per partition; committed offsets never moved back; the
//! member read everything; no call hung (each phase must see the producer progress again).
//!
//! The producer sends at `FAULT_RATE` records a second (default 200) until the faults are
//! over. The short form (one round, tens of thousands of records) runs in `scripts/test`;
//! `scripts/soak` runs the long one (`FAULT_ROUNDS` rounds at a higher rate: millions).

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use kafka_tokio::{Admin, Certainty, Consumer, ConsumerEvent, Producer, Record, StartFrom};
use tests::kafka::{peer, Cluster};

const PARTITIONS: i32 = 6;
const TOPIC: &str = "faults";
const GROUP: &str = "faults-group";

/// What the producer's records came to, by number: `None` until resolved.
type Outcomes = Arc<Mutex<Vec<Option<Result<(i32, i64), Certainty>>>>>;

struct Run {
    cluster: Cluster,
    acked: Arc<AtomicU64>,
    consumed: Arc<Mutex<BTreeSet<(i32, i64)>>>,
}

impl Run {
    /// Waits until the producer acknowledged `more` records beyond `from`: the cluster works
    /// again and nothing hung.
    fn progress(&self, what: &str, more: u64, limit: Duration) {
        let from = self.acked.load(Ordering::Relaxed);
        let deadline = Instant::now() + limit;
        while self.acked.load(Ordering::Relaxed) < from + more {
            assert!(
                Instant::now() < deadline,
                "after {what}: no progress within {limit:?} ({} acknowledged)",
                self.acked.load(Ordering::Relaxed)
            );
            std::thread::sleep(Duration::from_millis(100));
        }
        eprintln!(
            "  {what}: producer went on ({} acknowledged, {} consumed)",
            self.acked.load(Ordering::Relaxed),
            self.consumed.lock().unwrap().len()
        );
    }

    fn leader_of(&self, partition: i32) -> usize {
        tests::tokio_runtime().block_on(async {
            let admin =
                Admin::from_map([("bootstrap.servers", self.cluster.bootstrap.as_str())]).unwrap();
            loop {
                if let Ok(md) = admin.metadata(Some(&[TOPIC])).await {
                    if let Some(l) = md.topics[0]
                        .partitions
                        .iter()
                        .find(|p| p.partition == partition)
                        .and_then(|p| p.leader)
                    {
                        return l as usize;
                    }
                }
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
        })
    }

    fn ask_peer(&self, args: &[&str]) -> usize {
        for _ in 0..50 {
            let (ok, out, _) = peer(args, None);
            if let Some(id) = ok.then(|| out.trim().parse().ok()).flatten() {
                return id;
            }
            std::thread::sleep(Duration::from_millis(200));
        }
        panic!("the Java admin could not answer {args:?}");
    }
}

#[test]
fn an_idempotent_producer_and_a_group_through_kafka_faults() {
    let rate = tests::env_u64("FAULT_RATE", 200);
    let rounds = tests::env_u64("FAULT_ROUNDS", 1);
    let began = Instant::now();
    let cluster = Cluster::start(3);
    cluster.create_topic(TOPIC, PARTITIONS as u32, 3, &["min.insync.replicas=2"]);
    let run = Run {
        cluster,
        acked: Arc::new(AtomicU64::new(0)),
        consumed: Arc::new(Mutex::new(BTreeSet::new())),
    };
    let bootstrap = run.cluster.bootstrap.clone();
    let outcomes: Outcomes = Arc::new(Mutex::new(Vec::new()));
    let sending = Arc::new(AtomicBool::new(true));

    // The producer: numbered records, partition i % 6, a window of deliveries awaited in order.
    let producer = {
        let (bootstrap, outcomes, acked, sending) = (
            bootstrap.clone(),
            outcomes.clone(),
            run.acked.clone(),
            sending.clone(),
        );
        let outcomes2 = outcomes.clone();
        std::thread::spawn(move || {
            tests::tokio_runtime().block_on(async move {
                let p = Producer::from_map([
                    ("bootstrap.servers", bootstrap.as_str()),
                    ("request.timeout.ms", "5000"),
                    ("delivery.timeout.ms", "120000"),
                    ("linger.ms", "5"),
                ])
                .unwrap();
                // Deliveries are awaited in their own task, oldest first, so that a slow one
                // never slows the sending pace.
                let (tx, mut rx) =
                    tokio::sync::mpsc::unbounded_channel::<(usize, kafka_tokio::Delivery)>();
                let resolver = tokio::spawn(async move {
                    while let Some((i, d)) = rx.recv().await {
                        let o = match d.await {
                            Ok(d) => {
                                acked.fetch_add(1, Ordering::Relaxed);
                                Ok((d.partition, d.offset.expect("acks=all has offsets")))
                            }
                            Err(f) => Err(f.certainty),
                        };
                        outcomes.lock().unwrap()[i] = Some(o);
                    }
                });
                let began = tokio::time::Instant::now();
                let mut i = 0usize;
                while sending.load(Ordering::Relaxed) {
                    let r = Record::new(TOPIC, format!("r{i:09}")).partition(i as i32 % PARTITIONS);
                    let d = p.send(r).await.expect("send");
                    outcomes2.lock().unwrap().push(None);
                    tx.send((i, d)).unwrap();
                    i += 1;
                    // Open loop at `rate` records a second.
                    let due = began + Duration::from_secs_f64(i as f64 / rate as f64);
                    tokio::time::sleep_until(due).await;
                }
                drop(tx);
                resolver.await.unwrap();
                p.close(Duration::from_secs(30)).await;
            })
        })
    };

    // The group member, and a watcher of the group's committed offsets.
    let stop = Arc::new(AtomicBool::new(false));
    let member = {
        let (bootstrap, consumed, stop) = (bootstrap.clone(), run.consumed.clone(), stop.clone());
        std::thread::spawn(move || {
            tests::tokio_runtime().block_on(async move {
                let mut c = Consumer::from_map([
                    ("bootstrap.servers", bootstrap.as_str()),
                    ("group.id", GROUP),
                    ("auto.offset.reset", "earliest"),
                    ("auto.commit.interval.ms", "500"),
                    ("session.timeout.ms", "10000"),
                    ("request.timeout.ms", "5000"),
                ])
                .unwrap();
                c.subscribe([TOPIC]).unwrap();
                while !stop.load(Ordering::Relaxed) {
                    match tokio::time::timeout(Duration::from_millis(200), c.next_event()).await {
                        Ok(Ok(ConsumerEvent::Record(r))) => {
                            consumed.lock().unwrap().insert((r.partition, r.offset));
                        }
                        Ok(Ok(_)) | Err(_) => {}
                        // Reported problems (an unreachable node) are not fatal.
                        Ok(Err(e)) => eprintln!("  member: {e}"),
                    }
                }
                c.close(Duration::from_secs(10)).await;
            })
        })
    };
    let backwards = Arc::new(Mutex::new(Vec::new()));
    let watcher = {
        let (bootstrap, stop, backwards) = (bootstrap.clone(), stop.clone(), backwards.clone());
        std::thread::spawn(move || {
            tests::tokio_runtime().block_on(async move {
                let c = Consumer::from_map([
                    ("bootstrap.servers", bootstrap.as_str()),
                    ("group.id", GROUP),
                    ("default.api.timeout.ms", "5000"),
                ])
                .unwrap();
                let mut last: BTreeMap<i32, i64> = BTreeMap::new();
                let tps: Vec<(String, i32)> =
                    (0..PARTITIONS).map(|p| (TOPIC.to_owned(), p)).collect();
                while !stop.load(Ordering::Relaxed) {
                    if let Ok(list) = c.committed_offsets(tps.clone()).await {
                        for ((_, p), o) in list {
                            if let Some(o) = o {
                                let before = last.insert(p, o).unwrap_or(0);
                                if o < before {
                                    backwards.lock().unwrap().push((p, before, o));
                                }
                            }
                        }
                    }
                    tokio::time::sleep(Duration::from_millis(300)).await;
                }
            })
        })
    };

    let limit = Duration::from_secs(90);
    // Each phase must see this many more records acknowledged (a few seconds' worth).
    let step = (rate * 3).max(100);
    run.progress("start", step, limit);
    for round in 1..=rounds {
        eprintln!("round {round} of {rounds}");
        let leader = run.leader_of(0);
        run.cluster.kill(leader);
        run.progress(
            &format!("kill -9 of node {leader} (leader of partition 0)"),
            step,
            limit,
        );
        run.cluster.restart(leader);
        run.progress(&format!("restart of node {leader}"), step, limit);
        for node in 1..=3 {
            run.cluster.restart(node); // SIGTERM: a controlled shutdown, then start again
            run.progress(&format!("rolling restart, node {node}"), step, limit);
        }
        let paused = run.leader_of(1);
        run.cluster.pause(paused);
        std::thread::sleep(Duration::from_secs(8)); // past request.timeout.ms (5 s)
        run.cluster.resume(paused);
        run.progress(&format!("SIGSTOP of node {paused} for 8 s"), step, limit);
        let controller = run.ask_peer(&["quorum-leader", &bootstrap]);
        run.cluster.kill(controller);
        run.progress(
            &format!("kill -9 of node {controller} (the active controller)"),
            step,
            limit,
        );
        run.cluster.restart(controller);
        let coordinator = run.ask_peer(&["coordinator", &bootstrap, GROUP]);
        run.cluster.kill(coordinator);
        run.progress(
            &format!("kill -9 of node {coordinator} (the group coordinator)"),
            step,
            limit,
        );
        run.cluster.restart(coordinator);
        run.progress("every node back", step, limit);
    }
    sending.store(false, Ordering::Relaxed);
    producer.join().expect("the producer finished");

    // What the log holds, read from the start by a fresh consumer.
    let log: BTreeMap<(i32, i64), String> = tests::tokio_runtime().block_on(async {
        let mut c = Consumer::from_map([("bootstrap.servers", bootstrap.as_str())]).unwrap();
        c.assign((0..PARTITIONS).map(|p| (TOPIC, p)), StartFrom::Earliest)
            .unwrap();
        let mut log = BTreeMap::new();
        let mut ended = BTreeSet::new();
        while ended.len() < PARTITIONS as usize {
            match tokio::time::timeout(Duration::from_secs(60), c.next_event())
                .await
                .expect("reading the log back")
            {
                Ok(ConsumerEvent::Record(r)) => {
                    ended.remove(&r.partition);
                    log.insert(
                        (r.partition, r.offset),
                        String::from_utf8(r.value.unwrap().to_vec()).unwrap(),
                    );
                }
                Ok(ConsumerEvent::EndOfPartition { partition, .. }) => {
                    ended.insert(partition);
                }
                Ok(_) => {}
                Err(e) => panic!("reading the log back: {e}"),
            }
        }
        log
    });
    // The member catches up, then everything stops.
    let deadline = Instant::now() + Duration::from_secs(60);
    while run.consumed.lock().unwrap().len() < log.len() {
        assert!(
            Instant::now() < deadline,
            "the member did not read everything"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    stop.store(true, Ordering::Relaxed);
    member.join().unwrap();
    watcher.join().unwrap();

    let outcomes = outcomes.lock().unwrap();
    let records = outcomes.len();
    let mut by_value: BTreeMap<&str, Vec<(i32, i64)>> = BTreeMap::new();
    for (at, v) in &log {
        by_value.entry(v.as_str()).or_default().push(*at);
    }
    let (mut acked, mut failed, mut not_sent_written) = (0, 0, 0);
    let mut last_offset: BTreeMap<i32, i64> = BTreeMap::new();
    for (i, o) in outcomes.iter().enumerate() {
        let value = format!("r{i:09}");
        let copies = by_value
            .get(value.as_str())
            .map_or(&[][..], |c| c.as_slice());
        assert!(
            copies.len() <= 1,
            "record {i} written {} times: {copies:?}",
            copies.len()
        );
        match o {
            None => panic!("record {i} never resolved"),
            Some(Ok(at)) => {
                acked += 1;
                assert_eq!(copies, [*at], "record {i} acknowledged at {at:?}");
                let before = last_offset.insert(at.0, at.1).unwrap_or(-1);
                assert!(
                    at.1 > before,
                    "record {i}: out of send order in partition {}",
                    at.0
                );
            }
            Some(Err(certainty)) => {
                failed += 1;
                if *certainty == Certainty::NotSent && !copies.is_empty() {
                    not_sent_written += 1;
                }
            }
        }
    }
    assert_eq!(
        not_sent_written, 0,
        "records failed as not sent are in the log"
    );
    let back = backwards.lock().unwrap();
    assert!(back.is_empty(), "committed offsets moved back: {back:?}");
    eprintln!(
        "faults on Apache Kafka {}: {records} records, {acked} acknowledged (each once, in order), {failed} failed, {} in the log, all read by the group; {rounds} round(s) of faults in {:.0} s",
        tests::kafka::version(),
        log.len(),
        began.elapsed().as_secs_f64()
    );
}
