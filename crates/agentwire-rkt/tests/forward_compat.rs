//! Forward compatibility: a server newer than the client. What the client does with message
//! types, header values and body fields it does not know.
use agentwire_core::{ErrorKind, Outgoing, SeededEntropy};
use agentwire_rkt::*;

mod common;
use common::*;

/// Unknown headers and unknown HELLO_ACK body keys are ignored; a newer minor start line is read.
#[test]
fn unknown_headers_body_keys_and_a_newer_minor_version_are_accepted() {
    let (mut c, hello) = open();
    c.handle_text(
        T0,
        &reply(
            "HELLO_ACK",
            "ack",
            &hello,
            "X-Server-Feature: resumable\nCapabilities: weather\n",
            r#"{"agreed_version":1,"session_timeout":300,"features":["resume"],"server_time":1}"#,
        )
        .replace("RKT/1.0", "RKT/1.7"),
    );
    let ev = drain(&mut c);
    assert!(
        matches!(ev.as_slice(), [ClientEvent::Ready { agreed_version: 1, .. }]),
        "{ev:?}"
    );
    let id = c.request(T0, "echo", None, RequestOptions::default()).unwrap();
    drain(&mut c);
    c.handle_text(
        T0,
        &reply(
            "RESPONSE",
            "r",
            &id,
            "X-Cost: 3\n",
            r#"{"intent":"echo","data":1,"new":true}"#,
        ),
    );
    let ev = drain(&mut c);
    assert!(matches!(ev.as_slice(), [ClientEvent::Response { .. }]), "{ev:?}");
}

/// An ERROR with a code the client does not know keeps its code and name; 5xx is retryable.
#[test]
fn an_error_code_the_client_does_not_know_is_typed_with_its_code_and_name_kept() {
    let mut c = ready();
    for (code, retryable) in [(604, false), (418, false), (503, true), (599, true)] {
        let id = c.request(T0, "echo", None, RequestOptions::default()).unwrap();
        drain(&mut c);
        let body = format!(r#"{{"code":{code},"name":"NEW_THING","message":"m","extra":1}}"#);
        c.handle_text(T0, &reply("ERROR", "e", &id, "", &body));
        let ev = drain(&mut c);
        let [ClientEvent::Failed { error, .. }] = ev.as_slice() else {
            panic!("{ev:?}")
        };
        assert_eq!(error.code(), Some(code));
        assert_eq!(error.name.as_deref(), Some("NEW_THING"));
        assert_eq!(error.error.retryable, retryable, "{code}");
    }
}

/// Another serializer's output: CRLF, lower-case header names, keys reversed and escaped, a
/// pretty-printed body.
#[test]
fn crlf_lower_case_names_and_reordered_escaped_pretty_bodies_are_read() {
    let (mut c, hello) = open();
    let text = reply(
        "HELLO_ACK",
        "ack",
        &hello,
        "content-type: application/json\n",
        "{\n  \"session\\u005ftimeout\": 300,\n  \"agreed_version\": 1\n}",
    )
    .replace("Message-ID", "message-id")
    .replace('\n', "\r\n");
    c.handle_text(T0, &text);
    let ev = drain(&mut c);
    assert!(
        matches!(
            ev.as_slice(),
            [ClientEvent::Ready {
                session_timeout: 300,
                ..
            }]
        ),
        "{ev:?}"
    );
}

/// A well-formed message of a type this client does not know (a newer server's progress note,
/// say) answering a pending REQUEST is an `Error` event naming the type and the request; the
/// request stays pending and gets the RESPONSE that follows. The guide's TypeScript client
/// branches on the types it knows and ignores any other (rkt-agent-connection.md,
/// `ws.on("message")`). It failed the request `decode`, and the RESPONSE was dropped.
#[test]
fn an_unknown_message_type_is_an_error_event_and_the_request_it_answers_stays_pending() {
    let mut c = ready();
    let id = c
        .request(T0, "weather.forecast", None, RequestOptions::default())
        .unwrap();
    drain(&mut c);
    c.handle_text(T0 + 1, &reply("PROGRESS", "p1", &id, "", r#"{"percent":50}"#));
    let first = drain(&mut c);
    let [ClientEvent::Error(e)] = first.as_slice() else {
        panic!("{first:?}")
    };
    assert_eq!(
        (e.kind(), e.request_id.as_deref()),
        (ErrorKind::Decode, Some(id.as_str()))
    );
    assert!(e.error.message.contains("`PROGRESS`"), "{}", e.error.message);
    assert_eq!(c.in_flight(), 1);
    c.handle_text(
        T0 + 2,
        &reply("RESPONSE", "r1", &id, "", r#"{"intent":"weather.forecast","data":[1]}"#),
    );
    let second = drain(&mut c);
    assert!(
        matches!(second.as_slice(), [ClientEvent::Response { id: answered, .. }] if *answered == id),
        "the RESPONSE after it was lost: {second:?}"
    );
    // One naming nothing is the same event; one answering a command that ended early
    // (cancelled) is dropped quietly, as a late reply to it is.
    c.handle_text(
        T0,
        &reply("NOTICE", "n1", "x", "", "").replace("Reply-To: x\n", "TTL: 30\n"),
    );
    let ev = drain(&mut c);
    assert!(
        matches!(ev.as_slice(), [ClientEvent::Error(e)] if e.request_id.is_none()),
        "{ev:?}"
    );
    let cancelled = c.request(T0, "echo", None, RequestOptions::default()).unwrap();
    drain(&mut c);
    assert!(c.cancel(&cancelled));
    drain(&mut c);
    c.handle_text(T0, &reply("PROGRESS", "p2", &cancelled, "", ""));
    assert_eq!(drain(&mut c), vec![]);
}

/// One answering the HELLO does not end the handshake (it was close 1002, "bad HELLO_ACK"): the
/// HELLO_ACK that follows makes the session ready.
#[test]
fn an_unknown_message_type_answering_the_hello_does_not_end_the_handshake() {
    let (mut c, hello) = open();
    c.handle_text(T0, &reply("HELLO_WAIT", "w", &hello, "", r#"{"retry_in":1}"#));
    let ev = drain(&mut c);
    assert!(
        matches!(ev.as_slice(), [ClientEvent::Error(e)] if e.error.message.contains("`HELLO_WAIT`")),
        "{ev:?}"
    );
    assert_eq!(c.state(), ClientState::Handshaking);
    c.handle_text(T0, &hello_ack(&hello));
    let ev = drain(&mut c);
    assert!(matches!(ev.as_slice(), [ClientEvent::Ready { .. }]), "{ev:?}");
}

/// What a driver's connect fails with when the server closes before HELLO_ACK
/// ([`ClientSession::handshake_error`]): after a message of an unknown type, nothing, so the
/// close (its code and reason) is reported, as that message ended nothing (it was the
/// "unknown message type" error); after text that could not be read, its `decode` error, also
/// when a message of an unknown type came after it. Past `Ready`, no error is the handshake's.
#[test]
fn a_close_after_an_unknown_message_type_fails_the_handshake_not_that_message() {
    let (mut c, hello) = open();
    c.handle_text(T0, &reply("HELLO_WAIT", "w", &hello, "", ""));
    c.handle_close(T0, 1013, "try again later");
    let ev = drain(&mut c);
    assert!(
        matches!(
            ev.as_slice(),
            [ClientEvent::Error(_), ClientEvent::Closed { code: 1013, .. }]
        ),
        "{ev:?}"
    );
    assert!(c.handshake_error().is_none(), "{:?}", c.handshake_error());

    // A message dropped for answering nothing this client sent (a stray PONG, a HELLO_ACK to
    // another HELLO) ends nothing either: the close says why.
    let (mut c, _) = open();
    c.handle_text(T0, &reply("PONG", "p", "zz", "", ""));
    c.handle_text(
        T0,
        &reply(
            "HELLO_ACK",
            "a",
            "other",
            "",
            r#"{"agreed_version":1,"session_timeout":300}"#,
        ),
    );
    c.handle_close(T0, 1013, "try again later");
    let ev = drain(&mut c);
    assert!(
        matches!(
            ev.as_slice(),
            [
                ClientEvent::Error(_),
                ClientEvent::Error(_),
                ClientEvent::Closed { code: 1013, .. }
            ]
        ),
        "{ev:?}"
    );
    assert!(c.handshake_error().is_none(), "{:?}", c.handshake_error());

    let (mut c, hello) = open();
    c.handle_text(T0, "{");
    c.handle_text(T0, &reply("HELLO_WAIT", "w", &hello, "", ""));
    c.handle_close(T0, 1011, "garbage over");
    let e = c.handshake_error().expect("the text that could not be read");
    assert_eq!(e.kind(), ErrorKind::Decode);
    assert!(!e.error.message.contains("HELLO_WAIT"), "{}", e.error.message);

    let mut c = ready();
    c.handle_text(T0, "{");
    assert!(c.handshake_error().is_none(), "{:?}", c.handshake_error());
}

/// A message of an unknown type that is malformed besides (here a `Timestamp` without a zone)
/// fails the command it names at once, as any malformed answer does (the server may have acted
/// on the command), naming the header at fault.
#[test]
fn a_malformed_message_of_an_unknown_type_fails_the_command_it_answers() {
    let mut c = ready();
    let id = c.request(T0, "echo", None, RequestOptions::default()).unwrap();
    drain(&mut c);
    c.handle_text(
        T0,
        &reply("PROGRESS", "p1", &id, "", "{}").replace("12:00:00Z", "12:00:00"),
    );
    let ev = drain(&mut c);
    let [ClientEvent::Failed { id: failed, error }] = ev.as_slice() else {
        panic!("{ev:?}")
    };
    assert_eq!(
        (failed, error.kind(), error.error.retryable),
        (&id, ErrorKind::Decode, false)
    );
    assert!(error.error.message.contains("`Timestamp`"), "{}", error.error.message);
}

/// A 429 whose `Retry-After` is not whole seconds is `rate_limited`, retryable, as the guide
/// says ("`429` Rate limited: Wait `Retry-After` seconds"): a fraction (`1.5`) is rounded up to
/// whole seconds, an HTTP-date (which the client does not read) is as none. The message was
/// refused whole: the request failed `decode`, not retryable.
#[test]
fn a_429_with_a_fractional_or_date_retry_after_is_rate_limited_and_retryable() {
    let mut c = ready();
    for (ra, hint) in [
        ("1.5", Some(2)),
        ("2.0", Some(2)),
        ("0.001", Some(1)),
        ("7", Some(7)),
        ("Wed, 21 Oct 2026 07:28:00 GMT", None),
        ("-1", None),
        ("1e3", None),
        (".5", None),
    ] {
        let id = c.request(T0, "echo", None, RequestOptions::default()).unwrap();
        drain(&mut c);
        let body = r#"{"code":429,"name":"RATE_LIMITED","message":"slow down"}"#;
        c.handle_text(T0, &reply("ERROR", "e", &id, &format!("Retry-After: {ra}\n"), body));
        let ev = drain(&mut c);
        let [ClientEvent::Failed { error, .. }] = ev.as_slice() else {
            panic!("{ra}: {ev:?}")
        };
        assert_eq!(
            (error.kind(), error.error.retryable, error.retry_after_s),
            (ErrorKind::RateLimited, true, hint),
            "Retry-After: {ra} → {error:?}"
        );
    }
}

/// A reply carrying an optional header the client does not act on with a value it does not
/// know (a new `Priority` level, a `Stream` mode: request headers, which the client never reads
/// on what a server sends) is read: its answer is delivered. It was refused whole, and the
/// command failed `decode`. The server still refuses such a value on what it reads (a REQUEST's
/// `Stream` decides how it answers), and `decode` is its reading.
#[test]
fn an_unknown_value_of_an_optional_header_does_not_discard_a_good_reply() {
    let mut c = ready();
    for extra in ["Priority: CRITICAL\n", "Stream: partial\n", "Priority: \n"] {
        let id = c.request(T0, "echo", None, RequestOptions::default()).unwrap();
        drain(&mut c);
        let text = reply("RESPONSE", "r", &id, extra, r#"{"intent":"echo","data":1}"#);
        c.handle_text(T0, &text);
        let ev = drain(&mut c);
        assert!(
            matches!(ev.as_slice(), [ClientEvent::Response { .. }]),
            "{extra}: {ev:?}"
        );
        let e = decode(&text, codec::DEFAULT_MAX_MESSAGE_SIZE).unwrap_err();
        assert!(
            matches!(e.kind, DecodeErrorKind::BadHeaderValue { .. }),
            "{extra}: {e:?}"
        );
        let request = text
            .replace("RKT/1.0 RESPONSE", "RKT/1.0 REQUEST")
            .replace("Reply-To", "TTL: 30\nX");
        assert!(decode(&request, 1 << 20).is_err(), "{extra}");
    }
}

/// The guide defines AUTH_OK only as "AUTH_OK and a session token" (rkt-agent-connection.md:541):
/// one without `expires_in` is taken, its token with no known expiry (`None`); one with it keeps
/// it. It was refused, the AUTH failed `decode`, and a client configured with `authorization`
/// could not connect at all.
#[test]
fn an_auth_ok_without_expires_in_is_taken_with_no_known_expiry() {
    let mut c = ready();
    for (body, expires_in) in [
        (r#"{"session_token":"t","scopes":[]}"#, None),
        (r#"{"session_token":"t","expires_in":null}"#, None),
        (r#"{"session_token":"t","scopes":["a"],"expires_in":60}"#, Some(60)),
    ] {
        let token = AuthBody::Bearer {
            token: "k".into(),
            scopes: vec![],
        };
        let id = c.auth(T0, token).unwrap();
        drain(&mut c);
        c.handle_text(T0, &reply("AUTH_OK", "a", &id, "", body));
        let ev = drain(&mut c);
        let [ClientEvent::AuthOk { auth, .. }] = ev.as_slice() else {
            panic!("{body}: {ev:?}")
        };
        assert_eq!(
            (auth.session_token.as_str(), auth.expires_in),
            ("t", expires_in),
            "{body}"
        );
    }
    // With `authorization` configured, the session is ready on such an AUTH_OK.
    let cfg = ClientConfig {
        keepalive: false,
        authorization: Some("Bearer k".into()),
        ..Default::default()
    };
    let mut c = ClientSession::new(cfg, Box::new(SeededEntropy::new(2)));
    c.handle_open(T0);
    let Some(Outgoing::Text(hello)) = c.poll_transmit() else {
        panic!("no HELLO")
    };
    let hello = hello
        .lines()
        .find_map(|l| l.strip_prefix("Message-ID: "))
        .unwrap()
        .to_string();
    c.handle_text(T0, &hello_ack(&hello));
    let Some(Outgoing::Text(auth)) = c.poll_transmit() else {
        panic!("no AUTH")
    };
    let auth = auth
        .lines()
        .find_map(|l| l.strip_prefix("Message-ID: "))
        .unwrap()
        .to_string();
    c.handle_text(T0, &reply("AUTH_OK", "a", &auth, "", r#"{"session_token":"t"}"#));
    let ev = drain(&mut c);
    assert!(
        matches!(ev.as_slice(), [ClientEvent::Ready { .. }, ClientEvent::AuthOk { .. }]),
        "{ev:?}"
    );
    assert_eq!(c.state(), ClientState::Ready);
}
