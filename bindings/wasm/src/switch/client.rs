//! `SwitchDriver`: a Switch agent connection over a relay, or directly to a Switch server with
//! the agent key as the token (Node, Workers). The engine decides everything; the driver performs
//! its transmits (a WebSocket per `open` on the WebSocket wire, a streamed `fetch` per `open` on
//! the SSE wire, its pongs, `fetch` for its HTTP calls and beats, closes), feeds it the socket or
//! the stream's bytes, the answers, the clock and the timer, and hands every event to `onEvent`.
//! Operations (`op`, `listOps`, subscribe, ...) are `fetch` calls built and decoded by the
//! engine's `ops` module.

use super::fetch::{self, FetchError};
use super::options;
use super::refresh::{token_exp, Refresh};
use crate::errors;
use crate::host::{wall, JsEntropy, Timer};
use crate::socket::{as_sink, deliver_calls, describe, timer, Calls, Input, Sink, Socket, NO_WEB_SOCKET};
use agentwire_core::json::read::{self, Kind};
use agentwire_core::json::write::Obj;
use agentwire_core::{Error, ErrorKind, Millis};
use agentwire_switch::connection::{OpenRequest, Transmit};
use agentwire_switch::ops;
use agentwire_switch::unanswered::{answered, unanswered};
use agentwire_switch::{Connection, Event, HttpRequest, State, SwitchError, Wire};
use js_sys::{Function, Promise};
use std::cell::RefCell;
use std::collections::BTreeMap;
use std::rc::{Rc, Weak};
use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::{spawn_local, JsFuture};
use web_sys::AbortController;

use agentwire_relay::close::{TOKEN_EXPIRED, TOKEN_EXPIRED_REASON};
use agentwire_relay::token::{is_token_byte, MAX_TOKEN_LEN};
use agentwire_relay::{SUBPROTOCOL, TOKEN_PROTOCOL_PREFIX as TOKEN_PREFIX};

fn err(e: &SwitchError) -> JsValue {
    errors::to_js(&e.to_json_string())
}

fn invalid(m: impl Into<String>) -> JsValue {
    errors::local(ErrorKind::Invalid, m)
}

/// The socket or stream of one `open`, tagged with the open's number, so one that was replaced
/// can never speak for the current one.
struct Current {
    link: Link,
    epoch: u64,
    /// Its `open` event (the stream's `200`) came.
    opened: bool,
    /// The token it was opened with (`Driver::tokens` then).
    token: u64,
}

/// What carries an `open`: a WebSocket and the sink its events go through, or the SSE wire's
/// stream (a `fetch` whose body is read as it comes), ended with its controller.
enum Link {
    Socket {
        socket: Socket,
        _sink: Rc<RefCell<SocketSink>>,
    },
    Stream(AbortController),
}

/// What happened to the SSE wire's stream.
enum Stream {
    /// The `200`.
    Open,
    Bytes(Vec<u8>),
    /// Another status, and the start of its body.
    Refused(u16, String),
    /// No answer: what the host said (refused, DNS, TLS, CORS).
    Failed(String),
    /// The body ended or broke after the `200`.
    Ended(String),
}

/// Bytes of a refused stream's body given to the engine (its error's detail: what the engine
/// reads of it), and how long they are read (the engine's bounds, which every driver keeps).
const REFUSAL_BODY: usize = agentwire_core::http::REFUSAL_BODY_MAX;
const REFUSAL_BODY_MS: Millis = agentwire_core::http::REFUSAL_BODY_WAIT_MS;

struct SocketSink {
    driver: Weak<RefCell<Driver>>,
    epoch: u64,
}

impl Sink for SocketSink {
    fn input(&mut self, now: Millis, input: Input, calls: &mut Calls) -> Result<(), Input> {
        let Some(driver) = self.driver.upgrade() else {
            return Ok(());
        };
        // Busy: a socket that called back from inside a call the driver made.
        let Ok(mut d) = driver.try_borrow_mut() else {
            return Err(input);
        };
        d.socket_input(self.epoch, now, input, calls);
        Ok(())
    }
}

struct Driver {
    conn: Connection,
    me: Weak<RefCell<Driver>>,
    /// `http(s)://host[:port][/prefix]`, without a trailing `/`.
    http_base: Rc<str>,
    /// The same with `ws(s)://`.
    ws_base: String,
    token: Rc<str>,
    /// Tokens set so far: which one a socket was opened with.
    tokens: u64,
    /// `refreshToken`, until the connection stops (the app's callback may reach this driver's
    /// JS wrapper: a cycle no garbage collector sees).
    refresh: Option<Refresh>,
    /// A reopen with an expired token, waiting for the renewal in flight (the engine's open
    /// deadline, `openTimeoutMs`, bounds the wait, as it does the call).
    waiting_open: Option<OpenRequest>,
    ctor: Option<Function>,
    socket: Option<Current>,
    /// Sockets replaced or closed, dropped in a later task (never inside their own callback).
    retired: Vec<Current>,
    epoch: u64,
    timer: Option<Timer>,
    /// Let go of once stopped, after `stopped`, the last event: the facade's callback may reach
    /// this driver's JS wrapper, and a cycle through wasm memory is one no garbage collector sees.
    on_event: Option<Function>,
    /// The engine's HTTP calls in flight (one beat at most); a close aborts them (their answers
    /// would be late).
    calls_in_flight: Vec<(u64, AbortController)>,
    http_timeout_ms: u64,
    /// The user's HTTP calls (`op`, `listOps`, ...) in flight, numbered: once the connection
    /// has stopped they are aborted and reject with kind `closed`.
    ops_in_flight: Vec<(u64, AbortController)>,
    next_op: u64,
    /// Whether an open inside `SwitchDriver::new` found no WebSocket constructor (none given, no
    /// global one); `None` while `new` runs.
    no_web_socket: Option<bool>,
    /// The page's queue for `events()` is full: events wait in the engine (bounded by its
    /// `max_queued_*`, past which it reopens from the cursor once drained: none is lost).
    held: bool,
}

impl Sink for Driver {
    /// The timer's input (socket events come through their [`SocketSink`]).
    fn input(&mut self, now: Millis, input: Input, calls: &mut Calls) -> Result<(), Input> {
        if let Input::Timer = input {
            if let Some(t) = &mut self.timer {
                t.fired();
            }
            self.conn.handle_timeout(now);
            self.pump(now, calls);
        }
        Ok(())
    }
}

impl Driver {
    fn socket_input(&mut self, epoch: u64, now: Millis, input: Input, calls: &mut Calls) {
        let Some(current) = self.socket.as_mut().filter(|c| c.epoch == epoch) else {
            return; // a replaced socket
        };
        match input {
            Input::Open => {
                current.opened = true;
                self.conn.handle_open(now);
            }
            Input::Text(text) => self.conn.handle_text(now, &text),
            Input::Binary(bytes) => self.conn.handle_binary(now, &bytes),
            Input::Closed { code, reason, refused } => {
                let opened = current.opened;
                // The relay's close for the token this socket was opened with, still the current
                // one: renew it now (a clock behind the relay's has not found it due yet).
                if code == TOKEN_EXPIRED && reason == TOKEN_EXPIRED_REASON && current.token == self.tokens {
                    if let Some(r) = &mut self.refresh {
                        r.expired();
                    }
                }
                self.retire_socket(None);
                if let Some(r) = refused.filter(|_| !opened) {
                    // The host's socket saw the refused upgrade's answer: the engine decides.
                    self.conn.handle_open_failed(now, Some(r.status), &r.body);
                    return self.pump(now, calls);
                }
                // The WebSocket API tells nothing of a failed open but a close (1006); the
                // engine decides what it means (a close before the open is an open failure).
                let reason = if !opened && reason.is_empty() {
                    format!(
                        "the WebSocket to {} did not open (code {code}; the host does not say why: \
                         unreachable, refused, or the token was not accepted)",
                        self.ws_base
                    )
                } else {
                    reason
                };
                self.conn.handle_close(now, code, &reason);
            }
            Input::Timer => return,
        }
        self.pump(now, calls);
    }

    /// Performs the engine's transmits and hands its events to `onEvent` until both are
    /// drained, then re-arms the timer.
    fn pump(&mut self, now: Millis, calls: &mut Calls) {
        if let Some(timeout) = self.refresh.as_mut().and_then(|r| r.overdue(now).then_some(r.timeout)) {
            let m = format!("no answer within {timeout} ms (openTimeoutMs)");
            self.refresh_failed(now, &m, calls);
        }
        if self.refresh.as_ref().is_some_and(|r| r.wanted(wall(), false)) {
            self.renew(now);
        }
        loop {
            let mut progressed = false;
            while let Some(t) = self.conn.poll_transmit() {
                progressed = true;
                self.transmit(now, t);
            }
            // Once stopped, everything goes (`stopped` last): nothing would release a hold.
            let take = !self.held || self.conn.state() == State::Stopped;
            while let Some(event) = take.then(|| self.conn.poll_event()).flatten() {
                progressed = true;
                if let Some(f) = &self.on_event {
                    calls.push_event(f, event.to_json_lazy());
                }
            }
            if !progressed {
                break;
            }
        }
        let stopped = self.conn.state() == State::Stopped;
        if stopped {
            self.on_event = None;
            self.refresh = None;
            self.waiting_open = None;
            for (_, c) in self.ops_in_flight.drain(..) {
                fetch::abort(&c);
            }
        }
        let check = self.refresh.as_mut().and_then(|r| r.check_at(now, wall()));
        if let Some(t) = &mut self.timer {
            match stopped {
                true => t.cancel(),
                false => t.arm_by(earliest(self.conn.poll_timeout(), check), now),
            }
        }
        if !self.retired.is_empty() {
            let retired = std::mem::take(&mut self.retired);
            spawn_local(async move { drop(retired) });
        }
    }

    fn transmit(&mut self, now: Millis, t: Transmit) {
        match t {
            Transmit::Open(open) => {
                // A reopen renews a token due, and with an expired token waits for the renewal;
                // so does the first open with a token expired by this clock (the app's stored
                // token, a day old): the relay would refuse it, and `connect` fail `auth`.
                if let Some(r) = self.refresh.as_ref().filter(|r| self.epoch > 0 || r.spent(wall())) {
                    if r.wanted(wall(), true) {
                        self.renew(now);
                    }
                    if self.refresh.as_ref().is_some_and(|r| r.holds(wall())) {
                        self.retire_socket(Some((1000, "")));
                        self.waiting_open = Some(open);
                        return;
                    }
                }
                self.open(now, open);
            }
            Transmit::Text(text) => {
                // False when the socket is not open: its close event follows.
                if let Some(Current {
                    link: Link::Socket { socket, .. },
                    ..
                }) = &self.socket
                {
                    let _ = socket.send(&text);
                }
            }
            Transmit::Http { id, request } => self.call(now, id, request),
            Transmit::Close { code, reason } => {
                self.waiting_open = None;
                self.retire_socket(Some((code, &reason)));
                for (_, c) in self.calls_in_flight.drain(..) {
                    fetch::abort(&c);
                }
            }
        }
    }

    /// Opens the socket (or, on the SSE wire, the stream) of the engine's `open`. The relay
    /// speaks only the WebSocket; the SSE wire (`transport` `sse`, or `auto` after a refused
    /// upgrade) is for a Switch server reached directly with the agent key.
    fn open(&mut self, now: Millis, open: OpenRequest) {
        self.retire_socket(Some((1000, "")));
        self.epoch += 1;
        if open.wire == Wire::Sse {
            return self.open_stream(now, open);
        }
        let url = format!("{}{}", self.ws_base, open.request.path);
        let sink = Rc::new(RefCell::new(SocketSink {
            driver: self.me.clone(),
            epoch: self.epoch,
        }));
        let token_protocol = format!("{TOKEN_PREFIX}{}", self.token);
        let protocols = [SUBPROTOCOL, token_protocol.as_str()];
        let socket_sink = as_sink(&sink);
        crate::socket::owned_by(&socket_sink, self.me.clone());
        match Socket::open(&url, &protocols, self.ctor.as_ref(), socket_sink) {
            Ok(socket) => {
                self.socket = Some(Current {
                    link: Link::Socket { socket, _sink: sink },
                    epoch: self.epoch,
                    opened: false,
                    token: self.tokens,
                })
            }
            // Made in `SwitchDriver::new`, which then fails with kind `invalid`; later (the first
            // open waited for `refreshToken`), the connection stops with it (`connect` rejects).
            Err(m) if m == NO_WEB_SOCKET => match self.no_web_socket {
                None => self.no_web_socket = Some(true),
                Some(_) => self
                    .conn
                    .handle_open_unusable(now, SwitchError::local(ErrorKind::Invalid, NO_WEB_SOCKET)),
            },
            Err(m) => {
                let m = format!("the WebSocket to {} could not be created: {m}", self.ws_base);
                self.conn.handle_open_error(now, &m);
            }
        }
    }

    /// Opens the SSE wire's stream with `fetch` (the engine's request, with the token as
    /// `Authorization: Bearer`, as the HTTP calls), then feeds the engine its answer and its body
    /// a chunk at a time as it comes (framing, resume and beats are the engine's). A close, a
    /// reopen or a stop aborts it.
    fn open_stream(&mut self, now: Millis, open: OpenRequest) {
        let controller = match fetch::controller() {
            Ok(c) => c,
            Err(e) => return self.conn.handle_open_error(now, &e.message),
        };
        let epoch = self.epoch;
        self.socket = Some(Current {
            link: Link::Stream(controller.clone()),
            epoch,
            opened: false,
            token: self.tokens,
        });
        let (me, base, token) = (self.me.clone(), self.http_base.clone(), self.token.clone());
        spawn_local(async move {
            // Whether the stream is still the current one (else it is left).
            let feed = |input| {
                me.upgrade()
                    .and_then(|state| {
                        deliver_calls(&state, |d, now, calls| d.stream_input(epoch, now, input, calls)).ok()
                    })
                    .unwrap_or(false)
            };
            let request = &open.request;
            let input = match fetch::open_stream(&base, &token, request, &controller).await {
                // The URL without its query (the connection's parameters), as the native driver.
                Err(e) => Stream::Failed(format!(
                    "GET {base}{}: {}",
                    request.path.split('?').next().unwrap_or_default(),
                    describe(&e)
                )),
                Ok(response) => {
                    let reader = fetch::reader(&response);
                    match (response.status(), reader) {
                        (200, Some(reader)) => {
                            let mut go_on = feed(Stream::Open);
                            while go_on {
                                let input = match fetch::next_chunk(&reader).await {
                                    Ok(Some(chunk)) => Stream::Bytes(chunk),
                                    Ok(None) => Stream::Ended("the event stream ended".into()),
                                    Err(e) => Stream::Ended(format!("the event stream broke: {}", describe(&e))),
                                };
                                let last = !matches!(input, Stream::Bytes(_));
                                go_on = feed(input) && !last;
                            }
                            return fetch::abort(&controller);
                        }
                        (200, None) => Stream::Failed("the event stream's answer has no body".into()),
                        (status, reader) => {
                            // Its start only, read for REFUSAL_BODY_MS at most (then the stream is
                            // aborted and the read ends): a refusal whose body never ends is still
                            // its status, not the engine's open timeout. One that breaks off before
                            // its end, the wait or REFUSAL_BODY is no answer (retried): cut, a
                            // `409 taken_over` would be a final refusal without its code.
                            let waited = Rc::new(std::cell::Cell::new(false));
                            let mut cut = {
                                let (controller, waited) = (controller.clone(), waited.clone());
                                Timer::new(Closure::new(move || {
                                    waited.set(true);
                                    fetch::abort(&controller)
                                }))
                            };
                            let start = crate::host::now();
                            cut.arm(Some(start.saturating_add(REFUSAL_BODY_MS)), start);
                            let mut body = Vec::new();
                            let mut broke = None;
                            while let (Some(r), true) = (&reader, body.len() < REFUSAL_BODY) {
                                match fetch::next_chunk(r).await {
                                    Ok(Some(chunk)) => body.extend(chunk),
                                    Ok(None) => break,
                                    Err(e) => {
                                        broke = Some(e).filter(|_| !waited.get());
                                        break;
                                    }
                                }
                            }
                            drop(cut);
                            body.truncate(REFUSAL_BODY);
                            match broke {
                                Some(e) => {
                                    Stream::Failed(format!("the HTTP {status} answer broke off: {}", describe(&e)))
                                }
                                None => Stream::Refused(status, String::from_utf8_lossy(&body).into_owned()),
                            }
                        }
                    }
                }
            };
            fetch::abort(&controller);
            feed(input);
        });
    }

    /// What happened to the stream of open `epoch`; whether it is still the current one.
    fn stream_input(&mut self, epoch: u64, now: Millis, input: Stream, calls: &mut Calls) -> bool {
        let Some(current) = self.socket.as_mut().filter(|c| c.epoch == epoch) else {
            return false; // a replaced stream
        };
        match input {
            Stream::Open => {
                current.opened = true;
                self.conn.handle_open(now);
            }
            Stream::Bytes(chunk) => self.conn.handle_bytes(now, &chunk),
            Stream::Refused(status, body) => {
                self.retire_socket(None);
                self.conn.handle_open_failed(now, Some(status), &body);
            }
            // No answer: the message is the host's reason (a WebSocket's guess at a refused key
            // or a missing route does not apply: a refused stream has its status).
            Stream::Failed(m) => {
                self.retire_socket(None);
                self.conn.handle_open_error(now, &m);
            }
            Stream::Ended(m) => {
                self.retire_socket(None);
                self.conn.handle_close(now, 1006, &m);
            }
        }
        self.pump(now, calls);
        self.socket.as_ref().is_some_and(|c| c.epoch == epoch)
    }

    /// Calls `refreshToken` (in a task of its own: never while the driver is borrowed), then
    /// takes its token, or reports its failure, and releases the reopen that waited.
    fn renew(&mut self, now: Millis) {
        let Some(r) = &mut self.refresh else { return };
        let n = r.start(now);
        let (f, me) = (r.f.clone(), self.me.clone());
        spawn_local(async move {
            let got = match f.call1(&JsValue::UNDEFINED, &JsValue::UNDEFINED) {
                Ok(v) => JsFuture::from(Promise::resolve(&v)).await,
                Err(e) => Err(e),
            };
            let Some(state) = me.upgrade() else { return };
            let _ = deliver_calls(&state, |d, now, calls| {
                d.renewed(now, n, got, calls);
                d.pump(now, calls);
            });
        });
    }

    fn renewed(&mut self, now: Millis, n: u64, got: Result<JsValue, JsValue>, calls: &mut Calls) {
        let Some(r) = &mut self.refresh else { return }; // stopped meanwhile
        let current = r.answered(n);
        let wall = wall();
        let token = got.map_err(|e| describe(&e)).and_then(|t| {
            let t = t.as_string().ok_or("it returned no string")?;
            check_token(&t)?;
            match token_exp(&t).filter(|&exp| exp > r.must_outlive(wall)) {
                Some(exp) => Ok((t, exp)),
                // One expiring no later would be renewed again at once, without end.
                None => Err("its token expires no later".into()),
            }
        });
        match token {
            // Also from a call given up on: its token outlives the current one.
            Ok((t, exp)) => {
                r.schedule(Some(exp), wall);
                self.token = Rc::from(t);
                self.tokens += 1;
                self.release(now, None);
            }
            Err(m) if current => self.refresh_failed(now, &m, calls),
            // A call given up on: its failure was reported then.
            Err(_) => {}
        }
    }

    /// The call in flight failed (`m`, or it did not answer in time): a diagnostic, and the reopen
    /// that waited is released.
    fn refresh_failed(&mut self, now: Millis, m: &str, calls: &mut Calls) {
        let Some(r) = &mut self.refresh else { return };
        r.failed(wall());
        let m = format!("refreshToken failed: {m}");
        if let Some(f) = &self.on_event {
            let e = SwitchError::local(ErrorKind::Auth, m.clone());
            calls.push_event(f, Event::Diagnostic(e).to_json_lazy());
        }
        self.release(now, Some(&m));
    }

    /// Makes the reopen that waited for the renewal, if the engine still waits for it; after a
    /// failed renewal (`failure`) with the token still expired, fails it instead (the relay would
    /// refuse it, 4401, and the connection would stop for good): the engine retries it with its
    /// backoff, and that reopen calls `refreshToken` again.
    fn release(&mut self, now: Millis, failure: Option<&str>) {
        let Some(open) = self.waiting_open.take() else { return };
        if self.conn.state() != State::Opening {
            return; // its deadline passed (its close follows)
        }
        match failure.filter(|_| self.refresh.as_ref().is_some_and(|r| r.spent(wall()))) {
            Some(m) => self.conn.handle_open_error(now, m),
            None => self.open(now, open),
        }
    }

    /// Moves the current socket to `retired`, closing it with `frame` when given (a stream is
    /// aborted).
    fn retire_socket(&mut self, frame: Option<(u16, &str)>) {
        if let Some(c) = self.socket.take() {
            match (&c.link, frame) {
                (Link::Socket { socket, .. }, Some((code, reason))) => socket.close(code, reason),
                (Link::Stream(controller), _) => fetch::abort(controller),
                _ => {}
            }
            self.retired.push(c);
        }
    }

    /// One of the engine's HTTP calls; its answer goes back into the engine.
    fn call(&mut self, now: Millis, id: u64, request: HttpRequest) {
        let controller = match fetch::controller() {
            Ok(c) => c,
            Err(e) => return self.conn.handle_http_failed(now, id, &e.message),
        };
        self.calls_in_flight.push((id, controller.clone()));
        let (me, base, token) = (self.me.clone(), self.http_base.clone(), self.token.clone());
        let limit = self.http_timeout_ms;
        spawn_local(async move {
            let answer = fetch::fetch(base, token, request, limit, controller).await;
            let Some(state) = me.upgrade() else { return };
            // A task of its own: the driver is never busy here.
            let _ = deliver_calls(&state, |d, now, calls| {
                if take_call(&mut d.calls_in_flight, id).is_none() {
                    return; // aborted by a close
                }
                match answer {
                    Ok((status, body)) => d.conn.handle_http_response(now, id, status, &body),
                    Err(e) => d.conn.handle_http_failed(now, id, &e.message),
                }
                d.pump(now, calls);
            });
        });
    }
}

/// The earlier of two deadlines.
fn earliest(a: Option<Millis>, b: Option<Millis>) -> Option<Millis> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

impl Drop for Driver {
    /// The sockets and the timer go in a later task: the driver may be freed from a callback of
    /// one of them.
    fn drop(&mut self) {
        for (_, c) in self.calls_in_flight.drain(..).chain(self.ops_in_flight.drain(..)) {
            fetch::abort(&c);
        }
        let mut sockets = std::mem::take(&mut self.retired);
        if let Some(Current {
            link: Link::Stream(c), ..
        }) = &self.socket
        {
            fetch::abort(c);
        }
        sockets.extend(self.socket.take());
        let timer = self.timer.take();
        spawn_local(async move { drop((sockets, timer)) });
    }
}

/// Takes call `id` out of a list of calls in flight; `None` when a close or a stop took it.
fn take_call(calls: &mut Vec<(u64, AbortController)>, id: u64) -> Option<AbortController> {
    let at = calls.iter().position(|(i, _)| *i == id)?;
    Some(calls.swap_remove(at).1)
}

/// `http(s)://host[:port][/prefix]` as the HTTP base and the WebSocket base (`ws(s)://`), both
/// without a trailing `/`.
fn bases(url: &str) -> Result<(String, String), String> {
    // Quoted without credentials (a `?token=` or `user:key@` is what is refused below).
    let shown = agentwire_core::redact::url(url);
    let (scheme, rest) = url
        .split_once("://")
        .ok_or_else(|| format!("{shown:?} is not an http(s) URL"))?;
    let ws = match scheme.to_ascii_lowercase().as_str() {
        "http" => "ws",
        "https" => "wss",
        _ => return Err(format!("{shown:?}: the scheme must be http or https")),
    };
    if rest.contains(['?', '#']) {
        return Err(format!("{shown:?}: a base URL has no query or fragment"));
    }
    if rest.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err(format!("{shown:?}: spaces or control characters"));
    }
    let authority = rest.split('/').next().unwrap_or_default();
    if authority.is_empty() || authority.contains('@') {
        return Err(format!("{shown:?}: a host is required, without credentials"));
    }
    let rest = rest.trim_end_matches('/');
    let scheme = scheme.to_ascii_lowercase();
    Ok((format!("{scheme}://{rest}"), format!("{ws}://{rest}")))
}

/// A relay token is base64url (with `.` between parts): valid in a subprotocol name.
fn check_token(token: &str) -> Result<(), String> {
    if token.is_empty() || token.len() > MAX_TOKEN_LEN {
        return Err(format!("the token must be 1..={MAX_TOKEN_LEN} characters"));
    }
    if !token.bytes().all(is_token_byte) {
        return Err("the token must be base64url (A-Z a-z 0-9 - _, parts joined by .)".into());
    }
    Ok(())
}

/// A Switch agent connection driven by the engine. The npm package's `SwitchClient` wraps it.
#[wasm_bindgen]
pub struct SwitchDriver {
    state: Rc<RefCell<Driver>>,
    agent_id: String,
    connection_id: String,
    http_base: Rc<str>,
    op_timeout_ms: u64,
}

#[wasm_bindgen]
impl SwitchDriver {
    /// Opens the connection through the relay at `baseUrl` (`http(s)://host[:port][/prefix]`)
    /// with `token` (offered as the subprotocol `agentwire.token.<token>` beside `agentwire.v1`,
    /// and sent as `Authorization: Bearer` on HTTP calls), the options JSON (`SwitchOptions`;
    /// `agentId` required) and `webSocket` as the constructor when given. With `transport` `sse`
    /// (or `auto`, after a refused upgrade) `baseUrl` is a Switch server and `token` its agent
    /// key: the event stream is a `fetch` with `Authorization: Bearer`. `onEvent(json)` gets
    /// every event of the connection, `connected` first once attached, `stopped` last.
    /// `refresh()` (a token, or a promise of one) renews the token: before its `exp`, at once when
    /// the relay closes a socket for it, and before a reopen that finds it due; a reopen with an
    /// expired token waits for it (see `refresh.rs`). A failure, or no answer within
    /// `openTimeoutMs`, is a `diagnostic` event of kind `auth`. Throws an
    /// `invalid` error for a bad URL, token or option.
    #[wasm_bindgen(constructor)]
    pub fn new(
        base_url: &str,
        token: &str,
        options: &str,
        web_socket: Option<Function>,
        on_event: Function,
        refresh: Option<Function>,
    ) -> Result<SwitchDriver, JsValue> {
        let parsed = options::config(options)?;
        let (http_base, ws_base) = bases(base_url).map_err(invalid)?;
        check_token(token).map_err(invalid)?;
        let http_base: Rc<str> = Rc::from(http_base);
        let token: Rc<str> = Rc::from(token);
        let (agent_id, connection_id) = (parsed.cfg.open.agent_id.clone(), parsed.cfg.open.connection_id.clone());
        // Past the engine's own beat timeout, which decides first (as the native driver does).
        let http_timeout_ms = parsed.cfg.beat_timeout_ms.saturating_add(1_000);
        let open_timeout_ms = parsed.cfg.open_timeout_ms;
        let state = Rc::new_cyclic(|me| {
            RefCell::new(Driver {
                conn: Connection::new(parsed.cfg, Box::new(JsEntropy)),
                me: me.clone(),
                http_base: http_base.clone(),
                ws_base,
                token: token.clone(),
                tokens: 0,
                refresh: refresh.map(|f| Refresh::new(f, &token, wall(), open_timeout_ms)),
                waiting_open: None,
                ctor: web_socket,
                socket: None,
                retired: Vec::new(),
                epoch: 0,
                timer: None,
                on_event: Some(on_event),
                calls_in_flight: Vec::new(),
                http_timeout_ms,
                ops_in_flight: Vec::new(),
                next_op: 0,
                no_web_socket: None,
                held: false,
            })
        });
        state.borrow_mut().timer = Some(timer(as_sink(&state)));
        deliver_calls(&state, |d, now, calls| {
            d.conn.start(now).map_err(|e| err(&e))?;
            d.pump(now, calls);
            // Not retryable, as with RKT and MoltZap (an error, before any event).
            if d.no_web_socket == Some(true) {
                return Err(invalid(NO_WEB_SOCKET));
            }
            d.no_web_socket = Some(false);
            Ok::<_, JsValue>(())
        })??;
        Ok(SwitchDriver {
            state,
            agent_id,
            connection_id,
            http_base,
            op_timeout_ms: parsed.op_timeout_ms,
        })
    }

    /// Runs `f` on the driver, then makes its calls; a `state` error when the driver is busy
    /// (called from inside the WebSocket constructor).
    fn with<T>(&self, f: impl FnOnce(&mut Driver, Millis, &mut Calls) -> T) -> Result<T, JsValue> {
        deliver_calls(&self.state, f)
    }

    /// Sends `request` with the token; `resolve(decode(status, body))` or `reject(error)`,
    /// within `timeout_ms` (`None`: `opTimeoutMs`). Once the connection has stopped, calls
    /// throw, and those in flight reject, with kind `closed`.
    fn http(
        &self,
        request: Result<HttpRequest, SwitchError>,
        timeout_ms: Option<f64>,
        decode: fn(u16, &str) -> Result<String, SwitchError>,
        resolve: Function,
        reject: Function,
    ) -> Result<AbortController, JsValue> {
        let timeout_ms = options::timeout_ms(timeout_ms, self.op_timeout_ms)?;
        let request = request.map_err(|e| err(&e))?;
        let controller = fetch::controller().map_err(|e| err(&e.into()))?;
        let started = self.with(|d, _, _| {
            if d.conn.state() == State::Stopped {
                return None;
            }
            d.next_op += 1;
            d.ops_in_flight.push((d.next_op, controller.clone()));
            Some((d.next_op, d.token.clone()))
        })?;
        let Some((id, token)) = started else {
            return Err(errors::local(ErrorKind::Closed, "the connection is closed"));
        };
        let handle = controller.clone();
        let (base, me) = (self.http_base.clone(), Rc::downgrade(&self.state));
        spawn_local(async move {
            let answer = fetch::fetch(base, token, request.clone(), timeout_ms, controller)
                .await
                .map_err(|e: FetchError| e.unanswered(&request))
                .and_then(|(status, body)| decode(status, &body).map_err(|e| answered(&request, e)));
            // Taken out of the list here, or already by the stop that aborted it (tasks run while
            // nothing is borrowed).
            let stopped = me.upgrade().is_none_or(|state| {
                state
                    .try_borrow_mut()
                    .is_ok_and(|mut d| take_call(&mut d.ops_in_flight, id).is_none())
            });
            let mut calls = Calls::default();
            match answer {
                Ok(text) => calls.push(&resolve, JsValue::from(text)),
                Err(_) if stopped => {
                    let closed = Error::new(ErrorKind::Closed, "the connection closed before the answer");
                    calls.push(&reject, err(&unanswered(&request, closed, true)))
                }
                Err(e) => calls.push(&reject, err(&e)),
            }
            calls.run();
        });
        Ok(handle)
    }

    /// The HTTP calls below return the `AbortController` of their fetch: aborting it ends the call
    /// with kind `cancelled`. Each is bounded by `timeoutMs` (default `opTimeoutMs`).
    ///
    /// Operation `name` with `args` (a JSON object; `undefined`: `{}`) acting for this connection;
    /// `resolve(result JSON text)`, the answer's `result` as sent. Throws an `invalid` error for a
    /// bad name or arguments.
    pub fn op(
        &self,
        name: &str,
        args: Option<String>,
        timeout_ms: Option<f64>,
        resolve: Function,
        reject: Function,
    ) -> Result<AbortController, JsValue> {
        let request = ops::op(
            &self.agent_id,
            Some(&self.connection_id),
            name,
            args.as_deref().unwrap_or(""),
        );
        self.http(
            request,
            timeout_ms,
            |status, body| ops::decode_result(status, body).map(|r| r.get().to_owned()),
            resolve,
            reject,
        )
    }

    /// `GET ops`: `resolve(JSON text {operations: {name: {description, input_schema}}})`.
    #[wasm_bindgen(js_name = listOps)]
    pub fn list_ops(
        &self,
        timeout_ms: Option<f64>,
        resolve: Function,
        reject: Function,
    ) -> Result<AbortController, JsValue> {
        self.http(
            ops::list_ops(&self.agent_id),
            timeout_ms,
            |status, body| ops::decode_ops(status, body).map(|_| body.to_owned()),
            resolve,
            reject,
        )
    }

    /// Claims `room` for this connection (409 `state` when a live sibling holds it, unless
    /// `takeover`); `resolve(JSON text {ok, rooms, evicted_connection_id?, warning?})`.
    pub fn subscribe(
        &self,
        room: &str,
        takeover: bool,
        timeout_ms: Option<f64>,
        resolve: Function,
        reject: Function,
    ) -> Result<AbortController, JsValue> {
        self.http(
            ops::subscribe(&self.agent_id, &self.connection_id, room, takeover),
            timeout_ms,
            |status, body| ops::decode_subscribe(status, body).map(|_| body.to_owned()),
            resolve,
            reject,
        )
    }

    /// Releases `room`; `resolve(JSON text {ok, rooms, ...})`.
    pub fn unsubscribe(
        &self,
        room: &str,
        timeout_ms: Option<f64>,
        resolve: Function,
        reject: Function,
    ) -> Result<AbortController, JsValue> {
        self.http(
            ops::unsubscribe(&self.agent_id, &self.connection_id, room),
            timeout_ms,
            |status, body| ops::decode_unsubscribe(status, body).map(|_| body.to_owned()),
            resolve,
            reject,
        )
    }

    /// Replaces every placement of this connection with `map` (JSON object: session id → room),
    /// fenced with the generation of the last `connection_state`; `resolve(JSON text
    /// {placements, rooms, released})`.
    pub fn placements(
        &self,
        map: &str,
        timeout_ms: Option<f64>,
        resolve: Function,
        reject: Function,
    ) -> Result<AbortController, JsValue> {
        let map = placements_map(map).map_err(|e| invalid(format!("placements: {e} (an object of strings)")))?;
        let generation = self.with(|d, _, _| d.conn.generation().cloned())?;
        self.http(
            ops::placements(&self.agent_id, &self.connection_id, &map, generation.as_ref()),
            timeout_ms,
            |status, body| ops::decode_placements(status, body).map(|_| body.to_owned()),
            resolve,
            reject,
        )
    }

    /// Replaces the relay token for every later open and HTTP call (the socket already open
    /// keeps the one it was opened with, until the relay closes it at that token's `exp` and the
    /// engine reopens); `refresh` is then due before this one's `exp`. Throws an `invalid` error
    /// for a malformed token.
    #[wasm_bindgen(js_name = setToken)]
    pub fn set_token(&self, token: &str) -> Result<(), JsValue> {
        check_token(token).map_err(invalid)?;
        self.with(|d, now, calls| {
            d.token = Rc::from(token);
            d.tokens += 1;
            if let Some(r) = &mut d.refresh {
                r.schedule(token_exp(token), wall());
            }
            // A reopen waiting for `refreshToken` goes with this token.
            d.release(now, None);
            d.pump(now, calls);
        })
    }

    /// Reopens at once if the connection waits out its backoff before a reopen (the network came
    /// back: the `online` event); returns whether it did. The attempt count is kept.
    #[wasm_bindgen(js_name = reconnectNow)]
    pub fn reconnect_now(&self) -> Result<bool, JsValue> {
        self.with(|d, now, calls| {
            let reopened = d.conn.reconnect_now(now);
            d.pump(now, calls);
            reopened
        })
    }

    /// Closes for good: the socket with 1000, then `onEvent` gets `stopped` (without `error`),
    /// after every event still held.
    pub fn close(&self) -> Result<(), JsValue> {
        self.with(|d, now, calls| {
            d.held = false;
            d.conn.close(now);
            d.pump(now, calls);
        })
    }

    /// `true`: the page cannot take more events now; they wait in the engine. `false`: hand
    /// them over again.
    pub fn hold(&self, held: bool) -> Result<(), JsValue> {
        self.with(|d, now, calls| {
            d.held = held;
            d.pump(now, calls);
        })
    }

    /// Where the connection is, as JSON text: `{state, wire, cursor?, generation?, connectionId,
    /// agentId, rooms, attempt}`.
    pub fn status(&self) -> Result<String, JsValue> {
        let d = self.state.try_borrow().map_err(|_| crate::socket::busy(&self.state))?;
        let c = &d.conn;
        let mut out = String::with_capacity(256);
        let mut s = Obj::begin(&mut out);
        s.str("state", c.state().as_str());
        s.str("wire", c.wire().as_str());
        if let Some(cursor) = c.cursor() {
            s.u64("cursor", cursor);
        }
        if let Some(g) = c.generation() {
            s.key("generation");
            g.push_json(s.out);
        }
        s.str("connectionId", c.connection_id());
        s.str("agentId", c.agent_id());
        s.strings("rooms", c.rooms());
        s.u64("attempt", u64::from(c.attempt()));
        s.end();
        Ok(out)
    }

    /// Whether the connection is over (closed, refused, taken over, gave up).
    #[wasm_bindgen(getter)]
    pub fn stopped(&self) -> bool {
        self.state
            .try_borrow()
            .map(|d| d.conn.state() == State::Stopped)
            .unwrap_or(false)
    }

    #[wasm_bindgen(getter, js_name = connectionId)]
    pub fn connection_id(&self) -> String {
        self.connection_id.clone()
    }

    #[wasm_bindgen(getter, js_name = agentId)]
    pub fn agent_id(&self) -> String {
        self.agent_id.clone()
    }
}

/// `placements`' argument (JSON text of an object of strings, session id → room) as the engine
/// takes it. A session given twice keeps its last room, as with `JSON.parse`.
fn placements_map(map: &str) -> Result<BTreeMap<String, String>, String> {
    let tape = read::parse(map, 2).map_err(|e| e.to_string())?;
    let root = tape.root();
    if root.kind() != Kind::Object {
        return Err(format!("{} instead of an object", root.kind().name()));
    }
    let mut out = BTreeMap::new();
    for (session, room) in root.members() {
        let Some(room) = room.as_str() else {
            return Err(format!("{:?} is {}", session.text(), room.kind().name()));
        };
        out.insert(session.text().into_owned(), room.into_owned());
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placements_maps() {
        let m = placements_map(r#"{"s-2":"r-b","s-1":"r-\u0061","s-2":"r-c"}"#).unwrap();
        let want: BTreeMap<String, String> = [("s-1", "r-a"), ("s-2", "r-c")]
            .into_iter()
            .map(|(s, r)| (s.to_owned(), r.to_owned()))
            .collect();
        assert_eq!(m, want);
        assert_eq!(placements_map(" {} ").unwrap(), BTreeMap::new());
        assert_eq!(placements_map("[]").unwrap_err(), "an array instead of an object");
        assert_eq!(placements_map(r#"{"s":1}"#).unwrap_err(), r#""s" is a number"#);
        assert_eq!(placements_map(r#"{"s":{"r":"x"}}"#).unwrap_err(), r#""s" is an object"#);
        assert!(placements_map(r#"{"s":"r""#).is_err());
        assert!(placements_map("").is_err());
    }

    #[test]
    fn base_urls() {
        assert_eq!(
            bases("https://relay.example/switch/").unwrap(),
            (
                "https://relay.example/switch".into(),
                "wss://relay.example/switch".into()
            )
        );
        assert_eq!(
            bases("HTTP://127.0.0.1:7751").unwrap(),
            ("http://127.0.0.1:7751".into(), "ws://127.0.0.1:7751".into())
        );
        for bad in [
            "ws://h",
            "h:1",
            "http://",
            "http:///x",
            "http://h/?q",
            "http://h#f",
            "http://u:p@h",
            "http://h /x",
        ] {
            assert!(bases(bad).is_err(), "{bad}");
        }
        assert!(check_token("sk_switch_abc-DEF.sig").is_ok());
        for bad in ["", "a b", "a=", "a/b", "a,b"] {
            assert!(check_token(bad).is_err(), "{bad}");
        }
    }
}
