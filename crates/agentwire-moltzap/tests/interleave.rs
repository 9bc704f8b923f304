//! Every order of the driver's inputs up to a small depth, from a fresh session: the socket's
//! open and close, the server's frames (a result fitting the last request sent, or the last made
//! before its frame left, the connect's HelloOk included; a malformed answer; a `-32600`
//! without `_tag`, which `auto` falls back on; an `id: null` error;
//! a push), a WebSocket ping, the time (`handle_timeout` at `poll_timeout`, a step of the
//! clock), the user's commands (connect, a call, a cancel of the last id, close) and a
//! `poll_transmit`. After every step the session's promises are checked (the session docs,
//! `docs/protocols/moltzap.md`, DESIGN.md's engine contract); a broken one is reported with the
//! shortest sequence found.
//! Deeper by hand: `INTERLEAVE_DEPTH=1 cargo test -p <crate> --test <this> -- --nocapture` explores
//! one input further (each level multiplies the run time by about eight).

use agentwire_core::ErrorKind;
use agentwire_moltzap::{
    Credentials, Event, Generation, GenerationChoice, Outgoing, Session, SessionConfig, SessionState,
};
use agentwire_test_alloc::explore::{explore, frame_text, Fail, Verdict};
use std::collections::HashMap;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum A {
    Open,
    Close,
    Connect,
    Answer,
    Early,
    Bad,
    Refuse,
    NullErr,
    Push,
    Binary,
    Ping,
    Timeout,
    Late,
    Tick,
    Call,
    Cancel,
    UserClose,
    Poll,
}

const ALL: [A; 18] = [
    A::Open,
    A::Close,
    A::Connect,
    A::Answer,
    A::Early,
    A::Bad,
    A::Refuse,
    A::NullErr,
    A::Push,
    A::Binary,
    A::Ping,
    A::Timeout,
    A::Late,
    A::Tick,
    A::Call,
    A::Cancel,
    A::UserClose,
    A::Poll,
];

/// A user id: a call's or a connect's.
struct Id {
    connect: bool,
    /// When its timer (1 s for a call, 1.5 s for a connect) started: made, or `auto`'s fallback.
    since: u64,
    socket: u32,
    polled: bool,
    ended: bool,
}

struct Run {
    s: Session,
    now: u64,
    /// Sockets opened so far; the current one is `socket`.
    socket: u32,
    open: bool,
    /// The driver reported this socket closed.
    socket_closed: bool,
    disconnected: bool,
    connected: bool,
    close_polled: bool,
    missed_reported: bool,
    last_sent: Option<String>,
    ids: HashMap<String, Id>,
    order: Vec<String>,
}

impl Run {
    fn new(generation: GenerationChoice) -> Run {
        let cfg = SessionConfig {
            generation,
            request_timeout_ms: 1000,
            handshake_timeout_ms: 1500,
            // Three intervals (2.1 s) past the probe's deadline (0.8 + 1 s), so a late wake-up
            // finds both due.
            ping_interval_ms: Some(700),
            idle_probe_ms: 800,
            ..SessionConfig::default()
        };
        Run {
            s: Session::new(cfg),
            now: 1_000_000,
            socket: 0,
            open: false,
            socket_closed: false,
            disconnected: false,
            connected: false,
            close_polled: false,
            missed_reported: false,
            last_sent: None,
            ids: HashMap::new(),
            order: Vec::new(),
        }
    }

    fn frame(&self, body: &str) -> String {
        let t = match self.s.generation() {
            Generation::Released => r#","type":"response""#,
            _ => "",
        };
        format!(r#"{{"jsonrpc":"2.0"{t},{body}}}"#)
    }

    fn step(&mut self, a: A) -> Result<bool, Fail> {
        let now = self.now;
        let mut timed = false;
        if matches!(
            a,
            A::Answer | A::Early | A::Bad | A::Refuse | A::NullErr | A::Push | A::Binary | A::Ping
        ) && !self.open
        {
            return Ok(false); // frames come on an open socket
        }
        match a {
            A::Open => {
                if self.open && !self.socket_closed {
                    return Ok(false); // one socket at a time
                }
                self.s.handle_open(now);
                self.socket += 1;
                self.open = true;
                self.socket_closed = false;
                self.disconnected = false;
                self.connected = false;
                self.close_polled = false;
                self.missed_reported = false;
                self.last_sent = None;
            }
            A::Close => {
                self.s.handle_close(now, 1006, "gone");
                self.socket_closed = true;
            }
            A::Connect => {
                if let Ok(id) = self.s.connect(now, Credentials::AgentKey("moltzap_agent_k".into())) {
                    self.issue(id, true);
                }
            }
            A::Answer | A::Early | A::Bad | A::Refuse => {
                // Early: the last id the user had, its frame polled or not.
                let target = if a == A::Early {
                    self.order.last()
                } else {
                    self.last_sent.as_ref()
                };
                let Some(id) = target.cloned() else { return Ok(false) };
                let body = match a {
                    A::Answer | A::Early => r#"{"protocolVersion":"2026.425.3","agentId":"a"}"#.to_string(),
                    _ => String::new(),
                };
                let text = match a {
                    A::Bad => self.frame(&format!(r#""id":"{id}","result":1,"error":{{"code":1,"message":"m"}}"#)),
                    A::Answer | A::Early if self.ids.get(&id).is_some_and(|i| i.connect) => {
                        let hello = match self.s.generation() {
                            Generation::Released => body,
                            _ => "{}".into(),
                        };
                        self.frame(&format!(r#""id":"{id}","result":{hello}"#))
                    }
                    A::Answer | A::Early => self.frame(&format!(r#""id":"{id}","result":{{"ok":1}}"#)),
                    _ => self.frame(&format!(
                        r#""id":"{id}","error":{{"code":-32600,"message":"Invalid request frame"}}"#
                    )),
                };
                let before = self.s.generation();
                self.s.handle_text(now, &text);
                if before != self.s.generation() {
                    // `auto` fell back: the connect's id goes again, in an `auth/connect`.
                    let now = self.now;
                    self.ids
                        .get_mut(&id)
                        .into_iter()
                        .for_each(|i| (i.polled, i.since) = (false, now));
                }
            }
            A::NullErr => {
                let text = self.frame(r#""id":null,"error":{"code":-32700,"message":"Invalid JSON"}"#);
                self.s.handle_text(now, &text);
            }
            A::Push => {
                let text = match self.s.generation() {
                    Generation::Released => r#"{"jsonrpc":"2.0","type":"event","event":"x/y","data":{}}"#,
                    _ => r#"{"jsonrpc":"2.0","method":"x/y","params":{}}"#,
                };
                self.s.handle_text(now, text);
            }
            A::Ping => {
                self.s.handle_ping(now);
                self.missed_reported = false;
            }
            A::Binary => self.s.handle_binary(now, &[0xff, b'{']),
            A::Timeout => {
                let Some(t) = self.s.poll_timeout() else {
                    return Ok(false);
                };
                self.now = self.now.max(t);
                self.s.handle_timeout(self.now);
                timed = true;
            }
            A::Late => {
                // A driver woken late (a hidden tab): past several deadlines at once.
                self.now += 1500;
                self.s.handle_timeout(self.now);
                timed = true;
            }
            A::Tick => self.now += 600,
            A::Call => {
                if let Ok(id) = self.s.call(now, "messages/send", Some("{}")) {
                    self.issue(id, false);
                }
            }
            A::Cancel => {
                let Some(id) = self.order.last().cloned() else {
                    return Ok(false);
                };
                let pending = !self.ids[&id].ended;
                if self.s.cancel(&id) != pending {
                    return Err(("cancel's answer is not whether the id was pending", id));
                }
            }
            A::UserClose => self.s.close(1000, "bye"),
            A::Poll => {
                let Some(out) = self.s.poll_transmit() else {
                    return Ok(false);
                };
                self.polled(out)?;
            }
        }
        self.check_events(a)?;
        self.check_state(timed)?;
        Ok(true)
    }

    fn issue(&mut self, id: String, connect: bool) {
        let socket = self.socket;
        let entry = Id {
            connect,
            since: self.now,
            socket,
            polled: false,
            ended: false,
        };
        self.ids.insert(id.clone(), entry);
        self.order.push(id);
    }

    fn polled(&mut self, out: Outgoing) -> Result<(), Fail> {
        if !self.open {
            return Err(("a frame is handed out with no socket open", format!("{out:?}")));
        }
        let Some(text) = frame_text(out, self.socket_closed, &mut self.close_polled)? else {
            return Ok(());
        };
        let v: serde_json::Value =
            serde_json::from_str(&text).map_err(|e| ("a frame that is not JSON", e.to_string()))?;
        let id = v["id"].as_str().unwrap_or("").to_string();
        let method = v["method"].as_str().unwrap_or("");
        let connect = method.ends_with("connect");
        if !connect && !self.connected {
            return Err(("a request frame before Connected", text));
        }
        if let Some(i) = self.ids.get_mut(&id) {
            if i.socket != self.socket {
                return Err(("a frame of an earlier socket", id));
            }
            if i.ended || (i.polled && !connect) {
                return Err(("a request's frame is handed out after it ended or twice", id));
            }
            i.polled = true;
        } else if method != "system/ping" {
            return Err(("a frame of a request nobody made", text));
        }
        self.last_sent = Some(id);
        Ok(())
    }

    fn check_events(&mut self, a: A) -> Result<(), Fail> {
        while let Some(ev) = self.s.poll_event() {
            if self.disconnected || !self.open {
                return Err(("an event with no socket open (after Disconnected)", format!("{ev:?}")));
            }
            let ended = match &ev {
                Event::Connected { id, .. } => {
                    if self.connected {
                        return Err(("a second Connected on one socket", id.clone()));
                    }
                    self.connected = true;
                    Some((id.clone(), None, true))
                }
                Event::ConnectFailed { id, error } => Some((id.clone(), Some(error.clone()), true)),
                Event::Response { id, .. } => Some((id.clone(), None, false)),
                Event::Failed { id, error } => Some((id.clone(), Some(error.clone()), false)),
                Event::MissedPings { .. } => {
                    if !self.connected || self.s.generation() != Generation::Current {
                        return Err(("MissedPings outside a connected current session", format!("{a:?}")));
                    }
                    if self.missed_reported {
                        return Err(("MissedPings twice with no ping between", format!("{a:?}")));
                    }
                    self.missed_reported = true;
                    None
                }
                Event::Disconnected { code, .. } => {
                    // The driver's code; the user's close its own; a dead connection 1006.
                    let want = match a {
                        A::UserClose => 1000,
                        _ => 1006,
                    };
                    if *code != want {
                        return Err(("Disconnected with another code", format!("{a:?} {code}")));
                    }
                    if let Some(id) = self.order.iter().find(|id| !self.ids[*id].ended) {
                        return Err(("Disconnected while an id has not ended", id.clone()));
                    }
                    self.disconnected = true;
                    self.connected = false;
                    None
                }
                _ => None,
            };
            let Some((id, error, connect)) = ended else { continue };
            let Some(i) = self.ids.get_mut(&id) else {
                return Err(("a terminal event for an id the user never had", format!("{ev:?}")));
            };
            if i.ended || i.connect != connect {
                return Err(("an id ends twice, or as the wrong kind", format!("{ev:?}")));
            }
            i.ended = true;
            let Some(e) = error else { continue };
            if e.kind() == ErrorKind::Timeout && !matches!(a, A::Timeout | A::Late) {
                return Err(("a timeout outside handle_timeout", format!("{a:?} {e:?}")));
            }
            if e.kind() == ErrorKind::Timeout && self.now < due(i) {
                return Err(("a timeout before its time", format!("{} < {}", self.now, due(i))));
            }
            if matches!(e.kind(), ErrorKind::Closed | ErrorKind::Timeout | ErrorKind::Cancelled) {
                if e.unsent == i.polled {
                    return Err(("`unsent` is not whether the frame was polled", format!("{e:?}")));
                }
                if e.kind() != ErrorKind::Cancelled && e.error.retryable != (!i.polled || i.connect) {
                    return Err(("retryable is not (unsent or idempotent)", format!("{e:?}")));
                }
            }
        }
        Ok(())
    }

    fn check_state(&mut self, timed: bool) -> Result<(), Fail> {
        let s = &self.s;
        let closed = s.state() == SessionState::Closed;
        if closed != (!self.open || self.disconnected || self.socket_closed) {
            return Err(("state Closed is not the socket closed", format!("{:?}", s.state())));
        }
        if (s.state() == SessionState::Ready) != self.connected {
            return Err(("state Ready is not Connected", format!("{:?}", s.state())));
        }
        let pending: Vec<&String> = (self.order.iter())
            .filter(|id| !self.ids[*id].connect && !self.ids[*id].ended)
            .collect();
        let open = pending.len();
        if s.in_flight() != open {
            return Err((
                "in_flight is not the calls not ended",
                format!("{} vs {open}", s.in_flight()),
            ));
        }
        for id in pending {
            if s.unsent(id) == self.ids[id].polled {
                return Err(("unsent(id) is not whether its frame was polled", id.clone()));
            }
        }
        let soonest = (self.order.iter().map(|id| &self.ids[id]))
            .filter(|i| !i.ended)
            .map(due)
            .min();
        if let (Some(due), Some(t)) = (soonest, s.poll_timeout()) {
            if t > due {
                return Err(("poll_timeout past a request's timeout", format!("{t} > {due}")));
            }
        }
        // The liveness watch (idle_probe_ms) waits on time while connected.
        let waiting = open > 0 || matches!(s.state(), SessionState::Connecting | SessionState::Ready);
        match s.poll_timeout() {
            None if waiting => return Err(("no poll_timeout while something waits on time", String::new())),
            Some(t) if closed => return Err(("a timer with the socket closed", t.to_string())),
            Some(t) if timed && t <= self.now => {
                return Err((
                    "poll_timeout at or before the now handle_timeout was given",
                    t.to_string(),
                ))
            }
            _ => {}
        }
        Ok(())
    }
}

/// When request `i` times out.
fn due(i: &Id) -> u64 {
    i.since + if i.connect { 1500 } else { 1000 }
}

fn run(seq: &[A], generation: GenerationChoice) -> Verdict {
    let mut r = Run::new(generation);
    for a in seq {
        if !r.step(*a)? {
            return Ok(None);
        }
    }
    Ok(Some(true))
}

/// Connected (the connect's frame polled and answered).
const CONNECTED: [A; 4] = [A::Open, A::Connect, A::Poll, A::Answer];

#[test]
fn every_order_of_inputs_keeps_the_current_session_promises() {
    let run = |seq: &[A]| run(seq, GenerationChoice::Current);
    explore("moltzap current", &ALL, &[], 5, run);
    explore("moltzap current", &ALL, &CONNECTED, 4, run);
}

#[test]
fn every_order_of_inputs_keeps_the_auto_session_promises() {
    explore("moltzap auto", &ALL, &[], 5, |seq| run(seq, GenerationChoice::Auto));
}

#[test]
fn every_order_of_inputs_keeps_the_released_session_promises() {
    explore("moltzap released", &ALL, &CONNECTED, 4, |seq| {
        run(seq, GenerationChoice::Released)
    });
}
