//! Every capture of switch-core 0.19.0 in `tests/vectors/switch-0.19/` decodes to what it is,
//! re-encodes byte for byte, and every captured HTTP answer maps to the right typed result.

use agentwire_core::ErrorKind;
use agentwire_switch::frame::{decode_sse, sse_parts, EventKind, EvictionCode, Frame};
use agentwire_switch::ops::{self, ListRooms, PostMessage, SendTargetedMessage};
use agentwire_switch::sse::{encode_event, SseLimits, SseParser};
use agentwire_switch::SwitchError;
use serde_json::Value;
use std::path::PathBuf;

fn dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/vectors/switch-0.19")
}

fn read(name: &str) -> String {
    std::fs::read_to_string(dir().join(name)).unwrap_or_else(|e| panic!("{name}: {e}"))
}

/// The one SSE frame of a capture, decoded.
fn frame(name: &str) -> Frame {
    let bytes = read(name);
    let mut out = Vec::new();
    SseParser::new(SseLimits::default()).feed(bytes.as_bytes(), &mut out);
    assert_eq!(out.len(), 1, "{name}: one frame");
    let ev = out.pop().unwrap().unwrap();
    let frame = decode_sse(&ev.event, &ev.data, ev.id.as_deref()).unwrap_or_else(|e| panic!("{name}: {e}"));
    let (event, data, id) = sse_parts(&frame);
    assert_eq!(
        encode_event(&event, &data, id.as_deref()),
        bytes,
        "{name}: re-encoded byte for byte"
    );
    frame
}

fn event(name: &str) -> agentwire_switch::frame::DomainEvent {
    match frame(name) {
        Frame::Event(e) => {
            assert_eq!(e.room_id, "47e911ea-014b-427b-a600-1c72595f0c98");
            assert_eq!(e.bridge_id, None);
            assert_eq!(e.channel_type.as_deref(), Some("channel_public"));
            e
        }
        other => panic!("{name}: {other:?}"),
    }
}

#[test]
fn every_capture_is_covered() {
    let mut names: Vec<String> = std::fs::read_dir(dir())
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| n.ends_with(".sse"))
        .collect();
    names.sort();
    assert_eq!(
        names,
        [
            "command.sse",
            "connection_state.sse",
            "evicted_heartbeat.sse",
            "evicted_superseded.sse",
            "gap_restart.sse",
            "message_addressed.sse",
            "message_threaded_addressed.sse",
            "message_unaddressed.sse",
            "room_join.sse",
            "subscription_changed.sse",
            "task_accept.sse",
            "task_delegate.sse",
            "task_finalise.sse",
            "task_update.sse",
        ],
        "a new capture needs its test below"
    );
}

#[test]
fn connection_state() {
    let Frame::ConnectionState(s) = frame("connection_state.sse") else {
        panic!()
    };
    assert_eq!(s.connection_id, "19209fad-88d2-4353-b857-10454fb40fa5");
    assert_eq!(s.agent_id, "e9dc227d-d507-4a61-98ac-65eb81f2f27a");
    assert_eq!(
        (s.scope.as_str(), s.filter.as_str(), s.spawn_capable),
        ("single", "all", false)
    );
    assert_eq!(s.rooms, ["47e911ea-014b-427b-a600-1c72595f0c98"]);
    assert_eq!(
        (
            s.cursor,
            s.protocol,
            s.heartbeat_interval_seconds,
            s.generation.is_none()
        ),
        (4, Some(1), Some(2.0), true)
    );
    let server = s.server_info().unwrap().unwrap();
    assert_eq!(server.version.as_deref(), Some("0.19.0"));
    assert_eq!(
        (
            server.contracts["agent-protocol"].speaks,
            server.contracts["agent-protocol"].accepts
        ),
        (1, 1)
    );
    let client: Value = serde_json::from_str(s.client.unwrap().get()).unwrap();
    assert_eq!(client["artifact"], "peer-probe");
}

#[test]
fn control_frames() {
    let Frame::Evicted(e) = frame("evicted_heartbeat.sse") else {
        panic!()
    };
    assert_eq!(
        (e.code.clone(), e.effective_code(), e.reason.as_str()),
        (None, EvictionCode::HeartbeatLapsed, "heartbeat lapsed")
    );
    let Frame::Evicted(e) = frame("evicted_superseded.sse") else {
        panic!()
    };
    assert_eq!(e.effective_code(), EvictionCode::TakenOver);
    assert!(!e.effective_code().should_reconnect());
    let Frame::Gap(g) = frame("gap_restart.sse") else {
        panic!()
    };
    assert_eq!(
        (g.from_sequence, g.resumed_at, g.rooms, g.all_rooms),
        (8, 8, None, None)
    );
    assert!(g.reason.contains("the server restarted") && g.reason.contains('\u{2014}'));
    let Frame::SubscriptionChanged(s) = frame("subscription_changed.sse") else {
        panic!()
    };
    assert_eq!((s.rooms.len(), s.reason.as_str()), (1, "subscription updated"));
}

#[test]
fn messages() {
    let e = event("message_addressed.sse");
    assert_eq!((e.kind.clone(), e.sequence), (EventKind::Message, 2));
    let m = e.message().unwrap();
    assert!(m.addressed);
    assert_eq!(
        (m.sender_name.as_deref(), m.body.as_str()),
        (Some("peer-beta"), "@peer-alpha ping alpha")
    );
    assert_eq!(
        (m.timestamp, m.thread_id, m.attachments.len()),
        (Some(1_796_214_836_233), None, 0)
    );
    let m = event("message_unaddressed.sse").message().unwrap();
    assert!(!m.addressed);
    assert_eq!(m.body, "hello from beta");
    let e = event("message_threaded_addressed.sse");
    assert_eq!(e.sequence, 14);
    let m = e.message().unwrap();
    assert_eq!(
        m.thread_id.as_deref(),
        Some("$D0p7M3mReDrUSo6VPulkikGuGfNgB67cT2PopTXuxGY")
    );
    assert_eq!(
        m.message_id.as_deref(),
        Some("$kd96b5qx8jPuGrwDwicoWZjIKUl1SBNvUszMvQqjkuI")
    );
}

#[test]
fn commands_joins_and_tasks() {
    let e = event("command.sse");
    assert_eq!((e.kind.clone(), e.sequence), (EventKind::Command, 13));
    let c = e.command().unwrap();
    assert_eq!(
        (c.command.as_str(), c.args.as_str(), c.user_name.as_deref()),
        ("reset", "", Some("bob"))
    );
    let j = event("room_join.sse").room_join().unwrap();
    assert_eq!(
        (j.member_name.as_deref(), j.listening, j.timestamp),
        (Some("peer-beta"), Some(true), Some(1_796_213_908_103))
    );
    for (name, kind, seq, extra) in [
        ("task_accept.sse", EventKind::TaskAccept, 12, None),
        (
            "task_delegate.sse",
            EventKind::TaskDelegate,
            15,
            Some(("summary", "probe task")),
        ),
        (
            "task_update.sse",
            EventKind::TaskUpdate,
            13,
            Some(("update", "half way")),
        ),
        (
            "task_finalise.sse",
            EventKind::TaskFinalise,
            14,
            Some(("outcome", "done")),
        ),
    ] {
        let e = event(name);
        assert_eq!((e.kind.clone(), e.sequence), (kind, seq), "{name}");
        let t = e.task().unwrap();
        assert_eq!(t.task_id, "4cbceb51-f601-4082-bc66-4e290cc214a0");
        assert_eq!(
            t.performer_agent_id.as_deref(),
            Some("e9dc227d-d507-4a61-98ac-65eb81f2f27a")
        );
        if let Some((field, value)) = extra {
            let p: Value = serde_json::from_str(e.payload.get()).unwrap();
            assert_eq!(p[field], value, "{name}");
        }
    }
}

fn http() -> Value {
    serde_json::from_str(&read("http_responses.json")).unwrap()
}

/// Status and body text of a captured answer.
fn answer(name: &str) -> (u16, String) {
    let v = &http()[name];
    let status = v["status"].as_u64().unwrap() as u16;
    let body = match &v["body"] {
        Value::String(s) => s.clone(),
        Value::Null => String::new(),
        other => other.to_string(),
    };
    (status, body)
}

fn error(name: &str) -> SwitchError {
    let (status, body) = answer(name);
    SwitchError::http(status, &body)
}

#[test]
fn captured_http_errors_are_typed() {
    for (name, kind, text) in [
        ("events_bad_key", ErrorKind::Auth, "Invalid credentials"),
        (
            "events_no_auth_header",
            ErrorKind::Auth,
            "Missing or invalid Authorization header",
        ),
        (
            "events_protocol_mismatch",
            ErrorKind::State,
            "the ranges do not overlap",
        ),
        (
            "events_missing_connection_id",
            ErrorKind::Invalid,
            "connection_id is required",
        ),
        ("events_bad_scope", ErrorKind::Invalid, "scope must be"),
        ("events_bad_start_from", ErrorKind::Invalid, "start_from must be"),
        ("events_rooms_not_member", ErrorKind::Auth, "Room not found"),
        ("beat_no_stream", ErrorKind::State, "no stream attached"),
        ("beat_unknown_connection", ErrorKind::Invalid, "is not open"),
        ("beat_missing_connection_id", ErrorKind::Invalid, "Field required"),
        ("subscribe_occupied", ErrorKind::State, "already held"),
        ("op_dead_connection_header", ErrorKind::State, "is not open"),
        ("op_unknown", ErrorKind::Invalid, "unknown operation"),
        ("op_unexpected_arg", ErrorKind::Invalid, "does not accept: bogus"),
        ("op_not_connected", ErrorKind::Invalid, "Call connect_to_room first"),
    ] {
        let e = error(name);
        assert_eq!(e.kind, kind, "{name}: {e:?}");
        assert!(e.message.contains(text), "{name}: {}", e.message);
        assert_eq!(e.status, Some(answer(name).0));
    }
    // The protocol mismatch detail is an object: its message is the text, the object is kept.
    let e = error("events_protocol_mismatch");
    assert!(e.detail.unwrap().contains("\"remedy\":\"update switch-core\""));
}

#[test]
fn captured_http_successes_decode() {
    let (status, body) = answer("beat_ok");
    let b = ops::decode_beat(status, &body).unwrap();
    assert_eq!((b.ok, b.cursor, b.rooms.len()), (true, Some(4), 1));
    let (status, body) = answer("subscribe_takeover");
    let s = ops::decode_subscribe(status, &body).unwrap();
    assert_eq!(s.evicted_connection_id.as_deref(), Some("<other>"));
    assert!(s.warning.unwrap().starts_with("You evicted another session"));
    let (status, body) = answer("unsubscribe");
    assert!(ops::decode_unsubscribe(status, &body).unwrap().rooms.is_empty());
    let (status, body) = answer("op_post_message_ok");
    assert_eq!(
        ops::decode::<PostMessage>(status, &body).unwrap().event_id,
        "$HR4Wo8OJUyhPBb9Ll0yhkkFcpksvBdOjyZC1fJ-wGRg"
    );
    let (status, body) = answer("op_send_targeted_ok");
    let t = ops::decode::<SendTargetedMessage>(status, &body).unwrap();
    assert_eq!(t.target_statuses["peer-alpha"], "live");
    let (status, body) = answer("op_delegate_task_ok");
    let r: Value = serde_json::from_str(ops::decode_result(status, &body).unwrap().get()).unwrap();
    assert_eq!(r["status"], "pending");
    // A list_rooms answer must be a list: an object is a decode error, not a panic.
    assert_eq!(
        ops::decode::<ListRooms>(status, &body).unwrap_err().kind,
        ErrorKind::Decode
    );
}

#[test]
fn the_captured_operation_catalog() {
    let catalog = ops::decode_ops(200, &read("ops.json")).unwrap();
    assert_eq!(catalog.operations.len(), 45);
    for name in [
        "connect_to_room",
        "post_message",
        "send_targeted_message",
        "read_context",
        "list_rooms",
        "list_participants",
    ] {
        let op = &catalog.operations[name];
        assert!(!op.description.is_empty(), "{name}");
        let schema: Value = serde_json::from_str(op.input_schema.get()).unwrap();
        assert_eq!(schema["type"], "object", "{name}");
    }
}
