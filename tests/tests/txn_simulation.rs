//! Transactions under simulation (see `tests::txnsim`): a batch of seeds with faults, each
//! checked against every invariant (read_committed sees only and all of committed
//! transactions; the pipeline writes each input once with its offsets; the zombie is fenced);
//! the replay of one seed; and the checks that injected broker bugs (no markers; no aborted
//! transactions in read_committed fetches) are found.
//!
//! - `TXN_SIM_SEEDS=N` runs N seeds (default 200), from `TXN_SIM_SEED_START=S` (default 0).
//! - `TXN_SIM_SEED=S` replays one seed (`TXN_SIM_TRACE=FILE` writes its trace).

use tests::txnsim::{run, Options, TxnFaults};

fn env(name: &str) -> Option<u64> {
    std::env::var(name).ok().map(|v| {
        v.parse()
            .unwrap_or_else(|_| panic!("{name}={v}: expected a number"))
    })
}

fn replay_line(seed: u64) -> String {
    format!(
        "replay: TXN_SIM_SEED={seed} TXN_SIM_TRACE=/tmp/txn-{seed}.trace cargo test -p tests --test txn_simulation replay -- --nocapture"
    )
}

#[test]
fn seed_sweep() {
    if env("TXN_SIM_SEED").is_some() {
        return; // a replay runs alone
    }
    let start = env("TXN_SIM_SEED_START").unwrap_or(0);
    let n = env("TXN_SIM_SEEDS").unwrap_or(200);
    eprintln!("simulating transactions, seeds {start}..{}", start + n);
    let (reports, failures, wall) = tests::sim::sweep(start, n, |seed| run(&Options::seed(seed)));
    let mut faults = TxnFaults::default();
    let (mut inputs, mut committed, mut aborted, mut timeouts, mut read, mut txns) =
        (0, 0, 0, 0, 0, 0);
    let mut tv2 = 0;
    let mut settles = Vec::new();
    for (seed, r) in &reports {
        settles.push((r.settle_after, *seed));
        tv2 += u64::from(r.transaction_version == 2);
        faults += r.faults;
        inputs += r.inputs;
        committed += r.completed.0;
        aborted += r.completed.1;
        timeouts += r.timeouts;
        read += r.read;
        txns += r.transactions;
    }
    eprintln!(
        "{} seeds ({tv2} of transaction version 2, the rest of version 1) in {:.1} s: {inputs} inputs each written once; {txns} transactions by the applications, \
         {committed} committed and {aborted} aborted by the coordinator ({timeouts} for their timeout); \
         {read} records read by read_committed readers; faults {faults:?}",
        reports.len(),
        wall.as_secs_f64()
    );
    eprintln!(
        "{}",
        tests::sim::recovery_summary("the pipeline", &mut settles)
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
    // The faults and the paths they open really happen over the sweep.
    if n >= 16 {
        assert!(
            faults.broker_crashes > 0 && faults.member_crashes > 0,
            "{faults:?}"
        );
        assert!(
            faults.mid_commit_crashes > 0,
            "no crash mid-commit: {faults:?}"
        );
        assert!(faults.txn_moves > 0 && faults.group_moves > 0, "{faults:?}");
        assert!(timeouts > 0, "no transaction timed out");
        assert!(aborted > 0 && committed > 0);
    }
}

/// Replays one seed (`TXN_SIM_SEED`); without it, checks that two runs of a seed are
/// identical.
#[test]
fn replay() {
    let Some(seed) = env("TXN_SIM_SEED") else {
        let a = run(&Options::seed(5)).unwrap_or_else(|f| panic!("{f}"));
        let b = run(&Options::seed(5)).unwrap_or_else(|f| panic!("{f}"));
        assert_eq!(a.trace_hash, b.trace_hash, "a seed replays bit for bit");
        return;
    };
    let out = run(&Options {
        trace: true,
        ..Options::seed(seed)
    });
    let (trace, verdict) = match &out {
        Ok(r) => (
            &r.trace,
            format!("ok: {:?}", (r.inputs, r.pipeline, r.completed, r.faults)),
        ),
        Err(f) => (&f.trace, format!("FAILED: {}", f.message)),
    };
    if let Ok(path) = std::env::var("TXN_SIM_TRACE") {
        std::fs::write(&path, trace.join("\n")).unwrap();
        eprintln!("trace ({} lines) written to {path}", trace.len());
    }
    eprintln!("seed {seed}: {verdict}");
    assert!(out.is_ok(), "seed {seed} failed");
}

/// A coordinator that writes no markers (ended transactions complete without them) is caught:
/// the committed transactions never become readable.
#[test]
fn a_coordinator_that_writes_no_markers_is_caught() {
    let f = run(&Options {
        injected_bug: true,
        faults: false,
        ..Options::seed(1)
    })
    .expect_err("the invariants catch the missing markers");
    assert!(
        f.message.contains("open transactions") && f.message.contains("not settled"),
        "{}",
        f.message
    );
}

/// A broker that does not tell read_committed fetches of aborted transactions is caught: the
/// reader is handed aborted records.
#[test]
fn a_broker_that_hides_aborted_transactions_is_caught() {
    let f = run(&Options {
        no_aborted_list: true,
        faults: false,
        ..Options::seed(1)
    })
    .expect_err("the invariants catch the aborted records");
    assert!(
        f.message.contains("read_committed reader") && f.message.contains("Aborted"),
        "{}",
        f.message
    );
}
