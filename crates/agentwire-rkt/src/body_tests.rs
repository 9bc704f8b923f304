use super::*;
use proptest::prelude::*;
use serde::de::DeserializeOwned;
use serde_json::json;

/// The hand-written reader and the derived `Deserialize` agree on `text`: both refuse it, or both
/// give the same body.
fn agree<T: DeserializeOwned + PartialEq + fmt::Debug>(text: &str, ours: fn(&str) -> Result<T, BodyError>) {
    assert_eq!(
        ours(text).ok(),
        serde_json::from_str::<T>(text).ok(),
        "{text}: the derive and the reader disagree"
    );
}

fn agree_all(text: &str) {
    agree(text, HelloAckBody::from_json);
    agree(text, AuthOkBody::from_json);
    agree(text, ErrorBody::from_json);
    agree(text, StreamEndBody::from_json);
}

#[test]
fn hello_ack_reads_both_fields_and_refuses_the_rest() {
    let ack = HelloAckBody::from_json(r#"{"agreed_version":1,"session_timeout":300,"extra":{"a":[1]}}"#).unwrap();
    assert_eq!(
        ack,
        HelloAckBody {
            agreed_version: 1,
            session_timeout: 300
        }
    );
    assert_eq!(
        HelloAckBody::from_json(r#"{"agreed_version":1}"#).unwrap_err(),
        BodyError::Missing("session_timeout")
    );
    let e = HelloAckBody::from_json(r#"{"agreed_version":"1","session_timeout":300}"#).unwrap_err();
    assert_eq!(
        e.to_string(),
        "`agreed_version` must be a whole number ≥ 0, not a string"
    );
    let e = HelloAckBody::from_json(r#"{"agreed_version":4294967296,"session_timeout":300}"#).unwrap_err();
    assert!(e.to_string().contains("`agreed_version`"), "{e}");
    let e = HelloAckBody::from_json(r#"{"agreed_version":1,"session_timeout":3,"session_timeout":3}"#).unwrap_err();
    assert_eq!(e.to_string(), "field `session_timeout` given twice");
    assert!(matches!(HelloAckBody::from_json("{"), Err(BodyError::Json(_))));
}

#[test]
fn bodies_read_serde_array_form_of_a_struct() {
    assert_eq!(
        HelloAckBody::from_json("[1, 300]").unwrap(),
        HelloAckBody {
            agreed_version: 1,
            session_timeout: 300
        }
    );
    assert_eq!(
        HelloAckBody::from_json("[1]").unwrap_err(),
        BodyError::Missing("session_timeout")
    );
    assert!(
        HelloAckBody::from_json("[1,300,5]").is_err(),
        "no more items than fields"
    );
    // Defaulted fields only at the end: `scopes` cannot be left out before `expires_in`.
    assert_eq!(AuthOkBody::from_json(r#"["t",[],9]"#).unwrap().expires_in, Some(9));
    assert!(AuthOkBody::from_json(r#"["t",null,9]"#).is_err());
    assert!(AuthOkBody::from_json(r#"["t",9]"#).is_err());
    // Both defaulted: the token alone is a body (as serde reads it too).
    assert_eq!(AuthOkBody::from_json(r#"["t"]"#).unwrap().expires_in, None);
    let e = ErrorBody::from_json(r#"[605,"PAYMENT_REQUIRED"]"#).unwrap();
    assert_eq!(
        (e.code, e.name.as_str(), e.message.as_str()),
        (605, "PAYMENT_REQUIRED", "")
    );
    assert_eq!(StreamEndBody::from_json("[7]").unwrap().count, 7);
    assert!(StreamEndBody::from_json("[]").is_err());
    for text in [
        "[]",
        "[1]",
        "[1,2]",
        "[1,2,3]",
        r#"["t",["a"],1]"#,
        r#"[1,"n","m",{"a":1},"r",6]"#,
    ] {
        agree_all(text);
    }
}

#[test]
fn auth_ok_scopes_default_to_empty_but_not_from_null() {
    let full = AuthOkBody::from_json(r#"{"session_token":"t","scopes":["a","b"],"expires_in":60}"#).unwrap();
    assert_eq!(
        full,
        AuthOkBody {
            session_token: "t".into(),
            scopes: vec!["a".into(), "b".into()],
            expires_in: Some(60)
        }
    );
    let bare = AuthOkBody::from_json(r#"{"session_token":"t\u00e9","expires_in":0}"#).unwrap();
    assert_eq!((bare.session_token.as_str(), bare.scopes.len()), ("té", 0));
    let e = AuthOkBody::from_json(r#"{"session_token":"t","scopes":null,"expires_in":60}"#).unwrap_err();
    assert_eq!(e.to_string(), "`scopes` must be an array of strings, not null");
    let e = AuthOkBody::from_json(r#"{"session_token":"t","scopes":["a",1],"expires_in":60}"#).unwrap_err();
    assert!(e.to_string().starts_with("`scopes`"), "{e}");
    let e = AuthOkBody::from_json(r#"{"session_token":null,"expires_in":60}"#).unwrap_err();
    assert_eq!(e.to_string(), "`session_token` is missing or null");
    let e = AuthOkBody::from_json(r#"{"session_token":"t","expires_in":-1}"#).unwrap_err();
    assert!(e.to_string().starts_with("`expires_in`"), "{e}");
}

/// The guide asks of AUTH_OK only "a session token": without `expires_in` (or with `null`) the
/// token has no known expiry, and a body written again leaves it out.
#[test]
fn auth_ok_expires_in_is_optional() {
    for text in [
        r#"{"session_token":"t"}"#,
        r#"{"session_token":"t","expires_in":null}"#,
        r#"["t"]"#,
    ] {
        let body = AuthOkBody::from_json(text).unwrap();
        assert_eq!(body.expires_in, None, "{text}");
        assert_eq!(
            serde_json::to_string(&body).unwrap(),
            r#"{"session_token":"t","scopes":[]}"#
        );
    }
}

#[test]
fn error_body_reads_every_field_with_defaults() {
    let full = ErrorBody::from_json(
        r#"{"code":429,"name":"RATE_LIMITED","message":"slow","details":{"retry_after":5,"a":[1.5,null]},"request_id":"m1"}"#,
    )
    .unwrap();
    assert_eq!(
        full,
        ErrorBody {
            code: 429,
            name: "RATE_LIMITED".into(),
            message: "slow".into(),
            details: Some(json!({"retry_after": 5, "a": [1.5, null]})),
            request_id: Some("m1".into())
        }
    );
    let bare = ErrorBody::from_json(r#"{"code":-7,"details":null,"request_id":null}"#).unwrap();
    assert_eq!(
        bare,
        ErrorBody {
            code: -7,
            name: String::new(),
            message: String::new(),
            details: None,
            request_id: None
        }
    );
    // Any JSON value is a detail.
    assert_eq!(
        ErrorBody::from_json(r#"{"code":1,"details":"x"}"#).unwrap().details,
        Some(json!("x"))
    );
    for (text, field) in [
        (r#"{"code":1.0}"#, "`code`"),
        (r#"{"code":"1"}"#, "`code`"),
        (r#"{"code":-0}"#, "`code`"),
        (r#"{"code":9223372036854775808}"#, "`code`"),
        (r#"{"code":1,"name":null}"#, "`name`"),
        (r#"{"code":1,"message":5}"#, "`message`"),
        (r#"{"code":1,"request_id":5}"#, "`request_id`"),
        (r#"{"message":"m"}"#, "`code`"),
    ] {
        let e = ErrorBody::from_json(text).unwrap_err();
        assert!(e.to_string().contains(field), "{text}: {e}");
    }
    assert_eq!(
        ErrorBody::from_json(r#"{"code":-9223372036854775808}"#).unwrap().code,
        i64::MIN
    );
}

#[test]
fn error_details_nest_as_deep_as_serde_allows() {
    let nested = |n: usize| format!(r#"{{"code":1,"details":{}1{}}}"#, "[".repeat(n), "]".repeat(n));
    assert!(ErrorBody::from_json(&nested(126)).is_ok());
    let e = ErrorBody::from_json(&nested(127)).unwrap_err();
    assert!(e.to_string().contains("`details`"), "{e}");
    for n in [125, 126, 127, 128] {
        agree(&nested(n), ErrorBody::from_json);
    }
}

#[test]
fn stream_end_reads_the_count() {
    assert_eq!(
        StreamEndBody::from_json(r#" {"count": 3} "#).unwrap(),
        StreamEndBody { count: 3 }
    );
    assert_eq!(StreamEndBody::from_json("{}").unwrap_err(), BodyError::Missing("count"));
    let e = StreamEndBody::from_json(r#"{"count":"3"}"#).unwrap_err();
    assert_eq!(e.to_string(), "`count` must be a whole number ≥ 0, not a string");
    assert!(StreamEndBody::from_json(r#"{"count":1e1}"#).is_err());
    assert!(StreamEndBody::from_json(r#""x""#).is_err());
}

#[test]
fn what_serde_skips_may_hold_what_the_reader_refuses() {
    // Half an emoji (as JavaScript writes it) and a number beyond f64 in a field nobody reads.
    let body = r#"{"count":3,"note":"cut \ud83d","big":1e400,"list":[-2e999,"\udc00"]}"#;
    assert_eq!(StreamEndBody::from_json(body).unwrap(), StreamEndBody { count: 3 });
    agree_all(body);
    // Where serde decodes, they are refused, naming the field (or the key).
    let e = ErrorBody::from_json(r#"{"code":1,"message":"cut \ud83d"}"#).unwrap_err();
    assert_eq!(
        e.to_string(),
        "`message` has a lone surrogate escape or a number beyond f64"
    );
    let e = ErrorBody::from_json(r#"{"code":1,"details":{"n":1e400}}"#).unwrap_err();
    assert_eq!(e, BodyError::Field(FieldError::Lossy("`details`".into())));
    let e = StreamEndBody::from_json(r#"{"count":3,"\udead":1}"#).unwrap_err();
    assert_eq!(
        e.to_string(),
        "a key has a lone surrogate escape or a number beyond f64"
    );
    let e = HelloAckBody::from_json(r#"[1e400,1]"#).unwrap_err();
    assert_eq!(e, BodyError::Field(FieldError::Lossy("`agreed_version`".into())));
    for text in [
        r#"{"code":1,"message":"cut \ud83d"}"#,
        r#"{"code":1,"details":{"n":1e400}}"#,
        r#"{"count":3,"\udead":1}"#,
        r#"{"count":1,"x":"\ud83d\ude00"}"#,
        "[1e400,1]",
        r#"["\ud83d",[],1]"#,
    ] {
        agree_all(text);
    }
}

#[test]
fn the_reader_accepts_what_the_derive_accepts() {
    let deep = format!(r#"{{"x":{}0{},"count":1}}"#, "[".repeat(300), "]".repeat(300));
    for text in [
        "",
        "null",
        "{}",
        "1",
        r#"{"count":2}"#,
        r#"{"count":2}x"#,
        r#"{"count":2,"count":2}"#,
        r#"{"count":null}"#,
        r#"{"coun\u0074":4}"#,
        r#"{"count":18446744073709551615}"#,
        r#"{"count":18446744073709551616}"#,
        r#"{"count":-0}"#,
        r#"{"x":1,"x":2,"count":5}"#,
        deep.as_str(),
        r#"{"agreed_version":1,"session_timeout":30}"#,
        r#"{"agreed_version":1,"session_timeout":null}"#,
        r#"{"session_token":"t","scopes":[],"expires_in":1}"#,
        r#"{"session_token":"t","expires_in":1,"scopes":["\ud83d\ude00"]}"#,
        r#"{"code":605,"details":[1,{"b":2,"b":3}]}"#,
        r#"{"code":605,"details":1.5e300}"#,
        r#"{"code":605,"name":"","message":"","request_id":"r"}"#,
    ] {
        agree_all(text);
    }
}

/// A member value to build bodies from: the edges of each field's type.
fn value() -> impl Strategy<Value = String> {
    prop::sample::select(vec![
        "0",
        "1",
        "-1",
        "-0",
        "2.5",
        "1e2",
        "4294967295",
        "4294967296",
        "9223372036854775807",
        "9223372036854775808",
        "-9223372036854775808",
        "-9223372036854775809",
        "18446744073709551615",
        "18446744073709551616",
        "null",
        "true",
        "\"\"",
        "\"s\\u00e9\\n\"",
        "[]",
        "[\"a\",\"b\"]",
        "[\"a\",1]",
        "[null]",
        "{}",
        "{\"retry_after\":5}",
        "[[[[1]]]]",
        // What serde skips but does not decode, and the reader refuses: lone surrogates, numbers
        // beyond f64.
        "\"x\\ud83d\"",
        "[\"\\udc00\"]",
        "{\"a\":1e400}",
        "-1e999",
        "123456789012345678901234567890e300",
    ])
    .prop_map(str::to_string)
}

fn key() -> impl Strategy<Value = String> {
    prop::sample::select(vec![
        "agreed_version",
        "session_timeout",
        "session_token",
        "scopes",
        "expires_in",
        "code",
        "name",
        "message",
        "details",
        "request_id",
        "count",
        "other",
        "co\\u0075nt",
        "\\ud800",
    ])
    .prop_map(str::to_string)
}

proptest! {
    #[test]
    fn the_reader_and_the_derive_agree_on_any_body(members in prop::collection::vec((key(), value()), 0..6)) {
        let body: Vec<String> = members.iter().map(|(k, v)| format!("\"{k}\": {v}")).collect();
        agree_all(&format!("{{{}}}", body.join(",")));
    }

    #[test]
    fn the_reader_and_the_derive_agree_on_any_array(items in prop::collection::vec(value(), 0..7)) {
        agree_all(&format!("[{}]", items.join(", ")));
    }
}

#[test]
fn memory_get_reply_reads_found_and_value() {
    let read = |v: Value| MemoryGetBody::read_reply(&v);
    let found = json!({"key": "k", "namespace": "default", "found": true, "value": {"a": 1}});
    assert_eq!(read(found).unwrap(), Some(json!({"a": 1})));
    // A stored `null` is found: it is not a missing key.
    assert_eq!(read(json!({"found": true, "value": null})).unwrap(), Some(Value::Null));
    assert_eq!(read(json!({"found": true})).unwrap(), Some(Value::Null));
    let missing = json!({"key": "k", "namespace": "default", "found": false, "value": null});
    assert_eq!(read(missing).unwrap(), None);
    assert_eq!(
        read(json!({"found": false, "value": 3})).unwrap(),
        None,
        "found decides"
    );
    // Without `found`, the value decides.
    assert_eq!(read(json!({"value": "Seoul"})).unwrap(), Some(json!("Seoul")));
    assert_eq!(read(json!({"value": null})).unwrap(), None);
    assert_eq!(read(json!({})).unwrap(), None);
}

#[test]
fn memory_get_reply_that_is_not_one_is_a_decode_error() {
    for bad in [
        json!(null),
        json!("Seoul"),
        json!([true, 1]),
        json!({"found": "yes", "value": 1}),
    ] {
        let e = MemoryGetBody::read_reply(&bad).unwrap_err();
        assert_eq!(e.kind(), agentwire_core::ErrorKind::Decode, "{bad}: {e}");
    }
}
