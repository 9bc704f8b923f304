//! [`Clock`]: the `now` a driver gives its engines, made from the machine's wall clock and a
//! monotonic one.

use crate::Millis;

/// The `now` a driver gives its engines: milliseconds since the Unix epoch that never go back and
/// do not jump with small steps of the wall clock.
///
/// The engines keep their deadlines (keepalives, timeouts, reconnects) in the same milliseconds as
/// the timestamps they write, so `now` must be both: close to the wall clock, and steady. The wall
/// clock alone is not steady: an NTP correction or a virtual machine's resync steps it. A step back
/// by an hour would hold every timer for an hour (an RKT server idles out a session whose
/// keepalive never went), and a step forward by ten seconds would fire every timer at once (a
/// healthy Switch socket torn down for a missed ping).
///
/// Each [`Clock::read`] takes both clocks. Between two reads `now` advances as the monotonic clock
/// did, then moves towards the wall clock by at most a tenth of that ([`Clock::SLEW`]): timers
/// run at between 0.9 and 1.1 times real time while `now` catches up, and `now` never decreases.
/// A wall clock more than [`Clock::STEP_MS`] ahead is taken at once: that is a suspended machine
/// waking up (a monotonic clock may stop while it sleeps), or a clock set right after boot, and the
/// deadlines that passed meanwhile have passed. A wall clock behind is never taken at once.
///
/// The price is in the timestamps the engines write from `now` (RKT's `Timestamp`, a MoltZap
/// gather's `deadlineAt`): after the wall clock steps back by a span, they stay ahead of it,
/// by less and less, for up to ten times that span.
///
/// ```
/// use agentwire_core::Clock;
/// let mut clock = Clock::new();
/// assert_eq!(clock.read(10_000_000, 0), 10_000_000);
/// // The wall clock steps back an hour; a second later `now` has gone on by 0.9 s.
/// assert_eq!(clock.read(10_000_000 + 1_000 - 3_600_000, 1_000_000), 10_000_900);
/// ```
#[derive(Debug, Clone, Copy, Default)]
pub struct Clock {
    /// The last `now`, in microseconds since the epoch; `None` before the first read.
    now_us: Option<u64>,
    /// The monotonic reading it was taken at, in microseconds.
    mono_us: u64,
    /// Monotonic microseconds not yet counted towards a correction (under [`Clock::SLEW`]), so
    /// that reads microseconds apart still catch up.
    slack: u64,
}

impl Clock {
    /// How far ahead of `now` the wall clock may be and still be caught up with gradually.
    pub const STEP_MS: Millis = 60_000;
    /// `now` moves towards the wall clock by at most 1/`SLEW` of the monotonic time between reads.
    pub const SLEW: u64 = 10;

    pub const fn new() -> Self {
        Clock {
            now_us: None,
            mono_us: 0,
            slack: 0,
        }
    }

    /// `now`, from the wall clock (`wall_ms`, milliseconds since the epoch) and a monotonic clock
    /// (`mono_us`, microseconds from any fixed origin), both read just now. The first read gives
    /// the wall clock. A monotonic reading smaller than the last counts as no time passing.
    pub fn read(&mut self, wall_ms: Millis, mono_us: u64) -> Millis {
        let wall_us = wall_ms.saturating_mul(1_000);
        let Some(last) = self.now_us else {
            self.now_us = Some(wall_us);
            self.mono_us = mono_us;
            return wall_us / 1_000;
        };
        let elapsed = mono_us.saturating_sub(self.mono_us);
        self.mono_us = self.mono_us.max(mono_us);
        let ticked = last.saturating_add(elapsed);
        let budget = elapsed.saturating_add(self.slack);
        let (most, slack) = (budget / Self::SLEW, budget % Self::SLEW);
        self.slack = slack;
        let now = if wall_us >= ticked {
            let ahead = wall_us - ticked;
            if ahead > Self::STEP_MS * 1_000 {
                wall_us
            } else {
                ticked + ahead.min(most)
            }
        } else {
            ticked - (ticked - wall_us).min(most)
        };
        self.now_us = Some(now);
        now / 1_000
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const T: Millis = 1_782_648_000_000; // 2026-06-28T12:00:00Z
    const S: u64 = 1_000_000; // a second, in µs

    #[test]
    fn a_steady_wall_clock_is_followed_exactly() {
        let mut c = Clock::new();
        for i in 0..10_000u64 {
            assert_eq!(c.read(T + i * 7, 5 * S + i * 7_000), T + i * 7);
        }
    }

    #[test]
    fn a_step_back_neither_holds_nor_reverses_time_and_is_caught_up_with() {
        let mut c = Clock::new();
        assert_eq!(c.read(T, 0), T);
        assert_eq!(c.read(T + 60_000, 60 * S), T + 60_000);
        // The wall clock goes back an hour at 60 s.
        let back = 3_600_000;
        let mut last = T + 60_000;
        for s in 61..=40_000u64 {
            let now = c.read(T + s * 1_000 - back, s * S);
            assert!(now >= last + 900 && now <= last + 1_000, "{s}: {last} → {now}");
            last = now;
        }
        // Ten times the step later, `now` is the wall clock again.
        assert_eq!(c.read(T + 40_001_000 - back, 40_001 * S), T + 40_001_000 - back);
    }

    #[test]
    fn a_small_step_forward_is_caught_up_with_gradually() {
        let mut c = Clock::new();
        c.read(T, 0);
        // 10 s ahead, read each second: 0.1 s gained a second, never a jump.
        let mut last = T;
        for s in 1..=100u64 {
            let now = c.read(T + s * 1_000 + 10_000, s * S);
            assert!(now > last && now <= last + 1_100, "{s}: {last} → {now}");
            last = now;
        }
        assert_eq!(last, T + 110_000);
    }

    #[test]
    fn a_wall_clock_far_ahead_is_taken_at_once() {
        let mut c = Clock::new();
        c.read(T, 0);
        // Eight hours asleep: the monotonic clock saw a second of it.
        assert_eq!(c.read(T + 8 * 3_600_000, S), T + 8 * 3_600_000);
        assert_eq!(c.read(T + 8 * 3_600_000 + 500, S + 500_000), T + 8 * 3_600_000 + 500);
    }

    /// Found by mutation testing: no test put the wall clock exactly [`Clock::STEP_MS`] ahead, so
    /// taking it at once from there (`>` → `>=`) passed. At `STEP_MS` ahead it is caught up with
    /// gradually; a millisecond more, taken at once.
    #[test]
    fn step_ms_ahead_is_caught_up_with_and_a_millisecond_more_taken() {
        let mut c = Clock::new();
        c.read(T, 0);
        assert_eq!(c.read(T + 1_000 + Clock::STEP_MS, S), T + 1_100);
        let mut c = Clock::new();
        c.read(T, 0);
        let wall = T + 1_000 + Clock::STEP_MS + 1;
        assert_eq!(c.read(wall, S), wall);
    }

    #[test]
    fn reads_microseconds_apart_still_catch_up() {
        let mut c = Clock::new();
        c.read(T, 0);
        // The wall clock 10 s behind, read every 8 µs for 101 s: a tenth of 8 µs is under a
        // microsecond, and is carried over rather than dropped.
        let mut mono = 0;
        while mono < 101 * S {
            mono += 8;
            c.read(T + mono / 1_000 - 10_000, mono);
        }
        // Within the wall clock's millisecond (it moves a whole millisecond at a time).
        let wall = T + mono / 1_000 - 10_000;
        let now = c.read(wall, mono);
        assert!(now <= wall && now + 1 >= wall, "{now} vs {wall}");
    }

    #[test]
    fn a_monotonic_reading_going_back_counts_as_no_time() {
        let mut c = Clock::new();
        c.read(T, 10 * S);
        assert_eq!(c.read(T, 9 * S), T);
        assert_eq!(c.read(T + 1_000, 11 * S), T + 1_000);
    }

    #[test]
    fn extremes_neither_panic_nor_decrease() {
        for wall in [0, 1, T, Millis::MAX / 1_000, Millis::MAX] {
            let mut c = Clock::new();
            let mut last = c.read(wall, u64::MAX - 5);
            for (w, m) in [
                (0, 0),
                (Millis::MAX, u64::MAX),
                (wall, 3),
                (0, u64::MAX),
                (Millis::MAX, 0),
            ] {
                let now = c.read(w, m);
                assert!(now >= last, "{wall}: {last} → {now}");
                last = now;
            }
        }
    }
}
