//! Every frame of the current generation's WebSocket, decoded field by field; the errors name the
//! field at fault; encoders and decoders agree.

use agentwire_switch::frame::{
    decode, decode_sse_with, decode_with, encode, encode_pong, ConnGeneration, DecodeOptions, EventKind, EvictionCode,
    Frame, FrameErrorKind,
};

const ROOM: &str = "47e911ea-014b-427b-a600-1c72595f0c98";

fn ok(text: &str) -> Frame {
    decode(text).unwrap_or_else(|e| panic!("{text}: {e}"))
}

fn err(text: &str) -> (FrameErrorKind, Option<String>) {
    let e = decode(text).expect_err(text);
    (e.kind, e.field)
}

#[test]
fn domain_event_with_every_field() {
    let text = format!(
        r#"{{"event":"message","data":{{"type":"message","room_id":"{ROOM}","bridge_id":"b1","channel_type":"channel_public","payload":{{"addressed":true,"sender":"@bob:localhost","sender_name":"bob","message_id":"$m","body":"hi","timestamp":1796214836233,"thread_id":null,"attachments":[{{"filename":"a.txt","mimetype":"text/plain","size":3,"mxc":"mxc://x","msgtype":"m.file"}}]}},"sequence":4813}},"id":4813}}"#
    );
    let Frame::Event(e) = ok(&text) else { panic!() };
    assert_eq!(e.kind, EventKind::Message);
    assert_eq!((e.room_id.as_str(), e.sequence), (ROOM, 4813));
    assert_eq!(e.bridge_id.as_deref(), Some("b1"));
    assert_eq!(e.channel_type.as_deref(), Some("channel_public"));
    let m = e.message().unwrap();
    assert!(m.addressed);
    assert_eq!((m.sender.as_str(), m.body.as_str()), ("@bob:localhost", "hi"));
    assert_eq!(m.timestamp, Some(1_796_214_836_233));
    assert_eq!(m.attachments[0].size, Some(3));
    assert!(e.command().is_err(), "a message is not a command");
    // Re-encoding gives the same frame back, byte for byte.
    assert_eq!(encode(&Frame::Event(e)), text);
}

#[test]
fn id_must_be_a_json_number_equal_to_sequence() {
    let ev = |id: &str, seq: &str| {
        format!(
            r#"{{"event":"message","data":{{"type":"message","room_id":"r","payload":{{}},"sequence":{seq}}},"id":{id}}}"#
        )
    };
    assert_eq!(err(&ev(r#""5""#, "5")), (FrameErrorKind::WrongType, Some("id".into())));
    assert_eq!(err(&ev("5", "6")), (FrameErrorKind::IdMismatch, Some("id".into())));
    assert_eq!(err(&ev("-1", "-1")).1, Some("id".into()));
    assert_eq!(err(&ev("1.5", "1.5")).1, Some("id".into()));
    assert_eq!(
        err(&ev("5", r#""5""#)),
        (FrameErrorKind::WrongType, Some("data.sequence".into()))
    );
    let no_id = r#"{"event":"message","data":{"type":"message","room_id":"r","payload":{},"sequence":5}}"#;
    assert_eq!(err(no_id), (FrameErrorKind::MissingField, Some("id".into())));
    let wrong_type = r#"{"event":"message","data":{"type":"command","room_id":"r","payload":{},"sequence":5},"id":5}"#;
    assert_eq!(err(wrong_type), (FrameErrorKind::IdMismatch, Some("data.type".into())));
    let no_room = r#"{"event":"message","data":{"payload":{},"sequence":5},"id":5}"#;
    assert_eq!(
        err(no_room),
        (FrameErrorKind::MissingField, Some("data.room_id".into()))
    );
    let no_payload = r#"{"event":"message","data":{"room_id":"r","sequence":5},"id":5}"#;
    assert_eq!(
        err(no_payload),
        (FrameErrorKind::MissingField, Some("data.payload".into()))
    );
}

#[test]
fn an_sse_id_is_decimal_digits_only() {
    let opts = DecodeOptions::default();
    let data = r#"{"type":"message","room_id":"r","payload":{},"sequence":5}"#;
    let Frame::Event(e) = decode_sse_with("message", data, Some("5"), &opts).unwrap() else {
        panic!()
    };
    assert_eq!(e.sequence, 5);
    // Rust's `u64::from_str` takes a leading `+`; the spec's id is a decimal number.
    for id in ["+5", "-5", "5 ", " 5", "", "0x5", "5.0"] {
        let e = decode_sse_with("message", data, Some(id), &opts).expect_err(id);
        assert_eq!(
            (e.kind, e.field.as_deref()),
            (FrameErrorKind::WrongType, Some("id")),
            "{id:?}"
        );
    }
    // On the WebSocket the id is a JSON number, which has no `+`.
    let ws = format!(r#"{{"event":"message","data":{data},"id":+5}}"#);
    assert!(decode(&ws).is_err());
}

#[test]
fn connection_state_with_every_field() {
    let text = r#"{"event":"connection_state","data":{"connection_id":"c","agent_id":"a","generation":7,"scope":"all","filter":"addressed","spawn_capable":true,"rooms":["r1","r2"],"cursor":4813,"protocol":6,"heartbeat_interval_seconds":2.0,"server":{"version":"0.20.0","contracts":{"agent-protocol":{"speaks":6,"accepts":1}}},"client":{"speaks":6,"accepts":1,"artifact":"agentwire","version":"0.1.0"}}}"#;
    let Frame::ConnectionState(s) = ok(text) else { panic!() };
    assert_eq!(s.generation, Some(ConnGeneration::Number(7)));
    assert_eq!(
        (s.scope.as_str(), s.filter.as_str(), s.spawn_capable),
        ("all", "addressed", true)
    );
    assert_eq!(
        (s.cursor, s.protocol, s.heartbeat_interval_seconds),
        (4813, Some(6), Some(2.0))
    );
    let server = s.server_info().unwrap().unwrap();
    assert_eq!(server.version.as_deref(), Some("0.20.0"));
    assert_eq!(server.contracts["agent-protocol"].speaks, 6);
    assert_eq!(encode(&Frame::ConnectionState(s)), text);
    // A string generation is kept as text.
    let text = text.replace(r#""generation":7"#, r#""generation":"g-7""#);
    let Frame::ConnectionState(s) = ok(&text) else { panic!() };
    assert_eq!(s.generation.unwrap().to_string(), "g-7");
}

#[test]
fn the_other_control_frames() {
    let Frame::Gap(g) = ok(
        r#"{"event":"gap","data":{"from_sequence":10,"resumed_at":500,"resumed_position":{"x":1},"rooms":["r"],"all_rooms":true,"reason":"the server restarted"}}"#,
    ) else {
        panic!()
    };
    assert_eq!((g.from_sequence, g.resumed_at, g.all_rooms), (10, 500, Some(true)));
    assert_eq!(g.resumed_position.unwrap().get(), r#"{"x":1}"#);
    let Frame::Evicted(e) =
        ok(r#"{"event":"evicted","data":{"code":"heartbeat_lapsed","reason":"lapsed","room_id":null}}"#)
    else {
        panic!()
    };
    assert_eq!(e.code, Some(EvictionCode::HeartbeatLapsed));
    let Frame::SubscriptionChanged(s) =
        ok(r#"{"event":"subscription_changed","data":{"rooms":["r"],"reason":"subscription updated"}}"#)
    else {
        panic!()
    };
    assert_eq!(s.rooms, ["r"]);
    let Frame::RoomReleased(r) = ok(r#"{"event":"room_released","data":{"room_id":"r","session_id":"s1"}}"#) else {
        panic!()
    };
    assert_eq!(r.session_id.as_deref(), Some("s1"));
    let Frame::Refused(r) =
        ok(r#"{"event":"refused","data":{"status":400,"detail":"scope must be 'single' or 'all'"}}"#)
    else {
        panic!()
    };
    assert_eq!(
        (r.status, r.detail_text().as_str()),
        (400, "scope must be 'single' or 'all'")
    );
    assert!(matches!(ok(r#"{"event":"ping","data":{}}"#), Frame::Ping));
    assert!(matches!(ok(r#"{"event":"ping"}"#), Frame::Ping));
    assert!(
        matches!(ok(r#"{"type":"ping"}"#), Frame::Ping),
        "the flat shape is accepted too"
    );
    assert!(matches!(
        ok(r#"{"type":"gap","from_sequence":1,"resumed_at":2,"reason":""}"#),
        Frame::Gap(_)
    ));
}

#[test]
fn unknown_kinds_are_passed_through() {
    match ok(r#"{"event":"session_commands","data":{"session_ids":["s"]}}"#) {
        Frame::Unknown { name, raw } => {
            assert_eq!(name, "session_commands");
            assert_eq!(raw.get(), r#"{"session_ids":["s"]}"#, "the data, as on SSE");
        }
        other => panic!("{other:?}"),
    }
    let Frame::Event(e) = ok(
        r#"{"event":"task_cancel","data":{"type":"task_cancel","room_id":"r","payload":{"task_id":"t","reason":"no"},"sequence":3},"id":3}"#,
    ) else {
        panic!()
    };
    assert_eq!(e.task().unwrap().task_id, "t");
    let Frame::Event(e) = ok(r#"{"event":"novel","data":{"room_id":"r","payload":{},"sequence":3},"id":3}"#) else {
        panic!()
    };
    assert_eq!(e.kind, EventKind::Other("novel".into()));
}

#[test]
fn a_control_frames_null_data_is_no_data_on_both_transports() {
    // A WebSocket `"data": null` read as no data (`{}`) where SSE's `data: null` kept `null`, so
    // an unknown frame from SSE did not survive its own encoding (found by the fuzz target
    // `frame`: `{"event":"x","data":null}` decoded with `{}`).
    let opts = DecodeOptions::default();
    for name in ["ping", "session_commands"] {
        let ws = decode_with(&format!(r#"{{"event":"{name}","data":null}}"#), &opts).unwrap();
        let sse = decode_sse_with(name, " null ", None, &opts).unwrap();
        assert_eq!(encode(&ws), encode(&sse), "{name}");
        assert_eq!(
            encode(&decode_with(&encode(&sse), &opts).unwrap()),
            encode(&sse),
            "{name}"
        );
    }
}

#[test]
fn a_lone_surrogate_escape_is_named_not_called_a_wrong_type() {
    // It is a string: "must be a string" misled. Every reader of text says the same.
    let ev = |data: &str| format!(r#"{{"event":"message","data":{{{data}}},"id":5}}"#);
    for (text, field) in [
        (ev(r#""room_id":"r\ud800","payload":{},"sequence":5"#), "data.room_id"),
        (ev(r#""type":"\udc00","room_id":"r","payload":{},"sequence":5"#), "data.type"),
        (ev(r#""room_id":"r","bridge_id":"\ud800x","payload":{},"sequence":5"#), "data.bridge_id"),
        (r#"{"event":"\ud800","data":{}}"#.to_owned(), "event"),
        (
            r#"{"event":"subscription_changed","data":{"rooms":["r","\ud800"],"reason":"x"}}"#.to_owned(),
            "data.rooms",
        ),
        (
            r#"{"event":"connection_state","data":{"connection_id":"c","agent_id":"a","generation":"\ud800","scope":"single","filter":"all","rooms":[],"cursor":0}}"#.to_owned(),
            "data.generation",
        ),
    ] {
        let e = decode(&text).expect_err(&text);
        assert_eq!((e.kind, e.field.as_deref()), (FrameErrorKind::WrongType, Some(field)), "{text}");
        assert_eq!(e.message, format!("`{field}` has a lone surrogate escape (not valid Unicode)"), "{text}");
    }
    // A number beyond f64 is a number too.
    let big = r#"{"event":"connection_state","data":{"connection_id":"c","agent_id":"a","scope":"single","filter":"all","rooms":[],"cursor":0,"heartbeat_interval_seconds":1e400}}"#;
    assert_eq!(
        decode(big).unwrap_err().message,
        "`data.heartbeat_interval_seconds` is a number beyond f64"
    );
    // A wrong type is still named as one.
    let e = decode(&ev(r#""room_id":7,"payload":{},"sequence":5"#)).unwrap_err();
    assert_eq!(e.message, "`data.room_id` must be a string");
}

/// A number out of a whole-number field's range (too large, negative, fractional) is told the
/// range, not a wrong type: it is a number.
#[test]
fn a_number_out_of_range_is_told_the_range() {
    const U64_RANGE: &str = "must be a whole number from 0 to 18446744073709551615";
    let event = |sequence: &str, id: &str| {
        format!(r#"{{"event":"message","data":{{"room_id":"r","payload":{{}},"sequence":{sequence}}},"id":{id}}}"#)
    };
    let gap =
        |from: &str| format!(r#"{{"event":"gap","data":{{"from_sequence":{from},"resumed_at":2,"reason":"r"}}}}"#);
    let state = |generation: &str| {
        format!(
            r#"{{"event":"connection_state","data":{{"connection_id":"c","agent_id":"a","generation":{generation},"scope":"single","filter":"all","rooms":[],"cursor":4}}}}"#
        )
    };
    let refused = |status: &str| format!(r#"{{"event":"refused","data":{{"status":{status},"detail":"x"}}}}"#);
    for (text, field, message) in [
        (
            event("18446744073709551616", "7"),
            "data.sequence",
            U64_RANGE.to_string(),
        ),
        (event("-1", "7"), "data.sequence", U64_RANGE.to_string()),
        (event("7", "18446744073709551616"), "id", U64_RANGE.to_string()),
        (event("7", "-7"), "id", U64_RANGE.to_string()),
        (gap("1.5"), "data.from_sequence", U64_RANGE.to_string()),
        (
            state("18446744073709551616"),
            "data.generation",
            format!("{U64_RANGE} or a string"),
        ),
        (
            refused("70000"),
            "data.status",
            "must be a whole number from 0 to 65535".to_string(),
        ),
    ] {
        let e = decode(&text).expect_err(&text);
        assert_eq!(
            (e.kind, e.field.as_deref()),
            (FrameErrorKind::WrongType, Some(field)),
            "{text}"
        );
        assert_eq!(e.message, format!("`{field}` {message}"), "{text}");
    }
    // Another kind of value is still a wrong type.
    let e = decode(&refused(r#""409""#)).unwrap_err();
    assert_eq!(
        e.message,
        "`data.status` has the wrong type: expected a whole number up to 65535, got a string"
    );
}

#[test]
fn malformed_frames_name_what_was_wrong() {
    assert_eq!(err("").0, FrameErrorKind::Syntax);
    assert_eq!(err("[]").0, FrameErrorKind::Syntax);
    assert_eq!(err(r#"{"event":"gap""#).0, FrameErrorKind::Syntax);
    assert_eq!(
        err(r#"{"data":{}}"#),
        (FrameErrorKind::MissingField, Some("event".into()))
    );
    assert_eq!(
        err(r#"{"type":"command"}"#),
        (FrameErrorKind::MissingField, Some("id".into()))
    );
    assert_eq!(err(r#"{"event":5}"#), (FrameErrorKind::WrongType, Some("event".into())));
    assert_eq!(
        err(r#"{"event":"gap","data":[]}"#),
        (FrameErrorKind::WrongType, Some("data".into()))
    );
    assert_eq!(
        err(r#"{"event":"gap","data":{"resumed_at":1}}"#),
        (FrameErrorKind::MissingField, Some("data.from_sequence".into()))
    );
    assert_eq!(
        err(r#"{"event":"refused","data":{"status":"409"}}"#),
        (FrameErrorKind::WrongType, Some("data.status".into()))
    );
    assert_eq!(
        err(r#"{"event":"connection_state","data":{"connection_id":"c"}}"#),
        (FrameErrorKind::MissingField, Some("data.agent_id".into()))
    );
    let opts = DecodeOptions {
        max_message_bytes: 64,
        max_depth: 4,
    };
    let big = format!(r#"{{"event":"x","data":{{"pad":"{}"}}}}"#, "a".repeat(100));
    assert_eq!(decode_with(&big, &opts).unwrap_err().kind, FrameErrorKind::TooLarge);
    assert_eq!(
        decode_with(r#"{"event":"x","data":{"a":[[[[1]]]]}}"#, &opts)
            .unwrap_err()
            .kind,
        FrameErrorKind::TooDeep
    );
    // Brackets inside strings do not count as depth.
    assert!(decode_with(r#"{"event":"x","data":{"a":"[[[[[["}}"#, &opts).is_ok());
}

#[test]
fn the_sequence_of_an_unreadable_event_is_read_from_its_tail() {
    use agentwire_switch::frame::event_id_hint;
    assert_eq!(
        event_id_hint(r#"{"event":"message","data":{"x":[[[[]]]]},"id":4813}"#),
        Some(4813)
    );
    assert_eq!(event_id_hint("{\"event\":\"x\",\"id\" : 7 }\n"), Some(7));
    for none in [
        "",
        "}",
        r#"{"id":"7"}"#,
        r#"{"xid":7}"#,
        r#"{"id":7"#,
        r#"{"data":{"id":7}}"#,
        r#"{"id":123456789012345678901}"#,
    ] {
        assert_eq!(event_id_hint(none), None, "{none}");
    }
}

/// The hint's digit bound is 20, u64's longest: a 20-digit id (up to `u64::MAX`) is read, a
/// longer run of digits is not, even one that would parse (zero-padded).
#[test]
fn the_sequence_hint_reads_twenty_digits_and_no_more() {
    use agentwire_switch::frame::event_id_hint;
    assert_eq!(
        event_id_hint(r#"{"event":"message","id":18446744073709551615}"#),
        Some(u64::MAX)
    );
    assert_eq!(
        event_id_hint(r#"{"id":10000000000000000000,"event":"message""#),
        Some(10_000_000_000_000_000_000)
    );
    assert_eq!(event_id_hint(r#"{"id":000000000000000000007}"#), None, "21 digits");
    assert_eq!(event_id_hint(r#"{"id":00000000000000000007}"#), Some(7), "20 digits");
}

#[test]
fn the_sequence_of_an_unreadable_event_is_its_top_level_id_wherever_it_is() {
    use agentwire_switch::frame::event_id_hint;
    for (text, want) in [
        (r#"{"id":7,"event":"message","data":{"sequence":"x"}}"#, Some(7)),
        (
            r#"{"event":"message","id": 12 ,"data":{"id":9,"sequence":"x"}}"#,
            Some(12),
        ),
        (r#"{"data":{"id":9},"id":12,"event":"message"}"#, Some(12)),
        // Cut short after the id: still read.
        (r#"{"event":"message","id":5,"data":{"payload":{"body":"#, Some(5)),
        // Braces, quotes and keys inside strings are skipped.
        (r#"{"data":{"b":"}"id":1,{"},"id":3}"#, Some(3)),
        (r#"{"data":""id":4","event":"message"}"#, None),
        // Nested ids do not count, nor values spelled `id`, nor arrays of objects.
        (r#"{"data":{"id":9},"event":"message"}"#, None),
        (r#"{"event":"id","x":[{"id":3}],"y":7}"#, None),
        (r#"{"a":[1,{"id":3}],"b":[2]}"#, None),
        // A key past the end of the top-level object does not count.
        (r#"{"event":"x"}{"id":3}"#, None),
        (r#"[{"id":3}]"#, None),
        (r#"{"id":7.5,"event":"message"}"#, None),
        (r#"{"id":-7}"#, None),
    ] {
        assert_eq!(event_id_hint(text), want, "{text}");
    }
}

#[test]
fn the_pong_is_exactly_the_spec_shape() {
    assert_eq!(encode_pong(4813), r#"{"type":"pong","cursor":4813}"#);
}

#[test]
fn control_frames_encode_to_the_event_data_envelope() {
    assert_eq!(encode(&Frame::Ping), r#"{"event":"ping","data":{}}"#);
    for text in [
        r#"{"event":"gap","data":{"from_sequence":8,"resumed_at":8,"reason":"the server restarted \u2014 re-read"}}"#,
        r#"{"event":"evicted","data":{"code":"taken_over","reason":"another stream attached to this connection"}}"#,
        r#"{"event":"subscription_changed","data":{"rooms":[],"reason":"subscription updated"}}"#,
        r#"{"event":"room_released","data":{"room_id":"r","session_id":null}}"#,
        r#"{"event":"refused","data":{"status":409,"detail":{"message":"m"}}}"#,
    ] {
        assert_eq!(encode(&ok(text)), text, "non-ASCII is escaped as switch-core does");
    }
}

proptest::proptest! {
    /// Any text, broken JSON included: an answer, never a panic.
    #[test]
    fn the_id_hint_takes_any_text(text in "[{}\\[\\]\",:\\\\ id0-9]{0,48}") {
        let _ = agentwire_switch::frame::event_id_hint(&text);
    }
}
