//! Switch Rooms, sans-IO: the agent connection of the current generation (one WebSocket,
//! `../shared/specs/switch-agent-connection.md`) and of released servers (switch-core 0.19: an
//! SSE stream plus HTTP beats, `../shared/specs/switch-released-0.19.md`). The decisions are in
//! `docs/protocols/switch.md`.
//!
//! - [`open`]: the open request (path and query), validated.
//! - [`frame`]: every frame of both generations, decoded and encoded.
//! - [`sse`]: the SSE parser (any chunk boundary) and encoder.
//! - [`ops`]: operations and the connection routes (subscribe, placements, beat) as HTTP
//!   requests, and their answers.
//! - [`error`]: [`SwitchError`], the one error type.

pub mod connection;
pub mod error;
pub mod frame;
pub mod http;
mod json;
pub mod open;
pub mod ops;
pub mod sse;
pub mod unanswered;

pub use connection::{Connection, ConnectionConfig, Event, State, Transmit, Transport, Wire};
pub use error::SwitchError;
pub use http::{HttpRequest, Method};

/// What a driver of its own transport takes from `agentwire-core` (the connection's `now`, its
/// entropy and backoff, its errors' kind; [`HttpRequest`] and [`Method`] above), so that it
/// needs no dependency of its own on that crate, nor to match its version. The RKT and MoltZap
/// crates re-export the same.
pub use agentwire_core::{Backoff, Clock, Entropy, ErrorKind, Millis, SeededEntropy};
