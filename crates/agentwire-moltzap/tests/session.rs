//! The client session driven with literal server frames (the released ones taken from the
//! captures in `tests/vectors/moltzap-2026.425/`). Deterministic: time is passed in.

use agentwire_core::{ErrorKind, Outgoing};
use agentwire_moltzap::session::{
    AgentMessageList, ArchivedFilter, ConversationKind, CreateConversation, ListConversations, Message, Part,
    Participant, PresenceStatus, SendMessage, FORGOTTEN_CAP,
};
use agentwire_moltzap::{
    Credentials, DecodeOptions, Event, Generation, GenerationChoice, Id, Session, SessionConfig, SessionState,
    CURRENT_PROTOCOL, RELEASED_PROTOCOL,
};
use serde_json::{json, Value};

const KEY: &str = "moltzap_agent_ca5f41b0a56c4169_9d8d82a1e90c89f40b71eb74d4d4d57cfce54c354f90e03f";
/// The HelloOk result of `smoke.sample.out` (A-3).
const HELLO: &str = r#"{"protocolVersion":"2026.425.3","agentId":"f5d5da7e-550a-482f-966b-7bab19bfa2b4","conversations":[],"unreadCounts":{},"policy":{"maxMessageBytes":65536,"maxPartsPerMessage":10,"maxTextLength":32768,"maxGroupParticipants":256,"heartbeatIntervalMs":30000,"rateLimits":{"messagesPerMinute":60,"requestsPerMinute":120}}}"#;
/// `messages/received` as B got it in `smoke.sample.out`.
const RECEIVED: &str = r#"{"jsonrpc":"2.0","type":"event","event":"messages/received","data":{"message":{"id":"559081f9-4898-406d-9901-376f83859d30","conversationId":"000c5a76-408a-476c-864d-6bff007cf25f","senderId":"f5d5da7e-550a-482f-966b-7bab19bfa2b4","parts":[{"type":"text","text":"hello from A"}],"createdAt":"2026-12-02T12:36:49.853Z"}}}"#;

fn session(generation: GenerationChoice) -> Session {
    session_with(SessionConfig {
        generation,
        ..SessionConfig::default()
    })
}

fn session_with(cfg: SessionConfig) -> Session {
    let mut s = Session::new(cfg);
    s.handle_open(0);
    s
}

fn sent(s: &mut Session) -> Vec<Value> {
    let mut out = Vec::new();
    while let Some(o) = s.poll_transmit() {
        match o {
            Outgoing::Text(t) => out.push(serde_json::from_str(&t).expect("the session writes JSON")),
            other => out.push(json!({"close": format!("{other:?}")})),
        }
    }
    out
}

fn events(s: &mut Session) -> Vec<Event> {
    std::iter::from_fn(|| s.poll_event()).collect()
}

fn released_response(id: &str, result: &str) -> String {
    format!(r#"{{"jsonrpc":"2.0","type":"response","id":"{id}","result":{result}}}"#)
}

fn released_error(id: &str, code: i64, message: &str) -> String {
    format!(r#"{{"jsonrpc":"2.0","type":"response","id":"{id}","error":{{"code":{code},"message":"{message}"}}}}"#)
}

/// A released session, connected.
fn released_ready() -> Session {
    let mut s = session(GenerationChoice::Released);
    let id = s.connect(0, Credentials::AgentKey(KEY.into())).unwrap();
    sent(&mut s);
    s.handle_text(1, &released_response(&id, HELLO));
    assert!(matches!(events(&mut s)[..], [Event::Connected { .. }]));
    s
}

/// A current session, connected.
fn current_ready(cfg: SessionConfig) -> Session {
    let mut s = session_with(cfg);
    let id = s.connect(0, Credentials::AgentKey(KEY.into())).unwrap();
    sent(&mut s);
    s.handle_text(1, &format!(r#"{{"jsonrpc":"2.0","id":"{id}","result":{{}}}}"#));
    assert!(matches!(events(&mut s)[..], [Event::Connected { .. }]));
    s
}

fn failed_kind(e: &Event) -> Option<(String, ErrorKind)> {
    match e {
        Event::Failed { id, error } => Some((id.clone(), error.kind())),
        _ => None,
    }
}

#[test]
fn connect_current() {
    let mut s = session(GenerationChoice::Current);
    let id = s.connect(0, Credentials::AgentKey(KEY.into())).unwrap();
    assert_eq!(s.state(), SessionState::Connecting);
    assert_eq!(
        sent(&mut s),
        vec![json!({"jsonrpc":"2.0","id":id,"method":"agent/network/connect",
            "params":{"agentKey":KEY,"minProtocol":CURRENT_PROTOCOL,"maxProtocol":CURRENT_PROTOCOL}})]
    );
    s.handle_text(5, &format!(r#"{{"jsonrpc":"2.0","id":"{id}","result":{{}}}}"#));
    match &events(&mut s)[..] {
        [Event::Connected {
            id: got,
            generation,
            hello,
        }] => {
            assert_eq!(got, &id);
            assert_eq!(*generation, Generation::Current);
            assert_eq!(hello.raw, "{}");
            assert_eq!(hello.protocol_version, None);
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(s.state(), SessionState::Ready);
}

#[test]
fn connect_released_with_the_full_hello() {
    let mut s = session(GenerationChoice::Released);
    let id = s.connect(0, Credentials::AgentKey(KEY.into())).unwrap();
    let wire = sent(&mut s);
    assert_eq!(
        wire,
        vec![json!({"jsonrpc":"2.0","type":"request","id":id,"method":"auth/connect",
            "params":{"agentKey":KEY,"minProtocol":RELEASED_PROTOCOL,"maxProtocol":RELEASED_PROTOCOL}})]
    );
    // Key order on the wire is the server's.
    s.handle_text(3, &released_response(&id, HELLO));
    match &events(&mut s)[..] {
        [Event::Connected { generation, hello, .. }] => {
            assert_eq!(*generation, Generation::Released);
            assert_eq!(hello.raw, HELLO);
            assert_eq!(hello.protocol_version.as_deref(), Some("2026.425.3"));
            assert_eq!(hello.agent_id.as_deref(), Some("f5d5da7e-550a-482f-966b-7bab19bfa2b4"));
            assert_eq!(hello.heartbeat_interval_ms, Some(30000));
        }
        other => panic!("{other:?}"),
    }
    // A session token in the released generation: exactly one credential key.
    let mut s = session(GenerationChoice::Released);
    s.connect(0, Credentials::SessionToken("t".into())).unwrap();
    let params = &sent(&mut s)[0]["params"];
    assert_eq!(params.as_object().unwrap().len(), 3);
    assert_eq!(params["sessionToken"], "t");
    assert!(params.get("agentKey").is_none());
}

#[test]
fn session_tokens_are_refused_in_the_current_generation() {
    let mut s = session(GenerationChoice::Current);
    let e = s.connect(0, Credentials::SessionToken("t".into())).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Invalid);
    assert_eq!(s.state(), SessionState::Open);
    // auto goes straight to auth/connect with a token.
    let mut s = session(GenerationChoice::Auto);
    s.connect(0, Credentials::SessionToken("t".into())).unwrap();
    assert_eq!(sent(&mut s)[0]["method"], "auth/connect");
}

#[test]
fn timeouts_of_zero_are_refused_at_connect() {
    let zero_request = SessionConfig {
        request_timeout_ms: 0,
        ..SessionConfig::default()
    };
    let zero_handshake = SessionConfig {
        handshake_timeout_ms: 0,
        ..SessionConfig::default()
    };
    for (cfg, field) in [
        (zero_request, "request_timeout_ms"),
        (zero_handshake, "handshake_timeout_ms"),
    ] {
        let mut s = session_with(cfg);
        let e = s.connect(0, Credentials::AgentKey("k".into())).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Invalid);
        assert!(e.error.message.starts_with(field), "{e}");
        assert_eq!((s.state(), sent(&mut s).len()), (SessionState::Open, 0));
    }
}

/// A decode bound of 0 refuses every frame, the connect's answer too: the connect waited out
/// `handshake_timeout_ms` (npm: "no answer to the connect"), where Switch refuses the same
/// bound at `start`.
#[test]
fn decode_bounds_of_zero_are_refused_at_connect() {
    type Set = fn(&mut DecodeOptions);
    let cases: [(Set, &str); 4] = [
        (|d| d.max_message_bytes = 0, "decode.max_message_bytes"),
        (|d| d.max_depth = 0, "decode.max_depth"),
        (|d| d.max_frames = 0, "decode.max_frames"),
        (|d| d.max_id_len = 0, "decode.max_id_len"),
    ];
    for (set, field) in cases {
        let mut cfg = SessionConfig::default();
        set(&mut cfg.decode);
        let mut s = session_with(cfg);
        let e = s.connect(0, Credentials::AgentKey("k".into())).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Invalid, "{field}");
        assert_eq!(e.error.message, format!("{field} must be at least 1"));
        assert_eq!((s.state(), sent(&mut s).len()), (SessionState::Open, 0));
    }
}

/// A decode bound above 0 but too small for the connect's answer refused it, and the connect
/// waited out `handshake_timeout_ms` (npm: "no answer to the connect"): a frame refused by the
/// bounds before its id was read, once the connect's frame is out, is taken as its answer and
/// fails it at once with the bound's `limit` error. Before the frame leaves, or with no connect
/// in flight, it is only a diagnostic.
#[test]
fn a_connect_answer_refused_by_the_decode_bounds_fails_the_connect_at_once() {
    let answer = r#"{"jsonrpc":"2.0","id":"aw-1","result":{}}"#;
    let deep = r#"{"jsonrpc":"2.0","id":"aw-1","result":{"a":[[[]]]}}"#;
    type Set = fn(&mut DecodeOptions);
    let cases: [(Set, &str, &str); 3] = [
        (
            |d| d.max_message_bytes = 1,
            answer,
            "message of 41 bytes exceeds the limit of 1 bytes",
        ),
        (
            |d| d.max_id_len = 2,
            answer,
            "id of 4 bytes exceeds the limit of 2 bytes",
        ),
        (|d| d.max_frames = 1, "[{}, {}]", "more than 1 frames in one message"),
    ];
    for (set, text, why) in cases {
        let mut cfg = SessionConfig {
            generation: GenerationChoice::Current,
            id_prefix: "a".into(),
            ..SessionConfig::default()
        };
        set(&mut cfg.decode);
        let mut s = session_with(cfg);
        let not_diagnostics = |s: &mut Session| {
            let all = events(s);
            assert!(matches!(all.first(), Some(Event::Diagnostic(_))), "{why}: {all:?}");
            all.into_iter()
                .filter(|e| !matches!(e, Event::Diagnostic(_)))
                .collect::<Vec<_>>()
        };
        // Before the connect: diagnostics only.
        s.handle_text(0, text);
        assert!(not_diagnostics(&mut s).is_empty(), "{why}");
        let id = s.connect(0, Credentials::AgentKey(KEY.into())).unwrap();
        // Its frame not yet out: it cannot be the answer.
        s.handle_text(1, text);
        assert!(not_diagnostics(&mut s).is_empty(), "{why}");
        assert_eq!(s.state(), SessionState::Connecting);
        sent(&mut s);
        s.handle_text(2, text);
        match &not_diagnostics(&mut s)[..] {
            [Event::ConnectFailed { id: got, error }] => {
                assert_eq!(got, &id);
                assert_eq!(error.kind(), ErrorKind::Limit);
                assert_eq!(
                    error.error.message,
                    format!("the connect's answer could not be read: {why}")
                );
                assert_eq!(error.request_id, Some(Id::Str(id.clone())));
            }
            other => panic!("{why}: {other:?}"),
        }
        assert_eq!((s.state(), s.poll_timeout()), (SessionState::Open, None));
    }
    // Too deep: the frame's id is read, and it answers the connect (as before).
    let mut cfg = SessionConfig::default();
    cfg.decode.max_depth = 2;
    let mut s = session_with(cfg);
    let id = s.connect(0, Credentials::AgentKey(KEY.into())).unwrap();
    sent(&mut s);
    s.handle_text(1, &deep.replace("aw-1", &id));
    assert!(
        matches!(&events(&mut s)[..], [Event::Diagnostic(_), Event::ConnectFailed { error, .. }] if error.kind() == ErrorKind::Limit)
    );
}

#[test]
fn released_unauthorized_then_retry_on_the_same_socket() {
    let mut s = session(GenerationChoice::Released);
    let a = s
        .connect(0, Credentials::AgentKey("moltzap_agent_bad_bad".into()))
        .unwrap();
    sent(&mut s);
    s.handle_text(1, &released_error(&a, -32000, "Authentication failed"));
    match &events(&mut s)[..] {
        [Event::ConnectFailed { id, error }] => {
            assert_eq!(id, &a);
            assert_eq!(error.kind(), ErrorKind::Auth);
            assert_eq!(error.code(), Some(-32000));
            assert_eq!(error.name.as_deref(), Some("Unauthorized"));
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(s.state(), SessionState::Open);
    // Commands before auth are refused, not queued.
    assert_eq!(s.system_ping(2).unwrap_err().kind(), ErrorKind::State);
    assert!(sent(&mut s).is_empty());
    let b = s.connect(3, Credentials::AgentKey(KEY.into())).unwrap();
    assert_ne!(a, b);
    assert_eq!(sent(&mut s).len(), 1);
    s.handle_text(4, &released_response(&b, HELLO));
    assert!(matches!(&events(&mut s)[..], [Event::Connected { id, .. }] if id == &b));
    assert_eq!(s.state(), SessionState::Ready);
    assert_eq!(
        s.connect(5, Credentials::AgentKey(KEY.into())).unwrap_err().kind(),
        ErrorKind::State
    );
}

#[test]
fn current_unauthorized_tag_then_retry() {
    let mut s = session(GenerationChoice::Current);
    let a = s.connect(0, Credentials::AgentKey("bad".into())).unwrap();
    sent(&mut s);
    s.handle_text(
        1,
        &format!(r#"{{"jsonrpc":"2.0","id":"{a}","error":{{"code":-32603,"message":"no","_tag":"Unauthorized"}}}}"#),
    );
    match &events(&mut s)[..] {
        [Event::ConnectFailed { error, .. }] => {
            assert_eq!(error.kind(), ErrorKind::Auth);
            assert_eq!(error.tag.as_deref(), Some("Unauthorized"));
        }
        other => panic!("{other:?}"),
    }
    let b = s.connect(2, Credentials::AgentKey(KEY.into())).unwrap();
    s.handle_text(3, &format!(r#"{{"jsonrpc":"2.0","id":"{b}","result":{{}}}}"#));
    assert!(matches!(&events(&mut s)[..], [Event::Connected { .. }]));
}

#[test]
fn a_tagged_invalid_request_answering_the_connect_is_its_error_not_a_fallback() {
    // A `_tag` (on the error, or in its `data`) is the current generation's: the server speaks
    // it, so its -32600 is the connect's error. A released server's refusal of the current
    // connect carries none (probe-edges: "missing type").
    for error in [
        r#"{"code":-32600,"message":"Invalid request","_tag":"InvalidRequest"}"#,
        r#"{"code":-32600,"message":"Invalid request","data":{"_tag":"InvalidRequest"}}"#,
    ] {
        for choice in [GenerationChoice::Auto, GenerationChoice::Current] {
            let mut s = session(choice);
            let id = s.connect(0, Credentials::AgentKey(KEY.into())).unwrap();
            assert_eq!(sent(&mut s)[0]["method"], "agent/network/connect");
            s.handle_text(1, &format!(r#"{{"jsonrpc":"2.0","id":"{id}","error":{error}}}"#));
            match &events(&mut s)[..] {
                [Event::ConnectFailed { id: failed, error }] => {
                    assert_eq!(failed, &id);
                    assert_eq!(error.error.code, Some(-32600));
                    assert_eq!(error.tag.as_deref(), Some("InvalidRequest"));
                    // Not told it may be a released server: it said it is not.
                    assert_eq!(error.error.message, "Invalid request", "{choice:?}");
                }
                other => panic!("{choice:?} {error}: {other:?}"),
            }
            assert!(sent(&mut s).is_empty(), "{choice:?} {error}: no released connect");
            assert_eq!(s.generation(), Generation::Current);
        }
    }
}

#[test]
fn auto_falls_back_to_released_on_invalid_request_frame() {
    let mut s = session(GenerationChoice::Auto);
    let id = s.connect(0, Credentials::AgentKey(KEY.into())).unwrap();
    let first = sent(&mut s);
    assert_eq!(first[0]["method"], "agent/network/connect");
    assert!(first[0].get("type").is_none());
    // The released server's answer to a frame without `type` (probe-edges: "missing type").
    s.handle_text(
        1,
        &format!(
            r#"{{"jsonrpc":"2.0","type":"response","id":"{id}","error":{{"code":-32600,"message":"Invalid request frame"}}}}"#
        ),
    );
    assert!(events(&mut s).is_empty(), "the fallback is silent");
    assert_eq!(s.generation(), Generation::Released);
    let retry = sent(&mut s);
    assert_eq!(
        retry,
        vec![json!({"jsonrpc":"2.0","type":"request","id":id,"method":"auth/connect",
            "params":{"agentKey":KEY,"minProtocol":RELEASED_PROTOCOL,"maxProtocol":RELEASED_PROTOCOL}})]
    );
    s.handle_text(2, &released_response(&id, HELLO));
    assert!(matches!(
        &events(&mut s)[..],
        [Event::Connected {
            generation: Generation::Released,
            ..
        }]
    ));
    // From now on, released frames.
    let p = s.system_ping(3).unwrap();
    assert_eq!(sent(&mut s)[0]["type"], "request");
    s.handle_text(4, &released_response(&p, r#"{"ts":"2026-12-02T12:36:49.731Z"}"#));
    assert!(matches!(&events(&mut s)[..], [Event::Response { id, .. }] if id == &p));
    s.handle_text(5, RECEIVED);
    assert!(matches!(&events(&mut s)[..], [Event::MessageReceived { .. }]));

    // The `id: null` form of the same refusal also falls back; a second -32600 does not loop.
    let mut s = session(GenerationChoice::Auto);
    let id = s.connect(0, Credentials::AgentKey(KEY.into())).unwrap();
    sent(&mut s);
    let null =
        r#"{"jsonrpc":"2.0","type":"response","id":null,"error":{"code":-32600,"message":"Invalid request frame"}}"#;
    s.handle_text(1, null);
    assert!(matches!(&events(&mut s)[..], [Event::Diagnostic(_)]));
    assert_eq!(sent(&mut s)[0]["method"], "auth/connect");
    s.handle_text(2, &released_error(&id, -32600, "Invalid request frame"));
    assert!(matches!(&events(&mut s)[..], [Event::ConnectFailed { error, .. }]
        if error.kind() == ErrorKind::Protocol && !error.error.message.contains("generation auto")));
    assert!(sent(&mut s).is_empty());

    // Current only: the refusal says what a released server means by it.
    let mut s = session(GenerationChoice::Current);
    let id = s.connect(0, Credentials::AgentKey(KEY.into())).unwrap();
    sent(&mut s);
    s.handle_text(1, &released_error(&id, -32600, "Invalid request frame"));
    match &events(&mut s)[..] {
        [Event::ConnectFailed { error, .. }] => assert!(
            error
                .error
                .message
                .starts_with("Invalid request frame (a released-generation server")
                && error.error.message.contains("generation auto or released"),
            "{}",
            error.error.message
        ),
        other => panic!("{other:?}"),
    }

    // A current server answering auto: stays current.
    let mut s = session(GenerationChoice::Auto);
    let id = s.connect(0, Credentials::AgentKey(KEY.into())).unwrap();
    s.handle_text(1, &format!(r#"{{"jsonrpc":"2.0","id":"{id}","result":{{}}}}"#));
    assert!(matches!(
        &events(&mut s)[..],
        [Event::Connected {
            generation: Generation::Current,
            ..
        }]
    ));
}

/// A request answered before the driver polled its frame (the server answered an earlier frame
/// of the same id twice, or guessed the counter's next id) is over: its frame is taken back, as
/// for one cancelled or timed out, never sent after its answer. Found by the interleaving
/// explorer (tests/interleave.rs): `auto`'s `auth/connect` went out after `Connected`.
#[test]
fn a_request_answered_before_its_frame_left_is_not_sent() {
    // auto: the fallback's auth/connect waits; an answer to the id comes first.
    let mut s = session(GenerationChoice::Auto);
    let id = s.connect(0, Credentials::AgentKey(KEY.into())).unwrap();
    sent(&mut s);
    s.handle_text(1, &released_error(&id, -32600, "Invalid request frame"));
    s.handle_text(2, &released_response(&id, HELLO));
    assert!(matches!(&events(&mut s)[..], [Event::Connected { .. }]));
    assert_eq!(sent(&mut s), Vec::<Value>::new(), "no connect after Connected");

    // A call: its result, then nothing to send; a malformed answer fails it the same way.
    let mut s = current_ready(SessionConfig::default());
    let a = s.call(3, "messages/send", Some("{}")).unwrap();
    s.handle_text(4, &format!(r#"{{"jsonrpc":"2.0","id":"{a}","result":{{}}}}"#));
    let b = s.call(5, "messages/send", Some("{}")).unwrap();
    s.handle_text(
        6,
        &format!(r#"{{"jsonrpc":"2.0","id":"{b}","result":1,"error":{{"code":1,"message":"m"}}}}"#),
    );
    let ended: Vec<_> = events(&mut s)
        .into_iter()
        .filter(|e| matches!(e, Event::Response { .. } | Event::Failed { .. }))
        .collect();
    assert_eq!(ended.len(), 2, "{ended:?}");
    assert_eq!(sent(&mut s), Vec::<Value>::new(), "no frame of an ended request");
}

#[test]
fn protocol_out_of_range_is_a_version_error() {
    let mut s = session(GenerationChoice::Released);
    let id = s.connect(0, Credentials::AgentKey(KEY.into())).unwrap();
    sent(&mut s);
    let hello = HELLO.replace("2026.425.3", "2026.500.0");
    s.handle_text(1, &released_response(&id, &hello));
    let ev = events(&mut s);
    assert!(matches!(&ev[0], Event::ConnectFailed { error, .. } if error.kind() == ErrorKind::Version));
    assert!(matches!(&ev[1], Event::Disconnected { code: 1000, .. }));
    assert!(matches!(s.poll_transmit(), Some(Outgoing::Close { code: 1000, .. })));
    assert_eq!(s.state(), SessionState::Closed);
    assert!(agentwire_moltzap::session::version_in_range(
        "2026.425.3",
        "2026.425.3",
        "2026.425.3"
    ));
    assert!(agentwire_moltzap::session::version_in_range(
        "2026.425",
        "2026.0.0",
        "2026.425.0"
    ));
    assert!(!agentwire_moltzap::session::version_in_range("x", "1", "2"));
}

#[test]
fn a_released_server_of_another_patch_is_accepted_and_another_minor_refused() {
    // Released servers compare no protocol range: a patch of the 2026.425 series speaks the
    // same frames (moltzap-released-2026.425.md, "Handshake").
    for v in ["2026.425.3", "2026.425.0", "2026.425.4", "2026.425.17", "2026.425"] {
        let mut s = session(GenerationChoice::Released);
        let id = s.connect(0, Credentials::AgentKey(KEY.into())).unwrap();
        sent(&mut s);
        s.handle_text(1, &released_response(&id, &HELLO.replace("2026.425.3", v)));
        let ev = events(&mut s);
        assert!(matches!(&ev[..], [Event::Connected { .. }]), "{v}: {ev:?}");
    }
    for v in ["2026.424.9", "2026.426.0", "2027.425.3", "2026.811.0", "2026.425.x", ""] {
        let mut s = session(GenerationChoice::Released);
        let id = s.connect(0, Credentials::AgentKey(KEY.into())).unwrap();
        sent(&mut s);
        s.handle_text(1, &released_response(&id, &HELLO.replace("2026.425.3", v)));
        let ev = events(&mut s);
        let Some(Event::ConnectFailed { error, .. }) = ev.first() else {
            panic!("{v}: {ev:?}")
        };
        assert_eq!(error.kind(), ErrorKind::Version, "{v}");
        assert!(error.error.message.contains("2026.425.x"), "{}", error.error.message);
        assert_eq!(s.state(), SessionState::Closed, "{v}");
    }
    assert!(RELEASED_PROTOCOL.starts_with("2026.425."));
    assert!(agentwire_moltzap::session::released_version_accepted(RELEASED_PROTOCOL));
}

#[test]
fn a_released_connect_answered_by_a_current_server_is_a_version_error_naming_the_generation() {
    // A current server answers without `type`, a result or an error alike.
    let answers = [
        r#"{"jsonrpc":"2.0","id":"ID","error":{"code":-32601,"message":"Method not found"}}"#,
        r#"{"jsonrpc":"2.0","id":"ID","error":{"code":-32600,"message":"Invalid Request"}}"#,
        r#"{"jsonrpc":"2.0","id":"ID","result":{}}"#,
    ];
    for answer in answers {
        let mut s = session(GenerationChoice::Released);
        let id = s.connect(0, Credentials::AgentKey(KEY.into())).unwrap();
        sent(&mut s);
        s.handle_text(1, &answer.replace("ID", &id));
        let ev = events(&mut s);
        let Some(Event::ConnectFailed { error, id: failed }) =
            ev.iter().find(|e| matches!(e, Event::ConnectFailed { .. }))
        else {
            panic!("{ev:?}")
        };
        assert_eq!(failed, &id);
        assert_eq!(error.kind(), ErrorKind::Version, "{answer}: {}", error.error.message);
        let m = &error.error.message;
        assert!(
            m.contains("speaks the current MoltZap generation") && m.contains("generation auto or current"),
            "{m}"
        );
        assert_eq!(error.request_id, Some(Id::Str(id.clone())));
        // The socket stays open for another connect, as after any refused connect.
        assert_eq!(s.state(), SessionState::Open);
    }
    // Another frame error on the released connect keeps its decode error.
    let mut s = session(GenerationChoice::Released);
    let id = s.connect(0, Credentials::AgentKey(KEY.into())).unwrap();
    sent(&mut s);
    s.handle_text(
        1,
        &format!(
            r#"{{"jsonrpc":"2.0","type":"response","id":"{id}","result":{{}},"error":{{"code":1,"message":"m"}}}}"#
        ),
    );
    let ev = events(&mut s);
    let Some(Event::ConnectFailed { error, .. }) = ev.iter().find(|e| matches!(e, Event::ConnectFailed { .. })) else {
        panic!("{ev:?}")
    };
    assert_ne!(error.kind(), ErrorKind::Version);
}

#[test]
fn many_requests_in_flight_correlated_out_of_order() {
    let mut s = released_ready();
    let ids: Vec<String> = (0..50)
        .map(|i| s.messages_list(10, "c", Some(i + 1)).unwrap())
        .collect();
    assert_eq!(s.in_flight(), 50);
    let wire = sent(&mut s);
    assert_eq!(wire.len(), 50);
    assert_eq!(wire[3]["params"], json!({"conversationId":"c","limit":4}));
    for id in ids.iter().rev() {
        s.handle_text(11, &released_response(id, &format!(r#"{{"echo":"{id}"}}"#)));
    }
    let ev = events(&mut s);
    assert_eq!(ev.len(), 50);
    for (e, id) in ev.iter().zip(ids.iter().rev()) {
        assert_eq!(
            e,
            &Event::Response {
                id: id.clone(),
                result: format!(r#"{{"echo":"{id}"}}"#)
            }
        );
    }
    assert_eq!(s.in_flight(), 0);
    assert_eq!(s.poll_timeout(), Some(60_001), "only the liveness watch is left");
}

#[test]
fn error_responses_are_typed() {
    let mut s = released_ready();
    let a = s.call(1, "nope/nope", Some("{}")).unwrap();
    s.handle_text(2, &released_error(&a, -32601, "Unknown method: nope/nope"));
    match &events(&mut s)[..] {
        [Event::Failed { id, error }] => {
            assert_eq!(id, &a);
            assert_eq!(
                (error.kind(), error.name.as_deref()),
                (ErrorKind::Invalid, Some("MethodNotFound"))
            );
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn timeout_then_late_reply_dropped() {
    let mut s = released_ready();
    let a = s.call_with_timeout(100, "system/ping", Some("{}"), 500).unwrap();
    let b = s.system_ping(100).unwrap();
    sent(&mut s);
    assert_eq!(s.poll_timeout(), Some(600));
    s.handle_timeout(599);
    assert!(events(&mut s).is_empty());
    s.handle_timeout(600);
    assert_eq!(failed_kind(&events(&mut s)[0]), Some((a.clone(), ErrorKind::Timeout)));
    assert_eq!(s.poll_timeout(), Some(30_100));
    s.handle_text(700, &released_response(&a, "{}"));
    assert!(events(&mut s).is_empty(), "late reply dropped quietly");
    s.handle_timeout(30_100);
    assert_eq!(failed_kind(&events(&mut s)[0]), Some((b, ErrorKind::Timeout)));
}

#[test]
fn cancel_then_late_reply_dropped() {
    let mut s = released_ready();
    let a = s.system_ping(1).unwrap();
    sent(&mut s);
    assert!(s.cancel(&a));
    assert!(!s.cancel(&a));
    assert_eq!(failed_kind(&events(&mut s)[0]), Some((a.clone(), ErrorKind::Cancelled)));
    s.handle_text(2, &released_response(&a, "{}"));
    assert!(events(&mut s).is_empty());
    assert_eq!(s.poll_timeout(), Some(60_001), "only the liveness watch is left");
    // An id never sent is a diagnostic.
    s.handle_text(3, &released_response("zz", "{}"));
    assert!(matches!(&events(&mut s)[..], [Event::Diagnostic(e)] if e.kind() == ErrorKind::Protocol));
    // The memory of forgotten ids is bounded: the oldest is forgotten first.
    let ids: Vec<String> = (0..FORGOTTEN_CAP + 1)
        .map(|_| {
            let id = s.system_ping(4).unwrap();
            sent(&mut s);
            assert!(s.cancel(&id));
            id
        })
        .collect();
    events(&mut s);
    s.handle_text(5, &released_response(&ids[0], "{}"));
    assert!(matches!(&events(&mut s)[..], [Event::Diagnostic(_)]));
    s.handle_text(5, &released_response(&ids[1], "{}"));
    assert!(events(&mut s).is_empty());
}

#[test]
fn a_request_that_ends_before_its_frame_is_polled_is_never_sent() {
    // A driver whose socket is backed up polls nothing: calls made and dropped (cancelled), or
    // timed out, must not pile up there.
    let mut s = released_ready();
    while s.poll_transmit().is_some() {}
    let kept = s.system_ping(1).unwrap();
    for _ in 0..10_000 {
        let id = s.system_ping(1).unwrap();
        assert!(s.cancel(&id));
    }
    s.call_with_timeout(1, "system/ping", None, 10).unwrap();
    s.handle_timeout(11);
    let sent: Vec<Outgoing> = std::iter::from_fn(|| s.poll_transmit()).collect();
    match &sent[..] {
        [Outgoing::Text(t)] => assert!(t.contains(&format!(r#""id":"{kept}""#)), "{t}"),
        other => panic!("only the request still pending: {} frames", other.len()),
    }
}

#[test]
fn requests_never_sent_do_not_push_sent_ones_out_of_the_forgotten_ids() {
    let mut s = released_ready();
    sent(&mut s);
    let went_out = s.system_ping(1).unwrap();
    sent(&mut s);
    assert!(s.cancel(&went_out));
    // A burst of calls dropped before the backed-up socket took their frames.
    for _ in 0..FORGOTTEN_CAP + 1 {
        let id = s.system_ping(1).unwrap();
        assert!(s.cancel(&id));
    }
    events(&mut s);
    s.handle_text(2, &released_response(&went_out, "{}"));
    assert!(
        events(&mut s).is_empty(),
        "the late reply of a request that went out is dropped quietly"
    );
}

#[test]
fn max_in_flight_is_a_limit_error() {
    let mut s = {
        let mut s = session_with(SessionConfig {
            generation: GenerationChoice::Released,
            max_in_flight: 3,
            ..SessionConfig::default()
        });
        let id = s.connect(0, Credentials::AgentKey(KEY.into())).unwrap();
        s.handle_text(1, &released_response(&id, HELLO));
        events(&mut s);
        sent(&mut s);
        s
    };
    let ids: Vec<String> = (0..3).map(|_| s.system_ping(2).unwrap()).collect();
    let e = s.system_ping(2).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Limit);
    assert_eq!(sent(&mut s).len(), 3);
    s.handle_text(3, &released_response(&ids[1], "{}"));
    events(&mut s);
    assert!(s.system_ping(4).is_ok());
}

/// The size of the request frame `s` would send next (its next id is `id`).
fn request_len(generation: Generation, id: &str, method: &str, params: &str) -> usize {
    let params = agentwire_moltzap::raw(params).unwrap();
    agentwire_moltzap::encode_request(generation, &Id::from(id), method, Some(&params))
        .unwrap()
        .len()
}

#[test]
fn an_oversized_request_is_a_limit_error_and_nothing_is_sent() {
    const MAX: usize = 4096;
    let cfg = SessionConfig {
        max_send_bytes: MAX,
        ..SessionConfig::default()
    };
    let mut s = current_ready(cfg);
    // The connect took aw-1: the next request is aw-2.
    let overhead = request_len(Generation::Current, "aw-2", "x/y", r#"[""]"#);
    let fits = format!(r#"["{}"]"#, "a".repeat(MAX - overhead));
    let over = format!(r#"["{}"]"#, "a".repeat(MAX - overhead + 1));
    assert_eq!(request_len(Generation::Current, "aw-2", "x/y", &over), MAX + 1);

    // One byte over, through `call`: refused at once, nothing queued, sent or remembered.
    let e = s.call(2, "x/y", Some(&over)).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Limit);
    assert!(e.error.message.contains(&(MAX + 1).to_string()), "{}", e.error.message);
    assert!(e.error.message.contains(&MAX.to_string()), "{}", e.error.message);
    assert!(sent(&mut s).is_empty());
    assert!(events(&mut s).is_empty());
    assert_eq!(s.in_flight(), 0);
    assert_eq!(s.poll_timeout(), Some(60_001), "no timer armed for a refused request");
    assert_eq!(s.state(), SessionState::Ready);

    // The typed methods and `call_with_timeout` go through the same check.
    let huge = SendMessage::text_to_agent("bob", "x".repeat(3 << 20));
    assert_eq!(s.messages_send(2, &huge).unwrap_err().kind(), ErrorKind::Limit);
    let e = s.call_with_timeout(2, "x/y", Some(&over), 5).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Limit);
    assert!(sent(&mut s).is_empty());
    assert_eq!(s.in_flight(), 0);

    // Exactly at the limit goes out, with the id the refused calls did not use.
    let id = s.call(3, "x/y", Some(&fits)).unwrap();
    assert_eq!(id, "aw-2");
    let out = sent(&mut s);
    assert_eq!(out.len(), 1);
    assert_eq!(out[0]["id"], "aw-2");
    s.handle_text(4, r#"{"jsonrpc":"2.0","id":"aw-2","result":{}}"#);
    assert!(matches!(&events(&mut s)[..], [Event::Response { id, .. }] if id == "aw-2"));
    assert_eq!(s.in_flight(), 0);
}

/// The frame carries the params trimmed: whitespace around them counts for nothing, however
/// much of it there is, and a request whose frame fits goes out.
#[test]
fn whitespace_around_the_params_does_not_count_toward_max_send_bytes() {
    const MAX: usize = 4096;
    let mut s = current_ready(SessionConfig {
        max_send_bytes: MAX,
        ..SessionConfig::default()
    });
    let pad = " ".repeat(MAX);
    let id = s.call(2, "x/y", Some(&format!("{pad}{{}}{pad}"))).unwrap();
    assert_eq!(
        sent(&mut s),
        vec![json!({"jsonrpc":"2.0","id":id,"method":"x/y","params":{}})]
    );
    // Params and method of exactly `max_send_bytes` (with the whitespace trimmed): refused by
    // the frame's size, as every request is, and with the same message.
    let params = format!(r#"{pad}["{}"]{pad}"#, "a".repeat(MAX - 3 - 4));
    let e = s.call(3, "x/y", Some(&params)).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Limit);
    assert!(e.error.message.starts_with("request of "), "{}", e.error.message);
    assert!(sent(&mut s).is_empty());
}

/// A payload over `max_send_bytes` is refused before it is written out in full (a message text
/// of 400 M characters ran the wasm instance out of memory while it was serialized twice):
/// `call_serialized` stops writing at the bound, and `call` compares the params' length before
/// it parses or copies them.
#[test]
fn an_oversized_payload_is_refused_before_it_is_serialized_in_full() {
    use serde::ser::{Serialize, SerializeSeq, Serializer};
    use std::cell::Cell;
    struct Chunks<'a>(&'a Cell<usize>);
    impl Serialize for Chunks<'_> {
        fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
            let mut seq = s.serialize_seq(None)?;
            for _ in 0..1_000_000 {
                self.0.set(self.0.get() + 1);
                seq.serialize_element("0123456789abcdef")?;
            }
            seq.end()
        }
    }
    let cfg = SessionConfig {
        max_send_bytes: 4096,
        ..SessionConfig::default()
    };
    let mut s = current_ready(cfg);
    let written = Cell::new(0);
    let e = s.call_serialized(2, "x/y", &Chunks(&written)).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Limit);
    assert!(e.error.message.contains("max_send_bytes 4096"), "{}", e.error.message);
    assert!(
        written.get() < 300,
        "{} chunks written for a 4096-byte bound",
        written.get()
    );
    // Not JSON, and over the bound: refused for its size, before it is parsed.
    let e = s.call(2, "x/y", Some(&"{".repeat(5000))).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Limit);
    assert!(sent(&mut s).is_empty());
    assert_eq!(s.in_flight(), 0);
    // The session is as it was.
    assert_eq!(s.call(3, "x/y", Some("{}")).unwrap(), "aw-2");
}

#[test]
fn an_oversized_connect_is_a_limit_error_and_the_socket_stays_open() {
    let mut cfg = SessionConfig {
        generation: GenerationChoice::Released,
        ..SessionConfig::default()
    };
    cfg.max_send_bytes = 1024;
    let mut s = session_with(cfg);
    let e = s.connect(0, Credentials::AgentKey("k".repeat(2000))).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Limit);
    assert!(sent(&mut s).is_empty());
    assert!(events(&mut s).is_empty());
    assert_eq!(s.state(), SessionState::Open);
    assert_eq!(s.poll_timeout(), None);
    let id = s.connect(1, Credentials::AgentKey(KEY.into())).unwrap();
    assert_eq!(id, "aw-1");
    assert_eq!(sent(&mut s).len(), 1);
    s.handle_text(2, &released_response(&id, HELLO));
    assert!(matches!(events(&mut s)[..], [Event::Connected { .. }]));
}

/// An id prefix so long that the answer's id would be dropped (`max_id_len`): the connect is
/// refused at once, not left to time out (a component host's review found it accepted).
#[test]
fn an_id_its_answer_could_not_carry_is_refused() {
    let cfg = SessionConfig {
        id_prefix: "p".repeat(300),
        ..SessionConfig::default()
    };
    let mut s = session_with(cfg);
    let e = s.connect(0, Credentials::AgentKey(KEY.into())).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Invalid);
    assert!(e.to_string().contains("id_prefix"), "{e}");
    assert!(sent(&mut s).is_empty());
    assert_eq!(s.state(), SessionState::Open);

    // An id of exactly `max_id_len` is one the decoder reads back: it is sent and answered.
    let max = SessionConfig::default().decode.max_id_len;
    let mut s = session_with(SessionConfig {
        id_prefix: "p".repeat(max - 1),
        ..SessionConfig::default()
    });
    let id = s.connect(0, Credentials::AgentKey(KEY.into())).unwrap();
    assert_eq!(id.len(), max);
    assert_eq!(sent(&mut s).len(), 1);
    s.handle_text(1, &format!(r#"{{"jsonrpc":"2.0","id":"{id}","result":{{}}}}"#));
    assert!(matches!(&events(&mut s)[..], [Event::Connected { id: got, .. }] if got == &id));
}

#[test]
fn an_auto_fallback_frame_over_the_limit_fails_the_connect() {
    // The released connect is 8 bytes longer than the current one (`"type":"request"`, a
    // shorter method): a limit that fits only the first fails the fallback with `limit`.
    let current = SessionConfig {
        generation: GenerationChoice::Auto,
        ..SessionConfig::default()
    };
    let mut s = session_with(current.clone());
    s.connect(0, Credentials::AgentKey(KEY.into())).unwrap();
    let Some(Outgoing::Text(first)) = s.poll_transmit() else {
        panic!("no connect frame")
    };
    let mut cfg = current;
    cfg.max_send_bytes = first.len();
    let mut s = session_with(cfg);
    let id = s.connect(0, Credentials::AgentKey(KEY.into())).unwrap();
    assert_eq!(sent(&mut s).len(), 1);
    s.handle_text(1, &released_error(&id, -32600, "Invalid request frame"));
    assert!(sent(&mut s).is_empty());
    match &events(&mut s)[..] {
        [Event::ConnectFailed { id: got, error }] => {
            assert_eq!(got, &id);
            assert_eq!(error.kind(), ErrorKind::Limit);
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(s.state(), SessionState::Open);
    assert_eq!(s.poll_timeout(), None);
}

#[test]
fn bad_params_are_refused() {
    let mut s = released_ready();
    assert_eq!(s.call(1, "x/y", Some("{nope")).unwrap_err().kind(), ErrorKind::Invalid);
    assert_eq!(s.call(1, "x/y", Some("3")).unwrap_err().kind(), ErrorKind::Invalid);
    assert_eq!(s.call(1, "", None).unwrap_err().kind(), ErrorKind::Invalid);
    assert!(sent(&mut s).is_empty());
    assert_eq!(s.in_flight(), 0);
    s.call(1, "x/y", None).unwrap();
    assert!(sent(&mut s)[0].get("params").is_none());
}

#[test]
fn malformed_frames_are_dropped_with_diagnostics() {
    let mut s = released_ready();
    let a = s.system_ping(1).unwrap();
    for bad in [
        "{not json",
        "",
        "42",
        "[]",
        r#"{"jsonrpc":"2.0","id":"x"}"#,
        r#"{"jsonrpc":"1.0","type":"event","event":"e"}"#,
        &"[".repeat(100),
    ] {
        s.handle_text(2, bad);
        let ev = events(&mut s);
        assert_eq!(ev.len(), 1, "{bad:?}: {ev:?}");
        assert!(matches!(&ev[0], Event::Diagnostic(_)), "{bad:?}");
    }
    s.handle_binary(2, b"\xff\xfe");
    assert!(matches!(&events(&mut s)[..], [Event::Diagnostic(e)] if e.kind() == ErrorKind::Decode));
    // The server sending a request is a protocol diagnostic.
    s.handle_text(2, r#"{"jsonrpc":"2.0","type":"request","id":"s","method":"x"}"#);
    assert!(matches!(&events(&mut s)[..], [Event::Diagnostic(e)] if e.kind() == ErrorKind::Protocol));
    // Still alive: the pending request completes.
    assert_eq!(s.state(), SessionState::Ready);
    s.handle_text(3, &released_response(&a, "{}"));
    assert!(matches!(&events(&mut s)[..], [Event::Response { .. }]));
}

#[test]
fn frame_error_with_a_pending_id_fails_that_request() {
    let mut s = released_ready();
    let a = s.system_ping(1).unwrap();
    let b = s.system_ping(1).unwrap();
    // A response with both result and error: refused, but the id was read.
    s.handle_text(
        2,
        &format!(
            r#"{{"jsonrpc":"2.0","type":"response","id":"{a}","result":{{}},"error":{{"code":1,"message":"m"}}}}"#
        ),
    );
    let ev = events(&mut s);
    assert!(matches!(&ev[0], Event::Diagnostic(e) if e.kind() == ErrorKind::Decode));
    assert_eq!(failed_kind(&ev[1]), Some((a, ErrorKind::Decode)));
    assert_eq!(ev.len(), 2);
    assert_eq!(s.in_flight(), 1);
    s.handle_text(3, &released_response(&b, "{}"));
    assert!(matches!(&events(&mut s)[..], [Event::Response { .. }]));
}

/// The server never sends a request the agent must answer, so only a response-shaped frame can
/// answer a pending request: a malformed event or request that happens to carry a pending id is a
/// diagnostic only, and the real response still arrives.
#[test]
fn a_malformed_non_response_frame_with_a_pending_id_fails_nothing() {
    let mut current = current_ready(SessionConfig::default());
    let mut released = released_ready();
    for (is_current, bad, good) in [
        (
            true,
            r#"{"jsonrpc":"2.0","id":"ID","method":7}"#,
            r#"{"jsonrpc":"2.0","id":"ID","result":{"ts":1}}"#,
        ),
        (
            true,
            r#"{"jsonrpc":"2.0","id":"ID"}"#,
            r#"{"jsonrpc":"2.0","id":"ID","result":{"ts":1}}"#,
        ),
        (
            false,
            r#"{"jsonrpc":"2.0","type":"event","id":"ID"}"#,
            r#"{"jsonrpc":"2.0","type":"response","id":"ID","result":{"ts":1}}"#,
        ),
        (
            false,
            r#"{"jsonrpc":"2.0","type":"request","id":"ID","method":7}"#,
            r#"{"jsonrpc":"2.0","type":"response","id":"ID","result":{"ts":1}}"#,
        ),
    ] {
        let s = if is_current { &mut current } else { &mut released };
        let id = s.system_ping(2).unwrap();
        s.handle_text(3, &bad.replace("ID", &id));
        assert!(
            matches!(&events(s)[..], [Event::Diagnostic(e)] if e.kind() == ErrorKind::Decode),
            "{bad}"
        );
        assert_eq!(s.in_flight(), 1, "{bad}");
        s.handle_text(4, &good.replace("ID", &id));
        assert!(
            matches!(&events(s)[..], [Event::Response { id: x, .. }] if *x == id),
            "{bad}"
        );
    }
    // A response-shaped one still fails its request (released: `type: "response"` alone).
    let id = released.system_ping(5).unwrap();
    released.handle_text(
        6,
        &format!(r#"{{"jsonrpc":"2.0","type":"response","id":"{id}","result":1,"error":{{"code":1,"message":""}}}}"#),
    );
    assert_eq!(failed_kind(&events(&mut released)[1]), Some((id, ErrorKind::Decode)));
    // A released response with neither `result` nor `error` is a success (`result` is optional).
    let id = released.system_ping(7).unwrap();
    released.handle_text(8, &format!(r#"{{"jsonrpc":"2.0","type":"response","id":"{id}"}}"#));
    assert!(matches!(&events(&mut released)[..], [Event::Response { id: x, result }] if *x == id && result == "null"));
}

#[test]
fn null_id_error_fails_the_only_request_in_flight() {
    let null = r#"{"jsonrpc":"2.0","type":"response","id":null,"error":{"code":-32700,"message":"Invalid JSON"}}"#;
    let mut s = released_ready();
    // Nothing in flight: a diagnostic only.
    s.handle_text(1, null);
    assert!(matches!(&events(&mut s)[..], [Event::Diagnostic(e)] if e.code() == Some(-32700)));
    let a = s.system_ping(2).unwrap();
    sent(&mut s);
    // A request whose frame has not left cannot be the unreadable one.
    let unsent = s.system_ping(2).unwrap();
    s.handle_text(3, null);
    let ev = events(&mut s);
    assert!(matches!(&ev[0], Event::Diagnostic(_)));
    assert_eq!(failed_kind(&ev[1]), Some((a, ErrorKind::Protocol)));
    assert!(s.cancel(&unsent));
    events(&mut s);
    // Two in flight: ambiguous, diagnostic only; both stay pending.
    s.system_ping(4).unwrap();
    s.system_ping(4).unwrap();
    sent(&mut s);
    s.handle_text(5, null);
    assert!(matches!(&events(&mut s)[..], [Event::Diagnostic(_)]));
    assert_eq!(s.in_flight(), 2);
}

#[test]
fn concatenated_and_batched_frames_in_one_message() {
    let mut s = released_ready();
    let a = s.system_ping(1).unwrap();
    let b = s.system_ping(1).unwrap();
    let msg = format!(
        "{}{}\n{}",
        released_response(&b, r#"{"ts":"2"}"#),
        RECEIVED,
        released_response(&a, r#"{"ts":"1"}"#)
    );
    s.handle_text(2, &msg);
    let ev = events(&mut s);
    assert_eq!(ev.len(), 3);
    assert!(matches!(&ev[0], Event::Response { id, result } if id == &b && result == r#"{"ts":"2"}"#));
    assert!(matches!(&ev[1], Event::MessageReceived { .. }));
    assert!(matches!(&ev[2], Event::Response { id, .. } if id == &a));

    let mut s = current_ready(SessionConfig::default());
    let a = s.system_ping(1).unwrap();
    let batch = format!(
        r#"[{{"jsonrpc":"2.0","id":"{a}","result":1}},{{"jsonrpc":"2.0","method":"presence/changed","params":{{"agentId":"x","status":"away"}}}},7]"#
    );
    s.handle_text(2, &batch);
    let ev = events(&mut s);
    assert!(matches!(&ev[0], Event::Response { result, .. } if result == "1"));
    assert!(
        matches!(&ev[1], Event::PresenceChanged { agent_id: Some(x), status: Some(st), .. } if x == "x" && st == "away")
    );
    assert!(matches!(&ev[2], Event::Diagnostic(_)));
}

#[test]
fn events_are_typed_and_unknown_ones_pass_through() {
    let mut s = released_ready();
    s.handle_text(1, RECEIVED);
    match &events(&mut s)[..] {
        [Event::MessageReceived {
            data,
            conversation_id,
            message_id,
            sender_id,
        }] => {
            assert_eq!(conversation_id.as_deref(), Some("000c5a76-408a-476c-864d-6bff007cf25f"));
            assert_eq!(message_id.as_deref(), Some("559081f9-4898-406d-9901-376f83859d30"));
            assert_eq!(sender_id.as_deref(), Some("f5d5da7e-550a-482f-966b-7bab19bfa2b4"));
            let m = Message::from_wrapped(data).unwrap();
            assert_eq!(m.parts, vec![Part::text("hello from A")]);
            assert_eq!(m.created_at, "2026-12-02T12:36:49.853Z");
        }
        other => panic!("{other:?}"),
    }
    let created = r#"{"jsonrpc":"2.0","type":"event","event":"conversations/created","data":{"conversation":{"id":"e3200a0e-a269-4ca6-846c-dcfa511dde24","type":"group","name":"trio","createdBy":"2c1fbb30-b8c3-4d82-9173-bd5ef180364e","createdAt":"2026-12-02T12:39:27.414Z","updatedAt":"2026-12-02T12:39:27.414Z"}}}"#;
    s.handle_text(2, created);
    assert!(matches!(
        &events(&mut s)[..],
        [Event::ConversationCreated { conversation_id: Some(c), .. }] if c == "e3200a0e-a269-4ca6-846c-dcfa511dde24"
    ));
    let ev = |name: &str, data: &str| format!(r#"{{"jsonrpc":"2.0","type":"event","event":"{name}","data":{data}}}"#);
    s.handle_text(3, &ev("conversations/updated", r#"{"conversation":{"id":"c1"}}"#));
    s.handle_text(
        3,
        &ev(
            "conversations/archived",
            r#"{"conversationId":"c2","archivedAt":"t","by":"a"}"#,
        ),
    );
    s.handle_text(
        3,
        &ev("conversations/unarchived", r#"{"conversationId":"c3","by":"a"}"#),
    );
    s.handle_text(3, &ev("presence/changed", r#"{"agentId":"a1","status":"away"}"#));
    s.handle_text(3, &ev("app/sessionReady", r#"{"x":[1,2]}"#));
    s.handle_text(3, r#"{"jsonrpc":"2.0","type":"event","event":"permissions/required"}"#);
    // A known name with an unexpected payload still arrives, without routing fields.
    s.handle_text(3, &ev("messages/received", "[1]"));
    let got = events(&mut s);
    assert!(matches!(&got[0], Event::ConversationUpdated { conversation_id: Some(c), .. } if c == "c1"));
    assert!(matches!(&got[1], Event::ConversationArchived { conversation_id: Some(c), .. } if c == "c2"));
    assert!(matches!(&got[2], Event::ConversationUnarchived { conversation_id: Some(c), .. } if c == "c3"));
    assert!(matches!(&got[3], Event::PresenceChanged { agent_id: Some(a), .. } if a == "a1"));
    assert_eq!(
        got[4],
        Event::Other {
            name: "app/sessionReady".into(),
            data: Some(r#"{"x":[1,2]}"#.into())
        }
    );
    assert_eq!(
        got[5],
        Event::Other {
            name: "permissions/required".into(),
            data: None
        }
    );
    assert!(matches!(&got[6], Event::MessageReceived { data, conversation_id: None, .. } if data == "[1]"));
}

#[test]
fn disconnect_fails_pending_with_closed_and_reconnect_is_explicit() {
    let mut s = released_ready();
    let a = s.system_ping(1).unwrap();
    let b = s.system_ping(2).unwrap();
    sent(&mut s);
    s.handle_close(3, 1006, "gone");
    let ev = events(&mut s);
    assert_eq!(ev.len(), 3);
    for (e, id) in ev.iter().zip([&a, &b]) {
        match e {
            Event::Failed { id: got, error } => {
                assert_eq!(got, id);
                assert_eq!(error.kind(), ErrorKind::Closed);
                assert!(error.error.retryable);
            }
            other => panic!("{other:?}"),
        }
    }
    assert_eq!(
        ev[2],
        Event::Disconnected {
            code: 1006,
            reason: "gone".into()
        }
    );
    assert_eq!(s.state(), SessionState::Closed);
    assert_eq!(s.poll_timeout(), None);
    assert!(sent(&mut s).is_empty(), "no automatic reconnect");
    assert_eq!(s.system_ping(4).unwrap_err().kind(), ErrorKind::Closed);
    assert_eq!(
        s.connect(4, Credentials::AgentKey(KEY.into())).unwrap_err().kind(),
        ErrorKind::State
    );
    s.handle_close(5, 1000, "again");
    assert!(events(&mut s).is_empty());
    // A new socket: connect again, then fetch the window.
    s.handle_open(10);
    let c = s.connect(10, Credentials::AgentKey(KEY.into())).unwrap();
    assert!(![&a, &b].contains(&&c), "ids are never reused");
    s.handle_text(11, &released_response(&c, HELLO));
    assert!(matches!(&events(&mut s)[..], [Event::Connected { .. }]));
    sent(&mut s);
    s.agent_message_list(
        12,
        &AgentMessageList {
            limit: 50,
            conversation_id: None,
        },
    )
    .unwrap();
    assert_eq!(
        sent(&mut s)[0],
        json!({"jsonrpc":"2.0","type":"request","id":"aw-5","method":"agent/message/list","params":{"limit":50}})
    );
}

/// "Oldest first" is call order, also for requests made in the same millisecond (their ids'
/// text sorts `aw-10` before `aw-2`).
#[test]
fn a_close_fails_requests_of_the_same_millisecond_in_call_order() {
    let mut s = released_ready();
    let ids: Vec<String> = (0..12).map(|_| s.system_ping(5).unwrap()).collect();
    assert!(ids.contains(&"aw-2".to_string()) && ids.contains(&"aw-10".to_string()));
    s.handle_close(6, 1006, "gone");
    let failed: Vec<String> = events(&mut s)
        .iter()
        .filter_map(|e| failed_kind(e).map(|(id, _)| id))
        .collect();
    assert_eq!(failed, ids);
}

/// Requests of the same timeout made in the same millisecond time out in call order too (their
/// timers expired in the order of the ids' text, `aw-10` before `aw-2`).
#[test]
fn requests_timing_out_in_the_same_millisecond_fail_in_call_order() {
    let mut s = released_ready();
    let ids: Vec<String> = (0..12).map(|_| s.system_ping(5).unwrap()).collect();
    assert!(ids.contains(&"aw-2".to_string()) && ids.contains(&"aw-10".to_string()));
    let at = s.poll_timeout().unwrap();
    s.handle_timeout(at);
    let failed: Vec<String> = events(&mut s)
        .iter()
        .filter_map(|e| failed_kind(e).map(|(id, _)| id))
        .collect();
    assert_eq!(failed, ids);
}

#[test]
fn a_pending_connect_fails_on_close_and_on_timeout() {
    let mut s = session(GenerationChoice::Current);
    let a = s.connect(0, Credentials::AgentKey(KEY.into())).unwrap();
    assert_eq!(sent(&mut s).len(), 1, "the connect went out");
    assert_eq!(s.poll_timeout(), Some(10_000));
    s.handle_timeout(10_000);
    assert!(
        matches!(&events(&mut s)[..], [Event::ConnectFailed { id, error }] if id == &a && error.kind() == ErrorKind::Timeout)
    );
    assert_eq!(s.state(), SessionState::Open);
    s.handle_text(10_001, &format!(r#"{{"jsonrpc":"2.0","id":"{a}","result":{{}}}}"#));
    assert!(events(&mut s).is_empty(), "a late HelloOk is dropped");
    let b = s.connect(10_002, Credentials::AgentKey(KEY.into())).unwrap();
    s.handle_close(10_003, 1001, "bye");
    let ev = events(&mut s);
    assert!(matches!(&ev[0], Event::ConnectFailed { id, error } if id == &b && error.kind() == ErrorKind::Closed));
    assert!(matches!(&ev[1], Event::Disconnected { code: 1001, .. }));
}

/// The ping watch is a connected session's: pings before `Connected` (the socket open, the
/// connect in flight, one that failed) arm nothing, so `MissedPings` never comes before
/// `Connected` (the handshake timeout bounds a connect); the watch starts at `Connected`.
#[test]
fn no_missed_pings_before_connected() {
    let mut s = session_with(SessionConfig {
        ping_interval_ms: Some(1_000),
        idle_probe_ms: 0,
        handshake_timeout_ms: 5_000,
        ..SessionConfig::default()
    });
    s.handle_ping(0);
    assert_eq!(s.poll_timeout(), None, "no watch before the connect");
    s.handle_timeout(3_000);
    let early = s.connect(3_000, Credentials::AgentKey(KEY.into())).unwrap();
    s.handle_ping(3_000);
    s.handle_timeout(8_000); // the connect times out; pings stopped long before
    assert!(matches!(&events(&mut s)[..], [Event::ConnectFailed { id, .. }] if id == &early));
    s.handle_ping(8_000);
    let id = s.connect(8_000, Credentials::AgentKey(KEY.into())).unwrap();
    s.handle_timeout(12_000);
    s.handle_text(12_000, &format!(r#"{{"jsonrpc":"2.0","id":"{id}","result":{{}}}}"#));
    assert!(matches!(&events(&mut s)[..], [Event::Connected { .. }]));
    assert_eq!(s.poll_timeout(), Some(15_000), "the watch starts at Connected");
    s.handle_timeout(15_000);
    assert_eq!(events(&mut s), vec![Event::MissedPings { count: 3 }]);
}

#[test]
fn missed_pings_current_only() {
    let cfg = SessionConfig {
        ping_interval_ms: Some(1000),
        idle_probe_ms: 0,
        ..SessionConfig::default()
    };
    let mut s = current_ready(cfg.clone());
    assert_eq!(s.poll_timeout(), Some(3001));
    s.handle_ping(2000);
    assert_eq!(s.poll_timeout(), Some(5000));
    s.handle_timeout(4999);
    assert!(events(&mut s).is_empty());
    s.handle_timeout(5000);
    assert_eq!(events(&mut s), vec![Event::MissedPings { count: 3 }]);
    s.handle_timeout(100_000);
    assert!(events(&mut s).is_empty(), "reported once");
    s.handle_ping(100_000);
    s.handle_timeout(103_000);
    assert_eq!(events(&mut s), vec![Event::MissedPings { count: 3 }]);

    // Released: the server sends no pings, so none are awaited.
    let mut s = session_with(SessionConfig {
        generation: GenerationChoice::Released,
        ..cfg
    });
    let id = s.connect(0, Credentials::AgentKey(KEY.into())).unwrap();
    s.handle_text(1, &released_response(&id, HELLO));
    events(&mut s);
    assert_eq!(s.poll_timeout(), None);
    s.handle_ping(2);
    assert_eq!(s.poll_timeout(), None);
    s.handle_timeout(1_000_000);
    assert!(events(&mut s).is_empty());
}

#[test]
fn typed_methods_build_the_released_params() {
    let mut s = released_ready();
    let p = Participant::agent("b");
    s.system_ping(1).unwrap();
    s.agents_lookup(1, &["u1", "u2"]).unwrap();
    s.agents_lookup_by_name(1, &["pb"]).unwrap();
    s.agents_list(1).unwrap();
    s.conversations_create(
        1,
        &CreateConversation {
            kind: ConversationKind::Group,
            name: Some("trio".into()),
            participants: vec![p.clone()],
        },
    )
    .unwrap();
    s.conversations_list(
        1,
        &ListConversations {
            limit: Some(5),
            cursor: None,
            archived: Some(ArchivedFilter::Include),
        },
    )
    .unwrap();
    s.conversations_get(1, "c").unwrap();
    s.conversations_update(1, "c", Some("n")).unwrap();
    s.conversations_mute(1, "c", None).unwrap();
    s.conversations_unmute(1, "c").unwrap();
    s.conversations_leave(1, "c").unwrap();
    s.conversations_archive(1, "c").unwrap();
    s.conversations_unarchive(1, "c").unwrap();
    s.conversations_add_participant(1, "c", &p).unwrap();
    s.conversations_remove_participant(1, "c", &p).unwrap();
    s.messages_send(1, &SendMessage::text_to_agent("sb", "hello from A"))
        .unwrap();
    s.messages_send(
        1,
        &SendMessage {
            conversation_id: Some("c".into()),
            parts: vec![
                Part::Image {
                    url: "u".into(),
                    alt_text: Some("a".into()),
                },
                Part::File {
                    url: "u".into(),
                    name: "f".into(),
                    mime_type: None,
                    size: Some(3),
                },
            ],
            reply_to_id: Some("m".into()),
            ..SendMessage::default()
        },
    )
    .unwrap();
    s.messages_list(1, "c", Some(10)).unwrap();
    s.presence_update(1, PresenceStatus::Away).unwrap();
    s.presence_subscribe(1, &["u1"]).unwrap();
    let got: Vec<(String, Value)> = sent(&mut s)
        .into_iter()
        .map(|f| (f["method"].as_str().unwrap().to_string(), f["params"].clone()))
        .collect();
    let want = vec![
        ("system/ping", json!({})),
        ("agents/lookup", json!({"agentIds":["u1","u2"]})),
        ("agents/lookupByName", json!({"names":["pb"]})),
        ("agents/list", json!({})),
        (
            "conversations/create",
            json!({"type":"group","name":"trio","participants":[{"type":"agent","id":"b"}]}),
        ),
        ("conversations/list", json!({"limit":5,"archived":"include"})),
        ("conversations/get", json!({"conversationId":"c"})),
        ("conversations/update", json!({"conversationId":"c","name":"n"})),
        ("conversations/mute", json!({"conversationId":"c"})),
        ("conversations/unmute", json!({"conversationId":"c"})),
        ("conversations/leave", json!({"conversationId":"c"})),
        ("conversations/archive", json!({"conversationId":"c"})),
        ("conversations/unarchive", json!({"conversationId":"c"})),
        (
            "conversations/addParticipant",
            json!({"conversationId":"c","participant":{"type":"agent","id":"b"}}),
        ),
        (
            "conversations/removeParticipant",
            json!({"conversationId":"c","participant":{"type":"agent","id":"b"}}),
        ),
        (
            "messages/send",
            json!({"to":"agent:sb","parts":[{"type":"text","text":"hello from A"}]}),
        ),
        (
            "messages/send",
            json!({"conversationId":"c","parts":[{"type":"image","url":"u","altText":"a"},{"type":"file","url":"u","name":"f","size":3}],"replyToId":"m"}),
        ),
        ("messages/list", json!({"conversationId":"c","limit":10})),
        ("presence/update", json!({"status":"away"})),
        ("presence/subscribe", json!({"agentIds":["u1"]})),
    ];
    let want: Vec<(String, Value)> = want.into_iter().map(|(m, p)| (m.to_string(), p)).collect();
    assert_eq!(got, want);
}

/// `recent_messages`: one conversation's messages in either generation; the window across all
/// of them is `agent/message/list` in the current generation and `conversations/list` in the
/// released one (which has no such method), each bounded by `limit`.
#[test]
fn recent_messages_picks_the_method_of_the_generation() {
    let methods = |s: &mut Session| -> Vec<(String, Value)> {
        sent(s)
            .into_iter()
            .map(|f| (f["method"].as_str().unwrap().to_string(), f["params"].clone()))
            .collect()
    };
    let mut s = current_ready(SessionConfig::default());
    s.recent_messages(2, None, 5).unwrap();
    s.recent_messages(2, Some("c"), 7).unwrap();
    assert_eq!(
        methods(&mut s),
        vec![
            ("agent/message/list".to_string(), json!({"limit":5})),
            ("messages/list".to_string(), json!({"conversationId":"c","limit":7})),
        ]
    );
    let mut s = released_ready();
    s.recent_messages(2, None, 5).unwrap();
    s.recent_messages(2, Some("c"), 7).unwrap();
    assert_eq!(
        methods(&mut s),
        vec![
            ("conversations/list".to_string(), json!({"limit":5})),
            ("messages/list".to_string(), json!({"conversationId":"c","limit":7})),
        ]
    );
}

#[test]
fn the_smoke_capture_replayed() {
    // A's side of smoke.sample.out: our ids differ, so the server lines are re-addressed.
    let mut s = session(GenerationChoice::Released);
    let c = s.connect(0, Credentials::AgentKey(KEY.into())).unwrap();
    s.handle_text(1, &released_response(&c, HELLO));
    let send = s
        .messages_send(2, &SendMessage::text_to_agent("sb-mx641ffa", "hello from A"))
        .unwrap();
    let result = r#"{"message":{"id":"559081f9-4898-406d-9901-376f83859d30","conversationId":"000c5a76-408a-476c-864d-6bff007cf25f","senderId":"f5d5da7e-550a-482f-966b-7bab19bfa2b4","parts":[{"type":"text","text":"hello from A"}],"createdAt":"2026-12-02T12:36:49.853Z"}}"#;
    s.handle_text(3, &released_response(&send, result));
    let bad = s
        .messages_send(
            4,
            &SendMessage::text_to_conversation("000c5a76-408a-476c-864d-6bff007cf25f", ""),
        )
        .unwrap();
    s.handle_text(5, &released_error(&bad, -32602, "Invalid parameters"));
    let ev = events(&mut s);
    assert!(matches!(&ev[0], Event::Connected { .. }));
    match &ev[1] {
        Event::Response { id, result: r } => {
            assert_eq!(id, &send);
            assert_eq!(
                Message::from_wrapped(r).unwrap().id,
                "559081f9-4898-406d-9901-376f83859d30"
            );
        }
        other => panic!("{other:?}"),
    }
    assert!(matches!(&ev[2], Event::Failed { error, .. } if error.kind() == ErrorKind::Invalid));
}

/// An `auto` connect that falls back to released is never watched for pings: not from a ping
/// before it (the watch starts at `Connected`), nor at its `Connected`, nor from a ping after.
#[test]
fn auto_fallback_never_waits_for_pings() {
    let mut s = session_with(SessionConfig {
        generation: GenerationChoice::Auto,
        ping_interval_ms: Some(1000),
        idle_probe_ms: 0,
        ..SessionConfig::default()
    });
    s.handle_ping(0);
    let id = s.connect(0, Credentials::AgentKey(KEY.into())).unwrap();
    assert_eq!(s.poll_timeout(), Some(10_000), "only the handshake timer");
    s.handle_text(1, &released_error(&id, -32600, "Invalid request frame"));
    assert_eq!(s.poll_timeout(), Some(10_001), "only the handshake timer");
    s.handle_text(2, &released_response(&id, HELLO));
    assert!(matches!(&events(&mut s)[..], [Event::Connected { .. }]));
    assert_eq!(s.poll_timeout(), None);
    s.handle_ping(3);
    assert_eq!(s.poll_timeout(), None);
}

/// `auto` with a session token goes straight to released: pings while the socket still counted
/// as current (before the connect, or before a current connect that timed out) arm no watch, so
/// no `MissedPings` and no probe ping in the released generation.
#[test]
fn auto_with_a_session_token_never_watches_pings() {
    let cfg = SessionConfig {
        generation: GenerationChoice::Auto,
        ping_interval_ms: Some(1000),
        idle_probe_ms: 0,
        handshake_timeout_ms: 500,
        ..SessionConfig::default()
    };
    for timed_out_first in [false, true] {
        let mut s = session_with(cfg.clone());
        s.handle_ping(0);
        if timed_out_first {
            s.connect(0, Credentials::AgentKey(KEY.into())).unwrap();
            s.handle_timeout(500);
            assert!(matches!(&events(&mut s)[..], [Event::ConnectFailed { .. }]));
            assert_eq!(s.generation(), Generation::Current);
        }
        let id = s.connect(600, Credentials::SessionToken("t".into())).unwrap();
        assert_eq!(
            s.poll_timeout(),
            Some(1100),
            "only the handshake timer ({timed_out_first})"
        );
        sent(&mut s);
        s.handle_text(610, &released_response(&id, HELLO));
        assert!(matches!(
            &events(&mut s)[..],
            [Event::Connected {
                generation: Generation::Released,
                ..
            }]
        ));
        assert_eq!(s.poll_timeout(), None);
        s.handle_timeout(3000);
        assert!(events(&mut s).is_empty(), "{timed_out_first}");
        assert!(sent(&mut s).is_empty(), "{timed_out_first}");
    }
}

#[test]
fn the_session_is_send_and_auto_stays_released_within_a_socket() {
    fn assert_send<T: Send>() {}
    assert_send::<Session>();
    let mut s = session(GenerationChoice::Auto);
    let a = s.connect(0, Credentials::AgentKey("bad".into())).unwrap();
    s.handle_text(1, &released_error(&a, -32600, "Invalid request frame"));
    sent(&mut s);
    s.handle_text(2, &released_error(&a, -32000, "Authentication failed"));
    assert!(matches!(&events(&mut s)[..], [Event::ConnectFailed { error, .. }] if error.kind() == ErrorKind::Auth));
    // The retry on the same socket goes straight to auth/connect.
    s.connect(3, Credentials::AgentKey(KEY.into())).unwrap();
    assert_eq!(sent(&mut s)[0]["method"], "auth/connect");
    // A new socket starts again from the current handshake.
    s.handle_close(4, 1000, "");
    s.handle_open(5);
    s.connect(5, Credentials::AgentKey(KEY.into())).unwrap();
    assert_eq!(sent(&mut s)[0]["method"], "agent/network/connect");
}

/// `config()` is the configuration the session was made with (the harness endpoint reads
/// `max_in_flight` from it).
#[test]
fn the_config_is_the_one_given() {
    let s = session_with(SessionConfig {
        generation: GenerationChoice::Auto,
        request_timeout_ms: 7,
        max_in_flight: 3,
        handshake_timeout_ms: 11,
        id_prefix: "x-".into(),
        ..SessionConfig::default()
    });
    let cfg = s.config();
    assert_eq!(cfg.generation, GenerationChoice::Auto);
    assert_eq!(
        (cfg.request_timeout_ms, cfg.max_in_flight, cfg.handshake_timeout_ms),
        (7, 3, 11)
    );
    assert_eq!(cfg.id_prefix, "x-");
}

#[test]
fn auto_fallback_gets_a_full_handshake_timeout() {
    let mut s = session(GenerationChoice::Auto);
    let id = s.connect(0, Credentials::AgentKey(KEY.into())).unwrap();
    sent(&mut s);
    let timeout = s.config().handshake_timeout_ms;
    // The released server's refusal arrives late, just before the first deadline.
    let late = timeout - 1;
    s.handle_text(late, &released_error(&id, -32600, "Invalid request frame"));
    sent(&mut s);
    assert_eq!(
        s.poll_timeout(),
        Some(late + timeout),
        "the retry is timed from its own send"
    );
    s.handle_timeout(timeout + 1);
    assert!(events(&mut s).is_empty(), "the first deadline no longer applies");
    s.handle_timeout(late + timeout);
    match &events(&mut s)[..] {
        [Event::ConnectFailed { id: failed, error }] => {
            assert_eq!((failed, error.kind()), (&id, ErrorKind::Timeout));
        }
        other => panic!("{other:?}"),
    }
}

/// A socket that closes with frames still queued: their requests fail with `closed`, and the
/// frames are not sent on the next socket (where a server would act on requests already
/// reported failed: a message retried after `closed` would go out twice).
#[test]
fn frames_queued_when_the_socket_closes_are_not_sent_on_the_next() {
    let mut s = released_ready();
    let a = s.system_ping(1).unwrap();
    s.handle_close(2, 1006, "gone");
    assert!(matches!(&events(&mut s)[0], Event::Failed { id, .. } if *id == a));
    s.handle_open(3);
    assert!(sent(&mut s).is_empty(), "nothing from the last socket");
    let c = s.connect(4, Credentials::AgentKey(KEY.into())).unwrap();
    let out = sent(&mut s);
    assert_eq!(out.len(), 1);
    assert_eq!(out[0]["id"], json!(c));
    // A user close with a request queued: the close frame goes, the request does not.
    s.handle_text(5, &released_response(&c, HELLO));
    events(&mut s);
    s.system_ping(6).unwrap();
    s.close(1000, "bye");
    let out = sent(&mut s);
    assert_eq!(out.len(), 1, "{out:?}");
    assert!(out[0].get("close").is_some(), "{out:?}");
}

/// A connect that ends before its frame left takes it back: a cancelled connect sends nothing,
/// and one a close ends is `unsent`.
#[test]
fn a_connect_that_ends_before_its_frame_left_is_never_sent() {
    let mut s = session(GenerationChoice::Current);
    let a = s.connect(0, Credentials::AgentKey(KEY.into())).unwrap();
    assert!(s.cancel(&a));
    assert!(matches!(&events(&mut s)[..], [Event::ConnectFailed { error, .. }] if error.unsent));
    let b = s.connect(1, Credentials::AgentKey(KEY.into())).unwrap();
    let out = sent(&mut s);
    assert_eq!(out.len(), 1, "{out:?}");
    assert_eq!(out[0]["id"], json!(b));
    // Sent, then cancelled: not unsent.
    assert!(s.cancel(&b));
    assert!(matches!(&events(&mut s)[..], [Event::ConnectFailed { error, .. }] if !error.unsent));
    let c = s.connect(2, Credentials::AgentKey(KEY.into())).unwrap();
    s.handle_close(3, 1006, "gone");
    let ev = events(&mut s);
    assert!(
        matches!(&ev[0], Event::ConnectFailed { id, error } if *id == c && error.unsent),
        "{ev:?}"
    );
}

/// Arrays nested `n` deep.
fn nested(n: usize) -> String {
    format!("{}{}", "[".repeat(n), "]".repeat(n))
}

/// A frame nested past `max_depth` is that frame's error: the other frames of its message still
/// decode, and a response whose id can be read fails its request at once (a limit error naming
/// the depth, not a retryable timeout 30 s later).
#[test]
fn a_frame_nested_too_deep_loses_only_itself() {
    // Current: a batch of a response, a push, and a push nested 70 deep.
    let mut s = current_ready(SessionConfig::default());
    let a = s.system_ping(1).unwrap();
    sent(&mut s);
    let received = r#"{"jsonrpc":"2.0","method":"messages/received","params":{"message":{"id":"m2","conversationId":"c","senderId":"s","parts":[{"type":"text","text":"hi"}],"createdAt":"2026-01-01T00:00:00Z"}}}"#;
    let deep_push = format!(r#"{{"jsonrpc":"2.0","method":"x/other","params":{}}}"#, nested(70));
    s.handle_text(
        2,
        &format!(r#"[{{"jsonrpc":"2.0","id":"{a}","result":{{"ts":1}}}},{received},{deep_push}]"#),
    );
    let ev = events(&mut s);
    assert_eq!(ev.len(), 3, "{ev:?}");
    assert!(matches!(&ev[0], Event::Response { id, .. } if *id == a));
    assert!(matches!(&ev[1], Event::MessageReceived { .. }), "{:?}", ev[1]);
    assert!(matches!(&ev[2], Event::Diagnostic(e) if e.kind() == ErrorKind::Limit));
    assert_eq!(s.in_flight(), 0);

    // Released: concatenated frames, the same.
    let mut s = released_ready();
    let b = s.system_ping(1).unwrap();
    sent(&mut s);
    let deep_event = format!(
        r#"{{"jsonrpc":"2.0","type":"event","event":"x/other","data":{}}}"#,
        nested(70)
    );
    s.handle_text(2, &format!("{}{RECEIVED}{deep_event}", released_response(&b, "{}")));
    let ev = events(&mut s);
    assert_eq!(ev.len(), 3, "{ev:?}");
    assert!(matches!(&ev[0], Event::Response { id, .. } if *id == b));
    assert!(matches!(&ev[1], Event::MessageReceived { .. }));
    assert!(matches!(&ev[2], Event::Diagnostic(e) if e.kind() == ErrorKind::Limit));
}

#[test]
fn a_response_nested_too_deep_fails_its_request_at_once() {
    let deep = nested(70);
    let cases = [
        (true, format!(r#"{{"jsonrpc":"2.0","id":"ID","result":{deep}}}"#)),
        (
            true,
            format!(r#"{{"jsonrpc":"2.0","id":"ID","error":{{"code":1,"message":"m","data":{deep}}}}}"#),
        ),
        (false, released_response("ID", &deep)),
        // In a batch, after a frame that decodes.
        (
            true,
            format!(r#"[{{"jsonrpc":"2.0","method":"x/y"}},{{"jsonrpc":"2.0","id":"ID","result":{deep}}}]"#),
        ),
    ];
    for (is_current, text) in &cases {
        let mut s = if *is_current {
            current_ready(SessionConfig::default())
        } else {
            released_ready()
        };
        let id = s.system_ping(1).unwrap();
        let other = s.system_ping(1).unwrap();
        sent(&mut s);
        s.handle_text(2, &text.replace("ID", &id));
        let ev = events(&mut s);
        let failed = ev.iter().find_map(|e| match e {
            Event::Failed { id, error } => Some((id.clone(), error.clone())),
            _ => None,
        });
        let (failed_id, error) = failed.unwrap_or_else(|| panic!("{text}: {ev:?}"));
        assert_eq!(failed_id, id, "{text}");
        assert_eq!(error.kind(), ErrorKind::Limit, "{text}");
        assert!(!error.error.retryable, "{text}");
        assert!(error.error.message.contains("64"), "{text}: {}", error.error.message);
        // The other request is still waiting for its own answer.
        assert_eq!(s.in_flight(), 1, "{text}");
        s.handle_timeout(40_000);
        let late = events(&mut s);
        assert_eq!(failed_kind(&late[0]), Some((other, ErrorKind::Timeout)), "{text}");
        assert_eq!(late.len(), 1, "{text}: {late:?}");
    }
    // A deep request or event that carries a pending id answers nothing.
    let mut s = current_ready(SessionConfig::default());
    let id = s.system_ping(1).unwrap();
    s.handle_text(
        2,
        &format!(r#"{{"jsonrpc":"2.0","id":"{id}","method":"x","params":{deep}}}"#),
    );
    assert!(matches!(&events(&mut s)[..], [Event::Diagnostic(e)] if e.kind() == ErrorKind::Limit));
    assert_eq!(s.in_flight(), 1);
}

#[test]
fn a_response_with_a_key_given_twice_fails_its_request_at_once() {
    for (is_current, text) in [
        (true, r#"{"jsonrpc":"2.0","id":"ID","result":{},"result":{}}"#),
        (
            false,
            r#"{"jsonrpc":"2.0","type":"response","id":"ID","result":{},"result":{}}"#,
        ),
        (
            false,
            r#"{"jsonrpc":"2.0","type":"response","type":"response","id":"ID","result":{}}"#,
        ),
    ] {
        let mut s = if is_current {
            current_ready(SessionConfig::default())
        } else {
            released_ready()
        };
        let id = s.system_ping(1).unwrap();
        sent(&mut s);
        s.handle_text(2, &text.replace("ID", &id));
        let ev = events(&mut s);
        assert_eq!(ev.len(), 2, "{text}: {ev:?}");
        assert!(matches!(&ev[0], Event::Diagnostic(e) if e.kind() == ErrorKind::Decode));
        let Event::Failed { id: failed, error } = &ev[1] else {
            panic!("{text}: {ev:?}")
        };
        assert_eq!((failed, error.kind()), (&id, ErrorKind::Decode), "{text}");
        assert!(error.error.message.contains("appears twice"), "{}", error.error.message);
        assert_eq!(s.in_flight(), 0);
    }
    // A duplicated `id` names no request: which one the server meant cannot be known.
    let mut s = current_ready(SessionConfig::default());
    let id = s.system_ping(1).unwrap();
    s.handle_text(
        2,
        &format!(r#"{{"jsonrpc":"2.0","id":"{id}","id":"{id}","result":{{}}}}"#),
    );
    assert!(matches!(&events(&mut s)[..], [Event::Diagnostic(_)]));
    assert_eq!(s.in_flight(), 1);
}

/// An error message quotes at most about 512 bytes of what the server sent (cut on a character
/// boundary), however long the value.
#[test]
fn error_messages_quote_a_bounded_part_of_what_the_server_sent() {
    // Two- and three-byte characters, so that a cut lands inside one unless it is careful.
    let big = "é€x".repeat(100_000);
    let short = |e: &agentwire_moltzap::MoltZapError, what: &str| {
        let m = &e.error.message;
        assert!(m.len() <= 1024, "{what}: a message of {} bytes", m.len());
        assert!(m.contains('…'), "{what}: {m}");
    };
    // A code that is not an integer: the message names it and does not quote it.
    let mut s = current_ready(SessionConfig::default());
    let id = s.system_ping(1).unwrap();
    s.handle_text(
        2,
        &format!(r#"{{"jsonrpc":"2.0","id":"{id}","error":{{"code":"{big}","message":"m"}}}}"#),
    );
    let ev = events(&mut s);
    let [Event::Diagnostic(d), Event::Failed { error, .. }] = &ev[..] else {
        panic!("{ev:?}")
    };
    assert!(d.error.message.len() <= 1024, "diagnostic: {}", d.error.message);
    assert_eq!(
        error.error.message,
        format!("`error` `code` must be an integer that fits 64 bits (id {id})")
    );
    // A released `type` that is none of the three.
    let mut s = released_ready();
    s.handle_text(2, &format!(r#"{{"jsonrpc":"2.0","type":"{big}","event":"e"}}"#));
    let ev = events(&mut s);
    let [Event::Diagnostic(d)] = &ev[..] else {
        panic!("{ev:?}")
    };
    short(d, "type");
    assert!(
        d.error.message.contains("not request, response or event"),
        "{}",
        d.error.message
    );
    // A request from the server, its method named.
    s.handle_text(
        2,
        &format!(r#"{{"jsonrpc":"2.0","type":"request","id":"s","method":"{big}"}}"#),
    );
    let ev = events(&mut s);
    let [Event::Diagnostic(d)] = &ev[..] else {
        panic!("{ev:?}")
    };
    short(d, "request");
    // A HelloOk's protocol version.
    let mut s = session(GenerationChoice::Released);
    let id = s.connect(0, Credentials::AgentKey(KEY.into())).unwrap();
    sent(&mut s);
    s.handle_text(1, &released_response(&id, &format!(r#"{{"protocolVersion":"{big}"}}"#)));
    let ev = events(&mut s);
    let Some(Event::ConnectFailed { error, .. }) = ev.first() else {
        panic!("{ev:?}")
    };
    short(error, "version");
    // A message part of an unknown type, in serde's array form, read by the typed reader.
    let payload = format!(
        r#"{{"message":{{"id":"m","conversationId":"c","senderId":"s","parts":[["{big}",1]],"createdAt":"t"}}}}"#
    );
    let e = Message::from_wrapped(&payload).expect_err("a part with fields it has not");
    short(&e, "part");
}

// ---- liveness: a silent connection is found dead (docs/protocols/moltzap.md, "Liveness") ----

/// Runs every timer due up to `until`, in order.
fn run_until(s: &mut Session, until: u64) {
    while let Some(at) = s.poll_timeout().filter(|at| *at <= until) {
        s.handle_timeout(at);
    }
}

/// The methods of the requests sent, with their ids.
fn requests(frames: &[Value]) -> Vec<(String, String)> {
    frames
        .iter()
        .filter_map(|f| Some((f["id"].as_str()?.to_string(), f["method"].as_str()?.to_string())))
        .collect()
}

/// The server vanished without a close (NAT rebinding, a laptop that slept): with the defaults a
/// listening session probes after 60 s without a frame and, with no answer within the request
/// timeout, closes: `Disconnected` 1006, not `Ready` forever. (From the time review's
/// `a_silent_connection_is_eventually_declared_dead_with_the_defaults`.)
#[test]
fn a_silent_connection_is_declared_dead_with_the_defaults() {
    let mut s = current_ready(SessionConfig::default());
    assert_eq!(s.poll_timeout(), Some(60_001), "a listening session is watched");
    run_until(&mut s, 60_001);
    let probe = requests(&sent(&mut s));
    assert_eq!(probe.len(), 1);
    assert_eq!(probe[0].1, "system/ping");
    assert!(events(&mut s).is_empty(), "the probe is the session's own: no event");
    assert_eq!(s.in_flight(), 0, "the probe takes no max_in_flight slot");
    let call = s.system_ping(70_000).unwrap();
    sent(&mut s);
    run_until(&mut s, 90_000);
    assert_eq!(s.state(), SessionState::Ready);
    run_until(&mut s, 90_001);
    assert_eq!(s.state(), SessionState::Closed);
    let ev = events(&mut s);
    assert!(
        matches!(&ev[..], [Event::Failed { id, error }, Event::Disconnected { code: 1006, reason }]
            if id == &call && error.kind() == ErrorKind::Closed && error.error.retryable
                && reason == "no frame from the server for 90000 ms (a system/ping went unanswered)"),
        "{ev:?}"
    );
    let frames = sent(&mut s);
    assert_eq!(frames.len(), 1);
    assert!(
        frames[0]["close"].as_str().unwrap().contains("code: 1000"),
        "{frames:?}"
    );
    assert_eq!(s.poll_timeout(), None);

    // The review's shape: requests timing out one after the other, a day of silence.
    let mut s = current_ready(SessionConfig::default());
    let mut t = 1;
    for _ in 0..10 {
        t += 60_000;
        if s.state() != SessionState::Ready {
            break;
        }
        s.call(t, "system/ping", Some("{}")).unwrap();
        sent(&mut s);
        run_until(&mut s, t + 30_000);
    }
    run_until(&mut s, 86_400_000);
    assert_eq!(s.state(), SessionState::Closed);
    assert!(matches!(
        events(&mut s).last(),
        Some(Event::Disconnected { code: 1006, .. })
    ));
}

/// Any frame counts as life, the probe's answer (even an error) is consumed quietly, and the
/// watch goes on from the last frame heard, in both generations.
#[test]
fn a_quiet_live_connection_is_probed_and_kept() {
    let mut s = current_ready(SessionConfig::default());
    run_until(&mut s, 60_001);
    let (probe, _) = requests(&sent(&mut s)).remove(0);
    s.handle_text(
        60_050,
        &format!(r#"{{"jsonrpc":"2.0","id":"{probe}","result":{{"ts":"x"}}}}"#),
    );
    run_until(&mut s, 120_049);
    assert!(events(&mut s).is_empty());
    assert!(sent(&mut s).is_empty(), "60 s from the last frame: not yet");
    assert_eq!(s.state(), SessionState::Ready);
    // A push also counts.
    s.handle_text(
        100_000,
        r#"{"jsonrpc":"2.0","method":"presence/changed","params":{"agentId":"a","status":"online"}}"#,
    );
    events(&mut s);
    run_until(&mut s, 159_999);
    assert!(sent(&mut s).is_empty());
    run_until(&mut s, 160_000);
    let (probe, method) = requests(&sent(&mut s)).remove(0);
    assert_eq!(method, "system/ping");
    // An error answer is an answer: the peer is there.
    s.handle_text(
        160_001,
        &format!(r#"{{"jsonrpc":"2.0","id":"{probe}","error":{{"code":-32601,"message":"no"}}}}"#),
    );
    run_until(&mut s, 200_000);
    assert!(events(&mut s).is_empty(), "the probe's answer is consumed");
    assert_eq!(s.state(), SessionState::Ready);
    // A WebSocket ping counts too (the driver reports it).
    s.handle_ping(210_000);
    run_until(&mut s, 269_999);
    assert!(sent(&mut s).is_empty());

    // Released: the server sends no pings; the probe is a released frame.
    let mut s = released_ready();
    sent(&mut s);
    run_until(&mut s, 60_001);
    let frames = sent(&mut s);
    assert_eq!(frames.len(), 1, "{frames:?}");
    assert_eq!(frames[0]["type"], "request");
    assert_eq!(frames[0]["method"], "system/ping");
    let mut probe = frames[0]["id"].as_str().unwrap().to_string();
    let mut at = 60_500;
    // Each quiet minute: a probe, sent, and answered here half a second later.
    for _ in 0..16 {
        s.handle_text(at, &released_response(&probe, r#"{"ts":"x"}"#));
        run_until(&mut s, at + 60_000);
        let frames = sent(&mut s);
        assert_eq!(frames.len(), 1, "{frames:?}");
        assert_eq!(
            (&frames[0]["type"], &frames[0]["method"]),
            (&json!("request"), &json!("system/ping"))
        );
        probe = frames[0]["id"].as_str().unwrap().to_string();
        at += 60_000;
    }
    assert_eq!(s.state(), SessionState::Ready);
    // One left unanswered: the released session ends as the current one does.
    run_until(&mut s, at + 60_000);
    assert_eq!(s.state(), SessionState::Closed);
    assert!(matches!(
        events(&mut s).last(),
        Some(Event::Disconnected { code: 1006, .. })
    ));
}

/// `idle_probe_ms: 0` turns the watch off: nothing is armed while listening.
#[test]
fn the_idle_probe_can_be_turned_off() {
    let s = current_ready(SessionConfig {
        idle_probe_ms: 0,
        ..SessionConfig::default()
    });
    assert_eq!(s.poll_timeout(), None);
}

/// A session whose request ids outgrew `max_id_len` (ids `a1`..`a9` fit a bound of 2, `a10`
/// does not) after 8 requests answered.
fn ids_outgrown(cfg: SessionConfig) -> Session {
    let mut cfg = SessionConfig {
        id_prefix: "a".into(),
        ..cfg
    };
    cfg.decode.max_id_len = 2;
    let mut s = current_ready(cfg);
    for _ in 2..10 {
        let id = s.system_ping(1).unwrap();
        sent(&mut s);
        s.handle_text(1, &format!(r#"{{"jsonrpc":"2.0","id":"{id}","result":{{}}}}"#));
    }
    assert_eq!(events(&mut s).len(), 8);
    assert_eq!(s.system_ping(1).unwrap_err().kind(), ErrorKind::Invalid);
    s
}

/// A probe the send bounds refuse (its id is over `max_id_len`) is not sent, and the watch goes
/// on an idle period later; with the idle probe off (a probe after missed pings), no timer is
/// left.
#[test]
fn a_probe_refused_by_the_send_bounds_keeps_the_idle_watch() {
    let mut s = ids_outgrown(SessionConfig::default());
    assert_eq!(s.poll_timeout(), Some(60_001));
    s.handle_timeout(60_001);
    assert!(sent(&mut s).is_empty());
    assert!(events(&mut s).is_empty());
    assert_eq!(s.poll_timeout(), Some(120_001), "the watch goes on");
    assert_eq!(s.state(), SessionState::Ready);

    let mut s = ids_outgrown(SessionConfig {
        ping_interval_ms: Some(1000),
        idle_probe_ms: 0,
        ..SessionConfig::default()
    });
    assert_eq!(s.poll_timeout(), Some(3001));
    s.handle_timeout(3001);
    assert_eq!(events(&mut s), vec![Event::MissedPings { count: 3 }]);
    assert!(sent(&mut s).is_empty());
    assert_eq!(s.poll_timeout(), None, "no idle watch when it is off");
}

/// A probe held behind a long write (not polled yet) is not counted as unanswered: the wait
/// starts again until it has left.
#[test]
fn a_probe_not_yet_sent_is_not_counted_as_unanswered() {
    let mut s = current_ready(SessionConfig::default());
    run_until(&mut s, 60_001);
    run_until(&mut s, 90_001);
    assert_eq!(s.state(), SessionState::Ready, "the probe never left");
    assert_eq!(s.poll_timeout(), Some(120_001));
    sent(&mut s);
    run_until(&mut s, 120_001);
    assert_eq!(s.state(), SessionState::Closed);
}

/// A socket backed up (nothing polled) while the server keeps talking: each idle period's probe
/// takes back the last one's unsent frame, so one `system/ping` waits, not one per period.
/// (Before: 100 queued after 100 idle periods.)
#[test]
fn probes_do_not_pile_up_while_nothing_is_polled() {
    let mut s = current_ready(SessionConfig {
        idle_probe_ms: 1000,
        ..SessionConfig::default()
    });
    let push = r#"{"jsonrpc":"2.0","method":"presence/changed","params":{"agentId":"a","status":"online"}}"#;
    for _ in 0..100 {
        let at = s.poll_timeout().unwrap();
        s.handle_timeout(at);
        s.handle_text(at + 1, push);
    }
    events(&mut s);
    let frames = sent(&mut s);
    assert_eq!(requests(&frames).len(), 1, "{} frames", frames.len());
    assert_eq!(requests(&frames)[0].1, "system/ping");
    assert_eq!(s.state(), SessionState::Ready);
}

/// Three missed pings report `MissedPings` and start a probe: an unanswered one closes the
/// session, an answered one keeps it. (From the time review's
/// `missed_pings_lead_to_a_close_or_keep_watching`.)
#[test]
fn missed_pings_lead_to_a_probe_then_a_close_or_keep_watching() {
    let cfg = SessionConfig {
        ping_interval_ms: Some(30_000),
        idle_probe_ms: 0,
        ..SessionConfig::default()
    };
    let mut s = current_ready(cfg.clone());
    run_until(&mut s, 90_001);
    assert_eq!(events(&mut s), vec![Event::MissedPings { count: 3 }]);
    assert_eq!(requests(&sent(&mut s))[0].1, "system/ping");
    assert!(s.poll_timeout().is_some(), "still watching");
    run_until(&mut s, 120_001);
    assert_eq!(s.state(), SessionState::Closed);
    assert!(matches!(&events(&mut s)[..], [Event::Disconnected { code: 1006, .. }]));

    let mut s = current_ready(cfg);
    run_until(&mut s, 90_001);
    events(&mut s);
    let (probe, _) = requests(&sent(&mut s)).remove(0);
    s.handle_text(90_010, &format!(r#"{{"jsonrpc":"2.0","id":"{probe}","result":{{}}}}"#));
    run_until(&mut s, 1_000_000);
    assert_eq!(s.state(), SessionState::Ready);
    assert!(events(&mut s).is_empty());
    // The next ping re-arms the watch.
    s.handle_ping(1_000_000);
    run_until(&mut s, 1_090_000);
    assert_eq!(events(&mut s), vec![Event::MissedPings { count: 3 }]);
}

/// A late `handle_timeout` past both the probe's deadline and a later ping deadline: the
/// probe's silence ends the session first, and the ping watch due in the same call is gone with
/// it. It reported `MissedPings` after `Disconnected` and queued a second probe, with a timer,
/// on the closed session. Found by the interleaving explorer (tests/interleave.rs).
#[test]
fn a_late_timeout_past_the_probe_and_the_ping_watch_ends_with_disconnected() {
    let mut s = current_ready(SessionConfig {
        ping_interval_ms: Some(40_000),
        ..SessionConfig::default()
    });
    // Connected at 1: the idle probe leaves at 60 001, the ping watch is due at 120 001.
    s.handle_timeout(60_001);
    assert_eq!(requests(&sent(&mut s))[0].1, "system/ping");
    // Nothing comes; the driver wakes late (a hidden tab), past the probe's 90 001 and 120 001.
    s.handle_timeout(130_000);
    let ev = events(&mut s);
    assert!(matches!(&ev[..], [Event::Disconnected { code: 1006, .. }]), "{ev:?}");
    let frames = sent(&mut s);
    assert_eq!(frames.len(), 1, "only the close: {frames:?}");
    assert!(frames[0].get("close").is_some(), "{frames:?}");
    assert_eq!(s.poll_timeout(), None);
}

/// An `id: null` error while the probe is out may be the probe's: it fails no request.
#[test]
fn an_id_null_error_with_a_probe_out_fails_no_request() {
    let mut s = current_ready(SessionConfig::default());
    run_until(&mut s, 60_001);
    sent(&mut s);
    let call = s.system_ping(60_002).unwrap();
    sent(&mut s);
    s.handle_text(
        60_003,
        r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid request"}}"#,
    );
    let ev = events(&mut s);
    assert!(matches!(&ev[..], [Event::Diagnostic(_)]), "{ev:?}");
    assert_eq!(s.in_flight(), 1, "{call} still waits");
}
