//! RKT, sans-IO: the text codec, the client and server sessions, and the reference agent that
//! `agentwire rkt serve` runs.
//!
//! Nothing here reads a clock or touches a socket: time comes in as `now` (ms since the epoch),
//! frames come in as text, and everything to send, every event and the next deadline are drained
//! with `poll_transmit`, `poll_event` and `poll_timeout`. The protocol as implemented is in
//! `docs/protocols/rkt.md`.
//!
//! A driver of its own transport opens the WebSocket with the subprotocol
//! [`codec::SUBPROTOCOL`] (`rkt.1.0`, which servers require), calls `handle_open`, and after
//! every input *and every command* (a `request` queues its frame) drains `poll_transmit` and
//! `poll_event` until both are empty, then calls `handle_timeout` at `poll_timeout` (which may
//! be `now` or already past: a deadline a late driver missed; wait with a saturating
//! subtraction). A [`ClientSession`] serves one connection: after [`ClientEvent::Closed`] it
//! ignores everything (a `handle_open` too), and a new connection takes a new session.
//!
//! `now` must never decrease. Read it through [`Clock`] (the wall clock kept
//! steady by a monotonic one), as the native and npm drivers do: the wall clock alone
//! (`SystemTime::now()`) steps back with an NTP correction, and every deadline then waits out the
//! step (the keepalive PING does not leave, and the server ends the session as idle).
//!
//! A client and a reference server wired back to back, the way a driver wires a socket:
//!
//! ```
//! use agentwire_rkt::reference::{self, Connection, ReferenceConfig, Shared};
//! use agentwire_rkt::{ClientConfig, ClientEvent, ClientSession, Outgoing, RequestOptions, SeededEntropy};
//! use agentwire_rkt::{ServerEvent, ServerSession};
//!
//! let now = 1_782_648_000_000;
//! let cfg = ReferenceConfig::default();
//! let (mut shared, mut conn) = (Shared::new(&cfg), Connection::new(&cfg));
//! let mut server = ServerSession::new(cfg.server_config(), Box::new(SeededEntropy::new(1)));
//! let mut client = ClientSession::new(ClientConfig::default(), Box::new(SeededEntropy::new(2)));
//! let mut entropy = SeededEntropy::new(3);
//!
//! server.handle_open(now); // the HELLO deadline
//! client.handle_open(now); // sends HELLO
//! let id = client.request(now, "weather.current", Some(serde_json::json!({"city": "Seoul"})), RequestOptions::default())?;
//! let mut answer = None;
//! for _ in 0..4 {
//!     while let Some(Outgoing::Text(t)) = client.poll_transmit() { server.handle_text(now, &t); }
//!     while let Some(ev) = server.poll_event() {
//!         if let ServerEvent::Inbound(msg) = ev {
//!             reference::handle(&cfg, &mut shared, &mut conn, &mut server, &mut entropy, now, msg);
//!         }
//!     }
//!     while let Some(Outgoing::Text(t)) = server.poll_transmit() { client.handle_text(now, &t); }
//!     while let Some(ev) = client.poll_event() {
//!         if let ClientEvent::Response { id: rid, body } = ev { if rid == id { answer = body; } }
//!     }
//! }
//! let body: serde_json::Value = serde_json::from_str(&answer.unwrap()).unwrap();
//! assert_eq!(body["data"]["temperature"], 24);
//! conn.close(&mut shared); // the socket is gone: the connection's own credit goes with it
//! # Ok::<(), agentwire_rkt::RktError>(())
//! ```

// Errors carry the remote ERROR body; they are rare and returned by value on purpose.
#![allow(clippy::result_large_err)]

pub mod body;
pub mod client;
pub mod codec;
mod envelope;
pub mod errors;
pub mod json;
mod lines;
pub mod reference;
pub mod resolve;
pub mod server;

pub use body::*;
pub use client::{ClientConfig, ClientEvent, ClientSession, ClientState, PeerInfo, RequestOptions};
pub use codec::{decode, encode, DecodeError, DecodeErrorKind, Headers, Message, MessageType};
pub use errors::{codes, RktError};
pub use resolve::resolve;
pub use server::{Inbound, InboundKind, ServerConfig, ServerEvent, ServerSession, ServerState};

/// What a driver of its own transport takes from `agentwire-core` (the sessions' `now`, their
/// entropy, their frames, their errors), so that it needs no dependency of its own on that crate,
/// nor to match its version. The MoltZap and Switch crates re-export the same.
pub use agentwire_core::{Clock, Entropy, Error, ErrorKind, Millis, Outgoing, SeededEntropy};
