//! `SimRuntime`: `kafka-driver`'s [`Runtime`] on a deterministic, single-threaded executor,
//! the virtual clock, and [`SimNet`] sockets to a [`SimCluster`]. The driver and the user API
//! (`Producer`, `Consumer`, `Admin`) run unchanged: the same code users run, in virtual time,
//! with every choice from one seed, so a run replays bit for bit.
//!
//! A [`Sim`] owns one world and installs it for the current thread; the runtime's static
//! functions reach it there. [`Sim::run_until`] is the loop: poll every woken task, then move
//! the clock to the earliest of the timers, the network's deliveries and the brokers' own
//! deadlines, deliver, and repeat.
//!
//! ```
//! use tests::simrt::{Sim, SimRuntime};
//! use kafka_driver::{Producer, Record};
//!
//! let sim = Sim::new(7, kafka_sim::ClusterConfig::default(), kafka_sim::NetConfig::default());
//! let done = sim.spawn_app(async {
//!     let producer = Producer::<SimRuntime>::from_map([
//!         ("bootstrap.servers", "broker-1:9092"),
//!     ])
//!     .unwrap();
//!     let delivery = producer.send(Record::new("t", "hello")).await.unwrap();
//!     let delivered = delivery.await.unwrap();
//!     assert_eq!(delivered.offset, Some(0));
//!     producer.close(std::time::Duration::from_secs(5)).await;
//! });
//! sim.run_until(|| !sim.alive(done), std::time::Duration::from_secs(60)).unwrap();
//! ```

use std::cell::RefCell;
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll};
use std::time::Duration;

use kafka_core::Instant;
use kafka_driver::{Connecting, Runtime};
use kafka_sim::{ClusterConfig, NetConfig, SimCluster, SimNet, SimTime};

mod executor;
mod socket;
mod trace;

pub use executor::{Executor, TaskId};
pub use socket::{SimStream, Wire};
pub use trace::Trace;

/// The simulated world a thread runs: tasks, clock and wire.
pub struct Env {
    /// Tasks, timers, the clock.
    pub exec: Executor,
    /// The network and the brokers.
    pub wire: RefCell<Wire>,
    /// The wall clock at virtual time zero (µs since the epoch).
    pub wall_origin_us: i64,
    /// The next seed a client made without `random.seed` draws: from the run's seed, so a
    /// run replays.
    pub next_client_seed: std::cell::Cell<u64>,
}

impl Env {
    /// Virtual time on the cluster's scale.
    pub fn sim_now(&self) -> SimTime {
        SimTime::from_nanos(self.exec.now().as_nanos())
    }
}

thread_local! {
    static ENV: RefCell<Option<Rc<Env>>> = const { RefCell::new(None) };
}

fn with_env<T>(f: impl FnOnce(&Env) -> T) -> T {
    try_with_env(f)
        .expect("SimRuntime used outside a Sim (create a tests::simrt::Sim first, on this thread)")
}

/// `f` on the thread's world, if one is installed (destructors run during teardown too).
fn try_with_env<T>(f: impl FnOnce(&Env) -> T) -> Option<T> {
    let env = ENV.try_with(|e| e.borrow().clone()).ok().flatten()?;
    Some(f(&env))
}

/// The deterministic runtime. Its functions reach the [`Sim`] installed on the calling thread.
#[derive(Debug, Clone, Copy)]
pub struct SimRuntime;

/// A timer on the virtual clock.
#[derive(Debug)]
pub struct SimTimer(u64);

impl Future for SimTimer {
    type Output = ();
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        with_env(|env| env.exec.poll_timer(self.0, cx))
    }
}

impl Drop for SimTimer {
    fn drop(&mut self) {
        let id = self.0;
        try_with_env(|env| env.exec.drop_timer(id));
    }
}

impl Runtime for SimRuntime {
    type Reader = SimStream;
    type Writer = SimStream;
    type Timer = SimTimer;

    fn spawn(driver: impl Future<Output = ()> + Send + 'static) {
        with_env(|env| env.exec.spawn(driver));
    }

    fn connect(host: String, port: u16) -> Connecting<Self> {
        Box::pin(socket::Connect::start(&host, port))
    }

    fn now() -> Instant {
        with_env(|env| env.exec.now())
    }

    fn wall_clock_us() -> i64 {
        with_env(|env| env.wall_origin_us + (env.exec.now().as_nanos() / 1000) as i64)
    }

    fn timer(at: Instant) -> SimTimer {
        SimTimer(with_env(|env| env.exec.timer(at)))
    }

    fn reset(timer: &mut SimTimer, at: Instant) {
        with_env(|env| env.exec.reset_timer(timer.0, at));
    }

    fn seed() -> u64 {
        with_env(|env| {
            let s = env.next_client_seed.get();
            env.next_client_seed
                .set(s.wrapping_add(1) & (u64::MAX >> 1));
            s
        })
    }
}

/// Starts a task from inside the simulation: a child of the calling task, so crashing the
/// caller drops it too. It may hold non-`Send` state.
pub fn spawn(f: impl Future<Output = ()> + 'static) -> TaskId {
    with_env(|env| env.exec.spawn(f))
}

/// Sleeps for `d` of virtual time (for simulated applications).
pub fn sleep(d: Duration) -> SimTimer {
    SimRuntime::timer(SimRuntime::now() + d)
}

/// Runs `f` on the simulated network and cluster (for applications that inject faults).
pub fn with_wire<T>(f: impl FnOnce(&mut Wire) -> T) -> T {
    with_env(|env| f(&mut env.wire.borrow_mut()))
}

/// Virtual time now.
pub fn now() -> Instant {
    SimRuntime::now()
}

/// Logs the client's `tracing` events to stderr stamped with the virtual time, when
/// `SIM_LOG` holds a filter (`SIM_LOG=kafka_core=debug`): for reading one seed's replay.
/// Does nothing otherwise, or if a subscriber is installed already.
pub fn log_from_env() {
    struct VirtualTime;
    impl tracing_subscriber::fmt::time::FormatTime for VirtualTime {
        fn format_time(
            &self,
            w: &mut tracing_subscriber::fmt::format::Writer<'_>,
        ) -> std::fmt::Result {
            match try_with_env(|env| env.exec.now()) {
                Some(t) => write!(w, "{:>12.6}", t.as_nanos() as f64 / 1e9),
                None => write!(w, "{:>12}", "-"),
            }
        }
    }
    use tracing_subscriber::layer::SubscriberExt;
    use tracing_subscriber::util::SubscriberInitExt;
    let Ok(filter) = std::env::var("SIM_LOG") else {
        return;
    };
    let targets: tracing_subscriber::filter::Targets = match filter.parse() {
        Ok(t) => t,
        Err(e) => panic!("SIM_LOG={filter}: not a filter like kafka_core=debug: {e}"),
    };
    let fmt = tracing_subscriber::fmt::layer()
        .with_timer(VirtualTime)
        .with_writer(std::io::stderr);
    let _ = tracing_subscriber::registry()
        .with(fmt)
        .with(targets)
        .try_init();
}

/// Task polls at one instant before the run counts as a live-lock.
const LIVE_LOCK: u64 = 2_000_000;

/// A simulated world, installed on the current thread while it lives.
pub struct Sim {
    env: Rc<Env>,
}

impl Sim {
    /// A world of `cluster` behind a network shaped by `net`, every random choice from `seed`.
    pub fn new(seed: u64, cluster: ClusterConfig, net: NetConfig) -> Self {
        let env = Rc::new(Env {
            exec: Executor::new(),
            wire: RefCell::new(Wire::new(
                SimNet::new(net, seed),
                SimCluster::new(cluster, seed),
            )),
            wall_origin_us: 1_700_000_000_000_000,
            next_client_seed: std::cell::Cell::new(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 1),
        });
        ENV.with(|e| {
            let mut e = e.borrow_mut();
            assert!(e.is_none(), "one Sim per thread at a time");
            *e = Some(env.clone());
        });
        Sim { env }
    }

    /// The world.
    pub fn env(&self) -> &Env {
        &self.env
    }

    /// Virtual time.
    pub fn now(&self) -> Instant {
        self.env.exec.now()
    }

    /// Starts an application task (it may hold non-`Send` state).
    pub fn spawn_app(&self, f: impl Future<Output = ()> + 'static) -> TaskId {
        self.env.exec.spawn(f)
    }

    /// Whether a task is still running.
    pub fn alive(&self, task: TaskId) -> bool {
        self.env.exec.alive(task)
    }

    /// Crashes an application: its task and every client driver it started are dropped at
    /// once (their sockets close without a goodbye, as a killed process's do).
    pub fn crash(&self, task: TaskId) -> usize {
        let doomed = self.env.exec.tree(task);
        let now = self.env.sim_now();
        self.env.wire.borrow_mut().reset_owned_by(&doomed, now);
        self.env.exec.kill(&doomed)
    }

    /// The network and cluster, to inspect or to inject faults.
    pub fn wire(&self) -> std::cell::RefMut<'_, Wire> {
        self.env.wire.borrow_mut()
    }

    /// When anything is due next: a timer, a delivery, a broker deadline, or `extra`.
    pub fn next_due(&self, extra: Option<Instant>) -> Option<Instant> {
        let to_instant = |t: SimTime| Instant::from_nanos(t.as_nanos() as u64);
        let wire = self.env.wire.borrow();
        [
            self.env.exec.next_timer(),
            wire.net.next_due().map(to_instant),
            wire.cluster.next_due().map(to_instant),
            extra,
        ]
        .into_iter()
        .flatten()
        .min()
    }

    /// Runs every woken task until none is left woken.
    pub fn run_ready(&self) -> Result<u64, String> {
        self.env.exec.run_ready(LIVE_LOCK)
    }

    /// Moves the clock to `to` (never back), delivers what the network and brokers have due,
    /// and wakes the timers due.
    pub fn advance_to(&self, to: Instant) {
        self.env.exec.advance(to);
        let t = self.env.sim_now();
        let mut wire = self.env.wire.borrow_mut();
        while let Some((due, d)) = wire.net.poll_due(t) {
            wire.deliver(d, due, t);
        }
        wire.cluster.advance(t);
        wire.drain_cluster(t);
        drop(wire);
        self.env.exec.fire_timers();
    }

    /// Runs until `done` holds (checked whenever the tasks are idle), for at most `limit` of
    /// virtual time.
    pub fn run_until(&self, mut done: impl FnMut() -> bool, limit: Duration) -> Result<(), String> {
        let end = self.now() + limit;
        loop {
            self.run_ready()?;
            if done() {
                return Ok(());
            }
            let Some(next) = self.next_due(None) else {
                return Err("nothing is due, and the run is not done".into());
            };
            if next > end {
                return Err(format!("not done after {limit:?} of virtual time"));
            }
            self.advance_to(next);
        }
    }
}

impl Drop for Sim {
    fn drop(&mut self) {
        // Tasks first, while the world is still installed: their destructors reach it.
        self.env.exec.clear();
        ENV.with(|e| e.borrow_mut().take());
    }
}
