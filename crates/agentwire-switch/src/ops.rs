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
use crate::open::{check_id, encode_segment, is_uuid};
use agentwire_core::ErrorKind;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use std::collections::BTreeMap;

/// Largest response body a decoder accepts (16 MiB): past it the answer is a `limit` error.
pub const MAX_RESPONSE_BYTES: usize = 16 << 20;
/// Longest operation name.
pub const MAX_OP_NAME: usize = 64;

/// A typed operation: its name, its arguments (serialized as the body) and its result.
pub trait Operation: Serialize {
    const NAME: &'static str;
    type Output: DeserializeOwned;
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
    let raw: &RawValue = serde_json::from_str(args).map_err(|e| invalid(format!("arguments are not JSON: {e}")))?;
    if !raw.get().starts_with('{') {
        return Err(invalid("arguments must be a JSON object"));
    }
    let mut req = HttpRequest::post_json(agent_path(agent_id, &format!("ops/{name}"))?, raw.get().to_owned());
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
/// server's error.
pub fn decode_result(status: u16, body: &str) -> Result<Box<RawValue>, SwitchError> {
    #[derive(Deserialize)]
    struct Envelope {
        result: Box<RawValue>,
    }
    let body = success(status, body)?;
    serde_json::from_str::<Envelope>(body)
        .map(|e| e.result)
        .map_err(|e| decode_error(format!("operation answer has no `result`: {e}")))
}

/// A typed operation's answer.
pub fn decode<O: Operation>(status: u16, body: &str) -> Result<O::Output, SwitchError> {
    let result = decode_result(status, body)?;
    serde_json::from_str(result.get()).map_err(|e| decode_error(format!("`{}` result: {e}", O::NAME)))
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

fn decode_plain<T: DeserializeOwned>(what: &str, status: u16, body: &str) -> Result<T, SwitchError> {
    let body = success(status, body)?;
    serde_json::from_str(body).map_err(|e| decode_error(format!("{what} answer: {e}")))
}

// ---- GET ops ------------------------------------------------------------------------------

/// `GET /agents/{agent_id}/ops`: the operations the server offers.
pub fn list_ops(agent_id: &str) -> Result<HttpRequest, SwitchError> {
    Ok(HttpRequest::get(agent_path(agent_id, "ops")?))
}

#[derive(Debug, Clone, Deserialize)]
pub struct OpsCatalog {
    pub operations: BTreeMap<String, OpSpec>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct OpSpec {
    #[serde(default)]
    pub description: String,
    /// A JSON Schema, raw.
    pub input_schema: Box<RawValue>,
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
#[derive(Debug, Clone, Deserialize)]
pub struct RoomContext {
    #[serde(default)]
    pub agent_id: Option<String>,
    pub room_id: String,
    #[serde(default)]
    pub name: Option<String>,
    #[serde(default)]
    pub description: Option<String>,
    #[serde(default)]
    pub participants: Option<Box<RawValue>>,
    #[serde(default)]
    pub instructions: Option<String>,
    #[serde(default)]
    pub reference_types: Option<Box<RawValue>>,
    #[serde(default)]
    pub references: Option<Box<RawValue>>,
    #[serde(default)]
    pub documents: Option<Box<RawValue>>,
    #[serde(default)]
    pub packages: Option<Box<RawValue>>,
    #[serde(default)]
    pub linked_rooms: Option<Box<RawValue>>,
    #[serde(default)]
    pub roles: Option<Box<RawValue>>,
    /// Set when connecting took the room off another live session of this agent: surface it.
    #[serde(default)]
    pub warning: Option<String>,
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

#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct Posted {
    pub event_id: String,
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

#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct TargetedPosted {
    pub event_id: String,
    /// Target name → reachability (`live`, `no_session`, `disconnected`, `not_permitted`, ...).
    #[serde(default)]
    pub target_statuses: BTreeMap<String, String>,
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

#[derive(Debug, Clone, Deserialize)]
pub struct ContextPage {
    pub threads: Vec<Thread>,
    #[serde(default)]
    pub truncated: bool,
    #[serde(default)]
    pub oldest_timestamp: Option<Box<RawValue>>,
}

/// A thread: its root message and replies, raw (their shape is the server's).
#[derive(Debug, Clone, Deserialize)]
pub struct Thread {
    pub root: Box<RawValue>,
    #[serde(default)]
    pub replies: Vec<Box<RawValue>>,
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

#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct RoomSummary {
    pub room_id: String,
    #[serde(default)]
    pub name: Option<String>,
    #[serde(default)]
    pub description: Option<String>,
    #[serde(default)]
    pub connected: bool,
    #[serde(default)]
    pub archived: bool,
}

impl Operation for ListRooms {
    const NAME: &'static str = "list_rooms";
    type Output = Vec<RoomSummary>;
}

/// `list_participants` of the connected room.
#[derive(Debug, Clone, Default, Serialize)]
pub struct ListParticipants {}

#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct Participant {
    pub id: String,
    #[serde(default)]
    pub name: Option<String>,
    #[serde(default, rename = "type")]
    pub kind: Option<String>,
    #[serde(default)]
    pub status: Option<String>,
    #[serde(default)]
    pub alias: Option<String>,
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
    let body = serde_json::json!({"connection_id": connection_id, "room_id": room_id, "takeover": takeover});
    Ok(HttpRequest::post_json(
        agent_path(agent_id, "connection/subscribe")?,
        body.to_string(),
    ))
}

/// `POST /agents/{agent_id}/connection/unsubscribe`.
pub fn unsubscribe(agent_id: &str, connection_id: &str, room_id: &str) -> Result<HttpRequest, SwitchError> {
    check_connection(connection_id)?;
    check_id("room_id", room_id).map_err(|e| invalid(e.message))?;
    let body = serde_json::json!({"connection_id": connection_id, "room_id": room_id});
    Ok(HttpRequest::post_json(
        agent_path(agent_id, "connection/unsubscribe")?,
        body.to_string(),
    ))
}

#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct Subscribed {
    #[serde(default)]
    pub ok: bool,
    #[serde(default)]
    pub rooms: Vec<String>,
    /// The sibling connection a takeover evicted.
    #[serde(default)]
    pub evicted_connection_id: Option<String>,
    #[serde(default)]
    pub warning: Option<String>,
}

pub fn decode_subscribe(status: u16, body: &str) -> Result<Subscribed, SwitchError> {
    decode_plain("subscribe", status, body)
}

pub fn decode_unsubscribe(status: u16, body: &str) -> Result<Subscribed, SwitchError> {
    decode_plain("unsubscribe", status, body)
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
    let body = serde_json::json!({"connection_id": connection_id, "placements": placements, "generation": generation});
    Ok(HttpRequest::post_json(
        agent_path(agent_id, "connection/placements")?,
        body.to_string(),
    ))
}

#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct Placed {
    #[serde(default)]
    pub placements: BTreeMap<String, String>,
    #[serde(default)]
    pub rooms: Vec<String>,
    #[serde(default)]
    pub released: Vec<ReleasedRoom>,
}

/// A room a placement took off another connection.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct ReleasedRoom {
    pub connection_id: String,
    pub room_id: String,
    #[serde(default)]
    pub session_id: Option<String>,
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
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct Beaten {
    #[serde(default)]
    pub ok: bool,
    #[serde(default)]
    pub rooms: Vec<String>,
    #[serde(default)]
    pub cursor: Option<u64>,
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
        let mut twice = BTreeMap::new();
        twice.insert("s1".to_owned(), "r".to_owned());
        twice.insert("s2".to_owned(), "r".to_owned());
        assert!(placements("a", CID, &twice, None)
            .unwrap_err()
            .message
            .contains("twice"));
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
}
