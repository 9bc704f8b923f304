//! The operations, on the state: each returns the JSON of its `result`.

use super::claims::{claim, single_claim, takeover_warning};
use super::{AgentRec, Msg, Room, Sender, State};
use crate::frames::{self, Out};
use crate::query::Refusal;
use agentwire_switch::open::Scope;
use serde::Serialize;
use std::collections::BTreeMap;

pub(crate) const NOT_CONNECTED: &str = "Not connected to a room. Call connect_to_room first.";

#[derive(Serialize)]
struct Participant<'a> {
    id: &'a str,
    name: &'a str,
    #[serde(rename = "type")]
    kind: &'static str,
    status: Option<&'static str>,
    alias: Option<&'a str>,
}

#[derive(Serialize)]
struct Context<'a> {
    agent_id: &'a str,
    room_id: &'a str,
    name: &'a str,
    description: &'a str,
    participants: Vec<Participant<'a>>,
    instructions: String,
    reference_types: [(); 0],
    references: [(); 0],
    documents: [(); 0],
    packages: [(); 0],
    linked_rooms: [(); 0],
    roles: [(); 0],
    warning: Option<String>,
}

#[derive(Serialize)]
struct Entry<'a> {
    id: &'a str,
    kind: &'static str,
    sender: &'a str,
    sender_name: &'a str,
    body: &'a str,
    timestamp: u64,
    attachments: [(); 0],
}

impl<'a> From<&'a Msg> for Entry<'a> {
    fn from(m: &'a Msg) -> Self {
        Entry {
            id: &m.id,
            kind: "message",
            sender: &m.sender,
            sender_name: &m.sender_name,
            body: &m.body,
            timestamp: m.timestamp,
            attachments: [],
        }
    }
}

#[derive(Serialize)]
struct Thread<'a> {
    root: Entry<'a>,
    replies: Vec<Entry<'a>>,
}

#[derive(Serialize)]
struct ContextPage<'a> {
    threads: Vec<Thread<'a>>,
    truncated: bool,
    oldest_timestamp: Option<u64>,
}

#[derive(Serialize)]
struct RoomSummary<'a> {
    room_id: &'a str,
    name: &'a str,
    description: &'a str,
    connected: bool,
    archived: bool,
}

#[derive(Serialize)]
struct Posted {
    event_id: String,
}

#[derive(Serialize)]
struct Targeted {
    event_id: String,
    target_statuses: BTreeMap<String, &'static str>,
}

fn json<T: Serialize>(v: &T) -> String {
    serde_json::to_string(v).unwrap_or_default()
}

fn participants<'a>(agents: &'a std::collections::HashMap<String, AgentRec>, room: &'a Room) -> Vec<Participant<'a>> {
    let mut list: Vec<Participant<'a>> = room
        .members
        .iter()
        .filter_map(|id| agents.get(id))
        .map(|a| Participant {
            id: &a.id,
            name: &a.name,
            kind: "agent",
            status: Some(if a.live() { "live" } else { "disconnected" }),
            alias: None,
        })
        .collect();
    list.sort_by(|a, b| a.name.cmp(b.name).then(a.id.cmp(b.id)));
    list.extend(room.users.iter().map(|u| Participant {
        id: u,
        name: u,
        kind: "user",
        status: None,
        alias: None,
    }));
    list
}

impl State {
    /// Whether `conn_id` is a live connection of the agent.
    pub(crate) fn conn_open(&self, agent_id: &str, conn_id: &str) -> bool {
        self.agents.get(agent_id).is_some_and(|a| a.conns.contains_key(conn_id))
    }

    /// The room the connection's operations are connected to.
    fn op_room(&self, agent_id: &str, conn_id: Option<&str>) -> Result<String, Refusal> {
        let agent = self.agents.get(agent_id);
        let room = conn_id
            .and_then(|c| agent?.conns.get(c)?.op_room.clone())
            .ok_or_else(|| Refusal::new(400, NOT_CONNECTED))?;
        if !agent.is_some_and(|a| a.rooms.contains(&room)) || !self.rooms.contains_key(&room) {
            return Err(Refusal::new(403, format!("Agent is not assigned to room {room}")));
        }
        Ok(room)
    }

    pub(crate) fn connect_to_room(
        &mut self,
        agent_id: &str,
        conn_id: Option<&str>,
        room_id: &str,
    ) -> Result<String, Refusal> {
        let Some(conn_id) = conn_id else {
            return Err(Refusal::new(
                400,
                "connect_to_room needs the X-Switch-Connection-Id header of an open connection",
            ));
        };
        let gen = self.gen;
        let Some(agent) = self.agents.get_mut(agent_id) else {
            return Err(Refusal::new(401, "Invalid credentials"));
        };
        if !agent.rooms.contains(room_id) || !self.rooms.contains_key(room_id) {
            return Err(Refusal::new(403, format!("Agent is not assigned to room {room_id}")));
        }
        let scope = agent.conns.get(conn_id).map_or(Scope::Single, |c| c.scope);
        let lost = match scope {
            Scope::Single => single_claim(gen, agent, conn_id, room_id),
            Scope::All => claim(gen, agent, conn_id, room_id),
        };
        if let Some(c) = agent.conns.get_mut(conn_id) {
            c.op_room = Some(room_id.to_owned());
            let rooms = c.rooms(&agent.rooms);
            c.push(Out::control(&frames::subscription_changed(
                rooms,
                super::claims::REASON_UPDATED,
            )));
        }
        let (Some(room), Some(agent)) = (self.rooms.get(room_id), self.agents.get(agent_id)) else {
            return Err(Refusal::new(403, format!("Agent is not assigned to room {room_id}")));
        };
        Ok(json(&Context {
            agent_id,
            room_id,
            name: &room.name,
            description: &room.description,
            participants: participants(&self.agents, room),
            instructions: format!(
                "You are connected to the room {} as {}. Use post_message to speak, send_targeted_message to \
                 address participants, and read_context to catch up.",
                room.name, agent.name
            ),
            reference_types: [],
            references: [],
            documents: [],
            packages: [],
            linked_rooms: [],
            roles: [],
            warning: lost.map(|(other, _)| takeover_warning(room_id, &other)),
        }))
    }

    fn sender(&self, agent_id: &str) -> Result<Sender, Refusal> {
        let a = self
            .agents
            .get(agent_id)
            .ok_or_else(|| Refusal::new(401, "Invalid credentials"))?;
        Ok(Sender {
            matrix_id: a.matrix_id(),
            name: a.name.clone(),
            agent_id: Some(a.id.clone()),
        })
    }

    pub(crate) fn post_message(
        &mut self,
        agent_id: &str,
        conn_id: Option<&str>,
        body: &str,
        thread_id: Option<&str>,
    ) -> Result<String, Refusal> {
        let room = self.op_room(agent_id, conn_id)?;
        let sender = self.sender(agent_id)?;
        let event_id = self
            .post(&room, &sender, body, thread_id)
            .ok_or_else(|| Refusal::new(403, format!("Agent is not assigned to room {room}")))?;
        Ok(json(&Posted { event_id }))
    }

    pub(crate) fn send_targeted(
        &mut self,
        agent_id: &str,
        conn_id: Option<&str>,
        body: &str,
        names: &[String],
        roles: &[String],
        thread_id: Option<&str>,
    ) -> Result<String, Refusal> {
        if names.is_empty() && roles.is_empty() {
            return Err(Refusal::new(
                400,
                "At least one of target_names / target_roles is required.",
            ));
        }
        let room_id = self.op_room(agent_id, conn_id)?;
        let mut text: String = names.iter().chain(roles).map(|n| format!("@{n} ")).collect();
        text.push_str(body);
        let mut statuses = BTreeMap::new();
        if let Some(room) = self.rooms.get(&room_id) {
            for agent in room.members.iter().filter_map(|id| self.agents.get(id)) {
                if names.contains(&agent.name) {
                    let status = if agent.live() { "live" } else { "disconnected" };
                    statuses.insert(agent.name.clone(), status);
                }
            }
        }
        let sender = self.sender(agent_id)?;
        let event_id = self
            .post(&room_id, &sender, &text, thread_id)
            .ok_or_else(|| Refusal::new(403, format!("Agent is not assigned to room {room_id}")))?;
        Ok(json(&Targeted {
            event_id,
            target_statuses: statuses,
        }))
    }

    pub(crate) fn read_context(
        &self,
        agent_id: &str,
        conn_id: Option<&str>,
        limit: usize,
        since: Option<i64>,
        before: Option<i64>,
    ) -> Result<String, Refusal> {
        let room_id = self.op_room(agent_id, conn_id)?;
        let Some(room) = self.rooms.get(&room_id) else {
            return Err(Refusal::new(403, format!("Agent is not assigned to room {room_id}")));
        };
        let in_window = |m: &&Msg| {
            let ts = m.timestamp as i64;
            since.is_none_or(|s| ts >= s) && before.is_none_or(|b| ts < b)
        };
        let matching: Vec<&Msg> = room.history.iter().filter(in_window).collect();
        let chosen = &matching[matching.len().saturating_sub(limit)..];
        let mut threads: Vec<(u64, Thread<'_>)> = Vec::new();
        let mut index: BTreeMap<&str, usize> = BTreeMap::new();
        for m in chosen {
            let root_id = m.thread_id.as_deref().unwrap_or(&m.id);
            let slot = match index.get(root_id) {
                Some(&i) => i,
                None => {
                    let root = room.history.iter().find(|r| r.id == root_id).unwrap_or(m);
                    threads.push((
                        m.timestamp,
                        Thread {
                            root: root.into(),
                            replies: Vec::new(),
                        },
                    ));
                    index.insert(root_id, threads.len() - 1);
                    threads.len() - 1
                }
            };
            let (latest, thread) = &mut threads[slot];
            *latest = m.timestamp.max(*latest);
            if m.thread_id.is_some() {
                thread.replies.push((*m).into());
            }
        }
        threads.sort_by_key(|(latest, _)| *latest);
        Ok(json(&ContextPage {
            threads: threads.into_iter().map(|(_, t)| t).collect(),
            truncated: matching.len() >= limit,
            oldest_timestamp: chosen.iter().map(|m| m.timestamp).min(),
        }))
    }

    pub(crate) fn list_rooms(&self, agent_id: &str, conn_id: Option<&str>) -> Result<String, Refusal> {
        let agent = self
            .agents
            .get(agent_id)
            .ok_or_else(|| Refusal::new(401, "Invalid credentials"))?;
        let connected = conn_id.and_then(|c| agent.conns.get(c)?.op_room.as_deref());
        let mut list: Vec<RoomSummary<'_>> = agent
            .rooms
            .iter()
            .filter_map(|id| self.rooms.get(id))
            .map(|r| RoomSummary {
                room_id: &r.id,
                name: &r.name,
                description: &r.description,
                connected: connected == Some(r.id.as_str()),
                archived: false,
            })
            .collect();
        list.sort_by(|a, b| a.name.cmp(b.name).then(a.room_id.cmp(b.room_id)));
        Ok(json(&list))
    }

    pub(crate) fn list_participants(&self, agent_id: &str, conn_id: Option<&str>) -> Result<String, Refusal> {
        let room_id = self.op_room(agent_id, conn_id)?;
        let Some(room) = self.rooms.get(&room_id) else {
            return Err(Refusal::new(403, format!("Agent is not assigned to room {room_id}")));
        };
        Ok(json(&participants(&self.agents, room)))
    }
}
