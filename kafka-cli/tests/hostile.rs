//! Hostile and broken servers: a port that accepts and never answers, one that answers random
//! bytes, one that announces a 2 GiB frame and keeps streaming, one that closes at once. Every
//! command fails within its `--timeout`, in one line naming the address and the cause, without
//! spinning (its CPU time stays a small part of the wait) and without allocating in proportion
//! to a length the server announced (its peak RSS stays far below what it was sent). TLS on a
//! plaintext listener and the reverse are in `tests/tests/security_kafka.rs`, on Apache Kafka.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// What the server on the other end does.
#[derive(Clone, Copy, Debug)]
enum Server {
    /// Accepts, reads, never answers.
    Silent,
    /// Answers the first request with 4 KiB of random bytes, then holds the connection.
    RandomBytes,
    /// Answers with a length prefix of 2^31 - 1 and streams bytes until the client hangs up
    /// (up to 256 MiB per connection).
    HugeFrame,
    /// Closes every connection as soon as it is accepted.
    ImmediateClose,
}

/// Starts `server` on a free loopback port; its threads live until the test process ends.
fn start(server: Server) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    std::thread::spawn(move || {
        for conn in listener.incoming() {
            let Ok(conn) = conn else { continue };
            std::thread::spawn(move || serve(server, conn));
        }
    });
    addr
}

fn serve(server: Server, mut conn: TcpStream) {
    if let Server::ImmediateClose = server {
        return;
    }
    let mut request = [0u8; 4096];
    if conn.read(&mut request).unwrap_or(0) == 0 {
        return;
    }
    match server {
        Server::Silent | Server::ImmediateClose => {}
        Server::RandomBytes => {
            let mut x = 0x9e37_79b9_7f4a_7c15u64;
            let junk: Vec<u8> = (0..4096)
                .map(|_| {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    x as u8
                })
                .collect();
            let _ = conn.write_all(&junk);
        }
        Server::HugeFrame => {
            // The prefix, then the request's correlation id, so that a client that trusted the
            // length would take the frame as its answer and keep reading into it.
            let mut head = i32::MAX.to_be_bytes().to_vec();
            head.extend_from_slice(&request[8..12]);
            if conn.write_all(&head).is_err() {
                return;
            }
            let chunk = vec![0u8; 1 << 20];
            for _ in 0..256 {
                if conn.write_all(&chunk).is_err() {
                    return;
                }
            }
        }
    }
    // Hold the connection open: a hung-up socket would be an answer of its own.
    std::thread::sleep(Duration::from_secs(3600));
    drop(conn);
}

/// How a CLI run ended.
struct Run {
    code: Option<i32>,
    stderr: String,
    took: Duration,
    /// User plus system CPU time of the CLI process.
    cpu: Duration,
    /// Peak resident set size, in KiB.
    max_rss_kib: i64,
}

/// Runs the CLI with `args` against `addr` and `stdin`, measuring its CPU time and peak RSS
/// (from `wait4`, so only that process counts, whatever else the test machine runs).
// The child is reaped by `wait4` below, which clippy cannot see.
#[allow(clippy::zombie_processes)]
fn run(addr: &str, args: &[&str], stdin: &str) -> Run {
    let started = Instant::now();
    let mut child = Command::new(env!("CARGO_BIN_EXE_kafka-cli"))
        .args(["-b", addr, "--timeout", "3"])
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(stdin.as_bytes())
        .unwrap();
    let mut stderr = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut stderr)
        .unwrap();
    let mut status = 0;
    // SAFETY: a zeroed rusage is a valid value for wait4 to fill in.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: the pid is our own child's, not yet waited for; status and usage are valid.
    let pid = unsafe { libc::wait4(child.id() as i32, &mut status, 0, &mut usage) };
    assert_eq!(pid, child.id() as i32, "wait4");
    let took = started.elapsed();
    let tv = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000);
    Run {
        code: libc::WIFEXITED(status).then(|| libc::WEXITSTATUS(status)),
        stderr,
        took,
        cpu: tv(usage.ru_utime) + tv(usage.ru_stime),
        max_rss_kib: usage.ru_maxrss,
    }
}

/// The commands each server is tried with.
const COMMANDS: [(&str, &[&str], &str); 4] = [
    ("metadata", &["metadata"], ""),
    ("produce", &["produce", "-t", "t1"], "a\nb\n"),
    ("consume", &["consume", "-t", "t1", "-e"], ""),
    (
        "group consume",
        &["consume", "-G", "g1", "-t", "t1", "-e"],
        "",
    ),
];

#[test]
fn every_command_fails_promptly_and_frugally_against_a_hostile_server() {
    let cases = [
        // A silent server can only be named as not answering, and the step it stalled in.
        (
            Server::Silent,
            &["did not answer ApiVersions within request.timeout.ms"][..],
        ),
        (
            Server::RandomBytes,
            &["did not answer the ApiVersions handshake like a Kafka broker"][..],
        ),
        (
            Server::HugeFrame,
            &["frame of 2147483647 bytes exceeds the maximum"][..],
        ),
        (
            Server::ImmediateClose,
            &["closed the connection during the ApiVersions handshake"][..],
        ),
    ];
    // Every run at once: each is measured on its own, and the test takes one timeout, not 16.
    let runs: Vec<_> = cases
        .iter()
        .flat_map(|&(server, words)| {
            let addr = start(server);
            COMMANDS.map(|(what, args, stdin)| {
                let target = addr.clone();
                let handle = std::thread::spawn(move || run(&target, args, stdin));
                (server, words, what, addr.clone(), handle)
            })
        })
        .collect();
    let mut failures = Vec::new();
    for (server, words, what, addr, handle) in runs {
        let r = handle.join().unwrap();
        let line = r.stderr.trim_end();
        eprintln!(
            "{server:?} / {what}: exit {:?} in {:.1?}, cpu {:.2?}, peak RSS {} MiB: {line}",
            r.code,
            r.took,
            r.cpu,
            r.max_rss_kib / 1024
        );
        let mut wrong = Vec::new();
        if r.code != Some(1) {
            wrong.push(format!("exit {:?}, not 1", r.code));
        }
        // --timeout 3: the lookup's bound, and a close of at most a few seconds more.
        if r.took > Duration::from_secs(15) {
            wrong.push(format!("took {:?}", r.took));
        }
        // A spinning client would burn about as much CPU as the wait lasted.
        if r.cpu > Duration::from_millis(1500) {
            wrong.push(format!("used {:?} of CPU", r.cpu));
        }
        // The huge frame streams up to 256 MiB; a client that buffered toward the announced
        // 2 GiB would pass this at once.
        if r.max_rss_kib > 96 * 1024 {
            wrong.push(format!("peak RSS {} MiB", r.max_rss_kib / 1024));
        }
        if line.lines().count() != 1 {
            wrong.push("not one line".into());
        }
        for w in words.iter().chain([&addr.as_str()]) {
            if !line.contains(w) {
                wrong.push(format!("`{w}` missing"));
            }
        }
        if line.contains("panicked") {
            wrong.push("panicked".into());
        }
        if !wrong.is_empty() {
            failures.push(format!("{server:?} / {what}: {}: {line}", wrong.join(", ")));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
