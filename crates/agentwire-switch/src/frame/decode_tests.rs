//! The decoders against the serde_json ones they replaced (`decode_serde`): the same frame, or
//! an error of the same kind naming the same field, on fixed cases, on every prefix of a valid
//! frame, and on generated frames.

use super::*;
use crate::frame::decode_serde;
use proptest::prelude::*;

/// The same frame, or errors of the same kind at the same field (the messages differ: serde's
/// named its own types).
fn same(new: &Result<Frame, FrameError>, old: &Result<Frame, FrameError>) -> bool {
    match (new, old) {
        (Ok(a), Ok(b)) => format!("{a:?}") == format!("{b:?}"),
        (Err(a), Err(b)) => (a.kind, &a.field) == (b.kind, &b.field),
        _ => false,
    }
}

fn check(text: &str) {
    let (new, old) = (decode(text), decode_serde::decode(text));
    assert!(same(&new, &old), "{text}\n new: {new:?}\n old: {old:?}");
}

fn check_sse(name: &str, data: &str, id: Option<&str>) {
    let opts = DecodeOptions::default();
    let (new, old) = (
        decode_sse_with(name, data, id, &opts),
        decode_serde::decode_sse_with(name, data, id, &opts),
    );
    assert!(same(&new, &old), "{name} {id:?} {data}\n new: {new:?}\n old: {old:?}");
}

const ROOM: &str = "47e911ea-014b-427b-a600-1c72595f0c98";

fn cases() -> Vec<String> {
    let data = format!(
        r#"{{"type":"message","room_id":"{ROOM}","bridge_id":null,"channel_type":"channel_public","payload":{{"body":"hi \"x\"","n":[1,{{"a":null}}]}},"sequence":7}}"#
    );
    let state = r#"{"connection_id":"c","agent_id":"a","generation":3,"scope":"single","filter":"all","spawn_capable":true,"rooms":["r"],"cursor":4,"protocol":2,"heartbeat_interval_seconds":2.5,"server":{"version":"0.20.0"},"client":null}"#;
    vec![
        format!(r#"{{"event":"message","data":{data},"id":7}}"#),
        format!(r#"{{"id":7,"data":{data},"event":"message"}}"#),
        format!(r#"{{"event":"message","data":{data},"id":8}}"#),
        format!(r#"{{"event":"message","data":{data},"id":"7"}}"#),
        format!(r#"{{"event":"message","data":{data},"id":-1}}"#),
        format!(r#"{{"event":"message","data":{data},"id":7.0}}"#),
        format!(r#"{{"event":7,"data":{data},"id":7}}"#),
        format!(r#"{{"event":"joined","data":{data},"id":7}}"#),
        format!(r#"{{"event":"message","data":{data}}}"#),
        format!(r#"{{"event":"message","data":{data},"id":7,"id":7}}"#),
        format!(r#"{{"event":"message","data":{data},"id":7,"extra":[1,2],"extra":3}}"#),
        format!(r#"{{"event":"message","type":"x","data":{data},"id":7}}"#),
        format!(r#"{{"event":"message","type":"a","type":"b","data":{data},"id":7}}"#),
        r#"{"type":"a","type":"b"}"#.into(),
        format!(r#"{{"event":"message","data":{data},"id":7}} "#),
        format!(r#"{{"event":"message","data":{data},"id":7}}x"#),
        r#"{"event":"message","data":["message","r",null,null,{},7],"id":7}"#.into(),
        r#"{"event":"message","data":"text","id":7}"#.into(),
        r#"{"event":"message","data":null,"id":7}"#.into(),
        r#"{"event":"message","data":{},"id":7}"#.into(),
        r#"{"event":"message","data":{"room_id":"r","sequence":7,"sequence":7,"payload":1},"id":7}"#.into(),
        r#"{"event":"message","data":{"room_id":"r","sequence":7},"id":7}"#.into(),
        r#"{"event":"message","data":{"room_id":"r","sequence":7,"payload":null},"id":7}"#.into(),
        r#"{"event":"message","data":{"room_id":5,"sequence":7,"payload":1},"id":7}"#.into(),
        r#"{"event":"message","data":{"room_id":"r","sequence":"7","payload":1},"id":7}"#.into(),
        r#"{"event":"message","data":{"room_id":"r","sequence":7.5,"payload":1},"id":7}"#.into(),
        r#"{"event":"message","data":{"room_id":"r","sequence":7,"payload":1,"bridge_id":4},"id":7}"#.into(),
        r#"{"event":"message","data":{"type":"joined","room_id":"r","sequence":7,"payload":1},"id":7}"#.into(),
        r#"{"event":"m\u0065ssage","data":{"room_id":"r\u00e9","sequence":7,"payload":{}},"id":7}"#.into(),
        r#"{"event":"message","data":{"room_id":"r\ud800","sequence":7,"payload":{}},"id":7}"#.into(),
        r#"{"event":"message","data":{"room_id":"r","sequence":7,"payload":{"b":"\ud800","n":1e999}},"id":7}"#.into(),
        r#"{"event":"message","data":{"room_id":"r","sequence":7,"payload":{},"\ud800":1},"id":7}"#.into(),
        r#"{"event":"ping","data":{}}"#.into(),
        r#"{"event":"ping"}"#.into(),
        r#"{"event":"ping","data":[]}"#.into(),
        r#"{"event":"novel","data":{"x":[1,"\ud800"]}}"#.into(),
        r#"{"event":"novel"}"#.into(),
        r#"{"event":"gap","data":{"from_sequence":1,"resumed_at":2,"reason":"r"},"id":3}"#.into(),
        r#"{"event":"gap","data":{"from_sequence":1,"resumed_at":2,"rooms":["a",1],"reason":"r"}}"#.into(),
        r#"{"event":"gap","data":{"from_sequence":1,"resumed_at":2,"rooms":["a"],"all_rooms":false,"resumed_position":{"x":1},"reason":null}}"#.into(),
        r#"{"event":"gap","data":{"from_sequence":-1,"resumed_at":2}}"#.into(),
        r#"{"event":"evicted","data":{"code":"taken_over","reason":"r","room_id":null}}"#.into(),
        r#"{"event":"evicted","data":{"code":7}}"#.into(),
        r#"{"event":"subscription_changed","data":{"rooms":["a","b"],"reason":"x"}}"#.into(),
        r#"{"event":"subscription_changed","data":{"rooms":null}}"#.into(),
        r#"{"event":"subscription_changed","data":{"rooms":"a"}}"#.into(),
        r#"{"event":"room_released","data":{"room_id":"a","session_id":"s"}}"#.into(),
        r#"{"event":"refused","data":{"status":409,"detail":{"code":"x"}}}"#.into(),
        r#"{"event":"refused","data":{"status":70000}}"#.into(),
        r#"{"event":"refused","data":{"status":409,"status":409}}"#.into(),
        format!(r#"{{"event":"connection_state","data":{state}}}"#),
        format!(r#"{{"event":"connection_state","data":{}}}"#, state.replace("2.5", "1e999")),
        format!(r#"{{"event":"connection_state","data":{}}}"#, state.replace(r#""generation":3"#, r#""generation":"g-\u0037""#)),
        format!(r#"{{"event":"connection_state","data":{}}}"#, state.replace(r#""generation":3"#, r#""generation":3.0"#)),
        format!(r#"{{"event":"connection_state","data":{}}}"#, state.replace(r#""generation":3"#, r#""generation":null"#)),
        format!(r#"{{"event":"connection_state","data":{}}}"#, state.replace(r#""spawn_capable":true"#, r#""spawn_capable":1"#)),
        format!(r#"{{"event":"connection_state","data":{}}}"#, state.replace(r#""cursor":4"#, r#""cursor":null"#)),
        r#"{"type":"ping"}"#.into(),
        r#"{"type":"message"}"#.into(),
        r#"{"type":"novel","x":1}"#.into(),
        " \t{\"type\":\"novel\",\"x\":[1, {}] }\n ".into(),
        " {\"event\":\"novel\",\"data\": {\"x\" : 1 } } ".into(),
        r#"{"type":"evicted","code":"closed","reason":"gone"}"#.into(),
        r#"{"type":7}"#.into(),
        r#"{}"#.into(),
        r#"{"event":null,"type":null}"#.into(),
        r#"{"event":"message","data":{"room_id":"r","sequence":7,"payload":1},"id":7"#.into(),
        r#"[1]"#.into(),
        r#"  {"event":"ping","data":{}}"#.into(),
    ]
}

#[test]
fn the_decoders_agree_with_the_serde_ones() {
    let mut texts = cases();
    // Every prefix of a valid frame: truncated text must fail the same way.
    let full = texts[0].clone();
    texts.extend((1..full.len()).map(|n| full[..n].to_string()));
    for text in &texts {
        check(text);
    }
    assert!(matches!(decode(&texts[0]), Ok(Frame::Event(_))));
    for (name, data, id) in [
        ("message", r#"{"room_id":"r","sequence":7,"payload":{}}"#, Some("7")),
        ("message", r#"{"room_id":"r","sequence":7,"payload":{}}"#, Some("x")),
        ("message", "", Some("7")),
        ("message", "null", Some("7")),
        ("message", "[1]", Some("7")),
        ("message", r#"{"room_id":"r","sequence":7,"payload":{}}"#, None),
        ("ping", "", None),
        ("ping", "{", None),
        ("novel", "", None),
        ("novel", r#"{"a":"\ud800"}"#, None),
        ("gap", r#"{"from_sequence":1,"resumed_at":2}"#, None),
        ("connection_state", r#"{"connection_id":"c"}"#, None),
    ] {
        check_sse(name, data, id);
    }
}

/// Values that fill a field of any kind: the right type, the wrong ones, null, lossy ones.
fn value() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("null".to_string()),
        Just("true".to_string()),
        Just("\"r\"".to_string()),
        Just("\"\\ud800\"".to_string()),
        Just("\"a\\u00e9\"".to_string()),
        Just("1e999".to_string()),
        Just("2.5".to_string()),
        Just("-3".to_string()),
        Just("65536".to_string()),
        Just("[\"a\",\"b\"]".to_string()),
        Just("[\"a\",2]".to_string()),
        Just("{\"k\":[1,{}]}".to_string()),
        (0u64..20).prop_map(|n| n.to_string()),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2048))]

    #[test]
    fn generated_frames_decode_as_the_serde_decoders_did(
        event in prop::sample::select(vec![
            "message", "joined", "novel", "ping", "gap", "evicted", "subscription_changed",
            "room_released", "refused", "connection_state",
        ]),
        fields in prop::collection::vec((prop::sample::select(vec![
            "type", "room_id", "bridge_id", "channel_type", "payload", "sequence", "connection_id",
            "agent_id", "generation", "scope", "filter", "spawn_capable", "rooms", "cursor",
            "protocol", "heartbeat_interval_seconds", "server", "client", "from_sequence",
            "resumed_at", "resumed_position", "all_rooms", "reason", "code", "session_id", "status",
            "detail", "other",
        ]), value()), 0..12),
        id in prop::option::of(value()),
        flat in any::<bool>(),
    ) {
        let body: Vec<String> = fields.iter().map(|(k, v)| format!("\"{k}\":{v}")).collect();
        let body = body.join(",");
        let text = match (&id, flat) {
            (_, true) => format!(r#"{{"type":"{event}"{}{body}}}"#, if body.is_empty() { "" } else { "," }),
            (Some(id), false) => format!(r#"{{"event":"{event}","data":{{{body}}},"id":{id}}}"#),
            (None, false) => format!(r#"{{"event":"{event}","data":{{{body}}}}}"#),
        };
        let (new, old) = (decode(&text), decode_serde::decode(&text));
        prop_assert!(same(&new, &old), "{}\n new: {:?}\n old: {:?}", text, new, old);
        let sse_id = id.as_deref().map(|i| i.trim_matches('"'));
        let data = format!("{{{body}}}");
        let opts = DecodeOptions::default();
        let (new, old) = (
            decode_sse_with(event, &data, sse_id, &opts),
            decode_serde::decode_sse_with(event, &data, sse_id, &opts),
        );
        prop_assert!(same(&new, &old), "sse {} {:?} {}\n new: {:?}\n old: {:?}", event, sse_id, data, new, old);
    }
}
