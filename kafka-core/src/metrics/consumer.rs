//! The consumer's metrics: Java's `consumer-fetch-manager-metrics` (client-wide, per topic and
//! per partition), `consumer-coordinator-metrics` (commits, rebalances) and the poll figures of
//! `consumer-metrics`.

use std::collections::BTreeMap;

use super::stat::{Stat, Window};
use super::Out;
use crate::time::Instant;

const FETCH: &str = "consumer-fetch-manager-metrics";
const COORD: &str = "consumer-coordinator-metrics";
const CONSUMER: &str = "consumer-metrics";

#[derive(Debug, Clone, Default)]
struct TopicStats {
    records: Stat,
    bytes: Stat,
}

#[derive(Debug, Clone, Default)]
struct PartitionLag {
    lag: Stat,
    last: f64,
}

/// The consumer's figures; see the module docs.
#[derive(Debug, Clone, Default)]
pub(crate) struct ConsumerMetrics {
    window: Window,
    /// Records the application took, per poll report.
    records: Stat,
    /// Bytes of record batches handed to the application.
    bytes: Stat,
    /// Milliseconds from a Fetch request to its response.
    fetch_latency: Stat,
    /// Bytes per Fetch response.
    fetch_size: Stat,
    /// The lag of every partition at each fetch (for `records-lag-max`).
    lag: Stat,
    topics: BTreeMap<String, TopicStats>,
    /// By topic, then partition: looked up by the topic's name without copying it.
    partitions: BTreeMap<String, BTreeMap<i32, PartitionLag>>,
    commit_latency: Stat,
    commit_sent: Option<Instant>,
    rebalance_latency: Stat,
    rebalance_started: Option<Instant>,
    last_rebalance: Option<Instant>,
    failed_rebalances: u64,
    last_poll: Option<Instant>,
    poll_gap: Stat,
}

impl ConsumerMetrics {
    pub(crate) fn new(window: Window) -> Self {
        ConsumerMetrics {
            window,
            ..Default::default()
        }
    }

    fn topic(&mut self, topic: &str) -> &mut TopicStats {
        super::named(&mut self.topics, topic)
    }

    /// The application took `records` records of `topic`.
    pub(crate) fn consumed(&mut self, topic: &str, records: u64, now: Instant) {
        if !cfg!(feature = "record-metrics") || records == 0 {
            return;
        }
        let w = self.window;
        self.records.record(records as f64, now, w);
        self.topic(topic).records.record(records as f64, now, w);
    }

    /// Record batches of `bytes` bytes of `topic` went to the application.
    pub(crate) fn handed(&mut self, topic: &str, bytes: usize, now: Instant) {
        if !cfg!(feature = "record-metrics") || bytes == 0 {
            return;
        }
        let w = self.window;
        self.bytes.record(bytes as f64, now, w);
        self.topic(topic).bytes.record(bytes as f64, now, w);
    }

    /// A Fetch sent at `sent` was answered with `bytes` bytes of records.
    pub(crate) fn fetched(&mut self, sent: Instant, bytes: usize, now: Instant) {
        let w = self.window;
        let ms = now.saturating_duration_since(sent).as_secs_f64() * 1e3;
        self.fetch_latency.record(ms, now, w);
        self.fetch_size.record(bytes as f64, now, w);
    }

    /// A partition's lag (high watermark minus the next offset to fetch) after a fetch.
    pub(crate) fn lag(&mut self, topic: &str, partition: i32, lag: i64, now: Instant) {
        if !cfg!(feature = "record-metrics") {
            return;
        }
        let w = self.window;
        let lag = lag.max(0) as f64;
        self.lag.record(lag, now, w);
        // Every partition of every fetch response: the topic name is copied only when new.
        let p = super::named(&mut self.partitions, topic)
            .entry(partition)
            .or_default();
        p.lag.record(lag, now, w);
        p.last = lag;
    }

    pub(crate) fn commit_sent(&mut self, now: Instant) {
        self.commit_sent = Some(now);
    }

    pub(crate) fn commit_answered(&mut self, now: Instant) {
        if let Some(sent) = self.commit_sent.take() {
            let ms = now.saturating_duration_since(sent).as_secs_f64() * 1e3;
            self.commit_latency.record(ms, now, self.window);
        }
    }

    /// The membership's state as of `now`: whether it is in a stable group. A rebalance runs
    /// from the moment an active member stops being stable until it is stable again.
    pub(crate) fn membership(&mut self, active: bool, stable: bool, now: Instant) {
        match (active && !stable, self.rebalance_started) {
            (true, None) => {
                tracing::info!("rebalance started");
                self.rebalance_started = Some(now)
            }
            (false, Some(start)) => {
                self.rebalance_started = None;
                if stable {
                    let ms = now.saturating_duration_since(start).as_secs_f64() * 1e3;
                    tracing::info!(latency_ms = ms, "rebalance completed");
                    self.rebalance_latency.record(ms, now, self.window);
                    self.last_rebalance = Some(now);
                } else {
                    tracing::info!("rebalance ended without a stable group");
                    self.failed_rebalances += 1;
                }
            }
            _ => {}
        }
    }

    /// A commit failed to get an answer.
    pub(crate) fn commit_failed(&mut self) {
        self.commit_sent = None;
    }

    /// The application polled at `at`.
    pub(crate) fn polled(&mut self, at: Instant) {
        if let Some(last) = self.last_poll {
            if at <= last {
                return;
            }
            let ms = at.saturating_duration_since(last).as_secs_f64() * 1e3;
            self.poll_gap.record(ms, at, self.window);
        }
        self.last_poll = Some(at);
    }

    /// Adds the consumer's figures; `assigned` is how many partitions it fetches, and
    /// `fetched` says which: only those have per-partition metrics, as in Java.
    pub(crate) fn snapshot(
        &self,
        out: &mut Out<'_>,
        assigned: usize,
        group: bool,
        fetched: impl Fn(&str, i32) -> bool,
    ) {
        let (now, w) = (out.now, out.window);
        out.meter(
            FETCH,
            "records-consumed-rate",
            "records-consumed-total",
            &[],
            &self.records,
        );
        out.meter(
            FETCH,
            "bytes-consumed-rate",
            "bytes-consumed-total",
            &[],
            &self.bytes,
        );
        out.avg_max(
            FETCH,
            "fetch-latency-avg",
            "fetch-latency-max",
            &[],
            &self.fetch_latency,
        );
        out.event_meter(FETCH, "fetch-rate", "fetch-total", &[], &self.fetch_size);
        out.avg_max(
            FETCH,
            "fetch-size-avg",
            "fetch-size-max",
            &[],
            &self.fetch_size,
        );
        out.gauge(FETCH, "records-lag-max", &[], self.lag.max(now, w));
        for (topic, t) in &self.topics {
            let tags = [("topic", topic.as_str())];
            out.meter(
                FETCH,
                "records-consumed-rate",
                "records-consumed-total",
                &tags,
                &t.records,
            );
            out.meter(
                FETCH,
                "bytes-consumed-rate",
                "bytes-consumed-total",
                &tags,
                &t.bytes,
            );
        }
        let partitions = self
            .partitions
            .iter()
            .flat_map(|(t, ps)| ps.iter().map(move |(p, lag)| (t, p, lag)));
        for (topic, partition, p) in partitions {
            if !fetched(topic, *partition) {
                continue;
            }
            let partition = partition.to_string();
            let tags = [("topic", topic.as_str()), ("partition", partition.as_str())];
            out.gauge(FETCH, "records-lag", &tags, p.last);
            out.avg_max(FETCH, "records-lag-avg", "records-lag-max", &tags, &p.lag);
        }
        let seconds_since = |t: Option<Instant>| {
            t.map_or(-1.0, |t| {
                now.saturating_duration_since(t).as_secs_f64().floor()
            })
        };
        out.gauge(
            CONSUMER,
            "last-poll-seconds-ago",
            &[],
            seconds_since(self.last_poll),
        );
        out.avg_max(
            CONSUMER,
            "time-between-poll-avg",
            "time-between-poll-max",
            &[],
            &self.poll_gap,
        );
        if group {
            out.avg_max(
                COORD,
                "commit-latency-avg",
                "commit-latency-max",
                &[],
                &self.commit_latency,
            );
            out.event_meter(
                COORD,
                "commit-rate",
                "commit-total",
                &[],
                &self.commit_latency,
            );
            out.avg_max(
                COORD,
                "rebalance-latency-avg",
                "rebalance-latency-max",
                &[],
                &self.rebalance_latency,
            );
            out.sum(
                COORD,
                "rebalance-latency-total",
                &[],
                self.rebalance_latency.total(),
            );
            out.sum(
                COORD,
                "rebalance-total",
                &[],
                self.rebalance_latency.events() as f64,
            );
            // Java's per-hour rate: the windowed event rate, scaled.
            let per_hour = self.rebalance_latency.event_rate(now, w) * 3600.0;
            out.gauge(COORD, "rebalance-rate-per-hour", &[], per_hour);
            out.sum(
                COORD,
                "failed-rebalance-total",
                &[],
                self.failed_rebalances as f64,
            );
            out.gauge(
                COORD,
                "last-rebalance-seconds-ago",
                &[],
                seconds_since(self.last_rebalance),
            );
            out.gauge(COORD, "assigned-partitions", &[], assigned as f64);
        }
    }
}
