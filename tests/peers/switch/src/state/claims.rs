//! Room claims (at most one connection per agent acts in a room) and the connection routes:
//! subscribe, unsubscribe, placements and the SSE beat.

use super::{AgentRec, State};
use crate::frames::{self, Out};
use crate::query::Refusal;
use crate::Generation;
use agentwire_switch::open::Scope;
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet};
use tokio::time::Instant;

pub(crate) const REASON_TAKEN: &str = "room taken over by another connection of this agent";
pub(crate) const REASON_UPDATED: &str = "subscription updated";

/// The warning of a claim that took the room off a sibling (the capture's text).
pub(crate) fn takeover_warning(room: &str, other: &str) -> String {
    format!(
        "You evicted another session of this agent from room {room} (connection {other}). Only one session of an \
         agent may act in a room, so that session has been disconnected from it and will stop receiving its events. \
         If that session was doing work here, it no longer is."
    )
}

pub(crate) fn not_open(conn_id: &str) -> String {
    format!("connection {conn_id} is not open; reconnect and resume from your cursor")
}

/// Claims `room` for `conn_id`. A sibling holding it loses it: `subscription_changed` without
/// it and, in the current generation for a client of agent-protocol 6 or later,
/// `room_released`. Returns the sibling and the session it had placed in the room.
pub(super) fn claim(
    gen: Generation,
    agent: &mut AgentRec,
    conn_id: &str,
    room: &str,
) -> Option<(String, Option<String>)> {
    let prev = agent.claims.insert(room.to_owned(), conn_id.to_owned());
    let mut lost = None;
    if let Some(prev_id) = prev.filter(|p| p != conn_id) {
        if let Some(other) = agent.conns.get_mut(&prev_id) {
            let before = other.rooms(&agent.rooms);
            other.claims.remove(room);
            let session = other
                .placements
                .iter()
                .find(|(_, r)| *r == room)
                .map(|(s, _)| s.clone());
            if let Some(s) = &session {
                other.placements.remove(s);
            }
            if other.op_room.as_deref() == Some(room) {
                other.op_room = None;
            }
            // An `all` connection still covers the room: its set did not change.
            let rooms = other.rooms(&agent.rooms);
            if rooms != before {
                other.push(Out::control(&frames::subscription_changed(rooms, REASON_TAKEN)));
            }
            if gen == Generation::Current && other.protocol >= 6 {
                other.push(Out::control(&frames::room_released(room, session.clone())));
            }
            lost = Some((prev_id, session));
        }
    }
    if let Some(c) = agent.conns.get_mut(conn_id) {
        c.claims.insert(room.to_owned());
    }
    lost
}

/// Takes `room` off `conn_id` (and its placement there).
fn release(agent: &mut AgentRec, conn_id: &str, room: &str) {
    if agent.claims.get(room).is_some_and(|h| h == conn_id) {
        agent.claims.remove(room);
    }
    if let Some(c) = agent.conns.get_mut(conn_id) {
        c.claims.remove(room);
        c.placements.retain(|_, r| r != room);
    }
}

/// A `single`-scope connection drops its previous claims (not its placements) when it claims
/// `room`.
pub(super) fn single_claim(
    gen: Generation,
    agent: &mut AgentRec,
    conn_id: &str,
    room: &str,
) -> Option<(String, Option<String>)> {
    if let Some(c) = agent.conns.get(conn_id) {
        if c.scope == Scope::Single {
            let placed: BTreeSet<&String> = c.placements.values().collect();
            let drop: Vec<String> = c
                .claims
                .iter()
                .filter(|r| *r != room && !placed.contains(r))
                .cloned()
                .collect();
            for r in drop {
                release(agent, conn_id, &r);
            }
        }
    }
    claim(gen, agent, conn_id, room)
}

fn notify_self(agent: &mut AgentRec, conn_id: &str) -> Vec<String> {
    let Some(c) = agent.conns.get_mut(conn_id) else {
        return Vec::new();
    };
    let rooms = c.rooms(&agent.rooms);
    c.push(Out::control(&frames::subscription_changed(
        rooms.clone(),
        REASON_UPDATED,
    )));
    rooms
}

#[derive(Serialize)]
struct Subscribed {
    ok: bool,
    rooms: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    evicted_connection_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    warning: Option<String>,
}

#[derive(Serialize)]
struct ReleasedRoom {
    connection_id: String,
    room_id: String,
    session_id: Option<String>,
}

#[derive(Serialize)]
struct Placed {
    placements: BTreeMap<String, String>,
    rooms: Vec<String>,
    released: Vec<ReleasedRoom>,
}

#[derive(Serialize)]
struct Beaten {
    ok: bool,
    rooms: Vec<String>,
    cursor: u64,
}

fn json<T: Serialize>(v: &T) -> String {
    serde_json::to_string(v).unwrap_or_default()
}

impl State {
    fn agent_conn(&mut self, agent_id: &str, conn_id: &str) -> Result<&mut AgentRec, Refusal> {
        match self.agents.get_mut(agent_id) {
            Some(a) if a.conns.contains_key(conn_id) => Ok(a),
            _ => Err(Refusal::new(404, not_open(conn_id))),
        }
    }

    /// `POST .../connection/subscribe`: 409 when a live sibling holds the room, unless `takeover`.
    pub(crate) fn subscribe(
        &mut self,
        agent_id: &str,
        conn_id: &str,
        room: &str,
        takeover: bool,
    ) -> Result<String, Refusal> {
        let gen = self.gen;
        let agent = self.agent_conn(agent_id, conn_id)?;
        if !agent.rooms.contains(room) {
            return Err(Refusal::new(403, format!("Room not found: {room}")));
        }
        if let Some(holder) = agent.claims.get(room) {
            if holder != conn_id && agent.conns.contains_key(holder) && !takeover {
                return Err(Refusal::new(
                    409,
                    format!(
                        "room {room} is already held by connection {holder} for this agent; close it or pass takeover"
                    ),
                ));
            }
        }
        let lost = single_claim(gen, agent, conn_id, room);
        let rooms = notify_self(agent, conn_id);
        Ok(json(&Subscribed {
            ok: true,
            rooms,
            warning: lost.as_ref().map(|(other, _)| takeover_warning(room, other)),
            evicted_connection_id: lost.map(|(other, _)| other),
        }))
    }

    /// `POST .../connection/unsubscribe`.
    pub(crate) fn unsubscribe(&mut self, agent_id: &str, conn_id: &str, room: &str) -> Result<String, Refusal> {
        let agent = self.agent_conn(agent_id, conn_id)?;
        release(agent, conn_id, room);
        let rooms = notify_self(agent, conn_id);
        Ok(json(&Subscribed {
            ok: true,
            rooms,
            evicted_connection_id: None,
            warning: None,
        }))
    }

    /// `POST .../connection/placements`: replaces every placement of the connection; always a
    /// takeover.
    pub(crate) fn placements(
        &mut self,
        agent_id: &str,
        conn_id: &str,
        placements: &[(String, String)],
        generation: Option<&str>,
    ) -> Result<String, Refusal> {
        let gen = self.gen;
        let agent = self.agent_conn(agent_id, conn_id)?;
        let current = agent.conns.get(conn_id).map_or(0, |c| c.generation);
        if generation.is_some_and(|g| g != current.to_string()) {
            return Err(Refusal::new(
                409,
                format!("connection {conn_id} was taken over by another open (generation {current}); do not reconnect"),
            )
            .with_code("taken_over"));
        }
        if let Some((_, room)) = placements.iter().find(|(_, r)| !agent.rooms.contains(r)) {
            return Err(Refusal::new(403, format!("Room not found: {room}")));
        }
        let mut seen = BTreeSet::new();
        if let Some((_, room)) = placements.iter().find(|(_, r)| !seen.insert(r)) {
            return Err(Refusal::new(400, format!("room {room} is placed twice")));
        }
        let new: BTreeMap<String, String> = placements.iter().cloned().collect();
        let new_rooms: BTreeSet<&String> = new.values().collect();
        let old: Vec<String> = agent
            .conns
            .get(conn_id)
            .map(|c| c.placements.values().cloned().collect())
            .unwrap_or_default();
        for room in old.iter().filter(|r| !new_rooms.contains(r)) {
            release(agent, conn_id, room);
        }
        let mut released = Vec::new();
        for room in new.values() {
            if let Some((other, other_session)) = claim(gen, agent, conn_id, room) {
                released.push(ReleasedRoom {
                    connection_id: other,
                    room_id: room.clone(),
                    session_id: other_session,
                });
            }
        }
        if let Some(c) = agent.conns.get_mut(conn_id) {
            c.placements = new.clone();
        }
        let rooms = notify_self(agent, conn_id);
        Ok(json(&Placed {
            placements: new,
            rooms,
            released,
        }))
    }

    /// `POST .../connection/beat`: 404 unknown or lapsed, 409 `taken_over` for a stale
    /// generation, 409 without an attached stream (with `"code":"no_stream"` in the current
    /// generation only).
    pub(crate) fn beat(
        &mut self,
        agent_id: &str,
        conn_id: &str,
        cursor: Option<u64>,
        generation: Option<&str>,
        ignore: bool,
    ) -> Result<String, Refusal> {
        let gen = self.gen;
        let agent = self.agent_conn(agent_id, conn_id)?;
        let head = agent.head;
        let rooms_of = agent.rooms.clone();
        let Some(conn) = agent.conns.get_mut(conn_id) else {
            return Err(Refusal::new(404, not_open(conn_id)));
        };
        if generation.is_some_and(|g| g != conn.generation.to_string()) {
            return Err(Refusal::new(
                409,
                format!("connection {conn_id} was taken over by another open; do not reconnect"),
            )
            .with_code("taken_over"));
        }
        if conn.attach.is_none() {
            let refusal = Refusal::new(
                409,
                format!("connection {conn_id} has no stream attached; reopen the event stream"),
            );
            // switch-core 0.19 answers the detail alone (the capture's `beat_no_stream`); the
            // current generation adds the code (switch-agent-connection.md's beat table).
            return Err(match gen {
                Generation::Current => refusal.with_code("no_stream"),
                Generation::Released => refusal,
            });
        }
        if !ignore {
            conn.last_seen = Instant::now();
            if let Some(c) = cursor {
                conn.cursor = conn.cursor.max(c.min(head));
            }
        }
        Ok(json(&Beaten {
            ok: true,
            rooms: conn.rooms(&rooms_of),
            cursor: conn.cursor,
        }))
    }
}
