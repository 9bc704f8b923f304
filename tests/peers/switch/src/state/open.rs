//! Attaching a socket or stream to a connection: the checks (rooms, fencing, the cap), the
//! takeover of an attached socket, the claims of `rooms=`, `connection_state` and catch-up.

use super::claims::claim;
use super::{Attach, Conn, Ender, State, OUTBOUND_QUEUE};
use crate::frames::{self, Out, StateInfo, REASON_RESTART, REASON_RETENTION};
use crate::query::{OpenReq, Refusal};
use agentwire_switch::frame::EvictionCode;
use agentwire_switch::open::{Filter, Scope};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use tokio::sync::mpsc;
use tokio::time::Instant;

/// A socket or stream just attached: what to write first, then what arrives on `rx`.
pub(crate) struct Opened {
    pub(crate) agent_id: String,
    pub(crate) conn_id: String,
    pub(crate) attach_id: u64,
    /// `connection_state`, then catch-up (a `gap` and/or buffered events).
    pub(crate) first: Vec<Out>,
    pub(crate) rx: mpsc::Receiver<Out>,
    pub(crate) end: Arc<Ender>,
}

fn scope_str(s: Scope) -> &'static str {
    match s {
        Scope::Single => "single",
        Scope::All => "all",
    }
}

fn filter_str(f: Filter) -> &'static str {
    match f {
        Filter::All => "all",
        Filter::Addressed => "addressed",
    }
}

impl State {
    /// Opens (or takes over) `req.connection_id` for `agent_id`. `last_event_id` (SSE) wins over
    /// `start_from`.
    pub(crate) fn open(
        &mut self,
        agent_id: &str,
        req: &OpenReq,
        last_event_id: Option<u64>,
    ) -> Result<Opened, Refusal> {
        let (gen, max_conns) = (self.gen, self.max_conns);
        let (capacity, max_age) = (self.replay_capacity, self.replay_max_age);
        let hb_secs = self.heartbeat_interval.as_secs_f64();
        let agent = self
            .agents
            .get(agent_id)
            .ok_or_else(|| Refusal::new(401, "Invalid credentials"))?;
        if let Some(room) = req.rooms.iter().find(|r| !agent.rooms.contains(*r)) {
            return Err(Refusal::new(403, format!("Room not found: {room}")));
        }
        match agent.conns.get(&req.connection_id) {
            Some(c) => {
                if let Some(expected) = &req.expected_generation {
                    if *expected != c.generation.to_string() {
                        let detail = format!(
                            "taken_over: connection {} was taken over by another open (generation {}, not {expected}); \
                             do not reconnect",
                            c.id, c.generation
                        );
                        return Err(Refusal::new(409, detail).with_code("taken_over"));
                    }
                }
            }
            None if agent.conns.len() >= max_conns => {
                return Err(Refusal::new(
                    409,
                    format!("agent {agent_id} already has {max_conns} open connections"),
                ));
            }
            None => {}
        }
        let generation = self.next_generation;
        self.next_generation += 1;
        let attach_id = self.next_attach;
        self.next_attach += 1;
        let (tx, rx) = mpsc::channel(OUTBOUND_QUEUE);
        let end = Arc::new(Ender::default());
        let now = Instant::now();
        let Some(agent) = self.agents.get_mut(agent_id) else {
            return Err(Refusal::new(401, "Invalid credentials"));
        };
        agent.trim(capacity, max_age, now);
        let head = agent.head;
        let start = last_event_id.or(req.start_from).unwrap_or(head);
        let cursor = start.min(head);
        let conn_id = req.connection_id.clone();
        {
            let conn = agent.conns.entry(conn_id.clone()).or_insert_with(|| Conn {
                id: conn_id.clone(),
                generation,
                scope: req.scope,
                filter: req.filter,
                protocol: req.protocol,
                claims: BTreeSet::new(),
                placements: BTreeMap::new(),
                op_room: None,
                cursor,
                last_seen: now,
                attach: None,
            });
            if conn.attach.is_some() {
                conn.push(Out::control(&frames::evicted(gen, EvictionCode::TakenOver)));
                conn.push(Out::Close);
                conn.attach = None;
            }
            conn.generation = generation;
            conn.scope = req.scope;
            conn.filter = req.filter;
            conn.protocol = req.protocol;
            conn.cursor = cursor;
            conn.last_seen = now;
            conn.attach = Some(Attach {
                id: attach_id,
                tx,
                end: end.clone(),
            });
        }
        for room in &req.rooms {
            claim(gen, agent, &conn_id, room);
        }
        let Some(conn) = agent.conns.get(&conn_id) else {
            return Err(Refusal::new(500, "connection vanished"));
        };
        let rooms = conn.rooms(&agent.rooms);
        let mut first = vec![Out::control(&frames::connection_state(
            gen,
            StateInfo {
                connection_id: &conn_id,
                agent_id,
                generation,
                scope: scope_str(req.scope),
                filter: filter_str(req.filter),
                spawn_capable: req.spawn_capable,
                rooms: rooms.clone(),
                cursor,
                protocol: req.protocol,
                heartbeat_interval_seconds: hb_secs,
                client: &req.client,
            },
        ))];
        if start > head {
            // The numbering was lost: from_sequence and resumed_at are both the head, as
            // switch-core 0.19 sends them (the capture gap_restart.sse).
            first.push(Out::control(&frames::gap(gen, head, head, rooms, true, REASON_RESTART)));
        } else {
            if start < agent.dropped_upto {
                let gap = frames::gap(gen, start, agent.dropped_upto, rooms, false, REASON_RETENTION);
                first.push(Out::control(&gap));
            }
            for s in agent.buffer.iter().filter(|s| s.seq > start) {
                if conn.covers(&s.room, &agent.rooms) && (conn.filter == Filter::All || s.addressed) {
                    first.push(Out::Frame {
                        domain: true,
                        enc: s.enc.clone(),
                    });
                }
            }
        }
        Ok(Opened {
            agent_id: agent_id.to_owned(),
            conn_id,
            attach_id,
            first,
            rx,
            end,
        })
    }

    /// A pong on socket `attach_id`: the connection is alive (unless the fault ignores it) and
    /// its cursor rises to `cursor`, clamped to the head. With `ignore` it never arrived.
    pub(crate) fn pong(&mut self, agent_id: &str, conn_id: &str, attach_id: u64, cursor: Option<u64>, ignore: bool) {
        let Some(agent) = self.agents.get_mut(agent_id) else {
            return;
        };
        let head = agent.head;
        let Some(conn) = agent.conns.get_mut(conn_id) else {
            return;
        };
        if conn.attach.as_ref().is_none_or(|a| a.id != attach_id) {
            return;
        }
        if ignore {
            return;
        }
        conn.last_seen = Instant::now();
        if let Some(c) = cursor {
            conn.cursor = conn.cursor.max(c.min(head));
        }
    }
}
