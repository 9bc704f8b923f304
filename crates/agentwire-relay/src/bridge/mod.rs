//! The SSE bridge: the browser speaks the current Switch WebSocket generation to the relay, and
//! the relay speaks switch-core 0.19's SSE stream and HTTP beats upstream, so that a client
//! following `switch-agent-connection.md` (our own `agentwire_switch::Connection` in WebSocket
//! transport, or any other) cannot tell it is not talking to a current server. The translation
//! table and every decision are in `docs/relay-bridge.md`; in short:
//!
//! - **Open.** The Worker opens `GET /agents/{agent}/events?<the browser's query>` with
//!   `Accept: text/event-stream` and the key, and reports the answer with
//!   [`Bridge::handle_open_response`]. `200 text/event-stream` streams. `401` (the relay's own
//!   key refused) closes 1011 with the relay's reason and no frame, never 4401; `400`, `403`,
//!   `409`, `422` send `refused {status, detail}` then close 4000 + status; anything else (404,
//!   5xx, 200 that is not an event stream, no answer) closes 1011, which the browser retries.
//!   No `connection_state` within `open_timeout_ms` (10 s): 1011.
//! - **Frames.** Every SSE frame is decoded by the engine (`frame::decode_sse_with`) and written
//!   back with the engine's encoder (`frame::encode`): domain events as `{"event","data","id"}`,
//!   control frames as `{"event","data"}`. Released quirks are filled in: `evicted` gets its
//!   `code` from the reason (`frame::eviction_from_reason`), `gap` gets `rooms` (the covered
//!   rooms) and `all_rooms: true`, `connection_state`'s `heartbeat_interval_seconds` becomes the
//!   ping interval the bridge really uses. `connection_state` keeps **no `generation`**: the
//!   released server issues none and cannot fence, and the engine, seeing none, sends no
//!   `expected_generation` on its reopen, which a released server would not understand (a
//!   made-up generation sent back could only be refused or ignored). SSE comments (`: keepalive`)
//!   are not forwarded; an upstream `ping` is dropped (the bridge pings itself).
//! - **Bad frames.** A frame the engine cannot decode, an SSE line or event over the parser's
//!   limits, or a frame whose WebSocket text would exceed `max_frame_bytes` is dropped and
//!   counted ([`BridgeStats::frames_dropped`]); the bridge never closes for one. When it was (or
//!   may have been) a domain event after the browser attached, the loss is reported as a `gap`
//!   frame (from the last sequence forwarded to the dropped one's, when its `id:` line says it),
//!   as a current server reports events it cannot replay: the browser re-reads the room. Not
//!   1009: the browser would reconnect and the server replay the same frame, forever.
//! - **Ending.** `evicted` is forwarded, then the bridge closes 1000 (the released server ends
//!   the stream after it). The stream ending or failing without one: 1011 (the browser reopens
//!   with `start_from` and the relay forwards it). The browser closing: [`Output::Close`] 1000
//!   all the same, so the Worker has one signal to abort the upstream.
//! - **Liveness.** After the first `connection_state`, a `ping` frame (`{"event":"ping","data":{}}`,
//!   the shape `docs/protocols/switch.md` records) every ping interval. Each browser pong
//!   `{"type":"pong","cursor":N}` becomes one beat (`ops::beat`), the cursor never lower than an
//!   earlier one; at most one beat is in flight, and pongs meanwhile are folded into one more
//!   beat with the latest cursor. No pong for `missed_pongs` intervals (6 s):
//!   `evicted heartbeat_lapsed` and close 1000, as a current server does. Any other browser text
//!   is ignored and counted ([`BridgeStats::client_texts_ignored`]).
//! - **A slow browser.** workerd queues WebSocket sends without limit, so the bridge counts the
//!   bytes it sent that the browser has not acknowledged (a pong acknowledges everything sent
//!   before its ping); past a window fitted to the browser's reading by how late its pongs come
//!   (256 KiB at first, at most `max_unacked_bytes`), [`Bridge::wants_sse`] is false and the
//!   Worker reads no more of the upstream stream until a pong catches up.
//! - **Beat answers.** 2xx alive; 401 close 1011 (the relay's key refused); 404 `evicted
//!   heartbeat_lapsed` (the released server forgot the connection: its liveness lapsed) and
//!   1000; 409 `evicted` with the body's `code` (`no_stream` when it has none, or one the
//!   eviction table does not name, said in the reason: the beat table reopens on it; `taken_over`
//!   is final for the browser) and 1000;
//!   anything else (422, 429, 5xx, network failure) is a failed beat, retried at the next pong,
//!   and `max_beat_failures` in a row close 1011. A beat unanswered for `beat_timeout_ms`: 1011.
//!
//! Sans-IO: nothing here reads a clock; `now` is passed in. After every input the Worker drains
//! [`Bridge::poll_output`] and re-arms its timer at [`Bridge::poll_timeout`]. [`Output::Close`]
//! is always the last output, there is exactly one per bridge, and [`Bridge::is_closed`] is true
//! from then on. Drain the outputs right after [`Bridge::new`] too: a configuration the bridge
//! cannot serve (a `connection_id` that is not a UUID) is refused at once, as a current server
//! refuses it (`refused 400`, close 4400), before anything is opened upstream.

mod config;
mod liveness;
mod open;
mod rooms;
mod upstream;

#[cfg(test)]
mod proptests;
#[cfg(test)]
mod testutil;

pub use config::{BridgeConfig, MAX_PING_INTERVAL_MS, MIN_PING_INTERVAL_MS};

use agentwire_core::text::prefix;
use agentwire_core::{HttpRequest, Millis, Timers};
use agentwire_switch::frame::{encode, Evicted, Frame, Gap, Refused};
use agentwire_switch::ops;
use agentwire_switch::sse::SseParser;
use serde_json::value::RawValue;
use std::collections::VecDeque;

/// What the Worker does next.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Output {
    /// Send this WebSocket text frame to the browser.
    ToClient(String),
    /// POST this upstream with `Authorization: Bearer <key>` and report the answer with
    /// [`Bridge::handle_beat_response`]. Never more than one unanswered.
    Beat(HttpRequest),
    /// Close the browser's socket with this code and reason (at most 123 bytes) and abort the
    /// upstream stream and any beat. Always the last output.
    Close { code: u16, reason: String },
}

/// What the bridge has seen and done, counted: read by the tests ([`Bridge::stats`]) and open to a
/// Rust host. The Worker reads none of it: its wasm module exports no stats.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BridgeStats {
    /// SSE frames forwarded to the browser.
    pub frames_forwarded: u64,
    /// SSE frames dropped: undecodable, over a limit, or too large for one WebSocket frame.
    pub frames_dropped: u64,
    /// `gap` frames the bridge made up to report a dropped domain event.
    pub gaps_reported: u64,
    /// SSE comment lines (the 15 s `: keepalive`), not forwarded.
    pub keepalives: u64,
    pub pings_sent: u64,
    /// Browser pongs taken.
    pub pongs: u64,
    /// Browser texts that were not a pong (or came before the browser was attached).
    pub client_texts_ignored: u64,
    pub beats_sent: u64,
    /// Beats that failed (not counting 401, 404 and 409, which end the bridge).
    pub beats_failed: u64,
    /// Beat answers that came with no beat in flight (dropped).
    pub beat_answers_ignored: u64,
}

/// Where the bridge is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// Waiting for the answer to the upstream open.
    Opening,
    /// The stream is open; waiting for `connection_state`.
    Attaching,
    /// `connection_state` forwarded: pinging, taking pongs.
    Live,
    /// [`Output::Close`] emitted; nothing more happens.
    Closed,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
enum Timer {
    /// No `connection_state` yet.
    Open,
    /// No byte on the stream.
    StreamIdle,
    /// Time to ping.
    Ping,
    /// No pong.
    PongTtl,
    /// The beat in flight has no answer.
    BeatTimeout,
}

/// The longest close reason a WebSocket close frame carries.
const MAX_CLOSE_REASON: usize = 123;
/// What a reason or detail is cut to when its frame would not fit `max_frame_bytes`.
const SHORT_TEXT: usize = 200;

/// One browser connection bridged to one upstream SSE stream. See the module documentation.
pub struct Bridge {
    cfg: BridgeConfig,
    phase: Phase,
    sse: SseParser,
    timers: Timers<Timer>,
    out: VecDeque<Output>,
    /// Bytes of the `ToClient` frames in `out`.
    pending_bytes: usize,
    /// The ping interval in force.
    ping_ms: u64,
    /// The rooms the connection covers, as the upstream last said.
    rooms: rooms::Rooms,
    /// The highest sequence forwarded (or the cursor of `connection_state`, or a gap's
    /// `resumed_at`): where a made-up gap starts.
    last_seq: u64,
    /// The highest cursor a pong carried.
    cursor: Option<u64>,
    beat_in_flight: bool,
    /// A pong came while a beat was in flight: beat again when it is answered.
    beat_wanted: bool,
    beat_failures: u32,
    /// Bytes of every frame queued for the browser so far.
    sent_bytes: u64,
    /// Of those, the bytes the browser acknowledged (sent before a ping it answered).
    acked_bytes: u64,
    /// `(ping number, sent_bytes, when)` right after each ping not answered yet, oldest first,
    /// at most `MAX_PING_MARKS` (a ping past that gets none).
    ping_marks: VecDeque<(u64, u64, Millis)>,
    /// Bytes the browser may be behind before the stream is held back: from
    /// `INITIAL_WINDOW_BYTES` up to `max_unacked_bytes`, fitted to the browser's reading by the
    /// time its pongs take (`liveness.rs`, `fit_window`).
    window: u64,
    /// The least time a pong took after its ping so far (`None` before the first): about the
    /// round trip to the browser, which `fit_window` does not count as slow reading.
    round_trip: Option<Millis>,
    /// Pings answered so far: pong `n` answers ping `n` (pongs come in order).
    pings_answered: u64,
    /// [`Bridge::open_timed_out`].
    open_timed_out: bool,
    stats: BridgeStats,
}

/// Its phase and what waits for the browser, never its configuration.
impl std::fmt::Debug for Bridge {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Bridge")
            .field("phase", &self.phase)
            .field("pending_bytes", &self.pending_bytes)
            .finish_non_exhaustive()
    }
}

impl Bridge {
    /// A bridge waiting for the answer to the upstream open, which the Worker starts now. Drain
    /// [`poll_output`](Self::poll_output) first: an unusable configuration closes at once.
    pub fn new(cfg: BridgeConfig, now: Millis) -> Bridge {
        let window = liveness::initial_window(cfg.max_unacked_bytes);
        let mut bridge = Bridge {
            sse: SseParser::new(cfg.sse),
            ping_ms: cfg.ping_interval(),
            cfg,
            phase: Phase::Opening,
            timers: Timers::new(),
            out: VecDeque::new(),
            pending_bytes: 0,
            rooms: rooms::Rooms::default(),
            last_seq: 0,
            cursor: None,
            beat_in_flight: false,
            beat_wanted: false,
            beat_failures: 0,
            sent_bytes: 0,
            acked_bytes: 0,
            ping_marks: VecDeque::new(),
            window,
            round_trip: None,
            pings_answered: 0,
            open_timed_out: false,
            stats: BridgeStats::default(),
        };
        // Every beat is built from these two; a current server refuses the open with 4400 when
        // `connection_id` is missing or malformed, so refuse the same way before opening.
        if let Err(e) = ops::beat(&bridge.cfg.agent_id, &bridge.cfg.connection_id, 0) {
            let detail = json_string(&e.message);
            bridge.refuse(400, detail, &e.message);
            return bridge;
        }
        bridge
            .timers
            .set(Timer::Open, now.saturating_add(bridge.cfg.open_timeout_ms));
        bridge
    }

    pub fn config(&self) -> &BridgeConfig {
        &self.cfg
    }

    pub fn stats(&self) -> &BridgeStats {
        &self.stats
    }

    /// The ping interval in force (the configured one, or the upstream's when shorter).
    pub fn ping_interval_ms(&self) -> u64 {
        self.ping_ms
    }

    /// True once [`Output::Close`] has been queued.
    pub fn is_closed(&self) -> bool {
        self.phase == Phase::Closed
    }

    /// True once it closed because no `connection_state` came within `open_timeout_ms` (the
    /// upstream's open unanswered, or answered and then silent): what the Worker logs as
    /// `upstream_timeout`, as it does a WebSocket upgrade unanswered in time.
    pub fn open_timed_out(&self) -> bool {
        self.open_timed_out
    }

    /// True from the first `connection_state` forwarded until the close.
    pub fn is_attached(&self) -> bool {
        self.phase == Phase::Live
    }

    /// Bytes held in partial SSE state (bounded by the SSE limits).
    pub fn buffered_bytes(&self) -> usize {
        self.sse.buffered_bytes()
    }

    pub fn poll_output(&mut self) -> Option<Output> {
        let o = self.out.pop_front()?;
        if let Output::ToClient(text) = &o {
            self.pending_bytes = self.pending_bytes.saturating_sub(text.len());
        }
        Some(o)
    }

    pub fn poll_timeout(&self) -> Option<Millis> {
        self.timers.next()
    }

    /// Bytes sent to the browser that it has not acknowledged by answering a later ping.
    pub fn unacked_bytes(&self) -> u64 {
        self.sent_bytes - self.acked_bytes
    }

    /// Whether the Worker should read (and pass in) more of the upstream stream: false while
    /// the browser is more than its window behind (at most `max_unacked_bytes`), and once closed. Check it after
    /// every input; it turns true again with the pong that acknowledges enough.
    pub fn wants_sse(&self) -> bool {
        self.phase != Phase::Closed && self.unacked_bytes() <= self.window
    }

    /// The browser closed its socket (or it dropped): the bridge ends with [`Output::Close`] 1000,
    /// the Worker's signal to abort the upstream stream. Frames not yet sent are dropped.
    pub fn handle_client_close(&mut self, _now: Millis) {
        if self.phase == Phase::Closed {
            return;
        }
        self.out.clear();
        self.pending_bytes = 0;
        self.close(1000, "client closed");
    }

    pub fn handle_timeout(&mut self, now: Millis) {
        for timer in self.timers.expire(now) {
            if self.phase == Phase::Closed {
                return;
            }
            match timer {
                Timer::Open => {
                    self.open_timed_out = true;
                    let m = format!("no connection_state within {} ms", self.cfg.open_timeout_ms);
                    self.close(1011, &m);
                }
                // Not read on purpose (the browser is behind): not the upstream's silence.
                Timer::StreamIdle if !self.wants_sse() => self.arm_stream_idle(now),
                Timer::StreamIdle => {
                    let m = format!("upstream silent for {} ms", self.cfg.stream_idle_timeout_ms);
                    self.close(1011, &m);
                }
                Timer::Ping => self.on_ping_timer(now),
                Timer::PongTtl => self.on_pong_lapsed(),
                Timer::BeatTimeout => {
                    let m = format!("beat unanswered for {} ms", self.cfg.beat_timeout_ms);
                    self.close(1011, &m);
                }
            }
        }
    }

    // ---- shared internals ---------------------------------------------------------------

    /// Queues a frame for the browser. Past `max_pending_bytes` (the Worker is not draining) the
    /// bridge closes 1011 instead: the browser resumes from its cursor, nothing is lost.
    fn send_text(&mut self, text: String) {
        if self.phase == Phase::Closed {
            return;
        }
        if self.pending_bytes > 0 && self.pending_bytes.saturating_add(text.len()) > self.cfg.max_pending_bytes {
            let m = format!("{} bytes wait for the browser", self.pending_bytes);
            return self.close(1011, &m);
        }
        self.pending_bytes += text.len();
        self.sent_bytes += text.len() as u64;
        self.out.push_back(Output::ToClient(text));
    }

    /// A frame the bridge wrote (or translated) for the browser; dropped and counted when it
    /// cannot be made to fit `max_frame_bytes`.
    fn send_frame(&mut self, frame: Frame) {
        self.send_fitted(self.fit(frame));
    }

    fn send_fitted(&mut self, fitted: Result<String, usize>) {
        match fitted {
            Ok(text) => self.send_text(text),
            Err(_) => self.stats.frames_dropped += 1,
        }
    }

    /// The frame's WebSocket text within `max_frame_bytes`. What the bridge writes itself (a
    /// gap's rooms and reason, an eviction's reason, a refusal's detail) is shortened to fit: a
    /// gap then names no rooms and says `all_rooms: true`. When even that does not fit, the
    /// length of the frame's text as it was.
    fn fit(&self, frame: Frame) -> Result<String, usize> {
        let text = encode(&frame);
        if text.len() <= self.cfg.max_frame_bytes {
            return Ok(text);
        }
        self.shortened(frame).ok_or(text.len())
    }

    /// A gap without `rooms` (one the bridge makes up, or a released one), with the rooms the
    /// connection covers: as [`Bridge::fit`] gives it, but the rooms' length is known, so a gap
    /// they do not fit in is shortened without being written (or the rooms copied) first.
    fn fit_naming_rooms(&self, mut g: Gap) -> Result<String, usize> {
        g.rooms = Some(Vec::new());
        let mut frame = Frame::Gap(g);
        let text = encode(&frame);
        // `"rooms":[]` becomes `"rooms":[…]`.
        let len = text.len() - 2 + self.rooms.json_len();
        if len > self.cfg.max_frame_bytes {
            return self.shortened(frame).ok_or(len);
        }
        if len == text.len() {
            return Ok(text);
        }
        if let Frame::Gap(g) = &mut frame {
            g.rooms = Some(self.rooms.to_vec());
        }
        let text = encode(&frame);
        debug_assert_eq!(text.len(), len, "the rooms' length kept");
        Ok(text)
    }

    /// A frame too long for `max_frame_bytes` with what the bridge writes itself shortened
    /// (see [`Bridge::fit`]), as text, when that fits.
    fn shortened(&self, frame: Frame) -> Option<String> {
        let shorter = match frame {
            Frame::Gap(g) => Frame::Gap(Gap {
                rooms: Some(Vec::new()),
                all_rooms: Some(true),
                reason: prefix(&g.reason, SHORT_TEXT).to_owned(),
                ..g
            }),
            Frame::Evicted(e) => Frame::Evicted(Evicted {
                reason: prefix(&e.reason, SHORT_TEXT).to_owned(),
                ..e
            }),
            Frame::Refused(r) => Frame::Refused(Refused {
                status: r.status,
                detail: json_string(prefix(&r.detail_text(), SHORT_TEXT)),
            }),
            _ => return None,
        };
        let text = encode(&shorter);
        (text.len() <= self.cfg.max_frame_bytes).then_some(text)
    }

    /// `refused {status, detail}`, then close 4000 + status.
    fn refuse(&mut self, status: u16, detail: Box<RawValue>, reason: &str) {
        self.send_frame(Frame::Refused(Refused { status, detail }));
        self.close(4000 + status, reason);
    }

    /// The terminal output.
    fn close(&mut self, code: u16, reason: &str) {
        if self.phase == Phase::Closed {
            return;
        }
        self.phase = Phase::Closed;
        self.timers.clear();
        self.beat_in_flight = false;
        self.beat_wanted = false;
        self.out.push_back(Output::Close {
            code,
            reason: prefix(reason, MAX_CLOSE_REASON).to_owned(),
        });
    }
}

/// `s` as a JSON string.
fn json_string(s: &str) -> Box<RawValue> {
    let mut out = String::with_capacity(s.len() + 2);
    agentwire_core::json::push_string(&mut out, s);
    RawValue::from_string(out).unwrap_or_else(|_| RawValue::from_string("\"\"".to_owned()).expect("JSON"))
}

#[cfg(test)]
mod tests {
    use super::testutil::*;
    use super::*;
    use agentwire_switch::sse::encode_event;

    #[test]
    fn a_connection_id_that_is_not_a_uuid_is_refused_like_a_current_server() {
        let mut b = Bridge::new(BridgeConfig::new("agent", "nope"), 0);
        let out = drain(&mut b);
        assert_eq!(out.len(), 2, "{out:?}");
        let v = json(&out[0]);
        assert_eq!(v["event"], "refused");
        assert_eq!(v["data"]["status"], 400);
        assert!(v["data"]["detail"].as_str().unwrap().contains("UUID"));
        assert!(matches!(&out[1], Output::Close { code: 4400, .. }));
        assert!(b.is_closed() && b.poll_timeout().is_none());
        b.handle_open_response(1, 200, Some("text/event-stream"), "");
        b.handle_sse(1, SSE_STATE.as_bytes());
        assert!(drain(&mut b).is_empty());
    }

    /// A frame the bridge writes itself that cannot fit `max_frame_bytes` even shortened (here the
    /// refusal of a `connection_id` that is not a UUID) is dropped and counted; the close follows
    /// all the same.
    #[test]
    fn a_frame_the_bridge_writes_that_cannot_fit_is_dropped_and_counted() {
        let mut cfg = BridgeConfig::new("agent", "nope");
        cfg.max_frame_bytes = 10;
        let mut b = Bridge::new(cfg, 0);
        assert!(matches!(drain(&mut b)[..], [Output::Close { code: 4400, .. }]));
        assert_eq!(b.stats().frames_dropped, 1);
        assert!(b.is_closed());
    }

    /// `Debug` shows the phase and the bytes waiting for the browser, never the configuration
    /// (the agent and its connection).
    #[test]
    fn debug_shows_the_phase_and_what_waits_never_the_configuration() {
        let mut b = live(0);
        b.handle_sse(10, message_frame(5, "x").as_bytes());
        let waiting = b.out.iter().map(|o| text(o).len()).sum::<usize>();
        assert!(waiting > 0);
        let debug = format!("{b:?}");
        assert!(debug.starts_with("Bridge {"), "{debug}");
        for shown in ["phase: Live", &format!("pending_bytes: {waiting}")] {
            assert!(debug.contains(shown), "{shown}: {debug}");
        }
        assert!(!debug.contains(CID) && !debug.contains("agent"), "{debug}");
    }

    /// `buffered_bytes` is what the SSE parser holds of a frame not read to its end, and nothing
    /// once the frame is complete.
    #[test]
    fn buffered_bytes_is_the_partial_sse_frame_held() {
        let mut b = streaming(0);
        let (head, rest) = SSE_STATE.split_at(SSE_STATE.find("\"agent_id\"").unwrap());
        b.handle_sse(1, head.as_bytes());
        assert!(drain(&mut b).is_empty() && !b.is_attached());
        // The event type "connection_state" and the unterminated `data:` line.
        let line = &head[head.find("data:").unwrap()..];
        assert_eq!(b.buffered_bytes(), "connection_state".len() + line.len());
        b.handle_sse(2, rest.as_bytes());
        assert!(b.is_attached());
        assert_eq!(b.buffered_bytes(), 0);
    }

    #[test]
    fn the_browser_closing_ends_the_bridge_with_one_close_and_nothing_after() {
        let mut b = live(0);
        b.handle_sse(10, message_frame(5, "x").as_bytes());
        b.handle_client_close(11);
        assert_eq!(
            drain(&mut b),
            vec![Output::Close {
                code: 1000,
                reason: "client closed".into()
            }]
        );
        b.handle_client_close(12);
        b.handle_timeout(1_000_000);
        b.handle_client_text(13, r#"{"type":"pong","cursor":5}"#);
        assert!(drain(&mut b).is_empty());
    }

    #[test]
    fn close_reasons_fit_a_close_frame() {
        assert_eq!(prefix("ééé", 5), "éé");
        let mut b = opening(0);
        b.handle_open_response(1, 503, None, &"x".repeat(500));
        let out = drain(&mut b);
        let Output::Close { code, reason } = &out[0] else {
            panic!("{out:?}")
        };
        assert_eq!(*code, 1011);
        assert!(reason.len() <= MAX_CLOSE_REASON);
    }

    #[test]
    fn frames_the_bridge_writes_are_shortened_to_fit_the_frame_limit() {
        let small = || {
            let mut cfg = BridgeConfig::new("agent", CID);
            cfg.max_frame_bytes = 300;
            Bridge::new(cfg, 0)
        };
        let mut b = small();
        b.handle_open_response(1, 403, None, &"r".repeat(1000));
        let out = drain(&mut b);
        assert!(text(&out[0]).len() <= 300);
        assert_eq!(json(&out[0])["data"]["detail"], "r".repeat(SHORT_TEXT));
        assert!(matches!(out[1], Output::Close { code: 4403, .. }));

        let mut b = small();
        b.handle_open_response(1, 200, Some("text/event-stream"), "");
        b.handle_sse(1, SSE_STATE.as_bytes());
        assert!(
            drain(&mut b).is_empty(),
            "a connection_state over the limit cannot be sent"
        );
        assert_eq!(b.stats().frames_dropped, 1);

        let mut cfg = BridgeConfig::new("agent", CID);
        cfg.max_frame_bytes = 700;
        let mut b = Bridge::new(cfg, 0);
        b.handle_open_response(1, 200, Some("text/event-stream"), "");
        b.handle_sse(1, SSE_STATE.as_bytes());
        // Rooms that fit in a `subscription_changed` but not beside a gap's reason.
        let rooms = (0..60).map(|i| format!("room-{i:02}")).collect::<Vec<_>>();
        let data = serde_json::json!({"rooms": rooms, "reason": "x"}).to_string();
        b.handle_sse(1, encode_event("subscription_changed", &data, None).as_bytes());
        assert_eq!(drain(&mut b).len(), 2);
        b.handle_sse(2, "id: 9\nevent: message\ndata: {\n\n".as_bytes());
        let out = drain(&mut b);
        let gap = json(&out[0]);
        assert!(text(&out[0]).len() <= 700);
        assert_eq!(
            (
                gap["data"]["all_rooms"].as_bool(),
                gap["data"]["rooms"].as_array().map(Vec::len)
            ),
            (Some(true), Some(0))
        );

        let mut b = small();
        b.handle_open_response(1, 200, Some("text/event-stream"), "");
        let state = format!(
            r#"{{"connection_id":"{CID}","agent_id":"agent","scope":"single","filter":"all","rooms":[],"cursor":4}}"#
        );
        b.handle_sse(1, encode_event("connection_state", &state, None).as_bytes());
        assert_eq!(drain(&mut b).len(), 1);
        b.handle_client_text(2, r#"{"type":"pong","cursor":4}"#);
        drain(&mut b);
        b.handle_beat_response(3, 404, &format!(r#"{{"detail":"{}"}}"#, "d".repeat(2000)));
        let out = drain(&mut b);
        assert_eq!(json(&out[0])["data"]["reason"], "d".repeat(SHORT_TEXT));
        assert!(matches!(out[1], Output::Close { code: 1000, .. }));
    }

    /// An upstream gap readable under `max_frame_bytes` but too long once written for the
    /// browser is shortened, not dropped: no rooms, `all_rooms: true`, its reason cut to
    /// `SHORT_TEXT` (a released gap, whose rooms the bridge adds, as a current one that names
    /// its own).
    #[test]
    fn an_upstream_gap_too_long_once_written_is_shortened_to_fit() {
        const MAX: usize = 700;
        let gap_of = |data: &str| {
            assert!(data.len() <= MAX, "readable: {}", data.len());
            let mut cfg = BridgeConfig::new("agent", CID);
            cfg.max_frame_bytes = MAX;
            let mut b = Bridge::new(cfg, 0);
            b.handle_open_response(1, 200, Some("text/event-stream"), "");
            b.handle_sse(1, SSE_STATE.as_bytes());
            assert_eq!(drain(&mut b).len(), 1);
            b.handle_sse(2, encode_event("gap", data, None).as_bytes());
            let out = drain(&mut b);
            assert_eq!((out.len(), b.stats().frames_dropped), (1, 0), "{out:?}");
            assert!(text(&out[0]).len() <= MAX);
            json(&out[0])["data"].clone()
        };
        let reason = "r".repeat(640);
        let released = serde_json::json!({"from_sequence": 40, "resumed_at": 3, "reason": reason});
        let g = gap_of(&released.to_string());
        assert_eq!(
            (&g["rooms"], &g["all_rooms"], &g["reason"], &g["resumed_at"]),
            (
                &serde_json::json!([]),
                &serde_json::json!(true),
                &serde_json::json!("r".repeat(SHORT_TEXT)),
                &serde_json::json!(3)
            )
        );
        let rooms = (0..30).map(|i| format!("room-{i:02}")).collect::<Vec<_>>();
        let reason = "r".repeat(310);
        let current = serde_json::json!({"from_sequence": 3, "resumed_at": 7, "rooms": rooms, "all_rooms": false, "reason": reason});
        let g = gap_of(&current.to_string());
        assert_eq!(
            (&g["rooms"], &g["all_rooms"], &g["reason"], &g["resumed_at"]),
            (
                &serde_json::json!([]),
                &serde_json::json!(true),
                &serde_json::json!("r".repeat(SHORT_TEXT)),
                &serde_json::json!(7)
            )
        );
    }

    /// A gap the bridge makes up names the rooms while they fit, to the byte (their length is
    /// kept, not measured by writing the gap), and a released room is not named.
    #[test]
    fn a_made_up_gap_names_the_rooms_while_they_fit_to_the_byte() {
        let rooms = ["r1", "é", "😀", "q\"\\", "r1", "gone", "\u{1}"];
        let data = serde_json::json!({"rooms": rooms, "reason": "x"}).to_string();
        let state = format!(
            r#"{{"connection_id":"{CID}","agent_id":"agent","scope":"single","filter":"all","rooms":[],"cursor":4}}"#
        );
        let gap_at = |max: usize| {
            let mut cfg = BridgeConfig::new("agent", CID);
            cfg.max_frame_bytes = max;
            let mut b = Bridge::new(cfg, 0);
            b.handle_open_response(1, 200, Some("text/event-stream"), "");
            // Short enough to be read under any limit the test sets.
            b.handle_sse(1, encode_event("connection_state", &state, None).as_bytes());
            assert!(b.is_attached());
            b.handle_sse(1, encode_event("subscription_changed", &data, None).as_bytes());
            b.handle_sse(
                1,
                encode_event("room_released", r#"{"room_id":"gone"}"#, None).as_bytes(),
            );
            drain(&mut b);
            b.handle_sse(2, "id: 9\nevent: message\ndata: {\n\n".as_bytes());
            let out = drain(&mut b);
            assert_eq!(out.len(), 1, "{out:?}");
            text(&out[0]).to_owned()
        };
        let named = gap_at(1 << 20);
        let v: serde_json::Value = serde_json::from_str(&named).unwrap();
        assert_eq!(
            (&v["data"]["rooms"], &v["data"]["all_rooms"]),
            (
                &serde_json::json!(["r1", "é", "😀", "q\"\\", "r1", "\u{1}"]),
                &serde_json::json!(false)
            )
        );
        assert_eq!(gap_at(named.len()), named);
        let v: serde_json::Value = serde_json::from_str(&gap_at(named.len() - 1)).unwrap();
        assert_eq!(
            (&v["data"]["rooms"], &v["data"]["all_rooms"]),
            (&serde_json::json!([]), &serde_json::json!(true))
        );
    }

    #[test]
    fn a_browser_that_is_behind_holds_back_the_stream_until_it_answers_a_ping() {
        let mut cfg = BridgeConfig::new("agent", CID);
        cfg.max_unacked_bytes = 4096;
        cfg.stream_idle_timeout_ms = 3_000;
        let mut b = Bridge::new(cfg, 0);
        b.handle_open_response(0, 200, Some("text/event-stream"), "");
        b.handle_sse(1, SSE_STATE.as_bytes());
        drain(&mut b);
        assert!(b.wants_sse());
        let mut seq = 0;
        while b.wants_sse() {
            // Bounded: a bridge that never holds back fails here instead of hanging.
            assert!(seq < 1_000, "the stream is never held back");
            seq += 1;
            b.handle_sse(2, message_frame(seq, "a body of some length").as_bytes());
            drain(&mut b);
        }
        let behind = b.unacked_bytes();
        assert!(behind > 4096 && behind < 4096 + 1024, "{behind}");
        // A pong before any ping answers nothing: still behind (and still alive).
        b.handle_client_text(3, r#"{"type":"pong","cursor":1}"#);
        drain(&mut b);
        assert!(!b.wants_sse());
        // The ping (at 2 s) goes out after everything sent.
        b.handle_timeout(2_001);
        let out = drain(&mut b);
        assert!(out.iter().any(|o| json(o)["event"] == "ping"), "{out:?}");
        assert!(!b.wants_sse());
        // Not reading on purpose is not the upstream's silence (3 s without a byte).
        b.handle_timeout(3_010);
        assert!(!b.is_closed() && drain(&mut b).is_empty());
        // The pong acknowledges all that was sent before the ping.
        b.handle_client_text(3_100, &format!(r#"{{"type":"pong","cursor":{seq}}}"#));
        drain(&mut b);
        assert_eq!(b.unacked_bytes(), 0);
        assert!(b.wants_sse());
        b.handle_client_close(3_200);
        assert!(!b.wants_sse(), "nothing more to read once closed");
    }

    /// A pong with no ping waiting for it (here, before the first ping) answers none: the next
    /// pong answers the first ping, and credits only what was sent before it, not the second's.
    #[test]
    fn a_pong_with_no_ping_to_answer_does_not_answer_a_later_ping() {
        let mut b = live(0); // attached at 1: pings at 2001, 4001
        b.handle_client_text(100, r#"{"type":"pong","cursor":4}"#);
        assert!(matches!(drain(&mut b)[..], [Output::Beat(_)]));
        b.handle_beat_response(200, 200, "{}");
        b.handle_sse(1_000, message_frame(5, "before the first ping").as_bytes());
        b.handle_timeout(2_001);
        drain(&mut b);
        let sent_at_first_ping = b.unacked_bytes();
        b.handle_sse(3_000, message_frame(6, "before the second ping").as_bytes());
        b.handle_timeout(4_001);
        drain(&mut b);
        let sent = b.unacked_bytes();
        b.handle_client_text(4_100, r#"{"type":"pong","cursor":5}"#);
        drain(&mut b);
        assert_eq!(b.unacked_bytes(), sent - sent_at_first_ping);
    }

    #[test]
    fn a_browser_answering_pings_late_is_credited_only_for_what_it_answered() {
        // A ping every 2 s with a message before it; a pong every 5.9 s (alive, but further
        // behind at each ping): 9 pings and 3 pongs, which answer pings 1 to 3 only.
        let mut b = Bridge::new(BridgeConfig::new("agent", CID), 0);
        b.handle_open_response(0, 200, Some("text/event-stream"), "");
        b.handle_sse(1, SSE_STATE.as_bytes());
        drain(&mut b);
        let mut seq = 0;
        let mut sent_at_ping = Vec::new();
        for t in (100..=18_100).step_by(100) {
            if t % 2_000 == 1_900 {
                seq += 1;
                b.handle_sse(t, message_frame(seq, "a body of some length").as_bytes());
            }
            if t % 5_900 == 0 {
                b.handle_client_text(t, &format!(r#"{{"type":"pong","cursor":{seq}}}"#));
            }
            b.handle_timeout(t);
            let mut pinged = false;
            while let Some(o) = b.poll_output() {
                match o {
                    Output::Beat(_) => b.handle_beat_response(t, 200, "{}"),
                    Output::ToClient(text) => pinged |= text.contains(r#""event":"ping""#),
                    Output::Close { code, reason } => panic!("closed {code} {reason}"),
                }
            }
            if pinged {
                // What the browser has been sent when this ping goes out, its own bytes included.
                sent_at_ping.push(b.unacked_bytes());
            }
        }
        assert!(!b.is_closed());
        assert_eq!(sent_at_ping.len(), 9, "{sent_at_ping:?}");
        // Three pongs: everything sent before ping 3 is acknowledged, nothing after it.
        let per_cycle = sent_at_ping[1] - sent_at_ping[0];
        assert!(
            b.unacked_bytes() >= 5 * per_cycle,
            "{} < 5 × {per_cycle}",
            b.unacked_bytes()
        );
    }

    #[test]
    fn past_the_mark_cap_a_pong_credits_no_more_than_its_ping() {
        // 1,025 pings unanswered (the last gets no mark), one pong, one more ping (which finds
        // room for its mark), then the other pongs: each credits at most what was sent before
        // the ping it answers, and the one for the unmarked ping not the next ping's bytes.
        let mut cfg = BridgeConfig::new("agent", CID);
        cfg.missed_pongs = 10_000;
        cfg.stream_idle_timeout_ms = 0;
        let mut b = Bridge::new(cfg, 0);
        b.handle_open_response(0, 200, Some("text/event-stream"), "");
        b.handle_sse(1, SSE_STATE.as_bytes());
        drain(&mut b);
        let mut sent_at_ping = Vec::new();
        let mut total_acked = 0;
        let pong = |b: &mut Bridge| {
            b.handle_client_text(3_000_000, r#"{"type":"pong","cursor":1}"#);
            while let Some(o) = b.poll_output() {
                if let Output::Beat(_) = o {
                    b.handle_beat_response(3_000_000, 200, "{}");
                }
            }
        };
        for seq in 1..=1_026u64 {
            if seq == 1_026 {
                pong(&mut b);
                total_acked = sent_at_ping[0];
            }
            b.handle_sse(seq * 2_000 - 1, message_frame(seq, "a body").as_bytes());
            b.handle_timeout(seq * 2_000 + 1);
            drain(&mut b);
            sent_at_ping.push(b.unacked_bytes() + total_acked);
            if seq == 1_025 {
                assert_eq!(b.ping_marks.len(), 1_024, "the 1,025th ping keeps no mark");
            }
        }
        let total = b.unacked_bytes() + total_acked;
        for (k, sent) in sent_at_ping.iter().enumerate().skip(1) {
            pong(&mut b);
            let acked = total - b.unacked_bytes();
            assert!(acked <= *sent, "pong {}: acked {acked} > {sent}", k + 1);
        }
        assert_eq!(b.unacked_bytes(), 0, "the last pong answers the last ping");
    }

    /// `max_pending_bytes` bounds what waits, to the byte: frames that reach it exactly are
    /// queued, one byte more closes; and a frame larger than the bound is queued when nothing
    /// waits (it could never be sent otherwise).
    #[test]
    fn max_pending_bytes_is_reached_to_the_byte_and_a_lone_frame_passes() {
        let bridge = |max: usize| {
            let mut b = live(0);
            b.cfg.max_pending_bytes = max;
            b
        };
        let frames = [message_frame(5, "first"), message_frame(6, "second")];
        let mut b = bridge(usize::MAX);
        let lens = frames
            .iter()
            .map(|f| {
                b.handle_sse(2, f.as_bytes());
                text(&drain(&mut b)[0]).len()
            })
            .collect::<Vec<_>>();

        let mut b = bridge(lens[0] + lens[1]);
        for f in &frames {
            b.handle_sse(2, f.as_bytes());
        }
        assert!(!b.is_closed());
        assert_eq!(drain(&mut b).len(), 2);

        let mut b = bridge(lens[0] + lens[1] - 1);
        for f in &frames {
            b.handle_sse(2, f.as_bytes());
        }
        let out = drain(&mut b);
        assert_eq!(out.len(), 2, "{out:?}");
        assert_eq!(
            out[1],
            Output::Close {
                code: 1011,
                reason: format!("{} bytes wait for the browser", lens[0])
            }
        );

        let mut b = bridge(lens[0] - 1);
        b.handle_sse(2, frames[0].as_bytes());
        assert!(!b.is_closed());
        assert_eq!(drain(&mut b).len(), 1);
    }

    #[test]
    fn a_worker_that_does_not_drain_is_bounded() {
        let mut cfg = BridgeConfig::new("agent", CID);
        cfg.max_pending_bytes = 4096;
        let mut b = Bridge::new(cfg, 0);
        b.handle_open_response(0, 200, Some("text/event-stream"), "");
        b.handle_sse(0, SSE_STATE.as_bytes());
        for seq in 1..200 {
            b.handle_sse(1, message_frame(seq, "a body of some length").as_bytes());
        }
        assert!(b.is_closed());
        let out = drain(&mut b);
        let bytes: usize = out
            .iter()
            .map(|o| match o {
                Output::ToClient(t) => t.len(),
                _ => 0,
            })
            .sum();
        assert!(bytes <= 4096, "{bytes}");
        assert!(matches!(out.last(), Some(Output::Close { code: 1011, .. })));
    }
}
