//! When to start over from `bootstrap.servers` (KIP-899, KIP-1102), for every client alike:
//! no known broker reachable, a broker answering REBOOTSTRAP_REQUIRED, or no metadata for
//! `metadata.recovery.rebootstrap.trigger.ms`.

use std::time::Duration;

use crate::time::Instant;

/// How long the client has gone without metadata, in the two ways KIP-1102 counts.
///
/// The trigger is kept lazily: [`Rebootstrap::handle_timeout`] only marks it due, and
/// [`super::Network::least_loaded`] (called when the client wants a broker) starts over. A
/// client that wants no metadata then is not made to drop the nodes it knows, and a deadline
/// once passed is not returned again (no wakeup loop).
#[derive(Debug, Default)]
pub(super) struct Rebootstrap {
    /// Since when `least_loaded` has found no broker to ask.
    unreachable_since: Option<Instant>,
    /// Since when a Metadata request has been sent with no good answer (it failed, timed
    /// out, or answered with an error, and the retries too).
    unanswered_since: Option<Instant>,
    /// The trigger passed: the next `least_loaded` starts over.
    due: bool,
}

impl Rebootstrap {
    /// `least_loaded` found a broker to ask, or none.
    pub(super) fn broker_found(&mut self, found: bool, now: Instant) {
        if found {
            self.unreachable_since = None;
        } else {
            self.unreachable_since.get_or_insert(now);
        }
    }

    /// A Metadata request went out.
    pub(super) fn metadata_sent(&mut self, now: Instant) {
        self.unanswered_since.get_or_insert(now);
    }

    /// A Metadata request was answered without a top-level error.
    pub(super) fn metadata_answered(&mut self) {
        self.unanswered_since = None;
    }

    /// When the trigger passes, if it is counting.
    pub(super) fn deadline(&self, trigger: Duration) -> Option<Instant> {
        let since = match (self.unreachable_since, self.unanswered_since) {
            (Some(a), Some(b)) => a.min(b),
            (a, b) => a.or(b)?,
        };
        Some(since + trigger)
    }

    /// Marks the rebootstrap due if the trigger has passed.
    pub(super) fn handle_timeout(&mut self, trigger: Duration, now: Instant) {
        if self.deadline(trigger).is_some_and(|t| t <= now) {
            self.due = true;
            self.unreachable_since = None;
            self.unanswered_since = None;
        }
    }

    /// Whether the client should start over now; taking it resets the count.
    pub(super) fn take_due(&mut self) -> bool {
        std::mem::take(&mut self.due)
    }

    /// The client started over: every count begins again.
    pub(super) fn reset(&mut self) {
        *self = Rebootstrap::default();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TRIGGER: Duration = Duration::from_secs(300);

    #[test]
    fn due_after_the_trigger_without_a_broker_or_an_answer() {
        let t0 = Instant::ZERO;
        let mut r = Rebootstrap::default();
        assert_eq!(r.deadline(TRIGGER), None);
        r.broker_found(false, t0);
        r.broker_found(false, t0 + Duration::from_secs(10));
        assert_eq!(
            r.deadline(TRIGGER),
            Some(t0 + TRIGGER),
            "counted from the first"
        );
        r.handle_timeout(TRIGGER, t0 + (TRIGGER - Duration::from_millis(1)));
        assert!(!r.take_due());
        r.handle_timeout(TRIGGER, t0 + TRIGGER);
        assert_eq!(r.deadline(TRIGGER), None, "no wakeup once passed");
        assert!(r.take_due());
        assert!(!r.take_due(), "once");
    }

    #[test]
    fn a_broker_or_an_answer_stops_the_count() {
        let t0 = Instant::ZERO;
        let mut r = Rebootstrap::default();
        r.broker_found(false, t0);
        r.broker_found(true, t0 + Duration::from_secs(1));
        assert_eq!(r.deadline(TRIGGER), None);
        r.metadata_sent(t0 + Duration::from_secs(2));
        r.metadata_sent(t0 + Duration::from_secs(3));
        assert_eq!(
            r.deadline(TRIGGER),
            Some(t0 + Duration::from_secs(2) + TRIGGER)
        );
        r.metadata_answered();
        r.handle_timeout(TRIGGER, t0 + Duration::from_secs(1000));
        assert!(!r.take_due());
    }
}
