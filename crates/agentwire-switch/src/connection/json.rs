//! [`Event::to_json`]: one JSON object per event, the shape the CLI prints and bindings hand to
//! JavaScript hosts: `type` is `connected`, `event` (a domain event, with `kind` and an optional
//! `gap`), `subscription_changed`, `room_released`, `control`, `evicted`, `disconnected`,
//! `stopped` or `diagnostic`. Field names are the protocol's (snake_case); payloads are embedded
//! as JSON; absent fields are left out.

use super::{Event, Wire};
use crate::error::SwitchError;
use crate::frame::{ConnGeneration, Gap};
use serde_json::value::RawValue;
use serde_json::{json, Map, Value};

impl Event {
    /// The event as one JSON object.
    pub fn to_json(&self) -> Value {
        event_json(self)
    }
}

impl SwitchError {
    /// `{kind, status?, code?, message, detail?, retryable}`; `detail` embedded when it is JSON.
    pub fn to_json(&self) -> Value {
        error_json(self)
    }
}

/// The event as JSON.
fn event_json(event: &Event) -> Value {
    let mut o = Map::new();
    let mut put = |k: &str, v: Value| {
        if !v.is_null() {
            o.insert(k.to_owned(), v);
        }
    };
    let name = match event {
        Event::Connected { state, wire, resumed } => {
            put("wire", json!(wire_name(*wire)));
            put("resumed", json!(resumed));
            put(
                "state",
                json!({
                    "connection_id": state.connection_id,
                    "agent_id": state.agent_id,
                    "generation": state.generation.as_ref().map(generation),
                    "scope": state.scope,
                    "filter": state.filter,
                    "spawn_capable": state.spawn_capable,
                    "rooms": state.rooms,
                    "cursor": state.cursor,
                    "protocol": state.protocol,
                    "heartbeat_interval_seconds": state.heartbeat_interval_seconds,
                    "server": state.server.as_deref().map(raw),
                    "client": state.client.as_deref().map(raw),
                }),
            );
            "connected"
        }
        Event::Event { event, gap } => {
            put("kind", json!(event.kind.as_str()));
            put("sequence", json!(event.sequence));
            put("room_id", json!(event.room_id));
            put("bridge_id", json!(event.bridge_id));
            put("channel_type", json!(event.channel_type));
            put("payload", raw(&event.payload));
            put("gap", gap.as_ref().map_or(Value::Null, gap_json));
            "event"
        }
        Event::SubscriptionChanged(s) => {
            put("rooms", json!(s.rooms));
            put("reason", json!(s.reason));
            "subscription_changed"
        }
        Event::RoomReleased(r) => {
            put("room_id", json!(r.room_id));
            put("session_id", json!(r.session_id));
            "room_released"
        }
        Event::Control { name, raw: body } => {
            put("name", json!(name));
            put("data", raw(body));
            "control"
        }
        Event::Evicted(e) => {
            put("code", json!(e.effective_code().as_str()));
            put("reason", json!(e.reason));
            put("room_id", json!(e.room_id));
            "evicted"
        }
        Event::Disconnected {
            code,
            reason,
            retry_in_ms,
            attempt,
        } => {
            put("code", json!(code));
            put("reason", json!(reason));
            put("retry_in_ms", json!(retry_in_ms));
            put("attempt", json!(attempt));
            "disconnected"
        }
        Event::Stopped { error } => {
            put("error", error.as_ref().map_or(Value::Null, error_json));
            "stopped"
        }
        Event::Diagnostic(e) => {
            put("error", error_json(e));
            "diagnostic"
        }
    };
    o.insert("type".to_owned(), json!(name));
    Value::Object(o)
}

/// `{kind, status?, code?, message, detail?, retryable}`; `detail` embedded when it is JSON.
fn error_json(e: &SwitchError) -> Value {
    let mut o = Map::new();
    o.insert("kind".into(), json!(e.kind.as_str()));
    if let Some(s) = e.status {
        o.insert("status".into(), json!(s));
    }
    if let Some(c) = &e.code {
        o.insert("code".into(), json!(c));
    }
    o.insert("message".into(), json!(e.message));
    if let Some(d) = &e.detail {
        o.insert("detail".into(), serde_json::from_str(d).unwrap_or_else(|_| json!(d)));
    }
    o.insert("retryable".into(), json!(e.retryable));
    Value::Object(o)
}

fn gap_json(g: &Gap) -> Value {
    let mut o = Map::new();
    o.insert("from_sequence".into(), json!(g.from_sequence));
    o.insert("resumed_at".into(), json!(g.resumed_at));
    if let Some(p) = &g.resumed_position {
        o.insert("resumed_position".into(), raw(p));
    }
    if let Some(r) = &g.rooms {
        o.insert("rooms".into(), json!(r));
    }
    if let Some(a) = g.all_rooms {
        o.insert("all_rooms".into(), json!(a));
    }
    o.insert("reason".into(), json!(g.reason));
    Value::Object(o)
}

fn wire_name(w: Wire) -> &'static str {
    match w {
        Wire::WebSocket => "websocket",
        Wire::Sse => "sse",
    }
}

fn generation(g: &ConnGeneration) -> Value {
    match g {
        ConnGeneration::Number(n) => json!(n),
        ConnGeneration::Text(s) => json!(s),
    }
}

/// Raw JSON embedded as a value (raw text that does not parse, which the engine never hands
/// out, as a string).
fn raw(r: &RawValue) -> Value {
    serde_json::from_str(r.get()).unwrap_or_else(|_| json!(r.get()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::frame::{decode, Frame};
    use agentwire_core::ErrorKind;

    #[test]
    fn events_as_json() {
        let text = r#"{"event":"message","data":{"type":"message","room_id":"r","bridge_id":null,"channel_type":"channel_public","payload":{"body":"hi","sender":"@u:l"},"sequence":7},"id":7}"#;
        let Ok(Frame::Event(event)) = decode(text) else {
            panic!()
        };
        let gap = Gap {
            from_sequence: 1,
            resumed_at: 6,
            resumed_position: None,
            rooms: None,
            all_rooms: Some(true),
            reason: "restart".into(),
        };
        let v = event_json(&Event::Event { event, gap: Some(gap) });
        assert_eq!(
            v,
            json!({"type": "event", "kind": "message", "sequence": 7, "room_id": "r",
                "channel_type": "channel_public", "payload": {"body": "hi", "sender": "@u:l"},
                "gap": {"from_sequence": 1, "resumed_at": 6, "all_rooms": true, "reason": "restart"}})
        );
        let e = SwitchError::http(409, r#"{"detail":{"message":"m","code":"taken_over"}}"#);
        let v = event_json(&Event::Stopped { error: Some(e) });
        assert_eq!(v["error"]["code"], "taken_over");
        assert_eq!(v["error"]["detail"]["message"], "m");
        assert_eq!(event_json(&Event::Stopped { error: None }), json!({"type": "stopped"}));
        let d = event_json(&Event::Diagnostic(SwitchError::local(ErrorKind::Decode, "bad")));
        assert_eq!(
            (d["type"].as_str(), d["error"]["kind"].as_str()),
            (Some("diagnostic"), Some("decode"))
        );
        let gone = Event::Disconnected {
            code: Some(1006),
            reason: "gone".into(),
            retry_in_ms: 500,
            attempt: 1,
        };
        assert_eq!(event_json(&gone)["retry_in_ms"], 500);
    }
}
