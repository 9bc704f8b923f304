//! MoltZap over WebSocket (`ws://host:port/ws`), both generations, and agent registration over
//! HTTP.

pub mod client;
pub mod register;

pub use client::{ConnectionInfo, Events, MoltZapClient, MoltZapConfig};
pub use register::register;
