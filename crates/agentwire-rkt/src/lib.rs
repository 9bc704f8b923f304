//! RKT, sans-IO: the text codec, the client and server sessions, and the reference agent that
//! `agentwire rkt serve` runs.
//!
//! Nothing here reads a clock or touches a socket: time comes in as `now` (ms since the epoch),
//! frames come in as text, and everything to send, every event and the next deadline are drained
//! with `poll_transmit`, `poll_event` and `poll_timeout`.

// Errors carry the remote ERROR body; they are rare and returned by value on purpose.
#![allow(clippy::result_large_err)]

pub mod body;
pub mod client;
pub mod codec;
mod envelope;
pub mod errors;
mod lines;
pub mod reference;
pub mod resolve;
pub mod server;

pub use body::*;
pub use client::{ClientConfig, ClientEvent, ClientSession, ClientState, PeerInfo, RequestOptions};
pub use codec::{decode, encode, DecodeError, DecodeErrorKind, Headers, Message, MessageType};
pub use errors::{codes, RktError};
pub use server::{Inbound, InboundKind, ServerConfig, ServerEvent, ServerSession, ServerState};
pub use resolve::resolve;
