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

mod conversations;
mod messages;
mod wire;

use wire::*;

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
}
