//! The socket half of every driver: a WebSocket (the host's, or a constructor the user injects,
//! such as undici's on Node 20), its events turned into [`Input`]s for a [`Sink`], and the
//! deferred JavaScript calls a sink produces, made once the sink is no longer borrowed (a user
//! callback may call the driver again).

use crate::host::{now, Timer};
use agentwire_core::Millis;
use js_sys::{Array, Function, JsString, Reflect, Uint8Array};
use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::rc::{Rc, Weak};
use wasm_bindgen::prelude::*;
use web_sys::{CloseEvent, MessageEvent, WebSocket};

/// The largest frame taken from a socket (in UTF-16 units for text, which a text's UTF-8 size
/// is at least): above every engine's default limit, and low enough that copying a frame into
/// wasm memory (up to 3 bytes a unit) cannot exhaust it and kill the instance. A larger frame
/// ends the socket as a close with 1009.
pub(crate) const MAX_FRAME: usize = 64 << 20;

/// An option bounding incoming frames (`name`), checked against [`MAX_FRAME`]: above it every
/// larger frame would end the socket with 1009 whatever the option said.
pub(crate) fn frame_bound(name: &str, bytes: usize) -> Result<usize, String> {
    match bytes > MAX_FRAME {
        true => Err(format!(
            "`{name}` of {bytes}: the package takes frames of at most {MAX_FRAME} bytes"
        )),
        false => Ok(bytes),
    }
}

/// What happened on the socket or the timer.
pub(crate) enum Input {
    Open,
    Text(String),
    Binary(Vec<u8>),
    /// `refused`: the HTTP answer of a refused upgrade, when the socket knows it (a browser's
    /// does not; `fetchWebSocket`'s does).
    Closed {
        code: u16,
        reason: String,
        refused: Option<Refusal>,
    },
    Timer,
    /// A command's cancel that found its driver busy (made from inside the driver's own call to
    /// the socket's `send()`: an `AbortSignal` aborted there), taken once it is free.
    #[cfg(any(feature = "rkt", feature = "moltzap"))]
    Cancel(String),
}

/// A refused upgrade's HTTP status and (the start of) its body.
pub(crate) struct Refusal {
    pub(crate) status: u16,
    pub(crate) body: String,
}

/// UTF-16 units of a refusal's body taken into wasm memory: as many as the bytes an engine reads
/// of it (a unit is at least one byte of UTF-8). `npm/src/fetch-socket.ts` reads as many.
const REFUSAL_BODY: u32 = agentwire_core::http::REFUSAL_BODY_MAX as u32;

impl Refusal {
    /// The close event's `status` (an HTTP status) and `body`, set by `fetchWebSocket`.
    fn of(ev: &JsValue) -> Option<Refusal> {
        let status = Reflect::get(ev, &JsValue::from_str("status")).ok()?.as_f64()?;
        if !(100.0..600.0).contains(&status) || status.fract() != 0.0 {
            return None;
        }
        let body = Reflect::get(ev, &JsValue::from_str("body"))
            .ok()
            .and_then(|b| b.dyn_into::<JsString>().ok())
            .map(|b| String::from(b.slice(0, REFUSAL_BODY)))
            .unwrap_or_default();
        Some(Refusal {
            status: status as u16,
            body,
        })
    }
}

/// A call's arguments after the first: an event's payload field and raw text.
type Extra = Option<(JsValue, JsValue)>;

/// One call: `(function, argument, extra)`.
type Call = (Function, JsValue, Extra);

/// JavaScript calls to make after the sink is released.
#[derive(Default)]
pub(crate) struct Calls(Vec<Call>);

impl Calls {
    pub(crate) fn push(&mut self, f: &Function, arg: JsValue) {
        self.0.push((f.clone(), arg, None));
    }

    /// An event for `onEvent` as `(envelope JSON, field, raw payload)`: the package's facade
    /// parses the envelope and makes the field a getter that parses the payload on first use.
    #[cfg(any(feature = "moltzap", feature = "switch"))]
    pub(crate) fn push_event(&mut self, f: &Function, event: agentwire_core::json::LazyJson<'_>) {
        let extra = event
            .payload
            .map(|(field, raw)| (JsValue::from_str(field), JsValue::from_str(raw)));
        self.0.push((f.clone(), JsValue::from(event.envelope), extra));
    }

    /// Makes the calls in order. A callback that throws does not stop the others; what it threw
    /// is written to `console.error`. Calls made while others run (a callback that called the
    /// driver: `close()` from `onEvent`) wait for the ones already queued, so every driver's
    /// events keep the engine's order (its last event last).
    pub(crate) fn run(self) {
        let nested = RUNNING.with(|queue| match &mut *queue.borrow_mut() {
            Some(queue) => {
                queue.extend(self.0);
                true
            }
            none => {
                *none = Some(self.0.into());
                false
            }
        });
        match nested {
            // The run below on the stack makes them; or none is, when an exception thrown
            // through the module (a JavaScript stack overflow) cut a run short: its queue was
            // left behind, and with it every driver's calls for good. A microtask takes it over.
            true => soon(&RESCUE_QUEUED, &RESCUE),
            false => run_queued(),
        }
    }
}

/// Makes the calls queued in [`RUNNING`] in order, then clears it.
fn run_queued() {
    while let Some((f, arg, extra)) = RUNNING.with(|queue| queue.borrow_mut().as_mut().and_then(VecDeque::pop_front)) {
        let r = match extra {
            None => f.call1(&JsValue::UNDEFINED, &arg),
            Some((a, b)) => f.call3(&JsValue::UNDEFINED, &arg, &a, &b),
        };
        if let Err(e) = r {
            report(&e);
        }
    }
    RUNNING.with(|queue| queue.borrow_mut().take());
}

/// A queue of calls still there under a microtask (nothing of this module is on the stack then)
/// is one a run cut short left behind: its calls, and those queued behind them since, are made.
fn rescue_calls() {
    RESCUE_QUEUED.with(|q| q.set(false));
    if RUNNING.with(|queue| queue.borrow().is_some()) {
        run_queued();
    }
}

/// Queues `f` as a microtask unless `queued` says it is already; `queued` is set only once the
/// host took it, so an exception thrown by `queueMicrotask` (a stack overflow) leaves it to the
/// next call.
fn soon(queued: &'static std::thread::LocalKey<Cell<bool>>, f: &'static std::thread::LocalKey<Closure<dyn Fn()>>) {
    if !queued.with(Cell::get) {
        f.with(|f| queue_microtask(f.as_ref().unchecked_ref()));
        queued.with(|q| q.set(true));
    }
}

thread_local! {
    /// The calls being made by [`Calls::run`], and those queued behind them meanwhile.
    static RUNNING: RefCell<Option<VecDeque<Call>>> = const { RefCell::new(None) };
    static RESCUE: Closure<dyn Fn()> = Closure::new(rescue_calls);
    static RESCUE_QUEUED: Cell<bool> = const { Cell::new(false) };
}

fn report(e: &JsValue) {
    web_sys::console::error_1(e);
}

/// A driver's state, fed by its socket and timer.
pub(crate) trait Sink {
    /// `Err(input)`: busy (its driver is borrowed); [`deliver`] hands it over later.
    fn input(&mut self, now: Millis, input: Input, calls: &mut Calls) -> Result<(), Input>;
}

/// Feeds `input` to the sink, if it still exists, then makes its calls. A sink that is busy
/// (a socket that called back synchronously from inside a call its driver made: a test double
/// answering from `send`, a `close()` firing `onclose` at once) gets it in a microtask, in order
/// with every input after it; it is never a panic, and dropped only when its driver was left
/// borrowed for good ([`drain_deferred`]).
pub(crate) fn deliver(sink: &Weak<RefCell<dyn Sink>>, input: Input) {
    if DEFERRED.with(|d| !d.borrow().is_empty()) {
        return defer(sink.clone(), input);
    }
    if let Err(input) = deliver_now(sink, input) {
        defer(sink.clone(), input);
    }
}

/// `Err(input)`: the sink was busy.
fn deliver_now(sink: &Weak<RefCell<dyn Sink>>, input: Input) -> Result<(), Input> {
    let Some(sink) = sink.upgrade() else { return Ok(()) };
    let mut calls = Calls::default();
    let taken = match sink.try_borrow_mut() {
        Ok(mut s) => s.input(now(), input, &mut calls),
        Err(_) => Err(input),
    };
    drop(sink);
    calls.run();
    taken
}

/// Queues `input` for [`drain_deferred`]. The drain is queued once per batch by a flag, not by
/// the queue's length: an input queued by a call that an exception then cut short (a stack
/// overflow at `queueMicrotask`) left the queue never empty again, and every driver's input was
/// deferred behind it for good.
fn defer(sink: Weak<RefCell<dyn Sink>>, input: Input) {
    DEFERRED.with(|d| d.borrow_mut().push_back((sink, input)));
    soon(&DRAIN_QUEUED, &DRAIN);
}

/// Delivers the deferred inputs in order. Nothing of this module is on the stack under a
/// microtask, so a sink still busy here can only have been left borrowed for good: an exception
/// thrown through the module while it ran (no host call made while a driver is borrowed should
/// throw uncaught; a JavaScript stack overflow still can). Its input is dropped, where waiting
/// for it re-queued the microtask forever and took the whole isolate, and its client refuses
/// every later call ([`deliver_calls`]).
fn drain_deferred() {
    DRAIN_QUEUED.with(|q| q.set(false));
    while let Some((sink, input)) = DEFERRED.with(|d| d.borrow_mut().pop_front()) {
        if deliver_now(&sink, input).is_err() {
            if sink.strong_count() == 0 {
                continue;
            }
            // A socket's sink stands for the driver behind it (registered by `owned_by`: the
            // sink cannot be asked, as the exception may have left it borrowed too).
            let owner = OWNERS.with(|o| o.borrow().iter().find(|(s, _)| s.ptr_eq(&sink)).map(|(_, d)| d.clone()));
            mark_broken(owner.unwrap_or(sink));
        }
    }
}

/// Counts `driver` among the drivers left borrowed for good ([`BROKEN`]).
fn mark_broken(driver: SinkRef) {
    BROKEN.with(|b| {
        let mut b = b.borrow_mut();
        // A driver freed since: its memory may hold a new one, which is not broken.
        b.retain(|w| w.strong_count() > 0);
        if !b.iter().any(|w| w.ptr_eq(&driver)) {
            b.push(driver);
        }
    });
}

/// Looks again, in a microtask, at the drivers a command found busy: one still borrowed there
/// was left so for good (nothing of this module is on the stack under a microtask), as
/// [`drain_deferred`] finds for input. A driver whose socket will send nothing more (closed
/// when the exception came) is found so too, at its next command.
fn probe_busy() {
    for driver in PROBED.with(|p| std::mem::take(&mut *p.borrow_mut())) {
        if driver.upgrade().is_some_and(|d| d.try_borrow_mut().is_err()) {
            mark_broken(driver);
        }
    }
}

/// A driver's sink, as its socket and timer hold it.
pub(crate) type SinkRef = Weak<RefCell<dyn Sink>>;

thread_local! {
    static DEFERRED: RefCell<VecDeque<(SinkRef, Input)>> = const { RefCell::new(VecDeque::new()) };
    static DRAIN: Closure<dyn Fn()> = Closure::new(drain_deferred);
    static DRAIN_QUEUED: Cell<bool> = const { Cell::new(false) };
    /// The drivers found borrowed for good by [`drain_deferred`]. A `Weak`: while it is here its
    /// memory is not reused by another driver (a raw address was, which then got the broken
    /// driver's message for a real re-entrant call); pruned once freed.
    static BROKEN: RefCell<Vec<SinkRef>> = const { RefCell::new(Vec::new()) };
    /// The drivers a command found busy, for [`probe_busy`].
    static PROBED: RefCell<Vec<SinkRef>> = const { RefCell::new(Vec::new()) };
    static PROBE: Closure<dyn Fn()> = Closure::new(probe_busy);
    /// Sinks that are not their driver (a socket's), with the driver behind each.
    static OWNERS: RefCell<Vec<(SinkRef, SinkRef)>> = const { RefCell::new(Vec::new()) };
}

/// Names `driver` as the one behind `sink` (a socket's sink, not the driver itself), so that a
/// sink left borrowed for good marks its driver broken ([`drain_deferred`]). Entries of sinks
/// freed since are pruned here.
#[cfg(feature = "switch")]
pub(crate) fn owned_by(sink: &SinkRef, driver: SinkRef) {
    OWNERS.with(|o| {
        let mut o = o.borrow_mut();
        o.retain(|(s, _)| s.strong_count() > 0);
        o.push((sink.clone(), driver));
    });
}

#[wasm_bindgen]
extern "C" {
    #[wasm_bindgen(js_name = queueMicrotask)]
    fn queue_microtask(f: &Function);
}

/// A timer that delivers [`Input::Timer`] to `sink`.
pub(crate) fn timer(sink: Weak<RefCell<dyn Sink>>) -> Timer {
    Timer::new(Closure::new(move || deliver(&sink, Input::Timer)))
}

/// How long a socket may take to open: the driver's bound on the TCP connect and the WebSocket
/// upgrade (the engine's handshake timer starts at the open), `handshakeTimeoutMs` as the native
/// drivers have it. A socket not open by then is closed and the connect fails with `timeout`.
#[cfg(any(feature = "rkt", feature = "moltzap"))]
#[derive(Clone, Copy)]
pub(crate) struct OpenDeadline {
    pub(crate) at: Millis,
    limit: u64,
}

#[cfg(any(feature = "rkt", feature = "moltzap"))]
impl OpenDeadline {
    pub(crate) fn new(now: Millis, limit: u64) -> OpenDeadline {
        OpenDeadline {
            at: now.saturating_add(limit),
            limit,
        }
    }

    /// The message of a missed deadline, when `now` is past it.
    pub(crate) fn missed(&self, now: Millis, url: &str) -> Option<String> {
        (now >= self.at).then(|| {
            let url = agentwire_core::redact::url(url);
            format!("{url}: the WebSocket did not open within {} ms", self.limit)
        })
    }

    /// What a connect's timeout adds to its message: the phase it stopped in, the socket's open
    /// (`opening`: this deadline still set) or the handshake's `answer` (after the open).
    pub(crate) fn phase(opening: Option<OpenDeadline>, answer: &str) -> String {
        match opening {
            Some(_) => " (the WebSocket did not open)".into(),
            None => format!(" (no {answer})"),
        }
    }

    /// The earlier of the engine's deadline and this one (when still opening).
    pub(crate) fn earliest(engine: Option<Millis>, open: Option<OpenDeadline>) -> Option<Millis> {
        match (engine, open) {
            (Some(a), Some(b)) => Some(a.min(b.at)),
            (a, b) => a.or(b.map(|b| b.at)),
        }
    }
}

/// The unsent bytes (`bufferedAmount`) past which an engine's next frames wait in the engine: a
/// WebSocket never refuses a send, it buffers, so a client handing it every frame at once would
/// hold any amount for a peer that reads slowly or not at all, and send calls given up on long
/// before. Held in the engine, a call that ends first is never sent (and says so: retryable).
/// One frame always goes below it, however large (as the native driver's write buffer).
#[cfg(any(feature = "rkt", feature = "moltzap"))]
const SEND_BUFFER: f64 = (1 << 20) as f64;

/// How soon a socket over [`SEND_BUFFER`] is looked at again: no event says it drained.
#[cfg(any(feature = "rkt", feature = "moltzap"))]
const SEND_RECHECK_MS: Millis = 20;

/// How long a socket over [`SEND_BUFFER`] may go without sending a byte (its `bufferedAmount`
/// not falling) before it counts as dead, as the native drivers' `WRITE_TIMEOUT`: a peer gone
/// without a close (a half-open socket) would otherwise hold the engine's frames for good, the
/// liveness probe (MoltZap) or keepalive PING (RKT) among them, which the engines count only
/// once it has left ("held behind a long write, which the driver bounds itself").
#[cfg(any(feature = "rkt", feature = "moltzap"))]
const SEND_STALL_MS: Millis = 5_000;

/// The close reason of a socket that sent nothing for [`SEND_STALL_MS`] (the native drivers'
/// words).
#[cfg(any(feature = "rkt", feature = "moltzap"))]
const WRITE_BLOCKED: &str = "write blocked for 5000 ms";

/// Hands the engine's frames (`poll`) to `socket` while it holds under [`SEND_BUFFER`] unsent
/// (every frame when not `bounded`, as once the session is closed; without a socket they are
/// dropped). `Ok(true)` when it stopped for a socket over it: see [`send_recheck`]. `Err` with
/// the close reason when that socket sent nothing for [`SEND_STALL_MS`]: the driver drops it and
/// tells the engine it closed (1006).
#[cfg(any(feature = "rkt", feature = "moltzap"))]
pub(crate) fn send_while_room(
    socket: Option<&Socket>,
    bounded: bool,
    now: Millis,
    mut poll: impl FnMut() -> Option<agentwire_core::Outgoing>,
) -> Result<bool, &'static str> {
    loop {
        if bounded {
            if let Some(stalled) = socket.and_then(|s| s.backed_up(now)) {
                return if stalled { Err(WRITE_BLOCKED) } else { Ok(true) };
            }
        }
        let Some(frame) = poll() else { return Ok(false) };
        if let Some(socket) = socket {
            socket.transmit(frame)
        }
    }
}

/// When the driver's timer fires: at `at`, or sooner, [`SEND_RECHECK_MS`] from `now`, when frames
/// wait for a socket over [`SEND_BUFFER`] (`held`).
#[cfg(any(feature = "rkt", feature = "moltzap"))]
pub(crate) fn send_recheck(at: Option<Millis>, held: bool, now: Millis) -> Option<Millis> {
    match held {
        true => Some(at.unwrap_or(Millis::MAX).min(now.saturating_add(SEND_RECHECK_MS))),
        false => at,
    }
}

/// Why a socket could not be made where the host has no global `WebSocket` and none was given.
pub(crate) const NO_WEB_SOCKET: &str =
    "this host has no global WebSocket: pass the `webSocket` option (a WebSocket constructor, such as undici's WebSocket on Node 20)";

/// An open (or opening) WebSocket and its handlers.
pub(crate) struct Socket {
    ws: WebSocket,
    _handlers: [Closure<dyn Fn(JsValue)>; 4],
    /// While over [`SEND_BUFFER`]: its `bufferedAmount` when last seen falling, and since when.
    #[cfg(any(feature = "rkt", feature = "moltzap"))]
    stall: Cell<Option<(f64, Millis)>>,
}

impl Socket {
    /// Opens `url` offering `protocols`, with `ctor` when given (else the global `WebSocket`).
    /// Fails when the constructor throws (a malformed URL, a blocked port).
    pub(crate) fn open(
        url: &str,
        protocols: &[&str],
        ctor: Option<&Function>,
        sink: Weak<RefCell<dyn Sink>>,
    ) -> Result<Socket, String> {
        let list: Array = protocols.iter().map(|p| JsValue::from_str(p)).collect();
        let ws: WebSocket = match ctor {
            Some(ctor) => Reflect::construct(ctor, &Array::of2(&JsValue::from_str(url), &list))
                .map_err(|e| describe(&e))?
                .unchecked_into(),
            None => WebSocket::new_with_str_sequence(url, &list).map_err(|e| {
                // `WebSocket` is not a global here (Node 20): a ReferenceError.
                let name = Reflect::get(&e, &JsValue::from_str("name"))
                    .ok()
                    .and_then(|n| n.as_string());
                match name.as_deref() {
                    Some("ReferenceError") => NO_WEB_SOCKET.to_string(),
                    _ => describe(&e),
                }
            })?,
        };
        set(&ws, "binaryType", &JsValue::from_str("arraybuffer"));
        // `Fn`, not `FnMut`: wasm-bindgen refuses to enter an `FnMut` closure again while it runs
        // ("closure invoked recursively or after being dropped", thrown at the caller), and a
        // handler is entered again whenever the app feeds the socket from inside a callback the
        // handler made (a test double answering from `send()` a call made in `onEvent`, a harness
        // pushing its next frame from `onEvent`): the frame was lost. Now `deliver` takes it, at
        // once or, while the driver is busy, in a microtask.
        let s = sink.clone();
        let on_open = Closure::<dyn Fn(JsValue)>::new(move |_| deliver(&s, Input::Open));
        // The end is delivered once: at `close`, at `error` (which always ends the socket with
        // 1006, its reason what the host's event says; undici 6 fires no `close` at all when the
        // connection cannot be made), or at a frame too large to take.
        let ended = Rc::new(Cell::new(false));
        let (s, done, socket) = (sink.clone(), ended.clone(), ws.clone());
        let on_message = Closure::<dyn Fn(JsValue)>::new(move |ev: JsValue| {
            if done.get() {
                return;
            }
            let data = ev.unchecked_ref::<MessageEvent>().data();
            let (text, size) = match data.dyn_ref::<JsString>() {
                Some(t) => (Some(t), t.length() as usize),
                None => (None, Uint8Array::new(&data).length() as usize),
            };
            if size > MAX_FRAME {
                // Refused before it is copied into wasm memory, which it could exhaust.
                done.set(true);
                let _ = socket.close();
                let reason = format!("a frame of {size} bytes or more: agentwire takes at most {MAX_FRAME}");
                let refused = None;
                return deliver(
                    &s,
                    Input::Closed {
                        code: 1009,
                        reason,
                        refused,
                    },
                );
            }
            let input = match text {
                Some(t) => Input::Text(crate::host::utf8(t)),
                None => Input::Binary(Uint8Array::new(&data).to_vec()),
            };
            deliver(&s, input)
        });
        let (s, done) = (sink.clone(), ended.clone());
        let on_close = Closure::<dyn Fn(JsValue)>::new(move |ev: JsValue| {
            // Read structurally: Node 20's undici events are not instances of a global CloseEvent.
            let ev = ev.unchecked_ref::<CloseEvent>();
            let (code, reason) = (ev.code(), ev.reason());
            if !done.replace(true) {
                let refused = Refusal::of(ev);
                deliver(&s, Input::Closed { code, reason, refused })
            }
        });
        // An address with credentials (user information, a query) is not to be quoted.
        let secret = matches!(agentwire_core::redact::url(url), std::borrow::Cow::Owned(_));
        let on_error = Closure::<dyn Fn(JsValue)>::new(move |ev: JsValue| {
            if !ended.replace(true) {
                let reason = host_message(&ev, secret).unwrap_or_else(|| FAILED.to_string());
                deliver(
                    &sink,
                    Input::Closed {
                        code: 1006,
                        reason,
                        refused: None,
                    },
                )
            }
        });
        let handlers = [on_open, on_message, on_close, on_error];
        for (name, h) in HANDLERS.iter().zip(&handlers) {
            set(&ws, name, h.as_ref());
        }
        Ok(Socket {
            ws,
            _handlers: handlers,
            #[cfg(any(feature = "rkt", feature = "moltzap"))]
            stall: Cell::new(None),
        })
    }

    /// What the host threw at reading the socket's `readyState`, when it refuses the socket
    /// here: workerd's "Cannot perform I/O on behalf of a different request" for a socket made
    /// in another request (a client kept in a module variable). Neither the socket nor its close
    /// can be used then; its events, if any come, go to the request that made it.
    #[cfg(any(feature = "rkt", feature = "moltzap"))]
    pub(crate) fn refused(&self) -> Option<String> {
        self.ready_state().err().map(|e| describe(&e))
    }

    /// A command's check: `Err` (kind `state`) when the host refuses the socket here.
    #[cfg(any(feature = "rkt", feature = "moltzap"))]
    #[inline(never)]
    pub(crate) fn usable(socket: Option<&Socket>) -> Result<(), JsValue> {
        match socket.and_then(Socket::refused) {
            Some(m) => Err(crate::errors::local(agentwire_core::ErrorKind::State, elsewhere(&m))),
            None => Ok(()),
        }
    }

    /// `readyState`, read with `Reflect.get`, whose exceptions are caught: one thrown through
    /// the module while a driver is borrowed would leave it borrowed for good.
    fn ready_state(&self) -> Result<u16, JsValue> {
        let state = Reflect::get(&self.ws, &JsValue::from_str("readyState"))?;
        Ok(state.as_f64().map_or(WebSocket::CLOSED, |s| s as u16))
    }

    /// `None` when the socket holds under [`SEND_BUFFER`] unsent (`bufferedAmount`, read with
    /// `Reflect.get`: a getter that throws, or a test double without it, is 0); else whether it
    /// has sent nothing for [`SEND_STALL_MS`] (its amount not below the last one seen).
    #[cfg(any(feature = "rkt", feature = "moltzap"))]
    fn backed_up(&self, now: Millis) -> Option<bool> {
        let amount = Reflect::get(&self.ws, &JsValue::from_str("bufferedAmount"));
        let Some(amount) = amount.ok().and_then(|a| a.as_f64()).filter(|a| *a >= SEND_BUFFER) else {
            self.stall.set(None);
            return None;
        };
        match self.stall.get() {
            Some((last, since)) if amount >= last => Some(now.saturating_sub(since) >= SEND_STALL_MS),
            _ => {
                self.stall.set(Some((amount, now)));
                Some(false)
            }
        }
    }

    /// Puts an engine's frame on the socket; a frame for a socket that is not open is dropped
    /// (its close event follows and tells the engine).
    #[cfg(any(feature = "rkt", feature = "moltzap"))]
    fn transmit(&self, frame: agentwire_core::Outgoing) {
        use agentwire_core::Outgoing;
        match frame {
            Outgoing::Text(t) => drop(self.send(&t)),
            Outgoing::Binary(b) => drop(self.send_binary(&b)),
            Outgoing::Close { code, reason } => self.close(code, &reason),
        }
    }

    /// Sends a text frame; false when the socket is not open (the close event follows) or the
    /// host refuses it (see [`Socket::refused`]).
    pub(crate) fn send(&self, text: &str) -> bool {
        self.is_open() && self.ws.send_with_str(text).is_ok()
    }

    #[cfg(any(feature = "rkt", feature = "moltzap"))]
    pub(crate) fn send_binary(&self, bytes: &[u8]) -> bool {
        self.is_open() && self.ws.send_with_u8_array(bytes).is_ok()
    }

    fn is_open(&self) -> bool {
        matches!(self.ready_state(), Ok(WebSocket::OPEN))
    }

    /// Starts the closing handshake. Codes a script may not send (anything but 1000 and
    /// 3000–4999) go as 1000; a reason is cut to the 123 bytes a close frame holds.
    pub(crate) fn close(&self, code: u16, reason: &str) {
        let code = if code == 1000 || (3000..=4999).contains(&code) {
            code
        } else {
            1000
        };
        let reason = agentwire_core::text::prefix(reason, 123);
        let _ = self.ws.close_with_code_and_reason(code, reason);
    }
}

impl Drop for Socket {
    fn drop(&mut self) {
        // `onerror` is left a listener that does nothing: the `ws` package's socket closed while
        // connecting emits `error` as a Node event, which with no listener ends the process.
        for name in HANDLERS {
            match name {
                "onerror" => IGNORE.with(|f| set(&self.ws, name, f.as_ref())),
                _ => set(&self.ws, name, &JsValue::NULL),
            }
        }
        // No `readyState` check first: a socket dropped by the driver's finalizer (a client
        // garbage-collected without close()) is dropped outside any request in workerd, where
        // reading it throws ("Disallowed operation called within global scope") and nothing
        // catches the getter. `close()` is caught, and does nothing on a closed socket.
        let _ = self.ws.close();
    }
}

/// How a connection ended, kept for the calls made after it: `None` while open, `""` after the
/// app's own `close()`, `" (1008 session expired: ...)"` when the server (or the network) ended
/// it.
#[cfg(any(feature = "rkt", feature = "moltzap"))]
pub(crate) fn ended(how: &mut Option<String>, code: u16, reason: &str) {
    how.get_or_insert_with(|| match reason {
        "" => format!(" ({code})"),
        r => format!(" ({code} {r})"),
    });
}

/// "the connection is closed", and how when the app did not close it.
#[cfg(any(feature = "rkt", feature = "moltzap"))]
pub(crate) fn closed_words(how: &Option<String>) -> String {
    format!("the connection is closed{}", how.as_deref().unwrap_or(""))
}

/// The reason of a socket's end at an `error` event that says nothing (a browser's).
pub(crate) const FAILED: &str = "the connection failed";

/// Why a client cannot use its socket here, from what the host threw ([`Socket::refused`]): the
/// message of the `state` error its commands get, and the reason of the close ending it.
#[cfg(any(feature = "rkt", feature = "moltzap"))]
pub(crate) fn elsewhere(host: &str) -> String {
    format!("the host refuses the client's WebSocket here (in a Worker, a client serves only the request that made it): {host}")
}

thread_local! {
    /// The `onerror` of every dropped socket (one closure, not a `Function` made from source,
    /// which a strict Content-Security-Policy refuses).
    static IGNORE: Closure<dyn Fn(JsValue)> = Closure::new(|_: JsValue| {});
}

/// Bytes of the host's error message kept as the reason of the close it ends a socket with.
const HOST_MESSAGE: usize = 200;

/// What the `error` event says, where the host says something (its `message`: Bun's and Deno's
/// name a refused upgrade's status, the `ws` package's too; a browser's says nothing), as
/// [`quotable`] takes it; not one over 4096 UTF-16 units.
fn host_message(ev: &JsValue, secret: bool) -> Option<String> {
    let m = Reflect::get(ev, &JsValue::from_str("message"))
        .ok()?
        .dyn_into::<JsString>()
        .ok()?;
    if m.length() > 4096 {
        return None;
    }
    quotable(&String::from(m), secret)
}

/// A host's message trimmed and cut to [`HOST_MESSAGE`] bytes; `None` when empty, or when it
/// may quote an address with credentials (`secret`: the address has a query or user
/// information; Bun's message quotes the address): then a message with a `://`, a `?` or an `@`
/// (an address quoted without its scheme, `host/path?token=…`) is not taken.
fn quotable(m: &str, secret: bool) -> Option<String> {
    if secret && (m.contains("://") || m.contains(['?', '@'])) {
        return None;
    }
    let m = agentwire_core::text::prefix(m.trim_ascii(), HOST_MESSAGE);
    (!m.is_empty()).then(|| m.to_string())
}

/// The socket's handler properties, in the order of `Socket::_handlers`.
const HANDLERS: [&str; 4] = ["onopen", "onmessage", "onclose", "onerror"];

/// Sets a property of the socket with `Reflect.set`, whose exceptions are caught (a user's
/// constructor may make any socket).
fn set(ws: &WebSocket, name: &str, value: &JsValue) {
    let _ = Reflect::set(ws, &JsValue::from_str(name), value);
}

/// A thrown JavaScript value as text.
pub(crate) fn describe(e: &JsValue) -> String {
    if let Some(s) = e.as_string() {
        return s;
    }
    // Else its `message`; not the `Debug` of a `JsValue`, whose JavaScript helper is a large part
    // of the glue.
    Reflect::get(e, &JsValue::from_str("message"))
        .ok()
        .and_then(|m| m.as_string())
        .unwrap_or_else(|| "an error without a message".into())
}

/// A shared driver state as the trait object its socket and timer feed.
pub(crate) fn as_sink<S: Sink + 'static>(state: &Rc<RefCell<S>>) -> Weak<RefCell<dyn Sink>> {
    let dynamic: Rc<RefCell<dyn Sink>> = state.clone();
    Rc::downgrade(&dynamic)
}

/// Runs `f` on the driver state with the time and a call list, then makes the calls: how a
/// user command enters a driver. `f` is never re-entered: the calls run after the borrow ends.
/// A command made while the driver is busy (from inside its own call to the WebSocket's `send`
/// or `close`) is refused with kind `state`, where it was a panic that ended the instance; so is
/// every command to a driver left borrowed for good ([`drain_deferred`]).
pub(crate) fn deliver_calls<S: Sink + 'static, T>(
    state: &Rc<RefCell<S>>,
    f: impl FnOnce(&mut S, Millis, &mut Calls) -> T,
) -> Result<T, JsValue> {
    let mut calls = Calls::default();
    let out = {
        let Ok(mut s) = state.try_borrow_mut() else {
            return Err(busy(state));
        };
        f(&mut s, now(), &mut calls)
    };
    calls.run();
    Ok(out)
}

/// A command's cancel that found `state` busy (`deliver_calls`' `Err`): it goes as
/// [`Input::Cancel`], taken once the driver is free, in order with its other input; it was
/// dropped, and the engine kept the call in flight (its `max_in_flight` slot taken) until its
/// TTL. False: whether its frame left is not known here.
#[cfg(any(feature = "rkt", feature = "moltzap"))]
pub(crate) fn later<S: Sink + 'static>(state: &Rc<RefCell<S>>, id: &str) -> bool {
    deliver(&as_sink(state), Input::Cancel(id.to_string()));
    false
}

/// The `state` error of a command to the busy driver `state`; the driver is looked at again in
/// a microtask ([`probe_busy`]).
pub(crate) fn busy<S: Sink + 'static>(state: &Rc<RefCell<S>>) -> JsValue {
    let driver = as_sink(state);
    let first = PROBED.with(|p| {
        let mut p = p.borrow_mut();
        let first = p.is_empty();
        if !p.iter().any(|w| w.ptr_eq(&driver)) {
            p.push(driver);
        }
        first
    });
    if first {
        PROBE.with(|f| queue_microtask(f.as_ref().unchecked_ref()));
    }
    busy_at(Rc::as_ptr(state) as *const () as usize)
}

/// [`busy`] for the driver at `at` (out of line: [`deliver_calls`] has a copy per command).
#[inline(never)]
fn busy_at(at: usize) -> JsValue {
    let m = match BROKEN.with(|b| b.borrow().iter().any(|w| w.as_ptr() as *const () as usize == at)) {
        true => {
            "the client is broken: an exception thrown through it while it ran left it busy for good; make a new one"
        }
        false => "the client is busy: called from inside its own WebSocket's send() or close()",
    };
    crate::errors::local(agentwire_core::ErrorKind::State, m)
}

#[cfg(test)]
mod tests {
    use super::quotable;

    /// A host message that may quote a secret address is not taken, with or without its scheme;
    /// one for an address without credentials is, whatever it quotes.
    #[test]
    fn a_message_that_may_quote_a_secret_address_is_not_taken() {
        let refused = "Expected 101 status code, got 401";
        assert_eq!(quotable(refused, true).as_deref(), Some(refused));
        for quoting in [
            "failed to connect to wss://h/ws?token=s",
            "failed to connect to h/ws?token=s",
            "failed to connect to user:pw@h/ws",
        ] {
            assert_eq!(quotable(quoting, true), None, "{quoting}");
            assert_eq!(quotable(quoting, false).as_deref(), Some(quoting), "{quoting}");
        }
        assert_eq!(quotable("  \n", false), None);
        assert_eq!(quotable(" x ", true).as_deref(), Some("x"));
    }
}
