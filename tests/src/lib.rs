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
