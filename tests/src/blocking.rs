//! A deliberately simple blocking driver: it runs a sans-IO state machine over real TCP sockets
//! with a polling loop. Tests use it to check the core against a real broker, independent of
//! the async adapters.

use kafka_core::net::Machine as _;
use std::collections::BTreeMap;
use std::io::{ErrorKind, Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::time::Duration;

use kafka_core::fetcher::{self, Consumer, FetchEvent};
use kafka_core::net::{ConnId, ConnectError, Transmit};
use kafka_core::producer::{self, Producer, ProducerEvent};
use kafka_core::Instant;

/// Either a network action or a user event.
pub enum Step<E> {
    /// For the driver.
    Transmit(Transmit),
    /// For the test.
    Event(E),
}

/// The inputs and outputs every core state machine shares.
pub trait Machine {
    /// Its user events.
    type Event;
    fn connected(&mut self, c: ConnId, now: Instant);
    fn connect_failed(&mut self, c: ConnId, error: ConnectError, now: Instant);
    fn received(&mut self, c: ConnId, data: &[u8], now: Instant);
    fn closed(&mut self, c: ConnId, now: Instant);
    fn timeout(&mut self, now: Instant);
    fn wall_clock(&mut self, unix_secs: u64);
    fn poll(&mut self) -> Option<Step<Self::Event>>;
    fn next_timeout(&self) -> Option<Instant>;
}

macro_rules! machine {
    ($t:ty, $ev:ty, $out:path) => {
        impl Machine for $t {
            type Event = $ev;
            fn connected(&mut self, c: ConnId, now: Instant) {
                self.handle_connected(c, now)
            }
            fn connect_failed(&mut self, c: ConnId, error: ConnectError, now: Instant) {
                self.handle_connect_failed(c, error, now)
            }
            fn received(&mut self, c: ConnId, data: &[u8], now: Instant) {
                self.handle_received(c, data, now)
            }
            fn closed(&mut self, c: ConnId, now: Instant) {
                self.handle_closed(c, now)
            }
            fn timeout(&mut self, now: Instant) {
                self.handle_timeout(now)
            }
            fn wall_clock(&mut self, unix_secs: u64) {
                self.handle_wall_clock(Duration::from_secs(unix_secs))
            }
            fn poll(&mut self) -> Option<Step<$ev>> {
                use $out as O;
                self.poll_output().map(|o| match o {
                    O::Transmit(t) => Step::Transmit(t),
                    O::Event(e) => Step::Event(e),
                    _ => unreachable!("a variant this test does not know"),
                })
            }
            fn next_timeout(&self) -> Option<Instant> {
                self.poll_timeout()
            }
        }
    };
}
machine!(Producer, ProducerEvent, producer::Output);
machine!(Consumer, FetchEvent, fetcher::Output);

/// Owns the sockets and the clock origin.
pub struct Driver {
    start: std::time::Instant,
    conns: BTreeMap<ConnId, TcpStream>,
    /// How many connections the machine asked for.
    pub connects: usize,
    /// The wall clock passed to the machine (seconds since the Unix epoch): the real one
    /// unless a test sets another.
    pub wall_clock: Option<u64>,
}

impl Default for Driver {
    fn default() -> Self {
        Driver {
            start: std::time::Instant::now(),
            conns: BTreeMap::new(),
            connects: 0,
            wall_clock: None,
        }
    }
}

impl Driver {
    /// The core's `now` for the real clock.
    pub fn now(&self) -> Instant {
        Instant::from_nanos(self.start.elapsed().as_nanos() as u64)
    }

    /// Runs `m` until `done(events so far)` or `limit` passes; returns the events.
    pub fn run<M: Machine>(
        &mut self,
        m: &mut M,
        limit: Duration,
        mut done: impl FnMut(&[M::Event]) -> bool,
    ) -> Vec<M::Event> {
        let deadline = std::time::Instant::now() + limit;
        let mut events = Vec::new();
        let mut buf = vec![0u8; 1 << 16];
        while !done(&events) && std::time::Instant::now() < deadline {
            let mut busy = false;
            while let Some(step) = m.poll() {
                busy = true;
                match step {
                    Step::Event(e) => events.push(e),
                    Step::Transmit(Transmit::Connect { conn, addr }) => {
                        let now = self.now();
                        self.connects += 1;
                        let wall = self.wall_clock.unwrap_or_else(|| {
                            std::time::SystemTime::now()
                                .duration_since(std::time::UNIX_EPOCH)
                                .expect("after 1970")
                                .as_secs()
                        });
                        m.wall_clock(wall);
                        let stream = (addr.host.as_str(), addr.port)
                            .to_socket_addrs()
                            .ok()
                            .and_then(|mut a| {
                                a.find_map(|a| {
                                    TcpStream::connect_timeout(&a, Duration::from_secs(2)).ok()
                                })
                            });
                        match stream {
                            Some(s) => {
                                s.set_nodelay(true).unwrap();
                                s.set_nonblocking(true).unwrap();
                                self.conns.insert(conn, s);
                                m.connected(conn, now);
                            }
                            None => m.connect_failed(conn, ConnectError::Refused, now),
                        }
                    }
                    Step::Transmit(Transmit::Send { conn, bytes }) => {
                        let Some(s) = self.conns.get_mut(&conn) else {
                            continue;
                        };
                        let mut rest = &bytes[..];
                        while !rest.is_empty() {
                            match s.write(rest) {
                                Ok(n) => rest = &rest[n..],
                                Err(e) if e.kind() == ErrorKind::WouldBlock => {
                                    std::thread::sleep(Duration::from_micros(100))
                                }
                                Err(_) => break,
                            }
                        }
                    }
                    Step::Transmit(Transmit::Close { conn }) => {
                        self.conns.remove(&conn);
                    }
                    _ => unreachable!("a variant this test does not know"),
                }
            }
            let ids: Vec<ConnId> = self.conns.keys().copied().collect();
            for id in ids {
                let s = self.conns.get_mut(&id).expect("listed");
                match s.read(&mut buf) {
                    Ok(0) => {
                        self.conns.remove(&id);
                        m.closed(id, self.now());
                        busy = true;
                    }
                    Ok(n) => {
                        m.received(id, &buf[..n], self.now());
                        busy = true;
                    }
                    Err(e) if e.kind() == ErrorKind::WouldBlock => {}
                    Err(_) => {
                        self.conns.remove(&id);
                        m.closed(id, self.now());
                        busy = true;
                    }
                }
            }
            let now = self.now();
            if m.next_timeout().is_some_and(|t| t <= now) {
                m.timeout(now);
                busy = true;
            }
            if !busy {
                std::thread::sleep(Duration::from_micros(200));
            }
        }
        events
    }
}
