//! Found by mutation testing: `hi - lo` → `hi + lo` in `Backoff::delay` survived, since the
//! seeded draws of the unit tests happened to land in bounds. Every draw must give a delay in
//! `[min_ms, ceiling(n)]`: here the draws at and just past the span's edges.

use agentwire_core::{Backoff, Entropy};

/// Returns the given draws in turn.
struct Draws(Vec<u64>);

impl Entropy for Draws {
    fn fill(&mut self, buf: &mut [u8]) {
        let v = self.0.remove(0);
        buf.copy_from_slice(&v.to_le_bytes()[..buf.len()]);
    }
}

#[test]
fn every_draw_stays_within_min_and_ceiling() {
    let b = Backoff::default();
    for n in [0u32, 1, 3, 10] {
        let hi = b.ceiling(n);
        let lo = b.min_ms;
        let span = hi - lo + 1;
        for draw in [0, span - 1, span, span + 1, 2 * span - 1, hi, hi + lo, u64::MAX] {
            let d = b.delay(n, &mut Draws(vec![draw]));
            assert!(
                (lo..=hi).contains(&d),
                "attempt {n}, draw {draw}: {d} outside {lo}..={hi}"
            );
        }
        // The edges of the span map to the edges of the range.
        assert_eq!(b.delay(n, &mut Draws(vec![span - 1])), hi);
        assert_eq!(b.delay(n, &mut Draws(vec![span])), lo);
    }
}
