//! One simulated run and its invariants: the workload (an idempotent acks=all producer, a
//! plain acks=1 producer, a consumer group whose members come and go), the faults, and the
//! checks — every record resolved once; with idempotence nothing written twice whatever its
//! outcome, and with acks=all nothing acknowledged lost, order kept; no record expired before
//! its own send + `delivery.timeout.ms` − `linger.ms` (checked as outcomes come, in `apps`); no partition with two owners in one generation;
//! committed offsets never backwards and only past records handed out; memory bounded; time
//! moving on.

use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet};
use std::rc::Rc;
use std::time::Duration;

use kafka_core::group::payload::decode_assignment;
use kafka_core::producer::{Certainty, Outcome};
use kafka_core::Instant;
use kafka_sim::{ClusterConfig, SimCluster};

use super::apps::{ConsumerApp, Ledger, ProducerApp};
use super::faults::{Fault, Faults};
use super::{sim_time, Client, Options, Report, World};

/// A broken invariant.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failure {
    /// What broke.
    pub message: String,
    /// The run's trace, when it was kept.
    pub trace: Vec<String>,
}

impl Failure {
    /// A failure saying `message`.
    pub fn new(message: impl Into<String>) -> Self {
        Failure {
            message: message.into(),
            trace: Vec::new(),
        }
    }
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

/// Partitions of the simulated topic "t".
pub const PARTITIONS: i32 = 3;
/// Producers send until then; faults stop then too.
const STOP_SENDING: Duration = Duration::from_secs(6);
const FAULTS_END: Duration = Duration::from_secs(7);
/// The run must have settled by then.
const LIMIT: Duration = Duration::from_secs(60);
/// Once the last fault has ended, every record has its outcome within this: a request lost
/// in a black hole times out (`request.timeout.ms`, 3 s), then a reconnect, a metadata refresh
/// and the retry, each with its backoff. A record left to its delivery timeout (15 s) waited
/// for something nothing would trigger; one that waited out a second request timeout was
/// sent to a broker already known not to answer (seed 2997 took 7.2 s before
/// `Network::least_loaded` stopped choosing a broker that had just timed a request out).
pub const RECOVERY: Duration = Duration::from_secs(6);

/// Runs one seed; every invariant is checked, the first broken one returned.
pub fn run(opts: &Options) -> Result<Report, Failure> {
    let mut cluster = ClusterConfig {
        dedup: !opts.injected_bug,
        ..ClusterConfig::default()
    };
    if opts.seed.is_multiple_of(3) {
        // Broker 2 runs an older Kafka: requests to it negotiate lower versions (and it cannot
        // answer OffsetForLeaderEpoch for consumers).
        cluster.versions.insert(2, older_versions());
    }
    cluster.forget_producers = forgets_producers(opts.seed);
    cluster.racks = super::apps::has_racks(opts.seed);
    let mut w = World::new(cluster, opts.seed);
    // Leaders not ready for a moment after each election, and at the start (a fault).
    w.cluster.leader_warmups(opts.faults);
    w.trace(opts.trace);
    let result = drive(&mut w, opts);
    let (trace, hash) = w.take_trace();
    match result {
        Ok(mut r) => {
            r.trace_hash = hash;
            r.trace = trace;
            Ok(r)
        }
        Err(mut f) => {
            f.trace = trace;
            Err(f)
        }
    }
}

/// Whether the seed's brokers forget the idempotent producer ids they issued when one restarts,
/// as Tansu does ([`ClusterConfig::forget_producers`]): an eighth of the seeds, drawn apart
/// from the fault schedule, which stays as it was.
pub fn forgets_producers(seed: u64) -> bool {
    (seed.wrapping_mul(0xd1b5_4a32_d192_ed03) >> 61) == 0
}

/// The API versions of a Kafka 2.x broker, roughly (no KIP-714 telemetry, as every simulated
/// broker).
pub fn older_versions() -> Vec<(i16, i16, i16)> {
    use kafka_core::proto::api::ApiKey;
    ApiKey::ALL
        .iter()
        .filter(|k| !matches!(k, ApiKey::GetTelemetrySubscriptions | ApiKey::PushTelemetry))
        .map(|k| {
            let cap = match k {
                ApiKey::Produce => 7,
                ApiKey::Fetch => 11,
                ApiKey::ListOffsets => 5,
                ApiKey::Metadata => 8,
                ApiKey::OffsetCommit => 7,
                ApiKey::OffsetFetch => 7,
                ApiKey::FindCoordinator => 2,
                ApiKey::JoinGroup => 3,
                ApiKey::SyncGroup => 3,
                ApiKey::Heartbeat => 3,
                ApiKey::LeaveGroup => 2,
                ApiKey::ApiVersions => 2,
                ApiKey::OffsetForLeaderEpoch => 2,
                _ => k.max_version(),
            };
            (k.key(), k.min_version(), cap.max(k.min_version()))
        })
        .collect()
}

fn at(d: Duration) -> Instant {
    Instant::from_nanos(d.as_nanos() as u64)
}

fn drive(w: &mut World, opts: &Options) -> Result<Report, Failure> {
    let seed = opts.seed;
    let ledger = Rc::new(RefCell::new(Ledger::default()));
    let stop = at(STOP_SENDING);
    let lanes = &[lanes(seed), age(seed)].concat()[..];
    // Client 0: idempotent, acks=all (the defaults). Client 1: acks=1, no idempotence.
    // Every third seed, client 0 runs with short timeouts (an operator's tight settings), so
    // that stalls and slow brokers expire its requests and batches in flight.
    let short = [
        ("request.timeout.ms", "1000"),
        ("delivery.timeout.ms", "1500"),
    ];
    let timeouts: &[(&str, &str)] = if seed % 3 == 2 { &short } else { &[] };
    w.add(Client::Producer(Box::new(ProducerApp::new(
        0,
        &[lanes, timeouts].concat(),
        seed,
        stop,
        ledger.clone(),
    ))));
    let acks_1 = [("acks", "1"), ("enable.idempotence", "false")];
    w.add(Client::Producer(Box::new(ProducerApp::new(
        1,
        &[&acks_1[..], lanes].concat(),
        seed ^ 1,
        stop,
        ledger.clone(),
    ))));
    // Client 2: acks=0.
    w.add(Client::Producer(Box::new(ProducerApp::new(
        2,
        &[&[("acks", "0"), ("enable.idempotence", "false")], age(seed)].concat(),
        seed ^ 2,
        stop,
        ledger.clone(),
    ))));
    let mut members: Vec<usize> = Vec::new();
    for _ in 0..2 {
        add_member(w, &mut members, seed, &ledger);
    }
    // A quarter of the seeds lose the group coordinator's broker for good after the faults
    // (drawn apart from the schedule, which stays as it was).
    let vanish = opts.faults && (seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 62) == 0;
    let mut faults = Faults::new(seed, opts.faults, at(FAULTS_END)).vanish_after(vanish);
    let mut report = Report::default();
    let mut committed: BTreeMap<i32, i64> = BTreeMap::new();
    let mut same_time = 0u32;
    let mut next_settle_check = Instant::from_millis(100);
    // When the last fault (or send) ended, and when every producer's record had its outcome
    // after that.
    let mut quiet_from = stop;
    let mut produced: Option<Instant> = None;
    loop {
        let Some(next) = w.next_due(faults.next_at()) else {
            return Err(Failure::new(
                "nothing left to do, and the run has not settled",
            ));
        };
        if next > at(LIMIT) {
            if std::env::var("SIM_DUMP").is_ok() {
                for c in w.clients.iter().flatten() {
                    if let Client::Consumer(c) = c {
                        eprintln!("{:#?}", c.fetcher);
                    }
                }
            }
            return Err(Failure::new(format!(
                "not settled after {LIMIT:?} of virtual time: {}",
                unsettled(w, &ledger)
            )));
        }
        // Time always moves on: a deadline in the past, again and again, is a live-lock.
        if next <= w.now {
            same_time += 1;
            if same_time > 10_000 {
                return Err(Failure::new(format!("live-lock at {:?}", w.now)));
            }
        } else {
            same_time = 0;
        }
        w.step_to(next)?;
        let now = w.now;
        let mut due = faults.due(now);
        if now >= at(FAULTS_END) && opts.faults {
            due.extend(faults.recover_all());
        }
        for f in due {
            // The fault's own end: a stall lasts on after it starts.
            let ends = match f {
                Fault::StallProducer(_, ms) => now + Duration::from_millis(ms),
                _ => now,
            };
            quiet_from = quiet_from.max(ends);
            apply(w, f, &mut members, &mut report, seed, &ledger)?;
        }
        check_commits(w, &ledger, &mut committed)?;
        if now >= next_settle_check {
            next_settle_check = now + Duration::from_millis(100);
            let healed = now >= at(FAULTS_END) && faults.next_at().is_none();
            if healed && produced.is_none() {
                produced = producers_settled(w).then_some(now);
                if produced.is_none() && now > quiet_from + RECOVERY {
                    return Err(Failure::new(format!(
                        "records still unresolved {:?} after the last fault ended (at {:?}): after faults heal, a record is delivered within request.timeout.ms and the backoffs, not left to its delivery timeout",
                        now.saturating_duration_since(quiet_from),
                        sim_time(quiet_from)
                    )));
                }
            }
            if healed && settled(w, &ledger) {
                break;
            }
        }
    }
    check_final(w, &ledger, &mut report)?;
    // The group ran the protocol its seed chose, and no other.
    let (classic, kip848) = w.cluster.assignment_counts();
    let ran = if super::apps::uses_consumer_protocol(seed) {
        classic == 0 && kip848 > 0
    } else {
        kip848 == 0 && classic > 0
    };
    if !ran {
        return Err(Failure::new(format!(
            "the group's assignments do not match its protocol: {classic} classic, {kip848} KIP-848"
        )));
    }
    let net = w.net.stats();
    report.faults.connect_refused = net.refused;
    report.faults.producer_unknown = w.cluster.stats().unknown_producer;
    report.faults.conn_reset_mid_stream = net.resets_mid_stream;
    report.virtual_time = sim_time(w.now);
    report.steps = w.steps();
    report.consumed = ledger.borrow().consumed;
    report.produce_recovery =
        produced.map_or(Duration::ZERO, |p| p.saturating_duration_since(quiet_from));
    Ok(report)
}

/// The broker [`Fault::Vanish`] takes away for good: the group coordinator's, only where the
/// two others can go on (every partition of "t" has another in-sync replica up).
pub fn vanish_target(cluster: &kafka_sim::SimCluster) -> Option<i32> {
    let up = cluster.up_brokers();
    cluster.group_coordinator().filter(|n| {
        up.len() == 3
            && (0..PARTITIONS).all(|p| cluster.isr("t", p).iter().any(|r| r != n && up.contains(r)))
    })
}

fn apply(
    w: &mut World,
    f: Fault,
    members: &mut Vec<usize>,
    report: &mut Report,
    seed: u64,
    ledger: &Rc<RefCell<Ledger>>,
) -> Result<(), Failure> {
    let t = sim_time(w.now);
    w.note(format_args!("fault: {f:?}"));
    let c = &mut report.faults;
    match f {
        Fault::CrashBroker(n) => {
            c.broker_crash += 1;
            w.cluster.crash(n);
        }
        Fault::RestartBroker(n) => w.cluster.restart(n),
        Fault::Partition(n) => {
            c.broker_partition += 1;
            // Cut off from clients, and from the controller: it loses its leaderships.
            w.net.partition(n, t);
            w.cluster.crash(n);
        }
        Fault::Blackhole(n) => {
            c.broker_blackhole += 1;
            w.net.blackhole(n);
        }
        Fault::Kill(n, listed) => {
            if listed {
                c.broker_kill += 1;
            } else {
                c.broker_kill_unlisted += 1;
            }
            w.cluster.kill(n, listed);
        }
        Fault::Fence(n) => w.cluster.fence(n),
        Fault::Vanish => {
            if let Some(n) = vanish_target(&w.cluster) {
                c.broker_vanish += 1;
                w.note(format_args!(
                    "broker {n} (the group coordinator) vanishes for good"
                ));
                w.net.blackhole(n);
                w.cluster.crash(n);
            }
        }
        Fault::Heal(n) => {
            w.net.heal(n);
            w.cluster.restart(n);
        }
        Fault::MoveLeader(p) => {
            c.leader_move += 1;
            w.cluster.move_leader("t", p);
        }
        Fault::MoveCoordinator => {
            c.coordinator_move += 1;
            w.cluster.move_coordinator();
        }
        Fault::ResetConn => {
            let open = w.net.open();
            if !open.is_empty() {
                c.conn_reset += 1;
                let k = open[(w.net.random() % open.len() as u64) as usize];
                w.net.reset(k, t);
            }
        }
        Fault::SlowConn => {
            let open = w.net.open();
            if !open.is_empty() {
                c.conn_slow += 1;
                let k = open[(w.net.random() % open.len() as u64) as usize];
                w.net.slow(k);
            }
        }
        Fault::RefuseConnect => w.refuse_next = true,
        Fault::Quota => {
            c.conn_quota += 1;
            w.quota = true;
        }
        Fault::QuotaEnd => w.quota = false,
        Fault::CrashMember | Fault::LeaveMember => {
            let live: Vec<usize> = members
                .iter()
                .copied()
                .filter(|i| matches!(&w.clients[*i], Some(Client::Consumer(c)) if !c.leaving))
                .collect();
            if live.is_empty() {
                return Ok(());
            }
            let i = live[(w.net.random() % live.len() as u64) as usize];
            if f == Fault::CrashMember {
                c.member_crash += 1;
                w.crash_client(i);
            } else {
                c.member_leave += 1;
                if let Some(Client::Consumer(app)) = &mut w.clients[i] {
                    app.leave(w.now);
                }
                w.drain_client(i)?;
            }
            // Someone takes its place.
            add_member(w, members, seed, ledger);
        }
        Fault::StallProducer(i, ms) => {
            c.client_stall += 1;
            w.stall(i, w.now + Duration::from_millis(ms));
        }
        Fault::JoinMember => {
            if members.len() < 12 {
                c.member_join += 1;
                add_member(w, members, seed, ledger);
            }
        }
    }
    Ok(())
}

fn add_member(w: &mut World, members: &mut Vec<usize>, seed: u64, ledger: &Rc<RefCell<Ledger>>) {
    let id = w.clients.len();
    let extra = [lanes(seed), age(seed)].concat();
    let app = ConsumerApp::new(id, seed, &extra, w.now, ledger.clone());
    members.push(w.add(Client::Consumer(Box::new(app))));
}

/// Every fourth seed, the producers that wait for responses write, and the consumers read,
/// over two connections to each broker: partition 1 on one, partitions 0 and 2 on the other.
fn lanes(seed: u64) -> &'static [(&'static str, &'static str)] {
    if seed % 4 == 1 {
        &[("connections.per.broker", "2")]
    } else {
        &[]
    }
}

/// Every fifth seed, every client refreshes metadata only as often as Java's default
/// `metadata.max.age.ms` (5 minutes) asks, so that none can count on a periodic refresh to
/// get going again (a partition whose leader the last answer named but did not list waited
/// for one; found on librdkafka's mock cluster).
fn age(seed: u64) -> &'static [(&'static str, &'static str)] {
    if seed % 5 == 4 {
        &[("metadata.max.age.ms", "300000")]
    } else {
        &[]
    }
}

/// Committed offsets never move backwards, and each is just past a record some member was
/// handed.
fn check_commits(
    w: &World,
    ledger: &Rc<RefCell<Ledger>>,
    seen: &mut BTreeMap<i32, i64>,
) -> Result<(), Failure> {
    commits_move_forward(
        &w.cluster,
        "g",
        &[&ledger.borrow().handed],
        &mut BTreeMap::new(),
        seen,
    )
}

/// A group's committed offsets of "t" never move backwards (`seen` holds the last ones),
/// and each is just past a record one of the `handed` sets holds.
///
/// A member that seeked back may move it back once per seek, to no lower than where it
/// seeked (`rewinds`, used up as they allow a move).
pub fn commits_move_forward(
    cluster: &SimCluster,
    group: &str,
    handed: &[&BTreeMap<i32, BTreeSet<i64>>],
    rewinds: &mut BTreeMap<i32, Vec<i64>>,
    seen: &mut BTreeMap<i32, i64>,
) -> Result<(), Failure> {
    for p in 0..PARTITIONS {
        let Some((offset, _)) = cluster.committed_offset(group, "t", p) else {
            continue;
        };
        let before = seen.insert(p, offset).unwrap_or(0);
        let seeks = rewinds.entry(p).or_default();
        let rewound = seeks.iter().position(|to| *to <= offset);
        if let (true, Some(i)) = (offset < before, rewound) {
            seeks.swap_remove(i);
        } else if offset < before {
            return Err(Failure::new(format!(
                "t-{p}: the committed offset of group {group} moved back from {before} to {offset}"
            )));
        }
        if offset > before
            && offset > 0
            && !handed
                .iter()
                .any(|h| h.get(&p).is_some_and(|h| h.contains(&(offset - 1))))
        {
            return Err(Failure::new(format!(
                "t-{p}: offset {offset} committed in group {group}, but record {} was never handed out",
                offset - 1
            )));
        }
    }
    Ok(())
}

/// Whether every producer's record has its outcome.
fn producers_settled(w: &World) -> bool {
    (w.clients.iter().flatten()).all(|c| !matches!(c, Client::Producer(p) if !p.settled()))
}

/// Everything resolved, and the group read every committed record.
fn settled(w: &World, ledger: &Rc<RefCell<Ledger>>) -> bool {
    unsettled(w, ledger).is_empty()
}

fn unsettled(w: &World, ledger: &Rc<RefCell<Ledger>>) -> String {
    let mut why = Vec::new();
    for c in w.clients.iter().flatten() {
        if let Client::Producer(p) = c {
            if !p.settled() {
                why.push("a producer has unresolved records".to_string());
            }
        }
    }
    why.extend(unread(&w.cluster, &ledger.borrow().handed));
    // The members auto-commit what they were handed: the group's offsets reach the ends (a
    // member that lost its coordinator must find the next one).
    for p in 0..PARTITIONS {
        let hw = w.cluster.high_watermark("t", p);
        let committed = w.cluster.committed_offset("g", "t", p).map_or(0, |c| c.0);
        if committed < hw {
            why.push(format!("t-{p}: committed {committed}, high watermark {hw}"));
        }
    }
    why.join("; ")
}

/// An idempotent producer's record `n` is in the log at most once (`copies`), after every
/// record it sent before to the same partition (`last_per_partition`: the last seen offset and
/// record number of each).
pub fn written_once_in_order(
    producer: usize,
    n: u64,
    copies: &[(i32, i64)],
    last_per_partition: &mut BTreeMap<i32, (i64, u64)>,
) -> Result<(), Failure> {
    if copies.len() > 1 {
        return Err(Failure::new(format!(
            "producer {producer} (idempotent): record {n} written {} times: {copies:?}",
            copies.len()
        )));
    }
    if let Some((p, o)) = copies.first() {
        if let Some((before, m)) = last_per_partition.insert(*p, (*o, n)) {
            if before > *o {
                return Err(Failure::new(format!(
                    "producer {producer}: t-{p} holds record {n} at {o}, before record {m} at {before}: out of send order"
                )));
            }
        }
    }
    Ok(())
}

/// The partitions of "t" with committed records no member was `handed`.
pub fn unread(cluster: &SimCluster, handed: &BTreeMap<i32, BTreeSet<i64>>) -> Vec<String> {
    let mut why = Vec::new();
    for p in 0..PARTITIONS {
        // The log holds every offset below the high watermark (no compaction, no
        // transactions), so the count of those handed out tells what is missing.
        let hw = cluster.high_watermark("t", p);
        let read = handed.get(&p).map_or(0, |h| h.range(..hw).count());
        let missing = hw as usize - read;
        if missing > 0 {
            why.push(format!("t-{p}: {missing} committed records not consumed"));
        }
    }
    why
}

/// The committed log of "t" by value: the (partition, offset) of each copy.
pub fn log_by_value(cluster: &SimCluster) -> BTreeMap<String, Vec<(i32, i64)>> {
    let mut log: BTreeMap<String, Vec<(i32, i64)>> = BTreeMap::new();
    for p in 0..PARTITIONS {
        for (offset, value) in cluster.committed_records("t", p) {
            let v = String::from_utf8_lossy(value.as_deref().unwrap_or_default()).into_owned();
            log.entry(v).or_default().push((p, offset));
        }
    }
    log
}

/// No partition had two owners in one generation.
pub fn one_owner_per_generation(cluster: &SimCluster) -> Result<(), Failure> {
    let mut owners: BTreeMap<(i32, (String, i32)), String> = BTreeMap::new();
    for (_, generation, member, bytes) in cluster.assignments().iter() {
        let tps = decode_assignment(bytes)
            .map_err(|e| Failure::new(format!("an assignment did not decode: {e}")))?;
        for tp in tps {
            if let Some(other) = owners.insert((*generation, tp.clone()), member.clone()) {
                if &other != member {
                    return Err(Failure::new(format!(
                        "{}-{} owned by {other} and {member} in generation {generation}",
                        tp.0, tp.1
                    )));
                }
            }
        }
    }
    Ok(())
}

fn check_final(
    w: &World,
    ledger: &Rc<RefCell<Ledger>>,
    report: &mut Report,
) -> Result<(), Failure> {
    // The metrics against the truth the applications saw.
    for c in w.clients.iter().flatten() {
        match c {
            Client::Producer(p) => p.check_metrics(w.now)?,
            Client::Consumer(c) => c.check_metrics(w.now)?,
        }
    }
    let ledger = ledger.borrow();
    let log = log_by_value(&w.cluster);
    for (producer, sent) in &ledger.sent {
        let idempotent = *producer == 0;
        let mut last_per_partition: BTreeMap<i32, (i64, u64)> = BTreeMap::new();
        for (n, (value, outcome)) in sent {
            let copies = log.get(value).map_or(&[][..], |c| c.as_slice());
            let Some(outcome) = outcome else {
                return Err(Failure::new(format!(
                    "producer {producer}: record {n} never resolved"
                )));
            };
            match outcome {
                Outcome::Delivered {
                    partition, offset, ..
                } => {
                    report.delivered += 1;
                    if copies.is_empty() {
                        if idempotent {
                            return Err(Failure::new(format!(
                                "producer {producer} (idempotent, acks=all): record {n} acknowledged at {partition}/{offset:?} but lost"
                            )));
                        }
                        if *producer == 1 {
                            report.permitted_losses += 1; // acks=1 (acks=0 promises nothing)
                        }
                    }
                    if let Some(o) = offset {
                        if idempotent && !copies.contains(&(*partition, *o)) {
                            return Err(Failure::new(format!(
                                "producer {producer}: record {n} acknowledged at {partition}/{o}, found at {copies:?}"
                            )));
                        }
                    }
                }
                Outcome::Failed {
                    certainty: Certainty::NotSent,
                    error,
                } => {
                    if !copies.is_empty() {
                        return Err(Failure::new(format!(
                            "producer {producer}: record {n} failed as never written ({error}), yet it is in the log at {copies:?}"
                        )));
                    }
                }
                Outcome::Failed { .. } => {}
                _ => unreachable!("a variant this test does not know"),
            }
            if idempotent {
                written_once_in_order(*producer, *n, copies, &mut last_per_partition)?;
            }
        }
    }
    one_owner_per_generation(&w.cluster)
}
