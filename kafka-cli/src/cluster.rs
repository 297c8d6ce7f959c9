//! Cluster lookups every command shares: an admin client bounded by `--timeout`, metadata with
//! errors that say what to do, and the `metadata` and `topic` commands.

use std::time::Duration;

use kafka_tokio::{Admin, AdminError, ClusterMetadata, ErrorCode, NewTopic, TopicMetadata};

/// How long an unknown topic is asked about again before the command says it does not exist.
const SETTLE: Duration = Duration::from_secs(2);
/// The pause between two such questions.
const RETRY: Duration = Duration::from_millis(100);

/// A failed command: one line for stderr.
pub type CliResult<T> = Result<T, String>;

/// The cluster, as the CLI reaches it.
pub struct Cluster {
    admin: Admin,
    brokers: String,
    config: Vec<String>,
    timeout: Duration,
}

/// What reopens a [`Cluster`] closed by [`Cluster::close`].
pub struct Closed {
    brokers: String,
    config: Vec<String>,
    timeout: Duration,
}

impl Closed {
    /// A new admin client (it connects at its first call).
    pub fn reopen(&self) -> CliResult<Cluster> {
        Cluster::new(&self.brokers, &self.config, self.timeout)
    }
}

impl Cluster {
    /// The admin client for `brokers`, with the global `-X` settings (security, and any
    /// producer or consumer settings, which the admin client notes and ignores).
    pub fn new(brokers: &str, config: &[String], timeout: Duration) -> CliResult<Cluster> {
        let ms = timeout.as_millis().max(1);
        // A request times out a tenth before the call does: a broker that never answers is
        // then recorded as the call's last problem and named in its error. With the two equal,
        // the call's deadline sometimes came first and the error said only "no answer".
        let request_ms = (ms * 9 / 10).max(1);
        let mut map: Vec<(String, String)> = vec![
            ("bootstrap.servers".into(), brokers.into()),
            ("default.api.timeout.ms".into(), ms.to_string()),
            ("request.timeout.ms".into(), request_ms.to_string()),
        ];
        map.extend(crate::args::settings(config)?);
        let admin = Admin::from_map(map).map_err(|e| format!("config: {e}"))?;
        Ok(Cluster {
            admin,
            brokers: brokers.to_owned(),
            config: config.to_vec(),
            timeout,
        })
    }

    /// Closes the admin client and its connection. A command that looked its topic up closes
    /// it before it produces or consumes, so that its run holds only its producer's or
    /// consumer's connections (one to a one-broker cluster for `produce`, two for
    /// `consume -G`: the group coordinator's is its own), not one more that idles to the end.
    pub fn close(self) -> Closed {
        Closed {
            brokers: self.brokers,
            config: self.config,
            timeout: self.timeout,
        }
    }

    /// `--timeout`.
    pub fn timeout(&self) -> Duration {
        self.timeout
    }

    /// The admin client.
    pub fn admin(&self) -> &Admin {
        &self.admin
    }

    /// An admin error as one line that says what to do.
    pub fn explain(&self, e: AdminError) -> String {
        match e {
            AdminError::Timeout { .. } => format!(
                "cannot reach the cluster at {} within {}s ({e}); check -b and that the broker is running",
                self.brokers,
                self.timeout.as_secs()
            ),
            other => other.to_string(),
        }
    }

    /// Metadata for `topics` (all when `None`).
    pub async fn metadata(&self, topics: Option<&[&str]>) -> CliResult<ClusterMetadata> {
        self.admin
            .metadata(topics)
            .await
            .map_err(|e| self.explain(e))
    }

    /// One topic's metadata, or an error that says how to create it.
    ///
    /// A topic created a moment ago by another tool may not have reached the broker that answers
    /// yet (KRaft brokers apply the controller's record a little after CreateTopics returns), so
    /// an unknown topic is asked about again for up to [`SETTLE`] before the command gives up.
    pub async fn topic(&self, name: &str) -> CliResult<TopicMetadata> {
        self.wait_for(name, SETTLE.min(self.timeout), |_| true)
            .await?
            .ok_or_else(|| {
                format!(
                    "topic '{name}' does not exist; create it with: kafka-cli -b {} topic create {name} --partitions N",
                    self.brokers
                )
            })
    }

    /// Asks about the topic, at least once, until `ready` holds of its metadata or `within`
    /// passes: the metadata that satisfied it, or `None`.
    async fn wait_for(
        &self,
        name: &str,
        within: Duration,
        ready: impl Fn(&TopicMetadata) -> bool,
    ) -> CliResult<Option<TopicMetadata>> {
        let until = tokio::time::Instant::now() + within;
        loop {
            if let Some(t) = self.lookup(name).await?.filter(|t| ready(t)) {
                return Ok(Some(t));
            }
            if tokio::time::Instant::now() >= until {
                return Ok(None);
            }
            tokio::time::sleep(RETRY).await;
        }
    }

    /// The topic's metadata, `None` while the broker does not know it.
    async fn lookup(&self, name: &str) -> CliResult<Option<TopicMetadata>> {
        let md = self.metadata(Some(&[name])).await?;
        let t = md
            .topics
            .into_iter()
            .find(|t| t.name == name)
            .ok_or_else(|| format!("the broker did not describe topic '{name}'"))?;
        match t.error {
            None if !t.partitions.is_empty() => Ok(Some(t)),
            None | Some(ErrorCode::UnknownTopicOrPartition) => Ok(None),
            Some(e) => Err(format!("topic '{name}': {e}")),
        }
    }

    /// Creates the topic and waits, within `--timeout`, until the cluster describes it with a
    /// leader for every partition, so that the next command (produce, consume) finds it.
    pub async fn create(&self, topic: NewTopic) -> CliResult<()> {
        let name = topic.name.clone();
        self.admin
            .create_topic(topic)
            .await
            .map_err(|e| format!("creating topic '{name}': {}", self.explain(e)))?;
        let leaders = |t: &TopicMetadata| t.partitions.iter().all(|p| p.leader.is_some());
        match self.wait_for(&name, self.timeout, leaders).await? {
            Some(_) => Ok(()),
            None => Err(format!(
                "topic '{name}' was created, but the cluster did not show a leader for each of its partitions within {}s; try the next command again in a moment",
                self.timeout.as_secs()
            )),
        }
    }

    pub async fn delete(&self, name: &str) -> CliResult<()> {
        self.admin
            .delete_topic(name)
            .await
            .map_err(|e| format!("deleting topic '{name}': {}", self.explain(e)))
    }
}

/// The `metadata` command's output.
pub fn print_metadata(md: &ClusterMetadata, json: bool) {
    if json {
        let brokers: Vec<_> = md
            .brokers
            .iter()
            .map(|b| {
                serde_json::json!({
                    "id": b.id, "host": b.addr.host, "port": b.addr.port, "rack": b.rack,
                })
            })
            .collect();
        let topics: Vec<_> = md
            .topics
            .iter()
            .map(|t| {
                let partitions: Vec<_> = t
                    .partitions
                    .iter()
                    .map(|p| {
                        serde_json::json!({
                            "partition": p.partition,
                            "leader": p.leader,
                            "replicas": p.replicas,
                            "isr": p.isr,
                            "error": p.error.map(|e| e.to_string()),
                        })
                    })
                    .collect();
                serde_json::json!({
                    "name": t.name,
                    "internal": t.internal,
                    "error": t.error.map(|e| e.to_string()),
                    "partitions": partitions,
                })
            })
            .collect();
        let out = serde_json::json!({
            "cluster_id": md.cluster_id,
            "controller": md.controller,
            "brokers": brokers,
            "topics": topics,
        });
        println!("{out}");
        return;
    }
    println!(
        "Metadata for cluster {}:",
        md.cluster_id.as_deref().unwrap_or("(unnamed)")
    );
    println!(" {} brokers:", md.brokers.len());
    for b in &md.brokers {
        let controller = if md.controller == Some(b.id) {
            " (controller)"
        } else {
            ""
        };
        println!("  broker {} at {}{controller}", b.id, b.addr);
    }
    println!(" {} topics:", md.topics.len());
    for t in &md.topics {
        let error = t.error.map(|e| format!(": {e}")).unwrap_or_default();
        println!(
            "  topic \"{}\" with {} partitions{error}:",
            t.name,
            t.partitions.len()
        );
        for p in &t.partitions {
            let list = |v: &[i32]| {
                v.iter()
                    .map(|n| n.to_string())
                    .collect::<Vec<_>>()
                    .join(",")
            };
            let leader = p.leader.map_or("none".into(), |l| l.to_string());
            let error = p.error.map(|e| format!(", error {e}")).unwrap_or_default();
            println!(
                "    partition {}, leader {leader}, replicas: {}, isrs: {}{error}",
                p.partition,
                list(&p.replicas),
                list(&p.isr)
            );
        }
    }
}
