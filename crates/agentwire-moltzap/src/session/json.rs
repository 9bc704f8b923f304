//! [`Event::to_json`]: one JSON object per event, the shape the CLI prints and bindings hand to
//! JavaScript hosts. Payloads are embedded as JSON, not as strings.

use super::Event;
use serde_json::{json, Map, Value};

/// A payload the session kept as raw JSON text, embedded (text that is not JSON stays a string).
fn payload(data: &str) -> Value {
    serde_json::from_str(data).unwrap_or_else(|_| Value::String(data.to_string()))
}

fn error(e: &crate::MoltZapError) -> Value {
    serde_json::to_value(e).unwrap_or(Value::Null)
}

impl Event {
    /// `{"type": "<name>", ...}` with the variant's fields in camelCase; `type` is `connected`,
    /// `connectFailed`, `response`, `failed`, `messageReceived`, `conversationCreated`,
    /// `conversationUpdated`, `conversationArchived`, `conversationUnarchived`,
    /// `presenceChanged`, `other`, `diagnostic`, `missedPings` or `disconnected`.
    pub fn to_json(&self) -> Value {
        let mut o = Map::new();
        let mut put = |k: &str, v: Value| {
            if !v.is_null() {
                o.insert(k.to_string(), v);
            }
        };
        let name = match self {
            Event::Connected { id, generation, hello } => {
                put("id", json!(id));
                put("generation", json!(generation.as_str()));
                put("hello", payload(&hello.raw));
                "connected"
            }
            Event::ConnectFailed { id, error: e } => {
                put("id", json!(id));
                put("error", error(e));
                "connectFailed"
            }
            Event::Response { id, result } => {
                put("id", json!(id));
                put("result", payload(result));
                "response"
            }
            Event::Failed { id, error: e } => {
                put("id", json!(id));
                put("error", error(e));
                "failed"
            }
            Event::MessageReceived {
                data,
                conversation_id,
                message_id,
                sender_id,
            } => {
                put("conversationId", json!(conversation_id));
                put("messageId", json!(message_id));
                put("senderId", json!(sender_id));
                put("data", payload(data));
                "messageReceived"
            }
            Event::ConversationCreated { data, conversation_id }
            | Event::ConversationUpdated { data, conversation_id }
            | Event::ConversationArchived { data, conversation_id }
            | Event::ConversationUnarchived { data, conversation_id } => {
                put("conversationId", json!(conversation_id));
                put("data", payload(data));
                match self {
                    Event::ConversationCreated { .. } => "conversationCreated",
                    Event::ConversationUpdated { .. } => "conversationUpdated",
                    Event::ConversationArchived { .. } => "conversationArchived",
                    _ => "conversationUnarchived",
                }
            }
            Event::PresenceChanged { data, agent_id, status } => {
                put("agentId", json!(agent_id));
                put("status", json!(status));
                put("data", payload(data));
                "presenceChanged"
            }
            Event::Other { name, data } => {
                put("name", json!(name));
                put("data", data.as_deref().map_or(Value::Null, payload));
                "other"
            }
            Event::Diagnostic(e) => {
                put("error", error(e));
                "diagnostic"
            }
            Event::MissedPings { count } => {
                put("count", json!(count));
                "missedPings"
            }
            Event::Disconnected { code, reason } => {
                put("code", json!(code));
                put("reason", json!(reason));
                "disconnected"
            }
        };
        o.insert("type".to_string(), json!(name));
        Value::Object(o)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::MoltZapError;
    use agentwire_core::ErrorKind;

    #[test]
    fn payloads_are_embedded_and_empty_fields_left_out() {
        let e = Event::MessageReceived {
            data: r#"{"message":{"id":"m1"}}"#.into(),
            conversation_id: Some("c1".into()),
            message_id: Some("m1".into()),
            sender_id: None,
        };
        let expected = json!({"type": "messageReceived", "conversationId": "c1", "messageId": "m1",
            "data": {"message": {"id": "m1"}}});
        assert_eq!(e.to_json(), expected);
        let d = Event::Diagnostic(MoltZapError::local(ErrorKind::Decode, "bad"));
        let j = d.to_json();
        assert_eq!(
            (j["type"].as_str(), j["error"]["kind"].as_str()),
            (Some("diagnostic"), Some("decode"))
        );
        let o = Event::Other {
            name: "x/y".into(),
            data: None,
        };
        assert_eq!(o.to_json(), json!({"type": "other", "name": "x/y"}));
        let c = Event::Disconnected {
            code: 1006,
            reason: "gone".into(),
        };
        assert_eq!(c.to_json()["code"], 1006);
    }
}
