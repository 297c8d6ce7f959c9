//! The fault schedule: from the seed, faults at random intervals during the faulty phase —
//! broker crashes (some noticed by the controller only later), partitions and black holes
//! (each recovered after a while), leader and coordinator moves, connection resets, slow
//! links, refused connects, group members that crash, join and leave, and producers that get
//! no CPU for a while (a starved machine); on an eighth of the seeds a broker's restart forgets
//! the producer ids (as Tansu). After the phase everything is recovered, so the run can settle.

use std::time::Duration;

use kafka_core::Instant;

use super::apps::Dice;

/// How often each kind of fault fired.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FaultCounts {
    /// Broker crashes.
    pub broker_crash: u64,
    /// Brokers partitioned away from everyone.
    pub broker_partition: u64,
    /// Brokers black-holed (gone without closing a connection, fenced a while later).
    pub broker_blackhole: u64,
    /// Brokers killed that metadata still names (and lists) until fenced a while later.
    pub broker_kill: u64,
    /// Brokers killed that metadata still names as leader without listing them (librdkafka's
    /// mock cluster).
    pub broker_kill_unlisted: u64,
    /// Group coordinators' brokers gone for good after the faults.
    pub broker_vanish: u64,
    /// Leader moves.
    pub leader_move: u64,
    /// Coordinator moves.
    pub coordinator_move: u64,
    /// Connections reset (mid-frame or not).
    pub conn_reset: u64,
    /// Connections reset with bytes in flight.
    pub conn_reset_mid_stream: u64,
    /// Connections slowed.
    pub conn_slow: u64,
    /// Connects refused.
    pub connect_refused: u64,
    /// Spells of a connection quota: every broker closes new connections during their
    /// handshake (Kafka's `max.connections`, or a broker that cannot read the handshake).
    pub conn_quota: u64,
    /// Group members crashed.
    pub member_crash: u64,
    /// Group members added.
    pub member_join: u64,
    /// Group members that left.
    pub member_leave: u64,
    /// Producers stalled (no CPU while time moves on).
    pub client_stall: u64,
    /// Produce requests refused as UNKNOWN_PRODUCER_ID: a broker's restart forgot the
    /// producer id (the seeds whose brokers keep producer ids in memory, as Tansu).
    pub producer_unknown: u64,
}

impl FaultCounts {
    /// Adds another run's counts.
    pub fn add(&mut self, o: &FaultCounts) {
        self.broker_crash += o.broker_crash;
        self.broker_partition += o.broker_partition;
        self.broker_blackhole += o.broker_blackhole;
        self.broker_kill += o.broker_kill;
        self.broker_kill_unlisted += o.broker_kill_unlisted;
        self.broker_vanish += o.broker_vanish;
        self.leader_move += o.leader_move;
        self.coordinator_move += o.coordinator_move;
        self.conn_reset += o.conn_reset;
        self.conn_reset_mid_stream += o.conn_reset_mid_stream;
        self.conn_slow += o.conn_slow;
        self.connect_refused += o.connect_refused;
        self.conn_quota += o.conn_quota;
        self.member_crash += o.member_crash;
        self.member_join += o.member_join;
        self.member_leave += o.member_leave;
        self.client_stall += o.client_stall;
        self.producer_unknown += o.producer_unknown;
    }

    /// The kinds that never fired.
    pub fn missing(&self) -> Vec<&'static str> {
        [
            ("broker crash", self.broker_crash),
            ("broker partition", self.broker_partition),
            ("broker black hole", self.broker_blackhole),
            ("broker killed, fenced late", self.broker_kill),
            (
                "broker killed, named but not listed",
                self.broker_kill_unlisted,
            ),
            ("broker vanished", self.broker_vanish),
            ("leader move", self.leader_move),
            ("coordinator move", self.coordinator_move),
            ("connection reset", self.conn_reset),
            ("connection reset mid-stream", self.conn_reset_mid_stream),
            ("slow connection", self.conn_slow),
            ("refused connect", self.connect_refused),
            ("connection quota", self.conn_quota),
            ("member crash", self.member_crash),
            ("member join", self.member_join),
            ("member leave", self.member_leave),
            ("client stall", self.client_stall),
            ("producer id forgotten", self.producer_unknown),
        ]
        .into_iter()
        .filter(|(_, n)| *n == 0)
        .map(|(k, _)| k)
        .collect()
    }
}

/// One fault (or recovery) to apply now.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Fault {
    /// Crash a broker.
    CrashBroker(i32),
    /// Restart a crashed broker.
    RestartBroker(i32),
    /// Partition a broker away.
    Partition(i32),
    /// Heal a partition or a black hole.
    Heal(i32),
    /// A broker vanishes: nothing reaches it or comes back and no connection closes (a pulled
    /// cable, a frozen host), while the cluster still names it, leader and coordinator...
    Blackhole(i32),
    /// ...until the controller fences it (its session expired): leaders and coordinators move.
    Fence(i32),
    /// A broker's process dies: its connections reset and connects are refused, while
    /// metadata still names it leader and coordinator until a [`Fault::Fence`] or its return.
    /// With `true` metadata lists it (Kafka before its session expires); with `false` it names
    /// leaders it does not list (librdkafka's mock cluster, which may never fence it).
    Kill(i32, bool),
    /// A second after the faults end, the group coordinator's broker vanishes for good (a
    /// black hole, fenced at once): the run must settle on the two others.
    Vanish,
    /// Move a partition's leader.
    MoveLeader(i32),
    /// Move the group coordinator.
    MoveCoordinator,
    /// Reset a random connection.
    ResetConn,
    /// Slow a random connection.
    SlowConn,
    /// Refuse the next connect.
    RefuseConnect,
    /// Every broker closes new connections during their handshake (a connection quota such
    /// as Kafka's `max.connections` per IP: accepted, then closed), until [`Fault::QuotaEnd`];
    /// open connections go on.
    Quota,
    /// The quota lifts.
    QuotaEnd,
    /// Crash a group member (and start a new one).
    CrashMember,
    /// Add a group member.
    JoinMember,
    /// A member leaves (and a new one starts).
    LeaveMember,
    /// A producer gets no CPU for this many milliseconds.
    StallProducer(usize, u64),
}

/// The schedule.
#[derive(Debug)]
pub struct Faults {
    dice: Dice,
    enabled: bool,
    next: Instant,
    end: Instant,
    /// Recoveries due: (when, what).
    recoveries: Vec<(Instant, Fault)>,
    /// Brokers down or partitioned.
    out: Vec<i32>,
    /// Whether [`Fault::Vanish`] follows the faulty phase.
    vanish: bool,
    /// Whether a [`Fault::Quota`] is on.
    quota: bool,
}

impl Faults {
    /// Faults from `seed` until `end`.
    pub fn new(seed: u64, enabled: bool, end: Instant) -> Self {
        let mut dice = Dice::new(seed ^ 0xfa17);
        let next = Instant::from_millis(200 + dice.below(400));
        Faults {
            dice,
            enabled,
            next,
            end,
            recoveries: Vec::new(),
            out: Vec::new(),
            vanish: false,
            quota: false,
        }
    }

    /// With `vanish`, [`Fault::Vanish`] comes a second after the faulty phase.
    pub fn vanish_after(mut self, vanish: bool) -> Self {
        self.vanish = vanish;
        self
    }

    /// When the next fault or recovery is due.
    pub fn next_at(&self) -> Option<Instant> {
        let next = (self.enabled && self.next < self.end).then_some(self.next);
        self.recoveries.iter().map(|r| r.0).chain(next).min()
    }

    /// The faults due at `now`.
    pub fn due(&mut self, now: Instant) -> Vec<Fault> {
        let mut out = Vec::new();
        self.recoveries.sort();
        while self.recoveries.first().is_some_and(|r| r.0 <= now) {
            let (_, f) = self.recoveries.remove(0);
            if let Fault::RestartBroker(n) | Fault::Heal(n) = f {
                self.out.retain(|o| *o != n);
            }
            if f == Fault::QuotaEnd {
                self.quota = false;
            }
            out.push(f);
        }
        if self.enabled && self.next <= now && self.next < self.end {
            self.next = now + Duration::from_millis(100 + self.dice.below(700));
            if let Some(f) = self.pick(now) {
                out.push(f);
            }
        }
        out
    }

    fn pick(&mut self, now: Instant) -> Option<Fault> {
        let broker = 1 + self.dice.below(3) as i32;
        let back = now + Duration::from_millis(300 + self.dice.below(2500));
        match self.dice.below(14) {
            // At most one broker out at a time, mostly: acks=all (min.insync.replicas=2) can
            // go on. Sometimes two, so that it cannot for a while.
            0 | 1
                if !self.out.contains(&broker)
                    && (self.out.is_empty() || self.dice.below(4) == 0) =>
            {
                self.out.push(broker);
                self.recoveries.push((back, Fault::RestartBroker(broker)));
                match self.dice.below(6) {
                    // A third of them die as a kill -9 does: the controller notices only when
                    // the broker's session expires (fenced a quarter to three quarters of the
                    // way to its return), or, as on the mock cluster, maybe never.
                    k @ (0 | 1) => {
                        let listed = k == 0;
                        if listed || self.dice.below(2) == 0 {
                            let span = back.saturating_duration_since(now);
                            let fence = now + span * (1 + self.dice.below(3) as u32) / 4;
                            self.recoveries.push((fence, Fault::Fence(broker)));
                        }
                        Some(Fault::Kill(broker, listed))
                    }
                    _ => Some(Fault::CrashBroker(broker)),
                }
            }
            2 if !self.out.contains(&broker) && self.out.is_empty() => {
                self.out.push(broker);
                self.recoveries.push((back, Fault::Heal(broker)));
                if self.dice.below(2) == 0 {
                    Some(Fault::Partition(broker))
                } else {
                    // Fenced at a quarter to three quarters of the way to its return: until
                    // then, metadata names a leader nobody can reach.
                    let span = back.saturating_duration_since(now);
                    let fence = now + span * (1 + self.dice.below(3) as u32) / 4;
                    self.recoveries.push((fence, Fault::Fence(broker)));
                    Some(Fault::Blackhole(broker))
                }
            }
            3 => Some(Fault::MoveLeader(self.dice.below(3) as i32)),
            4 => Some(Fault::MoveCoordinator),
            5 | 6 => Some(Fault::ResetConn),
            7 => Some(Fault::SlowConn),
            8 => Some(Fault::RefuseConnect),
            9 => Some(Fault::CrashMember),
            10 => Some(Fault::JoinMember),
            11 => Some(Fault::LeaveMember),
            // Mostly the idempotent producer; long enough for its requests to time out.
            12 => Some(Fault::StallProducer(
                [0, 0, 1][self.dice.below(3) as usize],
                300 + self.dice.below(3000),
            )),
            13 if !self.quota => {
                self.quota = true;
                self.recoveries.push((back, Fault::QuotaEnd));
                Some(Fault::Quota)
            }
            _ => None,
        }
    }

    /// Ends the faulty phase: every broker comes back.
    pub fn recover_all(&mut self) -> Vec<Fault> {
        self.enabled = false;
        self.quota = false;
        self.out.clear();
        // A fence not yet due would take a broker down for good after its heal.
        let now: Vec<Fault> = self
            .recoveries
            .drain(..)
            .map(|r| r.1)
            .filter(|f| !matches!(f, Fault::Fence(_)))
            .collect();
        if std::mem::take(&mut self.vanish) {
            self.recoveries
                .push((self.end + Duration::from_secs(1), Fault::Vanish));
        }
        now
    }
}
