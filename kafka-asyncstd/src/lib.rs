//! A Kafka client for async-std and smol. It is built on `async-io` and the `futures-io`
//! traits that both share, so the same client runs under either, or under any executor: each
//! client's driver runs on its own thread with `async_io::block_on`, and the handles' futures
//! are plain channels that any executor can poll. The user API is the one `kafka-tokio` has
//! (see `kafka-driver`). Every Kafka decision stays in `kafka-core`.
//!
//! ```no_run
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! use kafka_asyncstd::{Producer, Record};
//!
//! smol::block_on(async {
//!     let producer = Producer::from_map([("bootstrap.servers", "localhost:9092")])?;
//!     let delivered = producer.send(Record::new("greetings", "hello")).await?.await?;
//!     println!("written at offset {:?}", delivered.offset);
//!     producer.close(std::time::Duration::from_secs(5)).await;
//!     Ok(())
//! })
//! # }
//! ```
#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub use kafka_driver::*;

/// The async-io runtime binding (the reactor under async-std and smol).
#[derive(Debug, Clone, Copy)]
pub struct AsyncIo;

/// An async-io timer that completes with `()`.
#[derive(Debug)]
pub struct Timer(async_io::Timer);

impl std::future::Future for Timer {
    type Output = ();
    fn poll(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<()> {
        std::pin::Pin::new(&mut self.0).poll(cx).map(|_| ())
    }
}

impl Runtime for AsyncIo {
    type Reader = async_net::TcpStream;
    type Writer = async_net::TcpStream;
    type Timer = Timer;

    fn spawn(driver: impl std::future::Future<Output = ()> + Send + 'static) {
        // Its own thread, so no particular executor has to be running.
        std::thread::Builder::new()
            .name("kafka-driver".into())
            .spawn(move || async_io::block_on(driver))
            .expect("the OS could not start the driver thread");
    }

    fn connect(host: String, port: u16) -> Connecting<Self> {
        Box::pin(async move {
            // async-net resolves the host and tries every address in turn.
            let s = async_net::TcpStream::connect((host.as_str(), port)).await?;
            s.set_nodelay(true)?;
            Ok((s.clone(), s))
        })
    }

    fn timer(at: Instant) -> Timer {
        Timer(async_io::Timer::at(os_clock::to_std(at)))
    }

    fn reset(timer: &mut Timer, at: Instant) {
        timer.0.set_at(os_clock::to_std(at));
    }
}

/// A producer on async-io (async-std, smol).
pub type Producer = kafka_driver::Producer<AsyncIo>;
/// A consumer (assign mode or a group member) on async-io (async-std, smol).
pub type Consumer = kafka_driver::Consumer<AsyncIo>;
/// An admin client on async-io (async-std, smol).
pub type Admin = kafka_driver::Admin<AsyncIo>;
