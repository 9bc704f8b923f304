//! A driver for a component session over one WebSocket (RKT, MoltZap): what the session queues
//! goes on the socket, what the socket gives goes into the session with the time, and timers
//! fire at `poll-timeout`.

use crate::bindings::Engine;
use crate::net::{Input, Socket};
use crate::{now_ms, Drive, HostState, Instance, Outgoing, Runtime};
use anyhow::Result;
use std::collections::VecDeque;
use std::time::Duration;
use wasmtime::component::ResourceAny;
use wasmtime::Store;

/// The longest a read waits before timers are looked at again.
const TICK: Duration = Duration::from_millis(50);

type S<'a> = &'a mut Store<HostState>;

/// One interface's `session` resource, as far as the driver needs it.
pub trait Protocol {
    /// The interface's `GuestSession`.
    type Api<'a>;
    type Event;
    const SUBPROTOCOL: Option<&'static str>;
    fn api(engine: &Engine) -> Self::Api<'_>;
    fn handle_open(api: &Self::Api<'_>, store: S<'_>, s: ResourceAny, now: u64) -> wasmtime::Result<()>;
    fn handle_input(api: &Self::Api<'_>, store: S<'_>, s: ResourceAny, now: u64, input: Input) -> wasmtime::Result<()>;
    fn handle_timeout(api: &Self::Api<'_>, store: S<'_>, s: ResourceAny, now: u64) -> wasmtime::Result<()>;
    fn poll_transmit(api: &Self::Api<'_>, store: S<'_>, s: ResourceAny) -> wasmtime::Result<Option<Outgoing>>;
    fn poll_event(api: &Self::Api<'_>, store: S<'_>, s: ResourceAny) -> wasmtime::Result<Option<Self::Event>>;
    fn poll_timeout(api: &Self::Api<'_>, store: S<'_>, s: ResourceAny) -> wasmtime::Result<Option<u64>>;
}

pub struct Ws<P: Protocol> {
    inst: Instance,
    session: ResourceAny,
    socket: Socket,
    events: VecDeque<P::Event>,
}

impl<P: Protocol> Ws<P> {
    /// Opens `url`, then a session made by `make` from the interface's API; `handle-open` is
    /// called.
    pub fn open(
        rt: &Runtime,
        url: &str,
        make: impl FnOnce(&P::Api<'_>, S<'_>) -> wasmtime::Result<ResourceAny>,
    ) -> Result<Ws<P>> {
        let socket = Socket::connect(url, P::SUBPROTOCOL, &[])?;
        let mut inst = rt.instantiate()?;
        let session = {
            let api = P::api(&inst.engine);
            let session = make(&api, &mut inst.store)?;
            P::handle_open(&api, &mut inst.store, session, now_ms())?;
            session
        };
        Ok(Ws {
            inst,
            session,
            socket,
            events: VecDeque::new(),
        })
    }

    /// Calls the session: `f(api, store, session)`. Follow with [`Drive::next`] or
    /// [`Drive::until`], which send what it queued.
    pub fn with<T>(&mut self, f: impl FnOnce(&P::Api<'_>, S<'_>, ResourceAny) -> wasmtime::Result<T>) -> Result<T> {
        let Instance { store, engine } = &mut self.inst;
        Ok(f(&P::api(engine), store, self.session)?)
    }

    /// Sends what the session queued and collects its events.
    fn flush(&mut self) -> Result<()> {
        let Instance { store, engine } = &mut self.inst;
        let api = P::api(engine);
        while let Some(out) = P::poll_transmit(&api, store, self.session)? {
            match out {
                Outgoing::Text(t) => self.socket.send_text(t)?,
                Outgoing::Binary(b) => self.socket.send_binary(b)?,
                Outgoing::Close(c) => self.socket.close(c.code, c.reason),
            }
        }
        while let Some(e) = P::poll_event(&api, store, self.session)? {
            self.events.push_back(e);
        }
        Ok(())
    }
}

impl<P: Protocol> Drive for Ws<P> {
    type Event = P::Event;

    /// One round: flush, read one input (bounded by the next timer), feed it, fire a due timer.
    fn turn(&mut self) -> Result<()> {
        self.flush()?;
        if !self.events.is_empty() {
            return Ok(());
        }
        let due = self.with(|api, store, s| P::poll_timeout(api, store, s))?;
        let wait = due.map_or(TICK, |d| Duration::from_millis(d.saturating_sub(now_ms())).min(TICK));
        let input = self.socket.next(wait);
        self.with(|api, store, s| P::handle_input(api, store, s, now_ms(), input))?;
        if due.is_some_and(|d| now_ms() >= d) {
            self.with(|api, store, s| P::handle_timeout(api, store, s, now_ms()))?;
        }
        self.flush()
    }

    fn pop(&mut self) -> Option<P::Event> {
        self.events.pop_front()
    }
}

impl<P: Protocol> Drop for Ws<P> {
    fn drop(&mut self) {
        let _ = self.session.resource_drop(&mut self.inst.store);
    }
}

/// [`Protocol`] for one WIT interface whose `session` has the WebSocket shape: `$name` is the
/// type made, `$iface` the interface's module, `$getter` the world's accessor for it, `$sub` the
/// subprotocol, and the closure what a WebSocket ping does.
#[macro_export]
macro_rules! ws_protocol {
    ($name:ident, $iface:ident, $getter:ident, $sub:expr, |$api:ident, $store:ident, $s:ident, $now:ident| $ping:expr) => {
        pub struct $name;

        impl $crate::ws::Protocol for $name {
            type Api<'a> = $crate::bindings::exports::agentwire::engine::$iface::GuestSession<'a>;
            type Event = $crate::bindings::exports::agentwire::engine::$iface::Event;
            const SUBPROTOCOL: Option<&'static str> = $sub;

            fn api(engine: &$crate::bindings::Engine) -> Self::Api<'_> {
                engine.$getter().session()
            }

            fn handle_open(
                api: &Self::Api<'_>,
                store: &mut wasmtime::Store<$crate::HostState>,
                s: wasmtime::component::ResourceAny,
                now: u64,
            ) -> wasmtime::Result<()> {
                api.call_handle_open(store, s, now)
            }

            fn handle_input(
                api: &Self::Api<'_>,
                store: &mut wasmtime::Store<$crate::HostState>,
                s: wasmtime::component::ResourceAny,
                now: u64,
                input: $crate::net::Input,
            ) -> wasmtime::Result<()> {
                use $crate::net::Input;
                match input {
                    Input::Text(t) => api.call_handle_text(store, s, now, &t),
                    Input::Binary(b) => api.call_handle_binary(store, s, now, &b),
                    Input::Closed { code, reason } => api.call_handle_close(store, s, now, code, &reason),
                    Input::Ping => {
                        let ($api, $store, $s, $now) = (api, store, s, now);
                        $ping
                    }
                    Input::Idle => Ok(()),
                }
            }

            fn handle_timeout(
                api: &Self::Api<'_>,
                store: &mut wasmtime::Store<$crate::HostState>,
                s: wasmtime::component::ResourceAny,
                now: u64,
            ) -> wasmtime::Result<()> {
                api.call_handle_timeout(store, s, now)
            }

            fn poll_transmit(
                api: &Self::Api<'_>,
                store: &mut wasmtime::Store<$crate::HostState>,
                s: wasmtime::component::ResourceAny,
            ) -> wasmtime::Result<Option<$crate::Outgoing>> {
                api.call_poll_transmit(store, s)
            }

            fn poll_event(
                api: &Self::Api<'_>,
                store: &mut wasmtime::Store<$crate::HostState>,
                s: wasmtime::component::ResourceAny,
            ) -> wasmtime::Result<Option<Self::Event>> {
                api.call_poll_event(store, s)
            }

            fn poll_timeout(
                api: &Self::Api<'_>,
                store: &mut wasmtime::Store<$crate::HostState>,
                s: wasmtime::component::ResourceAny,
            ) -> wasmtime::Result<Option<u64>> {
                api.call_poll_timeout(store, s)
            }
        }
    };
}
