//! Runs a `wasm32-wasip2` test binary (a WASI command component) in wasmtime, with the process's
//! arguments, environment and standard streams and the host's files read-only, and exits with
//! its exit code. It is cargo's runner for that target (`.cargo/config.toml`), so
//! `cargo test --target wasm32-wasip2` runs the engines' own tests as WebAssembly, with the SIMD
//! the component uses:
//!
//! ```sh
//! cargo build -p agentwire-component-host --bin wasi-test-runner
//! cargo test -p agentwire-core --target wasm32-wasip2 --lib
//! ```

use agentwire_component_host::HostState;
use wasmtime::component::{Component, Linker};
use wasmtime::error::Context;
use wasmtime::{Engine, Result, Store};
use wasmtime_wasi::p2::bindings::sync::Command;
use wasmtime_wasi::{FsPerms, I32Exit, WasiCtx};

fn run(path: &str, args: &[String]) -> Result<i32> {
    let engine = Engine::default();
    let component = Component::from_file(&engine, path).with_context(|| format!("loading {path}"))?;
    let mut linker = Linker::new(&engine);
    wasmtime_wasi::p2::add_to_linker_sync(&mut linker)?;
    let mut ctx = WasiCtx::builder();
    ctx.inherit_stdio().inherit_env().args(args);
    // Read-only, at the same path: the tests read the vectors by their absolute path.
    ctx.preopened_dir("/", "/", FsPerms::ReadOnly)?;
    let mut store = Store::new(&engine, HostState::new(ctx.build()));
    let command = Command::instantiate(&mut store, &component, &linker)?;
    match command.wasi_cli_run().call_run(&mut store) {
        Ok(Ok(())) => Ok(0),
        Ok(Err(())) => Ok(1),
        Err(e) => match e.downcast_ref::<I32Exit>() {
            Some(exit) => Ok(exit.0),
            // A panic aborts (wasm has no unwinding): the trap, and libtest's code for a failure.
            None => {
                eprintln!("wasi-test-runner: {e:?}");
                Ok(101)
            }
        },
    }
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some(path) = args.first() else {
        eprintln!("usage: wasi-test-runner <command.wasm> [args...]");
        std::process::exit(2);
    };
    match run(path, &args) {
        Ok(code) => std::process::exit(code),
        Err(e) => {
            eprintln!("wasi-test-runner: {e:?}");
            std::process::exit(1);
        }
    }
}
