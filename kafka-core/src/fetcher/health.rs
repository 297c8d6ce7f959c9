//! What the fetcher reports when it cannot make progress, rather than waiting silently:
//! partitions with no known leader (a topic or partition that does not exist, or brokers that
//! are down), and a cluster that never answered. Each is reported once per
//! `default.api.timeout.ms`, naming the last connection problem, and the fetcher keeps trying.

use super::{Consumer, FetchError, FetchEvent};
use crate::time::Instant;

impl Consumer {
    /// Whether the consumer has anything to do on the cluster.
    fn has_work(&self) -> bool {
        !self.parts.is_empty() || self.is_group_member()
    }

    pub(super) fn check_health(&mut self, now: Instant) {
        let timeout = self.cfg.default_api_timeout;
        let last = self.net.last_problem().map(str::to_owned);
        if self.has_work() && self.metadata.refreshed_at().is_none() {
            let since = *self.unreachable_since.get_or_insert(now);
            if now >= since + timeout {
                self.unreachable_since = Some(now);
                self.events
                    .push_back(FetchEvent::Unreachable { last: last.clone() });
            }
        } else {
            self.unreachable_since = None;
        }
        // Partitions are judged only once metadata has been heard at all (before that, the
        // cluster is unreachable, which is reported above).
        if self.metadata.refreshed_at().is_none() {
            return;
        }
        for (tp, p) in self.parts.iter_mut() {
            if p.stopped || self.metadata.leader(&tp.0, tp.1).is_some() {
                p.unknown_since = None;
                continue;
            }
            let since = match p.unknown_since {
                Some(since) => since,
                None => {
                    p.unknown_since = Some(now);
                    self.part_timers.push(now + timeout);
                    now
                }
            };
            if now >= since + timeout {
                p.unknown_since = Some(now);
                self.part_timers.push(now + timeout);
                self.events.push_back(FetchEvent::Error {
                    topic: tp.0.clone(),
                    partition: tp.1,
                    error: FetchError::NotAvailable { last: last.clone() },
                });
            }
        }
    }

    /// The next report due of an unreachable cluster, if any (a partition's comes from
    /// `part_timers`).
    pub(super) fn health_timeout(&self) -> Option<Instant> {
        self.unreachable_since
            .map(|t| t + self.cfg.default_api_timeout)
    }

    /// The earliest partition timer to come, read from every partition: what `part_timers`
    /// must never be later than (checked in debug builds, which the simulations run).
    pub(super) fn part_timers_scanned(&self) -> Option<Instant> {
        let timeout = self.cfg.default_api_timeout;
        let retries = self.parts.values().filter_map(|p| p.retry_at);
        let unknown = self.parts.values().filter_map(|p| p.unknown_since);
        retries
            .chain(unknown.map(|t| t + timeout))
            .filter(|t| *t > self.now)
            .min()
    }
}
