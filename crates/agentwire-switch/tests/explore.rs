//! Every order of driver inputs, not random ones, for a small scope: from a fresh connection,
//! each sequence up to a depth over the driver's alphabet (the socket's outcomes, the server's
//! frames fitting what it has sent on that socket, beat answers, `handle_timeout` at
//! `poll_timeout()` or 10 s late, the user's close, `reconnect_now` and `set_declared_rooms`),
//! each step checked against what `connection`'s docs and docs/protocols/switch.md promise. Two
//! drivers: a strict one drains both queues after every input, as the docs ask; a lazy one
//! polls one transmit, one event or both queues as steps of their own, at any point (so its
//! socket's input may come while a reopen's open waits unpolled behind that socket's close:
//! taken as that old socket's, as the docs say). Four
//! configurations: WebSocket, SSE and auto (reopening until attached, one queued event at
//! most, so the overflow and its reopen are in reach), and WebSocket stopping at the first
//! failed open; then WebSocket and SSE from an attached connection (beats in reach), a step
//! less deep. Checked:
//!
//! - no panic;
//! - a `Transmit::Open` only when the driver holds no socket, with the connection `Opening`,
//!   from no earlier than the last event surfaced, without a room released live and with the
//!   rooms declared since; a pong, a beat or a close only for the driver's open socket, none
//!   after the driver reported it closed (or its open failed) or took its close; after
//!   `Stopped` nothing but that socket's close;
//! - no event after `Stopped`, at most one, and when drained a stopped connection gave one; no
//!   event while a pong waits; `Connected` resumed only after the first;
//! - domain events in order from the server (which replays from the open's `start_from`): each
//!   the one after the last, or carrying a gap;
//! - `poll_timeout` `None` when stopped, `Some` while opening, attaching, live or in backoff;
//!   no timer due again at once, twice;
//! - drained, the engine and the driver agree on the socket: `Opening` with an open not reported
//!   yet, `Attaching`/`Live` with one reported open, none held in `Backoff` or `Stopped`.
//!
//! The failures are printed shortest first, one per violation. The defaults (288,000 sequences)
//! take about 12 s of CPU in a debug build, in three tests the harness runs side by side;
//! deeper: `EXPLORE_DEPTH=6 EXPLORE_STRICT_DEPTH=6 cargo test -p agentwire-switch --test explore
//! -- --nocapture` (some minutes).

mod common;

use agentwire_core::ErrorKind;
use agentwire_switch::connection::{ConnectionConfig, Event, State, Transmit, Transport, Wire};
use agentwire_switch::SwitchError;
use agentwire_test_alloc::explore::quietly;
use common::*;
use std::collections::BTreeMap;

/// Steps of the lazy driver after `start` (each sequence starts with it).
const DEPTH: usize = 5;
/// Inputs of the strict driver after `start`, each followed by a full drain.
const STRICT_DEPTH: usize = 5;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Sym {
    PollT,
    PollE,
    Drain,
    Timeout,
    /// The driver late: `handle_timeout` 10 s past the next deadline (every timer due by then).
    Late,
    Close,
    ReconnectNow,
    Declare,
    Open,
    OpenFailed(u16),
    OpenUnusable,
    SockClose(u16),
    F(Frame),
    BeatOk,
    BeatFail,
    Beat409,
    /// The latest beat answered 200 before the earlier ones.
    LatestBeatOk,
    Beat401,
    Beat500,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Frame {
    State,
    Event,
    Dup,
    Ping,
    Gap,
    Released,
    Resume,
    TakenOver,
    Garbage,
    /// Not JSON, and no event (before `connection_state`).
    Junk,
    Refused(u16),
    /// SSE: an event, an eviction to resume and another event, in one chunk.
    Burst,
}

#[derive(Clone, Copy, Debug)]
struct Sock {
    wire: Wire,
    opened: bool,
    attached: bool,
    /// The server refused or evicted on it: only its close comes next.
    ending: bool,
    /// Where its open asked to start (`None`: the head).
    start_from: Option<u64>,
}

struct Model {
    d: Driver,
    sock: Option<Sock>,
    /// Beats polled and not answered.
    beats: Vec<u64>,
    srv: Server,
    stopped_events: u32,
    last_delivered: Option<u64>,
    /// A `Connected` was surfaced.
    attached_once: bool,
    /// `room_released` for ROOM read since the last `connection_state` (which lists it).
    released: bool,
    /// `set_declared_rooms(["r2"])` since the last `connection_state` (which replaces the list:
    /// the server's last word), and whether a step that may queue an open (a timer, a
    /// `reconnect_now`) came after it: an open queued before it was built without it.
    declared: Option<bool>,
    /// Pongs queued (a ping read live on the WebSocket) and not polled: events wait for them.
    pongs: u32,
    /// Handle_timeouts in a row at the same `now`.
    same_now_timeouts: u32,
    /// The step changed nothing (an empty poll): its subtree repeats a shorter sequence's.
    noop: bool,
}

/// The server: its events are 1..=head; it sends the current socket's in order from where its
/// open asked (`next` is the last one sent there), and says when it lost some (a gap).
#[derive(Clone, Copy, Debug, Default)]
struct Server {
    head: u64,
    next: u64,
}

impl Server {
    fn advance(&mut self) -> u64 {
        self.next += 1;
        self.head = self.head.max(self.next);
        self.next
    }
}

fn ws_frame(f: Frame, srv: &mut Server) -> Option<String> {
    Some(match f {
        Frame::State => connection_state(Some(3), srv.next, &[ROOM]),
        Frame::Event => message(srv.advance()),
        Frame::Dup if srv.next > 0 => message(srv.next),
        Frame::Dup => return None,
        Frame::Ping => PING.to_owned(),
        Frame::Gap => {
            let from = srv.next;
            srv.head = srv.head.max(from) + 2;
            srv.next = srv.head;
            gap(from, srv.head)
        }
        Frame::Released => format!(r#"{{"event":"room_released","data":{{"room_id":"{ROOM}","session_id":null}}}}"#),
        Frame::Resume => evicted("heartbeat_lapsed"),
        Frame::TakenOver => evicted("taken_over"),
        Frame::Garbage => format!(r#"{{"event":"message","id":{},"data":{{"#, srv.advance()),
        Frame::Refused(409) => {
            r#"{"event":"refused","data":{"status":409,"detail":{"code":"taken_over","message":"m"}}}"#.to_owned()
        }
        Frame::Burst => unreachable!("SSE only"),
        Frame::Junk => "}{".to_owned(),
        Frame::Refused(s) => format!(r#"{{"event":"refused","data":{{"status":{s},"detail":"busy"}}}}"#),
    })
}

/// The same frame as an SSE event (`Ping` is a keepalive comment).
fn sse_frame(f: Frame, srv: &mut Server) -> Option<String> {
    if f == Frame::Ping {
        return Some(": keepalive\n\n".to_owned());
    }
    if f == Frame::Junk {
        return Some("event: junk\ndata: }{\n\n".to_owned());
    }
    if f == Frame::Burst {
        let mut chunk = String::new();
        for f in [Frame::Event, Frame::Resume, Frame::Event] {
            chunk += &sse_frame(f, srv)?;
        }
        return Some(chunk);
    }
    let text = ws_frame(f, srv)?;
    let Ok(v) = serde_json::from_str::<serde_json::Value>(&text) else {
        return Some(format!("event: message\nid: {}\ndata: {{\n\n", srv.next));
    };
    let id = v.get("id").map(|id| format!("id: {id}\n")).unwrap_or_default();
    Some(format!(
        "{id}event: {}\ndata: {}\n\n",
        v["event"].as_str().unwrap(),
        v["data"]
    ))
}

impl Model {
    fn new(cfg: ConnectionConfig) -> Self {
        Model {
            d: Driver::new(cfg),
            sock: None,
            beats: Vec::new(),
            srv: Server::default(),
            stopped_events: 0,
            last_delivered: None,
            same_now_timeouts: 0,
            attached_once: false,
            pongs: 0,
            released: false,
            declared: None,
            noop: false,
        }
    }

    fn alphabet(&self, auto: bool, strict: bool) -> Vec<Sym> {
        let mut out = if strict {
            Vec::new()
        } else {
            vec![Sym::PollT, Sym::PollE, Sym::Drain]
        };
        if self.d.conn.poll_timeout().is_some() {
            out.extend([Sym::Timeout, Sym::Late]);
        }
        out.push(Sym::Close);
        if self.d.conn.state() == State::Backoff {
            out.push(Sym::ReconnectNow);
        }
        out.push(Sym::Declare);
        if let Some(s) = self.sock {
            if s.ending {
                out.push(Sym::SockClose(if s.attached { 1000 } else { 4503 }));
            } else if !s.opened {
                out.extend([
                    Sym::Open,
                    Sym::OpenFailed(503),
                    Sym::OpenFailed(502),
                    Sym::OpenFailed(409),
                    Sym::OpenUnusable,
                    Sym::SockClose(1006),
                ]);
                if auto {
                    out.push(Sym::OpenFailed(403));
                }
                out.push(Sym::F(Frame::State)); // input before handle_open: the open
            } else if !s.attached {
                out.extend([Sym::SockClose(1006), Sym::F(Frame::State), Sym::F(Frame::Junk)]);
                if s.wire == Wire::WebSocket {
                    out.extend([Sym::F(Frame::Refused(503)), Sym::F(Frame::Refused(409))]);
                }
            } else {
                out.extend([Sym::SockClose(1006), Sym::SockClose(4409)]);
                if s.wire == Wire::Sse {
                    out.push(Sym::F(Frame::Burst));
                }
                for f in [
                    Frame::Event,
                    Frame::Dup,
                    Frame::Ping,
                    Frame::Gap,
                    Frame::Released,
                    Frame::Resume,
                    Frame::TakenOver,
                    Frame::Garbage,
                ] {
                    out.push(Sym::F(f));
                }
            }
        }
        if !self.beats.is_empty() {
            out.extend([Sym::BeatOk, Sym::BeatFail, Sym::Beat409, Sym::Beat401, Sym::Beat500]);
            if self.beats.len() > 1 {
                out.push(Sym::LatestBeatOk);
            }
        }
        out
    }

    fn poll_t(&mut self) -> Result<bool, String> {
        let Some(t) = self.d.conn.poll_transmit() else {
            return Ok(false);
        };
        let state = self.d.conn.state();
        if self.stopped_events > 0 && !matches!(t, Transmit::Close { .. }) {
            return Err(format!("a transmit after Stopped was polled: {t:?}"));
        }
        match &t {
            Transmit::Open(o) => {
                if let Some(s) = self.sock {
                    return Err(format!("an Open while the driver holds a socket ({s:?})"));
                }
                if state != State::Opening {
                    return Err(format!("an Open polled in state {state:?}"));
                }
                let path = &o.request.path;
                let from = path
                    .split(['?', '&'])
                    .find_map(|kv| kv.strip_prefix("start_from="))
                    .map(|v| v.parse::<u64>().unwrap());
                if let (Some(l), f) = (self.last_delivered, from) {
                    if f.is_none_or(|f| f < l) {
                        return Err(format!("an open from {f:?} after event {l} surfaced: {path}"));
                    }
                }
                if self.released && path.contains(ROOM) {
                    return Err(format!("an open declares a released room: {path}"));
                }
                if self.declared == Some(true) && !path.contains("rooms=r2") {
                    return Err(format!("an open leaves out the declared room: {path}"));
                }
                self.sock = Some(Sock {
                    wire: o.wire,
                    opened: false,
                    attached: false,
                    ending: false,
                    start_from: from,
                });
            }
            Transmit::Text(_) => match self.sock {
                Some(s) if s.wire == Wire::WebSocket && s.opened => self.pongs = self.pongs.saturating_sub(1),
                s => return Err(format!("a pong for no open WebSocket (driver socket {s:?})")),
            },
            Transmit::Http { id, .. } => {
                match self.sock {
                    Some(s) if s.wire == Wire::Sse && s.opened => {}
                    s => return Err(format!("a beat for no open stream (driver socket {s:?})")),
                }
                self.beats.push(*id);
            }
            Transmit::Close { .. } => {
                if self.sock.is_none() {
                    return Err("a Close for no socket (the driver holds none)".into());
                }
                self.sock = None;
            }
        }
        Ok(true)
    }

    fn poll_e(&mut self) -> Result<bool, String> {
        let before = self.d.conn.poll_timeout();
        let Some(e) = self.d.conn.poll_event() else {
            return Ok(self.d.conn.poll_timeout() != before);
        };
        if self.stopped_events > 0 {
            return Err(format!("an event after Stopped: {e:?}"));
        }
        if self.pongs > 0 {
            return Err(format!("an event while {} pongs wait: {e:?}", self.pongs));
        }
        match &e {
            Event::Stopped { .. } => self.stopped_events += 1,
            Event::Connected { resumed, .. } => {
                if *resumed != self.attached_once {
                    return Err(format!(
                        "Connected resumed: {resumed} (attached before: {})",
                        self.attached_once
                    ));
                }
                self.attached_once = true;
            }
            Event::Event { event, gap } => {
                if !self.attached_once {
                    return Err(format!("event {} before Connected", event.sequence));
                }
                let last = self.last_delivered.unwrap_or(0);
                if event.sequence <= last || (event.sequence > last + 1 && gap.is_none()) {
                    return Err(format!(
                        "event {} surfaced after {last} (gap: {})",
                        event.sequence,
                        gap.is_some()
                    ));
                }
                self.last_delivered = Some(event.sequence);
            }
            _ => {}
        }
        Ok(true)
    }

    fn drain(&mut self) -> Result<bool, String> {
        let mut any = false;
        for _ in 0..100 {
            let mut round = false;
            while self.poll_t()? {
                round = true;
            }
            while self.poll_e()? {
                round = true;
            }
            if !round {
                self.quiescent()?;
                return Ok(any);
            }
            any = true;
        }
        Err("the queues never drain (100 rounds)".into())
    }

    /// Both queues empty: the engine and the driver agree on the socket.
    fn quiescent(&self) -> Result<(), String> {
        let state = self.d.conn.state();
        let ok = match (state, self.sock) {
            (State::Opening, Some(s)) => !s.opened,
            (State::Attaching | State::Live, Some(s)) => s.opened,
            (State::Backoff | State::Stopped, None) => true,
            _ => false,
        };
        if !ok {
            return Err(format!("drained in {state:?} while the driver holds {:?}", self.sock));
        }
        if state == State::Stopped && self.stopped_events != 1 {
            return Err(format!(
                "drained and stopped with {} Stopped events",
                self.stopped_events
            ));
        }
        Ok(())
    }

    fn every_step(&self) -> Result<(), String> {
        let state = self.d.conn.state();
        let timer = self.d.conn.poll_timeout();
        match state {
            State::Stopped | State::Idle if timer.is_some() => Err(format!("{state:?} with a timer at {timer:?}")),
            State::Opening | State::Attaching | State::Live | State::Backoff if timer.is_none() => {
                Err(format!("{state:?} with no timer"))
            }
            _ if self.stopped_events > 1 => Err("two Stopped events".into()),
            _ => Ok(()),
        }
    }

    fn step(&mut self, sym: Sym) -> Result<(), String> {
        let now = self.d.now;
        self.noop = false;
        if sym != Sym::Timeout {
            self.same_now_timeouts = 0;
        }
        if matches!(sym, Sym::Timeout | Sym::Late | Sym::ReconnectNow) && self.declared.is_some() {
            self.declared = Some(true);
        }
        let wire = self.sock.map(|s| s.wire);
        let c = &mut self.d.conn;
        match sym {
            Sym::PollT => self.noop = !self.poll_t()?,
            Sym::PollE => self.noop = !self.poll_e()?,
            Sym::Drain => self.noop = !self.drain()?,
            Sym::Timeout => {
                let at = c.poll_timeout().expect("offered with a timer");
                if at <= now {
                    self.same_now_timeouts += 1;
                    if self.same_now_timeouts > 2 {
                        return Err(format!("a timer stays due at {now}"));
                    }
                } else {
                    self.same_now_timeouts = 0;
                }
                self.d.now = now.max(at);
                self.d.conn.handle_timeout(self.d.now);
            }
            Sym::Late => {
                self.d.now = c.poll_timeout().expect("offered with a timer").max(now) + 10_000;
                self.d.conn.handle_timeout(self.d.now);
            }
            Sym::Close => c.close(now),
            Sym::ReconnectNow => {
                c.reconnect_now(now);
            }
            Sym::Declare => {
                c.set_declared_rooms(vec!["r2".to_owned()]).map_err(|e| e.message)?;
                self.declared = Some(false);
            }
            Sym::Open => {
                c.handle_open(now);
                self.sock.as_mut().unwrap().opened = true;
            }
            Sym::OpenFailed(status) => {
                let body = if status == 409 {
                    r#"{"detail":"taken over","code":"taken_over"}"#
                } else {
                    ""
                };
                c.handle_open_failed(now, Some(status), body);
                self.sock = None;
                self.pongs = 0;
            }
            Sym::OpenUnusable => {
                c.handle_open_unusable(now, SwitchError::local(ErrorKind::Protocol, "bad certificate"));
                self.sock = None;
                self.pongs = 0;
            }
            Sym::SockClose(code) => {
                c.handle_close(now, code, "");
                self.sock = None;
                self.pongs = 0;
            }
            Sym::F(f) => {
                let sock = self.sock.as_mut().unwrap();
                sock.opened = true;
                match f {
                    Frame::State => {
                        sock.attached = true;
                        self.srv.next = sock.start_from.unwrap_or(self.srv.head);
                        self.released = false;
                        self.declared = None;
                    }
                    // Read by a live connection: one that closed the socket drops what comes after
                    // (a release in flight then is lost, whatever the order of polls).
                    Frame::Released => self.released |= self.d.conn.state() == State::Live,
                    Frame::Ping if sock.wire == Wire::WebSocket && self.d.conn.state() == State::Live => {
                        self.pongs += 1
                    }
                    Frame::Refused(_) | Frame::Resume | Frame::TakenOver | Frame::Burst => sock.ending = true,
                    _ => {}
                }
                match wire {
                    Some(Wire::WebSocket) => {
                        let text = ws_frame(f, &mut self.srv);
                        match text {
                            Some(t) => self.d.conn.handle_text(now, &t),
                            None => self.noop = true,
                        }
                    }
                    _ => match sse_frame(f, &mut self.srv) {
                        Some(t) => self.d.conn.handle_bytes(now, t.as_bytes()),
                        None => self.noop = true,
                    },
                }
            }
            Sym::BeatOk | Sym::BeatFail | Sym::Beat409 | Sym::LatestBeatOk | Sym::Beat401 | Sym::Beat500 => {
                let id = match sym {
                    Sym::LatestBeatOk => self.beats.pop().unwrap(),
                    _ => self.beats.remove(0),
                };
                let ok = r#"{"ok":true,"rooms":[]}"#;
                match sym {
                    Sym::BeatOk | Sym::LatestBeatOk => c.handle_http_response(now, id, 200, ok),
                    Sym::BeatFail => c.handle_http_failed(now, id, "reset"),
                    Sym::Beat401 => c.handle_http_response(now, id, 401, r#"{"detail":"bad key"}"#),
                    Sym::Beat500 => c.handle_http_response(now, id, 500, ""),
                    _ => c.handle_http_response(now, id, 409, r#"{"detail":"no stream","code":"no_stream"}"#),
                }
            }
        }
        self.every_step()
    }
}

fn start(cfg: &ConnectionConfig) -> Model {
    let mut m = Model::new(cfg.clone());
    m.d.conn.start(m.d.now).unwrap();
    m
}

/// The model after `seq`, or the violation (a panic included) and how many steps in.
fn run(cfg: &ConnectionConfig, seq: &[Sym]) -> Result<Model, (usize, String)> {
    let mut m = start(cfg);
    for (i, &sym) in seq.iter().enumerate() {
        match quietly(|| m.step(sym)) {
            Ok(Ok(())) => {}
            Ok(Err(e)) => return Err((i + 1, e)),
            Err(msg) => return Err((i + 1, format!("panic: {msg}"))),
        }
    }
    Ok(m)
}

struct Explorer<'a> {
    cfg: &'a ConnectionConfig,
    auto: bool,
    /// Every input is followed by a full drain, as the docs ask of a driver.
    strict: bool,
    depth: usize,
    /// Steps of the prefix every sequence starts with.
    prefix: usize,
    sequences: u64,
    /// The shortest sequence per violation (its text with numbers blanked).
    failures: BTreeMap<String, (Vec<Sym>, String)>,
}

impl Explorer<'_> {
    fn explore(&mut self, seq: &mut Vec<Sym>, m: &Model) {
        // Strict: each input and its drain.
        let steps = (seq.len() - self.prefix) / if self.strict { 2 } else { 1 };
        if steps == self.depth {
            self.sequences += 1;
            return;
        }
        for sym in m.alphabet(self.auto, self.strict) {
            let n = seq.len();
            seq.push(sym);
            if self.strict {
                seq.push(Sym::Drain);
            }
            match run(self.cfg, seq) {
                // An empty poll: the same as the sequence without it.
                Ok(child) if child.noop && !self.strict => self.sequences += 1,
                Ok(child) => self.explore(seq, &child),
                Err((at, e)) => {
                    self.sequences += 1;
                    let key: String = e.chars().filter(|c| !c.is_ascii_digit()).collect();
                    let shorter = self.failures.get(&key).is_none_or(|(s, _)| s.len() > at);
                    if shorter {
                        self.failures.insert(key, (seq[..at].to_vec(), e));
                    }
                }
            }
            seq.truncate(n);
        }
    }
}

/// Every sequence of `depth` steps after `start` and `prefix` (the strict driver drains after
/// `start` and after each step of the prefix).
fn explore(name: &str, cfg: ConnectionConfig, strict: bool, prefix: &[Sym], depth: usize) -> Vec<String> {
    let auto = cfg.transport == Transport::Auto;
    let mut seq = Vec::new();
    for &sym in [Sym::Drain].iter().filter(|_| strict).chain(prefix) {
        seq.push(sym);
        if strict && sym != Sym::Drain {
            seq.push(Sym::Drain);
        }
    }
    let mut x = Explorer {
        cfg: &cfg,
        auto,
        strict,
        depth,
        prefix: seq.len(),
        sequences: 0,
        failures: BTreeMap::new(),
    };
    let root = run(&cfg, &seq).unwrap_or_else(|(_, e)| panic!("{e}"));
    x.explore(&mut seq, &root);
    let name = format!("{name}{}", if strict { " (strict)" } else { "" });
    eprintln!("{name}: depth {depth}, {} sequences", x.sequences);
    let mut failures: Vec<_> = x.failures.into_values().collect();
    failures.sort_by_key(|(s, _)| s.len());
    failures
        .into_iter()
        .map(|(s, e)| {
            let s: Vec<Sym> = s.into_iter().filter(|&s| !strict || s != Sym::Drain).collect();
            format!("{name}: start, {s:?}: {e}")
        })
        .collect()
}

fn base(transport: Transport) -> ConnectionConfig {
    let mut cfg = config(transport);
    // Reopen until attached (the default stops at the first failed open), and one queued event
    // at most, so that the overflow and its reopen are in reach.
    cfg.connect_attempts = None;
    cfg.max_queued_events = 1;
    cfg.missed_heartbeats = 2;
    cfg
}

/// The depths: the lazy driver's and the strict one's, `EXPLORE_DEPTH` and
/// `EXPLORE_STRICT_DEPTH` when set.
fn depths() -> (usize, usize) {
    let var = |name: &str, default| std::env::var(name).ok().and_then(|d| d.parse().ok()).unwrap_or(default);
    (var("EXPLORE_DEPTH", DEPTH), var("EXPLORE_STRICT_DEPTH", STRICT_DEPTH))
}

/// From a fresh connection, both drivers, for each configuration.
fn from_the_start(configs: &[(&str, ConnectionConfig)]) {
    let (depth, strict_depth) = depths();
    let mut failures = Vec::new();
    for (name, cfg) in configs {
        failures.extend(explore(name, cfg.clone(), true, &[], strict_depth));
        failures.extend(explore(name, cfg.clone(), false, &[], depth));
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

// Three tests, so that the harness runs them side by side.

#[test]
fn every_interleaving_over_a_websocket_keeps_the_promises() {
    let mut connect_once = base(Transport::WebSocket);
    connect_once.connect_attempts = Some(1);
    from_the_start(&[
        ("websocket", base(Transport::WebSocket)),
        ("connect_once", connect_once),
    ]);
}

#[test]
fn every_interleaving_over_sse_and_auto_keeps_the_promises() {
    from_the_start(&[("sse", base(Transport::Sse)), ("auto", base(Transport::Auto))]);
}

/// From an attached connection, so that beats and a live socket's orders are in reach, one step
/// less (its alphabet is the largest).
#[test]
fn every_interleaving_from_an_attached_connection_keeps_the_promises() {
    let (depth, strict_depth) = depths();
    let (depth, strict_depth) = (depth - 1, strict_depth - 1);
    let mut failures = Vec::new();
    for transport in [Transport::WebSocket, Transport::Sse] {
        let cfg = base(transport);
        let name = format!("{transport:?} attached");
        failures.extend(explore(&name, cfg.clone(), true, &[Sym::F(Frame::State)], strict_depth));
        let prefix = [Sym::PollT, Sym::F(Frame::State)];
        failures.extend(explore(&name, cfg, false, &prefix, depth));
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
