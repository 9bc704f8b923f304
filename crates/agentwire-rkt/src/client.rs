//! The client session: HELLO/HELLO_ACK, requests correlated by `Reply-To`, streams in `Seq`
//! order, TTL expiry, AUTH, PAY, memory, discovery, ping, GOODBYE.

use crate::body::*;
use crate::codec::{self, decode, encode, DecodeError, Message, MessageType};
use crate::envelope::{check_capabilities, check_header_value, compact, envelope};
use crate::errors::RktError;
use agentwire_core::text::{clip, QUOTE_MAX};
use agentwire_core::{Entropy, ErrorKind, Millis, Outgoing, Timers};
use serde_json::{json, Value};
use std::collections::{HashMap, VecDeque};

/// How a client session is set up. `Default` gives the guide's values. `Debug` hides the
/// `authorization`.
#[derive(Clone)]
pub struct ClientConfig {
    pub user_agent: String,
    pub from: Option<String>,
    pub capabilities: Vec<String>,
    pub min_version: u32,
    pub max_version: u32,
    /// `TTL` of each message, in seconds; also how long a request waits for its reply. At least 1.
    pub ttl_s: u32,
    pub max_message_size: usize,
    /// Requests sent or queued and not yet answered; past it, commands fail with `limit`.
    pub max_in_flight: usize,
    /// Out-of-order stream chunks held per stream; past it, the stream fails with `limit`.
    pub max_stream_buffer: usize,
    /// Bytes of out-of-order chunks held over all streams; past it, the stream fails with `limit`.
    pub max_stream_buffer_bytes: usize,
    /// How long HELLO waits for HELLO_ACK, in milliseconds. At least 1.
    pub handshake_timeout_ms: u64,
    /// `Bearer <key>`: sent as an AUTH message right after HELLO_ACK, before anything queued.
    /// It ends as `AuthOk`, or, refused or unanswered, as [`ClientEvent::Error`] (when the
    /// connection closes first, only `Closed` comes).
    pub authorization: Option<String>,
    /// Send a PING when nothing was sent for half the server's `session_timeout` (or, for a
    /// timeout over 65 s, sooner, to leave 65 s before it ends, but after at least a quarter of
    /// it); one without a PONG within `ttl_s` closes the connection (an [`ClientEvent::Error`]
    /// of kind `timeout`) when it left, the peer has answered a PING before, and nothing
    /// arrived since.
    pub keepalive: bool,
}

impl std::fmt::Debug for ClientConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Every field named: a new one fails to compile here until it is printed.
        let ClientConfig {
            user_agent,
            from,
            capabilities,
            min_version,
            max_version,
            ttl_s,
            max_message_size,
            max_in_flight,
            max_stream_buffer,
            max_stream_buffer_bytes,
            handshake_timeout_ms,
            authorization,
            keepalive,
        } = self;
        f.debug_struct("ClientConfig")
            .field("user_agent", user_agent)
            .field("from", from)
            .field("capabilities", capabilities)
            .field("min_version", min_version)
            .field("max_version", max_version)
            .field("ttl_s", ttl_s)
            .field("max_message_size", max_message_size)
            .field("max_in_flight", max_in_flight)
            .field("max_stream_buffer", max_stream_buffer)
            .field("max_stream_buffer_bytes", max_stream_buffer_bytes)
            .field("handshake_timeout_ms", handshake_timeout_ms)
            .field("authorization", &agentwire_core::redact::redacted(authorization))
            .field("keepalive", keepalive)
            .finish()
    }
}

impl Default for ClientConfig {
    fn default() -> Self {
        ClientConfig {
            user_agent: format!("agentwire/{}", env!("CARGO_PKG_VERSION")),
            from: None,
            capabilities: Vec::new(),
            min_version: 1,
            max_version: 1,
            ttl_s: 30,
            max_message_size: codec::DEFAULT_MAX_MESSAGE_SIZE,
            max_in_flight: 1024,
            max_stream_buffer: 1024,
            max_stream_buffer_bytes: 8 << 20,
            handshake_timeout_ms: 10_000,
            authorization: None,
            keepalive: true,
        }
    }
}

impl ClientConfig {
    /// The configuration refused (kind `invalid`, naming the field) where no session could work
    /// with it: a `ttl_s` or `handshake_timeout_ms` of 0 would time every request, or the
    /// handshake, out at once; a `from`, `user_agent` or capability with a control character
    /// (tab apart; CR and LF included) or DEL, or a capability with a comma, would make a HELLO
    /// the server cannot read (or that splits the capability in two).
    /// [`ClientSession::handle_open`] checks it.
    pub fn check(&self) -> Result<(), RktError> {
        if let Some(from) = &self.from {
            check_header_value("from", from)?;
        }
        check_header_value("user_agent", &self.user_agent)?;
        check_capabilities(&self.capabilities)?;
        if self.ttl_s == 0 {
            return Err(RktError::local(ErrorKind::Invalid, "ttl_s must be at least 1 second"));
        }
        if self.handshake_timeout_ms == 0 {
            return Err(RktError::local(
                ErrorKind::Invalid,
                "handshake_timeout_ms must be at least 1",
            ));
        }
        Ok(())
    }
}

/// Where the session is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClientState {
    /// Created; `handle_open` not called yet.
    Idle,
    /// HELLO sent, waiting for HELLO_ACK.
    Handshaking,
    Ready,
    Closed,
}

/// What the server said about itself in HELLO_ACK.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct PeerInfo {
    pub from: Option<String>,
    pub user_agent: Option<String>,
    pub capabilities: Vec<String>,
}

/// Options of one request.
#[derive(Debug, Clone, Default)]
pub struct RequestOptions {
    pub stream: bool,
    pub priority: Option<Priority>,
    /// Overrides `ClientConfig::ttl_s` for this request.
    pub ttl_s: Option<u32>,
    /// The `To` header. A control character in it (tab apart; CR and LF included) or DEL is
    /// refused `invalid` by [`ClientSession::request`].
    pub to: Option<String>,
    /// The body's `context`; a JSON `null` is the same as none (the body has no `context`).
    /// Written as compact JSON from the value, not from any text it was read from: see
    /// [`ClientSession::request`].
    pub context: Option<Value>,
}

/// Everything the session reports. Bodies are raw JSON text.
#[derive(Debug, Clone, PartialEq)]
pub enum ClientEvent {
    Ready {
        agreed_version: u32,
        session_timeout: u64,
        server: PeerInfo,
    },
    /// The RESPONSE to a REQUEST, DISCOVER, MEMORY_SET, MEMORY_GET or PAY.
    Response {
        id: String,
        body: Option<String>,
    },
    StreamBegin {
        id: String,
        body: Option<String>,
    },
    /// Delivered in `Seq` order, each `seq` once.
    StreamData {
        id: String,
        seq: u64,
        body: Option<String>,
    },
    StreamEnd {
        id: String,
        body: Option<String>,
    },
    AuthOk {
        id: String,
        auth: AuthOkBody,
    },
    Pong {
        id: String,
        rtt_ms: u64,
    },
    /// A command failed: an ERROR reply, its TTL ran out, it was cancelled, the connection
    /// closed, or its stream had a gap.
    Failed {
        id: String,
        error: RktError,
    },
    /// Something went wrong that belongs to no command: a malformed frame (dropped; the session
    /// goes on), an unsolicited ERROR, a failed handshake.
    Error(RktError),
    /// The server said GOODBYE.
    Goodbye,
    /// The connection is over; every pending command has had its `Failed`.
    Closed {
        code: u16,
        reason: String,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Op {
    Request,
    Discover,
    MemorySet,
    MemoryGet,
    Pay,
    Auth,
    Ping,
}

#[derive(Debug, Default)]
struct StreamState {
    next_seq: u64,
    held: Held,
}

/// Out-of-order chunks by Seq, in a vector sorted by Seq (at most `max_stream_buffer` of them):
/// far less wasm than a `BTreeMap` of its own.
#[derive(Debug, Default)]
struct Held(Vec<(u64, Option<String>)>);

impl Held {
    fn find(&self, seq: u64) -> Result<usize, usize> {
        self.0.binary_search_by_key(&seq, |(s, _)| *s)
    }

    fn contains(&self, seq: u64) -> bool {
        self.find(seq).is_ok()
    }

    fn insert(&mut self, seq: u64, body: Option<String>) {
        match self.find(seq) {
            Ok(i) => self.0[i].1 = body,
            Err(i) => self.0.insert(i, (seq, body)),
        }
    }

    fn remove(&mut self, seq: u64) -> Option<Option<String>> {
        self.find(seq).ok().map(|i| self.0.remove(i).1)
    }

    fn last(&self) -> Option<u64> {
        self.0.last().map(|(s, _)| *s)
    }

    fn bytes(&self) -> usize {
        self.0.iter().map(|(_, b)| b.as_ref().map_or(0, String::len)).sum()
    }
}

#[derive(Debug)]
struct Pending {
    op: Op,
    ttl_ms: u64,
    sent_at: Millis,
    stream: Option<StreamState>,
    origin: Origin,
}

/// Whose a command is. The session's own are not counted under `max_in_flight`; a keepalive
/// PING ends silently. The AUTH of [`ClientConfig::authorization`] completes the handshake:
/// `Ready` waits for it and comes just before its `AuthOk`; refused or unanswered, it is a
/// [`ClientEvent::Error`] and the session closes (no `Ready`); when the connection closes first
/// only `Closed` says so.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Origin {
    User,
    Keepalive,
    ConfiguredAuth,
}

#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
enum Timer {
    Handshake,
    Keepalive,
    Reply(String),
}

struct Queued {
    priority: Priority,
    id: String,
    msg: Message,
}

/// Ids of commands that ended early (cancelled, timed out) whose late replies are dropped quietly.
const FORGOTTEN_CAP: usize = 256;

/// How late a keepalive timer may fire and still keep the session: Chrome runs the timers of a
/// tab hidden for five minutes once a minute.
const KEEPALIVE_LATE_MS: u64 = 65_000;

pub struct ClientSession {
    cfg: ClientConfig,
    entropy: Box<dyn Entropy + Send>,
    session_id: String,
    state: ClientState,
    hello_id: Option<String>,
    pending: HashMap<String, Pending>,
    /// Pending commands of the session's own (not [`Origin::User`]).
    own_pending: usize,
    /// When a frame last arrived (any: a sign of life).
    last_received: Millis,
    /// The peer has answered a PING on this connection (PING is an added type).
    pong_seen: bool,
    queue: Vec<Queued>,
    forgotten: VecDeque<String>,
    timers: Timers<Timer>,
    /// Bytes of out-of-order stream chunks held, over all streams.
    held_bytes: usize,
    /// `Ready`, held until the AUTH of [`ClientConfig::authorization`] is taken.
    held_ready: Option<ClientEvent>,
    session_timeout_ms: u64,
    last_sent: Millis,
    /// Frames not yet polled, a command's with its id: a command that ends before its frame is
    /// polled (cancelled, timed out) is never sent, so a driver whose socket is backed up holds
    /// at most `max_in_flight` commands' frames, however many calls are made and dropped.
    transmit: VecDeque<(Outgoing, Option<String>)>,
    events: VecDeque<ClientEvent>,
}

/// Its state and how much it holds, never its configuration (which may carry a key).
impl std::fmt::Debug for ClientSession {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClientSession")
            .field("state", &self.state)
            .field("pending", &self.pending.len())
            .field("events", &self.events.len())
            .finish_non_exhaustive()
    }
}

impl ClientSession {
    pub fn new(cfg: ClientConfig, mut entropy: Box<dyn Entropy + Send>) -> Self {
        let session_id = entropy.uuid_v4();
        ClientSession {
            cfg,
            entropy,
            session_id,
            state: ClientState::Idle,
            hello_id: None,
            pending: HashMap::new(),
            own_pending: 0,
            last_received: 0,
            pong_seen: false,
            queue: Vec::new(),
            forgotten: VecDeque::new(),
            timers: Timers::new(),
            held_bytes: 0,
            held_ready: None,
            session_timeout_ms: 0,
            last_sent: 0,
            transmit: VecDeque::new(),
            events: VecDeque::new(),
        }
    }

    pub fn state(&self) -> ClientState {
        self.state
    }

    pub fn session_id(&self) -> &str {
        &self.session_id
    }

    /// Commands sent or queued and not yet finished (queued ones are tracked as pending too);
    /// the session's own keepalive PINGs and its automatic AUTH are not counted, so they never
    /// take a user's place under `max_in_flight`.
    pub fn in_flight(&self) -> usize {
        self.pending.len() - self.own_pending
    }

    // ---- inputs -------------------------------------------------------------------------

    /// The socket is open: send HELLO; or, with a configuration [`ClientConfig::check`] refuses,
    /// an [`ClientEvent::Error`] naming the field, then the close (1000).
    pub fn handle_open(&mut self, now: Millis) {
        if self.state != ClientState::Idle {
            return;
        }
        if let Err(e) = self.cfg.check() {
            self.events.push_back(ClientEvent::Error(e));
            self.close(1000, "invalid configuration");
            return;
        }
        let id = self.entropy.uuid_v4();
        let mut msg = self.new_message(MessageType::Hello, id.clone(), now, Some(self.cfg.ttl_s));
        self.describe_self(&mut msg);
        msg.body = Some(compact(
            &json!({"min_version": self.cfg.min_version, "max_version": self.cfg.max_version}),
        ));
        self.hello_id = Some(id);
        self.state = ClientState::Handshaking;
        self.timers
            .set(Timer::Handshake, now.saturating_add(self.cfg.handshake_timeout_ms));
        self.send(now, &msg);
    }

    /// A text frame arrived.
    pub fn handle_text(&mut self, now: Millis, text: &str) {
        if self.state == ClientState::Closed {
            return;
        }
        self.last_received = now;
        match decode(text, self.cfg.max_message_size) {
            Ok(msg) => self.on_message(now, msg),
            Err(e) => {
                let answers = e.reply_to.clone().or_else(|| body_request_id(&e, text));
                self.on_undecodable(&e, answers.as_deref())
            }
        }
    }

    /// A message that could not be decoded, answering `reply_to` (its `Reply-To`, or an ERROR's
    /// body `request_id`) when that can still be read. When it names a command that went out,
    /// that command fails with the decode error at once (not retryable: the server may have
    /// acted on it), rather than waiting for its TTL; a stream loses no chunk unnoticed. An
    /// unreadable answer to HELLO ends the handshake. Anything else is an `Error` event.
    fn on_undecodable(&mut self, e: &DecodeError, reply_to: Option<&str>) {
        let error = RktError::decode(e);
        if self.state == ClientState::Handshaking && reply_to.is_some() && reply_to == self.hello_id.as_deref() {
            self.events.push_back(ClientEvent::Error(error));
            return self.close(1002, "bad HELLO_ACK");
        }
        // Ended as any command ended before its reply: a late copy of the answer is dropped.
        let taken = match reply_to {
            Some(id) if !self.is_queued(id) => self.end_early(id).map(|(p, _)| (id.to_string(), p)),
            _ => None,
        };
        match taken {
            Some((id, p)) => {
                self.timers.cancel(&Timer::Reply(id.clone()));
                let error = error.for_request(&id);
                self.end(p.origin, ClientEvent::Failed { id, error });
            }
            // A late reply to a command that already ended, as `on_reply` and `on_error` drop.
            None if reply_to.is_some_and(|id| self.forgotten.iter().any(|f| f == id)) => {}
            None => {
                let error = match reply_to {
                    Some(id) => error.for_request(id),
                    None => error,
                };
                self.events.push_back(ClientEvent::Error(error));
            }
        }
    }

    /// A binary frame arrived: RKT is a text protocol, so it is reported and dropped.
    pub fn handle_binary(&mut self, now: Millis, bytes: &[u8]) {
        self.last_received = now;
        let e = RktError::local(
            ErrorKind::Decode,
            format!("binary frame of {} bytes: RKT messages are text", bytes.len()),
        );
        self.events.push_back(ClientEvent::Error(e));
    }

    /// The socket closed (by either side).
    pub fn handle_close(&mut self, _now: Millis, code: u16, reason: &str) {
        self.finish(code, reason);
    }

    pub fn handle_timeout(&mut self, now: Millis) {
        for timer in self.timers.expire(now) {
            match timer {
                Timer::Handshake => {
                    let e = RktError::local(ErrorKind::Timeout, "no HELLO_ACK before the handshake timeout");
                    self.events.push_back(ClientEvent::Error(e));
                    self.close(1000, "handshake timeout");
                }
                Timer::Reply(id) => {
                    if let Some((p, sent)) = self.end_early(&id) {
                        if p.origin == Origin::Keepalive {
                            self.keepalive_expired(sent, &p);
                            continue;
                        }
                        let msg = format!("no reply within the TTL of {} s", p.ttl_ms / 1000);
                        let error = RktError::local(ErrorKind::Timeout, msg).for_request(&id);
                        self.end(p.origin, ClientEvent::Failed { id, error });
                    }
                }
                Timer::Keepalive => {
                    if self.state == ClientState::Ready {
                        if now.saturating_sub(self.last_sent) >= self.keepalive_after() {
                            let id = self.entropy.uuid_v4();
                            let msg = self.new_message(MessageType::Ping, id.clone(), now, Some(self.cfg.ttl_s));
                            self.track(now, id.clone(), Op::Ping, self.cfg.ttl_s, false, Origin::Keepalive);
                            self.send_command(now, &msg, id);
                        }
                        self.arm_keepalive();
                    }
                }
            }
        }
    }

    // ---- outputs ------------------------------------------------------------------------

    pub fn poll_transmit(&mut self) -> Option<Outgoing> {
        self.transmit.pop_front().map(|(frame, _)| frame)
    }

    pub fn poll_event(&mut self) -> Option<ClientEvent> {
        self.events.pop_front()
    }

    pub fn poll_timeout(&self) -> Option<Millis> {
        self.timers.next()
    }

    // ---- commands -----------------------------------------------------------------------

    /// Sends a REQUEST for `intent`; returns its Message-ID. Replies come as `Response`, or as
    /// `StreamBegin`/`StreamData`/`StreamEnd` when `opts.stream`. An empty `intent`, or an
    /// `opts.to` no header can carry (a control character but tab, or DEL), is `invalid`.
    ///
    /// `params` and `opts.context` are written as compact JSON from the value, not as any text
    /// it was parsed from (with [`crate::json::json_arg`], as the bindings do): a
    /// `serde_json::Value` without `preserve_order` has its keys sorted and keeps the last of
    /// two equal keys, a number with an exponent or a fraction is a float (`1e3` is sent as
    /// `1000.0`, `-0` as `-0.0`), and an integer past `u64` is a float (`docs/protocols/rkt.md`,
    /// "JSON arguments").
    pub fn request(
        &mut self,
        now: Millis,
        intent: &str,
        params: Option<Value>,
        opts: RequestOptions,
    ) -> Result<String, RktError> {
        if intent.trim().is_empty() {
            return Err(RktError::local(ErrorKind::Invalid, "intent must not be empty"));
        }
        if let Some(to) = &opts.to {
            check_header_value("to", to)?;
        }
        let body = RequestBody {
            intent: intent.to_string(),
            params,
            context: opts.context.clone().filter(|c| !c.is_null()),
        };
        let ttl = opts.ttl_s.unwrap_or(self.cfg.ttl_s);
        self.command(
            now,
            MessageType::Request,
            Op::Request,
            ttl,
            opts.priority,
            opts.stream,
            |m| {
                if let Some(to) = &opts.to {
                    m.headers.set("To", to.as_str());
                }
                if opts.stream {
                    m.headers.set("Stream", "true");
                }
                m.body = Some(serde_json::to_string(&body).unwrap_or_default());
            },
        )
    }

    /// Sends DISCOVER; the manifest comes as the `Response` body.
    pub fn discover(&mut self, now: Millis) -> Result<String, RktError> {
        self.command(
            now,
            MessageType::Discover,
            Op::Discover,
            self.cfg.ttl_s,
            None,
            false,
            |_| {},
        )
    }

    /// Sends MEMORY_SET; the acknowledgement comes as the `Response` body. An empty `key` is
    /// `invalid`. `value` is written as compact JSON from the value, not as any text it was
    /// parsed from, as `params` in [`ClientSession::request`]: keys sorted, `1e3` as `1000.0`.
    pub fn memory_set(
        &mut self,
        now: Millis,
        key: &str,
        value: Value,
        namespace: Option<&str>,
        ttl_s: Option<u64>,
    ) -> Result<String, RktError> {
        if key.is_empty() {
            return Err(RktError::local(ErrorKind::Invalid, "memory key must not be empty"));
        }
        let body = MemorySetBody {
            key: key.into(),
            value,
            namespace: namespace.map(Into::into),
            ttl: ttl_s,
        };
        self.command(
            now,
            MessageType::MemorySet,
            Op::MemorySet,
            self.cfg.ttl_s,
            None,
            false,
            |m| {
                m.body = Some(serde_json::to_string(&body).unwrap_or_default());
            },
        )
    }

    pub fn memory_get(&mut self, now: Millis, key: &str, namespace: Option<&str>) -> Result<String, RktError> {
        if key.is_empty() {
            return Err(RktError::local(ErrorKind::Invalid, "memory key must not be empty"));
        }
        let body = MemoryGetBody {
            key: key.into(),
            namespace: namespace.map(Into::into),
        };
        self.command(
            now,
            MessageType::MemoryGet,
            Op::MemoryGet,
            self.cfg.ttl_s,
            None,
            false,
            |m| {
                m.body = Some(serde_json::to_string(&body).unwrap_or_default());
            },
        )
    }

    /// Sends PAY; the receipt comes as the `Response` body. An `amount` that is not positive
    /// and finite, an empty `currency`, or a `recipient` no header can carry (it goes in `To`
    /// too: a control character but tab, or DEL) is `invalid`.
    pub fn pay(
        &mut self,
        now: Millis,
        amount: f64,
        currency: &str,
        description: Option<&str>,
        recipient: Option<&str>,
    ) -> Result<String, RktError> {
        if !(amount.is_finite() && amount > 0.0) {
            return Err(RktError::local(
                ErrorKind::Invalid,
                "amount must be a positive finite number",
            ));
        }
        if currency.trim().is_empty() {
            return Err(RktError::local(ErrorKind::Invalid, "currency must not be empty"));
        }
        if let Some(r) = recipient {
            check_header_value("recipient", r)?;
        }
        let body = PayBody {
            amount,
            currency: currency.into(),
            description: description.map(Into::into),
            recipient: recipient.map(Into::into),
        };
        self.command(now, MessageType::Pay, Op::Pay, self.cfg.ttl_s, None, false, |m| {
            if let Some(r) = recipient {
                m.headers.set("To", r);
            }
            m.body = Some(serde_json::to_string(&body).unwrap_or_default());
        })
    }

    /// Sends AUTH; success comes as `AuthOk` with the session token.
    pub fn auth(&mut self, now: Millis, auth: AuthBody) -> Result<String, RktError> {
        self.command(
            now,
            MessageType::Auth,
            Op::Auth,
            self.cfg.ttl_s,
            Some(Priority::Urgent),
            false,
            |m| {
                m.body = Some(serde_json::to_string(&auth).unwrap_or_default());
            },
        )
    }

    /// Sends PING; the round trip comes as `Pong { rtt_ms }`.
    pub fn ping(&mut self, now: Millis) -> Result<String, RktError> {
        self.command(now, MessageType::Ping, Op::Ping, self.cfg.ttl_s, None, false, |_| {})
    }

    /// Ends a command early: it gets `Failed` with `cancelled`, a late reply is dropped. Returns
    /// false when the id is not pending.
    pub fn cancel(&mut self, id: &str) -> bool {
        if self.end_early(id).is_none() {
            return false;
        }
        self.timers.cancel(&Timer::Reply(id.to_string()));
        let error = RktError::local(ErrorKind::Cancelled, "cancelled").for_request(id);
        self.events.push_back(ClientEvent::Failed {
            id: id.to_string(),
            error,
        });
        true
    }

    /// Says GOODBYE and closes with 1000.
    pub fn goodbye(&mut self, now: Millis) {
        if matches!(self.state, ClientState::Handshaking | ClientState::Ready) {
            let id = self.entropy.uuid_v4();
            let msg = self.new_message(MessageType::Goodbye, id, now, Some(self.cfg.ttl_s));
            self.send(now, &msg);
        }
        self.close(1000, "goodbye");
    }

    // ---- internals ----------------------------------------------------------------------

    fn new_message(&self, kind: MessageType, id: String, now: Millis, ttl: Option<u32>) -> Message {
        envelope(kind, id, None, &self.session_id, now, ttl)
    }

    fn describe_self(&self, msg: &mut Message) {
        if let Some(from) = &self.cfg.from {
            msg.headers.set("From", from.as_str());
        }
        msg.headers.set("User-Agent", self.cfg.user_agent.as_str());
        if !self.cfg.capabilities.is_empty() {
            msg.headers.set("Capabilities", self.cfg.capabilities.join(","));
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn command(
        &mut self,
        now: Millis,
        kind: MessageType,
        op: Op,
        ttl: u32,
        priority: Option<Priority>,
        stream: bool,
        fill: impl FnOnce(&mut Message),
    ) -> Result<String, RktError> {
        if self.state == ClientState::Closed {
            return Err(RktError::local(ErrorKind::Closed, "the session is closed"));
        }
        if self.in_flight() >= self.cfg.max_in_flight {
            let msg = format!("{} commands already in flight (max_in_flight)", self.in_flight());
            return Err(RktError::local(ErrorKind::Limit, msg));
        }
        if ttl == 0 {
            return Err(RktError::local(ErrorKind::Invalid, "ttl_s must be at least 1 second"));
        }
        let id = self.entropy.uuid_v4();
        let mut msg = self.new_message(kind, id.clone(), now, Some(ttl));
        if let Some(p) = priority {
            msg.headers.set("Priority", p.as_str());
        }
        fill(&mut msg);
        let size = encode(&msg).len();
        if size > self.cfg.max_message_size {
            let m = format!(
                "message of {size} bytes exceeds max_message_size {}",
                self.cfg.max_message_size
            );
            return Err(RktError::local(ErrorKind::Limit, m));
        }
        self.track(now, id.clone(), op, ttl, stream, Origin::User);
        if self.state == ClientState::Ready {
            self.send_command(now, &msg, id.clone());
        } else {
            // Sent on HELLO_ACK, highest priority first, in call order within a priority.
            self.queue.push(Queued {
                priority: priority.unwrap_or_default(),
                id: id.clone(),
                msg,
            });
        }
        Ok(id)
    }

    fn track(&mut self, now: Millis, id: String, op: Op, ttl: u32, stream: bool, origin: Origin) {
        let ttl_ms = u64::from(ttl) * 1000;
        self.timers.set(Timer::Reply(id.clone()), now.saturating_add(ttl_ms));
        let stream = stream.then(StreamState::default);
        self.own_pending += usize::from(origin != Origin::User);
        let replaced = self.pending.insert(
            id,
            Pending {
                op,
                ttl_ms,
                sent_at: now,
                stream,
                origin,
            },
        );
        // Ids are random UUIDs: a repeat is as good as impossible, but the count stays exact.
        self.own_pending -= replaced.map_or(0, |p| usize::from(p.origin != Origin::User));
    }

    /// A command's terminal event, as its [`Origin`] reports it.
    fn end(&mut self, origin: Origin, event: ClientEvent) {
        let event = match (origin, event) {
            (Origin::User, event) => event,
            (Origin::Keepalive, _) => return,
            (Origin::ConfiguredAuth, ClientEvent::Failed { id, error }) => {
                self.held_ready = None;
                if error.kind() == ErrorKind::Closed {
                    return; // `Closed` follows
                }
                let mut error = error.for_request(&id);
                error.error.message = format!(
                    "the AUTH sent for the configured authorization failed: {}",
                    error.error.message
                );
                self.events.push_back(ClientEvent::Error(error));
                return self.close(1000, "the configured authorization failed");
            }
            (Origin::ConfiguredAuth, event) => {
                self.events.extend(self.held_ready.take());
                event
            }
        };
        self.events.push_back(event);
    }

    fn send(&mut self, now: Millis, msg: &Message) {
        self.last_sent = now;
        self.transmit.push_back((Outgoing::Text(encode(msg)), None));
    }

    /// Sends the frame of the pending command `id` (taken back if the command ends unsent).
    fn send_command(&mut self, now: Millis, msg: &Message, id: String) {
        self.last_sent = now;
        self.transmit.push_back((Outgoing::Text(encode(msg)), Some(id)));
    }

    /// A keepalive PING's TTL passed without a PONG. The connection is taken as dead (a peer
    /// gone without a close would otherwise wait for the kernel, minutes) only when the PING
    /// left, the peer has answered a PING before, and nothing at all arrived since: a PING held
    /// behind a long write, a PONG behind a long stream, or a peer that ignores PINGs is not.
    fn keepalive_expired(&mut self, sent: bool, ping: &Pending) {
        if !(sent && self.pong_seen && self.last_received < ping.sent_at) {
            return;
        }
        let m = format!(
            "no PONG to the keepalive PING within {} s and nothing else arrived: the connection is taken as dead",
            ping.ttl_ms / 1000
        );
        self.events
            .push_back(ClientEvent::Error(RktError::local(ErrorKind::Timeout, m)));
        self.close(1000, "keepalive PING unanswered");
    }

    fn arm_keepalive(&mut self) {
        if self.cfg.keepalive && self.session_timeout_ms >= 2000 {
            let at = self.last_sent.saturating_add(self.keepalive_after());
            self.timers.set(Timer::Keepalive, at);
        }
    }

    /// How long after the last message sent the keepalive PING is due: half the server's
    /// `session_timeout`, or, when that is longer than [`KEEPALIVE_LATE_MS`], sooner, so that it
    /// leaves that much before the session ends (a timer in a hidden browser tab may fire up to a
    /// minute late), but never sooner than a quarter of it.
    fn keepalive_after(&self) -> u64 {
        match self.session_timeout_ms {
            t if t <= KEEPALIVE_LATE_MS => t / 2,
            t => (t / 2).min((t - KEEPALIVE_LATE_MS).max(t / 4)),
        }
    }

    fn forget(&mut self, id: String) {
        if self.forgotten.len() == FORGOTTEN_CAP {
            self.forgotten.pop_front();
        }
        self.forgotten.push_back(id);
    }

    fn close(&mut self, code: u16, reason: &str) {
        if self.state == ClientState::Closed {
            return;
        }
        let close = Outgoing::Close {
            code,
            reason: reason.to_string(),
        };
        self.transmit.push_back((close, None));
        self.finish(code, reason);
    }

    fn finish(&mut self, code: u16, reason: &str) {
        if self.state == ClientState::Closed {
            return;
        }
        self.state = ClientState::Closed;
        // The frames of the commands this fails are taken back, as for any command ended before
        // its frame left (a GOODBYE or close frame already queued still goes).
        self.transmit.retain(|(_, of)| of.is_none());
        let mut ids: Vec<(Millis, String, Origin)> =
            self.pending.drain().map(|(id, p)| (p.sent_at, id, p.origin)).collect();
        self.own_pending = 0;
        // Ids are unique: the same order as a stable sort.
        ids.sort_unstable_by(|a, b| (a.0, &a.1).cmp(&(b.0, &b.1)));
        self.queue.clear();
        self.held_bytes = 0;
        for (_, id, origin) in ids {
            let m = format!("connection closed ({code} {reason}) before a reply");
            let error = RktError::local(ErrorKind::Closed, m).for_request(&id);
            self.end(origin, ClientEvent::Failed { id, error });
        }
        self.timers.clear();
        self.events.push_back(ClientEvent::Closed {
            code,
            reason: reason.to_string(),
        });
    }

    fn on_message(&mut self, now: Millis, msg: Message) {
        match msg.kind {
            MessageType::HelloAck => self.on_hello_ack(now, msg),
            MessageType::Goodbye => {
                self.events.push_back(ClientEvent::Goodbye);
                self.close(1000, "goodbye");
            }
            MessageType::Ping => {
                let id = self.entropy.uuid_v4();
                let pong = envelope(
                    MessageType::Pong,
                    id,
                    Some(msg.message_id()),
                    &self.session_id,
                    now,
                    None,
                );
                self.send(now, &pong);
            }
            MessageType::Error => self.on_error(msg),
            MessageType::Response
            | MessageType::StreamBegin
            | MessageType::StreamData
            | MessageType::StreamEnd
            | MessageType::AuthOk
            | MessageType::Pong => self.on_reply(now, msg),
            other => {
                let e = RktError::local(ErrorKind::Protocol, format!("a server does not send {other}; dropped"));
                self.events
                    .push_back(ClientEvent::Error(e.for_request(msg.message_id())));
            }
        }
    }

    fn on_hello_ack(&mut self, now: Millis, msg: Message) {
        if self.state != ClientState::Handshaking || msg.reply_to() != self.hello_id.as_deref() {
            let e = RktError::local(ErrorKind::Protocol, "unexpected HELLO_ACK; dropped");
            self.events.push_back(ClientEvent::Error(e));
            return;
        }
        let ack = match msg.body.as_deref().map(HelloAckBody::from_json) {
            Some(Ok(ack)) => ack,
            _ => {
                let e = RktError::local(
                    ErrorKind::Decode,
                    "HELLO_ACK body is not {agreed_version, session_timeout}",
                );
                self.events.push_back(ClientEvent::Error(e));
                self.close(1002, "bad HELLO_ACK");
                return;
            }
        };
        if !(self.cfg.min_version..=self.cfg.max_version).contains(&ack.agreed_version) {
            let m = format!(
                "server agreed version {} outside {}..={}",
                ack.agreed_version, self.cfg.min_version, self.cfg.max_version
            );
            let mut e = RktError::local(ErrorKind::Version, m);
            e.error.code = Some(crate::errors::codes::VERSION_UNSUPPORTED);
            self.events.push_back(ClientEvent::Error(e));
            self.close(1000, "version unsupported");
            return;
        }
        let handshake_until = self.timers.deadline(&Timer::Handshake);
        self.timers.cancel(&Timer::Handshake);
        self.state = ClientState::Ready;
        self.session_timeout_ms = ack.session_timeout.saturating_mul(1000);
        let server = PeerInfo {
            from: msg.header("From").map(str::to_string),
            user_agent: msg.header("User-Agent").map(str::to_string),
            capabilities: split_list(msg.header("Capabilities")),
        };
        let ready = ClientEvent::Ready {
            agreed_version: ack.agreed_version,
            session_timeout: ack.session_timeout,
            server,
        };
        if self.cfg.authorization.is_none() {
            self.events.push_back(ready);
        } else {
            self.held_ready = Some(ready);
        }
        if let Some(authz) = self.cfg.authorization.clone() {
            let token = bearer_token(&authz).to_string();
            let body = serde_json::to_string(&AuthBody::Bearer {
                token,
                scopes: Vec::new(),
            })
            .unwrap_or_default();
            // Sent ahead of the queue and outside `max_in_flight`: it must never be skipped.
            let id = self.entropy.uuid_v4();
            let mut msg = self.new_message(MessageType::Auth, id.clone(), now, Some(self.cfg.ttl_s));
            msg.headers.set("Priority", Priority::Urgent.as_str());
            msg.body = Some(body);
            self.track(now, id.clone(), Op::Auth, self.cfg.ttl_s, false, Origin::ConfiguredAuth);
            // It completes the handshake: the handshake's deadline bounds it.
            let key = Timer::Reply(id.clone());
            if let Some(until) = handshake_until.filter(|u| self.timers.deadline(&key).is_some_and(|t| t > *u)) {
                self.timers.set(key, until);
            }
            self.send_command(now, &msg, id);
        }
        let queue = std::mem::take(&mut self.queue);
        // Highest priority first, call order kept within a level (no sort: smaller wasm).
        let levels = [Priority::Urgent, Priority::High, Priority::Normal, Priority::Low];
        for q in levels
            .iter()
            .flat_map(|l| queue.iter().filter(move |q| q.priority == *l))
        {
            // Every queued command is pending (`take_pending` takes an ended one out of the queue).
            let Some(p) = self.pending.get_mut(&q.id) else { continue };
            p.sent_at = now;
            self.timers
                .set(Timer::Reply(q.id.clone()), now.saturating_add(p.ttl_ms));
            self.send_command(now, &q.msg, q.id.clone());
        }
        self.arm_keepalive();
    }

    fn on_error(&mut self, msg: Message) {
        let body = match msg.body.as_deref().map(ErrorBody::from_json) {
            Some(Ok(b)) => b,
            bad => {
                let why = match bad {
                    Some(Err(e)) => e.to_string(),
                    _ => "no body".into(),
                };
                let text = clip(msg.body.as_deref().unwrap_or(""), QUOTE_MAX);
                crate::errors::error_body(0, format!("ERROR without a valid body ({why}): {text}"), None, None)
            }
        };
        let retry_after = msg.header("Retry-After").and_then(|v| v.parse().ok());
        let reply_to = msg.reply_to().map(str::to_string).or_else(|| body.request_id.clone());
        let error = RktError::remote(&body, reply_to.as_deref(), retry_after);
        if self.state == ClientState::Handshaking && (reply_to.is_none() || reply_to == self.hello_id) {
            self.events.push_back(ClientEvent::Error(error));
            self.close(1000, "handshake refused");
            return;
        }
        let taken = match &reply_to {
            Some(id) if !self.is_queued(id) => self.take_pending(id),
            _ => None,
        };
        match (reply_to, taken) {
            (Some(id), Some(p)) => {
                self.timers.cancel(&Timer::Reply(id.clone()));
                self.end(p.origin, ClientEvent::Failed { id, error });
            }
            (Some(id), None) if self.forgotten.contains(&id) => {}
            _ => self.events.push_back(ClientEvent::Error(error)),
        }
    }

    fn on_reply(&mut self, now: Millis, msg: Message) {
        let id = msg.reply_to().unwrap_or_default().to_string();
        if self.is_queued(&id) {
            let m = format!("{} answers `{id}`, which has not been sent yet; dropped", msg.kind);
            self.events
                .push_back(ClientEvent::Error(RktError::local(ErrorKind::Protocol, m)));
            return;
        }
        let Some(p) = self.pending.get_mut(&id) else {
            if !self.forgotten.contains(&id) {
                let m = format!("{} answers unknown message `{id}`; dropped", msg.kind);
                self.events
                    .push_back(ClientEvent::Error(RktError::local(ErrorKind::Protocol, m)));
            }
            return;
        };
        let expected = match (msg.kind, p.op, p.stream.is_some()) {
            (MessageType::Pong, Op::Ping, _) => true,
            (MessageType::AuthOk, Op::Auth, _) => true,
            (MessageType::Response, op, _) => !matches!(op, Op::Ping | Op::Auth),
            (MessageType::StreamBegin | MessageType::StreamData | MessageType::StreamEnd, Op::Request, true) => true,
            _ => false,
        };
        if !expected {
            // A stream answering a REQUEST sent without `Stream: true`: no RESPONSE will follow,
            // so the request fails now rather than as a retryable timeout after its TTL.
            let streamed = p.op == Op::Request
                && matches!(
                    msg.kind,
                    MessageType::StreamBegin | MessageType::StreamData | MessageType::StreamEnd
                );
            let m = format!(
                "{} is not a reply to this command{}",
                msg.kind,
                if streamed {
                    " (a REQUEST sent without `Stream: true`)"
                } else {
                    "; dropped"
                }
            );
            let error = RktError::local(ErrorKind::Protocol, m);
            match streamed {
                true => self.fail(id, error),
                false => self.events.push_back(ClientEvent::Error(error.for_request(&id))),
            }
            return;
        }
        match msg.kind {
            MessageType::StreamBegin | MessageType::StreamData => {
                // A stream stays alive while chunks keep coming: each one restarts the TTL.
                let ttl_ms = p.ttl_ms;
                self.timers.set(Timer::Reply(id.clone()), now.saturating_add(ttl_ms));
                if msg.kind == MessageType::StreamBegin {
                    self.events.push_back(ClientEvent::StreamBegin { id, body: msg.body });
                } else {
                    self.on_chunk(id, msg.seq().unwrap_or_default(), msg.body);
                }
            }
            MessageType::StreamEnd => self.on_stream_end(id, msg.body),
            _ if p.stream.as_ref().is_some_and(|s| !s.held.0.is_empty()) => {
                // The chunks held for a missing Seq would be lost without a word.
                let m = format!("{} ended the stream while chunks wait for a missing Seq", msg.kind);
                self.fail(id, RktError::local(ErrorKind::Protocol, m));
            }
            _ => {
                // Found above (`pending.get_mut`); no panic path all the same.
                let Some(p) = self.take_pending(&id) else { return };
                self.timers.cancel(&Timer::Reply(id.clone()));
                let event = match msg.kind {
                    MessageType::Pong => {
                        self.pong_seen = true;
                        ClientEvent::Pong {
                            id,
                            rtt_ms: now.saturating_sub(p.sent_at),
                        }
                    }
                    MessageType::AuthOk => match msg.body.as_deref().map(AuthOkBody::from_json) {
                        Some(Ok(auth)) => ClientEvent::AuthOk { id, auth },
                        _ => ClientEvent::Failed {
                            error: RktError::local(
                                ErrorKind::Decode,
                                "AUTH_OK body is not {session_token, scopes, expires_in}",
                            )
                            .for_request(&id),
                            id,
                        },
                    },
                    _ => ClientEvent::Response { id, body: msg.body },
                };
                self.end(p.origin, event);
            }
        }
    }

    fn on_chunk(&mut self, id: String, seq: u64, body: Option<String>) {
        let limit = self.cfg.max_stream_buffer;
        let held_total = self.held_bytes;
        let Some(stream) = self.pending.get_mut(&id).and_then(|p| p.stream.as_mut()) else {
            return;
        };
        if seq < stream.next_seq || stream.held.contains(seq) {
            let m = format!("duplicate stream chunk Seq {seq}; dropped");
            self.events.push_back(ClientEvent::Error(
                RktError::local(ErrorKind::Protocol, m).for_request(&id),
            ));
            return;
        }
        if seq > stream.next_seq {
            let size = body.as_ref().map_or(0, String::len);
            if seq - stream.next_seq > limit as u64 {
                let m = format!(
                    "stream chunk Seq {seq} is more than {limit} ahead of Seq {}",
                    stream.next_seq
                );
                self.fail(id, RktError::local(ErrorKind::Protocol, m));
            } else if stream.held.0.len() >= limit || held_total + size > self.cfg.max_stream_buffer_bytes {
                let m = format!(
                    "more than {limit} chunks or {} bytes held out of order (waiting for Seq {})",
                    self.cfg.max_stream_buffer_bytes, stream.next_seq
                );
                self.fail(id, RktError::local(ErrorKind::Limit, m));
            } else {
                stream.held.insert(seq, body);
                self.held_bytes += size;
            }
            return;
        }
        let mut ready = vec![(seq, body)];
        let mut released = 0;
        stream.next_seq = stream.next_seq.saturating_add(1);
        while let Some(body) = stream.held.remove(stream.next_seq) {
            released += body.as_ref().map_or(0, String::len);
            ready.push((stream.next_seq, body));
            stream.next_seq = stream.next_seq.saturating_add(1);
        }
        self.held_bytes -= released;
        for (seq, body) in ready {
            self.events.push_back(ClientEvent::StreamData {
                id: id.clone(),
                seq,
                body,
            });
        }
    }

    fn on_stream_end(&mut self, id: String, body: Option<String>) {
        let Some(stream) = self.pending.get(&id).and_then(|p| p.stream.as_ref()) else {
            return;
        };
        // No count (none given): nothing to check. An unreadable one is said, then taken as none.
        let count = match body.as_deref().map(StreamEndBody::from_json) {
            Some(Ok(b)) => Some(b.count),
            Some(Err(e)) if !matches!(e, BodyError::Missing(_)) => {
                let e = RktError::local(
                    ErrorKind::Decode,
                    format!("STREAM_END body: {e}; its count is not checked"),
                );
                self.events.push_back(ClientEvent::Error(e.for_request(&id)));
                None
            }
            _ => None,
        };
        let delivered = stream.next_seq;
        if !stream.held.0.is_empty() || count.is_some_and(|n| n != delivered) {
            let end = stream
                .held
                .last()
                .map_or(delivered, |s| s.saturating_add(1))
                .max(count.unwrap_or(0));
            let missing: Vec<u64> = (delivered..end)
                .filter(|s| !stream.held.contains(*s))
                .take(16)
                .collect();
            let m = match count {
                Some(n) if n < delivered => format!("STREAM_END says {n} chunks but {delivered} were delivered"),
                _ => format!("stream ended with a gap: {delivered} chunks delivered in order, missing Seq {missing:?}"),
            };
            self.fail(id, RktError::local(ErrorKind::Protocol, m));
            return;
        }
        self.take_pending(&id);
        self.timers.cancel(&Timer::Reply(id.clone()));
        self.events.push_back(ClientEvent::StreamEnd { id, body });
    }

    fn fail(&mut self, id: String, error: RktError) {
        self.end_early(&id);
        self.timers.cancel(&Timer::Reply(id.clone()));
        self.events.push_back(ClientEvent::Failed {
            error: error.for_request(&id),
            id,
        });
    }
}

impl ClientSession {
    /// Whether `id` waits in the queue for HELLO_ACK: nothing can answer it yet.
    fn is_queued(&self, id: &str) -> bool {
        self.queue.iter().any(|q| q.id == id)
    }

    /// Ends command `id` before its reply (cancelled, timed out, failed). Its frame is taken back
    /// when not polled yet; one that went out may still be answered, so its id is remembered
    /// and a late reply dropped quietly. The command, and whether its frame went out.
    fn end_early(&mut self, id: &str) -> Option<(Pending, bool)> {
        let went_out = !self.is_queued(id) && !self.transmit.iter().any(|(_, of)| of.as_deref() == Some(id));
        let p = self.take_pending(id)?;
        if went_out {
            self.forget(id.to_string());
        }
        Some((p, went_out))
    }

    /// Ends tracking of a command, giving back the bytes its stream held out of order. A command
    /// queued before HELLO_ACK is pending too and leaves the queue with it: timed out
    /// or cancelled, it is never sent, nor ended twice.
    fn take_pending(&mut self, id: &str) -> Option<Pending> {
        let p = self.pending.remove(id)?;
        self.own_pending -= usize::from(p.origin != Origin::User);
        self.queue.retain(|q| q.id != id);
        self.transmit.retain(|(_, of)| of.as_deref() != Some(id));
        if let Some(stream) = &p.stream {
            self.held_bytes -= stream.held.bytes();
        }
        Some(p)
    }
}

/// The body's `request_id` of an ERROR that could not be decoded, when the body (from its first
/// line starting with `{`) still reads as an ERROR body: the request the ERROR answers.
fn body_request_id(e: &DecodeError, text: &str) -> Option<String> {
    if e.message_type.as_deref() != Some(MessageType::Error.as_str()) {
        return None;
    }
    let body = &text[text.find("\n{")? + 1..];
    let id = ErrorBody::from_json(body).ok()?.request_id?;
    codec::valid_id(&id).then_some(id)
}

/// The token of an `Authorization` value: what follows the `Bearer` scheme, matched in any case
/// as HTTP auth schemes are, and a space or tab; a value without the scheme is taken whole.
pub(crate) fn bearer_token(v: &str) -> &str {
    let v = v.trim_start();
    let b = v.as_bytes();
    match b.len() > 6 && b[..6].eq_ignore_ascii_case(b"bearer") && matches!(b[6], b' ' | b'\t') {
        true => v[7..].trim(),
        false => v.trim(),
    }
}

pub(crate) fn split_list(v: Option<&str>) -> Vec<String> {
    v.map(|s| {
        s.split(',')
            .map(str::trim)
            .filter(|c| !c.is_empty())
            .map(str::to_string)
            .collect()
    })
    .unwrap_or_default()
}
