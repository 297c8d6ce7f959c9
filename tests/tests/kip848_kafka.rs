//! The consumer group protocol of KIP-848 (`group.protocol=consumer`) on Apache Kafka: our
//! members alone and beside Java's on the same protocol, through a member joining, one
//! leaving and one crashing, every record read exactly once; and a pattern subscription
//! (broker-side under this protocol, client-side under the classic one) that picks up a topic
//! created later.
//!
//! The broker runs with a 500 ms heartbeat and a 6 s session (`group.consumer.*`), so a
//! crashed member is fenced within seconds.

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use kafka_tokio::{Consumer, ConsumerEvent, Producer, Record};
use tests::kafka::{owned_by, Cluster, JavaMember};
use tests::tokio_block_on as block_on;

fn cluster() -> &'static Cluster {
    static C: OnceLock<Cluster> = OnceLock::new();
    C.get_or_init(|| {
        Cluster::start_with(
            1,
            "PLAINTEXT",
            &[
                "group.consumer.heartbeat.interval.ms=500",
                "group.consumer.min.heartbeat.interval.ms=500",
                "group.consumer.session.timeout.ms=6000",
                "group.consumer.min.session.timeout.ms=6000",
            ],
        )
    })
}

fn produce(bootstrap: &str, topic: &str, from: usize, to: usize) {
    block_on(async {
        let p = Producer::from_map([("bootstrap.servers", bootstrap)]).unwrap();
        let mut ds = Vec::new();
        for i in from..to {
            ds.push(p.send(Record::new(topic, format!("m{i}"))).await.unwrap());
        }
        for d in ds {
            d.await.unwrap();
        }
        p.close(Duration::from_secs(5)).await;
    })
}

/// What subscribes our member.
#[derive(Clone)]
enum Sub {
    Topic(String),
    Pattern(String),
}

/// One of our members on a thread of its own until `stop`: it records each value it reads,
/// commits what it read before acknowledging a revocation and every 200 ms of quiet, and
/// returns its last assignment.
struct Ours {
    seen: Arc<Mutex<Vec<String>>>,
    /// Its assignment as of its last event.
    owned: Arc<Mutex<BTreeSet<(String, i32)>>>,
    stop: Arc<AtomicBool>,
    thread: std::thread::JoinHandle<BTreeSet<(String, i32)>>,
}

impl Ours {
    fn start(bootstrap: &str, group: &str, sub: Sub, extra: &[(&str, &str)]) -> Ours {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let stop = Arc::new(AtomicBool::new(false));
        let mut settings: Vec<(String, String)> = [
            ("bootstrap.servers", bootstrap),
            ("group.id", group),
            ("auto.offset.reset", "earliest"),
            ("enable.auto.commit", "false"),
        ]
        .iter()
        .chain(extra)
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect();
        settings.sort();
        let owned = Arc::new(Mutex::new(BTreeSet::new()));
        let (s, st, own) = (seen.clone(), stop.clone(), owned.clone());
        let thread = std::thread::spawn(move || {
            block_on(async move {
                let mut consumer = Consumer::from_map(settings).unwrap();
                match sub {
                    Sub::Topic(t) => consumer.subscribe([t]).unwrap(),
                    Sub::Pattern(p) => consumer.subscribe_pattern(&p).unwrap(),
                }
                let mut last = Vec::new();
                while !st.load(Ordering::Relaxed) {
                    let ev =
                        tokio::time::timeout(Duration::from_millis(200), consumer.next_event())
                            .await;
                    match ev {
                        Ok(Ok(ConsumerEvent::Record(r))) => s
                            .lock()
                            .unwrap()
                            .push(String::from_utf8(r.value.unwrap().to_vec()).unwrap()),
                        Ok(Ok(ConsumerEvent::Revoking(_))) => {
                            consumer.commit().await.unwrap();
                            consumer.ack_revocation();
                        }
                        Ok(Ok(_)) => {}
                        Ok(Err(e)) => panic!("our member: {e}"),
                        Err(_) => {
                            let _ = consumer.commit().await;
                        }
                    }
                    last = consumer.assignment();
                    *own.lock().unwrap() = last.iter().map(|(t, p)| (t.to_string(), *p)).collect();
                }
                consumer.commit().await.unwrap();
                consumer.close(Duration::from_secs(10)).await;
                last.into_iter().map(|(t, p)| (t.to_string(), p)).collect()
            })
        });
        Ours {
            seen,
            owned,
            stop,
            thread,
        }
    }

    fn partitions(&self) -> BTreeSet<i32> {
        self.owned.lock().unwrap().iter().map(|(_, p)| *p).collect()
    }

    fn count(&self) -> usize {
        self.seen.lock().unwrap().len()
    }

    /// Stops (commit, leave); its last assignment and every value it read.
    fn stop(self) -> (BTreeSet<(String, i32)>, Vec<String>) {
        self.stop.store(true, Ordering::Relaxed);
        let last = self.thread.join().expect("our member ran");
        let seen = self.seen.lock().unwrap().clone();
        (last, seen)
    }
}

fn values(lines: &[String]) -> Vec<String> {
    lines
        .iter()
        .filter(|l| l.starts_with("record"))
        .map(|l| {
            let hex = l.split('\t').nth(3).unwrap();
            let bytes: Vec<u8> = (0..hex.len())
                .step_by(2)
                .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).unwrap())
                .collect();
            String::from_utf8(bytes).unwrap()
        })
        .collect()
}

fn wait_until(what: &str, secs: u64, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(secs);
    while !done() {
        assert!(Instant::now() < deadline, "timed out waiting: {what}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

const CONSUMER: (&str, &str) = ("group.protocol", "consumer");

/// Our member and Java's on the consumer protocol: a second Java member joins while records
/// flow, the first leaves, then ours is joined by a Java member that crashes (SIGKILL, no
/// leave): the broker fences it after its session and its partitions come back. Every record
/// is read exactly once, and at the end ours and the survivor hold every partition once.
#[test]
fn our_members_and_javas_share_a_consumer_protocol_group() {
    let c = cluster();
    let b = c.bootstrap.as_str();
    let (topic, group) = ("k848-mixed", "g848-mixed");
    c.create_topic(topic, 6, 1, &[]);
    produce(b, topic, 0, 3000);
    let java = ["group.protocol=consumer"];
    let java1 = JavaMember::start(b, group, topic, &java);
    let ours = Ours::start(b, group, Sub::Topic(topic.into()), &[CONSUMER]);
    wait_until("consuming started", 60, || {
        java1.records() + ours.count() >= 1000
    });
    let java2 = JavaMember::start(b, group, topic, &java);
    produce(b, topic, 3000, 4500);
    wait_until("java2 assigned", 30, || !java2.owned().is_empty());
    let lines1 = java1.stop();
    produce(b, topic, 4500, 6000);
    // A third Java member joins, takes partitions, and crashes.
    let java3 = JavaMember::start(b, group, topic, &java);
    wait_until("java3 assigned", 30, || !java3.owned().is_empty());
    let lines3 = java3.crash();
    produce(b, topic, 6000, 7500);
    let total = || {
        values(&lines1).len()
            + values(&lines3).len()
            + values(&java2.lines.lock().unwrap()).len()
            + ours.count()
    };
    // Java3's uncommitted records are read again by their next owner: only what it read
    // and committed counts once. Wait for everything to be read by the living.
    wait_until("everything read", 90, || {
        let mut all: BTreeSet<String> = values(&lines1).into_iter().collect();
        all.extend(values(&java2.lines.lock().unwrap()));
        all.extend(ours.seen.lock().unwrap().iter().cloned());
        all.extend(values(&lines3));
        all.len() >= 7500
    });
    eprintln!("read {} values in all", total());
    // The crashed member's partitions come back once the broker fences it (its session is
    // 6 s): ours and the survivor then hold all six between them.
    wait_until("the crashed member's partitions reassigned", 60, || {
        let (j, o) = (java2.owned(), ours.partitions());
        j.is_disjoint(&o) && j.len() + o.len() == 6
    });
    let java2_owned = java2.owned();
    let (our_last, ours_seen) = ours.stop();
    let lines2 = java2.stop();
    let mut living: Vec<String> = values(&lines1);
    living.extend(values(&lines2));
    living.extend(ours_seen.iter().cloned());
    let crashed: BTreeSet<String> = values(&lines3).into_iter().collect();
    let distinct: BTreeSet<&String> = living.iter().chain(&crashed).collect();
    assert_eq!(distinct.len(), 7500, "every record read");
    // Among the living no record twice, unless the crashed member read it too (it committed
    // after each poll, but a crash can come between a poll and its commit).
    let mut counts = std::collections::BTreeMap::new();
    for v in &living {
        *counts.entry(v).or_insert(0) += 1;
    }
    let twice: Vec<_> = counts.iter().filter(|(_, n)| **n > 1).collect();
    assert!(twice.is_empty(), "read twice by the living: {twice:?}");
    let ours_owned: BTreeSet<i32> = our_last.iter().map(|(_, p)| *p).collect();
    assert!(
        java2_owned.is_disjoint(&ours_owned),
        "{java2_owned:?} {ours_owned:?}"
    );
    assert_eq!(
        java2_owned.len() + ours_owned.len(),
        6,
        "{java2_owned:?} {ours_owned:?}"
    );
    assert!(
        !ours_owned.is_empty(),
        "the uniform assignor shares: {ours_owned:?}"
    );
    let _ = owned_by(&lines2);
}

/// Two of ours alone on the consumer protocol, the second static (`group.instance.id`): it
/// closes and comes back under the same instance id, and the two always split the
/// partitions between them with every record read exactly once.
#[test]
fn our_members_alone_with_a_static_member_returning() {
    let c = cluster();
    let b = c.bootstrap.as_str();
    let (topic, group) = ("k848-ours", "g848-ours");
    c.create_topic(topic, 4, 1, &[]);
    produce(b, topic, 0, 2000);
    let a = Ours::start(b, group, Sub::Topic(topic.into()), &[CONSUMER]);
    let static_member = [CONSUMER, ("group.instance.id", "static-1")];
    let s1 = Ours::start(b, group, Sub::Topic(topic.into()), &static_member);
    wait_until("both reading", 60, || a.count() + s1.count() >= 2000);
    wait_until("both assigned", 60, || {
        !a.partitions().is_empty() && !s1.partitions().is_empty()
    });
    let (s1_last, s1_seen) = s1.stop();
    assert!(!s1_last.is_empty(), "the static member held partitions");
    produce(b, topic, 2000, 3000);
    let s2 = Ours::start(b, group, Sub::Topic(topic.into()), &static_member);
    produce(b, topic, 3000, 4000);
    wait_until("everything read", 60, || {
        s1_seen.len() + a.count() + s2.count() >= 4000
    });
    wait_until("the returning member assigned", 60, || {
        let (x, y) = (a.partitions(), s2.partitions());
        !y.is_empty() && x.is_disjoint(&y) && x.len() + y.len() == 4
    });
    let (s2_last, s2_seen) = s2.stop();
    let (a_last, a_seen) = a.stop();
    let all: Vec<&String> = s1_seen.iter().chain(&s2_seen).chain(&a_seen).collect();
    let distinct: BTreeSet<&&String> = all.iter().collect();
    assert_eq!(distinct.len(), 4000, "every record read");
    assert_eq!(all.len(), 4000, "none twice");
    assert!(s2_last.is_disjoint(&a_last), "{s2_last:?} {a_last:?}");
    assert_eq!(s2_last.len() + a_last.len(), 4, "{s2_last:?} {a_last:?}");
}

/// A pattern subscription picks up a topic created after the member joined: evaluated by the
/// broker under the consumer protocol, matched against the listed topics under the classic
/// one (metadata refreshed every second here).
#[test]
fn a_pattern_subscription_picks_up_a_topic_created_later() {
    let c = cluster();
    let b = c.bootstrap.as_str();
    for protocol in ["consumer", "classic"] {
        let prefix = format!("rx{protocol}");
        c.create_topic(&format!("{prefix}-a"), 2, 1, &[]);
        c.create_topic(&format!("other{protocol}"), 1, 1, &[]);
        produce(b, &format!("{prefix}-a"), 0, 100);
        produce(b, &format!("other{protocol}"), 0, 50);
        let ours = Ours::start(
            b,
            &format!("g-{prefix}"),
            Sub::Pattern(format!("{prefix}-.*")),
            &[
                ("group.protocol", protocol),
                ("metadata.max.age.ms", "1000"),
            ],
        );
        wait_until("the first topic read", 60, || ours.count() >= 100);
        c.create_topic(&format!("{prefix}-b"), 3, 1, &[]);
        produce(b, &format!("{prefix}-b"), 100, 400);
        wait_until("the later topic read", 60, || ours.count() >= 400);
        std::thread::sleep(Duration::from_secs(1));
        let (last, seen) = ours.stop();
        let distinct: BTreeSet<&String> = seen.iter().collect();
        assert_eq!(
            seen.len(),
            400,
            "{protocol}: each record once, none of the other topic"
        );
        assert_eq!(distinct.len(), 400);
        let topics: BTreeSet<&str> = last.iter().map(|(t, _)| t.as_str()).collect();
        assert_eq!(
            topics,
            [format!("{prefix}-a"), format!("{prefix}-b")]
                .iter()
                .map(String::as_str)
                .collect(),
            "{protocol}"
        );
        assert_eq!(last.len(), 5, "{protocol}: every partition of both");
    }
}

/// A remote assignor the broker does not have is refused by the broker (UNSUPPORTED_ASSIGNOR)
/// and surfaces as the consumer's error, within seconds: proof too that the member speaks
/// ConsumerGroupHeartbeat (the classic protocol has no such field).
#[test]
fn an_unknown_remote_assignor_is_a_clear_error() {
    let c = cluster();
    let b = c.bootstrap.as_str();
    c.create_topic("k848-assignor", 1, 1, &[]);
    let err = block_on(async {
        let mut consumer = Consumer::from_map([
            ("bootstrap.servers", b),
            ("group.id", "g848-assignor"),
            ("group.protocol", "consumer"),
            ("group.remote.assignor", "no-such-assignor"),
        ])
        .unwrap();
        consumer.subscribe(["k848-assignor"]).unwrap();
        tokio::time::timeout(Duration::from_secs(30), consumer.next_event())
            .await
            .expect("an answer within 30 s")
            .expect_err("the group refused")
    });
    let text = err.to_string();
    assert!(text.contains("UNSUPPORTED_ASSIGNOR"), "{text}");
}
