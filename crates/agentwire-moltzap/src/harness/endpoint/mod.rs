//! The `HarnessEndpoint`, sans-IO: operations over a MoltZap [`Session`], and the classified
//! inbound stream with acknowledgement. The host owns the socket and the clock: it feeds the
//! socket's text and close into `handle_*`, sends what `poll_transmit` returns, calls
//! `handle_timeout` at `poll_timeout`, and reads [`EndpointEvent`]s from `poll_event`.
//!
//! - [`Endpoint::send`] starts one operation (multicast, gather, all_gather, or an answer) and
//!   returns its [`SendId`]; it ends with exactly one [`EndpointEvent::SendDone`].
//! - [`Endpoint::listen`] opens the one message subscription: every [`InboundDelivery`] is then
//!   reported, and replayed on the next `listen` until [`Endpoint::acknowledge`]d.
//! - Records the endpoint consumes (answers, closes, malformed parts, ...) are acknowledged by
//!   it and reported as [`EndpointEvent::Logged`], never delivered.
//! - With a message firewall installed ([`EndpointConfig::firewall`]), every send and every
//!   inbound item waits for the host's verdict: [`EndpointEvent::FirewallCheck`] asks,
//!   [`Endpoint::firewall_verdict`] answers (`firewall.rs`).
//! - A send issued while the endpoint is attaching waits for the connection, at most
//!   [`EndpointConfig::attach_wait_ms`] (`gate.rs`).
//!
//! The mapping onto MoltZap and every decision are in `docs/protocols/moltzap-harness.md`.

mod answers;
mod asks;
#[cfg(test)]
mod chain_order_tests;
mod firewall;
#[cfg(test)]
mod firewall_tests;
mod gate;
#[cfg(test)]
mod gate_tests;
mod outgoing;
mod records;
#[cfg(test)]
mod released_recovery_tests;
#[cfg(test)]
mod scripted_tests;
mod wire;

use super::address::AgentAddress;
use super::classify::ConsumeReason;
use super::errors::{
    CollectiveError, ConnectError, ConnectErrorReason, DeliveryAcknowledgeError, DeliveryAcknowledgeErrorReason,
    FirewallSendError, ListenError, ListenErrorReason, SendError,
};
use super::guidance::LocalGuidance;
use super::id::CollectiveId;
use super::inbound::{InboundItem, Withheld};
use super::send::SendResult;
use crate::frame::Generation;
use crate::session::{Credentials, Event, RequestId, Session, SessionConfig};
use agentwire_core::{Entropy, ErrorKind, Millis, Outgoing, Timers};
use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};
use std::fmt;

pub use firewall::{CheckId, CheckSubject, FirewallConfig, FirewallVerdict, OutgoingOp};
pub use outgoing::UnfinishedIntent;
pub use wire::MAX_RECORD_ID_BYTES;

/// How an endpoint runs. [`EndpointConfig::new`] gives the documented defaults.
#[derive(Debug, Clone)]
pub struct EndpointConfig {
    /// The configured local agent: every post is authored as it.
    pub agent: AgentAddress,
    /// How long a gather or all_gather send waits for its request posts (default 20 s, never
    /// past the deadline). Tests shorten it.
    pub send_wait_ms: u64,
    /// Unacknowledged deliveries kept (default 10,000); past it the oldest is dropped and logged.
    pub max_inbox: usize,
    /// The heap those deliveries may take, about (default 64 MiB, as `JsonValue` trees: a data
    /// part of 32 KiB of `[0,0,…]` takes about 0.5 MiB); past it the oldest are dropped and
    /// logged, as past `max_inbox`. The newest delivery is always kept.
    pub max_inbox_bytes: usize,
    /// Records waiting for their conversation to be resolved (default 4,096); past it a new
    /// record is dropped and logged, and not counted as seen: the next recovery can read it back.
    pub max_pending_records: usize,
    /// This agent's own gathers and all_gathers open at once (default 1,024); past it a send
    /// fails with `network-unavailable`.
    pub max_operations: usize,
    /// Requests from peers held at once (default 1,024), a budget of their own so peers cannot
    /// fill `max_operations`. When it is reached, finished requests make room, the earliest
    /// deadline first: an all_gather whose close was applied, a gather this member answered, a
    /// gather past its deadline never answered (otherwise each is held until an hour past its
    /// deadline). One evicted so is forgotten: an answer in its conversation is then refused
    /// `request-none` (not `request-answered` or `request-expired`), and a replay of its post is
    /// caught only by the record dedup (the last 4,096 record ids). Requests still open, being
    /// answered, or waiting for their close always stay: with none finished, a new request is
    /// consumed and logged `Unreadable` ("too many requests are held"), never delivered.
    pub max_held_requests: usize,
    /// The heap those held requests may take, about (default 64 MiB): each its question and its
    /// schema, as given (counted as [`max_inbox_bytes`](Self::max_inbox_bytes) is) and as read
    /// (an enum of 5,000 short values takes about 0.3 MiB). A request that would take them past
    /// it makes room as past `max_held_requests` (finished requests forgotten, the earliest
    /// deadline first), and is consumed and logged when even forgetting every finished one would
    /// not (nothing is forgotten then); a held request's bytes are freed when it is forgotten
    /// (an hour past its deadline, or to make room), not when its delivery is acknowledged (the
    /// held copy matches and validates its answer).
    pub max_held_request_bytes: usize,
    /// The heap the answers held for all_gather closes may take, about (default 64 MiB, counted
    /// as [`max_inbox_bytes`](Self::max_inbox_bytes) is). Past it a peer's answer is logged
    /// `AnswerIgnored` unless a waiting close lists it, as past the four kept per member; an
    /// answer is freed when its request is closed or forgotten.
    pub max_held_answer_bytes: usize,
    /// At every connect (the first too), the window of recent messages read back (default 100,
    /// 0 = none; more than 100 asks for 100, the most a server returns): with
    /// `agent/message/list` in the current generation; in the released one, each conversation's
    /// newest window (`messages/list`) of those active since the last record seen, at most 200
    /// (`conversations/list`, its `cursor` followed, at most 10 pages of 20). Records already
    /// seen are skipped.
    pub recovery_limit: u32,
    /// How long a send issued while the endpoint is attaching (the socket opening, the connect
    /// in flight, the connection lost and not closed by [`Endpoint::close`]) waits for
    /// `Connected` before it fails `network-unavailable` (default 10,000 ms): the spec's
    /// `ROUTER_ATTACH_TIMEOUT`.
    pub attach_wait_ms: u64,
    /// The heap the sends waiting for the connection may take, about (default 64 MiB): each its
    /// content, counted as [`max_inbox_bytes`](Self::max_inbox_bytes) is. A send that would
    /// take them past it, like one finding the session's `max_in_flight` sends waiting, is
    /// refused `network-unavailable` at once (`gate.rs`).
    pub max_waiting_send_bytes: usize,
    /// Conversations whose kind and members are kept (default 4,096); past it the least
    /// recently used is forgotten, and looked up again (`conversations/get`) when a record
    /// arrives in it.
    pub max_conversations: usize,
    /// The message firewall (default none): when set, every send and every inbound item waits
    /// for the host's verdict on an [`EndpointEvent::FirewallCheck`].
    pub firewall: Option<FirewallConfig>,
}

impl EndpointConfig {
    pub fn new(agent: AgentAddress) -> EndpointConfig {
        EndpointConfig {
            agent,
            send_wait_ms: 20_000,
            max_inbox: 10_000,
            max_inbox_bytes: 64 << 20,
            max_pending_records: 4_096,
            max_operations: 1_024,
            max_held_requests: 1_024,
            max_held_request_bytes: 64 << 20,
            max_held_answer_bytes: 64 << 20,
            recovery_limit: 100,
            attach_wait_ms: 10_000,
            max_waiting_send_bytes: 64 << 20,
            max_conversations: 4_096,
            firewall: None,
        }
    }
}

/// One `send` invocation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SendId(pub u64);

/// One delivery: stable across replays.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct DeliveryId(pub u64);

/// Why a send failed: exactly one of the spec's closed failures.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SendFailure {
    Send(SendError),
    Collective(CollectiveError),
    Firewall(FirewallSendError),
}

impl fmt::Display for SendFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SendFailure::Send(e) => e.fmt(f),
            SendFailure::Collective(e) => e.fmt(f),
            SendFailure::Firewall(e) => e.fmt(f),
        }
    }
}

impl std::error::Error for SendFailure {}

impl From<SendError> for SendFailure {
    fn from(e: SendError) -> Self {
        SendFailure::Send(e)
    }
}

impl From<CollectiveError> for SendFailure {
    fn from(e: CollectiveError) -> Self {
        SendFailure::Collective(e)
    }
}

/// One item for the runtime, with the local firewall's guidance when one is installed.
#[derive(Debug, Clone, PartialEq)]
pub struct InboundDelivery {
    pub id: DeliveryId,
    pub item: InboundItem,
    pub guidance: Option<LocalGuidance>,
}

/// Why a record was consumed without delivery, or what else the endpoint noted.
#[derive(Debug, Clone, PartialEq)]
pub enum LogKind {
    /// The classifier's reasons.
    Consumed(ConsumeReason),
    /// Not a message an endpoint can read (other part types, a bad shape, an unusable
    /// conversation).
    Unreadable(String),
    /// A request reusing the id of one held from another post.
    IdReused,
    /// An answer to no operation this endpoint runs or holds.
    AnswerUnmatched,
    /// An answer not counted: at the requester, after the member's first, after the deadline
    /// or after the result; at an all_gather member, a duplicate or past the few kept per
    /// member.
    AnswerIgnored,
    /// An answer recorded (requester) or held until the close (all_gather member).
    AnswerRecorded,
    /// A close applied: the member's result follows.
    CloseApplied,
    /// A close ignored: not the requester's, an unknown id, a second close, two answers of one
    /// member, or (when its request is forgotten) an answer it lists that never arrived.
    CloseIgnored(String),
    /// A close from the requester that lists an answer this endpoint does not hold yet (one
    /// dropped for overflow, or read back after the close): it waits, with its request, and is
    /// applied when the answer is recorded (`CloseApplied`), or ignored when the request is
    /// forgotten, an hour past its deadline (`CloseIgnored`).
    CloseWaiting(String),
    /// The inbox was full (`max_inbox` or `max_inbox_bytes`): the oldest unacknowledged
    /// delivery was dropped.
    InboxOverflow(DeliveryId),
    /// Too many records waiting for resolution: this one was dropped.
    RecordsOverflow,
    /// The firewall withheld this multicast or request: it is never delivered (a withheld
    /// request is never answerable; an all_gather's close still gives its result).
    Withheld(Withheld),
}

/// One log line: the record it is about (a message id), if any.
#[derive(Debug, Clone, PartialEq)]
pub struct LogEntry {
    pub record: Option<String>,
    pub kind: LogKind,
}

/// What the endpoint reports.
#[derive(Debug, Clone, PartialEq)]
pub enum EndpointEvent {
    /// Connected (again): `generation` is the one the session speaks.
    Connected {
        generation: Generation,
    },
    ConnectFailed(ConnectError),
    /// A send ended: its result, or its one refusal.
    SendDone {
        send: SendId,
        outcome: Result<SendResult, SendFailure>,
    },
    /// An item for the runtime (only while listening; replayed until acknowledged).
    Delivery(InboundDelivery),
    /// The firewall is asked about `subject`: answer with [`Endpoint::firewall_verdict`].
    FirewallCheck {
        check: CheckId,
        subject: CheckSubject,
    },
    Logged(LogEntry),
    /// The session's diagnostics (frames that could not be decoded, ...), passed through.
    Diagnostic(crate::MoltZapError),
    Disconnected {
        code: u16,
        reason: String,
    },
}

/// What a call the endpoint made is for.
#[derive(Debug, Clone, PartialEq)]
enum Call {
    /// `agents/lookupByName` for a send's members.
    Lookup(SendId),
    /// `messages/send` of one post of a send; `member` for a gather's per-member posts.
    Post { send: SendId, member: Option<AgentAddress> },
    /// `messages/send` of an all_gather close.
    Close(CollectiveId),
    /// `conversations/get` of a conversation records are waiting on.
    Conversation(String),
    /// `agents/lookup` of its participants' names, when the conversation did not carry them.
    Names(String),
    /// `agent/message/list` at a connect.
    Recover,
    /// `conversations/list` of a released recovery (which one).
    RecoverConversations(u64),
    /// `messages/list` of one conversation's window in a released recovery.
    RecoverWindow { run: u64, conversation: String },
}

#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
enum Timer {
    /// A gather or all_gather send's wait for its request posts.
    SendWait(SendId),
    /// A requester's operation deadline.
    Deadline(CollectiveId),
    /// A held request is forgotten (an hour past its deadline).
    Forget(CollectiveId),
    /// A conversation lookup that got no answer is asked again.
    Resolve(String),
    /// A recovery that got no answer is asked again.
    Recover,
    /// A send's wait for the connection ends.
    Attach(SendId),
    /// A firewall check's wait for its verdict ends.
    Check(CheckId),
}

/// The endpoint. See the module documentation.
pub struct Endpoint {
    cfg: EndpointConfig,
    session: Session,
    entropy: Box<dyn Entropy + Send>,
    firewall: Option<firewall::Firewall>,
    /// Whether a connection is expected (sends wait for it).
    attach: gate::Attach,
    calls: HashMap<RequestId, Call>,
    timers: Timers<Timer>,
    events: VecDeque<EndpointEvent>,
    next_send: u64,
    sends: HashMap<SendId, outgoing::PendingSend>,
    /// The sends not launched yet (waiting for their check or the connection), and what their
    /// contents take (`PendingSend::bytes`).
    waiting_sends: usize,
    waiting_send_bytes: usize,
    asks: HashMap<CollectiveId, asks::Ask>,
    held: HashMap<CollectiveId, answers::Held>,
    records: records::Records,
    unfinished: Vec<outgoing::UnfinishedIntent>,
    /// Conversation kinds and participant ids waiting for the participants' names.
    pending_kinds: HashMap<String, (String, Vec<String>)>,
    /// Each with its heap, about ([`inbox_footprint`]).
    inbox: BTreeMap<DeliveryId, (InboundDelivery, usize)>,
    /// The sum of the inbox's footprints.
    inbox_bytes: usize,
    /// What the held requests take (their question and schema).
    held_request_bytes: usize,
    /// What the held all_gather answers take (`CollectiveResponse::footprint`).
    held_answer_bytes: usize,
    next_delivery: u64,
    listening: bool,
}

/// Its agent and session, never what it holds.
impl std::fmt::Debug for Endpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Endpoint")
            .field("agent", &self.cfg.agent)
            .field("session", &self.session)
            .field("calls", &self.calls.len())
            .finish_non_exhaustive()
    }
}

/// About the heap a kept delivery takes: its item's and guidance's trees, measured on their JSON
/// form (which holds the same strings and values).
fn inbox_footprint(d: &InboundDelivery) -> usize {
    std::mem::size_of::<InboundDelivery>()
        + item_footprint(&d.item)
        + d.guidance.as_ref().map_or(0, |g| g.to_json().footprint())
}

/// About the heap an inbound item takes, measured on its JSON form: the one measure of the
/// inbox and the firewall's admission queue.
fn item_footprint(item: &InboundItem) -> usize {
    item.to_json().footprint()
}

/// About the heap a send's content takes, measured as an item's.
fn content_footprint(content: &super::content::Content) -> usize {
    content.to_json().footprint()
}

/// Ids of records seen, for dropping the duplicates a recovery reads back.
const SEEN_CAP: usize = 4_096;

impl Endpoint {
    /// An endpoint over a new session. `entropy` mints post ids, nonces and refusal ids.
    pub fn new(cfg: EndpointConfig, session: SessionConfig, entropy: Box<dyn Entropy + Send>) -> Endpoint {
        let session = Session::new(session);
        Endpoint {
            session,
            entropy,
            firewall: cfg.firewall.map(firewall::Firewall::new),
            attach: gate::Attach::Idle,
            calls: HashMap::new(),
            timers: Timers::new(),
            events: VecDeque::new(),
            next_send: 1,
            sends: HashMap::new(),
            waiting_sends: 0,
            waiting_send_bytes: 0,
            asks: HashMap::new(),
            held: HashMap::new(),
            records: records::Records::default(),
            pending_kinds: HashMap::new(),
            unfinished: Vec::new(),
            inbox: BTreeMap::new(),
            inbox_bytes: 0,
            held_request_bytes: 0,
            held_answer_bytes: 0,
            next_delivery: 1,
            listening: false,
            cfg,
        }
    }

    pub fn agent(&self) -> &AgentAddress {
        &self.cfg.agent
    }

    /// The session underneath (state, generation).
    pub fn session(&self) -> &Session {
        &self.session
    }

    /// Sends the connect; the answer comes as `Connected` or `ConnectFailed`.
    pub fn connect(&mut self, now: Millis, credentials: Credentials) -> Result<(), ConnectError> {
        self.session
            .connect(now, credentials)
            .map(|_| self.attach = gate::Attach::Expected)
            .map_err(|e| ConnectError::with_detail(ConnectErrorReason::TransportFailed, e.error.message))
    }

    // ---- the socket and the clock ----

    /// The socket is open: sends from now on wait for the connection (bounded).
    pub fn handle_open(&mut self, now: Millis) {
        if self.session.state() == crate::session::SessionState::Closed {
            self.attach = gate::Attach::Expected;
        }
        self.session.handle_open(now);
    }

    pub fn handle_text(&mut self, now: Millis, text: &str) {
        self.session.handle_text(now, text);
        self.drain(now);
    }

    pub fn handle_ping(&mut self, now: Millis) {
        self.session.handle_ping(now);
    }

    pub fn handle_close(&mut self, now: Millis, code: u16, reason: &str) {
        self.session.handle_close(now, code, reason);
        self.drain(now);
    }

    pub fn handle_timeout(&mut self, now: Millis) {
        self.session.handle_timeout(now);
        self.drain(now);
        for timer in self.timers.expire(now) {
            match timer {
                Timer::SendWait(send) => self.send_wait_over(now, send),
                Timer::Deadline(id) => self.deadline(now, &id),
                Timer::Forget(id) => self.forget_request(&id),
                Timer::Resolve(conv) => self.resolve_again(now, &conv),
                Timer::Recover => self.recover_again(now),
                Timer::Attach(send) => self.attach_wait_over(send),
                Timer::Check(check) => self.check_expired(now, check),
            }
        }
    }

    pub fn poll_transmit(&mut self) -> Option<Outgoing> {
        self.session.poll_transmit()
    }

    pub fn poll_timeout(&self) -> Option<Millis> {
        match (self.session.poll_timeout(), self.timers.next()) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// The next event. A delivery the inbox has dropped since it was queued (`InboxOverflow`,
    /// logged) is not reported: it could not be acknowledged.
    pub fn poll_event(&mut self) -> Option<EndpointEvent> {
        loop {
            let event = self.events.pop_front()?;
            match &event {
                EndpointEvent::Delivery(d) if !self.inbox.contains_key(&d.id) => continue,
                _ => return Some(event),
            }
        }
    }

    /// Closes the socket (the session sends the close). No connection is expected after it:
    /// sends still waiting for one fail `network-unavailable`, and new ones fail at once (until
    /// the next `handle_open`).
    pub fn close(&mut self, now: Millis, code: u16, reason: &str) {
        self.session.close(code, reason);
        self.drain(now);
        self.detached("the endpoint was closed");
    }

    // ---- the message subscription ----

    /// Opens the one subscription: every unacknowledged delivery is reported again, in order,
    /// then each new one. A second `listen` without [`Endpoint::unlisten`] is `already-listening`.
    pub fn listen(&mut self) -> Result<(), ListenError> {
        if self.listening {
            return Err(ListenError::new(ListenErrorReason::AlreadyListening));
        }
        self.listening = true;
        let replay: Vec<InboundDelivery> = self.inbox.values().map(|(d, _)| d.clone()).collect();
        self.events.extend(replay.into_iter().map(EndpointEvent::Delivery));
        Ok(())
    }

    /// Ends the subscription; unacknowledged deliveries replay on the next `listen`. The
    /// deliveries queued and not yet polled go (they are all unacknowledged, so they replay):
    /// no delivery is reported past the end of the subscription, and subscribing again and
    /// again without polling does not queue a copy of the inbox each time.
    pub fn unlisten(&mut self) {
        self.listening = false;
        self.events.retain(|e| !matches!(e, EndpointEvent::Delivery(_)));
    }

    /// Acknowledges one delivery (transport-only: it removes it from the replay set).
    pub fn acknowledge(&mut self, id: DeliveryId) -> Result<(), DeliveryAcknowledgeError> {
        match self.inbox.remove(&id) {
            Some((_, bytes)) => {
                self.inbox_bytes -= bytes;
                Ok(())
            }
            None => Err(DeliveryAcknowledgeError::with_detail(
                DeliveryAcknowledgeErrorReason::UnknownDelivery,
                format!("delivery {} is not pending", id.0),
            )),
        }
    }

    /// Unacknowledged deliveries.
    pub fn pending_deliveries(&self) -> usize {
        self.inbox.len()
    }

    /// Into the inbox (and to the subscriber): the item is admitted, or no firewall is installed.
    fn deliver(&mut self, item: InboundItem, guidance: Option<LocalGuidance>) {
        let id = DeliveryId(self.next_delivery);
        self.next_delivery += 1;
        let delivery = InboundDelivery { id, item, guidance };
        let bytes = inbox_footprint(&delivery);
        while self.inbox.len() >= self.cfg.max_inbox.max(1)
            || (!self.inbox.is_empty() && self.inbox_bytes + bytes > self.cfg.max_inbox_bytes)
        {
            let Some((oldest, (_, freed))) = self.inbox.pop_first() else {
                break;
            };
            self.inbox_bytes -= freed;
            self.log(None, LogKind::InboxOverflow(oldest));
        }
        self.inbox_bytes += bytes;
        self.inbox.insert(id, (delivery.clone(), bytes));
        if self.listening {
            self.events.push_back(EndpointEvent::Delivery(delivery));
        }
    }

    fn log(&mut self, record: Option<&str>, kind: LogKind) {
        self.events.push_back(EndpointEvent::Logged(LogEntry {
            record: record.map(str::to_owned),
            kind,
        }));
    }

    fn done(&mut self, send: SendId, outcome: Result<SendResult, SendFailure>) {
        if self.end_send(send).is_some() {
            self.events.push_back(EndpointEvent::SendDone { send, outcome });
        }
    }

    /// Reads the session's events and routes them.
    fn drain(&mut self, now: Millis) {
        while let Some(ev) = self.session.poll_event() {
            match ev {
                Event::Connected { generation, .. } => {
                    self.events.push_back(EndpointEvent::Connected { generation });
                    // The sends waiting for the connection go first: they are bounded by
                    // `max_in_flight`, so all of them can. Then every connect reads the recent
                    // window back, the first too: what was posted while no connection was up is
                    // delivered, in chain order (a session left full retries it after 1 s).
                    self.attached(now);
                    self.recover(now);
                }
                Event::ConnectFailed { error, .. } => {
                    let reason = match error.kind() {
                        ErrorKind::Version => ConnectErrorReason::IncompatibleDaemon,
                        ErrorKind::Decode | ErrorKind::Protocol => ConnectErrorReason::DecodeFailed,
                        _ => ConnectErrorReason::TransportFailed,
                    };
                    // A refusal the same daemon will repeat (its version, the credentials)
                    // ends the wait at once; a transport failure, a timeout or a closed socket
                    // does not: the host may connect again, and each waiting send's
                    // `attach_wait_ms` decides (`gate.rs`).
                    let refused = matches!(error.kind(), ErrorKind::Version | ErrorKind::Auth);
                    let why = format!("the connection failed ({})", error.error.message);
                    self.events
                        .push_back(EndpointEvent::ConnectFailed(ConnectError::with_detail(
                            reason,
                            error.error.message,
                        )));
                    if refused {
                        self.detached(&why);
                    }
                }
                Event::Response { id, result } => {
                    if let Some(call) = self.calls.remove(&id) {
                        self.answered(now, call, Ok(result));
                    }
                }
                Event::Failed { id, error } => {
                    if let Some(call) = self.calls.remove(&id) {
                        self.answered(now, call, Err(error));
                    }
                }
                Event::MessageReceived { data, .. } => self.record_arrived(now, &data, true),
                Event::Diagnostic(e) => self.events.push_back(EndpointEvent::Diagnostic(e)),
                Event::Disconnected { code, reason } => {
                    self.records_connection_lost();
                    self.events.push_back(EndpointEvent::Disconnected { code, reason })
                }
                // Conversation and presence pushes carry nothing an endpoint delivers.
                _ => {}
            }
        }
    }

    fn answered(&mut self, now: Millis, call: Call, result: Result<String, crate::MoltZapError>) {
        match call {
            Call::Lookup(send) => self.members_resolved(now, send, result),
            Call::Post { send, member } => self.post_answered(now, send, member, result),
            Call::Close(id) => self.close_answered(now, &id, result),
            Call::Conversation(c) => self.conversation_resolved(now, &c, result),
            Call::Names(c) => self.names_resolved(now, &c, result),
            Call::Recover => self.recovered(now, result),
            Call::RecoverConversations(run) => self.recovered_conversations(now, run, result),
            Call::RecoverWindow { run, conversation } => self.recovered_window(now, run, &conversation, result),
        }
    }

    fn call(&mut self, now: Millis, method: &str, params: &str, call: Call) -> Result<(), crate::MoltZapError> {
        let id = self.session.call(now, method, Some(params))?;
        self.calls.insert(id, call);
        Ok(())
    }
}

/// Ids already seen, bounded (oldest forgotten first).
#[derive(Debug, Default)]
struct Seen {
    order: VecDeque<String>,
    set: HashSet<String>,
}

impl Seen {
    fn contains(&self, id: &str) -> bool {
        self.set.contains(id)
    }

    /// False when `id` was seen already.
    fn insert(&mut self, id: &str) -> bool {
        if self.set.contains(id) {
            return false;
        }
        if self.order.len() >= SEEN_CAP {
            if let Some(old) = self.order.pop_front() {
                self.set.remove(&old);
            }
        }
        self.order.push_back(id.to_owned());
        self.set.insert(id.to_owned());
        true
    }
}

#[cfg(test)]
mod tests {
    //! Sans-IO: a scripted server. The multi-party behaviour is tested against the peer
    //! (`tests/peers/moltzap/tests/harness_endpoint.rs`).
    use super::*;
    use crate::harness::address::MessageAddressInput;
    use crate::harness::errors::SendErrorReason;
    use crate::harness::send::{CollectiveOperation, SendInput, SendOptions};
    use agentwire_core::SeededEntropy;

    fn endpoint() -> Endpoint {
        let cfg = EndpointConfig::new(AgentAddress::parse("agent:alice").unwrap());
        Endpoint::new(cfg, SessionConfig::default(), Box::new(SeededEntropy::new(1)))
    }

    /// Connected over a scripted socket.
    fn connected() -> Endpoint {
        let mut ep = endpoint();
        ep.handle_open(0);
        ep.connect(0, Credentials::AgentKey("moltzap_agent_k".into())).unwrap();
        let connect = ep.poll_transmit().unwrap();
        let id = sent_id(&connect);
        ep.handle_text(1, &format!(r#"{{"jsonrpc":"2.0","id":"{id}","result":{{}}}}"#));
        assert!(matches!(ep.poll_event(), Some(EndpointEvent::Connected { .. })));
        // The first connect's recovery, answered with an empty window.
        let list = ep.poll_transmit().unwrap();
        assert!(list.as_text().unwrap().contains("agent/message/list"));
        let id = sent_id(&list);
        ep.handle_text(
            1,
            &format!(r#"{{"jsonrpc":"2.0","id":"{id}","result":{{"messages":[]}}}}"#),
        );
        ep
    }

    fn sent_id(o: &Outgoing) -> String {
        let v: serde_json::Value = serde_json::from_str(o.as_text().unwrap()).unwrap();
        v["id"].as_str().unwrap().to_owned()
    }

    fn text(to: &str, t: &str) -> SendInput {
        SendInput::Message {
            to: MessageAddressInput::parse(to).unwrap(),
            text: t.into(),
            collective: None,
        }
    }

    #[test]
    fn a_send_before_any_socket_is_opened_is_network_unavailable_and_posts_nothing() {
        let mut ep = endpoint();
        let Err(SendFailure::Send(e)) = ep.send(0, text("agent:bob", "hi"), SendOptions::default()) else {
            panic!()
        };
        assert_eq!(e.reason, SendErrorReason::NetworkUnavailable);
        assert!(ep.poll_transmit().is_none());
    }

    #[test]
    fn a_multicast_posts_text_then_its_part_with_a_post_id_and_completes_on_the_answer() {
        let mut ep = connected();
        let send = ep.send(5, text("agent:bob", "hi"), SendOptions::default()).unwrap();
        let out = ep.poll_transmit().unwrap();
        let v: serde_json::Value = serde_json::from_str(out.as_text().unwrap()).unwrap();
        assert_eq!(v["method"], "messages/send");
        assert_eq!(v["params"]["to"], "agent:bob");
        assert_eq!(v["params"]["parts"][0]["text"], "hi");
        assert_eq!(
            v["params"]["parts"][1]["value"]["org.social-harness/collective"]["op"],
            "multicast"
        );
        assert!(v["params"]["postId"].as_str().is_some_and(|p| p.len() == 36));
        let id = sent_id(&out);
        ep.handle_text(
            6,
            &format!(r#"{{"jsonrpc":"2.0","id":"{id}","result":{{"message":{{}}}}}}"#),
        );
        assert_eq!(
            ep.poll_event(),
            Some(EndpointEvent::SendDone {
                send,
                outcome: Ok(SendResult::default())
            })
        );
    }

    #[test]
    fn the_closed_failures_of_listen_acknowledge_and_a_bad_deadline() {
        let mut ep = connected();
        ep.listen().unwrap();
        assert_eq!(ep.listen().unwrap_err().reason, ListenErrorReason::AlreadyListening);
        assert_eq!(
            ep.acknowledge(DeliveryId(9)).unwrap_err().reason,
            DeliveryAcknowledgeErrorReason::UnknownDelivery
        );
        let schema = crate::harness::collective::tests::schema();
        let ask = SendInput::Message {
            to: MessageAddressInput::parse("agent:bob").unwrap(),
            text: "q".into(),
            collective: Some(CollectiveOperation::Ask {
                op: crate::harness::collective::AskOp::Gather,
                deadline: 0,
                requested_schema: schema,
            }),
        };
        let Err(SendFailure::Send(e)) = ep.send(0, ask, SendOptions::default()) else {
            panic!()
        };
        assert_eq!(e.reason, SendErrorReason::ContentInvalid);
        assert!(ep.poll_transmit().is_none());
    }

    #[test]
    fn a_closed_socket_ends_a_pending_multicast_as_outcome_unknown_and_keeps_its_intent() {
        let mut ep = connected();
        let send = ep.send(5, text("agent:bob", "hi"), SendOptions::default()).unwrap();
        let out = ep.poll_transmit().unwrap();
        let v: serde_json::Value = serde_json::from_str(out.as_text().unwrap()).unwrap();
        ep.handle_close(9, 1006, "");
        let done = std::iter::from_fn(|| ep.poll_event()).find(|e| matches!(e, EndpointEvent::SendDone { .. }));
        let Some(EndpointEvent::SendDone {
            send: s,
            outcome: Err(SendFailure::Send(e)),
        }) = done
        else {
            panic!()
        };
        assert_eq!((s, e.reason), (send, SendErrorReason::OutcomeUnknown));
        assert_eq!(
            ep.unfinished()[0].post_id.as_str(),
            v["params"]["postId"].as_str().unwrap()
        );
    }

    #[test]
    fn garbage_records_are_logged_not_delivered() {
        let mut ep = connected();
        ep.listen().unwrap();
        for junk in [
            r#"{"jsonrpc":"2.0","method":"messages/received","params":{"message":1}}"#,
            r#"{"jsonrpc":"2.0","method":"messages/received","params":{}}"#,
            "not json",
        ] {
            ep.handle_text(1, junk);
        }
        let events: Vec<EndpointEvent> = std::iter::from_fn(|| ep.poll_event()).collect();
        assert!(
            events.iter().all(|e| !matches!(e, EndpointEvent::Delivery(_))),
            "{events:?}"
        );
        assert!(
            events.iter().any(|e| matches!(e, EndpointEvent::Logged(_))),
            "{events:?}"
        );
        assert_eq!(ep.pending_deliveries(), 0);
    }

    #[test]
    fn a_gather_whose_only_post_fails_after_the_send_returned_still_gives_its_result() {
        let mut ep = connected();
        ep.cfg.send_wait_ms = 100;
        ep.listen().unwrap();
        let ask = SendInput::Message {
            to: MessageAddressInput::parse("agent:bob").unwrap(),
            text: "q".into(),
            collective: Some(CollectiveOperation::Ask {
                op: crate::harness::collective::AskOp::Gather,
                deadline: 600,
                requested_schema: crate::harness::collective::tests::schema(),
            }),
        };
        let send = ep.send(10, ask, SendOptions::default()).unwrap();
        let lookup = ep.poll_transmit().unwrap();
        ep.handle_text(
            11,
            &format!(
                r#"{{"jsonrpc":"2.0","id":"{}","result":{{"agents":[{{"id":"b","name":"bob"}}]}}}}"#,
                sent_id(&lookup)
            ),
        );
        let post = ep.poll_transmit().unwrap();
        ep.handle_timeout(200);
        let events: Vec<EndpointEvent> = std::iter::from_fn(|| ep.poll_event()).collect();
        let Some(EndpointEvent::SendDone {
            send: s,
            outcome: Ok(r),
        }) = events.into_iter().find(|e| matches!(e, EndpointEvent::SendDone { .. }))
        else {
            panic!()
        };
        assert!(s == send && r.operation_id.is_some());
        // The post fails after the send returned: bob is `no-answer`, and the result comes.
        ep.handle_text(
            300,
            &format!(
                r#"{{"jsonrpc":"2.0","id":"{}","error":{{"code":-32603,"message":"Internal error"}}}}"#,
                sent_id(&post)
            ),
        );
        let events: Vec<EndpointEvent> = std::iter::from_fn(|| ep.poll_event()).collect();
        let result = events.iter().find_map(|e| match e {
            EndpointEvent::Delivery(d) => Some(d.item.clone()),
            _ => None,
        });
        let Some(crate::harness::inbound::InboundItem::CollectiveResult(r)) = result else {
            panic!("{events:?}")
        };
        assert_eq!(r.outcomes()[0].outcome.kind(), "no-answer");
    }
}
