//! The client session: HELLO/HELLO_ACK, requests correlated by `Reply-To`, streams in `Seq`
//! order, TTL expiry, AUTH, PAY, memory, discovery, ping, GOODBYE.

use crate::body::*;
use crate::codec::{self, encode, DecodeError, DecodeErrorKind, Message, MessageType};
use crate::envelope::{check_capabilities, check_header_value, compact, envelope};
use crate::errors::RktError;
use agentwire_core::text::{clip, QUOTE_MAX};
use agentwire_core::{Entropy, Error, ErrorKind, Millis, Outgoing, Timers};
use serde_json::{json, Value};
use std::collections::{HashMap, HashSet, VecDeque};

mod commands;
mod config;
mod inbound;

pub use config::{ClientConfig, ClientEvent, ClientState, PeerInfo, RequestOptions};
use inbound::StreamState;

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

impl Op {
    /// Whether doing it twice is the same as doing it once, so that one sent and unanswered may
    /// be made again ([`agentwire_core::Error::unanswered`]): PING, DISCOVER and MEMORY_GET
    /// read, MEMORY_SET sets a key to a value, AUTH asks for a token. A PAY pays again, and a
    /// REQUEST's intent may do anything.
    fn idempotent(self) -> bool {
        !matches!(self, Op::Request | Op::Pay)
    }
}

#[derive(Debug)]
struct Pending {
    op: Op,
    ttl_ms: u64,
    sent_at: Millis,
    /// Its place in call order ([`ClientSession::calls`]): commands that end together fail
    /// oldest call first (ids are random, and `sent_at` ties within a millisecond).
    call: u64,
    stream: Option<StreamState>,
    origin: Origin,
    /// Its reply deadline is the handshake's, sooner than its TTL (the configured AUTH).
    handshake_bound: bool,
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

/// Ids of commands that ended early (cancelled, timed out) whose late replies are dropped
/// quietly: as many as the default `max_in_flight`, so that every call in flight given up at once
/// (a stalled server, a `timeout` around each call) is covered, as MoltZap's `FORGOTTEN_CAP`.
const FORGOTTEN_CAP: usize = 1024;

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
    /// Commands tracked so far (the user's and the session's own): the next one's `call`.
    calls: u64,
    /// Pending commands of the session's own (not [`Origin::User`]).
    own_pending: usize,
    /// When a frame last arrived (any: a sign of life).
    last_received: Millis,
    /// The peer has answered a PING on this connection (PING is an added type).
    pong_seen: bool,
    queue: Vec<Queued>,
    /// [`FORGOTTEN_CAP`] ids, oldest first, and the same as a set (looked up per reply).
    forgotten: VecDeque<String>,
    forgotten_set: HashSet<String>,
    timers: Timers<Timer>,
    /// Bytes of out-of-order stream chunks held, over all streams.
    held_bytes: usize,
    /// `Ready`, held until the AUTH of [`ClientConfig::authorization`] is taken.
    held_ready: Option<ClientEvent>,
    /// [`Self::handshake_error`].
    handshake_error: Option<RktError>,
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
            calls: 0,
            last_received: 0,
            pong_seen: false,
            queue: Vec::new(),
            forgotten: VecDeque::new(),
            forgotten_set: HashSet::new(),
            timers: Timers::new(),
            held_bytes: 0,
            held_ready: None,
            handshake_error: None,
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

    /// The largest message this session sends or reads (`ClientConfig::max_message_size`): what
    /// a binding bounds an argument's text by before reading it ([`crate::json::json_arg_within`]).
    pub fn max_message_size(&self) -> usize {
        self.cfg.max_message_size
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
            self.report(e);
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
        match codec::decode_for_client(text, self.cfg.max_message_size) {
            Ok(msg) => self.on_message(now, msg),
            Err(e) if matches!(e.kind, DecodeErrorKind::UnknownType(_)) => self.on_unknown_type(&e),
            Err(e) => {
                let answers = e.reply_to.clone().or_else(|| body_request_id(&e, text));
                self.on_undecodable(&e, answers.as_deref())
            }
        }
    }

    /// A well-formed message of a type this client does not know (a newer server's): an `Error`
    /// event naming the type (and the command it answers), and nothing else. The command stays
    /// pending for its reply, the handshake goes on, as the guide's clients ignore the types they
    /// do not know; one answering a command that already ended is dropped quietly, as its reply
    /// would be.
    fn on_unknown_type(&mut self, e: &DecodeError) {
        let reply_to = e.reply_to.as_deref();
        if reply_to.is_some_and(|id| self.is_forgotten(id)) {
            return;
        }
        let mut error = RktError::decode(e);
        error.error.message.push_str("; dropped");
        let error = match reply_to {
            Some(id) => error.for_request(id),
            None => error,
        };
        self.dropped(error);
    }

    /// A message that could not be decoded, answering `reply_to` (its `Reply-To`, or an ERROR's
    /// body `request_id`) when that can still be read. When it names a command that went out,
    /// that command fails with the decode error at once (not retryable: the server may have
    /// acted on it), rather than waiting for its TTL; a stream loses no chunk unnoticed. An
    /// unreadable answer to HELLO ends the handshake. Anything else is an `Error` event. (A
    /// well-formed message of an unknown type is not undecodable here: [`Self::on_unknown_type`].)
    fn on_undecodable(&mut self, e: &DecodeError, reply_to: Option<&str>) {
        let error = RktError::decode(e);
        if self.state == ClientState::Handshaking && reply_to.is_some() && reply_to == self.hello_id.as_deref() {
            self.report(error);
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
            None if reply_to.is_some_and(|id| self.is_forgotten(id)) => {}
            None => {
                let error = match reply_to {
                    Some(id) => error.for_request(id),
                    None => error,
                };
                self.report(error);
            }
        }
    }

    /// A binary frame arrived: RKT is a text protocol, so it is reported and dropped (ignored
    /// once closed, as a text frame is).
    pub fn handle_binary(&mut self, now: Millis, bytes: &[u8]) {
        if self.state == ClientState::Closed {
            return;
        }
        self.last_received = now;
        let e = RktError::local(
            ErrorKind::Decode,
            format!("binary frame of {} bytes: RKT messages are text", bytes.len()),
        );
        self.report(e);
    }

    /// The socket closed (by either side): every pending command fails `closed`, oldest call
    /// first (also within a millisecond), then `Closed`. What waited in `poll_transmit` had that
    /// socket to go on and goes with it (a PONG, a GOODBYE and its close frame).
    pub fn handle_close(&mut self, _now: Millis, code: u16, reason: &str) {
        self.finish(code, reason);
        self.transmit.clear();
    }

    /// The time is `now`: what is due fires, earliest first; commands whose TTLs end together
    /// fail `timeout` in the order their TTLs (re)started: oldest call first (a stream's TTL
    /// restarts with each chunk).
    pub fn handle_timeout(&mut self, now: Millis) {
        for timer in self.timers.expire(now) {
            match timer {
                Timer::Handshake => self.handshake_timed_out("no HELLO_ACK before the handshake timeout".into()),
                Timer::Reply(id) => {
                    if let Some((p, sent)) = self.end_early(&id) {
                        if p.origin == Origin::Keepalive {
                            self.keepalive_expired(sent, &p);
                            continue;
                        }
                        let msg = match p.handshake_bound {
                            true => format!(
                                "no AUTH_OK before the handshake timeout of {} ms",
                                self.cfg.handshake_timeout_ms
                            ),
                            false => format!("no reply within the TTL of {} s", p.ttl_ms / 1000),
                        };
                        let error = Error::new(ErrorKind::Timeout, msg).unanswered(sent, p.op.idempotent());
                        let error = RktError::from(error).for_request(&id);
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

    /// Why the handshake failed, for a driver whose connect ends with `Closed` before `Ready`:
    /// the last [`ClientEvent::Error`] before `Ready` (a refusal, a timeout, a HELLO_ACK or a
    /// message that could not be read), or `None` when the close says more (nothing went wrong
    /// but the close, or only messages that were dropped came: of a type this client does not
    /// know, or answering nothing it sent, which end nothing).
    pub fn handshake_error(&self) -> Option<&RktError> {
        self.handshake_error.as_ref()
    }

    pub fn poll_transmit(&mut self) -> Option<Outgoing> {
        self.transmit.pop_front().map(|(frame, _)| frame)
    }

    /// Whether a frame waits for [`Self::poll_transmit`]: a driver that holds frames back for a
    /// socket with much unsent looks at the socket only then (a look can cost more than the
    /// input it follows).
    pub fn has_transmit(&self) -> bool {
        !self.transmit.is_empty()
    }

    pub fn poll_event(&mut self) -> Option<ClientEvent> {
        self.events.pop_front()
    }

    pub fn poll_timeout(&self) -> Option<Millis> {
        self.timers.next()
    }

    fn track(&mut self, now: Millis, id: String, op: Op, ttl: u32, stream: bool, origin: Origin) {
        let ttl_ms = u64::from(ttl) * 1000;
        self.timers.set(Timer::Reply(id.clone()), now.saturating_add(ttl_ms));
        let stream = stream.then(StreamState::default);
        self.own_pending += usize::from(origin != Origin::User);
        self.calls += 1;
        let replaced = self.pending.insert(
            id,
            Pending {
                op,
                ttl_ms,
                sent_at: now,
                call: self.calls,
                stream,
                origin,
                handshake_bound: false,
            },
        );
        // Ids are random UUIDs: a repeat is as good as impossible, but the count stays exact.
        self.own_pending -= replaced.map_or(0, |p| usize::from(p.origin != Origin::User));
    }

    /// The handshake did not complete in time: an `Error` saying how, then the close.
    fn handshake_timed_out(&mut self, m: String) {
        self.report(RktError::local(ErrorKind::Timeout, m));
        self.close(1000, "handshake timeout");
    }

    /// An `Error` event for a message dropped (of a type this client does not know, or one that
    /// answers nothing it sent): it ends nothing, so it is not the handshake's failure either,
    /// and a close that follows says why the handshake failed ([`Self::handshake_error`]).
    pub(super) fn dropped(&mut self, error: RktError) {
        self.events.push_back(ClientEvent::Error(error));
    }

    /// An `Error` event; before `Ready`, also the handshake's ([`Self::handshake_error`]).
    fn report(&mut self, error: RktError) {
        if matches!(self.state, ClientState::Idle | ClientState::Handshaking) || self.held_ready.is_some() {
            self.handshake_error = Some(error.clone());
        }
        self.events.push_back(ClientEvent::Error(error));
    }

    /// A command's terminal event, as its [`Origin`] reports it.
    fn end(&mut self, origin: Origin, event: ClientEvent) {
        let event = match (origin, event) {
            (Origin::User, event) => event,
            (Origin::Keepalive, _) => return,
            (Origin::ConfiguredAuth, ClientEvent::Failed { id, error }) => {
                if error.kind() == ErrorKind::Closed {
                    self.held_ready = None;
                    return; // `Closed` follows
                }
                let mut error = error.for_request(&id);
                error.error.message = format!(
                    "the AUTH sent for the configured authorization failed: {}",
                    error.error.message
                );
                self.report(error);
                self.held_ready = None;
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
    /// The close frame (1000) is a courtesy; what is reported is an abnormal closure, 1006, as
    /// for a socket that dropped (as MoltZap's idle probe reports it).
    fn keepalive_expired(&mut self, sent: bool, ping: &Pending) {
        if !(sent && self.pong_seen && self.last_received < ping.sent_at) {
            return;
        }
        let m = format!(
            "no PONG to the keepalive PING within {} s and nothing else arrived: the connection is taken as dead",
            ping.ttl_ms / 1000
        );
        self.report(RktError::local(ErrorKind::Timeout, m));
        self.close_reporting(1000, 1006, "keepalive PING unanswered");
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
        if self.forgotten.len() >= FORGOTTEN_CAP {
            if let Some(old) = self.forgotten.pop_front() {
                self.forgotten_set.remove(&old);
            }
        }
        if self.forgotten_set.insert(id.clone()) {
            self.forgotten.push_back(id);
        }
    }

    /// A command that ended early had this id: its late reply is dropped quietly.
    fn is_forgotten(&self, id: &str) -> bool {
        self.forgotten_set.contains(id)
    }

    fn close(&mut self, code: u16, reason: &str) {
        self.close_reporting(code, code, reason);
    }

    /// Sends close `sent` (a code a close frame may carry) and reports `Closed` with `reported`.
    fn close_reporting(&mut self, sent: u16, reported: u16, reason: &str) {
        if self.state == ClientState::Closed {
            return;
        }
        let close = Outgoing::Close {
            code: sent,
            reason: reason.to_string(),
        };
        self.transmit.push_back((close, None));
        self.finish(reported, reason);
    }

    fn finish(&mut self, code: u16, reason: &str) {
        if self.state == ClientState::Closed {
            return;
        }
        self.state = ClientState::Closed;
        // The frames of the commands this fails are taken back, as for any command ended before
        // its frame left (a GOODBYE or close frame already queued still goes): those, and the
        // commands queued for HELLO_ACK, were never sent.
        let unsent: HashSet<String> = (self.transmit.iter().filter_map(|(_, of)| of.clone()))
            .chain(self.queue.iter().map(|q| q.id.clone()))
            .collect();
        self.transmit.retain(|(_, of)| of.is_none());
        // Oldest call first, also within a millisecond (the ids are random: their order is not
        // the call order).
        let mut ids: Vec<(u64, String, Origin, Op)> = self
            .pending
            .drain()
            .map(|(id, p)| (p.call, id, p.origin, p.op))
            .collect();
        self.own_pending = 0;
        // Call numbers are unique: the same order as a stable sort.
        ids.sort_unstable_by_key(|c| c.0);
        self.queue.clear();
        self.held_bytes = 0;
        for (_, id, origin, op) in ids {
            let m = format!("connection closed ({code} {reason}) before a reply");
            let error = Error::new(ErrorKind::Closed, m).unanswered(!unsent.contains(&id), op.idempotent());
            let error = RktError::from(error).for_request(&id);
            self.end(origin, ClientEvent::Failed { id, error });
        }
        self.timers.clear();
        self.events.push_back(ClientEvent::Closed {
            code,
            reason: reason.to_string(),
        });
    }
}

impl ClientSession {
    /// Whether `id` waits in the queue for HELLO_ACK: nothing can answer it yet.
    fn is_queued(&self, id: &str) -> bool {
        self.queue.iter().any(|q| q.id == id)
    }

    /// Whether the frame of command `id` has not been polled: queued for HELLO_ACK, or waiting
    /// in `transmit`.
    fn frame_waits(&self, id: &str) -> bool {
        self.is_queued(id) || self.transmit.iter().any(|(_, of)| of.as_deref() == Some(id))
    }

    /// Ends command `id` before its reply (cancelled, timed out, failed). Its frame is taken back
    /// when not polled yet; one that went out may still be answered, so its id is remembered
    /// and a late reply dropped quietly. The command, and whether its frame went out.
    fn end_early(&mut self, id: &str) -> Option<(Pending, bool)> {
        let went_out = !self.frame_waits(id);
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
