//! Apache Kafka itself as a test fixture: N combined broker+controller nodes in KRaft mode,
//! started by `scripts/kafka` from Maven Central's jars, with kill, restart, pause and resume
//! per node, and the Java client as a peer (`scripts/java/KafkaPeer.java`). A missing JVM,
//! Maven or download is a test failure naming the cause, never a skip.

use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;

fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn script() -> PathBuf {
    repo_root().join("scripts/kafka")
}

/// Runs `scripts/kafka ARGS`, returning its stdout; panics with its stderr on failure.
fn run(args: &[&str]) -> String {
    run_env(args, &[])
}

fn run_env(args: &[&str], env: &[(&str, String)]) -> String {
    let out = Command::new("bash")
        .arg(script())
        .args(args)
        .envs(env.iter().map(|(k, v)| (*k, v.as_str())))
        .stderr(Stdio::piped())
        .output()
        .expect("run scripts/kafka (needs bash)");
    assert!(
        out.status.success(),
        "scripts/kafka {} failed: {}",
        args.join(" "),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout)
        .expect("utf-8")
        .trim()
        .to_owned()
}

/// The Kafka version the tests run (`KAFKA_VERSION`, or the newest 4.x).
pub fn version() -> String {
    static V: OnceLock<String> = OnceLock::new();
    V.get_or_init(|| run(&["version"])).clone()
}

/// The classpath of the Java peer program (compiled on first use).
pub fn peer_classpath() -> String {
    static CP: OnceLock<String> = OnceLock::new();
    CP.get_or_init(|| run(&["peer"])).clone()
}

/// The directory of the broker-side KIP-714 telemetry receiver (`scripts/java/TelemetrySink.java`,
/// compiled on first use), for [`Cluster::start_with_classpath`].
pub fn telemetry_sink_classpath() -> String {
    static CP: OnceLock<String> = OnceLock::new();
    CP.get_or_init(|| run(&["telemetry-sink"])).clone()
}

/// A running Apache Kafka cluster; stopped when dropped (and, through a watchdog, when the
/// test process exits, for clusters kept in statics).
#[derive(Debug)]
pub struct Cluster {
    dir: PathBuf,
    /// The PLAINTEXT bootstrap list, every node.
    pub bootstrap: String,
    /// How many nodes.
    pub nodes: usize,
}

impl Cluster {
    /// Starts `nodes` nodes with the PLAINTEXT listener.
    pub fn start(nodes: usize) -> Cluster {
        Self::start_with(nodes, "PLAINTEXT", &[])
    }

    /// Starts `nodes` nodes with these listeners (the first must be PLAINTEXT) and extra
    /// server settings (`key=value`).
    pub fn start_with(nodes: usize, listeners: &str, configs: &[&str]) -> Cluster {
        Self::start_secure(nodes, listeners, "", "", configs)
    }

    /// [`Cluster::start_with`], with server properties for the security listeners
    /// (keystores, JAAS: appended to each node's `server.properties`) and SCRAM users
    /// (`name=password,...`, created when the storage is formatted).
    pub fn start_secure(
        nodes: usize,
        listeners: &str,
        security_props: &str,
        scram_users: &str,
        configs: &[&str],
    ) -> Cluster {
        Self::start_formatted(nodes, listeners, security_props, scram_users, &[], configs)
    }

    /// Starts `nodes` PLAINTEXT nodes with `classpath` added to each broker's (plugins) and
    /// extra server settings.
    pub fn start_with_classpath(nodes: usize, classpath: &str, configs: &[&str]) -> Cluster {
        let mut with = vec![format!("--classpath={classpath}")];
        with.extend(configs.iter().map(|c| (*c).to_owned()));
        let with: Vec<&str> = with.iter().map(String::as_str).collect();
        Self::start_formatted(nodes, "PLAINTEXT", "", "", &[], &with)
    }

    /// Starts `nodes` PLAINTEXT nodes formatted with these feature levels (`name=level`, e.g.
    /// `transaction.version=1`) and extra server settings.
    pub fn start_with_features(nodes: usize, features: &[&str], configs: &[&str]) -> Cluster {
        Self::start_formatted(nodes, "PLAINTEXT", "", "", features, configs)
    }

    /// Starts `nodes` PLAINTEXT nodes, each in a network namespace of its own on an address
    /// of its own (`scripts/kafka start --netns`; root only), for [`Cluster::net`]'s faults.
    pub fn start_netns(nodes: usize, configs: &[&str]) -> Cluster {
        let mut with = vec!["--netns".to_owned()];
        with.extend(configs.iter().map(|c| (*c).to_owned()));
        let with: Vec<&str> = with.iter().map(String::as_str).collect();
        Self::start_formatted(nodes, "PLAINTEXT", "", "", &[], &with)
    }

    /// A network fault on a [`Cluster::start_netns`] cluster (`scripts/kafka net ...`):
    /// `["cut", "2"]`, `["isolate", "1", "client"]`, `["isolate", "1", "peers"]`,
    /// `["slow", "3", "200kbit"]`, `["heal"]`.
    pub fn net(&self, fault: &[&str]) {
        let mut args = vec!["net"];
        args.extend_from_slice(fault);
        let dir = self.dir.to_string_lossy();
        args.extend_from_slice(&["--dir", &dir]);
        run(&args);
    }

    fn start_formatted(
        nodes: usize,
        listeners: &str,
        security_props: &str,
        scram_users: &str,
        features: &[&str],
        configs: &[&str],
    ) -> Cluster {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let dir = repo_root().join("target/kafka").join(format!(
            "test-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ));
        let n = nodes.to_string();
        let pid = std::process::id().to_string();
        let dir_s = dir.to_string_lossy().into_owned();
        let mut args = vec![
            "start",
            "--nodes",
            &n,
            "--listeners",
            listeners,
            "--dir",
            &dir_s,
            "--parent",
            &pid,
        ];
        for c in configs {
            match c.strip_prefix("--classpath=") {
                Some(cp) => {
                    args.push("--classpath");
                    args.push(cp);
                }
                None if *c == "--netns" => args.push(c),
                None => {
                    args.push("--config");
                    args.push(c);
                }
            }
        }
        for f in features {
            args.push("--feature");
            args.push(f);
        }
        let mut env = Vec::new();
        if !security_props.is_empty() {
            // Beside the cluster's directory, which `start` empties.
            std::fs::create_dir_all(dir.parent().expect("under target/kafka"))
                .expect("target/kafka");
            let props = dir.with_extension("security.properties");
            std::fs::write(&props, security_props).expect("write the security properties");
            env.push(("KAFKA_SECURITY_PROPS", props.to_string_lossy().into_owned()));
        }
        if !scram_users.is_empty() {
            env.push(("KAFKA_SCRAM_USERS", scram_users.to_owned()));
        }
        let bootstrap = run_env(&args, &env);
        Cluster {
            dir,
            bootstrap,
            nodes,
        }
    }

    /// One node with PLAINTEXT, SSL (mutual TLS required), SASL_PLAINTEXT and SASL_SSL
    /// listeners: certificates from `pki`, `user` known to PLAIN (JAAS) and to SCRAM-SHA-256
    /// and -512 (created at format time), OAUTHBEARER's unsecured tokens accepted on
    /// SASL_PLAINTEXT, SASL_SSL enabling only PLAIN and SCRAM-SHA-512, and sessions lasting
    /// `reauth_ms` (`connections.max.reauth.ms`).
    pub fn start_secured(
        pki: &crate::pki::Pki,
        user: &str,
        password: &str,
        reauth_ms: u64,
    ) -> Cluster {
        let jaas = |l: &str| {
            format!(
                "listener.name.{l}.plain.sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required user_{user}=\"{password}\";\n\
                 listener.name.{l}.scram-sha-256.sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required;\n\
                 listener.name.{l}.scram-sha-512.sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required;\n\
                 listener.name.{l}.oauthbearer.sasl.jaas.config=org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required;\n"
            )
        };
        let props = format!(
            "ssl.keystore.type=PEM\n\
             ssl.keystore.location={}\n\
             ssl.truststore.type=PEM\n\
             ssl.truststore.location={}\n\
             listener.name.ssl.ssl.client.auth=required\n\
             sasl.enabled.mechanisms=PLAIN,SCRAM-SHA-256,SCRAM-SHA-512,OAUTHBEARER\n\
             listener.name.sasl_ssl.sasl.enabled.mechanisms=PLAIN,SCRAM-SHA-512\n\
             connections.max.reauth.ms={reauth_ms}\n{}{}",
            pki.path("broker.pem"),
            pki.path("ca.pem"),
            jaas("sasl_plaintext"),
            jaas("sasl_ssl"),
        );
        Self::start_secure(
            1,
            "PLAINTEXT,SSL,SASL_PLAINTEXT,SASL_SSL",
            &props,
            &format!("{user}={password}"),
            &[],
        )
    }

    fn node(&self, verb: &str, id: usize) {
        let id = id.to_string();
        run(&[verb, &id, "--dir", &self.dir.to_string_lossy()]);
    }

    /// kill -9 of node `id` (1-based).
    pub fn kill(&self, id: usize) {
        self.node("kill", id);
    }

    /// Starts node `id` again, waiting until it says it started (SIGTERM first if it runs:
    /// a controlled shutdown).
    pub fn restart(&self, id: usize) {
        self.node("restart", id);
    }

    /// SIGSTOP of node `id`.
    pub fn pause(&self, id: usize) {
        self.node("pause", id);
    }

    /// SIGCONT of node `id`.
    pub fn resume(&self, id: usize) {
        self.node("resume", id);
    }

    /// Node `id`'s process id.
    pub fn pid(&self, id: usize) -> Option<u32> {
        std::fs::read_to_string(self.dir.join(format!("node-{id}/pid")))
            .ok()?
            .trim()
            .parse()
            .ok()
    }

    /// The bootstrap list of another listener (`SSL`, `SASL_PLAINTEXT`, `SASL_SSL`).
    pub fn bootstrap_of(&self, listener: &str) -> String {
        run(&["bootstrap", listener, "--dir", &self.dir.to_string_lossy()])
    }

    /// Node `id`'s host:port on the PLAINTEXT listener.
    pub fn addr(&self, id: usize) -> String {
        self.bootstrap
            .split(',')
            .nth(id - 1)
            .expect("a node")
            .to_owned()
    }

    /// Creates a topic through the Java admin client (independent of the client under
    /// test), with a leader for every partition when it returns.
    pub fn create_topic(&self, name: &str, partitions: u32, replication: u16, configs: &[&str]) {
        let p = partitions.to_string();
        let rf = replication.to_string();
        let mut args = vec!["create-topic", &self.bootstrap, name, &p, &rf];
        args.extend_from_slice(configs);
        let out = peer(&args, None);
        assert!(out.0, "creating topic {name} failed: {}", out.2);
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        let _ = Command::new("bash")
            .arg(script())
            .args(["stop", "--dir", &self.dir.to_string_lossy()])
            .status();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Runs the Java peer program with `args`, feeding it `stdin`; returns (success, stdout,
/// stderr).
pub fn peer(args: &[&str], stdin: Option<&str>) -> (bool, String, String) {
    let mut child = Command::new("java")
        .arg(format!(
            "-Dlog4j2.configurationFile={}",
            repo_root().join("scripts/java/log4j2.yaml").display()
        ))
        .arg("-cp")
        .arg(peer_classpath())
        .arg("KafkaPeer")
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run java (OpenJDK 17 or later must be installed)");
    let mut input = child.stdin.take().expect("piped");
    let data = stdin.unwrap_or_default().to_owned();
    let writer = std::thread::spawn(move || {
        let _ = input.write_all(data.as_bytes());
    });
    let out = child.wait_with_output().expect("java ran");
    let _ = writer.join();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Writes three transactions of 50 records each to `topic` with transactional id `id`: "c1-i"
/// committed, "ab-i" written, flushed and aborted, "c2-i" committed (the interop suites' check
/// that a read_committed peer skips exactly the aborted one).
pub async fn write_three_transactions(bootstrap: &str, topic: &str, id: &str) {
    use kafka_tokio::{Producer, Record};
    let p = Producer::from_map([("bootstrap.servers", bootstrap), ("transactional.id", id)])
        .expect("a transactional config");
    p.init_transactions().await.expect("init_transactions");
    for (tag, commit) in [("c1", true), ("ab", false), ("c2", true)] {
        p.begin_transaction().expect("begin_transaction");
        for i in 0..50 {
            p.send(Record::new(topic.to_owned(), format!("{tag}-{i}")))
                .await
                .expect("send");
        }
        if commit {
            p.commit_transaction().await.expect("commit_transaction");
        } else {
            p.flush().await;
            p.abort_transaction().await.expect("abort_transaction");
        }
    }
    p.close(std::time::Duration::from_secs(10)).await;
}

/// A Java member of a consumer group (`KafkaPeer member`), driven over stdin and stdout: its
/// lines (`assigned p,p`, `revoked p,p`, `lost p,p`, `record p offset hexvalue`, `closed`)
/// gather as it runs.
pub struct JavaMember {
    child: std::process::Child,
    stdin: std::process::ChildStdin,
    /// Every line it printed so far.
    pub lines: std::sync::Arc<std::sync::Mutex<Vec<String>>>,
}

impl JavaMember {
    /// Starts a member of `group` subscribed to `topic`, with extra consumer settings
    /// (`key=value`).
    pub fn start(bootstrap: &str, group: &str, topic: &str, settings: &[&str]) -> JavaMember {
        use std::io::BufRead;
        let mut child = Command::new("java")
            .arg("-cp")
            .arg(peer_classpath())
            .args(["KafkaPeer", "member", bootstrap, group, topic])
            .args(settings)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("run java (scripts/test installs a JDK)");
        let stdin = child.stdin.take().expect("piped");
        let out = std::io::BufReader::new(child.stdout.take().expect("piped"));
        let lines = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let sink = lines.clone();
        std::thread::spawn(move || {
            for l in out.lines().map_while(Result::ok) {
                sink.lock().unwrap().push(l);
            }
        });
        JavaMember {
            child,
            stdin,
            lines,
        }
    }

    /// Leaves the group (closes the consumer) and waits for the process; its lines.
    pub fn stop(mut self) -> Vec<String> {
        let _ = writeln!(self.stdin, "stop");
        let _ = self.child.wait();
        let lines = self.lines.lock().unwrap().clone();
        lines
    }

    /// Kills the process (SIGKILL: no leave, no commit): a crash. Its lines.
    pub fn crash(mut self) -> Vec<String> {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let lines = self.lines.lock().unwrap().clone();
        lines
    }

    /// How many records it printed so far.
    pub fn records(&self) -> usize {
        let lines = self.lines.lock().unwrap();
        lines.iter().filter(|l| l.starts_with("record")).count()
    }

    /// The partitions it owns after its events so far.
    pub fn owned(&self) -> std::collections::BTreeSet<i32> {
        owned_by(&self.lines.lock().unwrap())
    }
}

/// The partitions a Java member owns after these lines of its.
pub fn owned_by(lines: &[String]) -> std::collections::BTreeSet<i32> {
    let mut owned = std::collections::BTreeSet::new();
    for l in lines {
        let mut f = l.split('\t');
        let what = f.next().unwrap_or("");
        let parts: Vec<i32> = f
            .next()
            .unwrap_or("")
            .split(',')
            .filter_map(|s| s.parse().ok())
            .collect();
        match what {
            "assigned" => owned.extend(parts),
            "revoked" | "lost" => {
                for p in parts {
                    owned.remove(&p);
                }
            }
            _ => {}
        }
    }
    owned
}
