//! Operations and the other HTTP calls of an agent: request builders (validated before anything
//! is sent) and response decoders (HTTP errors as [`SwitchError`]s). Sans-IO: the driver sends
//! the [`HttpRequest`] with the key and hands back `(status, body)`.
//!
//! ```
//! use agentwire_switch::ops::{self, PostMessage};
//! let cid = "0f8fad5b-d9cb-469f-a165-70867728950e";
//! let req = ops::request("agent-1", Some(cid), &PostMessage::new("hello"))?;
//! assert_eq!(req.path, "/agents/agent-1/ops/post_message");
//! assert_eq!(req.header("X-Switch-Connection-Id"), Some(cid));
//! assert_eq!(req.body.as_deref(), Some(r#"{"body":"hello"}"#));
//! let posted = ops::decode::<PostMessage>(200, r#"{"result":{"event_id":"$e1"}}"#)?;
//! assert_eq!(posted.event_id, "$e1");
//! let refused = ops::decode::<PostMessage>(400, r#"{"detail":"Not connected to a room. Call connect_to_room first."}"#).unwrap_err();
//! assert_eq!(refused.status, Some(400));
//! # Ok::<(), agentwire_switch::SwitchError>(())
//! ```

use crate::error::SwitchError;
use crate::http::{HttpRequest, CONNECTION_ID_HEADER};
use crate::json::{self, FromJson, JsonError, Obj};
use crate::open::{check_id, encode_segment, is_uuid};
use agentwire_core::json::read::{self, Kind, Tape, Value};
use agentwire_core::json::{push_string, write};
use agentwire_core::ErrorKind;
use serde::Serialize;
use serde_json::value::RawValue;
use std::collections::BTreeMap;

/// How long an operation may take, from connecting to its answer's last byte, unless the
/// caller says otherwise (every surface's default: native, npm, the CLI).
pub const DEFAULT_OP_TIMEOUT_MS: u64 = 30_000;

/// The shortest timeout an operation takes, on every surface: 0 would end it before its
/// request could leave.
pub const MIN_OP_TIMEOUT_MS: u64 = 1;

/// An operation's timeout of `ms`, checked against [`MIN_OP_TIMEOUT_MS`]: below it, an
/// `invalid` error naming the option `what` ("op_timeout must be at least 1 ms").
pub fn check_op_timeout_ms(ms: u64, what: &str) -> Result<u64, SwitchError> {
    if ms < MIN_OP_TIMEOUT_MS {
        let m = format!("{what} must be at least {MIN_OP_TIMEOUT_MS} ms");
        return Err(SwitchError::local(ErrorKind::Invalid, m));
    }
    Ok(ms)
}

/// Largest response body a decoder accepts (16 MiB): past it the answer is a `limit` error.
pub const MAX_RESPONSE_BYTES: usize = 16 << 20;
/// Longest operation name.
pub const MAX_OP_NAME: usize = 64;

/// A typed operation: its name, its arguments (serialized as the body) and its result (one of
/// this module's answer types, each with its own decoder).
pub trait Operation: Serialize {
    const NAME: &'static str;
    type Output: FromJson;
}

fn invalid(m: impl Into<String>) -> SwitchError {
    SwitchError::local(ErrorKind::Invalid, m)
}

fn agent_path(agent_id: &str, tail: &str) -> Result<String, SwitchError> {
    check_id("agent_id", agent_id).map_err(|e| invalid(e.message))?;
    Ok(format!("/agents/{}/{tail}", encode_segment(agent_id)))
}

fn check_connection(connection_id: &str) -> Result<(), SwitchError> {
    if is_uuid(connection_id) {
        Ok(())
    } else {
        Err(invalid(format!("connection_id must be a UUID (got {connection_id:?})")))
    }
}

/// `POST /agents/{agent_id}/ops/{name}` with `args` (a JSON object) as the body, acting for
/// `connection_id` (the `X-Switch-Connection-Id` header) when given.
pub fn op(agent_id: &str, connection_id: Option<&str>, name: &str, args: &str) -> Result<HttpRequest, SwitchError> {
    if name.is_empty()
        || name.len() > MAX_OP_NAME
        || !name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
    {
        return Err(invalid(format!(
            "operation name {name:?} must be 1..={MAX_OP_NAME} characters of a-z, 0-9 and _"
        )));
    }
    let args = args.trim();
    let args = if args.is_empty() { "{}" } else { args };
    // Checked as serde_json checks a raw value (the lenient parse: syntax only, any depth), on
    // core's reader: serde_json's own parser would cost the wasm about 2 KB gzipped.
    let tape = read::parse_lenient(args, usize::MAX).map_err(|e| invalid(format!("arguments are not JSON: {e}")))?;
    if tape.root().kind() != Kind::Object {
        return Err(invalid("arguments must be a JSON object"));
    }
    let mut req = HttpRequest::post_json(agent_path(agent_id, &format!("ops/{name}"))?, args.to_owned());
    if let Some(c) = connection_id {
        check_connection(c)?;
        req = req.with_header(CONNECTION_ID_HEADER, c);
    }
    Ok(req)
}

/// A typed operation's request.
pub fn request<O: Operation>(
    agent_id: &str,
    connection_id: Option<&str>,
    args: &O,
) -> Result<HttpRequest, SwitchError> {
    let body = serde_json::to_string(args).map_err(|e| invalid(format!("arguments: {e}")))?;
    op(agent_id, connection_id, O::NAME, &body)
}

/// The `result` of an operation's answer, raw: `200 {"result": ...}`; any other status is the
/// server's error. A driver passes that error through [`crate::unanswered::answered`] with the
/// request (a gateway's 502 or 504 to a post is not retryable).
pub fn decode_result(status: u16, body: &str) -> Result<Box<RawValue>, SwitchError> {
    let tape = envelope(status, body)?;
    result(&tape).map(json::raw).map_err(no_result)
}

/// A typed operation's answer.
pub fn decode<O: Operation>(status: u16, body: &str) -> Result<O::Output, SwitchError> {
    let tape = envelope(status, body)?;
    let result = result(&tape).map_err(no_result)?;
    O::Output::from_json(result).map_err(|e| decode_error(format!("`{}` result: {e}", O::NAME)))
}

/// An operation's answer on a tape.
fn envelope(status: u16, body: &str) -> Result<Tape<'_>, SwitchError> {
    json::parse(success(status, body)?).map_err(no_result)
}

/// `{"result": ...}` (any other keys ignored): the result, `null` included.
fn result<'t, 'a>(tape: &'t Tape<'a>) -> Result<Value<'t, 'a>, JsonError> {
    Obj::new(tape.root(), &["result"])?
        .value("result")
        .ok_or(JsonError::Missing("result"))
}

fn no_result(e: JsonError) -> SwitchError {
    decode_error(format!("operation answer has no `result`: {e}"))
}

fn success(status: u16, body: &str) -> Result<&str, SwitchError> {
    if body.len() > MAX_RESPONSE_BYTES {
        return Err(SwitchError::local(
            ErrorKind::Limit,
            format!("answer of {} bytes exceeds {MAX_RESPONSE_BYTES}", body.len()),
        )
        .with_status(status));
    }
    if !(200..300).contains(&status) {
        return Err(SwitchError::http(status, body));
    }
    Ok(body)
}

fn decode_error(m: String) -> SwitchError {
    SwitchError::local(ErrorKind::Decode, m)
}

fn decode_plain<T: FromJson>(what: &str, status: u16, body: &str) -> Result<T, SwitchError> {
    let body = success(status, body)?;
    json::parse(body)
        .and_then(|tape| T::from_json(tape.root()))
        .map_err(|e| decode_error(format!("{what} answer: {e}")))
}

// ---- GET ops ------------------------------------------------------------------------------

/// `GET /agents/{agent_id}/ops`: the operations the server offers.
pub fn list_ops(agent_id: &str) -> Result<HttpRequest, SwitchError> {
    Ok(HttpRequest::get(agent_path(agent_id, "ops")?))
}

#[derive(Debug, Clone)]
pub struct OpsCatalog {
    pub operations: BTreeMap<String, OpSpec>,
}

#[derive(Debug, Clone)]
pub struct OpSpec {
    pub description: String,
    /// A JSON Schema, raw.
    pub input_schema: Box<RawValue>,
}

impl FromJson for OpsCatalog {
    fn from_json(v: Value<'_, '_>) -> Result<Self, JsonError> {
        let o = Obj::new(v, &["operations"])?;
        if o.value("operations").is_none() {
            return Err(JsonError::Missing("operations"));
        }
        Ok(OpsCatalog {
            operations: o.map("operations", OpSpec::from_json)?,
        })
    }
}

impl FromJson for OpSpec {
    fn from_json(v: Value<'_, '_>) -> Result<Self, JsonError> {
        let o = Obj::new(v, &["description", "input_schema"])?;
        Ok(OpSpec {
            description: o.string_or_empty("description")?,
            input_schema: o.raw("input_schema")?,
        })
    }
}

pub fn decode_ops(status: u16, body: &str) -> Result<OpsCatalog, SwitchError> {
    decode_plain("GET ops", status, body)
}

// ---- typed operations ---------------------------------------------------------------------

/// `connect_to_room`: claims the room for the connection (always a takeover) and returns its
/// context.
#[derive(Debug, Clone, Serialize)]
pub struct ConnectToRoom {
    pub room_id: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub include_general_instructions: Option<bool>,
}

impl ConnectToRoom {
    pub fn new(room_id: impl Into<String>) -> Self {
        ConnectToRoom {
            room_id: room_id.into(),
            include_general_instructions: None,
        }
    }
}

/// The room's context. Resources whose shape the spec leaves open stay raw.
#[derive(Debug, Clone)]
pub struct RoomContext {
    pub agent_id: Option<String>,
    pub room_id: String,
    pub name: Option<String>,
    pub description: Option<String>,
    pub participants: Option<Box<RawValue>>,
    pub instructions: Option<String>,
    pub reference_types: Option<Box<RawValue>>,
    pub references: Option<Box<RawValue>>,
    pub documents: Option<Box<RawValue>>,
    pub packages: Option<Box<RawValue>>,
    pub linked_rooms: Option<Box<RawValue>>,
    pub roles: Option<Box<RawValue>>,
    /// Set when connecting took the room off another live session of this agent: surface it.
    pub warning: Option<String>,
}

impl FromJson for RoomContext {
    fn from_json(v: Value<'_, '_>) -> Result<Self, JsonError> {
        let o = Obj::new(
            v,
            &[
                "agent_id",
                "room_id",
                "name",
                "description",
                "participants",
                "instructions",
                "reference_types",
                "references",
                "documents",
                "packages",
                "linked_rooms",
                "roles",
                "warning",
            ],
        )?;
        Ok(RoomContext {
            agent_id: o.opt_string("agent_id")?,
            room_id: o.string("room_id")?,
            name: o.opt_string("name")?,
            description: o.opt_string("description")?,
            participants: o.opt_raw("participants")?,
            instructions: o.opt_string("instructions")?,
            reference_types: o.opt_raw("reference_types")?,
            references: o.opt_raw("references")?,
            documents: o.opt_raw("documents")?,
            packages: o.opt_raw("packages")?,
            linked_rooms: o.opt_raw("linked_rooms")?,
            roles: o.opt_raw("roles")?,
            warning: o.opt_string("warning")?,
        })
    }
}

impl Operation for ConnectToRoom {
    const NAME: &'static str = "connect_to_room";
    type Output = RoomContext;
}

/// `post_message` to the connected room.
#[derive(Debug, Clone, Serialize)]
pub struct PostMessage {
    pub body: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub thread_id: Option<String>,
}

impl PostMessage {
    pub fn new(body: impl Into<String>) -> Self {
        PostMessage {
            body: body.into(),
            thread_id: None,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Posted {
    pub event_id: String,
}

impl FromJson for Posted {
    fn from_json(v: Value<'_, '_>) -> Result<Self, JsonError> {
        Ok(Posted {
            event_id: Obj::new(v, &["event_id"])?.string("event_id")?,
        })
    }
}

impl Operation for PostMessage {
    const NAME: &'static str = "post_message";
    type Output = Posted;
}

/// `send_targeted_message`: a message addressed to participants by name or role.
#[derive(Debug, Clone, Default, Serialize)]
pub struct SendTargetedMessage {
    pub body: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub target_names: Option<Vec<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub target_roles: Option<Vec<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub thread_id: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TargetedPosted {
    pub event_id: String,
    /// Target name → reachability (`live`, `no_session`, `disconnected`, `not_permitted`, ...).
    pub target_statuses: BTreeMap<String, String>,
}

impl FromJson for TargetedPosted {
    fn from_json(v: Value<'_, '_>) -> Result<Self, JsonError> {
        let o = Obj::new(v, &["event_id", "target_statuses"])?;
        Ok(TargetedPosted {
            event_id: o.string("event_id")?,
            target_statuses: o.string_map("target_statuses")?,
        })
    }
}

impl Operation for SendTargetedMessage {
    const NAME: &'static str = "send_targeted_message";
    type Output = TargetedPosted;
}

/// `read_context`: the connected room's recent history, in threads. `since` and `before` are
/// ISO-8601 timestamps.
#[derive(Debug, Clone, Default, Serialize)]
pub struct ReadContext {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub limit: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub since: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub before: Option<String>,
}

#[derive(Debug, Clone)]
pub struct ContextPage {
    pub threads: Vec<Thread>,
    pub truncated: bool,
    pub oldest_timestamp: Option<Box<RawValue>>,
}

/// A thread: its root message and replies, raw (their shape is the server's).
#[derive(Debug, Clone)]
pub struct Thread {
    pub root: Box<RawValue>,
    pub replies: Vec<Box<RawValue>>,
}

impl FromJson for ContextPage {
    fn from_json(v: Value<'_, '_>) -> Result<Self, JsonError> {
        let o = Obj::new(v, &["threads", "truncated", "oldest_timestamp"])?;
        if o.value("threads").is_none() {
            return Err(JsonError::Missing("threads"));
        }
        Ok(ContextPage {
            threads: o.list("threads", Thread::from_json)?,
            truncated: o.flag("truncated")?,
            oldest_timestamp: o.opt_raw("oldest_timestamp")?,
        })
    }
}

impl FromJson for Thread {
    fn from_json(v: Value<'_, '_>) -> Result<Self, JsonError> {
        let o = Obj::new(v, &["root", "replies"])?;
        Ok(Thread {
            root: o.raw("root")?,
            replies: o.list("replies", |v| Ok(json::raw(v)))?,
        })
    }
}

impl Operation for ReadContext {
    const NAME: &'static str = "read_context";
    type Output = ContextPage;
}

/// `list_rooms`: the rooms this agent is assigned to.
#[derive(Debug, Clone, Default, Serialize)]
pub struct ListRooms {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub include_archived: Option<bool>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RoomSummary {
    pub room_id: String,
    pub name: Option<String>,
    pub description: Option<String>,
    pub connected: bool,
    pub archived: bool,
}

impl FromJson for RoomSummary {
    fn from_json(v: Value<'_, '_>) -> Result<Self, JsonError> {
        let o = Obj::new(v, &["room_id", "name", "description", "connected", "archived"])?;
        Ok(RoomSummary {
            room_id: o.string("room_id")?,
            name: o.opt_string("name")?,
            description: o.opt_string("description")?,
            connected: o.flag("connected")?,
            archived: o.flag("archived")?,
        })
    }
}

impl Operation for ListRooms {
    const NAME: &'static str = "list_rooms";
    type Output = Vec<RoomSummary>;
}

/// `list_participants` of the connected room.
#[derive(Debug, Clone, Default, Serialize)]
pub struct ListParticipants {}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Participant {
    pub id: String,
    pub name: Option<String>,
    /// `type` on the wire.
    pub kind: Option<String>,
    pub status: Option<String>,
    pub alias: Option<String>,
}

impl FromJson for Participant {
    fn from_json(v: Value<'_, '_>) -> Result<Self, JsonError> {
        let o = Obj::new(v, &["id", "name", "type", "status", "alias"])?;
        Ok(Participant {
            id: o.string("id")?,
            name: o.opt_string("name")?,
            kind: o.opt_string("type")?,
            status: o.opt_string("status")?,
            alias: o.opt_string("alias")?,
        })
    }
}

impl Operation for ListParticipants {
    const NAME: &'static str = "list_participants";
    type Output = Vec<Participant>;
}

// ---- connection routes --------------------------------------------------------------------

/// `POST /agents/{agent_id}/connection/subscribe`: claims a room cooperatively (409 when a live
/// sibling holds it, unless `takeover`).
pub fn subscribe(
    agent_id: &str,
    connection_id: &str,
    room_id: &str,
    takeover: bool,
) -> Result<HttpRequest, SwitchError> {
    check_connection(connection_id)?;
    check_id("room_id", room_id).map_err(|e| invalid(e.message))?;
    let body = connection_body(connection_id, |o| {
        o.str("room_id", room_id);
        o.bool("takeover", takeover);
    });
    Ok(HttpRequest::post_json(
        agent_path(agent_id, "connection/subscribe")?,
        body,
    ))
}

/// `POST /agents/{agent_id}/connection/unsubscribe`.
pub fn unsubscribe(agent_id: &str, connection_id: &str, room_id: &str) -> Result<HttpRequest, SwitchError> {
    check_connection(connection_id)?;
    check_id("room_id", room_id).map_err(|e| invalid(e.message))?;
    let body = connection_body(connection_id, |o| o.str("room_id", room_id));
    Ok(HttpRequest::post_json(
        agent_path(agent_id, "connection/unsubscribe")?,
        body,
    ))
}

/// The body of a connection route, `{"connection_id": .., ...}`, written by hand.
fn connection_body(connection_id: &str, rest: impl FnOnce(&mut write::Obj<'_>)) -> String {
    let mut out = String::with_capacity(128);
    let mut o = write::Obj::begin(&mut out);
    o.str("connection_id", connection_id);
    rest(&mut o);
    o.end();
    out
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Subscribed {
    pub ok: bool,
    pub rooms: Vec<String>,
    /// The sibling connection a takeover evicted.
    pub evicted_connection_id: Option<String>,
    pub warning: Option<String>,
}

impl FromJson for Subscribed {
    fn from_json(v: Value<'_, '_>) -> Result<Self, JsonError> {
        let o = Obj::new(v, &["ok", "rooms", "evicted_connection_id", "warning"])?;
        Ok(Subscribed {
            ok: o.flag("ok")?,
            rooms: o.strings("rooms")?,
            evicted_connection_id: o.opt_string("evicted_connection_id")?,
            warning: o.opt_string("warning")?,
        })
    }
}

pub fn decode_subscribe(status: u16, body: &str) -> Result<Subscribed, SwitchError> {
    decode_plain("subscribe", status, body)
}

pub fn decode_unsubscribe(status: u16, body: &str) -> Result<Subscribed, SwitchError> {
    decode_plain("unsubscribe", status, body)
}

/// The answer to `request`, an operation's ([`op`]) or a connection's [`subscribe`] or
/// [`unsubscribe`], as JSON text: an operation's `result` ([`decode_result`]); a subscribe or
/// unsubscribe answer checked by its decoder and given whole. Its error goes through
/// [`crate::unanswered::answered`] with `request`. For a host that makes these calls itself (the
/// component's `op-result`) and gets the request back with its answer.
pub fn decode_answer(request: &HttpRequest, status: u16, body: &str) -> Result<String, SwitchError> {
    let path = request.path.split('?').next().unwrap_or_default();
    let decoded = match path.rsplit_once("/connection/") {
        Some((_, "subscribe")) => decode_subscribe(status, body).map(|_| body.to_owned()),
        Some((_, "unsubscribe")) => decode_unsubscribe(status, body).map(|_| body.to_owned()),
        _ => decode_result(status, body).map(|raw| raw.get().to_owned()),
    };
    decoded.map_err(|e| crate::unanswered::answered(request, e))
}

/// `POST /agents/{agent_id}/connection/placements`: replaces every placement of the connection
/// (session id → room). Always a takeover.
pub fn placements(
    agent_id: &str,
    connection_id: &str,
    placements: &BTreeMap<String, String>,
    generation: Option<&crate::frame::ConnGeneration>,
) -> Result<HttpRequest, SwitchError> {
    check_connection(connection_id)?;
    let mut seen = std::collections::BTreeSet::new();
    for (session, room) in placements {
        check_id("session id", session).map_err(|e| invalid(e.message))?;
        check_id("room_id", room).map_err(|e| invalid(e.message))?;
        if !seen.insert(room) {
            return Err(invalid(format!(
                "room {room:?} is placed twice (the server refuses it with 400)"
            )));
        }
    }
    let body = connection_body(connection_id, |o| {
        o.key("placements");
        o.out.push('{');
        for (i, (session, room)) in placements.iter().enumerate() {
            if i > 0 {
                o.out.push(',');
            }
            push_string(o.out, session);
            o.out.push(':');
            push_string(o.out, room);
        }
        o.out.push('}');
        o.key("generation");
        match generation {
            Some(g) => g.push_json(o.out),
            None => o.out.push_str("null"),
        }
    });
    Ok(HttpRequest::post_json(
        agent_path(agent_id, "connection/placements")?,
        body,
    ))
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Placed {
    pub placements: BTreeMap<String, String>,
    pub rooms: Vec<String>,
    pub released: Vec<ReleasedRoom>,
}

/// A room a placement took off another connection.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReleasedRoom {
    pub connection_id: String,
    pub room_id: String,
    pub session_id: Option<String>,
}

impl FromJson for Placed {
    fn from_json(v: Value<'_, '_>) -> Result<Self, JsonError> {
        let o = Obj::new(v, &["placements", "rooms", "released"])?;
        Ok(Placed {
            placements: o.string_map("placements")?,
            rooms: o.strings("rooms")?,
            released: o.list("released", ReleasedRoom::from_json)?,
        })
    }
}

impl FromJson for ReleasedRoom {
    fn from_json(v: Value<'_, '_>) -> Result<Self, JsonError> {
        let o = Obj::new(v, &["connection_id", "room_id", "session_id"])?;
        Ok(ReleasedRoom {
            connection_id: o.string("connection_id")?,
            room_id: o.string("room_id")?,
            session_id: o.opt_string("session_id")?,
        })
    }
}

pub fn decode_placements(status: u16, body: &str) -> Result<Placed, SwitchError> {
    decode_plain("placements", status, body)
}

/// `POST /agents/{agent_id}/connection/beat` (SSE transport): alive, and the cursor.
pub fn beat(agent_id: &str, connection_id: &str, cursor: u64) -> Result<HttpRequest, SwitchError> {
    check_connection(connection_id)?;
    let body = format!(r#"{{"connection_id":"{connection_id}","cursor":{cursor}}}"#);
    Ok(HttpRequest::post_json(agent_path(agent_id, "connection/beat")?, body))
}

/// `200 {"ok": true, "rooms": [...], "cursor": N}`: the server's view.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Beaten {
    pub ok: bool,
    pub rooms: Vec<String>,
    pub cursor: Option<u64>,
}

impl FromJson for Beaten {
    fn from_json(v: Value<'_, '_>) -> Result<Self, JsonError> {
        let o = Obj::new(v, &["ok", "rooms", "cursor"])?;
        Ok(Beaten {
            ok: o.flag("ok")?,
            rooms: o.strings("rooms")?,
            cursor: o.opt_u64("cursor")?,
        })
    }
}

/// A beat's answer. Errors keep the body's `code` (`no_stream`, `unfenced`, `taken_over`).
pub fn decode_beat(status: u16, body: &str) -> Result<Beaten, SwitchError> {
    decode_plain("beat", status, body)
}

#[cfg(test)]
mod tests {
    use super::*;

    const CID: &str = "0f8fad5b-d9cb-469f-a165-70867728950e";

    #[test]
    fn builders_validate_before_sending() {
        assert!(op("a", None, "../x", "{}")
            .unwrap_err()
            .message
            .contains("operation name"));
        assert!(op("a", None, "post_message", "[1]")
            .unwrap_err()
            .message
            .contains("object"));
        assert!(op("a", None, "post_message", "{").unwrap_err().message.contains("JSON"));
        assert!(op("a", Some("nope"), "post_message", "{}")
            .unwrap_err()
            .message
            .contains("UUID"));
        assert!(op("a/b", None, "post_message", "{}").is_err());
        let r = op("a b", None, "list_rooms", "").unwrap();
        assert_eq!(
            (r.path.as_str(), r.body.as_deref()),
            ("/agents/a%20b/ops/list_rooms", Some("{}"))
        );
        assert!(r.header(CONNECTION_ID_HEADER).is_none());
        // `:` is a pchar and allowed in relay tokens' ids; the relay refuses `%3A` in a path.
        assert_eq!(
            op("org:bot", None, "list_rooms", "").unwrap().path,
            "/agents/org:bot/ops/list_rooms"
        );
        assert_eq!(list_ops("org:bot").unwrap().path, "/agents/org:bot/ops");
        let mut twice = BTreeMap::new();
        twice.insert("s1".to_owned(), "r".to_owned());
        twice.insert("s2".to_owned(), "r".to_owned());
        assert!(placements("a", CID, &twice, None)
            .unwrap_err()
            .message
            .contains("twice"));
    }

    /// The arguments' check takes what serde_json's raw value took (syntax only: a lone
    /// surrogate escape, a number beyond `f64`, any depth) and refuses what it refused, the
    /// text sent as given.
    #[test]
    fn arguments_are_checked_as_serde_json_checked_a_raw_value() {
        let deep = format!("{{\"a\":{}1{}}}", "[".repeat(300), "]".repeat(300));
        let texts = [
            r#"{"a":"\ud800"}"#,
            r#"{"a":1e400}"#,
            &deep,
            r#"{"a":1} x"#,
            "{\"a\":\"\u{1}\"}",
            r#"{"a":01}"#,
            r#"{"a":"\x"}"#,
            r#"{"a":tru}"#,
            r#" {"a": [1, {"b": null}]} "#,
            "[{}]",
            "\"{}\"",
        ];
        for text in texts {
            let serde = serde_json::from_str::<&RawValue>(text.trim()).map(|r| r.get().starts_with('{'));
            let ours = op("a", None, "post_message", text);
            assert_eq!(ours.is_ok(), matches!(serde, Ok(true)), "{text}: {ours:?}");
            if let Ok(r) = ours {
                assert_eq!(r.body.as_deref(), Some(text.trim()));
            }
        }
    }

    proptest::proptest! {
        #[test]
        fn arguments_are_refused_where_serde_json_refused_them(text in r#"[ {}\[\]":,0-9a-z\\.eE+-]{0,24}"#) {
            let serde = serde_json::from_str::<&RawValue>(text.trim()).map(|r| r.get().starts_with('{'));
            let expected = text.trim().is_empty() || matches!(serde, Ok(true));
            proptest::prop_assert_eq!(op("a", None, "post_message", &text).is_ok(), expected);
        }
    }

    /// An operation name is 1 to `MAX_OP_NAME` characters: the empty one and one longer are
    /// refused before anything is sent, the longest goes in the path.
    #[test]
    fn operation_names_are_1_to_max_op_name_characters() {
        for name in [String::new(), "a".repeat(MAX_OP_NAME + 1)] {
            let e = op("a", None, &name, "{}").unwrap_err();
            assert!(e.message.contains("operation name"), "{name:?}: {e:?}");
        }
        let longest = "a".repeat(MAX_OP_NAME);
        assert_eq!(
            op("a", None, &longest, "{}").unwrap().path,
            format!("/agents/a/ops/{longest}")
        );
    }

    /// An answer of exactly `MAX_RESPONSE_BYTES` is read; one byte more is a `limit` error.
    #[test]
    fn an_answer_of_max_response_bytes_is_read_and_one_more_is_not() {
        let answer = |len: usize| {
            let mut body = String::from(r#"{"result":1}"#);
            body.push_str(&" ".repeat(len - body.len()));
            body
        };
        assert_eq!(decode_result(200, &answer(MAX_RESPONSE_BYTES)).unwrap().get(), "1");
        let e = decode_result(200, &answer(MAX_RESPONSE_BYTES + 1)).unwrap_err();
        assert_eq!((e.kind, e.status), (ErrorKind::Limit, Some(200)));
    }

    #[test]
    fn typed_bodies() {
        let r = request(
            "a",
            Some(CID),
            &SendTargetedMessage {
                body: "hi".into(),
                target_names: Some(vec!["bob".into()]),
                ..Default::default()
            },
        )
        .unwrap();
        assert_eq!(r.body.as_deref(), Some(r#"{"body":"hi","target_names":["bob"]}"#));
        let b = beat("a", CID, 4813).unwrap();
        assert_eq!(b.path, "/agents/a/connection/beat");
        assert_eq!(
            b.body.as_deref(),
            Some(r#"{"connection_id":"0f8fad5b-d9cb-469f-a165-70867728950e","cursor":4813}"#)
        );
        let s = subscribe("a", CID, "r1", true).unwrap();
        let v: serde_json::Value = serde_json::from_str(s.body.as_deref().unwrap()).unwrap();
        assert_eq!(v["takeover"], true);
    }

    #[test]
    fn connection_bodies() {
        use crate::frame::ConnGeneration;
        use serde_json::json;
        let body = |r: HttpRequest| -> serde_json::Value { serde_json::from_str(r.body.as_deref().unwrap()).unwrap() };
        assert_eq!(
            body(subscribe("a", CID, "r1", false).unwrap()),
            json!({"connection_id": CID, "room_id": "r1", "takeover": false})
        );
        assert_eq!(
            body(unsubscribe("a", CID, "r1").unwrap()),
            json!({"connection_id": CID, "room_id": "r1"})
        );
        let map: BTreeMap<String, String> = [("s-2", "r-b"), ("s-1", "r-a")]
            .into_iter()
            .map(|(s, r)| (s.to_owned(), r.to_owned()))
            .collect();
        for (generation, want) in [
            (None, json!(null)),
            (Some(ConnGeneration::Number(u64::MAX)), json!(u64::MAX)),
            (Some(ConnGeneration::Text("g \"7\"".into())), json!("g \"7\"")),
        ] {
            assert_eq!(
                body(placements("a", CID, &map, generation.as_ref()).unwrap()),
                json!({"connection_id": CID, "placements": {"s-1": "r-a", "s-2": "r-b"}, "generation": want})
            );
        }
        assert_eq!(
            body(placements("a", CID, &BTreeMap::new(), None).unwrap()),
            json!({"connection_id": CID, "placements": {}, "generation": null})
        );
    }

    #[test]
    fn answers() {
        let t = decode::<SendTargetedMessage>(
            200,
            r#"{"result":{"event_id":"$...","target_statuses":{"peer-alpha":"live"}}}"#,
        )
        .unwrap();
        assert_eq!(t.target_statuses["peer-alpha"], "live");
        let e = decode::<ListRooms>(200, r#"{"result":{"rooms":[]}}"#).unwrap_err();
        assert_eq!(e.kind, ErrorKind::Decode);
        let e = decode_beat(
            404,
            r#"{"detail":"connection nope is not open; reconnect and resume from your cursor"}"#,
        )
        .unwrap_err();
        assert_eq!((e.kind, e.status), (ErrorKind::Invalid, Some(404)));
        let ok = decode_beat(200, r#"{"ok":true,"rooms":["r"],"cursor":4}"#).unwrap();
        assert_eq!(ok.cursor, Some(4));
    }

    /// A decode error's message, checked to be one (`kind` decode).
    fn refusal<T: std::fmt::Debug>(r: Result<T, SwitchError>) -> String {
        let e = r.unwrap_err();
        assert_eq!(e.kind, ErrorKind::Decode, "{e:?}");
        e.message
    }

    fn result(json: &str) -> String {
        format!(r#"{{"result":{json}}}"#)
    }

    #[test]
    fn every_answer_with_every_field() {
        let c = decode_ops(
            200,
            r#"{"operations":{"post_message":{"description":"Post.","input_schema":{"type":"object"}}},"extra":1}"#,
        )
        .unwrap();
        let op = &c.operations["post_message"];
        assert_eq!(
            (op.description.as_str(), op.input_schema.get()),
            ("Post.", r#"{"type":"object"}"#)
        );

        let r = decode::<ConnectToRoom>(
            200,
            &result(
                r#"{"agent_id":"a","room_id":"r","name":"n","description":"d","participants":[{"id":"p"}],"instructions":"i","reference_types":["t"],"references":{"x":1},"documents":[],"packages":[1],"linked_rooms":["l"],"roles":{"r":"w"},"warning":"took over","new_field":true}"#,
            ),
        )
        .unwrap();
        assert_eq!(
            (
                r.agent_id.as_deref(),
                r.room_id.as_str(),
                r.name.as_deref(),
                r.description.as_deref()
            ),
            (Some("a"), "r", Some("n"), Some("d"))
        );
        assert_eq!(
            (r.instructions.as_deref(), r.warning.as_deref()),
            (Some("i"), Some("took over"))
        );
        let raws = [
            &r.participants,
            &r.reference_types,
            &r.references,
            &r.documents,
            &r.packages,
            &r.linked_rooms,
            &r.roles,
        ]
        .map(|v| v.as_deref().map(RawValue::get));
        assert_eq!(
            raws,
            [
                Some(r#"[{"id":"p"}]"#),
                Some(r#"["t"]"#),
                Some(r#"{"x":1}"#),
                Some("[]"),
                Some("[1]"),
                Some(r#"["l"]"#),
                Some(r#"{"r":"w"}"#)
            ]
        );

        let p = decode::<PostMessage>(200, &result(r#"{"event_id":"$e","x":[]}"#)).unwrap();
        assert_eq!(p, Posted { event_id: "$e".into() });

        let t = decode::<SendTargetedMessage>(
            200,
            &result(r#"{"event_id":"$e","target_statuses":{"bob":"live","eve":"not_permitted"}}"#),
        )
        .unwrap();
        assert_eq!((t.event_id.as_str(), t.target_statuses.len()), ("$e", 2));
        assert_eq!(t.target_statuses["eve"], "not_permitted");

        let c = decode::<ReadContext>(
            200,
            &result(
                r#"{"threads":[{"root":{"id":1},"replies":[{"id":2},{"id":3}]}],"truncated":true,"oldest_timestamp":"2026-01-01T00:00:00Z"}"#,
            ),
        )
        .unwrap();
        assert_eq!((c.threads.len(), c.truncated), (1, true));
        assert_eq!(c.threads[0].root.get(), r#"{"id":1}"#);
        assert_eq!(
            c.threads[0].replies.iter().map(|r| r.get()).collect::<Vec<_>>(),
            [r#"{"id":2}"#, r#"{"id":3}"#]
        );
        assert_eq!(c.oldest_timestamp.unwrap().get(), r#""2026-01-01T00:00:00Z""#);

        let rooms = decode::<ListRooms>(
            200,
            &result(r#"[{"room_id":"r","name":"n","description":"d","connected":true,"archived":true}]"#),
        )
        .unwrap();
        assert_eq!(
            rooms,
            [RoomSummary {
                room_id: "r".into(),
                name: Some("n".into()),
                description: Some("d".into()),
                connected: true,
                archived: true,
            }]
        );

        let people = decode::<ListParticipants>(
            200,
            &result(r#"[{"id":"i","name":"n","type":"agent","status":"live","alias":"al"}]"#),
        )
        .unwrap();
        assert_eq!(
            people,
            [Participant {
                id: "i".into(),
                name: Some("n".into()),
                kind: Some("agent".into()),
                status: Some("live".into()),
                alias: Some("al".into()),
            }]
        );

        let s = decode_subscribe(
            200,
            r#"{"ok":true,"rooms":["r1","r2"],"evicted_connection_id":"c2","warning":"w"}"#,
        )
        .unwrap();
        assert_eq!(
            s,
            Subscribed {
                ok: true,
                rooms: vec!["r1".into(), "r2".into()],
                evicted_connection_id: Some("c2".into()),
                warning: Some("w".into()),
            }
        );

        let p = decode_placements(
            200,
            r#"{"placements":{"s1":"r1"},"rooms":["r1"],"released":[{"connection_id":"c2","room_id":"r1","session_id":"s9"}]}"#,
        )
        .unwrap();
        assert_eq!(
            p,
            Placed {
                placements: [("s1".to_owned(), "r1".to_owned())].into(),
                rooms: vec!["r1".into()],
                released: vec![ReleasedRoom {
                    connection_id: "c2".into(),
                    room_id: "r1".into(),
                    session_id: Some("s9".into()),
                }],
            }
        );

        assert_eq!(
            decode_beat(200, r#"{"ok":true,"rooms":["r"],"cursor":18446744073709551615}"#).unwrap(),
            Beaten {
                ok: true,
                rooms: vec!["r".into()],
                cursor: Some(u64::MAX),
            }
        );
    }

    #[test]
    fn every_answer_with_only_its_required_fields() {
        let c = decode_ops(200, r#"{"operations":{"x":{"input_schema":null}}}"#).unwrap();
        assert_eq!(
            (
                c.operations["x"].description.as_str(),
                c.operations["x"].input_schema.get()
            ),
            ("", "null"),
            "a required raw field keeps `null`"
        );
        assert!(decode_ops(200, r#"{"operations":{}}"#).unwrap().operations.is_empty());

        let r = decode::<ConnectToRoom>(200, &result(r#"{"room_id":"r","name":null,"roles":null}"#)).unwrap();
        assert_eq!(r.room_id, "r");
        assert!(r.agent_id.is_none() && r.name.is_none() && r.roles.is_none() && r.warning.is_none());
        assert!(r.participants.is_none() && r.documents.is_none());

        let t = decode::<SendTargetedMessage>(200, &result(r#"{"event_id":"$e"}"#)).unwrap();
        assert!(t.target_statuses.is_empty());

        let c = decode::<ReadContext>(200, &result(r#"{"threads":[{"root":null}],"oldest_timestamp":null}"#)).unwrap();
        assert_eq!((c.threads[0].root.get(), c.threads[0].replies.len()), ("null", 0));
        assert!(!c.truncated && c.oldest_timestamp.is_none());

        let rooms = decode::<ListRooms>(200, &result(r#"[{"room_id":"r"}]"#)).unwrap();
        assert_eq!(
            (rooms[0].name.as_deref(), rooms[0].connected, rooms[0].archived),
            (None, false, false)
        );
        assert!(decode::<ListRooms>(200, &result("[]")).unwrap().is_empty());

        let people = decode::<ListParticipants>(200, &result(r#"[{"id":"i","type":null}]"#)).unwrap();
        assert_eq!((people[0].id.as_str(), people[0].kind.as_deref()), ("i", None));

        assert_eq!(
            decode_subscribe(200, "{}").unwrap(),
            Subscribed {
                ok: false,
                rooms: vec![],
                evicted_connection_id: None,
                warning: None
            }
        );
        let p = decode_placements(200, r#"{"released":[{"connection_id":"c","room_id":"r"}]}"#).unwrap();
        assert!(p.placements.is_empty() && p.rooms.is_empty());
        assert_eq!(p.released[0].session_id, None);
        assert_eq!(
            decode_beat(200, r#"{"cursor":null}"#).unwrap(),
            Beaten {
                ok: false,
                rooms: vec![],
                cursor: None
            }
        );
    }

    #[test]
    fn a_wrong_answer_is_refused_naming_the_field() {
        let cases: [(Result<(), SwitchError>, &str); 20] = [
            (decode_ops(200, r#"{}"#).map(drop), "missing field `operations`"),
            (
                decode_ops(200, r#"{"operations":[]}"#).map(drop),
                "`operations` must be an object",
            ),
            (
                decode_ops(200, r#"{"operations":{"x":{"description":1,"input_schema":{}}}}"#).map(drop),
                "in `operations`: `description` must be a string, not a number",
            ),
            (
                decode_ops(200, r#"{"operations":{"x":{"description":"d"}}}"#).map(drop),
                "missing field `input_schema`",
            ),
            (
                decode::<ConnectToRoom>(200, &result(r#"{"room_id":"r","warning":false}"#)).map(drop),
                "`connect_to_room` result: `warning` must be a string, not a boolean",
            ),
            (
                decode::<ConnectToRoom>(200, &result(r#"{"name":"n"}"#)).map(drop),
                "missing field `room_id`",
            ),
            (
                decode::<PostMessage>(200, &result(r#"{"event_id":7}"#)).map(drop),
                "`post_message` result: `event_id` must be a string, not a number",
            ),
            (
                decode::<SendTargetedMessage>(200, &result(r#"{"event_id":"$e","target_statuses":{"bob":1}}"#))
                    .map(drop),
                "in `target_statuses`: expected a string, got a number",
            ),
            (
                decode::<ReadContext>(200, &result(r#"{"threads":[{"root":{},"replies":{}}]}"#)).map(drop),
                "in `threads`: `replies` must be an array, not an object",
            ),
            (
                decode::<ReadContext>(200, &result(r#"{"threads":[],"truncated":"yes"}"#)).map(drop),
                "`truncated` must be a boolean, not a string",
            ),
            (
                decode::<ListRooms>(200, &result(r#"[{"room_id":"r","connected":null}]"#)).map(drop),
                "`connected` must be a boolean, not null",
            ),
            (
                decode::<ListParticipants>(200, &result(r#"[{"id":"i","type":["agent"]}]"#)).map(drop),
                "`type` must be a string, not an array",
            ),
            (
                decode_subscribe(200, r#"{"rooms":"r"}"#).map(drop),
                "subscribe answer: `rooms` must be an array of strings, not a string",
            ),
            (
                decode_unsubscribe(200, r#"{"ok":1}"#).map(drop),
                "unsubscribe answer: `ok` must be a boolean, not a number",
            ),
            (
                decode_placements(200, r#"{"released":[{"connection_id":"c"}]}"#).map(drop),
                "placements answer: in `released`: missing field `room_id`",
            ),
            (
                decode_placements(200, r#"{"placements":{"s":null}}"#).map(drop),
                "in `placements`: expected a string, got null",
            ),
            (
                decode_beat(200, r#"{"cursor":-1}"#).map(drop),
                "beat answer: `cursor` must be a whole number from 0 to 18446744073709551615",
            ),
            (
                decode_beat(200, r#"{"cursor":4.0}"#).map(drop),
                "`cursor` must be a whole number from 0 to 18446744073709551615",
            ),
            (
                decode_beat(200, r#"{"ok":true,"ok":false}"#).map(drop),
                "beat answer: field `ok` given twice",
            ),
            (
                decode_beat(200, r#"[true]"#).map(drop),
                "beat answer: expected an object, got an array",
            ),
        ];
        for (r, text) in cases {
            let m = refusal(r);
            assert!(m.contains(text), "{m:?} lacks {text:?}");
        }
    }

    #[test]
    fn the_envelope() {
        let r = decode_result(200, r#"{"note":1,"result": [1, {"a":null}] }"#).unwrap();
        assert_eq!(r.get(), r#"[1, {"a":null}]"#, "the result as received");
        assert_eq!(decode_result(200, r#"{"result":null}"#).unwrap().get(), "null");
        for (body, text) in [
            ("{}", "operation answer has no `result`: missing field `result`"),
            (r#"{"result":1,"result":2}"#, "field `result` given twice"),
            ("[1]", "expected an object, got an array"),
            (
                r#"{"result":1"#,
                "operation answer has no `result`: unexpected end of input",
            ),
        ] {
            let m = refusal(decode_result(200, body));
            assert!(m.contains(text), "{m:?} lacks {text:?}");
            let m = refusal(decode::<PostMessage>(200, body));
            assert!(m.contains(text), "{m:?} lacks {text:?}");
        }
        let m = refusal(decode::<PostMessage>(200, r#"{"result":null}"#));
        assert_eq!(m, "`post_message` result: expected an object, got null");
        let e = decode_subscribe(200, &" ".repeat(MAX_RESPONSE_BYTES + 1)).unwrap_err();
        assert_eq!((e.kind, e.status), (ErrorKind::Limit, Some(200)));
    }

    /// Half an emoji (`JSON.stringify` writes one when a message is cut mid-pair) or a huge number
    /// in a stored message does not cost the whole answer: raw values pass through as received,
    /// as they did through serde_json; a field decoded as text still refuses one.
    #[test]
    fn lone_surrogates_and_huge_numbers_pass_through() {
        let body = r#"{"result":{"messages":[{"body":"cut \ud83d","n":1e400}]}}"#;
        let r = decode_result(200, body).unwrap();
        assert_eq!(r.get(), r#"{"messages":[{"body":"cut \ud83d","n":1e400}]}"#);
    }

    /// Before, a host with the answer alone decoded it as an operation's: a subscribe's
    /// `{"ok":true,...}` was refused for having no `result`.
    #[test]
    fn an_answer_is_decoded_by_its_request() {
        let sub = subscribe("a", CID, "r1", false).unwrap();
        let unsub = unsubscribe("a", CID, "r1").unwrap();
        let body = r#"{"ok":true,"rooms":["r1"]}"#;
        assert_eq!(decode_answer(&sub, 200, body).unwrap(), body);
        assert_eq!(decode_answer(&unsub, 200, body).unwrap(), body);
        let e = decode_answer(&sub, 200, r#"{"ok":1}"#).unwrap_err();
        assert!(e.message.starts_with("subscribe answer: `ok`"), "{}", e.message);
        let read = op("connection", Some(CID), "list_rooms", "").unwrap();
        assert_eq!(decode_answer(&read, 200, r#"{"result":[]}"#).unwrap(), "[]");
        assert_eq!(decode_answer(&read, 200, body).unwrap_err().kind, ErrorKind::Decode);
        // The error is the one `unanswered::answered` gives: a gateway's 502 to a post is final.
        let post = op("a", Some(CID), "post_message", r#"{"body":"x"}"#).unwrap();
        for (request, retryable) in [(&read, true), (&sub, true), (&post, false)] {
            let e = decode_answer(request, 502, "").unwrap_err();
            assert_eq!((e.status, e.retryable), (Some(502), retryable), "{}", request.path);
        }
    }
}
