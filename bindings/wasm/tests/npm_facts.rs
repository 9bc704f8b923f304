//! The npm package's `ErrorInfo` (`npm/src/errors.ts`) against the JSON this binding hands it
//! for each engine's error: every key an engine can write is declared there, and nothing else.
//! Each error is built with every field set (a struct literal: a new field fails to compile here
//! until it is set).

use agentwire_core::{Error, ErrorKind};
use std::collections::BTreeSet;

/// The keys declared in `export interface ErrorInfo { … }` (the index signature aside).
fn declared() -> BTreeSet<String> {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../npm/src/errors.ts");
    let ts = std::fs::read_to_string(path).expect("npm/src/errors.ts");
    let body = ts
        .split("export interface ErrorInfo {")
        .nth(1)
        .and_then(|rest| rest.split("\n}").next())
        .expect("ErrorInfo in npm/src/errors.ts");
    body.lines()
        .filter_map(|l| l.trim().split_once(':').map(|(k, _)| k.trim_end_matches('?')))
        .filter(|k| !k.is_empty() && k.bytes().all(|b| b.is_ascii_alphabetic()))
        .map(str::to_owned)
        .collect()
}

fn keys(v: &serde_json::Value) -> BTreeSet<String> {
    v.as_object().expect("an object").keys().cloned().collect()
}

fn shared() -> Error {
    Error {
        kind: ErrorKind::Remote,
        code: Some(-32000),
        message: "m".into(),
        retryable: false,
    }
}

fn rkt() -> serde_json::Value {
    let e = agentwire_rkt::RktError {
        error: shared(),
        name: Some("RATE_LIMITED".into()),
        details: Some(r#"{"a":1}"#.into()),
        request_id: Some("r1".into()),
        retry_after_s: Some(3),
    };
    agentwire_rkt::json::error_json(&e)
}

fn moltzap() -> serde_json::Value {
    let e = agentwire_moltzap::MoltZapError {
        error: shared(),
        name: Some("Unauthorized".into()),
        tag: Some("Unauthorized".into()),
        data: Some(r#"{"a":1}"#.into()),
        request_id: Some(agentwire_moltzap::Id::Num(7)),
        unsent: false,
    };
    serde_json::to_value(&e).expect("serializes")
}

fn switch() -> serde_json::Value {
    let e = agentwire_switch::SwitchError {
        kind: ErrorKind::Remote,
        status: Some(409),
        code: Some("taken_over".into()),
        message: "m".into(),
        detail: Some(r#"{"a":1}"#.into()),
        retryable: false,
    };
    let text: serde_json::Value = serde_json::from_str(&e.to_json_string()).expect("JSON");
    assert_eq!(text, e.to_json());
    text
}

/// `rktDecode`'s error: the codec's own fields.
fn rkt_decode() -> serde_json::Value {
    let e = agentwire_rkt::codec::decode("RKT/1.0 PING\nVersion: x\n", 1024).expect_err("a bad Version");
    agentwire_rkt::json::decode_error_json(&e)
}

#[test]
fn every_key_of_an_engine_error_is_declared_in_error_info() {
    let declared = declared();
    let mut written = BTreeSet::new();
    let errors = [
        ("rkt", rkt()),
        ("rktDecode", rkt_decode()),
        ("moltzap", moltzap()),
        ("switch", switch()),
    ];
    for (protocol, v) in errors {
        let keys = keys(&v);
        let undeclared: Vec<_> = keys.difference(&declared).collect();
        assert!(
            undeclared.is_empty(),
            "{protocol} writes {undeclared:?}, not in ErrorInfo: {v}"
        );
        written.extend(keys);
    }
    assert_eq!(declared, written, "ErrorInfo declares keys no engine writes");
}

/// A JSON payload the server gave is handed over parsed in each protocol, never as its text.
#[test]
fn payloads_of_errors_are_embedded() {
    assert_eq!(rkt()["details"]["a"], 1);
    assert_eq!(moltzap()["data"]["a"], 1);
    assert_eq!(switch()["detail"]["a"], 1);
}
