//! `RktDriver`: an RKT client over a WebSocket. The engine decides everything; the driver feeds
//! it the socket, the clock and the timer, sends its frames and routes its events: replies to
//! the callbacks of the command they answer, everything else to `onEvent`.

use super::options;
use crate::errors::{self, opt_text, text};
use crate::host::{JsEntropy, Timer};
use crate::socket::{
    as_sink, closed_words, deliver_calls, elsewhere, later, send_recheck, send_while_room, timer, Calls, Input,
    OpenDeadline, Sink, Socket,
};
use agentwire_core::{ErrorKind, Millis};
use agentwire_rkt::body::MemoryGetBody;
use agentwire_rkt::codec::SUBPROTOCOL;
use agentwire_rkt::json::{body_value, error_json};
use agentwire_rkt::{resolve, ClientEvent, ClientSession, ClientState, RktError};
use js_sys::Function;
use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;
use wasm_bindgen::prelude::*;

enum Waiter {
    /// `resolve(body JSON text | undefined)`, `reject(error)`.
    Reply { resolve: Function, reject: Function },
    /// `chunk(body JSON text | undefined)` per chunk in order, then `end(undefined | error)`.
    Stream { chunk: Function, end: Function },
    /// A MEMORY_GET: `resolve(body JSON text)` for a reply [`MemoryGetBody::read_reply`] takes,
    /// else `reject(error)` (kind `decode`).
    Memory { resolve: Function, reject: Function },
}

struct Driver {
    session: ClientSession,
    socket: Option<Socket>,
    timer: Option<Timer>,
    url: String,
    waiters: HashMap<String, Waiter>,
    /// Let go of after `closed`, the last event: the facade's callback may reach this driver's
    /// JS wrapper, and a cycle through wasm memory is one no garbage collector sees.
    on_event: Option<Function>,
    /// Until HELLO_ACK: `(resolve(ready JSON), reject(error))`.
    ready: Option<(Function, Function)>,
    /// Why the socket failed the handshake (it never opened, or its upgrade was refused); the
    /// session keeps its own (`ClientSession::handshake_error`).
    handshake_error: Option<RktError>,
    /// Until the socket opens: when it must have.
    opening: Option<OpenDeadline>,
    closed: bool,
    /// How it ended (`socket::ended`).
    how: Option<String>,
}

fn err(e: &RktError) -> JsValue {
    errors::to_js(&error_json(e).to_string())
}

fn body(b: Option<String>) -> JsValue {
    b.map_or(JsValue::UNDEFINED, JsValue::from)
}

impl Sink for Driver {
    fn input(&mut self, now: Millis, input: Input, calls: &mut Calls) -> Result<(), Input> {
        match input {
            Input::Open => {
                self.opening = None;
                self.session.handle_open(now)
            }
            Input::Text(t) => self.session.handle_text(now, &t),
            Input::Binary(b) => self.session.handle_binary(now, &b),
            Input::Closed { code, reason, refused } => {
                if let Some(r) = refused.filter(|_| self.ready.is_some()) {
                    // The socket saw the refused upgrade's answer (`fetchWebSocket`).
                    let e = agentwire_core::Error::refused_upgrade(&self.url, r.status, &r.body);
                    self.handshake_error = Some(e.into());
                }
                if self.opening.take().is_some() && self.ready.is_some() {
                    // The socket never opened (unreachable, refused): no handshake was made.
                    let url = agentwire_core::redact::url(&self.url);
                    let m = format!("{url}: connection closed ({code} {reason}) before it opened");
                    self.handshake_error
                        .get_or_insert(RktError::local(ErrorKind::Closed, m));
                }
                self.session.handle_close(now, code, &reason)
            }
            Input::Timer => {
                if let Some(t) = &mut self.timer {
                    t.fired();
                }
                match self.opening.and_then(|o| o.missed(now, &self.url)) {
                    Some(m) => {
                        // Not open in time: the socket is dropped (closed) and the connect fails.
                        self.opening = None;
                        self.socket = None;
                        self.handshake_error = Some(RktError::local(ErrorKind::Timeout, m));
                        self.session
                            .handle_close(now, 1006, "the WebSocket did not open in time");
                    }
                    None => self.session.handle_timeout(now),
                }
            }
            Input::Cancel(id) => {
                self.session.cancel(&id);
            }
        }
        self.pump(now, calls);
        Ok(())
    }
}

impl Driver {
    /// Sends the engine's frames, routes its events and re-arms the timer.
    fn pump(&mut self, now: Millis, calls: &mut Calls) {
        // The socket is looked at only when a frame waits (reading `bufferedAmount` per input
        // cost about 10 % of an event's time), and not once the session is closed.
        let bounded = self.session.has_transmit() && self.session.state() != ClientState::Closed;
        let held = send_while_room(self.socket.as_ref(), bounded, now, || self.session.poll_transmit());
        let held = held.unwrap_or_else(|m| {
            // The socket sent nothing for long: dead, as one that dropped (its handlers let go).
            self.socket = None;
            self.session.handle_close(now, 1006, m);
            false
        });
        while let Some(event) = self.session.poll_event() {
            self.route(event, calls);
        }
        if self.closed {
            // Over, and every frame sent: nothing more comes. A test double or a user's
            // constructor may hold what reaches the client, so the socket goes too (its handlers
            // detached).
            self.socket = None;
        }
        if let Some(t) = &mut self.timer {
            match self.closed {
                true => t.cancel(),
                false => {
                    let at = OpenDeadline::earliest(self.session.poll_timeout(), self.opening);
                    t.arm_by(send_recheck(at, held, now), now)
                }
            }
        }
    }

    fn route(&mut self, event: ClientEvent, calls: &mut Calls) {
        match event {
            ClientEvent::Ready { .. } => {
                if let Some((resolve, _)) = self.ready.take() {
                    let mut info = event.to_json();
                    info["url"] = self.url.clone().into();
                    calls.push(&resolve, info.to_string().into());
                }
            }
            ClientEvent::Response { id, body: b } => match self.waiters.remove(&id) {
                Some(Waiter::Reply { resolve, .. }) => calls.push(&resolve, body(b)),
                Some(Waiter::Memory { resolve, reject }) => {
                    match MemoryGetBody::read_reply(&body_value(b.as_deref())) {
                        Ok(_) => calls.push(&resolve, body(b)),
                        Err(e) => calls.push(&reject, err(&e)),
                    }
                }
                Some(Waiter::Stream { chunk, end }) => {
                    calls.push(&chunk, body(b));
                    calls.push(&end, JsValue::UNDEFINED);
                }
                None => {}
            },
            ClientEvent::StreamBegin { .. } => {}
            ClientEvent::StreamData { id, body: b, .. } => {
                if let Some(Waiter::Stream { chunk, .. }) = self.waiters.get(&id) {
                    calls.push(chunk, body(b));
                }
            }
            ClientEvent::StreamEnd { id, .. } => {
                if let Some(Waiter::Stream { end, .. }) = self.waiters.remove(&id) {
                    calls.push(&end, JsValue::UNDEFINED);
                }
            }
            ClientEvent::AuthOk { ref id, .. } | ClientEvent::Pong { ref id, .. } => {
                if let Some(Waiter::Reply { resolve, .. }) = self.waiters.remove(id) {
                    calls.push(&resolve, event.to_json().to_string().into());
                }
            }
            ClientEvent::Failed { id, error } => match self.waiters.remove(&id) {
                Some(Waiter::Reply { reject, .. } | Waiter::Memory { reject, .. }) => calls.push(&reject, err(&error)),
                Some(Waiter::Stream { end, .. }) => calls.push(&end, err(&error)),
                None => {}
            },
            ClientEvent::Error(_) | ClientEvent::Goodbye => self.emit(calls, &event),
            ClientEvent::Closed { code, ref reason } => {
                self.closed = true;
                crate::socket::ended(&mut self.how, code, reason);
                if let Some((_, reject)) = self.ready.take() {
                    let m = format!(
                        "{}: connection closed ({code} {reason}) during the handshake",
                        agentwire_core::redact::url(&self.url)
                    );
                    // The socket's own (never opened, refused), else the session's.
                    let error = (self.handshake_error.take())
                        .or_else(|| self.session.handshake_error().cloned())
                        .unwrap_or_else(|| RktError::local(ErrorKind::Closed, m));
                    calls.push(&reject, err(&error));
                }
                // Every command has had its `Failed` by now; anything left is answered here.
                for (_, w) in self.waiters.drain() {
                    let error = err(&RktError::local(ErrorKind::Closed, closed_words(&self.how)));
                    match w {
                        Waiter::Reply { reject, .. } | Waiter::Memory { reject, .. } => calls.push(&reject, error),
                        Waiter::Stream { end, .. } => calls.push(&end, error),
                    }
                }
                self.emit(calls, &event);
                self.on_event = None;
            }
        }
    }

    fn emit(&self, calls: &mut Calls, event: &ClientEvent) {
        if let Some(f) = &self.on_event {
            calls.push(f, event.to_json().to_string().into());
        }
    }
}

/// An RKT client connection driven by the engine. The npm package's `RktClient` wraps it.
#[wasm_bindgen]
pub struct RktDriver {
    state: Rc<RefCell<Driver>>,
    /// The session's `max_message_size`: no argument's text may be longer.
    max: usize,
}

#[wasm_bindgen]
impl RktDriver {
    /// Opens `address` (`rkt://host`, `host[:port]`, `ws://...`) offering `rkt.1.0`, with
    /// `webSocket` as the constructor when given. `onReady(readyJson)` follows HELLO_ACK (with
    /// an `apiKey`, its AUTH_OK: a refused key is a failed handshake);
    /// `onFail(error)` a handshake that failed or a socket that closed first. `onEvent(json)`
    /// gets what answers no command: `error`, `goodbye`, `closed`.
    #[wasm_bindgen(constructor)]
    pub fn new(
        address: JsValue,
        options: Option<String>,
        web_socket: Option<Function>,
        on_event: Function,
        on_ready: Function,
        on_fail: Function,
    ) -> Result<RktDriver, JsValue> {
        let url = resolve(&text(address, "address")?).map_err(|e| errors::local(ErrorKind::Invalid, e.0))?;
        let cfg = options::config(options)?;
        let max = cfg.max_message_size;
        let opening = OpenDeadline::new(crate::host::now(), cfg.handshake_timeout_ms);
        let state = Rc::new(RefCell::new(Driver {
            session: ClientSession::new(cfg, Box::new(JsEntropy)),
            socket: None,
            timer: None,
            url: url.clone(),
            waiters: HashMap::new(),
            on_event: Some(on_event),
            ready: Some((on_ready, on_fail)),
            handshake_error: None,
            opening: Some(opening),
            closed: false,
            how: None,
        }));
        let sink = as_sink(&state);
        let socket = Socket::open(&url, &[SUBPROTOCOL], web_socket.as_ref(), sink.clone()).map_err(|m| {
            errors::local(
                ErrorKind::Invalid,
                format!("{}: {m}", agentwire_core::redact::url(&url)),
            )
        })?;
        {
            let mut d = state.borrow_mut();
            d.socket = Some(socket);
            let mut t = timer(sink);
            t.arm(Some(opening.at), crate::host::now());
            d.timer = Some(t);
        }
        Ok(RktDriver { state, max })
    }

    /// Starts a command with `waiter`; returns its id. Throws when the engine refuses it.
    /// `command` is called once (a trait object: one copy of this for every command).
    fn start(
        &self,
        waiter: Waiter,
        command: &mut dyn FnMut(&mut ClientSession, Millis) -> Result<String, RktError>,
    ) -> Result<String, JsValue> {
        deliver_calls(&self.state, |d, now, calls| {
            if d.closed {
                return Err(err(&RktError::local(ErrorKind::Closed, closed_words(&d.how))));
            }
            // Refused before the engine has it: the connection is left as it was.
            Socket::usable(d.socket.as_ref())?;
            let id = command(&mut d.session, now).map_err(|e| err(&e))?;
            d.waiters.insert(id.clone(), waiter);
            d.pump(now, calls);
            Ok(id)
        })?
    }

    /// REQUEST `intent` with `params` (JSON text); `resolve(body JSON text | undefined)`.
    pub fn request(
        &self,
        intent: JsValue,
        params: Option<String>,
        options: Option<String>,
        resolve: Function,
        reject: Function,
    ) -> Result<String, JsValue> {
        let intent = text(intent, "intent")?;
        let params = options::json_arg("params", params, self.max)?;
        let (mut params, mut opts) = (params, options::request(options, false, self.max)?);
        self.start(Waiter::Reply { resolve, reject }, &mut |s, now| {
            s.request(now, &intent, params.take(), std::mem::take(&mut opts))
        })
    }

    /// REQUEST `intent` with `Stream: true`: `chunk(body)` for each chunk in order, then
    /// `end(undefined)`, or `end(error)` when it fails.
    pub fn stream(
        &self,
        intent: JsValue,
        params: Option<String>,
        options: Option<String>,
        chunk: Function,
        end: Function,
    ) -> Result<String, JsValue> {
        let intent = text(intent, "intent")?;
        let params = options::json_arg("params", params, self.max)?;
        let (mut params, mut opts) = (params, options::request(options, true, self.max)?);
        self.start(Waiter::Stream { chunk, end }, &mut |s, now| {
            s.request(now, &intent, params.take(), std::mem::take(&mut opts))
        })
    }

    pub fn discover(&self, resolve: Function, reject: Function) -> Result<String, JsValue> {
        self.start(Waiter::Reply { resolve, reject }, &mut |s, now| s.discover(now))
    }

    #[wasm_bindgen(js_name = memorySet)]
    pub fn memory_set(
        &self,
        key: JsValue,
        value: &str,
        namespace: JsValue,
        ttl_s: Option<f64>,
        resolve: Function,
        reject: Function,
    ) -> Result<String, JsValue> {
        let (key, namespace) = (text(key, "key")?, opt_text(namespace, "namespace")?);
        let mut value = options::json_arg("value", Some(value.to_string()), self.max)?.unwrap_or_default();
        let ttl = options::ttl_s(ttl_s)?;
        self.start(Waiter::Reply { resolve, reject }, &mut |s, now| {
            s.memory_set(now, &key, std::mem::take(&mut value), namespace.as_deref(), ttl)
        })
    }

    #[wasm_bindgen(js_name = memoryGet)]
    pub fn memory_get(
        &self,
        key: JsValue,
        namespace: JsValue,
        resolve: Function,
        reject: Function,
    ) -> Result<String, JsValue> {
        let (key, namespace) = (text(key, "key")?, opt_text(namespace, "namespace")?);
        self.start(Waiter::Memory { resolve, reject }, &mut |s, now| {
            s.memory_get(now, &key, namespace.as_deref())
        })
    }

    /// PING; `resolve(pong JSON: {type, id, rttMs})`.
    pub fn ping(&self, resolve: Function, reject: Function) -> Result<String, JsValue> {
        self.start(Waiter::Reply { resolve, reject }, &mut |s, now| s.ping(now))
    }

    /// Ends a command early: its reject (or stream end) gets kind `cancelled`. True when its
    /// frame had not left (held while the socket was backed up): making it again is safe.
    pub fn cancel(&self, id: &str) -> bool {
        deliver_calls(&self.state, |d, now, calls| {
            let unsent = d.session.unsent(id);
            d.session.cancel(id);
            d.pump(now, calls);
            unsent
        })
        .unwrap_or_else(|_| later(&self.state, id))
    }

    /// GOODBYE and close 1000; `onEvent` gets `closed` when the socket has closed. A socket the
    /// host refuses here (another request's, in workerd) can be neither used nor closed: the
    /// driver lets go of it, and `closed` (1006) comes at once.
    pub fn close(&self) -> Result<(), JsValue> {
        deliver_calls(&self.state, |d, now, calls| {
            d.how.get_or_insert_with(String::new);
            match d.socket.as_ref().and_then(Socket::refused) {
                Some(m) => {
                    d.socket = None;
                    d.opening = None;
                    d.session.handle_close(now, 1006, &elsewhere(&m));
                }
                None => d.session.goodbye(now),
            }
            d.pump(now, calls);
        })
    }

    /// Whether the connection is over.
    #[wasm_bindgen(getter)]
    pub fn closed(&self) -> bool {
        self.state.try_borrow().map(|d| d.closed).unwrap_or(false)
    }

    /// What a connect's timeout adds to its message: the phase it stopped in.
    #[wasm_bindgen(getter)]
    pub fn why(&self) -> String {
        let d = self.state.try_borrow();
        d.map_or_else(|_| String::new(), |d| OpenDeadline::phase(d.opening, "HELLO_ACK"))
    }
}
