//! agentwire for JavaScript hosts (browsers, Node, Workers): wasm-bindgen drivers that run the
//! engines over the host's `WebSocket` (or an injected constructor) and `fetch`, and the sans-IO
//! sessions themselves for users who bring their own transport. The npm package `agentwire`
//! (`npm/`) wraps this module in an idiomatic TypeScript API.
//!
//! Every protocol decision is in the engine crates; a driver only moves frames, time and timer
//! ticks in and the engine's frames and events out. Values cross as JSON text: JavaScript's
//! `JSON.parse` is faster than building objects through the boundary.

// Engine errors carry what the peer said; they are returned by value on purpose, as in the engines.
#![allow(clippy::result_large_err)]

#[cfg(not(any(feature = "rkt", feature = "moltzap", feature = "switch")))]
compile_error!("agentwire-wasm needs at least one protocol: the features rkt, moltzap, switch");

mod errors;
mod host;
#[cfg(feature = "moltzap")]
pub mod moltzap;
mod outgoing;
#[cfg(feature = "rkt")]
pub mod rkt;
mod socket;
#[cfg(feature = "switch")]
pub mod switch;

pub use errors::{error_kinds, event_types, last_panic, set_error_factory};

use wasm_bindgen::prelude::*;

#[wasm_bindgen(start)]
fn start() {
    errors::install_panic_hook();
}
