//! The small trait an async runtime implements to host a driver: spawn it, open TCP
//! connections, arm one timer, and read the two clocks. Everything else is
//! runtime-independent.
//!
//! The driver reads no clock of its own: both the monotonic clock (deadlines, on the core's
//! [`Instant`] scale) and the wall clock (record timestamps) come from the runtime, so a
//! deterministic runtime can drive the whole client, user API included, in virtual time.

use std::future::Future;
use std::io;
use std::pin::Pin;

use futures_io::{AsyncRead, AsyncWrite};
use kafka_core::Instant;

/// A connection in progress: resolves to the two halves of a TCP stream. Dropping it abandons
/// the attempt (and closes the socket if it connected meanwhile).
pub type Connecting<R> = Pin<
    Box<dyn Future<Output = io::Result<(<R as Runtime>::Reader, <R as Runtime>::Writer)>> + Send>,
>;

/// What a driver needs from an async runtime.
pub trait Runtime: Send + Sync + 'static {
    /// A connection's read half.
    type Reader: AsyncRead + Unpin + Send + 'static;
    /// A connection's write half.
    type Writer: AsyncWrite + Unpin + Send + 'static;
    /// A resettable one-shot timer.
    type Timer: Future<Output = ()> + Unpin + Send + 'static;

    /// Runs a client's driver in the background.
    fn spawn(driver: impl Future<Output = ()> + Send + 'static);

    /// Resolves `host`, tries every address in turn until one accepts, and sets TCP_NODELAY.
    fn connect(host: String, port: u16) -> Connecting<Self>;

    /// The monotonic clock, on the core's scale. The default is the operating system's
    /// ([`os_clock::now`]); a simulated runtime returns its virtual time.
    fn now() -> Instant {
        os_clock::now()
    }

    /// The wall clock in microseconds since the Unix epoch, for record timestamps (data, not
    /// time). The default is the operating system's.
    fn wall_clock_us() -> i64 {
        os_clock::wall_clock_us()
    }

    /// A seed for a client whose config sets no `random.seed` (its member id under the
    /// consumer protocol comes from it, so two clients must not share one). The default draws
    /// from the process's hash randomness; a simulated runtime returns seeds from its run's
    /// seed, so that runs replay.
    fn seed() -> u64 {
        use std::hash::BuildHasher;
        std::collections::hash_map::RandomState::new().hash_one(0x6b61_666b_u64) >> 1
    }

    /// A timer that fires at `at` on [`Runtime::now`]'s clock.
    fn timer(at: Instant) -> Self::Timer;

    /// Moves a timer to fire at `at` instead.
    fn reset(timer: &mut Self::Timer, at: Instant);
}

/// The operating system's clocks on the core's scale, for runtimes on real time: the
/// monotonic clock counts from the first reading in the process, so every client in it shares
/// one origin. The one place in this crate that reads the OS clocks.
#[allow(clippy::disallowed_methods)]
pub mod os_clock {
    use std::sync::OnceLock;

    use kafka_core::Instant;

    static ORIGIN: OnceLock<std::time::Instant> = OnceLock::new();

    fn origin() -> std::time::Instant {
        *ORIGIN.get_or_init(std::time::Instant::now)
    }

    /// The monotonic clock now.
    pub fn now() -> Instant {
        Instant::from_nanos(u64::try_from(origin().elapsed().as_nanos()).unwrap_or(u64::MAX))
    }

    /// The OS instant of a core instant (for arming a runtime's timer).
    pub fn to_std(at: Instant) -> std::time::Instant {
        origin() + std::time::Duration::from_nanos(at.as_nanos())
    }

    /// The wall clock in microseconds since the Unix epoch.
    pub fn wall_clock_us() -> i64 {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| i64::try_from(d.as_micros()).unwrap_or(i64::MAX))
    }
}
