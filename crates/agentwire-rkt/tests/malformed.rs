//! A message the client cannot decode, in the middle of a session: the error names what was
//! wrong, and what it answers learns of it at once (a review, 2026-12-06). Each test failed
//! before: a malformed reply left its command to a retryable timeout 30 s later.
use agentwire_core::ErrorKind;
use agentwire_rkt::*;

mod common;
use common::*;

/// A ready session with one request pending, its id, and an ERROR body naming that request in
/// its `request_id` only.
fn pending_with_error_body() -> (ClientSession, String, String) {
    let mut c = ready();
    let id = c.request(T0, "maps.navigate", None, RequestOptions::default()).unwrap();
    drain(&mut c);
    let body = format!(r#"{{"code":602,"name":"CAPABILITY_MISSING","message":"no","request_id":"{id}"}}"#);
    (c, id, body)
}

/// An ERROR without `Reply-To` (the guide's shape), with message id `id` and this body.
fn error_without_reply_to(id: &str, body: &str) -> String {
    reply("ERROR", id, "x", "", body).replace("Reply-To: x\n", "")
}

fn stream(c: &mut ClientSession) -> String {
    let opts = RequestOptions {
        stream: true,
        ..Default::default()
    };
    let id = c.request(T0, "feed", None, opts).unwrap();
    drain(c);
    c.handle_text(T0, &reply("STREAM_BEGIN", "b", &id, "", ""));
    c.handle_text(T0, &reply("STREAM_DATA", "d0", &id, "Seq: 0\n", r#""a""#));
    id
}

#[test]
fn a_malformed_reply_fails_its_command_at_once_naming_the_header() {
    let mut c = ready();
    let pay = c.pay(T0, 10.0, "RKTT", None, None).unwrap();
    drain(&mut c);
    // A Timestamp without a zone: the message cannot be decoded, yet its Reply-To can be read.
    let text = reply("RESPONSE", "srv-77", &pay, "", r#"{"receipt_id":"r1"}"#).replace("12:00:00Z", "12:00:00");
    c.handle_text(T0 + 5, &text);
    let events = drain(&mut c);
    let [ClientEvent::Failed { id, error }] = events.as_slice() else {
        panic!("{events:?}")
    };
    assert_eq!(id, &pay);
    assert_eq!((error.kind(), error.error.retryable), (ErrorKind::Decode, false));
    assert!(error.error.message.contains("`Timestamp`"), "{}", error.error.message);
    assert_eq!(error.request_id.as_deref(), Some(pay.as_str()));
    // Nothing is left to time out, and a late copy of the answer is dropped quietly.
    c.handle_timeout(T0 + 60_000);
    c.handle_text(T0 + 60_000, &reply("RESPONSE", "srv-78", &pay, "", "{}"));
    assert_eq!(drain(&mut c), vec![]);
}

/// An undecodable ERROR without `Reply-To` (the guide's shape) still names its request in the
/// body's `request_id`: that request fails at once, with the decode error.
#[test]
fn a_malformed_error_naming_its_request_in_the_body_only_fails_it_at_once() {
    let (mut c, id, body) = pending_with_error_body();
    // Its Timestamp has no zone: the message cannot be decoded, its body can still be read.
    let text = error_without_reply_to("e1", &body).replace("12:00:00Z", "12:00:00");
    c.handle_text(T0 + 5, &text);
    let events = drain(&mut c);
    let [ClientEvent::Failed { id: failed, error }] = events.as_slice() else {
        panic!("{events:?}")
    };
    assert_eq!(failed, &id);
    assert_eq!((error.kind(), error.error.retryable), (ErrorKind::Decode, false));
    assert_eq!(error.request_id.as_deref(), Some(id.as_str()));
    c.handle_timeout(T0 + 60_000);
    assert_eq!(drain(&mut c), vec![]);
    // A body that is no ERROR body, or a request_id that is no id, names nothing.
    for bad in [r#"{"request_id":"x"}"#.to_string(), body.replace(&id, "has space")] {
        let text = error_without_reply_to("e2", &bad).replace("12:00:00Z", "12:00:00");
        c.handle_text(T0, &text);
        let events = drain(&mut c);
        assert!(
            matches!(&events[..], [ClientEvent::Error(e)] if e.request_id.is_none()),
            "{events:?}"
        );
    }
}

#[test]
fn a_malformed_chunk_fails_its_stream_and_the_rest_is_dropped_quietly() {
    let mut c = ready();
    let id = stream(&mut c);
    c.handle_text(T0, &reply("STREAM_DATA", "d1", &id, "Seq: one\n", r#""b""#));
    // What still comes for the failed stream, readable or not, is dropped without a word.
    c.handle_text(T0, &reply("STREAM_DATA", "d2", &id, "Seq: two\n", r#""c""#));
    c.handle_text(T0, &reply("STREAM_END", "e", &id, "", r#"{"count":2}"#));
    let events = drain(&mut c);
    assert!(matches!(&events[0], ClientEvent::StreamBegin { .. }), "{events:?}");
    assert!(
        matches!(&events[1], ClientEvent::StreamData { seq: 0, .. }),
        "{events:?}"
    );
    let [ClientEvent::Failed { id: failed, error }] = &events[2..] else {
        panic!("{events:?}")
    };
    assert_eq!((failed, error.kind()), (&id, ErrorKind::Decode));
    assert!(error.error.message.contains("`Seq`"), "{}", error.error.message);
}

#[test]
fn an_unreadable_stream_end_count_is_said() {
    let mut c = ready();
    let id = stream(&mut c);
    c.handle_text(T0, &reply("STREAM_END", "e", &id, "", r#"{"count":"1"}"#));
    let events = drain(&mut c);
    let [.., ClientEvent::Error(e), ClientEvent::StreamEnd { id: ended, .. }] = events.as_slice() else {
        panic!("{events:?}")
    };
    assert_eq!(
        (ended, e.kind(), e.request_id.as_deref()),
        (&id, ErrorKind::Decode, Some(id.as_str()))
    );
    assert!(e.error.message.starts_with("STREAM_END body: "), "{}", e.error.message);
}

#[test]
fn a_response_with_chunks_held_fails_the_stream() {
    let mut c = ready();
    let id = stream(&mut c);
    c.handle_text(T0, &reply("STREAM_DATA", "d2", &id, "Seq: 2\n", r#""c""#));
    c.handle_text(T0, &reply("RESPONSE", "r", &id, "", "{}"));
    let events = drain(&mut c);
    let [.., ClientEvent::Failed { id: failed, error }] = events.as_slice() else {
        panic!("{events:?}")
    };
    assert_eq!((failed, error.kind()), (&id, ErrorKind::Protocol));
    assert!(
        !events.iter().any(|e| matches!(e, ClientEvent::Response { .. })),
        "{events:?}"
    );
}

#[test]
fn a_malformed_hello_ack_ends_the_handshake_at_once() {
    let (mut c, hello) = open();
    let ack = reply("HELLO_ACK", "ack", &hello, "", "{}").replace("Version: 1", "Version: x");
    c.handle_text(T0, &ack);
    let events = drain(&mut c);
    assert!(
        matches!(&events[0], ClientEvent::Error(e) if e.kind() == ErrorKind::Decode),
        "{events:?}"
    );
    assert!(
        matches!(events.last(), Some(ClientEvent::Closed { code: 1002, .. })),
        "{events:?}"
    );
}

#[test]
fn an_unlinked_malformed_message_is_an_error_naming_what_it_answers() {
    let mut c = ready();
    c.handle_text(
        T0,
        &reply("RESPONSE", "m", "nobody", "", "{}").replace("Version: 1", "Version: x"),
    );
    let events = drain(&mut c);
    let [ClientEvent::Error(e)] = events.as_slice() else {
        panic!("{events:?}")
    };
    assert_eq!((e.kind(), e.request_id.as_deref()), (ErrorKind::Decode, Some("nobody")));
    // Without a Reply-To it names nothing: not its own Message-ID, which no command of the
    // client's has.
    c.handle_text(
        T0,
        "RKT/1.0 PING\nVersion: x\nMessage-ID: p1\nSession-ID: s\nTimestamp: 2026-06-28T12:00:00Z\nTTL: 30\n",
    );
    let events = drain(&mut c);
    let [ClientEvent::Error(e)] = events.as_slice() else {
        panic!("{events:?}")
    };
    assert_eq!((e.kind(), e.request_id.as_deref()), (ErrorKind::Decode, None));
}

#[test]
fn peer_text_in_messages_is_bounded() {
    let mut c = ready();
    let id = c.request(T0, "echo", None, RequestOptions::default()).unwrap();
    drain(&mut c);
    c.handle_text(T0, &format!("RKT/1.0 {}\nVersion: 1\n", "A".repeat(500_000)));
    let body = format!(r#"{{"code":"429","message":"{}"}}"#, "x".repeat(900_000));
    c.handle_text(T0, &reply("ERROR", "e", &id, "TTL: 5\n", &body));
    let twice = format!("{}: 1\n", "X".repeat(500_000)).repeat(2);
    c.handle_text(T0, &reply("RESPONSE", "m", "nobody", &twice, "{}"));
    let events = drain(&mut c);
    let [ClientEvent::Error(unknown), ClientEvent::Failed { error, .. }, ClientEvent::Error(dup)] = events.as_slice()
    else {
        panic!("{events:?}")
    };
    assert!(unknown.error.message.len() < 200, "{}", unknown.error.message.len());
    assert!(
        dup.error.message.len() < 200 && dup.error.message.contains("twice"),
        "{}",
        dup.error.message.len()
    );
    assert!(error.error.message.len() < 1000, "{}", error.error.message.len());
    assert!(error.error.message.contains("`code`"), "{}", error.error.message);
}

/// An ERROR whose body follows its headers without the blank line cannot be decoded; its body
/// (from its first line starting with `{`) still names the request, which fails at once.
#[test]
fn an_error_without_the_blank_line_before_its_body_still_names_its_request() {
    let (mut c, id, body) = pending_with_error_body();
    let text = error_without_reply_to("e1", &body).replace("Z\n\n{", "Z\n{");
    assert!(text.contains("12:00:00Z\n{"), "{text}");
    c.handle_text(T0 + 5, &text);
    let events = drain(&mut c);
    assert!(
        matches!(&events[..], [ClientEvent::Failed { id: failed, error }] if failed == &id && error.kind() == ErrorKind::Decode),
        "{events:?}"
    );
}

/// A binary frame in a ready session is reported (`decode`, with its size) and dropped: RKT
/// is text, and the session goes on.
#[test]
fn a_binary_frame_is_an_error_and_the_session_goes_on() {
    let mut c = ready();
    c.handle_binary(T0, b"\x00\x01\x02");
    let events = drain(&mut c);
    assert!(
        matches!(&events[..], [ClientEvent::Error(e)] if e.kind() == ErrorKind::Decode && e.to_string().contains("binary frame of 3 bytes")),
        "{events:?}"
    );
    assert_eq!(c.state(), ClientState::Ready);
    assert!(c.poll_transmit().is_none());
}
