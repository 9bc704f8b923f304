//! What the session reports, and the cheap decoders of the payloads a router needs.
//!
//! The decoders read with [`agentwire_core::json::read`] rather than a derived `Deserialize`
//! (kilobytes of wasm per type), accepting what the derive they replace accepted: unknown keys
//! ignored, a known key given twice refused, `null` as absent for an `Option`, serde_json's
//! depth limit where serde decodes a value rather than skipping it.

use super::lax::{self, missing, named, Refused, SERDE_DEPTH};
use crate::errors::MoltZapError;
use crate::frame::Generation;
use agentwire_core::json::fields::{FieldError, Object};
use agentwire_core::json::nests_deeper_than;
use agentwire_core::json::read::{Kind, Value};
use agentwire_core::text::clip;
use agentwire_core::text::QUOTE_MAX;
use agentwire_core::ErrorKind;
use serde::{Deserialize, Serialize};
use std::borrow::Cow;

/// A request id as the session assigns it: `<prefix><counter>`, always a string (the released
/// generation only has string ids).
pub type RequestId = String;

/// The answer to a connect, as reported in [`Event::Connected`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HelloOk {
    /// The `result` exactly as received (`{}` in the current generation, the full object in the
    /// released one).
    pub raw: String,
    pub protocol_version: Option<String>,
    pub agent_id: Option<String>,
    /// `policy.heartbeatIntervalMs` (released).
    pub heartbeat_interval_ms: Option<u64>,
}

impl HelloOk {
    /// Reads a HelloOk `result`: it must be a JSON object; the known fields are taken when they
    /// have the right type and ignored otherwise.
    pub fn parse(raw: &str) -> Result<HelloOk, MoltZapError> {
        const KEYS: [&str; 3] = ["protocolVersion", "agentId", "policy"];
        let not_object = || MoltZapError::local(ErrorKind::Decode, "HelloOk is not a JSON object");
        if !raw.trim_start().starts_with('{') {
            return Err(not_object());
        }
        let hello = lax::read(raw, |root| {
            let o = Object::known(root, &KEYS).ok()?;
            o.decoded(&KEYS).ok()?;
            // The three known fields are JSON values of any type: serde decoded them, so its
            // depth limit applies (the object itself is one level).
            if KEYS
                .iter()
                .filter_map(|k| o.get(k))
                .any(|v| nests_deeper_than(v.raw().as_bytes(), SERDE_DEPTH - 1))
            {
                return None;
            }
            let text = |k| o.get(k).and_then(|v| v.as_str()).map(Cow::into_owned);
            // In a JSON value's object a key given twice counts the last time.
            let heartbeat_interval_ms = o
                .get("policy")
                .and_then(|p| p.members().filter(|(k, _)| k.is("heartbeatIntervalMs")).last())
                .and_then(|(_, v)| v.as_u64());
            Some(HelloOk {
                raw: raw.to_string(),
                protocol_version: text("protocolVersion"),
                agent_id: text("agentId"),
                heartbeat_interval_ms,
            })
        });
        hello.ok().flatten().ok_or_else(not_object)
    }
}

/// Everything the session reports. Payloads are raw JSON text.
#[derive(Debug, Clone, PartialEq)]
pub enum Event {
    /// The connect succeeded; `generation` is the one the session speaks from now on (the one
    /// `auto` chose).
    Connected {
        id: RequestId,
        generation: Generation,
        hello: HelloOk,
    },
    /// The connect failed: refused (`auth`, e.g. `Unauthorized` / -32000), bad params, timed out
    /// (`timeout`), a protocol version out of range (`version`; the session then closes), or the
    /// socket closed (`closed`). Except for `version` and `closed`, `connect` may be called again
    /// on the same socket.
    ConnectFailed { id: RequestId, error: MoltZapError },
    /// A request's `result`, as raw JSON text.
    Response { id: RequestId, result: String },
    /// A request ended without a result: an error response, its timeout, `cancel`, a frame
    /// error naming it, or the connection closing (`closed`; retryable when the request never
    /// left or its method is idempotent: [`MoltZapError::unanswered`]).
    Failed { id: RequestId, error: MoltZapError },
    /// `messages/received {message}`.
    MessageReceived {
        data: String,
        conversation_id: Option<String>,
        message_id: Option<String>,
        sender_id: Option<String>,
    },
    /// `conversations/created {conversation}`.
    ConversationCreated {
        data: String,
        conversation_id: Option<String>,
    },
    /// `conversations/updated {conversation}`.
    ConversationUpdated {
        data: String,
        conversation_id: Option<String>,
    },
    /// `conversations/archived {conversationId, archivedAt, by}`.
    ConversationArchived {
        data: String,
        conversation_id: Option<String>,
    },
    /// `conversations/unarchived {conversationId, by}`.
    ConversationUnarchived {
        data: String,
        conversation_id: Option<String>,
    },
    /// `presence/changed {agentId, status}`.
    PresenceChanged {
        data: String,
        agent_id: Option<String>,
        status: Option<String>,
    },
    /// Any other event or notification name, passed through.
    Other { name: String, data: Option<String> },
    /// Something that belongs to no pending request: a frame that could not be decoded (dropped;
    /// the session goes on), an `id: null` error reply, a response to an unknown id, a request
    /// from the server.
    Diagnostic(MoltZapError),
    /// No WebSocket ping arrived for `count` ping intervals (current generation, when
    /// `ping_interval_ms` is set), counted from `Connected` (never before it) or the last ping
    /// since. Reported once until the next ping; the session then probes
    /// with `system/ping` and, with no frame in `request_timeout_ms`, closes (`Disconnected`
    /// 1006).
    MissedPings { count: u32 },
    /// The connection is over; every pending request has had its terminal event first.
    Disconnected { code: u16, reason: String },
}

/// The routing fields' keys, in the order of the fields of the derived struct they were read
/// with (its array form): each level of a push payload may have them, `message` and
/// `conversation` being objects with the same keys in turn.
const IDS: [&str; 7] = [
    "id",
    "conversationId",
    "senderId",
    "agentId",
    "status",
    "message",
    "conversation",
];

/// The routing keys' values at one level of a push payload, by their index in [`IDS`]: by name
/// in an object, by position in serde's array form, read in one pass. `None` unless the level
/// has the shape the routing fields need:
/// - an object with no routing key twice and no key with a lone surrogate escape, or serde's
///   array form of at most 7 items;
/// - `message` and `conversation` each absent, `null`, or of this shape in turn;
/// - at most [`SERDE_DEPTH`] deep.
///
/// The other values are skipped (they may be anything).
fn ids<'t, 'a>(v: Value<'t, 'a>, level: usize) -> Option<Ids<'t, 'a>> {
    let found = level_ids(v, level)?;
    nested(found[MESSAGE], level + 1)?;
    nested(found[CONVERSATION], level + 1)?;
    Some(found)
}

type Ids<'t, 'a> = [Option<Value<'t, 'a>>; IDS.len()];

/// [`ids`] of this level alone (`message` and `conversation` not looked into).
fn level_ids<'t, 'a>(v: Value<'t, 'a>, level: usize) -> Option<Ids<'t, 'a>> {
    if level > SERDE_DEPTH {
        return None;
    }
    let mut found = [None; IDS.len()];
    match v.kind() {
        Kind::Object => Object::known_with(v, &IDS, &mut |i, value| found[i] = Some(value))
            .ok()
            .map(drop)?,
        Kind::Array if v.items().count() <= IDS.len() => {
            v.items().zip(&mut found).for_each(|(item, id)| *id = Some(item))
        }
        _ => return None,
    }
    Some(found)
}

/// A `message` or `conversation` value at `level`: `Some(None)` when absent or `null`, its
/// [`ids`] when it has their shape, `None` when it does not.
fn nested<'t, 'a>(v: Option<Value<'t, 'a>>, level: usize) -> Option<Option<Ids<'t, 'a>>> {
    match v {
        Some(v) if !v.is_null() => ids(v, level).map(Some),
        _ => Some(None),
    }
}

// The positions of the keys in `IDS`.
const ID: usize = 0;
const CONVERSATION_ID: usize = 1;
const SENDER_ID: usize = 2;
const AGENT_ID: usize = 3;
const STATUS: usize = 4;
const MESSAGE: usize = 5;
const CONVERSATION: usize = 6;

/// The routing fields of a push payload, in order: each is a key of the top level, or of the
/// object under `message` or `conversation` (`nested_in`); `None` where absent or not a string,
/// every one `None` when the payload does not have their shape.
fn routing(payload: &str, nested_in: Option<usize>, keys: &[usize]) -> Vec<Option<String>> {
    let fields = payload
        .starts_with('{')
        .then(|| lax::read(payload, |root| routing_in(root, nested_in, keys)));
    fields
        .and_then(|r| r.ok().flatten())
        .unwrap_or_else(|| vec![None; keys.len()])
}

/// [`routing`] of a payload already parsed (leniently, as [`lax::read`] parses): `None` when
/// every field is.
fn routing_in(root: Value<'_, '_>, nested_in: Option<usize>, keys: &[usize]) -> Option<Vec<Option<String>>> {
    if root.kind() != Kind::Object {
        return None;
    }
    let top = level_ids(root, 1)?;
    let message = nested(top[MESSAGE], 2)?;
    let conversation = nested(top[CONVERSATION], 2)?;
    let level = match nested_in {
        None => top,
        Some(MESSAGE) => message.unwrap_or_default(),
        Some(_) => conversation.unwrap_or_default(),
    };
    // A routing value is a `RawValue`, decoded as a string when read.
    let field = |k: usize| {
        level[k]
            .filter(|v| !v.lossy())
            .and_then(|v| v.as_str())
            .map(Cow::into_owned)
    };
    Some(keys.iter().map(|&k| field(k)).collect())
}

/// [`push_event`] for a push whose payload (`params` or `data`) is already on a tape, parsed
/// leniently: routed from it rather than parsed again.
pub(crate) fn push_event_on(name: String, payload: Option<Value<'_, '_>>) -> Event {
    let data = payload.map(|v| v.raw().to_string());
    classify(name, data, &|_, nested_in, keys| {
        payload
            .and_then(|root| routing_in(root, nested_in, keys))
            .unwrap_or_else(|| vec![None; keys.len()])
    })
}

/// Classifies a server push (current notification or released event) by name.
pub(crate) fn push_event(name: String, data: Option<String>) -> Event {
    classify(name, data, &routing)
}

/// The routing fields of a payload (its text, `"null"` when absent): see [`routing`].
type Route<'r> = &'r dyn Fn(&str, Option<usize>, &[usize]) -> Vec<Option<String>>;

/// The pushes with an event of their own; any other name is [`Event::Other`].
const PUSHES: [&str; 6] = [
    "messages/received",
    "conversations/created",
    "conversations/updated",
    "conversations/archived",
    "conversations/unarchived",
    "presence/changed",
];

fn classify(name: String, data: Option<String>, routing: Route<'_>) -> Event {
    if !PUSHES.contains(&name.as_str()) {
        return Event::Other { name, data };
    }
    let payload = data.unwrap_or_else(|| "null".to_string());
    // Lenient: a payload that does not have the expected shape still reaches the user, with the
    // routing fields left empty.
    match name.as_str() {
        "messages/received" => {
            let mut r = routing(&payload, Some(MESSAGE), &[CONVERSATION_ID, ID, SENDER_ID]).into_iter();
            Event::MessageReceived {
                conversation_id: r.next().flatten(),
                message_id: r.next().flatten(),
                sender_id: r.next().flatten(),
                data: payload,
            }
        }
        "conversations/created" | "conversations/updated" => {
            let conversation_id = routing(&payload, Some(CONVERSATION), &[ID]).pop().flatten();
            if name == "conversations/created" {
                Event::ConversationCreated {
                    data: payload,
                    conversation_id,
                }
            } else {
                Event::ConversationUpdated {
                    data: payload,
                    conversation_id,
                }
            }
        }
        "conversations/archived" | "conversations/unarchived" => {
            let conversation_id = routing(&payload, None, &[CONVERSATION_ID]).pop().flatten();
            if name == "conversations/archived" {
                Event::ConversationArchived {
                    data: payload,
                    conversation_id,
                }
            } else {
                Event::ConversationUnarchived {
                    data: payload,
                    conversation_id,
                }
            }
        }
        _ => {
            let mut r = routing(&payload, None, &[AGENT_ID, STATUS]).into_iter();
            Event::PresenceChanged {
                agent_id: r.next().flatten(),
                status: r.next().flatten(),
                data: payload,
            }
        }
    }
}

/// A message part. `data` is agentwire's extension (current generation only; a released server
/// refuses it with -32602): `{"type":"data","value":<any JSON>}`, the value decoded as a
/// `serde_json::Value`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "camelCase")]
pub enum Part {
    Text {
        text: String,
    },
    #[serde(rename_all = "camelCase")]
    Image {
        url: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        alt_text: Option<String>,
    },
    #[serde(rename_all = "camelCase")]
    File {
        url: String,
        name: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        mime_type: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        size: Option<u64>,
    },
    /// `{"type":"data","value":<any JSON>}` (agentwire extension, current generation).
    Data {
        value: serde_json::Value,
    },
    /// A part type this version does not know (decoding only; never sent).
    #[serde(other)]
    Unknown,
}

impl Part {
    pub fn text(text: impl Into<String>) -> Part {
        Part::Text { text: text.into() }
    }

    /// A `data` part (agentwire extension, current generation).
    pub fn data(value: serde_json::Value) -> Part {
        Part::Data { value }
    }
}

/// A message entity: `{id, conversationId, senderId, replyToId?, parts, createdAt, postId?, ...}`.
/// Other keys (`taggedEntities`, `patchedBy`) stay in the raw JSON.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Message {
    pub id: String,
    pub conversation_id: String,
    pub sender_id: String,
    #[serde(default)]
    pub reply_to_id: Option<String>,
    pub parts: Vec<Part>,
    pub created_at: String,
    /// The sender's `postId`, echoed by a server that speaks agentwire's extension (current
    /// generation); `None` otherwise.
    #[serde(default)]
    pub post_id: Option<String>,
}

const MESSAGE_KEYS: [&str; 7] = [
    "id",
    "conversationId",
    "senderId",
    "replyToId",
    "parts",
    "createdAt",
    "postId",
];

impl Message {
    /// Decodes a `{"message": Message}` payload: the data of `messages/received` and the result
    /// of `messages/send`.
    pub fn from_wrapped(json: &str) -> Result<Message, MoltZapError> {
        let read = lax::read(json, |root| {
            let m = if root.kind() == Kind::Array && root.items().count() <= 1 {
                root.items().next()
            } else {
                Object::known(root, &["message"])?.get("message")
            };
            let m = m.filter(|m| !m.is_null()).ok_or_else(|| missing("message"))?;
            Message::read(m, 2).map_err(|e| Refused(format!("in `message`: {e}")))
        });
        read.map_err(Refused::from)
            .and_then(|m| m)
            .map_err(|e| MoltZapError::local(ErrorKind::Decode, format!("not {{\"message\": Message}}: {e}")))
    }

    /// Decodes a bare Message object.
    pub fn parse(json: &str) -> Result<Message, MoltZapError> {
        lax::read(json, |root| Message::read(root, 1))
            .map_err(Refused::from)
            .and_then(|m| m)
            .map_err(|e| MoltZapError::local(ErrorKind::Decode, format!("not a Message: {e}")))
    }

    /// A Message object (or serde's array form of it) at nesting `level` (1: the top of the
    /// text), as its derived `Deserialize` read it.
    fn read(v: Value<'_, '_>, level: usize) -> Result<Message, Refused> {
        if let Some(text) = named(v, &MESSAGE_KEYS) {
            // Every item is a field serde decodes.
            if v.lossy() {
                return Err(FieldError::Lossy("an item".into()).into());
            }
            return lax::read(&text, |root| Message::read(root, level))?;
        }
        let o = Object::known(v, &MESSAGE_KEYS)?;
        o.decoded(&MESSAGE_KEYS)?;
        let need = |field| o.string(field)?.ok_or_else(|| missing(field));
        let (id, conversation_id, sender_id) = (need("id")?, need("conversationId")?, need("senderId")?);
        let reply_to_id = o.string("replyToId")?;
        let list = o.get("parts").ok_or_else(|| missing("parts"))?;
        if list.kind() != Kind::Array {
            return Err(FieldError::Type {
                field: "parts",
                expected: "an array of parts",
                got: list.kind(),
            }
            .into());
        }
        let parts = list
            .items()
            .enumerate()
            .map(|(i, p)| Part::read(p, level + 2).map_err(|e| Refused(format!("in `parts[{i}]`: {e}"))))
            .collect::<Result<_, _>>()?;
        Ok(Message {
            id,
            conversation_id,
            sender_id,
            reply_to_id,
            parts,
            created_at: need("createdAt")?,
            post_id: o.string("postId")?,
        })
    }
}

/// The part types and their keys, `type` first, then the variant's fields in declaration order.
const PARTS: [(&str, &[&str]); 4] = [
    ("text", &["type", "text"]),
    ("image", &["type", "url", "altText"]),
    ("file", &["type", "url", "name", "mimeType", "size"]),
    ("data", &["type", "value"]),
];

impl Part {
    /// A part at nesting `level`, as its derived `Deserialize` (internally tagged by `type`,
    /// unknown types as [`Part::Unknown`]) read it: an object, or serde's array form (the type,
    /// then the variant's fields in order).
    fn read(p: Value<'_, '_>, level: usize) -> Result<Part, Refused> {
        // serde buffers a tagged enum's value whole: all of it is decoded, all of it counts
        // against the depth.
        if p.lossy() {
            return Err(FieldError::Lossy("the part".into()).into());
        }
        if nests_deeper_than(p.raw().as_bytes(), (SERDE_DEPTH + 1).saturating_sub(level)) {
            return Err(Refused(format!("nested deeper than serde_json's {SERDE_DEPTH} levels")));
        }
        let array = p.kind() == Kind::Array;
        let tag = match array {
            true => p.items().next().filter(|t| !t.is_null()),
            false => Object::known(p, &["type"])?.get("type"),
        };
        let tag = tag.ok_or_else(|| missing("type"))?;
        let name = tag.as_str().ok_or(FieldError::Type {
            field: "type",
            expected: "a string",
            got: tag.kind(),
        })?;
        let Some(&(_, fields)) = PARTS.iter().find(|(t, _)| *t == name) else {
            // Unknown: any other keys, but in the array form nothing after the type.
            if array && p.items().count() > 1 {
                let name = clip(&name, QUOTE_MAX);
                return Err(Refused(format!("a part of type `{name}` has no fields")));
            }
            return Ok(Part::Unknown);
        };
        if array {
            let text =
                named(p, fields).ok_or_else(|| Refused(format!("more items than a `{name}` part has fields")))?;
            return lax::read(&text, |root| Part::read(root, level))?;
        }
        let o = Object::known(p, fields)?;
        let need = |field| o.string(field)?.ok_or_else(|| missing(field));
        Ok(match name.as_ref() {
            "text" => Part::Text { text: need("text")? },
            "image" => Part::Image {
                url: need("url")?,
                alt_text: o.string("altText")?,
            },
            "file" => Part::File {
                url: need("url")?,
                name: need("name")?,
                mime_type: o.string("mimeType")?,
                size: o.uint("size")?,
            },
            _ => {
                // Any JSON value, `null` included; absent is refused.
                let v = p.get("value").ok_or_else(|| Refused("`value` is missing".into()))?;
                Part::Data {
                    value: serde_json::from_str(v.raw()).map_err(|e| Refused(format!("`value`: {e}")))?,
                }
            }
        })
    }
}

#[cfg(test)]
#[path = "events_read_tests.rs"]
mod read_tests;

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn data_part_round_trip() {
        let part = Part::data(json!({"kind": "operation", "n": [1, 2.5, null, "x"]}));
        let text = serde_json::to_string(&part).unwrap();
        assert_eq!(
            text,
            r#"{"type":"data","value":{"kind":"operation","n":[1,2.5,null,"x"]}}"#
        );
        assert_eq!(serde_json::from_str::<Part>(&text).unwrap(), part);
        // Any JSON value, scalars included.
        for v in [json!(null), json!(7), json!("s"), json!([]), json!(false)] {
            let p: Part = serde_json::from_value(json!({"type": "data", "value": v})).unwrap();
            assert_eq!(p, Part::Data { value: v });
        }
        // Other types stay unknown.
        let p: Part = serde_json::from_str(r#"{"type":"video","url":"u"}"#).unwrap();
        assert_eq!(p, Part::Unknown);
    }

    #[test]
    fn message_post_id() {
        let with = r#"{"message":{"id":"m","conversationId":"c","senderId":"s","parts":[{"type":"text","text":"hi"},{"type":"data","value":{"a":1}}],"createdAt":"t","postId":"p-1"}}"#;
        let m = Message::from_wrapped(with).unwrap();
        assert_eq!(m.post_id.as_deref(), Some("p-1"));
        assert_eq!(m.parts, vec![Part::text("hi"), Part::data(json!({"a": 1}))]);
        let without = r#"{"id":"m","conversationId":"c","senderId":"s","parts":[],"createdAt":"t"}"#;
        assert_eq!(Message::parse(without).unwrap().post_id, None);
    }
}
