//! A connection, the socket or stream attached to it, and how a socket task is told to end.

use crate::frames::Out;
use agentwire_switch::open::{Filter, Scope};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex, PoisonError};
use tokio::sync::{mpsc, Notify};
use tokio::time::Instant;

/// How a socket task is told to end at once.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum EndKind {
    /// Abruptly: no close frame (a slow consumer).
    Drop,
    /// WS close 1012, the SSE stream ends (a restart).
    Restart,
}

/// The signal behind [`EndKind`].
#[derive(Debug, Default)]
pub(crate) struct Ender {
    kind: Mutex<Option<EndKind>>,
    pub(crate) notify: Notify,
}

impl Ender {
    pub(crate) fn end(&self, kind: EndKind) {
        *self.kind.lock().unwrap_or_else(PoisonError::into_inner) = Some(kind);
        self.notify.notify_one();
    }

    pub(crate) fn kind(&self) -> Option<EndKind> {
        *self.kind.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// The socket or stream a connection is attached to.
pub(crate) struct Attach {
    pub(crate) id: u64,
    pub(crate) tx: mpsc::Sender<Out>,
    pub(crate) end: Arc<Ender>,
}

/// A connection: it outlives its socket until its liveness lapses.
pub(crate) struct Conn {
    pub(crate) id: String,
    pub(crate) generation: u64,
    pub(crate) scope: Scope,
    pub(crate) filter: Filter,
    pub(crate) protocol: u64,
    /// Rooms this connection claims.
    pub(crate) claims: BTreeSet<String>,
    /// Session id → room, from `placements`.
    pub(crate) placements: BTreeMap<String, String>,
    /// The room `connect_to_room` connected the operations of this connection to.
    pub(crate) op_room: Option<String>,
    pub(crate) cursor: u64,
    pub(crate) last_seen: Instant,
    pub(crate) attach: Option<Attach>,
}

impl Conn {
    /// Queues `out` on the attached socket; a full queue cuts the client off.
    pub(crate) fn push(&mut self, out: Out) {
        let Some(a) = &self.attach else { return };
        match a.tx.try_send(out) {
            Ok(()) => {}
            Err(mpsc::error::TrySendError::Full(_)) => {
                a.end.end(EndKind::Drop);
                self.attach = None;
            }
            Err(mpsc::error::TrySendError::Closed(_)) => self.attach = None,
        }
    }

    pub(crate) fn covers(&self, room: &str, agent_rooms: &BTreeSet<String>) -> bool {
        match self.scope {
            Scope::All => agent_rooms.contains(room),
            Scope::Single => self.claims.contains(room),
        }
    }

    /// The covered room set, sorted.
    pub(crate) fn rooms(&self, agent_rooms: &BTreeSet<String>) -> Vec<String> {
        match self.scope {
            Scope::All => agent_rooms.iter().cloned().collect(),
            Scope::Single => self.claims.iter().cloned().collect(),
        }
    }

    pub(crate) fn end(&mut self, kind: EndKind) {
        if let Some(a) = self.attach.take() {
            a.end.end(kind);
        }
    }
}
