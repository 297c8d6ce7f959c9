//! The small trait an async runtime implements to host a driver: spawn it, open TCP
//! connections and arm one timer. Everything else is runtime-independent.

use std::future::Future;
use std::io;
use std::pin::Pin;

use futures_io::{AsyncRead, AsyncWrite};

/// A connection in progress: resolves to the two halves of a TCP stream.
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

    /// A timer that fires at `at`.
    fn timer(at: std::time::Instant) -> Self::Timer;

    /// Moves a timer to fire at `at` instead.
    fn reset(timer: &mut Self::Timer, at: std::time::Instant);
}
