//! A Kafka producer on tokio: one driver task per client binds the sans-IO
//! [`kafka_core::Producer`] to TCP sockets and a timer, and does nothing else. Every Kafka
//! decision stays in the core.
//!
//! ```no_run
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! use kafka_tokio::{Producer, Record};
//!
//! let producer = Producer::from_map([("bootstrap.servers", "localhost:9092")])?;
//! let delivery = producer.send(Record::new("greetings", "hello")).await?;
//! let delivered = delivery.await?; // partition, offset, timestamp
//! producer.close(std::time::Duration::from_secs(5)).await;
//! # Ok(()) }
//! ```
#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod driver;

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
pub use kafka_core::config::{ConfigError, ProducerConfig};
use kafka_core::producer::{Certainty, DeliveryError, Outcome, ProducerRecord};
use tokio::sync::{mpsc, oneshot};

/// A record to send. Without a timestamp, the current wall-clock time is used.
#[derive(Debug, Clone, Default)]
pub struct Record {
    inner: ProducerRecord,
    timestamp: Option<i64>,
}

impl Record {
    /// A record with a value.
    pub fn new(topic: impl Into<String>, value: impl Into<Bytes>) -> Self {
        Record {
            inner: ProducerRecord {
                topic: topic.into(),
                value: Some(value.into()),
                ..Default::default()
            },
            timestamp: None,
        }
    }
    /// Sets the key.
    pub fn key(mut self, key: impl Into<Bytes>) -> Self {
        self.inner.key = Some(key.into());
        self
    }
    /// Fixes the partition.
    pub fn partition(mut self, partition: i32) -> Self {
        self.inner.partition = Some(partition);
        self
    }
    /// Adds a header.
    pub fn header(mut self, key: impl Into<String>, value: impl Into<Bytes>) -> Self {
        self.inner.headers.push((key.into(), Some(value.into())));
        self
    }
    /// Sets the CreateTime (epoch milliseconds).
    pub fn timestamp(mut self, ms: i64) -> Self {
        self.timestamp = Some(ms);
        self
    }
}

/// Why `send` did not queue the record.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SendError {
    /// The core refused it (too large, closed, invalid partition).
    #[error(transparent)]
    Rejected(#[from] kafka_core::producer::SendError),
    /// `buffer.memory` stayed full for `max.block.ms`.
    #[error("buffer.memory stayed full for max.block.ms; the broker may be slow or unreachable")]
    Timeout,
    /// The producer's driver has stopped.
    #[error("the producer is closed")]
    Closed,
}

/// A delivered record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Delivered {
    /// Its partition.
    pub partition: i32,
    /// Its offset (absent with acks=0 and for duplicates).
    pub offset: Option<i64>,
    /// The timestamp the log holds.
    pub timestamp: i64,
}

/// A failed record, and whether it may have been written anyway.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{error} ({certainty:?})")]
pub struct Failed {
    /// Why.
    pub error: DeliveryError,
    /// Whether it may be in the log.
    pub certainty: Certainty,
}

/// Resolves to the record's outcome. Dropping it does not cancel the record.
#[derive(Debug)]
pub struct Delivery(oneshot::Receiver<Outcome>);

impl Future for Delivery {
    type Output = Result<Delivered, Failed>;
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        Pin::new(&mut self.0).poll(cx).map(|r| match r {
            Ok(Outcome::Delivered {
                partition,
                offset,
                timestamp,
            }) => Ok(Delivered {
                partition,
                offset,
                timestamp,
            }),
            Ok(Outcome::Failed { error, certainty }) => Err(Failed { error, certainty }),
            // The driver vanished without an outcome: it was aborted.
            Err(_) => Err(Failed {
                error: DeliveryError::Closed,
                certainty: Certainty::PossiblySent,
            }),
        })
    }
}

pub(crate) enum Command {
    Send(ProducerRecord, oneshot::Sender<Result<Delivery, SendError>>),
    Flush(oneshot::Sender<()>),
    Close(Duration, oneshot::Sender<()>),
}

/// A Kafka producer. Cheap to share behind an `Arc`; dropping it never blocks and fails the
/// records still pending.
#[derive(Debug)]
pub struct Producer {
    commands: mpsc::UnboundedSender<Command>,
}

impl Producer {
    /// Starts a producer's driver on the current tokio runtime. Nothing connects until the
    /// first send.
    pub fn new(config: ProducerConfig) -> Producer {
        let (tx, rx) = mpsc::unbounded_channel();
        tokio::spawn(driver::run(config, rx));
        Producer { commands: tx }
    }

    /// From Java-style settings, for example `[("bootstrap.servers", "localhost:9092")]`.
    pub fn from_map<K: AsRef<str>, V: AsRef<str>>(
        settings: impl IntoIterator<Item = (K, V)>,
    ) -> Result<Producer, ConfigError> {
        Ok(Producer::new(ProducerConfig::from_map(settings)?))
    }

    /// Queues a record, waiting up to `max.block.ms` for buffer memory, and returns the handle
    /// to its outcome.
    pub async fn send(&self, record: Record) -> Result<Delivery, SendError> {
        let mut r = record.inner;
        r.timestamp = record.timestamp.unwrap_or_else(wall_clock_ms);
        let (tx, rx) = oneshot::channel();
        self.commands
            .send(Command::Send(r, tx))
            .map_err(|_| SendError::Closed)?;
        rx.await.map_err(|_| SendError::Closed)?
    }

    /// Waits until every record sent before has its outcome.
    pub async fn flush(&self) {
        let (tx, rx) = oneshot::channel();
        if self.commands.send(Command::Flush(tx)).is_ok() {
            let _ = rx.await;
        }
    }

    /// Sends what is queued, then closes; records left after `timeout` fail.
    pub async fn close(self, timeout: Duration) {
        let (tx, rx) = oneshot::channel();
        if self.commands.send(Command::Close(timeout, tx)).is_ok() {
            let _ = rx.await;
        }
    }
}

fn wall_clock_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}
