//! The bounds every surface takes from the engine rather than keeping its own copy: the largest
//! frame on either wire (`ConnectionConfig::set_max_message_bytes`), how much of a refused
//! open's body counts (`REFUSAL_BODY_MAX`), `connect_attempts` as a plain number, and the clamp on
//! a `connection_state`'s heartbeat interval, the shortest operation timeout.

mod common;

use agentwire_core::http::REFUSAL_BODY_MAX;
use agentwire_core::ErrorKind;
use agentwire_switch::connection::{ConnectionConfig, Event, Transport};
use agentwire_switch::frame::{decode, Frame, MAX_HEARTBEAT_INTERVAL_MS, MIN_HEARTBEAT_INTERVAL_MS};
use agentwire_switch::open::StartFrom;
use agentwire_switch::SwitchError;
use common::*;

fn capture(name: &str) -> String {
    let path = format!("{}/../../tests/vectors/switch-0.19/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// A `message` frame as switch-core 0.19 sends it on SSE (`sequence` 5), of exactly `len` bytes.
fn sse_frame(len: usize) -> String {
    let frame = |body: &str| {
        format!(
            r#"{{"type":"message","room_id":"{ROOM}","bridge_id":null,"channel_type":"channel_public","payload":{{"body":"{body}"}},"sequence":5}}"#
        )
    };
    let frame = frame(&"x".repeat(len - frame("").len()));
    assert_eq!(frame.len(), len);
    frame
}

/// What an SSE connection attached with the captured `connection_state` makes of one event whose
/// `data` is `data`, on one line: the delivered sequences, and the kinds of the diagnostics.
fn over_sse(cfg: ConnectionConfig, data: &str) -> (Vec<u64>, Vec<ErrorKind>) {
    let mut cfg = ConnectionConfig {
        transport: Transport::Sse,
        ..cfg
    };
    cfg.open.start_from = StartFrom::After(0);
    let (mut d, _) = Driver::opened(cfg);
    d.conn.handle_bytes(d.now, capture("connection_state.sse").as_bytes());
    assert!(matches!(d.events()[..], [Event::Connected { .. }]));
    let event = format!("event: message\nid: 5\ndata: {data}\n\n");
    for chunk in event.as_bytes().chunks(64 << 10) {
        d.conn.handle_bytes(d.now, chunk);
    }
    let e = d.events();
    let diagnostics = e
        .iter()
        .filter_map(|e| match e {
            Event::Diagnostic(err) => Some(err.kind),
            _ => None,
        })
        .collect();
    (sequences(&e), diagnostics)
}

/// The reviewer's case: `maxMessageBytes` of 2 MiB set only the decoder's bound in npm, and an
/// SSE event of 1.5 MiB was dropped by the parser's 1 MiB line bound (the component set all
/// three, and delivered it).
#[test]
fn max_message_bytes_bounds_a_frame_on_the_sse_wire_too() {
    let mut cfg = config(Transport::Sse);
    cfg.set_max_message_bytes(2 << 20);
    assert_eq!(
        (cfg.sse.max_event_bytes, cfg.decode.max_message_bytes),
        (2 << 20, 2 << 20)
    );
    assert_eq!(over_sse(cfg, &sse_frame(1_500_000)), (vec![5], vec![]));
}

/// A frame of exactly the bound on one `data: ` line is taken on SSE as on the WebSocket, the
/// default bound included (its line bound was the same 1 MiB, and the `data: ` before the frame
/// made the line too long); one byte more is refused, on either wire.
#[test]
fn a_frame_of_exactly_max_message_bytes_is_taken_on_either_wire() {
    let default = config(Transport::Sse);
    let mut small = config(Transport::Sse);
    small.set_max_message_bytes(4096);
    for cfg in [default, small] {
        let n = cfg.decode.max_message_bytes;
        assert_eq!(over_sse(cfg.clone(), &sse_frame(n)), (vec![5], vec![]), "{n}");
        assert_eq!(
            over_sse(cfg.clone(), &sse_frame(n + 1)),
            (vec![], vec![ErrorKind::Limit]),
            "{n}"
        );

        let ws = ConnectionConfig {
            transport: Transport::WebSocket,
            ..cfg
        };
        let mut d = Driver::live_ws(ws, 0, &[ROOM]);
        let at = |len: usize| {
            let m = message(1);
            m.replace(
                "\"body\":\"m1\"",
                &format!("\"body\":\"m1{}\"", "x".repeat(len - m.len())),
            )
        };
        d.text(&at(n + 1));
        d.text(&at(n));
        let e = d.events();
        assert!(
            matches!(&e[0], Event::Diagnostic(err) if err.kind == ErrorKind::Limit),
            "{n}: {e:?}"
        );
        assert_eq!(sequences(&e), vec![1], "{n}");
    }
}

/// A `409 taken_over` naming 300 rooms (6.7 KB): the npm drivers handed the engine its first
/// 4,096 bytes, which are no JSON, and the connection took it for a retryable refusal without a
/// code; natively (64 KiB) it stopped for good. Whatever a driver hands over past
/// `REFUSAL_BODY_MAX`, the engine reads the same.
#[test]
fn a_refusal_means_what_its_first_refusal_body_max_bytes_say() {
    let rooms = |n: usize| {
        (0..n)
            .map(|i| format!("\"room-{i:04}-0000-0000\""))
            .collect::<Vec<_>>()
            .join(",")
    };
    let body = |n: usize| {
        format!(
            r#"{{"code":"taken_over","detail":{{"message":"another client took this connection over","rooms":[{}]}}}}"#,
            rooms(n)
        )
    };
    let refused = |body: &str| {
        let mut d = Driver::new(config(Transport::WebSocket));
        d.conn.start(d.now).unwrap();
        d.expect_open();
        d.conn.handle_open_failed(d.now, Some(409), body);
        match &d.events()[..] {
            [Event::Stopped { error: Some(e) }] => e.clone(),
            other => panic!("{other:?}"),
        }
    };
    let taken_over = body(300);
    assert_eq!(taken_over.len(), 6_695);
    let cut = agentwire_core::text::prefix(&taken_over, REFUSAL_BODY_MAX);
    let e = refused(cut);
    assert_eq!((e.code.as_deref(), e.retryable), (Some("taken_over"), false), "{e:?}");

    let long = body(4_000);
    assert!(long.len() > REFUSAL_BODY_MAX);
    let same = |e: &SwitchError| {
        (
            e.kind,
            e.status,
            e.code.clone(),
            e.retryable,
            e.message.clone(),
            e.detail.clone(),
        )
    };
    assert_eq!(
        same(&refused(&long)),
        same(&refused(agentwire_core::text::prefix(&long, REFUSAL_BODY_MAX))),
        "the engine reads no more than a driver hands over"
    );
}

/// 0 is no bound, as npm and the component take it; `n` is `n` opens.
#[test]
fn connect_attempts_as_a_number() {
    let mut cfg = config(Transport::WebSocket);
    cfg.set_connect_attempts(0);
    assert_eq!(cfg.connect_attempts, None);
    cfg.set_connect_attempts(3);
    assert_eq!(cfg.connect_attempts, Some(3));
}

#[test]
fn a_connection_states_heartbeat_interval_is_clamped() {
    let state = |secs: &str| {
        let text = format!(
            r#"{{"event":"connection_state","data":{{"connection_id":"c","agent_id":"a","scope":"single","filter":"all","spawn_capable":false,"rooms":[],"cursor":0,"heartbeat_interval_seconds":{secs}}}}}"#
        );
        match decode(&text) {
            Ok(Frame::ConnectionState(s)) => s.heartbeat_interval_ms(),
            other => panic!("{other:?}"),
        }
    };
    assert_eq!(state("2.5"), Some(2_500));
    assert_eq!(state("1e-6"), Some(MIN_HEARTBEAT_INTERVAL_MS));
    assert_eq!(state("1e9"), Some(MAX_HEARTBEAT_INTERVAL_MS));
    assert_eq!(state("0"), None);
    assert_eq!(state("-1"), None);
    assert_eq!(state("null"), None);
}

/// The shortest operation timeout, one rule for every surface (native's `op_timeout`, npm's
/// `opTimeoutMs` and a call's `timeoutMs`): 0 is refused, `invalid`, naming the option.
#[test]
fn an_operation_timeout_is_at_least_one_millisecond() {
    use agentwire_switch::ops::{check_op_timeout_ms, DEFAULT_OP_TIMEOUT_MS, MIN_OP_TIMEOUT_MS};
    assert_eq!(MIN_OP_TIMEOUT_MS, 1);
    let e = check_op_timeout_ms(0, "op_timeout").unwrap_err();
    assert_eq!(
        (e.kind, e.message.as_str()),
        (ErrorKind::Invalid, "op_timeout must be at least 1 ms")
    );
    for ms in [1, DEFAULT_OP_TIMEOUT_MS, u64::MAX] {
        assert_eq!(check_op_timeout_ms(ms, "op_timeout").unwrap(), ms);
    }
}
