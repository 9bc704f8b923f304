//! Switch through the component: the host carries out the connection's transmits (open a
//! WebSocket, send a pong, make an HTTP call, close), adding `Authorization: Bearer <key>`, and
//! feeds back what happens. This host opens WebSockets only: an SSE open is answered as failed,
//! so give `transport: websocket`.

use crate::bindings::exports::agentwire::engine::switch::{Config, Event, GuestSession, HttpRequest, Transmit, Wire};
use crate::bindings::Engine;
use crate::net::{http, Input, NoAnswer, Socket};
use crate::{now_ms, Drive, EngineError, ErrorKind, HostState, Instance, Runtime};
use anyhow::{bail, Result};
use std::collections::VecDeque;
use std::time::Duration;
use wasmtime::component::ResourceAny;
use wasmtime::Store;

const TICK: Duration = Duration::from_millis(50);

type S<'a> = &'a mut Store<HostState>;

pub struct SwitchSession {
    inst: Instance,
    session: ResourceAny,
    /// `http://host:port` of the Switch server.
    base: String,
    key: String,
    socket: Option<Socket>,
    events: VecDeque<Event>,
}

fn api(engine: &Engine) -> GuestSession<'_> {
    engine.agentwire_engine_switch().session()
}

impl SwitchSession {
    /// A connection to `base` as the agent whose API key is `key`, started.
    pub fn start(rt: &Runtime, base: &str, key: &str, config: &Config) -> Result<SwitchSession> {
        let mut inst = rt.instantiate()?;
        let session = api(&inst.engine).call_constructor(&mut inst.store, config)?;
        let mut me = SwitchSession {
            inst,
            session,
            base: base.trim_end_matches('/').to_owned(),
            key: key.to_owned(),
            socket: None,
            events: VecDeque::new(),
        };
        if let Err(e) = me.with(|api, store, s| api.call_start(store, s, now_ms()))? {
            bail!("start refused: {}", e.message);
        }
        Ok(me)
    }

    /// Calls the session: `f(api, store, session)`.
    pub fn with<T>(
        &mut self,
        f: impl FnOnce(&GuestSession<'_>, S<'_>, ResourceAny) -> wasmtime::Result<T>,
    ) -> Result<T> {
        let Instance { store, engine } = &mut self.inst;
        Ok(f(&api(engine), store, self.session)?)
    }

    /// The request's headers with the agent's key.
    fn headers(&self, request: &HttpRequest) -> Vec<(String, String)> {
        let mut h = request.headers.clone();
        h.push(("Authorization".into(), format!("Bearer {}", self.key)));
        h
    }

    /// Makes an HTTP request the engine wrote: status and body.
    pub fn call(&self, request: &HttpRequest) -> Result<(u16, String), NoAnswer> {
        http(
            &self.base,
            &request.method,
            &request.path,
            &self.headers(request),
            request.body.as_deref(),
        )
    }

    /// Runs operation `name` with `args` (JSON) on this connection: its result as JSON text.
    /// Its answer goes to `op-result` with the request; a call that got none, to `op-failed`.
    pub fn op(&mut self, name: &str, args: &str) -> Result<Result<String, EngineError>> {
        let (agent, conn) = (
            self.with(|a, st, s| a.call_agent_id(st, s))?,
            self.with(|a, st, s| a.call_connection_id(st, s))?,
        );
        let ops = self.inst.engine.agentwire_engine_switch();
        let request = match ops.call_op_request(&mut self.inst.store, &agent, Some(&conn), name, args)? {
            Ok(r) => r,
            Err(e) => return Ok(Err(e)),
        };
        let answer = self.call(&request);
        let store = &mut self.inst.store;
        Ok(match answer {
            Ok((status, body)) => ops.call_op_result(store, &request, status, &body)?,
            Err(e) => {
                let kind = match e.timed_out {
                    true => ErrorKind::Timeout,
                    false => ErrorKind::Closed,
                };
                Err(ops.call_op_failed(store, &request, kind, &e.to_string(), e.sent)?)
            }
        })
    }

    fn carry_out(&mut self, t: Transmit) -> Result<()> {
        match t {
            Transmit::Open(open) => {
                self.socket = None;
                if open.wire == Wire::Sse {
                    return self
                        .with(|a, st, s| a.call_handle_open_error(st, s, now_ms(), "this host opens WebSockets only"));
                }
                let url = format!("{}{}", self.base.replacen("http", "ws", 1), open.request.path);
                match Socket::open(&url, None, &self.headers(&open.request)) {
                    Ok(socket) => {
                        self.socket = Some(socket);
                        self.with(|a, st, s| a.call_handle_open(st, s, now_ms()))
                    }
                    // This host reads every refusal's status: none is a network failure.
                    Err(r) => self.with(|a, st, s| match r.status {
                        Some(_) => a.call_handle_open_failed(st, s, now_ms(), r.status, &r.reason),
                        None => a.call_handle_open_error(st, s, now_ms(), &r.reason),
                    }),
                }
            }
            Transmit::Text(text) => match &mut self.socket {
                Some(socket) => socket.send_text(text),
                None => Ok(()),
            },
            Transmit::Http(call) => match self.call(&call.request) {
                Ok((status, body)) => {
                    self.with(|a, st, s| a.call_handle_http_response(st, s, now_ms(), call.id, status, &body))
                }
                Err(e) => self.with(|a, st, s| a.call_handle_http_failed(st, s, now_ms(), call.id, &e.to_string())),
            },
            Transmit::Close(c) => {
                if let Some(mut socket) = self.socket.take() {
                    socket.close(c.code, c.reason);
                }
                Ok(())
            }
        }
    }

    fn flush(&mut self) -> Result<()> {
        while let Some(t) = self.with(|a, st, s| a.call_poll_transmit(st, s))? {
            self.carry_out(t)?;
        }
        while let Some(e) = self.with(|a, st, s| a.call_poll_event(st, s))? {
            self.events.push_back(e);
        }
        Ok(())
    }
}

impl Drive for SwitchSession {
    type Event = Event;

    /// One round: flush, read one input (bounded by the next timer), feed it, fire a due timer.
    fn turn(&mut self) -> Result<()> {
        self.flush()?;
        if !self.events.is_empty() {
            return Ok(());
        }
        let due = self.with(|a, st, s| a.call_poll_timeout(st, s))?;
        let wait = due.map_or(TICK, |d| Duration::from_millis(d.saturating_sub(now_ms())).min(TICK));
        let input = match &mut self.socket {
            Some(socket) => socket.next(wait),
            None => {
                std::thread::sleep(wait);
                Input::Idle
            }
        };
        let now = now_ms();
        match input {
            Input::Text(t) => self.with(|a, st, s| a.call_handle_text(st, s, now, &t))?,
            Input::Binary(b) => self.with(|a, st, s| a.call_handle_binary(st, s, now, &b))?,
            Input::Closed { code, reason } => {
                self.socket = None;
                self.with(|a, st, s| a.call_handle_close(st, s, now, code, &reason))?
            }
            Input::Ping | Input::Idle => {}
        }
        if due.is_some_and(|d| now_ms() >= d) {
            self.with(|a, st, s| a.call_handle_timeout(st, s, now_ms()))?;
        }
        self.flush()
    }

    fn pop(&mut self) -> Option<Event> {
        self.events.pop_front()
    }
}

impl Drop for SwitchSession {
    fn drop(&mut self) {
        let _ = self.session.resource_drop(&mut self.inst.store);
    }
}
