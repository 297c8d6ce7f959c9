//! The deterministic simulation (see `tests::sim`): a batch of seeds with faults, each checked
//! against every invariant; replay of one seed; and the check that an injected bug is found and
//! replays bit for bit.
//!
//! - `SIM_SEEDS=N` runs N seeds (default 500), from `SIM_SEED_START=S` (default 0).
//! - `SIM_SEED=S` replays one seed (`SIM_TRACE=FILE` writes its Input/Output trace;
//!   `SIM_DUMP=1` prints the consumers' whole state when a run does not settle).
//! - `SIM_INJECT_BUG=1` runs with a deliberately injected bug (the cluster stops deduplicating
//!   idempotent retries), to see a failure found and replayed.

use tests::sim::{run, FaultCounts, Options, Report};

fn env(name: &str) -> Option<u64> {
    std::env::var(name).ok().map(|v| {
        v.parse()
            .unwrap_or_else(|_| panic!("{name}={v}: expected a number"))
    })
}

fn replay_line(seed: u64) -> String {
    let bug = if injected() { "SIM_INJECT_BUG=1 " } else { "" };
    format!(
        "replay: {bug}SIM_SEED={seed} SIM_TRACE=/tmp/sim-{seed}.trace cargo test -p tests --test simulation replay -- --nocapture"
    )
}

fn injected() -> bool {
    std::env::var("SIM_INJECT_BUG").is_ok_and(|v| v == "1")
}

/// The options of a seed, with the injected bug when `SIM_INJECT_BUG=1`.
fn options(seed: u64) -> Options {
    Options {
        injected_bug: injected(),
        ..Options::seed(seed)
    }
}

#[test]
fn a_clean_run_delivers_and_consumes_everything() {
    let r = run(&Options {
        faults: false,
        ..Options::seed(7)
    })
    .unwrap_or_else(|f| panic!("{f}\n{}", replay_line(7)));
    assert!(r.delivered > 1000, "{r:?}");
    assert_eq!(r.permitted_losses, 0, "no faults, no losses");
    assert!(r.consumed >= r.delivered, "{r:?}");
}

/// Runs seeds `start..start + n` over every core; returns the summed fault counts and
/// permitted losses, or the failures as (seed, message).
fn sweep(
    start: u64,
    n: u64,
    opts: impl Fn(u64) -> Options + Sync,
) -> (Summary, Vec<(u64, String)>) {
    let (reports, failures, wall) = tests::sim::sweep(start, n, |seed| run(&opts(seed)));
    let mut summary = Summary::default();
    for (seed, r) in &reports {
        summary.add(*seed, r);
    }
    summary.wall = wall;
    (summary, failures)
}

/// What a sweep did.
#[derive(Debug, Default)]
struct Summary {
    seeds: u64,
    faults: FaultCounts,
    permitted_losses: u64,
    delivered: u64,
    virtual_time: std::time::Duration,
    wall: std::time::Duration,
    /// Each seed's `produce_recovery`, with the seed.
    recoveries: Vec<(std::time::Duration, u64)>,
}

impl Summary {
    fn add(&mut self, seed: u64, r: &Report) {
        self.seeds += 1;
        self.faults.add(&r.faults);
        self.permitted_losses += r.permitted_losses;
        self.delivered += r.delivered;
        self.virtual_time += r.virtual_time;
        self.recoveries.push((r.produce_recovery, seed));
    }

    /// The producers' recovery after the last fault: median, 99th percentile and worst.
    fn recovery(&mut self) -> String {
        tests::sim::recovery_summary("producers", &mut self.recoveries)
    }
}

/// The seed batch of `scripts/test` (or a longer sweep with `SIM_SEEDS`).
#[test]
fn seed_sweep() {
    if env("SIM_SEED").is_some() {
        return; // a replay runs alone (see `replay`)
    }
    let start = env("SIM_SEED_START").unwrap_or(0);
    let n = env("SIM_SEEDS").unwrap_or(500);
    eprintln!("simulating seeds {start}..{}", start + n);
    let (mut s, failures) = sweep(start, n, options);
    eprintln!("{}", s.recovery());
    eprintln!(
        "{} seeds in {:.1} s ({:.0} seeds/min; virtual/real time {:.0}x); {} records acknowledged, {} acks=1 losses (permitted); faults {:?}",
        s.seeds,
        s.wall.as_secs_f64(),
        s.seeds as f64 / s.wall.as_secs_f64() * 60.0,
        s.virtual_time.as_secs_f64() / s.wall.as_secs_f64(),
        s.delivered,
        s.permitted_losses,
        s.faults
    );
    if !failures.is_empty() {
        let lines: Vec<String> = failures
            .iter()
            .map(|(seed, m)| format!("seed {seed}: {m}\n    {}", replay_line(*seed)))
            .collect();
        panic!(
            "{} of {n} seeds failed:\n{}",
            failures.len(),
            lines.join("\n")
        );
    }
    // The faults really happen: every kind fired in the sweep, and acks=1 lost something
    // (over a sweep of more than a few seeds).
    if n < 50 {
        return;
    }
    assert!(
        s.faults.missing().is_empty(),
        "faults that never fired: {:?}",
        s.faults.missing()
    );
    assert!(
        s.permitted_losses > 0,
        "no acks=1 record was lost: the faults are too tame"
    );
}

/// Replays one seed (`SIM_SEED`), printing its outcome and writing its trace to `SIM_TRACE`;
/// without `SIM_SEED`, checks that two runs of a seed are identical.
#[test]
fn replay() {
    let Some(seed) = env("SIM_SEED") else {
        let a = run(&Options::seed(3)).unwrap();
        let b = run(&Options::seed(3)).unwrap();
        assert_eq!(a.trace_hash, b.trace_hash, "a seed replays bit for bit");
        assert_eq!(a.steps, b.steps);
        let c = run(&Options::seed(4)).unwrap();
        assert_ne!(a.trace_hash, c.trace_hash, "another seed, another run");
        return;
    };
    let out = run(&Options {
        trace: true,
        ..options(seed)
    });
    let (trace, verdict) = match &out {
        Ok(r) => (
            &r.trace,
            format!("ok: {r:?}").replace(&format!("{:?}", r.trace), "[..]"),
        ),
        Err(f) => (&f.trace, format!("FAILED: {}", f.message)),
    };
    if let Ok(path) = std::env::var("SIM_TRACE") {
        std::fs::write(&path, trace.join("\n")).unwrap();
        eprintln!("trace ({} lines) written to {path}", trace.len());
    }
    eprintln!("seed {seed}: {verdict}");
    assert!(out.is_ok(), "seed {seed} failed");
}

/// A deliberately injected bug (the cluster stops deduplicating idempotent retries) is found
/// by the sweep, and its seed replays the same failure bit for bit.
#[test]
fn an_injected_bug_is_found_and_replays_exactly() {
    let buggy = |seed| Options {
        injected_bug: true,
        ..Options::seed(seed)
    };
    let (_, failures) = sweep(0, 200, buggy);
    let (seed, message) = failures
        .first()
        .cloned()
        .expect("the sweep finds the injected bug");
    assert!(
        message.contains("written 2 times") || message.contains("times:"),
        "{message}"
    );
    let a = run(&Options {
        trace: true,
        ..buggy(seed)
    })
    .unwrap_err();
    let b = run(&Options {
        trace: true,
        ..buggy(seed)
    })
    .unwrap_err();
    assert_eq!(a.message, message);
    assert_eq!(a, b, "the replay is identical, trace included");
    assert!(a.trace.len() > 100);
}

/// Seeds the simulator found bugs with, kept as regression tests.
mod regressions {
    use super::*;

    fn seed(seed: u64) {
        if let Err(f) = run(&Options::seed(seed)) {
            panic!("seed {seed}: {f}\n{}", replay_line(seed));
        }
    }

    /// With acks=all, NOT_LEADER_OR_FOLLOWER came after the leader had appended the batch
    /// and lost its leadership; the new leader held it, and the producer failed it as never
    /// written (kafka-core producer; 1 of 78,000 seeds).
    #[test]
    fn seed_66152_not_leader_after_an_append_is_not_a_refusal() {
        seed(66152);
    }

    /// A broker vanished just after it restarted, and on five-minute metadata every producer
    /// waited out its connect (kafka-core network; 1 of 10,000 seeds).
    #[test]
    fn seed_20999_a_hanging_leader_connect_asks_for_metadata() {
        seed(20999);
    }

    /// A long poll to one broker reserved the whole prefetch budget, so partitions led by
    /// another broker were never fetched again (kafka-core fetcher).
    #[test]
    fn seed_27_no_broker_starves_for_the_prefetch_budget() {
        seed(27);
    }

    /// Two fetches whose limits were below a batch were in flight at once, and both brought
    /// a whole first batch (KIP-74): the prefetch budget was exceeded by two batches (kafka-core
    /// fetcher; 34 of 25,000 seeds).
    #[test]
    fn seed_1450_the_budget_is_exceeded_by_one_batch_at_most() {
        seed(1450);
    }

    /// A commit queued before a rebalance still carried a partition the member then lost, and
    /// went out in the next generation, moving back its new owner's committed offset
    /// (kafka-core offsets; 1 of 25,000 seeds).
    #[test]
    fn seed_43579_queued_commits_forget_lost_partitions() {
        seed(43579);
    }

    /// A broker vanished while a produce was in flight to it; 2.5 s into that request's
    /// timeout the producer's periodic metadata went to the broker's idle second lane and
    /// waited out a second request timeout (kafka-core network: the lanes now close with the
    /// connection that timed out; 4 of 100,000 seeds, the others 92461, 96333 and 97113).
    #[test]
    fn seed_84973_a_timed_out_broker_closes_all_its_lanes() {
        for s in [84973, 92461, 96333, 97113] {
            seed(s);
        }
    }

    /// The last in-sync replica was dropped from the ISR when it crashed, leaving the partition
    /// without a leader for good (the simulated cluster, not the client).
    #[test]
    fn seed_259_the_last_in_sync_replica_leads_again() {
        seed(259);
    }
}
