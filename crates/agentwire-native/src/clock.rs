//! The two inputs an engine takes from the machine: time and randomness.

use agentwire_core::{Clock, Entropy, Millis};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// Milliseconds since the Unix epoch, as the engines take `now`: the wall clock, kept steady by the
/// monotonic one ([`Clock`]: never back, small steps of the wall clock caught up with gradually),
/// one clock for the whole process. The drivers give their engines this time as the tokio
/// runtime they run on sees it: the same, except under tokio's paused time (in tests), where it
/// goes on as the paused clock does.
pub fn now_ms() -> Millis {
    read(Instant::now())
}

/// The monotonic clock's origin.
fn origin() -> Instant {
    static ORIGIN: OnceLock<Instant> = OnceLock::new();
    *ORIGIN.get_or_init(Instant::now)
}

/// [`now_ms`], with the monotonic clock read as `mono`.
fn read(mono: Instant) -> Millis {
    static CLOCK: Mutex<Clock> = Mutex::new(Clock::new());
    let wall = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as Millis);
    let mono = mono.saturating_duration_since(origin()).as_micros() as u64;
    // The clock is plain data: one poisoned by a panic elsewhere is still whole.
    CLOCK
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .read(wall, mono)
}

/// A driver task's time: where it started on the process's clock, the real clock and the task's
/// runtime clock, and how far the process's clock has moved from the real one since.
#[derive(Clone, Copy)]
struct Anchor {
    clock: Millis,
    real: Instant,
    runtime: Instant,
    /// The process's clock's moves taken so far (catching up with the wall clock, a wake from
    /// suspend), in milliseconds.
    moved: i128,
    /// The last `now` given.
    last: Millis,
}

tokio::task_local! {
    static ANCHOR: std::cell::Cell<Option<Anchor>>;
}

/// Runs a driver's task with a time of its own ([`driver_now`]).
pub(crate) fn driven<F: std::future::Future>(task: F) -> impl std::future::Future<Output = F::Output> {
    ANCHOR.scope(std::cell::Cell::new(None), task)
}

/// How much smaller moves of the process's clock against the real one are left out: they are the
/// rounding of the readings to milliseconds, not moves.
const JITTER_MS: i128 = 2;

/// Whole milliseconds from `from` to `to`, negative when `to` is earlier.
fn ms_between(from: Instant, to: Instant) -> i128 {
    match to.checked_duration_since(from) {
        Some(d) => d.as_millis() as i128,
        None => -(from.duration_since(to).as_millis() as i128),
    }
}

/// The `now` a driver gives its engine: in a task under [`driven`], [`now_ms`] at the task's first
/// reading, plus the time the tokio runtime's clock has counted since, plus the process clock's
/// own moves since (over [`JITTER_MS`]); never back. Outside such a task, [`now_ms`].
///
/// A runtime's clock is the real one, except under tokio's paused time (`start_paused`,
/// `tokio::time::pause`, `advance`, in a test): there the engine's time goes on as the paused
/// clock does, as the runtime's timers do, so a timeout fires at the `advance` that reaches it,
/// and the driver never wakes over and over for a deadline its timer and its engine disagree on.
pub(crate) fn driver_now() -> Millis {
    let real = Instant::now();
    let clock = read(real);
    let runtime = tokio::time::Instant::now().into_std();
    ANCHOR
        .try_with(|cell| {
            let mut a = cell.get().unwrap_or(Anchor {
                clock,
                real,
                runtime,
                moved: 0,
                last: clock,
            });
            let moved = i128::from(clock) - i128::from(a.clock) - ms_between(a.real, real);
            if (moved - a.moved).abs() > JITTER_MS {
                a.moved = moved;
            }
            let now = i128::from(a.clock) + ms_between(a.runtime, runtime) + a.moved;
            a.last = Millis::try_from(now.max(0)).unwrap_or(Millis::MAX).max(a.last);
            cell.set(Some(a));
            a.last
        })
        .unwrap_or(clock)
}

/// How long from [`driver_now`] until an engine deadline (zero when it has passed), for a tokio
/// timer.
pub(crate) fn until(deadline: Millis) -> Duration {
    Duration::from_millis(deadline.saturating_sub(driver_now()))
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

    /// In a driven task on a runtime whose clock is the real one, a driver's time is the process's
    /// within a few milliseconds (the rounding of the readings, moves of the process clock under
    /// [`JITTER_MS`]) and never goes back; under paused time it goes on by exactly what `advance`
    /// moves.
    #[test]
    fn a_driver_keeps_the_process_time_and_follows_a_paused_clock() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .unwrap();
        rt.block_on(driven(async {
            let mut last = driver_now();
            for _ in 0..10_000 {
                let (before, now, after) = (now_ms(), driver_now(), now_ms());
                let near = 2 * JITTER_MS as u64 + 6;
                assert!(
                    now >= last && now + near >= before && now <= after + near,
                    "{before} {now} {after} (last {last})"
                );
                last = now;
            }
            tokio::time::pause();
            let paused = driver_now();
            std::thread::sleep(Duration::from_millis(20));
            assert_eq!(driver_now(), paused, "real time does not count");
            tokio::time::advance(Duration::from_secs(3_600)).await;
            assert_eq!(driver_now(), paused + 3_600_000);
        }));
        let (outside, process) = (driver_now(), now_ms());
        assert!(process - outside <= 1, "outside a driven task: the process's time");
    }
}
