//! The driver loop: one task per client that carries bytes, time and user commands into a
//! sans-IO core and its outputs back out. It makes no Kafka decision.
//!
//! Everything happens in one task's `poll`: commands, finished connects, socket reads, the
//! timer, draining the core, and vectored socket writes. No task per socket, no channel per
//! connection, and the read buffer is one fixed allocation, so the IO path allocates nothing
//! per record.

use std::collections::{BTreeMap, VecDeque};
use std::future::Future;
use std::io::IoSlice;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::{Buf, Bytes};
use futures_channel::mpsc;
use futures_io::{AsyncRead, AsyncWrite};
use futures_util::stream::{FuturesUnordered, StreamExt};
use futures_util::FutureExt;
use kafka_core::net::{ConnId, ConnectError, Machine, Output, Transmit};
use kafka_core::Instant;

use crate::runtime::{Connecting, Runtime};

/// The client-specific half of a driver: the core machine plus the bookkeeping that maps its
/// events to the user's handles.
pub(crate) trait Session: Send + 'static {
    /// What the user's handle sends.
    type Command: Send + 'static;
    /// The sans-IO core.
    type Core: Machine;
    /// Runs `f` on the core (which the producer shares with its handles, behind a lock).
    fn with_core<T>(&mut self, f: impl FnOnce(&mut Self::Core) -> T) -> T;
    /// A user command arrived.
    fn command(&mut self, cmd: Self::Command, now: Instant);
    /// The core emitted a user event.
    fn event(&mut self, ev: <Self::Core as Machine>::Event, now: Instant);
    /// Moves the core's outputs into `outputs`, to be handled with the core's lock let go. A
    /// session may act on some right here instead (the producer resolves deliveries while it
    /// holds the lock, rather than passing each through the queue and `event`).
    fn drain_into(&mut self, outputs: &mut VecDeque<Output<<Self::Core as Machine>::Event>>) {
        self.with_core(|c| {
            while let Some(out) = c.poll_output() {
                outputs.push_back(out);
            }
        });
    }
    /// The core's next deadline, for the driver to arm its timer at. The producer notes it
    /// too, so that a `send` can tell whether the driver must wake to re-arm.
    fn next_timeout(&mut self) -> Option<Instant> {
        self.with_core(|c| c.poll_timeout())
    }
    /// Called at the start of every round of the driver, before timeouts: a session may
    /// carry in what its handles share with it without a command (the consumer's evidence
    /// that the application polls).
    fn refresh(&mut self, _now: Instant) {}
    /// Every user handle is gone.
    fn detached(&mut self, now: Instant);
    /// Whether the driver may stop.
    fn finished(&self) -> bool;
}

struct Conn<R: Runtime> {
    reader: R::Reader,
    writer: R::Writer,
    queue: VecDeque<Bytes>,
}

/// Reads per connection per round, so one busy socket cannot starve the others.
const READS_PER_ROUND: usize = 8;
/// Rounds with progress before yielding to the executor, so a flood cannot starve other tasks.
const ROUNDS_PER_POLL: usize = 32;
/// Frames per vectored write.
const IOV_MAX: usize = 64;
/// How long a finished driver may spend writing what is queued before it drops the sockets.
const FINISH_WRITES: Duration = Duration::from_secs(5);

struct Driver<R: Runtime, S: Session> {
    session: S,
    commands: mpsc::UnboundedReceiver<S::Command>,
    detached: bool,
    conns: BTreeMap<ConnId, Conn<R>>,
    connecting: FuturesUnordered<ConnectTask<R>>,
    read_buf: Box<[u8]>,
    timer: Option<(R::Timer, Instant)>,
    finish_by: Option<Instant>,
    /// Outputs taken from the core in one go (one lock), then acted on.
    outputs: VecDeque<Output<<S::Core as Machine>::Event>>,
    /// Closed by the core, still writing what was queued before the close.
    closing: Vec<(Conn<R>, Instant)>,
    /// The application's OAUTHBEARER token provider, and the token being fetched.
    tokens: Option<kafka_core::sasl::TokenProvider>,
    fetching: Option<kafka_core::sasl::TokenFuture>,
    /// When the metrics are next reported to the `metrics` facade (feature `metrics`).
    #[cfg(feature = "metrics")]
    report_at: Option<Instant>,
}

/// Runs a session until it is finished, on the runtime's clock.
pub(crate) async fn run<R: Runtime, S: Session>(
    session: S,
    commands: mpsc::UnboundedReceiver<S::Command>,
    tokens: Option<kafka_core::sasl::TokenProvider>,
) {
    let mut d = Driver::<R, S> {
        session,
        commands,
        detached: false,
        conns: BTreeMap::new(),
        connecting: FuturesUnordered::new(),
        read_buf: vec![0; 256 * 1024].into_boxed_slice(),
        timer: None,
        finish_by: None,
        outputs: VecDeque::new(),
        closing: Vec::new(),
        tokens,
        fetching: None,
        #[cfg(feature = "metrics")]
        report_at: None,
    };
    std::future::poll_fn(|cx| d.poll(cx)).await
}

/// A connect attempt tagged with its connection id.
struct ConnectTask<R: Runtime> {
    conn: ConnId,
    fut: Connecting<R>,
}

impl<R: Runtime> Future for ConnectTask<R> {
    type Output = (ConnId, std::io::Result<(R::Reader, R::Writer)>);
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let conn = self.conn;
        self.fut.poll_unpin(cx).map(|r| (conn, r))
    }
}

impl<R: Runtime, S: Session> Driver<R, S> {
    fn now(&self) -> Instant {
        R::now()
    }

    fn poll(&mut self, cx: &mut Context<'_>) -> Poll<()> {
        for _ in 0..ROUNDS_PER_POLL {
            let now = self.now();
            self.session.refresh(now);
            // The wall clock judges certificates and tokens: kept current every round (a
            // store, no Kafka decision).
            let wall =
                std::time::Duration::from_micros(u64::try_from(R::wall_clock_us()).unwrap_or(0));
            self.session.with_core(|c| c.handle_wall_clock(wall));
            let mut progress = self.poll_commands(cx, now);
            progress |= self.poll_connects(cx, now);
            progress |= self.poll_reads(cx, now);
            if self.session.with_core(|c| {
                let due = c.poll_timeout().is_some_and(|t| t <= now);
                if due {
                    c.handle_timeout(now);
                }
                due
            }) {
                progress = true;
            }
            progress |= self.poll_token(cx, now);
            progress |= self.drain(now);
            progress |= self.poll_writes(cx, now);
            self.poll_closing(cx, now);
            #[cfg(feature = "metrics")]
            self.report(now);
            if self.session.finished() {
                return self.poll_finish(cx);
            }
            if !progress && !self.arm_timer(cx) {
                return Poll::Pending;
            }
        }
        // Still busy: let other tasks run, then continue.
        cx.waker().wake_by_ref();
        Poll::Pending
    }

    /// Writes what is still queued (acks=0 requests count as sent once handed over) and closes
    /// each socket with a FIN, bounded by [`FINISH_WRITES`]. Dropping a socket at once could
    /// reset it, and the broker would discard what it had not read yet.
    fn poll_finish(&mut self, cx: &mut Context<'_>) -> Poll<()> {
        let now = self.now();
        let deadline = *self.finish_by.get_or_insert(now + FINISH_WRITES);
        self.poll_writes(cx, now);
        self.poll_closing(cx, now);
        let mut open = !self.closing.is_empty();
        for c in self.conns.values_mut() {
            open |= !c.queue.is_empty() || Pin::new(&mut c.writer).poll_close(cx).is_pending();
        }
        if !open || now >= deadline {
            self.conns.clear();
            self.closing.clear();
            return Poll::Ready(());
        }
        let timer = self
            .timer
            .get_or_insert_with(|| (R::timer(deadline), deadline));
        if timer.1 != deadline {
            R::reset(&mut timer.0, deadline);
            timer.1 = deadline;
        }
        if timer.0.poll_unpin(cx).is_ready() {
            self.conns.clear();
            return Poll::Ready(());
        }
        Poll::Pending
    }

    /// Finishes writing closed connections' queued bytes, then shuts them down.
    fn poll_closing(&mut self, cx: &mut Context<'_>, now: Instant) {
        self.closing.retain_mut(|(c, deadline)| {
            if now >= *deadline {
                return false;
            }
            while !c.queue.is_empty() {
                match write_some(&mut c.writer, &mut c.queue, cx) {
                    Poll::Ready(true) => {}
                    Poll::Ready(false) => return false,
                    Poll::Pending => return true,
                }
            }
            Pin::new(&mut c.writer).poll_close(cx).is_pending()
        });
    }

    /// Runs the application's OAUTHBEARER token provider when the core asks for a token, and
    /// hands the core what it returns. Without a provider the core never asks.
    fn poll_token(&mut self, cx: &mut Context<'_>, now: Instant) -> bool {
        if self.fetching.is_none() && self.session.with_core(|c| c.poll_token_request()) {
            self.fetching = self.tokens.as_ref().map(|p| p.fetch());
        }
        let Some(fut) = &mut self.fetching else {
            return false;
        };
        let Poll::Ready(result) = fut.as_mut().poll(cx) else {
            return false;
        };
        self.fetching = None;
        self.session.with_core(|c| match result {
            Ok(token) => c.set_oauth_token(token, now),
            Err(why) => c.handle_token_error(&why, now),
        });
        true
    }

    fn poll_commands(&mut self, cx: &mut Context<'_>, now: Instant) -> bool {
        let mut progress = false;
        while !self.detached {
            match self.commands.poll_next_unpin(cx) {
                Poll::Ready(Some(cmd)) => self.session.command(cmd, now),
                Poll::Ready(None) => {
                    self.detached = true;
                    self.session.detached(now);
                }
                Poll::Pending => break,
            }
            progress = true;
        }
        progress
    }

    fn poll_connects(&mut self, cx: &mut Context<'_>, now: Instant) -> bool {
        let mut progress = false;
        while let Poll::Ready(Some((conn, result))) = self.connecting.poll_next_unpin(cx) {
            progress = true;
            match result {
                Ok((reader, writer)) => {
                    self.conns.insert(
                        conn,
                        Conn {
                            reader,
                            writer,
                            queue: VecDeque::new(),
                        },
                    );
                    self.session.with_core(|c| c.handle_connected(conn, now));
                }
                Err(e) => {
                    let error = ConnectError::from_io(&e);
                    self.session
                        .with_core(|c| c.handle_connect_failed(conn, error, now))
                }
            }
        }
        progress
    }

    fn poll_reads(&mut self, cx: &mut Context<'_>, now: Instant) -> bool {
        let mut progress = false;
        let mut closed = Vec::new();
        for (&id, c) in self.conns.iter_mut() {
            for _ in 0..READS_PER_ROUND {
                match Pin::new(&mut c.reader).poll_read(cx, &mut self.read_buf) {
                    Poll::Ready(Ok(n)) if n > 0 => {
                        progress = true;
                        let bytes = &self.read_buf[..n];
                        self.session
                            .with_core(|c| c.handle_received(id, bytes, now));
                    }
                    Poll::Ready(_) => {
                        closed.push(id);
                        break;
                    }
                    Poll::Pending => break,
                }
            }
        }
        for id in closed {
            progress = true;
            self.conns.remove(&id);
            self.session.with_core(|c| c.handle_closed(id, now));
        }
        progress
    }

    fn drain(&mut self, now: Instant) -> bool {
        let mut progress = false;
        self.session.drain_into(&mut self.outputs);
        while let Some(out) = self.outputs.pop_front() {
            progress = true;
            match out {
                Output::Transmit(Transmit::Connect { conn, addr }) => {
                    self.connecting.push(ConnectTask {
                        conn,
                        fut: R::connect(addr.host.clone(), addr.port),
                    });
                }
                Output::Transmit(Transmit::Send { conn, bytes }) => {
                    if let Some(c) = self.conns.get_mut(&conn) {
                        c.queue.push_back(bytes);
                    }
                }
                Output::Transmit(Transmit::Close { conn }) => {
                    // Bytes handed over before the close still go out first (an acks=0
                    // request counts as sent once handed over); then the socket is shut down.
                    if let Some(c) = self.conns.remove(&conn) {
                        if !c.queue.is_empty() {
                            self.closing.push((c, now + FINISH_WRITES));
                        }
                    } else {
                        self.abandon_connect(conn);
                    }
                }
                Output::Event(ev) => self.session.event(ev, now),
                // Outputs a newer core may add: nothing this driver knows to do.
                _ => {}
            }
        }
        progress
    }

    /// The core gave up on a connection still connecting (its setup timed out, or it is no
    /// longer wanted): the attempt is dropped, and with it any socket it opened, so that a
    /// connect that succeeds later leaves nothing open.
    fn abandon_connect(&mut self, conn: ConnId) {
        if !self.connecting.iter().any(|t| t.conn == conn) {
            return;
        }
        for task in std::mem::take(&mut self.connecting) {
            if task.conn != conn {
                self.connecting.push(task);
            }
        }
    }

    fn poll_writes(&mut self, cx: &mut Context<'_>, now: Instant) -> bool {
        let mut progress = false;
        let mut failed = Vec::new();
        for (&id, c) in self.conns.iter_mut() {
            while !c.queue.is_empty() {
                match write_some(&mut c.writer, &mut c.queue, cx) {
                    Poll::Ready(true) => progress = true,
                    Poll::Ready(false) => {
                        failed.push(id);
                        break;
                    }
                    Poll::Pending => break,
                }
            }
        }
        for id in failed {
            progress = true;
            self.conns.remove(&id);
            self.session.with_core(|c| c.handle_closed(id, now));
        }
        progress
    }

    /// Reports the metrics to the `metrics` facade when due.
    #[cfg(feature = "metrics")]
    fn report(&mut self, now: Instant) {
        if self.report_at.is_none_or(|t| t <= now) {
            let snapshot = self.session.with_core(|c| c.metrics(now));
            crate::facade::report_metrics(&snapshot);
            self.report_at = Some(now + crate::facade::EVERY);
        }
    }

    /// Arms the timer for the next deadline. Returns true if it already fired.
    fn arm_timer(&mut self, cx: &mut Context<'_>) -> bool {
        let next = self.session.next_timeout();
        #[cfg(feature = "metrics")]
        let next = match (next, self.report_at) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        let Some(next) = next else {
            self.timer = None;
            return false;
        };
        match &mut self.timer {
            Some((_, armed)) if *armed == next => {}
            Some((t, armed)) => {
                R::reset(t, next);
                *armed = next;
            }
            None => self.timer = Some((R::timer(next), next)),
        }
        let (t, _) = self.timer.as_mut().expect("armed above");
        if t.poll_unpin(cx).is_ready() {
            self.timer = None;
            return true;
        }
        false
    }
}

/// One vectored write of the queue's front frames. `Ready(false)` means the socket failed.
fn write_some<W: AsyncWrite + Unpin>(
    writer: &mut W,
    queue: &mut VecDeque<Bytes>,
    cx: &mut Context<'_>,
) -> Poll<bool> {
    let mut slices = [IoSlice::new(&[]); IOV_MAX];
    let mut count = 0;
    for (slot, b) in slices.iter_mut().zip(queue.iter()) {
        *slot = IoSlice::new(b);
        count += 1;
    }
    match Pin::new(writer).poll_write_vectored(cx, &slices[..count]) {
        Poll::Ready(Ok(n)) if n > 0 => {
            consume(queue, n);
            Poll::Ready(true)
        }
        Poll::Ready(_) => Poll::Ready(false),
        Poll::Pending => Poll::Pending,
    }
}

/// Drops `n` written bytes from the front of the queue.
fn consume(queue: &mut VecDeque<Bytes>, mut n: usize) {
    while n > 0 {
        let front = queue.front_mut().expect("wrote at most what was queued");
        let take = n.min(front.len());
        front.advance(take);
        n -= take;
        if front.is_empty() {
            queue.pop_front();
        }
    }
}
