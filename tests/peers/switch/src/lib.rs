//! A Switch Rooms test peer: an in-memory Switch server on 127.0.0.1 for end-to-end tests and
//! the playground, in either generation.
//!
//! - One port serves HTTP and the WebSocket: the request head is read here (with
//!   `agentwire-peer-kit`), a WebSocket upgrade is handed to tungstenite with those bytes
//!   replayed.
//! - [`Generation::Current`]: the WebSocket at `/agents/{id}/connection/ws` (pings, pongs,
//!   refusals as `refused` frames and 4000 + status closes) **and** the SSE stream + beats.
//! - [`Generation::Released`] (switch-core 0.19): the SSE stream at `/agents/{id}/events` and
//!   `POST .../connection/beat` only; a WebSocket upgrade gets HTTP 403 (valid key) or 401.
//! - Operations (`GET /agents/{id}/ops`, `POST /agents/{id}/ops/{name}`), the connection routes
//!   (subscribe, unsubscribe, placements, beat) and registration (`POST /agents`).
//! - [`Faults`] make it misbehave on purpose; [`PeerHandle::restart`] simulates a restart.
//!
//! Every frame is built as an `agentwire_switch::frame::Frame` and written with the engine's
//! encoders (`frame::encode`, `frame::sse_parts` + `sse::encode_event`). See
//! `tests/peers/README.md` for what is served, the bounds and what is left out. The HTTP
//! plumbing and the accept loop are `agentwire-peer-kit`'s; [`Args`] and [`run`] are the command
//! line of the `switch-peer` binary and of `agentwire peers switch`.

mod cli;
mod frames;
mod http;
mod ops;
mod pump;
mod query;
mod routes;
mod sse;
mod state;
mod util;
mod ws;

pub use cli::{run, Args};

use agentwire_peer_kit::server::{self, Server};
use std::io;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;
use tokio::net::TcpListener;
use tokio::sync::watch;

/// Which server the peer is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Generation {
    /// The WebSocket route and the SSE stream + beat (agent-protocol 6, accepts 1).
    Current,
    /// switch-core 0.19: SSE + beat only (agent-protocol 1); a WebSocket upgrade gets HTTP 403
    /// with a valid key, 401 without.
    Released,
}

impl Generation {
    pub fn as_str(self) -> &'static str {
        match self {
            Generation::Current => "current",
            Generation::Released => "released",
        }
    }
}

/// Misbehaviour on purpose, for every socket and stream while set.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Faults {
    /// Drop each socket/stream abruptly (TCP close, no WS close frame) after it has sent this
    /// many domain events.
    pub drop_after_events: Option<u64>,
    /// While set: write nothing more to any open socket/stream (no pings, no events, no
    /// keepalives); the TCP connection stays open. HTTP routes (ops, beats) keep answering.
    pub stall: bool,
    /// Before every Nth domain event sent on a socket/stream, send one garbage frame (WS: the
    /// text `}{ not json`; SSE: an `event: message` frame whose data is not JSON).
    pub garbage_every: Option<u64>,
    /// Send no pings (WebSocket generation).
    pub no_pings: bool,
    /// Treat pongs and beats as never arriving, so connections lapse (evicted
    /// heartbeat_lapsed) even with a healthy client.
    pub ignore_heartbeats: bool,
}

/// How the peer runs.
#[derive(Debug, Clone)]
pub struct PeerConfig {
    pub generation: Generation,
    pub faults: Faults,
    /// Ping interval (WebSocket); the beat interval announced in `connection_state` (2 s).
    pub heartbeat_interval: Duration,
    /// No pong/beat for this long → evicted `heartbeat_lapsed` (6 s).
    pub heartbeat_ttl: Duration,
    /// SSE `: keepalive` comment when idle (15 s).
    pub keepalive: Duration,
    /// Events buffered per agent (2000).
    pub replay_capacity: usize,
    /// Oldest event kept in the buffer (15 min).
    pub replay_max_age: Duration,
    /// Live connections per agent (32).
    pub max_connections_per_agent: usize,
    /// Bearer token for `POST /agents` (default `switch-peer-registration`, for tests; the
    /// command line's default is random per run).
    pub registration_token: String,
}

impl PeerConfig {
    pub fn new(generation: Generation) -> Self {
        PeerConfig {
            generation,
            faults: Faults::default(),
            heartbeat_interval: Duration::from_secs(2),
            heartbeat_ttl: Duration::from_secs(6),
            keepalive: Duration::from_secs(15),
            replay_capacity: 2000,
            replay_max_age: Duration::from_secs(15 * 60),
            max_connections_per_agent: 32,
            registration_token: "switch-peer-registration".to_owned(),
        }
    }
}

impl Default for PeerConfig {
    fn default() -> Self {
        PeerConfig::new(Generation::Current)
    }
}

/// A registered agent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Agent {
    /// A UUID.
    pub id: String,
    pub name: String,
    /// `sk_switch_<hex>`.
    pub key: String,
}

/// Open TCP connections at once; past it a connection is answered 503.
pub(crate) const MAX_TCP: usize = 256;

/// What every task shares.
pub(crate) struct Peer {
    pub(crate) cfg: PeerConfig,
    pub(crate) faults: watch::Sender<Faults>,
    pub(crate) state: Mutex<state::State>,
}

impl Peer {
    pub(crate) fn faults(&self) -> Faults {
        self.faults.borrow().clone()
    }

    pub(crate) fn state(&self) -> MutexGuard<'_, state::State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// A peer running in the background. Dropping it stops the accept loop too.
pub struct PeerHandle {
    server: Server,
    peer: Arc<Peer>,
}

impl PeerHandle {
    pub fn addr(&self) -> SocketAddr {
        self.server.addr()
    }

    /// `http://127.0.0.1:PORT`.
    pub fn http_url(&self) -> String {
        self.server.http_url()
    }

    /// `ws://127.0.0.1:PORT`.
    pub fn ws_url(&self) -> String {
        self.server.ws_url()
    }

    pub fn generation(&self) -> Generation {
        self.peer.cfg.generation
    }

    /// Registers an agent (as `POST /agents` does).
    pub fn add_agent(&self, name: &str) -> Agent {
        self.peer.state().add_agent(name)
    }

    /// Creates a room with these member agents (unknown ids are skipped); its id (a UUID).
    pub fn add_room(&self, name: &str, member_agent_ids: &[&str]) -> String {
        self.peer.state().add_room(name, member_agent_ids)
    }

    /// A message from a human user in the room (sender `@USER:localhost`), fanned out to every
    /// member agent, addressed to those named `@name` in the body. Its Matrix-style event id
    /// (empty when the room does not exist).
    pub fn post_as_user(&self, room_id: &str, user: &str, body: &str) -> String {
        self.peer.state().post_as_user(room_id, user, body).unwrap_or_default()
    }

    /// Replaces the faults; open sockets and streams see them from their next frame on.
    pub fn set_faults(&self, faults: Faults) {
        self.peer.faults.send_replace(faults);
    }

    pub fn faults(&self) -> Faults {
        self.peer.faults()
    }

    /// Simulates a server restart: every socket is closed with 1012, every stream ends, every
    /// connection is forgotten. With `lose_numbering`, every agent's sequence restarts at 0 and
    /// the buffers are emptied.
    pub fn restart(&self, lose_numbering: bool) {
        self.peer.state().restart(lose_numbering);
    }

    /// Live connections of an agent (attached or within their TTL).
    pub fn connections(&self, agent_id: &str) -> usize {
        self.peer.state().connections(agent_id)
    }

    /// The agent's current head sequence.
    pub fn head(&self, agent_id: &str) -> u64 {
        self.peer.state().head(agent_id)
    }

    /// Stops accepting, ends every socket (WS close 1001) and stream, and waits (bounded) for
    /// the tasks to end.
    pub async fn shutdown(self) {
        self.server.shutdown().await;
    }
}

/// Serves on `listener` (bind it to 127.0.0.1). One port serves HTTP and the WebSocket.
pub fn spawn(listener: TcpListener, cfg: PeerConfig) -> io::Result<PeerHandle> {
    let (faults, _) = watch::channel(cfg.faults.clone());
    let every = reap_every(&cfg);
    let peer = Arc::new(Peer {
        faults,
        state: Mutex::new(state::State::new(&cfg)),
        cfg,
    });
    let (served, reaped) = (peer.clone(), peer.clone());
    let server = server::spawn_with_tick(
        listener,
        move |tcp, open, stopped| {
            let peer = served.clone();
            async move { http::connection(tcp, open, &peer, stopped).await }
        },
        every,
        move || reaped.state().reap(tokio::time::Instant::now()),
    )?;
    Ok(PeerHandle { server, peer })
}

/// Binds 127.0.0.1:`port` (0 = any free port) and spawns.
pub async fn bind(port: u16, cfg: PeerConfig) -> io::Result<PeerHandle> {
    spawn(server::listen(port).await?, cfg)
}

/// How often connections are checked for a lapsed heartbeat.
fn reap_every(cfg: &PeerConfig) -> Duration {
    (cfg.heartbeat_ttl / 8).clamp(Duration::from_millis(10), Duration::from_millis(500))
}
