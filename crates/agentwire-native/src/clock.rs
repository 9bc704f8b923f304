//! The two inputs an engine takes from the machine: time and randomness.

use agentwire_core::{Clock, Entropy, Millis};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// Milliseconds since the Unix epoch, as the engines take `now`: the wall clock, kept steady by the
/// monotonic one ([`Clock`]: never back, small steps of the wall clock caught up with gradually),
/// one clock for the whole process.
pub fn now_ms() -> Millis {
    static ORIGIN: OnceLock<Instant> = OnceLock::new();
    static CLOCK: Mutex<Clock> = Mutex::new(Clock::new());
    let wall = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as Millis);
    let mono = ORIGIN.get_or_init(Instant::now).elapsed().as_micros() as u64;
    // The clock is plain data: one poisoned by a panic elsewhere is still whole.
    CLOCK
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .read(wall, mono)
}

/// How long from now until an engine deadline (zero when it has passed).
pub(crate) fn until(deadline: Millis) -> Duration {
    Duration::from_millis(deadline.saturating_sub(now_ms()))
}

/// The operating system's random source, through `getrandom`.
#[derive(Debug, Clone, Copy, Default)]
pub struct OsEntropy;

impl Entropy for OsEntropy {
    fn fill(&mut self, buf: &mut [u8]) {
        // Without an OS random source no id could be unique: there is nothing sensible to go on with.
        getrandom::fill(buf).expect("the operating system's random source failed");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entropy_gives_distinct_v4_uuids_and_time_is_now() {
        let mut e = OsEntropy;
        let (a, b) = (e.uuid_v4(), e.uuid_v4());
        assert_ne!(a, b);
        assert_eq!(&a[14..15], "4");
        assert!(now_ms() > 1_700_000_000_000);
        assert_eq!(until(0), Duration::ZERO);
        let wait = until(now_ms() + 60_000);
        assert!(
            wait > Duration::from_secs(59) && wait <= Duration::from_secs(60),
            "{wait:?}"
        );
    }
}
