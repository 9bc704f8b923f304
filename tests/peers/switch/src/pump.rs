//! What the WebSocket and SSE tasks share: the frames to write (catch-up first, then the
//! connection's queue) and the per-socket counting behind the domain-event faults.

use crate::frames::Out;
use crate::Faults;
use std::collections::VecDeque;
use std::time::Duration;
use tokio::sync::mpsc;

/// Longest a single write may block before the client counts as gone.
pub(crate) const WRITE_TIMEOUT: Duration = Duration::from_secs(10);

pub(crate) struct Pump {
    pending: VecDeque<Out>,
    rx: mpsc::Receiver<Out>,
    /// Domain events written on this socket.
    events: u64,
    /// Domain events since the last garbage frame.
    since_garbage: u64,
}

/// What to do around one domain event.
pub(crate) struct EventFaults {
    /// Write a garbage frame first.
    pub(crate) garbage: bool,
    /// Drop the socket abruptly once it is written.
    pub(crate) drop_after: bool,
}

impl Pump {
    pub(crate) fn new(first: Vec<Out>, rx: mpsc::Receiver<Out>) -> Self {
        Pump {
            pending: first.into(),
            rx,
            events: 0,
            since_garbage: 0,
        }
    }

    /// The next frame: catch-up first, then the queue. Cancel-safe. `None` when the state
    /// forgot the socket.
    pub(crate) async fn next(&mut self) -> Option<Out> {
        if let Some(out) = self.pending.pop_front() {
            return Some(out);
        }
        self.rx.recv().await
    }

    /// Counts one domain event about to be written.
    pub(crate) fn event(&mut self, faults: &Faults) -> EventFaults {
        self.events += 1;
        self.since_garbage += 1;
        let garbage = faults.garbage_every.is_some_and(|n| n > 0 && self.since_garbage >= n);
        if garbage {
            self.since_garbage = 0;
        }
        EventFaults {
            garbage,
            drop_after: faults.drop_after_events.is_some_and(|n| self.events >= n),
        }
    }
}
