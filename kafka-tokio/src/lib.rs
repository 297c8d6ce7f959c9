//! A Kafka client on tokio. One driver task per client binds the sans-IO core to TCP sockets
//! and a timer, and does nothing else: every Kafka decision stays in `kafka-core`. The user
//! API is shared with `kafka-asyncstd` (see `kafka-driver`).
//!
//! Clients must be created inside a tokio runtime.
//!
//! ```no_run
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! use kafka_tokio::{Consumer, Producer, Record, StartFrom};
//!
//! let producer = Producer::from_map([("bootstrap.servers", "localhost:9092")])?;
//! let delivery = producer.send(Record::new("greetings", "hello")).await?;
//! let delivered = delivery.await?; // partition, offset, timestamp
//! producer.close(std::time::Duration::from_secs(5)).await;
//!
//! let mut consumer = Consumer::from_map([("bootstrap.servers", "localhost:9092")])?;
//! consumer.assign([("greetings", delivered.partition)], StartFrom::Earliest)?;
//! let record = consumer.recv().await?;
//! assert_eq!(record.value.as_deref(), Some(&b"hello"[..]));
//! # Ok(()) }
//! ```
#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub use kafka_driver::*;
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio_util::compat::{Compat, TokioAsyncReadCompatExt, TokioAsyncWriteCompatExt};

/// The tokio runtime binding.
#[derive(Debug, Clone, Copy)]
pub struct Tokio;

/// A tokio sleep that can be moved to a new deadline.
#[derive(Debug)]
pub struct Timer(std::pin::Pin<Box<tokio::time::Sleep>>);

impl std::future::Future for Timer {
    type Output = ();
    fn poll(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<()> {
        self.0.as_mut().poll(cx)
    }
}

impl Runtime for Tokio {
    type Reader = Compat<OwnedReadHalf>;
    type Writer = Compat<OwnedWriteHalf>;
    type Timer = Timer;

    fn spawn(driver: impl std::future::Future<Output = ()> + Send + 'static) {
        tokio::spawn(driver);
    }

    fn connect(host: String, port: u16) -> Connecting<Self> {
        Box::pin(async move {
            // tokio resolves the host and tries every address in turn.
            let s = tokio::net::TcpStream::connect((host.as_str(), port)).await?;
            s.set_nodelay(true)?;
            let (r, w) = s.into_split();
            Ok((r.compat(), w.compat_write()))
        })
    }

    fn timer(at: Instant) -> Timer {
        Timer(Box::pin(tokio::time::sleep_until(
            os_clock::to_std(at).into(),
        )))
    }

    fn reset(timer: &mut Timer, at: Instant) {
        timer.0.as_mut().reset(os_clock::to_std(at).into());
    }
}

/// A producer on tokio.
pub type Producer = kafka_driver::Producer<Tokio>;
/// A consumer (assign mode or a group member) on tokio.
pub type Consumer = kafka_driver::Consumer<Tokio>;
/// An admin client on tokio.
pub type Admin = kafka_driver::Admin<Tokio>;
