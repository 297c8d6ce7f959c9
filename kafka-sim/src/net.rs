//! A simulated network between clients and a [`crate::SimCluster`]: each connection is an
//! ordered byte stream in each direction, delivered in chunks of random size after a latency
//! with jitter. Faults: connects refused, connections reset in the middle of a frame, slow
//! links, brokers partitioned away (their connections reset), and brokers black-holed (nothing
//! reaches them or comes back, nothing closes: what a pulled cable or a frozen host looks
//! like). Every random choice comes from the seed.

use std::collections::{BTreeMap, BTreeSet};

use bytes::Bytes;

use crate::cluster::ConnKey;
use crate::scripted::SimTime;

/// The network's shape.
#[derive(Debug, Clone)]
pub struct NetConfig {
    /// One-way latency.
    pub latency: SimTime,
    /// Up to this much more, at random.
    pub jitter: SimTime,
    /// Chunks are 1..=this many bytes.
    pub max_chunk: usize,
    /// How much slower a slowed connection is.
    pub slow_factor: u32,
}

impl Default for NetConfig {
    fn default() -> Self {
        NetConfig {
            latency: SimTime::from_micros(200),
            jitter: SimTime::from_micros(300),
            max_chunk: 4096,
            slow_factor: 20,
        }
    }
}

/// Something the network delivers.
#[derive(Debug, Clone, PartialEq)]
pub enum Delivery {
    /// The connection to this broker is open: the caller asks the cluster to accept it.
    Connected(ConnKey, i32),
    /// The connection could not be opened.
    Refused(ConnKey),
    /// Bytes for the broker.
    ToBroker(ConnKey, Bytes),
    /// Bytes for the client.
    ToClient(ConnKey, Bytes),
    /// The broker's side learns the connection closed.
    BrokerSideClosed(ConnKey),
    /// The client's side learns the connection closed.
    ClientSideClosed(ConnKey),
}

impl Delivery {
    /// The connection it is about.
    pub fn conn(&self) -> ConnKey {
        match self {
            Delivery::Connected(c, _)
            | Delivery::Refused(c)
            | Delivery::ToBroker(c, _)
            | Delivery::ToClient(c, _)
            | Delivery::BrokerSideClosed(c)
            | Delivery::ClientSideClosed(c) => *c,
        }
    }
}

#[derive(Debug, Default)]
struct Link {
    node: i32,
    slow: bool,
    /// The last delivery time in each direction (to the broker, to the client): order holds.
    up: SimTime,
    down: SimTime,
    /// Reset or closed: nothing more goes through.
    dead: bool,
}

/// Counters of injected faults.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NetStats {
    /// Connects refused (partitioned broker or injected).
    pub refused: u64,
    /// Connections reset with bytes still in flight.
    pub resets_mid_stream: u64,
    /// Connections reset.
    pub resets: u64,
    /// Connections slowed.
    pub slowed: u64,
    /// Times a broker was partitioned away.
    pub partitions: u64,
    /// Times a broker was black-holed.
    pub blackholes: u64,
    /// Chunks delivered.
    pub chunks: u64,
}

/// The network.
#[derive(Debug)]
pub struct SimNet {
    cfg: NetConfig,
    state: u64,
    seq: u64,
    queue: BTreeMap<(SimTime, u64), Delivery>,
    links: BTreeMap<ConnKey, Link>,
    partitioned: BTreeSet<i32>,
    /// Brokers black-holed, and what came due for them meanwhile (in order).
    blackholed: BTreeSet<i32>,
    held: Vec<((SimTime, u64), Delivery)>,
    stats: NetStats,
}

impl SimNet {
    /// A network whose every random choice comes from `seed`.
    pub fn new(cfg: NetConfig, seed: u64) -> Self {
        SimNet {
            cfg,
            state: seed ^ 0x6e65_745f_7369_6d00,
            seq: 0,
            queue: BTreeMap::new(),
            links: BTreeMap::new(),
            partitioned: BTreeSet::new(),
            blackholed: BTreeSet::new(),
            held: Vec::new(),
            stats: NetStats::default(),
        }
    }

    /// The next random number (splitmix64).
    pub fn random(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn delay(&mut self, slow: bool) -> SimTime {
        let jitter = self.cfg.jitter.as_nanos() as u64;
        let j = if jitter == 0 {
            0
        } else {
            self.random() % jitter
        };
        let d = self.cfg.latency + SimTime::from_nanos(j);
        if slow {
            d * self.cfg.slow_factor
        } else {
            d
        }
    }

    fn push(&mut self, at: SimTime, d: Delivery) {
        self.seq += 1;
        self.queue.insert((at, self.seq), d);
    }

    /// The client opens a connection to `node`.
    pub fn connect(&mut self, conn: ConnKey, node: i32, now: SimTime) {
        let at = now + self.delay(false);
        if self.partitioned.contains(&node) {
            self.stats.refused += 1;
            self.push(at, Delivery::Refused(conn));
            return;
        }
        self.links.insert(
            conn,
            Link {
                node,
                up: at,
                down: at,
                ..Default::default()
            },
        );
        self.push(at, Delivery::Connected(conn, node));
    }

    /// Changes the latency (and its jitter) of what is sent from now on.
    pub fn set_latency(&mut self, latency: SimTime, jitter: SimTime) {
        self.cfg.latency = latency;
        self.cfg.jitter = jitter;
    }

    /// Refuses a connect (an injected fault): the caller reports it like a refused one.
    pub fn refuse(&mut self, conn: ConnKey, now: SimTime) {
        self.stats.refused += 1;
        let at = now + self.delay(false);
        self.push(at, Delivery::Refused(conn));
    }

    fn send(&mut self, conn: ConnKey, bytes: Bytes, now: SimTime, to_broker: bool) {
        let Some(link) = self.links.get(&conn) else {
            return;
        };
        if link.dead {
            return;
        }
        let slow = link.slow;
        let mut last = if to_broker { link.up } else { link.down };
        let mut rest = bytes;
        while !rest.is_empty() {
            let max = self.cfg.max_chunk.max(1) as u64;
            let n = (1 + self.random() % max).min(rest.len() as u64) as usize;
            let chunk = rest.split_to(n);
            last = (now + self.delay(slow)).max(last);
            self.push(
                last,
                if to_broker {
                    Delivery::ToBroker(conn, chunk)
                } else {
                    Delivery::ToClient(conn, chunk)
                },
            );
        }
        let link = self.links.get_mut(&conn).expect("checked");
        if to_broker {
            link.up = last;
        } else {
            link.down = last;
        }
    }

    /// Bytes the client wrote.
    pub fn client_send(&mut self, conn: ConnKey, bytes: Bytes, now: SimTime) {
        self.send(conn, bytes, now, true);
    }

    /// Bytes the broker wrote.
    pub fn broker_send(&mut self, conn: ConnKey, bytes: Bytes, now: SimTime) {
        self.send(conn, bytes, now, false);
    }

    /// The client closed: the broker learns it after what was sent before.
    pub fn client_close(&mut self, conn: ConnKey, now: SimTime) {
        if let Some(link) = self.links.get_mut(&conn) {
            if !link.dead {
                link.dead = true;
                let at = link.up.max(now);
                self.push(at, Delivery::BrokerSideClosed(conn));
            }
        }
    }

    /// The broker closed: the client learns it after what was sent before.
    pub fn broker_close(&mut self, conn: ConnKey, now: SimTime) {
        if let Some(link) = self.links.get_mut(&conn) {
            if !link.dead {
                link.dead = true;
                let at = link.down.max(now);
                self.push(at, Delivery::ClientSideClosed(conn));
            }
        }
    }

    /// Resets a connection: bytes in flight after a random point are lost (often in the
    /// middle of a frame), and both sides learn it closed.
    pub fn reset(&mut self, conn: ConnKey, now: SimTime) {
        let Some(link) = self.links.get_mut(&conn) else {
            return;
        };
        if link.dead {
            return;
        }
        link.dead = true;
        let pending: Vec<(SimTime, u64)> = self
            .queue
            .iter()
            .filter(|(_, d)| d.conn() == conn)
            .map(|(k, _)| *k)
            .collect();
        let keep = if pending.is_empty() {
            0
        } else {
            (self.random() % (pending.len() as u64 + 1)) as usize
        };
        if keep < pending.len() {
            self.stats.resets_mid_stream += 1;
        }
        for k in &pending[keep..] {
            self.queue.remove(k);
        }
        self.stats.resets += 1;
        let at = pending
            .get(..keep)
            .and_then(|p| p.last())
            .map_or(now, |k| k.0.max(now));
        self.push(at, Delivery::ClientSideClosed(conn));
        self.push(at, Delivery::BrokerSideClosed(conn));
    }

    /// Slows a connection down.
    pub fn slow(&mut self, conn: ConnKey) {
        if let Some(link) = self.links.get_mut(&conn) {
            if !link.slow {
                link.slow = true;
                self.stats.slowed += 1;
            }
        }
    }

    /// Partitions a broker away: its connections reset, and connects to it are refused until
    /// [`SimNet::heal`].
    pub fn partition(&mut self, node: i32, now: SimTime) {
        if !self.partitioned.insert(node) {
            return;
        }
        self.stats.partitions += 1;
        let conns: Vec<ConnKey> = self
            .links
            .iter()
            .filter(|(_, l)| l.node == node && !l.dead)
            .map(|(c, _)| *c)
            .collect();
        for c in conns {
            self.reset(c, now);
        }
    }

    /// Black-holes a broker: from now on nothing sent to or from it arrives and no connect to
    /// it completes, and nobody learns of it (no reset, no close) until [`SimNet::heal`], when
    /// what was held arrives in order, as TCP's retransmissions would bring it. Connects that
    /// the client gave up on meanwhile never complete.
    pub fn blackhole(&mut self, node: i32) {
        if self.blackholed.insert(node) {
            self.stats.blackholes += 1;
        }
    }

    /// Ends a partition or a black hole.
    pub fn heal(&mut self, node: i32) {
        self.partitioned.remove(&node);
        if self.blackholed.remove(&node) {
            let held = std::mem::take(&mut self.held);
            for (key, d) in held {
                if self.node_of(&d) != Some(node) {
                    self.held.push((key, d));
                } else if matches!(d, Delivery::Connected(..))
                    && self.links.get(&d.conn()).is_none_or(|l| l.dead)
                {
                    // The client gave up on this connect.
                } else {
                    // Due already: delivered at the next poll, in the order they came due.
                    self.queue.insert(key, d);
                }
            }
        }
    }

    /// The broker a delivery is to or from.
    fn node_of(&self, d: &Delivery) -> Option<i32> {
        match d {
            Delivery::Connected(_, node) => Some(*node),
            d => self.links.get(&d.conn()).map(|l| l.node),
        }
    }

    /// Whether a broker is partitioned away.
    pub fn is_partitioned(&self, node: i32) -> bool {
        self.partitioned.contains(&node)
    }

    /// Open connections (for picking one to fault).
    pub fn open(&self) -> Vec<ConnKey> {
        self.links
            .iter()
            .filter(|(_, l)| !l.dead)
            .map(|(c, _)| *c)
            .collect()
    }

    /// When the next delivery is due.
    pub fn next_due(&self) -> Option<SimTime> {
        self.queue.keys().next().map(|k| k.0)
    }

    /// The next delivery due at `now`, in order.
    pub fn poll(&mut self, now: SimTime) -> Option<Delivery> {
        self.poll_due(now).map(|(_, d)| d)
    }

    /// The next delivery due at `now`, in order, with the time it was due: earlier than
    /// `now` when a black hole held it.
    pub fn poll_due(&mut self, now: SimTime) -> Option<(SimTime, Delivery)> {
        let (due, d) = loop {
            let (&key, _) = self.queue.iter().next()?;
            if key.0 > now {
                return None;
            }
            let d = self.queue.remove(&key).expect("found");
            match self.node_of(&d) {
                Some(node) if self.blackholed.contains(&node) => self.held.push((key, d)),
                _ => break (key.0, d),
            }
        };
        match &d {
            Delivery::ToBroker(..) | Delivery::ToClient(..) => self.stats.chunks += 1,
            Delivery::BrokerSideClosed(c) | Delivery::ClientSideClosed(c) => {
                // Both sides closed: forget the link.
                let both = !self.queue.values().any(|q| q.conn() == *c)
                    && !self.held.iter().any(|(_, q)| q.conn() == *c);
                if both {
                    self.links.remove(c);
                }
            }
            _ => {}
        }
        Some((due, d))
    }

    /// What was injected so far.
    pub fn stats(&self) -> NetStats {
        self.stats.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn drain(net: &mut SimNet, now: SimTime) -> Vec<Delivery> {
        std::iter::from_fn(|| net.poll(now)).collect()
    }

    #[test]
    fn a_black_hole_holds_everything_until_healed_then_delivers_it_in_order() {
        let mut net = SimNet::new(NetConfig::default(), 7);
        let t = SimTime::from_millis;
        net.connect(1, 2, t(0));
        assert_eq!(drain(&mut net, t(10)), [Delivery::Connected(1, 2)]);
        net.blackhole(2);
        net.client_send(1, Bytes::from_static(b"request"), t(10));
        net.broker_send(1, Bytes::from_static(b"answer"), t(10));
        net.connect(2, 2, t(10));
        net.connect(3, 2, t(10));
        // Nothing arrives, nothing closes: the client only has its timeouts.
        assert_eq!(drain(&mut net, t(5_000)), []);
        // The client gives up on connect 3 meanwhile.
        net.client_close(3, t(5_000));
        net.heal(2);
        let got = drain(&mut net, t(5_001));
        let bytes = |to_broker: bool| -> Vec<u8> {
            got.iter()
                .flat_map(|d| match d {
                    Delivery::ToBroker(1, b) if to_broker => b.to_vec(),
                    Delivery::ToClient(1, b) if !to_broker => b.to_vec(),
                    _ => vec![],
                })
                .collect()
        };
        assert_eq!(bytes(true), b"request");
        assert_eq!(bytes(false), b"answer");
        assert!(got.contains(&Delivery::Connected(2, 2)));
        assert!(
            !got.contains(&Delivery::Connected(3, 2)),
            "a connect given up on never completes"
        );
        assert_eq!(net.stats().blackholes, 1);
    }
}
