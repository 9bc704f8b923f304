//! Jittered exponential backoff ("full jitter"), with the randomness passed in.

use crate::Entropy;

/// Delay before reconnect attempt `n` (0-based): a uniform draw from
/// `[min_ms, min(max_ms, base_ms * factor^n)]`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Backoff {
    pub base_ms: u64,
    pub max_ms: u64,
    pub factor: f64,
    /// The smallest delay ever returned (keeps reconnect storms from hitting at 0 ms).
    pub min_ms: u64,
}

impl Default for Backoff {
    fn default() -> Self {
        Backoff {
            base_ms: 500,
            max_ms: 30_000,
            factor: 2.0,
            min_ms: 100,
        }
    }
}

impl Backoff {
    /// The upper bound of the draw for attempt `n`, before jitter.
    pub fn ceiling(&self, attempt: u32) -> u64 {
        let exp = self.factor.max(1.0).powi(attempt.min(64) as i32);
        // `0 × ∞` is NaN, and `NaN.min(max)` is `max`: a zero base stays zero.
        let raw = match self.base_ms {
            0 => 0.0,
            base => (base as f64 * exp).min(self.max_ms as f64),
        };
        (raw as u64).max(self.min_ms)
    }

    /// The jittered delay for attempt `n`.
    pub fn delay(&self, attempt: u32, entropy: &mut dyn Entropy) -> u64 {
        let hi = self.ceiling(attempt);
        let lo = self.min_ms.min(hi);
        let draw = entropy.next_u64();
        // `hi - lo + 1` overflows only for the whole u64 range, where any draw is in bounds.
        lo + (hi - lo).checked_add(1).map_or(draw, |span| draw % span)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::SeededEntropy;

    #[test]
    fn grows_then_caps_and_stays_in_bounds() {
        let b = Backoff::default();
        assert_eq!(b.ceiling(0), 500);
        assert_eq!(b.ceiling(1), 1000);
        assert_eq!(b.ceiling(10), 30_000);
        assert_eq!(b.ceiling(u32::MAX), 30_000);
        let mut e = SeededEntropy::new(3);
        for n in 0..20 {
            let d = b.delay(n, &mut e);
            assert!((100..=b.ceiling(n)).contains(&d), "{n}: {d}");
        }
    }

    #[test]
    fn jitter_differs_between_draws() {
        let b = Backoff::default();
        let mut e = SeededEntropy::new(9);
        let draws: Vec<u64> = (0..8).map(|_| b.delay(6, &mut e)).collect();
        assert!(draws.windows(2).any(|w| w[0] != w[1]));
    }

    #[test]
    fn an_uncapped_range_from_zero_does_not_overflow() {
        let b = Backoff {
            base_ms: 500,
            max_ms: u64::MAX,
            factor: 2.0,
            min_ms: 0,
        };
        let mut e = SeededEntropy::new(5);
        for n in 0..100 {
            let d = b.delay(n, &mut e);
            assert!(d <= b.ceiling(n), "{n}: {d}");
        }
        assert_eq!(b.ceiling(99), u64::MAX);
    }

    #[test]
    fn a_zero_base_stays_at_the_floor_whatever_the_factor() {
        for factor in [f64::INFINITY, 1e10] {
            let b = Backoff {
                base_ms: 0,
                max_ms: 30_000,
                factor,
                min_ms: 100,
            };
            for n in [0, 1, 31, 40, u32::MAX] {
                assert_eq!(b.ceiling(n), 100, "factor {factor}, attempt {n}");
            }
        }
    }
}
