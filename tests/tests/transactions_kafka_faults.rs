//! Exactly-once through kill -9 on a real 3-node Apache Kafka cluster: a consume-transform-
//! produce pipeline (two members of one group, each with its own `transactional.id`, one
//! transaction per batch with the batch's input offsets) runs while a seeder keeps writing the
//! input; the transaction coordinator's node is killed (kill -9) and restarted, then the group
//! coordinator's. A member whose transaction fails aborts it and starts over from the group's
//! committed offsets, as Java applications do. At the end every input record is in the output
//! exactly once as a read_committed reader sees it, and the group's committed input offsets are
//! the input's ends.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use kafka_tokio::{
    Consumer, ConsumerEvent, Producer, Record, StartFrom, TransactionError, TxnOffset,
};
use tests::kafka::{peer, Cluster};
use tests::tokio_block_on as block_on;

const INPUT: &str = "eos-in";
const OUTPUT: &str = "eos-out";
const GROUP: &str = "eos-pipe";

/// What the pipeline and the seeder did so far.
#[derive(Default)]
struct Progress {
    /// Input records acknowledged to the seeder.
    seeded: AtomicU64,
    /// Input records whose transaction committed.
    committed: AtomicU64,
    /// Transactions committed, and aborted.
    txns: AtomicU64,
    aborts: AtomicU64,
    /// Incarnations started after a failure.
    restarts: AtomicU64,
    stop_seeding: AtomicBool,
    stop: AtomicBool,
}

/// One member incarnation: reads batches, writes each in one transaction with its offsets.
/// Returns when told to stop, or after a failed transaction (aborted if it can be).
async fn incarnation(bootstrap: &str, slot: usize, n: u64, p: &Progress) {
    let mut consumer = Consumer::from_map([
        ("bootstrap.servers", bootstrap),
        ("group.id", GROUP),
        ("enable.auto.commit", "false"),
        ("isolation.level", "read_committed"),
        ("auto.offset.reset", "earliest"),
        ("max.poll.records", "50"),
    ])
    .expect("config");
    consumer.subscribe([INPUT]).expect("subscribe");
    let producer = Producer::from_map([
        ("bootstrap.servers", bootstrap),
        ("transactional.id", &format!("eos-{slot}")),
        ("transaction.timeout.ms", "10000"),
    ])
    .expect("config");
    let mut ok = loop {
        match producer.init_transactions().await {
            Err(TransactionError::TimedOut) => continue,
            r => break r.is_ok(),
        }
    };
    let mut k = 0;
    while ok && !p.stop.load(Ordering::Relaxed) {
        let batch =
            match tokio::time::timeout(Duration::from_millis(500), consumer.recv_batch()).await {
                Ok(Ok(b)) => b,
                _ => continue,
            };
        let Some(group) = consumer.group_metadata().await else {
            continue;
        };
        producer.begin_transaction().expect("begin");
        k += 1;
        let mut offsets: BTreeMap<(String, i32), TxnOffset> = BTreeMap::new();
        let mut result = Ok(());
        for r in &batch {
            let v = String::from_utf8_lossy(r.value.as_deref().unwrap_or_default()).to_string();
            let out = Record::new(OUTPUT, format!("out-{v}@{slot}.{n}.{k}")).key(v);
            if let Err(e) = producer.send(out).await {
                result = Err(TransactionError::Abortable {
                    cause: e.to_string(),
                });
                break;
            }
            offsets.insert((r.topic.to_string(), r.partition), r.next_offset());
        }
        if result.is_ok() {
            result = loop {
                match producer
                    .send_offsets_to_transaction(offsets.clone(), group.clone())
                    .await
                {
                    Err(TransactionError::TimedOut) => continue,
                    r => break r,
                }
            };
        }
        if result.is_ok() {
            result = loop {
                match producer.commit_transaction().await {
                    Err(TransactionError::TimedOut) => continue,
                    r => break r,
                }
            };
        }
        match result {
            Ok(()) => {
                p.committed.fetch_add(batch.len() as u64, Ordering::Relaxed);
                p.txns.fetch_add(1, Ordering::Relaxed);
            }
            Err(e) => {
                eprintln!("  eos-{slot}: transaction failed ({e}); aborting and starting over");
                if matches!(e, TransactionError::Abortable { .. }) {
                    while let Err(TransactionError::TimedOut) = producer.abort_transaction().await {
                    }
                }
                p.aborts.fetch_add(1, Ordering::Relaxed);
                ok = false;
            }
        }
    }
    consumer.close(Duration::from_secs(10)).await;
    producer.close(Duration::from_secs(10)).await;
}

/// Waits until `more` inputs beyond now have committed: the pipeline works again.
fn progress(p: &Progress, what: &str, more: u64, limit: Duration) {
    let from = p.committed.load(Ordering::Relaxed);
    let deadline = Instant::now() + limit;
    while p.committed.load(Ordering::Relaxed) < from + more {
        assert!(
            Instant::now() < deadline,
            "after {what}: the pipeline committed nothing more within {limit:?} ({} inputs committed)",
            p.committed.load(Ordering::Relaxed)
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    eprintln!(
        "  {what}: the pipeline went on ({} of {} inputs committed, {} transactions, {} aborted)",
        p.committed.load(Ordering::Relaxed),
        p.seeded.load(Ordering::Relaxed),
        p.txns.load(Ordering::Relaxed),
        p.aborts.load(Ordering::Relaxed)
    );
}

fn ask_peer(args: &[&str]) -> usize {
    for _ in 0..100 {
        let (ok, out, _) = peer(args, None);
        if let Some(id) = ok.then(|| out.trim().parse().ok()).flatten() {
            return id;
        }
        std::thread::sleep(Duration::from_millis(300));
    }
    panic!("the Java admin could not answer {args:?}");
}

/// Every value of `topic` up to its end, as a reader with `isolation` sees it.
async fn read_all(bootstrap: &str, topic: &str, isolation: &str) -> Vec<String> {
    let mut c = Consumer::from_map([
        ("bootstrap.servers", bootstrap),
        ("isolation.level", isolation),
    ])
    .expect("config");
    c.assign((0..3).map(|p| (topic, p)), StartFrom::Earliest)
        .expect("assign");
    let mut ended = std::collections::BTreeSet::new();
    let mut values = Vec::new();
    while ended.len() < 3 {
        match tokio::time::timeout(Duration::from_secs(60), c.next_event())
            .await
            .expect("reading to the end within 60 s")
        {
            Ok(ConsumerEvent::Record(r)) => values
                .push(String::from_utf8_lossy(r.value.as_deref().unwrap_or_default()).to_string()),
            Ok(ConsumerEvent::EndOfPartition { partition, .. }) => {
                ended.insert(partition);
            }
            Ok(_) => {}
            Err(e) => panic!("read: {e}"),
        }
    }
    values
}

#[test]
fn exactly_once_through_kill_9_of_the_transaction_and_group_coordinators() {
    let began = Instant::now();
    let cluster = Cluster::start_with(
        3,
        "PLAINTEXT",
        &["transaction.abort.timed.out.transaction.cleanup.interval.ms=1000"],
    );
    for t in [INPUT, OUTPUT] {
        cluster.create_topic(t, 3, 3, &["min.insync.replicas=2"]);
    }
    let bootstrap = cluster.bootstrap.clone();
    let p = Arc::new(Progress::default());
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    // The seeder: 100 input records a second, acks=all, idempotent, until told to stop.
    let seeder = {
        let (bootstrap, p) = (bootstrap.clone(), p.clone());
        rt.spawn(async move {
            let producer = Producer::from_map([("bootstrap.servers", bootstrap.as_str())]).unwrap();
            let mut i = 0u64;
            while !p.stop_seeding.load(Ordering::Relaxed) {
                let mut waiting = Vec::new();
                for _ in 0..10 {
                    let r = Record::new(INPUT, i.to_string()).partition((i % 3) as i32);
                    waiting.push(producer.send(r).await.expect("send"));
                    i += 1;
                }
                for d in waiting {
                    d.await
                        .expect("the idempotent seeder's records are delivered");
                    p.seeded.fetch_add(1, Ordering::Relaxed);
                }
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            producer.close(Duration::from_secs(10)).await;
        })
    };
    // Two members, each started again after a failed transaction.
    let members: Vec<_> = (0..2)
        .map(|slot| {
            let (bootstrap, p) = (bootstrap.clone(), p.clone());
            rt.spawn(async move {
                let mut n = 0;
                while !p.stop.load(Ordering::Relaxed) {
                    if n > 0 {
                        p.restarts.fetch_add(1, Ordering::Relaxed);
                    }
                    incarnation(&bootstrap, slot, n, &p).await;
                    n += 1;
                }
            })
        })
        .collect();
    progress(&p, "start", 300, Duration::from_secs(120));
    let txn_node = ask_peer(&["txn-coordinator", &bootstrap, "eos-0"]);
    cluster.kill(txn_node);
    progress(
        &p,
        &format!("kill -9 of node {txn_node} (eos-0's transaction coordinator)"),
        300,
        Duration::from_secs(120),
    );
    cluster.restart(txn_node);
    progress(
        &p,
        &format!("restart of node {txn_node}"),
        200,
        Duration::from_secs(120),
    );
    let group_node = ask_peer(&["coordinator", &bootstrap, GROUP]);
    cluster.kill(group_node);
    progress(
        &p,
        &format!("kill -9 of node {group_node} (the group coordinator)"),
        300,
        Duration::from_secs(120),
    );
    cluster.restart(group_node);
    progress(
        &p,
        &format!("restart of node {group_node}"),
        200,
        Duration::from_secs(120),
    );
    p.stop_seeding.store(true, Ordering::Relaxed);
    rt.block_on(seeder).expect("the seeder");
    let seeded = p.seeded.load(Ordering::Relaxed);
    let deadline = Instant::now() + Duration::from_secs(120);
    while p.committed.load(Ordering::Relaxed) < seeded {
        assert!(
            Instant::now() < deadline,
            "the pipeline did not catch up: {} of {seeded} inputs committed",
            p.committed.load(Ordering::Relaxed)
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    p.stop.store(true, Ordering::Relaxed);
    for m in members {
        rt.block_on(m).expect("a member");
    }
    drop(rt);
    block_on(async {
        let inputs = read_all(&bootstrap, INPUT, "read_uncommitted").await;
        assert_eq!(
            inputs.len() as u64,
            seeded,
            "every acknowledged input is in the log"
        );
        let out = read_all(&bootstrap, OUTPUT, "read_committed").await;
        let mut copies: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
        for v in &out {
            let input = v
                .strip_prefix("out-")
                .and_then(|v| v.split('@').next())
                .unwrap_or_else(|| panic!("an output of no input: {v}"));
            copies.entry(input).or_default().push(v);
        }
        for v in &inputs {
            let c = copies.remove(v.as_str()).unwrap_or_default();
            assert_eq!(
                c.len(),
                1,
                "input {v} is in the output {} times: {c:?}",
                c.len()
            );
        }
        assert!(copies.is_empty(), "outputs of no input: {copies:?}");
        let c = Consumer::from_map([
            ("bootstrap.servers", bootstrap.as_str()),
            ("group.id", GROUP),
        ])
        .unwrap();
        let mut committed = 0;
        for part in 0..3 {
            committed += c
                .committed(INPUT, part)
                .await
                .unwrap()
                .expect("committed in the transactions");
        }
        assert_eq!(
            committed as u64, seeded,
            "the input offsets committed with the output"
        );
        eprintln!(
            "exactly once through kill -9 of nodes {txn_node} and {group_node}: {seeded} inputs, {} outputs read_committed, \
             {} transactions committed, {} failed and aborted ({} member restarts), in {:.0} s",
            out.len(),
            p.txns.load(Ordering::Relaxed),
            p.aborts.load(Ordering::Relaxed),
            p.restarts.load(Ordering::Relaxed),
            began.elapsed().as_secs_f64()
        );
    });
}
