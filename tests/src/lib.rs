//! Shared helpers for the cross-crate tests: a real broker (Tansu) per test binary, and a
//! small blocking driver that runs the sans-IO core over real sockets.

pub mod apisim;
pub mod blocking;
pub mod broker;
pub mod brokers;
pub mod kafka;
pub mod pki;
pub mod sim;
pub mod simrt;
pub mod txnsim;

/// Runs `f` to completion on a fresh two-worker tokio runtime (what the tests on tokio share).
pub fn tokio_block_on<F: std::future::Future>(f: F) -> F::Output {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a tokio runtime")
        .block_on(f)
}
