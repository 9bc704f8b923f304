//! The two inputs an engine takes from the machine: time and randomness.

use agentwire_core::{Clock, Entropy, Millis};
use std::sync::Mutex;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// Milliseconds since the Unix epoch, as the engines take `now`: the wall clock, kept steady by the
/// monotonic one ([`Clock`]: never back, small steps of the wall clock caught up with gradually),
/// one clock for the whole process. The drivers give their engines this time as the tokio
/// runtime they run on sees it: the same, except under tokio's paused time (in tests), where it
/// goes on as the paused clock does.
pub fn now_ms() -> Millis {
    process().read(Instant::now())
}

/// The process's time: its [`Clock`], and what [`driver_now`] counts from.
struct Process {
    clock: Clock,
    /// The clock and the monotonic clock at the first reading.
    origin: Option<(Millis, Instant)>,
    /// How far the clock has moved from the monotonic one since the origin (catching up with the
    /// wall clock, a wake from suspend), as [`driver_now`] takes it: in steps over [`JITTER_MS`].
    moved: i128,
}

/// How much smaller moves of the process's clock against the monotonic one [`driver_now`] leaves
/// out: they are the rounding of the readings to milliseconds, not moves.
const JITTER_MS: i128 = 2;

fn process() -> std::sync::MutexGuard<'static, Process> {
    static PROCESS: Mutex<Process> = Mutex::new(Process {
        clock: Clock::new(),
        origin: None,
        moved: 0,
    });
    // The clock is plain data: one poisoned by a panic elsewhere is still whole.
    PROCESS.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl Process {
    /// The clock, with the monotonic clock read as `mono`.
    fn read(&mut self, mono: Instant) -> Millis {
        let wall = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as Millis);
        let Some((_, origin)) = self.origin else {
            let now = self.clock.read(wall, 0);
            self.origin = Some((now, mono));
            return now;
        };
        let mono = mono.saturating_duration_since(origin).as_micros() as u64;
        self.clock.read(wall, mono)
    }
}

/// Whole milliseconds from `from` to `to`, negative when `to` is earlier.
fn ms_between(from: Instant, to: Instant) -> i128 {
    match to.checked_duration_since(from) {
        Some(d) => d.as_millis() as i128,
        None => -(from.duration_since(to).as_millis() as i128),
    }
}

tokio::task_local! {
    /// The last `now` a driver's task gave its engine.
    static LAST: std::cell::Cell<Millis>;
}

/// Runs a driver's task with a [`driver_now`] that never goes back.
pub(crate) fn driven<F: std::future::Future>(task: F) -> impl std::future::Future<Output = F::Output> {
    LAST.scope(std::cell::Cell::new(0), task)
}

/// The `now` a driver gives its engine: the process's clock at its first reading, plus the time
/// the clock of the tokio runtime it runs on has counted since, plus the process clock's own
/// moves since (in steps over [`JITTER_MS`]). In a task under [`driven`], never back.
///
/// A runtime's clock is the monotonic one, and so this is [`now_ms`] within a few milliseconds,
/// except under tokio's paused time (`start_paused`, `tokio::time::pause`, `advance`, in a
/// test): there the engines' time goes on as the paused clock does, as the runtime's timers do,
/// the same for every connection on that runtime, so a timeout fires at the `advance` that
/// reaches it and the driver never wakes over and over for a deadline its timer and its engine
/// disagree on.
pub(crate) fn driver_now() -> Millis {
    let now = {
        let mut p = process();
        // Read under the lock, as `now_ms` reads them: read before it, a wait for the lock made
        // them older than the process clock read in it, and that wait counted as a move.
        let real = Instant::now();
        let runtime = tokio::time::Instant::now().into_std();
        let clock = p.read(real);
        let Some((at, origin)) = p.origin else {
            return clock; // set by the read
        };
        let moved = i128::from(clock) - i128::from(at) - ms_between(origin, real);
        if (moved - p.moved).abs() > JITTER_MS {
            p.moved = moved;
        }
        i128::from(at) + ms_between(origin, runtime) + p.moved
    };
    let now = Millis::try_from(now.max(0)).unwrap_or(Millis::MAX);
    LAST.try_with(|last| {
        let now = now.max(last.get());
        last.set(now);
        now
    })
    .unwrap_or(now)
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
        // A driver's time is the process's within the rounding of the readings (JITTER_MS).
        let wait = until(now_ms() + 60_000);
        assert!(
            wait > Duration::from_secs(59) && wait <= Duration::from_millis(60_003),
            "{wait:?}"
        );
    }

    /// In a driven task on a runtime whose clock is the real one, a driver's time is the process's
    /// within a few milliseconds (the rounding of the readings, moves of the process clock under
    /// [`JITTER_MS`]) and never goes back; under paused time it goes on by exactly what `advance`
    /// moves, the same in a task started after the `advance`.
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
            let other = tokio::spawn(driven(async { driver_now() })).await.unwrap();
            assert_eq!(other, paused + 3_600_000, "a task started later agrees");
        }));
        let (outside, process) = (driver_now(), now_ms());
        assert!(process - outside <= 1, "outside a driven task: the process's time");
    }
}
