//! Every frame captured from a released MoltZap server (2026.425.3) in
//! `tests/vectors/moltzap-2026.425/*.sample.out` decodes to the frame it is, re-encodes byte for
//! byte, and every error maps to the right typed error. Every line the client sent is either
//! something our encoder writes byte for byte, or a frame our strict decoder refuses exactly
//! where the server refused it. The registrations it made (`HTTP register`) parse as `{agentId, apiKey}`.
//!
//! The folder is `tests/vectors/moltzap-2026.425` of this repository.

use agentwire_core::ErrorKind;
use agentwire_moltzap::{
    decode_message, decode_message_with, encode_notification, encode_request, encode_response, DecodeOptions, Frame,
    FrameErrorKind, Generation::Released, Id, MoltZapError, Response,
};
use serde_json::Value;
use std::path::PathBuf;

fn folder() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/vectors/moltzap-2026.425")
}

/// The typed name and kind each error code seen in the captures must map to (written out here,
/// independently of the crate's table).
fn expected_error(code: i64) -> (&'static str, ErrorKind) {
    match code {
        -32700 => ("ParseError", ErrorKind::Protocol),
        -32600 => ("InvalidRequest", ErrorKind::Protocol),
        -32601 => ("MethodNotFound", ErrorKind::Invalid),
        -32602 => ("InvalidParams", ErrorKind::Invalid),
        -32000 => ("Unauthorized", ErrorKind::Auth),
        -32001 => ("Forbidden", ErrorKind::Remote),
        -32002 => ("NotFound", ErrorKind::Remote),
        _ => panic!("code {code} in the captures has no expectation here"),
    }
}

#[derive(Default)]
struct Counts {
    server: usize,
    logged: usize,
    client_encoded: usize,
    client_refused: usize,
    raw: usize,
    truncated: usize,
    registered: usize,
}

/// A client line waiting for the server's reply on the same connection (`[A]`, `[B]`, or none).
struct Pending {
    label: String,
    line: String,
    /// `Some(id readable from the refused frame)` when our strict decoder refused it.
    refused: Option<Option<Id>>,
    raw: bool,
}

/// Checks one server frame and returns it.
fn check_server_frame(text: &str, sent_ids: &[Id], where_: &str) -> Frame {
    let frames = decode_message(Released, text);
    assert_eq!(frames.len(), 1, "{where_}: {text}");
    let frame = frames
        .into_iter()
        .next()
        .unwrap()
        .unwrap_or_else(|e| panic!("{where_}: {e}: {text}"));
    let v: Value = serde_json::from_str(text).unwrap();
    match (&frame, v["type"].as_str()) {
        (Frame::Response(r), Some("response")) => {
            assert_eq!(r.id.as_ref().and_then(Id::as_str), v["id"].as_str(), "{where_}");
            if let Some(id) = &r.id {
                assert!(
                    sent_ids.contains(id),
                    "{where_}: response to {id}, which the client never sent"
                );
            }
            match (r.result(), r.error()) {
                (Some(res), None) => assert_eq!(
                    serde_json::from_str::<Value>(res.get()).unwrap(),
                    v["result"],
                    "{where_}"
                ),
                (None, Some(e)) => {
                    assert_eq!(
                        (e.code, e.message.as_str()),
                        (
                            v["error"]["code"].as_i64().unwrap(),
                            v["error"]["message"].as_str().unwrap()
                        )
                    );
                    let typed = MoltZapError::remote(e, r.id.as_ref());
                    let (name, kind) = expected_error(e.code);
                    assert_eq!((typed.name.as_deref(), typed.kind()), (Some(name), kind), "{where_}");
                    assert_eq!(typed.request_id, r.id);
                }
                _ => unreachable!(),
            }
            assert_eq!(
                encode_response(Released, r.id.as_ref(), &r.outcome).unwrap(),
                text,
                "{where_}: re-encoding"
            );
        }
        (Frame::Notification(n), Some("event")) => {
            assert_eq!(Some(n.name.as_str()), v["event"].as_str(), "{where_}");
            let data = n.params.as_ref().unwrap();
            assert_eq!(
                serde_json::from_str::<Value>(data.get()).unwrap(),
                v["data"],
                "{where_}"
            );
            assert_eq!(
                encode_notification(Released, &n.name, Some(data)),
                text,
                "{where_}: re-encoding"
            );
        }
        (f, t) => panic!("{where_}: decoded {f:?} for type {t:?}"),
    }
    frame
}

/// The reply to a pending client line: -32700 for non-JSON, -32600 exactly when our strict
/// decoder refused the frame too (with the id it could read, which the server echoes only if a
/// string), something else otherwise.
fn check_reply(p: &Pending, r: &Response, where_: &str) {
    let code = r.error().map(|e| e.code);
    if p.raw {
        assert_eq!((code, &r.id), (Some(-32700), &None), "{where_}");
        return;
    }
    match &p.refused {
        Some(id) => {
            assert_eq!(
                code,
                Some(-32600),
                "{where_}: we refused `{}` but the server did not",
                p.line
            );
            assert_eq!(&r.id, id, "{where_}");
        }
        None => assert!(
            !matches!(code, Some(-32600 | -32700)),
            "{where_}: the server refused `{}`, we did not",
            p.line
        ),
    }
}

#[test]
fn every_captured_frame_decodes() {
    let dir = folder();
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| p.to_string_lossy().ends_with(".sample.out"))
        .collect();
    files.sort();
    assert!(!files.is_empty());
    let strict = DecodeOptions {
        reject_unknown_keys: true,
        ..DecodeOptions::default()
    };
    let mut n = Counts::default();
    for file in &files {
        let name = file.file_name().unwrap().to_string_lossy().to_string();
        let content = std::fs::read_to_string(file).unwrap();
        let (mut sent_ids, mut pending) = (Vec::<Id>::new(), Vec::<Pending>::new());
        for (i, line) in content.lines().enumerate() {
            let where_ = format!("{name}:{}", i + 1);
            // `[A] => …`: the connection's label, then the direction.
            let (label, rest) = match line.strip_prefix('[').and_then(|l| l.split_once("] ")) {
                Some((label, rest)) => (label.to_string(), rest),
                None => (String::new(), line),
            };
            if let Some(text) = rest.strip_prefix("=> RAW ") {
                let e = decode_message(Released, text).remove(0).unwrap_err();
                assert!(matches!(e.kind, FrameErrorKind::Syntax(_)), "{where_}");
                pending.push(Pending {
                    label,
                    line: text.into(),
                    refused: None,
                    raw: true,
                });
                n.raw += 1;
            } else if let Some(text) = rest.strip_prefix("=> ") {
                let refused = match decode_message_with(Released, text, &strict).remove(0) {
                    Ok(Frame::Request(q)) => {
                        let again = encode_request(Released, &q.id, &q.method, q.params.as_deref()).unwrap();
                        assert_eq!(again, text, "{where_}: our encoder writes this request differently");
                        sent_ids.push(q.id);
                        n.client_encoded += 1;
                        None
                    }
                    Ok(other) => panic!("{where_}: the client sent {other:?}"),
                    Err(e) => {
                        n.client_refused += 1;
                        if let Some(id) = &e.id {
                            sent_ids.push(id.clone());
                        }
                        Some(e.id)
                    }
                };
                pending.push(Pending {
                    label,
                    line: text.into(),
                    refused,
                    raw: false,
                });
            } else if let Some(text) = rest.strip_prefix("<= ") {
                if let Frame::Response(r) = check_server_frame(text, &sent_ids, &where_) {
                    let at = pending
                        .iter()
                        .position(|p| p.label == label)
                        .unwrap_or_else(|| panic!("{where_}: unsolicited"));
                    check_reply(&pending.remove(at), &r, &where_);
                }
                n.server += 1;
            } else if let Some((_, list)) = rest.split_once(": [{\"jsonrpc\"") {
                // `B got: [frame, frame]`: the frames a connection received, logged as a JSON array.
                let list = format!("[{{\"jsonrpc\"{list}");
                for el in serde_json::from_str::<Vec<&serde_json::value::RawValue>>(&list).unwrap() {
                    check_server_frame(el.get(), &sent_ids, &where_);
                    n.logged += 1;
                }
            } else if let Some(answer) = rest.strip_prefix("HTTP register ") {
                // `HTTP register <name> -> <status> <body>`: the registration the capture made.
                let (_, answer) = answer.split_once(" -> ").expect(&where_);
                let (status, body) = answer.split_once(' ').expect(&where_);
                let ok = agentwire_moltzap::register::parse_response(status.parse().unwrap(), body)
                    .unwrap_or_else(|e| panic!("{where_}: {e}"));
                assert!(
                    ok.api_key.starts_with("moltzap_agent_") && !ok.agent_id.is_empty(),
                    "{where_}"
                );
                n.registered += 1;
            } else if rest.contains("{\"jsonrpc\"") {
                // `msg {…`: a log line the capture cut short. It is truncated JSON: a syntax error.
                let text = &rest[rest.find('{').unwrap()..];
                let e = decode_message(Released, text).remove(0).unwrap_err();
                assert!(matches!(e.kind, FrameErrorKind::Syntax(_)), "{where_}: {e}");
                n.truncated += 1;
            } else {
                assert!(!rest.contains("jsonrpc"), "{where_}: unclassified line");
            }
        }
        assert!(pending.is_empty(), "{name}: client lines with no reply");
    }
    eprintln!(
        "vectors: {} server frames, {} logged frames, {} client requests re-encoded, {} refused like the server, {} raw, {} truncated, {} registrations",
        n.server, n.logged, n.client_encoded, n.client_refused, n.raw, n.truncated, n.registered
    );
    // What the captures of 2026-12-02 hold; more lines may be added, none may go unchecked.
    assert!(
        n.server >= 38
            && n.logged >= 6
            && n.client_encoded >= 32
            && n.client_refused >= 3
            && n.raw >= 1
            && n.registered >= 2,
        "too few lines checked"
    );
}
