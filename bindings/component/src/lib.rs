//! The agentwire engines as a WASI p2 component: `wit/` is the interface
//! (`agentwire:engine@0.1.0`), this crate maps it onto the sans-IO sessions of the engine crates.
//! No protocol logic lives here: each method converts its arguments, calls the engine and
//! converts what comes back. The host owns sockets and clocks.

#[allow(clippy::all, missing_docs)]
mod bindings {
    wit_bindgen::generate!({ world: "engine", path: "wit", generate_all });
}

/// `drain` and `handle-texts-drain` of a `session` resource whose engine is `self.0` (a
/// `RefCell`), in a module with `Drained`, `event` (engine event to WIT) and `$transmit` (engine
/// transmit to WIT): the same in all three interfaces.
macro_rules! drain_methods {
    ($transmit:path) => {
        fn drain(&self) -> Drained {
            let mut s = self.0.borrow_mut();
            Drained {
                transmits: std::iter::from_fn(|| s.poll_transmit().map($transmit)).collect(),
                events: std::iter::from_fn(|| s.poll_event().map(event)).collect(),
                timeout: s.poll_timeout(),
            }
        }

        fn handle_texts_drain(&self, now: u64, texts: Vec<String>) -> Drained {
            for text in &texts {
                self.0.borrow_mut().handle_text(now, text);
            }
            self.drain()
        }
    };
}

mod common;
mod moltzap;
mod rkt;
mod switch;

/// The component's exports.
pub struct Engine;

// Exported on wasm32 only: a native build (the workspace's `cargo test`) has no use for the
// component's symbols, and their names (`agentwire:engine/rkt@0.1.0#[constructor]session`) break
// the linker's version script of the native cdylib.
#[cfg(target_arch = "wasm32")]
bindings::export!(Engine with_types_in bindings);
