//! [`Event::to_json`]: one JSON object per event, the shape the CLI prints and bindings hand to
//! JavaScript hosts: `type` is `connected`, `event` (a domain event, with `kind` and an optional
//! `gap`), `subscription_changed`, `room_released`, `control`, `evicted`, `disconnected`,
//! `stopped` or `diagnostic`. Field names are the protocol's (snake_case); payloads are embedded
//! as JSON; absent fields are left out.

use super::Event;
use crate::error::SwitchError;
use crate::frame::{ConnGeneration, Gap};
use agentwire_core::json::write::{push_u64, Obj};
use agentwire_core::json::{is_null, LazyJson};
use serde_json::value::RawValue;
use serde_json::{json, Map, Value};

/// Every `type` [`Event::to_json`] can give, for bindings to check their own types against.
pub const EVENT_TYPES: [&str; 9] = [
    "connected",
    "event",
    "subscription_changed",
    "room_released",
    "control",
    "evicted",
    "disconnected",
    "stopped",
    "diagnostic",
];

impl Event {
    /// The event as one JSON object.
    pub fn to_json(&self) -> Value {
        event_json(self)
    }

    /// The same object as [`Event::to_json`], written straight to text: payloads and other raw
    /// JSON are copied verbatim, never parsed. What bindings hand to JavaScript per event.
    pub fn to_json_string(&self) -> String {
        event_text(self, false).0
    }

    /// [`Event::to_json_string`] split for hosts that parse payloads lazily: the object without
    /// the domain event's `payload` (or the control frame's `data`), and that raw JSON apart.
    /// Setting the field to the text parsed gives [`Event::to_json`].
    pub fn to_json_lazy(&self) -> LazyJson<'_> {
        let (envelope, payload) = event_text(self, true);
        LazyJson { envelope, payload }
    }
}

impl Gap {
    /// The `gap` object of an `event` in [`Event::to_json`].
    pub fn to_json(&self) -> Value {
        gap_json(self)
    }
}

impl SwitchError {
    /// `{kind, status?, code?, message, detail?, retryable}`; `detail` embedded when it is JSON.
    pub fn to_json(&self) -> Value {
        error_json(self)
    }

    /// The same object as [`SwitchError::to_json`], written straight to text (`detail` copied
    /// verbatim when it is JSON): what bindings hand to their hosts.
    pub fn to_json_string(&self) -> String {
        let mut out = String::with_capacity(96 + self.message.len());
        error_text(&mut out, self);
        out
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
            put("wire", json!(wire.as_str()));
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

/// [`error_json`] as text. `detail` is embedded when serde_json would read it (the strict reader
/// refuses what serde_json refuses: a lone surrogate, a number beyond `f64`, more than the 127
/// nested arrays and objects its recursion limit lets through), a string otherwise.
fn error_text(out: &mut String, e: &SwitchError) {
    let mut o = Obj::begin(out);
    o.str("kind", e.kind.as_str());
    if let Some(s) = e.status {
        o.u64("status", u64::from(s));
    }
    o.opt_str("code", e.code.as_deref());
    o.str("message", &e.message);
    if let Some(d) = &e.detail {
        match agentwire_core::json::read::parse(d, agentwire_core::json::SERDE_DEPTH) {
            Ok(_) => {
                o.key("detail");
                o.out.push_str(d);
            }
            Err(_) => o.str("detail", d),
        }
    }
    o.bool("retryable", e.retryable);
    o.end();
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

/// The event as JSON text, key for key what [`event_json`] builds (`type` first).
/// The event's text; with `lazy`, without its payload, which is returned apart.
fn event_text(event: &Event, lazy: bool) -> (String, Option<(&'static str, &str)>) {
    let mut payload = None;
    let (name, extra) = match event {
        Event::Connected { .. } => ("connected", 512),
        Event::Event { event, .. } if lazy => ("event", 128 + event.room_id.len()),
        Event::Event { event, .. } => ("event", 128 + event.room_id.len() + event.payload.get().len()),
        Event::SubscriptionChanged(_) => ("subscription_changed", 128),
        Event::RoomReleased(_) => ("room_released", 128),
        Event::Control { .. } if lazy => ("control", 64),
        Event::Control { raw, .. } => ("control", 64 + raw.get().len()),
        Event::Evicted(_) => ("evicted", 128),
        Event::Disconnected { .. } => ("disconnected", 128),
        Event::Stopped { .. } => ("stopped", 256),
        Event::Diagnostic(_) => ("diagnostic", 256),
    };
    let mut out = String::with_capacity(extra);
    let mut o = Obj::begin(&mut out);
    o.str("type", name);
    match event {
        Event::Connected { state, wire, resumed } => {
            o.str("wire", wire.as_str());
            o.bool("resumed", *resumed);
            o.key("state");
            let mut s = Obj::begin(o.out);
            s.str("connection_id", &state.connection_id);
            s.str("agent_id", &state.agent_id);
            s.key("generation");
            match &state.generation {
                Some(g) => g.push_json(s.out),
                None => s.out.push_str("null"),
            }
            s.str("scope", &state.scope);
            s.str("filter", &state.filter);
            s.bool("spawn_capable", state.spawn_capable);
            s.strings("rooms", &state.rooms);
            s.u64("cursor", state.cursor);
            s.key("protocol");
            match state.protocol {
                Some(p) => push_u64(s.out, p),
                None => s.out.push_str("null"),
            }
            s.key("heartbeat_interval_seconds");
            match state.heartbeat_interval_seconds {
                // serde_json's own float text (`2.0`, not `2`), `null` when not finite.
                Some(f) => s
                    .out
                    .push_str(&serde_json::to_string(&f).unwrap_or_else(|_| "null".into())),
                None => s.out.push_str("null"),
            }
            for (k, v) in [("server", &state.server), ("client", &state.client)] {
                s.key(k);
                s.out.push_str(v.as_deref().map_or("null", RawValue::get));
            }
            s.end();
        }
        Event::Event { event, gap } => {
            o.str("kind", event.kind.as_str());
            o.u64("sequence", event.sequence);
            o.str("room_id", &event.room_id);
            o.opt_str("bridge_id", event.bridge_id.as_deref());
            o.opt_str("channel_type", event.channel_type.as_deref());
            match lazy {
                true if !is_null(event.payload.get()) => payload = Some(("payload", event.payload.get())),
                true => {}
                false => o.raw("payload", event.payload.get()),
            }
            if let Some(g) = gap {
                o.key("gap");
                let mut n = Obj::begin(o.out);
                n.u64("from_sequence", g.from_sequence);
                n.u64("resumed_at", g.resumed_at);
                if let Some(p) = &g.resumed_position {
                    n.key("resumed_position");
                    n.out.push_str(p.get());
                }
                if let Some(r) = &g.rooms {
                    n.strings("rooms", r);
                }
                if let Some(a) = g.all_rooms {
                    n.bool("all_rooms", a);
                }
                n.str("reason", &g.reason);
                n.end();
            }
        }
        Event::SubscriptionChanged(s) => {
            o.strings("rooms", &s.rooms);
            o.str("reason", &s.reason);
        }
        Event::RoomReleased(r) => {
            o.str("room_id", &r.room_id);
            o.opt_str("session_id", r.session_id.as_deref());
        }
        Event::Control { name, raw } => {
            o.str("name", name);
            match lazy {
                true if !is_null(raw.get()) => payload = Some(("data", raw.get())),
                true => {}
                false => o.raw("data", raw.get()),
            }
        }
        Event::Evicted(e) => {
            o.str("code", e.effective_code().as_str());
            o.str("reason", &e.reason);
            o.opt_str("room_id", e.room_id.as_deref());
        }
        Event::Disconnected {
            code,
            reason,
            retry_in_ms,
            attempt,
        } => {
            if let Some(c) = code {
                o.u64("code", u64::from(*c));
            }
            o.str("reason", reason);
            o.u64("retry_in_ms", *retry_in_ms);
            o.u64("attempt", u64::from(*attempt));
        }
        Event::Stopped { error } => {
            if let Some(e) = error {
                o.key("error");
                error_text(o.out, e);
            }
        }
        Event::Diagnostic(e) => {
            o.key("error");
            error_text(o.out, e);
        }
    }
    o.end();
    (out, payload)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::connection::Wire;

    #[test]
    fn event_types_lists_every_variant() {
        let mut seen: Vec<String> = every_variant()
            .iter()
            .map(|v| v.to_json()["type"].as_str().unwrap_or_default().to_string())
            .collect();
        seen.sort();
        seen.dedup();
        let mut listed: Vec<String> = EVENT_TYPES.iter().map(|t| t.to_string()).collect();
        listed.sort();
        assert_eq!(seen, listed);
    }
    use crate::frame::{decode, ConnectionState, DomainEvent, Evicted, Frame};
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

    fn raw(text: &str) -> Box<RawValue> {
        RawValue::from_string(text.to_owned()).unwrap()
    }

    fn state(generation: Option<ConnGeneration>, heartbeat: Option<f64>, raw_parts: bool) -> ConnectionState {
        ConnectionState {
            connection_id: "0f8fad5b-d9cb-469f-a165-70867728950e".into(),
            agent_id: "agent \"1\"".into(),
            generation,
            scope: "single".into(),
            filter: "all".into(),
            spawn_capable: true,
            rooms: vec!["r1".into(), "r\u{7}2".into()],
            cursor: u64::MAX,
            protocol: raw_parts.then_some(3),
            heartbeat_interval_seconds: heartbeat,
            server: raw_parts
                .then(|| raw(r#"{"version":"1.2","contracts":{"agent-protocol":{"speaks":2,"accepts":1}}}"#)),
            client: raw_parts.then(|| raw("null")),
        }
    }

    fn domain(payload: &str, optional: bool) -> DomainEvent {
        DomainEvent {
            kind: crate::frame::EventKind::Other("x\ty".into()),
            room_id: "room\\é\u{1f600}".into(),
            bridge_id: optional.then(|| "b".into()),
            channel_type: optional.then(|| "channel_public".into()),
            sequence: 9_007_199_254_740_993,
            payload: raw(payload),
        }
    }

    fn every_variant() -> Vec<Event> {
        use crate::frame::{EvictionCode, RoomReleased, SubscriptionChanged};
        let full_gap = Gap {
            from_sequence: 3,
            resumed_at: 10,
            resumed_position: Some(raw(r#"{"t":1.5e3,"n":null}"#)),
            rooms: Some(vec!["a".into(), "\u{0}b".into()]),
            all_rooms: Some(false),
            reason: "re\r\nstart".into(),
        };
        let null_position = Gap {
            resumed_position: Some(raw("null")),
            rooms: Some(Vec::new()),
            all_rooms: None,
            ..full_gap.clone()
        };
        let detailed = SwitchError::http(409, r#"{"detail":{"message":"m","code":"taken_over"},"x":[1,2.5]}"#);
        let plain = SwitchError::http(502, "<html>bad\u{1}gateway</html>");
        let mut text_detail = SwitchError::local(ErrorKind::Protocol, "d").with_code("c");
        text_detail.detail = Some("not json {".into());
        // What serde_json refuses to read (and so `to_json` gives as a string), and `null`.
        let with_detail = |d: &str| {
            let mut e = SwitchError::local(ErrorKind::Remote, "r").with_status(500);
            e.detail = Some(d.into());
            Event::Diagnostic(e)
        };
        vec![
            Event::Connected {
                state: state(Some(ConnGeneration::Number(7)), Some(2.0), true),
                wire: Wire::WebSocket,
                resumed: false,
            },
            Event::Connected {
                state: state(Some(ConnGeneration::Text("g-7".into())), Some(f64::NAN), false),
                wire: Wire::Sse,
                resumed: true,
            },
            Event::Connected {
                state: state(None, Some(0.25), false),
                wire: Wire::Sse,
                resumed: true,
            },
            Event::Connected {
                state: state(None, None, false),
                wire: Wire::WebSocket,
                resumed: true,
            },
            Event::Event {
                event: domain(r#"{"body":"hi \"there\"","n":[1,-2,3.25,1e2],"o":{}}"#, true),
                gap: Some(full_gap),
            },
            Event::Event {
                event: domain("null", false),
                gap: Some(null_position),
            },
            Event::Event {
                event: domain(r#""just a string""#, false),
                gap: None,
            },
            Event::SubscriptionChanged(SubscriptionChanged {
                rooms: vec!["r".into()],
                reason: "subscribe".into(),
            }),
            Event::SubscriptionChanged(SubscriptionChanged {
                rooms: Vec::new(),
                reason: String::new(),
            }),
            Event::RoomReleased(RoomReleased {
                room_id: "r".into(),
                session_id: Some("s".into()),
            }),
            Event::RoomReleased(RoomReleased {
                room_id: "r".into(),
                session_id: None,
            }),
            Event::Control {
                name: "future_frame".into(),
                raw: raw(r#"{"a":[true,false,null]}"#),
            },
            Event::Control {
                name: "nothing".into(),
                raw: raw("null"),
            },
            Event::Evicted(Evicted {
                code: Some(EvictionCode::Other("odd\u{1f}".into())),
                reason: "why".into(),
                room_id: Some("r".into()),
            }),
            Event::Evicted(Evicted {
                code: None,
                reason: "another stream attached to this connection".into(),
                room_id: None,
            }),
            Event::Disconnected {
                code: Some(1006),
                reason: "gone".into(),
                retry_in_ms: 500,
                attempt: 1,
            },
            Event::Disconnected {
                code: None,
                reason: String::new(),
                retry_in_ms: 0,
                attempt: 0,
            },
            Event::Stopped { error: None },
            Event::Stopped { error: Some(detailed) },
            Event::Stopped { error: Some(plain) },
            Event::Diagnostic(text_detail),
            with_detail(r#""\ud800""#),
            with_detail(r#"{"big":1e400}"#),
            with_detail("null"),
            with_detail(r#" [1, "two", {"3": 4.5}] "#),
            Event::Diagnostic(SwitchError::local(ErrorKind::Decode, "bad\u{7f}\u{2028}")),
        ]
    }

    #[test]
    fn text_is_the_same_object() {
        for e in every_variant() {
            let text = e.to_json_string();
            let parsed: Value = serde_json::from_str(&text).unwrap_or_else(|err| panic!("{text}: {err}"));
            assert_eq!(parsed, e.to_json(), "{text}");
            assert!(text.starts_with(r#"{"type":""#), "{text}");
        }
    }

    /// [`Gap::to_json`] (what the component hands its host apart) is the event's `gap`.
    #[test]
    fn a_gap_alone_is_the_events_gap() {
        let mut gaps = 0;
        for e in every_variant() {
            if let Event::Event { gap: Some(g), .. } = &e {
                gaps += 1;
                assert_eq!(g.to_json(), e.to_json()["gap"]);
            }
        }
        assert_eq!(gaps, 2);
    }

    #[test]
    fn error_text_is_the_same_object() {
        for e in every_variant() {
            let (Event::Diagnostic(e) | Event::Stopped { error: Some(e) }) = e else {
                continue;
            };
            let text = e.to_json_string();
            let parsed: Value = serde_json::from_str(&text).unwrap_or_else(|err| panic!("{text}: {err}"));
            assert_eq!(parsed, e.to_json(), "{text}");
        }
    }

    #[test]
    fn detail_is_embedded_exactly_when_serde_json_reads_it() {
        // Around serde_json's recursion limit (the whole text nests deeper than the detail, so
        // it is not read back here).
        for depth in [1, 127, 128, 129, 600] {
            let d = format!("{}{}", "[".repeat(depth), "]".repeat(depth));
            let mut e = SwitchError::local(ErrorKind::Remote, "r");
            e.detail = Some(d.clone());
            let embedded = e.to_json_string().contains(&format!(r#""detail":{d}"#));
            assert_eq!(embedded, serde_json::from_str::<Value>(&d).is_ok(), "depth {depth}");
            assert_eq!(embedded, e.to_json()["detail"].is_array(), "depth {depth}");
        }
    }

    #[test]
    fn lazy_is_the_same_object_with_the_payload_apart() {
        let mut split = 0;
        for e in every_variant() {
            let lazy = e.to_json_lazy();
            let mut parsed: Value = serde_json::from_str(&lazy.envelope).unwrap_or_else(|err| panic!("{err}"));
            if let Some((field, raw)) = lazy.payload {
                split += 1;
                assert!(parsed.get(field).is_none(), "{field} is in {}", lazy.envelope);
                let v: Value = serde_json::from_str(raw).unwrap_or_else(|err| panic!("{raw}: {err}"));
                parsed[field] = v;
            }
            assert_eq!(parsed, e.to_json(), "{}", lazy.envelope);
        }
        assert!(split >= 2, "the domain event and the control frame carry payloads");
    }

    /// A room id, a payload or a control frame's data longer than the text's first guess at its
    /// size is written whole, as text and lazily, in a string sized from its parts: at most
    /// twice its length (one doubling past the guess), never a multiple of a part (a 1 MiB
    /// payload is not 100 MiB of memory) nor the payload's size when it is left apart.
    #[test]
    fn long_fields_are_written_whole() {
        let sized = |t: &String| assert!(t.capacity() <= 2 * t.len(), "{} for {}", t.capacity(), t.len());
        let mut event = domain(&format!(r#"{{"body":"{}"}}"#, "b".repeat(1000)), true);
        event.room_id = "r".repeat(300);
        for e in [
            Event::Event { event, gap: None },
            Event::Control {
                name: "future_frame".into(),
                raw: raw(&format!("[{}1]", "1,".repeat(100))),
            },
        ] {
            let text = e.to_json_string();
            let parsed: Value = serde_json::from_str(&text).unwrap_or_else(|err| panic!("{text}: {err}"));
            assert_eq!(parsed, e.to_json(), "{text}");
            sized(&text);
            let lazy = e.to_json_lazy();
            sized(&lazy.envelope);
            let mut parsed: Value = serde_json::from_str(&lazy.envelope).unwrap_or_else(|err| panic!("{err}"));
            let (field, raw) = lazy.payload.expect("a payload apart");
            parsed[field] = serde_json::from_str(raw).unwrap_or_else(|err| panic!("{raw}: {err}"));
            assert_eq!(parsed, e.to_json(), "{}", lazy.envelope);
        }
    }

    #[test]
    fn strings_escape_as_serde_json_does() {
        let all: String = (0u8..0x80)
            .map(char::from)
            .chain("é\u{2028}\u{1f600}".chars())
            .collect();
        let mut out = String::new();
        agentwire_core::json::push_string(&mut out, &all);
        assert_eq!(out, serde_json::to_string(&all).unwrap());
    }
}
