//! The simulation's applications: a producer that sends numbered records at random intervals
//! (holding a record while memory is full, as an adapter does), and a consumer-group member
//! that takes records, holds them until its next poll, and acknowledges revocations. Both
//! record what they saw in a shared [`Ledger`] for the invariants.

use kafka_core::net::Machine as _;
use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet};
use std::rc::Rc;
use std::time::Duration;

use kafka_core::fetcher::FetchEvent;
use kafka_core::producer::{DeliveryError, Outcome, ProducerEvent, ProducerRecord, SendError};
use kafka_core::{Consumer, ConsumerConfig, Instant, Producer, ProducerConfig};

use super::check::Failure;

/// Everything the applications saw.
#[derive(Debug, Default)]
pub struct Ledger {
    /// Per producer: record number -> (value, outcome once known).
    pub sent: BTreeMap<usize, BTreeMap<u64, (String, Option<Outcome>)>>,
    /// Per partition: offsets handed to some consumer.
    pub handed: BTreeMap<i32, BTreeSet<i64>>,
    /// Records handed to consumers.
    pub consumed: u64,
}

/// A small seeded generator for the applications' own choices.
#[derive(Debug, Clone)]
pub struct Dice(u64);

impl Dice {
    /// Seeded.
    pub fn new(seed: u64) -> Self {
        Dice(seed ^ 0x005e_ed0f_a995)
    }

    /// The next number.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// A number below `n`.
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n.max(1)
    }
}

/// The bootstrap list of the simulated cluster.
pub fn bootstrap(brokers: i32) -> String {
    (1..=brokers)
        .map(|n| format!("broker-{n}:9092"))
        .collect::<Vec<_>>()
        .join(",")
}

/// A producer application.
pub struct ProducerApp {
    /// The core producer.
    pub producer: Producer,
    id: usize,
    dice: Dice,
    next_send: Option<Instant>,
    stop_at: Instant,
    n: u64,
    /// Records still to send back to back: a burst fills several batches of a partition at
    /// once, so they are in flight together (as a perf tool's are right after the topic was
    /// created, defect 0 of #33).
    burst: u32,
    held: Option<(ProducerRecord, u64)>,
    /// Token -> (record number, size, when the producer took it).
    tokens: BTreeMap<u64, (u64, usize, Instant)>,
    /// When this producer was stalled (from, until), in order: a timer due meanwhile runs late.
    pub stalls: Vec<(Instant, Instant)>,
    /// Bytes of records sent and not resolved, counted here (not by the pool).
    unresolved: usize,
    buffer_memory: usize,
    ledger: Rc<RefCell<Ledger>>,
    /// Outcomes seen: delivered, failed (the truth the metrics are checked against).
    delivered: u64,
    failed: u64,
}

/// The connection metrics' own arithmetic: every connection made is open or was closed, and
/// no response came without a request.
fn check_connection_metrics(
    m: &kafka_core::metrics::MetricsSnapshot,
    group: &str,
    who: &str,
) -> Result<(), Failure> {
    let get = |n: &str| m.get(group, n).unwrap_or(f64::NAN);
    let (made, closed, open) = (
        get("connection-creation-total"),
        get("connection-close-total"),
        get("connection-count"),
    );
    if made - closed != open {
        return Err(Failure::new(format!(
            "{who}: {made} connections created and {closed} closed, yet connection-count is {open}"
        )));
    }
    if get("response-total") > get("request-total") {
        return Err(Failure::new(format!(
            "{who}: response-total {} above request-total {}",
            get("response-total"),
            get("request-total")
        )));
    }
    Ok(())
}

impl ProducerApp {
    /// The producer's metrics against the outcomes it delivered: `record-error-total` is
    /// exactly the records that failed; every delivered record was sent at least once, and
    /// no record was sent more often than once plus its retries.
    pub fn check_metrics(&self, now: Instant) -> Result<(), Failure> {
        let m = self.producer.metrics(now);
        let get = |n: &str| m.get("producer-metrics", n).unwrap_or(f64::NAN);
        let (sent, retried, errors) = (
            get("record-send-total"),
            get("record-retry-total"),
            get("record-error-total"),
        );
        let (delivered, failed) = (self.delivered as f64, self.failed as f64);
        if errors != failed {
            return Err(Failure::new(format!(
                "producer {}: record-error-total {errors}, but {failed} records failed",
                self.id
            )));
        }
        if sent < delivered || sent > delivered + failed + retried {
            return Err(Failure::new(format!(
                "producer {}: record-send-total {sent} outside [{delivered} delivered, + {failed} failed + {retried} retried]",
                self.id
            )));
        }
        let topic = m
            .find(
                "producer-topic-metrics",
                "record-send-total",
                &[("topic", "t")],
            )
            .unwrap_or(0.0);
        if topic != sent {
            return Err(Failure::new(format!(
                "producer {}: topic t's record-send-total {topic}, the producer's {sent}",
                self.id
            )));
        }
        check_connection_metrics(&m, "producer-metrics", &format!("producer {}", self.id))
    }

    /// A producer with these settings (on top of the simulation's), sending until `stop_at`.
    pub fn new(
        id: usize,
        settings: &[(&str, &str)],
        seed: u64,
        stop_at: Instant,
        ledger: Rc<RefCell<Ledger>>,
    ) -> Self {
        let seed_s = seed.to_string();
        let mut map = vec![
            ("bootstrap.servers".to_string(), bootstrap(3)),
            ("linger.ms".into(), "5".into()),
            ("batch.size".into(), "4096".into()),
            ("buffer.memory".into(), "32768".into()),
            ("delivery.timeout.ms".into(), "15000".into()),
            ("request.timeout.ms".into(), "3000".into()),
            ("retry.backoff.ms".into(), "50".into()),
            ("reconnect.backoff.ms".into(), "20".into()),
            ("reconnect.backoff.max.ms".into(), "500".into()),
            ("metadata.max.age.ms".into(), "5000".into()),
            ("random.seed".into(), seed_s),
        ];
        for (k, v) in settings {
            map.push((k.to_string(), v.to_string()));
        }
        let cfg = ProducerConfig::from_map(map).expect("valid simulation settings");
        let buffer_memory = cfg.buffer_memory as usize;
        ledger.borrow_mut().sent.entry(id).or_default();
        ProducerApp {
            producer: Producer::new(cfg),
            id,
            dice: Dice::new(seed ^ id as u64),
            next_send: Some(Instant::from_millis(10)),
            stop_at,
            n: 0,
            // Half of the seeds start with a burst, while the leaders may still be warming.
            burst: if (seed >> 3).is_multiple_of(2) {
                BURST
            } else {
                0
            },
            held: None,
            tokens: BTreeMap::new(),
            stalls: Vec::new(),
            unresolved: 0,
            buffer_memory,
            ledger,
            delivered: 0,
            failed: 0,
        }
    }

    /// When it needs a tick.
    pub fn poll_timeout(&self) -> Option<Instant> {
        let send = self.next_send.filter(|_| self.held.is_none());
        [self.producer.poll_timeout(), send]
            .into_iter()
            .flatten()
            .min()
    }

    /// Time passed: the producer's timers, then maybe a record.
    pub fn tick(&mut self, now: Instant) -> Result<(), Failure> {
        if self.producer.poll_timeout().is_some_and(|t| t <= now) {
            self.producer.handle_timeout(now);
        }
        if self.held.is_some() || self.next_send.is_none_or(|t| t > now) {
            return Ok(());
        }
        if now >= self.stop_at {
            self.next_send = None;
            self.producer.flush(now);
            return Ok(());
        }
        let n = self.n;
        self.n += 1;
        let value = format!("p{}-{n:06}-{}", self.id, "x".repeat(40));
        self.ledger
            .borrow_mut()
            .sent
            .get_mut(&self.id)
            .expect("made in new")
            .insert(n, (value.clone(), None));
        if self.burst == 0 && self.dice.below(500) == 0 {
            self.burst = BURST;
        }
        let gap = if self.burst > 0 {
            self.burst -= 1;
            Duration::ZERO
        } else {
            Duration::from_micros(200 + self.dice.below(3000))
        };
        self.next_send = Some(now + gap);
        self.send(ProducerRecord::new("t", value, 1_700_000_000_000), n, now)
    }

    fn send(&mut self, record: ProducerRecord, n: u64, now: Instant) -> Result<(), Failure> {
        let size = record.value.as_ref().map_or(0, |v| v.len());
        match self.producer.send_or_return(record, now) {
            Ok(token) => {
                self.tokens.insert(token.0, (n, size, now));
                self.unresolved += size;
                if self.unresolved > self.buffer_memory {
                    return Err(Failure::new(format!(
                        "producer {}: {} B of records unresolved, above buffer.memory {}",
                        self.id, self.unresolved, self.buffer_memory
                    )));
                }
                Ok(())
            }
            Err((SendError::BufferFull, record)) => {
                self.held = Some((record, n));
                Ok(())
            }
            Err((e, _)) => Err(Failure::new(format!(
                "producer {}: send refused: {e}",
                self.id
            ))),
        }
    }

    /// A producer event.
    pub fn on_event(&mut self, e: ProducerEvent, now: Instant) -> Result<(), Failure> {
        match e {
            ProducerEvent::Outcome(token, outcome) => {
                let Some((n, size, sent)) = self.tokens.remove(&token.0) else {
                    return Err(Failure::new(format!(
                        "producer {}: token {} resolved twice (or never issued): {outcome:?}",
                        self.id, token.0
                    )));
                };
                // A record never expires before its own send + delivery.timeout.ms, less at
                // most linger.ms.
                if let Outcome::Failed {
                    error: DeliveryError::DeliveryTimeout { .. },
                    ..
                } = &outcome
                {
                    let cfg = self.producer.config();
                    let earliest = sent + cfg.delivery_timeout.saturating_sub(cfg.linger);
                    if now < earliest {
                        return Err(Failure::new(format!(
                            "producer {}: record {n}, sent at {sent:?}, expired at {now:?}, before its own delivery.timeout.ms ({:?})",
                            self.id, cfg.delivery_timeout
                        )));
                    }
                    // Nor long after: a batch takes records for a twentieth of the timeout (at
                    // least 100 ms or linger.ms), so its first waits at most that past its own.
                    // Unless the producer was stalled then (no CPU): it runs its timers when it
                    // runs again.
                    let span = (cfg.delivery_timeout / 20)
                        .max(Duration::from_millis(100))
                        .max(cfg.linger);
                    let mut latest = sent + cfg.delivery_timeout + span;
                    for &(from, until) in &self.stalls {
                        if from <= latest && latest < until {
                            latest = until;
                        }
                    }
                    if now > latest {
                        return Err(Failure::new(format!(
                            "producer {}: record {n}, sent at {sent:?}, expired at {now:?}, {:?} past its own delivery.timeout.ms ({:?})",
                            self.id, now - (sent + cfg.delivery_timeout), cfg.delivery_timeout
                        )));
                    }
                }
                self.unresolved -= size;
                match &outcome {
                    Outcome::Delivered { .. } => self.delivered += 1,
                    _ => self.failed += 1,
                }
                let mut ledger = self.ledger.borrow_mut();
                let entry = ledger
                    .sent
                    .get_mut(&self.id)
                    .and_then(|s| s.get_mut(&n))
                    .expect("recorded at send");
                entry.1 = Some(outcome);
            }
            ProducerEvent::MemoryAvailable => {
                if let Some((record, n)) = self.held.take() {
                    self.send(record, n, now)?;
                }
            }
            _ => {}
        }
        Ok(())
    }

    /// Whether every record sent has its outcome (and nothing waits to be sent).
    pub fn settled(&self) -> bool {
        self.next_send.is_none() && self.held.is_none() && self.tokens.is_empty()
    }
}

/// The length of a producer's burst: about 5 batches of `batch.size` across the 3 partitions,
/// within `buffer.memory`.
const BURST: u32 = 200;

/// A consumer-group member.
pub struct ConsumerApp {
    /// The core consumer.
    pub fetcher: Consumer,
    id: usize,
    next_poll: Instant,
    held: usize,
    limit: usize,
    /// It asked to leave, and has left.
    pub leaving: bool,
    /// It left.
    pub left: bool,
    ledger: Rc<RefCell<Ledger>>,
    /// Records the application took (the truth `records-consumed-total` is checked against).
    taken: u64,
}

/// `queued.max.messages.kbytes` in the simulation: small, so the budget is exercised.
pub const PREFETCH_KB: usize = 24;

/// The largest batch the producers write, the consumers' `max.partition.fetch.bytes`: the
/// budget holds to within one batch as long as batches fit in it. A full batch that waits to be
/// sent grows past batch.size (4,096) a block at a time while buffer.memory (32,768) has one
/// free: to the whole pool at most (the 1,024 over it is slack for the fetch's framing).
const LARGEST_BATCH: usize = 32768 + 1024;

/// Whether the seed's group runs the consumer protocol of KIP-848 (every third seed).
/// Whether the seed's cluster has a rack per broker and rack-aware leaders
/// ([`kafka_sim::ClusterConfig::racks`]), its consumers each naming a broker's rack in
/// `client.rack` (KIP-392): a quarter of the seeds, drawn apart from the fault schedule.
pub fn has_racks(seed: u64) -> bool {
    (seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 62) == 1
}

pub fn uses_consumer_protocol(seed: u64) -> bool {
    seed % 3 == 2
}

impl ConsumerApp {
    /// A member of group "g" subscribed to "t", with `extra` settings.
    pub fn new(
        id: usize,
        seed: u64,
        extra: &[(&str, &str)],
        now: Instant,
        ledger: Rc<RefCell<Ledger>>,
    ) -> Self {
        let seed_s = seed.wrapping_add(id as u64).to_string();
        let kb = PREFETCH_KB.to_string();
        let largest = LARGEST_BATCH.to_string();
        let servers = bootstrap(3);
        let mut settings = vec![
            ("bootstrap.servers", servers.as_str()),
            ("group.id", "g"),
            ("max.poll.interval.ms", "4000"),
            ("auto.offset.reset", "earliest"),
            ("auto.commit.interval.ms", "300"),
            ("fetch.max.wait.ms", "100"),
            ("request.timeout.ms", "3000"),
            ("retry.backoff.ms", "50"),
            ("reconnect.backoff.ms", "20"),
            ("reconnect.backoff.max.ms", "500"),
            ("metadata.max.age.ms", "5000"),
            ("queued.max.messages.kbytes", kb.as_str()),
            ("max.partition.fetch.bytes", largest.as_str()),
            ("random.seed", seed_s.as_str()),
        ];
        // Every third seed's group runs the consumer protocol of KIP-848 (the broker owns the
        // session and heartbeats then); the others the classic one.
        if uses_consumer_protocol(seed) {
            settings.push(("group.protocol", "consumer"));
        } else {
            settings.extend([
                ("session.timeout.ms", "2000"),
                ("heartbeat.interval.ms", "300"),
            ]);
        }
        let rack = format!("rack-{}", 1 + id % 3);
        if has_racks(seed) {
            settings.push(("client.rack", rack.as_str()));
        }
        settings.extend_from_slice(extra);
        let cfg = ConsumerConfig::from_map(settings).expect("valid simulation settings");
        let mut fetcher = Consumer::new(cfg);
        fetcher
            .subscribe(vec!["t".into()], now)
            .expect("the simulation's consumers have a group.id");
        ConsumerApp {
            fetcher,
            id,
            next_poll: now,
            held: 0,
            // The budget, plus the one batch a fetch may bring past it (KIP-74).
            limit: PREFETCH_KB * 1024 + LARGEST_BATCH,
            leaving: false,
            left: false,
            ledger,
            taken: 0,
        }
    }

    /// When it needs a tick.
    pub fn poll_timeout(&self) -> Option<Instant> {
        let poll = (!self.leaving).then_some(self.next_poll);
        [self.fetcher.poll_timeout(), poll]
            .into_iter()
            .flatten()
            .min()
    }

    /// Time passed: the consumer's timers, and the application's poll every 50 ms (it gives
    /// back what it held, and asks for more).
    pub fn tick(&mut self, now: Instant) {
        if self.fetcher.poll_timeout().is_some_and(|t| t <= now) {
            self.fetcher.handle_timeout(now);
        }
        if !self.leaving && self.next_poll <= now {
            self.fetcher.release(std::mem::take(&mut self.held), now);
            self.fetcher.polled(now);
            self.next_poll = now + Duration::from_millis(50);
        }
    }

    /// Leaves the group.
    pub fn leave(&mut self, now: Instant) {
        self.leaving = true;
        self.fetcher.leave(now);
    }

    /// A consumer event.
    pub fn on_event(&mut self, e: FetchEvent, now: Instant) -> Result<(), Failure> {
        match e {
            FetchEvent::Records {
                topic,
                partition,
                records,
                leader_epoch,
                bytes,
                ..
            } => {
                let records = match records.collect::<Result<Vec<_>, _>>() {
                    Ok(records) => records,
                    Err(error) => {
                        return Err(Failure::new(format!(
                            "consumer {}: {topic}-{partition}: {error}",
                            self.id
                        )))
                    }
                };
                let mut ledger = self.ledger.borrow_mut();
                let handed = ledger.handed.entry(partition).or_default();
                for r in &records {
                    handed.insert(r.offset);
                }
                ledger.consumed += records.len() as u64;
                // What the driver reports for its handles: the records the application took.
                self.fetcher
                    .record_consumed(&topic, records.len() as u64, now);
                self.taken += records.len() as u64;
                if let Some(last) = records.last() {
                    self.fetcher
                        .consumed(&topic, partition, last.offset + 1, leader_epoch);
                }
                self.held += bytes;
                if self.held > self.limit {
                    return Err(Failure::new(format!(
                        "consumer {}: {} B of fetched records held, above the budget plus one batch ({})",
                        self.id, self.held, self.limit
                    )));
                }
            }
            FetchEvent::Revoking(_) => self.fetcher.ack_revocation(now),
            FetchEvent::Left => self.left = true,
            FetchEvent::GroupFailed(e) => {
                return Err(Failure::new(format!(
                    "consumer {}: group failed: {e}",
                    self.id
                )))
            }
            FetchEvent::Error {
                topic,
                partition,
                error,
            } => {
                return Err(Failure::new(format!(
                    "consumer {}: {topic}-{partition}: {error}",
                    self.id
                )))
            }
            _ => {}
        }
        Ok(())
    }
}

impl ConsumerApp {
    /// The consumer's metrics against what it took: `records-consumed-total` is exactly the
    /// records handed to the application, per topic too.
    pub fn check_metrics(&self, now: Instant) -> Result<(), Failure> {
        let m = self.fetcher.metrics(now);
        const G: &str = "consumer-fetch-manager-metrics";
        let total = m.get(G, "records-consumed-total").unwrap_or(f64::NAN);
        let topic = m
            .find(G, "records-consumed-total", &[("topic", "t")])
            .unwrap_or(0.0);
        if total != self.taken as f64 || topic != total {
            return Err(Failure::new(format!(
                "consumer {}: records-consumed-total {total} (topic t: {topic}), but it took {}",
                self.id, self.taken
            )));
        }
        check_connection_metrics(&m, "consumer-metrics", &format!("consumer {}", self.id))
    }
}

/// A one-line description of a consumer event for the trace (records by their offsets).
pub fn short(e: &FetchEvent) -> String {
    match e {
        FetchEvent::Records {
            partition, records, ..
        } => {
            // Decoded again here: the trace shows which records the event holds.
            let offsets: Vec<i64> = records.clone().flatten().map(|r| r.offset).collect();
            format!(
                "records p{partition} {:?}..{:?}",
                offsets.first(),
                offsets.last()
            )
        }
        other => format!("{other:?}"),
    }
}
