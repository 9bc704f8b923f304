//! Rules of the guide (specs/rkt-agent-connection.md) and docs/protocols/rkt.md that the client
//! session meets, one test each: each failed under a mutation that breaks its rule (a spec
//! audit, 2026-12-05).
use agentwire_core::{ErrorKind, Outgoing, SeededEntropy};
use agentwire_rkt::*;

fn client() -> (ClientSession, String) {
    let mut c = ClientSession::new(
        ClientConfig {
            keepalive: false,
            ..Default::default()
        },
        Box::new(SeededEntropy::new(7)),
    );
    c.handle_open(0);
    let Some(Outgoing::Text(hello)) = c.poll_transmit() else {
        panic!()
    };
    let id = hello
        .lines()
        .find_map(|l| l.strip_prefix("Message-ID: "))
        .unwrap()
        .to_string();
    (c, id)
}
fn ack(reply_to: &str, body: &str) -> String {
    format!("RKT/1.0 HELLO_ACK\nVersion: 1\nMessage-ID: s-1\nReply-To: {reply_to}\nSession-ID: x\nTimestamp: 2026-06-28T12:00:00Z\n\n{body}")
}
fn drain(c: &mut ClientSession) -> Vec<ClientEvent> {
    std::iter::from_fn(|| c.poll_event()).collect()
}
fn ready() -> ClientSession {
    let (mut c, id) = client();
    c.handle_text(1, &ack(&id, r#"{"agreed_version":1,"session_timeout":300}"#));
    drain(&mut c);
    while c.poll_transmit().is_some() {}
    c
}

#[test]
fn hello_ack_with_a_foreign_reply_to_is_not_ready() {
    let (mut c, _) = client();
    c.handle_text(1, &ack("someone-else", r#"{"agreed_version":1,"session_timeout":300}"#));
    assert_ne!(c.state(), ClientState::Ready);
}
#[test]
fn agreed_version_outside_the_range_is_a_version_error() {
    let (mut c, id) = client();
    c.handle_text(1, &ack(&id, r#"{"agreed_version":2,"session_timeout":300}"#));
    assert!(drain(&mut c)
        .iter()
        .any(|e| matches!(e, ClientEvent::Error(e) if e.kind() == ErrorKind::Version)));
    assert_eq!(c.state(), ClientState::Closed);
}
#[test]
fn retry_after_header_alone_is_read_and_5xx_is_retryable() {
    for (code, hdr, want_retry, want_after) in [
        (429, "TTL: 30\nRetry-After: 7\n", true, Some(7)),
        (503, "TTL: 30\n", true, None),
    ] {
        let mut c = ready();
        let id = c.request(2, "echo", None, Default::default()).unwrap();
        c.handle_text(3, &format!("RKT/1.0 ERROR\nVersion: 1\nMessage-ID: e\nReply-To: {id}\nSession-ID: x\nTimestamp: 2026-06-28T12:00:00Z\n{hdr}\n{{\"code\":{code},\"name\":\"X\",\"message\":\"m\"}}"));
        let ev = drain(&mut c);
        let Some(ClientEvent::Failed { error, .. }) = ev.first() else {
            panic!("{ev:?}")
        };
        assert_eq!(
            (error.error.retryable, error.retry_after_s),
            (want_retry, want_after),
            "{code}"
        );
    }
}
#[test]
fn every_message_shares_the_session_id() {
    let mut c = ready();
    c.request(2, "echo", None, Default::default()).unwrap();
    c.discover(2).unwrap();
    let sid = c.session_id().to_string();
    let mut sent = 0;
    while let Some(Outgoing::Text(t)) = c.poll_transmit() {
        assert!(t.contains(&format!("\nSession-ID: {sid}\n")), "{t}");
        sent += 1;
    }
    assert_eq!(sent, 2, "the REQUEST and the DISCOVER were checked");
}
#[test]
fn server_goodbye_closes_with_1000() {
    let mut c = ready();
    c.handle_text(
        2,
        "RKT/1.0 GOODBYE\nVersion: 1\nMessage-ID: g\nSession-ID: x\nTimestamp: 2026-06-28T12:00:00Z\nTTL: 30\n",
    );
    assert!(matches!(c.poll_transmit(), Some(Outgoing::Close { code: 1000, .. })));
}
#[test]
fn stream_end_with_a_larger_count_fails_the_stream() {
    let mut c = ready();
    let id = c
        .request(
            2,
            "weather.forecast",
            None,
            RequestOptions {
                stream: true,
                ..Default::default()
            },
        )
        .unwrap();
    // Each message its own Message-ID; `extra` is headers.
    let h = |t: &str, n: u32, extra: &str, body: &str| {
        format!("RKT/1.0 {t}\nVersion: 1\nMessage-ID: m{n}\nReply-To: {id}\nSession-ID: x\nTimestamp: 2026-06-28T12:00:00Z\n{extra}\n{body}")
    };
    c.handle_text(3, &h("STREAM_BEGIN", 1, "", r#"{"intent":"weather.forecast"}"#));
    c.handle_text(3, &h("STREAM_DATA", 2, "Seq: 0\n", "{}"));
    // The one chunk is delivered: the count, not a lost chunk, is what is wrong.
    let before = drain(&mut c);
    assert!(
        matches!(
            &before[..],
            [ClientEvent::StreamBegin { .. }, ClientEvent::StreamData { seq: 0, .. }]
        ),
        "{before:?}"
    );
    c.handle_text(3, &h("STREAM_END", 3, "", r#"{"count":2}"#));
    let end = drain(&mut c);
    assert!(
        matches!(&end[..], [ClientEvent::Failed { error, .. }] if error.kind() == ErrorKind::Protocol),
        "{end:?}"
    );
}

/// An ERROR that answers a REQUEST (Reply-To set) written like the guide's HELLO_ACK reply,
/// i.e. without TTL: the typed 602 must reach the request.
#[test]
fn an_error_reply_without_ttl_fails_its_request_with_the_typed_error() {
    let mut c = ready();
    let id = c.request(2, "maps.navigate", None, Default::default()).unwrap();
    c.handle_text(3, &format!("RKT/1.0 ERROR\nVersion: 1\nMessage-ID: e1\nReply-To: {id}\nSession-ID: x\nTimestamp: 2026-06-28T12:00:00Z\nContent-Type: application/json\n\n{{\"code\":602,\"name\":\"CAPABILITY_MISSING\",\"message\":\"Intent 'maps.navigate' not found\",\"request_id\":\"{id}\"}}"));
    let now = drain(&mut c);
    c.handle_timeout(2 + 30_000);
    let later = drain(&mut c);
    println!("at once: {now:?}\nafter the TTL: {later:?}");
    assert!(
        matches!(now.first(), Some(ClientEvent::Failed { error, .. }) if error.code() == Some(602) && !error.error.retryable)
    );
}

/// The guide's ERROR as its header table writes one: no `Reply-To`, no `TTL`, the request named
/// by the body's `request_id` only. The typed 602 must reach that request at once (it was
/// refused as undecodable, and the request ended 30 s later as a retryable `timeout`).
#[test]
fn an_error_naming_its_request_in_the_body_only_and_without_ttl_fails_it() {
    let mut c = ready();
    let id = c.request(2, "maps.navigate", None, Default::default()).unwrap();
    c.handle_text(3, &format!("RKT/1.0 ERROR\nVersion: 1\nMessage-ID: e1\nSession-ID: x\nTimestamp: 2026-06-28T12:00:00Z\n\n{{\"code\":602,\"name\":\"CAPABILITY_MISSING\",\"message\":\"Intent 'maps.navigate' not found\",\"request_id\":\"{id}\"}}"));
    let now = drain(&mut c);
    let [ClientEvent::Failed { id: failed, error }] = now.as_slice() else {
        panic!("{now:?}")
    };
    assert_eq!(failed, &id);
    assert_eq!(
        (error.kind(), error.code(), error.error.retryable),
        (ErrorKind::Remote, Some(602), false)
    );
    assert_eq!(error.request_id.as_deref(), Some(id.as_str()));
    c.handle_timeout(2 + 30_000);
    assert_eq!(drain(&mut c), vec![]);
}

/// A stream answering a REQUEST sent without `Stream: true` (a server that always streams a long
/// intent) fails the request at once, `protocol`, not retryable; the rest of the stream is
/// dropped quietly. Each message was dropped, and the request ended 30 s later as a retryable
/// `timeout`.
#[test]
fn a_stream_answering_a_plain_request_fails_it_at_once() {
    let mut c = ready();
    let id = c.request(2, "weather.forecast", None, Default::default()).unwrap();
    assert!(c.poll_transmit().is_some(), "the REQUEST goes out");
    let reply = |kind: &str, n: u32, extra: &str, body: &str| {
        format!("RKT/1.0 {kind}\nVersion: 1\nMessage-ID: s{n}\nReply-To: {id}\nSession-ID: x\nTimestamp: 2026-06-28T12:00:00Z\n{extra}\n{body}")
    };
    c.handle_text(3, &reply("STREAM_BEGIN", 1, "", r#"{"intent":"weather.forecast"}"#));
    c.handle_text(3, &reply("STREAM_DATA", 2, "Seq: 0\n", r#"{"day":1}"#));
    c.handle_text(3, &reply("STREAM_END", 3, "", r#"{"count":1}"#));
    let events = drain(&mut c);
    let [ClientEvent::Failed { id: failed, error }] = events.as_slice() else {
        panic!("{events:?}")
    };
    assert_eq!(failed, &id);
    assert_eq!((error.kind(), error.error.retryable), (ErrorKind::Protocol, false));
    assert!(error.error.message.contains("Stream: true"), "{}", error.error.message);
    c.handle_timeout(2 + 30_000);
    assert_eq!(drain(&mut c), vec![]);
}

#[test]
fn a_pong_answers_the_servers_ping() {
    let mut c = ready();
    c.handle_text(
        2,
        "RKT/1.0 PING\nVersion: 1\nMessage-ID: p-7\nSession-ID: x\nTimestamp: 2026-06-28T12:00:00Z\nTTL: 30\n\n",
    );
    let Some(Outgoing::Text(pong)) = c.poll_transmit() else {
        panic!("no PONG")
    };
    assert!(
        pong.starts_with("RKT/1.0 PONG\n") && pong.contains("\nReply-To: p-7\n"),
        "{pong}"
    );
}

/// PINGs read while `poll_transmit` is not drained each get their own PONG, none merged (each
/// names its PING in `Reply-To`, which the peer times its round trip by), each at most 330 bytes
/// with an id of the longest kind (128 bytes): the bound rkt.md gives ("Bounds").
#[test]
fn pings_read_without_polling_each_get_their_own_pong_of_bounded_size() {
    let mut c = ready();
    let ids: Vec<String> = (0..100).map(|i| format!("{i:0>128}")).collect();
    for id in &ids {
        let ping = format!(
            "RKT/1.0 PING\nVersion: 1\nMessage-ID: {id}\nSession-ID: x\nTimestamp: 2026-06-28T12:00:00Z\nTTL: 30\n\n"
        );
        c.handle_text(2, &ping);
    }
    let pongs: Vec<String> = std::iter::from_fn(|| c.poll_transmit())
        .map(|o| o.as_text().unwrap().to_owned())
        .collect();
    assert_eq!(pongs.len(), ids.len());
    for (pong, id) in pongs.iter().zip(&ids) {
        assert!(pong.contains(&format!("\nReply-To: {id}\n")), "{pong}");
        assert!(pong.len() <= 330, "{} bytes: {pong}", pong.len());
    }
}

fn header<'a>(msg: &'a str, name: &str) -> &'a str {
    msg.lines()
        .find_map(|l| l.strip_prefix(name).and_then(|r| r.strip_prefix(": ")))
        .unwrap_or_else(|| panic!("no {name} in {msg}"))
}
fn is_uuid_v4(s: &str) -> bool {
    let b = s.as_bytes();
    s.len() == 36
        && [8, 13, 18, 23].iter().all(|&i| b[i] == b'-')
        && s.chars()
            .all(|c| c == '-' || c.is_ascii_digit() || ('a'..='f').contains(&c))
        && b[14] == b'4'
}

/// Step 2 of the guide: HELLO is the first thing sent once the socket opens, in the guide's
/// shape: start line, `Version: 1`, a UUID `Message-ID` and `Session-ID`, an ISO 8601 UTC
/// `Timestamp`, `TTL: 30`, `User-Agent` and the comma-separated `Capabilities`, then the body
/// `{"min_version":1,"max_version":1}` after one blank line.
#[test]
fn the_hello_goes_first_at_open_in_the_guides_shape() {
    let mut c = ClientSession::new(
        ClientConfig {
            user_agent: "MyAgent/1.0".into(),
            capabilities: vec!["language".into(), "vision".into()],
            from: Some("did:rkt:my-agent".into()),
            keepalive: false,
            ..Default::default()
        },
        Box::new(SeededEntropy::new(3)),
    );
    assert!(c.poll_transmit().is_none(), "nothing before the socket opens");
    c.handle_open(0);
    let Some(Outgoing::Text(hello)) = c.poll_transmit() else {
        panic!("no HELLO at open")
    };
    let lines: Vec<&str> = hello.lines().collect();
    assert_eq!(lines[..2], ["RKT/1.0 HELLO", "Version: 1"], "{hello}");
    assert!(
        lines[2].starts_with("Message-ID: ") && lines[3].starts_with("Session-ID: "),
        "{hello}"
    );
    assert!(lines[4].starts_with("Timestamp: ") && lines[5] == "TTL: 30", "{hello}");
    assert!(is_uuid_v4(header(&hello, "Message-ID")), "{hello}");
    assert_eq!(header(&hello, "Session-ID"), c.session_id());
    assert!(is_uuid_v4(c.session_id()), "{}", c.session_id());
    let ts = header(&hello, "Timestamp");
    assert!(ts.len() >= 20 && ts.ends_with('Z') && &ts[10..11] == "T", "{ts}");
    assert_eq!(header(&hello, "From"), "did:rkt:my-agent");
    assert_eq!(header(&hello, "User-Agent"), "MyAgent/1.0");
    assert_eq!(header(&hello, "Capabilities"), "language,vision");
    let (_, body) = hello.split_once("\n\n").expect("one blank line before the body");
    let body: serde_json::Value = serde_json::from_str(body).unwrap();
    assert_eq!(body, serde_json::json!({"min_version": 1, "max_version": 1}));
}

/// The guide's field table: every `Message-ID` is a UUID unique per message, the HELLO's and
/// each command's alike, and each initiating message carries the default `TTL: 30`.
#[test]
fn every_message_id_is_a_unique_uuid_and_initiating_messages_carry_ttl_30() {
    let (mut c, hello_id) = client();
    c.handle_text(1, &ack(&hello_id, r#"{"agreed_version":1,"session_timeout":300}"#));
    drain(&mut c);
    let mut ids = std::collections::HashSet::from([hello_id]);
    for _ in 0..50 {
        c.request(2, "echo", None, Default::default()).unwrap();
        c.discover(2).unwrap();
        c.memory_get(2, "k", None).unwrap();
        c.ping(2).unwrap();
    }
    let mut sent = 0;
    while let Some(Outgoing::Text(t)) = c.poll_transmit() {
        let id = header(&t, "Message-ID");
        assert!(is_uuid_v4(id), "{t}");
        assert!(ids.insert(id.to_string()), "{id} sent twice");
        assert_eq!(header(&t, "TTL"), "30", "{t}");
        sent += 1;
    }
    assert_eq!(sent, 200);
}

/// The guide's header table lists `Accept-Language` (and `From`, `To`, `Authorization`,
/// `Priority`, `Stream`) as optional headers: a message carrying them decodes on either side,
/// the value (with its comma and space) kept.
#[test]
fn the_guides_optional_headers_decode_on_both_sides() {
    let req = "RKT/1.0 REQUEST\nVersion: 1\nMessage-ID: r\nSession-ID: s\nTimestamp: 2026-06-28T12:00:00Z\nTTL: 30\nFrom: did:rkt:gpt-5\nTo: rkt://weather.ai\nAuthorization: Bearer TOKEN\nStream: true\nPriority: URGENT\nCapabilities: language,vision,code\nAccept-Language: ko, en\nContent-Type: application/json\n\n{\"intent\":\"echo\"}";
    for m in [
        codec::decode(req, 1 << 20).unwrap(),
        codec::decode_for_client(
            &req.replace("REQUEST", "RESPONSE").replace("TTL: 30", "Reply-To: x"),
            1 << 20,
        )
        .unwrap(),
    ] {
        assert_eq!(m.header("accept-language"), Some("ko, en"));
        assert_eq!(m.header("Priority"), Some("URGENT"));
    }
}

/// The DISCOVER manifest of the reference server has the keys of the guide's example
/// (`agent`, `version`, `capabilities`, `streaming`, `memory`, `events`).
#[test]
fn the_reference_manifest_has_the_guides_keys() {
    let m = agentwire_rkt::reference::ReferenceConfig::default().manifest();
    for key in ["agent", "version", "capabilities", "streaming", "memory", "events"] {
        assert!(m.get(key).is_some(), "{key} missing from {m}");
    }
    assert!(m["version"].is_string() && m["capabilities"].is_array(), "{m}");
    assert!(m["streaming"].is_boolean() && m["memory"].is_boolean() && m["events"].is_boolean());
}
