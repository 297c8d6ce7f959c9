//! The CLI against real brokers (Tansu, and Apache Kafka itself): round trips with keys, headers, partitions, codecs
//! and formats; metadata and topics; perf; and the one-line errors.

use std::collections::BTreeSet;
use std::io::Write;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use tests::brokers::{Kind, TestBroker as Broker};

/// `kafka-cli -b broker args...`, running, its standard streams piped.
fn spawn(broker: &str, args: &[&str]) -> Child {
    Command::new(env!("CARGO_BIN_EXE_kafka-cli"))
        .arg("-b")
        .arg(broker)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start kafka-cli")
}

fn cli(broker: &str, args: &[&str], stdin: &str) -> Output {
    let mut child = spawn(broker, args);
    child
        .stdin
        .take()
        .unwrap()
        .write_all(stdin.as_bytes())
        .unwrap();
    child.wait_with_output().unwrap()
}

fn ok(out: &Output) -> String {
    assert!(
        out.status.success(),
        "failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout.clone()).unwrap()
}

/// Exit status 1 and one stderr line that contains `needle`.
fn fails_with(out: &Output, needle: &str) {
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "stderr: {err}");
    assert_eq!(err.trim_end().lines().count(), 1, "one line: {err}");
    assert!(err.contains(needle), "{needle:?} not in: {err}");
}

fn produce_then_consume_with_keys_headers_partitions_and_formats(kind: Kind) {
    let broker = Broker::shared(kind, "cli");
    let b = broker.addr.as_str();
    ok(&cli(b, &["topic", "create", "rt", "--partitions", "3"], ""));
    let lines: String = (0..300)
        .map(|i| format!("key{}|value {i}\n", i % 7))
        .collect();
    ok(&cli(
        b,
        &[
            "produce", "-t", "rt", "-K", "|", "-H", "a=1", "-H", "b=two", "-z", "gzip",
        ],
        &lines,
    ));
    let out = ok(&cli(
        b,
        &[
            "consume",
            "-t",
            "rt",
            "-o",
            "beginning",
            "-e",
            "-f",
            "%k\\t%s\\t%h\\t%t %p %o %K %S %T\\n",
        ],
        "",
    ));
    let rows: Vec<Vec<&str>> = out.lines().map(|l| l.split('\t').collect()).collect();
    assert_eq!(rows.len(), 300);
    let mut last: std::collections::BTreeMap<String, i64> = Default::default();
    for r in &rows {
        let i: i64 = r[1].strip_prefix("value ").unwrap().parse().unwrap();
        assert_eq!(r[0], format!("key{}", i % 7), "-K split the key");
        assert_eq!(r[2], "a=1,b=two", "-H headers, printed by %h");
        let meta: Vec<&str> = r[3].split(' ').collect();
        assert_eq!(meta[0], "rt");
        assert_eq!(meta[3], r[0].len().to_string(), "%K");
        assert_eq!(meta[4], r[1].len().to_string(), "%S");
        assert!(meta[5].parse::<i64>().unwrap() > 1_600_000_000_000, "%T");
        // Same key, same partition, in produce order.
        let prev = last.insert(r[0].to_owned(), i).unwrap_or(-1);
        assert!(i > prev);
    }

    // -p, -o OFFSET and -c.
    ok(&cli(
        b,
        &["produce", "-t", "rt", "-p", "2", "-z", "zstd"],
        "x\ny\nz\n",
    ));
    let out = ok(&cli(
        b,
        &[
            "consume",
            "-t",
            "rt",
            "-p",
            "2",
            "-o",
            "beginning",
            "-e",
            "-f",
            "%o:%s\\n",
        ],
        "",
    ));
    let tail: Vec<&str> = out.lines().rev().take(3).collect();
    let end: i64 = tail[0].split(':').next().unwrap().parse().unwrap();
    assert_eq!(
        tail.iter()
            .map(|l| l.split(':').nth(1).unwrap())
            .collect::<Vec<_>>(),
        ["z", "y", "x"]
    );
    let from = (end - 1).to_string();
    let out = ok(&cli(
        b,
        &["consume", "-t", "rt", "-p", "2", "-o", &from, "-c", "2"],
        "",
    ));
    assert_eq!(out, "y\nz\n");
    // -o end skips everything already written (x, y, z went as one batch; Tansu's "latest"
    // points inside it).
    let out = ok(&cli(
        b,
        &["consume", "-t", "rt", "-p", "2", "-o", "end", "-e"],
        "",
    ));
    assert_eq!(out, "");
}

fn metadata_topics_and_perf(kind: Kind) {
    let broker = Broker::shared(kind, "cli");
    let b = broker.addr.as_str();
    ok(&cli(b, &["topic", "create", "m1", "--partitions", "4"], ""));
    let json: serde_json::Value =
        serde_json::from_str(&ok(&cli(b, &["metadata", "--json"], ""))).unwrap();
    let t = json["topics"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "m1")
        .unwrap();
    assert_eq!(t["partitions"].as_array().unwrap().len(), 4);
    assert_eq!(json["brokers"][0]["id"], t["partitions"][0]["leader"]);
    let human = ok(&cli(b, &["metadata", "-t", "m1"], ""));
    assert!(human.contains("topic \"m1\" with 4 partitions"), "{human}");

    let perf: serde_json::Value = serde_json::from_str(&ok(&cli(
        b,
        &[
            "perf",
            "produce",
            "-t",
            "m1",
            "-n",
            "20000",
            "-s",
            "64",
            "-X",
            "linger.ms=5",
            "--json",
        ],
        "",
    )))
    .unwrap();
    assert_eq!(perf["records"], 20000);
    assert_eq!(perf["bytes"], 20000 * 64);
    for k in [
        "seconds",
        "records_per_sec",
        "mb_per_sec",
        "p50_ms",
        "p99_ms",
    ] {
        assert!(perf[k].as_f64().unwrap() > 0.0, "{k}: {perf}");
    }
    let out = ok(&cli(
        b,
        &[
            "consume",
            "-t",
            "m1",
            "-o",
            "beginning",
            "-e",
            "-f",
            "%S\\n",
        ],
        "",
    ));
    assert_eq!(out.lines().count(), 20000, "perf wrote every record");
    for group in [None, Some("perf-group")] {
        let mut args = vec!["perf", "consume", "-t", "m1", "-n", "20000", "--json"];
        if let Some(g) = group {
            args.extend(["-G", g, "-X", "session.timeout.ms=2000"]);
            args.extend(["-X", "heartbeat.interval.ms=500"]);
        }
        let perf: serde_json::Value = serde_json::from_str(&ok(&cli(b, &args, ""))).unwrap();
        assert_eq!(perf["records"], 20000, "{group:?}");
        assert_eq!(perf["bytes"], 20000 * 64, "{group:?}");
        assert!(perf["records_per_sec"].as_f64().unwrap() > 0.0, "{perf}");
    }
    ok(&cli(b, &["topic", "delete", "m1"], ""));
    // Apache Kafka deletes a topic in the background: its metadata may show it for a moment
    // after the delete is acknowledged (longer on a loaded machine).
    let deadline = Instant::now() + Duration::from_secs(30);
    let gone = loop {
        let out = cli(b, &["metadata", "-t", "m1"], "");
        if !out.status.success() || Instant::now() > deadline {
            break out;
        }
        std::thread::sleep(Duration::from_millis(200));
    };
    fails_with(&gone, "does not exist");

    // `perf produce --keys N` (the scale benchmark's keyed load): every record carries one of
    // N keys in turn, and the default partitioner puts each key on one partition, the keys
    // spread over all of them.
    ok(&cli(b, &["topic", "create", "m2", "--partitions", "4"], ""));
    let args = ["perf", "produce", "-t", "m2", "-n", "1000", "-s", "16"];
    ok(&cli(
        b,
        &[&args[..], &["--keys", "40", "--json"]].concat(),
        "",
    ));
    let out = ok(&cli(
        b,
        &[
            "consume",
            "-t",
            "m2",
            "-o",
            "beginning",
            "-e",
            "-f",
            "%k %p\\n",
        ],
        "",
    ));
    let mut partitions_of: std::collections::BTreeMap<&str, std::collections::BTreeSet<&str>> =
        Default::default();
    for line in out.lines() {
        let (key, partition) = line.split_once(' ').expect("key and partition");
        partitions_of.entry(key).or_default().insert(partition);
    }
    assert_eq!(out.lines().count(), 1000, "every keyed record");
    assert_eq!(
        partitions_of.len(),
        40,
        "40 distinct keys: {partitions_of:?}"
    );
    assert!(
        partitions_of.values().all(|p| p.len() == 1),
        "a key on one partition"
    );
    let used: std::collections::BTreeSet<_> = partitions_of.values().flatten().collect();
    assert_eq!(used.len(), 4, "40 keys over all 4 partitions: {used:?}");
    ok(&cli(b, &["topic", "delete", "m2"], ""));
}

fn consume_with_a_group_prints_its_assignment_and_resumes(kind: Kind) {
    let broker = Broker::shared(kind, "cli");
    let b = broker.addr.as_str();
    ok(&cli(b, &["topic", "create", "gt", "--partitions", "3"], ""));
    let group = [
        "-G",
        "cli-group",
        "-X",
        "session.timeout.ms=2000",
        "-X",
        "heartbeat.interval.ms=500",
    ];
    ok(&cli(b, &["produce", "-t", "gt"], "a\nb\nc\n"));
    let mut args = vec!["consume", "-t", "gt", "-o", "beginning", "-e"];
    args.extend(group);
    let out = cli(b, &args, "");
    let mut first: Vec<String> = ok(&out).lines().map(str::to_owned).collect();
    first.sort();
    assert_eq!(first, ["a", "b", "c"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("assigned: gt-0, gt-1, gt-2"), "{err}");
    ok(&cli(b, &["produce", "-t", "gt"], "d\ne\n"));
    let mut second: Vec<String> = ok(&cli(b, &args, "")).lines().map(str::to_owned).collect();
    second.sort();
    assert_eq!(second, ["d", "e"], "resumes from the committed offsets");
}

fn errors_name_their_cause_in_one_line(kind: Kind) {
    let broker = Broker::shared(kind, "cli");
    let b = broker.addr.as_str();
    fails_with(
        &cli(b, &["consume", "-t", "missing", "-e"], ""),
        "topic 'missing' does not exist",
    );
    fails_with(
        &cli(b, &["produce", "-t", "missing"], "x\n"),
        "topic 'missing' does not exist",
    );
    fails_with(
        &cli("127.0.0.1:1", &["--timeout", "1", "metadata"], ""),
        "cannot reach the cluster",
    );
    ok(&cli(b, &["topic", "create", "e", "--partitions", "1"], ""));
    fails_with(
        &cli(b, &["topic", "create", "e"], ""),
        "TOPIC_ALREADY_EXISTS",
    );
    fails_with(
        &cli(b, &["produce", "-t", "e", "-X", "acks=maybe"], ""),
        "`acks`",
    );
    fails_with(
        &cli(b, &["produce", "-t", "e", "-X", "lingerms=5"], ""),
        "unknown config key `lingerms`",
    );
    fails_with(
        &cli(b, &["produce", "-t", "e", "-X", "linger.ms"], ""),
        "expected key=value",
    );
    fails_with(&cli(b, &["produce", "-t", "e", "-p", "7"], "x\n"), "-p 7");
    fails_with(
        &cli(b, &["consume", "-t", "e", "-o", "soon"], ""),
        "-o soon",
    );
    fails_with(&cli(b, &["consume", "-t", "e", "-f", "%q"], ""), "%q");
    // A record the producer refuses fails the run, with the reason.
    let big = "x".repeat(2_000_000);
    fails_with(&cli(b, &["produce", "-t", "e"], &big), "max.request.size");
    // Bad flags are usage errors: exit 2, one line naming the flag.
    for (args, needle) in [
        (&["produce"][..], "--topic"),
        (&["frobnicate"][..], "frobnicate"),
        (&["consume", "-t", "e", "--bogus"][..], "--bogus"),
    ] {
        let out = cli(b, args, "");
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{err}");
        assert_eq!(err.trim_end().lines().count(), 1, "one line: {err}");
        assert!(err.contains(needle), "{needle} in {err}");
    }
    assert!(cli(b, &["--help"], "").status.success());
}

/// A reader that stops early (`kafka-cli consume | head -1`) ends the CLI quietly: SIGPIPE,
/// not a panic. 20,000 lines overflow the pipe, so the CLI is still writing when it closes.
#[test]
fn a_closed_stdout_ends_the_cli_quietly() {
    let broker = Broker::shared(Kind::Tansu, "cli-pipe");
    let b = broker.addr.as_str();
    ok(&cli(
        b,
        &["topic", "create", "pipe", "--partitions", "1"],
        "",
    ));
    let lines: String = (0..20_000).map(|i| format!("line {i}\n")).collect();
    ok(&cli(b, &["produce", "-t", "pipe"], &lines));
    let mut child = Command::new(env!("CARGO_BIN_EXE_kafka-cli"))
        .args(["-b", b, "consume", "-t", "pipe", "-o", "beginning", "-e"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start kafka-cli");
    let mut stdout = child.stdout.take().unwrap();
    let mut first = [0u8; 7];
    std::io::Read::read_exact(&mut stdout, &mut first).unwrap();
    assert_eq!(&first, b"line 0\n");
    drop(stdout);
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!err.contains("panicked"), "{err}");
    use std::os::unix::process::ExitStatusExt;
    assert_eq!(
        out.status.signal(),
        Some(13),
        "ended by SIGPIPE: {:?} {err}",
        out.status
    );
}

/// The TCP connections process `pid` holds established to `port`: its sockets (the inodes in
/// /proc/PID/fd) found in the kernel's TCP tables with that remote port, in state 01.
fn connections_to(pid: u32, port: u16) -> usize {
    let Ok(fds) = std::fs::read_dir(format!("/proc/{pid}/fd")) else {
        return 0;
    };
    let inodes: BTreeSet<String> = fds
        .filter_map(|fd| std::fs::read_link(fd.ok()?.path()).ok())
        .filter_map(|l| {
            let l = l.to_string_lossy().into_owned();
            Some(l.strip_prefix("socket:[")?.strip_suffix(']')?.to_owned())
        })
        .collect();
    let mut n = 0;
    for table in ["/proc/net/tcp", "/proc/net/tcp6"] {
        let text = std::fs::read_to_string(table).unwrap_or_default();
        for line in text.lines().skip(1) {
            let cols: Vec<&str> = line.split_whitespace().collect();
            let remote_port = cols
                .get(2)
                .and_then(|r| r.rsplit_once(':'))
                .and_then(|(_, p)| u16::from_str_radix(p, 16).ok());
            if cols.get(3) == Some(&"01")
                && remote_port == Some(port)
                && cols.get(9).is_some_and(|i| inodes.contains(*i))
            {
                n += 1;
            }
        }
    }
    n
}

/// Waits (up to 20 s) for a second in which `child` holds exactly `want` connections to the
/// broker in every sample; panics with the counts seen otherwise.
fn holds_connections(child: &Child, broker: &str, want: usize, what: &str) {
    let port: u16 = broker.rsplit_once(':').unwrap().1.parse().unwrap();
    let until = Instant::now() + Duration::from_secs(20);
    let (mut steady_since, mut seen) = (None, Vec::new());
    while Instant::now() < until {
        let n = connections_to(child.id(), port);
        if seen.last() != Some(&n) {
            seen.push(n);
        }
        match (n == want, steady_since) {
            (true, None) => steady_since = Some(Instant::now()),
            (true, Some(t)) if t.elapsed() >= Duration::from_secs(1) => return,
            (true, Some(_)) => {}
            (false, _) => steady_since = None,
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    panic!("{what}: never {want} connections for a second (counts seen, in turn: {seen:?})");
}

/// While it runs, `produce` holds one connection to a one-broker cluster (its producer's) and
/// `consume -G` two (its consumer's and the group coordinator's): the admin client that looked
/// the topic up closes once it has (it lingered for the whole run, one connection more).
fn produce_and_consume_hold_only_their_clients_connections(kind: Kind) {
    let broker = Broker::shared(kind, "cli");
    let b = broker.addr.as_str();
    ok(&cli(
        b,
        &["topic", "create", "conns", "--partitions", "2"],
        "",
    ));
    // Their output is a few lines: the pipes hold it.
    let mut producer = spawn(b, &["produce", "-t", "conns"]);
    let mut stdin = producer.stdin.take().unwrap();
    // The producer connects when it has a record to send (and the input stays open).
    stdin.write_all(b"one\ntwo\n").unwrap();
    holds_connections(&producer, b, 1, "kafka-cli produce");
    drop(stdin);
    assert!(producer.wait().unwrap().success());
    let mut consumer = spawn(
        b,
        &[
            "consume",
            "-t",
            "conns",
            "-G",
            "cli-conns",
            "-o",
            "beginning",
        ],
    );
    holds_connections(&consumer, b, 2, "kafka-cli consume -G");
    consumer.kill().unwrap();
    consumer.wait().unwrap();
}

// Every test on both brokers.

mod tansu {
    use super::*;

    #[test]
    fn produce_then_consume_with_keys_headers_partitions_and_formats() {
        super::produce_then_consume_with_keys_headers_partitions_and_formats(Kind::Tansu);
    }

    #[test]
    fn metadata_topics_and_perf() {
        super::metadata_topics_and_perf(Kind::Tansu);
    }

    #[test]
    fn consume_with_a_group_prints_its_assignment_and_resumes() {
        super::consume_with_a_group_prints_its_assignment_and_resumes(Kind::Tansu);
    }

    #[test]
    fn errors_name_their_cause_in_one_line() {
        super::errors_name_their_cause_in_one_line(Kind::Tansu);
    }

    #[test]
    fn produce_and_consume_hold_only_their_clients_connections() {
        super::produce_and_consume_hold_only_their_clients_connections(Kind::Tansu);
    }
}

mod kafka {
    use super::*;

    #[test]
    fn produce_then_consume_with_keys_headers_partitions_and_formats() {
        super::produce_then_consume_with_keys_headers_partitions_and_formats(Kind::Kafka);
    }

    #[test]
    fn metadata_topics_and_perf() {
        super::metadata_topics_and_perf(Kind::Kafka);
    }

    #[test]
    fn consume_with_a_group_prints_its_assignment_and_resumes() {
        super::consume_with_a_group_prints_its_assignment_and_resumes(Kind::Kafka);
    }

    #[test]
    fn errors_name_their_cause_in_one_line() {
        super::errors_name_their_cause_in_one_line(Kind::Kafka);
    }

    #[test]
    fn produce_and_consume_hold_only_their_clients_connections() {
        super::produce_and_consume_hold_only_their_clients_connections(Kind::Kafka);
    }

    /// kcat's ways: `-P`, `-C` and `-L` for the subcommands, `-o -N` (N before each
    /// partition's end) and `-o s@TIMESTAMP`.
    #[test]
    fn kcat_mode_flags_and_relative_and_time_offsets() {
        let broker = Broker::shared(Kind::Kafka, "cli");
        let b = broker.addr.as_str();
        ok(&cli(
            b,
            &["topic", "create", "cli-o", "--partitions", "1"],
            "",
        ));
        let before = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_millis() as i64
            - 60_000;
        ok(&cli(b, &["-P", "-t", "cli-o"], "a\nb\nc\nd\ne\n"));
        assert!(ok(&cli(b, &["-L", "-t", "cli-o"], "")).contains("cli-o"));
        let read = |o: &str| {
            let out = ok(&cli(b, &["-C", "-t", "cli-o", "-o", o, "-e"], ""));
            out.lines().map(str::to_owned).collect::<Vec<_>>()
        };
        assert_eq!(read("-2"), ["d", "e"]);
        assert_eq!(
            read("-9"),
            ["a", "b", "c", "d", "e"],
            "no further back than the start"
        );
        assert_eq!(read(&format!("s@{before}")), ["a", "b", "c", "d", "e"]);
        assert!(
            read(&format!("s@{}", before + 3_600_000)).is_empty(),
            "nothing that late"
        );
        assert_eq!(read("3"), ["d", "e"]);
        fails_with(
            &cli(b, &["-C", "-t", "cli-o", "-o", "-2", "-G", "g"], ""),
            "work without -G",
        );
    }

    /// SIGTERM (or Ctrl-C) during `consume -G` commits what was printed and leaves the group:
    /// a rerun goes on from there.
    #[cfg(unix)]
    #[test]
    fn sigterm_during_a_group_consume_commits_what_was_printed() {
        use std::io::BufRead;
        let broker = Broker::shared(Kind::Kafka, "cli");
        let b = broker.addr.as_str();
        ok(&cli(
            b,
            &["topic", "create", "cli-sig", "--partitions", "2"],
            "",
        ));
        ok(&cli(b, &["produce", "-t", "cli-sig"], "1\n2\n3\n4\n5\n6\n"));
        let mut child = Command::new(env!("CARGO_BIN_EXE_kafka-cli"))
            .args([
                "-b",
                b,
                "consume",
                "-t",
                "cli-sig",
                "-G",
                "cli-sig",
                "-o",
                "beginning",
            ])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start kafka-cli");
        let mut lines = std::io::BufReader::new(child.stdout.take().unwrap()).lines();
        for _ in 0..6 {
            lines.next().expect("a record").unwrap();
        }
        // SAFETY: a signal to our own child process.
        unsafe {
            libc::kill(child.id() as i32, libc::SIGTERM);
        }
        let out = child.wait_with_output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{err}");
        assert!(err.contains("interrupted after 6 records"), "{err}");
        ok(&cli(b, &["produce", "-t", "cli-sig"], "7\n8\n"));
        let again = ok(&cli(
            b,
            &[
                "consume",
                "-t",
                "cli-sig",
                "-G",
                "cli-sig",
                "-o",
                "beginning",
                "-e",
            ],
            "",
        ));
        let mut again: Vec<&str> = again.lines().collect();
        again.sort();
        assert_eq!(again, ["7", "8"], "the rerun goes on from what was printed");
    }

    /// `topic alter --partitions N` raises a topic's partition count; a lower one is refused.
    #[test]
    fn topic_alter_adds_partitions() {
        let broker = Broker::shared(Kind::Kafka, "cli");
        let b = broker.addr.as_str();
        ok(&cli(
            b,
            &["topic", "create", "cli-grow", "--partitions", "1"],
            "",
        ));
        ok(&cli(
            b,
            &["topic", "alter", "cli-grow", "--partitions", "3"],
            "",
        ));
        // The broker shows the new partitions a moment after the controller answered.
        let mut parts = 0;
        for _ in 0..50 {
            let v: serde_json::Value =
                serde_json::from_str(&ok(&cli(b, &["metadata", "-t", "cli-grow", "--json"], "")))
                    .unwrap();
            parts = v["topics"][0]["partitions"]
                .as_array()
                .map_or(0, |p| p.len());
            if parts == 3 {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(200));
        }
        assert_eq!(parts, 3);
        fails_with(
            &cli(b, &["topic", "alter", "cli-grow", "--partitions", "2"], ""),
            "INVALID_PARTITIONS",
        );
    }

    /// `config describe` and `config alter` on a topic: a value set, shown with its source,
    /// reset; a topic that does not exist is a one-line error; a malformed --set is refused.
    #[test]
    fn config_describe_and_alter_a_topic() {
        let broker = Broker::shared(Kind::Kafka, "cli");
        let b = broker.addr.as_str();
        ok(&cli(b, &["topic", "create", "cli-conf"], ""));
        ok(&cli(
            b,
            &[
                "config",
                "alter",
                "-t",
                "cli-conf",
                "--set",
                "retention.ms=7654321",
            ],
            "",
        ));
        let value = |key: &str| -> (Option<String>, String) {
            let v: serde_json::Value = serde_json::from_str(&ok(&cli(
                b,
                &["config", "describe", "-t", "cli-conf", "--json"],
                "",
            )))
            .unwrap();
            let e = v["configs"]
                .as_array()
                .unwrap()
                .iter()
                .find(|e| e["name"] == key)
                .unwrap_or_else(|| panic!("{key} listed"))
                .clone();
            (
                e["value"].as_str().map(str::to_owned),
                e["source"].as_str().unwrap().to_owned(),
            )
        };
        // The controller applies it through the metadata log: the broker shows it shortly.
        let wanted = (
            Some("7654321".to_owned()),
            "DYNAMIC_TOPIC_CONFIG".to_owned(),
        );
        let mut got = value("retention.ms");
        for _ in 0..50 {
            if got == wanted {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(200));
            got = value("retention.ms");
        }
        assert_eq!(got, wanted);
        let table = ok(&cli(b, &["config", "describe", "-t", "cli-conf"], ""));
        assert!(
            table
                .lines()
                .any(|l| l.starts_with("retention.ms") && l.contains("7654321")),
            "{table}"
        );
        ok(&cli(
            b,
            &[
                "config",
                "alter",
                "-t",
                "cli-conf",
                "--delete",
                "retention.ms",
            ],
            "",
        ));
        let mut reset = value("retention.ms");
        for _ in 0..50 {
            if reset.1 != "DYNAMIC_TOPIC_CONFIG" {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(200));
            reset = value("retention.ms");
        }
        assert_ne!(reset.1, "DYNAMIC_TOPIC_CONFIG");
        fails_with(
            &cli(b, &["config", "describe", "-t", "cli-no-such"], ""),
            "UNKNOWN_TOPIC_OR_PARTITION",
        );
        fails_with(
            &cli(
                b,
                &["config", "alter", "-t", "cli-conf", "--set", "retention.ms"],
                "",
            ),
            "KEY=VALUE",
        );
    }

    /// `produce` names a refused record by its 1-based input line.
    #[test]
    fn produce_names_a_refused_line_by_its_number() {
        let broker = Broker::shared(Kind::Kafka, "cli");
        let b = broker.addr.as_str();
        ok(&cli(
            b,
            &["topic", "create", "cli-big", "--partitions", "1"],
            "",
        ));
        let input = format!("a\nb\n{}\nd\n", "x".repeat(5000));
        fails_with(
            &cli(
                b,
                &["-X", "max.request.size=2000", "produce", "-t", "cli-big"],
                &input,
            ),
            "line 3:",
        );
    }

    /// `perf consume -n N` on a topic holding fewer says so after `--timeout`.
    #[test]
    fn perf_consume_of_more_records_than_the_topic_holds_says_so() {
        let broker = Broker::shared(Kind::Kafka, "cli");
        let b = broker.addr.as_str();
        ok(&cli(
            b,
            &["topic", "create", "cli-few", "--partitions", "2"],
            "",
        ));
        ok(&cli(b, &["produce", "-t", "cli-few"], "1\n2\n3\n"));
        fails_with(
            &cli(
                b,
                &[
                    "--timeout",
                    "3",
                    "perf",
                    "consume",
                    "-t",
                    "cli-few",
                    "-n",
                    "10",
                ],
                "",
            ),
            "only 3 of 10 records arrived, none in the last 3s: topic 'cli-few' holds 3 records",
        );
    }

    /// The group tools: `group list` and `group describe` (committed offset, log end and lag
    /// per partition, as text and JSON), `offsets`, `group reset-offsets` (a dry run, then for
    /// real, after which the group reads from there), and `group delete`.
    #[test]
    fn group_tools_list_describe_reset_and_delete() {
        let broker = Broker::shared(Kind::Kafka, "cli");
        let b = broker.addr.as_str();
        ok(&cli(
            b,
            &["topic", "create", "cli-g", "--partitions", "2"],
            "",
        ));
        let lines: String = (0..10).map(|i| format!("{}:v{i}\n", i % 2)).collect();
        ok(&cli(b, &["produce", "-t", "cli-g", "-K", ":"], &lines));
        let group = ["-G", "cli-tools", "-X", "session.timeout.ms=6000"];
        let mut read = vec!["consume", "-t", "cli-g", "-o", "beginning", "-e"];
        read.extend(group);
        assert_eq!(ok(&cli(b, &read, "")).lines().count(), 10);
        let list = ok(&cli(b, &["group", "list"], ""));
        assert!(list.lines().any(|l| l.starts_with("cli-tools ")), "{list}");
        let describe = || -> serde_json::Value {
            let json = ok(&cli(b, &["group", "describe", "cli-tools", "--json"], ""));
            serde_json::from_str(&json).unwrap()
        };
        let v = describe();
        let json = v.to_string();
        assert_eq!(v["group"], "cli-tools");
        let parts = v["partitions"].as_array().unwrap();
        assert_eq!(parts.len(), 2, "{json}");
        for p in parts {
            assert_eq!(p["committed"], p["log_end"], "{json}");
            assert_eq!(p["lag"], 0, "{json}");
        }
        let text = ok(&cli(b, &["group", "describe", "cli-tools"], ""));
        assert!(text.contains("LAG"), "{text}");
        let offsets = ok(&cli(b, &["offsets", "-t", "cli-g"], ""));
        assert!(
            offsets.contains("EARLIEST") && offsets.contains("LATEST"),
            "{offsets}"
        );
        // Back by 2 per partition: a dry run changes nothing, the real one does.
        let reset = [
            "group",
            "reset-offsets",
            "cli-tools",
            "-t",
            "cli-g",
            "--shift-by",
            "-2",
        ];
        let dry = cli(b, &[&reset[..], &["--dry-run"]].concat(), "");
        assert!(ok(&dry).contains("NEW-OFFSET"));
        let v = describe();
        assert!(v["partitions"]
            .as_array()
            .unwrap()
            .iter()
            .all(|p| p["lag"] == 0));
        ok(&cli(b, &reset, ""));
        let v = describe();
        assert!(
            v["partitions"]
                .as_array()
                .unwrap()
                .iter()
                .all(|p| p["lag"] == 2),
            "{v}"
        );
        assert_eq!(
            ok(&cli(b, &read, "")).lines().count(),
            4,
            "2 per partition again"
        );
        ok(&cli(
            b,
            &[
                "group",
                "reset-offsets",
                "cli-tools",
                "-t",
                "cli-g",
                "--to-earliest",
            ],
            "",
        ));
        assert_eq!(
            ok(&cli(b, &read, "")).lines().count(),
            10,
            "everything again"
        );
        ok(&cli(b, &["group", "delete", "cli-tools"], ""));
        let list = ok(&cli(b, &["group", "list"], ""));
        assert!(!list.lines().any(|l| l.starts_with("cli-tools ")), "{list}");
        let bad = cli(
            b,
            &[
                "group",
                "reset-offsets",
                "cli-tools",
                "-t",
                "cli-g",
                "--to-offset",
                "x",
            ],
            "",
        );
        assert_eq!(bad.status.code(), Some(2), "a usage error");
        fails_with(
            &cli(b, &["group", "delete", "cli-tools"], ""),
            "GROUP_ID_NOT_FOUND",
        );
    }

    /// `produce -X transactional.id=ID` sends its input in one transaction, committed at end
    /// of input or aborted with `--abort`; `consume -X isolation.level=read_committed` sees
    /// only the committed one.
    #[test]
    fn produce_in_a_transaction_commits_or_aborts() {
        let broker = Broker::shared(Kind::Kafka, "cli");
        let b = broker.addr.as_str();
        ok(&cli(
            b,
            &["topic", "create", "cli-tx", "--partitions", "2"],
            "",
        ));
        let tx = ["-X", "transactional.id=cli-tx"];
        let committed = cli(
            b,
            &[&tx[..], &["produce", "-t", "cli-tx"]].concat(),
            "a\nb\nc\n",
        );
        ok(&committed);
        let err = String::from_utf8_lossy(&committed.stderr);
        assert!(
            err.contains("committed one transaction of 3 records"),
            "{err}"
        );
        let aborted = cli(
            b,
            &[&tx[..], &["produce", "-t", "cli-tx", "--abort"]].concat(),
            "x\ny\n",
        );
        ok(&aborted);
        let err = String::from_utf8_lossy(&aborted.stderr);
        assert!(
            err.contains("aborted one transaction of 2 records"),
            "{err}"
        );
        let read = |isolation: &str| {
            let setting = format!("isolation.level={isolation}");
            let out = ok(&cli(
                b,
                &[
                    "-X",
                    &setting,
                    "consume",
                    "-t",
                    "cli-tx",
                    "-o",
                    "beginning",
                    "-e",
                ],
                "",
            ));
            let mut lines: Vec<String> = out.lines().map(str::to_owned).collect();
            lines.sort();
            lines
        };
        assert_eq!(read("read_committed"), ["a", "b", "c"]);
        assert_eq!(
            read("read_uncommitted").len(),
            5,
            "the aborted records are in the log"
        );
        // --abort without a transaction is refused.
        fails_with(
            &cli(b, &["produce", "-t", "cli-tx", "--abort"], "z\n"),
            "transactional.id",
        );
    }
}

/// Every command over SASL_SSL with SCRAM-SHA-512 against Apache Kafka, through the global -X
/// settings; a wrong password fails in one line, and no secret reaches the output.
mod sasl {
    use super::*;
    use tests::kafka::Cluster;
    use tests::pki::Pki;

    const PW: &str = "cli-Secret-9f3";

    #[test]
    fn every_command_works_over_sasl_ssl_scram_and_secrets_stay_out_of_the_output() {
        let dir = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("../target/kafka")
            .join(format!("cli-pki-{}", std::process::id()));
        let pki = Pki::create(&dir);
        let cluster = Cluster::start_secured(&pki, "alice", PW, 60_000);
        let b = cluster.bootstrap_of("SASL_SSL");
        let ca = format!("ssl.ca.location={}", pki.path("ca.pem"));
        let pw = format!("sasl.password={PW}");
        let sec: Vec<&str> = vec![
            "-X",
            "security.protocol=SASL_SSL",
            "-X",
            "sasl.mechanism=SCRAM-SHA-512",
            "-X",
            "sasl.username=alice",
            "-X",
            &pw,
            "-X",
            &ca,
        ];
        let with = |args: &[&str]| -> Vec<String> {
            sec.iter().chain(args).map(|s| s.to_string()).collect()
        };
        let run = |args: &[&str], stdin: &str| {
            let a = with(args);
            let a: Vec<&str> = a.iter().map(String::as_str).collect();
            let out = cli(&b, &a, stdin);
            let all = format!(
                "{}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
            assert!(!all.contains(PW), "the password reached the output: {all}");
            out
        };
        ok(&run(
            &["topic", "create", "secure", "--partitions", "2"],
            "",
        ));
        let md = ok(&run(&["metadata"], ""));
        assert!(md.contains("secure"), "{md}");
        ok(&run(
            &["produce", "-t", "secure", "-K", ":"],
            "a:1\nb:2\nc:3\n",
        ));
        let got = ok(&run(
            &[
                "consume",
                "-t",
                "secure",
                "-o",
                "beginning",
                "-e",
                "-f",
                "%k=%s\\n",
            ],
            "",
        ));
        let mut lines: Vec<&str> = got.lines().collect();
        lines.sort();
        assert_eq!(lines, ["a=1", "b=2", "c=3"]);
        ok(&run(
            &["perf", "produce", "-t", "secure", "-n", "2000", "-s", "100"],
            "",
        ));
        ok(&run(&["perf", "consume", "-t", "secure", "-n", "2003"], ""));
        ok(&run(&["topic", "delete", "secure"], ""));
        // A wrong password: one line naming the cause, exit 1, the password nowhere.
        let bad_args: Vec<&str> = sec
            .iter()
            .map(|a| {
                if *a == pw {
                    "sasl.password=Wrong-Pw-77"
                } else {
                    a
                }
            })
            .chain(["metadata"])
            .collect();
        let bad = cli(&b, &bad_args, "");
        fails_with(&bad, "refused SASL SCRAM-SHA-512 authentication");
        assert!(!String::from_utf8_lossy(&bad.stderr).contains("Wrong-Pw-77"));
        // A malformed secret setting is not echoed either.
        let bad = cli(&b, &["-X", "sasl.password:Leaky-Pw-55", "metadata"], "");
        assert_eq!(bad.status.code(), Some(1));
        let err = String::from_utf8_lossy(&bad.stderr);
        assert!(
            err.contains("expected key=value") && !err.contains("Leaky-Pw-55"),
            "{err}"
        );
    }
}
