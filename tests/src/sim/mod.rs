//! The deterministic simulation: the real kafka-core producer and consumer against a
//! [`SimCluster`] over a [`SimNet`], on one virtual clock, with one seed behind every random
//! choice (the cluster's elections, the network's chunks and delays, the faults, the workload
//! and the clients' own `random.seed`). The same seed replays the same run, bit for bit.
//!
//! [`World::step`] is the quinn `Pair` / str0m `progress` pattern: it finds the earliest
//! pending event among the clients' `poll_timeout`, the cluster's timers, the network's
//! deliveries and the schedule of faults and workload, moves the clock there, delivers, and
//! drains every output.

use std::time::Duration;

use kafka_core::net::{ConnId, ConnectError, Machine, Output, Transmit};
use kafka_core::Instant;
use kafka_sim::{BrokerWrite, ClusterConfig, ConnKey, Delivery, NetConfig, SimCluster, SimNet};

pub mod apps;
pub mod check;
pub mod faults;
pub mod storm;

pub use apps::{ConsumerApp, ProducerApp};
pub use check::Failure;
pub use faults::FaultCounts;

/// Virtual time as the cluster sees it.
pub fn sim_time(t: Instant) -> Duration {
    Duration::from_nanos(t.as_nanos())
}

/// A client of the world: the core's state machines, type-erased over their events.
pub enum Client {
    /// A producer application.
    Producer(Box<ProducerApp>),
    /// A consumer-group member.
    Consumer(Box<ConsumerApp>),
}

/// What a run does.
#[derive(Debug, Clone)]
pub struct Options {
    /// The seed.
    pub seed: u64,
    /// Inject faults.
    pub faults: bool,
    /// Keep a readable trace of every input and output.
    pub trace: bool,
    /// A deliberately injected bug (for the replay check): the cluster forgets to deduplicate
    /// idempotent retries.
    pub injected_bug: bool,
}

impl Options {
    /// A faulty run of `seed`.
    pub fn seed(seed: u64) -> Self {
        Options {
            seed,
            faults: true,
            trace: false,
            injected_bug: false,
        }
    }
}

/// What a run did.
#[derive(Debug, Clone, Default)]
pub struct Report {
    /// Virtual time at the end.
    pub virtual_time: Duration,
    /// Steps taken.
    pub steps: u64,
    /// A hash of every input and output, in order: equal for equal runs.
    pub trace_hash: u64,
    /// The trace, when asked for.
    pub trace: Vec<String>,
    /// Faults that fired.
    pub faults: FaultCounts,
    /// acks=1 records acknowledged and then lost to a leader change (permitted).
    pub permitted_losses: u64,
    /// Records acknowledged to the producers.
    pub delivered: u64,
    /// Records handed to consumers.
    pub consumed: u64,
    /// From the end of the last fault (or the last send, if later) to the moment every
    /// producer's record had its outcome: how long the producers took to recover.
    pub produce_recovery: Duration,
}

/// The simulated world.
pub struct World {
    /// The clock.
    pub now: Instant,
    /// The brokers.
    pub cluster: SimCluster,
    /// The network.
    pub net: SimNet,
    /// The clients, by index (their connections are `index << 32 | conn`).
    pub clients: Vec<Option<Client>>,
    /// The next connect is refused (an injected fault).
    pub refuse_next: bool,
    /// Every broker closes new connections during their handshake (an injected fault).
    pub quota: bool,
    /// Each client's connects in the last second, to find reconnect storms.
    connects: storm::ConnectRate<usize>,
    /// Clients not running (a starved machine: the process gets no CPU while time moves
    /// on), until when, with what the network delivered to them meanwhile, in order.
    stalled: std::collections::BTreeMap<usize, (Instant, Vec<Delivery>)>,
    trace_on: bool,
    trace: Vec<String>,
    hash: u64,
    steps: u64,
}

fn key(client: usize, conn: ConnId) -> ConnKey {
    ((client as u64) << 32) | (conn.0 & 0xffff_ffff)
}

fn split(k: ConnKey) -> (usize, ConnId) {
    ((k >> 32) as usize, ConnId(k & 0xffff_ffff))
}

impl World {
    /// An empty world.
    pub fn new(cluster: ClusterConfig, seed: u64) -> Self {
        World {
            now: Instant::ZERO,
            cluster: SimCluster::new(cluster, seed),
            net: SimNet::new(NetConfig::default(), seed),
            clients: Vec::new(),
            refuse_next: false,
            quota: false,
            connects: Default::default(),
            stalled: Default::default(),
            trace_on: false,
            trace: Vec::new(),
            hash: 0xcbf2_9ce4_8422_2325,
            steps: 0,
        }
    }

    /// Records one input or output: hashed always, kept when tracing.
    pub fn note(&mut self, line: std::fmt::Arguments<'_>) {
        if self.trace_on {
            let line = line.to_string();
            hash_line(&mut self.hash, format_args!("{line}"));
            self.trace
                .push(format!("{:>12.6} {line}", self.now.as_nanos() as f64 / 1e9));
        } else {
            hash_line(&mut self.hash, line);
        }
    }

    /// Keeps a readable trace.
    pub fn trace(&mut self, on: bool) {
        self.trace_on = on;
    }

    /// The trace so far, and its hash.
    pub fn take_trace(&mut self) -> (Vec<String>, u64) {
        (std::mem::take(&mut self.trace), self.hash)
    }

    /// Steps taken.
    pub fn steps(&self) -> u64 {
        self.steps
    }

    /// Adds a client; returns its index.
    pub fn add(&mut self, c: Client) -> usize {
        self.clients.push(Some(c));
        self.clients.len() - 1
    }

    /// The earliest time anything is due (`extra`: the caller's own schedule).
    pub fn next_due(&self, extra: Option<Instant>) -> Option<Instant> {
        let to_instant = |d: Duration| Instant::from_nanos(d.as_nanos() as u64);
        let clients = self
            .clients
            .iter()
            .enumerate()
            .filter(|(i, _)| !self.stalled.contains_key(i))
            .filter_map(|(_, c)| match c.as_ref()? {
                Client::Producer(p) => p.poll_timeout(),
                Client::Consumer(c) => c.poll_timeout(),
            });
        clients
            .chain(self.stalled.values().map(|(until, _)| *until))
            .chain(self.cluster.next_due().map(to_instant))
            .chain(self.net.next_due().map(to_instant))
            .chain(extra)
            .min()
    }

    /// Moves the clock to `to` (never back) and delivers everything due, draining outputs.
    pub fn step_to(&mut self, to: Instant) -> Result<(), Failure> {
        self.steps += 1;
        self.now = self.now.max(to);
        let now = self.now;
        let t = sim_time(now);
        while let Some(d) = self.net.poll(t) {
            self.deliver(d)?;
        }
        self.cluster.advance(t);
        self.drain_cluster();
        // Stalls that ended: the client runs again, and gets what arrived meanwhile.
        let resumed: Vec<usize> = (self.stalled.iter())
            .filter(|(_, (until, _))| *until <= now)
            .map(|(i, _)| *i)
            .collect();
        for i in resumed {
            let (_, held) = self.stalled.remove(&i).expect("listed");
            self.note(format_args!(
                "c{i} runs again ({} deliveries held)",
                held.len()
            ));
            for d in held {
                self.deliver(d)?;
            }
        }
        for i in 0..self.clients.len() {
            if self.stalled.contains_key(&i) {
                continue;
            }
            match &mut self.clients[i] {
                Some(Client::Producer(p)) => p.tick(now)?,
                Some(Client::Consumer(c)) => c.tick(now),
                None => continue,
            }
            self.drain_client(i)?;
        }
        Ok(())
    }

    fn with_client(&mut self, i: usize, f: impl FnOnce(&mut dyn MachineLike, Instant)) {
        let now = self.now;
        match &mut self.clients[i] {
            Some(Client::Producer(p)) => f(&mut p.producer, now),
            Some(Client::Consumer(c)) => f(&mut c.fetcher, now),
            None => {}
        }
    }

    /// Client `i` gets no CPU until `until`: it neither runs its timers nor reads what
    /// arrives, while its brokers go on (its requests time out on its own clock, later, though
    /// the brokers answered them).
    pub fn stall(&mut self, i: usize, until: Instant) {
        if self.clients.get(i).is_some_and(Option::is_some) {
            if let Some(Client::Producer(p)) = &mut self.clients[i] {
                p.stalls.push((self.now, until));
            }
            let entry = self.stalled.entry(i).or_insert((until, Vec::new()));
            entry.0 = entry.0.max(until);
            self.note(format_args!("c{i} stalled until {until:?}"));
        }
    }

    fn deliver(&mut self, d: Delivery) -> Result<(), Failure> {
        let t = sim_time(self.now);
        let to = match &d {
            Delivery::Connected(k, _)
            | Delivery::Refused(k)
            | Delivery::ToClient(k, _)
            | Delivery::ClientSideClosed(k) => Some(split(*k).0),
            Delivery::ToBroker(..) | Delivery::BrokerSideClosed(_) => None,
        };
        if let Some((_, held)) = to.and_then(|i| self.stalled.get_mut(&i)) {
            held.push(d);
            return Ok(());
        }
        match d {
            Delivery::Connected(k, node) if self.quota => {
                // Accepted, and closed before the handshake is answered.
                let (i, conn) = split(k);
                self.note(format_args!(
                    "net: c{i}/{} connected to {node}, closed by its quota",
                    conn.0
                ));
                self.net.broker_close(k, t);
                self.with_client(i, |c, now| c.handle_connected(conn, now));
                self.drain_client(i)?;
            }
            Delivery::Connected(k, node) => {
                let (i, conn) = split(k);
                if self.cluster.accept(k, node) {
                    self.note(format_args!("net: c{i}/{} connected to {node}", conn.0));
                    self.with_client(i, |c, now| c.handle_connected(conn, now));
                } else {
                    self.note(format_args!(
                        "net: c{i}/{} refused by down broker {node}",
                        conn.0
                    ));
                    self.net.broker_close(k, t);
                    self.with_client(i, |c, now| {
                        c.handle_connect_failed(conn, ConnectError::Refused, now)
                    });
                }
                self.drain_client(i)?;
            }
            Delivery::Refused(k) => {
                let (i, conn) = split(k);
                self.note(format_args!("net: c{i}/{} refused", conn.0));
                self.with_client(i, |c, now| {
                    c.handle_connect_failed(conn, ConnectError::Refused, now)
                });
                self.drain_client(i)?;
            }
            Delivery::ToBroker(k, bytes) => {
                self.note(format_args!("net: {k:x} -> broker {} B", bytes.len()));
                self.cluster.receive(k, &bytes, t);
                self.drain_cluster();
            }
            Delivery::ToClient(k, bytes) => {
                let (i, conn) = split(k);
                self.note(format_args!(
                    "net: broker -> c{i}/{} {} B",
                    conn.0,
                    bytes.len()
                ));
                self.with_client(i, |c, now| c.handle_received(conn, &bytes, now));
                self.drain_client(i)?;
            }
            Delivery::BrokerSideClosed(k) => {
                self.note(format_args!("net: {k:x} closed at the broker"));
                self.cluster.closed(k);
            }
            Delivery::ClientSideClosed(k) => {
                let (i, conn) = split(k);
                self.note(format_args!("net: c{i}/{} closed", conn.0));
                self.with_client(i, |c, now| c.handle_closed(conn, now));
                self.drain_client(i)?;
            }
        }
        Ok(())
    }

    fn drain_cluster(&mut self) {
        let t = sim_time(self.now);
        while let Some((k, w)) = self.cluster.poll_transmit() {
            match w {
                BrokerWrite::Bytes(b) => self.net.broker_send(k, b, t),
                BrokerWrite::Close => self.net.broker_close(k, t),
            }
        }
    }

    /// Drains a client's outputs: connects, bytes and closes to the network, events to its
    /// application (which may act on the client again).
    pub fn drain_client(&mut self, i: usize) -> Result<(), Failure> {
        let t = sim_time(self.now);
        loop {
            let now = self.now;
            let out = match &mut self.clients[i] {
                Some(Client::Producer(p)) => match p.producer.poll_output() {
                    None => None,
                    Some(Output::Event(e)) => {
                        // Traced a record at a time, as the core once reported deliveries;
                        // hashed as formatted unless a readable trace is kept.
                        let mut lines = Vec::new();
                        for e in e.per_record() {
                            if self.trace_on {
                                lines.push(format!("c{i} event {e:?}"));
                            } else {
                                hash_line(&mut self.hash, format_args!("c{i} event {e:?}"));
                            }
                            p.on_event(e, now)?;
                        }
                        for line in lines {
                            self.note(format_args!("{line}"));
                        }
                        continue;
                    }
                    Some(Output::Transmit(tx)) => Some(tx),
                    _ => unreachable!("a variant this test does not know"),
                },
                Some(Client::Consumer(c)) => match c.fetcher.poll_output() {
                    None => None,
                    Some(Output::Event(e)) => {
                        let line = format!("c{i} event {}", apps::short(&e));
                        c.on_event(e, now)?;
                        self.note(format_args!("{line}"));
                        continue;
                    }
                    Some(Output::Transmit(tx)) => Some(tx),
                    _ => unreachable!("a variant this test does not know"),
                },
                None => None,
            };
            let Some(tx) = out else { return Ok(()) };
            match tx {
                Transmit::Connect { conn, addr } => {
                    let k = key(i, conn);
                    self.count_connect(i)?;
                    self.note(format_args!(
                        "c{i}/{} connect {}:{}",
                        conn.0, addr.host, addr.port
                    ));
                    match self.cluster.node_at(&addr.host, addr.port) {
                        Some(_) if std::mem::take(&mut self.refuse_next) => self.net.refuse(k, t),
                        Some(node) => self.net.connect(k, node, t),
                        None => self.net.refuse(k, t),
                    }
                }
                Transmit::Send { conn, bytes } => {
                    self.note(format_args!("c{i}/{} send {}", conn.0, requests(&bytes)));
                    self.net.client_send(key(i, conn), bytes, t);
                }
                Transmit::Close { conn } => {
                    self.note(format_args!("c{i}/{} close", conn.0));
                    self.net.client_close(key(i, conn), t);
                }
                _ => unreachable!("a variant this test does not know"),
            }
        }
    }

    /// A client opens a connection: more than [`storm::CONNECTS_PER_SECOND`] within a second
    /// is a reconnect storm (reconnects must back off, whatever fails).
    fn count_connect(&mut self, i: usize) -> Result<(), Failure> {
        match self.connects.connect(i, sim_time(self.now)) {
            Some(n) => Err(Failure::new(format!(
                "c{i} opened {n} connections within a second (a reconnect storm: reconnects must \
                 back off)"
            ))),
            None => Ok(()),
        }
    }

    /// A client crashes: it is gone, and its connections reset.
    pub fn crash_client(&mut self, i: usize) {
        let t = sim_time(self.now);
        self.clients[i] = None;
        self.stalled.remove(&i);
        for k in self.net.open() {
            if split(k).0 == i {
                self.net.reset(k, t);
            }
        }
        self.note(format_args!("c{i} crashed"));
    }

    /// The connections a client has open.
    pub fn conns_of(&self, i: usize) -> Vec<ConnKey> {
        self.net
            .open()
            .into_iter()
            .filter(|k| split(*k).0 == i)
            .collect()
    }
}

/// The requests in a client's write, by API name (for the trace).
/// Adds a trace line to an FNV-1a hash (its bytes, then a newline) as it is formatted: most
/// seeds keep no readable trace, and building each line was a seventh of a seed's work.
fn hash_line(hash: &mut u64, line: std::fmt::Arguments<'_>) {
    struct Fnv<'a>(&'a mut u64);
    impl std::fmt::Write for Fnv<'_> {
        fn write_str(&mut self, s: &str) -> std::fmt::Result {
            for b in s.bytes() {
                *self.0 = (*self.0 ^ u64::from(b)).wrapping_mul(0x100_0000_01b3);
            }
            Ok(())
        }
    }
    let mut fnv = Fnv(hash);
    // Writing to a hash cannot fail; a Debug impl that errs would only shorten the line.
    let _ = std::fmt::Write::write_fmt(&mut fnv, line);
    let _ = std::fmt::Write::write_str(&mut fnv, "\n");
}

pub fn requests(bytes: &[u8]) -> String {
    // TLS records (type 20-23, version 3.x) hide the requests, and their bytes are random:
    // only their length goes in the trace. No Kafka frame starts so (it would be ~350 MB).
    if bytes.len() >= 5 && (20..=23).contains(&bytes[0]) && bytes[1] == 3 {
        return format!("TLS records ({} B)", bytes.len());
    }
    let mut names = Vec::new();
    let mut rest = bytes;
    while rest.len() >= 6 {
        let len = i32::from_be_bytes([rest[0], rest[1], rest[2], rest[3]]).max(0) as usize;
        let key = i16::from_be_bytes([rest[4], rest[5]]);
        names.push(
            kafka_core::proto::api::ApiKey::from_i16(key)
                .map_or_else(|| format!("api {key}"), |k| format!("{k:?}")),
        );
        rest = &rest[(4 + len).min(rest.len())..];
    }
    format!("{} ({} B)", names.join(" "), bytes.len())
}

/// The [`Machine`] inputs, object-safe over the client kinds.
pub trait MachineLike {
    /// See [`Machine::handle_connected`].
    fn handle_connected(&mut self, conn: ConnId, now: Instant);
    /// See [`Machine::handle_connect_failed`].
    fn handle_connect_failed(&mut self, conn: ConnId, error: ConnectError, now: Instant);
    /// See [`Machine::handle_received`].
    fn handle_received(&mut self, conn: ConnId, data: &[u8], now: Instant);
    /// See [`Machine::handle_closed`].
    fn handle_closed(&mut self, conn: ConnId, now: Instant);
    /// See [`Machine::handle_timeout`].
    fn handle_timeout(&mut self, now: Instant);
}

impl<M: Machine> MachineLike for M {
    fn handle_connected(&mut self, conn: ConnId, now: Instant) {
        Machine::handle_connected(self, conn, now)
    }
    fn handle_connect_failed(&mut self, conn: ConnId, error: ConnectError, now: Instant) {
        Machine::handle_connect_failed(self, conn, error, now)
    }
    fn handle_received(&mut self, conn: ConnId, data: &[u8], now: Instant) {
        Machine::handle_received(self, conn, data, now)
    }
    fn handle_closed(&mut self, conn: ConnId, now: Instant) {
        Machine::handle_closed(self, conn, now)
    }
    fn handle_timeout(&mut self, now: Instant) {
        Machine::handle_timeout(self, now)
    }
}

pub use check::run;

/// What a sweep gives back: each seed's report, the failures as (seed, message), the wall
/// time.
pub type Swept<T> = (Vec<(u64, T)>, Vec<(u64, String)>, Duration);

/// Runs `run` for seeds `start..start + n` on every core, printing progress; returns each
/// seed's report and the failures as (seed, message, sorted by seed), and the wall time.
/// Recoveries of a sweep (each seed's, with the seed) as median, 99th percentile and worst:
/// how long `what` took to settle after the last fault.
pub fn recovery_summary(what: &str, recoveries: &mut [(Duration, u64)]) -> String {
    recoveries.sort();
    let at = |q: f64| {
        let i = ((recoveries.len() as f64 - 1.0) * q).round() as usize;
        recoveries.get(i).copied().unwrap_or_default()
    };
    let worst = at(1.0);
    format!(
        "{what} settled after the last fault in {:?} (median), {:?} (p99), {:?} (worst, seed {})",
        at(0.5).0,
        at(0.99).0,
        worst.0,
        worst.1
    )
}

pub fn sweep<T: Send>(
    start: u64,
    n: u64,
    run: impl Fn(u64) -> Result<T, Failure> + Sync,
) -> Swept<T> {
    use std::sync::atomic::{AtomicU64, Ordering};
    let threads = std::thread::available_parallelism().map_or(2, |n| n.get()) as u64;
    let next = AtomicU64::new(start);
    let done = AtomicU64::new(0);
    let began = std::time::Instant::now();
    let results = std::sync::Mutex::new((Vec::new(), Vec::new()));
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| loop {
                let seed = next.fetch_add(1, Ordering::Relaxed);
                if seed >= start + n {
                    return;
                }
                let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| run(seed)));
                let mut r = results.lock().unwrap_or_else(|e| e.into_inner());
                match outcome {
                    Ok(Ok(report)) => r.0.push((seed, report)),
                    Ok(Err(f)) => r.1.push((seed, f.message)),
                    Err(p) => {
                        let msg = p
                            .downcast_ref::<String>()
                            .cloned()
                            .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
                            .unwrap_or_default();
                        r.1.push((seed, format!("panicked: {msg}")));
                    }
                }
                // Said at once, so that a long sweep cut short still tells what it found.
                if let Some((failed, message)) = r.1.last().filter(|f| f.0 == seed) {
                    eprintln!("  seed {failed} FAILED: {message}");
                }
                let failed = r.1.len();
                drop(r);
                let k = done.fetch_add(1, Ordering::Relaxed) + 1;
                if k.is_multiple_of(250) || k == n {
                    eprintln!(
                        "  {k}/{n} seeds in {:.1} s, {failed} failed",
                        began.elapsed().as_secs_f64()
                    );
                }
            });
        }
    });
    let (mut reports, mut failures) = results.into_inner().unwrap_or_else(|e| e.into_inner());
    reports.sort_by_key(|r: &(u64, T)| r.0);
    failures.sort();
    (reports, failures, began.elapsed())
}
