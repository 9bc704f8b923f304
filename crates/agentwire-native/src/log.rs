//! The RKT server's log lines, written to stderr by a thread of their own: a stderr that does
//! not drain (a pipe nobody reads) must not stall the runtime's workers, and so the server. A
//! line that finds [`CAPACITY`] lines waiting is dropped, and the writer says how many went.
//! A line may quote a peer (a client's close reason): it is written as one line, terminal-safe
//! ([`agentwire_core::text::terminal_safe`]: a newline, a CR, an escape sequence or a bidi
//! override is a visible `\uXXXX`), so a peer can neither forge a line nor act on the terminal.

use std::io::Write;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{channel, sync_channel, Receiver, Sender, SyncSender, TrySendError};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

/// Lines that may wait for the writer.
pub(crate) const CAPACITY: usize = 1024;

/// A line sink with its own writer thread.
pub(crate) struct Log {
    lines: SyncSender<Item>,
    dropped: Arc<AtomicU64>,
}

enum Item {
    Line(String),
    /// Answered once every line before it is written.
    Flush(Sender<()>),
}

impl Log {
    /// A log writing to `out` from a new thread (`None` when no thread can be started: lines
    /// are then dropped).
    pub(crate) fn new(out: impl Write + Send + 'static, capacity: usize) -> Option<Log> {
        let (lines, rx) = sync_channel(capacity);
        let dropped = Arc::new(AtomicU64::new(0));
        let counted = dropped.clone();
        std::thread::Builder::new()
            .name("agentwire-log".into())
            .spawn(move || write_lines(out, rx, &counted))
            .ok()?;
        Some(Log { lines, dropped })
    }

    /// Queues `line`; never waits.
    pub(crate) fn line(&self, line: String) {
        if let Err(TrySendError::Full(_)) = self.lines.try_send(Item::Line(line)) {
            self.dropped.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Waits, at most `bound`, until the lines queued so far are written, and the count of those
    /// dropped: before the process ends, which would lose them.
    pub(crate) fn flush(&self, bound: Duration) {
        let deadline = Instant::now() + bound;
        let (done, written) = channel();
        let mut item = Item::Flush(done);
        loop {
            match self.lines.try_send(item) {
                Ok(()) => break,
                Err(TrySendError::Full(back)) if Instant::now() < deadline => {
                    item = back;
                    std::thread::sleep(Duration::from_millis(1));
                }
                Err(_) => return,
            }
        }
        let _ = written.recv_timeout(deadline.saturating_duration_since(Instant::now()));
    }
}

fn write_lines(mut out: impl Write, rx: Receiver<Item>, dropped: &AtomicU64) {
    for item in rx {
        // Written or not (a reader gone: `2>&1 | head`), a line is advice; nothing waits on it.
        if let Item::Line(line) = &item {
            let _ = writeln!(out, "{}", agentwire_core::text::terminal_safe(line, false));
        }
        let gone = dropped.swap(0, Ordering::Relaxed);
        if gone > 0 {
            let _ = writeln!(out, "({gone} log lines dropped: stderr was not read)");
        }
        if let Item::Flush(done) = item {
            let _ = out.flush();
            let _ = done.send(());
        }
    }
}

/// Flushes the stderr log, for at most 200 ms.
pub(crate) fn flush_stderr() {
    if let Some(log) = stderr() {
        log.flush(Duration::from_millis(200));
    }
}

/// The process's stderr log.
pub(crate) fn stderr() -> Option<&'static Log> {
    static LOG: OnceLock<Option<Log>> = OnceLock::new();
    LOG.get_or_init(|| Log::new(std::io::stderr(), CAPACITY)).as_ref()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::{Condvar, Mutex};
    use std::time::{Duration, Instant};

    /// Open yet, and what was written.
    type Written = Mutex<(bool, Vec<u8>)>;

    /// A writer that blocks until told to go on, then records what it is given.
    #[derive(Clone, Default)]
    struct Gate(Arc<(Written, Condvar)>, Arc<std::sync::atomic::AtomicBool>);

    impl Gate {
        /// Waits until the writer is writing (so it holds the first line).
        fn entered(&self) {
            while !self.1.load(Ordering::SeqCst) {
                std::thread::yield_now();
            }
        }
    }

    impl Write for Gate {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.1.store(true, Ordering::SeqCst);
            let (lock, open) = &*self.0;
            let mut state = open.wait_while(lock.lock().unwrap(), |(go, _)| !*go).unwrap();
            state.1.extend_from_slice(buf);
            Ok(buf.len())
        }

        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn a_writer_that_does_not_drain_holds_up_no_caller_and_the_dropped_lines_are_counted() {
        let gate = Gate::default();
        let log = Log::new(gate.clone(), 4).unwrap();
        let start = Instant::now();
        log.line("line 0".into());
        gate.entered();
        for n in 1..10_000 {
            log.line(format!("line {n}"));
        }
        assert!(start.elapsed() < Duration::from_secs(2), "{:?}", start.elapsed());
        {
            let (lock, open) = &*gate.0;
            lock.lock().unwrap().0 = true;
            open.notify_all();
        }
        let written = |until: &str| {
            let deadline = Instant::now() + Duration::from_secs(5);
            loop {
                let text = String::from_utf8(gate.0 .0.lock().unwrap().1.clone()).unwrap();
                if text.contains(until) || Instant::now() > deadline {
                    break text;
                }
                std::thread::sleep(Duration::from_millis(10));
            }
        };
        // The first line and the four that waited, then a line once they are out.
        written("line 4");
        log.line("after".into());
        let text = written("after");
        assert!(text.starts_with("line 0\n"), "{text}");
        assert!(text.contains("log lines dropped"), "{text}");
        assert!(text.ends_with("after\n"), "{text}");
        assert!(
            text.lines().count() < 10,
            "at most the waiting lines, the count, the last: {text}"
        );
    }

    /// A line quotes what a peer sent (the RKT server's close reason is the client's): a newline
    /// in it would forge a line of its own, an escape sequence would reach the terminal raw.
    #[test]
    fn a_line_is_one_line_with_no_control_character_raw() {
        #[derive(Clone, Default)]
        struct Sink(Arc<Mutex<Vec<u8>>>);
        impl Write for Sink {
            fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
                self.0.lock().unwrap().extend_from_slice(buf);
                Ok(buf.len())
            }
            fn flush(&mut self) -> std::io::Result<()> {
                Ok(())
            }
        }
        let sink = Sink::default();
        let log = Log::new(sink.clone(), 4).unwrap();
        log.line("rkt 127.0.0.1:1: closed 4000 bye\nrkt 203.0.113.9:443: open\u{1b}[31m\r\u{9b}\u{202e}\tok".into());
        log.flush(Duration::from_secs(5));
        let text = String::from_utf8(sink.0.lock().unwrap().clone()).unwrap();
        assert_eq!(
            text,
            "rkt 127.0.0.1:1: closed 4000 bye\\u000arkt 203.0.113.9:443: open\\u001b[31m\\u000d\\u009b\\u202e\tok\n"
        );
    }

    #[test]
    fn flush_waits_for_the_lines_queued_and_the_count_of_those_dropped() {
        let gate = Gate::default();
        let log = Log::new(gate.clone(), 2).unwrap();
        // "a" is taken and held by the writer, "b" and "c" wait, the other seven are dropped.
        log.line("a".into());
        gate.entered();
        for line in ["b", "c", "d", "e", "f", "g", "h", "i", "j"] {
            log.line(line.into());
        }
        let opener = gate.clone();
        let open = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(100));
            let (lock, open) = &*opener.0;
            lock.lock().unwrap().0 = true;
            open.notify_all();
        });
        log.flush(Duration::from_secs(5));
        let text = String::from_utf8(gate.0 .0.lock().unwrap().1.clone()).unwrap();
        assert_eq!(text, "a\n(7 log lines dropped: stderr was not read)\nb\nc\n");
        open.join().unwrap();
    }

    /// A stderr that never drains keeps the queue full: flush gives up at its bound, it does
    /// not wait for room.
    #[test]
    fn flush_gives_up_at_its_bound_when_the_queue_stays_full() {
        let gate = Gate::default();
        let log = Arc::new(Log::new(gate.clone(), 1).unwrap());
        log.line("a".into());
        gate.entered();
        log.line("b".into());
        let (took, flushed) = std::sync::mpsc::channel();
        let flushing = log.clone();
        std::thread::spawn(move || {
            let start = Instant::now();
            flushing.flush(Duration::from_millis(100));
            let _ = took.send(start.elapsed());
        });
        let took = flushed
            .recv_timeout(Duration::from_secs(5))
            .expect("flush still waits after 5 s");
        assert!(took >= Duration::from_millis(100), "{took:?}");
        let (lock, open) = &*gate.0;
        lock.lock().unwrap().0 = true;
        open.notify_all();
    }
}
