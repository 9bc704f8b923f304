//! Forward compatibility: a server newer than the client. What the client does with message
//! types, header values and body fields it does not know.
use agentwire_core::{Outgoing, SeededEntropy};
use agentwire_rkt::*;

const T0: u64 = 1_782_648_000_000;

fn open() -> (ClientSession, String) {
    let cfg = ClientConfig {
        keepalive: false,
        ..Default::default()
    };
    let mut c = ClientSession::new(cfg, Box::new(SeededEntropy::new(1)));
    c.handle_open(T0);
    let Some(Outgoing::Text(hello)) = c.poll_transmit() else {
        panic!("no HELLO")
    };
    let id = hello.lines().find_map(|l| l.strip_prefix("Message-ID: ")).unwrap();
    (c, id.to_string())
}

fn ready() -> ClientSession {
    let (mut c, hello) = open();
    c.handle_text(
        T0,
        &reply(
            "HELLO_ACK",
            "ack",
            &hello,
            "",
            r#"{"agreed_version":1,"session_timeout":300}"#,
        ),
    );
    drain(&mut c);
    c
}

/// A server message answering `to`, with `extra` header lines and a body.
fn reply(kind: &str, id: &str, to: &str, extra: &str, body: &str) -> String {
    format!("RKT/1.0 {kind}\nVersion: 1\nMessage-ID: {id}\nReply-To: {to}\nSession-ID: s\nTimestamp: 2026-06-28T12:00:00Z\n{extra}\n{body}")
}

fn drain(c: &mut ClientSession) -> Vec<ClientEvent> {
    while c.poll_transmit().is_some() {}
    std::iter::from_fn(|| c.poll_event()).collect()
}

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
