//! A MoltZap test peer: an in-memory MoltZap server, in either generation, that tests and the
//! playground start on 127.0.0.1.
//!
//! - HTTP and WebSocket on one port: `POST /api/v1/auth/register`, `GET /health` (open and
//!   authenticated connections), and the
//!   WebSocket at `/ws`.
//! - [`Generation::Released`] answers like a released server (protocol `2026.425.3`, captured in
//!   `tests/vectors/moltzap-2026.425/`): `type` frames, `auth/connect`, the full HelloOk,
//!   events, the released error messages, no WebSocket pings.
//! - [`Generation::Current`] speaks protocol `2026.811.0`: plain JSON-RPC 2.0,
//!   `agent/network/connect` → `{}`, notifications, `_tag` errors, WebSocket pings every
//!   [`PeerConfig::ping_interval`] and a close after three unanswered ones.
//! - [`Faults`] make it misbehave on purpose, set in [`PeerConfig`] or at runtime with
//!   [`PeerHandle::set_faults`].
//!
//! Frames are decoded and encoded with `agentwire-moltzap`'s frame layer; the HTTP plumbing and
//! the accept loop are `agentwire-peer-kit`'s. [`Args`] and [`run`] are the command line of the
//! `moltzap-peer` binary and of `agentwire peers moltzap`.

mod cli;
mod conn;
mod http;
mod state;
mod util;

pub use agentwire_moltzap::Generation;
pub use cli::{run, Args};

use agentwire_peer_kit::server::{self, Server};
use std::io;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;
use tokio::net::TcpListener;

/// Where a socket can be dropped by [`Faults::drop_at`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step {
    /// After the HTTP upgrade request of `/ws` is read, before it is answered.
    Upgrade,
    /// Right after a successful handshake (`auth/connect` or `agent/network/connect`) is answered.
    AfterConnect,
    /// When a request for this method arrives, before it is handled or answered.
    BeforeAnswer(String),
    /// Right after a request for this method is answered.
    AfterAnswer(String),
}

/// Misbehaviour on purpose. Every fault applies to every connection while it is set. "Drop" is
/// an abrupt end: the TCP connection is closed without a WebSocket close frame.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Faults {
    /// Drop a connection once it has received this many messages from the client (the last one
    /// is handled and answered first).
    pub drop_after_frames: Option<u64>,
    /// Drop a connection at this step.
    pub drop_at: Option<Step>,
    /// Answer these methods only after this many milliseconds (their effects, e.g. fan-out, are
    /// not delayed).
    pub delay_ms: Vec<(String, u64)>,
    /// Never answer these methods (their effects still happen).
    pub never_answer: Vec<String>,
    /// Send a text message that is not JSON (`GARBAGE`) before each of the next this many
    /// answers, counted over the whole peer.
    pub garbage_before_answers: u32,
    /// Current generation: treat the client's pongs as never arriving, so the peer closes after
    /// three pings even with a healthy client.
    pub ignore_pongs: bool,
    /// Current generation: send no WebSocket pings at all.
    pub no_pings: bool,
    /// Agent names: a `messages/send` to `agent:<name>` (from an authenticated connection) is
    /// answered -32603 "Internal error" and has no effect.
    pub refuse_send_to: Vec<String>,
    /// (agent name, ms): a `messages/send` to `agent:<name>` (from an authenticated connection)
    /// is handled only after this many milliseconds. Unlike [`Faults::delay_ms`], its effects
    /// (the message stored and fanned out) are delayed too; other requests, on this connection
    /// and others, go on meanwhile. The send is lost if the connection ends first.
    pub delay_send_to: Vec<(String, u64)>,
}

/// The garbage text message [`Faults::garbage_before_answers`] sends.
pub const GARBAGE: &str = "}{ not json \u{1}";

/// How the peer runs.
#[derive(Debug, Clone)]
pub struct PeerConfig {
    pub generation: Generation,
    pub faults: Faults,
    /// Current generation: the WebSocket ping interval (default 30 s).
    pub ping_interval: Duration,
    /// Open TCP connections (HTTP and WebSocket) at once (default 256); past it a connection is
    /// answered HTTP 503.
    pub max_connections: usize,
    /// Outbound messages queued per WebSocket (default 1024); past it the client is a slow
    /// consumer and is closed with 1008.
    pub outbound_queue: usize,
    /// Largest WebSocket message accepted (default 1 MiB).
    pub max_message_bytes: usize,
    /// Longest a single WebSocket write may block (default 10 s, as the Switch peer); past it the
    /// client counts as gone and the connection is dropped.
    pub write_timeout: Duration,
    /// The most conversations one `conversations/list` page holds (default 100, the largest
    /// `limit` it accepts): below a request's `limit`, the page holds this many and its `cursor`
    /// names the rest, as a server capping its pages answers; tests set it to make a client
    /// follow the cursor across pages.
    pub max_conversations_page: usize,
}

impl PeerConfig {
    pub fn new(generation: Generation) -> Self {
        PeerConfig {
            generation,
            faults: Faults::default(),
            ping_interval: Duration::from_secs(30),
            max_connections: 256,
            outbound_queue: 1024,
            max_message_bytes: 1 << 20,
            write_timeout: Duration::from_secs(10),
            max_conversations_page: 100,
        }
    }

    #[must_use]
    pub fn with_faults(mut self, faults: Faults) -> Self {
        self.faults = faults;
        self
    }

    #[must_use]
    pub fn with_ping_interval(mut self, interval: Duration) -> Self {
        self.ping_interval = interval;
        self
    }
}

impl Default for PeerConfig {
    fn default() -> Self {
        PeerConfig::new(Generation::Current)
    }
}

/// What every connection task shares.
pub(crate) struct Peer {
    pub(crate) cfg: PeerConfig,
    pub(crate) faults: Mutex<Faults>,
    pub(crate) state: Mutex<state::State>,
    /// Open WebSocket connections (for `/health`).
    pub(crate) open_ws: AtomicUsize,
    pub(crate) next_conn: AtomicU64,
}

impl Peer {
    pub(crate) fn faults(&self) -> Faults {
        self.faults.lock().unwrap_or_else(PoisonError::into_inner).clone()
    }

    pub(crate) fn state(&self) -> std::sync::MutexGuard<'_, state::State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Takes one garbage message from [`Faults::garbage_before_answers`], if any is left.
    pub(crate) fn take_garbage(&self) -> bool {
        let mut f = self.faults.lock().unwrap_or_else(PoisonError::into_inner);
        if f.garbage_before_answers > 0 {
            f.garbage_before_answers -= 1;
            true
        } else {
            false
        }
    }
}

/// A peer running in the background. Dropping it stops the accept loop too.
pub struct PeerHandle {
    server: Server,
    peer: Arc<Peer>,
}

impl PeerHandle {
    pub fn local_addr(&self) -> SocketAddr {
        self.server.addr()
    }

    /// `ws://ADDR/ws`.
    pub fn ws_url(&self) -> String {
        format!("{}/ws", self.server.ws_url())
    }

    /// `http://ADDR`.
    pub fn http_url(&self) -> String {
        self.server.http_url()
    }

    pub fn generation(&self) -> Generation {
        self.peer.cfg.generation
    }

    /// Replaces the faults; open connections see them from their next frame on.
    pub fn set_faults(&self, faults: Faults) {
        *self.peer.faults.lock().unwrap_or_else(PoisonError::into_inner) = faults;
    }

    pub fn faults(&self) -> Faults {
        self.peer.faults()
    }

    /// Open WebSocket connections.
    pub fn connections(&self) -> usize {
        self.peer.open_ws.load(Ordering::Relaxed)
    }

    /// Stops accepting, closes open WebSockets with 1001 and waits (bounded) for them to end.
    pub async fn shutdown(self) {
        self.server.shutdown().await;
    }
}

/// Starts the peer on `listener` (bind it to 127.0.0.1).
pub fn spawn(listener: TcpListener, cfg: PeerConfig) -> io::Result<PeerHandle> {
    let peer = Arc::new(Peer {
        faults: Mutex::new(cfg.faults.clone()),
        state: Mutex::new(state::State::new(cfg.generation, cfg.max_conversations_page)),
        cfg,
        open_ws: AtomicUsize::new(0),
        next_conn: AtomicU64::new(1),
    });
    let served = peer.clone();
    let server = server::spawn(listener, move |tcp, open, stopped| {
        let peer = served.clone();
        async move { http::connection(tcp, open, &peer, stopped).await }
    })?;
    Ok(PeerHandle { server, peer })
}

/// Binds 127.0.0.1:`port` (0 for any) and starts the peer.
pub async fn bind(port: u16, cfg: PeerConfig) -> io::Result<PeerHandle> {
    spawn(server::listen(port).await?, cfg)
}
