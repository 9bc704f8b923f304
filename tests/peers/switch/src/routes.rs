//! The plain HTTP routes: registration, `GET /version`, the operations, the connection routes
//! (beat, subscribe, unsubscribe, placements) and the legacy `POST /agents/{id}/message`.
//! Bodies are checked the way FastAPI does (422 with a `detail` list).

use crate::frames::server_info;
use crate::http::Reply;
use crate::query::{unprocessable, Refusal};
use crate::state::Sender;
use crate::util::percent_decode;
use crate::{ops, Generation, Peer};
use agentwire_peer_kit::http::Head;
use serde_json::{Map, Value};

pub(crate) const MISSING_AUTH: &str = "Missing or invalid Authorization header";
pub(crate) const BAD_CREDENTIALS: &str = "Invalid credentials";

/// The path's segments, percent-decoded.
pub(crate) fn segments(path: &str) -> Vec<String> {
    path.split('/')
        .filter(|s| !s.is_empty())
        .take(16)
        .map(|s| percent_decode(s, false))
        .collect()
}

fn bearer(header: Option<&str>) -> Result<&str, Reply> {
    header
        .and_then(|h| h.strip_prefix("Bearer "))
        .filter(|k| !k.is_empty())
        .ok_or_else(|| Reply::text(401, MISSING_AUTH))
}

/// The agent the `Authorization: Bearer <key>` header names (the key decides; the path's agent
/// id is not checked, as switch-core 0.19).
pub(crate) fn authenticate(peer: &Peer, header: Option<&str>) -> Result<String, Reply> {
    let key = bearer(header)?;
    peer.state()
        .agent_by_key(key)
        .ok_or_else(|| Reply::text(401, BAD_CREDENTIALS))
}

fn refusal(r: Refusal) -> Reply {
    Reply::json(r.status, r.body())
}

fn answer(r: Result<String, Refusal>) -> Reply {
    match r {
        Ok(body) => Reply::json(200, body),
        Err(e) => refusal(e),
    }
}

/// The body as a JSON object, or FastAPI's 422.
fn object(body: &[u8]) -> Result<Map<String, Value>, Reply> {
    match serde_json::from_slice::<Value>(body) {
        Ok(Value::Object(m)) => Ok(m),
        Ok(other) => Err(refusal(unprocessable(
            "model_attributes_type",
            &["body"],
            "Input should be a valid dictionary or object to extract fields from",
            other,
        ))),
        Err(_) => Err(refusal(unprocessable(
            "json_invalid",
            &["body"],
            "JSON decode error",
            Value::Object(Map::new()),
        ))),
    }
}

fn input(m: &Map<String, Value>) -> Value {
    Value::Object(m.clone())
}

fn string(m: &Map<String, Value>, name: &str) -> Result<String, Reply> {
    match m.get(name) {
        None => Err(refusal(unprocessable(
            "missing",
            &["body", name],
            "Field required",
            input(m),
        ))),
        Some(Value::String(s)) => Ok(s.clone()),
        Some(v) => Err(refusal(unprocessable(
            "string_type",
            &["body", name],
            "Input should be a valid string",
            v.clone(),
        ))),
    }
}

fn opt_u64(m: &Map<String, Value>, name: &str) -> Result<Option<u64>, Reply> {
    match m.get(name) {
        None | Some(Value::Null) => Ok(None),
        Some(v) => v.as_u64().map(Some).ok_or_else(|| {
            refusal(unprocessable(
                "int_type",
                &["body", name],
                "Input should be a valid integer",
                v.clone(),
            ))
        }),
    }
}

fn opt_bool(m: &Map<String, Value>, name: &str) -> Result<bool, Reply> {
    match m.get(name) {
        None | Some(Value::Null) => Ok(false),
        Some(Value::Bool(b)) => Ok(*b),
        Some(v) => Err(refusal(unprocessable(
            "bool_type",
            &["body", name],
            "Input should be a valid boolean",
            v.clone(),
        ))),
    }
}

/// A generation given as a number or a string, as text.
fn opt_generation(m: &Map<String, Value>) -> Option<String> {
    match m.get("generation")? {
        Value::Number(n) => Some(n.to_string()),
        Value::String(s) => Some(s.clone()),
        _ => None,
    }
}

pub(crate) fn handle(peer: &Peer, head: &Head, seg: &[&str], body: &[u8]) -> Reply {
    match (head.method.as_str(), seg) {
        ("GET", ["version"]) => {
            return Reply::json(
                200,
                serde_json::to_string(&server_info(peer.cfg.generation)).unwrap_or_default(),
            )
        }
        ("GET", ["health"]) => return Reply::json(200, r#"{"status":"ok"}"#.to_owned()),
        ("POST", ["agents"]) => return register(peer, head, body),
        _ => {}
    }
    let agent = match authenticate(peer, head.header("authorization")) {
        Ok(a) => a,
        Err(reply) => return reply,
    };
    match inner(peer, head, seg, body, &agent) {
        Ok(reply) | Err(reply) => reply,
    }
}

fn inner(peer: &Peer, head: &Head, seg: &[&str], body: &[u8], agent: &str) -> Result<Reply, Reply> {
    let conn_header = head.header("x-switch-connection-id");
    Ok(match (head.method.as_str(), seg) {
        ("GET", ["agents", _, "ops"]) => Reply::json(200, ops::CATALOG.trim_end().to_owned()),
        ("POST", ["agents", _, "ops", name]) => answer(ops::call(&mut peer.state(), agent, conn_header, name, body)),
        ("POST", ["agents", _, "connection", "beat"]) => {
            let m = object(body)?;
            let cid = string(&m, "connection_id")?;
            let cursor = opt_u64(&m, "cursor")?;
            let ignore = peer.faults.borrow().ignore_heartbeats;
            // switch-core 0.19 has no generations: the field is ignored, as any extra field.
            let generation = match peer.cfg.generation {
                Generation::Current => opt_generation(&m),
                Generation::Released => None,
            };
            answer(peer.state().beat(agent, &cid, cursor, generation.as_deref(), ignore))
        }
        ("POST", ["agents", _, "connection", "subscribe"]) => {
            let m = object(body)?;
            let (cid, room) = (string(&m, "connection_id")?, string(&m, "room_id")?);
            let takeover = opt_bool(&m, "takeover")?;
            answer(peer.state().subscribe(agent, &cid, &room, takeover))
        }
        ("POST", ["agents", _, "connection", "unsubscribe"]) => {
            let m = object(body)?;
            let (cid, room) = (string(&m, "connection_id")?, string(&m, "room_id")?);
            answer(peer.state().unsubscribe(agent, &cid, &room))
        }
        // switch-core 0.19 has no such route: the fallback's 404 below.
        ("POST", ["agents", _, "connection", "placements"]) if peer.cfg.generation == Generation::Current => {
            let m = object(body)?;
            let cid = string(&m, "connection_id")?;
            let placements = match m.get("placements") {
                Some(Value::Object(p)) if p.values().all(Value::is_string) => p
                    .iter()
                    .map(|(s, r)| (s.clone(), r.as_str().unwrap_or_default().to_owned()))
                    .collect::<Vec<_>>(),
                None => {
                    let e = unprocessable("missing", &["body", "placements"], "Field required", input(&m));
                    return Err(refusal(e));
                }
                Some(v) => {
                    let msg = "Input should be a valid dictionary of strings";
                    return Err(refusal(unprocessable(
                        "dict_type",
                        &["body", "placements"],
                        msg,
                        v.clone(),
                    )));
                }
            };
            answer(
                peer.state()
                    .placements(agent, &cid, &placements, opt_generation(&m).as_deref()),
            )
        }
        ("POST", ["agents", _, "message"]) => {
            let m = object(body)?;
            let (room, content) = (string(&m, "room_id")?, string(&m, "content")?);
            legacy_message(peer, agent, &room, &content)
        }
        ("GET", ["agents", _, "connection", "ws"]) if peer.cfg.generation == Generation::Current => {
            Reply::detail(400, "a WebSocket upgrade is required on this route")
        }
        _ => Reply::detail(404, "Not Found"),
    })
}

/// `POST /agents {name, ...}` with the registration token → `{id, api_key}`.
fn register(peer: &Peer, head: &Head, body: &[u8]) -> Reply {
    let token = match bearer(head.header("authorization")) {
        Ok(t) => t,
        Err(reply) => return reply,
    };
    if token != peer.cfg.registration_token {
        return Reply::text(401, BAD_CREDENTIALS);
    }
    let run = || -> Result<Reply, Reply> {
        let m = object(body)?;
        let name = string(&m, "name")?;
        if name.trim().is_empty() || name.chars().count() > crate::state::MAX_NAME {
            let msg = "String should have between 1 and 128 characters";
            return Err(refusal(unprocessable(
                "string_length",
                &["body", "name"],
                msg,
                Value::String(name),
            )));
        }
        let Some(agent) = peer.state().try_add_agent(&name) else {
            return Ok(Reply::detail(503, "too many agents registered"));
        };
        #[derive(serde::Serialize)]
        struct Registered {
            id: String,
            api_key: String,
        }
        let body = Registered {
            id: agent.id,
            api_key: agent.key,
        };
        Ok(Reply::json(200, serde_json::to_string(&body).unwrap_or_default()))
    };
    match run() {
        Ok(r) | Err(r) => r,
    }
}

/// `POST /agents/{id}/message {room_id, content}` → `{ok, event_id}`; no connection needed.
fn legacy_message(peer: &Peer, agent_id: &str, room: &str, content: &str) -> Reply {
    let mut state = peer.state();
    let Some(a) = state.agents.get(agent_id) else {
        return Reply::text(401, BAD_CREDENTIALS);
    };
    if !a.rooms.contains(room) {
        return Reply::detail(403, &format!("Agent is not assigned to room {room}"));
    }
    let sender = Sender {
        matrix_id: a.matrix_id(),
        name: a.name.clone(),
        agent_id: Some(a.id.clone()),
    };
    match state.post(room, &sender, content, None) {
        // In switch-core's key order (the capture `legacy_message_ok`); `json!` sorts its keys.
        Some(event_id) => Reply::json(200, format!(r#"{{"ok":true,"event_id":{}}}"#, Value::from(event_id))),
        None => Reply::detail(403, &format!("Agent is not assigned to room {room}")),
    }
}
