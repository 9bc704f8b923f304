//! The component in a wasmtime host: against the local peers over real sockets (`peers`), and
//! under bad input (`garbage`), drains (`drain`), opens no retry mends (`opens`), configs
//! (`config`) and Switch calls that got no answer (`unanswered`). One test binary, so the
//! component is compiled once.

mod config;
mod drain;
mod garbage;
mod opens;
mod peers;
mod unanswered;

use agentwire_component_host::Runtime;
use std::sync::OnceLock;

/// The component, compiled once for every test.
fn runtime() -> &'static Runtime {
    static RT: OnceLock<Runtime> = OnceLock::new();
    RT.get_or_init(|| Runtime::load().expect("the component loads"))
}
