//! RKT over WebSocket (`ws://host:7749/rkt`, or `wss://` over TLS: see [`crate::tls`];
//! subprotocol `rkt.1.0`). The reference server serves plain `ws://`.

pub mod client;
pub mod server;

pub use client::{
    Events, RktClient, ServerInfo, StreamChunks, EVENT_CAPACITY, EVENT_UNREAD_BYTES, STREAM_CAPACITY,
    STREAM_UNREAD_BYTES, STREAM_UNREAD_BYTES_EACH,
};
pub use server::{serve, serve_until, spawn, ServerHandle};
