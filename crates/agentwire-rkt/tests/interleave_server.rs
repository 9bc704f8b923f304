//! Every order of the server session's inputs up to a small depth: the socket's open and close,
//! the client's frames (HELLO, with `Authorization` too; a REQUEST, streamed or not; PING,
//! GOODBYE, a frame it cannot read; wscat's lone start line and blank line), the application's
//! answers to the last message it got (RESPONSE, a stream's begin, chunk and end, ERROR,
//! `accept_hello`, GOODBYE), the time and a `poll_transmit`. After every step the session's
//! promises are checked (server.rs, `docs/protocols/rkt.md`); a broken one is reported with the
//! shortest sequence found.
//! Deeper by hand: `INTERLEAVE_DEPTH=1 cargo test -p <crate> --test <this> -- --nocapture` explores
//! one input further (each level multiplies the run time by about eight).

mod common;

use agentwire_core::{Outgoing, SeededEntropy};
use agentwire_rkt::*;
use agentwire_test_alloc::explore::{explore, frame_text, Fail, Verdict};
use serde_json::json;
use std::collections::{HashMap, HashSet, VecDeque};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum A {
    Open,
    Close,
    Hello,
    HelloAuth,
    Request,
    StreamRequest,
    Ping,
    Bye,
    Bad,
    StartLine,
    Blank,
    Respond,
    Begin,
    Data,
    End,
    Refuse,
    Accept,
    AppBye,
    Timeout,
    Late,
    Tick,
    Poll,
}

struct Run {
    s: ServerSession,
    now: u64,
    next: u32,
    opened: bool,
    /// Ids of the client's messages, and the last one the application got.
    sent: HashSet<String>,
    last_inbound: Option<String>,
    ready_event: bool,
    acks: u32,
    closed_event: bool,
    socket_closed: bool,
    close_polled: bool,
    /// Per request answered with a stream: the next `Seq`, from its STREAM_BEGIN.
    streams: HashMap<String, u64>,
    left: Option<VecDeque<Outgoing>>,
}

const TS: &str = "Timestamp: 2026-06-28T12:00:00Z";

impl Run {
    fn new() -> Run {
        let cfg = ServerConfig {
            session_timeout_s: 2,
            hello_timeout_ms: 1500,
            line_timeout_ms: 1000,
            rate_per_s: 1.0,
            burst: 1,
            ..Default::default()
        };
        Run {
            s: ServerSession::new(cfg, Box::new(SeededEntropy::new(3))),
            now: 1_782_648_000_000,
            next: 0,
            opened: false,
            sent: HashSet::new(),
            last_inbound: None,
            ready_event: false,
            acks: 0,
            closed_event: false,
            socket_closed: false,
            close_polled: false,
            streams: HashMap::new(),
            left: None,
        }
    }

    /// A client message of `kind` with `extra` header lines (and a body after them), its id new.
    fn client(&mut self, kind: &str, extra: &str) -> String {
        self.next += 1;
        let id = format!("c{}", self.next);
        self.sent.insert(id.clone());
        format!("RKT/1.0 {kind}\nVersion: 1\nMessage-ID: {id}\nSession-ID: cs\n{TS}\nTTL: 30\n{extra}")
    }

    fn step(&mut self, a: A) -> Result<bool, Fail> {
        let now = self.now;
        let closed_before = self.closed_event;
        if closed_before && self.left.is_none() {
            // What was queued by the time of `Closed`, handed out from here on: any frame the
            // session queues after it is one too many.
            self.left = Some(std::iter::from_fn(|| self.s.poll_transmit()).collect());
        }
        let mut timed = false;
        let frame = matches!(
            a,
            A::Hello
                | A::HelloAuth
                | A::Request
                | A::StreamRequest
                | A::Ping
                | A::Bye
                | A::Bad
                | A::StartLine
                | A::Blank
        );
        if (frame || a == A::Close) && !self.opened || a == A::Open && self.opened {
            return Ok(false); // frames come on an open socket; it opens once
        }
        let body = "Content-Type: application/json\n\n";
        let text = match a {
            A::Hello => Some(self.client("HELLO", "")),
            A::HelloAuth => Some(self.client("HELLO", "Authorization: Bearer k\n")),
            A::Request => Some(self.client("REQUEST", &format!("{body}{{\"intent\":\"i\"}}"))),
            A::StreamRequest => Some(self.client("REQUEST", &format!("Stream: true\n{body}{{\"intent\":\"i\"}}"))),
            A::Ping => Some(self.client("PING", "")),
            A::Bye => Some(self.client("GOODBYE", "")),
            A::Bad => Some(self.client("REQUEST", "Seq: x\n").replace("Version: 1", "Version: x")),
            A::StartLine => Some("RKT/1.0 PING".to_string()),
            A::Blank => Some(String::new()),
            _ => None,
        };
        if let Some(text) = text {
            self.s.handle_text(now, &text);
        }
        let last = self.last_inbound.clone();
        let answer = matches!(a, A::Respond | A::Begin | A::Data | A::End | A::Refuse | A::Accept);
        if answer && last.is_none() {
            return Ok(false);
        }
        let to = last.unwrap_or_default();
        match a {
            A::Open => {
                self.s.handle_open(now);
                self.opened = true;
            }
            A::Close => {
                self.s.handle_close(now, 1006, "gone");
                self.socket_closed = true;
                self.left = self.left.take().map(|_| VecDeque::new());
            }
            A::Respond => self.s.respond(now, &to, &json!({"ok": 1})),
            A::Begin => self.s.stream_begin(now, &to, &json!({"intent": "i"})),
            A::Data => {
                let _ = self.s.stream_data(now, &to, &json!(1));
            }
            A::End => self.s.stream_end(now, &to),
            A::Refuse => {
                let body = ErrorBody {
                    code: 401,
                    name: "UNAUTHORIZED".into(),
                    message: "no".into(),
                    details: None,
                    request_id: Some(to.clone()),
                };
                self.s.error(now, Some(&to), &body, None);
            }
            A::Accept => {
                let _ = self.s.accept_hello(now, &to);
            }
            A::AppBye => self.s.goodbye(now),
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
            A::Poll => {
                let next = match &mut self.left {
                    Some(left) => left.pop_front(),
                    None => self.s.poll_transmit(),
                };
                let Some(out) = next else { return Ok(false) };
                self.polled(out)?;
            }
            _ => {}
        }
        self.check_events()?;
        if let Some(out) = self.left.as_ref().and_then(|_| self.s.poll_transmit()) {
            return Err(("a frame is queued after Closed", format!("{a:?} {out:?}")));
        }
        self.check_state(timed)?;
        Ok(true)
    }

    fn polled(&mut self, out: Outgoing) -> Result<(), Fail> {
        let Some(text) = frame_text(out, self.socket_closed, &mut self.close_polled)? else {
            return Ok(());
        };
        let msg = decode(&text, usize::MAX).map_err(|e| ("a frame the decoder refuses", format!("{e:?} {text}")))?;
        if let Some(to) = msg.reply_to() {
            if !self.sent.contains(to) {
                return Err(("a reply to nothing the client sent", text));
            }
        }
        if self.acks > 0 && msg.header("Session-ID") != Some("cs") {
            return Err(("a frame of the session without its Session-ID", text));
        }
        let to = msg.reply_to().unwrap_or_default().to_string();
        match msg.kind {
            MessageType::HelloAck => {
                self.acks += 1;
                if self.acks > 1 {
                    return Err(("a second HELLO_ACK", text));
                }
            }
            MessageType::StreamBegin => {
                self.streams.insert(to, 0);
            }
            MessageType::StreamData => {
                let Some(next) = self.streams.get_mut(&to) else {
                    return Err(("STREAM_DATA with no stream begun", text));
                };
                if msg.seq() != Some(*next) {
                    return Err(("STREAM_DATA out of Seq order", text));
                }
                *next += 1;
            }
            MessageType::StreamEnd => {
                let count = self.streams.remove(&to).unwrap_or(0);
                let want = format!(r#"{{"count":{count}}}"#);
                if msg.body.as_deref() != Some(want.as_str()) {
                    return Err(("STREAM_END's count is not the chunks sent", text));
                }
            }
            MessageType::Response | MessageType::Error => {
                self.streams.remove(&to);
            }
            _ => {}
        }
        Ok(())
    }

    fn check_events(&mut self) -> Result<(), Fail> {
        let mut goodbye = false;
        while let Some(ev) = self.s.poll_event() {
            if self.closed_event {
                return Err(("an event after Closed", format!("{ev:?}")));
            }
            match ev {
                ServerEvent::Ready { .. } => {
                    if self.ready_event {
                        return Err(("a second Ready", String::new()));
                    }
                    self.ready_event = true;
                }
                ServerEvent::Inbound(i) => {
                    let hello = i.kind == InboundKind::Hello;
                    if hello == self.ready_event {
                        return Err(("an Inbound before Ready, or a HELLO after", format!("{i:?}")));
                    }
                    if !self.sent.contains(&i.id) {
                        return Err(("an Inbound the client did not send", i.id));
                    }
                    self.last_inbound = Some(i.id);
                }
                ServerEvent::Goodbye => goodbye = true,
                ServerEvent::Closed { .. } => self.closed_event = true,
                _ => {}
            }
        }
        if goodbye && !self.closed_event {
            return Err(("Goodbye without Closed", String::new()));
        }
        Ok(())
    }

    fn check_state(&mut self, timed: bool) -> Result<(), Fail> {
        let state = self.s.state();
        if (state == ServerState::Closed) != self.closed_event {
            return Err(("state Closed and the Closed event disagree", format!("{state:?}")));
        }
        if (state == ServerState::Ready) != (self.ready_event && !self.closed_event) {
            return Err(("state Ready and the Ready event disagree", format!("{state:?}")));
        }
        match self.s.poll_timeout() {
            None if self.opened && !self.closed_event => {
                return Err((
                    "no poll_timeout on an open session (HELLO or idle timeout)",
                    String::new(),
                ))
            }
            Some(t) if self.closed_event => return Err(("a timer after Closed", t.to_string())),
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

fn run(seq: &[A]) -> Verdict {
    let mut r = Run::new();
    let mut closed_before = false;
    for a in seq {
        closed_before = r.closed_event;
        if !r.step(*a)? {
            return Ok(None);
        }
    }
    Ok(Some(!closed_before || seq.last() == Some(&A::Poll)))
}

/// The handshake: HELLOs, with and without `Authorization`, the application's answer to one,
/// line mode, the HELLO timeout.
const HANDSHAKE: [A; 15] = [
    A::Close,
    A::Hello,
    A::HelloAuth,
    A::Ping,
    A::Bye,
    A::Bad,
    A::StartLine,
    A::Blank,
    A::Refuse,
    A::Accept,
    A::AppBye,
    A::Timeout,
    A::Late,
    A::Tick,
    A::Poll,
];

/// A ready session: requests and their answers, streamed or not, the rate limit, the idle
/// timeout.
const SESSION: [A; 17] = [
    A::Close,
    A::Request,
    A::StreamRequest,
    A::Ping,
    A::Bye,
    A::Bad,
    A::StartLine,
    A::Respond,
    A::Begin,
    A::Data,
    A::End,
    A::Refuse,
    A::AppBye,
    A::Timeout,
    A::Late,
    A::Tick,
    A::Poll,
];

#[test]
fn every_order_of_inputs_keeps_the_server_promises() {
    explore("rkt server handshake", &HANDSHAKE, &[A::Open], 5, run);
    explore("rkt server", &SESSION, &[A::Open, A::Hello, A::Poll], 4, run);
}
