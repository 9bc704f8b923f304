//! Forward compatibility (review A, 2026-12-07): a server newer than the client.
use agentwire_core::{ErrorKind, Outgoing};
use agentwire_moltzap::{Credentials, Event, GenerationChoice, Session, SessionConfig};

const KEY: &str = "moltzap_agent_ca5f41b0a56c4169_9d8d82a1e90c89f40b71eb74d4d4d57cfce54c354f90e03f";

fn drain(s: &mut Session) -> (Vec<String>, Vec<Event>) {
    let mut t = Vec::new();
    while let Some(o) = s.poll_transmit() {
        t.push(match o {
            Outgoing::Text(x) => x,
            other => format!("{other:?}"),
        });
    }
    (t, std::iter::from_fn(|| s.poll_event()).collect())
}

fn ready(generation: GenerationChoice, hello: &str) -> Session {
    let mut s = Session::new(SessionConfig {
        generation,
        ..SessionConfig::default()
    });
    s.handle_open(0);
    let id = s.connect(0, Credentials::AgentKey(KEY.into())).unwrap();
    drain(&mut s);
    let released = generation == GenerationChoice::Released;
    let ty = if released { r#""type":"response","# } else { "" };
    s.handle_text(
        1,
        &format!(r#"{{"jsonrpc":"2.0",{ty}"id":"{id}","result":{hello},"extra":1}}"#),
    );
    let (_, ev) = drain(&mut s);
    assert!(matches!(ev[..], [Event::Connected { .. }]), "{ev:?}");
    s
}

/// Sound: unknown keys in frames and in the HelloOk, unknown notification names and unknown
/// codes pass, the latter typed `remote` with code and tag kept.
#[test]
fn sound_unknown_keys_names_and_codes() {
    let mut s = ready(GenerationChoice::Current, r#"{"features":["x"]}"#);
    s.handle_text(
        2,
        r#"{"jsonrpc":"2.0","method":"app/sessionReady","params":{"a":1},"trace":"t"}"#,
    );
    let (_, ev) = drain(&mut s);
    assert!(
        matches!(&ev[..], [Event::Other { name, .. }] if name == "app/sessionReady"),
        "{ev:?}"
    );
    let id = s.call(3, "agent/new/thing", Some("{}")).unwrap();
    drain(&mut s);
    s.handle_text(
        4,
        &format!(r#"{{"jsonrpc":"2.0","id":"{id}","error":{{"code":-32050,"message":"m","_tag":"BrandNew","x":1}}}}"#),
    );
    let (_, ev) = drain(&mut s);
    let [Event::Failed { error, .. }] = &ev[..] else {
        panic!("{ev:?}")
    };
    assert_eq!((error.kind(), error.error.retryable), (ErrorKind::Remote, false));
    assert_eq!(error.tag.as_deref(), Some("BrandNew"));
    assert_eq!(error.error.code, Some(-32050));
}

/// Released generation: a released server one series newer (its HelloOk says "2026.430.0"; the
/// spec observed server-core 2026.430.0 saying "2026.425.3", and "the server does not compare
/// min/maxProtocol", moltzap-released-2026.425.md:115) is refused after it has authenticated:
/// `ConnectFailed` kind `version` and a close. Recorded: this is the stated policy (only
/// `2026.425.x`), and the error is clear; listed so the ground is known covered.
#[test]
fn recorded_a_newer_released_series_is_refused_clearly() {
    let mut s = Session::new(SessionConfig {
        generation: GenerationChoice::Released,
        ..SessionConfig::default()
    });
    s.handle_open(0);
    let id = s.connect(0, Credentials::AgentKey(KEY.into())).unwrap();
    drain(&mut s);
    s.handle_text(
        1,
        &format!(r#"{{"jsonrpc":"2.0","type":"response","id":"{id}","result":{{"protocolVersion":"2026.430.0","agentId":"a"}}}}"#),
    );
    let (_, ev) = drain(&mut s);
    assert!(
        matches!(&ev[0], Event::ConnectFailed { error, .. } if error.kind() == ErrorKind::Version && error.error.message.contains("2026.430.0")),
        "{ev:?}"
    );
}

/// Sound: what another serializer may write: escaped characters in names and keys (`\/` as
/// PHP writes it, `\u00xx`), keys in any order, pretty-printed frames; a released event of an
/// unknown name is a generic event.
#[test]
fn sound_serializer_variants() {
    let mut s = ready(GenerationChoice::Current, "{}");
    s.handle_text(
        2,
        "{\n  \"params\": {\"\\u006dessage\": {\"id\": \"m1\", \"conversationId\": \"c1\", \"senderId\": \"s1\", \"parts\": [], \"createdAt\": \"x\"}},\n  \"method\": \"messages\\/received\",\n  \"jsonrpc\": \"2.0\"\n}",
    );
    let (_, ev) = drain(&mut s);
    assert!(
        matches!(&ev[..], [Event::MessageReceived { conversation_id: Some(c), .. }] if c == "c1"),
        "{ev:?}"
    );
    let mut r = ready(GenerationChoice::Released, r#"{"protocolVersion":"2026.425.3"}"#);
    r.handle_text(
        2,
        r#"{"data":{"x":1},"event":"app/sessionReady","type":"event","jsonrpc":"2.0","new":1}"#,
    );
    let (_, ev) = drain(&mut r);
    assert!(
        matches!(&ev[..], [Event::Other { name, .. }] if name == "app/sessionReady"),
        "{ev:?}"
    );
}

/// Current generation: errors are named by `_tag` (moltzap-transport.md:33-34: "replies with an
/// error whose `_tag` is \"Unauthorized\""; the code is not specified), so a `_tag` this client
/// does not know is `remote`, not retryable, its code, tag and data kept (review A). It fell back
/// to the *released* generation's code table: a new tagged error on JSON-RPC's generic
/// server-error code -32000 was `auth`, as if the agent key were refused, and on -32004
/// `rate_limited`, retryable. Without a `_tag` the code still decides, in either generation.
#[test]
fn an_unknown_tag_is_remote_whatever_its_code() {
    let mut s = ready(GenerationChoice::Current, "{}");
    for (code, tag) in [(-32000, "QuotaExceeded"), (-32004, "ConversationLocked")] {
        let id = s.call(3, "conversations/list", Some("{}")).unwrap();
        drain(&mut s);
        s.handle_text(
            4,
            &format!(
                r#"{{"jsonrpc":"2.0","id":"{id}","error":{{"code":{code},"message":"m","_tag":"{tag}","data":{{"n":1}}}}}}"#
            ),
        );
        let (_, ev) = drain(&mut s);
        let [Event::Failed { error, .. }] = &ev[..] else {
            panic!("{ev:?}")
        };
        assert_eq!(
            (error.kind(), error.error.retryable),
            (ErrorKind::Remote, false),
            "{code} {tag}: {error:?}"
        );
        assert_eq!(
            (error.code(), error.tag.as_deref(), error.name.as_deref()),
            (Some(code), Some(tag), Some(tag))
        );
        assert_eq!(error.data.as_deref(), Some(r#"{"n":1}"#));
    }
    // A known tag names its row, whatever the code; no tag: the code's row.
    for (code, tag, kind) in [
        (-32000, Some("RateLimited"), ErrorKind::RateLimited),
        (-32099, Some("Unauthorized"), ErrorKind::Auth),
        (-32004, None, ErrorKind::RateLimited),
        (-32000, None, ErrorKind::Auth),
    ] {
        let id = s.call(3, "conversations/list", Some("{}")).unwrap();
        drain(&mut s);
        let tag_key = tag.map(|t| format!(r#","_tag":"{t}""#)).unwrap_or_default();
        s.handle_text(
            4,
            &format!(r#"{{"jsonrpc":"2.0","id":"{id}","error":{{"code":{code},"message":"m"{tag_key}}}}}"#),
        );
        let (_, ev) = drain(&mut s);
        let [Event::Failed { error, .. }] = &ev[..] else {
            panic!("{ev:?}")
        };
        assert_eq!(error.kind(), kind, "{code} {tag:?}: {error:?}");
    }
}
