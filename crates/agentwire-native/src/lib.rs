//! tokio drivers of the agentwire engines. A driver only moves bytes, time and events: every
//! protocol decision is the engine's.
//!
//! - [`rkt::server`]: the reference RKT agent on a `TcpListener`.
//! - [`rkt::client`]: [`rkt::RktClient`], an async RKT client.
//! - [`moltzap`]: [`moltzap::MoltZapClient`], an async MoltZap client (both generations), and
//!   [`moltzap::register()`].
//! - [`switch`]: [`switch::SwitchClient`], a Switch Rooms agent connection (WebSocket, or SSE
//!   plus beats for switch-core 0.19) with operations over HTTP/1.1.
//! - [`events`]: the channel of a client's events, bounded in count and in bytes.
//! - [`tls`]: every client connection is plain (`ws://`, `http://`) or TLS (`wss://`,
//!   `https://`; rustls on ring, webpki-roots plus the roots added there).
//!
//! Examples that run against the local peers (`scripts/play.sh` starts them and prints their keys):
//! `examples/rkt.rs`, `examples/moltzap.rs`, `examples/switch.rs`, e.g.
//! `cargo run -p agentwire-native --example rkt -- ws://127.0.0.1:7749/rkt`. CI runs all three.
//!
//! Every client may be shared between tasks (`Arc`; its calls take `&self`, their futures are
//! `Send`) and its futures dropped anywhere (`tokio::time::timeout`, `tokio::select!`): each
//! client's and server's "Cancel safety" section says what a dropped call, `connect`, `close` or
//! receiver leaves.
//!
//! The RKT and MoltZap drivers keep their socket in a `wire::Wire`, the WebSocket plumbing they
//! share, and take their calls through `call` (a dropped call cancels its command in the
//! engine); the Switch driver has its own (a connection outlives its sockets, and one may be an SSE
//! stream).
//!
//! # In tests: runtimes and paused time
//!
//! Each connection runs as a task on the runtime that connected it (a current-thread runtime,
//! `#[tokio::test]`'s, will do: nothing blocks it; the runtime needs its IO and time drivers, as
//! `enable_all` gives, or tokio panics at `connect` saying which is disabled). Its calls may come
//! from any runtime, but the task moves only while its own runtime runs: a client connected in one
//! `block_on` of a current-thread runtime and called from another runtime waits until the first
//! runs again. A client whose runtime was dropped (a runtime per test) fails every call `closed`
//! at once, and may be dropped anywhere, outside any runtime too.
//!
//! The time a connection's engine runs on is [`now_ms`] (within a few milliseconds) on a runtime
//! whose clock is not paused: it follows the clock of the runtime the connection runs on, so
//! tokio's paused time (`#[tokio::test(start_paused = true)]`, `tokio::time::pause` and
//! `advance`) drives every engine timer (call timeouts, keepalives,
//! handshakes, reconnects, heartbeats): a call with a 5 s timeout fails at the `advance` that moves
//! the clock 5 s, as a tokio `sleep` would. Paused time moves on by itself whenever the runtime has
//! nothing to do, though, even while it waits on a real socket (tokio's auto-advance): with peers
//! in the same runtime that is at once, but a peer outside it (another thread, process or machine)
//! may seem not to answer within a timeout.

// `RktError` (the engine's error, returned by value as the engine does) and tungstenite's
// `ErrorResponse` (its upgrade callback's signature) are large: that is their API, not ours.
#![allow(clippy::result_large_err)]

mod call;
mod clock;
pub mod events;
mod http;
mod log;
pub mod moltzap;
mod pump;
pub mod rkt;
pub mod switch;
pub mod tls;
mod wire;

pub use clock::{now_ms, OsEntropy};
