//! A token bucket with time passed in: `rate` tokens per second, at most `burst` saved.

use crate::Millis;

#[derive(Debug, Clone)]
pub struct TokenBucket {
    rate_per_s: f64,
    burst: f64,
    tokens: f64,
    last: Option<Millis>,
}

impl TokenBucket {
    pub fn new(rate_per_s: f64, burst: f64) -> Self {
        let burst = burst.max(1.0);
        TokenBucket {
            rate_per_s: rate_per_s.max(0.0),
            burst,
            tokens: burst,
            last: None,
        }
    }

    fn refill(&mut self, now: Millis) {
        if let Some(last) = self.last {
            let dt = now.saturating_sub(last) as f64 / 1000.0;
            self.tokens = (self.tokens + dt * self.rate_per_s).min(self.burst);
        }
        self.last = Some(self.last.map_or(now, |l| l.max(now)));
    }

    /// Takes one token, or says how many ms until one is there.
    pub fn take(&mut self, now: Millis) -> Result<(), Millis> {
        self.take_n(1, now)
    }

    /// Takes `n` tokens at once (none when they are not all there), or says how many ms until
    /// they are; `n` over the burst can never be taken.
    pub fn take_n(&mut self, n: u32, now: Millis) -> Result<(), Millis> {
        self.refill(now);
        let n = f64::from(n);
        if self.tokens >= n {
            self.tokens -= n;
            return Ok(());
        }
        if self.rate_per_s == 0.0 || n > self.burst {
            return Err(Millis::MAX);
        }
        Err((((n - self.tokens) / self.rate_per_s) * 1000.0).ceil() as Millis)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn several_at_once() {
        let mut b = TokenBucket::new(1.0, 8.0);
        assert_eq!(b.take_n(8, 0), Ok(()));
        assert_eq!(b.take_n(8, 0), Err(8000));
        assert_eq!(b.take_n(9, 100_000), Err(Millis::MAX));
        assert_eq!(b.take_n(8, 100_000), Ok(()));
    }

    #[test]
    fn burst_then_rate() {
        let mut b = TokenBucket::new(2.0, 3.0);
        for _ in 0..3 {
            assert_eq!(b.take(1000), Ok(()));
        }
        assert_eq!(b.take(1000), Err(500));
        assert_eq!(b.take(1499), Err(2));
        assert_eq!(b.take(1500), Ok(()));
        assert!(b.take(1500).is_err());
        assert_eq!(b.take(100_000), Ok(())); // refills to at most the burst
        assert_eq!(b.take(100_000), Ok(()));
        assert_eq!(b.take(100_000), Ok(()));
        assert!(b.take(100_000).is_err());
    }
}
