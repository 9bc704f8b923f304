//! What the session reports, and the cheap decoders of the payloads a router needs.

use crate::errors::MoltZapError;
use crate::frame::Generation;
use agentwire_core::ErrorKind;
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

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

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct HelloWire {
    #[serde(default)]
    protocol_version: Option<serde_json::Value>,
    #[serde(default)]
    agent_id: Option<serde_json::Value>,
    #[serde(default)]
    policy: Option<serde_json::Value>,
}

impl HelloOk {
    /// Reads a HelloOk `result`: it must be a JSON object; the known fields are taken when they
    /// have the right type and ignored otherwise.
    pub fn parse(raw: &str) -> Result<HelloOk, MoltZapError> {
        let not_object = || MoltZapError::local(ErrorKind::Decode, "HelloOk is not a JSON object");
        if !raw.trim_start().starts_with('{') {
            return Err(not_object());
        }
        let w: HelloWire = serde_json::from_str(raw).map_err(|_| not_object())?;
        let text = |v: Option<serde_json::Value>| match v {
            Some(serde_json::Value::String(s)) => Some(s),
            _ => None,
        };
        let heartbeat_interval_ms = w
            .policy
            .as_ref()
            .and_then(|p| p.get("heartbeatIntervalMs"))
            .and_then(serde_json::Value::as_u64);
        Ok(HelloOk {
            raw: raw.to_string(),
            protocol_version: text(w.protocol_version),
            agent_id: text(w.agent_id),
            heartbeat_interval_ms,
        })
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
    /// error naming it, or the connection closing (`closed`, retryable).
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
    /// `ping_interval_ms` is set). Reported once until the next ping.
    MissedPings { count: u32 },
    /// The connection is over; every pending request has had its terminal event first.
    Disconnected { code: u16, reason: String },
}

/// The routing fields of a push payload, borrowed from it (no allocation but the boxes).
#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct Ids<'a> {
    #[serde(default, borrow)]
    id: Option<&'a RawValue>,
    #[serde(default, borrow)]
    conversation_id: Option<&'a RawValue>,
    #[serde(default, borrow)]
    sender_id: Option<&'a RawValue>,
    #[serde(default, borrow)]
    agent_id: Option<&'a RawValue>,
    #[serde(default, borrow)]
    status: Option<&'a RawValue>,
    #[serde(default, borrow)]
    message: Option<Box<Ids<'a>>>,
    #[serde(default, borrow)]
    conversation: Option<Box<Ids<'a>>>,
}

/// A routing field's text; `None` when absent or not a string.
fn text(v: &Option<&RawValue>) -> Option<String> {
    v.and_then(|raw| serde_json::from_str::<String>(raw.get()).ok())
}

/// Classifies a server push (current notification or released event) by name.
pub(crate) fn push_event(name: String, data: Option<String>) -> Event {
    const KNOWN: [&str; 6] = [
        "messages/received",
        "conversations/created",
        "conversations/updated",
        "conversations/archived",
        "conversations/unarchived",
        "presence/changed",
    ];
    if !KNOWN.contains(&name.as_str()) {
        return Event::Other { name, data };
    }
    let payload = data.unwrap_or_else(|| "null".to_string());
    // Lenient: a payload that does not have the expected shape still reaches the user, with the
    // routing fields left empty.
    let ids: Ids = if payload.starts_with('{') {
        serde_json::from_str(&payload).unwrap_or_default()
    } else {
        Ids::default()
    };
    match name.as_str() {
        "messages/received" => {
            let m = ids.message.as_deref();
            Event::MessageReceived {
                conversation_id: m.and_then(|m| text(&m.conversation_id)),
                message_id: m.and_then(|m| text(&m.id)),
                sender_id: m.and_then(|m| text(&m.sender_id)),
                data: payload,
            }
        }
        "conversations/created" | "conversations/updated" => {
            let conversation_id = ids.conversation.as_deref().and_then(|c| text(&c.id));
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
        "conversations/archived" => Event::ConversationArchived {
            conversation_id: text(&ids.conversation_id),
            data: payload,
        },
        "conversations/unarchived" => Event::ConversationUnarchived {
            conversation_id: text(&ids.conversation_id),
            data: payload,
        },
        _ => Event::PresenceChanged {
            agent_id: text(&ids.agent_id),
            status: text(&ids.status),
            data: payload,
        },
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

#[derive(Deserialize)]
struct MessageWrap {
    message: Message,
}

impl Message {
    /// Decodes a `{"message": Message}` payload: the data of `messages/received` and the result
    /// of `messages/send`.
    pub fn from_wrapped(json: &str) -> Result<Message, MoltZapError> {
        serde_json::from_str::<MessageWrap>(json)
            .map(|w| w.message)
            .map_err(|e| MoltZapError::local(ErrorKind::Decode, format!("not {{\"message\": Message}}: {e}")))
    }

    /// Decodes a bare Message object.
    pub fn parse(json: &str) -> Result<Message, MoltZapError> {
        serde_json::from_str(json).map_err(|e| MoltZapError::local(ErrorKind::Decode, format!("not a Message: {e}")))
    }
}

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
