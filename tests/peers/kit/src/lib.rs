//! The plumbing the local test peers (`agentwire-peer-moltzap`, `agentwire-peer-switch`) share,
//! so both read requests, answer and shut down the same way:
//!
//! - [`http`]: one request per TCP connection on a port that also serves WebSockets: the
//!   request head (httparse, at most 16 KiB, within 10 s), a `Content-Length` body (at most
//!   64 KiB), answers with `Connection: close`, the 503 past the connection bound, and
//!   [`http::Prefixed`] to hand an upgrade to tungstenite with the bytes already read replayed.
//! - [`server`]: the accept loop (connection count, an optional periodic task, a bounded wait for
//!   the connection tasks on shutdown), its handle, and Ctrl-C.
//! - [`cli`]: what the peers' command lines (their binaries and `agentwire peers`) share.
//! - [`ws`]: the WebSocket upgrade (size-limited, within a bound) and a close with a grace.
//! - [`ids`]: random bytes, hex, UUIDs and the clock.
//! - [`testing`]: running a peer binary in a test and reading what it prints.
//!
//! What each peer answers (routes, error bodies, the headers it reads) stays in the peer.

pub mod cli;
pub mod http;
pub mod ids;
pub mod server;
pub mod testing;
pub mod ws;
