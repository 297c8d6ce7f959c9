//! One test body, either broker: Tansu (light, no JVM) or Apache Kafka itself (the
//! reference). Tansu brokers are started per test; Kafka nodes are slow to start, so the tests
//! of one suite share a single-node cluster unless they take a node down, which gets its own.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use crate::broker::Broker;
use crate::kafka::Cluster;

/// Which broker a test runs against.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Tansu, from PyPI.
    Tansu,
    /// Apache Kafka, from Maven Central's jars.
    Kafka,
}

enum Inner {
    Tansu(Broker),
    Kafka(Arc<Cluster>, bool),
}

/// A broker for one test.
pub struct TestBroker {
    /// `host:port` to bootstrap from.
    pub addr: String,
    /// Which broker.
    pub kind: Kind,
    inner: Inner,
}

impl TestBroker {
    /// A broker the test may share with the other tests asking with the same `key` (Kafka);
    /// a fresh one (Tansu). Tests that share must use topic names of their own.
    pub fn shared(kind: Kind, key: &'static str) -> TestBroker {
        match kind {
            Kind::Tansu => Self::exclusive(kind),
            Kind::Kafka => {
                static SHARED: Mutex<BTreeMap<&'static str, Arc<Cluster>>> =
                    Mutex::new(BTreeMap::new());
                let mut map = SHARED.lock().unwrap_or_else(|e| e.into_inner());
                let cluster = map
                    .entry(key)
                    .or_insert_with(|| Arc::new(Cluster::start(1)))
                    .clone();
                TestBroker {
                    addr: cluster.bootstrap.clone(),
                    kind,
                    inner: Inner::Kafka(cluster, false),
                }
            }
        }
    }

    /// A broker of its own, which the test may kill, restart and pause.
    pub fn exclusive(kind: Kind) -> TestBroker {
        match kind {
            Kind::Tansu => {
                let b = Broker::start();
                TestBroker {
                    addr: b.addr.clone(),
                    kind,
                    inner: Inner::Tansu(b),
                }
            }
            Kind::Kafka => {
                let c = Arc::new(Cluster::start(1));
                TestBroker {
                    addr: c.bootstrap.clone(),
                    kind,
                    inner: Inner::Kafka(c, true),
                }
            }
        }
    }

    fn own(&self) -> &Cluster {
        match &self.inner {
            Inner::Kafka(c, true) => c,
            Inner::Kafka(_, false) => {
                panic!("a shared Kafka broker cannot be taken down: use TestBroker::exclusive")
            }
            Inner::Tansu(_) => unreachable!("Tansu handled by the caller"),
        }
    }

    /// Kills the broker (no clean shutdown).
    pub fn kill(&mut self) {
        match &mut self.inner {
            Inner::Tansu(b) => b.kill(),
            Inner::Kafka(..) => self.own().kill(1),
        }
    }

    /// Starts it again after a kill: Tansu with empty storage, Kafka with its data.
    pub fn restart(&mut self) {
        match &mut self.inner {
            Inner::Tansu(b) => b.restart(),
            Inner::Kafka(..) => self.own().restart(1),
        }
    }

    /// Freezes it (SIGSTOP): connections stay open and nothing answers.
    pub fn pause(&self) {
        match &self.inner {
            Inner::Tansu(b) => b.pause(),
            Inner::Kafka(..) => self.own().pause(1),
        }
    }

    /// Thaws it (SIGCONT).
    pub fn resume(&self) {
        match &self.inner {
            Inner::Tansu(b) => b.resume(),
            Inner::Kafka(..) => self.own().resume(1),
        }
    }

    /// Creates a topic with the broker's own tools (not the client under test); on Kafka an
    /// existing topic is left as it is.
    pub fn create_topic(&self, name: &str, partitions: u32) {
        match &self.inner {
            Inner::Tansu(b) => b.create_topic(name, partitions),
            Inner::Kafka(c, _) => c.create_topic(name, partitions, 1, &[]),
        }
    }
}
