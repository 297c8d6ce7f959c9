//! Transactions under simulation: the user API on [`crate::simrt`] against the simulated
//! cluster's transaction coordinator, in virtual time, with one seed behind every choice.
//!
//! A consume-transform-produce pipeline (the seeder writes the input topic; members of group
//! "pipe" read it and write each batch to the output in one transaction with the batch's
//! offsets) runs while brokers crash and come back, the group and transaction coordinators
//! move, the transaction coordinator's broker crashes while a transaction's markers are being
//! written, members crash (their successors reuse the `transactional.id`, or not, so that the
//! coordinator times the open transaction out) and connections reset. Beside it, a producer
//! aborts every other transaction, a zombie is fenced by its successor, and a read_committed
//! reader reads the output throughout. Invariants, checked on every seed:
//! - the read_committed reader is handed only records of committed transactions (or none of
//!   a transaction), each once, and at the end every committed record, in log order;
//! - each transaction is all or nothing in the log, and as its calls said: `Ok` from
//!   `commit_transaction` means committed, `Ok` from `abort_transaction` means aborted;
//! - the pipeline wrote every input record to the output exactly once as read_committed sees
//!   it, and the group's committed input offsets are the input's ends;
//! - the zombie's commit fails as fenced, and none of its records is committed;
//! - once the last fault has ended, the run settles within 10 s (see `RECOVERY`).

use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet};
use std::rc::Rc;
use std::time::Duration;

use kafka_core::Instant;
use kafka_sim::{ClusterConfig, Fate, NetConfig};

use crate::sim::Failure;
use crate::simrt::{Sim, TaskId, Trace};

pub mod apps;

use apps::{Ledger, MemberCtl, Outcome, Shared, INPUT, OUTPUT};

/// Faults stop then.
const FAULTS_END: Duration = Duration::from_secs(6);
/// The run must have settled by then.
const LIMIT: Duration = Duration::from_secs(120);
/// Input records.
const INPUTS: usize = 300;
/// Once the last fault has ended, the pipeline settles within this: a crashed member's pending
/// JoinGroup holds the join phase until its session expires (`session.timeout.ms`, 3 s, as
/// Kafka keeps a member awaiting join alive), a crashed member elected leader holds the sync
/// phase for another session, and a crashed member's open transaction is aborted by the
/// coordinator after its `transaction.timeout.ms` (3 s). Anything that waited for a delivery
/// timeout (20 s) or the zombie's transaction timeout (20 s) waited for an event nothing would
/// trigger.
const RECOVERY: Duration = Duration::from_secs(10);

/// What a run does.
#[derive(Debug, Clone)]
pub struct Options {
    /// The seed.
    pub seed: u64,
    /// Inject faults.
    pub faults: bool,
    /// Keep a readable trace.
    pub trace: bool,
    /// The injected broker bug: the transaction coordinator writes no markers.
    pub injected_bug: bool,
    /// Another injected broker bug: read_committed fetches are not told of aborted
    /// transactions.
    pub no_aborted_list: bool,
}

impl Options {
    /// A faulty run of `seed`.
    pub fn seed(seed: u64) -> Self {
        Options {
            seed,
            faults: true,
            trace: false,
            injected_bug: false,
            no_aborted_list: false,
        }
    }
}

/// What a run did.
#[derive(Debug, Clone, Default)]
pub struct Report {
    /// Virtual time at the end.
    pub virtual_time: Duration,
    /// A hash of everything on the wire and in the applications, in order.
    pub trace_hash: u64,
    /// The trace, when asked for.
    pub trace: Vec<String>,
    /// Input records, each in the output once.
    pub inputs: u64,
    /// Pipeline transactions committed, and aborted.
    pub pipeline: (u64, u64),
    /// Transactions the applications ran.
    pub transactions: u64,
    /// Transactions completed by the coordinator: committed, aborted.
    pub completed: (u64, u64),
    /// Transactions the coordinator aborted for their timeout.
    pub timeouts: u64,
    /// Records the read_committed reader was handed.
    pub read: u64,
    /// The transaction version the cluster finalized, which every producer spoke.
    pub transaction_version: u8,
    /// Faults: broker crashes, group coordinator moves, transaction coordinator moves,
    /// crashes of the transaction coordinator's broker mid-commit, member crashes,
    /// connection resets.
    pub faults: TxnFaults,
    /// From the end of the last fault (the faulty phase, or a broker's restart after it) to
    /// the moment the run settled: every input written once, no transaction open.
    pub settle_after: Duration,
}

/// The faults of a run.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TxnFaults {
    /// Broker crashes (the mid-commit ones included).
    pub broker_crashes: u64,
    /// Group coordinator moves.
    pub group_moves: u64,
    /// Transaction coordinator moves (crashes of its broker included).
    pub txn_moves: u64,
    /// Crashes of the transaction coordinator's broker while markers were being written.
    pub mid_commit_crashes: u64,
    /// Pipeline members crashed.
    pub member_crashes: u64,
    /// Connections reset.
    pub conn_resets: u64,
}

impl std::ops::AddAssign for TxnFaults {
    fn add_assign(&mut self, o: Self) {
        self.broker_crashes += o.broker_crashes;
        self.group_moves += o.group_moves;
        self.txn_moves += o.txn_moves;
        self.mid_commit_crashes += o.mid_commit_crashes;
        self.member_crashes += o.member_crashes;
        self.conn_resets += o.conn_resets;
    }
}

struct Member {
    slot: usize,
    task: TaskId,
    ctl: Rc<MemberCtl>,
    crashed: bool,
}

struct Run {
    sim: Sim,
    shared: Shared,
    members: Vec<Member>,
    next_slot: usize,
    seed: u64,
    picks: u64,
    trace: Trace,
    faults: TxnFaults,
    /// A broker down and when it comes back.
    down: Option<(i32, Instant)>,
    /// Crash the transaction coordinator's broker at the next commit's markers.
    armed: bool,
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

    fn pick(&mut self, n: u64) -> u64 {
        self.picks = self
            .picks
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (self.picks >> 33) % n.max(1)
    }

    fn start_member(&mut self, slot: usize) {
        let ctl = Rc::new(MemberCtl::default());
        let seed = self.seed ^ (self.members.len() as u64) << 16;
        let task = self
            .sim
            .spawn_app(apps::member(slot, seed, ctl.clone(), self.shared.clone()));
        self.note(format!("member pipe-{slot} starts (task {task})"));
        self.members.push(Member {
            slot,
            task,
            ctl,
            crashed: false,
        });
    }

    fn running(&self) -> Vec<usize> {
        (0..self.members.len())
            .filter(|i| !self.members[*i].crashed && !self.members[*i].ctl.finished.get())
            .collect()
    }

    /// Members that ended on their own (after an abort, or fenced) start again on their slot.
    fn restart_ended(&mut self) {
        let ended: Vec<usize> = (0..self.members.len())
            .filter(|i| {
                let m = &self.members[*i];
                !m.crashed && m.ctl.finished.get() && !m.ctl.leave.get()
            })
            .collect();
        for i in ended {
            self.members[i].ctl.leave.set(true); // replaced: not again
            let slot = self.members[i].slot;
            self.start_member(slot);
        }
    }

    fn crash_broker(&mut self, node: i32, back: Instant) {
        let t = self.sim.env().sim_now();
        let mut w = self.sim.wire();
        w.cluster.crash(node);
        w.drain_cluster(t);
        drop(w);
        self.faults.broker_crashes += 1;
        self.down = Some((node, back));
    }

    /// One random fault.
    fn fault(&mut self) {
        let now = self.sim.now();
        let back = now + Duration::from_millis(300 + self.pick(600));
        match self.pick(7) {
            0 | 1 if self.down.is_none() => {
                let node = 1 + self.pick(3) as i32;
                self.note(format!("fault: broker {node} crashes"));
                self.crash_broker(node, back);
            }
            2 if self.down.is_none() => {
                // The group coordinator's broker (kill -9 of its node).
                let node = self.sim.wire().cluster.group_coordinator();
                if let Some(node) = node {
                    self.note(format!(
                        "fault: the group coordinator's broker {node} crashes"
                    ));
                    self.crash_broker(node, back);
                }
            }
            3 => {
                self.note("fault: the group coordinator moves".into());
                let t = self.sim.env().sim_now();
                let mut w = self.sim.wire();
                w.cluster.move_coordinator();
                w.drain_cluster(t);
                self.faults.group_moves += 1;
            }
            4 => {
                self.note("fault: the transaction coordinator moves".into());
                self.sim.wire().cluster.move_txn_coordinator();
            }
            5 => {
                self.note(
                    "fault: armed: the transaction coordinator's broker crashes mid-commit".into(),
                );
                self.armed = true;
            }
            _ => {
                let running = self.running();
                if running.is_empty() || self.pick(2) == 0 {
                    let t = self.sim.env().sim_now();
                    let mut w = self.sim.wire();
                    let open = w.net.open();
                    if !open.is_empty() {
                        let k = open[(w.net.random() % open.len() as u64) as usize];
                        w.net.reset(k, t);
                        drop(w);
                        self.faults.conn_resets += 1;
                        self.note("fault: a connection resets".into());
                    }
                    return;
                }
                let i = running[self.pick(running.len() as u64) as usize];
                self.members[i].crashed = true;
                let n = self.sim.crash(self.members[i].task);
                self.faults.member_crashes += 1;
                // Its successor takes its transactional.id (fencing it), or a new one (its
                // open transaction then waits for the coordinator's timeout).
                let slot = if self.pick(3) == 0 {
                    self.next_slot += 1;
                    self.next_slot - 1
                } else {
                    self.members[i].slot
                };
                self.note(format!(
                    "fault: member pipe-{} crashes ({n} tasks); pipe-{slot} follows",
                    self.members[i].slot
                ));
                self.start_member(slot);
            }
        }
    }

    /// Why the run has not settled yet (empty once it has).
    fn unsettled(&self) -> Vec<String> {
        let mut why = Vec::new();
        let l = self.shared.borrow();
        if !l.seeded {
            why.push("the seeder is still writing".into());
        }
        if !l.aborter_done {
            why.push("the aborting producer is still running".into());
        }
        if !l.zombie_done {
            why.push("the zombie's successor is still running".into());
        }
        let w = self.sim.wire();
        let c = &w.cluster;
        if c.txn_preparing() {
            why.push("a transaction's markers are not all down".into());
        }
        let inputs = input_values(c);
        let mut outputs: BTreeSet<String> = BTreeSet::new();
        let mut open = 0;
        for p in 0..3 {
            for (_, v, fate) in c.records_with_fates(OUTPUT, p) {
                match fate {
                    Fate::Committed => {
                        outputs.insert(input_of(&text(&v)).to_owned());
                    }
                    Fate::Open => open += 1,
                    _ => {}
                }
            }
        }
        if open > 0 {
            why.push(format!(
                "{open} records of {OUTPUT} are in open transactions"
            ));
        }
        let missing = inputs.iter().filter(|v| !outputs.contains(*v)).count();
        if missing > 0 {
            why.push(format!("{missing} inputs have no committed output yet"));
        }
        for p in 0..3 {
            let end = c.high_watermark(INPUT, p);
            let committed = c.committed_offset(apps::GROUP, INPUT, p).map(|c| c.0);
            if committed != Some(end) {
                why.push(format!(
                    "group {} committed {committed:?} for {INPUT}-{p}, whose end is {end}",
                    apps::GROUP
                ));
            }
            let visible = c
                .records_with_fates(OUTPUT, p)
                .iter()
                .filter(|r| matches!(r.2, Fate::Committed | Fate::Plain))
                .count();
            let read = l.read.get(&p).map_or(0, |r| r.len());
            if read < visible {
                why.push(format!(
                    "the reader read {read} of the {visible} committed records of {OUTPUT}-{p}"
                ));
            }
        }
        why
    }
}

fn text(v: &Option<bytes::Bytes>) -> String {
    String::from_utf8_lossy(v.as_deref().unwrap_or_default()).to_string()
}

/// The input an output value came from ("out-7@12" -> "7"), or "" for other records.
fn input_of(v: &str) -> &str {
    v.strip_prefix("out-")
        .and_then(|v| v.split('@').next())
        .unwrap_or("")
}

fn input_values(c: &kafka_sim::SimCluster) -> Vec<String> {
    (0..3)
        .flat_map(|p| c.committed_records(INPUT, p))
        .map(|(_, v)| text(&v))
        .collect()
}

/// Runs one seed; every invariant is checked, the first broken one returned.
pub fn run(opts: &Options) -> Result<Report, Failure> {
    let cluster = ClusterConfig {
        topics: vec![(INPUT.into(), 3), (OUTPUT.into(), 3)],
        markers: !opts.injected_bug,
        aborted_list: !opts.no_aborted_list,
        // Odd seeds: a cluster of transaction version 1; even ones: version 2 (KIP-890).
        transaction_version: if opts.seed % 2 == 1 { 1 } else { 2 },
        ..ClusterConfig::default()
    };
    let mut run = Run {
        sim: Sim::new(opts.seed, cluster, NetConfig::default()),
        shared: Rc::new(RefCell::new(Ledger::default())),
        members: Vec::new(),
        next_slot: 2,
        seed: opts.seed,
        picks: opts.seed ^ 0x7478_6e73,
        trace: Trace::new(opts.trace),
        faults: TxnFaults::default(),
        down: None,
        armed: false,
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
    run.sim.spawn_app(apps::seeder(INPUTS, run.shared.clone()));
    for slot in 0..2 {
        run.start_member(slot);
    }
    run.sim.spawn_app(apps::aborter(16, run.shared.clone()));
    run.sim.spawn_app(apps::zombie(run.shared.clone()));
    let reader_ctl = Rc::new(MemberCtl::default());
    run.sim
        .spawn_app(apps::reader(reader_ctl.clone(), run.shared.clone()));
    let mut next_fault = at(Duration::from_millis(400 + opts.seed % 300));
    let mut next_check = at(Duration::from_millis(100));
    // When the last fault ended: the faulty phase, or a broker's restart after it.
    let mut quiet_from = at(FAULTS_END);
    let settled_at: Instant;
    loop {
        run.sim.run_ready().map_err(Failure::new)?;
        run.collect_notes();
        if let Some(f) = run.shared.borrow_mut().failure.take() {
            return Err(f);
        }
        run.restart_ended();
        let now = run.sim.now();
        let preparing = run.sim.wire().cluster.txn_preparing();
        if run.armed && run.down.is_none() && preparing {
            run.armed = false;
            let node = run.sim.wire().cluster.txn_coordinator();
            if let Some(node) = node {
                run.note(format!(
                    "fault: the transaction coordinator's broker {node} crashes mid-commit"
                ));
                run.faults.mid_commit_crashes += 1;
                let back = now + Duration::from_millis(500);
                run.crash_broker(node, back);
            }
        }
        if let Some((node, back)) = run.down {
            if now >= back {
                run.note(format!("broker {node} restarts"));
                run.sim.wire().cluster.restart(node);
                run.down = None;
                quiet_from = quiet_from.max(now);
            }
        }
        if opts.faults && now >= next_fault && now < at(FAULTS_END) {
            run.fault();
            next_fault = now + Duration::from_millis(250 + run.pick(500));
        }
        if now >= next_check {
            next_check = now + Duration::from_millis(100);
            if now >= at(FAULTS_END) && run.down.is_none() && run.unsettled().is_empty() {
                settled_at = now;
                break;
            }
            if run.down.is_none() && now > quiet_from + RECOVERY {
                return Err(Failure::new(format!(
                    "not settled {:?} after the last fault ended (at {:?}): {}",
                    now.saturating_duration_since(quiet_from),
                    Duration::from_nanos(quiet_from.as_nanos()),
                    run.unsettled().join("; ")
                )));
            }
        }
        let mut extra = next_check;
        if opts.faults && now < at(FAULTS_END) {
            extra = extra.min(next_fault);
        }
        if let Some((_, back)) = run.down {
            extra = extra.min(back);
        }
        let next = run
            .sim
            .next_due(Some(extra))
            .expect("the settle check is always due");
        if next > at(LIMIT) {
            let w = run.sim.wire();
            let (members, stable) = w.cluster.group_members(apps::GROUP);
            let latest: Vec<String> = w
                .cluster
                .assignments()
                .iter()
                .rev()
                .take(4)
                .map(|(_, generation, member, bytes)| {
                    let tps = kafka_core::group::payload::decode_assignment(bytes);
                    format!("generation {generation}: {member} {tps:?}")
                })
                .collect();
            let state = format!(
                "latest assignments {latest:?}; group members {members:?} (stable: {stable}); offsets in open transactions {:?}; transactions {:?}",
                w.cluster.pending_txn_offsets(),
                w.cluster.txn_states()
            );
            drop(w);
            let state = format!(
                "{state}; members' positions {:?}",
                run.shared.borrow().positions
            );
            return Err(Failure::new(format!(
                "not settled after {LIMIT:?} of virtual time: {} ({state})",
                run.unsettled().join("; ")
            )));
        }
        run.sim.advance_to(next);
    }
    for m in &run.members {
        m.ctl.leave.set(true);
    }
    reader_ctl.leave.set(true);
    let members: Vec<Rc<MemberCtl>> = run
        .members
        .iter()
        .filter(|m| !m.crashed)
        .map(|m| m.ctl.clone())
        .collect();
    let closing = run.sim.run_until(
        || members.iter().all(|c| c.finished.get()) && reader_ctl.finished.get(),
        Duration::from_secs(30),
    );
    run.collect_notes();
    if let Some(f) = run.shared.borrow_mut().failure.take() {
        return Err(f);
    }
    closing.map_err(|e| Failure::new(format!("closing the applications: {e}")))?;
    let mut report = check_final(run)?;
    report.virtual_time = Duration::from_nanos(run.sim.now().as_nanos());
    report.faults = run.faults;
    report.faults.txn_moves = run.sim.wire().cluster.stats().txn_coordinator_moves;
    report.settle_after = settled_at.saturating_duration_since(quiet_from);
    Ok(report)
}

fn check_final(run: &Run) -> Result<Report, Failure> {
    let l = run.shared.borrow();
    let w = run.sim.wire();
    let c = &w.cluster;
    let fail = |m: String| Err(Failure::new(m));
    // Per output value: its copies in the log with their fates.
    let mut fates: BTreeMap<String, Vec<(i32, i64, Fate)>> = BTreeMap::new();
    let mut visible: BTreeMap<i32, Vec<(i64, String)>> = BTreeMap::new();
    for p in 0..3 {
        for (o, v, fate) in c.records_with_fates(OUTPUT, p) {
            let v = text(&v);
            if matches!(fate, Fate::Committed | Fate::Plain) {
                visible.entry(p).or_default().push((o, v.clone()));
            }
            fates.entry(v).or_default().push((p, o, fate));
        }
    }
    // The reader: exactly what read_committed must see, in order.
    for p in 0..3 {
        let read = l.read.get(&p).cloned().unwrap_or_default();
        let want = visible.get(&p).cloned().unwrap_or_default();
        if let Some(i) = (0..read.len().max(want.len())).find(|i| read.get(*i) != want.get(*i)) {
            let bad = read.get(i);
            let why = match bad.and_then(|(_, v)| fates.get(v)) {
                Some(f) => format!("its copies in the log: {f:?}"),
                None => "it is not in the log".into(),
            };
            return fail(format!(
                "the read_committed reader of {OUTPUT}-{p}, record {i}: handed {bad:?}, the log's committed records have {:?} ({why})",
                want.get(i)
            ));
        }
    }
    // Each transaction: all or nothing, and as its calls said.
    for t in &l.txns {
        let committed = t
            .values
            .iter()
            .filter(|v| {
                fates
                    .get(*v)
                    .is_some_and(|f| f.iter().any(|c| c.2 == Fate::Committed))
            })
            .count();
        let all = committed == t.values.len();
        let ok = match t.outcome {
            Outcome::Committed => all,
            Outcome::Aborted => committed == 0,
            // A crashed member's transaction, or a failed commit: all or nothing.
            Outcome::Open | Outcome::Unknown => all || committed == 0,
        };
        if !ok {
            return fail(format!(
                "a transaction of {} that ended {:?} has {committed} of its {} records committed: {:?}",
                t.who,
                t.outcome,
                t.values.len(),
                t.values
            ));
        }
    }
    // Exactly once: every input once in the output as read_committed sees it.
    let inputs = input_values(c);
    let mut outputs: BTreeMap<&str, Vec<(&str, i32, i64)>> = BTreeMap::new();
    for (v, copies) in &fates {
        for (p, o, fate) in copies {
            if *fate == Fate::Committed && v.starts_with("out-") {
                outputs.entry(input_of(v)).or_default().push((v, *p, *o));
            }
        }
    }
    for v in &inputs {
        let copies = outputs.remove(v.as_str()).unwrap_or_default();
        if copies.len() != 1 {
            return fail(format!(
                "input {v} is committed {} times in the output: {copies:?}",
                copies.len()
            ));
        }
    }
    if let Some((v, copies)) = outputs.iter().next() {
        return fail(format!("the output has {copies:?}, of no input ({v:?})"));
    }
    for p in 0..3 {
        let end = c.high_watermark(INPUT, p);
        let committed = c.committed_offset(apps::GROUP, INPUT, p).map(|c| c.0);
        if committed != Some(end) {
            return fail(format!(
                "group {} committed {committed:?} for {INPUT}-{p}, whose end is {end}",
                apps::GROUP
            ));
        }
    }
    // The zombie.
    match &l.zombie_commit {
        Some(Err(kafka_driver::TransactionError::Fatal(
            kafka_driver::ErrorCode::ProducerFenced | kafka_driver::ErrorCode::InvalidProducerEpoch,
        ))) => {}
        other => {
            return fail(format!(
                "the zombie's commit returned {other:?}, not fenced"
            ))
        }
    }
    // Every producer speaks the transaction version the cluster finalized.
    let level = if run.seed % 2 == 1 { 1 } else { 2 };
    if l.versions.keys().any(|v| *v != level) {
        return fail(format!(
            "the cluster finalized transaction.version {level}; the producers spoke {:?}",
            l.versions
        ));
    }
    let stats = c.stats();
    Ok(Report {
        transaction_version: level,
        inputs: inputs.len() as u64,
        pipeline: l.pipeline,
        transactions: l.txns.len() as u64,
        completed: stats.txn_completed,
        timeouts: stats.txn_timeouts,
        read: l.read.values().map(|r| r.len() as u64).sum(),
        ..Report::default()
    })
}
