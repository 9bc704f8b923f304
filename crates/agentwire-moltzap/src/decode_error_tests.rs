//! The error object and string fields read on core's reader against serde, which read them
//! before.

use super::*;
use proptest::prelude::*;
use serde::Deserialize;

#[derive(Deserialize)]
struct ErrorWire<'a> {
    code: i64,
    message: String,
    #[serde(borrow, default)]
    data: Option<&'a RawValue>,
    #[serde(rename = "_tag", borrow, default)]
    tag: Option<&'a RawValue>,
}

#[derive(Deserialize)]
struct DataTag {
    #[serde(rename = "_tag", default)]
    tag: Option<String>,
}

/// `rpc_error` as it was, on serde.
fn serde_rpc_error(generation: Generation, raw: &RawValue) -> Result<RpcError, FrameError> {
    let w: ErrorWire<'_> = serde_json::from_str(raw.get()).map_err(|e| FrameError::bad_serde("error", &e))?;
    let tag = match generation {
        Generation::Released => None,
        Generation::Current => w.tag.and_then(|t| serde_json::from_str(t.get()).ok()).or_else(|| {
            let data = w.data?.get();
            data.starts_with('{')
                .then(|| serde_json::from_str::<DataTag>(data).ok()?.tag)
                .flatten()
        }),
    };
    Ok(RpcError {
        code: w.code,
        message: w.message,
        data: w.data.map(RawValue::to_owned),
        tag,
    })
}

/// Both read `text` (a JSON value serde's `RawValue` takes) alike: the same error object, or
/// both refuse it as a bad `error`.
fn agree(text: &str) {
    let Ok(raw) = serde_json::from_str::<&RawValue>(text) else {
        return;
    };
    for generation in [Generation::Current, Generation::Released] {
        let ours = rpc_error(generation, raw);
        let theirs = serde_rpc_error(generation, raw);
        match (&ours, &theirs) {
            (Ok(a), Ok(b)) => assert_eq!(format!("{a:?}"), format!("{b:?}"), "{generation:?}: {text}"),
            (Err(a), Err(_)) => assert_eq!(a.field(), "error", "{text}"),
            _ => panic!("{generation:?}: {text}: ours {ours:?}, serde's {theirs:?}"),
        }
    }
}

#[test]
fn the_error_object_is_read_as_serde_read_it() {
    for text in [
        r#"{"code":-32000,"message":"no"}"#,
        r#"{"code":1,"message":"m","_tag":"T","data":{"_tag":"D"}}"#,
        r#"{"code":1,"message":"m","_tag":null,"data":{"_tag":"D"}}"#,
        r#"{"code":1,"message":"m","_tag":5,"data":{"_tag":"D","x":"\ud800"}}"#,
        r#"{"code":1,"message":"m","_tag":"\ud800","data":{"_tag":"D"}}"#,
        r#"{"code":1,"message":"m","data":{"_tag":"D","_tag":"E"}}"#,
        r#"{"code":1,"message":"m","data":{"_tag":"\ud800"}}"#,
        r#"{"code":1,"message":"m","data":{"\ud800":1,"_tag":"D"}}"#,
        r#"{"code":1,"message":"m","data":{"_tag":7}}"#,
        r#"{"code":1,"message":"m","data":["_tag"]}"#,
        r#"{"code":1,"message":"m","data":null,"_tag":"T"}"#,
        r#"{"code":1,"message":"m","data":[1e999,"\udc00"]}"#,
        r#"{"code":1,"message":"m","x":"\ud800","y":1e999}"#,
        r#"{"code":1,"message":"m","\ud800":1}"#,
        r#"{"code":1,"message":"m","co\u0064e":2}"#,
        r#"{"co\u0064e":2,"m\u0065ssage":"\u00e9"}"#,
        r#"{"code":1,"message":"m","data":1,"data":2}"#,
        r#"{"code":1,"message":"m","_tag":1,"_tag":2}"#,
        r#"{"code":1,"code":1,"message":"m"}"#,
        r#"{"code":1,"message":"\ud800"}"#,
        r#"{"code":1,"message":null}"#,
        r#"{"code":null,"message":"m"}"#,
        r#"{"code":1}"#,
        r#"{"message":"m"}"#,
        r#"{"code":1.5,"message":"m"}"#,
        r#"{"code":1e2,"message":"m"}"#,
        r#"{"code":-0,"message":"m"}"#,
        r#"{"code":0,"message":"m"}"#,
        r#"{"code":1e999,"message":"m"}"#,
        r#"{"code":9223372036854775807,"message":"m"}"#,
        r#"{"code":9223372036854775808,"message":"m"}"#,
        r#"{"code":-9223372036854775808,"message":"m"}"#,
        r#"{"code":-9223372036854775809,"message":"m"}"#,
        r#"{"code":99999999999999999999,"message":"m"}"#,
        r#"{"code":"1","message":"m"}"#,
        r#"{}"#,
        r#"[1,"m"]"#,
        r#"[1,"m",{"_tag":"D"}]"#,
        r#"[1,"m",null,"T"]"#,
        r#"[1,"m",null,"T",5]"#,
        r#"[1]"#,
        r#"[]"#,
        r#"["m",1]"#,
        r#"[1.5,"m"]"#,
        r#"null"#,
        r#""boom""#,
        r#"7"#,
        r#"true"#,
    ] {
        agree(text);
    }
}

fn value() -> impl Strategy<Value = &'static str> {
    prop::sample::select(vec![
        "1",
        "-7",
        "-0",
        "1.5",
        "2e3",
        "1e999",
        "9223372036854775808",
        "-9223372036854775808",
        "null",
        "true",
        r#""m""#,
        r#""\u00e9""#,
        r#""\ud800""#,
        r#""T""#,
        "[]",
        "[1,\"m\"]",
        "{}",
        r#"{"_tag":"D"}"#,
        r#"{"_tag":"D","_tag":"E"}"#,
        r#"{"_tag":null}"#,
        r#"{"_tag":3}"#,
        r#"{"\ud800":1,"_tag":"D"}"#,
        r#"{"x":"\ud800","_tag":"D"}"#,
    ])
}

/// An error object (or an array, or another value) from a few keys and values.
fn error_object() -> impl Strategy<Value = String> {
    let key = prop::sample::select(vec!["code", "message", "data", "_tag", "x", "co\\u0064e", "\\ud800"]);
    let members = prop::collection::vec((key, value()), 0..6).prop_map(|m| {
        let body: Vec<String> = m.iter().map(|(k, v)| format!(r#""{k}":{v}"#)).collect();
        format!("{{{}}}", body.join(","))
    });
    let items = prop::collection::vec(value(), 0..6).prop_map(|items| format!("[{}]", items.join(",")));
    prop_oneof![4 => members, 2 => items, 1 => value().prop_map(String::from)]
}

/// An error object that is mostly right: `code` and `message` in most, the rest at random.
fn likely_error_object() -> impl Strategy<Value = String> {
    (value(), value(), prop::collection::vec(value(), 0..3)).prop_map(|(data, tag, rest)| {
        let rest: Vec<String> = rest.iter().map(|v| format!(r#","data":{v}"#)).collect();
        format!(
            r#"{{"code":1,"message":"m","data":{data},"_tag":{tag}{}}}"#,
            rest.concat()
        )
    })
}

proptest! {
    #[test]
    fn the_error_object_is_read_as_serde_read_any(text in error_object()) {
        agree(&text);
    }

    #[test]
    fn the_error_object_is_read_as_serde_read_a_likely_one(text in likely_error_object()) {
        agree(&text);
    }
}

/// `string` as it was, on serde.
fn serde_string(raw: &RawValue, field: &'static str) -> Result<String, FrameError> {
    if !raw.get().starts_with('"') {
        return Err(FrameError::bad(field, "must be a string"));
    }
    serde_json::from_str(raw.get()).map_err(|e| FrameError::bad_serde(field, &e))
}

/// Both take `text` (a JSON value serde's `RawValue` takes) alike: the same string, or both
/// refuse it, naming the field.
fn string_agrees(text: &str) {
    let Ok(raw) = serde_json::from_str::<&RawValue>(text) else {
        return;
    };
    match (string(raw, "method"), serde_string(raw, "method")) {
        (Ok(a), Ok(b)) => assert_eq!(a, b, "{text}"),
        (Err(a), Err(_)) => assert_eq!(a.field(), "method", "{text}"),
        (a, b) => panic!("{text}: ours {a:?}, serde's {b:?}"),
    }
}

#[test]
fn a_string_is_read_as_serde_read_it() {
    for text in [
        r#""messages/received""#,
        r#""""#,
        r#""\u00e9\n\t\"\\\/\b\f\r""#,
        r#""\ud83d\ude00""#,
        r#""\uD83D\uDE00""#,
        r#""\ud800""#,
        r#""\udc00""#,
        r#""\ud800x""#,
        r#""\ud800\n""#,
        r#""\ud800\u0041""#,
        r#""\ud800\ud800""#,
        r#""\udc00\ud800""#,
        r#""x\ud83d""#,
        "\"é€😀\"",
        "1",
        "null",
        "[\"x\"]",
    ] {
        string_agrees(text);
    }
    // The refusal names the field and the fault, not serde's line and column.
    let raw = serde_json::from_str::<&RawValue>(r#""a\ud800b""#).unwrap();
    assert_eq!(
        string(raw, "method").unwrap_err().to_string(),
        "`method` has a lone surrogate escape"
    );
}

proptest! {
    #[test]
    fn a_string_is_read_as_serde_read_any(parts in prop::collection::vec(prop::sample::select(vec![
        "a", "é", "😀", "\\n", "\\\"", "\\\\", "\\u0041", "\\u00E9", "\\ud83d", "\\ude00", "\\uD83D",
        "\\uDE00", "\\ud800", "\\udfff", "\\u0000", "\\/",
    ]), 0..6)) {
        string_agrees(&format!("\"{}\"", parts.concat()));
    }
}
