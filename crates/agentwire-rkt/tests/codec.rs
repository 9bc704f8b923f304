//! Integration tests of the RKT text codec against the connection guide
//! (`shared/specs/rkt-agent-connection.md`): its example messages, exactly what its TypeScript,
//! Python and Go clients put on the wire, every decode error, byte-exact encoding, and
//! round-trip / no-panic properties.

use agentwire_rkt::codec::{self, DEFAULT_MAX_MESSAGE_SIZE, MAX_ID_LEN};
use agentwire_rkt::{decode, encode, DecodeError, DecodeErrorKind, Headers, Message, MessageType};
use proptest::prelude::*;

const MID: &str = "01960000-0000-7000-ab12-000000000001";
const SID: &str = "e3ad1f12-4e3a-4b1e-9c2d-000000000042";

/// The guide's HELLO example, verbatim (Step 2).
const GUIDE_HELLO: &str = "RKT/1.0 HELLO
Version: 1
Message-ID: 01960000-0000-7000-ab12-000000000001
Session-ID: e3ad1f12-4e3a-4b1e-9c2d-000000000042
Timestamp: 2026-06-28T12:00:00Z
TTL: 30
From: did:rkt:my-agent
User-Agent: MyAgent/1.0
Capabilities: language,vision,code

{\"min_version\":1,\"max_version\":1}";

/// The guide's HELLO_ACK example, verbatim (Step 3). A reply: `Reply-To`, no `TTL`.
const GUIDE_HELLO_ACK: &str = "RKT/1.0 HELLO_ACK
Version: 1
Message-ID: 01960000-0000-7000-ab12-000000000002
Reply-To: 01960000-0000-7000-ab12-000000000001
Session-ID: e3ad1f12-4e3a-4b1e-9c2d-000000000042
Timestamp: 2026-06-28T12:00:00Z
From: rkt://weather.ai
User-Agent: WeatherAgent/1.0
Capabilities: weather,forecast,alerts

{\"agreed_version\":1,\"session_timeout\":300}";

/// The guide's "paste into wscat" HELLO: a body but no `Content-Type`.
const GUIDE_WSCAT_HELLO: &str = "RKT/1.0 HELLO
Version: 1
Message-ID: aaaaaaaa-0000-0000-0000-000000000001
Session-ID: bbbbbbbb-0000-0000-0000-000000000001
Timestamp: 2026-06-28T00:00:00Z
TTL: 30
User-Agent: wscat/test

{\"min_version\":1,\"max_version\":1}";

fn dec(text: &str) -> Message {
    decode(text, DEFAULT_MAX_MESSAGE_SIZE).unwrap_or_else(|e| panic!("decode failed: {e} ({e:?})\n---\n{text}\n---"))
}

fn e_text(text: &str) -> String {
    err(text).to_string()
}

fn err(text: &str) -> DecodeError {
    match decode(text, DEFAULT_MAX_MESSAGE_SIZE) {
        Ok(m) => panic!("decode unexpectedly succeeded: {m:?}\n---\n{text}\n---"),
        Err(e) => e,
    }
}

/// Asserts the exact header list (names as written, values, wire order).
fn assert_headers(m: &Message, expected: &[(&str, &str)]) {
    let got: Vec<(&str, &str)> = m.headers.iter().collect();
    assert_eq!(got, expected, "headers of {:?}", m.kind);
}

fn body_json(m: &Message) -> serde_json::Value {
    serde_json::from_str(m.body.as_deref().expect("message has a body")).expect("body is JSON")
}

/// A no-body message with the required headers of a non-reply, one per line, `\n` endings.
fn base(kind: &str, extra: &[&str]) -> String {
    let mut s = format!(
        "RKT/1.0 {kind}\nVersion: 1\nMessage-ID: {MID}\nSession-ID: {SID}\nTimestamp: 2026-06-28T12:00:00Z\nTTL: 30\n"
    );
    for line in extra {
        s.push_str(line);
        s.push('\n');
    }
    s
}

// ---------------------------------------------------------------------------------------------
// The guide's example messages
// ---------------------------------------------------------------------------------------------

#[test]
fn guide_hello_decodes() {
    let m = dec(GUIDE_HELLO);
    assert_eq!(m.kind, MessageType::Hello);
    assert_headers(
        &m,
        &[
            ("Version", "1"),
            ("Message-ID", MID),
            ("Session-ID", SID),
            ("Timestamp", "2026-06-28T12:00:00Z"),
            ("TTL", "30"),
            ("From", "did:rkt:my-agent"),
            ("User-Agent", "MyAgent/1.0"),
            ("Capabilities", "language,vision,code"),
        ],
    );
    assert_eq!(m.body.as_deref(), Some(r#"{"min_version":1,"max_version":1}"#));
    assert_eq!(m.message_id(), MID);
    assert_eq!(m.ttl(), Some(30));
    assert_eq!(m.reply_to(), None);
}

#[test]
fn guide_hello_ack_decodes_without_ttl() {
    assert!(MessageType::HelloAck.is_reply());
    let m = dec(GUIDE_HELLO_ACK);
    assert_eq!(m.kind, MessageType::HelloAck);
    assert_headers(
        &m,
        &[
            ("Version", "1"),
            ("Message-ID", "01960000-0000-7000-ab12-000000000002"),
            ("Reply-To", MID),
            ("Session-ID", SID),
            ("Timestamp", "2026-06-28T12:00:00Z"),
            ("From", "rkt://weather.ai"),
            ("User-Agent", "WeatherAgent/1.0"),
            ("Capabilities", "weather,forecast,alerts"),
        ],
    );
    assert_eq!(m.ttl(), None);
    assert_eq!(m.reply_to(), Some(MID));
    assert_eq!(
        body_json(&m),
        serde_json::json!({"agreed_version": 1, "session_timeout": 300})
    );
}

#[test]
fn guide_wscat_hello_has_body_without_content_type() {
    for text in [GUIDE_WSCAT_HELLO.to_string(), format!("{GUIDE_WSCAT_HELLO}\n")] {
        let m = dec(&text);
        assert_eq!(m.kind, MessageType::Hello);
        assert_eq!(m.header("Content-Type"), None);
        assert_headers(
            &m,
            &[
                ("Version", "1"),
                ("Message-ID", "aaaaaaaa-0000-0000-0000-000000000001"),
                ("Session-ID", "bbbbbbbb-0000-0000-0000-000000000001"),
                ("Timestamp", "2026-06-28T00:00:00Z"),
                ("TTL", "30"),
                ("User-Agent", "wscat/test"),
            ],
        );
        assert_eq!(m.body.as_deref(), Some(r#"{"min_version":1,"max_version":1}"#));
    }
}

#[test]
fn guide_error_body_is_kept_verbatim() {
    // The guide's ERROR body is pretty-printed over several lines.
    let body = "{\n  \"code\":    602,\n  \"name\":    \"CAPABILITY_MISSING\",\n  \"message\": \"Intent 'maps.navigate' not found\",\n  \"details\": { \"available_intents\": [\"weather.current\", \"weather.forecast\"] },\n  \"request_id\": \"01960000-0000-7000-ab12-000000000003\"\n}";
    let text = format!("{}Content-Type: application/json\n\n{body}\n", base("ERROR", &[]));
    let m = dec(&text);
    assert_eq!(m.kind, MessageType::Error);
    assert_eq!(m.body.as_deref(), Some(body));
    assert_eq!(body_json(&m)["code"], 602);
}

// ---------------------------------------------------------------------------------------------
// What the guide's example clients put on the wire
// ---------------------------------------------------------------------------------------------

/// The guide's TypeScript raw client `send()`: an array joined with `\n`, with `extra` and the
/// Content-Type slot present (possibly empty) in every message.
fn ts_send(kind: &str, msg_id: &str, extra: &str, body: Option<&str>) -> String {
    [
        format!("RKT/1.0 {kind}"),
        "Version: 1".to_string(),
        format!("Message-ID: {msg_id}"),
        format!("Session-ID: {SID}"),
        // new Date().toISOString()
        "Timestamp: 2026-06-28T12:00:00.123Z".to_string(),
        "TTL: 30".to_string(),
        extra.to_string(),
        if body.is_some() {
            "Content-Type: application/json".to_string()
        } else {
            String::new()
        },
        String::new(),
        body.unwrap_or("").to_string(),
    ]
    .join("\n")
}

fn required(msg_id: &str, ts: &str) -> Vec<(String, String)> {
    vec![
        ("Version".into(), "1".into()),
        ("Message-ID".into(), msg_id.into()),
        ("Session-ID".into(), SID.into()),
        ("Timestamp".into(), ts.into()),
        ("TTL".into(), "30".into()),
    ]
}

fn assert_headers_owned(m: &Message, expected: &[(String, String)]) {
    let exp: Vec<(&str, &str)> = expected.iter().map(|(n, v)| (n.as_str(), v.as_str())).collect();
    assert_headers(m, &exp);
}

#[test]
fn typescript_hello_with_extra_and_body() {
    let body = r#"{"min_version":1,"max_version":1}"#;
    let wire = ts_send(
        "HELLO",
        "11111111-1111-4111-8111-111111111111",
        "User-Agent: MyAgent/1.0\nCapabilities: language",
        Some(body),
    );
    assert!(wire.ends_with("Content-Type: application/json\n\n{\"min_version\":1,\"max_version\":1}"));
    let m = dec(&wire);
    assert_eq!(m.kind, MessageType::Hello);
    let mut h = required("11111111-1111-4111-8111-111111111111", "2026-06-28T12:00:00.123Z");
    h.push(("User-Agent".into(), "MyAgent/1.0".into()));
    h.push(("Capabilities".into(), "language".into()));
    h.push(("Content-Type".into(), "application/json".into()));
    assert_headers_owned(&m, &h);
    assert_eq!(m.body.as_deref(), Some(body));
}

#[test]
fn typescript_request_with_extra_and_body() {
    let body = r#"{"intent":"weather.current","params":{"city":"Seoul"}}"#;
    let wire = ts_send(
        "REQUEST",
        "22222222-2222-4222-8222-222222222222",
        "To: rkt://weather.ai",
        Some(body),
    );
    let m = dec(&wire);
    assert_eq!(m.kind, MessageType::Request);
    let mut h = required("22222222-2222-4222-8222-222222222222", "2026-06-28T12:00:00.123Z");
    h.push(("To".into(), "rkt://weather.ai".into()));
    h.push(("Content-Type".into(), "application/json".into()));
    assert_headers_owned(&m, &h);
    assert_eq!(body_json(&m)["params"]["city"], "Seoul");
}

#[test]
fn typescript_memory_set_with_empty_extra_keeps_content_type_as_header() {
    let body = r#"{"key":"preferred_city","value":"Seoul","namespace":"user.prefs","ttl":3600}"#;
    let wire = ts_send("MEMORY_SET", "33333333-3333-4333-8333-333333333333", "", Some(body));
    // The empty `extra` puts a blank line between TTL and Content-Type.
    assert!(
        wire.contains("TTL: 30\n\nContent-Type: application/json\n\n{"),
        "{wire:?}"
    );
    let m = dec(&wire);
    assert_eq!(m.kind, MessageType::MemorySet);
    assert_eq!(m.header("Content-Type"), Some("application/json"));
    let mut h = required("33333333-3333-4333-8333-333333333333", "2026-06-28T12:00:00.123Z");
    h.push(("Content-Type".into(), "application/json".into()));
    assert_headers_owned(&m, &h);
    assert_eq!(m.body.as_deref(), Some(body));
}

#[test]
fn typescript_goodbye_with_empty_extra_and_no_body() {
    let wire = ts_send("GOODBYE", "44444444-4444-4444-8444-444444444444", "", None);
    assert!(wire.ends_with("TTL: 30\n\n\n\n"), "{wire:?}");
    let m = dec(&wire);
    assert_eq!(m.kind, MessageType::Goodbye);
    assert_headers_owned(
        &m,
        &required("44444444-4444-4444-8444-444444444444", "2026-06-28T12:00:00.123Z"),
    );
    assert_eq!(m.body, None);
}

#[test]
fn typescript_request_with_extra_and_no_body() {
    let wire = ts_send(
        "DISCOVER",
        "55555555-5555-4555-8555-555555555555",
        "To: rkt://weather.ai",
        None,
    );
    assert!(wire.ends_with("To: rkt://weather.ai\n\n\n"), "{wire:?}");
    let m = dec(&wire);
    assert_eq!(m.header("To"), Some("rkt://weather.ai"));
    assert_eq!(m.body, None);
}

/// The guide's Python `make_msg`: `Content-Length` with a body, `isoformat()` timestamps, no
/// trailing newline after the body, and a single trailing `\n` without one.
fn py_make_msg(kind: &str, msg_id: &str, ts: &str, extra: &str, body: Option<&str>) -> String {
    let mut lines = vec![
        format!("RKT/1.0 {kind}"),
        "Version: 1".to_string(),
        format!("Message-ID: {msg_id}"),
        format!("Session-ID: {SID}"),
        format!("Timestamp: {ts}"),
        "TTL: 30".to_string(),
    ];
    if !extra.is_empty() {
        lines.push(extra.to_string());
    }
    match body {
        Some(b) => {
            lines.push("Content-Type: application/json".to_string());
            lines.push(format!("Content-Length: {}", b.len()));
            lines.push(String::new());
            lines.push(b.to_string());
        }
        None => lines.push(String::new()),
    }
    lines.join("\n")
}

#[test]
fn python_client_messages() {
    let ts = "2026-06-28T12:00:00.123456+00:00";
    // json.dumps default separators: ", " and ": ".
    let hello_body = r#"{"min_version": 1, "max_version": 1}"#;
    let wire = py_make_msg(
        "HELLO",
        "66666666-6666-4666-8666-666666666666",
        ts,
        "User-Agent: PythonAgent/1.0\nCapabilities: language,vision",
        Some(hello_body),
    );
    assert!(wire.ends_with(&format!("Content-Length: 36\n\n{hello_body}")));
    let m = dec(&wire);
    assert_eq!(m.kind, MessageType::Hello);
    let mut h = required("66666666-6666-4666-8666-666666666666", ts);
    h.push(("User-Agent".into(), "PythonAgent/1.0".into()));
    h.push(("Capabilities".into(), "language,vision".into()));
    h.push(("Content-Type".into(), "application/json".into()));
    h.push(("Content-Length".into(), "36".into()));
    assert_headers_owned(&m, &h);
    assert_eq!(m.body.as_deref(), Some(hello_body));

    let req_body = r#"{"intent": "weather.current", "params": {"city": "Seoul"}, "context": {"language": "ko", "timezone": "Asia/Seoul"}}"#;
    let m = dec(&py_make_msg(
        "REQUEST",
        "77777777-7777-4777-8777-777777777777",
        ts,
        "To: rkt://weather.ai",
        Some(req_body),
    ));
    assert_eq!(m.kind, MessageType::Request);
    assert_eq!(m.header("To"), Some("rkt://weather.ai"));
    assert_eq!(m.body.as_deref(), Some(req_body));

    let mem_body = r#"{"key": "city", "value": "Seoul", "namespace": "prefs", "ttl": 3600}"#;
    let m = dec(&py_make_msg(
        "MEMORY_SET",
        "88888888-8888-4888-8888-888888888888",
        ts,
        "",
        Some(mem_body),
    ));
    assert_eq!(m.kind, MessageType::MemorySet);
    assert_eq!(m.header("Content-Length"), Some(mem_body.len().to_string().as_str()));
    assert_eq!(m.body.as_deref(), Some(mem_body));

    // isoformat() drops the fraction when the microseconds are zero.
    let wire = py_make_msg(
        "GOODBYE",
        "99999999-9999-4999-8999-999999999999",
        "2026-06-28T12:00:00+00:00",
        "",
        None,
    );
    assert!(wire.ends_with("TTL: 30\n"));
    let m = dec(&wire);
    assert_eq!(m.kind, MessageType::Goodbye);
    assert_headers_owned(
        &m,
        &required("99999999-9999-4999-8999-999999999999", "2026-06-28T12:00:00+00:00"),
    );
    assert_eq!(m.body, None);
}

#[test]
fn content_length_counts_utf8_bytes() {
    let body = r#"{"city":"서울"}"#;
    assert_eq!(body.chars().count(), 13);
    assert_eq!(body.len(), 17);
    let text = format!("{}Content-Length: 17\n\n{body}", base("REQUEST", &[]));
    assert_eq!(dec(&text).body.as_deref(), Some(body));
    // A length in characters is wrong, and one that splits a character too.
    let text = format!("{}Content-Length: 13\n\n{body}", base("REQUEST", &[]));
    assert!(matches!(
        err(&text).kind,
        DecodeErrorKind::ContentLength { declared: 13, .. }
    ));
    let text = format!("{}Content-Length: 10\n\n{body}", base("REQUEST", &[]));
    assert!(matches!(
        err(&text).kind,
        DecodeErrorKind::ContentLength { declared: 10, .. }
    ));
}

/// The guide's Go `makeMsg`: like Python's but without Content-Length, RFC 3339 timestamps, and
/// json.Marshal's sorted compact output.
fn go_make_msg(kind: &str, msg_id: &str, extra: &str, body: Option<&str>) -> String {
    let mut lines = vec![
        format!("RKT/1.0 {kind}"),
        "Version: 1".to_string(),
        format!("Message-ID: {msg_id}"),
        format!("Session-ID: {SID}"),
        "Timestamp: 2026-06-28T12:00:00Z".to_string(),
        "TTL: 30".to_string(),
    ];
    if !extra.is_empty() {
        lines.push(extra.to_string());
    }
    match body {
        Some(b) => {
            lines.push("Content-Type: application/json".to_string());
            lines.push(String::new());
            lines.push(b.to_string());
        }
        None => lines.push(String::new()),
    }
    lines.join("\n")
}

#[test]
fn go_client_messages() {
    let hello_body = r#"{"max_version":1,"min_version":1}"#;
    let m = dec(&go_make_msg(
        "HELLO",
        "aaaaaaaa-aaaa-4aaa-8aaa-aaaaaaaaaaaa",
        "User-Agent: GoAgent/1.0\nCapabilities: language",
        Some(hello_body),
    ));
    assert_eq!(m.kind, MessageType::Hello);
    let mut h = required("aaaaaaaa-aaaa-4aaa-8aaa-aaaaaaaaaaaa", "2026-06-28T12:00:00Z");
    h.push(("User-Agent".into(), "GoAgent/1.0".into()));
    h.push(("Capabilities".into(), "language".into()));
    h.push(("Content-Type".into(), "application/json".into()));
    assert_headers_owned(&m, &h);
    assert_eq!(m.body.as_deref(), Some(hello_body));

    let req_body = r#"{"intent":"weather.current","params":{"city":"Seoul"}}"#;
    let m = dec(&go_make_msg(
        "REQUEST",
        "bbbbbbbb-bbbb-4bbb-8bbb-bbbbbbbbbbbb",
        "To: rkt://weather.ai",
        Some(req_body),
    ));
    assert_eq!(m.header("To"), Some("rkt://weather.ai"));
    assert_eq!(m.body.as_deref(), Some(req_body));

    let wire = go_make_msg("GOODBYE", "cccccccc-cccc-4ccc-8ccc-cccccccccccc", "", None);
    assert!(wire.ends_with("TTL: 30\n"));
    let m = dec(&wire);
    assert_headers_owned(
        &m,
        &required("cccccccc-cccc-4ccc-8ccc-cccccccccccc", "2026-06-28T12:00:00Z"),
    );
    assert_eq!(m.body, None);
}

// ---------------------------------------------------------------------------------------------
// Tolerance: line endings, case, trailing newlines
// ---------------------------------------------------------------------------------------------

#[test]
fn crlf_line_endings() {
    let crlf = GUIDE_HELLO.replace('\n', "\r\n");
    assert_eq!(dec(&crlf), dec(GUIDE_HELLO));
    assert_eq!(dec(&format!("{crlf}\r\n")), dec(GUIDE_HELLO));
    let crlf = GUIDE_HELLO_ACK.replace('\n', "\r\n");
    assert_eq!(dec(&crlf), dec(GUIDE_HELLO_ACK));
    // No body, CRLF, with the final CRLF.
    let text = base("GOODBYE", &[]).replace('\n', "\r\n");
    assert_eq!(dec(&text), dec(&base("GOODBYE", &[])));
    // Mixed endings.
    let mixed = GUIDE_HELLO.replacen('\n', "\r\n", 3);
    assert_eq!(dec(&mixed), dec(GUIDE_HELLO));
    // Content-Length with CRLF and a one-line body.
    let body = r#"{"a":1}"#;
    let text = format!("{}Content-Length: {}\n\n{body}", base("REQUEST", &[]), body.len()).replace('\n', "\r\n");
    assert_eq!(dec(&text).body.as_deref(), Some(body));
}

#[test]
fn crlf_bodies_are_kept_byte_for_byte() {
    // A pretty-printed body sent with CRLF: Content-Length counts the bytes as sent.
    let body = "{\r\n  \"intent\": \"echo\"\r\n}";
    let head = base("REQUEST", &["Content-Type: application/json"]).replace('\n', "\r\n");
    let text = format!("{head}Content-Length: {}\r\n\r\n{body}", body.len());
    assert_eq!(dec(&text).body.as_deref(), Some(body));
    // A length counted after dropping the CRs is wrong.
    let text = format!("{head}Content-Length: {}\r\n\r\n{body}", body.len() - 2);
    assert!(matches!(err(&text).kind, DecodeErrorKind::ContentLength { .. }));
    // Without Content-Length the body is kept as sent, less trailing whitespace.
    let text = format!("{head}\r\n{body}\r\n");
    let m = dec(&text);
    assert_eq!(m.body.as_deref(), Some(body));
    // ...and it survives re-encoding.
    assert_eq!(dec(&encode(&m)), m);
    // A blank CRLF line before more headers (the TypeScript client's empty `extra`, with CRLF).
    let text = format!(
        "{}\r\nContent-Type: application/json\r\n\r\n{{}}",
        base("MEMORY_SET", &[]).replace('\n', "\r\n")
    );
    let m = dec(&text);
    assert_eq!(m.header("Content-Type"), Some("application/json"));
    assert_eq!(m.body.as_deref(), Some("{}"));
}

#[test]
fn header_names_in_any_case() {
    let text = format!(
        "RKT/1.0 STREAM_DATA\nversion: 1\nMESSAGE-ID: {MID}\nsession-id: {SID}\ntimeSTAMP: 2026-06-28T12:00:00Z\nreply-to: {MID}\nSEQ: 7\nconTent-tyPe: application/json\n\n[1]"
    );
    let m = dec(&text);
    assert_eq!(m.kind, MessageType::StreamData);
    // Names are kept as written; lookups ignore case.
    assert_eq!(m.headers.iter().next(), Some(("version", "1")));
    assert_eq!(m.message_id(), MID);
    assert_eq!(m.header("Session-ID"), Some(SID));
    assert_eq!(m.reply_to(), Some(MID));
    assert_eq!(m.seq(), Some(7));
    assert_eq!(m.header("CONTENT-TYPE"), Some("application/json"));
    assert_eq!(m.body.as_deref(), Some("[1]"));
    // Re-encoding does not add a second Content-Type.
    assert_eq!(encode(&m).matches("application/json").count(), 1);
}

#[test]
fn trailing_newlines_missing_or_extra() {
    let reference = dec(GUIDE_HELLO);
    for suffix in ["\n", "\n\n", "\n\n\n\n", " \n", "\r\n\r\n"] {
        assert_eq!(dec(&format!("{GUIDE_HELLO}{suffix}")), reference, "suffix {suffix:?}");
    }
    let no_body = base("GOODBYE", &[]);
    let reference = dec(&no_body);
    assert_eq!(reference.body, None);
    let trimmed = no_body.trim_end();
    for text in [
        trimmed.to_string(),
        no_body.clone(),
        format!("{no_body}\n"),
        format!("{no_body}\n\n\n"),
    ] {
        assert_eq!(dec(&text), reference, "{text:?}");
    }
    // Leading blank lines before the start line are skipped.
    assert_eq!(dec(&format!("\n\n{GUIDE_HELLO}")), dec(GUIDE_HELLO));
}

#[test]
fn minor_protocol_versions_are_accepted() {
    let m = dec(&GUIDE_HELLO.replacen("RKT/1.0", "RKT/1.1", 1));
    assert_eq!(m, dec(GUIDE_HELLO));
}

#[test]
fn lenient_values() {
    let m = dec(&base("REQUEST", &["Stream: TRUE", "Priority: high", "Retry-After: 5"]));
    assert_eq!(m.header("Stream"), Some("TRUE"));
    assert_eq!(m.header("Priority"), Some("high"));
    // Spaces around the colon and the value are not part of it.
    let m = dec(&base("REQUEST", &["To :   rkt://weather.ai  "]));
    assert_eq!(m.header("To"), Some("rkt://weather.ai"));
}

// ---------------------------------------------------------------------------------------------
// Content-Length
// ---------------------------------------------------------------------------------------------

fn with_length(declared: &str, body: &str) -> String {
    format!(
        "{}Content-Type: application/json\nContent-Length: {declared}\n\n{body}",
        base("REQUEST", &[])
    )
}

#[test]
fn content_length_exact_is_honoured() {
    let body = r#"{"intent":"echo"}"#;
    let m = dec(&with_length(&body.len().to_string(), body));
    assert_eq!(m.body.as_deref(), Some(body));
    // Trailing whitespace after the declared body is not data.
    let m = dec(&with_length(&body.len().to_string(), &format!("{body}\n")));
    assert_eq!(m.body.as_deref(), Some(body));
    // Content-Length keeps a body's own trailing space that an unframed body would lose.
    let m = dec(&with_length("3", "[1] "));
    assert_eq!(m.body.as_deref(), Some("[1]"));
    let m = dec(&with_length("4", "[1] "));
    assert_eq!(m.body.as_deref(), Some("[1] "));
    // A declared body of blanks is still the body, so it re-encodes to a valid message.
    let m = dec(&with_length("2", "  "));
    assert_eq!(m.body.as_deref(), Some("  "));
    assert_eq!(dec(&encode(&m)), m);
    // Zero with no body.
    let m = dec(&format!("{}Content-Length: 0\n", base("GOODBYE", &[])));
    assert_eq!(m.body, None);
}

#[test]
fn content_length_too_long() {
    let body = r#"{"intent":"echo"}"#;
    let e = err(&with_length("100", body));
    assert_eq!(
        e.kind,
        DecodeErrorKind::ContentLength {
            declared: 100,
            actual: body.len()
        }
    );
    assert_eq!(e.field(), "Content-Length");
    assert_eq!(e.message_id.as_deref(), Some(MID));
    assert_eq!(e.message_type.as_deref(), Some("REQUEST"));
}

#[test]
fn content_length_too_short() {
    let body = r#"{"intent":"echo"}"#;
    let e = err(&with_length("5", body));
    assert_eq!(
        e.kind,
        DecodeErrorKind::ContentLength {
            declared: 5,
            actual: body.len()
        }
    );
    assert_eq!(e.field(), "Content-Length");
}

#[test]
fn data_after_the_declared_length() {
    let body = r#"{"intent":"echo"}"#;
    let text = with_length(&body.len().to_string(), &format!("{body}\n\nRKT/1.0 GOODBYE\n"));
    let e = err(&text);
    assert!(
        matches!(e.kind, DecodeErrorKind::ContentLength { declared, .. } if declared == body.len()),
        "{e:?}"
    );
}

/// A Content-Length that is not digits, or is past the largest byte count (`usize::MAX`), says
/// the range, as `Version`, `TTL` and `Seq` do; one past `usize::MAX` was called "not a byte
/// count", as if it were not a number.
#[test]
fn content_length_not_a_number() {
    let past = format!("{}0", usize::MAX);
    let reason = format!("is not a byte count from 0 to {}", usize::MAX);
    for v in ["abc", "-1", "1.5", "0x10", "99999999999999999999999999", &past] {
        let e = err(&with_length(v, "{}"));
        assert!(
            matches!(e.kind, DecodeErrorKind::BadHeaderValue { name: "Content-Length", reason: r } if r == reason),
            "{v}: {:?}",
            e.kind
        );
        assert!(
            e.to_string().ends_with(&format!("header `Content-Length` {reason}")),
            "{e}"
        );
        assert_eq!(e.field(), "Content-Length");
    }
}

// ---------------------------------------------------------------------------------------------
// Size limit
// ---------------------------------------------------------------------------------------------

/// A valid REQUEST of exactly `size` bytes.
fn request_of_size(size: usize) -> String {
    let head = format!("{}Content-Type: application/json\n\n", base("REQUEST", &[]));
    let pad = size - head.len() - r#"{"pad":""}"#.len();
    let text = format!("{head}{{\"pad\":\"{}\"}}", "x".repeat(pad));
    assert_eq!(text.len(), size);
    text
}

#[test]
fn default_size_limit_is_one_mib() {
    assert_eq!(DEFAULT_MAX_MESSAGE_SIZE, 1024 * 1024);
    let at_limit = request_of_size(DEFAULT_MAX_MESSAGE_SIZE);
    assert!(dec(&at_limit).body.is_some());
    let over = request_of_size(DEFAULT_MAX_MESSAGE_SIZE + 1);
    let e = err(&over);
    assert_eq!(
        e.kind,
        DecodeErrorKind::TooLarge {
            size: DEFAULT_MAX_MESSAGE_SIZE + 1,
            limit: DEFAULT_MAX_MESSAGE_SIZE
        }
    );
    assert_eq!(e.field(), "message");
}

#[test]
fn custom_size_limit() {
    let len = GUIDE_HELLO.len();
    assert!(decode(GUIDE_HELLO, len).is_ok());
    let e = decode(GUIDE_HELLO, len - 1).unwrap_err();
    assert_eq!(
        e.kind,
        DecodeErrorKind::TooLarge {
            size: len,
            limit: len - 1
        }
    );
    let e = decode(GUIDE_HELLO, 64).unwrap_err();
    assert_eq!(e.kind, DecodeErrorKind::TooLarge { size: len, limit: 64 });
    // The limit is checked before anything else: even garbage is TooLarge, not BadStartLine.
    let e = decode("garbage that is long enough", 8).unwrap_err();
    assert_eq!(e.kind, DecodeErrorKind::TooLarge { size: 27, limit: 8 });
}

// ---------------------------------------------------------------------------------------------
// Start line
// ---------------------------------------------------------------------------------------------

#[test]
fn empty_messages() {
    for text in ["", "\n", "  \n\t\n", "\r\n\r\n"] {
        let e = err(text);
        assert_eq!(e.kind, DecodeErrorKind::Empty, "{text:?}");
        assert_eq!(e.field(), "message");
    }
}

#[test]
fn bad_start_lines() {
    for text in [
        "HELLO\nVersion: 1\n",
        "RKT/1.0\n",
        "HTTP/1.1 200 OK\n",
        "rkt/1.0 HELLO\n",
        "RKT/1.0 HELLO WORLD\n",
        "{\"a\":1}",
        // A version that is not `digits.digits` is no version at all, not an unsupported one
        // (603 is for a major version other than 1).
        "RKT/1 HELLO\n",
        "RKT/x HELLO\n",
        "RKT/1.x HELLO\n",
        "RKT/.0 HELLO\n",
        "RKT/1. HELLO\n",
        "RKT/1.0.0 HELLO\n",
        "RKT/ HELLO\n",
        "RKT/+1.0 HELLO\n",
    ] {
        let e = err(text);
        assert_eq!(e.kind, DecodeErrorKind::BadStartLine, "{text:?}");
        assert_eq!(e.field(), "start-line");
    }
}

#[test]
fn wrong_version() {
    let e = err(&GUIDE_HELLO.replacen("RKT/1.0", "RKT/2.0", 1));
    assert_eq!(e.kind, DecodeErrorKind::UnsupportedVersion("2.0".into()));
    assert_eq!(e.field(), "start-line");
    assert_eq!(e.message_type.as_deref(), Some("HELLO"));
    assert_eq!(e.message_id.as_deref(), Some(MID));
    let e = err(&GUIDE_HELLO.replacen("RKT/1.0", "RKT/10.0", 1));
    assert_eq!(e.kind, DecodeErrorKind::UnsupportedVersion("10.0".into()));
}

#[test]
fn unknown_type_recovers_message_id() {
    let e = err(&GUIDE_HELLO.replacen("HELLO", "TELEPORT", 1));
    assert_eq!(e.kind, DecodeErrorKind::UnknownType("TELEPORT".into()));
    assert_eq!(e.field(), "type");
    assert_eq!(e.message_type.as_deref(), Some("TELEPORT"));
    assert_eq!(e.message_id.as_deref(), Some(MID));
    // Types are case-sensitive.
    let e = err(&GUIDE_HELLO.replacen("HELLO", "hello", 1));
    assert_eq!(e.kind, DecodeErrorKind::UnknownType("hello".into()));
    // Also through CRLF and a lower-case header name.
    let text = GUIDE_HELLO
        .replacen("HELLO", "TELEPORT", 1)
        .replace("Message-ID", "message-id")
        .replace('\n', "\r\n");
    assert_eq!(err(&text).message_id.as_deref(), Some(MID));
}

/// The server refuses an unknown type at its start line, before its headers: whatever else is
/// wrong, the error is `unknown_type`. Only the client reads such a message through first, so
/// the same text is refused there for its first bad header.
#[test]
fn the_server_refuses_an_unknown_type_before_reading_its_headers() {
    for text in [
        "RKT/1.0 TELEPORT\n\n".to_owned(),
        GUIDE_HELLO
            .replacen("HELLO", "TELEPORT", 1)
            .replace("2026-06-28T12:00:00Z", "noon"),
        GUIDE_HELLO
            .replacen("HELLO", "TELEPORT", 1)
            .replace("TTL: 30", "TTL: 30\nttl: 30"),
    ] {
        let e = err(&text);
        assert_eq!(e.kind, DecodeErrorKind::UnknownType("TELEPORT".into()), "{text}");
        let client = codec::decode_for_client(&text, DEFAULT_MAX_MESSAGE_SIZE).unwrap_err();
        assert_ne!(client.kind, e.kind, "{text}");
        assert_eq!(client.message_type.as_deref(), Some("TELEPORT"));
    }
}

// ---------------------------------------------------------------------------------------------
// Required headers
// ---------------------------------------------------------------------------------------------

/// A valid message of `kind`, one header per element.
fn lines_for(kind: MessageType) -> Vec<String> {
    let mut lines = vec![
        format!("Version: 1"),
        format!("Message-ID: {MID}"),
        format!("Session-ID: {SID}"),
        "Timestamp: 2026-06-28T12:00:00Z".to_string(),
    ];
    if kind.is_reply() {
        lines.push(format!("Reply-To: {MID}"));
    } else {
        lines.push("TTL: 30".to_string());
    }
    if kind == MessageType::StreamData {
        lines.push("Seq: 0".to_string());
    }
    lines
}

fn assemble(kind: MessageType, lines: &[String]) -> String {
    let mut s = format!("RKT/1.0 {kind}\n");
    for l in lines {
        s.push_str(l);
        s.push('\n');
    }
    s
}

#[test]
fn every_type_decodes_with_its_required_headers() {
    for &kind in MessageType::ALL {
        let m = dec(&assemble(kind, &lines_for(kind)));
        assert_eq!(m.kind, kind);
        assert_eq!(MessageType::parse(kind.as_str()), Some(kind));
    }
    assert_eq!(MessageType::ALL.len(), 17);
}

#[test]
fn missing_each_required_header() {
    for &kind in MessageType::ALL {
        let lines = lines_for(kind);
        for i in 0..lines.len() {
            let mut without = lines.clone();
            let removed = without.remove(i);
            let name = removed.split(':').next().unwrap();
            if (kind, name) == (MessageType::Error, "TTL") {
                continue; // an ERROR never needs TTL (below)
            }
            let e = err(&assemble(kind, &without));
            assert_eq!(
                e.kind,
                DecodeErrorKind::MissingHeader(match name {
                    "Version" => "Version",
                    "Message-ID" => "Message-ID",
                    "Session-ID" => "Session-ID",
                    "Timestamp" => "Timestamp",
                    "TTL" => "TTL",
                    "Reply-To" => "Reply-To",
                    "Seq" => "Seq",
                    other => panic!("unexpected {other}"),
                }),
                "{kind} without {name}"
            );
            assert_eq!(e.field(), name);
            assert_eq!(e.message_type.as_deref(), Some(kind.as_str()));
            if name != "Message-ID" {
                assert_eq!(e.message_id.as_deref(), Some(MID));
            } else {
                assert_eq!(e.message_id, None);
            }
        }
    }
}

#[test]
fn replies_may_omit_ttl_and_requests_may_omit_reply_to() {
    let m = dec(&assemble(MessageType::Response, &lines_for(MessageType::Response)));
    assert_eq!(m.ttl(), None);
    let mut lines = lines_for(MessageType::Response);
    lines.push("TTL: 5".into());
    assert_eq!(dec(&assemble(MessageType::Response, &lines)).ttl(), Some(5));
    let mut lines = lines_for(MessageType::Request);
    lines.push(format!("Reply-To: {MID}"));
    assert_eq!(dec(&assemble(MessageType::Request, &lines)).reply_to(), Some(MID));
    // An ERROR never needs TTL: with Reply-To, or with only its body's `request_id` (the
    // guide's ERROR, whose header table shows no Reply-To for errors).
    let mut lines = lines_for(MessageType::Error);
    lines.retain(|l| !l.starts_with("TTL"));
    let body = format!(r#"{{"code":602,"name":"CAPABILITY_MISSING","message":"m","request_id":"{MID}"}}"#);
    let m = dec(&format!("{}\n{body}", assemble(MessageType::Error, &lines)));
    assert_eq!(
        (m.ttl(), m.reply_to(), m.body.as_deref()),
        (None, None, Some(body.as_str()))
    );
    lines.push(format!("Reply-To: {MID}"));
    assert_eq!(dec(&assemble(MessageType::Error, &lines)).ttl(), None);
    // A TTL that is there must still be a number.
    lines.push("TTL: soon".into());
    assert_eq!(bad_value(&assemble(MessageType::Error, &lines)), "TTL");
}

#[test]
fn duplicate_header() {
    let e = err(&base("REQUEST", &["ttl: 31"]));
    assert_eq!(e.kind, DecodeErrorKind::DuplicateHeader("ttl".into()));
    assert_eq!(e.field(), "headers");
    let e = err(&base("REQUEST", &["To: a", "To: b"]));
    assert_eq!(e.kind, DecodeErrorKind::DuplicateHeader("To".into()));
}

// ---------------------------------------------------------------------------------------------
// Header values
// ---------------------------------------------------------------------------------------------

fn bad_value(text: &str) -> &'static str {
    match err(text).kind {
        DecodeErrorKind::BadHeaderValue { name, .. } => name,
        other => panic!("expected BadHeaderValue, got {other:?}\n{text}"),
    }
}

#[test]
fn number_headers_out_of_range_name_the_range() {
    // A number past its type's range is out of range, not malformed: the error says the range.
    let cases = [
        (
            "Version: 1",
            "Version: 4294967296",
            "header `Version` is not a whole number from 1 to 4294967295",
        ),
        (
            "Version: 1",
            "Version: 0",
            "header `Version` is not a whole number from 1 to 4294967295",
        ),
        (
            "TTL: 30",
            "TTL: 4294967296",
            "header `TTL` is not a number of seconds from 0 to 4294967295",
        ),
    ];
    for (from, to, want) in cases {
        let text = base("REQUEST", &[]).replace(from, to);
        assert_eq!(err(&text).to_string(), want, "{to}");
    }
    let text = base("STREAM_DATA", &["Reply-To: r1", "Seq: 18446744073709551616"]);
    assert_eq!(
        err(&text).to_string(),
        "header `Seq` is not a whole number from 0 to 18446744073709551615"
    );
    let text = base("REQUEST", &["Retry-After: 18446744073709551616"]);
    assert_eq!(
        err(&text).to_string(),
        "header `Retry-After` is not a number of seconds from 0 to 18446744073709551615"
    );
    // The largest values are taken.
    let text =
        base("STREAM_DATA", &["Reply-To: r1", "Seq: 18446744073709551615"]).replace("TTL: 30", "TTL: 4294967295");
    assert_eq!(dec(&text).seq(), Some(u64::MAX));
}

#[test]
fn bad_priority_stream_retry_after() {
    for v in ["MEDIUM", "1", "", "NORMAL!"] {
        assert_eq!(
            bad_value(&base("REQUEST", &[&format!("Priority: {v}")])),
            "Priority",
            "{v:?}"
        );
    }
    for v in ["yes", "1", "", "truee"] {
        assert_eq!(
            bad_value(&base("REQUEST", &[&format!("Stream: {v}")])),
            "Stream",
            "{v:?}"
        );
    }
    for v in ["soon", "-1", "1.5", ""] {
        assert_eq!(
            bad_value(&base("ERROR", &[&format!("Retry-After: {v}")])),
            "Retry-After",
            "{v:?}"
        );
    }
    let e = err(&base("REQUEST", &["Priority: MEDIUM"]));
    assert_eq!(e.field(), "Priority");
    assert_eq!(e.message_id.as_deref(), Some(MID));
}

#[test]
fn bad_required_values() {
    let text = GUIDE_HELLO.replace("Version: 1", "Version: 0");
    assert_eq!(bad_value(&text), "Version");
    let text = GUIDE_HELLO.replace("Version: 1", "Version: one");
    assert_eq!(bad_value(&text), "Version");
    let text = GUIDE_HELLO.replace("TTL: 30", "TTL: thirty");
    assert_eq!(bad_value(&text), "TTL");
    let text = GUIDE_HELLO.replace("TTL: 30", "TTL: -1");
    assert_eq!(bad_value(&text), "TTL");
    for ts in [
        "yesterday",
        "2026-06-28",
        "2026-02-30T12:00:00Z",
        "2026-06-28T12:00:00",
        "1969-12-31T23:59:59Z",
    ] {
        let text = GUIDE_HELLO.replace("2026-06-28T12:00:00Z", ts);
        assert_eq!(bad_value(&text), "Timestamp", "{ts}");
    }
    let long = "x".repeat(MAX_ID_LEN + 1);
    assert_eq!(bad_value(&GUIDE_HELLO.replace(SID, &long)), "Session-ID");
    assert!(decode(
        &GUIDE_HELLO.replace(SID, &"x".repeat(MAX_ID_LEN)),
        DEFAULT_MAX_MESSAGE_SIZE
    )
    .is_ok());
    assert_eq!(bad_value(&GUIDE_HELLO.replace(MID, "has space")), "Message-ID");
    assert_eq!(
        bad_value(&GUIDE_HELLO_ACK.replace(&format!("Reply-To: {MID}"), "Reply-To: a b")),
        "Reply-To"
    );
    let mut lines = lines_for(MessageType::StreamData);
    *lines.last_mut().unwrap() = "Seq: -3".into();
    assert_eq!(bad_value(&assemble(MessageType::StreamData, &lines)), "Seq");
}

#[test]
fn non_header_line_reports_its_line_number() {
    // Start line is line 1, so the line after TTL (line 6) is line 7.
    let e = err(&base("REQUEST", &["this is not a header"]));
    assert_eq!(e.kind, DecodeErrorKind::BadHeaderLine { line: 7, control: None });
    assert_eq!(e.field(), "headers");
    assert_eq!(e.message_id.as_deref(), Some(MID));
    let e = err(&base("REQUEST", &["To: rkt://weather.ai", "User Agent: spaces/1.0"]));
    assert_eq!(e.kind, DecodeErrorKind::BadHeaderLine { line: 8, control: None });
    let e = err(&base("REQUEST", &[": no name"]));
    assert_eq!(e.kind, DecodeErrorKind::BadHeaderLine { line: 7, control: None });
    // Counted across the TypeScript client's blank line before Content-Type (line 7).
    let text = format!(
        "{}\nContent-Type: application/json\nnot a header\n\n{{}}",
        base("MEMORY_SET", &[])
    );
    assert_eq!(
        err(&text).kind,
        DecodeErrorKind::BadHeaderLine { line: 9, control: None }
    );
    // ...and several blank lines.
    let text = format!(
        "{}\n\n\nContent-Type: application/json\nnot a header\n\n{{}}",
        base("MEMORY_SET", &[])
    );
    assert_eq!(
        err(&text).kind,
        DecodeErrorKind::BadHeaderLine {
            line: 11,
            control: None
        }
    );
    // Counted in CRLF messages too.
    assert_eq!(
        err(&base("REQUEST", &["bogus"]).replace('\n', "\r\n")).kind,
        DecodeErrorKind::BadHeaderLine { line: 7, control: None }
    );
    // Blank lines before the start line (taken, as the docs say) are lines of the text: the
    // number points at the line as given.
    let bad = base("REQUEST", &["bogus"]);
    for (lead, line) in [("\n\n", 9), ("\r\n\r\n\r\n", 10), ("\u{feff}\n", 8), (" \t", 7)] {
        assert_eq!(
            err(&format!("{lead}{bad}")).kind,
            DecodeErrorKind::BadHeaderLine { line, control: None },
            "{lead:?}"
        );
    }
    assert_eq!(
        e_text(&base("REQUEST", &["bogus"])),
        "line 7 is not a `Name: value` header"
    );
    // A control character in a value makes the line bad, and the error names it.
    let e = err(&base("REQUEST", &["X-Note: a\u{1}b"]));
    assert_eq!(
        e.kind,
        DecodeErrorKind::BadHeaderLine {
            line: 7,
            control: Some('\u{1}')
        }
    );
    assert_eq!((e.kind.name(), e.field()), ("bad_header_line", "headers"));
    assert_eq!(e.to_string(), "line 7 holds the control character U+0001 in its value");
    assert_eq!(
        e_text(&base("REQUEST", &["To: a\rb"])),
        "line 7 holds the control character U+000D in its value"
    );
    assert_eq!(
        e_text(&base("REQUEST", &["To: a\u{7f}"])),
        "line 7 holds the control character U+007F in its value"
    );
}

// ---------------------------------------------------------------------------------------------
// Encoding
// ---------------------------------------------------------------------------------------------

fn guide_hello_message() -> Message {
    let mut m = Message::new(MessageType::Hello);
    m.headers.set("Version", "1");
    m.headers.set("Message-ID", MID);
    m.headers.set("Session-ID", SID);
    m.headers.set("Timestamp", "2026-06-28T12:00:00Z");
    m.headers.set("TTL", "30");
    m.headers.set("From", "did:rkt:my-agent");
    m.headers.set("User-Agent", "MyAgent/1.0");
    m.headers.set("Capabilities", "language,vision,code");
    m.body = Some(r#"{"min_version":1,"max_version":1}"#.into());
    m
}

#[test]
fn encode_is_byte_exact_with_the_guide() {
    let expected = GUIDE_HELLO.replace(
        "Capabilities: language,vision,code\n\n",
        "Capabilities: language,vision,code\nContent-Type: application/json\n\n",
    );
    assert_ne!(expected, GUIDE_HELLO);
    let m = guide_hello_message();
    assert_eq!(encode(&m), expected);
    let mut buf = String::from("junk");
    buf.clear();
    codec::encode_into(&m, &mut buf);
    assert_eq!(buf, expected);
    // And it decodes back to the same message plus the Content-Type it added.
    let mut with_ct = m.clone();
    with_ct.headers.set("Content-Type", "application/json");
    assert_eq!(dec(&expected), with_ct);
}

#[test]
fn encode_without_body_ends_with_one_newline() {
    let mut m = Message::new(MessageType::Goodbye);
    m.headers.set("Version", "1");
    m.headers.set("Message-ID", MID);
    m.headers.set("Session-ID", SID);
    m.headers.set("Timestamp", "2026-06-28T12:00:00Z");
    m.headers.set("TTL", "30");
    let text = encode(&m);
    assert_eq!(text, base("GOODBYE", &[]));
    assert!(text.ends_with("TTL: 30\n") && !text.ends_with("\n\n"));
    assert_eq!(dec(&text), m);
}

#[test]
fn encode_keeps_an_existing_content_type_and_flattens_newlines() {
    let mut m = guide_hello_message();
    m.headers.set("content-type", "application/json; charset=utf-8");
    let text = encode(&m);
    assert_eq!(text.matches("ontent-").count(), 1);
    assert!(text.contains("content-type: application/json; charset=utf-8\n\n{"));
    m.headers.set("User-Agent", "Evil/1.0\nTTL: 0\r\n");
    assert_eq!(m.header("User-Agent"), Some("Evil/1.0 TTL: 0  "));
    let back = dec(&encode(&m));
    assert_eq!(back.header("TTL"), Some("30"));
    assert_eq!(back.header("User-Agent"), Some("Evil/1.0 TTL: 0"));
}

#[test]
fn a_header_name_set_by_hand_stays_one_header() {
    // Every parser the guide gives splits lines first: a newline in a name forged a `To`.
    let mut m = guide_hello_message();
    m.headers.set("X-Note\nTo: did:rkt:victim\nX", "v");
    let text = encode(&m);
    assert!(text.contains("\nX-Note_To__did_rkt_victim_X: v\n"), "{text:?}");
    assert!(!text.contains("\nTo:"), "{text:?}");
    let back = dec(&text);
    assert_eq!(back.header("X-Note_To__did_rkt_victim_X"), Some("v"));
    assert_eq!(back.header("To"), None);
    // Each character that is not a token's (letters, digits, `-`, `_`) becomes one `_`, so no
    // name becomes one the guide uses (they have no `_`); an empty name is `_`.
    for (name, written) in [("A b:\u{e9}\0", "A_b___"), ("", "_"), ("Message ID", "Message_ID")] {
        let mut m = guide_hello_message();
        m.headers.set(name, "v");
        assert!(encode(&m).contains(&format!("\n{written}: v\n")), "{name:?}");
        assert_eq!(dec(&encode(&m)).header(written), Some("v"), "{name:?}");
        assert_eq!(dec(&encode(&m)).header("Message-ID"), Some(MID), "{name:?}");
    }
}

// ---------------------------------------------------------------------------------------------
// Properties
// ---------------------------------------------------------------------------------------------

/// Names whose values decode validates or that frame the body; the generator sets them itself.
const RESERVED: &[&str] = &[
    "Version",
    "Message-ID",
    "Session-ID",
    "Timestamp",
    "TTL",
    "Reply-To",
    "Seq",
    "Stream",
    "Priority",
    "Retry-After",
    "Content-Type",
    "Content-Length",
];

fn id() -> impl Strategy<Value = String> {
    proptest::string::string_regex("[!-~]{1,128}").unwrap()
}

fn timestamp() -> impl Strategy<Value = String> {
    // 1970..2100, in the three clients' styles.
    (0u64..4_102_444_800_000, 0u8..4, 0u32..1_000_000, 0i32..24, 0i32..60).prop_map(|(ms, style, micros, oh, om)| {
        let z = agentwire_core::format_iso8601(ms - ms % 1000);
        let secs = &z[..19];
        match style {
            0 => z,                                                                           // Go / guide
            1 => format!("{secs}.{:03}Z", ms % 1000),                                         // toISOString
            2 => format!("{secs}.{micros:06}+00:00"),                                         // isoformat
            _ => format!("{secs}{}{oh:02}:{om:02}", if micros % 2 == 0 { '+' } else { '-' }), // offsets
        }
    })
}

fn header_value() -> impl Strategy<Value = String> {
    // Printable (no control or format characters), no leading or trailing space or tab; may be empty.
    proptest::string::string_regex("([^\\p{C} \\t]([^\\p{C}]{0,30}[^\\p{C} \\t])?)?").unwrap()
}

fn extra_headers() -> impl Strategy<Value = Vec<(String, String)>> {
    proptest::collection::vec(
        (
            proptest::string::string_regex("[A-Za-z0-9_-]{1,24}").unwrap(),
            header_value(),
        ),
        0..8,
    )
    .prop_map(|v| {
        let mut out: Vec<(String, String)> = Vec::new();
        for (n, val) in v {
            let taken = RESERVED.iter().any(|r| r.eq_ignore_ascii_case(&n))
                || out.iter().any(|(o, _)| o.eq_ignore_ascii_case(&n));
            if !taken {
                out.push((n, val));
            }
        }
        out
    })
}

fn json_value() -> impl Strategy<Value = serde_json::Value> {
    use serde_json::Value;
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<f64>()
            .prop_filter("finite", |f| f.is_finite())
            .prop_map(Value::from),
        any::<String>().prop_map(Value::String),
    ];
    leaf.prop_recursive(3, 24, 6, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            proptest::collection::vec((any::<String>(), inner), 0..6)
                .prop_map(|kv| Value::Object(kv.into_iter().collect())),
        ]
    })
}

fn case_variant(s: &'static str) -> impl Strategy<Value = String> {
    any::<u8>().prop_map(move |k| match k % 3 {
        0 => s.to_string(),
        1 => s.to_ascii_lowercase(),
        _ => s.to_ascii_uppercase(),
    })
}

const PRIORITIES: &[&str] = &["LOW", "NORMAL", "HIGH", "URGENT"];

/// A valid message: any type, its required headers with valid values, optional validated
/// headers, extra headers, and an optional compact-JSON body (with Content-Type, and sometimes
/// Content-Length), in any header order.
fn valid_message() -> impl Strategy<Value = Message> {
    let ids = (1u32..=u32::MAX, id(), id(), timestamp(), id());
    let flags = (
        any::<u32>(),
        any::<bool>(),
        any::<bool>(),
        any::<u64>(),
        any::<bool>(),
        any::<bool>(),
    );
    let optional = (
        proptest::option::of(prop_oneof![case_variant("true"), case_variant("false")]),
        proptest::option::of(proptest::sample::select(PRIORITIES).prop_flat_map(case_variant)),
        proptest::option::of(any::<u64>()),
    );
    let body = proptest::option::of(json_value().prop_map(|v| v.to_string()));
    (
        proptest::sample::select(MessageType::ALL),
        ids,
        flags,
        optional,
        extra_headers(),
        body,
    )
        .prop_flat_map(
            |(
                kind,
                (version, message_id, session_id, ts, reply_to),
                (ttl, ttl_on_reply, reply_to_on_request, seq, content_length, ct_without_body),
                (stream, priority, retry_after),
                extras,
                body,
            )| {
                let mut h: Vec<(String, String)> = vec![
                    ("Version".into(), version.to_string()),
                    ("Message-ID".into(), message_id),
                    ("Session-ID".into(), session_id),
                    ("Timestamp".into(), ts),
                ];
                if !kind.is_reply() || ttl_on_reply {
                    h.push(("TTL".into(), ttl.to_string()));
                }
                if kind.is_reply() || reply_to_on_request {
                    h.push(("Reply-To".into(), reply_to));
                }
                if kind == MessageType::StreamData {
                    h.push(("Seq".into(), seq.to_string()));
                }
                if let Some(v) = stream {
                    h.push(("Stream".into(), v));
                }
                if let Some(v) = priority {
                    h.push(("Priority".into(), v));
                }
                if let Some(v) = retry_after {
                    h.push(("Retry-After".into(), v.to_string()));
                }
                if body.is_some() || ct_without_body {
                    h.push(("Content-Type".into(), "application/json".into()));
                }
                if let (Some(b), true) = (&body, content_length) {
                    h.push(("Content-Length".into(), b.len().to_string()));
                }
                h.extend(extras);
                (Just(h).prop_shuffle(), Just(kind), Just(body))
            },
        )
        .prop_map(|(order, kind, body)| {
            let mut headers = Headers::new();
            for (n, v) in order {
                headers.set(&n, v);
            }
            Message { kind, headers, body }
        })
}

/// What `decode(encode(m))` gives for a decoded `m`: encode adds `Content-Type` to a body
/// without one.
fn with_content_type(mut m: Message) -> Message {
    if m.body.is_some() && m.header("Content-Type").is_none() {
        m.headers.set("Content-Type", "application/json");
    }
    m
}

/// An edit applied to a valid encoding.
#[derive(Debug, Clone)]
enum Edit {
    Insert(usize, char),
    Delete(usize, usize),
    Truncate(usize),
    DuplicateLine(usize),
}

fn edit() -> impl Strategy<Value = Edit> {
    let interesting = proptest::sample::select(vec![
        '\n', '\r', ':', ' ', '\t', '{', '}', '"', 'é', '\u{0}', '\u{feff}', '0', 'a', '-',
    ]);
    prop_oneof![
        (any::<usize>(), interesting).prop_map(|(i, c)| Edit::Insert(i, c)),
        (any::<usize>(), 0usize..40).prop_map(|(i, n)| Edit::Delete(i, n)),
        any::<usize>().prop_map(Edit::Truncate),
        any::<usize>().prop_map(Edit::DuplicateLine),
    ]
}

fn floor_boundary(s: &str, mut i: usize) -> usize {
    i = i.min(s.len());
    while !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

fn apply(text: &mut String, e: &Edit) {
    let len = text.len().max(1);
    match *e {
        Edit::Insert(i, c) => {
            let at = floor_boundary(text, i % (len + 1));
            text.insert(at, c);
        }
        Edit::Delete(i, n) => {
            let a = floor_boundary(text, i % len);
            let b = floor_boundary(text, a + n);
            text.replace_range(a..b, "");
        }
        Edit::Truncate(i) => {
            let at = floor_boundary(text, i % len);
            text.truncate(at);
        }
        Edit::DuplicateLine(i) => {
            let lines: Vec<&str> = text.split('\n').collect();
            let k = i % lines.len();
            let mut out: Vec<&str> = lines.clone();
            out.insert(k, lines[k]);
            *text = out.join("\n");
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn round_trip(m in valid_message()) {
        let text = encode(&m);
        let back = decode(&text, DEFAULT_MAX_MESSAGE_SIZE);
        prop_assert_eq!(back.as_ref(), Ok(&m), "wire:\n{}", text);
    }

    #[test]
    fn any_header_set_by_hand_decodes_as_set(name in any::<String>(), value in any::<String>()) {
        // `X` first, so the name is none of the guide's, whose values are checked.
        let mut m = guide_hello_message();
        m.headers.set(&format!("X{name}"), value);
        let names = |m: &Message| m.headers.iter().map(|(n, _)| n.to_owned()).collect::<Vec<_>>();
        let back = decode(&encode(&m), usize::MAX).map(|m| names(&m));
        prop_assert_eq!(back, Ok(names(&with_content_type(m))));
    }

    #[test]
    fn round_trip_through_crlf(m in valid_message()) {
        // Bodies are single-line compact JSON here, so CRLF only touches the framing.
        let text = encode(&m).replace('\n', "\r\n");
        let back = decode(&text, DEFAULT_MAX_MESSAGE_SIZE);
        prop_assert_eq!(back.as_ref(), Ok(&m), "wire:\n{:?}", text);
    }

    #[test]
    fn decode_never_panics_on_arbitrary_text(s in any::<String>(), limit in prop_oneof![Just(DEFAULT_MAX_MESSAGE_SIZE), 0usize..64]) {
        let _ = decode(&s, limit);
    }

    #[test]
    fn decode_never_panics_on_rkt_like_text(s in "(RKT/1\\.0 [A-Z_]{0,12})?(\r?\n[A-Za-z-]{0,12}:? ?[ -~]{0,20}){0,12}(\r?\n\r?\n[ -~\n]{0,40})?") {
        let _ = decode(&s, DEFAULT_MAX_MESSAGE_SIZE);
    }

    #[test]
    fn decode_never_panics_on_mutations(m in valid_message(), edits in proptest::collection::vec(edit(), 1..6)) {
        let mut text = encode(&m);
        for e in &edits {
            apply(&mut text, e);
        }
        // Ok or Err, but never a panic; and what decodes must survive its own re-encoding.
        if let Ok(decoded) = decode(&text, DEFAULT_MAX_MESSAGE_SIZE) {
            let again = decode(&encode(&decoded), usize::MAX);
            prop_assert_eq!(again.as_ref(), Ok(&with_content_type(decoded)), "mutated wire:\n{:?}", text);
        }
    }
}

#[test]
fn numbers_are_digits_only() {
    let base =
        "RKT/1.0 STREAM_DATA\nVersion: 1\nMessage-ID: m\nReply-To: r\nSession-ID: s\nTimestamp: 2026-06-28T12:00:00Z\n";
    for (extra, field) in [
        ("Seq: +1\n", "Seq"),
        ("Seq: 1\nTTL: +3\n", "TTL"),
        ("Seq: 1\nContent-Length: +2\n\n{}", "Content-Length"),
    ] {
        let err = agentwire_rkt::decode(&format!("{base}{extra}"), 1 << 20).unwrap_err();
        assert_eq!(err.field(), field, "{extra:?}: {err}");
    }
    assert!(agentwire_rkt::decode(&format!("{base}Seq: 1\nContent-Length: 2\n\n{{}}"), 1 << 20).is_ok());
}

/// A REQUEST with `MAX_HEADERS` headers besides `Content-Type` and a body `{}`; `first` is written
/// before them.
fn full_request(first: &str) -> String {
    let mut text = format!(
        "RKT/1.0 REQUEST\n{first}Version: 1\nMessage-ID: m1\nSession-ID: s1\nTimestamp: 2026-06-28T12:00:00Z\nTTL: 30\n"
    );
    for i in 5..codec::MAX_HEADERS {
        text.push_str(&format!("X-{i}: {i}\n"));
    }
    text.push_str("\n{}");
    text
}

/// `text` (from [`full_request`]) with one header more is refused as too many headers.
fn one_header_more_is_too_many(text: &str) {
    let over = text.replace("\n\n{}", "\nX-last: 1\n\n{}");
    let err = decode(&over, DEFAULT_MAX_MESSAGE_SIZE).unwrap_err();
    assert_eq!(
        err.kind,
        DecodeErrorKind::TooManyHeaders {
            limit: codec::MAX_HEADERS
        }
    );
}

#[test]
fn a_full_message_without_content_type_decodes_again_once_encoded() {
    // MAX_HEADERS headers and a body without Content-Type: `encode` adds one, and its output was
    // refused as too many headers (found by the fuzz target `decode`).
    let text = full_request("");
    let msg = decode(&text, DEFAULT_MAX_MESSAGE_SIZE).unwrap();
    assert_eq!(msg.headers.len(), codec::MAX_HEADERS);
    let again = decode(&encode(&msg), DEFAULT_MAX_MESSAGE_SIZE).unwrap();
    assert_eq!(again.headers.get("Content-Type"), Some("application/json"));
    // Content-Type is apart from the limit, not a way past it.
    one_header_more_is_too_many(&text);
}

#[test]
fn hostile_shapes_cost_linear_time() {
    // Many headers: refused at MAX_HEADERS, not compared pairwise.
    let mut many = String::from("RKT/1.0 REQUEST\n");
    for i in 0..100_000 {
        many.push_str(&format!("x{i}:\n"));
    }
    let t = std::time::Instant::now();
    let err = agentwire_rkt::decode(&many, 1 << 21).unwrap_err();
    assert_eq!(
        err.kind,
        agentwire_rkt::DecodeErrorKind::TooManyHeaders {
            limit: agentwire_rkt::codec::MAX_HEADERS
        }
    );
    // A long run of blank lines before more headers is walked once.
    let blanks = format!("RKT/1.0 GOODBYE\nVersion: 1\n{}X: y\n", "\n".repeat(1_000_000));
    let _ = agentwire_rkt::decode(&blanks, 1 << 21);
    // Generous: the quadratic versions took seconds to minutes even in release builds.
    assert!(t.elapsed() < std::time::Duration::from_secs(5), "{:?}", t.elapsed());
}

#[test]
fn too_large_names_the_message_when_its_id_is_near_the_top() {
    let big = format!(
        "RKT/1.0 REQUEST\nVersion: 1\nMessage-ID: big-1\nSession-ID: s\n\n{}",
        "x".repeat(2000)
    );
    let err = agentwire_rkt::decode(&big, 1000).unwrap_err();
    assert_eq!(err.message_id.as_deref(), Some("big-1"));
}

// ---- found by mutation testing --------------------------------------------------------------

/// Headers with one header are not empty; replacing its short value with a longer one (more
/// bytes than all the headers held before) keeps the headers intact.
#[test]
fn a_header_replaced_by_a_value_longer_than_all_the_headers() {
    let mut h = Headers::default();
    h.set("A", "1");
    assert!(!h.is_empty());
    let long = "x".repeat(100);
    h.set("a", &long);
    assert_eq!(h.get("A"), Some(long.as_str()));
    assert_eq!(h.iter().collect::<Vec<_>>(), [("A", long.as_str())]);
}

/// After the blank line, only `Name:` with a name continues the headers: a body that starts
/// with a colon (blanks before it or not) is the body.
#[test]
fn a_body_starting_with_a_colon_is_a_body_not_a_header() {
    for body in [":x", "  :x", "\t: 1"] {
        let m = dec(&format!("{}\n{body}", base("REQUEST", &[])));
        assert_eq!(m.body.as_deref(), Some(body), "{body:?}");
        assert_eq!(m.headers.len(), 5, "{body:?}");
    }
}

/// `Content-Type` is apart from the header limit wherever it stands: written first, it still
/// leaves room for MAX_HEADERS others, and not one more.
#[test]
fn content_type_written_first_is_apart_from_the_header_limit() {
    let text = full_request("Content-Type: application/json\n");
    let msg = decode(&text, DEFAULT_MAX_MESSAGE_SIZE).unwrap();
    assert_eq!(msg.headers.len(), codec::MAX_HEADERS + 1);
    one_header_more_is_too_many(&text);
}
