//! A wasmtime host for the agentwire component (`bindings/component`, WIT package
//! `agentwire:engine@0.1.0`). It owns what the component leaves to its host: sockets, HTTP and
//! the clock. [`Runtime`] compiles the component once; [`Instance`] is one store with the
//! component instantiated; `rkt`, `moltzap` and `switch` drive one session each over a real
//! socket.
//!
//! The component is built by `scripts/component.sh` into `target/component/`;
//! `AGENTWIRE_COMPONENT` overrides its path.

pub mod defaults;
pub mod moltzap;
pub mod net;
pub mod rkt;
pub mod switch;
pub mod ws;

use anyhow::{bail, Context, Result};
use std::path::PathBuf;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};
use wasmtime::component::{Component, Linker, ResourceTable};
use wasmtime::{Config, Engine, Store};
use wasmtime_wasi::{WasiCtx, WasiCtxView, WasiView};

/// The host side of the WIT world, generated from `bindings/component/wit`.
pub mod bindings {
    wasmtime::component::bindgen!({ world: "engine", path: "../../bindings/component/wit" });
}

pub use bindings::exports::agentwire::engine::types::{EngineError, ErrorKind, Outgoing};

/// Where the component is: `AGENTWIRE_COMPONENT`, else the workspace's `component` build.
pub fn component_path() -> PathBuf {
    match std::env::var_os("AGENTWIRE_COMPONENT") {
        Some(p) => PathBuf::from(p),
        None => PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../target/component/agentwire_component.wasm"),
    }
}

/// A driver: one round of I/O at a time, and the events the session gave.
pub trait Drive {
    type Event;

    /// One round: send what the session queued, read one input (bounded by the next timer),
    /// feed it, fire a due timer, collect the events.
    fn turn(&mut self) -> Result<()>;

    /// The oldest event collected, if any.
    fn pop(&mut self) -> Option<Self::Event>;

    /// The next event, within `within`.
    fn next(&mut self, within: Duration) -> Result<Self::Event> {
        let end = Instant::now() + within;
        loop {
            if let Some(e) = self.pop() {
                return Ok(e);
            }
            if Instant::now() >= end {
                bail!("no event within {within:?}");
            }
            self.turn()?;
        }
    }

    /// Events until `pick` returns something, within `within`; the events passed over with it.
    fn until<T>(
        &mut self,
        within: Duration,
        mut pick: impl FnMut(&Self::Event) -> Option<T>,
    ) -> Result<(T, Vec<Self::Event>)> {
        let end = Instant::now() + within;
        let mut skipped = Vec::new();
        loop {
            let e = self.next(end.saturating_duration_since(Instant::now()))?;
            if let Some(t) = pick(&e) {
                return Ok((t, skipped));
            }
            skipped.push(e);
        }
    }
}

/// Milliseconds since the Unix epoch: the `now` every call takes.
pub fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

/// A store's data: a WASI context and its resource table. The component's stores get an empty
/// context, behind its one import, `wasi:random/random` (no files, no environment, no sockets);
/// `wasi-test-runner` gives its test binaries more.
pub struct HostState {
    ctx: WasiCtx,
    table: ResourceTable,
}

impl HostState {
    /// A store's data with `ctx`.
    pub fn new(ctx: WasiCtx) -> HostState {
        HostState {
            ctx,
            table: ResourceTable::new(),
        }
    }
}

impl WasiView for HostState {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView {
            ctx: &mut self.ctx,
            table: &mut self.table,
        }
    }
}

/// The engine, the compiled component and its linker: made once, instantiated many times.
pub struct Runtime {
    engine: Engine,
    component: Component,
    linker: Linker<HostState>,
}

impl Runtime {
    /// Compiles the component at [`component_path`].
    pub fn load() -> Result<Runtime> {
        let path = component_path();
        let bytes = std::fs::read(&path)
            .with_context(|| format!("no component at {} (build it: scripts/component.sh)", path.display()))?;
        Runtime::from_bytes(&bytes)
    }

    pub fn from_bytes(bytes: &[u8]) -> Result<Runtime> {
        let mut config = Config::new();
        // `AGENTWIRE_PERFMAP=1`: name the component's compiled functions for `perf`.
        if std::env::var_os("AGENTWIRE_PERFMAP").is_some() {
            config.profiler(wasmtime::ProfilingStrategy::PerfMap);
        }
        let engine = Engine::new(&config)?;
        let component = Component::new(&engine, bytes)?;
        let mut linker = Linker::new(&engine);
        wasmtime_wasi::p2::add_to_linker_sync(&mut linker)?;
        Ok(Runtime {
            engine,
            component,
            linker,
        })
    }

    /// Every import of the component, by name (`wasi:random/random@0.2.x`, ...).
    pub fn imports(&self) -> Vec<String> {
        self.component
            .component_type()
            .imports(&self.engine)
            .map(|(name, _)| name.to_owned())
            .collect()
    }

    /// Every export of the component, by name.
    pub fn exports(&self) -> Vec<String> {
        self.component
            .component_type()
            .exports(&self.engine)
            .map(|(name, _)| name.to_owned())
            .collect()
    }

    /// A fresh store with the component instantiated.
    pub fn instantiate(&self) -> Result<Instance> {
        let mut store = Store::new(&self.engine, HostState::new(WasiCtx::builder().build()));
        let engine = bindings::Engine::instantiate(&mut store, &self.component, &self.linker)?;
        Ok(Instance { store, engine })
    }
}

/// One instance of the component and its store.
pub struct Instance {
    pub store: Store<HostState>,
    pub engine: bindings::Engine,
}
