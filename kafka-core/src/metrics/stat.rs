//! Java's windowed statistics: samples of `metrics.sample.window.ms` each, `metrics.num.samples`
//! of them kept, from which rates, averages and maxima are measured at a given `now`.

use std::time::Duration;

pub use crate::config::Window;
use crate::time::Instant;

#[derive(Debug, Clone, Copy)]
struct Sample {
    start: Instant,
    count: u64,
    sum: f64,
    max: f64,
}

impl Sample {
    fn new(start: Instant) -> Self {
        Sample {
            start,
            count: 0,
            sum: 0.0,
            max: f64::NEG_INFINITY,
        }
    }
}

/// One sensor's windowed samples, and its total since creation. One structure serves every
/// measure Java keeps separately (rate, average, maximum, cumulative total): each sample keeps
/// the count, sum and maximum of the values recorded in it.
#[derive(Debug, Clone, Default)]
pub struct Stat {
    samples: Vec<Sample>,
    current: usize,
    total: f64,
    events: u64,
}

/// Values gathered to be recorded at once (see [`Stat::record_all`]).
#[derive(Debug, Clone, Copy)]
pub struct Values {
    count: u64,
    sum: f64,
    max: f64,
}

impl Default for Values {
    fn default() -> Self {
        Values {
            count: 0,
            sum: 0.0,
            max: f64::NEG_INFINITY,
        }
    }
}

impl Values {
    /// Adds one value.
    #[inline]
    pub fn add(&mut self, value: f64) {
        self.count += 1;
        self.sum += value;
        if value > self.max {
            self.max = value;
        }
    }
}

/// What the live samples of a [`Stat`] add up to at some `now`.
struct Live {
    count: u64,
    sum: f64,
    max: f64,
    oldest: Option<Instant>,
}

impl Stat {
    /// Records one value at `now`. Compiled to nothing without the `metrics` feature.
    #[inline]
    pub fn record(&mut self, value: f64, now: Instant, w: Window) {
        self.record_all(
            &Values {
                count: 1,
                sum: value,
                max: value,
            },
            now,
            w,
        );
    }

    /// Records several values at once, all at `now`: the same samples as recording each.
    #[inline]
    pub fn record_all(&mut self, v: &Values, now: Instant, w: Window) {
        if !cfg!(feature = "record-metrics") || v.count == 0 {
            return;
        }
        self.total += v.sum;
        self.events += v.count;
        let n = w.samples.max(1) as usize;
        match self.samples.get(self.current) {
            None => self.samples.push(Sample::new(now)),
            Some(s) if now.saturating_duration_since(s.start) >= w.length => {
                // The current sample is complete: the next one starts now, reusing the
                // oldest slot once all are in use.
                self.current = (self.current + 1) % n;
                match self.samples.get_mut(self.current) {
                    Some(slot) => *slot = Sample::new(now),
                    None => self.samples.push(Sample::new(now)),
                }
            }
            Some(_) => {}
        }
        let s = &mut self.samples[self.current];
        s.count += v.count;
        s.sum += v.sum;
        if v.max > s.max {
            s.max = v.max;
        }
    }

    /// The samples not yet obsolete at `now` (started less than `samples × length` ago).
    fn live(&self, now: Instant, w: Window) -> Live {
        let span = w.length * w.samples.max(1);
        let mut l = Live {
            count: 0,
            sum: 0.0,
            max: f64::NEG_INFINITY,
            oldest: None,
        };
        for s in &self.samples {
            if now.saturating_duration_since(s.start) >= span {
                continue;
            }
            l.count += s.count;
            l.sum += s.sum;
            l.max = l.max.max(s.max);
            l.oldest = Some(l.oldest.map_or(s.start, |o: Instant| o.min(s.start)));
        }
        l
    }

    /// Values per second over the live samples, Java's `Rate`: the elapsed time runs from the
    /// oldest live sample's start, and counts at least `samples - 1` whole windows, so that a
    /// rate measured just after a quiet spell does not jump.
    pub fn rate(&self, now: Instant, w: Window) -> f64 {
        let l = self.live(now, w);
        l.sum / Self::elapsed(&l, now, w)
    }

    /// Events (not values) per second: Java's `Rate` over a `WindowedCount`.
    pub fn event_rate(&self, now: Instant, w: Window) -> f64 {
        let l = self.live(now, w);
        l.count as f64 / Self::elapsed(&l, now, w)
    }

    /// The seconds a rate divides by (at least a millisecond).
    fn elapsed(l: &Live, now: Instant, w: Window) -> f64 {
        let mut elapsed = l
            .oldest
            .map_or(Duration::ZERO, |o| now.saturating_duration_since(o));
        let full = (elapsed.as_nanos() / w.length.as_nanos().max(1)) as u32;
        let min_full = w.samples.max(1) - 1;
        if full < min_full {
            elapsed += w.length * (min_full - full);
        }
        elapsed.as_secs_f64().max(0.001)
    }

    /// The average of the live samples' values (NaN when none, as Java's `Avg`).
    pub fn avg(&self, now: Instant, w: Window) -> f64 {
        let l = self.live(now, w);
        if l.count == 0 {
            f64::NAN
        } else {
            l.sum / l.count as f64
        }
    }

    /// The maximum of the live samples' values (NaN when none, as Java's `Max`).
    pub fn max(&self, now: Instant, w: Window) -> f64 {
        let l = self.live(now, w);
        if l.count == 0 {
            f64::NAN
        } else {
            l.max
        }
    }

    /// The sum of every value ever recorded (Java's `CumulativeSum`).
    pub fn total(&self) -> f64 {
        self.total
    }

    /// How many values were ever recorded (Java's `CumulativeCount`).
    pub fn events(&self) -> u64 {
        self.events
    }
}

#[cfg(all(test, feature = "record-metrics"))]
mod tests {
    use super::*;

    fn at(ms: u64) -> Instant {
        Instant::from_millis(ms)
    }

    #[test]
    fn rate_counts_at_least_the_full_windows_java_does() {
        let w = Window::default();
        let mut s = Stat::default();
        s.record(30.0, at(0), w);
        // One sample, 10 s old: the elapsed time is 10 s plus one whole window (30 s).
        assert_eq!(s.rate(at(10_000), w), 30.0 / 40.0);
        s.record(30.0, at(35_000), w);
        // Two samples, the oldest started 40 s ago: one full window, so no padding.
        assert_eq!(s.rate(at(40_000), w), 60.0 / 40.0);
        assert_eq!(s.total(), 60.0);
        assert_eq!(s.events(), 2);
    }

    #[test]
    fn old_samples_fall_out_of_avg_and_max() {
        let w = Window::default();
        let mut s = Stat::default();
        assert!(s.avg(at(0), w).is_nan());
        s.record(10.0, at(0), w);
        s.record(2.0, at(1), w);
        assert_eq!(s.avg(at(2), w), 6.0);
        assert_eq!(s.max(at(2), w), 10.0);
        s.record(4.0, at(31_000), w);
        assert_eq!(s.max(at(59_999), w), 10.0);
        // 60 s after the first sample started, it is obsolete.
        assert_eq!(s.max(at(60_000), w), 4.0);
        assert_eq!(s.avg(at(60_000), w), 4.0);
        // The third sample reuses the first one's slot.
        s.record(1.0, at(62_000), w);
        assert_eq!(s.max(at(62_000), w), 4.0);
        assert!(s.max(at(200_000), w).is_nan());
        assert_eq!(s.rate(at(200_000), w), 0.0);
        assert_eq!(s.total(), 17.0);
    }

    #[test]
    fn event_rate_counts_events_not_values() {
        let w = Window {
            length: Duration::from_secs(1),
            samples: 2,
        };
        let mut s = Stat::default();
        for i in 0..10 {
            s.record(100.0, at(i * 100), w);
        }
        // Ten events between 0 and 1 s, measured at 1 s: over 1 s (the oldest sample's age,
        // already one whole window).
        assert!((s.event_rate(at(1000), w) - 10.0).abs() < 1e-9);
        assert!((s.rate(at(1000), w) - 1000.0).abs() < 1e-9);
    }
}
