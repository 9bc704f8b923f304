//! [`Event::to_json`]: one JSON object per event, the shape the CLI prints and bindings hand to
//! JavaScript hosts. Payloads are embedded as JSON, not as strings. [`Event::to_json_string`]
//! writes the same object as text directly, copying the payloads verbatim (no tree is built).

use super::Event;
use crate::MoltZapError;
use agentwire_core::json::value::RAW_VALUE_TOKEN;
use agentwire_core::json::write::Obj;
use agentwire_core::json::{is_null, plain_run, LazyJson};
use serde_json::value::RawValue;
use serde_json::{json, Map, Value};

/// A payload the session kept as raw JSON text, embedded (text that is not JSON stays a string).
fn payload(data: &str) -> Value {
    serde_json::from_str(data).unwrap_or_else(|_| Value::String(data.to_string()))
}

fn error(e: &crate::MoltZapError) -> Value {
    serde_json::to_value(e).unwrap_or(Value::Null)
}

/// A payload as [`Event::to_json_string`] writes it: verbatim when it is JSON, else as a string.
enum Embed<'a> {
    Json(&'a RawValue),
    Text(&'a str),
}

/// [`payload`] without building the value: `None` where `payload` gives `null` (left out). The
/// syntax check is `RawValue`'s; the rare text that passes it but that a `Value` parse may refuse
/// (see [`may_refuse`]) is decided by [`value_is_null`], which reads it as that parse does, so
/// the result always matches [`payload`].
fn embed(data: &str) -> Option<Embed<'_>> {
    let Ok(raw) = serde_json::from_str::<&RawValue>(data) else {
        return Some(Embed::Text(data));
    };
    if raw.get() == "null" {
        return None;
    }
    if may_refuse(raw.get().as_bytes()) {
        return match value_is_null(data) {
            Ok(true) => None,
            Ok(false) => Some(Embed::Json(raw)),
            Err(_) => Some(Embed::Text(data)),
        };
    }
    Some(Embed::Json(raw))
}

/// What a `serde_json::Value` parse of a text gives, without building it: `Ok(true)` for `null`,
/// `Ok(false)` for another value, `Err` where the parse refuses the text. It reads the text as
/// that parse does (serde_json's `deserialize_any`, its recursion limit, its number and string
/// reading, and a map whose first key is serde_json's raw-value token read as the JSON text of
/// its string), without the `Value` visitor's typed read of that token's string: serde_json's
/// type error keeps Rust's float formatting in the wasm (docs/size.md).
fn value_is_null(data: &str) -> Result<bool, serde_json::Error> {
    serde_json::from_str::<Check>(data).map(|c| c.0)
}

/// A value read as a `serde_json::Value` parse reads it; true for `null`.
struct Check(bool);

impl<'de> serde::Deserialize<'de> for Check {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(CheckVisitor)
    }
}

struct CheckVisitor;

macro_rules! not_null {
    ($($name:ident: $t:ty),*) => {
        $(fn $name<E: serde::de::Error>(self, _: $t) -> Result<Check, E> { Ok(Check(false)) })*
    };
}

impl<'de> serde::de::Visitor<'de> for CheckVisitor {
    type Value = Check;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("any valid JSON value")
    }

    not_null!(visit_bool: bool, visit_i64: i64, visit_u64: u64, visit_f64: f64, visit_str: &str, visit_string: String);

    fn visit_unit<E: serde::de::Error>(self) -> Result<Check, E> {
        Ok(Check(true))
    }

    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Check, A::Error> {
        while seq.next_element::<Check>()?.is_some() {}
        Ok(Check(false))
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Check, A::Error> {
        let Some(Key(first)) = map.next_key::<Key>()? else {
            return Ok(Check(false));
        };
        if first {
            // The value a `Value` parse gives is that of the JSON text in the string.
            let Text(text) = map.next_value::<Text>()?;
            return value_is_null(&text).map(Check).map_err(serde::de::Error::custom);
        }
        map.next_value::<Check>()?;
        while map.next_entry::<Key, Check>()?.is_some() {}
        Ok(Check(false))
    }
}

/// A map key, read (and so checked) as a string; true when it is the raw-value token.
struct Key(bool);

impl<'de> serde::Deserialize<'de> for Key {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(Text::visitor())
            .map(|Text(t)| Key(t == RAW_VALUE_TOKEN))
    }
}

/// A string's text; any other value refused (with an error of its own, not serde's type error).
struct Text(String);

impl Text {
    fn visitor() -> TextVisitor {
        TextVisitor
    }
}

impl<'de> serde::Deserialize<'de> for Text {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(TextVisitor)
    }
}

struct TextVisitor;

macro_rules! not_text {
    ($($name:ident: $t:ty),*) => {
        $(fn $name<E: serde::de::Error>(self, _: $t) -> Result<Text, E> { Err(E::custom("not a string")) })*
    };
}

impl<'de> serde::de::Visitor<'de> for TextVisitor {
    type Value = Text;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a string")
    }

    fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Text, E> {
        Ok(Text(v.to_owned()))
    }

    not_text!(visit_bool: bool, visit_i64: i64, visit_u64: u64, visit_f64: f64);

    fn visit_unit<E: serde::de::Error>(self) -> Result<Text, E> {
        Err(E::custom("not a string"))
    }

    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, _: A) -> Result<Text, A::Error> {
        Err(serde::de::Error::custom("not a string"))
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(self, _: A) -> Result<Text, A::Error> {
        Err(serde::de::Error::custom("not a string"))
    }
}

/// True when syntactically valid JSON text might still be refused by a `Value` parse, which,
/// unlike `RawValue`, refuses lone surrogate escapes, numbers beyond `f64` and nesting deeper
/// than 128. Conservative: it flags every `\uD…` escape, every exponent, runs of more than 300
/// digits and nesting deeper than 100.
fn may_refuse(raw: &[u8]) -> bool {
    let (mut depth, mut digits, mut i) = (0usize, 0usize, 0usize);
    while let Some(&b) = raw.get(i) {
        i += 1;
        match b {
            b'"' => {
                // Valid JSON: the string ends at the next quote that is not escaped.
                loop {
                    i = plain_run(raw, i);
                    let Some(&c) = raw.get(i) else { break };
                    i += 1;
                    if c == b'"' {
                        break;
                    }
                    if c == b'\\' {
                        if raw.get(i) == Some(&b'u') && matches!(raw.get(i + 1), Some(b'd' | b'D')) {
                            return true;
                        }
                        i += 1;
                    }
                }
            }
            b'[' | b'{' => {
                depth += 1;
                if depth > 100 {
                    return true;
                }
            }
            b']' | b'}' => depth = depth.saturating_sub(1),
            b'0'..=b'9' => {
                digits += 1;
                if digits > 300 {
                    return true;
                }
                continue;
            }
            b'.' => continue,
            b'e' | b'E' if digits > 0 => return true,
            _ => {}
        }
        digits = 0;
    }
    false
}

/// The object [`Event::to_json_string`] writes; fields left out when `None`.
#[derive(Default)]
struct Out<'a> {
    kind: &'static str,
    id: Option<&'a str>,
    generation: Option<&'static str>,
    hello: Option<Embed<'a>>,
    result: Option<Embed<'a>>,
    error: Option<&'a MoltZapError>,
    conversation_id: Option<&'a str>,
    message_id: Option<&'a str>,
    sender_id: Option<&'a str>,
    agent_id: Option<&'a str>,
    status: Option<&'a str>,
    name: Option<&'a str>,
    data: Option<Embed<'a>>,
    count: Option<u32>,
    code: Option<u16>,
    reason: Option<&'a str>,
}

impl Out<'_> {
    /// The object as JSON text, its fields in the order above (camelCase), `None` left out.
    fn write(&self) -> String {
        let mut out = String::with_capacity(160);
        let mut o = Obj::begin(&mut out);
        o.str("type", self.kind);
        o.opt_str("id", self.id);
        o.opt_str("generation", self.generation);
        embed_field(&mut o, "hello", &self.hello);
        embed_field(&mut o, "result", &self.result);
        // An error is strings, numbers and booleans: serializing it cannot fail.
        if let Some(e) = self.error {
            let e = serde_json::to_string(e);
            debug_assert!(e.is_ok(), "an error serializes: {e:?}");
            o.key("error");
            o.out.push_str(e.as_deref().unwrap_or("null"));
        }
        o.opt_str("conversationId", self.conversation_id);
        o.opt_str("messageId", self.message_id);
        o.opt_str("senderId", self.sender_id);
        o.opt_str("agentId", self.agent_id);
        o.opt_str("status", self.status);
        o.opt_str("name", self.name);
        embed_field(&mut o, "data", &self.data);
        if let Some(n) = self.count {
            o.u64("count", n.into());
        }
        if let Some(n) = self.code {
            o.u64("code", n.into());
        }
        o.opt_str("reason", self.reason);
        o.end();
        out
    }
}

fn embed_field(o: &mut Obj<'_>, k: &str, v: &Option<Embed<'_>>) {
    match v {
        Some(Embed::Json(raw)) => {
            o.key(k);
            o.out.push_str(raw.get());
        }
        Some(Embed::Text(t)) => o.str(k, t),
        None => {}
    }
}

/// Every `type` [`Event::to_json`] can give, for bindings to check their own types against.
pub const EVENT_TYPES: [&str; 14] = [
    "connected",
    "connectFailed",
    "response",
    "failed",
    "messageReceived",
    "conversationCreated",
    "conversationUpdated",
    "conversationArchived",
    "conversationUnarchived",
    "presenceChanged",
    "other",
    "diagnostic",
    "missedPings",
    "disconnected",
];

impl Event {
    /// [`Event::to_json`] as JSON text, written directly: payloads are copied verbatim after a
    /// syntax check instead of being parsed into a tree and written again. Parsing the text
    /// gives exactly `to_json()` (key order aside).
    pub fn to_json_string(&self) -> String {
        self.out(false).0.write()
    }

    /// [`Event::to_json_string`] split for hosts that parse payloads lazily: the object without
    /// its payload (`hello`, `result` or `data`), and the payload's raw text as received, not
    /// checked here. Setting the field to the text parsed as JSON, or to the text itself when it
    /// is not JSON, gives [`Event::to_json`]; except that JSON a `Value` refuses (lone surrogate
    /// escapes, numbers beyond `f64`, nesting past 128) is JSON to the host, not a string.
    pub fn to_json_lazy(&self) -> LazyJson<'_> {
        let (out, payload) = self.out(true);
        LazyJson {
            envelope: out.write(),
            payload,
        }
    }

    /// The object [`Event::to_json_string`] writes; with `lazy`, without the payload, which is
    /// returned apart (unless it is `null`: left out either way).
    fn out<'a>(&'a self, lazy: bool) -> (Out<'a>, Option<(&'static str, &'a str)>) {
        let mut payload = None;
        let mut put = |field: &'static str, raw: &'a str| -> Option<Embed<'a>> {
            if !lazy {
                return embed(raw);
            }
            if !is_null(raw) {
                payload = Some((field, raw));
            }
            None
        };
        let out = match self {
            Event::Connected { id, generation, hello } => Out {
                kind: "connected",
                id: Some(id),
                generation: Some(generation.as_str()),
                hello: put("hello", &hello.raw),
                ..Out::default()
            },
            Event::ConnectFailed { id, error } => Out {
                kind: "connectFailed",
                id: Some(id),
                error: Some(error),
                ..Out::default()
            },
            Event::Response { id, result } => Out {
                kind: "response",
                id: Some(id),
                result: put("result", result),
                ..Out::default()
            },
            Event::Failed { id, error } => Out {
                kind: "failed",
                id: Some(id),
                error: Some(error),
                ..Out::default()
            },
            Event::MessageReceived {
                data,
                conversation_id,
                message_id,
                sender_id,
            } => Out {
                kind: "messageReceived",
                conversation_id: conversation_id.as_deref(),
                message_id: message_id.as_deref(),
                sender_id: sender_id.as_deref(),
                data: put("data", data),
                ..Out::default()
            },
            Event::ConversationCreated { data, conversation_id }
            | Event::ConversationUpdated { data, conversation_id }
            | Event::ConversationArchived { data, conversation_id }
            | Event::ConversationUnarchived { data, conversation_id } => Out {
                kind: match self {
                    Event::ConversationCreated { .. } => "conversationCreated",
                    Event::ConversationUpdated { .. } => "conversationUpdated",
                    Event::ConversationArchived { .. } => "conversationArchived",
                    _ => "conversationUnarchived",
                },
                conversation_id: conversation_id.as_deref(),
                data: put("data", data),
                ..Out::default()
            },
            Event::PresenceChanged { data, agent_id, status } => Out {
                kind: "presenceChanged",
                agent_id: agent_id.as_deref(),
                status: status.as_deref(),
                data: put("data", data),
                ..Out::default()
            },
            Event::Other { name, data } => Out {
                kind: "other",
                name: Some(name),
                data: data.as_deref().and_then(|d| put("data", d)),
                ..Out::default()
            },
            Event::Diagnostic(error) => Out {
                kind: "diagnostic",
                error: Some(error),
                ..Out::default()
            },
            Event::MissedPings { count } => Out {
                kind: "missedPings",
                count: Some(*count),
                ..Out::default()
            },
            Event::Disconnected { code, reason } => Out {
                kind: "disconnected",
                code: Some(*code),
                reason: Some(reason),
                ..Out::default()
            },
        };
        (out, payload)
    }

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

    #[test]
    fn event_types_lists_every_variant() {
        let e = MoltZapError::local(ErrorKind::Decode, "bad");
        let mut seen: Vec<String> = variants("{}", "a1", Some("x".into()), &e)
            .iter()
            .map(|v| v.to_json()["type"].as_str().unwrap_or_default().to_string())
            .collect();
        seen.sort();
        seen.dedup();
        let mut listed: Vec<String> = EVENT_TYPES.iter().map(|t| t.to_string()).collect();
        listed.sort();
        assert_eq!(seen, listed);
    }
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

    use crate::frame::{Generation, Id};
    use crate::session::HelloOk;
    use proptest::prelude::*;

    fn same(e: &Event) {
        let text = e.to_json_string();
        let parsed: Value = serde_json::from_str(&text).unwrap_or_else(|err| panic!("{err}: {text}"));
        assert_eq!(parsed, e.to_json(), "{e:?} wrote {text}");
    }

    /// Every variant, with `data` for the payloads.
    fn variants(data: &str, id: &str, text: Option<String>, error: &MoltZapError) -> Vec<Event> {
        let hello = HelloOk {
            raw: data.to_string(),
            protocol_version: text.clone(),
            agent_id: None,
            heartbeat_interval_ms: None,
        };
        vec![
            Event::Connected {
                id: id.into(),
                generation: Generation::Released,
                hello,
            },
            Event::ConnectFailed {
                id: id.into(),
                error: error.clone(),
            },
            Event::Response {
                id: id.into(),
                result: data.into(),
            },
            Event::Failed {
                id: id.into(),
                error: error.clone(),
            },
            Event::MessageReceived {
                data: data.into(),
                conversation_id: text.clone(),
                message_id: Some(id.into()),
                sender_id: text.clone(),
            },
            Event::ConversationCreated {
                data: data.into(),
                conversation_id: text.clone(),
            },
            Event::ConversationUpdated {
                data: data.into(),
                conversation_id: None,
            },
            Event::ConversationArchived {
                data: data.into(),
                conversation_id: text.clone(),
            },
            Event::ConversationUnarchived {
                data: data.into(),
                conversation_id: text.clone(),
            },
            Event::PresenceChanged {
                data: data.into(),
                agent_id: text.clone(),
                status: Some(id.into()),
            },
            Event::Other {
                name: id.into(),
                data: Some(data.into()),
            },
            Event::Other {
                name: id.into(),
                data: None,
            },
            Event::Diagnostic(error.clone()),
            Event::MissedPings { count: 3 },
            Event::Disconnected {
                code: 1006,
                reason: id.into(),
            },
        ]
    }

    fn remote_error() -> MoltZapError {
        let mut e = MoltZapError::local(ErrorKind::Auth, "refused \"here\"").for_request(Id::Num(7));
        e.error.code = Some(-32000);
        e.name = Some("Unauthorized".into());
        e.tag = Some("Unauthorized".into());
        e.data = Some(r#"{"why":"key"}"#.into());
        e
    }

    #[test]
    fn the_string_is_the_value_for_every_variant_and_edge_payload() {
        let deep = |n: usize| format!("{}{}", "[".repeat(n), "]".repeat(n));
        let payloads = [
            r#"{"message":{"id":"m1","conversationId":"c1","parts":[{"type":"text","text":"hé \n \u00e9"}]}}"#
                .to_string(),
            "{}".into(),
            "[]".into(),
            "null".into(),
            " null ".into(),
            "  {\"a\" : [1, 2.5, -0, true, false, null]}\n".into(),
            "\"just a string\"".into(),
            "42".into(),
            "1.5e3".into(),
            "1e400".into(),
            "-1E-400".into(),
            "9".repeat(400),
            format!("0.{}", "1".repeat(400)),
            r#""\ud800""#.into(),
            r#"{"a":"\uD83D\uDE00"}"#.into(),
            r#"{"a":"\uDE00\uD83D"}"#.into(),
            r#"["\\ud800"]"#.into(),
            r#"{"e":"true","f":[true,false,1e2]}"#.into(),
            deep(64),
            deep(128),
            deep(129),
            deep(300),
            "".into(),
            "not json".into(),
            "{\"a\":1".into(),
            "{} {}".into(),
            "01".into(),
            "[1,]".into(),
            "\"tab\there\"".into(),
            "nul".into(),
        ];
        let errors = [remote_error(), MoltZapError::local(ErrorKind::Closed, "closed")];
        for data in &payloads {
            for error in &errors {
                for e in variants(data, "aw-1", Some("c\"1".into()), error) {
                    same(&e);
                    same_lazy(&e);
                }
                for e in variants(data, "", None, error) {
                    same(&e);
                    same_lazy(&e);
                }
            }
        }
    }

    /// What a host does with [`Event::to_json_lazy`]: the payload parsed, or the text when it
    /// is not JSON (to the parser at hand: here `Value`'s, as `to_json` uses).
    fn same_lazy(e: &Event) {
        let lazy = e.to_json_lazy();
        let mut parsed: Value =
            serde_json::from_str(&lazy.envelope).unwrap_or_else(|err| panic!("{err}: {}", lazy.envelope));
        if let Some((field, raw)) = lazy.payload {
            assert!(parsed.get(field).is_none(), "{field} in {}", lazy.envelope);
            parsed[field] = serde_json::from_str(raw).unwrap_or_else(|_| Value::String(raw.to_string()));
        }
        assert_eq!(parsed, e.to_json(), "{e:?} split as {lazy:?}");
    }

    #[test]
    fn escapes_are_found_at_every_offset_of_a_long_string() {
        for at in 0..40 {
            let pad = "x".repeat(at);
            let tail = "y".repeat(40 - at);
            let risky = format!(r#"{{"t":"{pad}\uD800{tail}","n":1}}"#);
            assert!(may_refuse(risky.as_bytes()), "{risky}");
            for safe in [
                format!(r#"{{"t":"{pad}\\uD800{tail}","n":1}}"#),
                format!(r#"{{"t":"{pad}\"1e999{tail}","n":1}}"#),
                format!(r#"{{"t":"{pad}\u00e9{tail}","e":[true,1.5,false]}}"#),
            ] {
                assert!(!may_refuse(safe.as_bytes()), "{safe}");
            }
            // A quote inside the string does not end it early: the exponent after it is in a string.
            let quoted = format!(r#"["{pad}\"]1e5{tail}"]"#);
            assert!(!may_refuse(quoted.as_bytes()), "{quoted}");
            let number = format!(r#"["{pad}",1e5]"#);
            assert!(may_refuse(number.as_bytes()), "{number}");
        }
    }

    #[test]
    fn may_refuse_flags_only_past_its_limits() {
        // Nesting: 100 deep passes, 101 is flagged; closed siblings do not add up.
        let deep = |n: usize| format!("{}{}", "[".repeat(n), "]".repeat(n));
        assert!(!may_refuse(deep(100).as_bytes()));
        assert!(may_refuse(deep(101).as_bytes()));
        let wide = format!("[{}{{}}]", "[],".repeat(200));
        assert!(!may_refuse(wide.as_bytes()), "{wide}");
        // Digit runs: 300 pass, 301 are flagged.
        assert!(!may_refuse("9".repeat(300).as_bytes()));
        assert!(may_refuse("9".repeat(301).as_bytes()));
    }

    fn json_value() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<i64>().prop_map(Value::from),
            any::<f64>().prop_map(Value::from),
            "\\PC{0,8}".prop_map(Value::String),
        ];
        leaf.prop_recursive(4, 24, 4, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
                prop::collection::btree_map("\\PC{0,5}", inner, 0..4)
                    .prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        })
    }

    fn payload_text() -> impl Strategy<Value = String> {
        prop_oneof![
            json_value().prop_map(|v| v.to_string()),
            json_value().prop_map(|v| serde_json::to_string_pretty(&v).unwrap_or_default()),
            "\\PC{0,16}",
            "[\\[\\]{}\"\\\\ue0-9.,:a-zA-Z+-]{0,24}",
        ]
    }

    proptest! {
        #[test]
        fn the_string_is_the_value(
            data in payload_text(),
            id in "\\PC{0,12}",
            text in proptest::option::of("\\PC{0,12}"),
        ) {
            for error in [remote_error(), MoltZapError::local(ErrorKind::Decode, id.clone())] {
                for e in variants(&data, &id, text.clone(), &error) {
                    let parsed = serde_json::from_str::<Value>(&e.to_json_string());
                    let parsed = parsed.map_err(|e| TestCaseError::fail(e.to_string()))?;
                    prop_assert_eq!(parsed, e.to_json());
                    same_lazy(&e);
                }
            }
        }
    }
}

#[cfg(test)]
#[path = "json_value_tests.rs"]
mod value_tests;
