//! [`ClientEvent::to_json`]: one JSON object per event, the shape bindings hand to JavaScript
//! hosts. `type` is `ready`, `response`, `streamBegin`, `streamData`, `streamEnd`, `authOk`,
//! `pong`, `failed`, `error`, `goodbye` or `closed`; fields are camelCase; bodies are embedded as
//! JSON (a body that is not JSON stays a string); absent fields are left out.

use crate::client::ClientEvent;
use crate::errors::RktError;
use agentwire_core::json::value;
use serde_json::{json, Map, Value};

fn body(b: &Option<String>) -> Value {
    body_value(b.as_deref())
}

/// A body (a reply's, a chunk's, an ERROR's `details`) as a value, by the one rule of every
/// target: no body is `null`; a body that is JSON is its value; any other text (not JSON, or
/// JSON `serde_json` cannot hold: a lone surrogate escape such as `"\ud800"`, a number past
/// `f64` such as `1e400`) is that text as a JSON string. Never an error: the server may already
/// have acted on the command the body answers (a PAY, a MEMORY_SET).
pub fn body_value(body: Option<&str>) -> Value {
    match body {
        None => Value::Null,
        Some(text) => value::parse(text).unwrap_or_else(|_| Value::String(text.to_owned())),
    }
}

/// A JSON argument a binding was given as text (`params`, a memory value, a request's
/// `context`): `None` is none, and any text must be JSON (`""` is not), or an `invalid` error
/// naming `what`. The one rule of every binding. The text becomes a `serde_json::Value` and is
/// written out again from it, not as it was: keys sorted, the last of two equal keys kept,
/// `1e3` as `1000.0`, `-0` as `-0.0`, an integer past `u64` as a float; a lone surrogate escape
/// (`"\ud800"`) is not JSON here (`docs/protocols/rkt.md`, "JSON arguments").
pub fn json_arg(what: &str, text: Option<&str>) -> Result<Option<Value>, RktError> {
    text.map(|t| {
        value::parse(t)
            .map_err(|e| RktError::local(agentwire_core::ErrorKind::Invalid, format!("{what} is not JSON: {e}")))
    })
    .transpose()
}

/// [`json_arg`] of a text no longer than `max` (the session's `max_message_size`, which every
/// message it sends must fit); a longer one is refused with `limit` before it is parsed (a
/// `serde_json::Value` takes up to 20 times its text: a 400 MB argument ran a wasm instance out
/// of memory before the body's own bound could refuse it).
pub fn json_arg_within(what: &str, text: Option<&str>, max: usize) -> Result<Option<Value>, RktError> {
    arg_within(what, text, max)?;
    json_arg(what, text)
}

/// Refuses with `limit` an argument's text longer than `max` (`max_message_size`), before it is
/// read: it could not fit a message.
pub fn arg_within(what: &str, text: Option<&str>, max: usize) -> Result<(), RktError> {
    match text {
        Some(t) if t.len() > max => Err(RktError::local(
            agentwire_core::ErrorKind::Limit,
            format!("{what} of {} bytes exceeds max_message_size {max}", t.len()),
        )),
        _ => Ok(()),
    }
}

/// `{kind, code?, message, retryable, name?, details?, requestId?, retryAfterS?}`; `details`
/// embedded when it is JSON.
pub fn error_json(e: &RktError) -> Value {
    let mut o = Map::new();
    o.insert("kind".into(), json!(e.error.kind.as_str()));
    if let Some(code) = e.error.code {
        o.insert("code".into(), json!(code));
    }
    o.insert("message".into(), json!(e.error.message));
    o.insert("retryable".into(), json!(e.error.retryable));
    if let Some(name) = &e.name {
        o.insert("name".into(), json!(name));
    }
    if e.details.is_some() {
        o.insert("details".into(), body(&e.details));
    }
    if let Some(id) = &e.request_id {
        o.insert("requestId".into(), json!(id));
    }
    if let Some(s) = e.retry_after_s {
        o.insert("retryAfterS".into(), json!(s));
    }
    Value::Object(o)
}

/// What a binding's codec (npm's `rktDecode`) reports of a message it could not decode:
/// `{kind: "decode", message, retryable: false, reason, field}`, `reason` the decode error's
/// name (such as `bad_header_value`) and `field` the part at fault.
pub fn decode_error_json(e: &crate::codec::DecodeError) -> Value {
    json!({
        "kind": agentwire_core::ErrorKind::Decode.as_str(),
        "message": e.to_string(),
        "retryable": false,
        "reason": e.kind.name(),
        "field": e.field(),
    })
}

/// AUTH_OK's body as its derived `Serialize` writes it, built by hand: `serde_json::to_value` of a
/// struct reaches serde_json's `Value` parse (and its type error) where the `raw_value` feature is
/// on (`docs/size.md`, stop 44).
fn auth_json(auth: &crate::AuthOkBody) -> Value {
    let mut o = Map::new();
    o.insert("session_token".into(), json!(auth.session_token));
    o.insert("scopes".into(), json!(auth.scopes));
    if let Some(s) = auth.expires_in {
        o.insert("expires_in".into(), json!(s));
    }
    Value::Object(o)
}

/// Every `type` [`ClientEvent::to_json`] can give, for bindings to check their own types against.
pub const EVENT_TYPES: [&str; 11] = [
    "ready",
    "response",
    "streamBegin",
    "streamData",
    "streamEnd",
    "authOk",
    "pong",
    "failed",
    "error",
    "goodbye",
    "closed",
];

impl ClientEvent {
    /// The event as one JSON object.
    pub fn to_json(&self) -> Value {
        let mut o = Map::new();
        let mut put = |k: &str, v: Value| {
            if !v.is_null() {
                o.insert(k.to_string(), v);
            }
        };
        let name = match self {
            ClientEvent::Ready {
                agreed_version,
                session_timeout,
                server,
            } => {
                put("agreedVersion", json!(agreed_version));
                put("sessionTimeout", json!(session_timeout));
                put("from", json!(server.from));
                put("userAgent", json!(server.user_agent));
                put("capabilities", json!(server.capabilities));
                "ready"
            }
            ClientEvent::Response { id, body: b } => {
                put("id", json!(id));
                put("body", body(b));
                "response"
            }
            ClientEvent::StreamBegin { id, body: b } => {
                put("id", json!(id));
                put("body", body(b));
                "streamBegin"
            }
            ClientEvent::StreamData { id, seq, body: b } => {
                put("id", json!(id));
                put("seq", json!(seq));
                put("body", body(b));
                "streamData"
            }
            ClientEvent::StreamEnd { id, body: b } => {
                put("id", json!(id));
                put("body", body(b));
                "streamEnd"
            }
            ClientEvent::AuthOk { id, auth } => {
                put("id", json!(id));
                put("auth", auth_json(auth));
                "authOk"
            }
            ClientEvent::Pong { id, rtt_ms } => {
                put("id", json!(id));
                put("rttMs", json!(rtt_ms));
                "pong"
            }
            ClientEvent::Failed { id, error } => {
                put("id", json!(id));
                put("error", error_json(error));
                "failed"
            }
            ClientEvent::Error(error) => {
                put("error", error_json(error));
                "error"
            }
            ClientEvent::Goodbye => "goodbye",
            ClientEvent::Closed { code, reason } => {
                put("code", json!(code));
                put("reason", json!(reason));
                "closed"
            }
        };
        o.insert("type".to_string(), json!(name));
        Value::Object(o)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An argument's text over the bound is refused with `limit` before it is read (a
    /// `serde_json::Value` of 400 MB of text ran a wasm instance out of memory); at the bound, and
    /// `None`, it is read as `json_arg` reads it.
    #[test]
    fn an_argument_over_the_bound_is_refused_before_it_is_read() {
        let text = r#"{"a":[1,2]}"#;
        let n = text.len();
        assert_eq!(
            json_arg_within("params", Some(text), n).unwrap(),
            json_arg("params", Some(text)).unwrap()
        );
        assert_eq!(json_arg_within("params", None, 0).unwrap(), None);
        let e = json_arg_within("params", Some(text), n - 1).unwrap_err();
        assert_eq!(e.error.kind, agentwire_core::ErrorKind::Limit);
        assert_eq!(
            e.error.message,
            format!("params of {n} bytes exceeds max_message_size {}", n - 1)
        );
        // Not JSON, and over the bound: the bound is checked first, without reading it.
        let e = json_arg_within("value", Some("{{{{"), 3).unwrap_err();
        assert_eq!(e.error.kind, agentwire_core::ErrorKind::Limit);
        assert_eq!(
            json_arg_within("value", Some("{{{{"), 4).unwrap_err().error.kind,
            agentwire_core::ErrorKind::Invalid
        );
    }

    #[test]
    fn a_json_argument_is_none_or_json() {
        assert_eq!(json_arg("params", None).unwrap(), None);
        assert_eq!(json_arg("params", Some("null")).unwrap(), Some(Value::Null));
        assert_eq!(json_arg("params", Some(" {\"a\":1} ")).unwrap(), Some(json!({"a": 1})));
        for text in ["", " ", "{", "x"] {
            let e = json_arg("params", Some(text)).unwrap_err();
            assert_eq!(e.error.kind, ErrorKind::Invalid, "{text:?}");
            assert!(e.error.message.starts_with("params is not JSON"), "{}", e.error.message);
        }
    }

    /// What `docs/protocols/rkt.md` ("JSON arguments") says of the text a binding gives: it is
    /// written out again from the value, not as it was.
    #[test]
    fn a_json_argument_is_re_serialised() {
        let text = r#"{"z":1e3,"a":-0,"big":18446744073709551616,"k":1,"k":2}"#;
        let value = json_arg("params", Some(text)).unwrap().unwrap();
        assert_eq!(
            serde_json::to_string(&value).unwrap(),
            r#"{"a":-0.0,"big":1.8446744073709552e+19,"k":2,"z":1000.0}"#
        );
        let e = json_arg("params", Some(r#""\ud800""#)).unwrap_err();
        assert_eq!(e.error.kind, ErrorKind::Invalid);
    }

    /// serde_json's raw-value token is a key like any other, as in a build without serde_json's
    /// `raw_value` (the RKT crate alone, `agentwire/rkt`); with it (the all-three npm entry,
    /// agentwire-native) a `Value` parse read the map as its string's JSON text.
    #[test]
    fn the_raw_value_token_is_a_key_in_every_build() {
        let token = agentwire_core::json::value::RAW_VALUE_TOKEN;
        let text = format!(r#"{{"{token}":"[1]"}}"#);
        assert_eq!(json_arg("params", Some(&text)).unwrap(), Some(json!({token: "[1]"})));
        assert_eq!(body_value(Some(&text)), json!({token: "[1]"}));
    }

    /// A JSON text from pieces: values, syntax, and what serde_json refuses.
    fn text() -> impl proptest::strategy::Strategy<Value = String> {
        use proptest::prelude::*;
        let piece = prop::sample::select(vec![
            "{",
            "}",
            "[",
            "]",
            ",",
            ":",
            " ",
            "\"a\"",
            "\"\\ud800\"",
            "\"\\u00e9\\n\"",
            "1",
            "-0",
            "1.5e3",
            "1e400",
            "18446744073709551616",
            "-9223372036854775809",
            "null",
            "true",
            "nul",
            "x",
        ]);
        prop::collection::vec(piece, 1..14).prop_map(|p| p.concat())
    }

    proptest::proptest! {
        /// `json_arg` and `body_value` read a text as the `serde_json::Value` parse they used
        /// to (the same values, the same error text), now through core's `json::value::parse`.
        #[test]
        fn arguments_and_bodies_are_read_as_a_value_parse_reads_them(text in text()) {
            let old = serde_json::from_str::<Value>(&text);
            match (json_arg("params", Some(&text)), &old) {
                (Ok(ours), Ok(theirs)) => {
                    let ours = ours.unwrap();
                    assert_eq!(&ours, theirs, "{text}");
                    assert_eq!(ours.to_string(), theirs.to_string(), "{text}");
                }
                (Err(ours), Err(theirs)) => {
                    assert_eq!(ours.error.message, format!("params is not JSON: {theirs}"), "{text}");
                    assert_eq!(ours.error.kind, ErrorKind::Invalid);
                }
                (ours, theirs) => panic!("{text}: {ours:?} but serde_json {theirs:?}"),
            }
            let theirs = old.unwrap_or_else(|_| Value::String(text.clone()));
            assert_eq!(body_value(Some(&text)).to_string(), theirs.to_string(), "{text}");
        }
    }

    proptest::proptest! {
        /// An `authOk` event's `auth` is what `serde_json::to_value` of the body gave.
        #[test]
        fn auth_ok_is_written_as_its_derive_writes_it(
            session_token in "\\PC{0,6}",
            scopes in proptest::collection::vec("\\PC{0,4}", 0..3),
            expires_in in proptest::option::of(proptest::num::u64::ANY),
        ) {
            let auth = crate::AuthOkBody { session_token, scopes, expires_in };
            let old = serde_json::to_value(&auth).unwrap();
            let event = ClientEvent::AuthOk { id: "a".into(), auth };
            assert_eq!(event.to_json()["auth"], old);
            assert_eq!(event.to_json()["auth"].to_string(), old.to_string());
        }
    }

    #[test]
    fn event_types_lists_every_variant() {
        let err = RktError::local(ErrorKind::Closed, "x");
        let body = Some("{}".to_string());
        let all = [
            ClientEvent::Ready {
                agreed_version: 1,
                session_timeout: 1,
                server: PeerInfo::default(),
            },
            ClientEvent::Response {
                id: "a".into(),
                body: body.clone(),
            },
            ClientEvent::StreamBegin {
                id: "a".into(),
                body: body.clone(),
            },
            ClientEvent::StreamData {
                id: "a".into(),
                seq: 1,
                body: body.clone(),
            },
            ClientEvent::StreamEnd { id: "a".into(), body },
            ClientEvent::AuthOk {
                id: "a".into(),
                auth: crate::AuthOkBody {
                    session_token: "t".into(),
                    scopes: vec![],
                    expires_in: Some(1),
                },
            },
            ClientEvent::Pong {
                id: "a".into(),
                rtt_ms: 1,
            },
            ClientEvent::Failed {
                id: "a".into(),
                error: err.clone(),
            },
            ClientEvent::Error(err),
            ClientEvent::Goodbye,
            ClientEvent::Closed {
                code: 1000,
                reason: String::new(),
            },
        ];
        let seen: Vec<String> = all
            .iter()
            .map(|e| e.to_json()["type"].as_str().unwrap_or_default().to_string())
            .collect();
        assert_eq!(seen, EVENT_TYPES);
    }
    use crate::PeerInfo;
    use agentwire_core::ErrorKind;

    #[test]
    fn bodies_are_embedded_and_empty_fields_left_out() {
        let e = ClientEvent::StreamData {
            id: "m1".into(),
            seq: 2,
            body: Some(r#"{"day":1}"#.into()),
        };
        assert_eq!(
            e.to_json(),
            json!({"type": "streamData", "id": "m1", "seq": 2, "body": {"day": 1}})
        );
        let r = ClientEvent::Response {
            id: "m2".into(),
            body: None,
        };
        assert_eq!(r.to_json(), json!({"type": "response", "id": "m2"}));
        let ready = ClientEvent::Ready {
            agreed_version: 1,
            session_timeout: 300,
            server: PeerInfo {
                from: Some("agent://w".into()),
                user_agent: None,
                capabilities: vec!["weather".into()],
            },
        };
        assert_eq!(ready.to_json()["capabilities"], json!(["weather"]));
    }

    #[test]
    fn a_body_that_is_not_json_is_its_text() {
        assert_eq!(body_value(None), Value::Null);
        assert_eq!(body_value(Some(r#"{"a":[1,"x"]}"#)), json!({"a": [1, "x"]}));
        assert_eq!(body_value(Some("null")), Value::Null);
        for text in ["", "not json", "{", r#""\ud800""#, "1e400", r#"{"n":-1e999}"#] {
            assert_eq!(body_value(Some(text)), Value::String(text.into()), "{text:?}");
        }
        // The events bindings hand over follow the same rule.
        let r = ClientEvent::Response {
            id: "m".into(),
            body: Some("1e400".into()),
        };
        assert_eq!(r.to_json()["body"], json!("1e400"));
    }

    #[test]
    fn errors_keep_the_shared_shape() {
        let mut err = RktError::local(ErrorKind::Remote, "nope").for_request("m3");
        err.error.code = Some(602);
        err.details = Some("not json".into());
        let j = ClientEvent::Failed {
            id: "m3".into(),
            error: err,
        }
        .to_json();
        assert_eq!(
            j,
            json!({"type": "failed", "id": "m3", "error": {"kind": "remote", "code": 602, "message": "nope",
                "retryable": false, "details": "not json", "requestId": "m3"}})
        );
    }
}
