//! A real Kafka-compatible broker (Tansu, memory storage) on a free loopback port, started per
//! test binary and stopped when dropped. A missing broker is a test failure, never a skip.

use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// A running Tansu broker.
pub struct Broker {
    child: Child,
    bin: PathBuf,
    /// `127.0.0.1:PORT`.
    pub addr: String,
}

fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

impl Broker {
    /// Installs Tansu if needed (via `scripts/broker bin`) and starts it.
    pub fn start() -> Broker {
        // Once per process: the tests of one binary start brokers in parallel.
        static BIN: OnceLock<PathBuf> = OnceLock::new();
        let bin = BIN
            .get_or_init(|| {
                let out = Command::new("bash")
                    .arg(repo_root().join("scripts/broker"))
                    .arg("bin")
                    .stderr(Stdio::inherit())
                    .output()
                    .expect("run scripts/broker bin");
                assert!(
                    out.status.success(),
                    "scripts/broker bin failed: cannot install Tansu (needs python3 and PyPI)"
                );
                PathBuf::from(String::from_utf8(out.stdout).unwrap().trim())
            })
            .clone();
        let port = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let addr = format!("127.0.0.1:{port}");
        let child = spawn(&bin, &addr);
        Broker { child, bin, addr }
    }

    /// The broker's process id (the benchmarks read its CPU time from `/proc`).
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Kills the broker (as a crash would: no clean shutdown).
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// Freezes the broker (SIGSTOP): connections stay open and nothing answers.
    pub fn pause(&self) {
        self.signal("STOP");
    }

    /// Thaws a paused broker (SIGCONT).
    pub fn resume(&self) {
        self.signal("CONT");
    }

    fn signal(&self, sig: &str) {
        let status = Command::new("kill")
            .args([&format!("-{sig}"), &self.child.id().to_string()])
            .status()
            .expect("run kill");
        assert!(status.success(), "kill -{sig} failed");
    }

    /// Starts the broker again on the same port, with empty storage.
    pub fn restart(&mut self) {
        self.kill();
        self.child = spawn(&self.bin, &self.addr);
    }

    /// Creates a topic with `partitions` partitions. Tansu's CLI gives up quickly on a broker
    /// that is slow to answer (just restarted, on a loaded machine), so it is tried for up to
    /// 30 s; a failure then shows what the CLI said.
    pub fn create_topic(&self, name: &str, partitions: u32) {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let out = Command::new(&self.bin)
                .args([
                    "topic",
                    "create",
                    "--broker",
                    &format!("tcp://{}", self.addr),
                ])
                .args(["--partitions", &partitions.to_string(), name])
                .stdin(Stdio::null())
                .output()
                .expect("run tansu topic create");
            let said = format!(
                "{}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
            // An earlier try may have created it before the CLI gave up on the answer.
            if out.status.success() || said.to_ascii_lowercase().contains("exists") {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "tansu topic create {name} failed for 30 s: {said}"
            );
            std::thread::sleep(Duration::from_millis(250));
        }
    }
}

fn spawn(bin: &PathBuf, addr: &str) -> Child {
    let url = format!("tcp://{addr}");
    let child = Command::new(bin)
        .args([
            "broker",
            "--listener-url",
            &url,
            "--advertised-listener-url",
            &url,
        ])
        .args(["--storage-engine", "memory://tansu/"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start tansu");
    let deadline = Instant::now() + Duration::from_secs(10);
    while TcpStream::connect(addr).is_err() {
        assert!(
            Instant::now() < deadline,
            "Tansu did not answer on {addr} within 10 s"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    child
}

impl Drop for Broker {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
