//! The two inputs an engine takes from the machine: wall-clock time and randomness.

use agentwire_core::{Entropy, Millis};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Milliseconds since the Unix epoch, as the engines take `now`.
pub fn now_ms() -> Millis {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as Millis)
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
    }
}
