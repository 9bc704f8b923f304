//! Inbound records: each received message waits, in arrival order, until its conversation is
//! known (kind and members' names, from `conversations/get`), then is classified and becomes a
//! delivery, a held request, a counted answer, an applied close, or a log line. At every
//! connect (the first too), the recent window is read back and records already seen are skipped; live pushes
//! that arrive meanwhile wait until the recovered rows are queued. The current generation reads
//! it with one `agent/message/list`; the released one, which has no such method, lists the
//! conversations (`conversations/list`, following its `cursor`, a bounded number of pages) and reads the newest window of each one
//! active since the last record seen (`messages/list`), a few at a time.

use super::wire::Record;
use super::{Call, Endpoint, LogKind, Seen, Timer};
use crate::harness::address::{AgentAddress, GroupAddress};
use crate::harness::classify::{classify, Classified, Conversation};
use crate::harness::inbound::{DirectMessage, GroupMessage, InboundItem, InboundMessage};
use crate::harness::json::JsonValue;
use crate::MoltZapError;
use agentwire_core::{ErrorKind, Millis};
use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};

mod recovery;

/// What the endpoint knows of a conversation.
#[derive(Debug, Clone)]
enum Conv {
    Usable {
        conversation: Conversation,
        /// Participant id → address.
        names: HashMap<String, AgentAddress>,
    },
    /// Not one an endpoint can read (why).
    Unusable(String),
}

/// Lookups of one conversation that may fail for want of an answer (a timeout, a session with
/// too many requests in flight) before its waiting records are dropped.
pub(super) const RESOLVE_ATTEMPTS: u32 = 4;
/// The wait before the first retry of such a lookup; each next one waits twice as long.
pub(super) const RESOLVE_BACKOFF_MS: u64 = 1_000;
/// The most rows one `agent/message/list` returns (servers cap `limit` at 100).
pub(super) const MAX_RECOVERY_LIMIT: u32 = 100;
/// Recoveries (`agent/message/list`) that may fail for want of an answer before the live
/// pushes waiting for them are released; retried after the same backoff as a lookup. A
/// released recovery's requests share the count.
pub(super) const RECOVERY_ATTEMPTS: u32 = 4;
/// The `limit` of each `conversations/list` page a released recovery asks for (a server may
/// answer fewer, with a `cursor` to the rest); at most this many of a page's conversations are
/// read.
pub(super) const RECOVERY_PAGE_LIMIT: u32 = 20;
/// The `conversations/list` pages a released recovery reads at most, following each answer's
/// `cursor`. Neither the released spec nor the captures say in which order the list comes, so
/// no page can tell that the ones after it hold nothing newer: the pages are followed until one
/// has no `cursor`, or this many were read (then logged: more may have activity).
pub(super) const MAX_RECOVERY_PAGES: u32 = 10;
/// The conversations a released recovery lists and so reads at most: at most this many
/// `messages/list` windows, of `recovery_limit` rows each.
pub(super) const MAX_RECOVERY_CONVERSATIONS: u32 = RECOVERY_PAGE_LIMIT * MAX_RECOVERY_PAGES;
/// The longest `cursor` a released recovery follows (its bytes); a longer one ends the listing
/// (logged), so the cursors kept to tell a repeated one stay bounded.
pub(super) const MAX_RECOVERY_CURSOR_BYTES: usize = 1_024;
/// The `messages/list` requests a released recovery keeps in flight at once.
pub(super) const RECOVERY_WINDOWS_IN_FLIGHT: usize = 4;

/// A released recovery under way (`conversations/list`, then `messages/list` per conversation).
#[derive(Debug, Default)]
struct ReleasedRecovery {
    /// Which recovery: answers to an earlier one (cut by a lost connection) are ignored.
    run: u64,
    /// Every `conversations/list` page was read (or the listing stopped): `todo` holds what is
    /// left to read.
    listed: bool,
    /// `conversations/list` pages answered.
    pages: u32,
    /// The cursors followed, in order (at most [`MAX_RECOVERY_PAGES`], each at most
    /// [`MAX_RECOVERY_CURSOR_BYTES`]): the last is the page to ask (again, after a retry); one
    /// that comes back is not followed again.
    cursors: Vec<String>,
    /// The conversations whose window is still to be read, in order (each once; while listing
    /// they only accumulate, at most [`MAX_RECOVERY_CONVERSATIONS`]).
    todo: VecDeque<String>,
    /// `messages/list` requests in flight.
    in_flight: usize,
    /// A retry is waiting for its backoff: nothing new is asked until it is due.
    waiting: bool,
    /// The rows read, queued together (oldest first) once every window is read.
    rows: Vec<Record>,
    /// [`Records::overflows`] when it began: a record dropped for overflow since keeps the
    /// next recovery reading from before it.
    overflows_at_start: u64,
    /// A window was refused, or the listing stopped before its last page: what it would have
    /// read back stays to read.
    incomplete: bool,
}

/// Where a released recovery reads from: the conversations active at or after it.
#[derive(Debug, Clone, PartialEq)]
enum Since {
    /// Nothing is known (no record seen, or one dropped without a `createdAt`): every
    /// conversation listed.
    All,
    At(String),
}

/// The part of a `createdAt` compared: to the second (the first 19 bytes of ISO 8601), so a
/// server writing its fractions differently cannot make a later time sort earlier.
fn to_second(t: &str) -> &str {
    t.get(..19).unwrap_or(t)
}

/// The conversations known, bounded: past `EndpointConfig::max_conversations` the least
/// recently used is forgotten (looking it up again is one `conversations/get`).
#[derive(Debug, Default)]
struct Convs {
    map: HashMap<String, (Conv, u64)>,
    /// Last use → conversation.
    order: BTreeMap<u64, String>,
    tick: u64,
}

impl Convs {
    fn get(&mut self, id: &str) -> Option<Conv> {
        let (conv, used) = self.map.get_mut(id)?;
        self.order.remove(used);
        self.tick += 1;
        *used = self.tick;
        self.order.insert(self.tick, id.to_owned());
        Some(conv.clone())
    }

    fn insert(&mut self, id: &str, conv: Conv, cap: usize) {
        if let Some((_, used)) = self.map.remove(id) {
            self.order.remove(&used);
        }
        while self.map.len() >= cap.max(1) {
            let Some((_, oldest)) = self.order.pop_first() else {
                break;
            };
            self.map.remove(&oldest);
        }
        self.tick += 1;
        self.order.insert(self.tick, id.to_owned());
        self.map.insert(id.to_owned(), (conv, self.tick));
    }
}

#[derive(Debug, Default)]
pub(super) struct Records {
    queue: VecDeque<Record>,
    convs: Convs,
    /// Conversations being looked up, or waiting for a retry of their lookup.
    resolving: HashSet<String>,
    /// Failed attempts to look up a conversation (timeouts), per conversation.
    attempts: HashMap<String, u32>,
    /// A recovery (`agent/message/list`) is outstanding, waiting for a retry, or cut by a lost
    /// connection (the next connect recovers): live pushes wait in `live`.
    recovering: bool,
    /// Failed attempts of the current recovery.
    recovery_attempts: u32,
    live: VecDeque<Record>,
    /// The first this many of `live` were held across a lost connection: pushed before the
    /// current connection's recovery was asked, so one not in its window is older than the
    /// window (which is the newest rows), and is queued before it.
    carried: usize,
    seen: Seen,
    /// The newest `createdAt` among the records seen (the server's clock).
    newest_seen_at: Option<String>,
    /// The oldest `createdAt` of a record dropped for overflow (`Since::All`: one without) and
    /// not yet read back by a complete released recovery.
    dropped_since: Option<Since>,
    /// Records dropped for overflow, ever.
    overflows: u64,
    /// The released recovery under way.
    released: Option<ReleasedRecovery>,
    /// The last released recovery begun.
    run: u64,
}

impl Records {
    /// A record dropped for overflow: the next released recovery reads from before it.
    fn dropped(&mut self, record: &Record) {
        self.overflows += 1;
        let at = record.created_at.clone().map_or(Since::All, Since::At);
        self.dropped_since = match (self.dropped_since.take(), at) {
            (Some(Since::All), _) | (_, Since::All) => Some(Since::All),
            (Some(Since::At(a)), Since::At(b)) => Some(Since::At(if to_second(&b) < to_second(&a) { b } else { a })),
            (None, at) => Some(at),
        };
    }

    /// Where a released recovery reads from: the newest record seen, or the oldest dropped for
    /// overflow when that is earlier.
    fn since(&self) -> Since {
        match (&self.newest_seen_at, &self.dropped_since) {
            (None, _) | (_, Some(Since::All)) => Since::All,
            (Some(n), None) => Since::At(n.clone()),
            (Some(n), Some(Since::At(d))) => Since::At(if to_second(d) < to_second(n) {
                d.clone()
            } else {
                n.clone()
            }),
        }
    }
}

fn obj<'a>(v: &'a JsonValue, key: &str) -> Option<&'a JsonValue> {
    match v {
        JsonValue::Object(o) => o.get(key),
        _ => None,
    }
}

fn string(v: Option<&JsonValue>) -> Option<&str> {
    match v {
        Some(JsonValue::String(s)) => Some(s),
        _ => None,
    }
}

impl Endpoint {
    /// A `messages/received` payload (`{"message"}`), or (`wrapped` false) a bare Message.
    pub(super) fn record_arrived(&mut self, now: Millis, text: &str, wrapped: bool) {
        let record = if wrapped {
            Record::from_wrapped(text)
        } else {
            JsonValue::parse(text)
                .map_err(|e| e.to_string())
                .and_then(|v| Record::from_message(&v))
        };
        match record {
            Ok(r) if wrapped && self.records.recovering => self.hold_live(r),
            Ok(r) => self.queue_record(now, r),
            Err(why) => self.log(None, LogKind::Unreadable(why)),
        }
    }

    /// A live push while a recovery is outstanding waits for the recovered rows, so it cannot
    /// overtake them (a close before the answers it lists). Bounded like the queue.
    fn hold_live(&mut self, record: Record) {
        if self.records.seen.contains(&record.id) {
            return;
        }
        if self.records.live.len() >= self.cfg.max_pending_records.max(1) {
            self.records.dropped(&record);
            return self.log(Some(&record.id), LogKind::RecordsOverflow);
        }
        self.records.live.push_back(record);
    }

    /// A record joins the queue, unless it was seen. A record dropped because the queue is full
    /// is not counted as seen: the next recovery can read it back.
    fn queue_record(&mut self, now: Millis, record: Record) {
        if self.records.seen.contains(&record.id) {
            return;
        }
        if self.records.queue.len() >= self.cfg.max_pending_records.max(1) {
            self.records.dropped(&record);
            self.log(Some(&record.id), LogKind::RecordsOverflow);
            return;
        }
        self.records.seen.insert(&record.id);
        if let Some(at) = &record.created_at {
            if self
                .records
                .newest_seen_at
                .as_deref()
                .is_none_or(|n| to_second(at) > to_second(n))
            {
                self.records.newest_seen_at = Some(at.clone());
            }
        }
        self.records.queue.push_back(record);
        self.process(now);
    }

    /// The connection is gone: lookups in flight failed with it and are asked again at the
    /// next connect, with their attempts counted afresh.
    pub(super) fn records_connection_lost(&mut self) {
        self.records.resolving.clear();
        // Live pushes held for a recovery wait for the next connect's; they came before it.
        self.records.carried = self.records.live.len();
        // A recovery waiting for a retry is made at the next connect instead.
        self.timers.cancel(&Timer::Recover);
        for conv in std::mem::take(&mut self.records.attempts).into_keys() {
            self.timers.cancel(&Timer::Resolve(conv));
        }
    }

    /// A retry of a lookup is due: the front record asks again.
    pub(super) fn resolve_again(&mut self, now: Millis, conv_id: &str) {
        self.records.resolving.remove(conv_id);
        self.process(now);
    }

    /// A lookup got no answer (a timeout, or the session could not take the request): asked
    /// again after a backoff, up to [`RESOLVE_ATTEMPTS`] times; then the records waiting on the
    /// conversation are dropped and logged, so the queue never waits for good.
    fn resolve_retry(&mut self, now: Millis, conv_id: &str, why: String) {
        let attempts = self.records.attempts.entry(conv_id.to_owned()).or_insert(0);
        *attempts += 1;
        let n = *attempts;
        if n >= RESOLVE_ATTEMPTS {
            let why = format!("the conversation could not be looked up ({why}; {n} attempts)");
            return self.conversation_failed(now, conv_id, why);
        }
        // Still `resolving`: nothing asks again before the timer.
        self.records.resolving.insert(conv_id.to_owned());
        let backoff = RESOLVE_BACKOFF_MS.saturating_mul(1 << (n - 1));
        self.timers
            .set(Timer::Resolve(conv_id.to_owned()), now.saturating_add(backoff));
    }

    /// Asks the server for a conversation (`call` is `conversations/get` or `agents/lookup`):
    /// not connected, it is asked again at the next connect; a session that cannot take the
    /// request now retries like a timeout.
    fn resolve_call(&mut self, now: Millis, method: &str, params: &str, call: Call, conv_id: &str) {
        if let Err(e) = self.call(now, method, params, call) {
            self.records.resolving.remove(conv_id);
            if self.session.state() == crate::session::SessionState::Ready {
                self.resolve_retry(now, conv_id, format!("{method}: {}", e.error.message));
            }
        }
    }

    /// Handles records from the front while their conversation is known, and while the
    /// firewall's admission queue has room (records wait here otherwise).
    pub(super) fn process(&mut self, now: Millis) {
        while let Some(front) = self.records.queue.front() {
            if self.admission_full() {
                return;
            }
            let conv_id = front.conversation_id.clone();
            match self.records.convs.get(&conv_id) {
                Some(conv) => {
                    if let Some(record) = self.records.queue.pop_front() {
                        self.handle_record(now, record, &conv);
                    }
                }
                None => {
                    if self.records.resolving.insert(conv_id.clone()) {
                        let params = crate::harness::canonical::to_canonical(&JsonValue::object([(
                            "conversationId",
                            conv_id.clone().into(),
                        )]));
                        let call = Call::Conversation(conv_id.clone());
                        self.resolve_call(now, "conversations/get", &params, call, &conv_id);
                    }
                    return;
                }
            }
        }
    }

    pub(super) fn conversation_resolved(&mut self, now: Millis, conv_id: &str, result: Result<String, MoltZapError>) {
        let value = match result {
            Ok(text) => JsonValue::parse(&text).map_err(|e| format!("conversations/get answered no JSON: {e}")),
            Err(e) if e.kind() == ErrorKind::Closed => {
                // The connection is gone: asked again at the next connect.
                self.records.resolving.remove(conv_id);
                return;
            }
            Err(e) if matches!(e.kind(), ErrorKind::Timeout | ErrorKind::Cancelled) => {
                return self.resolve_retry(now, conv_id, format!("conversations/get: {}", e.error.message));
            }
            Err(e) => {
                let why = format!("conversations/get failed: {}", e.error.message);
                return self.conversation_failed(now, conv_id, why);
            }
        };
        let parsed = value.and_then(|v| {
            let kind = string(obj(&v, "conversation").and_then(|c| obj(c, "type")))
                .ok_or("the conversation has no type")?
                .to_owned();
            let Some(JsonValue::Array(ps)) = obj(&v, "participants") else {
                return Err("the conversation lists no participants".to_owned());
            };
            let mut ids = Vec::new();
            let mut names = HashMap::new();
            for p in ps {
                let id = string(obj(p, "participant").and_then(|q| obj(q, "id")))
                    .ok_or("a participant has no id")?
                    .to_owned();
                if let Some(a) = string(obj(p, "agentName")).and_then(AgentAddress::from_name) {
                    names.insert(id.clone(), a);
                }
                ids.push(id);
            }
            Ok((kind, ids, names))
        });
        match parsed {
            // A malformed answer is not a fact about the conversation: like a refusal, nothing
            // is cached and the next record asks again.
            Err(why) => self.conversation_failed(now, conv_id, why),
            Ok((kind, ids, names)) if names.len() == ids.len() => {
                let conv = self.build_conv(&kind, names);
                self.conversation_known(now, conv_id, conv);
            }
            Ok((kind, ids, _)) => {
                // The participants' names come from the Registry.
                let list: Vec<JsonValue> = ids.iter().cloned().map(JsonValue::from).collect();
                let params =
                    crate::harness::canonical::to_canonical(&JsonValue::object([("agentIds", JsonValue::Array(list))]));
                self.pending_kinds.insert(conv_id.to_owned(), (kind, ids));
                self.resolve_call(now, "agents/lookup", &params, Call::Names(conv_id.to_owned()), conv_id);
            }
        }
    }

    pub(super) fn names_resolved(&mut self, now: Millis, conv_id: &str, result: Result<String, MoltZapError>) {
        let (kind, ids) = self.pending_kinds.remove(conv_id).unwrap_or_default();
        let conv = match result.map(|t| JsonValue::parse(&t)) {
            Ok(Ok(v)) => {
                // Each participant asked for, named once; ids not asked for are ignored.
                let asked: HashSet<&str> = ids.iter().map(String::as_str).collect();
                let mut names = HashMap::new();
                let mut twice = false;
                if let Some(JsonValue::Array(agents)) = obj(&v, "agents") {
                    for a in agents {
                        if let (Some(id), Some(name)) = (string(obj(a, "id")), string(obj(a, "name"))) {
                            if asked.contains(id) {
                                let addr = AgentAddress::from_name(name);
                                twice |= names.insert(id.to_owned(), addr).is_some();
                            }
                        }
                    }
                }
                let names: Option<HashMap<_, _>> = names.into_iter().map(|(id, a)| Some((id, a?))).collect();
                match names {
                    // A member list missing a participant would be another group.
                    Some(names) if !twice && names.len() == asked.len() => self.build_conv(&kind, names),
                    _ => {
                        let why = "agents/lookup did not name every participant exactly once".to_owned();
                        return self.conversation_failed(now, conv_id, why);
                    }
                }
            }
            Ok(Err(e)) => {
                return self.conversation_failed(now, conv_id, format!("agents/lookup answered no JSON: {e}"));
            }
            Err(e) if e.kind() == ErrorKind::Closed => {
                self.records.resolving.remove(conv_id);
                return;
            }
            Err(e) if matches!(e.kind(), ErrorKind::Timeout | ErrorKind::Cancelled) => {
                return self.resolve_retry(now, conv_id, format!("agents/lookup: {}", e.error.message));
            }
            Err(e) => {
                let why = format!("agents/lookup failed: {}", e.error.message);
                return self.conversation_failed(now, conv_id, why);
            }
        };
        self.conversation_known(now, conv_id, conv);
    }

    /// The server refused to describe the conversation, or answered malformed: the records
    /// waiting on it are logged and dropped, and nothing is cached, so the next record asks
    /// again (one lookup in flight per conversation).
    fn conversation_failed(&mut self, now: Millis, conv_id: &str, why: String) {
        self.pending_kinds.remove(conv_id);
        self.records.resolving.remove(conv_id);
        self.records.attempts.remove(conv_id);
        self.timers.cancel(&Timer::Resolve(conv_id.to_owned()));
        let (dropped, kept): (VecDeque<Record>, VecDeque<Record>) = std::mem::take(&mut self.records.queue)
            .into_iter()
            .partition(|r| r.conversation_id == conv_id);
        self.records.queue = kept;
        for r in dropped {
            self.log(Some(&r.id), LogKind::Unreadable(why.clone()));
        }
        self.process(now);
    }

    fn conversation_known(&mut self, now: Millis, conv_id: &str, conv: Conv) {
        self.records.resolving.remove(conv_id);
        self.records.attempts.remove(conv_id);
        self.timers.cancel(&Timer::Resolve(conv_id.to_owned()));
        self.records.convs.insert(conv_id, conv, self.cfg.max_conversations);
        self.process(now);
    }

    /// A `dm` is the direct conversation with its other participant; a `group` of 3 to 32 is
    /// the group of its members. Anything else is not one an endpoint reads.
    fn build_conv(&self, kind: &str, names: HashMap<String, AgentAddress>) -> Conv {
        let me = &self.cfg.agent;
        let members: Vec<AgentAddress> = names.values().cloned().collect();
        if !members.contains(me) {
            return Conv::Unusable(format!("{me} is not a participant"));
        }
        let conversation = match kind {
            "dm" => match members.iter().find(|m| *m != me) {
                Some(peer) if members.len() == 2 => Conversation::Direct { peer: peer.clone() },
                _ => return Conv::Unusable("a direct conversation without exactly two agents".to_owned()),
            },
            "group" => match GroupAddress::canonical(me, &members) {
                Ok(g) => Conversation::Group(g),
                Err(e) => return Conv::Unusable(e.to_string()),
            },
            other => {
                let kind = crate::harness::errors::quote(other);
                return Conv::Unusable(format!("a conversation of type {kind}"));
            }
        };
        Conv::Usable { conversation, names }
    }

    fn handle_record(&mut self, now: Millis, record: Record, conv: &Conv) {
        let (conversation, names) = match conv {
            Conv::Usable { conversation, names } => (conversation, names),
            Conv::Unusable(why) => return self.log(Some(&record.id), LogKind::Unreadable(why.clone())),
        };
        let Some(sender) = names.get(&record.sender_id).cloned() else {
            return self.log(
                Some(&record.id),
                LogKind::Unreadable("the sender is not a participant".to_owned()),
            );
        };
        if sender == self.cfg.agent {
            // This agent's own post, seen from another connection or read back: not inbound.
            // Its answer in an all_gather's group is recorded, so a close listing it applies.
            if let (Conversation::Group(_), Ok(content)) = (conversation, record.content()) {
                self.own_answer(now, &record.id, conversation, &content, &record.hash);
            }
            return;
        }
        let content = match record.content() {
            Ok(c) => c,
            Err(why) => return self.log(Some(&record.id), LogKind::Unreadable(why)),
        };
        match classify(&content, conversation, &sender, now) {
            Classified::Multicast(content) => {
                let message = match conversation {
                    Conversation::Direct { .. } => Ok(InboundMessage::Direct(DirectMessage::new(
                        record.post_id.clone(),
                        sender,
                        content,
                    ))),
                    Conversation::Group(g) => {
                        GroupMessage::from_address(record.post_id.clone(), g.clone(), sender, content)
                            .map(InboundMessage::Group)
                    }
                };
                match message {
                    Ok(message) => {
                        self.admit_item(now, &record.id, InboundItem::Multicast { message }, None);
                    }
                    Err(e) => self.log(Some(&record.id), LogKind::Unreadable(e.to_string())),
                }
            }
            Classified::Request(r) => {
                self.hold_request(now, &record.id, record.post_id.clone(), conversation, &sender, r, false)
            }
            Classified::LateAllGatherRequest(r) => {
                self.hold_request(now, &record.id, record.post_id.clone(), conversation, &sender, r, true)
            }
            Classified::Response(part) => {
                if !self.ask_answer(now, &record.id, conversation, &sender, &part, &record.hash) {
                    self.member_answer(now, &record.id, conversation, &sender, part, record.hash.clone());
                }
            }
            Classified::Close(close) => self.member_close(now, &record.id, conversation, &sender, close),
            Classified::Consumed(reason) => self.log(Some(&record.id), LogKind::Consumed(reason)),
        }
    }

    /// How many conversations are known (tests).
    #[cfg(test)]
    pub(super) fn conversations_known(&self) -> usize {
        self.records.convs.map.len()
    }
}
