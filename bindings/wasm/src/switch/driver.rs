//! The driver behind [`SwitchDriver`](super::SwitchDriver): the engine's connection and what
//! performs its transmits (a WebSocket per `open` on the WebSocket wire, its pongs, `fetch` for its
//! HTTP calls and beats, closes), feeds it the socket's input, the answers, the clock and the
//! timer, and hands every event to `onEvent`. The SSE wire's stream is in `stream.rs`, the token's
//! renewal in `renew.rs`.

use super::fetch;
use super::refresh::Refresh;
use crate::host::{wall, Timer};
use crate::socket::{as_sink, deliver_calls, Calls, Input, Sink, Socket, FAILED, NO_WEB_SOCKET};
use agentwire_core::{ErrorKind, Millis};
use agentwire_switch::connection::{OpenRequest, Transmit};
use agentwire_switch::{Connection, Event, HttpRequest, State, SwitchError, Wire};
use js_sys::Function;
use std::cell::{Cell, RefCell};
use std::rc::{Rc, Weak};
use wasm_bindgen_futures::spawn_local;
use web_sys::AbortController;

use agentwire_relay::close::{TOKEN_EXPIRED, TOKEN_EXPIRED_REASON};
use agentwire_relay::{SUBPROTOCOL, TOKEN_PROTOCOL_PREFIX as TOKEN_PREFIX};

/// The socket or stream of one `open`, tagged with the open's number, so one that was replaced
/// can never speak for the current one.
pub(super) struct Current {
    pub(super) link: Link,
    pub(super) epoch: u64,
    /// Its `open` event (the stream's `200`) came.
    pub(super) opened: bool,
    /// The token it was opened with (`Driver::tokens` then).
    pub(super) token: u64,
}

/// What carries an `open`: a WebSocket and the sink its events go through, or the SSE wire's
/// stream (a `fetch` whose body is read as it comes), ended with its controller.
pub(super) enum Link {
    Socket {
        socket: Socket,
        _sink: Rc<RefCell<SocketSink>>,
    },
    Stream(AbortController),
}

pub(super) struct SocketSink {
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

pub(super) struct Driver {
    pub(super) conn: Connection,
    pub(super) me: Weak<RefCell<Driver>>,
    /// `http(s)://host[:port][/prefix]`, without a trailing `/`.
    pub(super) http_base: Rc<str>,
    /// The same with `ws(s)://`.
    pub(super) ws_base: String,
    pub(super) token: Rc<str>,
    /// Tokens set so far: which one a socket was opened with.
    pub(super) tokens: u64,
    /// `refreshToken`, until the connection stops (the app's callback may reach this driver's
    /// JS wrapper: a cycle no garbage collector sees).
    pub(super) refresh: Option<Refresh>,
    /// A reopen with an expired token, waiting for the renewal in flight (the engine's open
    /// deadline, `openTimeoutMs`, bounds the wait, as it does the call).
    pub(super) waiting_open: Option<OpenRequest>,
    pub(super) ctor: Option<Function>,
    pub(super) socket: Option<Current>,
    /// Sockets replaced or closed, dropped in a later task (never inside their own callback).
    pub(super) retired: Vec<Current>,
    pub(super) epoch: u64,
    pub(super) timer: Option<Timer>,
    /// Let go of once stopped, after `stopped`, the last event: the facade's callback may reach
    /// this driver's JS wrapper, and a cycle through wasm memory is one no garbage collector sees.
    pub(super) on_event: Option<Function>,
    /// The engine's HTTP calls in flight (one beat at most); a close aborts them (their answers
    /// would be late).
    pub(super) calls_in_flight: Vec<(u64, AbortController)>,
    pub(super) http_timeout_ms: u64,
    /// The user's HTTP calls (`op`, `listOps`, ...) in flight, numbered: once the connection
    /// has stopped they are aborted and reject with kind `closed`.
    pub(super) ops_in_flight: Vec<(u64, AbortController)>,
    pub(super) next_op: u64,
    /// Whether an open inside `SwitchDriver::new` found no WebSocket constructor (none given, no
    /// global one); `None` while `new` runs.
    pub(super) no_web_socket: Option<bool>,
    /// The page's queue for `events()` is full: events wait in the engine (bounded by its
    /// `max_queued_*`, past which it reopens from the cursor once drained: none is lost).
    pub(super) held: bool,
    /// The reason of the last `disconnected` (`status()`'s `lastProblem`, and a connect's
    /// timeout says it).
    pub(super) last_problem: Option<String>,
    /// Its part of [`INSTANCE_QUEUED_BYTES`].
    pub(super) share: QueueShare,
}

/// The bytes of domain events every Switch engine of this instance may hold for its page (events
/// waiting while `events()` is not read), together: they share one wasm memory, which a bound of
/// 64 MiB each did not keep within its 4 GiB (64 clients filled it, and the instance trapped for
/// every client). Past it an engine takes no more events until its page reads some (they wait
/// for the reopen from its cursor: none is lost), beyond its [`ENGINE_FLOOR_BYTES`].
const INSTANCE_QUEUED_BYTES: usize = 256 << 20;

/// What an engine may hold whatever the others hold (its own `maxQueuedBytes` when less): a
/// page that reads promptly is not cut to an event at a time by the pages that do not (its
/// control events, bounded by the same number, were dropped, and a 16 KiB SSE slice overflowed
/// and reopened), and many clients still hold at most 1 MiB each past the instance's bound.
const ENGINE_FLOOR_BYTES: usize = 1 << 20;

thread_local! {
    /// What the engines of this instance hold, as each last counted it.
    static QUEUED: Cell<usize> = const { Cell::new(0) };
}

/// A driver's part of [`INSTANCE_QUEUED_BYTES`]: its own bound (`maxQueuedBytes`) and the bytes
/// its engine held when last counted.
pub(super) struct QueueShare {
    own: usize,
    counted: usize,
}

impl QueueShare {
    pub(super) fn new(own: usize) -> QueueShare {
        QueueShare { own, counted: 0 }
    }

    /// Before input that may queue events: the engine's bound is what the others leave of the
    /// instance's, at least [`ENGINE_FLOOR_BYTES`], never more than its own.
    pub(super) fn bound(&self, conn: &mut Connection) {
        let others = QUEUED.with(Cell::get).saturating_sub(self.counted);
        let left = INSTANCE_QUEUED_BYTES.saturating_sub(others);
        conn.set_max_queued_bytes(self.own.min(left.max(ENGINE_FLOOR_BYTES)));
    }

    /// After: counts what the engine holds now (`0` once the driver is gone).
    fn count(&mut self, held: usize) {
        QUEUED.with(|q| q.set(q.get().saturating_sub(self.counted).saturating_add(held)));
        self.counted = held;
    }
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
    pub(super) fn socket_input(&mut self, epoch: u64, now: Millis, input: Input, calls: &mut Calls) {
        let Some(current) = self.socket.as_mut().filter(|c| c.epoch == epoch) else {
            return; // a replaced socket
        };
        self.share.bound(&mut self.conn);
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
                // The WebSocket API tells nothing of a failed open but a close (1006), and a
                // browser's `error` before it nothing more; the engine decides what it means (a
                // close before the open is an open failure). Its address is said (the base has
                // no credentials: `bases` refuses them).
                let url = &self.ws_base;
                let reason = match reason.as_str() {
                    _ if opened => reason,
                    "" | FAILED => format!(
                        "the WebSocket to {url} did not open (code {code}; the host does not say why: \
                         unreachable, refused, or the token was not accepted)"
                    ),
                    r => format!("the WebSocket to {url} did not open: {r}"),
                };
                self.conn.handle_close(now, code, &reason);
            }
            Input::Timer => return,
            #[cfg(any(feature = "rkt", feature = "moltzap"))]
            Input::Cancel(_) => return,
        }
        self.pump(now, calls);
    }

    /// Performs the engine's transmits and hands its events to `onEvent` until both are
    /// drained, then re-arms the timer.
    pub(super) fn pump(&mut self, now: Millis, calls: &mut Calls) {
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
                if let Event::Disconnected { reason, .. } = &event {
                    self.last_problem = Some(reason.clone());
                }
                if let Some(f) = &self.on_event {
                    calls.push_event(f, event.to_json_lazy());
                }
            }
            if !progressed {
                break;
            }
        }
        self.share.count(self.conn.queued_bytes());
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

    pub(super) fn transmit(&mut self, now: Millis, t: Transmit) {
        match t {
            Transmit::Open(open) => {
                // A reopen renews a token due, and with an expired token waits for the renewal;
                // so does the first open with a token expired by this clock (the app's stored
                // token, a day old): the relay would refuse it, and `connect` fail `auth`. With
                // this clock ahead of the relay's, every reopen renews and waits (`refresh.rs`).
                if let Some(r) = self.refresh.as_ref().filter(|r| self.epoch > 0 || r.spent(wall())) {
                    if r.reopen_renews(wall()) {
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
            }
        }
    }

    /// Opens the socket (or, on the SSE wire, the stream) of the engine's `open`. The relay
    /// speaks only the WebSocket; the SSE wire (`transport` `sse`, or `auto` after a refused
    /// upgrade) is for a Switch server reached directly with the agent key.
    pub(super) fn open(&mut self, now: Millis, open: OpenRequest) {
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
    /// Moves the current socket to `retired`, closing it with `frame` when given (a stream is
    /// aborted), and aborts the engine's HTTP calls in flight (its beats): the engine forgets
    /// them with the socket or stream they were sent for (its close, a reopen, or the driver
    /// reporting it gone), and an answer fed to it afterwards was a late one, a diagnostic.
    pub(super) fn retire_socket(&mut self, frame: Option<(u16, &str)>) {
        for (_, c) in self.calls_in_flight.drain(..) {
            fetch::abort(&c);
        }
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
    pub(super) fn call(&mut self, now: Millis, id: u64, request: HttpRequest) {
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
        self.share.count(0);
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
pub(super) fn take_call(calls: &mut Vec<(u64, AbortController)>, id: u64) -> Option<AbortController> {
    let at = calls.iter().position(|(i, _)| *i == id)?;
    Some(calls.swap_remove(at).1)
}
