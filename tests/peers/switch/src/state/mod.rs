//! The server's memory: agents (keys, rooms, sequence numbers, the replay buffer), rooms (members,
//! history) and connections (generation, scope, claims, cursor, liveness, the attached socket or
//! stream). Everything is bounded; nothing is persisted.
//!
//! - `conn`: a connection and its attached socket or stream.
//! - `open`: attaching a socket or stream (fencing, the cap, takeover, catch-up), pongs.
//! - `claims`: room claims and the connection routes (subscribe, unsubscribe, placements, beat).
//! - `ops`: the operations.

mod claims;
mod conn;
mod open;
mod ops;

pub(crate) use claims::not_open;
pub(crate) use conn::{Attach, Conn, EndKind, Ender};
pub(crate) use open::Opened;

use crate::frames::{self, Encoded, MessagePayload, Out};
use crate::util::{agent_key, event_id, mentions};
use crate::{Agent, Generation, PeerConfig};
use agentwire_peer_kit::ids::{now_ms, uuid};
use agentwire_switch::frame::{EventKind, EvictionCode};
use agentwire_switch::open::Filter;
use std::collections::{BTreeSet, HashMap, VecDeque};
use std::sync::Arc;
use std::time::Duration;
use tokio::time::Instant;

/// Agents kept at most.
pub(crate) const MAX_AGENTS: usize = 10_000;
/// Rooms kept at most.
pub(crate) const MAX_ROOMS: usize = 10_000;
/// Messages kept per room for `read_context` (the oldest are forgotten).
pub(crate) const MAX_HISTORY: usize = 10_000;
/// Users remembered per room (for `list_participants`).
const MAX_USERS: usize = 1_000;
/// Frames queued per socket or stream; past it the client is cut off.
pub(crate) const OUTBOUND_QUEUE: usize = 1024;
/// Longest agent or room name.
pub(crate) const MAX_NAME: usize = 128;

/// One event in an agent's replay buffer.
struct Stored {
    seq: u64,
    room: String,
    addressed: bool,
    at: Instant,
    enc: Arc<Encoded>,
}

pub(crate) struct AgentRec {
    pub(crate) id: String,
    pub(crate) name: String,
    pub(crate) rooms: BTreeSet<String>,
    pub(crate) head: u64,
    buffer: VecDeque<Stored>,
    /// The highest sequence dropped from the buffer (capacity or age).
    dropped_upto: u64,
    pub(crate) conns: HashMap<String, Conn>,
    /// Room → the connection claiming it.
    pub(crate) claims: HashMap<String, String>,
}

impl AgentRec {
    /// Whether any connection of the agent has a socket or stream attached.
    pub(crate) fn live(&self) -> bool {
        self.conns.values().any(|c| c.attach.is_some())
    }

    /// The Matrix user id the agent posts as.
    pub(crate) fn matrix_id(&self) -> String {
        format!("@switch-agent-{}:localhost", self.id.get(..8).unwrap_or(&self.id))
    }

    fn trim(&mut self, capacity: usize, max_age: Duration, now: Instant) {
        while let Some(front) = self.buffer.front() {
            if self.buffer.len() > capacity || now.saturating_duration_since(front.at) > max_age {
                self.dropped_upto = front.seq;
                self.buffer.pop_front();
            } else {
                break;
            }
        }
    }
}

/// A message kept for `read_context`.
pub(crate) struct Msg {
    pub(crate) id: String,
    pub(crate) sender: String,
    pub(crate) sender_name: String,
    pub(crate) body: String,
    pub(crate) timestamp: u64,
    pub(crate) thread_id: Option<String>,
}

pub(crate) struct Room {
    pub(crate) id: String,
    pub(crate) name: String,
    pub(crate) description: String,
    pub(crate) members: BTreeSet<String>,
    /// Matrix ids of the users who posted.
    pub(crate) users: BTreeSet<String>,
    pub(crate) history: VecDeque<Msg>,
}

/// Who posts a message.
pub(crate) struct Sender {
    pub(crate) matrix_id: String,
    pub(crate) name: String,
    pub(crate) agent_id: Option<String>,
}

pub(crate) struct State {
    pub(crate) gen: Generation,
    pub(crate) heartbeat_interval: Duration,
    pub(crate) ttl: Duration,
    replay_capacity: usize,
    replay_max_age: Duration,
    max_conns: usize,
    pub(crate) agents: HashMap<String, AgentRec>,
    keys: HashMap<String, String>,
    pub(crate) rooms: HashMap<String, Room>,
    next_generation: u64,
    next_attach: u64,
}

impl State {
    pub(crate) fn new(cfg: &PeerConfig) -> Self {
        State {
            gen: cfg.generation,
            heartbeat_interval: cfg.heartbeat_interval,
            ttl: cfg.heartbeat_ttl,
            replay_capacity: cfg.replay_capacity,
            replay_max_age: cfg.replay_max_age,
            max_conns: cfg.max_connections_per_agent,
            agents: HashMap::new(),
            keys: HashMap::new(),
            rooms: HashMap::new(),
            next_generation: 1,
            next_attach: 1,
        }
    }

    /// The agent a key belongs to.
    pub(crate) fn agent_by_key(&self, key: &str) -> Option<String> {
        self.keys.get(key).cloned()
    }

    /// Registers an agent; `None` past [`MAX_AGENTS`] (`POST /agents`).
    pub(crate) fn try_add_agent(&mut self, name: &str) -> Option<Agent> {
        (self.agents.len() < MAX_AGENTS).then(|| self.add_agent(name))
    }

    /// Registers an agent (the handle's call is not bounded: tests add a handful).
    pub(crate) fn add_agent(&mut self, name: &str) -> Agent {
        let agent = Agent {
            id: uuid(),
            name: name.chars().take(MAX_NAME).collect(),
            key: agent_key(),
        };
        self.keys.insert(agent.key.clone(), agent.id.clone());
        self.agents.insert(
            agent.id.clone(),
            AgentRec {
                id: agent.id.clone(),
                name: agent.name.clone(),
                rooms: BTreeSet::new(),
                head: 0,
                buffer: VecDeque::new(),
                dropped_upto: 0,
                conns: HashMap::new(),
                claims: HashMap::new(),
            },
        );
        agent
    }

    pub(crate) fn add_room(&mut self, name: &str, members: &[&str]) -> String {
        let id = uuid();
        if self.rooms.len() >= MAX_ROOMS {
            return id;
        }
        let mut set = BTreeSet::new();
        for m in members {
            if let Some(a) = self.agents.get_mut(*m) {
                a.rooms.insert(id.clone());
                set.insert(a.id.clone());
            }
        }
        self.rooms.insert(
            id.clone(),
            Room {
                id: id.clone(),
                name: name.chars().take(MAX_NAME).collect(),
                description: String::new(),
                members: set,
                users: BTreeSet::new(),
                history: VecDeque::new(),
            },
        );
        id
    }

    pub(crate) fn connections(&self, agent_id: &str) -> usize {
        self.agents.get(agent_id).map_or(0, |a| a.conns.len())
    }

    pub(crate) fn head(&self, agent_id: &str) -> u64 {
        self.agents.get(agent_id).map_or(0, |a| a.head)
    }

    pub(crate) fn post_as_user(&mut self, room_id: &str, user: &str, body: &str) -> Option<String> {
        let sender = Sender {
            matrix_id: format!("@{user}:localhost"),
            name: format!("@{user}:localhost"),
            agent_id: None,
        };
        if let Some(room) = self.rooms.get_mut(room_id) {
            if room.users.len() < MAX_USERS {
                room.users.insert(sender.matrix_id.clone());
            }
        }
        self.post(room_id, &sender, body, None)
    }

    /// Stores a message and fans it out to every member agent; its event id.
    pub(crate) fn post(
        &mut self,
        room_id: &str,
        sender: &Sender,
        body: &str,
        thread_id: Option<&str>,
    ) -> Option<String> {
        let room = self.rooms.get_mut(room_id)?;
        let id = event_id();
        let timestamp = now_ms();
        // A reply into any message of a thread goes to the thread's root.
        let thread_id = thread_id.map(|t| {
            room.history
                .iter()
                .find(|m| m.id == t)
                .and_then(|m| m.thread_id.clone())
                .unwrap_or_else(|| t.to_owned())
        });
        if room.history.len() >= MAX_HISTORY {
            room.history.pop_front();
        }
        room.history.push_back(Msg {
            id: id.clone(),
            sender: sender.matrix_id.clone(),
            sender_name: sender.name.clone(),
            body: body.to_owned(),
            timestamp,
            thread_id: thread_id.clone(),
        });
        let members: Vec<String> = room.members.iter().cloned().collect();
        for agent_id in members {
            let Some(agent) = self.agents.get(&agent_id) else {
                continue;
            };
            let addressed = sender.agent_id.as_deref() != Some(&agent_id) && mentions(body, &agent.name);
            let payload = MessagePayload {
                addressed,
                sender: &sender.matrix_id,
                sender_name: &sender.name,
                message_id: &id,
                body,
                timestamp,
                thread_id: thread_id.as_deref(),
                attachments: [],
            }
            .raw();
            self.deliver(&agent_id, room_id, EventKind::Message, addressed, payload);
        }
        Some(id)
    }

    /// Numbers a domain event for one agent, buffers it and sends it to every attached
    /// connection that covers the room and passes its filter.
    fn deliver(
        &mut self,
        agent_id: &str,
        room: &str,
        kind: EventKind,
        addressed: bool,
        payload: Box<serde_json::value::RawValue>,
    ) {
        let (capacity, max_age) = (self.replay_capacity, self.replay_max_age);
        let Some(agent) = self.agents.get_mut(agent_id) else {
            return;
        };
        agent.head += 1;
        let seq = agent.head;
        let enc = Encoded::new(&frames::domain(kind, room, seq, payload));
        let now = Instant::now();
        agent.buffer.push_back(Stored {
            seq,
            room: room.to_owned(),
            addressed,
            at: now,
            enc: enc.clone(),
        });
        agent.trim(capacity, max_age, now);
        let rooms = &agent.rooms;
        for conn in agent.conns.values_mut() {
            if conn.covers(room, rooms) && (conn.filter == Filter::All || addressed) {
                conn.push(Out::Frame {
                    domain: true,
                    enc: enc.clone(),
                });
            }
        }
    }

    /// Forgets every connection whose liveness lapsed; an attached one is evicted first.
    pub(crate) fn reap(&mut self, now: Instant) {
        let (gen, ttl) = (self.gen, self.ttl);
        for agent in self.agents.values_mut() {
            let lapsed: Vec<String> = agent
                .conns
                .values()
                .filter(|c| now.saturating_duration_since(c.last_seen) > ttl)
                .map(|c| c.id.clone())
                .collect();
            for id in lapsed {
                if let Some(mut conn) = agent.conns.remove(&id) {
                    conn.push(Out::control(&frames::evicted(gen, EvictionCode::HeartbeatLapsed)));
                    conn.push(Out::Close);
                    agent.claims.retain(|_, holder| holder != &id);
                }
            }
        }
    }

    pub(crate) fn restart(&mut self, lose_numbering: bool) {
        for agent in self.agents.values_mut() {
            for conn in agent.conns.values_mut() {
                conn.end(EndKind::Restart);
            }
            agent.conns.clear();
            agent.claims.clear();
            if lose_numbering {
                agent.head = 0;
                agent.buffer.clear();
                agent.dropped_upto = 0;
            }
        }
    }

    /// The socket or stream `attach_id` ended: the connection survives until its TTL lapses.
    pub(crate) fn detach(&mut self, agent_id: &str, conn_id: &str, attach_id: u64) {
        if let Some(conn) = self.agents.get_mut(agent_id).and_then(|a| a.conns.get_mut(conn_id)) {
            if conn.attach.as_ref().is_some_and(|a| a.id == attach_id) {
                conn.attach = None;
            }
        }
    }
}
