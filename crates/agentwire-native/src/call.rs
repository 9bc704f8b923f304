//! Calls from a driver's owner to the task that owns its engine, the same for every driver: a
//! call goes as [`Command::Start`] under a ticket of its own and waits for its answer; a call
//! whose future is dropped first sends [`Command::Cancel`] with its ticket, and the task, which
//! keeps the engine's id of each ticket in [`Waiting`], cancels that command in the engine (its
//! `max_in_flight` slot, timer and waiter are freed at once).

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use tokio::sync::{mpsc, oneshot};

/// Where an answer goes.
pub(crate) type Reply<T, E> = oneshot::Sender<Result<T, E>>;

/// What a driver's task is asked to do; `S` is how the driver starts a command.
pub(crate) enum Command<S> {
    Start {
        ticket: u64,
        start: S,
    },
    /// The caller of that ticket stopped waiting.
    Cancel(u64),
    /// Close the session; `()` once the socket has ended.
    Close(oneshot::Sender<()>),
}

/// How a connection ended when its owner did not close it (the server's or the network's close,
/// or the engine's own): its close code and reason, as `1008 session expired`, set once by the
/// task that owns the engine and said by every later call's `closed` error. Unset after the
/// owner's own `close()`.
#[derive(Clone, Default)]
pub(crate) struct Ending(Arc<OnceLock<String>>);

impl Ending {
    /// Keeps `code` and `reason` (the first ending only).
    pub(crate) fn set(&self, code: u16, reason: &str) {
        let said = match reason {
            "" => code.to_string(),
            reason => format!("{code} {reason}"),
        };
        let _ = self.0.set(said);
    }

    pub(crate) fn get(&self) -> Option<&str> {
        self.0.get().map(String::as_str)
    }
}

/// The words of a call's `closed` error: `the connection is closed`, and how it ended when the
/// owner did not close it (`the connection is closed (1008 session expired)`).
pub(crate) fn closed_message(ending: Option<&str>) -> String {
    match ending {
        Some(ending) => format!("the connection is closed ({ending})"),
        None => "the connection is closed".to_string(),
    }
}

/// The owner's end: sends commands and numbers them.
pub(crate) struct Caller<S> {
    commands: mpsc::UnboundedSender<Command<S>>,
    tickets: AtomicU64,
    /// Set by the task when the connection ends other than by `close()`.
    ending: Ending,
}

impl<S> Caller<S> {
    pub(crate) fn new(commands: mpsc::UnboundedSender<Command<S>>, ending: Ending) -> Self {
        Caller {
            commands,
            tickets: AtomicU64::new(1),
            ending,
        }
    }

    /// Sends `start` under a new ticket and waits for its answer; `closed(ending)` when the
    /// task is gone, with how the connection ended ([`Ending`]). Dropping the future before the
    /// answer cancels the command.
    pub(crate) async fn call<T, E>(
        &self,
        start: S,
        answer: oneshot::Receiver<Result<T, E>>,
        closed: fn(Option<&str>) -> E,
    ) -> Result<T, E> {
        self.call_with_ticket(start, answer, closed).await.map(|(_, t)| t)
    }

    /// [`Caller::call`], with the call's ticket returned with the answer (for a command that
    /// goes on after it: see [`Caller::cancel_on_drop`]).
    pub(crate) async fn call_with_ticket<T, E>(
        &self,
        start: S,
        answer: oneshot::Receiver<Result<T, E>>,
        closed: fn(Option<&str>) -> E,
    ) -> Result<(u64, T), E> {
        let ticket = self.tickets.fetch_add(1, Ordering::Relaxed);
        self.commands
            .send(Command::Start { ticket, start })
            .map_err(|_| closed(self.ending.get()))?;
        let guard = self.cancel_on_drop(ticket);
        let result = answer.await.unwrap_or_else(|_| Err(closed(self.ending.get())));
        guard.disarm();
        result.map(|t| (ticket, t))
    }

    /// A guard that cancels `ticket` when it is dropped armed. It does not keep the task alive:
    /// once the owner is gone, the session ends as it would without it.
    pub(crate) fn cancel_on_drop(&self, ticket: u64) -> CancelOnDrop<S> {
        CancelOnDrop {
            commands: self.commands.downgrade(),
            ticket: Some(ticket),
        }
    }

    /// Asks the task to close and waits for the socket to end (the task bounds that).
    pub(crate) async fn close(&self) {
        let (done, closed) = oneshot::channel();
        if self.commands.send(Command::Close(done)).is_ok() {
            let _ = closed.await;
        }
    }
}

/// Sends [`Command::Cancel`] for its ticket when dropped, unless disarmed.
pub(crate) struct CancelOnDrop<S> {
    commands: mpsc::WeakUnboundedSender<Command<S>>,
    ticket: Option<u64>,
}

impl<S> CancelOnDrop<S> {
    pub(crate) fn disarm(mut self) {
        self.ticket = None;
    }
}

impl<S> Drop for CancelOnDrop<S> {
    fn drop(&mut self) {
        if let (Some(ticket), Some(commands)) = (self.ticket, self.commands.upgrade()) {
            let _ = commands.send(Command::Cancel(ticket));
        }
    }
}

/// The task's end: the waiter of each command in flight, by the engine's id and by ticket.
pub(crate) struct Waiting<W> {
    by_id: HashMap<String, (u64, W)>,
    by_ticket: HashMap<u64, String>,
}

impl<W> Default for Waiting<W> {
    fn default() -> Self {
        Waiting {
            by_id: HashMap::new(),
            by_ticket: HashMap::new(),
        }
    }
}

impl<W> Waiting<W> {
    pub(crate) fn insert(&mut self, ticket: u64, id: String, waiter: W) {
        self.by_ticket.insert(ticket, id.clone());
        self.by_id.insert(id, (ticket, waiter));
    }

    pub(crate) fn get_mut(&mut self, id: &str) -> Option<&mut W> {
        self.by_id.get_mut(id).map(|(_, w)| w)
    }

    /// The waiter of `id`, which is done.
    pub(crate) fn remove(&mut self, id: &str) -> Option<W> {
        let (ticket, waiter) = self.by_id.remove(id)?;
        self.by_ticket.remove(&ticket);
        Some(waiter)
    }

    /// The engine's id of `ticket`, whose caller stopped waiting (its waiter is dropped): the
    /// driver cancels that id in its engine. `None` when the command is already done.
    pub(crate) fn cancel(&mut self, ticket: u64) -> Option<String> {
        let id = self.by_ticket.remove(&ticket)?;
        self.by_id.remove(&id);
        Some(id)
    }
}
