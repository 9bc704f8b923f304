//! RKT over WebSocket (`ws://host:7749/rkt`, subprotocol `rkt.1.0`).

pub mod client;
pub mod server;

pub use client::{RktClient, ServerInfo, StreamChunks};
pub use server::{serve, serve_until, spawn, ServerHandle};

/// Bytes allowed on a WebSocket message beyond the engine's `max_message_size`, so a message
/// just over the limit still reaches the engine and gets its RKT error reply, while a far larger
/// one is refused by the WebSocket layer before it is buffered.
const FRAME_SLACK: usize = 4096;
