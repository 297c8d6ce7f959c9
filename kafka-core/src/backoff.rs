//! Exponential backoff with jitter, as Java's `ExponentialBackoff`: `base * 2^attempt`, capped at
//! `max`, then scaled by a random factor in `[1 - jitter, 1 + jitter]` drawn from the seeded RNG.

use std::time::Duration;

use crate::rng::Rng;

/// The jitter Java applies to reconnect, retry and connection-setup backoffs: ±20%.
pub const JITTER: f64 = 0.2;

/// An exponential backoff policy.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Backoff {
    base: Duration,
    max: Duration,
    jitter: f64,
}

impl Backoff {
    /// The first delay, before jitter.
    pub fn base(&self) -> Duration {
        self.base
    }

    /// Backoff from `base`, doubling per attempt up to `max`, with ±20% jitter.
    pub fn new(base: Duration, max: Duration) -> Self {
        Backoff {
            base,
            max: max.max(base),
            jitter: JITTER,
        }
    }

    /// The un-jittered delay after `attempt` failures (attempt 0 is the first retry).
    pub fn nominal(&self, attempt: u32) -> Duration {
        if self.base.is_zero() {
            return Duration::ZERO;
        }
        let factor = 2u64.saturating_pow(attempt.min(62));
        let ms = (self.base.as_millis() as u64).saturating_mul(factor);
        Duration::from_millis(ms).min(self.max)
    }

    /// The delay after `attempt` failures, jittered.
    pub fn delay(&self, attempt: u32, rng: &mut Rng) -> Duration {
        let nominal = self.nominal(attempt);
        let scale = 1.0 - self.jitter + 2.0 * self.jitter * rng.unit();
        nominal.mul_f64(scale)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grows_exponentially_to_the_cap() {
        let b = Backoff::new(Duration::from_millis(50), Duration::from_millis(1000));
        let nominal: Vec<u64> = (0..7).map(|a| b.nominal(a).as_millis() as u64).collect();
        assert_eq!(nominal, [50, 100, 200, 400, 800, 1000, 1000]);
        assert_eq!(b.nominal(u32::MAX), Duration::from_millis(1000));
    }

    #[test]
    fn jitter_stays_within_twenty_percent_and_uses_the_range() {
        let b = Backoff::new(Duration::from_millis(100), Duration::from_millis(100));
        let mut rng = Rng::new(1);
        let (mut lo, mut hi) = (u128::MAX, 0);
        for _ in 0..10_000 {
            let d = b.delay(0, &mut rng).as_micros();
            assert!((80_000..=120_000).contains(&d), "{d}");
            lo = lo.min(d);
            hi = hi.max(d);
        }
        assert!(
            lo < 81_000 && hi > 119_000,
            "jitter should span the range: {lo}..{hi}"
        );
    }

    #[test]
    fn a_cap_below_the_base_means_no_growth() {
        let b = Backoff::new(Duration::from_millis(100), Duration::from_millis(10));
        assert_eq!(b.nominal(3), Duration::from_millis(100));
    }
}
