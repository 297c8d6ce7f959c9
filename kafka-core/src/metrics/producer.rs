//! The producer's metrics: Java's `producer-metrics` (sender and buffer figures) and
//! `producer-topic-metrics`, recorded per batch, never per record, so that they cost nothing
//! measurable on the send path.

use std::collections::BTreeMap;

use super::stat::{Stat, Values, Window};
use super::Out;
use crate::time::Instant;
use crate::topic::Topic;

const GROUP: &str = "producer-metrics";
const TOPIC_GROUP: &str = "producer-topic-metrics";

#[derive(Debug, Clone, Default)]
struct TopicStats {
    /// Records per sent batch.
    records: Stat,
    /// Bytes per sent batch.
    bytes: Stat,
    errors: Stat,
    retries: Stat,
    compression: Stat,
}

/// The producer's figures; see the module docs.
#[derive(Debug, Clone, Default)]
pub(crate) struct ProducerMetrics {
    window: Window,
    /// Records per batch sent (every attempt, as Java counts them).
    records: Stat,
    errors: Stat,
    retries: Stat,
    /// Bytes of each batch, at its first send.
    batch_size: Stat,
    /// Compressed over uncompressed size, per batch.
    compression: Stat,
    /// Records per Produce request.
    records_per_request: Stat,
    /// Milliseconds from a batch's creation to its first send.
    queue_time: Stat,
    /// Milliseconds of throttling the brokers asked for, per response.
    throttle: Stat,
    /// Nanoseconds sends waited for buffer memory.
    buffer_wait_ns: f64,
    topics: BTreeMap<String, TopicStats>,
    /// The figures of the batches going into the request being written, recorded together
    /// once it is (see [`ProducerMetrics::batches_sent`]).
    pending: Tally,
}

/// The batches of one request, tallied. They are all sent at the same instant, so recording
/// them together gives the same samples as recording each; at 10,000 partitions, where a batch
/// holds about one record, seven recordings and a topic lookup per batch were a tenth of the
/// producer's instructions.
#[derive(Debug, Clone, Default)]
struct Tally {
    records: Values,
    batch_size: Values,
    queue_time: Values,
    compression: Values,
    /// By topic, in the order first seen (a request's batches come grouped by topic).
    topics: Vec<(Topic, TopicTally)>,
}

#[derive(Debug, Clone, Default)]
struct TopicTally {
    records: Values,
    bytes: Values,
    compression: Values,
}

/// One batch's figures at a send.
pub(crate) struct BatchSent<'a> {
    pub topic: &'a Topic,
    pub records: usize,
    pub bytes: usize,
    /// Set at its first send only.
    pub first: Option<FirstSend>,
}

/// What is measured once per batch.
pub(crate) struct FirstSend {
    pub uncompressed: usize,
    pub queue_ms: f64,
}

impl ProducerMetrics {
    pub(crate) fn new(window: Window) -> Self {
        ProducerMetrics {
            window,
            ..Default::default()
        }
    }

    fn topic(&mut self, topic: &str) -> &mut TopicStats {
        super::named(&mut self.topics, topic)
    }

    /// Tallies a batch going into the request being written (see [`Self::batches_sent`]).
    #[inline]
    pub(crate) fn batch_sent(&mut self, b: BatchSent<'_>) {
        if !cfg!(feature = "record-metrics") {
            return;
        }
        let p = &mut self.pending;
        p.records.add(b.records as f64);
        let ratio = b
            .first
            .as_ref()
            .map(|f| b.bytes as f64 / f.uncompressed.max(1) as f64);
        if let Some(f) = &b.first {
            p.batch_size.add(b.bytes as f64);
            p.queue_time.add(f.queue_ms);
            p.compression.add(ratio.unwrap_or(1.0));
        }
        let t = match p.topics.iter().rposition(|(t, _)| t == b.topic) {
            Some(at) => &mut p.topics[at].1,
            None => {
                p.topics.push((b.topic.clone(), TopicTally::default()));
                &mut p.topics.last_mut().expect("pushed").1
            }
        };
        t.records.add(b.records as f64);
        t.bytes.add(b.bytes as f64);
        if let Some(r) = ratio {
            t.compression.add(r);
        }
    }

    /// Records the batches tallied since the last call, all sent at `now`.
    pub(crate) fn batches_sent(&mut self, now: Instant) {
        if !cfg!(feature = "record-metrics") {
            return;
        }
        let w = self.window;
        let mut p = std::mem::take(&mut self.pending);
        self.records.record_all(&p.records, now, w);
        self.batch_size.record_all(&p.batch_size, now, w);
        self.queue_time.record_all(&p.queue_time, now, w);
        self.compression.record_all(&p.compression, now, w);
        for (topic, tally) in p.topics.drain(..) {
            let t = self.topic(&topic);
            t.records.record_all(&tally.records, now, w);
            t.bytes.record_all(&tally.bytes, now, w);
            t.compression.record_all(&tally.compression, now, w);
        }
        // Keep the list's room for the next request.
        self.pending = Tally {
            topics: p.topics,
            ..Tally::default()
        };
    }

    pub(crate) fn request_sent(&mut self, records: usize, now: Instant) {
        self.records_per_request
            .record(records as f64, now, self.window);
    }

    pub(crate) fn failed(&mut self, topic: &str, records: usize, now: Instant) {
        if !cfg!(feature = "record-metrics") {
            return;
        }
        let w = self.window;
        self.errors.record(records as f64, now, w);
        self.topic(topic).errors.record(records as f64, now, w);
    }

    pub(crate) fn retried(&mut self, topic: &str, records: usize, now: Instant) {
        if !cfg!(feature = "record-metrics") {
            return;
        }
        let w = self.window;
        self.retries.record(records as f64, now, w);
        self.topic(topic).retries.record(records as f64, now, w);
    }

    pub(crate) fn throttled(&mut self, ms: i32, now: Instant) {
        self.throttle.record(f64::from(ms.max(0)), now, self.window);
    }

    pub(crate) fn buffer_waited(&mut self, waited: std::time::Duration) {
        if cfg!(feature = "record-metrics") {
            self.buffer_wait_ns += waited.as_nanos() as f64;
        }
    }

    /// Adds the producer's figures; `available` and `total` are the buffer's bytes.
    pub(crate) fn snapshot(&self, out: &mut Out<'_>, available: usize, total: usize) {
        let g = GROUP;
        out.meter(
            g,
            "record-send-rate",
            "record-send-total",
            &[],
            &self.records,
        );
        out.meter(
            g,
            "record-error-rate",
            "record-error-total",
            &[],
            &self.errors,
        );
        out.meter(
            g,
            "record-retry-rate",
            "record-retry-total",
            &[],
            &self.retries,
        );
        out.avg_max(g, "batch-size-avg", "batch-size-max", &[], &self.batch_size);
        out.avg(g, "compression-rate-avg", &[], &self.compression);
        out.avg(g, "records-per-request-avg", &[], &self.records_per_request);
        out.avg_max(
            g,
            "record-queue-time-avg",
            "record-queue-time-max",
            &[],
            &self.queue_time,
        );
        out.avg_max(
            g,
            "produce-throttle-time-avg",
            "produce-throttle-time-max",
            &[],
            &self.throttle,
        );
        out.gauge(g, "buffer-available-bytes", &[], available as f64);
        out.gauge(g, "buffer-total-bytes", &[], total as f64);
        // Java keeps the older name (deprecated, also in nanoseconds) beside the new one.
        out.sum(g, "bufferpool-wait-time-total", &[], self.buffer_wait_ns);
        out.sum(g, "bufferpool-wait-time-ns-total", &[], self.buffer_wait_ns);
        for (topic, t) in &self.topics {
            let tags = [("topic", topic.as_str())];
            let tg = TOPIC_GROUP;
            out.meter(
                tg,
                "record-send-rate",
                "record-send-total",
                &tags,
                &t.records,
            );
            out.meter(tg, "byte-rate", "byte-total", &tags, &t.bytes);
            out.meter(
                tg,
                "record-error-rate",
                "record-error-total",
                &tags,
                &t.errors,
            );
            out.meter(
                tg,
                "record-retry-rate",
                "record-retry-total",
                &tags,
                &t.retries,
            );
            out.avg(tg, "compression-rate", &tags, &t.compression);
        }
    }
}
