//! RKT over WebSocket (`ws://host:7749/rkt`, subprotocol `rkt.1.0`).

pub mod client;
pub mod server;

pub use client::{RktClient, ServerInfo, StreamChunks};
pub use server::{serve, serve_until, spawn, ServerHandle};
