//! The outcomes of records in the core, by token, for their [`super::Delivery`] handles.
//!
//! Tokens come in order and outcomes nearly so: a ring indexed from the oldest token, not a
//! map. A slot that stays unread for long (a `Delivery` neither awaited nor dropped) must not
//! pin every younger slot behind it: once most of the ring is free, such stragglers move to a
//! small side map, so memory follows the records still unread, not the oldest one.

use std::collections::{BTreeMap, VecDeque};
use std::task::{Context, Waker};

use kafka_core::producer::{Certainty, DeliveryError, Outcome, RecordToken};

/// Rings shorter than this are never compacted (moving stragglers costs more than it saves).
const COMPACT_MIN: usize = 64;

/// One record's outcome, as its `Delivery` sees it. A slot takes at most 32 bytes, where an
/// [`Outcome`] takes 48 or more: every record in flight has one, and with many outstanding the
/// ring outgrows the caches.
#[derive(Debug)]
pub(super) enum Slot {
    /// Not resolved yet; the waker of the task awaiting it, if one is.
    Waiting(Option<Waker>),
    /// Delivered, not yet taken: partition, offset ([`NO_OFFSET`] for none), timestamp.
    Delivered(i32, i64, i64),
    /// Failed, not yet taken (rare, so boxed).
    Failed(Box<Outcome>),
    /// Taken, or its `Delivery` was dropped: the slot is free.
    Gone,
}

/// A delivered record's missing offset (acks=0, a duplicate), in a [`Slot::Delivered`]:
/// brokers never assign a negative offset.
const NO_OFFSET: i64 = i64::MIN;

/// What a record whose driver stopped without resolving it gets (its runtime shut down).
pub(super) fn closed() -> Outcome {
    Outcome::Failed {
        error: DeliveryError::Closed,
        certainty: Certainty::PossiblySent,
    }
}

impl Slot {
    pub(super) fn done(outcome: Outcome) -> Slot {
        match outcome {
            Outcome::Delivered {
                partition,
                offset,
                timestamp,
            } => Slot::Delivered(partition, offset.unwrap_or(NO_OFFSET), timestamp),
            failed => Slot::Failed(Box::new(failed)),
        }
    }

    /// The outcome of a resolved slot, which it leaves free.
    pub(super) fn take(&mut self) -> Option<Outcome> {
        match std::mem::replace(self, Slot::Gone) {
            Slot::Delivered(partition, offset, timestamp) => Some(Outcome::Delivered {
                partition,
                offset: (offset != NO_OFFSET).then_some(offset),
                timestamp,
            }),
            Slot::Failed(outcome) => Some(*outcome),
            other => {
                *self = other;
                None
            }
        }
    }
}

/// What polling a record's slot found.
pub(super) enum Polled {
    /// Not resolved yet (the waker is kept).
    Waiting,
    /// Its outcome, now taken.
    Ready(Outcome),
    /// No such slot (taken already): only a bug gets here.
    Missing,
}

/// The pending outcomes.
#[derive(Debug, Default)]
pub(super) struct Pending {
    /// The token of the ring's first slot.
    base: u64,
    slots: VecDeque<Slot>,
    /// Slots older than `base` still unread, moved out of the ring.
    stragglers: BTreeMap<u64, Slot>,
    /// Slots not `Gone`, in the ring and among the stragglers.
    live: usize,
}

impl Pending {
    /// A record was sent with this token.
    pub(super) fn insert(&mut self, token: RecordToken) {
        if self.slots.is_empty() {
            self.base = token.0;
        }
        let Some(i) = token.0.checked_sub(self.base) else {
            debug_assert!(false, "tokens only grow");
            return;
        };
        let i = i as usize;
        while self.slots.len() < i {
            // Tokens of records refused at once (never handed out) leave free slots.
            self.slots.push_back(Slot::Gone);
        }
        if i == self.slots.len() {
            self.slots.push_back(Slot::Waiting(None));
        } else {
            self.slots[i] = Slot::Waiting(None);
        }
        self.live += 1;
    }

    fn slot(&mut self, token: RecordToken) -> Option<&mut Slot> {
        match token.0.checked_sub(self.base) {
            Some(i) => self.slots.get_mut(usize::try_from(i).ok()?),
            None => self.stragglers.get_mut(&token.0),
        }
    }

    /// Frees a slot (its outcome was taken, or nobody will read it).
    fn free(&mut self, token: RecordToken) {
        let freed = match self.slot(token) {
            Some(slot) if !matches!(slot, Slot::Gone) => {
                *slot = Slot::Gone;
                true
            }
            _ => false,
        };
        if freed {
            self.live -= 1;
            if token.0 < self.base {
                self.stragglers.remove(&token.0);
            }
        }
        self.trim();
    }

    /// A `Delivery` polls its slot.
    pub(super) fn poll(&mut self, token: RecordToken, cx: &mut Context<'_>) -> Polled {
        let outcome = match self.slot(token) {
            Some(Slot::Waiting(waker)) => {
                if !waker.as_ref().is_some_and(|w| w.will_wake(cx.waker())) {
                    *waker = Some(cx.waker().clone());
                }
                return Polled::Waiting;
            }
            Some(Slot::Gone) | None => return Polled::Missing,
            Some(slot) => slot.take(),
        };
        let Some(outcome) = outcome else {
            return Polled::Missing;
        };
        // `take` left the slot free: account for it.
        self.live -= 1;
        if token.0 < self.base {
            self.stragglers.remove(&token.0);
        }
        self.trim();
        Polled::Ready(outcome)
    }

    /// A `Delivery` was dropped unread: its slot is freed now, or when its outcome comes.
    pub(super) fn forget(&mut self, token: RecordToken) {
        self.free(token);
    }

    /// Resolves a record; returns the waker to wake once the lock is let go.
    pub(super) fn resolve(&mut self, token: RecordToken, outcome: Outcome) -> Option<Waker> {
        let slot = self.slot(token)?;
        match std::mem::replace(slot, Slot::done(outcome)) {
            Slot::Waiting(waker) => waker,
            // Its `Delivery` was dropped: nobody reads it.
            Slot::Gone => {
                *slot = Slot::Gone;
                None
            }
            Slot::Delivered(..) | Slot::Failed(_) => {
                debug_assert!(false, "a record resolved twice");
                None
            }
        }
    }

    /// Frees the slots at the front that nobody will read; once most of the ring is free,
    /// moves unread slots at its front aside, so that they do not hold the rest.
    fn trim(&mut self) {
        loop {
            while matches!(self.slots.front(), Some(Slot::Gone)) {
                self.slots.pop_front();
                self.base += 1;
            }
            let in_ring = self.live - self.stragglers.len();
            if self.slots.len() < COMPACT_MIN || self.slots.len() <= 2 * in_ring {
                return;
            }
            let Some(slot) = self.slots.pop_front() else {
                return;
            };
            self.stragglers.insert(self.base, slot);
            self.base += 1;
        }
    }

    /// Slots held in memory (the ring and the stragglers), for tests.
    #[cfg(test)]
    fn held(&self) -> usize {
        self.slots.len() + self.stragglers.len()
    }

    /// The driver is gone: every record still waiting fails as closed.
    pub(super) fn close_all(&mut self) -> Vec<Waker> {
        let mut wakers = Vec::new();
        for slot in self.slots.iter_mut().chain(self.stragglers.values_mut()) {
            if let Slot::Waiting(waker) = slot {
                wakers.extend(waker.take());
                *slot = Slot::done(closed());
            }
        }
        wakers
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn delivered(p: i32) -> Outcome {
        Outcome::Delivered {
            partition: p,
            offset: Some(7),
            timestamp: 1,
        }
    }

    #[test]
    fn a_slot_is_small_and_gives_back_the_outcome_it_took() {
        // An `Outcome` alone takes 48 or more.
        assert!(
            std::mem::size_of::<Slot>() <= 32,
            "{}",
            std::mem::size_of::<Slot>()
        );
        assert!(std::mem::size_of::<Outcome>() >= 48);
        let outcomes = [
            Outcome::Delivered {
                partition: 2,
                offset: Some(0),
                timestamp: -1,
            },
            Outcome::Delivered {
                partition: 0,
                offset: None,
                timestamp: 1_700_000_000_000,
            },
            Outcome::Failed {
                error: DeliveryError::DeliveryTimeout { last: None },
                certainty: Certainty::PossiblySent,
            },
        ];
        for outcome in outcomes {
            let mut slot = Slot::done(outcome.clone());
            assert_eq!(slot.take(), Some(outcome));
            assert!(matches!(slot, Slot::Gone), "taking frees the slot");
            assert_eq!(slot.take(), None);
        }
        let mut waiting = Slot::Waiting(None);
        assert_eq!(waiting.take(), None);
        assert!(
            matches!(waiting, Slot::Waiting(None)),
            "an unresolved slot stays"
        );
    }

    /// One `Delivery` neither awaited nor dropped pinned every younger slot: the ring was
    /// trimmed only from its front, and memory grew with every record sent after it (found by
    /// reading the code).
    #[test]
    fn one_unread_delivery_does_not_pin_the_slots_after_it() {
        let mut p = Pending::default();
        let waker = futures_util::task::noop_waker();
        let mut cx = Context::from_waker(&waker);
        p.insert(RecordToken(0)); // held unread for the whole run
        for t in 1..100_000u64 {
            p.insert(RecordToken(t));
            p.resolve(RecordToken(t), delivered(0));
            assert!(matches!(p.poll(RecordToken(t), &mut cx), Polled::Ready(_)));
        }
        assert!(p.held() <= 2 * COMPACT_MIN, "{} slots held", p.held());
        // The straggler still resolves and is read.
        p.resolve(RecordToken(0), delivered(3));
        assert!(matches!(
            p.poll(RecordToken(0), &mut cx),
            Polled::Ready(Outcome::Delivered { partition: 3, .. })
        ));
        assert_eq!(p.held(), 0);
        assert_eq!(p.live, 0);
    }

    #[test]
    fn dropped_and_waiting_deliveries_are_accounted_for() {
        let mut p = Pending::default();
        let waker = futures_util::task::noop_waker();
        let mut cx = Context::from_waker(&waker);
        for t in 0..1000u64 {
            p.insert(RecordToken(t));
        }
        // Every other one is dropped before its outcome, the rest after.
        for t in (0..1000u64).step_by(2) {
            p.forget(RecordToken(t));
        }
        for t in 0..1000u64 {
            p.resolve(RecordToken(t), delivered(0));
        }
        for t in (1..1000u64).step_by(2) {
            assert!(matches!(p.poll(RecordToken(t), &mut cx), Polled::Ready(_)));
            assert!(matches!(p.poll(RecordToken(t), &mut cx), Polled::Missing));
        }
        assert_eq!((p.held(), p.live), (0, 0));
        p.insert(RecordToken(1000));
        assert!(matches!(
            p.poll(RecordToken(1000), &mut cx),
            Polled::Waiting
        ));
        assert_eq!(p.close_all().len(), 1, "the waiting one is woken");
        assert!(matches!(
            p.poll(RecordToken(1000), &mut cx),
            Polled::Ready(Outcome::Failed {
                error: DeliveryError::Closed,
                ..
            })
        ));
    }
}
