//! The consumer's driver session: it owns the core consumer ([`kafka_core::Consumer`]), holds fetched events until the
//! handle asks, answers commits and closes, and drops what it holds of partitions revoked or
//! lost before the handle can return any more of their records.

use kafka_core::net::Machine as _;
use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::sync::Arc;

use futures_channel::oneshot;
use kafka_core::fetcher::OffsetsId;
use kafka_core::fetcher::{Consumer as CoreConsumer, FetchEvent};
use kafka_core::group::offsets::{CommitError, CommitId, LookupId};
use kafka_core::Instant;

use super::{Command, Handed, HandleShared, Progress};
use crate::driver::Session;

fn event_is_of(e: &FetchEvent, topic: &str, partition: i32) -> bool {
    match e {
        FetchEvent::Records {
            topic: t,
            partition: p,
            ..
        }
        | FetchEvent::EndOfPartition {
            topic: t,
            partition: p,
            ..
        }
        | FetchEvent::Error {
            topic: t,
            partition: p,
            ..
        } => t == topic && *p == partition,
        _ => false,
    }
}

pub(super) struct ConsumerSession {
    pub(super) core: CoreConsumer,
    /// Fetched and not yet asked for.
    pub(super) ready: VecDeque<FetchEvent>,
    pub(super) waiting: Option<oneshot::Sender<Handed>>,
    pub(super) commits: BTreeMap<CommitId, oneshot::Sender<Result<(), CommitError>>>,
    pub(super) lookups: BTreeMap<LookupId, oneshot::Sender<super::Committed>>,
    pub(super) offset_lookups: BTreeMap<OffsetsId, oneshot::Sender<super::Found>>,
    pub(super) closers: Vec<oneshot::Sender<()>>,
    pub(super) finished: bool,
    /// What the handle shares with the session.
    pub(super) shared: Arc<HandleShared>,
    /// The handle's last call (runtime nanoseconds) when the session last looked.
    pub(super) seen_call: u64,
    /// Seeks done per partition, in the order the handle made them: an answer carries the
    /// count, so that the handle drops records fetched before a seek it made since.
    pub(super) seeks: BTreeMap<(String, i32), u64>,
    /// Partitions whose revocation the application has not acknowledged yet.
    pub(super) revoking: BTreeSet<(String, i32)>,
}

impl ConsumerSession {
    /// Drops what is held of partitions being revoked or lost, gives their bytes back to the
    /// prefetch budget, and tells the handle, which drops what it is reading of them: no more
    /// of their records reach the application (Java drops them from its fetch buffer too).
    fn drop_partitions(&mut self, tps: &[(String, i32)], now: Instant) {
        let mut dropped = 0;
        self.ready.retain(|e| {
            let of = tps.iter().any(|(t, p)| event_is_of(e, t, *p));
            if let (true, FetchEvent::Records { bytes, .. }) = (of, e) {
                dropped += bytes;
            }
            !of
        });
        self.core.release(dropped, now);
        self.shared.revoked(tps);
    }

    /// Drops what is held of a partition and gives its bytes back to the prefetch budget.
    fn drop_ready(&mut self, topic: &str, partition: i32, now: Instant) {
        let mut dropped = 0;
        self.ready.retain(|e| match e {
            FetchEvent::Records { bytes, .. } if event_is_of(e, topic, partition) => {
                dropped += bytes;
                false
            }
            e => !event_is_of(e, topic, partition),
        });
        self.core.release(dropped, now);
    }

    /// What the application took. A report from an earlier tenure of the partition (lost
    /// and assigned again while the report waited in the handle, as when the application
    /// stalled) is dropped: committed in the new tenure, it would move the group's offset back
    /// over commits made by the owners in between (found by the simulation, seed 24694). The
    /// tenure being revoked still reports, until the application acknowledges.
    fn consumed(&mut self, progress: Progress) {
        for (t, p, o, e, tenure) in progress {
            let now = self.shared.revocations(&t, p);
            let revoking = tenure + 1 == now && self.revoking.contains(&(t.clone(), p));
            if tenure == now || revoking {
                self.core.consumed(&t, p, o, e);
            }
        }
    }

    fn hand_over(&mut self, now: Instant) {
        while let Some(w) = self.waiting.take() {
            let Some(event) = self.ready.pop_front() else {
                self.waiting = Some(w);
                return;
            };
            let (bytes, revocations, seeks) = match &event {
                FetchEvent::Records {
                    bytes,
                    topic,
                    partition,
                    ..
                } => (
                    (*bytes, topic.clone()),
                    self.shared.revocations(topic, *partition),
                    self.seeks
                        .get(&(topic.clone(), *partition))
                        .copied()
                        .unwrap_or(0),
                ),
                _ => ((0, String::new()), 0, 0),
            };
            match w.send(Handed {
                event,
                revocations,
                seeks,
            }) {
                // The application holds it now: the prefetch budget has room again.
                Ok(()) if bytes.0 > 0 => {
                    self.core.release(bytes.0, now);
                    self.core.record_handed(&bytes.1, bytes.0, now);
                }
                Ok(()) => {}
                // The caller gave up waiting: keep the data for the next ask.
                Err(h) => self.ready.push_front(h.event),
            }
        }
    }
}

impl Session for ConsumerSession {
    type Command = Command;
    type Core = CoreConsumer;

    fn with_core<T>(&mut self, f: impl FnOnce(&mut CoreConsumer) -> T) -> T {
        f(&mut self.core)
    }

    fn refresh(&mut self, now: Instant) {
        // The application polls while it calls the handle or waits in it: that keeps it in
        // its group past max.poll.interval.ms, and brings it back after a stall.
        if self.shared.is_waiting() {
            self.core.polled(now);
        } else {
            let call = self.shared.last_call();
            if call > self.seen_call {
                self.seen_call = call;
                self.core.polled_at(Instant::from_nanos(call).min(now), now);
            }
        }
    }

    fn command(&mut self, cmd: Command, now: Instant) {
        match cmd {
            Command::Assign(ps, start) => {
                // The handle checked the mode; the core's refusal cannot happen here.
                let _ = self.core.assign(ps, start, now);
            }
            Command::Seek(t, p, start) => {
                *self.seeks.entry((t.clone(), p)).or_default() += 1;
                self.drop_ready(&t, p, now);
                self.core.seek(&t, p, start, now);
            }
            Command::Corrupt(t, p, offset) => {
                self.core.stop_corrupt(&t, p, offset);
                self.drop_ready(&t, p, now);
            }
            Command::Pause(t, p) => self.core.pause(&t, p),
            Command::Resume(t, p) => self.core.resume(&t, p, now),
            Command::Metrics(taken, reply) => {
                for (topic, n) in taken {
                    self.core.record_consumed(&topic, n, now);
                }
                let _ = reply.send(self.core.metrics(now));
            }
            Command::GroupMetadata(reply) => {
                let _ = reply.send(self.core.group_metadata());
            }
            Command::Position(t, p, reply) => {
                let buffered = self.ready.iter().find_map(|e| match e {
                    FetchEvent::Records {
                        topic,
                        partition,
                        records,
                        ..
                    } if *topic == t && *partition == p => Some(records.position()),
                    _ => None,
                });
                let _ = reply.send(buffered.or_else(|| self.core.position(&t, p)));
            }
            Command::Next(progress, taken, reply) => {
                for (topic, n) in taken {
                    self.core.record_consumed(&topic, n, now);
                }
                self.consumed(progress);
                self.core.polled(now);
                self.waiting = Some(reply);
                self.hand_over(now);
            }
            Command::Subscribe(topics) => {
                // Checked by the handle: it has a group and topics.
                let _ = self.core.subscribe(topics, now);
            }
            Command::SubscribePattern(pattern) => {
                // Checked by the handle: it has a group and a valid pattern.
                let _ = self.core.subscribe_pattern(&pattern, now);
            }
            Command::Offsets(query, reply) => {
                let id = self.core.lookup_offsets(query, now);
                self.offset_lookups.insert(id, reply);
            }
            Command::Committed(tps, reply) => match self.core.lookup_committed(tps, now) {
                Some(id) => {
                    self.lookups.insert(id, reply);
                }
                None => {
                    let _ = reply.send(Err(CommitError::NotMember));
                }
            },
            Command::Commit(progress, reply) => {
                self.consumed(progress);
                match self.core.commit(now) {
                    Some(id) => {
                        self.commits.insert(id, reply);
                    }
                    None => {
                        let _ = reply.send(Err(CommitError::NotMember));
                    }
                }
            }
            Command::CommitOffsets(offsets, reply) => {
                match self.core.commit_offsets(offsets, now) {
                    Some(id) => {
                        self.commits.insert(id, reply);
                    }
                    None => {
                        let _ = reply.send(Err(CommitError::NotMember));
                    }
                }
            }
            Command::AckRevocation(progress) => {
                self.consumed(progress);
                self.revoking.clear();
                self.core.ack_revocation(now);
            }
            Command::Close(progress, reply) => {
                self.consumed(progress);
                self.closers.push(reply);
                if self.core.is_group_member() {
                    self.core.leave(now);
                } else {
                    self.finished = true;
                }
            }
        }
    }

    fn event(&mut self, ev: FetchEvent, now: Instant) {
        match ev {
            FetchEvent::Committed(id, result) => {
                if let Some(reply) = self.commits.remove(&id) {
                    let _ = reply.send(result);
                }
            }
            FetchEvent::CommittedOffsets(id, result) => {
                if let Some(reply) = self.lookups.remove(&id) {
                    let _ = reply.send(result);
                }
            }
            FetchEvent::Offsets(id, result) => {
                if let Some(reply) = self.offset_lookups.remove(&id) {
                    let _ = reply.send(result);
                }
            }
            FetchEvent::Left => {
                for c in self.closers.drain(..) {
                    let _ = c.send(());
                }
                self.finished = true;
            }
            ev => {
                match &ev {
                    FetchEvent::Revoking(tps) => {
                        self.drop_partitions(tps, now);
                        self.revoking.extend(tps.iter().cloned());
                    }
                    FetchEvent::Lost(tps) => {
                        self.drop_partitions(tps, now);
                        for tp in tps {
                            self.revoking.remove(tp);
                        }
                    }
                    _ => {}
                }
                self.ready.push_back(ev);
                self.hand_over(now);
            }
        }
    }

    fn detached(&mut self, now: Instant) {
        // Dropped without close: leave the group if in one, without waiting for the answer.
        if self.core.is_group_member() {
            self.core.leave(now);
        }
        self.finished = true;
    }

    fn finished(&self) -> bool {
        self.finished
    }
}
