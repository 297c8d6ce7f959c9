//! The transactional applications, written against the user API as users write them: the
//! seeder of the input topic, the pipeline's members (a group consumer and a transactional
//! producer each, one transaction per batch with the batch's offsets in it), a producer that
//! aborts every other transaction, a zombie and its successor under one `transactional.id`,
//! and a read_committed reader of the output. Each notes what it did in the shared [`Ledger`].

use std::cell::{Cell, RefCell};
use std::collections::{BTreeMap, BTreeSet};
use std::rc::Rc;
use std::time::Duration;

use futures_util::future::{select, Either};
use kafka_driver::{
    Consumer, ConsumerEvent, ErrorCode, Producer, Record, StartFrom, TransactionError, TxnOffset,
};

use crate::sim::Failure;
use crate::simrt::{self, SimRuntime};

/// The input topic and the output topic, 3 partitions each.
pub const INPUT: &str = "in";
/// The output topic.
pub const OUTPUT: &str = "out";
/// The pipeline's group.
pub const GROUP: &str = "pipe";

/// How a transaction of an application ended, as its calls said.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// Not ended yet (the application crashed, or is still in it).
    Open,
    /// `commit_transaction` returned `Ok`.
    Committed,
    /// `abort_transaction` returned `Ok`, or the producer was fenced before its commit.
    Aborted,
    /// The commit failed: it may or may not have committed (all or nothing, though).
    Unknown,
}

/// One transaction an application ran.
#[derive(Debug, Clone)]
pub struct Txn {
    /// Who ran it.
    pub who: String,
    /// The values it sent to the output.
    pub values: Vec<String>,
    /// How it ended.
    pub outcome: Outcome,
}

/// Everything the applications saw.
#[derive(Debug, Default)]
pub struct Ledger {
    /// The seeder wrote every input.
    pub seeded: bool,
    /// Every transaction, in the order they began.
    pub txns: Vec<Txn>,
    /// Per output partition: what the read_committed reader was handed, (offset, value).
    pub read: BTreeMap<i32, Vec<(i64, String)>>,
    /// The zombie's commit: `None` until it tried.
    pub zombie_commit: Option<Result<(), TransactionError>>,
    /// The zombie and its successor are done.
    pub zombie_done: bool,
    /// The aborting producer is done.
    pub aborter_done: bool,
    /// Pipeline transactions committed, and aborted (after an abortable error).
    pub pipeline: (u64, u64),
    /// Per member: its assignment and positions, as it last looked (for a run that does not
    /// settle).
    pub positions: BTreeMap<String, Vec<(i32, Option<i64>)>>,
    /// The transaction versions the producers speak (after init_transactions), and how many
    /// producers spoke each.
    pub versions: BTreeMap<u8, u64>,
    /// The first broken invariant an application found.
    pub failure: Option<Failure>,
    /// What the applications did, for the trace.
    pub notes: Vec<String>,
}

impl Ledger {
    /// Records the first broken invariant.
    pub fn fail(&mut self, message: String) {
        if self.failure.is_none() {
            self.failure = Some(Failure::new(message));
        }
    }

    fn begin(&mut self, who: &str) -> usize {
        self.txns.push(Txn {
            who: who.to_owned(),
            values: Vec::new(),
            outcome: Outcome::Open,
        });
        self.txns.len() - 1
    }
}

/// The shared ledger.
pub type Shared = Rc<RefCell<Ledger>>;

/// What the harness tells a member.
#[derive(Debug, Default)]
pub struct MemberCtl {
    /// Close and finish.
    pub leave: Cell<bool>,
    /// The member's task ended.
    pub finished: Cell<bool>,
}

fn common() -> Vec<(String, String)> {
    [
        ("bootstrap.servers", crate::sim::apps::bootstrap(3).as_str()),
        ("request.timeout.ms", "3000"),
        ("retry.backoff.ms", "50"),
        ("reconnect.backoff.ms", "20"),
        ("reconnect.backoff.max.ms", "200"),
    ]
    .iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect()
}

fn transactional(id: &str, timeout_ms: u32) -> Producer<SimRuntime> {
    let mut settings = common();
    settings.extend(
        [
            ("transactional.id", id.to_owned()),
            ("transaction.timeout.ms", timeout_ms.to_string()),
            ("linger.ms", "5".into()),
            ("max.block.ms", "4000".into()),
            ("delivery.timeout.ms", "20000".into()),
        ]
        .map(|(k, v)| (k.to_owned(), v)),
    );
    Producer::from_map(settings).expect("a valid transactional config")
}

/// `init_transactions`, again while it times out; `false` if the producer is done for.
async fn init(p: &Producer<SimRuntime>, who: &str, shared: &Shared) -> bool {
    loop {
        match p.init_transactions().await {
            Ok(()) => {
                let v = p.transaction_version().unwrap_or(0);
                *shared.borrow_mut().versions.entry(v).or_default() += 1;
                return true;
            }
            Err(TransactionError::TimedOut) => continue,
            Err(e) => {
                shared
                    .borrow_mut()
                    .notes
                    .push(format!("{who}: init_transactions failed: {e}"));
                return false;
            }
        }
    }
}

/// `commit_transaction`, again while it times out.
async fn commit(p: &Producer<SimRuntime>) -> Result<(), TransactionError> {
    loop {
        match p.commit_transaction().await {
            Err(TransactionError::TimedOut) => continue,
            r => return r,
        }
    }
}

/// `abort_transaction`, again while it times out.
async fn abort(p: &Producer<SimRuntime>) -> Result<(), TransactionError> {
    loop {
        match p.abort_transaction().await {
            Err(TransactionError::TimedOut) => continue,
            r => return r,
        }
    }
}

/// The seeder: `n` input records, "0".."n-1", over the input's partitions, 10 every 150 ms,
/// idempotent with acks=all; each awaited.
pub async fn seeder(n: usize, shared: Shared) {
    let mut settings = common();
    settings.push(("delivery.timeout.ms".into(), "60000".into()));
    settings.push(("linger.ms".into(), "2".into()));
    let p = Producer::<SimRuntime>::from_map(settings).expect("config");
    let mut deliveries = Vec::new();
    for i in 0..n {
        // Spread over the faults' window, so that the pipeline works through them.
        if i % 10 == 0 {
            simrt::sleep(Duration::from_millis(150)).await;
        }
        let r = Record::new(INPUT, i.to_string()).partition(i as i32 % 3);
        match p.send(r).await {
            Ok(d) => deliveries.push((i, d)),
            Err(e) => shared.borrow_mut().fail(format!("seeder: send {i}: {e}")),
        }
    }
    for (i, d) in deliveries {
        if let Err(e) = d.await {
            shared
                .borrow_mut()
                .notes
                .push(format!("seeder: input {i} failed: {e}"));
        }
    }
    p.close(Duration::from_secs(5)).await;
    let mut l = shared.borrow_mut();
    l.seeded = true;
    l.notes.push("seeder: done".into());
}

/// A pipeline member: reads batches of the input as a member of the group, and writes each
/// batch's records to the output in one transaction with the batch's offsets. After an
/// abortable error it aborts and starts over as a new incarnation (closing its consumer, so
/// that the group's committed offsets decide where reading resumes); when fenced it ends.
pub async fn member(slot: usize, seed: u64, ctl: Rc<MemberCtl>, shared: Shared) {
    let who = format!("pipe-{slot}");
    let mut settings = common();
    settings.extend(
        [
            ("group.id", GROUP),
            ("enable.auto.commit", "false"),
            ("isolation.level", "read_committed"),
            ("auto.offset.reset", "earliest"),
            ("session.timeout.ms", "3000"),
            ("heartbeat.interval.ms", "300"),
            ("max.poll.records", "20"),
            (
                "partition.assignment.strategy",
                if seed.is_multiple_of(2) {
                    "range"
                } else {
                    "cooperative-sticky"
                },
            ),
        ]
        .map(|(k, v)| (k.to_owned(), v.to_owned())),
    );
    let mut consumer = Consumer::<SimRuntime>::from_map(settings).expect("config");
    consumer.subscribe([INPUT]).expect("subscribe");
    let events = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let sink = events.clone();
    consumer.on_rebalance(move |e| sink.lock().unwrap().push(format!("{e:?}")));
    let producer = transactional(&who, 3000);
    let mut ok = init(&producer, &who, &shared).await;
    let mut voluntary = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    while ok && !ctl.leave.get() {
        let batch = match select(
            Box::pin(consumer.recv_batch()),
            Box::pin(simrt::sleep(Duration::from_millis(200))),
        )
        .await
        {
            Either::Left((Ok(batch), _)) => Some(batch),
            Either::Left((Err(e), _)) => {
                shared
                    .borrow_mut()
                    .notes
                    .push(format!("{who}: recv_batch: {e}"));
                continue;
            }
            Either::Right(_) => None,
        };
        for e in std::mem::take(&mut *events.lock().unwrap()) {
            shared.borrow_mut().notes.push(format!("{who}: {e}"));
        }
        let Some(batch) = batch else {
            let mut positions = Vec::new();
            let assigned: Vec<i32> = consumer.assignment().iter().map(|a| a.1).collect();
            for p in 0..3 {
                let position = consumer.position(INPUT, p).await;
                if assigned.contains(&p) || position.is_some() {
                    positions.push((p, position));
                }
            }
            shared.borrow_mut().positions.insert(who.clone(), positions);
            continue;
        };
        let Some(group) = consumer.group_metadata().await else {
            continue;
        };
        if let Err(e) = producer.begin_transaction() {
            shared
                .borrow_mut()
                .fail(format!("{who}: begin_transaction: {e}"));
            break;
        }
        let t = shared.borrow_mut().begin(&who);
        let mut offsets: BTreeMap<(String, i32), TxnOffset> = BTreeMap::new();
        let mut failed = None;
        for r in &batch {
            let value = String::from_utf8_lossy(r.value.as_deref().unwrap_or_default()).to_string();
            // Tagged with the transaction: values are unique, so each transaction's fate can
            // be read from the log; the input is what precedes the '@'.
            let out = format!("out-{value}@{t}");
            shared.borrow_mut().txns[t].values.push(out.clone());
            if let Err(e) = producer.send(Record::new(OUTPUT, out).key(value)).await {
                failed = Some(e.to_string());
                break;
            }
            offsets.insert((r.topic.to_string(), r.partition), r.next_offset());
        }
        // One transaction in ten aborts of its own accord: its records must never be read.
        voluntary = voluntary.wrapping_mul(6364136223846793005).wrapping_add(1);
        let result = match failed {
            Some(e) => Err(TransactionError::Abortable { cause: e }),
            None if (voluntary >> 33).is_multiple_of(10) => Err(TransactionError::Abortable {
                cause: "the application aborts".into(),
            }),
            None => {
                let mut r = Err(TransactionError::TimedOut);
                while matches!(r, Err(TransactionError::TimedOut)) {
                    r = producer
                        .send_offsets_to_transaction(offsets.clone(), group.clone())
                        .await;
                }
                match r {
                    Ok(()) => commit(&producer).await,
                    e => e,
                }
            }
        };
        let result = match result {
            Err(TransactionError::Abortable { cause }) => {
                if let Some(code) = retriable_rejection(&cause) {
                    // The producer retries what Java's does until its delivery timeout: a
                    // retriable answer must never fail a record at once (#33's defect 2).
                    shared.borrow_mut().fail(format!(
                        "{who}: a record failed at once on error {code}, which Java 4.x \
                         retries: {cause}"
                    ));
                }
                shared
                    .borrow_mut()
                    .notes
                    .push(format!("{who}: aborts: {cause}"));
                match abort(&producer).await {
                    Ok(()) => Ok(Outcome::Aborted),
                    Err(e) => Err(format!("abort failed: {e}")),
                }
            }
            Ok(()) => Ok(Outcome::Committed),
            Err(e) => Err(format!("commit failed: {e}")),
        };
        let mut l = shared.borrow_mut();
        match result {
            Ok(Outcome::Committed) => {
                l.txns[t].outcome = Outcome::Committed;
                l.pipeline.0 += 1;
            }
            Ok(o) => {
                l.txns[t].outcome = o;
                l.pipeline.1 += 1;
                // Start over from the committed offsets.
                ok = false;
            }
            Err(e) => {
                l.txns[t].outcome = Outcome::Unknown;
                l.notes.push(format!("{who}: {e}"));
                ok = false;
            }
        }
    }
    consumer.close(Duration::from_secs(5)).await;
    producer.close(Duration::from_secs(5)).await;
    shared.borrow_mut().notes.push(format!("{who}: ends"));
    ctl.finished.set(true);
}

/// The error code of a broker's rejection named in `cause` ("the broker rejected the record:
/// NAME (CODE)"), if Java 4.x's exception for it is retriable (Apache Kafka's own list,
/// `kafka-proto/tests/java_error_codes.txt`).
fn retriable_rejection(cause: &str) -> Option<i16> {
    const JAVA: &str = include_str!("../../../kafka-proto/tests/java_error_codes.txt");
    let rest = cause.split("the broker rejected the record: ").nth(1)?;
    let code = rest.split('(').nth(1)?.split(')').next()?;
    JAVA.lines()
        .filter(|l| !l.starts_with('#'))
        .any(|l| {
            let mut f = l.split_whitespace();
            f.next() == Some(code) && f.nth(1) == Some("true")
        })
        .then(|| code.parse().ok())
        .flatten()
}

/// A producer whose odd transactions abort: `rounds` transactions of 5 records each.
pub async fn aborter(rounds: usize, shared: Shared) {
    let p = transactional("aborter", 10_000);
    if init(&p, "aborter", &shared).await {
        for k in 0..rounds {
            if p.begin_transaction().is_err() {
                break;
            }
            let t = shared.borrow_mut().begin("aborter");
            let mut failed = false;
            for i in 0..5 {
                let v = format!("abort-{k}-{i}");
                shared.borrow_mut().txns[t].values.push(v.clone());
                failed |= p.send(Record::new(OUTPUT, v.clone()).key(v)).await.is_err();
            }
            let r = if k % 2 == 1 || failed {
                abort(&p).await.map(|()| Outcome::Aborted)
            } else {
                match commit(&p).await {
                    Ok(()) => Ok(Outcome::Committed),
                    Err(TransactionError::Abortable { .. }) => {
                        abort(&p).await.map(|()| Outcome::Aborted)
                    }
                    Err(e) => Err(e),
                }
            };
            let failed = {
                let mut l = shared.borrow_mut();
                match r {
                    Ok(o) => {
                        l.txns[t].outcome = o;
                        false
                    }
                    Err(e) => {
                        l.txns[t].outcome = Outcome::Unknown;
                        l.notes.push(format!("aborter: failed: {e}"));
                        true
                    }
                }
            };
            if failed {
                break;
            }
            simrt::sleep(Duration::from_millis(150)).await;
        }
    }
    p.close(Duration::from_secs(5)).await;
    shared.borrow_mut().aborter_done = true;
}

/// A zombie and its successor under one `transactional.id`: the zombie writes and flushes,
/// the successor's `init_transactions` fences it, the zombie's commit must fail for good, and
/// the successor commits its own.
pub async fn zombie(shared: Shared) {
    let zombie = transactional("zombie", 20_000);
    if !init(&zombie, "zombie", &shared).await {
        shared.borrow_mut().zombie_done = true;
        return;
    }
    zombie.begin_transaction().expect("begin");
    let t = shared.borrow_mut().begin("zombie");
    for i in 0..3 {
        let v = format!("zombie-{i}");
        shared.borrow_mut().txns[t].values.push(v.clone());
        let _ = zombie.send(Record::new(OUTPUT, v).partition(i)).await;
    }
    zombie.flush().await;
    let successor = transactional("zombie", 20_000);
    let inited = init(&successor, "successor", &shared).await;
    let r = commit(&zombie).await;
    {
        let mut l = shared.borrow_mut();
        l.txns[t].outcome = match &r {
            Ok(()) => Outcome::Committed,
            Err(TransactionError::Fatal(
                ErrorCode::ProducerFenced | ErrorCode::InvalidProducerEpoch,
            )) => Outcome::Aborted,
            Err(_) => Outcome::Unknown,
        };
        l.zombie_commit = Some(r);
    }
    zombie.close(Duration::from_secs(5)).await;
    if inited {
        // Until one commits: an abortable error aborts and tries again.
        for attempt in 0..5 {
            if successor.begin_transaction().is_err() {
                break;
            }
            let t = shared.borrow_mut().begin("successor");
            for i in 0..3 {
                let v = format!("successor-{attempt}-{i}");
                shared.borrow_mut().txns[t].values.push(v.clone());
                let _ = successor.send(Record::new(OUTPUT, v).partition(i)).await;
            }
            let r = match commit(&successor).await {
                Ok(()) => Ok(Outcome::Committed),
                Err(TransactionError::Abortable { .. }) => {
                    abort(&successor).await.map(|()| Outcome::Aborted)
                }
                Err(e) => Err(e),
            };
            let mut l = shared.borrow_mut();
            match r {
                Ok(o) => {
                    l.txns[t].outcome = o;
                    if o == Outcome::Committed {
                        break;
                    }
                }
                Err(e) => {
                    l.txns[t].outcome = Outcome::Unknown;
                    l.notes.push(format!("successor: failed: {e}"));
                    break;
                }
            }
        }
    }
    successor.close(Duration::from_secs(5)).await;
    shared.borrow_mut().zombie_done = true;
}

/// The read_committed reader of the whole output, from the start, until told to leave.
pub async fn reader(ctl: Rc<MemberCtl>, shared: Shared) {
    let mut settings = common();
    settings.push(("isolation.level".into(), "read_committed".into()));
    let mut c = Consumer::<SimRuntime>::from_map(settings).expect("config");
    c.assign((0..3).map(|p| (OUTPUT, p)), StartFrom::Earliest)
        .expect("assign");
    let mut seen: BTreeSet<(i32, i64)> = BTreeSet::new();
    while !ctl.leave.get() {
        let event = match select(
            Box::pin(c.next_event()),
            Box::pin(simrt::sleep(Duration::from_millis(200))),
        )
        .await
        {
            Either::Left((e, _)) => e,
            Either::Right(_) => continue,
        };
        if let Ok(ConsumerEvent::Record(r)) = event {
            let value = String::from_utf8_lossy(r.value.as_deref().unwrap_or_default()).to_string();
            let mut l = shared.borrow_mut();
            if !seen.insert((r.partition, r.offset)) {
                l.fail(format!(
                    "the read_committed reader was handed {OUTPUT}-{}/{} twice",
                    r.partition, r.offset
                ));
            }
            l.read
                .entry(r.partition)
                .or_default()
                .push((r.offset, value));
        }
    }
    c.close(Duration::from_secs(5)).await;
    ctl.finished.set(true);
}
