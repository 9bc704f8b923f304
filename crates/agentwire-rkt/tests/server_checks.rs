//! What the server session's accessors report, and how its line mode and binary frames are
//! bounded. Found by mutation testing: each test fails with one change to `src/server.rs` that
//! the other tests let through.
mod common;

use agentwire_core::{ErrorKind, Outgoing, SeededEntropy};
use agentwire_rkt::*;
use common::T0;

fn server(cfg: ServerConfig) -> ServerSession {
    let mut s = ServerSession::new(cfg, Box::new(SeededEntropy::new(5)));
    s.handle_open(T0);
    s
}

/// A session made ready by HELLO `h1` of session `s1`, what that sent and raised drained.
fn ready(cfg: ServerConfig) -> ServerSession {
    let mut s = server(cfg);
    s.handle_text(T0, &msg("HELLO", "h1", "s1"));
    sent(&mut s);
    events(&mut s);
    s
}

fn msg(kind: &str, id: &str, session_id: &str) -> String {
    format!("RKT/1.0 {kind}\nVersion: 1\nMessage-ID: {id}\nSession-ID: {session_id}\nTimestamp: 2026-06-28T12:00:00Z\nTTL: 30\n")
}

fn sent(s: &mut ServerSession) -> Vec<Outgoing> {
    std::iter::from_fn(|| s.poll_transmit()).collect()
}

fn events(s: &mut ServerSession) -> Vec<ServerEvent> {
    std::iter::from_fn(|| s.poll_event()).collect()
}

fn error_code(out: &Outgoing) -> Option<i64> {
    let text = out.as_text()?.strip_prefix("RKT/1.0 ERROR\n")?;
    let body: serde_json::Value = serde_json::from_str(text.split_once("\n\n")?.1).ok()?;
    body["code"].as_i64()
}

/// `session_id()` is that of the message the server last answered before HELLO, then the
/// HELLO's; `config()` is the configuration given; `Debug` shows the state and session id and
/// not the configuration.
#[test]
fn the_accessors_report_the_session_id_and_the_configuration() {
    let cfg = ServerConfig {
        agent: "rkt://weather.ai".into(),
        max_version: 3,
        ..Default::default()
    };
    let mut s = server(cfg);
    assert_eq!(s.config().agent, "rkt://weather.ai");
    assert_eq!(s.config().max_version, 3);
    s.handle_text(T0, &msg("PING", "p1", "before-hello"));
    assert_eq!(s.session_id(), "before-hello");
    s.handle_text(T0, &msg("HELLO", "h1", "the-session"));
    assert_eq!(s.state(), ServerState::Ready);
    assert_eq!(s.session_id(), "the-session");
    let shown = format!("{s:?}");
    assert!(
        shown.starts_with("ServerSession") && shown.contains("Ready") && shown.contains("the-session"),
        "{shown}"
    );
    assert!(!shown.contains("weather.ai"), "{shown}");
}

/// A message typed line by line may grow to `max_message_size` and wait for its next line; one
/// byte past it is refused at once (413), not at the line timeout.
#[test]
fn a_line_mode_message_is_refused_as_soon_as_it_passes_max_message_size() {
    let start = "RKT/1.0 HELLO";
    let mut s = server(ServerConfig {
        max_message_size: start.len() + "\nVersion: 1".len(),
        ..Default::default()
    });
    s.handle_text(T0, start);
    s.handle_text(T0, "Version: 1");
    assert!(sent(&mut s).is_empty(), "exactly max_message_size waits");
    s.handle_text(T0, "Message-ID: h1");
    let out = sent(&mut s);
    assert_eq!(out.len(), 1, "{out:?}");
    assert_eq!(error_code(&out[0]), Some(413), "{out:?}");
    // Past the limit by many bytes in one frame too.
    s.handle_text(T0, start);
    s.handle_text(T0, &format!("X-Pad: {}", "x".repeat(100)));
    let out = sent(&mut s);
    assert_eq!(out.len(), 1, "{out:?}");
    assert_eq!(error_code(&out[0]), Some(413), "{out:?}");
}

/// A line-mode message that completes cancels its line timer: the next deadline is the session's
/// idle timeout, and the line timeout passing sends nothing.
#[test]
fn a_completed_line_mode_message_leaves_no_line_timer() {
    let mut s = ready(ServerConfig::default());
    for line in msg("PING", "p1", "s1").split('\n') {
        s.handle_text(T0, line);
    }
    let out = sent(&mut s);
    assert!(out[0].as_text().unwrap().starts_with("RKT/1.0 PONG\n"), "{out:?}");
    events(&mut s);
    assert_eq!(s.poll_timeout(), Some(T0 + 300_000));
    s.handle_timeout(T0 + 60_000);
    assert!(sent(&mut s).is_empty());
    assert!(events(&mut s).is_empty());
}

/// A binary frame takes a rate-limit slot as any message does; after the close it is ignored.
#[test]
fn binary_frames_count_toward_the_rate_limit_and_are_ignored_once_closed() {
    let mut s = ready(ServerConfig {
        burst: 1,
        rate_per_s: 0.001,
        ..Default::default()
    });
    s.handle_binary(T0, b"\x00\x01");
    s.handle_binary(T0, b"\x00\x01");
    let codes: Vec<_> = sent(&mut s).iter().map(error_code).collect();
    assert_eq!(codes, [Some(400), Some(429)]);
    events(&mut s);
    s.handle_close(T0, 1000, "");
    events(&mut s);
    s.handle_binary(T0 + 10_000_000, b"\x00");
    assert!(sent(&mut s).is_empty());
    assert!(events(&mut s).is_empty());
}

/// `goodbye` sends GOODBYE (answering nothing: no Reply-To, a TTL) and closes 1000; once closed
/// it sends nothing more.
#[test]
fn goodbye_sends_goodbye_then_closes_once() {
    let mut s = ready(ServerConfig::default());
    s.goodbye(T0);
    let out = sent(&mut s);
    let [Outgoing::Text(bye), Outgoing::Close { code: 1000, reason }] = out.as_slice() else {
        panic!("{out:?}")
    };
    assert!(
        bye.starts_with("RKT/1.0 GOODBYE\n") && bye.contains("\nSession-ID: s1\n"),
        "{bye}"
    );
    assert!(!bye.contains("\nReply-To:") && bye.contains("\nTTL: 30\n"), "{bye}");
    assert_eq!(reason, "goodbye");
    assert_eq!(
        events(&mut s),
        [ServerEvent::Closed {
            code: 1000,
            reason: "goodbye".into()
        }]
    );
    assert_eq!(s.state(), ServerState::Closed);
    s.goodbye(T0);
    assert!(sent(&mut s).is_empty());
    assert!(events(&mut s).is_empty());
}

/// Every message takes a rate-limit slot but the HELLO that opens the session: a message before
/// HELLO takes one, and so does a second HELLO.
#[test]
fn only_the_hello_that_opens_the_session_is_free_of_the_rate_limit() {
    let cfg = ServerConfig {
        burst: 1,
        rate_per_s: 0.001,
        ..Default::default()
    };
    let mut s = server(cfg.clone());
    s.handle_text(T0, &msg("PING", "p1", "s1"));
    s.handle_text(T0, &msg("PING", "p2", "s1"));
    let out = sent(&mut s);
    assert!(out[0].as_text().unwrap().starts_with("RKT/1.0 PONG\n"), "{out:?}");
    assert_eq!(error_code(&out[1]), Some(429), "{out:?}");
    s.handle_text(T0, &msg("HELLO", "h1", "s1"));
    assert_eq!(s.state(), ServerState::Ready, "the opening HELLO is free");

    let mut s = server(cfg);
    s.handle_text(T0, &msg("HELLO", "h1", "s1"));
    s.handle_text(T0, &msg("HELLO", "h2", "s1"));
    s.handle_text(T0, &msg("HELLO", "h3", "s1"));
    let codes: Vec<_> = sent(&mut s).iter().skip(1).map(error_code).collect();
    assert_eq!(codes, [Some(409), Some(429)]);
}

/// A client's PONG is taken quietly; its ERROR is a `PeerError` event, not answered.
#[test]
fn a_clients_pong_is_ignored_and_its_error_is_a_peer_error() {
    let mut s = ready(ServerConfig::default());
    s.handle_text(T0, &format!("{}Reply-To: ping-1\n", msg("PONG", "p1", "s1")));
    assert!(sent(&mut s).is_empty());
    assert!(events(&mut s).is_empty());
    let error = format!(
        "{}\n{}",
        msg("ERROR", "e1", "s1"),
        r#"{"code":500,"message":"client broke"}"#
    );
    s.handle_text(T0, &error);
    assert!(sent(&mut s).is_empty());
    let ev = events(&mut s);
    let [ServerEvent::PeerError(e)] = ev.as_slice() else {
        panic!("{ev:?}")
    };
    assert_eq!(e.code(), Some(500));
    assert_eq!(s.state(), ServerState::Ready);
}

/// DISCOVER, bodiless, goes to the application.
#[test]
fn discover_is_handed_to_the_application() {
    let mut s = ready(ServerConfig::default());
    s.handle_text(T0, &msg("DISCOVER", "d1", "s1"));
    assert!(sent(&mut s).is_empty());
    let ev = events(&mut s);
    let [ServerEvent::Inbound(m)] = ev.as_slice() else {
        panic!("{ev:?}")
    };
    assert_eq!((m.id.as_str(), &m.kind), ("d1", &InboundKind::Discover));
}

/// A body that parses but says nothing usable (a blank intent, an empty key or namespace, an
/// amount that is not positive, a blank currency) is refused 400 naming why, not handed on; the
/// same message with a usable body is handed on.
#[test]
fn bodies_without_a_usable_intent_key_or_payment_are_refused() {
    let refused = [
        ("REQUEST", r#"{"intent":""}"#, "intent must not be empty"),
        ("REQUEST", r#"{"intent":" \t"}"#, "intent must not be empty"),
        ("MEMORY_SET", r#"{"key":"","value":1}"#, "key and namespace"),
        (
            "MEMORY_SET",
            r#"{"key":"k","namespace":"","value":1}"#,
            "key and namespace",
        ),
        ("MEMORY_GET", r#"{"key":""}"#, "key and namespace"),
        ("MEMORY_GET", r#"{"key":"k","namespace":""}"#, "key and namespace"),
        ("PAY", r#"{"amount":-1,"currency":"USD"}"#, "positive amount"),
        ("PAY", r#"{"amount":0,"currency":"USD"}"#, "positive amount"),
        ("PAY", r#"{"amount":1,"currency":" "}"#, "positive amount"),
    ];
    let mut s = ready(ServerConfig::default());
    for (kind, body, why) in refused {
        s.handle_text(T0, &format!("{}\n{body}", msg(kind, "m1", "s1")));
        let out = sent(&mut s);
        assert_eq!(out.len(), 1, "{kind} {body}: {out:?}");
        assert_eq!(error_code(&out[0]), Some(400), "{kind} {body}: {out:?}");
        assert!(out[0].as_text().unwrap().contains(why), "{kind} {body}: {out:?}");
        let ev = events(&mut s);
        assert!(matches!(ev.as_slice(), [ServerEvent::Rejected(_)]), "{ev:?}");
    }
    let usable = [
        ("REQUEST", r#"{"intent":"echo"}"#),
        ("MEMORY_SET", r#"{"key":"k","namespace":"n","value":1}"#),
        ("MEMORY_GET", r#"{"key":"k"}"#),
        ("PAY", r#"{"amount":0.5,"currency":"USD"}"#),
    ];
    for (kind, body) in usable {
        s.handle_text(T0, &format!("{}\n{body}", msg(kind, "m1", "s1")));
        assert!(sent(&mut s).is_empty(), "{kind} {body}");
        let ev = events(&mut s);
        assert!(
            matches!(ev.as_slice(), [ServerEvent::Inbound(_)]),
            "{kind} {body}: {ev:?}"
        );
    }
}

/// A second HELLO is refused 409 saying why: the session is established, or a HELLO is already
/// with the application. A HELLO whose min_version is above its max_version is a bad body (400),
/// not a version mismatch (603).
#[test]
fn hellos_the_server_cannot_take_are_refused_saying_why() {
    let mut s = ready(ServerConfig::default());
    s.handle_text(T0, &msg("HELLO", "h2", "s1"));
    let out = sent(&mut s);
    assert_eq!(error_code(&out[0]), Some(409), "{out:?}");
    assert!(out[0].as_text().unwrap().contains("already established"), "{out:?}");

    let mut s = server(ServerConfig::default());
    let authorized = format!("{}Authorization: Bearer k\n", msg("HELLO", "h1", "s1"));
    s.handle_text(T0, &authorized);
    s.handle_text(T0, &authorized.replace("h1", "h2"));
    let out = sent(&mut s);
    assert_eq!(error_code(&out[0]), Some(409), "{out:?}");
    assert!(out[0].as_text().unwrap().contains("already being answered"), "{out:?}");

    let mut s = server(ServerConfig::default());
    let body = r#"{"min_version":1,"max_version":0}"#;
    s.handle_text(T0, &format!("{}\n{body}", msg("HELLO", "h1", "s1")));
    let out = sent(&mut s);
    assert_eq!(error_code(&out[0]), Some(400), "{out:?}");
    assert!(
        out[0].as_text().unwrap().contains("min_version is above max_version"),
        "{out:?}"
    );
    assert_eq!(s.state(), ServerState::AwaitingHello);
}

/// HELLO_ACK lists the configured capabilities, comma-separated; with none it has no
/// `Capabilities` header.
#[test]
fn hello_ack_carries_capabilities_only_when_configured() {
    for (capabilities, header) in [(vec!["stream", "memory"], Some("stream,memory")), (vec![], None)] {
        let mut s = server(ServerConfig {
            capabilities: capabilities.into_iter().map(String::from).collect(),
            ..Default::default()
        });
        s.handle_text(T0, &msg("HELLO", "h1", "s1"));
        let out = sent(&mut s);
        let ack = out[0].as_text().unwrap();
        assert!(ack.starts_with("RKT/1.0 HELLO_ACK\n"), "{ack}");
        let got = ack.lines().find_map(|l| l.strip_prefix("Capabilities:"));
        assert_eq!(got.map(str::trim), header, "{ack}");
    }
}

/// A version range with no version (`min_version` above `max_version`) is refused by the
/// configuration's check and the session starts closed: it answered every HELLO with ERROR 603
/// "no common version".
#[test]
fn a_server_configuration_with_no_version_closes_the_session_at_once() {
    let cfg = ServerConfig {
        min_version: 2,
        max_version: 1,
        ..Default::default()
    };
    let e = cfg.check().unwrap_err();
    assert_eq!(
        (e.kind(), e.error.message.as_str()),
        (
            ErrorKind::Invalid,
            "min_version 2 is above max_version 1: no version to agree on"
        )
    );
    let mut s = server(cfg);
    s.handle_text(T0, &msg("HELLO", "h1", "s1"));
    assert_eq!(s.state(), ServerState::Closed);
    assert!(matches!(
        events(&mut s).as_slice(),
        [ServerEvent::Closed { code: 1011, .. }]
    ));
}
