//! Every order of the driver's inputs up to a small depth, from a fresh client session: the
//! socket's open and close, the server's frames (its HELLO_ACK, a reply fitting the last command
//! sent, an ERROR, a frame it cannot read, a PING, a GOODBYE), the time (`handle_timeout` at
//! `poll_timeout`, a step of the clock), the user's commands (a REQUEST, a PING, a cancel, a
//! GOODBYE) and a `poll_transmit`. After every step the session's promises are checked (lib.rs,
//! `docs/protocols/rkt.md`, DESIGN.md's engine contract); a broken one is reported with the
//! shortest sequence found. Deterministic: the entropy is seeded.
//! Deeper by hand: `INTERLEAVE_DEPTH=1 cargo test -p <crate> --test <this> -- --nocapture` explores
//! one input further (each level multiplies the run time by about eight).

mod common;

use agentwire_core::{ErrorKind, Outgoing, SeededEntropy};
use agentwire_rkt::*;
use agentwire_test_alloc::explore::{explore, frame_text, Fail, Verdict};
use common::{reply, T0};
use std::collections::{BTreeSet, HashMap};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum A {
    Open,
    Close,
    Ack,
    Answer,
    Early,
    Err,
    Bad,
    PeerPing,
    PeerBye,
    Timeout,
    Late,
    Tick,
    Request,
    Ping,
    Cancel,
    Bye,
    Poll,
    Stream,
    Begin,
    Data,
    Skip,
    End,
}

const ALL: [A; 17] = [
    A::Open,
    A::Close,
    A::Ack,
    A::Answer,
    A::Early,
    A::Err,
    A::Bad,
    A::PeerPing,
    A::PeerBye,
    A::Timeout,
    A::Late,
    A::Tick,
    A::Request,
    A::Ping,
    A::Cancel,
    A::Bye,
    A::Poll,
];

/// What the explorer knows of a user command.
struct Cmd {
    op: &'static str,
    /// When it was made: its TTL (1 s) runs from then, or from the HELLO_ACK when it waited.
    made: u64,
    polled: bool,
    ended: bool,
    /// A stream's chunks delivered in order, and the `Seq`s the server sent.
    delivered: u64,
    sent_seqs: BTreeSet<u64>,
}

struct Run {
    c: ClientSession,
    now: u64,
    hello: Option<String>,
    /// The last command frame the driver polled (its id and type): what the server answers.
    last_sent: Option<(String, String)>,
    cmds: HashMap<String, Cmd>,
    order: Vec<String>,
    own_auth: Option<String>,
    opened: bool,
    authorization: bool,
    /// The session took the HELLO_ACK (it was `Ready`).
    acked: bool,
    acked_at: u64,
    ready: bool,
    closed_event: bool,
    socket_closed: bool,
    close_polled: bool,
}

fn frame_of(text: &str) -> (String, String) {
    let kind = text
        .lines()
        .next()
        .unwrap_or("")
        .trim_start_matches("RKT/1.0 ")
        .to_string();
    let id = text
        .lines()
        .find_map(|l| l.strip_prefix("Message-ID: "))
        .unwrap_or("")
        .to_string();
    (kind, id)
}

fn server(kind: &str, extra: &str) -> String {
    format!(
        "RKT/1.0 {kind}\nVersion: 1\nMessage-ID: srv\nSession-ID: s\nTimestamp: 2026-06-28T12:00:00Z\nTTL: 30\n{extra}"
    )
}

impl Run {
    fn new(authorization: bool) -> Run {
        let cfg = ClientConfig {
            ttl_s: 1,
            handshake_timeout_ms: 1500,
            authorization: authorization.then(|| "Bearer k".to_string()),
            ..Default::default()
        };
        Run {
            c: ClientSession::new(cfg, Box::new(SeededEntropy::new(7))),
            now: T0,
            hello: None,
            last_sent: None,
            cmds: HashMap::new(),
            order: Vec::new(),
            own_auth: None,
            opened: false,
            authorization,
            acked: false,
            acked_at: 0,
            ready: false,
            closed_event: false,
            socket_closed: false,
            close_polled: false,
        }
    }

    /// Does `a`; `Ok(false)` when it does not apply in this state (not explored).
    fn step(&mut self, a: A) -> Result<bool, Fail> {
        let now = self.now;
        let had_transmit = self.c.has_transmit();
        let closed_before = self.closed_event;
        let mut timed = false;
        // Frames come on an open socket (and after its close, which the session ignores).
        if matches!(
            a,
            A::Ack | A::Answer | A::Early | A::Err | A::Bad | A::PeerPing | A::PeerBye
        ) && !self.opened
        {
            return Ok(false);
        }
        match a {
            A::Open => {
                self.c.handle_open(now);
                self.opened = true;
            }
            A::Close => {
                self.c.handle_close(now, 1006, "gone");
                self.socket_closed = true;
            }
            A::Ack => {
                let Some(h) = self.hello.clone() else { return Ok(false) };
                let body = r#"{"agreed_version":1,"session_timeout":2}"#;
                self.c.handle_text(now, &reply("HELLO_ACK", "ack", &h, "", body));
            }
            A::Answer | A::Early | A::Err | A::Bad => {
                // Early: the last command the user made, its frame polled or not.
                let last_made = self.order.last().map(|id| (id.clone(), self.cmds[id].op.to_string()));
                let target = if a == A::Early {
                    last_made
                } else {
                    self.last_sent.clone()
                };
                let Some((id, kind)) = target else { return Ok(false) };
                let text = match (a, kind.as_str()) {
                    (A::Err, _) => reply("ERROR", "e", &id, "", r#"{"code":500,"name":"X","message":"m"}"#),
                    (A::Bad, _) => reply("RESPONSE", "r", &id, "Seq: x\n", "{}").replace("2026-06-28T", "bad"),
                    (_, "PING") => reply("PONG", "r", &id, "", ""),
                    (_, "AUTH") => reply("AUTH_OK", "r", &id, "", r#"{"session_token":"t"}"#),
                    _ => reply("RESPONSE", "r", &id, "", r#"{"intent":"i","data":1}"#),
                };
                self.c.handle_text(now, &text);
            }
            A::PeerPing => self.c.handle_text(now, &server("PING", "")),
            A::PeerBye => self.c.handle_text(now, &server("GOODBYE", "")),
            A::Timeout => {
                let Some(t) = self.c.poll_timeout() else {
                    return Ok(false);
                };
                self.now = self.now.max(t);
                self.c.handle_timeout(self.now);
                timed = true;
            }
            A::Late => {
                // A driver woken late (a hidden tab): past several deadlines at once.
                self.now += 1500;
                self.c.handle_timeout(self.now);
                timed = true;
            }
            A::Tick => self.now += 600,
            A::Request | A::Ping | A::Stream => {
                let stream = RequestOptions {
                    stream: true,
                    ..Default::default()
                };
                let r = match a {
                    A::Request => self.c.request(now, "i", None, RequestOptions::default()),
                    A::Stream => self.c.request(now, "i", None, stream),
                    _ => self.c.ping(now),
                };
                match r {
                    Ok(id) => {
                        if self.closed_event {
                            return Err(("a command is taken after Closed", id));
                        }
                        let op = match a {
                            A::Request => "REQUEST",
                            A::Stream => "STREAM",
                            _ => "PING",
                        };
                        let cmd = Cmd {
                            op,
                            made: now,
                            polled: false,
                            ended: false,
                            delivered: 0,
                            sent_seqs: BTreeSet::new(),
                        };
                        self.cmds.insert(id.clone(), cmd);
                        self.order.push(id);
                    }
                    Err(e) if self.closed_event && e.kind() != ErrorKind::Closed => {
                        return Err(("a command after Closed fails other than `closed`", format!("{e:?}")))
                    }
                    Err(_) => {}
                }
            }
            A::Cancel => {
                let Some(id) = self.order.last().cloned() else {
                    return Ok(false);
                };
                let pending = !self.cmds[&id].ended;
                if self.c.cancel(&id) != pending {
                    return Err(("cancel's answer is not whether the command was pending", id));
                }
            }
            A::Bye => self.c.goodbye(now),
            A::Begin | A::Data | A::Skip | A::End => {
                // The server's side of the last stream sent: its next `Seq`s, one skipped, the end.
                let Some((id, _)) = self.last_sent.clone() else {
                    return Ok(false);
                };
                let Some(cmd) = self.cmds.get_mut(&id).filter(|c| c.op == "STREAM") else {
                    return Ok(false);
                };
                let lowest = (0..).find(|s| !cmd.sent_seqs.contains(s)).unwrap_or(0);
                let text = match a {
                    A::Begin => reply("STREAM_BEGIN", "b", &id, "", r#"{"intent":"i"}"#),
                    A::End => {
                        let count = cmd.sent_seqs.last().map_or(0, |s| s + 1);
                        reply("STREAM_END", "z", &id, "", &format!(r#"{{"count":{count}}}"#))
                    }
                    _ => {
                        let seq = if a == A::Skip { lowest + 1 } else { lowest };
                        cmd.sent_seqs.insert(seq);
                        reply("STREAM_DATA", "d", &id, &format!("Seq: {seq}\n"), "1")
                    }
                };
                // Each STREAM_* of a stream pending restarts its TTL.
                if !cmd.ended && a != A::End {
                    cmd.made = now;
                }
                self.c.handle_text(now, &text);
            }
            A::Poll => {
                let Some(out) = self.c.poll_transmit() else {
                    return Ok(false);
                };
                self.polled(out)?;
            }
        }
        self.check_events(a)?;
        if closed_before && a != A::Poll && !had_transmit && self.c.has_transmit() {
            return Err(("a frame is queued after Closed", format!("{a:?}")));
        }
        self.check_state(timed)?;
        Ok(true)
    }

    fn polled(&mut self, out: Outgoing) -> Result<(), Fail> {
        let Some(text) = frame_text(out, self.socket_closed, &mut self.close_polled)? else {
            return Ok(());
        };
        let (kind, id) = frame_of(&text);
        if self.hello.is_none() && kind != "HELLO" {
            return Err(("the first frame is not HELLO", kind));
        }
        match kind.as_str() {
            "HELLO" => {
                if self.hello.is_some() {
                    return Err(("a second HELLO", id));
                }
                self.hello = Some(id);
                return Ok(());
            }
            "PONG" | "GOODBYE" => return Ok(()),
            "AUTH" => self.own_auth = Some(id.clone()),
            _ => {}
        }
        if let Some(cmd) = self.cmds.get_mut(&id) {
            if cmd.ended || cmd.polled {
                return Err(("a command's frame is handed out after it ended or twice", id));
            }
            // Sent on HELLO_ACK, after the AUTH of `authorization` ("before anything queued").
            if !self.acked || (self.authorization && self.own_auth.is_none()) {
                return Err(("a command's frame is handed out before HELLO_ACK or the AUTH", id));
            }
            cmd.polled = true;
        }
        self.last_sent = Some((id, kind));
        Ok(())
    }

    fn check_events(&mut self, a: A) -> Result<(), Fail> {
        let mut goodbye = false;
        while let Some(ev) = self.c.poll_event() {
            if self.closed_event {
                return Err(("an event after Closed", format!("{ev:?}")));
            }
            let ended = match &ev {
                ClientEvent::Ready { .. } => {
                    if self.ready {
                        return Err(("a second Ready", String::new()));
                    }
                    self.ready = true;
                    None
                }
                ClientEvent::Response { id, .. } | ClientEvent::StreamEnd { id, .. } | ClientEvent::Pong { id, .. } => {
                    Some((id.clone(), None))
                }
                ClientEvent::AuthOk { id, .. } if Some(id) == self.own_auth.as_ref() => None,
                ClientEvent::AuthOk { id, .. } => Some((id.clone(), None)),
                ClientEvent::Failed { id, error } => Some((id.clone(), Some(error.clone()))),
                ClientEvent::StreamBegin { id, .. } | ClientEvent::StreamData { id, .. } => {
                    let Some(cmd) = self.cmds.get_mut(id).filter(|c| c.op == "STREAM" && !c.ended) else {
                        return Err(("a stream event for no stream pending", format!("{ev:?}")));
                    };
                    if let ClientEvent::StreamData { seq, .. } = &ev {
                        if *seq != cmd.delivered {
                            return Err(("a chunk out of order or twice", format!("{seq} for {}", cmd.delivered)));
                        }
                        cmd.delivered += 1;
                    }
                    None
                }
                ClientEvent::Error(_) => None,
                ClientEvent::Goodbye => {
                    goodbye = true;
                    None
                }
                ClientEvent::Closed { .. } => {
                    if let Some(id) = self.order.iter().find(|id| !self.cmds[*id].ended) {
                        return Err(("Closed while a command has not ended", id.clone()));
                    }
                    self.closed_event = true;
                    None
                }
            };
            let Some((id, error)) = ended else { continue };
            let Some(cmd) = self.cmds.get_mut(&id) else {
                return Err(("a terminal event for a command the user never made", format!("{ev:?}")));
            };
            if cmd.ended {
                return Err(("a command ends twice", format!("{ev:?}")));
            }
            cmd.ended = true;
            if let ClientEvent::StreamEnd { .. } = &ev {
                let sent = cmd.sent_seqs.len() as u64;
                if cmd.delivered != sent || cmd.sent_seqs.last().is_some_and(|l| *l + 1 != sent) {
                    return Err(("StreamEnd with chunks missing", format!("{} of {sent}", cmd.delivered)));
                }
            }
            // With `authorization`, `Ready` waits for AUTH_OK, which a server may answer after a
            // request sent behind it: only a reply before HELLO_ACK is wrong.
            if matches!(ev, ClientEvent::Response { .. } | ClientEvent::Pong { .. }) && !self.acked {
                return Err(("a reply before Ready", id));
            }
            let Some(e) = error else { continue };
            if e.kind() == ErrorKind::Timeout && !matches!(a, A::Timeout | A::Late) {
                return Err(("a command times out outside handle_timeout", format!("{a:?} {e:?}")));
            }
            let due = cmd.made.max(self.acked_at) + 1000;
            if e.kind() == ErrorKind::Timeout && self.now < due {
                return Err(("a command times out before its TTL", format!("{} < {due}", self.now)));
            }
            if matches!(e.kind(), ErrorKind::Closed | ErrorKind::Timeout) {
                let retryable = !cmd.polled || cmd.op == "PING";
                if e.error.retryable != retryable {
                    return Err(("retryable is not (unsent or idempotent)", format!("{e:?}")));
                }
            }
        }
        if goodbye && !self.closed_event {
            return Err(("Goodbye without Closed", String::new()));
        }
        Ok(())
    }

    fn check_state(&mut self, timed: bool) -> Result<(), Fail> {
        if !self.acked && self.c.state() == ClientState::Ready {
            self.acked = true;
            self.acked_at = self.now;
        }
        let c = &self.c;
        let closed = c.state() == ClientState::Closed;
        if closed != self.closed_event {
            return Err(("state Closed and the Closed event disagree", format!("{:?}", c.state())));
        }
        let open = self.order.iter().filter(|id| !self.cmds[*id].ended).count();
        if c.in_flight() != open {
            return Err((
                "in_flight is not the commands not ended",
                format!("{} vs {open}", c.in_flight()),
            ));
        }
        for id in &self.order {
            let cmd = &self.cmds[id];
            if c.unsent(id) != (!cmd.ended && !cmd.polled) {
                return Err(("unsent(id) is not pending and not polled", id.clone()));
            }
        }
        // Its TTL, from when it was made or (made before) from the HELLO_ACK.
        let due = |cmd: &Cmd| match self.acked {
            true => cmd.made.max(self.acked_at) + 1000,
            false => cmd.made + 1000,
        };
        let soonest = (self.order.iter().map(|id| &self.cmds[id]))
            .filter(|cmd| !cmd.ended)
            .map(due)
            .min();
        if let (Some(due), Some(t)) = (soonest, c.poll_timeout()) {
            if t > due {
                return Err(("poll_timeout past a command's TTL", format!("{t} > {due}")));
            }
        }
        // The keepalive (on, and a session_timeout of 2 s) waits on time once ready.
        let waiting = open > 0 || matches!(c.state(), ClientState::Handshaking | ClientState::Ready);
        match c.poll_timeout() {
            None if waiting && !closed => return Err(("no poll_timeout while something waits on time", String::new())),
            Some(t) if closed => return Err(("a timer after Closed", t.to_string())),
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

/// Replays `seq` from a fresh session. Past `Closed` every input is ignored: one more of each
/// is enough, but for the polls that drain what was queued before it.
fn run(seq: &[A], authorization: bool) -> Verdict {
    let mut r = Run::new(authorization);
    let mut closed_before = false;
    for a in seq {
        closed_before = r.closed_event;
        if !r.step(*a)? {
            return Ok(None);
        }
    }
    Ok(Some(!closed_before || seq.last() == Some(&A::Poll)))
}

/// Ready; then with a PING of the user's answered: a PONG seen, so the keepalive may take the
/// connection as dead.
const READY: [A; 3] = [A::Open, A::Poll, A::Ack];
const PONG_SEEN: [A; 6] = [A::Open, A::Poll, A::Ack, A::Ping, A::Poll, A::Answer];

#[test]
fn every_order_of_inputs_keeps_the_client_promises() {
    explore("rkt client", &ALL, &[], 5, |seq| run(seq, false));
    explore("rkt client", &ALL, &READY, 4, |seq| run(seq, false));
    explore("rkt client", &ALL, &PONG_SEEN, 4, |seq| run(seq, false));
}

#[test]
fn every_order_of_inputs_keeps_the_promises_with_authorization() {
    explore("rkt client, authorization", &ALL, &[], 5, |seq| run(seq, true));
}

/// A stream's inputs: its chunks in order, one skipped (so held), its end, a RESPONSE or an
/// ERROR instead, a cancel, the close and the time.
const STREAM: [A; 14] = [
    A::Close,
    A::Answer,
    A::Err,
    A::Timeout,
    A::Late,
    A::Tick,
    A::Stream,
    A::Cancel,
    A::Poll,
    A::Begin,
    A::Data,
    A::Skip,
    A::End,
    A::Bye,
];

#[test]
fn every_order_of_a_stream_keeps_the_promises() {
    let seed = [A::Open, A::Poll, A::Ack, A::Stream, A::Poll];
    explore("rkt client stream", &STREAM, &seed, 4, |seq| run(seq, false));
}
