//! The server's memory and the methods: agents, conversations, messages, presence, and the
//! connections they fan out to. Everything is bounded; nothing is persisted.

use crate::util::{agent_key, now_iso};
use agentwire_moltzap::register::valid_name;
use agentwire_moltzap::{encode_notification, Generation, CURRENT_PROTOCOL, RELEASED_PROTOCOL};
use agentwire_peer_kit::ids::{is_uuid, uuid};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::value::{to_raw_value, RawValue};
use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet, VecDeque};
use std::sync::Arc;
use tokio::sync::{mpsc, Notify};

/// Registered agents kept at most.
pub(crate) const MAX_AGENTS: usize = 10_000;
/// Conversations kept at most.
pub(crate) const MAX_CONVERSATIONS: usize = 10_000;
/// Messages kept per conversation (the oldest are forgotten).
pub(crate) const MAX_MESSAGES_PER_CONVERSATION: usize = 10_000;
/// Presence subscriptions per connection.
pub(crate) const MAX_SUBSCRIPTIONS: usize = 1_000;
/// `postId`s remembered per sender for deduplication (the oldest are forgotten first).
pub(crate) const MAX_POST_IDS: usize = 4_096;
/// Largest `data` part value, serialized (agentwire extension).
pub(crate) const MAX_DATA_BYTES: usize = 65_536;
/// Members of a `group:` conversation, the sender included (agentwire extension).
pub(crate) const GROUP_TO_MEMBERS: std::ops::RangeInclusive<usize> = 3..=32;
/// Longest `postId` (agentwire extension).
const MAX_POST_ID: usize = 128;

/// The released server's policy, as its HelloOk carries it (key order included).
const POLICY: &str = r#"{"maxMessageBytes":65536,"maxPartsPerMessage":10,"maxTextLength":32768,"maxGroupParticipants":256,"heartbeatIntervalMs":30000,"rateLimits":{"messagesPerMinute":60,"requestsPerMinute":120}}"#;
const MAX_PARTS: usize = 10;
const MAX_TEXT: usize = 32_768;
const MAX_GROUP: usize = 256;

/// What a connection task is asked to put on its socket.
#[derive(Debug)]
pub(crate) enum Out {
    Text(String),
    /// End the connection abruptly (no close frame).
    Drop,
}

/// An error answer: code and message (the `_tag` is added from the code table in the current
/// generation).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Fail {
    pub(crate) code: i64,
    pub(crate) message: String,
}

fn fail(code: i64, message: impl Into<String>) -> Fail {
    Fail {
        code,
        message: message.into(),
    }
}

fn invalid() -> Fail {
    fail(-32602, "Invalid parameters")
}

fn not_participant() -> Fail {
    fail(-32001, "Not a participant in this conversation")
}

type Answer = Result<Box<RawValue>, Fail>;

fn ok<T: Serialize>(value: &T) -> Answer {
    to_raw_value(value).map_err(|_| fail(-32603, "Internal error"))
}

/// `{"key":value}` with the value's own key order.
fn wrap<T: Serialize>(key: &str, value: &T) -> Answer {
    let inner = serde_json::to_string(value).map_err(|_| fail(-32603, "Internal error"))?;
    let mut out = String::with_capacity(inner.len() + key.len() + 5);
    out.push_str("{\"");
    out.push_str(key);
    out.push_str("\":");
    out.push_str(&inner);
    out.push('}');
    RawValue::from_string(out).map_err(|_| fail(-32603, "Internal error"))
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Status<'a> {
    agent_id: &'a str,
    status: &'static str,
}

fn params<T: DeserializeOwned>(p: Option<&RawValue>) -> Result<T, Fail> {
    serde_json::from_str(p.map_or("{}", RawValue::get)).map_err(|_| invalid())
}

/// A message part. `data` is agentwire's extension (current generation only): it is never
/// deserialized through this enum but by [`parse_part`], which keeps the value's text as received.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "lowercase", deny_unknown_fields)]
enum Part {
    Text {
        text: String,
    },
    Image {
        url: String,
        #[serde(rename = "altText", default, skip_serializing_if = "Option::is_none")]
        alt_text: Option<String>,
    },
    File {
        url: String,
        name: String,
        #[serde(rename = "mimeType", default, skip_serializing_if = "Option::is_none")]
        mime_type: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        size: Option<u64>,
    },
    #[serde(skip_deserializing)]
    Data {
        value: Box<RawValue>,
    },
}

/// One part of `messages/send`: a `data` part in the current generation (any JSON value, kept as
/// received), else one of the spec's. Anything else is -32602.
fn parse_part(raw: &RawValue, generation: Generation) -> Result<Part, Fail> {
    #[derive(Deserialize)]
    struct Tag {
        #[serde(rename = "type", default)]
        kind: Option<String>,
    }
    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Data {
        #[serde(rename = "type")]
        _kind: String,
        value: Box<RawValue>,
    }
    let tag: Tag = serde_json::from_str(raw.get()).map_err(|_| invalid())?;
    if generation == Generation::Current && tag.kind.as_deref() == Some("data") {
        let d: Data = serde_json::from_str(raw.get()).map_err(|_| invalid())?;
        return Ok(Part::Data { value: d.value });
    }
    serde_json::from_str(raw.get()).map_err(|_| invalid())
}

/// A `postId`: 1..=128 printable ASCII characters.
fn valid_post_id(id: &str) -> bool {
    (1..=MAX_POST_ID).contains(&id.len()) && id.bytes().all(|b| (0x20..=0x7e).contains(&b))
}

impl Part {
    fn valid(&self) -> bool {
        match self {
            Part::Text { text } => (1..=MAX_TEXT).contains(&text.encode_utf16().count()),
            Part::Image { url, .. } => !url.is_empty(),
            Part::File { url, name, .. } => !url.is_empty() && !name.is_empty(),
            Part::Data { value } => value.get().len() <= MAX_DATA_BYTES,
        }
    }
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
struct Message {
    id: String,
    conversation_id: String,
    sender_id: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    reply_to_id: Option<String>,
    parts: Vec<Part>,
    created_at: String,
    /// The sender's `postId` (agentwire extension, current generation).
    #[serde(skip_serializing_if = "Option::is_none")]
    post_id: Option<String>,
}

struct Agent {
    id: String,
    name: String,
    description: Option<String>,
    presence: &'static str,
}

#[derive(Serialize)]
struct AgentCard<'a> {
    id: &'a str,
    name: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    description: Option<&'a str>,
    status: &'static str,
}

impl Agent {
    fn card(&self) -> AgentCard<'_> {
        AgentCard {
            id: &self.id,
            name: &self.name,
            description: self.description.as_deref(),
            status: "active",
        }
    }
}

struct Member {
    agent: String,
    role: &'static str,
    joined_at: String,
}

struct Conversation {
    id: String,
    kind: &'static str,
    name: Option<String>,
    created_by: String,
    created_at: String,
    updated_at: String,
    members: Vec<Member>,
    /// (global sequence, message), oldest first.
    messages: VecDeque<(u64, Message)>,
    /// Messages ever sent (the released server's `unreadCount` counts them all: it has no read marks).
    total: u64,
    last: Option<(String, String)>,
    /// Sequence of the last activity, for ordering lists.
    touched: u64,
    /// Set by `conversations/archive` (for every participant).
    archived_at: Option<String>,
    /// Agents that muted the conversation.
    muted: HashSet<String>,
    /// The fixed-member group of a `group:` send (agentwire extension): its members never change.
    fixed: bool,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ConversationView<'a> {
    id: &'a str,
    #[serde(rename = "type")]
    kind: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    name: Option<&'a str>,
    created_by: &'a str,
    created_at: &'a str,
    updated_at: &'a str,
}

#[derive(Serialize)]
struct ParticipantRef<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    id: &'a str,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Summary<'a> {
    id: &'a str,
    #[serde(rename = "type")]
    kind: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    name: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    last_message_preview: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    last_message_timestamp: Option<&'a str>,
    unread_count: u64,
    participants: Vec<ParticipantRef<'a>>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ParticipantView<'a> {
    conversation_id: &'a str,
    participant: ParticipantRef<'a>,
    role: &'static str,
    joined_at: &'a str,
    agent_name: &'a str,
}

impl Conversation {
    fn has(&self, agent: &str) -> bool {
        self.members.iter().any(|m| m.agent == agent)
    }

    fn view(&self) -> ConversationView<'_> {
        ConversationView {
            id: &self.id,
            kind: self.kind,
            name: self.name.as_deref(),
            created_by: &self.created_by,
            created_at: &self.created_at,
            updated_at: &self.updated_at,
        }
    }

    fn summary(&self) -> Summary<'_> {
        Summary {
            id: &self.id,
            kind: self.kind,
            name: self.name.as_deref(),
            last_message_preview: self.last.as_ref().map(|l| l.0.as_str()),
            last_message_timestamp: self.last.as_ref().map(|l| l.1.as_str()),
            unread_count: self.total,
            participants: self
                .members
                .iter()
                .map(|m| ParticipantRef {
                    kind: "agent",
                    id: &m.agent,
                })
                .collect(),
        }
    }
}

pub(crate) struct Conn {
    pub(crate) agent: Option<String>,
    tx: mpsc::Sender<Out>,
    kill: Arc<Notify>,
    subscriptions: HashSet<String>,
    /// The first HelloOk (released), returned unchanged to a second `auth/connect`.
    hello: Option<Box<RawValue>>,
}

pub(crate) struct State {
    generation: Generation,
    /// [`crate::PeerConfig::max_conversations_page`].
    max_conversations_page: usize,
    agents: HashMap<String, Agent>,
    by_name: HashMap<String, String>,
    by_key: HashMap<String, String>,
    conversations: HashMap<String, Conversation>,
    conns: HashMap<u64, Conn>,
    seq: u64,
    /// The `group:` conversations: sorted member ids → conversation id.
    groups: HashMap<Vec<String>, String>,
    /// Per sender: the answers of its sends with a `postId`.
    posts: HashMap<String, Posts>,
}

/// A sender's `postId`s and the answers they got, the oldest forgotten past [`MAX_POST_IDS`].
#[derive(Default)]
struct Posts {
    answers: HashMap<String, Box<RawValue>>,
    order: VecDeque<String>,
}

impl Posts {
    fn remember(&mut self, post_id: String, answer: Box<RawValue>) {
        if self.answers.insert(post_id.clone(), answer).is_none() {
            self.order.push_back(post_id);
        }
        while self.order.len() > MAX_POST_IDS {
            if let Some(old) = self.order.pop_front() {
                self.answers.remove(&old);
            }
        }
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct Registration {
    name: String,
    #[serde(default)]
    description: Option<String>,
    #[serde(default)]
    invite_code: Option<String>,
}

/// A participant reference in params: `{"type": "agent", "id"}`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Ref {
    #[serde(rename = "type")]
    kind: String,
    id: String,
}

/// An HTTP error body, `{"error": ...}`.
pub(crate) fn error_body(message: &str) -> String {
    serde_json::json!({ "error": message }).to_string()
}

/// Version strings compared part by part as numbers (`2026.811.0`).
fn version(v: &str) -> Option<Vec<u64>> {
    v.split('.').map(|p| p.parse().ok()).collect()
}

impl State {
    pub(crate) fn new(generation: Generation, max_conversations_page: usize) -> Self {
        State {
            generation,
            max_conversations_page: max_conversations_page.max(1),
            agents: HashMap::new(),
            by_name: HashMap::new(),
            by_key: HashMap::new(),
            conversations: HashMap::new(),
            conns: HashMap::new(),
            seq: 0,
            groups: HashMap::new(),
            posts: HashMap::new(),
        }
    }

    fn next_seq(&mut self) -> u64 {
        self.seq += 1;
        self.seq
    }

    /// `POST /api/v1/auth/register`: (status, JSON body).
    pub(crate) fn register(&mut self, body: &[u8]) -> (u16, String) {
        let Ok(reg) = serde_json::from_slice::<Registration>(body) else {
            return (400, error_body("Invalid request body"));
        };
        let _ = reg.invite_code;
        if !valid_name(&reg.name) {
            return (
                400,
                error_body("Invalid name: must match ^[a-z0-9][a-z0-9_-]{1,30}[a-z0-9]$"),
            );
        }
        if self.by_name.contains_key(&reg.name) || self.agents.len() >= MAX_AGENTS {
            return (500, error_body("Registration failed"));
        }
        let (id, key) = (uuid(), agent_key());
        self.by_name.insert(reg.name.clone(), id.clone());
        self.by_key.insert(key.clone(), id.clone());
        self.agents.insert(
            id.clone(),
            Agent {
                id: id.clone(),
                name: reg.name,
                description: reg.description,
                presence: "offline",
            },
        );
        #[derive(Serialize)]
        #[serde(rename_all = "camelCase")]
        struct Registered<'a> {
            agent_id: &'a str,
            api_key: &'a str,
        }
        let body = serde_json::to_string(&Registered {
            agent_id: &id,
            api_key: &key,
        })
        .unwrap_or_default();
        (201, body)
    }

    pub(crate) fn open(&mut self, conn: u64, tx: mpsc::Sender<Out>, kill: Arc<Notify>) {
        self.conns.insert(
            conn,
            Conn {
                agent: None,
                tx,
                kill,
                subscriptions: HashSet::new(),
                hello: None,
            },
        );
    }

    /// Forgets a connection; its agent goes offline when it was the last one.
    pub(crate) fn close(&mut self, conn: u64) {
        if let Some(agent) = self.conns.remove(&conn).and_then(|c| c.agent) {
            if !self.conns.values().any(|c| c.agent.as_deref() == Some(&agent)) {
                self.set_presence(&agent, "offline", false);
            }
        }
    }

    /// Connections whose handshake succeeded (the health answer's `authenticated`).
    pub(crate) fn authenticated_count(&self) -> usize {
        self.conns.values().filter(|c| c.agent.is_some()).count()
    }

    pub(crate) fn authenticated(&self, conn: u64) -> bool {
        self.conns.get(&conn).is_some_and(|c| c.agent.is_some())
    }

    /// Queues `text` on a connection; a full queue marks it a slow consumer (it is closed with
    /// 1008), a closed one is ignored.
    fn send(&self, conn: u64, text: String) {
        if let Some(c) = self.conns.get(&conn) {
            if let Err(mpsc::error::TrySendError::Full(_)) = c.tx.try_send(Out::Text(text)) {
                c.kill.notify_one();
            }
        }
    }

    /// An event (released) or notification (current) to every connection of `agents` but `except`.
    fn fan_out(&self, agents: &[&str], except: u64, name: &str, payload: &RawValue) {
        let text = encode_notification(self.generation, name, Some(payload));
        let targets: Vec<u64> = self
            .conns
            .iter()
            .filter(|(id, c)| **id != except && c.agent.as_deref().is_some_and(|a| agents.contains(&a)))
            .map(|(id, _)| *id)
            .collect();
        for id in targets {
            self.send(id, text.clone());
        }
    }

    fn set_presence(&mut self, agent: &str, status: &'static str, always: bool) {
        let Some(a) = self.agents.get_mut(agent) else { return };
        if a.presence == status && !always {
            return;
        }
        a.presence = status;
        let Ok(raw) = to_raw_value(&Status {
            agent_id: agent,
            status,
        }) else {
            return;
        };
        let text = encode_notification(self.generation, "presence/changed", Some(&raw));
        let targets: Vec<u64> = self
            .conns
            .iter()
            .filter(|(_, c)| c.subscriptions.contains(agent))
            .map(|(id, _)| *id)
            .collect();
        for id in targets {
            self.send(id, text.clone());
        }
    }

    fn agent_of(&self, conn: u64) -> Result<String, Fail> {
        self.conns
            .get(&conn)
            .and_then(|c| c.agent.clone())
            .ok_or_else(|| fail(-32000, "Not authenticated"))
    }

    /// The handshake of the generation (`auth/connect` or `agent/network/connect`).
    pub(crate) fn connect(&mut self, conn: u64, p: Option<&RawValue>) -> Answer {
        match self.generation {
            Generation::Released => self.connect_released(conn, p),
            Generation::Current => self.connect_current(conn, p),
        }
    }

    fn connect_released(&mut self, conn: u64, p: Option<&RawValue>) -> Answer {
        #[derive(Deserialize)]
        #[serde(deny_unknown_fields, rename_all = "camelCase")]
        struct P {
            agent_key: Option<String>,
            session_token: Option<String>,
            #[allow(dead_code)]
            min_protocol: String,
            #[allow(dead_code)]
            max_protocol: String,
        }
        if let Some(hello) = self.conns.get(&conn).and_then(|c| c.hello.clone()) {
            return Ok(hello);
        }
        let p: P = params(p)?;
        let key = match (p.agent_key, p.session_token) {
            (Some(k), None) => k,
            (None, Some(_)) => return Err(fail(-32000, "Session tokens not supported by this server")),
            _ => return Err(invalid()),
        };
        let agent = self
            .by_key
            .get(&key)
            .cloned()
            .ok_or_else(|| fail(-32000, "Authentication failed"))?;
        self.bind(conn, &agent);
        let mut convs: Vec<&Conversation> = self.conversations.values().filter(|c| c.has(&agent)).collect();
        convs.sort_by_key(|c| std::cmp::Reverse(c.touched));
        let unread: BTreeMap<&str, u64> = convs
            .iter()
            .filter(|c| c.total > 0)
            .map(|c| (c.id.as_str(), c.total))
            .collect();
        #[derive(Serialize)]
        #[serde(rename_all = "camelCase")]
        struct Hello<'a> {
            protocol_version: &'static str,
            agent_id: &'a str,
            conversations: Vec<Summary<'a>>,
            unread_counts: BTreeMap<&'a str, u64>,
            policy: &'a RawValue,
        }
        let policy = RawValue::from_string(POLICY.to_string()).map_err(|_| fail(-32603, "Internal error"))?;
        let hello = ok(&Hello {
            protocol_version: RELEASED_PROTOCOL,
            agent_id: &agent,
            conversations: convs.iter().map(|c| c.summary()).collect(),
            unread_counts: unread,
            policy: &policy,
        })?;
        if let Some(c) = self.conns.get_mut(&conn) {
            c.hello = Some(hello.clone());
        }
        Ok(hello)
    }

    fn connect_current(&mut self, conn: u64, p: Option<&RawValue>) -> Answer {
        #[derive(Deserialize)]
        #[serde(rename_all = "camelCase")]
        struct P {
            agent_key: String,
            min_protocol: String,
            max_protocol: String,
        }
        if self.authenticated(conn) {
            return ok(&serde_json::json!({}));
        }
        let p: P = params(p)?;
        let ours = version(CURRENT_PROTOCOL);
        let (min, max) = (version(&p.min_protocol), version(&p.max_protocol));
        if min.is_none() || max.is_none() || min > ours || max < ours {
            return Err(fail(
                -32008,
                format!("Protocol mismatch: this server speaks {CURRENT_PROTOCOL}"),
            ));
        }
        let agent = self
            .by_key
            .get(&p.agent_key)
            .cloned()
            .ok_or_else(|| fail(-32000, "Authentication failed"))?;
        self.bind(conn, &agent);
        ok(&serde_json::json!({}))
    }

    fn bind(&mut self, conn: u64, agent: &str) {
        if let Some(c) = self.conns.get_mut(&conn) {
            c.agent = Some(agent.to_string());
        }
        self.set_presence(agent, "online", false);
    }

    /// Any method but the handshake, on an authenticated connection.
    pub(crate) fn call(&mut self, conn: u64, method: &str, p: Option<&RawValue>) -> Answer {
        let me = self.agent_of(conn)?;
        match method {
            "system/ping" => ok(&serde_json::json!({"ts": now_iso()})),
            "agents/lookup" => self.lookup(p, false),
            "agents/lookupByName" => self.lookup(p, true),
            "agents/list" => {
                let agents: BTreeMap<&str, AgentCard<'_>> =
                    self.agents.values().map(|a| (a.id.as_str(), a.card())).collect();
                wrap("agents", &agents)
            }
            "conversations/create" => self.create(conn, &me, p),
            "conversations/list" => self.list_conversations(&me, p),
            "conversations/get" => self.get_conversation(&me, p),
            "messages/send" => self.send_message(conn, &me, p),
            "messages/list" => self.list_messages(&me, p, false),
            "agent/message/list" if self.generation == Generation::Current => self.list_messages(&me, p, true),
            "conversations/update"
            | "conversations/mute"
            | "conversations/unmute"
            | "conversations/leave"
            | "conversations/archive"
            | "conversations/unarchive"
            | "conversations/addParticipant"
            | "conversations/removeParticipant" => self.manage(conn, &me, method, p),
            "presence/update" => {
                #[derive(Deserialize)]
                #[serde(deny_unknown_fields)]
                struct P {
                    status: String,
                }
                let p: P = params(p)?;
                let status = match p.status.as_str() {
                    "online" => "online",
                    "offline" => "offline",
                    "away" => "away",
                    _ => return Err(invalid()),
                };
                self.set_presence(&me, status, true);
                ok(&serde_json::json!({}))
            }
            "presence/subscribe" => {
                #[derive(Deserialize)]
                #[serde(deny_unknown_fields, rename_all = "camelCase")]
                struct P {
                    agent_ids: Vec<String>,
                }
                let p: P = params(p)?;
                if !(1..=100).contains(&p.agent_ids.len()) || !p.agent_ids.iter().all(|i| is_uuid(i)) {
                    return Err(invalid());
                }
                let statuses: Vec<_> = p
                    .agent_ids
                    .iter()
                    .filter_map(|id| self.agents.get(id))
                    .map(|a| Status {
                        agent_id: &a.id,
                        status: a.presence,
                    })
                    .collect();
                if let Some(c) = self.conns.get_mut(&conn) {
                    for id in p.agent_ids {
                        if c.subscriptions.len() < MAX_SUBSCRIPTIONS {
                            c.subscriptions.insert(id);
                        }
                    }
                }
                wrap("statuses", &statuses)
            }
            _ => Err(fail(-32601, format!("Unknown method: {method}"))),
        }
    }

    fn lookup(&self, p: Option<&RawValue>, by_name: bool) -> Answer {
        #[derive(Deserialize)]
        #[serde(deny_unknown_fields, rename_all = "camelCase")]
        struct Ids {
            agent_ids: Vec<String>,
        }
        #[derive(Deserialize)]
        #[serde(deny_unknown_fields)]
        struct Names {
            names: Vec<String>,
        }
        let ids: Vec<String> = if by_name {
            let n: Names = params(p)?;
            if !(1..=100).contains(&n.names.len()) {
                return Err(invalid());
            }
            n.names.iter().filter_map(|n| self.by_name.get(n).cloned()).collect()
        } else {
            let i: Ids = params(p)?;
            if !(1..=100).contains(&i.agent_ids.len()) || !i.agent_ids.iter().all(|i| is_uuid(i)) {
                return Err(invalid());
            }
            i.agent_ids
        };
        let agents: Vec<AgentCard<'_>> = ids
            .iter()
            .filter_map(|id| self.agents.get(id))
            .map(Agent::card)
            .collect();
        wrap("agents", &agents)
    }

    fn create(&mut self, conn: u64, me: &str, p: Option<&RawValue>) -> Answer {
        #[derive(Deserialize)]
        #[serde(deny_unknown_fields)]
        struct P {
            #[serde(rename = "type")]
            kind: String,
            #[serde(default)]
            name: Option<String>,
            participants: Vec<Ref>,
        }
        let p: P = params(p)?;
        if p.participants.iter().any(|r| r.kind != "agent" || !is_uuid(&r.id))
            || p.name.as_ref().is_some_and(|n| n.is_empty() || n.len() > 256)
        {
            return Err(invalid());
        }
        let mut others: Vec<String> = Vec::new();
        for r in p.participants {
            if r.id != me && !others.contains(&r.id) {
                others.push(r.id);
            }
        }
        if let Some(missing) = others.iter().find(|id| !self.agents.contains_key(*id)) {
            return Err(fail(-32002, format!("Agent '{missing}' not found")));
        }
        let kind = match p.kind.as_str() {
            "dm" if others.len() == 1 && p.name.is_none() => "dm",
            "group" if !others.is_empty() => "group",
            _ => return Err(invalid()),
        };
        if kind == "group" && others.len() + 1 > MAX_GROUP {
            return Err(fail(-32017, "Maximum participants exceeded"));
        }
        if kind == "dm" {
            if let Some(existing) = self.find_dm(me, &others[0]) {
                let c = &self.conversations[&existing];
                return wrap("conversation", &c.view());
            }
        }
        let id = self.new_conversation(kind, p.name, me, &others)?;
        let c = &self.conversations[&id];
        let raw = wrap("conversation", &c.view())?;
        let members: Vec<&str> = c.members.iter().map(|m| m.agent.as_str()).collect();
        self.fan_out(&members, conn, "conversations/created", &raw);
        Ok(raw)
    }

    /// The conversation management methods; each answers `{}`.
    fn manage(&mut self, conn: u64, me: &str, method: &str, p: Option<&RawValue>) -> Answer {
        #[derive(Deserialize)]
        #[serde(deny_unknown_fields, rename_all = "camelCase")]
        struct P {
            conversation_id: String,
            #[serde(default)]
            name: Option<String>,
            #[serde(default)]
            until: Option<String>,
            #[serde(default)]
            participant: Option<Ref>,
        }
        let p: P = params(p)?;
        let allowed = match method {
            "conversations/update" => p.until.is_none() && p.participant.is_none(),
            "conversations/mute" => p.name.is_none() && p.participant.is_none(),
            "conversations/addParticipant" | "conversations/removeParticipant" => {
                p.name.is_none()
                    && p.until.is_none()
                    && p.participant
                        .as_ref()
                        .is_some_and(|r| r.kind == "agent" && is_uuid(&r.id))
            }
            _ => p.name.is_none() && p.until.is_none() && p.participant.is_none(),
        };
        if !allowed {
            return Err(invalid());
        }
        let id = self.conversation_of(me, &p.conversation_id)?.id.clone();
        let now = now_iso();
        let members_before: Vec<String> = self.conversations[&id]
            .members
            .iter()
            .map(|m| m.agent.clone())
            .collect();
        let (event, payload) = {
            let c = self.conversations.get_mut(&id).ok_or_else(not_participant)?;
            let membership = matches!(
                method,
                "conversations/leave" | "conversations/addParticipant" | "conversations/removeParticipant"
            );
            if c.fixed && membership {
                return Err(invalid());
            }
            match method {
                "conversations/update" => {
                    match p.name {
                        Some(n) if c.kind == "group" && !n.is_empty() && n.len() <= 256 => c.name = Some(n),
                        Some(_) => return Err(invalid()),
                        None => {}
                    }
                    c.updated_at = now.clone();
                    (Some("conversations/updated"), wrap("conversation", &c.view())?)
                }
                "conversations/mute" => {
                    c.muted.insert(me.to_string());
                    (None, ok(&serde_json::json!({}))?)
                }
                "conversations/unmute" => {
                    c.muted.remove(me);
                    (None, ok(&serde_json::json!({}))?)
                }
                "conversations/leave" => {
                    c.members.retain(|m| m.agent != me);
                    (None, ok(&serde_json::json!({}))?)
                }
                "conversations/archive" => {
                    c.archived_at = Some(now.clone());
                    #[derive(Serialize)]
                    #[serde(rename_all = "camelCase")]
                    struct Archived<'a> {
                        conversation_id: &'a str,
                        archived_at: &'a str,
                        by: &'a str,
                    }
                    let raw = ok(&Archived {
                        conversation_id: &id,
                        archived_at: &now,
                        by: me,
                    })?;
                    (Some("conversations/archived"), raw)
                }
                "conversations/unarchive" => {
                    c.archived_at = None;
                    #[derive(Serialize)]
                    #[serde(rename_all = "camelCase")]
                    struct Unarchived<'a> {
                        conversation_id: &'a str,
                        by: &'a str,
                    }
                    let raw = ok(&Unarchived {
                        conversation_id: &id,
                        by: me,
                    })?;
                    (Some("conversations/unarchived"), raw)
                }
                _ => {
                    let target = p.participant.map(|r| r.id).unwrap_or_default();
                    if c.kind != "group" {
                        return Err(invalid());
                    }
                    if method == "conversations/addParticipant" {
                        if !self.agents.contains_key(&target) {
                            return Err(fail(-32002, format!("Agent '{target}' not found")));
                        }
                        if c.members.len() >= MAX_GROUP {
                            return Err(fail(-32017, "Maximum participants exceeded"));
                        }
                        if !c.has(&target) {
                            c.members.push(Member {
                                agent: target,
                                role: "member",
                                joined_at: now.clone(),
                            });
                        }
                    } else {
                        c.members.retain(|m| m.agent != target);
                    }
                    c.updated_at = now.clone();
                    (Some("conversations/updated"), wrap("conversation", &c.view())?)
                }
            }
        };
        if let Some(event) = event {
            let mut members: Vec<&str> = members_before.iter().map(String::as_str).collect();
            let now_members: Vec<String> = self.conversations[&id]
                .members
                .iter()
                .map(|m| m.agent.clone())
                .collect();
            for m in &now_members {
                if !members.contains(&m.as_str()) {
                    members.push(m);
                }
            }
            self.fan_out(&members, conn, event, &payload);
        }
        ok(&serde_json::json!({}))
    }

    fn find_dm(&self, a: &str, b: &str) -> Option<String> {
        self.conversations
            .values()
            .find(|c| c.kind == "dm" && c.has(a) && c.has(b))
            .map(|c| c.id.clone())
    }

    fn new_conversation(
        &mut self,
        kind: &'static str,
        name: Option<String>,
        me: &str,
        others: &[String],
    ) -> Result<String, Fail> {
        if self.conversations.len() >= MAX_CONVERSATIONS {
            return Err(fail(-32603, "Internal error"));
        }
        let (id, now, touched) = (uuid(), now_iso(), self.next_seq());
        let member = |agent: &str, role| Member {
            agent: agent.to_string(),
            role,
            joined_at: now.clone(),
        };
        let mut members = vec![member(me, "owner")];
        members.extend(others.iter().map(|o| member(o, "member")));
        self.conversations.insert(
            id.clone(),
            Conversation {
                id: id.clone(),
                kind,
                name,
                created_by: me.to_string(),
                created_at: now.clone(),
                updated_at: now.clone(),
                members,
                messages: VecDeque::new(),
                total: 0,
                last: None,
                touched,
                archived_at: None,
                muted: HashSet::new(),
                fixed: false,
            },
        );
        Ok(id)
    }

    fn conversation_of(&self, me: &str, id: &str) -> Result<&Conversation, Fail> {
        if !is_uuid(id) {
            return Err(invalid());
        }
        self.conversations
            .get(id)
            .filter(|c| c.has(me))
            .ok_or_else(not_participant)
    }

    fn list_conversations(&self, me: &str, p: Option<&RawValue>) -> Answer {
        #[derive(Deserialize)]
        #[serde(deny_unknown_fields)]
        struct P {
            #[serde(default)]
            limit: Option<usize>,
            #[serde(default)]
            cursor: Option<String>,
            #[serde(default)]
            archived: Option<String>,
        }
        let p: P = params(p)?;
        let limit = p.limit.unwrap_or(50);
        if !(1..=100).contains(&limit)
            || p.archived
                .as_deref()
                .is_some_and(|a| !["exclude", "include", "only"].contains(&a))
        {
            return Err(invalid());
        }
        // A page holds at most `max_conversations_page`: the cursor names the rest.
        let limit = limit.min(self.max_conversations_page);
        let start = match &p.cursor {
            None => 0,
            Some(c) => c.parse::<usize>().map_err(|_| invalid())?,
        };
        let archived = p.archived.as_deref().unwrap_or("exclude");
        let mut convs: Vec<&Conversation> = self
            .conversations
            .values()
            .filter(|c| c.has(me))
            .filter(|c| match archived {
                "exclude" => c.archived_at.is_none(),
                "only" => c.archived_at.is_some(),
                _ => true,
            })
            .collect();
        convs.sort_by_key(|c| std::cmp::Reverse(c.touched));
        let page: Vec<Summary<'_>> = convs.iter().skip(start).take(limit).map(|c| c.summary()).collect();
        #[derive(Serialize)]
        struct R<'a> {
            conversations: Vec<Summary<'a>>,
            #[serde(skip_serializing_if = "Option::is_none")]
            cursor: Option<String>,
        }
        // Any cursor a client sends: no overflow past the last page.
        let end = start.saturating_add(limit);
        let cursor = (end < convs.len()).then(|| end.to_string());
        ok(&R {
            conversations: page,
            cursor,
        })
    }

    fn get_conversation(&self, me: &str, p: Option<&RawValue>) -> Answer {
        #[derive(Deserialize)]
        #[serde(deny_unknown_fields, rename_all = "camelCase")]
        struct P {
            conversation_id: String,
        }
        let p: P = params(p)?;
        let c = self.conversation_of(me, &p.conversation_id)?;
        let participants: Vec<ParticipantView<'_>> = c
            .members
            .iter()
            .map(|m| ParticipantView {
                conversation_id: &c.id,
                participant: ParticipantRef {
                    kind: "agent",
                    id: &m.agent,
                },
                role: m.role,
                joined_at: &m.joined_at,
                agent_name: self.agents.get(&m.agent).map_or("", |a| a.name.as_str()),
            })
            .collect();
        #[derive(Serialize)]
        struct R<'a> {
            conversation: ConversationView<'a>,
            participants: Vec<ParticipantView<'a>>,
        }
        ok(&R {
            conversation: c.view(),
            participants,
        })
    }

    fn send_message(&mut self, conn: u64, me: &str, p: Option<&RawValue>) -> Answer {
        #[derive(Deserialize)]
        #[serde(deny_unknown_fields, rename_all = "camelCase")]
        struct P {
            #[serde(default)]
            conversation_id: Option<String>,
            #[serde(default)]
            to: Option<String>,
            parts: Vec<Box<RawValue>>,
            #[serde(default)]
            reply_to_id: Option<String>,
            #[serde(default)]
            post_id: Option<String>,
        }
        let p: P = params(p)?;
        let current = self.generation == Generation::Current;
        let parts = p
            .parts
            .iter()
            .map(|raw| parse_part(raw, self.generation))
            .collect::<Result<Vec<Part>, Fail>>()?;
        if !(1..=MAX_PARTS).contains(&parts.len())
            || !parts.iter().all(Part::valid)
            || p.reply_to_id.as_deref().is_some_and(|r| !is_uuid(r))
            || p.post_id.as_deref().is_some_and(|id| !current || !valid_post_id(id))
        {
            return Err(invalid());
        }
        // The same postId from the same sender: the original answer, nothing stored or sent.
        if let Some(post_id) = &p.post_id {
            if let Some(original) = self.posts.get(me).and_then(|s| s.answers.get(post_id)) {
                return Ok(original.clone());
            }
        }
        let conv_id = match (p.conversation_id, p.to) {
            (Some(id), None) => {
                let c = self.conversation_of(me, &id)?;
                if c.archived_at.is_some() {
                    return Err(fail(-32022, "Conversation is archived"));
                }
                c.id.clone()
            }
            (None, Some(to)) => self.resolve_to(me, &to)?,
            _ => return Err(invalid()),
        };
        let message = Message {
            id: uuid(),
            conversation_id: conv_id.clone(),
            sender_id: me.to_string(),
            reply_to_id: p.reply_to_id,
            parts,
            created_at: now_iso(),
            post_id: p.post_id,
        };
        let seq = self.next_seq();
        let preview = message
            .parts
            .iter()
            .find_map(|p| match p {
                Part::Text { text } => Some(text.chars().take(200).collect::<String>()),
                _ => None,
            })
            .unwrap_or_default();
        let raw = wrap("message", &message)?;
        let message_post_id = message.post_id.clone();
        let Some(c) = self.conversations.get_mut(&conv_id) else {
            return Err(not_participant());
        };
        c.last = Some((preview, message.created_at.clone()));
        c.total += 1;
        c.touched = seq;
        c.messages.push_back((seq, message));
        if c.messages.len() > MAX_MESSAGES_PER_CONVERSATION {
            c.messages.pop_front();
        }
        let members: Vec<String> = c.members.iter().map(|m| m.agent.clone()).collect();
        let members: Vec<&str> = members.iter().map(String::as_str).collect();
        self.fan_out(&members, conn, "messages/received", &raw);
        if let Some(post_id) = message_post_id {
            self.posts
                .entry(me.to_string())
                .or_default()
                .remember(post_id, raw.clone());
        }
        Ok(raw)
    }

    /// A `to`: `agent:<name>` (the DM with that agent, created on first use) or, in the current
    /// generation, `group:<name>,<name>,...` (agentwire extension, see [`State::fixed_group`]).
    fn resolve_to(&mut self, me: &str, to: &str) -> Result<String, Fail> {
        if self.generation == Generation::Current {
            if let Some(names) = to.strip_prefix("group:") {
                return self.fixed_group(me, names);
            }
        }
        let Some(name) = to.strip_prefix("agent:") else {
            return Err(fail(-32602, "Invalid 'to' format — use agent:<name>"));
        };
        let other = self
            .by_name
            .get(name)
            .cloned()
            .ok_or_else(|| fail(-32002, format!("Agent '{name}' not found")))?;
        if other == me {
            return Err(invalid());
        }
        match self.find_dm(me, &other) {
            Some(id) => Ok(id),
            None => self.new_conversation("dm", None, me, &[other]),
        }
    }

    /// `group:<names>`: the one fixed-member group of exactly these agents and the sender (added
    /// when omitted), created on first use. An unknown name is -32002 (the first in input
    /// order); a name twice, or fewer than 3 or more than 32 members, is -32602.
    fn fixed_group(&mut self, me: &str, names: &str) -> Result<String, Fail> {
        let mut ids: Vec<String> = Vec::new();
        for name in names.split(',') {
            match self.by_name.get(name) {
                Some(id) => ids.push(id.clone()),
                None => return Err(fail(-32002, format!("Agent '{name}' not found"))),
            }
        }
        let mut members: BTreeSet<String> = BTreeSet::new();
        for id in &ids {
            if !members.insert(id.clone()) {
                return Err(invalid());
            }
        }
        members.insert(me.to_string());
        if !GROUP_TO_MEMBERS.contains(&members.len()) {
            return Err(invalid());
        }
        let key: Vec<String> = members.into_iter().collect();
        if let Some(id) = self.groups.get(&key) {
            if self.conversations.contains_key(id) {
                return Ok(id.clone());
            }
        }
        let others: Vec<String> = ids.into_iter().filter(|id| id != me).collect();
        let id = self.new_conversation("group", None, me, &others)?;
        if let Some(c) = self.conversations.get_mut(&id) {
            c.fixed = true;
        }
        self.groups.insert(key, id.clone());
        Ok(id)
    }

    /// `messages/list` (conversation required) or `agent/message/list` (conversation optional:
    /// without it, the newest messages over all the agent's conversations).
    fn list_messages(&self, me: &str, p: Option<&RawValue>, any_conversation: bool) -> Answer {
        #[derive(Deserialize)]
        #[serde(deny_unknown_fields, rename_all = "camelCase")]
        struct P {
            #[serde(default)]
            conversation_id: Option<String>,
            #[serde(default)]
            limit: Option<i64>,
        }
        let p: P = params(p)?;
        let limit = p.limit.unwrap_or(50);
        if !(1..=100).contains(&limit) {
            return Err(invalid());
        }
        let limit = limit as usize;
        let mut all: Vec<&(u64, Message)> = match p.conversation_id {
            Some(id) => self.conversation_of(me, &id)?.messages.iter().collect(),
            None if any_conversation => self
                .conversations
                .values()
                .filter(|c| c.has(me))
                .flat_map(|c| c.messages.iter())
                .collect(),
            None => return Err(invalid()),
        };
        all.sort_by_key(|m| m.0);
        let has_more = all.len() > limit;
        let window: Vec<&Message> = all[all.len().saturating_sub(limit)..].iter().map(|m| &m.1).collect();
        #[derive(Serialize)]
        #[serde(rename_all = "camelCase")]
        struct R<'a> {
            messages: Vec<&'a Message>,
            has_more: bool,
        }
        ok(&R {
            messages: window,
            has_more,
        })
    }
}
