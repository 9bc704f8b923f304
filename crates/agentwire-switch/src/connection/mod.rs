//! The agent connection, sans-IO: one `connection_id` across any number of sockets (WebSocket)
//! or streams (SSE), with liveness (pongs, or beats), the cursor, resume, gaps and the
//! reconnect policy of the spec. The decisions are in `docs/protocols/switch.md` ("Connection").
//!
//! The driver owns the socket and the clock:
//!
//! 1. [`Connection::start`] queues [`Transmit::Open`]: open that request (a WebSocket upgrade,
//!    or an SSE `GET`) with `Authorization: Bearer <key>` added.
//! 2. Report what happened: [`Connection::handle_open`] or
//!    [`Connection::handle_open_failed`] (or [`Connection::handle_open_unusable`] when no retry
//!    can help); then every WebSocket text message with
//!    [`Connection::handle_text`] or every SSE body chunk with [`Connection::handle_bytes`];
//!    the end with [`Connection::handle_close`]; answers to [`Transmit::Http`] (beats) with
//!    [`Connection::handle_http_response`] / [`Connection::handle_http_failed`]; and
//!    [`Connection::handle_timeout`] at [`Connection::poll_timeout`], read after the draining
//!    of step 3 (the `poll_event` that empties a queue that overflowed sets a timer due at
//!    once: `poll_timeout` may be `now` or already past).
//! 3. After every input, drain [`Connection::poll_transmit`] and [`Connection::poll_event`]
//!    until both are empty. [`Transmit::Close`] means: drop the current socket or stream and
//!    report nothing more about it; a new [`Transmit::Open`] follows when the engine reconnects.
//!    While a reopen's open waits unpolled behind the old socket's close, the driver still holds
//!    that socket and no other: its inputs are taken as that socket's (see [`Transmit::Open`]).
//!
//! `poll_event` holds events back while a pong is waiting in `poll_transmit`, so pings are
//! answered before queued events reach the user, whatever order the driver polls in.
//!
//! `now` must never decrease. Read it through [`Clock`](crate::Clock) (the wall clock kept
//! steady by a monotonic one), as the native and npm drivers do: the wall clock alone steps back
//! with an NTP correction and every deadline waits out the step, or steps forward and fires
//! them all at once (a healthy socket torn down for a missed ping).
//!
//! Every deadline is `now` plus a configured span (the reopen's backoff delay among them),
//! saturating at `u64::MAX`. A `Clock` gives at most `u64::MAX / 1000` ms (it counts in
//! microseconds: some 584,000 years after 1970), so no span short of that is cut. A `now` no
//! `Clock` gives, within a span of `u64::MAX`, has its deadlines cut to `u64::MAX`: due sooner,
//! never later (the reopen comes at `u64::MAX`), and a `now` of `u64::MAX` finds every deadline
//! set from it due at once.
//!
//! ```
//! use agentwire_switch::open::OpenParams;
//! use agentwire_switch::{Clock, Connection, ConnectionConfig, Event, SeededEntropy, Transmit};
//!
//! let agent = "e9dc227d-d507-4a61-98ac-65eb81f2f27a";
//! let id = "19209fad-88d2-4353-b857-10454fb40fa5";
//! let cfg = ConnectionConfig::new(OpenParams::new(agent, id));
//! let mut conn = Connection::new(cfg, Box::new(SeededEntropy::new(7)));
//! // The wall clock in ms and a monotonic one in µs, as the driver reads them.
//! let mut clock = Clock::new();
//! let now = clock.read(1_782_648_000_000, 0);
//! conn.start(now)?;
//! let Some(Transmit::Open(open)) = conn.poll_transmit() else { unreachable!() };
//! assert!(open.request.path.starts_with(&format!("/agents/{agent}/connection/ws?")));
//! // The driver opened that WebSocket (with `Authorization: Bearer <key>` added).
//! let now = clock.read(1_782_648_000_050, 50_000);
//! conn.handle_open(now);
//! conn.handle_text(now, &format!(
//!     r#"{{"event":"connection_state","data":{{"connection_id":"{id}","agent_id":"{agent}","scope":"single","filter":"all","spawn_capable":false,"rooms":[],"cursor":0,"protocol":1,"heartbeat_interval_seconds":2.0}}}}"#
//! ));
//! assert!(matches!(conn.poll_event(), Some(Event::Connected { resumed: false, .. })));
//! assert_eq!(conn.poll_timeout(), Some(now + 6_000)); // no ping for three intervals: handle_timeout
//! # Ok::<(), agentwire_switch::SwitchError>(())
//! ```

mod frames;
mod json;
pub use json::EVENT_TYPES;
mod liveness;
mod reconnect;

use crate::error::SwitchError;
use crate::frame::{
    ConnGeneration, ConnectionState, DecodeOptions, DomainEvent, Evicted, Gap, RoomReleased, SubscriptionChanged,
};
use crate::http::HttpRequest;
use crate::open::{OpenParams, Scope, StartFrom};
use crate::sse::{SseLimits, SseParser};
use agentwire_core::{Backoff, Entropy, ErrorKind, Millis, Timers};
use serde_json::value::RawValue;
use std::collections::{BTreeSet, VecDeque};

/// Which transport a connection uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Transport {
    /// The WebSocket at `/agents/{id}/connection/ws` (current generation).
    #[default]
    WebSocket,
    /// The SSE stream at `/agents/{id}/events` plus HTTP beats (switch-core 0.19).
    Sse,
    /// The WebSocket first; an upgrade answered with HTTP 403, 404, 405 or 426 (a server without
    /// the WebSocket route, as switch-core 0.19) switches to SSE for this and every later open.
    /// Only before the first attach: once the WebSocket has served the connection, those
    /// statuses are failed opens, retried with the backoff on the WebSocket.
    Auto,
}

/// The transport an open uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wire {
    WebSocket,
    Sse,
}

impl Wire {
    /// `websocket` or `sse`: the name every surface gives it (npm's `wire`, the CLI's events).
    pub fn as_str(self) -> &'static str {
        match self {
            Wire::WebSocket => "websocket",
            Wire::Sse => "sse",
        }
    }
}

/// How a connection behaves. `ConnectionConfig::new` gives the documented defaults.
#[derive(Debug, Clone)]
pub struct ConnectionConfig {
    /// Agent, connection id, scope, filter, rooms, protocol, client. `start_from` is where the
    /// first open starts (a saved cursor resumes from it); later opens use the cursor.
    pub open: OpenParams,
    pub transport: Transport,
    /// Delay before reconnect attempt `n` (default: 500 ms doubling to 30 s, full jitter). The
    /// attempt count starts over when the server is heard from (a ping, or a beat answered 200)
    /// on a socket that has stayed live for `max_ms`; attaching alone, or a ping sooner, does not.
    /// `start` refuses a `factor` below 1 or not finite and a `min_ms` or `max_ms` of 0; a
    /// `max_ms` below `min_ms` is a constant delay of `min_ms`.
    pub backoff: Backoff,
    /// Reconnects in a row (since the connection was last stable, as for `backoff`) before
    /// giving up (default `None`: never give up).
    pub max_reconnect_attempts: Option<u32>,
    /// Opens tried before the first attach (`connection_state`): when that many have failed,
    /// the connection stops with the last failure, `could not connect: …` (retryable), and
    /// `max_reconnect_attempts` does not apply before the attach. `None`: reopen with the
    /// backoff until attached (within `max_reconnect_attempts`), for a caller that bounds the
    /// wait itself. Default `Some(1)`: a first open that fails stops, as an RKT or MoltZap
    /// connect fails; `Some(0)` counts as `Some(1)`. Switching from WebSocket to SSE
    /// (`Transport::Auto`) is not a failed open. A `connection_state` that cannot be read stops
    /// the connection before the first attach whatever this says (a `decode` error, not
    /// retryable: the same server sends the same frame again).
    pub connect_attempts: Option<u32>,
    /// From an open to its `connection_state` (default 10 s).
    pub open_timeout_ms: u64,
    /// Ping (WebSocket) or beat (SSE) interval until `connection_state` says otherwise (2 s).
    pub heartbeat_interval_ms: u64,
    /// Intervals without a ping, or failed beats in a row, before the socket counts as dead (3).
    pub missed_heartbeats: u32,
    /// How long a beat waits for its answer (default 4 s).
    pub beat_timeout_ms: u64,
    /// SSE: no byte (event or keepalive comment) for this long and the stream counts as dead
    /// (default 45 s: three of the server's 15 s keepalives).
    pub stream_idle_timeout_ms: u64,
    /// Domain events decoded and not yet polled. Past it, further events are not taken; once the
    /// user has drained the queue the connection reopens from its cursor, so nothing is lost
    /// (default 4096).
    pub max_queued_events: usize,
    /// The same bound in bytes: the text of the domain events and unknown control frames decoded
    /// and not yet polled (payloads, room ids, bridge ids, channel types, names). Past it, as past `max_queued_events`
    /// (default 64 MiB; a message may be up to `decode.max_message_bytes`): domain events wait
    /// for the reopen, unknown control frames are dropped and counted (`dropped_control`).
    pub max_queued_bytes: usize,
    pub decode: DecodeOptions,
    pub sse: SseLimits,
}

impl ConnectionConfig {
    pub fn new(open: OpenParams) -> Self {
        ConnectionConfig {
            open,
            transport: Transport::WebSocket,
            backoff: Backoff::default(),
            max_reconnect_attempts: None,
            connect_attempts: Some(1),
            open_timeout_ms: 10_000,
            heartbeat_interval_ms: 2_000,
            missed_heartbeats: 3,
            beat_timeout_ms: 4_000,
            stream_idle_timeout_ms: 45_000,
            max_queued_events: 4096,
            max_queued_bytes: 64 << 20,
            decode: DecodeOptions::default(),
            sse: SseLimits::default(),
        }
    }

    /// The largest frame taken in on either wire, in bytes: a WebSocket text message
    /// (`decode.max_message_bytes`), and an SSE event's `data` and line
    /// ([`SseLimits::for_message`]). The meaning of every surface's one option for it (npm's
    /// `maxMessageBytes`, the component's `max-message-bytes`, the relay bridge's
    /// `max_frame_bytes`).
    pub fn set_max_message_bytes(&mut self, n: usize) {
        self.decode.max_message_bytes = n;
        self.sse = SseLimits::for_message(n);
    }

    /// [`connect_attempts`](ConnectionConfig::connect_attempts) as the surfaces take it, a
    /// plain number (npm's `connectAttempts`, the component's `connect-attempts`): `n` opens
    /// before the first attach, and 0 for no bound (`None`: reopen until attached).
    pub fn set_connect_attempts(&mut self, n: u32) {
        self.connect_attempts = (n > 0).then_some(n);
    }
}

/// Where the connection is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum State {
    /// Created; `start` opens it.
    Idle,
    /// An open was handed to the driver; its socket or stream is not open yet.
    Opening,
    /// Open, waiting for `connection_state`.
    Attaching,
    /// `connection_state` received: events flow.
    Live,
    /// Between sockets, waiting to reopen.
    Backoff,
    /// Over: closed by the user, or a final refusal or eviction. Nothing more happens.
    Stopped,
}

impl State {
    /// `idle`, `opening`, `attaching`, `live`, `backoff` or `stopped`: the name every surface
    /// gives it (npm's `state`).
    pub fn as_str(self) -> &'static str {
        match self {
            State::Idle => "idle",
            State::Opening => "opening",
            State::Attaching => "attaching",
            State::Live => "live",
            State::Backoff => "backoff",
            State::Stopped => "stopped",
        }
    }
}

/// An open the driver performs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OpenRequest {
    pub wire: Wire,
    /// `GET` with the path and query, and `Accept`/`Last-Event-ID` for SSE.
    pub request: HttpRequest,
}

/// What the driver puts on the wire.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Transmit {
    /// Open a new socket (WebSocket) or stream (SSE) with this request. Queued behind the old
    /// socket's `Close` (a reopen the driver has not polled either), every socket input until
    /// that close is polled (`handle_open`, a frame, `handle_close`, a failed open) is of the old
    /// socket, one the engine gave up on: its open and frames are ignored, and its close or
    /// failed open ends it (its unpolled `Close` dropped) while this open stays queued.
    Open(OpenRequest),
    /// A WebSocket text message: the pong.
    Text(String),
    /// An HTTP call (the SSE beat); answer with `handle_http_response(id, ..)` or
    /// `handle_http_failed(id, ..)`. A beat belongs to its stream: one not polled when the
    /// stream ends is dropped with it, and one sent is forgotten with it (an answer fed after
    /// the stream ended is an [`Event::Diagnostic`] of kind `protocol`: drop it or abort the call).
    Http { id: u64, request: HttpRequest },
    /// Drop the current socket or stream (for a WebSocket, with this close code and reason).
    /// One not polled when the driver reports that socket closed (or its open failed) is dropped
    /// with it, as a pong is.
    Close { code: u16, reason: String },
}

/// What the user sees.
#[derive(Debug, Clone)]
pub enum Event {
    /// A `connection_state`: attached. `resumed` is false only for the first attach.
    Connected {
        state: ConnectionState,
        wire: Wire,
        resumed: bool,
    },
    /// A domain event, never one at or below the cursor. `gap` is the gap held since the last
    /// surfaced event: events were lost before this one; re-read the room's history.
    Event {
        event: DomainEvent,
        gap: Option<Gap>,
    },
    SubscriptionChanged(SubscriptionChanged),
    RoomReleased(RoomReleased),
    /// A control frame this client does not know, passed through.
    Control {
        name: String,
        raw: Box<RawValue>,
    },
    /// An `evicted` frame (for SSE, with the code read from the reason). A `Disconnected` or
    /// `Stopped` follows, as the code decides.
    Evicted(Evicted),
    /// The socket or stream is gone; the engine reopens after `retry_in_ms` (attempt `attempt`).
    Disconnected {
        code: Option<u16>,
        reason: String,
        retry_in_ms: u64,
        attempt: u32,
    },
    /// Over. `None` when the user closed it; otherwise why (a refusal, `taken_over`, a
    /// permanent `closed`, bad credentials, too many attempts).
    Stopped {
        error: Option<SwitchError>,
    },
    /// Something was dropped or ignored (a malformed frame, a duplicate event, a late answer);
    /// the connection goes on.
    Diagnostic(SwitchError),
}

/// Timers of the same deadline fire in this order (`Timers::ties_by_key`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
enum Timer {
    /// Opening/attaching took too long.
    Open,
    /// WebSocket: no ping for `missed_heartbeats` intervals.
    Ping,
    /// SSE: time to beat.
    Beat,
    /// SSE: the beat in flight got no answer.
    BeatTimeout,
    /// SSE: no byte on the stream.
    StreamIdle,
    /// Reopen after a backoff (or right away).
    Reopen,
    /// The queue drained after an overflow: reopen from the cursor. A timer at the time of the
    /// poll that drained it, so that `poll_event` itself queues no transmit.
    Drained,
}

/// One queued item: an event, or a gap to hold for the next event.
#[derive(Debug)]
enum Item {
    Event(Event),
    Gap(Gap),
}

/// Non-domain items beyond `max_queued_events` kept before further ones are dropped.
const CONTROL_SLACK: usize = 256;

pub struct Connection {
    cfg: ConnectionConfig,
    entropy: Box<dyn Entropy + Send>,
    state: State,
    wire: Wire,
    now: Millis,
    // -- position --
    /// Highest sequence surfaced to the user (the pong's and the resume's cursor).
    cursor: Option<u64>,
    /// Highest sequence accepted into the queue (dedup bound).
    received: Option<u64>,
    generation: Option<ConnGeneration>,
    held_gap: Option<Gap>,
    /// Rooms the server reported (`connection_state`, `subscription_changed`, beats).
    rooms: Vec<String>,
    /// Rooms declared on the next open.
    declare: Vec<String>,
    /// Rooms `room_released` named in the chunk being read, still in `rooms` and `declare`:
    /// they go in one pass when the chunk is read (or before either list is read or replaced),
    /// not one pass each.
    released: Vec<String>,
    heartbeat_ms: u64,
    ever_attached: bool,
    /// Since the last `connection_state`, an open was sent that may have attached on the server,
    /// which attaches (and issues a new generation) when it reads the open request, whether or
    /// not its answer or the `connection_state` reaches this client: the generation this client
    /// holds may be stale.
    attach_unconfirmed: bool,
    /// The latest open was sent and has not been answered by a refusal (a `refused` frame, or an
    /// HTTP status other than a gateway's 502, 504 or 520-524) nor attached: it may have
    /// attached (folded into `attach_unconfirmed` by the next open). An open that failed with no
    /// answer (`handle_open_error`, no status, a deadline) keeps it: its request may have reached
    /// the server.
    open_may_attach: bool,
    /// The current open was fenced while `attach_unconfirmed`: a `taken_over` refusal of it may
    /// be this client's own lost attach, and is retried with the generation forgotten.
    fence_may_be_stale: bool,
    /// When the current socket attached (its `connection_state`): a ping or a 200 beat resets
    /// the backoff only once it has been live `backoff.max_ms`.
    live_since: Millis,
    // -- this socket --
    /// The driver holds a socket or stream (from `Transmit::Open` to `Transmit::Close` or
    /// `handle_close`).
    socket_open: bool,
    sse: SseParser,
    /// SSE: the beats waiting for an answer (oldest id, latest id).
    beat_in_flight: Option<(u64, u64)>,
    /// The latest beat a [`Timer::BeatTimeout`] counted as failed (beat ids only grow).
    beats_counted_to: Option<u64>,
    beats_failed: u32,
    next_http_id: u64,
    /// Events were dropped because the queue was full: reopen once it drains.
    overflowed: bool,
    // -- reconnect --
    attempt: u32,
    timers: Timers<Timer>,
    // -- outputs --
    transmit: VecDeque<Transmit>,
    pongs_unsent: usize,
    queue: VecDeque<Item>,
    queued_events: usize,
    /// What `max_queued_bytes` counts of the queue's domain events (see `queued_bytes`).
    queued_bytes: usize,
    /// The same measure of everything else queued (gaps included), bounded by
    /// `max_queued_bytes` on its own so that it never refuses a domain event.
    control_bytes: usize,
    dropped_control: u64,
    /// A `gap` that could not be read may have numbered events again from below the dedup
    /// bound: the next event is taken whatever its sequence, and is the bound after it.
    numbering_unknown: bool,
    /// Events dropped as already received, and whether the last event was one.
    duplicates: u64,
    in_duplicate_run: bool,
}

/// Where it is, never its configuration.
impl std::fmt::Debug for Connection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Connection")
            .field("state", &self.state)
            .field("wire", &self.wire)
            .field("cursor", &self.cursor)
            .finish_non_exhaustive()
    }
}

impl Connection {
    /// A connection; `entropy` draws the reconnect jitter. Nothing happens before
    /// [`Connection::start`].
    pub fn new(cfg: ConnectionConfig, entropy: Box<dyn Entropy + Send>) -> Self {
        let cursor = match cfg.open.start_from {
            StartFrom::After(n) => Some(n),
            StartFrom::Head => None,
        };
        let wire = match cfg.transport {
            Transport::Sse => Wire::Sse,
            _ => Wire::WebSocket,
        };
        Connection {
            declare: cfg.open.rooms.clone(),
            generation: cfg.open.expected_generation.clone().map(ConnGeneration::Text),
            sse: SseParser::new(cfg.sse),
            heartbeat_ms: cfg.heartbeat_interval_ms.max(1),
            cfg,
            entropy,
            state: State::Idle,
            wire,
            now: 0,
            cursor,
            received: cursor,
            held_gap: None,
            rooms: Vec::new(),
            released: Vec::new(),
            ever_attached: false,
            live_since: 0,
            attach_unconfirmed: false,
            open_may_attach: false,
            fence_may_be_stale: false,
            socket_open: false,
            beat_in_flight: None,
            beats_counted_to: None,
            beats_failed: 0,
            next_http_id: 1,
            overflowed: false,
            attempt: 0,
            // Ties fire in the kinds' order (the order of `Timer`): a beat due in the same
            // millisecond as the beat timeout goes out first, so that the timeout counts it and
            // the driver's failure of it later is not counted again.
            timers: Timers::ties_by_key(),
            transmit: VecDeque::new(),
            pongs_unsent: 0,
            queue: VecDeque::new(),
            queued_events: 0,
            queued_bytes: 0,
            control_bytes: 0,
            dropped_control: 0,
            numbering_unknown: false,
            duplicates: 0,
            in_duplicate_run: false,
        }
    }

    // ---- accessors ----------------------------------------------------------------------

    pub fn state(&self) -> State {
        self.state
    }

    /// The transport of the current (or next) open.
    pub fn wire(&self) -> Wire {
        self.wire
    }

    /// The highest sequence surfaced to the user; `None` before any (from the head).
    pub fn cursor(&self) -> Option<u64> {
        self.cursor
    }

    /// The generation of the last `connection_state`, sent as `expected_generation`; `None`
    /// before one, and from a `taken_over` refusal set aside after a possibly lost attach (the
    /// generation it proved stale is forgotten, the reopens go unfenced) until the next
    /// `connection_state`. Saved with the cursor, an absent one resumes unfenced.
    pub fn generation(&self) -> Option<&ConnGeneration> {
        self.generation.as_ref()
    }

    pub fn agent_id(&self) -> &str {
        &self.cfg.open.agent_id
    }

    pub fn connection_id(&self) -> &str {
        &self.cfg.open.connection_id
    }

    /// The covered rooms as the server last reported them.
    pub fn rooms(&self) -> &[String] {
        &self.rooms
    }

    /// A gap received and not yet attached to an event.
    pub fn pending_gap(&self) -> Option<&Gap> {
        self.held_gap.as_ref()
    }

    /// Reconnect attempts since the connection was last stable: heard from (a ping, or a beat
    /// answered 200) after staying live for the backoff's `max_ms` (30 s by default).
    pub fn attempt(&self) -> u32 {
        self.attempt
    }

    /// The ping or beat interval in force.
    pub fn heartbeat_interval_ms(&self) -> u64 {
        self.heartbeat_ms
    }

    /// Diagnostics, unknown control frames, room updates and `Connected` events dropped because
    /// the queue was over its bound ([`Connection::rooms`] still has the latest rooms).
    pub fn dropped_control(&self) -> u64 {
        self.dropped_control
    }

    /// Events dropped as already received (replays overlapping after a resume). Each run of
    /// them is reported by one `Diagnostic` coded `duplicate`.
    pub fn duplicates(&self) -> u64 {
        self.duplicates
    }

    /// True while events are queued, including while `poll_event` holds them back behind an
    /// unsent pong: drain `poll_transmit` and poll again.
    pub fn has_pending_events(&self) -> bool {
        !self.queue.is_empty()
    }

    pub fn config(&self) -> &ConnectionConfig {
        &self.cfg
    }

    /// What [`ConnectionConfig::max_queued_bytes`] counts now: the text of the domain events
    /// queued and not yet polled.
    pub fn queued_bytes(&self) -> usize {
        self.queued_bytes
    }

    /// Changes [`ConnectionConfig::max_queued_bytes`] while the connection runs (a host whose
    /// connections share one memory lowers it as the others fill it): an event past it waits
    /// for the reopen from the cursor, as past the configured bound; none is lost. 0 is taken as 1.
    pub fn set_max_queued_bytes(&mut self, n: usize) {
        self.cfg.max_queued_bytes = n.max(1);
    }

    // ---- commands -----------------------------------------------------------------------

    /// Opens the connection (the first [`Transmit::Open`]). The open parameters are checked
    /// first: an invalid one is an `invalid` error and nothing is sent.
    pub fn start(&mut self, now: Millis) -> Result<(), SwitchError> {
        self.now = now;
        if self.state != State::Idle {
            return Err(SwitchError::local(
                ErrorKind::State,
                "the connection was already started",
            ));
        }
        self.cfg
            .open
            .validate()
            .map_err(|e| SwitchError::local(e.kind, e.message))?;
        for (name, value) in [
            ("max_queued_events", self.cfg.max_queued_events as u64),
            ("max_queued_bytes", self.cfg.max_queued_bytes as u64),
            ("open_timeout_ms", self.cfg.open_timeout_ms),
            ("heartbeat_interval_ms", self.cfg.heartbeat_interval_ms),
            ("missed_heartbeats", u64::from(self.cfg.missed_heartbeats)),
            ("beat_timeout_ms", self.cfg.beat_timeout_ms),
            ("stream_idle_timeout_ms", self.cfg.stream_idle_timeout_ms),
            // A bound of 0 refuses every frame: the connection could never attach.
            ("decode.max_message_bytes", self.cfg.decode.max_message_bytes as u64),
            ("decode.max_depth", self.cfg.decode.max_depth as u64),
            ("sse.max_event_bytes", self.cfg.sse.max_event_bytes as u64),
            ("sse.max_line_bytes", self.cfg.sse.max_line_bytes as u64),
        ] {
            if value == 0 {
                return Err(SwitchError::local(
                    ErrorKind::Invalid,
                    format!("{name} must be at least 1"),
                ));
            }
        }
        if self.cfg.decode.max_depth > crate::frame::MAX_DEPTH {
            return Err(SwitchError::local(
                ErrorKind::Invalid,
                format!("decode.max_depth must be at most {}", crate::frame::MAX_DEPTH),
            ));
        }
        let b = &self.cfg.backoff;
        if !(b.factor.is_finite() && b.factor >= 1.0) {
            return Err(SwitchError::local(
                ErrorKind::Invalid,
                "backoff factor must be a finite number of at least 1",
            ));
        }
        // A floor of 0 reopens a failed open at once, forever; a cap of 0 also resets the
        // backoff after every ping (`heard_from`: stable once live for `max_ms`). A cap below the
        // floor is a constant delay of `min_ms` (`Backoff::ceiling`).
        for (field, value) in [("min_ms", b.min_ms), ("max_ms", b.max_ms)] {
            if value == 0 {
                return Err(SwitchError::local(
                    ErrorKind::Invalid,
                    format!("backoff.{field} must be at least 1"),
                ));
            }
        }
        self.open(now);
        Ok(())
    }

    /// Closes for good: a [`Transmit::Close`] (1000) if the driver took the socket's
    /// [`Transmit::Open`] (an open not polled yet is taken back instead, with nothing to close),
    /// and `Stopped { error: None }` follows.
    pub fn close(&mut self, now: Millis) {
        self.now = now;
        if self.state == State::Stopped {
            return;
        }
        self.stop(None, "client closed");
    }

    /// Reopens now when the connection waits out its backoff before a reopen: the network came
    /// back (a browser's `online` event), and the next attempt may be up to the backoff's
    /// `max_ms` away. The attempt count is kept. Returns whether it reopened; a connection that
    /// is opening, attaching, live, idle or stopped is left as it is.
    pub fn reconnect_now(&mut self, now: Millis) -> bool {
        self.now = now;
        if self.state != State::Backoff {
            return false;
        }
        self.open(now);
        true
    }

    /// Rooms to declare (`rooms=`) on the next open, replacing the current list. Declaring
    /// takes the rooms over, and catch-up covers them. Rooms an open URL cannot carry (as
    /// [`OpenParams::validate`] checks them) are an `invalid` error, and the list is unchanged.
    pub fn set_declared_rooms(&mut self, rooms: Vec<String>) -> Result<(), SwitchError> {
        crate::open::check_rooms(&rooms).map_err(|e| SwitchError::local(e.kind, e.message))?;
        self.drop_released();
        self.declare = rooms;
        Ok(())
    }

    // ---- outputs ------------------------------------------------------------------------

    pub fn poll_transmit(&mut self) -> Option<Transmit> {
        let t = self.transmit.pop_front()?;
        if matches!(t, Transmit::Text(_)) {
            self.pongs_unsent = self.pongs_unsent.saturating_sub(1);
        }
        Some(t)
    }

    /// The next event; `None` when there is none, **and while a pong is still to be sent**: drain
    /// [`Connection::poll_transmit`] too, until both are empty ([`Connection::has_pending_events`]
    /// tells the two apart).
    pub fn poll_event(&mut self) -> Option<Event> {
        if self.pongs_unsent > 0 {
            return None;
        }
        loop {
            match self.queue.pop_front() {
                None => {
                    if self.overflowed {
                        // `overflowed` stays set: later events are still refused until the reopen.
                        self.timers.set(Timer::Drained, self.now);
                    }
                    return None;
                }
                Some(Item::Gap(g)) => {
                    self.control_bytes -= gap_bytes(&g);
                    self.cursor = Some(g.resumed_at);
                    self.held_gap = Some(match self.held_gap.take() {
                        Some(first) => merge_gaps(first, g),
                        None => g,
                    });
                }
                Some(Item::Event(Event::Event { event, .. })) => {
                    self.queued_events -= 1;
                    self.queued_bytes -= domain_bytes(&event);
                    self.cursor = Some(event.sequence);
                    let gap = self.held_gap.take();
                    return Some(Event::Event { event, gap });
                }
                Some(Item::Event(e)) => {
                    self.control_bytes -= e.queued_bytes();
                    return Some(e);
                }
            }
        }
    }

    pub fn poll_timeout(&self) -> Option<Millis> {
        self.timers.next()
    }

    // ---- inputs -------------------------------------------------------------------------

    /// The socket (or the stream's `200`) is open. Ignored while a reopen's [`Transmit::Open`]
    /// waits behind the old socket's close: it is the old socket's.
    pub fn handle_open(&mut self, now: Millis) {
        self.now = now;
        if self.state != State::Opening || self.old_socket_held() {
            return;
        }
        // Reported without its open polled (no socket held, so it is that open's): taken at its
        // word, and the open is not handed out again.
        self.drop_transmits(|t| matches!(t, Transmit::Open(_)));
        self.state = State::Attaching;
        if self.wire == Wire::Sse {
            self.sse.reset();
            self.arm_stream_idle(now);
        }
    }

    /// The open failed: `status` is the HTTP status of a refused upgrade or stream (`None` when
    /// no answer came: refused connection, DNS, TLS), `body` its body, of which the first
    /// [`REFUSAL_BODY_MAX`](agentwire_core::http::REFUSAL_BODY_MAX) bytes are read (a driver
    /// need hand over no more). While a reopen's [`Transmit::Open`] waits behind the old
    /// socket's close it is the old socket's: its unpolled close goes, and the open stays queued.
    pub fn handle_open_failed(&mut self, now: Millis, status: Option<u16>, body: &str) {
        self.now = now;
        if self.socket_reported_gone() || self.state != State::Opening {
            return;
        }
        let body = agentwire_core::text::prefix(body, agentwire_core::http::REFUSAL_BODY_MAX);
        self.on_open_failed(now, status, body);
    }

    /// The open failed before any HTTP answer, for a reason the host knows and states in
    /// `reason`, the failure's message: a refused TCP connection, DNS, a socket that could not be
    /// created, a credential it could not get. Retried with the backoff within
    /// `max_reconnect_attempts`. Unlike [`Connection::handle_open_failed`] without a status (for
    /// a host that cannot tell these apart: a browser's WebSocket), the message adds no guess at
    /// a network failure, a refused key or a missing WebSocket route. As `handle_open_failed`
    /// while a reopen's [`Transmit::Open`] waits behind the old socket's close.
    pub fn handle_open_error(&mut self, now: Millis, reason: &str) {
        self.now = now;
        if self.socket_reported_gone() || self.state != State::Opening {
            return;
        }
        self.socket_open = false;
        self.reconnect(now, None, reason, false);
    }

    /// The open failed in a way no retry mends, by the host's own judgement (a TLS certificate
    /// it does not trust, a host that cannot be a TLS server name). Before the first attach the
    /// connection stops with `error`, made not retryable, so `connect` fails at once. A
    /// connection that has been live takes it as an ordinary failed open and reopens with its
    /// backoff: an expired certificate, a clock off or a captive portal may pass. An `error` of
    /// kind `internal` (a bug in agentwire, never a host's judgement of an open) is taken as
    /// `protocol`. As `handle_open_failed` while a reopen's [`Transmit::Open`] waits behind the
    /// old socket's close.
    pub fn handle_open_unusable(&mut self, now: Millis, mut error: SwitchError) {
        if error.kind == ErrorKind::Internal {
            error.kind = ErrorKind::Protocol;
        }
        self.now = now;
        if self.socket_reported_gone() || self.state != State::Opening {
            return;
        }
        if self.ever_attached {
            // The host's reason alone, as `handle_open_error` (no guess at a refused key).
            self.socket_open = false;
            return self.reconnect(now, None, &error.message, false);
        }
        self.socket_open = false;
        self.stop(Some(error.retryable(false)), "refused");
    }

    /// A WebSocket text message. Ignored while a reopen's [`Transmit::Open`] waits behind the old
    /// socket's close: it is the old socket's.
    pub fn handle_text(&mut self, now: Millis, text: &str) {
        self.now = now;
        if self.old_socket_held() {
            return;
        }
        self.implicit_open(now, Wire::WebSocket);
        if !matches!(self.state, State::Attaching | State::Live) || self.wire != Wire::WebSocket {
            return;
        }
        let frame = crate::frame::decode_with(text, &self.cfg.decode);
        let (name, hint) = if frame.is_err() {
            (crate::frame::frame_name_hint(text), crate::frame::event_id_hint(text))
        } else {
            (None, None)
        };
        self.on_decoded(now, frame, name, hint);
        self.drop_released();
    }

    /// A WebSocket binary message: read as UTF-8 text (Switch sends none).
    pub fn handle_binary(&mut self, now: Millis, bytes: &[u8]) {
        match std::str::from_utf8(bytes) {
            Ok(text) => self.handle_text(now, text),
            Err(e) => {
                self.now = now;
                if matches!(self.state, State::Attaching | State::Live) {
                    let m = format!("binary message of {} bytes is not UTF-8 ({e}); dropped", bytes.len());
                    self.diagnostic(SwitchError::local(ErrorKind::Decode, m));
                }
            }
        }
    }

    /// A chunk of the SSE body (any split). Ignored while a reopen's [`Transmit::Open`] waits
    /// behind the old socket's close: it is the old stream's.
    pub fn handle_bytes(&mut self, now: Millis, chunk: &[u8]) {
        self.now = now;
        if self.old_socket_held() {
            return;
        }
        self.implicit_open(now, Wire::Sse);
        if !matches!(self.state, State::Attaching | State::Live) || self.wire != Wire::Sse {
            return;
        }
        self.arm_stream_idle(now);
        let mut out = Vec::new();
        self.sse.feed(chunk, &mut out);
        for item in out {
            if self.state != State::Attaching && self.state != State::Live {
                break;
            }
            match item {
                Ok(ev) => {
                    let frame = crate::frame::decode_sse_with(&ev.event, &ev.data, ev.id.as_deref(), &self.cfg.decode);
                    let hint = ev
                        .id
                        .as_deref()
                        .and_then(|id| agentwire_core::decimal::parse_u64(id.trim()));
                    self.on_decoded(now, frame, Some(&ev.event), hint);
                }
                Err(e) => self.on_undecodable(&crate::frame::FrameError::from(e), None, None),
            }
        }
        self.drop_released();
    }

    /// Input on a socket the driver has not reported open: it is open.
    fn implicit_open(&mut self, now: Millis, wire: Wire) {
        if self.state == State::Opening && self.wire == wire {
            self.handle_open(now);
        }
    }

    /// Takes every transmit `which` picks out of `poll_transmit`. A fn pointer, not a generic
    /// closure: the queue's `retain` is compiled once for the four kinds it drops (a wasm size
    /// matter), not once per kind.
    #[inline(never)]
    fn drop_transmits(&mut self, which: fn(&Transmit) -> bool) {
        self.transmit.retain(|t| !which(t));
    }

    /// The driver reported its socket gone (closed, or its open failed). A close or a pong not
    /// polled yet is that socket's (a `Close` is queued only for a socket whose open was polled:
    /// `close_socket` takes an unpolled open back instead): in any state (the user's close, a
    /// stop, the engine's close before a reopen) it goes with the socket, and the pongs no longer
    /// hold the events back. Returns whether the report is that of an old socket, one the engine
    /// gave up on, with its reopen waiting unpolled ([`Connection::old_socket_held`]): nothing
    /// more to do.
    fn socket_reported_gone(&mut self) -> bool {
        let old = self.old_socket_held();
        self.pongs_unsent = 0;
        self.drop_transmits(|t| matches!(t, Transmit::Close { .. } | Transmit::Text(_)));
        // Opening with no socket held, a report before the open was polled is that open's
        // outcome: the open is taken back (never sent, it attached nothing), not handed out in
        // the backoff or after the stop the report leads to.
        if !old && self.state == State::Opening && self.transmit.iter().any(|t| matches!(t, Transmit::Open(_))) {
            self.drop_transmits(|t| matches!(t, Transmit::Open(_)));
            self.open_may_attach = false;
        }
        old
    }

    /// A reopen's [`Transmit::Open`] waits unpolled behind the old socket's [`Transmit::Close`]:
    /// the driver still holds that socket and cannot have opened the new one, so every socket
    /// input now (an open, a frame, a close, a failed open) is of the old socket, one the engine
    /// already gave up on (the API names no socket). An open not polled is always the last
    /// transmit queued (opening, nothing else queues one, and a close takes it back instead); a
    /// close goes only when polled or when the driver reports its socket gone. Without that
    /// close the driver holds no socket: input then (a driver reporting an open's outcome
    /// without polling it) is taken at its word, as the open's.
    fn old_socket_held(&self) -> bool {
        matches!(self.transmit.back(), Some(Transmit::Open(_)))
            && self.transmit.iter().any(|t| matches!(t, Transmit::Close { .. }))
    }

    /// The socket closed (`code` from its close frame; 1006 when it dropped without one) or the SSE
    /// stream ended (any code; 1006 is fine). While a reopen's [`Transmit::Open`] waits behind the
    /// old socket's close it is the old socket's: its unpolled close goes, and the open stays
    /// queued.
    pub fn handle_close(&mut self, now: Millis, code: u16, reason: &str) {
        self.now = now;
        if self.socket_reported_gone() {
            return;
        }
        match self.state {
            State::Opening if crate::frame::refusal_status(code).is_none() => self.on_open_failed(now, None, reason),
            State::Opening => self.on_socket_closed(now, code, reason),
            State::Attaching | State::Live => self.on_socket_closed(now, code, reason),
            _ => {}
        }
    }

    /// The answer to a [`Transmit::Http`].
    pub fn handle_http_response(&mut self, now: Millis, id: u64, status: u16, body: &str) {
        self.now = now;
        self.on_beat_answer(now, id, Ok((status, body)));
    }

    /// A [`Transmit::Http`] got no answer (connection refused, reset, timed out).
    pub fn handle_http_failed(&mut self, now: Millis, id: u64, reason: &str) {
        self.now = now;
        self.on_beat_answer(now, id, Err(reason));
    }

    pub fn handle_timeout(&mut self, now: Millis) {
        self.now = now;
        for timer in self.timers.expire(now) {
            match timer {
                Timer::Open => self.on_open_timeout(now),
                Timer::Ping => self.on_ping_timeout(now),
                Timer::Beat => self.send_beat(now),
                Timer::BeatTimeout => self.on_beat_timeout(now),
                Timer::StreamIdle => self.on_stream_idle(now),
                Timer::Reopen => {
                    if self.state == State::Backoff {
                        self.open(now);
                    }
                }
                Timer::Drained => self.on_drained(),
            }
        }
    }

    // ---- shared internals -----------------------------------------------------------------

    /// The parameters of the next open: the cursor, the generation, the declared rooms.
    fn next_params(&self) -> OpenParams {
        let mut p = self.cfg.open.clone();
        // The highest *received*: queued events survive the reconnect and are still delivered.
        p.start_from = self.received.map_or(StartFrom::Head, StartFrom::After);
        p.expected_generation = self.generation.as_ref().map(ToString::to_string);
        p.rooms = self.declare.clone();
        p
    }

    fn open(&mut self, now: Millis) {
        self.drop_released();
        let params = self.next_params();
        let request = match self.wire {
            Wire::WebSocket => params.ws_path().map(HttpRequest::get),
            Wire::Sse => params.sse_path().map(|path| {
                let mut r = HttpRequest::get(path);
                r.headers = vec![("Accept", "text/event-stream".to_owned())];
                if let Some(c) = self.received {
                    r.headers.push(("Last-Event-ID", c.to_string()));
                }
                r
            }),
        };
        let request = match request {
            Ok(r) => r,
            Err(e) => {
                // Server values are checked as they arrive and `set_declared_rooms` checks its
                // rooms: no open URL should fail to build; if one does, stopping beats a loop.
                let e = SwitchError::local(ErrorKind::Protocol, format!("cannot reopen: {}", e.message));
                return self.stop(Some(e), "cannot reopen");
            }
        };
        // The open before this one may have attached unseen (its 101 or 200, or its
        // `connection_state`, lost): the server may have moved the generation past ours.
        self.attach_unconfirmed |= std::mem::replace(&mut self.open_may_attach, true);
        self.fence_may_be_stale = self.attach_unconfirmed && params.expected_generation.is_some();
        self.state = State::Opening;
        self.socket_open = true;
        self.overflowed = false;
        self.beat_in_flight = None;
        self.beats_failed = 0;
        self.timers.clear();
        self.timers
            .set(Timer::Open, now.saturating_add(self.cfg.open_timeout_ms));
        self.transmit.push_back(Transmit::Open(OpenRequest {
            wire: self.wire,
            request,
        }));
    }

    /// Queues an event. Diagnostics and unknown control frames past the bound plus
    /// `CONTROL_SLACK` are counted and dropped; room updates and `Connected` (one per frame the
    /// server sent) likewise past another `CONTROL_SLACK`, so diagnostics cannot crowd them out.
    /// All of them are dropped too past `max_queued_bytes` of what is not a domain event (the
    /// server chooses their size). A `SubscriptionChanged` replaces one right before it (each
    /// carries the whole set; a refused one leaves the one before in place). `Evicted` and
    /// `Disconnected` (one per socket) always go in; the `Connected` of an attach is bounded in
    /// count only, and past the bytes loses its room list and the server's and client's parts
    /// (`rooms()` has the rooms).
    fn push(&mut self, event: Event) {
        self.push_bounded(event, true);
    }

    /// [`Connection::push`], in bytes too when `by_bytes`.
    fn push_bounded(&mut self, event: Event, by_bytes: bool) {
        let slack = match event {
            Event::Diagnostic(_) | Event::Control { .. } => CONTROL_SLACK,
            Event::SubscriptionChanged(_) | Event::RoomReleased(_) | Event::Connected { .. } => 2 * CONTROL_SLACK,
            _ => return self.push_always(event),
        };
        // The one it would replace, which a refused one leaves in place.
        let replaces = match (&event, self.queue.back()) {
            (Event::SubscriptionChanged(_), Some(Item::Event(last @ Event::SubscriptionChanged(_)))) => {
                Some(last.queued_bytes())
            }
            _ => None,
        };
        let (len, held) = match replaces {
            Some(b) => (self.queue.len() - 1, self.control_bytes - b),
            None => (self.queue.len(), self.control_bytes),
        };
        if (by_bytes && self.over_bytes(held, event.queued_bytes()))
            || len >= self.cfg.max_queued_events.saturating_add(slack)
        {
            self.dropped_control += 1;
            return;
        }
        if let Some(b) = replaces {
            self.queue.pop_back();
            self.control_bytes -= b;
        }
        self.push_always(event);
    }

    /// Queues an event whatever the bounds (one per socket: an eviction, a close; the stop).
    fn push_always(&mut self, event: Event) {
        self.control_bytes += event.queued_bytes();
        self.queue.push_back(Item::Event(event));
    }

    /// Whether `bytes` more of what is not a domain event would go past `max_queued_bytes`.
    fn over_control_bytes(&self, bytes: usize) -> bool {
        self.over_bytes(self.control_bytes, bytes)
    }

    /// Whether `bytes` more on `held` would go past `max_queued_bytes` (the first always fits: a
    /// `Connected` after a drained queue is never refused).
    fn over_bytes(&self, held: usize, bytes: usize) -> bool {
        held > 0 && held.saturating_add(bytes) > self.cfg.max_queued_bytes
    }

    /// Queues a gap, merged into the one at the back of the queue if there is one (so gaps alone
    /// can never fill memory). One that finds the queue over its bytes loses its room list, reason
    /// and `resumed_position` (`all_rooms`): still a gap, of the same range.
    fn push_gap(&mut self, mut g: Gap) {
        if let Some(Item::Gap(_)) = self.queue.back() {
            if let Some(Item::Gap(first)) = self.queue.pop_back() {
                self.control_bytes -= gap_bytes(&first);
                g = merge_gaps(first, g);
            }
        }
        if self.over_control_bytes(gap_bytes(&g)) {
            g.rooms = None;
            g.all_rooms = Some(true);
            g.reason.clear();
            g.resumed_position = None;
        }
        self.control_bytes += gap_bytes(&g);
        self.queue.push_back(Item::Gap(g));
    }

    fn diagnostic(&mut self, e: SwitchError) {
        self.push(Event::Diagnostic(e));
    }

    /// Drops the current socket (if any) and ends the connection.
    fn stop(&mut self, error: Option<SwitchError>, reason: &str) {
        self.close_socket(reason);
        self.state = State::Stopped;
        self.timers.clear();
        self.forget_beats();
        self.overflowed = false;
        // Stopped goes after everything queued, whatever the bound.
        self.push_always(Event::Stopped { error });
    }

    /// For a single-scope connection, the rooms it held are what it declares again; an
    /// all-scope connection declares only what it was configured with and still covers.
    /// Rooms the open URL cannot carry (a comma, a '/', leading or trailing whitespace, too
    /// long, past 256 rooms) are not declared: one diagnostic, and reopens go on without them.
    fn remember_rooms(&mut self, rooms: &[String]) {
        self.drop_released();
        self.rooms = rooms.to_vec();
        if self.cfg.open.scope == Scope::Single {
            self.declare.clear();
            for room in rooms {
                if self.declare.len() < crate::open::MAX_ROOMS && crate::open::check_room(room).is_ok() {
                    self.declare.push(room.clone());
                }
            }
            let skipped = rooms.len() - self.declare.len();
            if skipped > 0 {
                let m = format!(
                    "{skipped} of the server's rooms cannot go on an open URL (a ',', a '/', leading or trailing whitespace, over {} characters, or past {} rooms); reopens do not declare them",
                    crate::open::MAX_ID_LEN,
                    crate::open::MAX_ROOMS
                );
                self.diagnostic(SwitchError::local(ErrorKind::Protocol, m));
            }
        } else {
            // One pass over the list, each room looked up among the declared ones (at most
            // `MAX_ROOMS`), not the list searched for each declared room.
            let mut declared = BTreeSet::new();
            for room in &self.declare {
                declared.insert(room);
            }
            let mut listed = BTreeSet::new();
            for room in rooms {
                if declared.contains(room) {
                    listed.insert(room);
                }
            }
            self.declare.retain(|room| listed.contains(room));
        }
    }

    /// Takes the rooms `room_released` named out of `rooms` and `declare`, in one pass each.
    pub(super) fn drop_released(&mut self) {
        if self.released.is_empty() {
            return;
        }
        let released = std::mem::take(&mut self.released);
        let mut gone = BTreeSet::new();
        for room in &released {
            gone.insert(room);
        }
        self.rooms.retain(|room| !gone.contains(room));
        self.declare.retain(|room| !gone.contains(room));
    }
}

/// Most rooms a merged gap names; past it, it names none and says `all_rooms` (the union is
/// quadratic, and gaps alone must not grow memory).
const MAX_GAP_ROOMS: usize = crate::open::MAX_ROOMS;

/// Two gaps before one event: one loss from the first gap's start to the last one's resume.
fn merge_gaps(first: Gap, last: Gap) -> Gap {
    let too_many = matches!((&first.rooms, &last.rooms), (Some(a), Some(b)) if a.len() + b.len() > MAX_GAP_ROOMS);
    let rooms = match (first.rooms, last.rooms) {
        _ if too_many => None,
        (Some(mut a), Some(b)) => {
            for r in b {
                if !a.contains(&r) {
                    a.push(r);
                }
            }
            Some(a)
        }
        (a, b) => a.or(b),
    };
    Gap {
        from_sequence: first.from_sequence,
        resumed_at: last.resumed_at,
        resumed_position: last.resumed_position,
        rooms,
        all_rooms: match (first.all_rooms, last.all_rooms) {
            _ if too_many => Some(true),
            (None, None) => None,
            (a, b) => Some(a.unwrap_or(false) || b.unwrap_or(false)),
        },
        reason: last.reason,
    }
}

impl Event {
    /// What `max_queued_bytes` counts of it: the text it holds (a domain event's payload, room id,
    /// `bridge_id`, `channel_type` and unknown kind's name, and its gap's, an unknown control
    /// frame's name and body, room lists with a `String`'s own size per room, ids, reasons,
    /// messages). A driver that queues events again bounds its own queue with the same measure.
    pub fn queued_bytes(&self) -> usize {
        match self {
            Event::Event { event, gap } => domain_bytes(event) + gap.as_ref().map_or(0, gap_bytes),
            Event::Control { name, raw } => name.len() + raw.get().len(),
            Event::SubscriptionChanged(s) => rooms_bytes(&s.rooms) + s.reason.len(),
            Event::RoomReleased(r) => r.room_id.len() + opt_len(&r.session_id),
            Event::Connected { state: s, .. } => {
                let raw = |r: &Option<Box<RawValue>>| r.as_ref().map_or(0, |r| r.get().len());
                let generation = match &s.generation {
                    Some(crate::frame::ConnGeneration::Text(t)) => t.len(),
                    _ => 0,
                };
                rooms_bytes(&s.rooms)
                    + s.connection_id.len()
                    + s.agent_id.len()
                    + s.scope.len()
                    + s.filter.len()
                    + raw(&s.server)
                    + raw(&s.client)
                    + generation
            }
            Event::Evicted(e) => e.reason.len() + opt_len(&e.room_id),
            Event::Disconnected { reason, .. } => reason.len(),
            Event::Diagnostic(e) | Event::Stopped { error: Some(e) } => e.message.len() + opt_len(&e.detail),
            Event::Stopped { error: None } => 0,
        }
    }
}

fn opt_len(s: &Option<String>) -> usize {
    s.as_ref().map_or(0, String::len)
}

fn rooms_bytes(rooms: &[String]) -> usize {
    rooms.iter().map(|r| r.len() + std::mem::size_of::<String>()).sum()
}

fn gap_bytes(g: &Gap) -> usize {
    g.rooms.as_deref().map_or(0, rooms_bytes)
        + g.reason.len()
        + g.resumed_position.as_ref().map_or(0, |p| p.get().len())
}

/// Every text the event owns, each of which the server chooses.
fn domain_bytes(event: &DomainEvent) -> usize {
    let kind = match &event.kind {
        crate::frame::EventKind::Other(name) => name.len(),
        _ => 0,
    };
    event.payload.get().len() + event.room_id.len() + opt_len(&event.bridge_id) + opt_len(&event.channel_type) + kind
}
