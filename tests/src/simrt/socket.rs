//! Sockets of [`super::SimRuntime`]: each client connection is a [`SimNet`] link to a
//! [`SimCluster`] broker. A connect resolves when the network delivers it (or refuses it);
//! writes go straight into the network; reads take what it delivered. Dropping both halves
//! closes the connection, as dropping a TCP stream does.

use std::collections::{BTreeMap, VecDeque};
use std::io;
use std::pin::Pin;
use std::task::{Context, Poll, Waker};

use bytes::{Buf, Bytes};
use futures_io::{AsyncRead, AsyncWrite};
use kafka_sim::{BrokerWrite, ConnKey, Delivery, SimCluster, SimNet, SimTime};

use crate::sim::storm::ConnectRate;

use super::with_env;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Connecting,
    Open,
    Refused,
    /// The client closed it (or dropped it).
    Closed,
}

struct Socket {
    state: State,
    inbound: VecDeque<Bytes>,
    /// The peer closed (or the connection reset): reads end, writes fail.
    eof: bool,
    waker: Option<Waker>,
    /// Handles alive: the connect future until it hands over the halves, then the two halves.
    handles: u8,
    /// The task that opened it (a client's driver), to reset it when that task crashes.
    owner: Option<super::TaskId>,
}

/// The wire between the simulated clients and brokers: the network, the cluster, and the
/// clients' sockets.
pub struct Wire {
    /// The network.
    pub net: SimNet,
    /// The brokers.
    pub cluster: SimCluster,
    sockets: BTreeMap<ConnKey, Socket>,
    next_key: ConnKey,
    /// The next connect is refused (an injected fault).
    pub refuse_next: bool,
    /// Every broker closes new connections before answering their handshake (an injected
    /// fault: a connection quota).
    pub quota: bool,
    /// Each task's connects in the last second, to find reconnect storms.
    connects: ConnectRate<Option<super::TaskId>>,
    /// The first reconnect storm seen: a task that opened more than
    /// [`crate::sim::storm::CONNECTS_PER_SECOND`] connections within a second.
    pub storm: Option<String>,
    /// What happened, for the run's trace.
    pub log: Vec<String>,
}

fn wake(s: &mut Socket) {
    if let Some(w) = s.waker.take() {
        w.wake();
    }
}

impl Wire {
    /// A wire between `net` and `cluster`.
    pub fn new(net: SimNet, cluster: SimCluster) -> Self {
        Wire {
            net,
            cluster,
            sockets: BTreeMap::new(),
            next_key: 1,
            refuse_next: false,
            quota: false,
            connects: ConnectRate::default(),
            storm: None,
            log: Vec::new(),
        }
    }

    /// Starts a connect; returns its key.
    fn connect(
        &mut self,
        host: &str,
        port: u16,
        owner: Option<super::TaskId>,
        now: SimTime,
    ) -> ConnKey {
        let key = self.next_key;
        self.next_key += 1;
        self.sockets.insert(
            key,
            Socket {
                state: State::Connecting,
                inbound: VecDeque::new(),
                eof: false,
                waker: None,
                handles: 1,
                owner,
            },
        );
        let by = owner.map_or_else(String::new, |t| format!(" (task {t})"));
        self.log.push(format!("connect {key} {host}:{port}{by}"));
        if let Some(n) = self.connects.connect(owner, now) {
            self.storm.get_or_insert_with(|| {
                format!(
                    "a client{by} opened {n} connections within a second, the last at {now:?} \
                     (a reconnect storm: reconnects must back off)"
                )
            });
        }
        match self.cluster.node_at(host, port) {
            Some(_) if std::mem::take(&mut self.refuse_next) => self.net.refuse(key, now),
            Some(node) => self.net.connect(key, node, now),
            // An address no broker has: refused, as a closed port is.
            None => self.net.refuse(key, now),
        }
        key
    }

    /// Delivers one thing the network delivered at `now`, that was due at `due`.
    pub fn deliver(&mut self, d: Delivery, due: SimTime, now: SimTime) {
        match d {
            Delivery::Connected(k, node) => {
                let wanted = self
                    .sockets
                    .get(&k)
                    .is_some_and(|s| s.state == State::Connecting);
                if !wanted {
                    // Abandoned while connecting: the connection closes at once.
                    self.log
                        .push(format!("{k} connected to {node} after it was abandoned"));
                    self.net.client_close(k, now);
                    return;
                }
                let s = self.sockets.get_mut(&k).expect("checked");
                if self.quota {
                    // Accepted, and closed before the handshake is answered.
                    self.log
                        .push(format!("{k} connected to {node}, closed by its quota"));
                    s.state = State::Open;
                    self.net.broker_close(k, now);
                } else if self.cluster.accept(k, node) {
                    self.log.push(format!("{k} connected to {node}"));
                    s.state = State::Open;
                } else {
                    self.log.push(format!("{k} refused by down broker {node}"));
                    s.state = State::Refused;
                    self.net.broker_close(k, now);
                }
                wake(s);
            }
            Delivery::Refused(k) => {
                self.log.push(format!("{k} refused"));
                if let Some(s) = self.sockets.get_mut(&k) {
                    s.state = State::Refused;
                    wake(s);
                }
            }
            Delivery::ToBroker(k, bytes) => {
                let held = if due < now {
                    format!(" (due at {due:?}: held)")
                } else {
                    String::new()
                };
                self.log
                    .push(format!("{k} -> broker {} B{held}", bytes.len()));
                self.cluster.receive_due(k, &bytes, due, now);
            }
            Delivery::ToClient(k, bytes) => {
                self.log.push(format!("broker -> {k} {} B", bytes.len()));
                if let Some(s) = self.sockets.get_mut(&k) {
                    if s.state == State::Open {
                        s.inbound.push_back(bytes);
                        wake(s);
                    }
                }
            }
            Delivery::BrokerSideClosed(k) => {
                self.log.push(format!("{k} closed at the broker"));
                self.cluster.closed(k);
            }
            Delivery::ClientSideClosed(k) => {
                self.log.push(format!("{k} closed at the client"));
                if let Some(s) = self.sockets.get_mut(&k) {
                    s.eof = true;
                    if s.state == State::Connecting {
                        s.state = State::Refused;
                    }
                    wake(s);
                }
            }
        }
        self.drain_cluster(now);
    }

    /// Moves what the brokers wrote into the network.
    pub fn drain_cluster(&mut self, now: SimTime) {
        while let Some((k, w)) = self.cluster.poll_transmit() {
            match w {
                BrokerWrite::Bytes(b) => self.net.broker_send(k, b, now),
                BrokerWrite::Close => self.net.broker_close(k, now),
            }
        }
    }

    /// A handle of a socket went away; the last one closes it.
    fn release(&mut self, key: ConnKey, now: SimTime) {
        let Some(s) = self.sockets.get_mut(&key) else {
            return;
        };
        s.handles = s.handles.saturating_sub(1);
        if s.handles > 0 {
            return;
        }
        if matches!(s.state, State::Open | State::Connecting) {
            self.log.push(format!("{key} dropped"));
            self.net.client_close(key, now);
        }
        self.sockets.remove(&key);
    }

    /// The tasks `dead` crashed: their sockets reset (bytes in flight lost, both sides told),
    /// as a killed process's connections do, before the tasks are dropped.
    pub fn reset_owned_by(&mut self, dead: &[super::TaskId], now: SimTime) {
        for (key, s) in self.sockets.iter_mut() {
            if s.owner.is_some_and(|o| dead.contains(&o))
                && matches!(s.state, State::Open | State::Connecting)
            {
                s.state = State::Closed;
                self.log.push(format!("{key} reset by a crash"));
                self.net.reset(*key, now);
            }
        }
    }

    /// Sockets still open (connected and not closed by the client).
    pub fn open_sockets(&self) -> usize {
        self.sockets
            .values()
            .filter(|s| s.state == State::Open && !s.eof)
            .count()
    }
}

/// The future a connect returns.
pub struct Connect {
    key: ConnKey,
    done: bool,
}

impl Connect {
    pub(super) fn start(host: &str, port: u16) -> Self {
        let key = with_env(|env| {
            let now = env.sim_now();
            let owner = env.exec.current();
            env.wire.borrow_mut().connect(host, port, owner, now)
        });
        Connect { key, done: false }
    }
}

impl std::future::Future for Connect {
    type Output = io::Result<(SimStream, SimStream)>;
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let key = self.key;
        let out = with_env(|env| {
            let mut wire = env.wire.borrow_mut();
            let s = wire
                .sockets
                .get_mut(&key)
                .expect("a connect's socket lives");
            match s.state {
                State::Connecting => {
                    s.waker = Some(cx.waker().clone());
                    Poll::Pending
                }
                State::Open => {
                    s.handles = 2; // the two halves replace this future
                    Poll::Ready(Ok((SimStream { key }, SimStream { key })))
                }
                State::Refused | State::Closed => Poll::Ready(Err(io::Error::new(
                    io::ErrorKind::ConnectionRefused,
                    "connection refused",
                ))),
            }
        });
        if out.is_ready() {
            self.done = true;
            if matches!(out, Poll::Ready(Err(_))) {
                with_env(|env| {
                    let now = env.sim_now();
                    env.wire.borrow_mut().release(key, now)
                });
            }
        }
        out
    }
}

impl Drop for Connect {
    fn drop(&mut self) {
        if !self.done {
            let key = self.key;
            super::try_with_env(|env| {
                let now = env.sim_now();
                let mut wire = env.wire.borrow_mut();
                if let Some(s) = wire.sockets.get_mut(&key) {
                    if s.state == State::Connecting {
                        // Abandoned: a connect delivered later is closed at once.
                        s.state = State::Closed;
                    }
                }
                wire.release(key, now);
            });
        }
    }
}

/// One half of a simulated connection (both halves are the same type).
pub struct SimStream {
    key: ConnKey,
}

impl AsyncRead for SimStream {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut [u8],
    ) -> Poll<io::Result<usize>> {
        with_env(|env| {
            let mut wire = env.wire.borrow_mut();
            let Some(s) = wire.sockets.get_mut(&self.key) else {
                return Poll::Ready(Ok(0));
            };
            if let Some(front) = s.inbound.front_mut() {
                let n = buf.len().min(front.len());
                buf[..n].copy_from_slice(&front[..n]);
                front.advance(n);
                if front.is_empty() {
                    s.inbound.pop_front();
                }
                return Poll::Ready(Ok(n));
            }
            if s.eof || s.state != State::Open {
                return Poll::Ready(Ok(0));
            }
            s.waker = Some(cx.waker().clone());
            Poll::Pending
        })
    }
}

impl AsyncWrite for SimStream {
    fn poll_write(
        self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        self.write_all(&[buf])
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let slices: Vec<&[u8]> = bufs.iter().map(|b| &**b).collect();
        self.write_all(&slices)
    }

    fn poll_flush(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn poll_close(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        with_env(|env| {
            let now = env.sim_now();
            let mut wire = env.wire.borrow_mut();
            if let Some(s) = wire.sockets.get_mut(&self.key) {
                if s.state == State::Open {
                    s.state = State::Closed;
                    wire.log.push(format!("{} closed by the client", self.key));
                    wire.net.client_close(self.key, now);
                }
            }
        });
        Poll::Ready(Ok(()))
    }
}

impl SimStream {
    /// The network takes everything at once (it has no send buffer limit).
    fn write_all(&self, slices: &[&[u8]]) -> Poll<io::Result<usize>> {
        with_env(|env| {
            let now = env.sim_now();
            let mut wire = env.wire.borrow_mut();
            let open = wire
                .sockets
                .get(&self.key)
                .is_some_and(|s| s.state == State::Open && !s.eof);
            if !open {
                return Poll::Ready(Err(io::Error::new(
                    io::ErrorKind::BrokenPipe,
                    "connection closed",
                )));
            }
            let n: usize = slices.iter().map(|s| s.len()).sum();
            let mut bytes = Vec::with_capacity(n);
            for s in slices {
                bytes.extend_from_slice(s);
            }
            let what = crate::sim::requests(&bytes);
            wire.log.push(format!("{} send {what}", self.key));
            wire.net.client_send(self.key, Bytes::from(bytes), now);
            Poll::Ready(Ok(n))
        })
    }
}

impl Drop for SimStream {
    fn drop(&mut self) {
        let key = self.key;
        super::try_with_env(|env| {
            let now = env.sim_now();
            env.wire.borrow_mut().release(key, now);
        });
    }
}
