//! The agentwire engines as a WASI p2 component: `wit/` is the interface
//! (`agentwire:engine@0.1.0`), this crate maps it onto the sans-IO sessions of the engine crates.
//! No protocol logic lives here: each method converts its arguments, calls the engine and
//! converts what comes back. The host owns sockets and clocks.

#[allow(clippy::all, missing_docs)]
mod bindings {
    wit_bindgen::generate!({ world: "engine", path: "wit", generate_all });
}

mod common;
mod moltzap;
mod rkt;
mod switch;

/// The component's exports.
pub struct Engine;

bindings::export!(Engine with_types_in bindings);
