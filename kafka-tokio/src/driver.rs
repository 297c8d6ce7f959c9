//! The driver task: sockets, one timer and the command channel around the core producer. It
//! makes no Kafka decision: it carries bytes and time in, and outputs out.

use std::collections::{BTreeMap, VecDeque};
use std::io::IoSlice;
use std::time::Duration;

use bytes::{Buf, Bytes, BytesMut};
use kafka_core::net::{ConnId, Transmit};
use kafka_core::producer::{
    FlushToken, Outcome, Output, ProducerEvent, ProducerRecord, RecordToken,
    SendError as CoreSendError,
};
use kafka_core::{Instant, ProducerConfig};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::TcpStream;
use tokio::sync::{mpsc, oneshot};
use tokio::task::AbortHandle;

use crate::{Command, Delivery, SendError};

/// What socket tasks report to the driver.
enum Net {
    Connected(ConnId, TcpStream),
    ConnectFailed(ConnId),
    Data(ConnId, Bytes),
    Closed(ConnId),
}

struct Conn {
    writer: mpsc::UnboundedSender<Bytes>,
    reader: AbortHandle,
}

/// A send waiting for buffer memory, in arrival order.
struct Waiting {
    record: ProducerRecord,
    reply: oneshot::Sender<Result<Delivery, SendError>>,
    deadline: tokio::time::Instant,
}

struct Driver {
    core: kafka_core::Producer,
    start: tokio::time::Instant,
    max_block: Duration,
    net_tx: mpsc::UnboundedSender<Net>,
    conns: BTreeMap<ConnId, Conn>,
    pending: BTreeMap<RecordToken, oneshot::Sender<Outcome>>,
    waiting: VecDeque<Waiting>,
    flushes: BTreeMap<FlushToken, oneshot::Sender<()>>,
    closers: Vec<oneshot::Sender<()>>,
}

pub(crate) async fn run(config: ProducerConfig, mut commands: mpsc::UnboundedReceiver<Command>) {
    let (net_tx, mut net_rx) = mpsc::unbounded_channel();
    let mut d = Driver {
        max_block: config.max_block,
        core: kafka_core::Producer::new(config),
        start: tokio::time::Instant::now(),
        net_tx,
        conns: BTreeMap::new(),
        pending: BTreeMap::new(),
        waiting: VecDeque::new(),
        flushes: BTreeMap::new(),
        closers: Vec::new(),
    };
    loop {
        d.drain_outputs();
        let wake = d.next_wake();
        tokio::select! {
            cmd = commands.recv() => match cmd {
                Some(cmd) => d.command(cmd),
                None => {
                    // The producer was dropped: fail what is left, never block.
                    d.core.abort();
                    d.drain_outputs();
                    for w in d.waiting.drain(..) {
                        let _ = w.reply.send(Err(SendError::Closed));
                    }
                    return;
                }
            },
            Some(ev) = net_rx.recv() => d.net(ev),
            _ = sleep_until(wake), if wake.is_some() => {
                let now = d.now();
                d.expire_waiting();
                d.core.handle_timeout(now);
            }
        }
    }
}

async fn sleep_until(t: Option<tokio::time::Instant>) {
    match t {
        Some(t) => tokio::time::sleep_until(t).await,
        None => std::future::pending().await,
    }
}

impl Driver {
    fn now(&self) -> Instant {
        Instant::from_nanos(self.start.elapsed().as_nanos() as u64)
    }

    fn next_wake(&self) -> Option<tokio::time::Instant> {
        let core = self
            .core
            .poll_timeout()
            .map(|t| self.start + Duration::from_nanos(t.as_nanos()));
        let waiting = self.waiting.front().map(|w| w.deadline);
        core.into_iter().chain(waiting).min()
    }

    fn command(&mut self, cmd: Command) {
        let now = self.now();
        match cmd {
            Command::Send(record, reply) => {
                self.waiting.push_back(Waiting {
                    record,
                    reply,
                    deadline: tokio::time::Instant::now() + self.max_block,
                });
                self.send_waiting();
            }
            Command::Flush(reply) => {
                let token = self.core.flush(now);
                self.flushes.insert(token, reply);
            }
            Command::Close(timeout, reply) => {
                for w in self.waiting.drain(..) {
                    let _ = w.reply.send(Err(SendError::Closed));
                }
                self.closers.push(reply);
                self.core.close(now + timeout, now);
            }
        }
    }

    /// Sends waiting records in order until memory runs out again.
    fn send_waiting(&mut self) {
        while let Some(w) = self.waiting.pop_front() {
            if w.reply.is_closed() {
                continue; // the caller cancelled its send: queue nothing
            }
            match self.core.send_or_return(w.record, self.now()) {
                Ok(token) => {
                    let (tx, rx) = oneshot::channel();
                    self.pending.insert(token, tx);
                    let _ = w.reply.send(Ok(Delivery(rx)));
                }
                Err((CoreSendError::BufferFull, record)) => {
                    self.waiting.push_front(Waiting { record, ..w });
                    return;
                }
                Err((e, _)) => {
                    let _ = w.reply.send(Err(SendError::Rejected(e)));
                }
            }
        }
    }

    fn expire_waiting(&mut self) {
        let now = tokio::time::Instant::now();
        while self.waiting.front().is_some_and(|w| w.deadline <= now) {
            let w = self.waiting.pop_front().expect("checked");
            let _ = w.reply.send(Err(SendError::Timeout));
        }
    }

    fn net(&mut self, ev: Net) {
        let now = self.now();
        match ev {
            Net::Connected(conn, stream) => {
                let (r, w) = stream.into_split();
                let (tx, rx) = mpsc::unbounded_channel();
                tokio::spawn(write_loop(conn, w, rx, self.net_tx.clone()));
                let reader = tokio::spawn(read_loop(conn, r, self.net_tx.clone())).abort_handle();
                self.conns.insert(conn, Conn { writer: tx, reader });
                self.core.handle_connected(conn, now);
            }
            Net::ConnectFailed(conn) => self.core.handle_connect_failed(conn, now),
            Net::Data(conn, bytes) if self.conns.contains_key(&conn) => {
                self.core.handle_received(conn, &bytes, now)
            }
            Net::Closed(conn) => {
                if let Some(c) = self.conns.remove(&conn) {
                    c.reader.abort();
                    self.core.handle_closed(conn, now);
                }
            }
            Net::Data(..) => {} // for a connection the core already closed
        }
    }

    fn drain_outputs(&mut self) {
        while let Some(out) = self.core.poll_output() {
            match out {
                Output::Transmit(Transmit::Connect { conn, addr }) => {
                    let tx = self.net_tx.clone();
                    tokio::spawn(async move {
                        // tokio tries every resolved address in turn.
                        match TcpStream::connect((addr.host.as_str(), addr.port)).await {
                            Ok(s) => {
                                let _ = s.set_nodelay(true);
                                let _ = tx.send(Net::Connected(conn, s));
                            }
                            Err(_) => {
                                let _ = tx.send(Net::ConnectFailed(conn));
                            }
                        }
                    });
                }
                Output::Transmit(Transmit::Send { conn, bytes }) => {
                    if let Some(c) = self.conns.get(&conn) {
                        let _ = c.writer.send(bytes);
                    }
                }
                Output::Transmit(Transmit::Close { conn }) => {
                    if let Some(c) = self.conns.remove(&conn) {
                        c.reader.abort(); // dropping the writer closes the socket
                    }
                }
                Output::Event(ProducerEvent::Outcome(token, outcome)) => {
                    if let Some(tx) = self.pending.remove(&token) {
                        let _ = tx.send(outcome); // a dropped handle only loses the observation
                    }
                }
                Output::Event(ProducerEvent::MemoryAvailable) => self.send_waiting(),
                Output::Event(ProducerEvent::FlushComplete(token)) => {
                    if let Some(tx) = self.flushes.remove(&token) {
                        let _ = tx.send(());
                    }
                }
                Output::Event(ProducerEvent::Closed) => {
                    for tx in self.closers.drain(..) {
                        let _ = tx.send(());
                    }
                }
            }
        }
    }
}

async fn read_loop(conn: ConnId, mut r: OwnedReadHalf, tx: mpsc::UnboundedSender<Net>) {
    let mut buf = BytesMut::with_capacity(64 * 1024);
    loop {
        if buf.capacity() - buf.len() < 16 * 1024 {
            buf.reserve(64 * 1024);
        }
        match r.read_buf(&mut buf).await {
            Ok(n) if n > 0 => {
                if tx.send(Net::Data(conn, buf.split().freeze())).is_err() {
                    return;
                }
            }
            _ => {
                let _ = tx.send(Net::Closed(conn));
                return;
            }
        }
    }
}

/// Writes everything queued so far with vectored writes: one syscall for many frames.
async fn write_loop(
    conn: ConnId,
    mut w: OwnedWriteHalf,
    mut rx: mpsc::UnboundedReceiver<Bytes>,
    tx: mpsc::UnboundedSender<Net>,
) {
    let mut queue: VecDeque<Bytes> = VecDeque::new();
    while let Some(first) = rx.recv().await {
        queue.push_back(first);
        while let Ok(more) = rx.try_recv() {
            queue.push_back(more);
        }
        while !queue.is_empty() {
            let slices: Vec<IoSlice<'_>> = queue.iter().take(64).map(|b| IoSlice::new(b)).collect();
            let n = match w.write_vectored(&slices).await {
                Ok(0) | Err(_) => {
                    let _ = tx.send(Net::Closed(conn));
                    return;
                }
                Ok(n) => n,
            };
            let mut left = n;
            while left > 0 {
                let front = queue.front_mut().expect("wrote at most what was queued");
                let take = left.min(front.len());
                front.advance(take);
                left -= take;
                if front.is_empty() {
                    queue.pop_front();
                }
            }
        }
    }
    let _ = w.shutdown().await;
}
