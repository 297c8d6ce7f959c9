//! The whole client under simulation (see `tests::apisim`): the user API on the deterministic
//! `SimRuntime`, a batch of seeds with faults, each checked against every invariant; replay of
//! one seed; and the check that an injected bug is found and replays bit for bit.
//!
//! - `API_SIM_SEEDS=N` runs N seeds (default 500), from `API_SIM_SEED_START=S` (default 0).
//! - `API_SIM_SEED=S` replays one seed (`API_SIM_TRACE=FILE` writes its trace; `SIM_LOG=FILTER`
//!   logs the client's tracing events, stamped with virtual time, to stderr).
//! - `SIM_INJECT_BUG=1` runs with the cluster's deduplication of idempotent retries off.

use tests::apisim::{run, Report};
use tests::sim::faults::FaultCounts;
use tests::sim::Options;

fn env(name: &str) -> Option<u64> {
    std::env::var(name).ok().map(|v| {
        v.parse()
            .unwrap_or_else(|_| panic!("{name}={v}: expected a number"))
    })
}

fn injected() -> bool {
    std::env::var("SIM_INJECT_BUG").is_ok_and(|v| v == "1")
}

fn replay_line(seed: u64) -> String {
    let bug = if injected() { "SIM_INJECT_BUG=1 " } else { "" };
    format!(
        "replay: {bug}API_SIM_SEED={seed} API_SIM_TRACE=/tmp/api-sim-{seed}.trace cargo test -p tests --test api_simulation replay -- --nocapture"
    )
}

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

/// The seed batch of `scripts/test` (or a longer sweep with `API_SIM_SEEDS`).
#[test]
fn seed_sweep() {
    if env("API_SIM_SEED").is_some() {
        return; // a replay runs alone
    }
    let start = env("API_SIM_SEED_START").unwrap_or(0);
    let n = env("API_SIM_SEEDS").unwrap_or(500);
    eprintln!(
        "simulating seeds {start}..{} through the user API",
        start + n
    );
    let (reports, failures, wall) = tests::sim::sweep(start, n, |seed| run(&options(seed)));
    let mut faults = FaultCounts::default();
    let mut sum = Report::default();
    let mut secured: std::collections::BTreeMap<String, u64> = Default::default();
    let mut recoveries = Vec::new();
    for (seed, r) in &reports {
        recoveries.push((r.produce_recovery, *seed));
        *secured.entry(r.security.clone()).or_default() += 1;
        sum.authentications.0 += r.authentications.0;
        sum.authentications.1 += r.authentications.1;
        faults.add(&r.faults);
        sum.delivered += r.delivered;
        sum.consumed += r.consumed;
        sum.permitted_losses += r.permitted_losses;
        sum.stalls += r.stalls;
        sum.long_waits += r.long_waits;
        sum.commits.0 += r.commits.0;
        sum.commits.1 += r.commits.1;
        sum.seeks += r.seeks;
        sum.drops += r.drops;
        sum.own_consumed += r.own_consumed;
        sum.outsider_commits.0 += r.outsider_commits.0;
        sum.outsider_commits.1 += r.outsider_commits.1;
        sum.admin_calls.0 += r.admin_calls.0;
        sum.admin_calls.1 += r.admin_calls.1;
        sum.virtual_time += r.virtual_time;
        sum.polls += r.polls;
    }
    eprintln!(
        "{}",
        tests::sim::recovery_summary("producers", &mut recoveries)
    );
    eprintln!(
        "{} seeds in {:.1} s ({:.0} seeds/min; virtual/real time {:.0}x; {} task polls); {} records acknowledged, {} handed to members, {} acks=1 losses (permitted); {} stalls past max.poll.interval.ms, {} long waits in next_event, {} of {} manual commits succeeded, {} seeks, {} members dropped; {} records read by the assigning readers of group a, the outsider's commits into g refused as GroupInUse {} times and accepted into an empty group {} times; {} of {} admin calls answered in time; faults {faults:?}",
        reports.len(),
        wall.as_secs_f64(),
        reports.len() as f64 / wall.as_secs_f64() * 60.0,
        sum.virtual_time.as_secs_f64() / wall.as_secs_f64(),
        sum.polls,
        sum.delivered,
        sum.consumed,
        sum.permitted_losses,
        sum.stalls,
        sum.long_waits,
        sum.commits.1,
        sum.commits.0,
        sum.seeks,
        sum.drops,
        sum.own_consumed,
        sum.outsider_commits.0,
        sum.outsider_commits.1,
        sum.admin_calls.1,
        sum.admin_calls.0,
    );
    eprintln!(
        "security: seeds by protocol {secured:?}; {} SASL authentications (re-authentications included), {} refused (the intruder's wrong password)",
        sum.authentications.0, sum.authentications.1
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
    if n < 50 {
        return;
    }
    // Producer stalls and brokers that vanish for good are the core simulation's (this one's
    // runtime does not model stalls; its settling assumes three brokers).
    let missing: Vec<&str> = (faults.missing().into_iter())
        .filter(|k| *k != "client stall" && *k != "broker vanished")
        .collect();
    assert!(missing.is_empty(), "faults that never fired: {missing:?}");
    assert!(
        sum.stalls > 0 && sum.long_waits > 0 && sum.seeks > 0 && sum.drops > 0,
        "{sum:?}"
    );
    assert!(sum.commits.1 > 0, "no manual commit succeeded: {sum:?}");
    assert!(
        secured.len() == 5 && sum.authentications.0 > 0 && sum.authentications.1 > 0,
        "every security mode runs, authenticates, and refuses the intruder: {secured:?} {sum:?}"
    );
    assert!(
        sum.own_consumed > 0 && sum.outsider_commits.0 > 0 && sum.admin_calls.1 > 0,
        "the assigning readers, the outsider or the operator did nothing: {sum:?}"
    );
}

/// Replays one seed (`API_SIM_SEED`), writing its trace to `API_SIM_TRACE`; without it,
/// checks that two runs of a seed are identical.
#[test]
fn replay() {
    tests::simrt::log_from_env();
    let Some(seed) = env("API_SIM_SEED") else {
        let a = run(&Options::seed(3)).unwrap_or_else(|f| panic!("{f}\n{}", replay_line(3)));
        let b = run(&Options::seed(3)).unwrap();
        assert_eq!(a.trace_hash, b.trace_hash, "a seed replays bit for bit");
        assert_eq!(a.polls, b.polls);
        let c = run(&Options::seed(4)).unwrap_or_else(|f| panic!("{f}\n{}", replay_line(4)));
        assert_ne!(a.trace_hash, c.trace_hash, "another seed, another run");
        // Seed 3 runs SASL_SSL with SCRAM-SHA-512; seeds 5 and 7 replay too (SSL, and
        // SASL_PLAINTEXT): TLS's random bytes never change a length, so a seed still replays.
        for seed in [5, 7] {
            let a =
                run(&Options::seed(seed)).unwrap_or_else(|f| panic!("{f}\n{}", replay_line(seed)));
            let b = run(&Options::seed(seed)).unwrap();
            assert_eq!(
                a.trace_hash, b.trace_hash,
                "seed {seed} ({}) replays bit for bit",
                a.security
            );
        }
        return;
    };
    let out = run(&Options {
        trace: true,
        ..options(seed)
    });
    let (trace, verdict) = match &out {
        Ok(r) => (
            &r.trace,
            format!(
                "ok: {:?}",
                Report {
                    trace: Vec::new(),
                    ..r.clone()
                }
            ),
        ),
        Err(f) => (&f.trace, format!("FAILED: {}", f.message)),
    };
    if let Ok(path) = std::env::var("API_SIM_TRACE") {
        std::fs::write(&path, trace.join("\n")).unwrap();
        eprintln!("trace ({} lines) written to {path}", trace.len());
    }
    eprintln!("seed {seed}: {verdict}");
    assert!(out.is_ok(), "seed {seed} failed");
}

/// A deliberately injected bug (the cluster stops deduplicating idempotent retries) is found,
/// and its seed replays the same failure bit for bit.
#[test]
fn an_injected_bug_is_found_and_replays_exactly() {
    let buggy = |seed| Options {
        injected_bug: true,
        ..Options::seed(seed)
    };
    let (_, failures, _) = tests::sim::sweep(0, 100, |seed| run(&buggy(seed)));
    let (seed, message) = failures
        .iter()
        .find(|(_, m)| m.contains("written 2 times") || m.contains("times:"))
        .cloned()
        .unwrap_or_else(|| panic!("the sweep finds the injected bug: {failures:?}"));
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

/// Seeds the user-API simulation found bugs with, kept as regression tests (each failed
/// before its fix, on the code of the time).
mod regressions {
    use super::*;

    fn seed(seed: u64) {
        if let Err(f) = run(&Options::seed(seed)) {
            panic!("seed {seed}: {f}\n{}", replay_line(seed));
        }
    }

    /// The producer knew only the broker that then vanished, and sent its metadata request to
    /// that broker's second lane instead of starting over from bootstrap.servers: not settled
    /// 6 s after the faults (kafka-core network; 1 of 1,500 seeds with the vanish fault).
    #[test]
    fn seed_733_a_vanished_brokers_other_lane_is_not_asked_first() {
        seed(733);
    }

    /// A member whose application stalled past max.poll.interval.ms with an eager revocation
    /// unacknowledged kept the revocation open after its membership was lost; the report of
    /// what it had taken in an earlier tenure, sent when it came back, was accepted, and its
    /// acknowledgement's commit went out in its next generation, moving t-1 back from 3082 to
    /// 1208 (kafka-core: the revocation is void and reported lost; kafka-driver: reports carry
    /// their tenure, and one from an earlier tenure is dropped; either fix alone passes it).
    #[test]
    fn seed_24694_a_stale_report_is_not_committed_in_a_later_generation() {
        seed(24694);
    }

    /// A cooperative member whose session expired was refused its rejoin as
    /// UNKNOWN_MEMBER_ID, joined again as a new member still claiming its partitions, was
    /// handed one back as though kept, and committed its old position over the new owner's
    /// (kafka-core membership: a JoinGroup refused as UNKNOWN_MEMBER_ID loses the partitions).
    #[test]
    fn seed_4619_a_rejoin_refused_as_unknown_member_loses_the_partitions() {
        seed(4619);
    }

    /// A member whose application stalled 4.52 s (max.poll.interval.ms 4 s) kept its
    /// partitions and was handed more records: a heartbeat due while the coordinator's broker
    /// was down had passed, and the fetcher skipped the membership's whole wake-up time for it,
    /// the max.poll.interval.ms deadline with it (kafka-core: passed times are skipped one by
    /// one).
    #[test]
    fn seed_5201_max_poll_interval_counts_from_the_call_not_from_when_it_was_noticed() {
        seed(5201);
    }

    /// A member that lost its partitions while its application stalled, and was given one
    /// back in a new generation, auto-committed what it had consumed in the old tenure over
    /// the newer commit of the partition's owner in between (kafka-core offsets: a new tenure
    /// forgets earlier consumed offsets; 14 of the 18 such seeds of the sweep's first 57,477).
    #[test]
    fn seed_1925_a_new_tenure_does_not_commit_an_old_tenures_offsets() {
        seed(1925);
    }

    /// A request sent while the SASL session was valid, held by a black hole until after it
    /// ended: the broker closes the connection on receipt, as Kafka does, and the client
    /// reconnects; the simulation had blamed the client for re-authenticating late.
    #[test]
    fn seed_723_a_request_held_past_the_session_end_is_not_a_late_reauthentication() {
        seed(723);
    }

    /// The admin client spun: an operation whose retry time had passed while it waited for
    /// a connection kept that time as its next wake-up (kafka-core admin; 137 of the first
    /// 57,477 seeds of the 100,000-seed sweep live-locked on it).
    #[test]
    fn seed_1169_an_admin_retry_waiting_for_a_connection_does_not_spin() {
        seed(1169);
    }

    /// An assigning reader's commit outlived default.api.timeout.ms by 4 s: after
    /// NOT_COORDINATOR its FindCoordinator retry was never woken for outside the group, and a
    /// passed retry time hid the commit's deadline from `poll_timeout` (kafka-core membership
    /// and offsets).
    #[test]
    fn seed_145_a_commit_outside_the_group_ends_within_default_api_timeout() {
        seed(145);
    }

    /// A reader that sought back got the records of the old position first: the driver had
    /// handed them to an answer waiting on the handle before the seek (kafka-driver handle:
    /// seek counts).
    #[test]
    fn seed_467_records_fetched_before_a_seek_are_dropped() {
        seed(467);
    }

    /// A fetch answer from before a rebalance was taken for the reassigned partition beside
    /// its own fetch: records handed twice in one tenure (kafka-core fetcher: partition
    /// generations; 31 of 500 seeds).
    #[test]
    fn seed_16_an_answer_from_before_a_rebalance_is_not_taken_for_the_new_tenure() {
        seed(16);
    }

    /// A member whose coordinator was unreachable when its application stalled past
    /// max.poll.interval.ms kept its partitions and handed out their records (kafka-core
    /// membership: the poll deadline is checked on its own timer; 178 of 500 seeds with the
    /// related handle bugs).
    #[test]
    fn seed_13_a_stall_loses_the_partitions_even_without_a_coordinator() {
        seed(13);
    }

    /// Records handed over before a loss waited in the handle's outstanding answer while the
    /// application stalled, and came out before `Lost` (kafka-driver consumer handle).
    #[test]
    fn seed_54_an_answer_that_waited_through_a_stall_is_checked_against_revocations() {
        seed(54);
    }

    /// A member stalled past max.poll.interval.ms rejoined in the background (the driver
    /// joins without the application) and kept its partitions (kafka-core membership: the
    /// poll deadline applies while joining too).
    #[test]
    fn seed_471_a_stall_during_a_rebalance_still_loses_the_partitions() {
        seed(471);
    }

    /// A manual commit after a stall never resolved: commits waited for a membership that
    /// had left (kafka-core offsets: commits outside a generation fail at once).
    #[test]
    fn seed_386_a_commit_after_a_stall_resolves() {
        seed(386);
    }
}
