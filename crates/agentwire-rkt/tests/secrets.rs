//! Credentials stay out of `Debug`: a config or an event logged with `{:?}` shows none.

use agentwire_rkt::reference::{Connection, ReferenceConfig};
use agentwire_rkt::{AuthBody, AuthOkBody, ClientConfig, Inbound, InboundKind, Message, MessageType, Priority};

const SECRET: &str = "SECRET-0123456789";

fn shown(value: &impl std::fmt::Debug) -> String {
    let text = format!("{value:?}");
    assert!(!text.contains(SECRET), "{text}");
    text
}

#[test]
fn debug_hides_keys_and_tokens() {
    let cfg = ClientConfig {
        authorization: Some(format!("Bearer {SECRET}")),
        ..ClientConfig::default()
    };
    let text = shown(&cfg);
    assert!(
        text.contains("authorization: Some(<redacted>)") && text.contains("keepalive"),
        "{text}"
    );
    assert!(shown(&ClientConfig::default()).contains("authorization: None"));
    // The session shows where it is, never its configuration.
    let session = agentwire_rkt::ClientSession::new(cfg.clone(), Box::new(agentwire_core::SeededEntropy::new(1)));
    assert!(shown(&session).starts_with("ClientSession { state: Idle"));

    let reference = ReferenceConfig {
        api_keys: vec![SECRET.into(), format!("{SECRET}-2")],
        ..ReferenceConfig::default()
    };
    assert!(shown(&reference).contains("api_keys: [<redacted>; 2]"));

    let auth = AuthBody::Bearer {
        token: SECRET.into(),
        scopes: vec!["read".into()],
    };
    let inbound = Inbound {
        id: "m1".into(),
        kind: InboundKind::Auth(auth),
        from: None,
        to: None,
        authorization: Some(format!("Bearer {SECRET}")),
        priority: Priority::Normal,
        ttl_s: None,
    };
    let text = shown(&inbound);
    assert!(text.contains("read") && text.contains("m1"), "{text}");
    let ok = AuthOkBody {
        session_token: SECRET.into(),
        scopes: vec![],
        expires_in: Some(60),
    };
    assert!(shown(&ok).contains("expires_in: Some(60)"));
    let did = AuthBody::Did {
        did: "did:example:1".into(),
        scopes: vec![],
    };
    assert!(shown(&did).contains("did:example:1"));
}

#[test]
fn a_message_hides_its_authorization_and_its_auth_body() {
    for kind in [MessageType::Auth, MessageType::AuthOk, MessageType::Request] {
        let mut m = Message::new(kind);
        m.headers.set("Message-ID", "m1");
        m.headers.set("Authorization", format!("Bearer {SECRET}"));
        m.body = Some(match kind {
            MessageType::Request => r#"{"intent":"echo"}"#.to_owned(),
            _ => format!(r#"{{"scheme":"bearer","token":"{SECRET}"}}"#),
        });
        let text = shown(&m);
        assert!(text.contains("m1"), "{text}");
        if kind == MessageType::Request {
            assert!(text.contains("echo"), "{text}");
        }
    }
    assert!(shown(&Connection::new(&ReferenceConfig::default())).contains("token: None"));
}
