//! The client session, sans-IO: the handshake of both generations (and `auto`), request
//! correlation with timeouts, cancellation and a bound on requests in flight, server pushes as
//! typed events, ping watching. The decisions are in `docs/protocols/moltzap.md` ("Session").
//!
//! A driver of its own transport opens the WebSocket, calls [`Session::handle_open`] and
//! [`Session::connect`], and after every input *and every command* (a `call` queues its frame)
//! drains `poll_transmit` and `poll_event` until both are empty, then calls `handle_timeout` at
//! `poll_timeout` (which may be already past: a deadline a late driver missed). It reports the
//! WebSocket pings it answers with `handle_ping`. After [`Event::Disconnected`] the same session
//! serves the next socket: `handle_open`, then `connect` again (an RKT `ClientSession`, by
//! contrast, serves one connection).
//!
//! `now` must never decrease. Read it through [`Clock`](crate::Clock) (the wall clock kept
//! steady by a monotonic one), as the native and npm drivers do: the wall clock alone steps back
//! with an NTP correction, every deadline then waits out the step, and a frame stamped before the
//! liveness probe left does not count as an answer to it.
//!
//! ```
//! use agentwire_moltzap::{Credentials, Event, Outgoing, Session, SessionConfig};
//!
//! let now = 1_782_648_000_000;
//! let mut session = Session::new(SessionConfig::default());
//! session.handle_open(now);
//! let connect = session.connect(now, Credentials::AgentKey("moltzap_agent_k".into()))?;
//! let Some(Outgoing::Text(frame)) = session.poll_transmit() else { unreachable!() };
//! assert!(frame.contains(r#""method":"agent/network/connect""#));
//! // The server's answer, as the socket hands it over.
//! session.handle_text(now, &format!(r#"{{"jsonrpc":"2.0","id":"{connect}","result":{{}}}}"#));
//! assert!(matches!(session.poll_event(), Some(Event::Connected { .. })));
//! let ping = session.call(now, "system/ping", Some("{}"))?;
//! assert!(session.poll_transmit().is_some()); // the call's frame, to send
//! assert_eq!(session.poll_timeout(), Some(now + 30_000)); // its timeout: handle_timeout then
//! session.handle_close(now, 1006, "");
//! assert!(matches!(session.poll_event(), Some(Event::Failed { id, .. }) if id == ping));
//! assert!(matches!(session.poll_event(), Some(Event::Disconnected { code: 1006, .. })));
//! # Ok::<(), agentwire_moltzap::MoltZapError>(())
//! ```

mod connect;
mod events;
mod json;
mod lax;
pub use json::EVENT_TYPES;
mod methods;

pub use connect::{released_version_accepted, version_in_range};

pub use events::{Event, HelloOk, Message, Part, RequestId};
pub use methods::{
    AgentMessageList, ArchivedFilter, ConversationKind, CreateConversation, ListConversations, Participant,
    PresenceStatus, SendMessage,
};

use crate::decode::{decode_bytes_with, decode_message_with, single_push, DecodeOptions};
use crate::encode::encode_request_str;
use crate::errors::MoltZapError;
use crate::frame::{Frame, Generation, Id, Outcome, Response};
use crate::frame_error::{FrameError, FrameErrorKind};
use agentwire_core::text::clip;
use agentwire_core::text::QUOTE_MAX;
use agentwire_core::{ErrorKind, Millis, Outgoing, Timers};
use serde::Serialize;
use serde_json::value::RawValue;
use std::collections::{HashMap, HashSet, VecDeque};

/// Which generation a session speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum GenerationChoice {
    /// `agent/network/connect`, protocol `2026.811.0`.
    #[default]
    Current,
    /// `auth/connect`, protocol `2026.425.3`.
    Released,
    /// The current handshake first; a `-32600` answer switches to the released one on the same
    /// socket.
    Auto,
}

/// How long a request waits for its response unless configured otherwise (every surface's
/// default).
pub const DEFAULT_REQUEST_TIMEOUT_MS: u64 = 30_000;

/// How long a connected session goes without a frame from the server before it probes
/// (`SessionConfig::idle_probe_ms`).
pub const DEFAULT_IDLE_PROBE_MS: u64 = 60_000;

/// How a session is set up. `Default` gives the documented values.
#[derive(Debug, Clone)]
pub struct SessionConfig {
    pub generation: GenerationChoice,
    /// How long a request waits for its response, in ms (default 30 s; at least 1).
    pub request_timeout_ms: u64,
    /// Requests sent and not yet answered; past it, `call` fails with `limit` (default 1024).
    pub max_in_flight: usize,
    /// How long a connect waits for its HelloOk, in ms (default 10 s; at least 1).
    pub handshake_timeout_ms: u64,
    /// The server's WebSocket ping interval, in ms (current generation). When set, three
    /// intervals without a ping report [`Event::MissedPings`] and start a liveness probe (see
    /// `idle_probe_ms`), counted from `Connected` and from each ping since (never before
    /// `Connected`: the handshake timeout bounds a connect). Default `None`: the spec names no
    /// interval. Ignored in the released generation, whose servers send no pings.
    pub ping_interval_ms: Option<u64>,
    /// How long a connected session may go without a frame from the server (a text or binary
    /// message, or a WebSocket ping the driver reports), in ms, before it sends a liveness probe,
    /// `system/ping {}` (default 60 000; 0 turns the probe off). Any frame answers it; with none
    /// within `request_timeout_ms` of the probe leaving, the connection is taken as dead: the
    /// session closes (close frame 1000 on the wire) and reports `Disconnected` 1006, so a
    /// half-open socket ends within about 90 s with the defaults. The probe is the session's
    /// own: no event, no `max_in_flight` slot.
    pub idle_probe_ms: u64,
    /// Bounds on incoming frames.
    pub decode: DecodeOptions,
    /// The largest frame the session sends (default 1 MiB, the test peer's frame limit; neither
    /// spec names the server's): a larger request or connect is refused with `limit`, nothing
    /// sent.
    pub max_send_bytes: usize,
    /// Prefix of request ids (default `"aw-"`); the ids are `<prefix>1`, `<prefix>2`, ...
    pub id_prefix: String,
}

impl SessionConfig {
    /// The configuration refused (kind `invalid`, naming the field) where no session could work
    /// with it: a `request_timeout_ms` or `handshake_timeout_ms` of 0 would time every call, or
    /// the connect, out at once; a `decode` bound of 0 would refuse every frame, the connect's
    /// answer too (as Switch refuses its own at `start`). [`Session::connect`] checks it.
    pub fn check(&self) -> Result<(), MoltZapError> {
        let d = &self.decode;
        for (value, field) in [
            (self.request_timeout_ms, "request_timeout_ms"),
            (self.handshake_timeout_ms, "handshake_timeout_ms"),
            (d.max_message_bytes as u64, "decode.max_message_bytes"),
            (d.max_depth as u64, "decode.max_depth"),
            (d.max_frames as u64, "decode.max_frames"),
            (d.max_id_len as u64, "decode.max_id_len"),
        ] {
            if value == 0 {
                return Err(MoltZapError::local(
                    ErrorKind::Invalid,
                    format!("{field} must be at least 1"),
                ));
            }
        }
        Ok(())
    }
}

impl Default for SessionConfig {
    fn default() -> Self {
        SessionConfig {
            generation: GenerationChoice::Current,
            request_timeout_ms: DEFAULT_REQUEST_TIMEOUT_MS,
            max_in_flight: 1024,
            handshake_timeout_ms: 10_000,
            ping_interval_ms: None,
            idle_probe_ms: DEFAULT_IDLE_PROBE_MS,
            decode: DecodeOptions::default(),
            max_send_bytes: 1 << 20,
            id_prefix: "aw-".to_string(),
        }
    }
}

/// How `connect` authenticates. `Debug` hides the key or token.
#[derive(Clone, PartialEq, Eq)]
pub enum Credentials {
    /// `moltzap_agent_…`; both generations.
    AgentKey(String),
    /// A user session token; released generation only.
    SessionToken(String),
}

impl std::fmt::Debug for Credentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let name = match self {
            Credentials::AgentKey(_) => "AgentKey",
            Credentials::SessionToken(_) => "SessionToken",
        };
        f.debug_tuple(name).field(&agentwire_core::redact::Redacted).finish()
    }
}

/// Where the session is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SessionState {
    /// No socket: created, or after `handle_close`. `handle_open` moves to `Open`.
    Closed,
    /// The socket is open; not authenticated. `connect` may be called.
    Open,
    /// A connect is in flight.
    Connecting,
    /// Authenticated: requests may be sent.
    Ready,
}

/// How many request ids that ended early (cancelled, timed out) are remembered, so their late
/// responses are dropped quietly.
pub const FORGOTTEN_CAP: usize = 1024;

/// Pings missed before [`Event::MissedPings`].
pub const MISSED_PINGS: u32 = 3;

#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
enum Timer {
    Request(String),
    Ping,
    /// The liveness watch: the idle deadline, or the probe's.
    Idle,
}

/// The liveness probe in flight: its request id, and when it was queued.
#[derive(Debug)]
struct Probe {
    id: String,
    at: Millis,
}

#[derive(Debug)]
struct Connecting {
    id: String,
    credentials: Credentials,
    /// The generation of the connect on the wire.
    generation: Generation,
    /// `auto` and still on the current handshake: a `-32600` switches to released.
    may_fall_back: bool,
}

pub struct Session {
    cfg: SessionConfig,
    state: SessionState,
    /// The generation frames are decoded and encoded in.
    generation: Generation,
    connecting: Option<Connecting>,
    next_id: u64,
    /// Requests sent and not answered: id → its number (the id counter's: call order), and
    /// whether making it again is safe ([`methods::idempotent`]).
    pending: HashMap<String, (u64, bool)>,
    forgotten: VecDeque<String>,
    forgotten_set: HashSet<String>,
    timers: Timers<Timer>,
    /// When the last frame from the server arrived (the liveness watch).
    last_heard: Millis,
    probe: Option<Probe>,
    /// Frames not yet polled, a request's with its id: a request that ends before its frame is
    /// polled (cancelled, timed out) is never sent, so a driver whose socket is backed up holds
    /// at most `max_in_flight` requests' frames, however many calls are made and dropped.
    transmit: VecDeque<(Outgoing, Option<String>)>,
    events: VecDeque<Event>,
}

/// Its state and generation, never its credentials.
impl std::fmt::Debug for Session {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Session")
            .field("state", &self.state)
            .field("generation", &self.generation)
            .finish_non_exhaustive()
    }
}

impl Session {
    /// A session. It takes no entropy: its request ids come from a counter and it waits no
    /// random time (it never reconnects by itself), so it is deterministic.
    pub fn new(cfg: SessionConfig) -> Self {
        let generation = match cfg.generation {
            GenerationChoice::Released => Generation::Released,
            _ => Generation::Current,
        };
        Session {
            cfg,
            state: SessionState::Closed,
            generation,
            connecting: None,
            next_id: 1,
            pending: HashMap::new(),
            forgotten: VecDeque::new(),
            forgotten_set: HashSet::new(),
            timers: Timers::new(),
            last_heard: 0,
            probe: None,
            transmit: VecDeque::new(),
            events: VecDeque::new(),
        }
    }

    pub fn state(&self) -> SessionState {
        self.state
    }

    /// The generation the session speaks now (for `auto`: `Current` until a fallback).
    pub fn generation(&self) -> Generation {
        self.generation
    }

    /// Requests sent and not yet answered (the connect excluded).
    pub fn in_flight(&self) -> usize {
        self.pending.len()
    }

    pub fn config(&self) -> &SessionConfig {
        &self.cfg
    }

    // ---- inputs -------------------------------------------------------------------------

    /// The socket is open. `auto` starts again from the current handshake on every socket.
    pub fn handle_open(&mut self, now: Millis) {
        if self.state != SessionState::Closed {
            return;
        }
        // A new socket starts with nothing queued (a close frame the last one never took).
        self.transmit.clear();
        self.state = SessionState::Open;
        self.generation = match self.cfg.generation {
            GenerationChoice::Released => Generation::Released,
            _ => Generation::Current,
        };
        self.last_heard = now;
        self.probe = None;
    }

    /// A text message arrived.
    pub fn handle_text(&mut self, now: Millis, text: &str) {
        if self.state == SessionState::Closed {
            return;
        }
        self.last_heard = now;
        // The usual message, one push, decoded and routed from one parse of the text.
        if let Some(event) = single_push(self.generation, text, &self.cfg.decode, events::push_event_on) {
            self.events.push_back(event);
            return;
        }
        let frames = decode_message_with(self.generation, text, &self.cfg.decode);
        self.on_frames(now, frames);
    }

    /// A binary message arrived: decoded as UTF-8 JSON text (invalid UTF-8 is a diagnostic).
    pub fn handle_binary(&mut self, now: Millis, bytes: &[u8]) {
        if self.state == SessionState::Closed {
            return;
        }
        self.last_heard = now;
        let frames = decode_bytes_with(self.generation, bytes, &self.cfg.decode);
        self.on_frames(now, frames);
    }

    /// The driver answered a WebSocket ping (it sends the pong itself). The ping watch
    /// (`ping_interval_ms`) is a connected session's: it starts at `Connected`, and a ping before
    /// that arms nothing (the handshake timeout bounds a connect).
    pub fn handle_ping(&mut self, now: Millis) {
        if self.state == SessionState::Closed {
            return;
        }
        self.last_heard = now;
        if self.state == SessionState::Ready {
            self.arm_ping(now);
        }
    }

    /// The socket closed (either side): every pending request fails with `closed`, then
    /// `Disconnected`. No reconnect: call `handle_open` for a new socket, then `connect`. What
    /// waited in `poll_transmit` had that socket to go on and goes with it (the close frame of a
    /// `close` not polled yet, too).
    pub fn handle_close(&mut self, _now: Millis, code: u16, reason: &str) {
        self.finish(code, reason);
        self.transmit.clear();
    }

    pub fn handle_timeout(&mut self, now: Millis) {
        for timer in self.timers.expire(now) {
            // An earlier timer of this call closed the session (an unanswered probe): the rest
            // went with it (`finish` cleared the timers, not this list).
            if self.state == SessionState::Closed {
                break;
            }
            match timer {
                Timer::Request(id) => self.on_request_timeout(id),
                Timer::Ping => {
                    // Armed only on a connected current socket (its servers ping; released ones
                    // send none), at `Connected` and at each ping since, and cleared with the
                    // socket: reported once until the next ping arms it again.
                    self.events.push_back(Event::MissedPings { count: MISSED_PINGS });
                    // A server that stopped pinging may be gone: ask it.
                    if self.probe.is_none() {
                        self.send_probe(now);
                    }
                }
                Timer::Idle => self.on_idle(now),
            }
        }
    }

    // ---- outputs ------------------------------------------------------------------------

    pub fn poll_transmit(&mut self) -> Option<Outgoing> {
        self.transmit.pop_front().map(|(frame, _)| frame)
    }

    /// Whether a frame waits for [`Self::poll_transmit`]: a driver that holds frames back for a
    /// socket with much unsent looks at the socket only then (a look can cost more than the
    /// input it follows).
    pub fn has_transmit(&self) -> bool {
        !self.transmit.is_empty()
    }

    pub fn poll_event(&mut self) -> Option<Event> {
        self.events.pop_front()
    }

    pub fn poll_timeout(&self) -> Option<Millis> {
        self.timers.next()
    }

    // ---- commands -----------------------------------------------------------------------

    /// Sends a request; the answer comes as `Response` or `Failed` with the returned id.
    /// `params` is JSON text (an object or an array) or `None`. Only after `Connected`.
    pub fn call(&mut self, now: Millis, method: &str, params: Option<&str>) -> Result<RequestId, MoltZapError> {
        let timeout = self.cfg.request_timeout_ms;
        self.call_with_timeout(now, method, params, timeout)
    }

    /// [`Session::call`] with its own timeout.
    pub fn call_with_timeout(
        &mut self,
        now: Millis,
        method: &str,
        params: Option<&str>,
        timeout_ms: u64,
    ) -> Result<RequestId, MoltZapError> {
        match self.state {
            SessionState::Ready => {}
            SessionState::Closed => return Err(MoltZapError::local(ErrorKind::Closed, "the socket is closed")),
            _ => return Err(state_error("not connected: call connect and wait for Connected")),
        }
        if method.is_empty() {
            return Err(MoltZapError::local(ErrorKind::Invalid, "method must not be empty"));
        }
        let max = self.cfg.max_send_bytes;
        // Trimmed, as the frame carries them.
        let params = match params.map(str::trim) {
            None => None,
            // Refused before it is copied: the frame holds the params and the method at least.
            Some(p) if p.len() + method.len() > max => {
                let m = format!("params of {} bytes: the request exceeds max_send_bytes {max}", p.len());
                return Err(MoltZapError::local(ErrorKind::Limit, m));
            }
            Some(p) => {
                let raw = RawValue::from_string(p.to_string())
                    .map_err(|e| MoltZapError::local(ErrorKind::Invalid, format!("params are not JSON: {e}")))?;
                if !(raw.get().starts_with('{') || raw.get().starts_with('[')) {
                    return Err(MoltZapError::local(
                        ErrorKind::Invalid,
                        "params must be a JSON object or array",
                    ));
                }
                Some(raw)
            }
        };
        if self.pending.len() >= self.cfg.max_in_flight {
            let m = format!("{} requests already in flight (max_in_flight)", self.pending.len());
            return Err(MoltZapError::local(ErrorKind::Limit, m));
        }
        let id = self.peek_id();
        let wire = self.encode_for_send(self.generation, &id, method, params.as_deref())?;
        let number = self.next_id;
        self.next_id += 1;
        let idempotent = methods::idempotent(method);
        self.pending.insert(id.clone(), (number, idempotent));
        self.timers
            .set(Timer::Request(id.clone()), now.saturating_add(timeout_ms));
        self.transmit.push_back((Outgoing::Text(wire), Some(id.clone())));
        Ok(id)
    }

    /// Serializes `params` and calls `method` (the typed methods go through here).
    pub fn call_serialized<P: Serialize + ?Sized>(
        &mut self,
        now: Millis,
        method: &str,
        params: &P,
    ) -> Result<RequestId, MoltZapError> {
        // Written out no further than `max_send_bytes`: a larger payload (a huge message text)
        // is refused with `limit` without being serialized in full.
        let max = self.cfg.max_send_bytes;
        let json = agentwire_core::json::write::to_string_within(params, max)
            .map_err(|e| MoltZapError::local(ErrorKind::Invalid, format!("params: {e}")))?
            .ok_or_else(|| {
                let m = format!("params over {max} bytes: the request exceeds max_send_bytes {max}");
                MoltZapError::local(ErrorKind::Limit, m)
            })?;
        self.call(now, method, Some(&json))
    }

    /// Whether request `id` is pending and its frame has not been polled yet (held by a driver
    /// whose socket is backed up): ended now, it never leaves, and making it again is safe.
    /// What a binding that gives up on a call by its own timer asks before [`Session::cancel`].
    pub fn unsent(&self, id: &str) -> bool {
        self.pending.contains_key(id) && self.queued(id)
    }

    /// Whether the frame of request `id` (a call, the connect or a probe) waits in the transmit
    /// queue, not yet polled by the driver.
    pub(super) fn queued(&self, id: &str) -> bool {
        self.transmit.iter().any(|(_, of)| of.as_deref() == Some(id))
    }

    /// Ends a request early: `Failed` with `cancelled`; a late response is dropped quietly.
    /// A pending connect can be cancelled too (`ConnectFailed`). False when `id` is not pending.
    pub fn cancel(&mut self, id: &str) -> bool {
        let error = MoltZapError::local(ErrorKind::Cancelled, "cancelled").for_request(Id::from(id));
        if self.connecting.as_ref().is_some_and(|c| c.id == id) {
            self.connect_failed(error);
            return true;
        }
        if self.pending.remove(id).is_none() {
            return false;
        }
        let unsent = self.end_early(id);
        self.timers.cancel(&Timer::Request(id.to_string()));
        self.events.push_back(Event::Failed {
            id: id.to_string(),
            error: error.unsent(unsent),
        });
        true
    }

    /// Closes the socket with `code`/`reason`: pending requests fail with `closed`.
    pub fn close(&mut self, code: u16, reason: &str) {
        if self.state == SessionState::Closed {
            return;
        }
        let close = Outgoing::Close {
            code,
            reason: reason.to_string(),
        };
        self.transmit.push_back((close, None));
        self.finish(code, reason);
    }

    // ---- internals ----------------------------------------------------------------------

    /// Request `id` ended before its response (cancelled, timed out): its frame is taken back
    /// when not polled yet (true: it never left); one that went out may still be answered, so
    /// its id is remembered and a late response dropped quietly.
    pub(super) fn end_early(&mut self, id: &str) -> bool {
        let unsent = self.take_back(id);
        if !unsent {
            self.forget(id.to_string());
        }
        unsent
    }

    /// Takes back the frame of request `id` if the driver has not polled it: the request is over
    /// (answered, failed, ended early), so it never leaves. True when it was queued.
    pub(super) fn take_back(&mut self, id: &str) -> bool {
        let before = self.transmit.len();
        self.transmit.retain(|(_, of)| of.as_deref() != Some(id));
        self.transmit.len() != before
    }

    /// The id the next request or connect takes; taken (`next_id += 1`) only once its frame is
    /// built, so a refused request uses none.
    fn peek_id(&self) -> String {
        format!("{}{}", self.cfg.id_prefix, self.next_id)
    }

    /// Encodes a request to send: every frame the session sends for the user (requests, the
    /// connect) is built here, and one larger than `max_send_bytes` is refused with `limit`
    /// before anything is queued or remembered.
    fn encode_for_send(
        &self,
        generation: Generation,
        id: &str,
        method: &str,
        params: Option<&RawValue>,
    ) -> Result<String, MoltZapError> {
        // An id the answer could not carry back: the session's own decoder drops ids over
        // `max_id_len`, so the request could never end but by its timeout.
        if id.len() > self.cfg.decode.max_id_len {
            let m = format!(
                "request id of {} bytes exceeds max_id_len {} (shorten id_prefix)",
                id.len(),
                self.cfg.decode.max_id_len
            );
            return Err(MoltZapError::local(ErrorKind::Invalid, m));
        }
        let wire = encode_request_str(generation, id, method, params);
        let max = self.cfg.max_send_bytes;
        if wire.len() > max {
            let m = format!("request of {} bytes exceeds max_send_bytes {max}", wire.len());
            return Err(MoltZapError::local(ErrorKind::Limit, m));
        }
        Ok(wire)
    }

    fn on_frames(&mut self, now: Millis, frames: Vec<Result<Frame, FrameError>>) {
        for frame in frames {
            if self.state == SessionState::Closed {
                // The session closed itself (protocol version out of range): the rest is moot.
                return;
            }
            match frame {
                Ok(Frame::Response(r)) => self.on_response(now, r),
                Ok(Frame::Notification(n)) => {
                    let data = n.params.map(owned);
                    self.events.push_back(events::push_event(n.name, data));
                }
                Ok(Frame::Request(q)) => {
                    let m = format!(
                        "the server sent a request (`{}`), which MoltZap servers never do; dropped",
                        clip(&q.method, QUOTE_MAX)
                    );
                    self.diagnostic(MoltZapError::local(ErrorKind::Protocol, m).for_request(q.id));
                }
                Err(e) => self.on_frame_error(e),
            }
        }
    }

    fn on_frame_error(&mut self, e: FrameError) {
        let error = MoltZapError::frame(&e);
        self.diagnostic(error.clone());
        if e.is_limit() && e.id.is_none() {
            // Refused by the decode bounds before its id was read: it may be the connect's answer.
            return self.connect_answer_refused(&error);
        }
        // A malformed event or request carrying a pending id answers nothing: its response may
        // still come.
        let (Some(Id::Str(id)), true) = (&e.id, e.response) else {
            return;
        };
        if let Some(c) = self.connecting.as_ref().filter(|c| &c.id == id) {
            let error = if c.generation == Generation::Released && e.kind == FrameErrorKind::MissingField("type") {
                // What a current server answers the released connect: a response without `type`.
                MoltZapError::local(
                    ErrorKind::Version,
                    "the server speaks the current MoltZap generation (it answered the released connect without `type`): connect with generation auto or current",
                )
                .for_request(Id::Str(id.clone()))
            } else {
                error
            };
            self.connect_failed(error);
        } else if self.pending.remove(id).is_some() {
            self.timers.cancel(&Timer::Request(id.clone()));
            self.take_back(id);
            self.forget(id.clone());
            self.events.push_back(Event::Failed { id: id.clone(), error });
        }
    }

    fn on_response(&mut self, now: Millis, r: Response) {
        let id = match r.id {
            Some(Id::Str(id)) => id,
            Some(Id::Num(n)) => {
                let m = format!("response to numeric id {n}, which this session never sends; dropped");
                return self.diagnostic(MoltZapError::local(ErrorKind::Protocol, m).for_request(Id::Num(n)));
            }
            None => return self.on_null_id(now, r.outcome),
        };
        if self.connecting.as_ref().is_some_and(|c| c.id == id) {
            return self.on_connect_response(now, r.outcome);
        }
        if self.probe.as_ref().is_some_and(|p| p.id == id) {
            // The liveness probe's answer, a result or an error: the server is there.
            self.probe = None;
            return;
        }
        if self.pending.remove(&id).is_none() {
            if !self.forgotten_set.contains(&id) {
                let m = format!("response to unknown id `{id}`; dropped");
                self.diagnostic(MoltZapError::local(ErrorKind::Protocol, m).for_request(Id::Str(id)));
            }
            return;
        }
        self.timers.cancel(&Timer::Request(id.clone()));
        // Answered before its frame was polled (an answer to an earlier frame of the id): over.
        self.take_back(&id);
        let event = match r.outcome {
            Outcome::Result(result) => Event::Response {
                id,
                result: owned(result),
            },
            Outcome::Error(e) => Event::Failed {
                error: MoltZapError::remote(&e, Some(&Id::Str(id.clone()))),
                id,
            },
        };
        self.events.push_back(event);
    }

    /// An error response with `id: null`: the server could not read a frame's id (or the frame).
    /// It is reported as a diagnostic; when exactly one request (or the connect) is waiting and
    /// its frame has left, the unreadable frame can only be that one, so it also fails it.
    fn on_null_id(&mut self, now: Millis, outcome: Outcome) {
        let Outcome::Error(e) = outcome else { return };
        let error = MoltZapError::remote(&e, None);
        self.diagnostic(error.clone());
        let unsent: HashSet<&str> = self.transmit.iter().filter_map(|(_, of)| of.as_deref()).collect();
        let mut sent = self.pending.keys().filter(|id| !unsent.contains(id.as_str()));
        let (first, more) = (sent.next().cloned(), sent.next().is_some());
        // The liveness probe out may be the unreadable frame too.
        let probing = self.probe.as_ref().is_some_and(|p| !unsent.contains(p.id.as_str()));
        if more || probing || usize::from(first.is_some()) + usize::from(self.connecting.is_some()) != 1 {
            return;
        }
        let Some(id) = first else {
            return self.on_connect_response(now, Outcome::Error(e));
        };
        self.pending.remove(&id);
        self.timers.cancel(&Timer::Request(id.clone()));
        self.forget(id.clone());
        self.events.push_back(Event::Failed {
            error: error.for_request(Id::Str(id.clone())),
            id,
        });
    }

    fn on_request_timeout(&mut self, id: String) {
        if self.connecting.as_ref().is_some_and(|c| c.id == id) {
            let m = format!("no HelloOk within {} ms", self.cfg.handshake_timeout_ms);
            let error = MoltZapError::local(ErrorKind::Timeout, m).for_request(Id::Str(id.clone()));
            self.connect_failed(error);
            return;
        }
        if let Some((_, idempotent)) = self.pending.remove(&id) {
            let unsent = self.end_early(&id);
            let m = "no response before the request timeout";
            let error = MoltZapError::local(ErrorKind::Timeout, m).for_request(Id::Str(id.clone()));
            self.events.push_back(Event::Failed {
                id,
                error: error.unanswered(unsent, idempotent),
            });
        }
    }

    fn arm_ping(&mut self, now: Millis) {
        if self.generation != Generation::Current {
            return;
        }
        if let Some(interval) = self.cfg.ping_interval_ms.filter(|i| *i > 0) {
            let at = now.saturating_add(interval.saturating_mul(u64::from(MISSED_PINGS)));
            self.timers.set(Timer::Ping, at);
        }
    }

    /// Arms the liveness watch from the last frame heard (on `Connected`).
    pub(super) fn arm_idle(&mut self, now: Millis) {
        self.last_heard = now;
        self.probe = None;
        if self.cfg.idle_probe_ms > 0 {
            self.timers.set(Timer::Idle, now.saturating_add(self.cfg.idle_probe_ms));
        }
    }

    /// The liveness timer fired: the idle deadline (armed lazily: frames only move
    /// `last_heard`, so it may fire early and be set again), or a probe's deadline.
    fn on_idle(&mut self, now: Millis) {
        if self.state != SessionState::Ready {
            return;
        }
        if let Some(p) = &self.probe {
            if self.last_heard >= p.at {
                // Something arrived since the probe: the server is there. Its frame is taken back
                // if still queued (so a socket backed up holds one probe, not one per idle
                // period); if it left, its answer may still come, and is dropped quietly.
                let id = p.id.clone();
                self.probe = None;
                self.end_early(&id);
            } else if self.queued(&p.id) {
                // Not sent yet (held behind a long write, which the driver bounds itself): the
                // wait starts once it has left.
                let wait = self.cfg.request_timeout_ms.max(1);
                self.timers.set(Timer::Idle, now.saturating_add(wait));
                return;
            } else {
                return self.dead(now);
            }
        }
        let idle = self.cfg.idle_probe_ms;
        if idle == 0 {
            return;
        }
        let due = self.last_heard.saturating_add(idle);
        if now < due {
            self.timers.set(Timer::Idle, due);
        } else {
            self.send_probe(now);
        }
    }

    /// Sends `system/ping {}` (both generations serve it; any answer, even an error, will do)
    /// and waits `request_timeout_ms` for a frame.
    fn send_probe(&mut self, now: Millis) {
        let id = self.peek_id();
        let params = RawValue::from_string("{}".to_string()).ok();
        let wait = self.cfg.request_timeout_ms.max(1);
        // The connect, a larger frame, went out under the same bounds: this is not refused.
        if let Ok(wire) = self.encode_for_send(self.generation, &id, "system/ping", params.as_deref()) {
            self.next_id += 1;
            self.transmit.push_back((Outgoing::Text(wire), Some(id.clone())));
            self.probe = Some(Probe { id, at: now });
            self.timers.set(Timer::Idle, now.saturating_add(wait));
        } else if self.cfg.idle_probe_ms > 0 {
            // Refused by the send bounds (an `id_prefix` past `max_id_len`): the watch goes on.
            self.timers.set(Timer::Idle, now.saturating_add(self.cfg.idle_probe_ms));
        }
    }

    /// No frame arrived for the probe's wait: the connection is taken as dead (a half-open
    /// socket would otherwise stay `Ready` for good). The close frame is a courtesy; what is
    /// reported is an abnormal closure, 1006, as for a socket that dropped.
    fn dead(&mut self, now: Millis) {
        let silent = now.saturating_sub(self.last_heard);
        let reason = format!("no frame from the server for {silent} ms (a system/ping went unanswered)");
        let close = Outgoing::Close {
            code: 1000,
            reason: reason.clone(),
        };
        self.transmit.push_back((close, None));
        self.finish(1006, &reason);
    }

    fn diagnostic(&mut self, e: MoltZapError) {
        self.events.push_back(Event::Diagnostic(e));
    }

    pub(super) fn forget(&mut self, id: String) {
        if self.forgotten.len() >= FORGOTTEN_CAP {
            if let Some(old) = self.forgotten.pop_front() {
                self.forgotten_set.remove(&old);
            }
        }
        if self.forgotten_set.insert(id.clone()) {
            self.forgotten.push_back(id);
        }
    }

    fn finish(&mut self, code: u16, reason: &str) {
        if self.state == SessionState::Closed {
            return;
        }
        self.state = SessionState::Closed;
        // Frames still queued never leave (a user's close frame does): their requests fail as
        // unsent, and none is sent on a later socket.
        let unsent: HashSet<String> = self.transmit.iter().filter_map(|(_, of)| of.clone()).collect();
        self.transmit
            .retain(|(frame, _)| matches!(frame, Outgoing::Close { .. }));
        // The connect is idempotent: it only authenticates the socket.
        let closed = |id: &str, idempotent: bool| {
            let m = format!("connection closed ({code} {reason}) before a response");
            MoltZapError::local(ErrorKind::Closed, m)
                .for_request(Id::from(id))
                .unanswered(unsent.contains(id), idempotent)
        };
        if let Some(c) = self.connecting.take() {
            let error = closed(&c.id, true);
            self.events.push_back(Event::ConnectFailed { id: c.id, error });
        }
        // Oldest first: in call order, by the id's number (the ids' text sorts aw-10 before aw-2).
        let mut ids: Vec<(u64, String, bool)> = (self.pending.drain())
            .map(|(id, (number, idempotent))| (number, id, idempotent))
            .collect();
        ids.sort_unstable(); // numbers are unique: the same order as a stable sort
        for (_, id, idempotent) in ids {
            let error = closed(&id, idempotent);
            self.events.push_back(Event::Failed { id, error });
        }
        self.timers.clear();
        self.events.push_back(Event::Disconnected {
            code,
            reason: reason.to_string(),
        });
    }
}

fn state_error(m: &str) -> MoltZapError {
    MoltZapError::local(ErrorKind::State, m)
}

/// A raw JSON value's text, moved out of its box (no copy).
fn owned(raw: Box<RawValue>) -> String {
    Box::<str>::from(raw).into()
}
