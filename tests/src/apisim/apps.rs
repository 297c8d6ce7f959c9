//! The simulated applications, written against the user API exactly as users write them:
//! producers that await some deliveries, collect others in tasks of their own, hold one for
//! the whole run and drop a few; consumer-group members that read events and batches, commit
//! by hand or automatically, seek, pause, stall past `max.poll.interval.ms`, wait in
//! `next_event` longer than it, close, or are dropped. Each checks what it is handed against
//! what it owns, and notes everything in the shared [`Ledger`].

use std::cell::{Cell, RefCell};
use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::rc::Rc;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures_util::future::{select, Either};
use kafka_driver::{
    ConsumeError, Consumer, ConsumerEvent, Delivered, Delivery, Failed, Producer, Record,
    SendError, StartFrom, Topic,
};

use super::operator::Known;
use super::readers::OwnGroup;
use crate::sim::apps::Dice;
use crate::sim::Failure;
use crate::simrt::{self, SimRuntime};
use kafka_core::Instant;

/// What happened to one record a producer sent.
#[derive(Debug, Clone)]
pub enum Sent {
    /// Sent; its outcome is awaited.
    Pending,
    /// Its `Delivery` was dropped: nobody learns the outcome.
    Dropped,
    /// `send` refused it (nothing was queued).
    Refused(String),
    /// Its outcome.
    Resolved(Result<Delivered, Failed>),
}

/// Everything the applications saw.
#[derive(Debug, Default)]
pub struct Ledger {
    /// Per producer: record number -> (value, what happened).
    pub sent: BTreeMap<usize, BTreeMap<u64, (String, Sent)>>,
    /// Producers whose task finished (flushed, every delivery it kept resolved).
    pub producers_done: BTreeSet<usize>,
    /// Per partition: offsets handed to some member.
    pub handed: BTreeMap<i32, BTreeSet<i64>>,
    /// Records handed to members.
    pub consumed: u64,
    /// Stalls past `max.poll.interval.ms`, and long waits in `next_event`.
    pub stalls: u64,
    /// Long waits in `next_event`.
    pub long_waits: u64,
    /// Manual commits, and those that succeeded.
    pub commits: (u64, u64),
    /// Seeks back.
    pub seeks: u64,
    /// Per partition: offsets members seeked back to, each allowing one backward move of
    /// the group's committed offset (to no lower).
    pub rewinds: BTreeMap<i32, Vec<i64>>,
    /// Members dropped without `close`.
    pub drops: u64,
    /// Group "a" of the assigning readers.
    pub own: OwnGroup,
    /// Per partition: offsets handed to the outsider (assigning under "g") and not yet
    /// covered by a commit of its that the group accepted.
    pub outsider_handed: BTreeMap<i32, BTreeSet<i64>>,
    /// Commits of the outsider refused as `GroupInUse`.
    pub refused_outsiders: u64,
    /// Commits of the outsider accepted while "g" was empty.
    pub accepted_outsiders: u64,
    /// What the operator was told of the topics it created.
    pub topics: Known,
    /// The operator's task finished.
    pub operator_done: bool,
    /// The intruder's task finished (runs with SASL only).
    pub intruder_done: bool,
    /// Admin calls made, and those answered (not timed out).
    pub admin_calls: (u64, u64),
    /// Per partition of "t" that has been without a leader: `None` while it still is, else
    /// when it got one back. A reader may be told "no leader known" only near such a time.
    pub leaderless: BTreeMap<i32, Option<Instant>>,
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
}

/// The shared ledger.
pub type Shared = Rc<RefCell<Ledger>>;

thread_local! {
    static SECURITY: RefCell<Vec<(String, String)>> = const { RefCell::new(Vec::new()) };
}

/// This run's security settings (`security.protocol`, SASL, the CA), which every client
/// adds to its own; empty for PLAINTEXT.
pub fn security() -> Vec<(String, String)> {
    SECURITY.with(|s| s.borrow().clone())
}

/// Sets this run's security settings (see [`security`]).
pub fn set_security(settings: Vec<(String, String)>) {
    SECURITY.with(|s| *s.borrow_mut() = settings);
}

/// The bootstrap list of the simulated cluster.
pub fn bootstrap() -> String {
    crate::sim::apps::bootstrap(3)
}

/// A producer application: sends numbered records until `stop_at`, then flushes, awaits
/// everything it kept, and closes (or drops) the producer.
pub async fn producer(
    id: usize,
    extra: Vec<(String, String)>,
    seed: u64,
    stop_at: kafka_core::Instant,
    shared: Shared,
) {
    let mut settings: Vec<(String, String)> = [
        ("bootstrap.servers", bootstrap().as_str()),
        ("linger.ms", "5"),
        ("batch.size", "4096"),
        ("buffer.memory", "32768"),
        ("max.block.ms", "2000"),
        ("delivery.timeout.ms", "15000"),
        ("request.timeout.ms", "3000"),
        ("retry.backoff.ms", "50"),
        ("reconnect.backoff.ms", "20"),
        ("reconnect.backoff.max.ms", "500"),
        ("metadata.max.age.ms", "5000"),
        ("random.seed", &seed.to_string()),
        ("client.id", &format!("producer-{id}")),
    ]
    .iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect();
    settings.extend(security());
    settings.extend(extra);
    let p = Producer::<SimRuntime>::from_map(settings).expect("valid simulation settings");
    shared.borrow_mut().sent.entry(id).or_default();
    let mut dice = Dice::new(seed ^ 0x0070_7264 ^ id as u64);
    let topic = Topic::from("t");
    let mut held: VecDeque<(u64, Delivery)> = VecDeque::new();
    // One delivery is held, neither awaited nor dropped, for the whole run.
    let mut pinned: Option<(u64, Delivery)> = None;
    let mut n = 0u64;
    while simrt::now() < stop_at {
        simrt::sleep(Duration::from_micros(200 + dice.below(3000))).await;
        let value = format!("p{id}-{n:06}-{}", "x".repeat(40));
        note(&shared, id, &value, Sent::Pending);
        match p.send(Record::new(topic.clone(), value.clone())).await {
            Ok(d) => match dice.below(16) {
                _ if pinned.is_none() => pinned = Some((n, d)),
                0 => {
                    drop(d);
                    note(&shared, id, &value, Sent::Dropped);
                }
                1..=4 => {
                    let shared = shared.clone();
                    simrt::spawn(async move {
                        let outcome = d.await;
                        note(&shared, id, &value, Sent::Resolved(outcome));
                    });
                }
                _ => held.push_back((n, d)),
            },
            Err(e @ SendError::Timeout) => note(&shared, id, &value, Sent::Refused(e.to_string())),
            Err(e) => {
                shared
                    .borrow_mut()
                    .fail(format!("producer {id}: send refused record {n}: {e}"));
                return;
            }
        }
        n += 1;
        if held.len() as u64 >= 32 + dice.below(256) {
            // Oldest first, as users await a window of deliveries.
            while let Some((k, d)) = held.pop_front() {
                resolve(&shared, id, k, d).await;
            }
        }
    }
    p.flush().await;
    for (k, d) in held.into_iter().chain(pinned) {
        resolve(&shared, id, k, d).await;
    }
    if dice.below(4) == 0 {
        drop(p); // fails nothing: every record has its outcome after the flush
    } else {
        p.close(Duration::from_secs(5)).await;
    }
    shared.borrow_mut().producers_done.insert(id);
}

fn note(shared: &Shared, id: usize, value: &str, what: Sent) {
    let n: u64 = value[value.find('-').unwrap_or(0) + 1..][..6]
        .parse()
        .expect("values are numbered");
    let mut l = shared.borrow_mut();
    let entry = l
        .sent
        .entry(id)
        .or_default()
        .entry(n)
        .or_insert_with(|| (value.to_owned(), Sent::Pending));
    if let Sent::Resolved(_) = entry.1 {
        let message = format!("producer {id}: record {n} resolved twice");
        l.fail(message);
        return;
    }
    entry.1 = what;
}

async fn resolve(shared: &Shared, id: usize, n: u64, d: Delivery) {
    let outcome = d.await;
    let value = shared.borrow().sent[&id][&n].0.clone();
    note(shared, id, &value, Sent::Resolved(outcome));
}

/// Control of a member from the run: asked to leave, and whether it finished.
#[derive(Debug, Default)]
pub struct MemberCtl {
    /// The run asks the member to close.
    pub leave: Cell<bool>,
    /// The member's task ended (closed, dropped, or failed).
    pub finished: Cell<bool>,
    /// It closed or was dropped (it left the group on purpose).
    pub gone: Cell<bool>,
}

/// What a member believes it owns, from the rebalance events its handle took (through the
/// rebalance listener, so that those `recv_batch` takes in its stride count too).
#[derive(Debug, Default)]
struct View {
    /// A broken invariant the listener found.
    failure: Option<String>,
    /// What the listener saw, for the trace.
    notes: Vec<String>,
    owned: BTreeSet<i32>,
    /// Offsets handed in the current tenure of each owned partition.
    tenure: BTreeMap<i32, BTreeSet<i64>>,
    /// Owned when the application stalled past `max.poll.interval.ms`: the member was
    /// certainly dropped, so these must be reported lost before any more of their records.
    must_lose: BTreeSet<i32>,
    paused: BTreeSet<i32>,
}

impl View {
    /// A rebalance event, as the handle takes it.
    fn rebalance(&mut self, me: &str, ev: &ConsumerEvent) {
        self.notes.push(format!("{me} {ev:?}"));
        let fail = |v: &mut View, m: String| {
            v.failure.get_or_insert(m);
        };
        match ev {
            ConsumerEvent::Assigned(tps) => {
                for (_, p) in tps {
                    if !self.owned.insert(*p) {
                        fail(self, format!("{me}: assigned t-{p}, which it already owns"));
                    }
                    self.tenure.insert(*p, BTreeSet::new());
                    self.paused.remove(p);
                }
            }
            ConsumerEvent::Revoking(tps) | ConsumerEvent::Lost(tps) => {
                let revoking = matches!(ev, ConsumerEvent::Revoking(_));
                for (_, p) in tps {
                    if !self.owned.remove(p) && revoking {
                        fail(self, format!("{me}: revoking t-{p}, which it does not own"));
                    }
                    self.tenure.remove(p);
                    self.must_lose.remove(p);
                    self.paused.remove(p);
                }
            }
            _ => {}
        }
    }
}

/// `max.poll.interval.ms` of the simulated members.
pub const MAX_POLL_INTERVAL: Duration = Duration::from_millis(4000);

/// Whether the seed's group runs the consumer protocol of KIP-848 (every third seed; the
/// classic protocol's assignor is chosen by seed among the others).
pub fn uses_consumer_protocol(seed: u64) -> bool {
    seed % 3 == 2
}

/// A consumer-group member of group "g", subscribed to "t". `cooperative` picks the
/// cooperative-sticky assignor under the classic protocol (the whole group agrees, by seed).
pub async fn member(id: usize, seed: u64, cooperative: bool, ctl: Rc<MemberCtl>, shared: Shared) {
    let mut dice = Dice::new(seed ^ 0x6d65_6d62 ^ (id as u64).wrapping_mul(0x9e37));
    let auto = dice.below(2) == 0;
    let max_poll = MAX_POLL_INTERVAL.as_millis().to_string();
    let mut settings: Vec<(&str, String)> = vec![
        ("bootstrap.servers", bootstrap()),
        ("group.id", "g".into()),
        ("client.id", format!("member-{id}")),
        ("max.poll.interval.ms", max_poll),
        ("auto.offset.reset", "earliest".into()),
        ("enable.auto.commit", auto.to_string()),
        ("auto.commit.interval.ms", "300".into()),
        ("fetch.max.wait.ms", "100".into()),
        ("request.timeout.ms", "3000".into()),
        ("retry.backoff.ms", "50".into()),
        ("reconnect.backoff.ms", "20".into()),
        ("reconnect.backoff.max.ms", "500".into()),
        ("metadata.max.age.ms", "5000".into()),
        ("queued.max.messages.kbytes", "24".into()),
        ("max.partition.fetch.bytes", "5120".into()),
        ("max.poll.records", (1 + dice.below(300)).to_string()),
        ("random.seed", seed.wrapping_add(id as u64).to_string()),
    ];
    if uses_consumer_protocol(seed) {
        // KIP-848: the broker owns the session, heartbeats and assignment.
        settings.push(("group.protocol", "consumer".into()));
    } else {
        let strategy = if cooperative {
            "cooperative-sticky"
        } else {
            "range"
        };
        settings.extend([
            ("session.timeout.ms", "2000".into()),
            ("heartbeat.interval.ms", "300".into()),
            ("partition.assignment.strategy", strategy.into()),
        ]);
    }
    let settings = settings
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v))
        .chain(security());
    let mut c = Consumer::<SimRuntime>::from_map(settings).expect("valid simulation settings");
    let me = format!("member {id}");
    let view = Arc::new(Mutex::new(View::default()));
    let listener_view = view.clone();
    let listener_me = me.clone();
    c.on_rebalance(move |ev| lock(&listener_view).rebalance(&listener_me, ev));
    c.subscribe(["t"]).expect("the members have a group.id");
    let mut resume_at: Option<kafka_core::Instant> = None;
    let result: Result<(), String> = async {
        loop {
            if ctl.leave.get() {
                let began = simrt::now();
                c.close(Duration::from_secs(10)).await;
                let took = simrt::now() - began;
                if took > Duration::from_secs(10) + Duration::from_millis(1) {
                    return Err(format!("{me}: close took {took:?}, past its 10 s timeout"));
                }
                ctl.gone.set(true);
                return Ok(());
            }
            if resume_at.is_some_and(|t| simrt::now() >= t) {
                resume_at = None;
                for p in std::mem::take(&mut lock(&view).paused) {
                    c.resume("t", p);
                }
            }
            let action = dice.below(3000);
            if std::env::var("API_SIM_DEBUG").is_ok() {
                shared
                    .borrow_mut()
                    .notes
                    .push(format!("{me} action {action}"));
            }
            match action {
                // Stalls past max.poll.interval.ms: the member is dropped from the group.
                0..=2 => {
                    let d = MAX_POLL_INTERVAL + Duration::from_millis(500 + dice.below(1500));
                    {
                        let mut l = shared.borrow_mut();
                        l.stalls += 1;
                        l.notes.push(format!("{me} stalls for {d:?}"));
                    }
                    simrt::sleep(d).await;
                    let mut v = lock(&view);
                    v.must_lose = v.owned.clone();
                }
                // Dropped without close.
                3 => {
                    {
                        let mut l = shared.borrow_mut();
                        l.drops += 1;
                        l.notes.push(format!("{me} dropped"));
                    }
                    ctl.gone.set(true);
                    drop(c);
                    return Ok(());
                }
                4..=60 if !auto => {
                    shared.borrow_mut().commits.0 += 1;
                    let r = c.commit().await;
                    let mut l = shared.borrow_mut();
                    l.notes.push(format!("{me} commit: {r:?}"));
                    if r.is_ok() {
                        l.commits.1 += 1;
                    }
                }
                61..=70 => {
                    // Seek back to an offset handed in this tenure.
                    let mut v = lock(&view);
                    let choice = v
                        .tenure
                        .iter()
                        .filter(|(_, o)| !o.is_empty())
                        .nth(dice.below(v.tenure.len().max(1) as u64) as usize)
                        .map(|(p, o)| {
                            (
                                *p,
                                *o.iter()
                                    .nth(dice.below(o.len() as u64) as usize)
                                    .expect("not empty"),
                            )
                        });
                    if let Some((p, offset)) = choice {
                        {
                            let mut l = shared.borrow_mut();
                            l.seeks += 1;
                            l.notes.push(format!("{me} seeks t-{p} back to {offset}"));
                            l.rewinds.entry(p).or_default().push(offset);
                        }
                        c.seek("t", p, StartFrom::Offset(offset));
                        // The records from there on may come again.
                        v.tenure.get_mut(&p).expect("owned").retain(|o| *o < offset);
                    }
                }
                // Pauses one owned partition for a while.
                71..=90 => {
                    let mut v = lock(&view);
                    let owned: Vec<i32> = v.owned.iter().copied().collect();
                    if let Some(p) = owned.get(dice.below(owned.len().max(1) as u64) as usize) {
                        v.paused.insert(*p);
                        c.pause("t", *p);
                        resume_at =
                            Some(simrt::now() + Duration::from_millis(50 + dice.below(1000)));
                        shared.borrow_mut().notes.push(format!("{me} pauses t-{p}"));
                    }
                }
                // Waits in next_event longer than max.poll.interval.ms: it is polling, so it
                // stays in the group.
                91..=96 => {
                    let d = MAX_POLL_INTERVAL + Duration::from_millis(500 + dice.below(1500));
                    {
                        let mut l = shared.borrow_mut();
                        l.long_waits += 1;
                        l.notes
                            .push(format!("{me} waits in next_event for up to {d:?}"));
                    }
                    let got = {
                        let next = std::pin::pin!(c.next_event());
                        match select(next, simrt::sleep(d)).await {
                            Either::Left((ev, _)) => Some(ev),
                            Either::Right(_) => None,
                        }
                    };
                    if let Some(ev) = got {
                        on_event(&mut c, &view, &shared, &me, auto, ev).await?;
                    }
                }
                // (After a stall, events one by one: recv_batch would hide the loss.)
                97..=1000 if lock(&view).must_lose.is_empty() => {
                    let batch = {
                        let next = std::pin::pin!(c.recv_batch());
                        let d = Duration::from_millis(50 + dice.below(400));
                        match select(next, simrt::sleep(d)).await {
                            Either::Left((b, _)) => Some(b),
                            Either::Right(_) => None,
                        }
                    };
                    match batch {
                        Some(Ok(records)) => {
                            for r in records {
                                on_event(
                                    &mut c,
                                    &view,
                                    &shared,
                                    &me,
                                    auto,
                                    Ok(ConsumerEvent::Record(r)),
                                )
                                .await?;
                            }
                        }
                        Some(Err(e)) => return Err(format!("{me}: recv_batch failed: {e}")),
                        None => {}
                    }
                }
                _ => {
                    let got = {
                        let next = std::pin::pin!(c.next_event());
                        let d = Duration::from_millis(50 + dice.below(400));
                        match select(next, simrt::sleep(d)).await {
                            Either::Left((ev, _)) => Some(ev),
                            Either::Right(_) => None,
                        }
                    };
                    if let Some(ev) = got {
                        on_event(&mut c, &view, &shared, &me, auto, ev).await?;
                    }
                }
            }
        }
    }
    .await;
    if let Err(message) = result {
        shared.borrow_mut().fail(message);
    }
    ctl.finished.set(true);
}

fn lock(view: &Mutex<View>) -> std::sync::MutexGuard<'_, View> {
    view.lock().unwrap_or_else(|e| e.into_inner())
}

async fn on_event(
    c: &mut Consumer<SimRuntime>,
    view: &Mutex<View>,
    shared: &Shared,
    me: &str,
    auto: bool,
    ev: Result<ConsumerEvent, ConsumeError>,
) -> Result<(), String> {
    let ev = ev.map_err(|e| format!("{me}: next_event failed: {e}"))?;
    {
        // What the rebalance listener saw and found.
        let mut v = lock(view);
        shared.borrow_mut().notes.append(&mut v.notes);
        if let Some(f) = v.failure.take() {
            return Err(f);
        }
    }
    match ev {
        // The listener keeps the view.
        ConsumerEvent::Assigned(_) | ConsumerEvent::Lost(_) => {}
        ConsumerEvent::Revoking(_) => {
            if !auto {
                shared.borrow_mut().commits.0 += 1;
                if c.commit().await.is_ok() {
                    shared.borrow_mut().commits.1 += 1;
                }
            }
            c.ack_revocation();
        }
        ConsumerEvent::Record(r) => {
            let p = r.partition;
            let mut v = lock(view);
            if !v.owned.contains(&p) {
                return Err(format!(
                    "{me}: handed t-{p} offset {}, a partition it does not own (owns {:?})",
                    r.offset, v.owned
                ));
            }
            if v.must_lose.contains(&p) {
                return Err(format!(
                    "{me}: handed t-{p} offset {} after stalling past max.poll.interval.ms, before reporting the partition lost",
                    r.offset
                ));
            }
            let tenure = v
                .tenure
                .get_mut(&p)
                .expect("owned partitions have a tenure");
            if !tenure.insert(r.offset) {
                return Err(format!(
                    "{me}: handed t-{p} offset {} twice in one tenure, with no seek or rebalance between",
                    r.offset
                ));
            }
            let mut l = shared.borrow_mut();
            l.notes.push(format!("{me} handed t-{p} {}", r.offset));
            l.handed.entry(p).or_default().insert(r.offset);
            l.consumed += 1;
        }
        ConsumerEvent::EndOfPartition { .. } => {}
        other => {
            return Err(format!(
                "{me}: an event the simulation does not expect: {other:?}"
            ))
        }
    }
    Ok(())
}
