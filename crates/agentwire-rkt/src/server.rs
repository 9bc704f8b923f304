//! The server session: answers HELLO with version negotiation, PING with PONG, malformed or
//! untimely messages with ERROR, and hands every other message to the application as a typed
//! [`Inbound`]; the application answers with `respond`, `stream_*`, `error` or `auth_ok`. A HELLO
//! with an `Authorization` header waits for the application too ([`InboundKind::Hello`]:
//! `accept_hello`, or `error`).

use crate::body::*;
use crate::client::{split_list, PeerInfo};
use crate::codec::{self, decode, encode, Message, MessageType};
use crate::envelope::{check_capabilities, check_header_value, check_versions, compact, envelope};
use crate::errors::{codes, decode_error_body, error_body, RktError};
use crate::lines::{starts_line_mode, LineAssembler};
use agentwire_core::{Entropy, ErrorKind, Millis, Outgoing, Timers, TokenBucket};
use serde::de::DeserializeOwned;
use serde_json::{json, Value};
use std::collections::{HashMap, VecDeque};

#[derive(Debug, Clone)]
pub struct ServerConfig {
    /// `From` of the server's messages, e.g. `rkt://weather.ai`.
    pub agent: String,
    pub user_agent: String,
    pub capabilities: Vec<String>,
    pub min_version: u32,
    pub max_version: u32,
    /// Idle timeout announced in HELLO_ACK and enforced: no message either way for this long
    /// ends the session with GOODBYE (a session the server streams to is not idle, whether or not
    /// the client sends PINGs).
    pub session_timeout_s: u64,
    /// How long a connection may stay open without a successful HELLO.
    pub hello_timeout_ms: u64,
    pub max_message_size: usize,
    /// How long a message sent line by line (wscat) may take to complete.
    pub line_timeout_ms: u64,
    /// Messages per second the session takes, and the burst it allows. Every message counts
    /// (PING and malformed ones too) but the HELLO that opens the session; past the limit each
    /// gets ERROR 429, up to `burst` refusals in a row; the next one closes the connection with
    /// 1008 instead.
    pub rate_per_s: f64,
    pub burst: u32,
}

impl ServerConfig {
    /// The configuration refused (kind `invalid`, naming the field) where the session would
    /// write headers its own decoder refuses: an `agent`, `user_agent` or capability with a
    /// control character (tab apart; CR and LF included) or DEL, or a capability with a comma
    /// (it would come back as two), or a `min_version` above `max_version` (no version to
    /// agree on). [`ServerSession::new`] checks it: a session given such a
    /// configuration starts closed.
    pub fn check(&self) -> Result<(), RktError> {
        check_header_value("agent", &self.agent)?;
        check_header_value("user_agent", &self.user_agent)?;
        check_capabilities(&self.capabilities)?;
        check_versions(self.min_version, self.max_version)
    }
}

impl Default for ServerConfig {
    fn default() -> Self {
        ServerConfig {
            agent: "rkt://localhost".into(),
            user_agent: format!("agentwire/{}", env!("CARGO_PKG_VERSION")),
            capabilities: Vec::new(),
            min_version: 1,
            max_version: 1,
            session_timeout_s: 300,
            hello_timeout_ms: 30_000,
            max_message_size: codec::DEFAULT_MAX_MESSAGE_SIZE,
            line_timeout_ms: 60_000,
            rate_per_s: 1000.0,
            burst: 2000,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ServerState {
    AwaitingHello,
    Ready,
    Closed,
}

/// A message for the application, already validated. `Debug` hides the `authorization`.
#[derive(Clone, PartialEq)]
pub struct Inbound {
    /// Its `Message-ID`: pass it as `reply_to` when answering.
    pub id: String,
    pub kind: InboundKind,
    pub from: Option<String>,
    pub to: Option<String>,
    /// The `Authorization` header, if the message carried one.
    pub authorization: Option<String>,
    pub priority: Priority,
    pub ttl_s: Option<u32>,
}

impl std::fmt::Debug for Inbound {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Every field named: a new one fails to compile here until it is printed.
        let Inbound {
            id,
            kind,
            from,
            to,
            authorization,
            priority,
            ttl_s,
        } = self;
        f.debug_struct("Inbound")
            .field("id", id)
            .field("kind", kind)
            .field("from", from)
            .field("to", to)
            .field("authorization", &agentwire_core::redact::redacted(authorization))
            .field("priority", priority)
            .field("ttl_s", ttl_s)
            .finish()
    }
}

#[derive(Debug, Clone, PartialEq)]
pub enum InboundKind {
    /// A HELLO that carries `Authorization`, its version agreed: the session waits for the
    /// application to check the header, then [`ServerSession::accept_hello`] sends HELLO_ACK,
    /// or an [`ServerSession::error`] answering it (401) refuses it and the session waits for
    /// another HELLO. Unanswered when the HELLO timeout passes, it gets as long again once,
    /// then the connection closes 1008. A HELLO without `Authorization` is answered by the
    /// session alone.
    Hello,
    Request {
        intent: String,
        params: Option<Value>,
        context: Option<Value>,
        stream: bool,
    },
    Discover,
    MemorySet(MemorySetBody),
    MemoryGet(MemoryGetBody),
    Pay(PayBody),
    Auth(AuthBody),
}

#[derive(Debug, Clone, PartialEq)]
pub enum ServerEvent {
    /// HELLO accepted and HELLO_ACK sent.
    Ready {
        client: PeerInfo,
        agreed_version: u32,
    },
    Inbound(Inbound),
    /// A message was refused with an ERROR reply (already sent); the session goes on.
    Rejected(RktError),
    /// The client sent an ERROR.
    PeerError(RktError),
    /// The client said GOODBYE; the session closed with 1000.
    Goodbye,
    Closed {
        code: u16,
        reason: String,
    },
}

#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
enum Timer {
    Idle,
    Lines,
}

/// A HELLO whose version is agreed, waiting for the application ([`InboundKind::Hello`]).
#[derive(Debug)]
struct PendingHello {
    id: String,
    session_id: String,
    agreed_version: u32,
    client: PeerInfo,
    /// The HELLO timer has given the application as long again once already.
    extended: bool,
}

pub struct ServerSession {
    cfg: ServerConfig,
    entropy: Box<dyn Entropy + Send>,
    state: ServerState,
    session_id: String,
    hello: Option<PendingHello>,
    /// Open streams by the id of the REQUEST they answer: the next `Seq`. An entry lives from
    /// `stream_begin` to the reply that finishes the request (`stream_end`, `respond` or `error`)
    /// or the session's end.
    streams: HashMap<String, u64>,
    lines: LineAssembler,
    bucket: TokenBucket,
    /// Messages refused for the rate limit since the last one taken.
    refused_in_a_row: u32,
    timers: Timers<Timer>,
    transmit: VecDeque<Outgoing>,
    events: VecDeque<ServerEvent>,
}

/// Its state and session id, never its configuration.
impl std::fmt::Debug for ServerSession {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServerSession")
            .field("state", &self.state)
            .field("session_id", &self.session_id)
            .field("streams", &self.streams.len())
            .finish_non_exhaustive()
    }
}

fn parse_body<T: DeserializeOwned>(msg: &Message) -> Result<T, String> {
    let body = msg
        .body
        .as_deref()
        .ok_or_else(|| format!("{} needs a JSON body", msg.kind))?;
    serde_json::from_str(body).map_err(|e| format!("{} body: {e}", msg.kind))
}

impl ServerSession {
    /// A session for one connection. A configuration that [`ServerConfig::check`] refuses
    /// gives a session closed from the start: it sends only a close (1011 "invalid
    /// configuration"), and its `Closed` event's reason names the field.
    pub fn new(cfg: ServerConfig, mut entropy: Box<dyn Entropy + Send>) -> Self {
        let session_id = entropy.uuid_v4();
        let bucket = TokenBucket::new(cfg.rate_per_s, f64::from(cfg.burst));
        let invalid = cfg.check().err();
        let mut session = ServerSession {
            cfg,
            entropy,
            state: ServerState::AwaitingHello,
            session_id,
            hello: None,
            streams: HashMap::new(),
            lines: LineAssembler::new(),
            bucket,
            refused_in_a_row: 0,
            timers: Timers::new(),
            transmit: VecDeque::new(),
            events: VecDeque::new(),
        };
        if let Some(e) = invalid {
            session.transmit.push_back(Outgoing::Close {
                code: 1011,
                reason: "invalid configuration".into(),
            });
            session.finish(1011, &format!("invalid configuration: {}", e.error.message));
        }
        session
    }

    pub fn state(&self) -> ServerState {
        self.state
    }

    /// The session id: the client's from its HELLO once ready; before, that of the last message
    /// received (its answer carries it), or a random one until one could be read.
    pub fn session_id(&self) -> &str {
        &self.session_id
    }

    pub fn config(&self) -> &ServerConfig {
        &self.cfg
    }

    pub fn handle_open(&mut self, now: Millis) {
        if self.state == ServerState::Closed {
            return;
        }
        self.timers
            .set(Timer::Idle, now.saturating_add(self.cfg.hello_timeout_ms));
    }

    pub fn handle_text(&mut self, now: Millis, text: &str) {
        if self.state == ServerState::Closed {
            return;
        }
        if self.lines.is_active() || starts_line_mode(text) {
            let starts = self.lines.starts();
            for message in self.lines.push(text) {
                self.on_text(now, &message);
            }
            if self.lines.len() > self.cfg.max_message_size {
                let partial = self.lines.take();
                self.on_text(now, &partial);
            }
            if self.state == ServerState::Closed || !self.lines.is_active() {
                self.timers.cancel(&Timer::Lines);
            } else if self.lines.starts() != starts {
                // Each message gets the whole line timeout from its own start line.
                self.timers
                    .set(Timer::Lines, now.saturating_add(self.cfg.line_timeout_ms));
            }
            return;
        }
        // A blank frame (wscat's Enter on an empty line) is no message: ignored, not refused,
        // and it takes no rate-limit slot.
        if text.trim().is_empty() {
            return;
        }
        self.on_text(now, text);
    }

    pub fn handle_binary(&mut self, now: Millis, bytes: &[u8]) {
        if self.state == ServerState::Closed || !self.take_token(now, None) {
            return;
        }
        let m = format!("binary frame of {} bytes: RKT messages are text", bytes.len());
        self.reject(
            now,
            None,
            error_body(codes::BAD_MESSAGE, m, Some(json!({"field": "frame"})), None),
            ErrorKind::Decode,
        );
    }

    /// The socket closed: `Closed`; what waited in `poll_transmit` had that socket to go on and
    /// goes with it.
    pub fn handle_close(&mut self, _now: Millis, code: u16, reason: &str) {
        self.finish(code, reason);
        self.transmit.clear();
    }

    pub fn handle_timeout(&mut self, now: Millis) {
        for t in self.timers.expire(now) {
            if self.state == ServerState::Closed {
                return;
            }
            match t {
                Timer::Lines => {
                    let partial = self.lines.take();
                    self.on_text(now, &partial);
                }
                Timer::Idle if self.state == ServerState::AwaitingHello => {
                    // What line mode holds is decoded first: a bodiless HELLO typed in wscat
                    // waits for a body until `line_timeout_ms`, longer than this.
                    if self.lines.is_active() {
                        self.timers.cancel(&Timer::Lines);
                        let partial = self.lines.take();
                        self.on_text(now, &partial);
                    }
                    match (self.state, &mut self.hello) {
                        (ServerState::AwaitingHello, None) => self.close(1008, "no HELLO in time"),
                        // The application has its HELLO: as long again to answer it, once.
                        (ServerState::AwaitingHello, Some(h)) if !h.extended => {
                            h.extended = true;
                            let at = now.saturating_add(self.cfg.hello_timeout_ms);
                            self.timers.set(Timer::Idle, at);
                        }
                        (ServerState::AwaitingHello, Some(_)) => self.close(1008, "HELLO not answered in time"),
                        _ => {}
                    }
                }
                Timer::Idle => {
                    let id = self.entropy.uuid_v4();
                    let bye = self.message(MessageType::Goodbye, id, None, now);
                    self.send(&bye);
                    self.close(1000, "session timeout");
                }
            }
        }
    }

    pub fn poll_transmit(&mut self) -> Option<Outgoing> {
        self.transmit.pop_front()
    }

    pub fn poll_event(&mut self) -> Option<ServerEvent> {
        self.events.pop_front()
    }

    pub fn poll_timeout(&self) -> Option<Millis> {
        self.timers.next()
    }

    // ---- answers ------------------------------------------------------------------------

    /// RESPONSE with a JSON body. It finishes the request: a stream begun for it is closed.
    pub fn respond(&mut self, now: Millis, reply_to: &str, body: &Value) {
        self.streams.remove(reply_to);
        self.reply(now, MessageType::Response, reply_to, Some(compact(body)), &[]);
    }

    /// STREAM_BEGIN: opens a stream for the request `reply_to`, until `stream_end` (or
    /// `respond` or `error` to the same request, or the session's end).
    pub fn stream_begin(&mut self, now: Millis, reply_to: &str, body: &Value) {
        self.streams.insert(reply_to.to_string(), 0);
        self.reply(now, MessageType::StreamBegin, reply_to, Some(compact(body)), &[]);
    }

    /// STREAM_DATA with the next `Seq` (0, 1, 2, ...) of the stream `stream_begin` opened;
    /// returns it. Without an open stream for `reply_to` nothing is sent: a `state` error.
    pub fn stream_data(&mut self, now: Millis, reply_to: &str, chunk: &Value) -> Result<u64, RktError> {
        let Some(seq) = self.streams.get_mut(reply_to) else {
            return Err(RktError::local(
                ErrorKind::State,
                format!("no open stream for {reply_to}: stream_begin first"),
            ));
        };
        let this = *seq;
        *seq += 1;
        self.reply(
            now,
            MessageType::StreamData,
            reply_to,
            Some(compact(chunk)),
            &[("Seq", this.to_string())],
        );
        Ok(this)
    }

    /// STREAM_END with `{"count": N}`.
    pub fn stream_end(&mut self, now: Millis, reply_to: &str) {
        let count = self.streams.remove(reply_to).unwrap_or(0);
        self.reply(
            now,
            MessageType::StreamEnd,
            reply_to,
            Some(compact(&json!({"count": count}))),
            &[],
        );
    }

    pub fn auth_ok(&mut self, now: Millis, reply_to: &str, body: &AuthOkBody) {
        let text = serde_json::to_string(body).unwrap_or_default();
        self.reply(now, MessageType::AuthOk, reply_to, Some(text), &[]);
    }

    /// ERROR; `retry_after_s` adds the `Retry-After` header (429). With `reply_to` it finishes
    /// that request: a stream begun for it is closed, a HELLO waiting for
    /// [`accept_hello`](Self::accept_hello) is refused.
    pub fn error(&mut self, now: Millis, reply_to: Option<&str>, body: &ErrorBody, retry_after_s: Option<u64>) {
        if let Some(id) = reply_to {
            self.streams.remove(id);
            if let Some(h) = self.hello.take_if(|h| h.id == id) {
                self.session_id = h.session_id;
            }
        }
        let id = self.entropy.uuid_v4();
        let mut msg = self.message(MessageType::Error, id, reply_to, now);
        if let Some(s) = retry_after_s {
            msg.headers.set("Retry-After", s.to_string());
        }
        msg.body = Some(serde_json::to_string(body).unwrap_or_default());
        self.send(&msg);
        self.active(now);
    }

    /// Sends HELLO_ACK to the HELLO `id` that came as [`InboundKind::Hello`]: the session is
    /// ready. Without such a HELLO waiting nothing is sent: a `state` error.
    pub fn accept_hello(&mut self, now: Millis, id: &str) -> Result<(), RktError> {
        match self.hello.take() {
            Some(h) if h.id == id && self.state == ServerState::AwaitingHello => {
                self.ready(now, h);
                Ok(())
            }
            other => {
                self.hello = other;
                Err(RktError::local(
                    ErrorKind::State,
                    format!("no HELLO {id} waits to be accepted"),
                ))
            }
        }
    }

    pub fn goodbye(&mut self, now: Millis) {
        if self.state == ServerState::Closed {
            return;
        }
        let id = self.entropy.uuid_v4();
        let bye = self.message(MessageType::Goodbye, id, None, now);
        self.send(&bye);
        self.close(1000, "goodbye");
    }

    // ---- internals ----------------------------------------------------------------------

    fn message(&self, kind: MessageType, id: String, reply_to: Option<&str>, now: Millis) -> Message {
        // What answers a message (Reply-To, an ERROR's included) omits TTL, as the guide's
        // HELLO_ACK does; what answers nothing (GOODBYE, an ERROR about no message) has it.
        let ttl = reply_to.is_none().then_some(30);
        let mut msg = envelope(kind, id, reply_to, &self.session_id, now, ttl);
        msg.headers.set("From", self.cfg.agent.as_str());
        msg
    }

    fn reply(
        &mut self,
        now: Millis,
        kind: MessageType,
        reply_to: &str,
        body: Option<String>,
        extra: &[(&str, String)],
    ) {
        if self.state == ServerState::Closed {
            return;
        }
        let id = self.entropy.uuid_v4();
        let mut msg = self.message(kind, id, Some(reply_to), now);
        for (name, value) in extra {
            msg.headers.set(name, value.as_str());
        }
        msg.body = body;
        self.send(&msg);
        self.active(now);
    }

    /// A message went either way: the session is not idle for another `session_timeout_s`.
    fn active(&mut self, now: Millis) {
        if self.state == ServerState::Ready {
            let idle = now.saturating_add(self.cfg.session_timeout_s.saturating_mul(1000));
            self.timers.set(Timer::Idle, idle);
        }
    }

    fn send(&mut self, msg: &Message) {
        if self.state != ServerState::Closed {
            self.transmit.push_back(Outgoing::Text(encode(msg)));
        }
    }

    fn close(&mut self, code: u16, reason: &str) {
        if self.state == ServerState::Closed {
            return;
        }
        self.transmit.push_back(Outgoing::Close {
            code,
            reason: reason.into(),
        });
        self.finish(code, reason);
    }

    fn finish(&mut self, code: u16, reason: &str) {
        if self.state == ServerState::Closed {
            return;
        }
        self.state = ServerState::Closed;
        self.timers.clear();
        self.streams = HashMap::new();
        self.events.push_back(ServerEvent::Closed {
            code,
            reason: reason.into(),
        });
    }

    fn reject(&mut self, now: Millis, reply_to: Option<&str>, body: ErrorBody, kind: ErrorKind) {
        self.error(now, reply_to, &body, None);
        let mut e = RktError::remote(&body, reply_to, None);
        e.error.kind = kind;
        self.events.push_back(ServerEvent::Rejected(e));
    }

    /// Takes one message's worth of the rate limit, or answers ERROR 429 (and closes with 1008
    /// after `burst` refusals in a row). True when the message may be processed.
    fn take_token(&mut self, now: Millis, reply_to: Option<&str>) -> bool {
        let wait_ms = match self.bucket.take(now) {
            Ok(()) => {
                self.refused_in_a_row = 0;
                return true;
            }
            Err(wait_ms) => wait_ms,
        };
        self.refused_in_a_row = self.refused_in_a_row.saturating_add(1);
        if self.refused_in_a_row > self.cfg.burst {
            self.close(1008, "rate limit exceeded");
            return false;
        }
        let secs = wait_ms.div_ceil(1000).max(1);
        let body = error_body(
            codes::RATE_LIMITED,
            "rate limit exceeded",
            Some(json!({"retry_after": secs})),
            reply_to.map(str::to_string),
        );
        self.error(now, reply_to, &body, Some(secs));
        self.events
            .push_back(ServerEvent::Rejected(RktError::remote(&body, reply_to, Some(secs))));
        false
    }

    fn on_text(&mut self, now: Millis, text: &str) {
        if self.state == ServerState::Closed {
            return;
        }
        let decoded = decode(text, self.cfg.max_message_size);
        if self.state == ServerState::AwaitingHello {
            // No Session-ID is adopted yet: the answer carries that of the message it answers.
            let id = match &decoded {
                Ok(m) => m.header("Session-ID").map(str::to_string),
                Err(_) => codec::find_id(agentwire_core::text::prefix(text, 4096), "Session-ID"),
            };
            // None readable: a new random one, not the previous message's.
            self.session_id = id.unwrap_or_else(|| self.entropy.uuid_v4());
        }
        let opens_session =
            self.state == ServerState::AwaitingHello && matches!(&decoded, Ok(m) if m.kind == MessageType::Hello);
        if !opens_session {
            let id = match &decoded {
                Ok(m) => Some(m.message_id().to_string()),
                Err(e) => e.message_id.clone(),
            };
            if !self.take_token(now, id.as_deref()) {
                return;
            }
        }
        match decoded {
            Ok(msg) => self.on_message(now, msg),
            Err(e) => {
                let body = decode_error_body(&e);
                let reply_to = e.message_id.clone();
                self.error(now, reply_to.as_deref(), &body, None);
                let mut rejected = RktError::decode(&e);
                rejected.request_id = reply_to;
                self.events.push_back(ServerEvent::Rejected(rejected));
            }
        }
    }

    fn bad_body(&mut self, now: Millis, msg: &Message, why: String) {
        let id = msg.message_id().to_string();
        let body = error_body(
            codes::BAD_MESSAGE,
            why,
            Some(json!({"field": "body"})),
            Some(id.clone()),
        );
        self.reject(now, Some(&id), body, ErrorKind::Decode);
    }

    fn on_message(&mut self, now: Millis, msg: Message) {
        if self.state == ServerState::Closed {
            return;
        }
        self.active(now);
        let id = msg.message_id().to_string();
        let kind = match msg.kind {
            MessageType::Hello => return self.on_hello(now, msg),
            MessageType::Ping => {
                return self.reply(now, MessageType::Pong, &id, None, &[]);
            }
            MessageType::Goodbye => {
                self.events.push_back(ServerEvent::Goodbye);
                return self.close(1000, "goodbye");
            }
            MessageType::Pong => return,
            MessageType::Error => {
                let body = parse_body::<ErrorBody>(&msg).unwrap_or_else(|why| error_body(0, why, None, None));
                self.events
                    .push_back(ServerEvent::PeerError(RktError::remote(&body, msg.reply_to(), None)));
                return;
            }
            _ if self.state != ServerState::Ready => {
                let m = format!("{} before HELLO: send HELLO first", msg.kind);
                let body = error_body(codes::NOT_READY, m, None, Some(id.clone()));
                return self.reject(now, Some(&id), body, ErrorKind::State);
            }
            MessageType::Request => match parse_body::<RequestBody>(&msg) {
                Ok(b) if !b.intent.trim().is_empty() => InboundKind::Request {
                    intent: b.intent,
                    params: b.params,
                    context: b.context,
                    stream: msg.header("Stream").is_some_and(|v| v.eq_ignore_ascii_case("true")),
                },
                Ok(_) => return self.bad_body(now, &msg, "REQUEST intent must not be empty".into()),
                Err(why) => return self.bad_body(now, &msg, why),
            },
            MessageType::Discover => InboundKind::Discover,
            MessageType::MemorySet => match parse_body::<MemorySetBody>(&msg) {
                Ok(b) if valid_key(&b.key, b.namespace.as_deref()) => InboundKind::MemorySet(b),
                Ok(_) => return self.bad_body(now, &msg, "MEMORY_SET key and namespace must not be empty".into()),
                Err(why) => return self.bad_body(now, &msg, why),
            },
            MessageType::MemoryGet => match parse_body::<MemoryGetBody>(&msg) {
                Ok(b) if valid_key(&b.key, b.namespace.as_deref()) => InboundKind::MemoryGet(b),
                Ok(_) => return self.bad_body(now, &msg, "MEMORY_GET key and namespace must not be empty".into()),
                Err(why) => return self.bad_body(now, &msg, why),
            },
            MessageType::Pay => match parse_body::<PayBody>(&msg) {
                Ok(b) if b.amount.is_finite() && b.amount > 0.0 && !b.currency.trim().is_empty() => InboundKind::Pay(b),
                Ok(_) => return self.bad_body(now, &msg, "PAY needs a positive amount and a currency".into()),
                Err(why) => return self.bad_body(now, &msg, why),
            },
            MessageType::Auth => match parse_body::<AuthBody>(&msg) {
                Ok(b) => InboundKind::Auth(b),
                Err(why) => return self.bad_body(now, &msg, why),
            },
            other => {
                let m = format!("a client does not send {other}");
                let body = error_body(codes::BAD_MESSAGE, m, Some(json!({"field": "type"})), Some(id.clone()));
                return self.reject(now, Some(&id), body, ErrorKind::Protocol);
            }
        };
        self.events.push_back(ServerEvent::Inbound(inbound(&msg, id, kind)));
    }

    fn on_hello(&mut self, now: Millis, msg: Message) {
        let id = msg.message_id().to_string();
        if self.state == ServerState::Ready || self.hello.is_some() {
            let m = match self.state {
                ServerState::Ready => "the session is already established",
                _ => "a HELLO is already being answered",
            };
            let body = error_body(codes::NOT_READY, m, None, Some(id.clone()));
            return self.reject(now, Some(&id), body, ErrorKind::State);
        }
        let hello = match msg.body {
            None => HelloBody {
                min_version: 1,
                max_version: 1,
            },
            Some(_) => match parse_body::<HelloBody>(&msg) {
                Ok(h) if h.min_version <= h.max_version => h,
                Ok(_) => return self.bad_body(now, &msg, "HELLO min_version is above max_version".into()),
                Err(why) => return self.bad_body(now, &msg, why),
            },
        };
        let lo = hello.min_version.max(self.cfg.min_version);
        let hi = hello.max_version.min(self.cfg.max_version);
        if lo > hi {
            let m = format!(
                "no common version: client speaks {}..={}, server {}..={}",
                hello.min_version, hello.max_version, self.cfg.min_version, self.cfg.max_version
            );
            let details = json!({"min_version": self.cfg.min_version, "max_version": self.cfg.max_version});
            let body = error_body(codes::VERSION_UNSUPPORTED, m, Some(details), Some(id.clone()));
            return self.reject(now, Some(&id), body, ErrorKind::Version);
        }
        let hello = PendingHello {
            id: id.clone(),
            session_id: msg.header("Session-ID").unwrap_or_default().to_string(),
            agreed_version: hi,
            client: PeerInfo {
                from: msg.header("From").map(str::to_string),
                user_agent: msg.header("User-Agent").map(str::to_string),
                capabilities: split_list(msg.header("Capabilities")),
            },
            extended: false,
        };
        if msg.header("Authorization").is_none() {
            return self.ready(now, hello);
        }
        // Checked by the application, as the header of any other message.
        self.hello = Some(hello);
        self.events
            .push_back(ServerEvent::Inbound(inbound(&msg, id, InboundKind::Hello)));
    }

    /// HELLO_ACK: the session is ready.
    fn ready(&mut self, now: Millis, hello: PendingHello) {
        // The client chose the session id; every message of the session shares it.
        self.session_id = hello.session_id;
        self.state = ServerState::Ready;
        self.active(now);
        let ack_id = self.entropy.uuid_v4();
        let mut ack = self.message(MessageType::HelloAck, ack_id, Some(&hello.id), now);
        ack.headers.set("User-Agent", self.cfg.user_agent.as_str());
        if !self.cfg.capabilities.is_empty() {
            ack.headers.set("Capabilities", self.cfg.capabilities.join(","));
        }
        ack.body = Some(compact(
            &json!({"agreed_version": hello.agreed_version, "session_timeout": self.cfg.session_timeout_s}),
        ));
        self.send(&ack);
        self.events.push_back(ServerEvent::Ready {
            client: hello.client,
            agreed_version: hello.agreed_version,
        });
    }
}

/// The application's view of a message of `kind`.
fn inbound(msg: &Message, id: String, kind: InboundKind) -> Inbound {
    Inbound {
        id,
        kind,
        from: msg.header("From").map(str::to_string),
        to: msg.header("To").map(str::to_string),
        authorization: msg.header("Authorization").map(str::to_string),
        priority: msg.header("Priority").and_then(Priority::parse).unwrap_or_default(),
        ttl_s: msg.ttl(),
    }
}

fn valid_key(key: &str, namespace: Option<&str>) -> bool {
    !key.is_empty() && namespace.is_none_or(|n| !n.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;
    use agentwire_core::SeededEntropy;

    fn session() -> ServerSession {
        ServerSession::new(ServerConfig::default(), Box::new(SeededEntropy::new(1)))
    }

    #[test]
    fn every_reply_that_finishes_a_request_closes_its_stream() {
        let mut s = session();
        for n in 0..100 {
            let id = format!("m{n}");
            s.stream_begin(0, &id, &json!({"intent": "echo"}));
            assert_eq!(s.stream_data(0, &id, &json!(n)).unwrap(), 0);
            if n % 2 == 0 {
                let body = error_body(500, "failed mid-stream", None, Some(id.clone()));
                s.error(0, Some(&id), &body, None);
            } else {
                s.respond(0, &id, &json!({"intent": "echo"}));
            }
        }
        assert_eq!(s.streams.len(), 0);
        s.stream_begin(0, "open", &json!({}));
        s.handle_close(0, 1000, "");
        assert_eq!(
            s.streams.len(),
            0,
            "the session's end closes what the application left open"
        );
    }

    #[test]
    fn stream_data_without_stream_begin_is_a_state_error_and_sends_nothing() {
        let mut s = session();
        let e = s.stream_data(0, "m1", &json!(1)).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::State);
        assert!(s.poll_transmit().is_none());
        assert_eq!(s.streams.len(), 0);
        s.stream_begin(0, "m1", &json!({}));
        assert_eq!(s.stream_data(0, "m1", &json!(1)).unwrap(), 0);
        assert_eq!(s.stream_data(0, "m1", &json!(2)).unwrap(), 1);
        s.stream_end(0, "m1");
        assert_eq!(s.streams.len(), 0);
    }
}
