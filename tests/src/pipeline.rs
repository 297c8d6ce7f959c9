//! The exactly-once pipeline the fault suites run on Apache Kafka: a seeder writes numbered
//! input records (idempotent, acks=all) while members of one group, each with its own
//! `transactional.id`, consume, transform and produce, one transaction per batch with the
//! batch's input offsets. A member whose transaction fails aborts it and starts over from the
//! group's committed offsets, as Java applications do. [`Pipeline::finish`] checks that every
//! acknowledged input is in the output exactly once as a read_committed reader sees it, and
//! that the group's committed input offsets are the input's ends.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use kafka_tokio::{
    Consumer, ConsumerEvent, Producer, Record, StartFrom, TransactionError, TxnOffset,
};

/// The topics and group of one pipeline.
#[derive(Clone, Debug)]
pub struct Names {
    pub input: String,
    pub output: String,
    pub group: String,
    /// Member `slot` uses `transactional.id` = `{txn_prefix}-{slot}`.
    pub txn_prefix: String,
    /// Partitions of the input and of the output.
    pub partitions: i32,
}

/// What the pipeline and the seeder did so far.
#[derive(Default, Debug)]
pub struct Progress {
    /// Input records acknowledged to the seeder.
    pub seeded: AtomicU64,
    /// Input records whose transaction committed.
    pub committed: AtomicU64,
    /// Transactions committed, and aborted.
    pub txns: AtomicU64,
    pub aborts: AtomicU64,
    /// Incarnations started after a failure.
    pub restarts: AtomicU64,
    stop_seeding: AtomicBool,
    stop: AtomicBool,
}

/// What [`Pipeline::finish`] found.
#[derive(Debug)]
pub struct Summary {
    pub seeded: u64,
    pub outputs: usize,
    pub txns: u64,
    pub aborts: u64,
    pub restarts: u64,
}

/// A running pipeline: a seeder and `members` members on their own runtime.
pub struct Pipeline {
    rt: tokio::runtime::Runtime,
    bootstrap: String,
    names: Names,
    /// Shared with the tasks.
    pub progress: Arc<Progress>,
    seeder: tokio::task::JoinHandle<()>,
    members: Vec<tokio::task::JoinHandle<()>>,
}

impl Pipeline {
    /// Starts the seeder (100 input records a second) and `members` members; the topics
    /// must exist.
    pub fn start(bootstrap: &str, names: Names, members: usize) -> Pipeline {
        let p = Arc::new(Progress::default());
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .expect("a tokio runtime");
        let seeder = rt.spawn(seed(bootstrap.to_owned(), names.clone(), p.clone()));
        let members = (0..members)
            .map(|slot| {
                let (bootstrap, names, p) = (bootstrap.to_owned(), names.clone(), p.clone());
                rt.spawn(async move {
                    let mut n = 0;
                    while !p.stop.load(Ordering::Relaxed) {
                        if n > 0 {
                            p.restarts.fetch_add(1, Ordering::Relaxed);
                        }
                        incarnation(&bootstrap, &names, slot, n, &p).await;
                        n += 1;
                    }
                })
            })
            .collect();
        Pipeline {
            rt,
            bootstrap: bootstrap.to_owned(),
            names,
            progress: p,
            seeder,
            members,
        }
    }

    /// Input records committed so far.
    pub fn committed(&self) -> u64 {
        self.progress.committed.load(Ordering::Relaxed)
    }

    /// Waits until `more` inputs beyond now have committed (the pipeline works again);
    /// `Err` with the count after `limit`.
    pub fn wait_for(&self, more: u64, limit: Duration) -> Result<Duration, u64> {
        let began = Instant::now();
        let from = self.committed();
        while self.committed() < from + more {
            if began.elapsed() > limit {
                return Err(self.committed());
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        Ok(began.elapsed())
    }

    /// [`Pipeline::wait_for`], failing the test after `limit`, and saying how it stands.
    pub fn progress(&self, what: &str, more: u64, limit: Duration) {
        if let Err(n) = self.wait_for(more, limit) {
            panic!("after {what}: the pipeline committed nothing more within {limit:?} ({n} inputs committed)");
        }
        let p = &self.progress;
        eprintln!(
            "  {what}: the pipeline went on ({} of {} inputs committed, {} transactions, {} aborted)",
            p.committed.load(Ordering::Relaxed),
            p.seeded.load(Ordering::Relaxed),
            p.txns.load(Ordering::Relaxed),
            p.aborts.load(Ordering::Relaxed)
        );
    }

    /// Stops the seeder, waits (up to `limit`) until every input committed, stops the members,
    /// and checks exactly once (panics naming what broke).
    pub fn finish(self, limit: Duration) -> Summary {
        let p = self.progress.clone();
        p.stop_seeding.store(true, Ordering::Relaxed);
        self.rt.block_on(self.seeder).expect("the seeder");
        let seeded = p.seeded.load(Ordering::Relaxed);
        let deadline = Instant::now() + limit;
        while p.committed.load(Ordering::Relaxed) < seeded {
            assert!(
                Instant::now() < deadline,
                "the pipeline did not catch up: {} of {seeded} inputs committed",
                p.committed.load(Ordering::Relaxed)
            );
            std::thread::sleep(Duration::from_millis(100));
        }
        p.stop.store(true, Ordering::Relaxed);
        for m in self.members {
            self.rt.block_on(m).expect("a member");
        }
        let (bootstrap, names) = (self.bootstrap, self.names);
        let outputs = self.rt.block_on(check(&bootstrap, &names, seeded));
        Summary {
            seeded,
            outputs,
            txns: p.txns.load(Ordering::Relaxed),
            aborts: p.aborts.load(Ordering::Relaxed),
            restarts: p.restarts.load(Ordering::Relaxed),
        }
    }
}

/// The seeder: 100 input records a second, acks=all, idempotent, until told to stop.
async fn seed(bootstrap: String, names: Names, p: Arc<Progress>) {
    let producer = Producer::from_map([("bootstrap.servers", bootstrap.as_str())]).unwrap();
    let mut i = 0u64;
    while !p.stop_seeding.load(Ordering::Relaxed) {
        let mut waiting = Vec::new();
        for _ in 0..10 {
            let r = Record::new(names.input.as_str(), i.to_string())
                .partition((i % names.partitions as u64) as i32);
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
}

/// One member incarnation: reads batches, writes each in one transaction with its offsets.
/// Returns when told to stop, or after a failed transaction (aborted if it can be).
async fn incarnation(bootstrap: &str, names: &Names, slot: usize, n: u64, p: &Progress) {
    let mut consumer = Consumer::from_map([
        ("bootstrap.servers", bootstrap),
        ("group.id", names.group.as_str()),
        ("enable.auto.commit", "false"),
        ("isolation.level", "read_committed"),
        ("auto.offset.reset", "earliest"),
        ("max.poll.records", "50"),
    ])
    .expect("config");
    consumer
        .subscribe([names.input.as_str()])
        .expect("subscribe");
    let producer = Producer::from_map([
        ("bootstrap.servers", bootstrap),
        ("transactional.id", &format!("{}-{slot}", names.txn_prefix)),
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
            let out = Record::new(names.output.as_str(), format!("out-{v}@{slot}.{n}.{k}")).key(v);
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
                eprintln!(
                    "  {}-{slot}: transaction failed ({e}); aborting and starting over",
                    names.txn_prefix
                );
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

/// Every value of `topic` up to its end, as a reader with `isolation` sees it.
pub async fn read_all(
    bootstrap: &str,
    topic: &str,
    partitions: i32,
    isolation: &str,
) -> Vec<String> {
    let mut c = Consumer::from_map([
        ("bootstrap.servers", bootstrap),
        ("isolation.level", isolation),
    ])
    .expect("config");
    c.assign((0..partitions).map(|p| (topic, p)), StartFrom::Earliest)
        .expect("assign");
    let mut ended = BTreeSet::new();
    let mut values = Vec::new();
    while ended.len() < partitions as usize {
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

/// Exactly once: each of the `seeded` inputs once in the output (read_committed), nothing
/// else there, and the group's committed offsets at the input's ends. Returns the outputs.
async fn check(bootstrap: &str, names: &Names, seeded: u64) -> usize {
    let inputs = read_all(
        bootstrap,
        &names.input,
        names.partitions,
        "read_uncommitted",
    )
    .await;
    assert_eq!(
        inputs.len() as u64,
        seeded,
        "every acknowledged input is in the log"
    );
    let out = read_all(bootstrap, &names.output, names.partitions, "read_committed").await;
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
        ("bootstrap.servers", bootstrap),
        ("group.id", names.group.as_str()),
    ])
    .unwrap();
    let mut committed = 0;
    for part in 0..names.partitions {
        committed += c
            .committed(names.input.as_str(), part)
            .await
            .unwrap()
            .expect("committed in the transactions");
    }
    assert_eq!(
        committed as u64, seeded,
        "the input offsets committed with the output"
    );
    out.len()
}
