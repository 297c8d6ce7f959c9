//! Shared helpers for the cross-crate tests: a real broker (Tansu) per test binary, and a
//! small blocking driver that runs the sans-IO core over real sockets.

pub mod apisim;
pub mod blocking;
pub mod broker;
pub mod brokers;
pub mod kafka;
pub mod pipeline;
pub mod pki;
pub mod sim;
pub mod simrt;
pub mod txnsim;

/// A fresh two-worker tokio runtime (what the tests on tokio share).
pub fn tokio_runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a tokio runtime")
}

/// Runs `f` to completion on a fresh [`tokio_runtime`].
pub fn tokio_block_on<F: std::future::Future>(f: F) -> F::Output {
    tokio_runtime().block_on(f)
}

/// A number from the environment (a test's knob), or `default`; panics on a non-number.
pub fn env_u64(name: &str, default: u64) -> u64 {
    std::env::var(name).map_or(default, |v| {
        v.parse()
            .unwrap_or_else(|_| panic!("{name}={v}: expected a number"))
    })
}
