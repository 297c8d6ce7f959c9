//! When some partition's timer may fire: its fetch backoff ending, or its missing leader due
//! to be reported again, earliest first, so that `poll_timeout` answers without reading every
//! partition (it read all of them on every call, a fifth of a core simulation seed).

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use crate::time::Instant;

/// The instants partition timers were set to. A timer cleared or moved before its time leaves
/// its entry behind: that costs one early wakeup, in which nothing is due, and the entry goes
/// once passed ([`PartTimers::prune`]). Never missing one is what matters: every setting of a
/// partition's `retry_at` or `unknown_since` pushes its instant.
#[derive(Debug, Default)]
pub(super) struct PartTimers(BinaryHeap<Reverse<Instant>>);

impl PartTimers {
    /// A partition's timer fires at `at`.
    pub(super) fn push(&mut self, at: Instant) {
        self.0.push(Reverse(at));
    }

    /// Forgets the instants up to `now`.
    pub(super) fn prune(&mut self, now: Instant) {
        while self.0.peek().is_some_and(|Reverse(t)| *t <= now) {
            self.0.pop();
        }
    }

    /// The earliest instant after `now`: the top, unless entries up to `now` are still there
    /// (pushed since the last prune, at a zero backoff), when all are read.
    pub(super) fn next_after(&self, now: Instant) -> Option<Instant> {
        match self.0.peek() {
            Some(Reverse(t)) if *t > now => Some(*t),
            None => None,
            Some(_) => self
                .0
                .iter()
                .map(|Reverse(t)| *t)
                .filter(|t| *t > now)
                .min(),
        }
    }
}
