//! The whole client under simulation: the user API (`Producer`, `Consumer` from
//! `kafka-driver`, with its delivery slots, batches, delayed `consumed` reports, automatic
//! commits, close and drop) on [`SimRuntime`], against the simulated cluster and network, in
//! virtual time. The same faults as the core-level simulation ([`crate::sim`]), plus what
//! applications do to a client: members that stall past `max.poll.interval.ms`, wait in
//! `next_event` longer than it, seek back, pause, commit by hand, close, are dropped, or crash
//! with their drivers.
//!
//! Each run checks, beyond the core-level invariants (every awaited record resolved once;
//! with idempotence and acks=all nothing acknowledged lost or duplicated and send order kept;
//! nothing failed as not sent in the log; one owner per partition per generation; committed
//! offsets never backwards and just past a handed record):
//! - every record handed to a member belongs to a partition it owned at that moment (by the
//!   events it was handed), and none twice in one tenure without a seek;
//! - after stalling past `max.poll.interval.ms`, a member reports its partitions lost before
//!   handing out any more of their records;
//! - at the end, every member still running is in the group's stable generation (a member
//!   that was dropped for stalling rejoins when it polls again);
//! - `close` returns within its timeout, and nothing hangs.
//!
//! Beside the group, consumers that `assign` ([`readers`]): two readers in a group of their
//! own ("a") split "t" between them, commit by hand, read their commits back, seek, pause and
//! are dropped (another takes over from the committed offsets), and together read every
//! record; an outsider assigns one partition under "g" itself, and its commits are refused
//! with `CommitError::GroupInUse` while the group has members. Their invariants: records only
//! of assigned partitions, none twice without a seek, "a"'s commits forward and just past a
//! record handed, `subscribe` after `assign` refused, and every commit and lookup ended within
//! `default.api.timeout.ms`. An operator ([`operator`]) describes the cluster and creates and
//! deletes topics through the faults; each call ends within `default.api.timeout.ms`, and the
//! cluster ends as its answers said.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::rc::Rc;
use std::time::Duration;

use kafka_core::Instant;
use kafka_sim::{ClusterConfig, NetConfig};

use crate::sim::check::{
    commits_move_forward, log_by_value, older_versions, one_owner_per_generation, unread,
    vanish_target, written_once_in_order, RECOVERY,
};
use crate::sim::faults::{Fault, FaultCounts, Faults};
use crate::sim::{Failure, Options};
use crate::simrt::{Sim, TaskId, Trace};

pub mod apps;
pub mod intruder;
pub mod operator;
pub mod readers;

use apps::{Ledger, MemberCtl, Sent, Shared};
use readers::{ReaderCtl, OWN_GROUP};

/// Producers send until then; faults stop then too.
const STOP_SENDING: Duration = Duration::from_secs(6);
const FAULTS_END: Duration = Duration::from_secs(7);
/// The run must have settled by then.
const LIMIT: Duration = Duration::from_secs(90);
/// The idempotent acks=all producer.
const IDEMPOTENT: usize = 0;
const PRODUCERS: usize = 3;

/// What a run did.
#[derive(Debug, Clone, Default)]
pub struct Report {
    /// Virtual time at the end.
    pub virtual_time: Duration,
    /// Task polls.
    pub polls: u64,
    /// A hash of everything that happened on the wire and in the applications, in order.
    pub trace_hash: u64,
    /// The trace, when asked for.
    pub trace: Vec<String>,
    /// Faults that fired.
    pub faults: FaultCounts,
    /// Records whose delivery was awaited and acknowledged.
    pub delivered: u64,
    /// acks=1 records acknowledged and then lost to a leader change (permitted).
    pub permitted_losses: u64,
    /// Records handed to members.
    pub consumed: u64,
    /// Stalls past `max.poll.interval.ms`.
    pub stalls: u64,
    /// Waits in `next_event` longer than `max.poll.interval.ms`.
    pub long_waits: u64,
    /// Manual commits made, and those that succeeded.
    pub commits: (u64, u64),
    /// Seeks back.
    pub seeks: u64,
    /// Members dropped without close.
    pub drops: u64,
    /// Records handed to the readers of group "a".
    pub own_consumed: u64,
    /// The outsider's commits into "g" refused as `GroupInUse`, and accepted (the group was
    /// empty).
    pub outsider_commits: (u64, u64),
    /// Admin calls made, and those answered in time.
    pub admin_calls: (u64, u64),
    /// The run's security: `PLAINTEXT`, `SSL`, or the SASL protocol and mechanism.
    pub security: String,
    /// SASL authentications that succeeded (re-authentications included), and failed (the
    /// intruder's).
    pub authentications: (u64, u64),
    /// From the end of the last fault (or the last send, if later) to the moment every
    /// producer application had flushed and had every delivery it kept resolved.
    pub produce_recovery: Duration,
}

/// The security of a seed's cluster and clients: most seeds PLAINTEXT; one in eight SSL, one
/// in eight SASL_SSL with SCRAM-SHA-512, one in eight SASL_PLAINTEXT with PLAIN or
/// SCRAM-SHA-256; SASL sessions last 1.5 s to 3 s of virtual time (Kafka allows one
/// re-authentication a second), so they are re-authenticated several times in a run.
pub fn security_for(seed: u64) -> (kafka_sim::Security, Vec<(String, String)>) {
    let mut cluster = kafka_sim::Security::default();
    let (protocol, mechanism) = match seed % 8 {
        5 => ("SSL", None),
        3 => ("SASL_SSL", Some("SCRAM-SHA-512")),
        7 if (seed / 8).is_multiple_of(2) => ("SASL_PLAINTEXT", Some("PLAIN")),
        7 => ("SASL_PLAINTEXT", Some("SCRAM-SHA-256")),
        _ => return (cluster, Vec::new()),
    };
    let mut client = vec![("security.protocol".to_owned(), protocol.to_owned())];
    if protocol.ends_with("SSL") {
        cluster.tls = true;
        client.push(("ssl.ca.pem".into(), kafka_sim::security::ca_pem().into()));
    }
    if let Some(m) = mechanism {
        cluster.sasl = Some(kafka_sim::SaslConfig {
            mechanisms: vec![
                "PLAIN".into(),
                "SCRAM-SHA-256".into(),
                "SCRAM-SHA-512".into(),
            ],
            users: [(intruder::USER.to_owned(), intruder::PASSWORD.to_owned())].into(),
            session_lifetime: Some(Duration::from_millis(1_500 + (seed / 16 % 7) * 250)),
        });
        client.extend([
            ("sasl.mechanism".to_owned(), m.to_owned()),
            ("sasl.username".into(), intruder::USER.into()),
            ("sasl.password".into(), intruder::PASSWORD.into()),
        ]);
    }
    (cluster, client)
}

struct Reader {
    ctl: Rc<ReaderCtl>,
    group: &'static str,
    partitions: Vec<i32>,
}

struct Member {
    task: TaskId,
    ctl: Rc<MemberCtl>,
    crashed: bool,
}

impl Member {
    fn running(&self) -> bool {
        !self.crashed && !self.ctl.finished.get()
    }
}

struct Run {
    sim: Sim,
    shared: Shared,
    members: Vec<Member>,
    readers: Vec<Reader>,
    seed: u64,
    cooperative: bool,
    trace: Trace,
}

fn at(d: Duration) -> Instant {
    Instant::from_nanos(d.as_nanos() as u64)
}

impl Run {
    fn note(&mut self, line: String) {
        let now = self.sim.now();
        self.trace.note(now, line);
    }

    /// Moves what the wire and the applications logged into the trace.
    fn collect_notes(&mut self) {
        let apps: Vec<String> = std::mem::take(&mut self.shared.borrow_mut().notes);
        self.trace.collect(&self.sim, apps);
    }

    fn add_member(&mut self) {
        let id = self.members.len();
        let ctl = Rc::new(MemberCtl::default());
        let task = self.sim.spawn_app(apps::member(
            id,
            self.seed,
            self.cooperative,
            ctl.clone(),
            self.shared.clone(),
        ));
        self.note(format!("member {id} starts (task {task})"));
        self.members.push(Member {
            task,
            ctl,
            crashed: false,
        });
    }

    fn add_reader(&mut self, group: &'static str, partitions: Vec<i32>) {
        let id = self.readers.len();
        let ctl = Rc::new(ReaderCtl::default());
        let task = self.sim.spawn_app(readers::reader(
            id,
            self.seed,
            group,
            partitions.clone(),
            ctl.clone(),
            self.shared.clone(),
        ));
        self.note(format!(
            "reader {id} of group {group} assigns t-{partitions:?} (task {task})"
        ));
        self.readers.push(Reader {
            ctl,
            group,
            partitions,
        });
    }

    /// A reader of "a" that was dropped is followed by another on its partitions.
    fn replace_dropped_readers(&mut self) {
        let dropped: Vec<usize> = (0..self.readers.len())
            .filter(|i| {
                let c = &self.readers[*i].ctl;
                c.dropped.get() && c.finished.get()
            })
            .collect();
        for i in dropped {
            self.readers[i].ctl.dropped.set(false);
            let (group, partitions) = (self.readers[i].group, self.readers[i].partitions.clone());
            self.add_reader(group, partitions);
        }
    }

    fn live(&self) -> Vec<usize> {
        (0..self.members.len())
            .filter(|i| self.members[*i].running() && !self.members[*i].ctl.leave.get())
            .collect()
    }

    fn apply(&mut self, f: Fault, counts: &mut FaultCounts) {
        self.note(format!("fault: {f:?}"));
        let t = self.sim.env().sim_now();
        match f {
            Fault::CrashBroker(n) => {
                counts.broker_crash += 1;
                let mut w = self.sim.wire();
                w.cluster.crash(n);
                w.drain_cluster(t);
            }
            Fault::RestartBroker(n) => self.sim.wire().cluster.restart(n),
            Fault::Partition(n) => {
                counts.broker_partition += 1;
                let mut w = self.sim.wire();
                w.net.partition(n, t);
                w.cluster.crash(n);
                w.drain_cluster(t);
            }
            Fault::Blackhole(n) => {
                counts.broker_blackhole += 1;
                self.sim.wire().net.blackhole(n);
            }
            Fault::Kill(n, listed) => {
                if listed {
                    counts.broker_kill += 1;
                } else {
                    counts.broker_kill_unlisted += 1;
                }
                let mut w = self.sim.wire();
                w.cluster.kill(n, listed);
                w.drain_cluster(t);
            }
            Fault::Fence(n) => {
                let mut w = self.sim.wire();
                w.cluster.fence(n);
                w.drain_cluster(t);
            }
            Fault::Heal(n) => {
                let mut w = self.sim.wire();
                w.net.heal(n);
                w.cluster.restart(n);
            }
            Fault::MoveLeader(p) => {
                counts.leader_move += 1;
                let mut w = self.sim.wire();
                w.cluster.move_leader("t", p);
                w.drain_cluster(t);
            }
            Fault::MoveCoordinator => {
                counts.coordinator_move += 1;
                let mut w = self.sim.wire();
                w.cluster.move_coordinator();
                w.drain_cluster(t);
            }
            Fault::ResetConn => {
                let mut w = self.sim.wire();
                let open = w.net.open();
                if !open.is_empty() {
                    counts.conn_reset += 1;
                    let k = open[(w.net.random() % open.len() as u64) as usize];
                    w.net.reset(k, t);
                }
            }
            Fault::SlowConn => {
                let mut w = self.sim.wire();
                let open = w.net.open();
                if !open.is_empty() {
                    counts.conn_slow += 1;
                    let k = open[(w.net.random() % open.len() as u64) as usize];
                    w.net.slow(k);
                }
            }
            Fault::RefuseConnect => self.sim.wire().refuse_next = true,
            Fault::Quota => {
                counts.conn_quota += 1;
                self.sim.wire().quota = true;
            }
            Fault::QuotaEnd => self.sim.wire().quota = false,
            Fault::CrashMember | Fault::LeaveMember => {
                let live = self.live();
                if live.is_empty() {
                    return;
                }
                let pick = self.sim.wire().net.random() % live.len() as u64;
                let i = live[pick as usize];
                if f == Fault::CrashMember {
                    counts.member_crash += 1;
                    self.members[i].crashed = true;
                    let n = self.sim.crash(self.members[i].task);
                    self.note(format!("member {i} crashed ({n} tasks)"));
                } else {
                    counts.member_leave += 1;
                    self.members[i].ctl.leave.set(true);
                }
                self.add_member();
            }
            Fault::JoinMember => {
                if self.members.len() < 12 {
                    counts.member_join += 1;
                    self.add_member();
                }
            }
            Fault::Vanish => {
                let mut w = self.sim.wire();
                if let Some(n) = vanish_target(&w.cluster) {
                    counts.broker_vanish += 1;
                    w.net.blackhole(n);
                    w.cluster.crash(n);
                    w.drain_cluster(t);
                    drop(w);
                    self.note(format!(
                        "broker {n} (the group coordinator) vanishes for good"
                    ));
                }
            }
            // Not modelled here yet: SimRuntime runs every task whenever it is due. The core
            // simulation stalls its producers (`World::stall`).
            Fault::StallProducer(..) => {}
        }
    }

    /// Which producer applications are not done, and the records each still awaits.
    fn producers_waiting(&self) -> String {
        let l = self.shared.borrow();
        let waiting: Vec<String> = (0..PRODUCERS)
            .filter(|p| !l.producers_done.contains(p))
            .map(|p| {
                let pending: Vec<u64> = (l.sent.get(&p).into_iter().flatten())
                    .filter(|(_, (_, s))| matches!(s, Sent::Pending))
                    .map(|(n, _)| *n)
                    .collect();
                format!(
                    "producer {p} awaits {} records (first {:?})",
                    pending.len(),
                    pending.first()
                )
            })
            .collect();
        waiting.join(", ")
    }

    /// Why the run has not settled yet (empty once it has).
    fn unsettled(&self) -> Vec<String> {
        let mut why = Vec::new();
        let l = self.shared.borrow();
        if l.producers_done.len() < PRODUCERS {
            why.push(format!(
                "producers still running: {:?}",
                (0..PRODUCERS)
                    .filter(|p| !l.producers_done.contains(p))
                    .collect::<Vec<_>>()
            ));
        }
        if !l.operator_done {
            why.push("the operator is still running".into());
        }
        if sasl_run() && !l.intruder_done {
            why.push("the intruder is still running".into());
        }
        let w = self.sim.wire();
        why.extend(unread(&w.cluster, &l.handed));
        why.extend(
            unread(&w.cluster, &l.own.handed)
                .into_iter()
                .map(|m| format!("{m} by the readers of group {OWN_GROUP}")),
        );
        let live = self.live().len();
        let (members, stable) = w.cluster.group_members("g");
        if !stable || members.len() != live {
            why.push(format!(
                "group g has {} members (stable: {stable}), {live} members are running",
                members.len()
            ));
        }
        why
    }
}

/// Runs one seed through the user API; every invariant is checked, the first broken one
/// returned.
pub fn run(opts: &Options) -> Result<Report, Failure> {
    let seed = opts.seed;
    let (security, client_security) = security_for(seed);
    apps::set_security(client_security);
    let mut cluster = ClusterConfig {
        dedup: !opts.injected_bug,
        security,
        forget_producers: crate::sim::check::forgets_producers(seed),
        ..ClusterConfig::default()
    };
    if seed.is_multiple_of(3) {
        // Broker 2 runs an older Kafka, and offers no ListGroups (as Kafka-compatible servers
        // that leave group listing out): an admin call that asks every broker meets a
        // broker it cannot ask in the middle of its round.
        let mut older = older_versions();
        older.retain(|v| v.0 != kafka_core::proto::api::ApiKey::ListGroups.key());
        cluster.versions.insert(2, older);
    }
    let mut run = Run {
        sim: Sim::new(seed, cluster, NetConfig::default()),
        shared: Rc::new(RefCell::new(Ledger::default())),
        members: Vec::new(),
        readers: Vec::new(),
        seed,
        cooperative: seed % 2 == 1,
        trace: Trace::new(opts.trace),
    };
    let result = drive(&mut run, opts);
    run.collect_notes();
    match result {
        Ok(mut r) => {
            r.trace_hash = run.trace.hash();
            r.trace = run.trace.take();
            Ok(r)
        }
        Err(mut f) => {
            f.trace = run.trace.take();
            Err(f)
        }
    }
}

fn drive(run: &mut Run, opts: &Options) -> Result<Report, Failure> {
    let seed = opts.seed;
    let stop = at(STOP_SENDING);
    let lanes: Vec<(String, String)> = if seed % 4 == 1 {
        vec![("connections.per.broker".into(), "2".into())]
    } else {
        Vec::new()
    };
    let kv = |pairs: &[(&str, &str)]| -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .chain(lanes.iter().cloned())
            .collect()
    };
    let producers = [
        kv(&[]),
        kv(&[("acks", "1"), ("enable.idempotence", "false")]),
        kv(&[("acks", "0"), ("enable.idempotence", "false")]),
    ];
    for (id, extra) in producers.into_iter().enumerate() {
        let task = apps::producer(id, extra, seed ^ id as u64, stop, run.shared.clone());
        run.sim.spawn_app(task);
    }
    for _ in 0..2 {
        run.add_member();
    }
    for partitions in readers::own_split(seed) {
        run.add_reader(OWN_GROUP, partitions);
    }
    run.add_reader("g", vec![(seed / 3 % 3) as i32]);
    run.sim
        .spawn_app(operator::operator(seed, stop, run.shared.clone()));
    if sasl_run() {
        run.sim
            .spawn_app(intruder::intruder(seed, run.shared.clone()));
    }
    // As in the core simulation, a quarter of the seeds lose the group coordinator's broker
    // for good after the faults.
    let vanish = opts.faults && (seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 62) == 0;
    let mut faults = Faults::new(seed, opts.faults, at(FAULTS_END)).vanish_after(vanish);
    let mut counts = FaultCounts::default();
    let mut committed: BTreeMap<i32, i64> = BTreeMap::new();
    let mut next_settle_check = Instant::from_millis(100);
    // When the last fault (or send) ended, and when every producer application was done after
    // that (the same bound as the core simulation's: see `RECOVERY`).
    let mut quiet_from = stop;
    let mut produced: Option<Instant> = None;
    loop {
        run.sim.run_ready().map_err(Failure::new)?;
        run.collect_notes();
        if let Some(f) = run.shared.borrow_mut().failure.take() {
            return Err(f);
        }
        {
            let mut l = run.shared.borrow_mut();
            let l = &mut *l;
            let cluster = &run.sim.wire().cluster;
            commits_move_forward(
                cluster,
                "g",
                &[&l.handed, &l.outsider_handed],
                &mut l.rewinds,
                &mut committed,
            )?;
            let now = run.sim.now();
            for p in 0..cluster.partition_count("t").unwrap_or(0) as i32 {
                match (cluster.leader("t", p), l.leaderless.get(&p)) {
                    (None, Some(None)) => {}
                    (None, _) => {
                        l.leaderless.insert(p, None);
                        l.notes.push(format!("t-{p} has no leader"));
                    }
                    (Some(n), Some(None)) => {
                        l.leaderless.insert(p, Some(now));
                        l.notes
                            .push(format!("t-{p} has a leader again: broker {n}"));
                    }
                    (Some(_), _) => {}
                }
            }
            let own = &mut l.own;
            commits_move_forward(
                cluster,
                OWN_GROUP,
                &[&own.handed],
                &mut own.rewinds,
                &mut own.seen,
            )?;
        }
        run.replace_dropped_readers();
        // Members that left on their own (dropped) are replaced, so two at least run.
        while run.live().len() < 2 {
            run.add_member();
        }
        let now = run.sim.now();
        if now >= next_settle_check {
            next_settle_check = now + Duration::from_millis(100);
            let healed = now >= at(FAULTS_END) && faults.next_at().is_none();
            if healed && produced.is_none() {
                let done = run.shared.borrow().producers_done.len() == PRODUCERS;
                produced = done.then_some(now);
                if !done && now > quiet_from + RECOVERY {
                    return Err(Failure::new(format!(
                        "producers still waiting {:?} after the last fault ended (at {:?}): {}; after faults heal, a record is delivered within request.timeout.ms and the backoffs, not left to its delivery timeout",
                        now.saturating_duration_since(quiet_from),
                        Duration::from_nanos(quiet_from.as_nanos()),
                        run.producers_waiting()
                    )));
                }
            }
            if now >= at(FAULTS_END) && run.unsettled().is_empty() {
                break;
            }
        }
        let extra = faults
            .next_at()
            .map_or(next_settle_check, |t| t.min(next_settle_check));
        let next = run
            .sim
            .next_due(Some(extra))
            .expect("the settle check is always due");
        if next > at(LIMIT) {
            // The group's latest assignments say who should be reading what.
            let w = run.sim.wire();
            let latest: Vec<String> = w
                .cluster
                .assignments()
                .iter()
                .rev()
                .take(6)
                .map(|(_, generation, member, bytes)| {
                    let tps = kafka_core::group::payload::decode_assignment(bytes);
                    format!("generation {generation}: {member} {tps:?}")
                })
                .collect();
            drop(w);
            return Err(Failure::new(format!(
                "not settled after {LIMIT:?} of virtual time: {} (latest assignments, newest first: {})",
                run.unsettled().join("; "),
                latest.join("; ")
            )));
        }
        run.sim.advance_to(next);
        let now = run.sim.now();
        let mut due = faults.due(now);
        if now >= at(FAULTS_END) && opts.faults {
            due.extend(faults.recover_all());
        }
        for f in due {
            quiet_from = quiet_from.max(now);
            run.apply(f, &mut counts);
        }
    }
    // Every member and reader still running closes, within its timeout.
    for m in &run.members {
        m.ctl.leave.set(true);
    }
    for r in &run.readers {
        r.ctl.leave.set(true);
    }
    let done = || {
        run.members.iter().all(|m| !m.running()) && run.readers.iter().all(|r| r.ctl.finished.get())
    };
    let closing = run.sim.run_until(done, Duration::from_secs(30));
    run.collect_notes();
    if let Some(f) = run.shared.borrow_mut().failure.take() {
        return Err(f);
    }
    closing.map_err(|e| Failure::new(format!("closing the members: {e}")))?;
    let mut report = check_final(run)?;
    report.faults = counts;
    let net = run.sim.wire().net.stats();
    report.faults.connect_refused = net.refused;
    report.faults.conn_reset_mid_stream = net.resets_mid_stream;
    report.faults.producer_unknown = run.sim.wire().cluster.stats().unknown_producer;
    report.virtual_time = Duration::from_nanos(run.sim.now().as_nanos());
    report.polls = run.sim.env().exec.polls();
    report.produce_recovery =
        produced.map_or(Duration::ZERO, |p| p.saturating_duration_since(quiet_from));
    Ok(report)
}

/// Whether this run's clients use SASL (and so the intruder runs).
fn sasl_run() -> bool {
    apps::security().iter().any(|(k, _)| k == "sasl.mechanism")
}

fn check_final(run: &Run) -> Result<Report, Failure> {
    let mut report = Report::default();
    let l = run.shared.borrow();
    let w = run.sim.wire();
    let log = log_by_value(&w.cluster);
    let settings = apps::security();
    let get = |k: &str| {
        settings
            .iter()
            .find(|(key, _)| key == k)
            .map(|(_, v)| v.as_str())
    };
    report.security = match (get("security.protocol"), get("sasl.mechanism")) {
        (None, _) => "PLAINTEXT".into(),
        (Some(p), None) => p.into(),
        (Some(p), Some(m)) => format!("{p} {m}"),
    };
    if let Some(storm) = &w.storm {
        return Err(Failure::new(storm.clone()));
    }
    let stats = w.cluster.stats();
    report.authentications = stats.authentications;
    if stats.expired_sessions > 0 || stats.unauthenticated > 0 || stats.early_reauths > 0 {
        return Err(Failure::new(format!(
            "the brokers closed {} connections for a request after their SASL session ended \
             and {} for one before authenticating, and refused {} re-authentications within a \
             second of the last: the client must re-authenticate in time, not too often, and \
             send nothing first",
            stats.expired_sessions, stats.unauthenticated, stats.early_reauths
        )));
    }
    if stats.tls_failures > 0 {
        return Err(Failure::new(format!(
            "{} TLS sessions failed",
            stats.tls_failures
        )));
    }
    if let Some(v) = log.keys().find(|v| v.starts_with(intruder::VALUE_PREFIX)) {
        return Err(Failure::new(format!(
            "the intruder's record {v} is in the log: it had the wrong password"
        )));
    }
    for (producer, sent) in &l.sent {
        let idempotent = *producer == IDEMPOTENT;
        let mut last_per_partition: BTreeMap<i32, (i64, u64)> = BTreeMap::new();
        for (n, (value, what)) in sent {
            let copies = log.get(value).map_or(&[][..], |c| c.as_slice());
            match what {
                Sent::Pending => {
                    return Err(Failure::new(format!(
                        "producer {producer}: record {n} was awaited and never resolved"
                    )))
                }
                Sent::Dropped => {}
                Sent::Refused(why) if !copies.is_empty() => {
                    return Err(Failure::new(format!(
                        "producer {producer}: record {n} was refused by send ({why}), yet it is in the log at {copies:?}"
                    )))
                }
                Sent::Refused(_) => {}
                Sent::Resolved(Ok(d)) => {
                    report.delivered += 1;
                    if copies.is_empty() {
                        if idempotent {
                            return Err(Failure::new(format!(
                                "producer {producer} (idempotent, acks=all): record {n} acknowledged at {}/{:?} but lost",
                                d.partition, d.offset
                            )));
                        }
                        if *producer == 1 {
                            report.permitted_losses += 1;
                        }
                    }
                    if let (true, Some(o)) = (idempotent, d.offset) {
                        if !copies.contains(&(d.partition, o)) {
                            return Err(Failure::new(format!(
                                "producer {producer}: record {n} acknowledged at {}/{o}, found at {copies:?}",
                                d.partition
                            )));
                        }
                    }
                }
                Sent::Resolved(Err(f)) => {
                    if f.certainty == kafka_core::producer::Certainty::NotSent && !copies.is_empty() {
                        return Err(Failure::new(format!(
                            "producer {producer}: record {n} failed as never written ({}), yet it is in the log at {copies:?}",
                            f.error
                        )));
                    }
                }
            }
            if idempotent {
                written_once_in_order(*producer, *n, copies, &mut last_per_partition)?;
            }
        }
    }
    one_owner_per_generation(&w.cluster)?;
    operator::check_cluster(&w.cluster, &l.topics).map_err(Failure::new)?;
    report.own_consumed = l.own.handed.values().map(|h| h.len() as u64).sum();
    report.outsider_commits = (l.refused_outsiders, l.accepted_outsiders);
    report.admin_calls = l.admin_calls;
    report.consumed = l.consumed;
    report.stalls = l.stalls;
    report.long_waits = l.long_waits;
    report.commits = l.commits;
    report.seeks = l.seeks;
    report.drops = l.drops;
    Ok(report)
}
