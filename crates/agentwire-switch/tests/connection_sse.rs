//! The connection over SSE + beats (switch-core 0.19), fed the captured frames, time passed in.

mod common;

use agentwire_core::ErrorKind;
use agentwire_switch::connection::{ConnectionConfig, Event, State, Transmit, Transport, Wire};
use agentwire_switch::frame::EvictionCode;
use agentwire_switch::open::StartFrom;
use common::*;

fn capture(name: &str) -> String {
    let path = format!("{}/../../tests/vectors/switch-0.19/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn sse() -> ConnectionConfig {
    let mut cfg = config(Transport::Sse);
    // The captures' connection_state says cursor 4; start before it to see every captured event.
    cfg.open.start_from = StartFrom::After(0);
    cfg
}

fn bytes(d: &mut Driver, s: &str) {
    d.conn.handle_bytes(d.now, s.as_bytes());
}

/// Opened and attached with the captured `connection_state`.
fn live() -> Driver {
    let (mut d, path) = Driver::opened(sse());
    assert_eq!(path, format!("/agents/{AGENT}/events?connection_id={CID}&start_from=0"));
    bytes(&mut d, &capture("connection_state.sse"));
    match &d.events()[..] {
        [Event::Connected {
            state,
            wire: Wire::Sse,
            resumed: false,
        }] => {
            assert_eq!(state.generation, None, "no generation in this generation");
            assert_eq!(state.cursor, 4);
        }
        other => panic!("{other:?}"),
    }
    d
}

/// The beat sent now: its id and cursor.
fn beat(d: &mut Driver) -> (u64, u64) {
    let t = d.transmits();
    match &t[..] {
        [Transmit::Http { id, request }] => {
            assert_eq!(request.path, format!("/agents/{AGENT}/connection/beat"));
            let v: serde_json::Value = serde_json::from_str(request.body.as_deref().unwrap()).unwrap();
            assert_eq!(v["connection_id"], CID);
            (*id, v["cursor"].as_u64().unwrap())
        }
        other => panic!("expected one beat, got {other:?}"),
    }
}

#[test]
fn open_request_and_the_captured_frames() {
    let mut d = Driver::new(sse());
    d.conn.start(d.now).unwrap();
    match &d.transmits()[..] {
        [Transmit::Open(o)] => {
            assert_eq!(o.wire, Wire::Sse);
            assert_eq!(o.request.header("Accept"), Some("text/event-stream"));
            assert_eq!(o.request.header("Last-Event-ID"), Some("0"));
        }
        other => panic!("{other:?}"),
    }
    let mut d = live();
    for name in [
        "room_join.sse",
        "message_addressed.sse",
        "message_unaddressed.sse",
        "task_accept.sse",
        "command.sse",
        "message_threaded_addressed.sse",
        "task_delegate.sse",
    ] {
        bytes(&mut d, &capture(name));
    }
    bytes(&mut d, &capture("subscription_changed.sse"));
    let e = d.events();
    assert_eq!(sequences(&e), vec![1, 2, 5, 12, 13, 14, 15]);
    assert!(matches!(e.last(), Some(Event::SubscriptionChanged(s)) if s.rooms == [ROOM]));
    // Captures of other runs reuse sequences: 13 and 14 again are duplicates, dropped.
    bytes(&mut d, &capture("task_update.sse"));
    bytes(&mut d, &capture("task_finalise.sse"));
    assert!(d.delivered().is_empty());
    assert_eq!(d.conn.cursor(), Some(15));
}

#[test]
fn any_chunking_gives_the_same_events() {
    let stream: String = [
        "connection_state.sse",
        "room_join.sse",
        "message_addressed.sse",
        "gap_restart.sse",
        "message_threaded_addressed.sse",
    ]
    .iter()
    .map(|n| capture(n))
    .collect::<Vec<_>>()
    .join(": keepalive\r\n\r\n");
    let crlf = stream.replace('\n', "\r\n");
    for s in [&stream, &crlf] {
        for split in 0..=s.len() {
            let (mut d, _) = Driver::opened(sse());
            d.conn.handle_bytes(d.now, &s.as_bytes()[..split]);
            d.conn.handle_bytes(d.now, &s.as_bytes()[split..]);
            let e = d.events();
            assert!(matches!(e[0], Event::Connected { .. }), "{split}");
            assert_eq!(sequences(&e), vec![1, 2, 14], "{split}");
            let Event::Event { gap: Some(g), .. } = &e[3] else {
                panic!("{split}: {e:?}")
            };
            assert_eq!((g.from_sequence, g.resumed_at), (8, 8));
        }
    }
}

#[test]
fn beats_answered_after_stopped_change_nothing() {
    // Closed by the user, and stopped by a beat refused `401`, with two beats unanswered.
    for stop in [
        |d: &mut Driver, _: u64| d.conn.close(d.now),
        |d: &mut Driver, id: u64| d.conn.handle_http_response(d.now, id, 401, r#"{"detail":"bad key"}"#),
    ] {
        let mut d = live();
        d.advance(2_000);
        let (first, _) = beat(&mut d);
        d.advance(2_000);
        let (second, _) = beat(&mut d);
        stop(&mut d, second);
        assert!(matches!(d.drain().1.last(), Some(Event::Stopped { .. })));
        assert_eq!(d.conn.poll_timeout(), None);
        // The first beat's answer comes late: it arms no timer and queues nothing.
        assert_inert_when_stopped(&mut d, &[first, second]);
    }
}

#[test]
fn beats_carry_the_cursor_every_interval() {
    let mut d = live();
    bytes(&mut d, &capture("message_addressed.sse"));
    d.events();
    d.advance(1_999);
    assert!(d.transmits().is_empty());
    d.advance(1);
    let (id, cursor) = beat(&mut d);
    assert_eq!(cursor, 2);
    d.conn
        .handle_http_response(d.now, id, 200, r#"{"ok":true,"rooms":["r"],"cursor":2}"#);
    assert!(d.events().is_empty());
    assert_eq!(d.conn.rooms(), ["r".to_owned()]);
    d.advance(2_000);
    let (id2, _) = beat(&mut d);
    assert_ne!(id, id2);
    // A late answer to the old beat is a diagnostic, nothing else.
    d.conn.handle_http_response(d.now, id, 200, "{}");
    assert!(matches!(&d.events()[..], [Event::Diagnostic(_)]));
}

#[test]
fn a_beat_carries_the_cursor_of_polled_events_not_of_received_ones() {
    // The beat's cursor is the highest sequence processed: an event received but not yet
    // polled is not processed, and the server must not count it as such.
    let mut d = live();
    bytes(&mut d, &capture("message_addressed.sse"));
    bytes(&mut d, &capture("message_unaddressed.sse"));
    d.advance(2_000);
    let (id, cursor) = beat(&mut d);
    assert_eq!(cursor, 0, "events 2 and 5 are received, not polled");
    d.conn.handle_http_response(d.now, id, 200, r#"{"ok":true}"#);
    assert_eq!(d.delivered(), vec![2, 5]);
    d.advance(2_000);
    assert_eq!(beat(&mut d).1, 5);
}

#[test]
fn the_beat_interval_comes_from_connection_state() {
    // The server announces 5 s; the configured default is 2 s. The first beat comes at 5 s.
    let (mut d, _) = Driver::opened(sse());
    let state = capture("connection_state.sse").replace(
        r#""heartbeat_interval_seconds":2.0"#,
        r#""heartbeat_interval_seconds":5.0"#,
    );
    assert!(state.contains(r#""heartbeat_interval_seconds":5.0"#));
    bytes(&mut d, &state);
    d.events();
    assert_eq!(d.conn.heartbeat_interval_ms(), 5_000);
    d.advance(4_999);
    assert!(d.transmits().is_empty(), "no beat before the announced interval");
    d.advance(1);
    let (id, _) = beat(&mut d);
    d.conn.handle_http_response(d.now, id, 200, r#"{"ok":true}"#);
    d.advance(4_999);
    assert!(d.transmits().is_empty());
    d.advance(1);
    beat(&mut d);
}

#[test]
fn beat_answers_follow_the_table() {
    // (status, body, reopens)
    let cases: [(u16, &str, Option<bool>); 9] = [
        (
            404,
            r#"{"detail":"connection nope is not open; reconnect and resume from your cursor"}"#,
            Some(true),
        ),
        (
            409,
            r#"{"detail":"connection c has no stream attached; reopen the event stream"}"#,
            Some(true),
        ),
        (409, r#"{"detail":"x","code":"no_stream"}"#, Some(true)),
        (409, r#"{"detail":"x","code":"unfenced"}"#, Some(true)),
        (409, r#"{"detail":"x","code":"taken_over"}"#, Some(false)),
        (409, r#"{"detail":"x","code":"heartbeat_lapsed"}"#, Some(true)),
        // "The same codes come back in the body of a 409": `closed` is not retried
        // automatically, as after an `evicted` frame.
        (409, r#"{"detail":"agent deleted","code":"closed"}"#, Some(false)),
        // A code the client does not know: the beat table, "Reopen the stream, except on
        // `taken_over`" (an `evicted` frame's unknown code stops).
        (409, r#"{"detail":"x","code":"something_new"}"#, Some(true)),
        (401, "Invalid credentials", Some(false)),
    ];
    for (status, body, reopens) in cases {
        let mut d = live();
        d.advance(2_000);
        let (id, _) = beat(&mut d);
        d.conn.handle_http_response(d.now, id, status, body);
        let (t, e) = d.drain();
        assert!(matches!(&t[..], [Transmit::Close { .. }]), "{status} {body}: {t:?}");
        match reopens {
            Some(true) => {
                assert!(matches!(&e[..], [Event::Disconnected { .. }]), "{status}: {e:?}");
                let path = d.reopen();
                assert!(path.contains("/events?"), "{path}");
            }
            _ => {
                let [Event::Stopped { error: Some(err) }] = &e[..] else {
                    panic!("{status}: {e:?}")
                };
                assert_eq!(err.status, Some(status));
                assert!(!err.retryable);
                assert_eq!(d.conn.state(), State::Stopped);
            }
        }
    }
    let mut d = live();
    d.advance(2_000);
    let (id, _) = beat(&mut d);
    let malformed = r#"{"detail":[{"type":"missing","loc":["body","connection_id"],"msg":"Field required"}]}"#;
    d.conn.handle_http_response(d.now, id, 422, malformed);
    let e = d.drain().1;
    assert!(
        matches!(&e[..], [Event::Stopped { error: Some(err) }] if err.kind == ErrorKind::Protocol && err.status == Some(422))
    );
}

#[test]
fn failed_beats_in_a_row_reopen_the_stream() {
    let mut d = live();
    for n in 1..=3 {
        d.advance(2_000);
        let (id, _) = beat(&mut d);
        if n == 2 {
            d.advance(4_000); // no answer: the beat timeout
            d.transmits(); // the beats sent meanwhile, left unanswered too
            continue;
        }
        d.conn.handle_http_failed(d.now, id, "connection refused");
        if n < 3 {
            assert!(matches!(&d.events()[..], [Event::Diagnostic(e)] if e.kind == ErrorKind::Timeout));
        }
    }
    let (t, e) = d.drain();
    assert!(matches!(&t[..], [Transmit::Close { .. }]), "{t:?}");
    assert!(
        matches!(e.last(), Some(Event::Disconnected { reason, .. }) if reason.contains("3 beats in a row failed")),
        "{e:?}"
    );
    // A 5xx counts as a failed beat too, and a good answer resets the count.
    let mut d = live();
    for status in [503, 200, 503, 503, 200] {
        d.advance(2_000);
        let (id, _) = beat(&mut d);
        d.conn.handle_http_response(d.now, id, status, r#"{"ok":true}"#);
    }
    assert_eq!(d.conn.state(), State::Live);
}

#[test]
fn a_beat_answered_200_resets_the_backoff_once_the_stream_has_stayed_up() {
    // Over SSE no ping marks the connection stable: a beat the server took does, once the
    // stream has been live for the backoff's longest delay (30 s).
    let mut d = live();
    for attempt in 1..=2 {
        d.conn.handle_close(d.now, 1006, "stream ended");
        let e = d.drain().1;
        assert!(
            matches!(e[..], [Event::Disconnected { attempt: a, .. }] if a == attempt),
            "{e:?}"
        );
        d.reopen();
        d.conn.handle_open(d.now);
        bytes(&mut d, &capture("connection_state.sse"));
        d.events();
    }
    assert_eq!(d.conn.attempt(), 2, "attaching alone does not reset it");
    // Before: the first 200 beat, 2 s in, reset it, so a stream ending 2.5 s after each attach
    // was reopened 0.1-0.5 s later, forever (1,287 opens an hour).
    for n in 1..=15 {
        d.advance(2_000);
        let (id, _) = beat(&mut d);
        d.conn.handle_http_response(d.now, id, 200, r#"{"ok":true}"#);
        assert_eq!(d.conn.attempt(), if n < 15 { 2 } else { 0 }, "{} s in", 2 * n);
    }
    d.conn.handle_close(d.now, 1006, "stream ended");
    let e = d.drain().1;
    assert!(matches!(e[..], [Event::Disconnected { attempt: 1, .. }]), "{e:?}");
}

#[test]
fn released_evictions_are_read_from_the_reason() {
    let mut d = live();
    bytes(&mut d, &capture("evicted_heartbeat.sse"));
    let (t, e) = d.drain();
    assert!(matches!(&t[..], [Transmit::Close { .. }]));
    assert!(
        matches!(&e[0], Event::Evicted(ev) if ev.code == Some(EvictionCode::HeartbeatLapsed)),
        "{e:?}"
    );
    assert!(matches!(&e[1], Event::Disconnected { .. }));
    d.conn.handle_close(d.now, 1006, "stream ended");
    assert!(d.drain().1.is_empty());
    let path = d.reopen();
    assert!(path.contains("start_from=0"), "our cursor, not the server's: {path}");

    // The long reason of the 0.19 stream resumes too (switch-released-0.19.md lists both).
    let mut d = live();
    bytes(
        &mut d,
        "event: evicted\ndata: {\"reason\":\"heartbeat lapsed; reopen the stream and resume from your cursor\"}\n\n",
    );
    let (t, e) = d.drain();
    assert!(matches!(&t[..], [Transmit::Close { .. }]), "{t:?}");
    assert!(
        matches!(&e[0], Event::Evicted(ev) if ev.code == Some(EvictionCode::HeartbeatLapsed)),
        "{e:?}"
    );
    assert!(matches!(&e[1], Event::Disconnected { .. }), "{e:?}");
    assert!(d.reopen().contains("start_from=0"));

    let mut d = live();
    bytes(&mut d, &capture("evicted_superseded.sse"));
    let e = d.drain().1;
    assert!(matches!(&e[0], Event::Evicted(ev) if ev.code == Some(EvictionCode::TakenOver)));
    assert!(matches!(&e[1], Event::Stopped { error: Some(err) } if err.code.as_deref() == Some("taken_over")));
}

/// The stream ends (1006) and the reopen timer fires: what the connection sends then.
fn reopen_after_drop(d: &mut Driver) -> Vec<Transmit> {
    d.conn.handle_close(d.now, 1006, "stream ended");
    d.drain();
    let at = d.conn.poll_timeout().unwrap();
    d.now = at;
    d.conn.handle_timeout(at);
    d.transmits()
}

#[test]
fn a_resume_sends_last_event_id() {
    let mut d = live();
    bytes(&mut d, &capture("message_unaddressed.sse"));
    d.events();
    match &reopen_after_drop(&mut d)[..] {
        [Transmit::Open(o)] => {
            assert_eq!(o.request.header("Last-Event-ID"), Some("5"));
            assert!(o.request.path.contains("start_from=5"));
        }
        other => panic!("{other:?}"),
    }
}

/// "Take `resumed_at` from the gap as your new cursor": a stream reopened after a gap resumes
/// from `resumed_at` in both `Last-Event-ID` (which wins over `start_from` at the server) and
/// `start_from`, not from the last event received before the gap (which would get the gap again).
#[test]
fn a_resume_after_a_gap_asks_from_its_resumed_at() {
    let mut d = live();
    bytes(&mut d, &capture("message_unaddressed.sse"));
    bytes(
        &mut d,
        "event: gap\ndata: {\"from_sequence\":5,\"resumed_at\":40,\"reason\":\"events older than the retention window were dropped; re-read room context\"}\n\n",
    );
    d.events();
    match &reopen_after_drop(&mut d)[..] {
        [Transmit::Open(o)] => {
            assert_eq!(o.request.header("Last-Event-ID"), Some("40"));
            assert!(o.request.path.contains("start_from=40"), "{}", o.request.path);
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn an_idle_stream_is_dead_but_keepalives_keep_it() {
    let mut d = live();
    for n in 1..=60 {
        d.advance(2_000);
        if n % 5 == 0 {
            bytes(&mut d, ": keepalive\n\n");
        }
        let (id, _) = beat(&mut d);
        d.conn.handle_http_response(d.now, id, 200, r#"{"ok":true}"#);
    }
    assert_eq!(d.conn.state(), State::Live);
    let mut cfg = sse();
    cfg.stream_idle_timeout_ms = 5_000;
    cfg.heartbeat_interval_ms = 60_000;
    cfg.connect_attempts = None;
    let (mut d, _) = Driver::opened(cfg);
    d.advance(5_000);
    let (t, e) = d.drain();
    assert!(matches!(&t[..], [Transmit::Close { .. }]));
    assert!(matches!(&e[..], [Event::Disconnected { reason, .. }] if reason.contains("nothing on the stream")));
}

/// "When nothing has happened for 15 seconds, the server writes a bare SSE comment": a stream
/// with the default configuration, on which nothing but those comments comes for ten minutes
/// (its beats answered every 2 s), stays live: the default idle bound is past the server's 15 s.
#[test]
fn the_servers_15_s_keepalives_keep_a_default_stream_live() {
    let mut d = live();
    for s in 1..=600 {
        d.advance(1_000);
        if s % 15 == 0 {
            bytes(&mut d, ": keepalive\n\n");
        }
        if s % 2 == 0 {
            let (id, _) = beat(&mut d);
            d.conn.handle_http_response(d.now, id, 200, r#"{"ok":true}"#);
        }
        assert!(d.events().is_empty(), "at {s} s");
    }
    assert_eq!(d.conn.state(), State::Live);
}

#[test]
fn a_stream_404_on_a_reopen_after_being_live_is_a_failed_open_and_a_403_still_stops() {
    // Before: one 404 from a proxy mid-deploy stopped a stream live for hours (`invalid`, not
    // retryable). A 403 is the server's own answer (a declared room the agent is not in), which
    // a retry would get again.
    let mut d = live();
    d.conn.handle_close(d.now, 1006, "stream ended");
    d.drain();
    d.reopen();
    d.conn.handle_open_failed(d.now, Some(404), "<html>Not Found</html>");
    assert!(
        matches!(&d.drain().1[..], [Event::Disconnected { reason, attempt: 2, .. }] if reason.contains("the event stream served this connection before")),
        "{:?}",
        d.conn.state()
    );
    d.reopen();
    d.conn
        .handle_open_failed(d.now, Some(403), r#"{"detail":"Room not found: r1"}"#);
    assert!(
        matches!(&d.drain().1[..], [Event::Stopped { error: Some(e) }] if e.kind == ErrorKind::Invalid && !e.retryable)
    );
}

#[test]
fn stream_open_refusals_are_http_statuses() {
    let mismatch = r#"{"detail":{"message":"this client speaks agent-protocol 2-2 and the server speaks 1-1; the ranges do not overlap, so update switch-core","contract":"agent-protocol","server":{"version":"0.19.0","speaks":1,"accepts":1},"client":{"speaks":2,"accepts":2},"remedy":"update switch-core"}}"#;
    let cases: [(u16, &str, Option<ErrorKind>); 8] = [
        (
            400,
            r#"{"detail":"scope must be 'single' or 'all', got 'everything'"}"#,
            Some(ErrorKind::Invalid),
        ),
        (401, "Missing or invalid Authorization header", Some(ErrorKind::Auth)),
        (
            403,
            r#"{"detail":"Room not found: 00000000-0000-0000-0000-000000000000"}"#,
            Some(ErrorKind::Invalid),
        ),
        (409, mismatch, Some(ErrorKind::Version)),
        (
            422,
            r#"{"detail":[{"msg":"Input should be a valid integer"}]}"#,
            Some(ErrorKind::Invalid),
        ),
        (503, "", None),
        // Too many requests, or the server's request timeout: try again later.
        (429, r#"{"detail":"too many connections"}"#, None),
        (408, "", None),
    ];
    for (status, body, stops) in cases {
        // Told to retry until attached, so that the retryable ones show.
        let mut cfg = sse();
        cfg.connect_attempts = None;
        let mut d = Driver::new(cfg);
        d.conn.start(d.now).unwrap();
        d.expect_open();
        d.conn.handle_open_failed(d.now, Some(status), body);
        let e = d.events();
        match stops {
            Some(kind) => {
                let [Event::Stopped { error: Some(err) }] = &e[..] else {
                    panic!("{status}: {e:?}")
                };
                assert_eq!(
                    (err.kind, err.status, err.retryable),
                    (kind, Some(status), false),
                    "{err:?}"
                );
            }
            None => assert!(matches!(&e[..], [Event::Disconnected { .. }]), "{status}: {e:?}"),
        }
    }
}

#[test]
fn a_huge_data_line_is_dropped_and_the_stream_goes_on() {
    let mut cfg = sse();
    cfg.sse.max_event_bytes = 4096;
    cfg.sse.max_line_bytes = 4096;
    let (mut d, _) = Driver::opened(cfg);
    bytes(&mut d, &capture("connection_state.sse"));
    d.events();
    let huge = format!("id: 6\nevent: message\ndata: {}\n\n", "x".repeat(1 << 20));
    for chunk in huge.as_bytes().chunks(1 << 14) {
        d.conn.handle_bytes(d.now, chunk);
    }
    let e = d.events();
    assert!(
        matches!(&e[..], [Event::Diagnostic(err)] if err.kind == ErrorKind::Limit),
        "{e:?}"
    );
    bytes(&mut d, &capture("message_unaddressed.sse"));
    assert_eq!(d.delivered(), vec![5]);
}

#[test]
fn sse_input_is_ignored_on_a_websocket_and_the_reverse() {
    let mut d = live();
    d.text(&message(9));
    assert!(d.events().is_empty());
    let mut d = Driver::live_ws(config(Transport::WebSocket), 0, &[]);
    bytes(&mut d, &capture("message_addressed.sse"));
    assert!(d.events().is_empty());
}

#[test]
fn an_event_whose_id_is_not_digits_is_dropped_not_taken_as_that_sequence() {
    let mut d = live();
    // `u64::from_str` takes `+5` as 5; the id is a decimal number.
    let plus = capture("message_unaddressed.sse").replacen("id: 5\n", "id: +5\n", 1);
    assert!(plus.starts_with("id: +5\n"));
    bytes(&mut d, &plus);
    let e = d.events();
    assert!(
        matches!(&e[..], [Event::Diagnostic(err)] if err.code.as_deref() == Some("id")),
        "{e:?}"
    );
    // Its name says it was an event: lost to this client, so the next one carries a gap.
    bytes(&mut d, &capture("message_unaddressed.sse"));
    let e = d.events();
    assert_eq!(sequences(&e), vec![5]);
    assert_eq!(gaps(&e), vec![(5, 0, 0)], "{e:?}");
}

#[test]
fn an_event_with_no_id_line_is_a_gap() {
    let mut d = live();
    let no_id = capture("message_unaddressed.sse").replacen("id: 5\n", "", 1);
    assert!(no_id.starts_with("event: message\n"), "{no_id}");
    bytes(&mut d, &no_id);
    bytes(&mut d, &capture("message_unaddressed.sse"));
    let e = d.events();
    assert_eq!(sequences(&e), vec![5]);
    assert_eq!(gaps(&e), vec![(5, 0, 0)], "{e:?}");
}

#[test]
fn an_unreadable_event_with_a_huge_id_line_loses_no_later_event() {
    let mut d = live();
    bytes(&mut d, "id: 18446744073709551615\nevent: message\ndata: {not json\n\n");
    bytes(&mut d, &capture("message_unaddressed.sse"));
    let e = d.events();
    assert_eq!(sequences(&e), vec![5], "{e:?}");
    match &reopen_after_drop(&mut d)[..] {
        [Transmit::Open(o)] => assert_eq!(o.request.header("Last-Event-ID"), Some("5")),
        other => panic!("{other:?}"),
    }
}

#[test]
fn an_unreadable_connection_state_on_the_stream_stops_a_connect() {
    let (mut d, _) = Driver::opened(sse());
    bytes(&mut d, "event: connection_state\ndata: {\"connection_id\":7}\n\n");
    let (t, e) = d.drain();
    assert!(matches!(&t[..], [Transmit::Close { .. }]), "{t:?}");
    match e.last() {
        Some(Event::Stopped { error: Some(err) }) => {
            assert_eq!(
                (err.kind, err.code.as_deref()),
                (ErrorKind::Decode, Some("data.connection_id"))
            );
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn an_unreadable_gap_on_the_stream_is_still_a_gap() {
    let mut d = live();
    bytes(
        &mut d,
        "event: gap\ndata: {\"from_sequence\":4,\"resumed_at\":\"0\"}\n\n",
    );
    bytes(&mut d, &capture("message_unaddressed.sse"));
    let e = d.events();
    assert_eq!(sequences(&e), vec![5], "{e:?}");
    match e.last() {
        Some(Event::Event { gap: Some(g), .. }) => {
            assert_eq!((g.from_sequence, g.resumed_at, g.all_rooms), (0, 0, Some(true)))
        }
        other => panic!("{other:?}"),
    }
}

/// Runs `ms` in 100 ms steps, answering every beat `delay` ms after it went out with `answer`.
fn beats_answered_late(
    d: &mut Driver,
    ms: u64,
    delay: u64,
    answer: impl Fn(&mut agentwire_switch::Connection, u64, u64),
) {
    let mut waiting: Vec<(u64, u64)> = Vec::new();
    for _ in 0..ms / 100 {
        d.advance(100);
        for t in d.transmits() {
            if let Transmit::Http { id, .. } = t {
                waiting.push((d.now + delay, id));
            }
        }
        while waiting.first().is_some_and(|(at, _)| *at <= d.now) {
            let (_, id) = waiting.remove(0);
            answer(&mut d.conn, d.now, id);
        }
    }
}

/// Every beat sent in the next `ms`, stepping 100 ms: (time, id).
fn beats_for(d: &mut Driver, ms: u64) -> Vec<(u64, u64)> {
    let mut sent = Vec::new();
    for _ in 0..ms / 100 {
        d.advance(100);
        for t in d.transmits() {
            if let Transmit::Http { id, .. } = t {
                sent.push((d.now, id));
            }
        }
    }
    sent
}

#[test]
fn beats_go_out_every_interval_even_while_one_is_unanswered() {
    // The server lapses the connection 6 s after the last beat it got: one lost beat must not
    // hold the next one back.
    let mut d = live();
    let first = beats_for(&mut d, 2_000);
    let [(t0, id0)] = first[..] else { panic!("{first:?}") };
    d.conn.handle_http_response(d.now, id0, 200, r#"{"ok":true}"#);
    let lost = beats_for(&mut d, 2_000); // this one is never answered
    let next = beats_for(&mut d, 2_000);
    assert_eq!(lost.len(), 1, "{lost:?}");
    let [(t2, id2)] = next[..] else {
        panic!("no beat while one is unanswered: {next:?}")
    };
    assert_eq!((lost[0].0 - t0, t2 - t0), (2_000, 4_000));
    d.conn.handle_http_response(d.now, id2, 200, r#"{"ok":true}"#);
    assert_eq!(d.conn.state(), State::Live);

    // A slow network: every answer comes 3 s late, after the next beat went out. Each counts.
    let mut d = live();
    beats_answered_late(&mut d, 10_000, 3_000, |c, now, id| {
        c.handle_http_response(now, id, 200, r#"{"ok":true}"#)
    });
    let e = d.events();
    assert!(e.is_empty(), "{e:?}");
    assert_eq!(d.conn.state(), State::Live);

    // No answer at all: a failure every beat timeout, and the third reopens the stream.
    let mut d = live();
    let sent = beats_for(&mut d, 13_900);
    assert_eq!(sent.len(), 6, "{sent:?}");
    assert_eq!(d.conn.state(), State::Live);
    beats_for(&mut d, 100);
    assert_eq!(d.conn.state(), State::Backoff);
    let e = d.events();
    assert!(
        matches!(e.last(), Some(Event::Disconnected { reason, .. }) if reason.contains("3 beats in a row failed")),
        "{e:?}"
    );

    // The same, with the driver's fetch failing each beat 5 s after it went out: a beat the
    // engine's timeout counted is not counted again, so the stream lives as long.
    let mut d = live();
    beats_answered_late(&mut d, 13_900, 5_000, |c, now, id| {
        c.handle_http_failed(now, id, "timed out")
    });
    assert_eq!(d.conn.state(), State::Live, "{:?}", d.events());
}

/// The `room_released` events of one chunk leave the rooms and the declared rooms in one pass
/// when the chunk is read, as if each had been applied as it came: a room listed again after
/// its release stays, the others keep the server's order, and the reopen declares what is left.
#[test]
fn room_releases_in_one_chunk_apply_in_order() {
    use agentwire_switch::sse::encode_event;
    let mut d = live();
    let changed = |rooms: &str| {
        encode_event(
            "subscription_changed",
            &format!(r#"{{"rooms":{rooms},"reason":"x"}}"#),
            None,
        )
    };
    let released = |room: &str| encode_event("room_released", &format!(r#"{{"room_id":"{room}"}}"#), None);
    let chunk = [
        changed(r#"["a","b","c","a","d"]"#),
        released("a"),
        released("zz"),
        released("c"),
    ]
    .concat();
    bytes(&mut d, &chunk);
    assert_eq!(d.conn.rooms(), ["b", "d"]);
    let kinds: Vec<&str> = d
        .events()
        .iter()
        .map(|e| match e {
            Event::SubscriptionChanged(_) => "changed",
            Event::RoomReleased(_) => "released",
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(kinds, ["changed", "released", "released", "released"]);
    // Released, then listed again in the same chunk: listed.
    bytes(
        &mut d,
        &[released("b"), changed(r#"["b","e"]"#), released("d")].concat(),
    );
    assert_eq!(d.conn.rooms(), ["b", "e"]);
    d.events();
    bytes(&mut d, &released("e"));
    assert_eq!(d.conn.rooms(), ["b"]);
    d.events();
    match &reopen_after_drop(&mut d)[..] {
        [Transmit::Open(o)] => assert!(o.request.path.ends_with("&rooms=b"), "{}", o.request.path),
        other => panic!("{other:?}"),
    }
}

/// A beat's answer is the server's room list now: one naming rooms replaces an empty list, one
/// naming none empties the list.
#[test]
fn a_beat_answer_sets_the_rooms_from_none_and_to_none() {
    let mut d = live();
    assert!(!d.conn.rooms().is_empty());
    d.advance(2_000);
    let (id, _) = beat(&mut d);
    d.conn
        .handle_http_response(d.now, id, 200, r#"{"ok":true,"rooms":[],"cursor":4}"#);
    assert!(d.conn.rooms().is_empty(), "{:?}", d.conn.rooms());
    d.advance(2_000);
    let (id, _) = beat(&mut d);
    d.conn
        .handle_http_response(d.now, id, 200, r#"{"ok":true,"rooms":["r"],"cursor":4}"#);
    assert_eq!(d.conn.rooms(), ["r".to_owned()]);
    assert!(d.events().is_empty());
}

/// Two beats wait; the answer to the first ends the wait for it: the same answer again is late.
#[test]
fn an_answered_earlier_beat_is_no_longer_waited_for() {
    let mut d = live();
    d.advance(2_000);
    let (first, _) = beat(&mut d);
    d.advance(2_000);
    let (second, _) = beat(&mut d);
    assert_ne!(first, second);
    d.conn.handle_http_response(d.now, first, 200, r#"{"ok":true}"#);
    assert!(d.events().is_empty());
    d.conn.handle_http_response(d.now, first, 200, r#"{"ok":true}"#);
    assert!(matches!(&d.events()[..], [Event::Diagnostic(e)] if e.message.contains("not waiting")));
}

/// A 5xx to a beat not yet counted is a failed beat; a late 5xx to a beat whose timeout was
/// counted already is not counted again. A 422 says the beat was malformed.
#[test]
fn beat_errors_are_counted_once() {
    let mut d = live();
    d.advance(2_000);
    let (id, _) = beat(&mut d);
    d.conn.handle_http_response(d.now, id, 503, "busy");
    assert!(matches!(&d.events()[..], [Event::Diagnostic(_)]), "a failed beat");
    let mut d = live();
    d.advance(2_000);
    let (first, _) = beat(&mut d);
    d.advance(4_000);
    d.transmits();
    assert!(
        matches!(&d.events()[..], [Event::Diagnostic(_)]),
        "the timeout: one failure"
    );
    d.conn.handle_http_response(d.now, first, 503, "busy");
    assert!(d.events().is_empty(), "counted already");
    let mut d = live();
    d.advance(2_000);
    let (id, _) = beat(&mut d);
    d.conn.handle_http_response(d.now, id, 422, r#"{"detail":"bad"}"#);
    assert!(
        matches!(&d.events()[..], [Event::Stopped { error: Some(e) }] if e.message.contains("malformed")),
        "422"
    );
}

/// A beat keeps alive the stream it was sent for, and the server refuses one with no stream
/// attached: a beat not polled when the stream ends (the driver reports it ended, the user
/// closes, the engine drops it) goes with it, as a pong goes with its socket. It is never sent,
/// so no answer to it comes back as a late one.
#[test]
fn a_beat_unsent_when_the_stream_ends_is_dropped() {
    let mut d = live();
    d.advance(2_000);
    d.conn.handle_close(d.now, 1006, "stream ended");
    let t = d.transmits();
    assert!(t.is_empty(), "the beat went with the stream: {t:?}");
    assert!(matches!(&d.events()[..], [Event::Disconnected { .. }]));
    d.reopen();
    assert!(d.transmits().is_empty());

    let mut d = live();
    d.advance(2_000);
    d.conn.close(d.now);
    let t = d.transmits();
    assert!(matches!(&t[..], [Transmit::Close { .. }]), "{t:?}");

    // No beat answered: the third failure drops the stream in the millisecond a beat is due.
    let mut d = live();
    beats_for(&mut d, 13_900);
    d.advance(100);
    assert_eq!(d.conn.state(), State::Backoff);
    let t = d.transmits();
    assert!(matches!(&t[..], [Transmit::Close { .. }]), "{t:?}");
}
