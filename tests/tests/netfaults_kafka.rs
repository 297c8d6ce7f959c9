//! Network faults and starvation on a real 3-node Apache Kafka cluster whose nodes run in
//! network namespaces of their own (`scripts/kafka start --netns`: an address per node, a veth
//! pair and a bridge to this process's side), with librdkafka beside us under the very same
//! faults, at the same moments, on the same cluster.
//!
//! Writers, each into its own topic (6 partitions, replication 3, `min.insync.replicas=2`),
//! numbered records to partition `i % 6` at `NETFAULT_RATE` a second (default 200), acks=all
//! and idempotent: ours with the defaults, ours with `request.timeout.ms=1000` and
//! `delivery.timeout.ms=3000` (where the duplicates came from), and librdkafka with each
//! of the two. A group member of ours and one of librdkafka's read our and librdkafka's default
//! topics, committing every 500 ms, while a watcher reads both groups' committed offsets; the
//! exactly-once pipeline of `tests::pipeline` runs on its own topics.
//!
//! The faults, one after the other, each `NETFAULT_SECS` long (default 8), then healed:
//! - starvation (`NETFAULT_BUSY` busy loops, default 12) with a partition leader SIGSTOPped for
//!   the first 6 s;
//! - the leader's link shaped to 200 kbit/s both ways (tbf, 300 ms of queue: delay and loss);
//!   this kernel has no netem, and tc no actions: the drops below are an htb class whose pfifo
//!   holds nothing, picked by u32 (`scripts/kafka net`);
//! - the leader cut off from the client (it still reaches its peers);
//! - the leader cut off from its peers (the controller quorum, its followers), the client still
//!   reaching it: an asymmetric partition, 1.5 times as long, past `broker.session.timeout.ms`;
//! - the group coordinator's link down: its connections hang, nothing closes them;
//! - starvation alone.
//!
//! After each, until everything sent before the heal resolved: the time from healing to the
//! last delivery. At the end, asserted for our writers: every record resolved, none written
//! twice, none acknowledged and missing or elsewhere, none failed as not sent and present,
//! each partition in send order; with the defaults, nothing failed at all and every fault's
//! records resolved within `NETFAULT_RECOVERY_SECS` (default 90) of its heal; our member read
//! everything; no committed offset moved back; the pipeline exactly once. librdkafka's figures
//! are printed beside ours, not asserted (a peer, not the code under test). The table goes to
//! stderr and to `target/netfaults.md`. `scripts/soak` runs it longer and faster.

use std::collections::{BTreeMap, BTreeSet};
use std::process::{Child, Command};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use kafka_tokio::{Admin, Certainty, Consumer, ConsumerEvent, Producer, Record, StartFrom};
use rdkafka::config::ClientConfig;
use rdkafka::consumer::{BaseConsumer, Consumer as _};
use rdkafka::message::Message as _;
use rdkafka::producer::{
    BaseRecord, DeliveryResult, Producer as _, ProducerContext, ThreadedProducer,
};
use rdkafka::ClientContext;
use tests::kafka::{peer, Cluster};
use tests::pipeline::{Names, Pipeline};

const PARTITIONS: i32 = 6;

/// A record's outcome.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Outcome {
    /// Acknowledged, at this partition and offset (no offset for an answered duplicate).
    Acked(i32, Option<i64>),
    /// Failed; `maybe_written` unless the client said it was not written.
    Failed { maybe_written: bool },
}

/// One record: when it was sent, during which phase, and when and how it resolved.
#[derive(Clone, Debug)]
struct Rec {
    sent: Instant,
    phase: usize,
    done: Option<(Instant, Outcome)>,
}

type Recs = Arc<Mutex<Vec<Rec>>>;

/// What every writer shares: the phase new records belong to, and whether to go on.
#[derive(Default)]
struct Shared {
    phase: AtomicUsize,
    stop: AtomicBool,
}

struct Writer {
    name: &'static str,
    topic: String,
    ours: bool,
    /// With the defaults (nothing may fail).
    defaults: bool,
    recs: Recs,
    thread: Option<JoinHandle<()>>,
}

impl Writer {
    fn unresolved_before(&self, t: Instant) -> usize {
        self.recs
            .lock()
            .unwrap()
            .iter()
            .filter(|r| r.sent < t && r.done.is_none())
            .count()
    }
}

fn value(i: usize) -> String {
    format!("r{i:09}")
}

/// Our idempotent producer with `settings`, at `rate` records a second.
fn ours(
    bootstrap: &str,
    topic: &str,
    settings: &[(&str, &str)],
    rate: u64,
    sh: Arc<Shared>,
) -> (Recs, JoinHandle<()>) {
    let recs: Recs = Arc::default();
    let mut config: Vec<(String, String)> = vec![
        ("bootstrap.servers".into(), bootstrap.into()),
        ("linger.ms".into(), "5".into()),
    ];
    config.extend(settings.iter().map(|(k, v)| ((*k).into(), (*v).into())));
    let (topic, recs2) = (topic.to_owned(), recs.clone());
    let thread = std::thread::spawn(move || {
        tests::tokio_runtime().block_on(async move {
            let p = Producer::from_map(config).expect("config");
            let (tx, mut rx) =
                tokio::sync::mpsc::unbounded_channel::<(usize, kafka_tokio::Delivery)>();
            let resolved = recs2.clone();
            let resolver = tokio::spawn(async move {
                while let Some((i, d)) = rx.recv().await {
                    let o = match d.await {
                        Ok(d) => Outcome::Acked(d.partition, d.offset),
                        Err(f) => Outcome::Failed {
                            maybe_written: f.certainty != Certainty::NotSent,
                        },
                    };
                    resolved.lock().unwrap()[i].done = Some((Instant::now(), o));
                }
            });
            let began = tokio::time::Instant::now();
            let mut i = 0usize;
            while !sh.stop.load(Ordering::Relaxed) {
                let r = Record::new(topic.as_str(), value(i)).partition(i as i32 % PARTITIONS);
                recs2.lock().unwrap().push(Rec {
                    sent: Instant::now(),
                    phase: sh.phase.load(Ordering::Relaxed),
                    done: None,
                });
                let d = p.send(r).await.expect("send");
                tx.send((i, d)).unwrap();
                i += 1;
                let due = began + Duration::from_secs_f64(i as f64 / rate as f64);
                tokio::time::sleep_until(due).await;
            }
            drop(tx);
            resolver.await.unwrap();
            p.close(Duration::from_secs(30)).await;
        })
    });
    (recs, thread)
}

/// librdkafka's delivery reports, into the records.
struct Reports(Recs);

impl ClientContext for Reports {}

impl ProducerContext for Reports {
    type DeliveryOpaque = Box<usize>;
    fn delivery(&self, result: &DeliveryResult<'_>, i: Box<usize>) {
        let o = match result {
            Ok(m) => Outcome::Acked(m.partition(), Some(m.offset())),
            Err((_, m)) => {
                // SAFETY: `m` is the message librdkafka hands this callback, valid during it.
                let status = unsafe { rdkafka::bindings::rd_kafka_message_status(m.ptr()) };
                Outcome::Failed {
                    maybe_written: status
                        != rdkafka::bindings::rd_kafka_msg_status_t::RD_KAFKA_MSG_STATUS_NOT_PERSISTED,
                }
            }
        };
        self.0.lock().unwrap()[*i].done = Some((Instant::now(), o));
    }
}

/// librdkafka's idempotent producer with `settings`, at `rate` records a second.
fn librdkafka(
    bootstrap: &str,
    topic: &str,
    settings: &[(&str, &str)],
    rate: u64,
    sh: Arc<Shared>,
) -> (Recs, JoinHandle<()>) {
    let recs: Recs = Arc::default();
    let mut config = ClientConfig::new();
    config
        .set("bootstrap.servers", bootstrap)
        .set("enable.idempotence", "true")
        .set("linger.ms", "5");
    for (k, v) in settings {
        config.set(*k, *v);
    }
    let producer: ThreadedProducer<Reports> = config
        .create_with_context(Reports(recs.clone()))
        .expect("a librdkafka producer");
    let (topic, recs2) = (topic.to_owned(), recs.clone());
    let thread = std::thread::spawn(move || {
        let began = Instant::now();
        let mut i = 0usize;
        while !sh.stop.load(Ordering::Relaxed) {
            recs2.lock().unwrap().push(Rec {
                sent: Instant::now(),
                phase: sh.phase.load(Ordering::Relaxed),
                done: None,
            });
            let v = value(i);
            let mut r = BaseRecord::with_opaque_to(topic.as_str(), Box::new(i))
                .payload(v.as_str())
                .partition(i as i32 % PARTITIONS);
            loop {
                match producer.send::<(), str>(r) {
                    Ok(()) => break,
                    Err((_, back)) => {
                        // The queue is full: wait as our `send` would.
                        r = back;
                        std::thread::sleep(Duration::from_millis(10));
                    }
                }
            }
            i += 1;
            let due = began + Duration::from_secs_f64(i as f64 / rate as f64);
            if let Some(wait) = due.checked_duration_since(Instant::now()) {
                std::thread::sleep(wait);
            }
        }
        let _ = producer.flush(Duration::from_secs(330));
    });
    (recs, thread)
}

/// What a group member read, by (partition, offset).
type Consumed = Arc<Mutex<BTreeSet<(i32, i64)>>>;

fn our_member(
    bootstrap: &str,
    topic: &str,
    group: &str,
    stop: Arc<AtomicBool>,
) -> (Consumed, JoinHandle<()>) {
    let consumed: Consumed = Arc::default();
    let (bootstrap, topic, group, c2) = (
        bootstrap.to_owned(),
        topic.to_owned(),
        group.to_owned(),
        consumed.clone(),
    );
    let thread = std::thread::spawn(move || {
        tests::tokio_runtime().block_on(async move {
            let mut c = Consumer::from_map([
                ("bootstrap.servers", bootstrap.as_str()),
                ("group.id", group.as_str()),
                ("auto.offset.reset", "earliest"),
                ("auto.commit.interval.ms", "500"),
            ])
            .unwrap();
            c.subscribe([topic.as_str()]).unwrap();
            while !stop.load(Ordering::Relaxed) {
                match tokio::time::timeout(Duration::from_millis(200), c.next_event()).await {
                    Ok(Ok(ConsumerEvent::Record(r))) => {
                        c2.lock().unwrap().insert((r.partition, r.offset));
                    }
                    Ok(Ok(_)) | Err(_) => {}
                    Ok(Err(e)) => eprintln!("  our member: {e}"),
                }
            }
            c.close(Duration::from_secs(10)).await;
        })
    });
    (consumed, thread)
}

fn librdkafka_member(
    bootstrap: &str,
    topic: &str,
    group: &str,
    stop: Arc<AtomicBool>,
) -> (Consumed, JoinHandle<()>) {
    let consumed: Consumed = Arc::default();
    let c: BaseConsumer = ClientConfig::new()
        .set("bootstrap.servers", bootstrap)
        .set("group.id", group)
        .set("auto.offset.reset", "earliest")
        .set("auto.commit.interval.ms", "500")
        .create()
        .expect("a librdkafka consumer");
    c.subscribe(&[topic]).expect("subscribe");
    let c2 = consumed.clone();
    let thread = std::thread::spawn(move || {
        while !stop.load(Ordering::Relaxed) {
            if let Some(Ok(m)) = c.poll(Duration::from_millis(200)) {
                c2.lock().unwrap().insert((m.partition(), m.offset()));
            }
        }
        c.unsubscribe();
    });
    (consumed, thread)
}

/// Reads the groups' committed offsets every 300 ms; returns, per group, each step back.
fn watch_commits(
    bootstrap: &str,
    topics: &[(&str, &str)],
    stop: Arc<AtomicBool>,
) -> JoinHandle<Vec<String>> {
    let bootstrap = bootstrap.to_owned();
    let topics: Vec<(String, String)> = topics
        .iter()
        .map(|(g, t)| ((*g).into(), (*t).into()))
        .collect();
    std::thread::spawn(move || {
        tests::tokio_runtime().block_on(async move {
            let mut back = Vec::new();
            let mut last: BTreeMap<(String, i32), i64> = BTreeMap::new();
            let consumers: Vec<_> = topics
                .iter()
                .map(|(g, t)| {
                    let c = Consumer::from_map([
                        ("bootstrap.servers", bootstrap.as_str()),
                        ("group.id", g.as_str()),
                        ("default.api.timeout.ms", "5000"),
                    ])
                    .unwrap();
                    (g.clone(), t.clone(), c)
                })
                .collect();
            while !stop.load(Ordering::Relaxed) {
                for (g, t, c) in &consumers {
                    let tps: Vec<(String, i32)> = (0..PARTITIONS).map(|p| (t.clone(), p)).collect();
                    if let Ok(list) = c.committed_offsets(tps).await {
                        for ((_, p), o) in list {
                            if let Some(o) = o {
                                let before = last.insert((g.clone(), p), o).unwrap_or(0);
                                if o < before {
                                    back.push(format!("{g} partition {p}: {before} -> {o}"));
                                }
                            }
                        }
                    }
                }
                tokio::time::sleep(Duration::from_millis(300)).await;
            }
            back
        })
    })
}

/// Busy loops, one process each, until dropped.
struct Busy(Vec<Child>);

impl Busy {
    fn start(n: u64) -> Busy {
        Busy(
            (0..n)
                .map(|_| {
                    Command::new("sh")
                        .args(["-c", "while :; do :; done"])
                        .spawn()
                        .expect("a busy loop (sh)")
                })
                .collect(),
        )
    }
}

impl Drop for Busy {
    fn drop(&mut self) {
        for c in &mut self.0 {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// The leader of `topic`'s partition 0 (asked of our admin client while the cluster is whole).
fn leader_of(bootstrap: &str, topic: &str) -> usize {
    tests::tokio_runtime().block_on(async {
        let admin = Admin::from_map([("bootstrap.servers", bootstrap)]).unwrap();
        loop {
            if let Ok(md) = admin.metadata(Some(&[topic])).await {
                let leader = md.topics.first().and_then(|t| {
                    t.partitions
                        .iter()
                        .find(|p| p.partition == 0)
                        .and_then(|p| p.leader)
                });
                if let Some(l) = leader {
                    return l as usize;
                }
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    })
}

fn coordinator_of(bootstrap: &str, group: &str) -> usize {
    for _ in 0..100 {
        let (ok, out, _) = peer(&["coordinator", bootstrap, group], None);
        if let Some(id) = ok.then(|| out.trim().parse().ok()).flatten() {
            return id;
        }
        std::thread::sleep(Duration::from_millis(300));
    }
    panic!("the Java admin could not find {group}'s coordinator");
}

/// Every record of `topic`, value → where it is (read_uncommitted, from the start).
fn read_log(bootstrap: &str, topic: &str) -> BTreeMap<String, Vec<(i32, i64)>> {
    tests::tokio_runtime().block_on(async {
        let mut c = Consumer::from_map([("bootstrap.servers", bootstrap)]).unwrap();
        c.assign((0..PARTITIONS).map(|p| (topic, p)), StartFrom::Earliest)
            .unwrap();
        let mut log: BTreeMap<String, Vec<(i32, i64)>> = BTreeMap::new();
        let mut ended = BTreeSet::new();
        while ended.len() < PARTITIONS as usize {
            match tokio::time::timeout(Duration::from_secs(60), c.next_event())
                .await
                .expect("reading the log back within 60 s")
            {
                Ok(ConsumerEvent::Record(r)) => {
                    ended.remove(&r.partition);
                    let v = String::from_utf8(r.value.unwrap().to_vec()).unwrap();
                    log.entry(v).or_default().push((r.partition, r.offset));
                }
                Ok(ConsumerEvent::EndOfPartition { partition, .. }) => {
                    ended.insert(partition);
                }
                Ok(_) => {}
                Err(e) => panic!("reading the log back: {e}"),
            }
        }
        log
    })
}

/// One writer's figures for one phase.
#[derive(Default, Debug)]
struct Figures {
    sent: usize,
    acked: usize,
    failed_maybe: usize,
    failed_not_sent: usize,
    present: usize,
    duplicated: usize,
    /// Acknowledged and not in the log where acknowledged (or not at all).
    lost: usize,
    /// Failed as not sent, yet in the log.
    dishonest: usize,
    unresolved: usize,
    out_of_order: usize,
    /// The first few lost records: what was acknowledged, and where the log has them.
    lost_examples: Vec<String>,
}

fn figures(recs: &[Rec], log: &BTreeMap<String, Vec<(i32, i64)>>, phases: usize) -> Vec<Figures> {
    let mut f: Vec<Figures> = (0..phases).map(|_| Figures::default()).collect();
    let mut last: BTreeMap<i32, i64> = BTreeMap::new();
    for (i, r) in recs.iter().enumerate() {
        let x = &mut f[r.phase];
        let copies = log.get(&value(i)).map_or(&[][..], Vec::as_slice);
        x.sent += 1;
        x.present += usize::from(!copies.is_empty());
        x.duplicated += usize::from(copies.len() > 1);
        match r.done.map(|d| d.1) {
            None => x.unresolved += 1,
            Some(Outcome::Acked(p, offset)) => {
                x.acked += 1;
                let at_offset = match offset {
                    Some(o) => copies.contains(&(p, o)),
                    None => copies.iter().any(|c| c.0 == p),
                };
                if !at_offset {
                    x.lost += 1;
                    if x.lost_examples.len() < 3 {
                        x.lost_examples.push(format!(
                            "record {i} acknowledged at {p}/{offset:?}, in the log at {copies:?}"
                        ));
                    }
                }
                if let Some(o) = offset {
                    let before = last.insert(p, o).unwrap_or(-1);
                    x.out_of_order += usize::from(o <= before);
                }
            }
            Some(Outcome::Failed { maybe_written }) => {
                if maybe_written {
                    x.failed_maybe += 1;
                } else {
                    x.failed_not_sent += 1;
                    x.dishonest += usize::from(!copies.is_empty());
                }
            }
        }
    }
    f
}

/// The faults, in order.
#[derive(Clone, Copy, Debug)]
enum Fault {
    StarveAndPause,
    Slow,
    CutFromClient,
    CutFromPeers,
    CoordinatorLinkDown,
    Starve,
}

impl Fault {
    const ALL: [Fault; 6] = [
        Fault::StarveAndPause,
        Fault::Slow,
        Fault::CutFromClient,
        Fault::CutFromPeers,
        Fault::CoordinatorLinkDown,
        Fault::Starve,
    ];
}

#[test]
fn producers_groups_and_transactions_through_network_faults_and_starvation() {
    let rate = tests::env_u64("NETFAULT_RATE", 200);
    let secs = tests::env_u64("NETFAULT_SECS", 8);
    let busy = tests::env_u64("NETFAULT_BUSY", 12);
    let rounds = tests::env_u64("NETFAULT_ROUNDS", 1) as usize;
    let recovery = Duration::from_secs(tests::env_u64("NETFAULT_RECOVERY_SECS", 90));
    let began = Instant::now();
    let cluster = Cluster::start_netns(3, &[]);
    let bootstrap = cluster.bootstrap.clone();
    eprintln!("3 nodes in their own network namespaces: {bootstrap}");
    let topics = ["nf-ours", "nf-ours-short", "nf-rdk", "nf-rdk-short"];
    for t in topics {
        cluster.create_topic(t, PARTITIONS as u32, 3, &["min.insync.replicas=2"]);
    }
    for t in ["nf-eos-in", "nf-eos-out"] {
        cluster.create_topic(t, 3, 3, &["min.insync.replicas=2"]);
    }
    let sh = Arc::new(Shared::default());
    let short_ours = [
        ("request.timeout.ms", "1000"),
        ("delivery.timeout.ms", "3000"),
    ];
    let short_rdk = [
        ("request.timeout.ms", "1000"),
        ("message.timeout.ms", "3000"),
    ];
    let mut writers = Vec::new();
    for (name, topic, is_ours, defaults) in [
        ("ours", topics[0], true, true),
        ("ours, 1 s/3 s timeouts", topics[1], true, false),
        ("librdkafka", topics[2], false, true),
        ("librdkafka, 1 s/3 s timeouts", topics[3], false, false),
    ] {
        let settings: &[(&str, &str)] = match (is_ours, defaults) {
            (_, true) => &[],
            (true, false) => &short_ours,
            (false, false) => &short_rdk,
        };
        let (recs, thread) = if is_ours {
            ours(&bootstrap, topic, settings, rate, sh.clone())
        } else {
            librdkafka(&bootstrap, topic, settings, rate, sh.clone())
        };
        writers.push(Writer {
            name,
            topic: topic.to_owned(),
            ours: is_ours,
            defaults,
            recs,
            thread: Some(thread),
        });
    }
    let stop_members = Arc::new(AtomicBool::new(false));
    let (our_read, our_member) =
        our_member(&bootstrap, topics[0], "nf-ours-g", stop_members.clone());
    let (rdk_read, rdk_member) =
        librdkafka_member(&bootstrap, topics[2], "nf-rdk-g", stop_members.clone());
    let watcher = watch_commits(
        &bootstrap,
        &[("nf-ours-g", topics[0]), ("nf-rdk-g", topics[2])],
        stop_members.clone(),
    );
    let pipe = Pipeline::start(
        &bootstrap,
        Names {
            input: "nf-eos-in".into(),
            output: "nf-eos-out".into(),
            group: "nf-eos".into(),
            txn_prefix: "nf-eos".into(),
            partitions: 3,
        },
        2,
    );
    pipe.progress("start", 200, Duration::from_secs(120));

    // Phase 0 is the start; phase k the k-th fault, from its start until its records resolved.
    let mut phases = vec!["before the faults".to_owned()];
    // Per phase: per writer, the time from healing to the last delivery; and the pipeline's.
    let mut healing: Vec<(Vec<Option<Duration>>, Option<Duration>)> = vec![(vec![], None)];
    for round in 0..rounds {
        for fault in Fault::ALL {
            let leader = leader_of(&bootstrap, topics[0]);
            let fault_secs = Duration::from_secs(secs);
            let what = match fault {
                Fault::StarveAndPause => {
                    format!("{busy} busy loops, node {leader} (a leader) SIGSTOPped for 6 s")
                }
                Fault::Slow => format!("node {leader}'s link at 200 kbit/s (tbf)"),
                Fault::CutFromClient => format!("node {leader} (a leader) cut off from the client"),
                Fault::CutFromPeers => {
                    format!("node {leader} (a leader) cut off from its peers, not from the client")
                }
                Fault::CoordinatorLinkDown => {
                    format!(
                        "node {}'s link down (the group coordinator)",
                        coordinator_of(&bootstrap, "nf-ours-g")
                    )
                }
                Fault::Starve => format!("{busy} busy loops"),
            };
            let what = if rounds > 1 {
                format!("{what} (round {})", round + 1)
            } else {
                what
            };
            eprintln!("fault: {what}");
            phases.push(what.clone());
            sh.phase.store(phases.len() - 1, Ordering::Relaxed);
            let node = leader.to_string();
            let healed = match fault {
                Fault::StarveAndPause | Fault::Starve => {
                    let loops = Busy::start(busy);
                    if matches!(fault, Fault::StarveAndPause) {
                        cluster.pause(leader);
                        std::thread::sleep(Duration::from_secs(6));
                        cluster.resume(leader);
                        std::thread::sleep(fault_secs.saturating_sub(Duration::from_secs(6)));
                    } else {
                        std::thread::sleep(fault_secs);
                    }
                    drop(loops);
                    Instant::now()
                }
                Fault::Slow
                | Fault::CutFromClient
                | Fault::CutFromPeers
                | Fault::CoordinatorLinkDown => {
                    let coordinator = coordinator_of(&bootstrap, "nf-ours-g").to_string();
                    let (args, long): (Vec<&str>, bool) = match fault {
                        Fault::Slow => (vec!["slow", &node, "200kbit"], false),
                        Fault::CutFromClient => (vec!["isolate", &node, "client"], false),
                        Fault::CutFromPeers => (vec!["isolate", &node, "peers"], true),
                        _ => (vec!["cut", &coordinator], false),
                    };
                    cluster.net(&args);
                    std::thread::sleep(if long { fault_secs * 3 / 2 } else { fault_secs });
                    cluster.net(&["heal"]);
                    Instant::now()
                }
            };
            // Until everything sent before the heal resolved (or the limit).
            let deadline = healed + recovery;
            let mut last = vec![None; writers.len()];
            loop {
                for (k, w) in writers.iter().enumerate() {
                    if last[k].is_none() && w.unresolved_before(healed) == 0 {
                        let recs = w.recs.lock().unwrap();
                        let latest = recs
                            .iter()
                            .filter(|r| r.sent < healed)
                            .filter_map(|r| r.done.map(|d| d.0))
                            .max()
                            .unwrap_or(healed);
                        last[k] = Some(latest.saturating_duration_since(healed));
                    }
                }
                if last.iter().all(Option::is_some) || Instant::now() > deadline {
                    break;
                }
                std::thread::sleep(Duration::from_millis(50));
            }
            let pipeline = pipe
                .wait_for(50, recovery.saturating_sub(healed.elapsed()))
                .ok()
                .map(|_| healed.elapsed());
            for (w, l) in writers.iter().zip(&last) {
                eprintln!(
                    "  {}: {}",
                    w.name,
                    l.map_or(
                        format!("records sent before the heal still unresolved after {recovery:?}"),
                        |d| format!(
                            "everything sent before the heal resolved {:.1} s after it",
                            d.as_secs_f64()
                        )
                    )
                );
            }
            eprintln!(
                "  the pipeline: {}",
                pipeline.map_or("committed nothing more".to_owned(), |d| format!(
                    "committed more {:.1} s after the heal",
                    d.as_secs_f64()
                ))
            );
            healing.push((last, pipeline));
        }
    }
    sh.phase.store(0, Ordering::Relaxed);
    std::thread::sleep(Duration::from_secs(2));
    sh.stop.store(true, Ordering::Relaxed);
    for w in &mut writers {
        w.thread.take().unwrap().join().expect("a writer");
    }

    // The logs, and the figures.
    let mut report = String::new();
    report.push_str(&format!(
        "Apache Kafka {}, 3 nodes in network namespaces, {rate} records/s per writer, faults of {secs} s\n\n",
        tests::kafka::version()
    ));
    report.push_str("| fault | writer | sent | acknowledged | failed (may be written / not sent) | present | duplicated | lost | heal → last delivery |\n|---|---|---|---|---|---|---|---|---|\n");
    let mut logs = Vec::new();
    let mut problems = Vec::new();
    for (k, w) in writers.iter().enumerate() {
        let log = read_log(&bootstrap, &w.topic);
        let recs = w.recs.lock().unwrap();
        let f = figures(&recs, &log, phases.len());
        for (phase, x) in f.iter().enumerate() {
            let heal = healing[phase].0.get(k).copied().flatten();
            report.push_str(&format!(
                "| {} | {} | {} | {} | {} / {} | {} | {} | {} | {} |\n",
                phases[phase],
                w.name,
                x.sent,
                x.acked,
                x.failed_maybe,
                x.failed_not_sent,
                x.present,
                x.duplicated,
                x.lost,
                match (phase, heal) {
                    (0, _) => "-".to_owned(),
                    (_, Some(d)) => format!("{:.1} s", d.as_secs_f64()),
                    (_, None) => format!("> {} s", recovery.as_secs()),
                }
            ));
            for e in &x.lost_examples {
                eprintln!("  {}, {}: {e}", w.name, phases[phase]);
            }
            if w.ours {
                let at = format!("{}, {}", w.name, phases[phase]);
                if x.unresolved > 0 {
                    problems.push(format!("{at}: {} records never resolved", x.unresolved));
                }
                if x.duplicated > 0 {
                    problems.push(format!("{at}: {} records written twice", x.duplicated));
                }
                if x.lost > 0 {
                    problems.push(format!("{at}: {} acknowledged records missing", x.lost));
                }
                if x.dishonest > 0 {
                    problems.push(format!(
                        "{at}: {} records failed as not sent are in the log",
                        x.dishonest
                    ));
                }
                if x.out_of_order > 0 {
                    problems.push(format!(
                        "{at}: {} records out of send order",
                        x.out_of_order
                    ));
                }
                if w.defaults && x.failed_maybe + x.failed_not_sent > 0 {
                    problems.push(format!(
                        "{at}: {} records failed with the default timeouts",
                        x.failed_maybe + x.failed_not_sent
                    ));
                }
                if w.defaults && phase > 0 && heal.is_none() {
                    problems.push(format!(
                        "{at}: not everything resolved within {recovery:?} of the heal"
                    ));
                }
            }
        }
        logs.push(log);
    }
    // The members catch up with what the log holds.
    let deadline = Instant::now() + Duration::from_secs(60);
    let want = |log: &BTreeMap<String, Vec<(i32, i64)>>| log.values().map(Vec::len).sum::<usize>();
    while our_read.lock().unwrap().len() < want(&logs[0]) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(200));
    }
    while rdk_read.lock().unwrap().len() < want(&logs[2]) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(200));
    }
    stop_members.store(true, Ordering::Relaxed);
    our_member.join().unwrap();
    rdk_member.join().unwrap();
    let back = watcher.join().unwrap();
    let (ours_read, rdk_read) = (
        our_read.lock().unwrap().len(),
        rdk_read.lock().unwrap().len(),
    );
    if ours_read < want(&logs[0]) {
        problems.push(format!(
            "our group member read {ours_read} of {} records",
            want(&logs[0])
        ));
    }
    if back.iter().any(|b| b.starts_with("nf-ours-g")) {
        problems.push(format!("committed offsets moved back: {back:?}"));
    }
    report.push_str(&format!(
        "\nGroup members: ours read {ours_read} of {} records, librdkafka's {rdk_read} of {}; committed offsets moved back: {}.\n",
        want(&logs[0]),
        want(&logs[2]),
        if back.is_empty() { "never".to_owned() } else { back.join(", ") }
    ));
    let s = pipe.finish(Duration::from_secs(120));
    let pipe_heal: Vec<String> = healing
        .iter()
        .skip(1)
        .map(|(_, d)| d.map_or("-".into(), |d| format!("{:.1}", d.as_secs_f64())))
        .collect();
    report.push_str(&format!(
        "The exactly-once pipeline: {} inputs, {} outputs read_committed, each input once; {} transactions committed, {} aborted ({} member restarts); committing again after each heal within {} s.\n",
        s.seeded, s.outputs, s.txns, s.aborts, s.restarts, pipe_heal.join(" / ")
    ));
    report.push_str(&format!("\nIn {:.0} s.\n", began.elapsed().as_secs_f64()));
    eprintln!("\n{report}");
    let out = concat!(env!("CARGO_MANIFEST_DIR"), "/../target/netfaults.md");
    let _ = std::fs::write(out, &report);
    assert!(
        problems.is_empty(),
        "under the network faults: {problems:#?}"
    );
}
