//! Values the caller gives for headers (`To`, `From`, `User-Agent`, `Capabilities`): one the
//! decoder would refuse (a control character but tab, CR and LF included, or DEL; a comma
//! inside one capability) is refused `invalid`, naming the field, before anything is written.
use agentwire_core::{ErrorKind, Outgoing, SeededEntropy};
use agentwire_rkt::reference::ReferenceConfig;
use agentwire_rkt::*;

/// Values no header can carry: NUL, an ANSI escape, LF, CR, DEL.
const BAD: [&str; 5] = ["agent\0x", "ua\x1b[31m", "a\nInjected: yes", "a\rb", "a\x7f"];

fn client(cfg: ClientConfig) -> ClientSession {
    ClientSession::new(cfg, Box::new(SeededEntropy::new(7)))
}

fn texts(c: &mut ClientSession) -> Vec<String> {
    std::iter::from_fn(|| c.poll_transmit())
        .filter_map(|o| o.as_text().map(str::to_owned))
        .collect()
}

fn assert_invalid(e: &RktError, field: &str) {
    assert_eq!(e.kind(), ErrorKind::Invalid, "{e}");
    assert!(e.error.message.starts_with(&format!("{field} holds ")), "{e}");
}

#[test]
fn request_and_pay_refuse_a_recipient_no_header_can_carry() {
    let mut c = client(ClientConfig::default());
    c.handle_open(0);
    let hello = decode(&texts(&mut c)[0], usize::MAX).unwrap();
    let ack = format!(
        "RKT/1.0 HELLO_ACK\nVersion: 1\nMessage-ID: a\nReply-To: {}\nSession-ID: s\nTimestamp: 2026-06-28T12:00:00Z\n\n{{\"agreed_version\":1,\"session_timeout\":300}}",
        hello.message_id()
    );
    c.handle_text(0, &ack);
    assert_eq!(c.state(), ClientState::Ready);
    for bad in BAD {
        let opts = RequestOptions {
            to: Some(bad.into()),
            ..Default::default()
        };
        assert_invalid(&c.request(0, "echo", None, opts).unwrap_err(), "to");
        assert_invalid(&c.pay(0, 1.0, "RKTT", None, Some(bad)).unwrap_err(), "recipient");
        assert_eq!(c.in_flight(), 0, "{bad:?}");
        assert!(texts(&mut c).is_empty(), "{bad:?}: nothing written");
    }
    // A tab and any non-ASCII character are carried as they are, and decode back.
    let to = "agent\tx \u{e9}\u{85}";
    let opts = RequestOptions {
        to: Some(to.into()),
        ..Default::default()
    };
    c.request(0, "echo", None, opts).unwrap();
    c.pay(0, 1.0, "RKTT", None, Some(to)).unwrap();
    let sent = texts(&mut c);
    assert_eq!(sent.len(), 2);
    for text in sent {
        assert_eq!(decode(&text, usize::MAX).unwrap().header("To"), Some(to), "{text}");
    }
}

#[test]
fn a_client_configuration_with_a_header_no_header_can_carry_is_refused_at_open() {
    let cases = BAD.iter().flat_map(|bad| {
        [
            (
                ClientConfig {
                    from: Some(bad.to_string()),
                    ..Default::default()
                },
                "from".to_string(),
            ),
            (
                ClientConfig {
                    user_agent: bad.to_string(),
                    ..Default::default()
                },
                "user_agent".to_string(),
            ),
            (
                ClientConfig {
                    capabilities: vec!["weather".into(), bad.to_string()],
                    ..Default::default()
                },
                "capabilities[1]".to_string(),
            ),
        ]
    });
    for (cfg, field) in cases {
        assert_invalid(&cfg.check().unwrap_err(), &field);
        let mut c = client(cfg);
        c.handle_open(0);
        let events: Vec<_> = std::iter::from_fn(|| c.poll_event()).collect();
        match events.as_slice() {
            [ClientEvent::Error(e), ClientEvent::Closed { code: 1000, .. }] => assert_invalid(e, &field),
            other => panic!("{field}: {other:?}"),
        }
        assert!(texts(&mut c).is_empty(), "{field}: no HELLO");
    }
}

#[test]
fn a_capability_with_a_comma_is_refused() {
    let cfg = ClientConfig {
        capabilities: vec!["weather,forecast".into()],
        ..Default::default()
    };
    let e = cfg.check().unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Invalid);
    assert!(e.error.message.starts_with("capabilities[0] holds a comma"), "{e}");
    let server = ServerConfig {
        capabilities: vec!["a,b".into()],
        ..Default::default()
    };
    assert!(server
        .check()
        .unwrap_err()
        .error
        .message
        .starts_with("capabilities[0] holds a comma"));
}

#[test]
fn a_hello_with_a_tab_and_non_ascii_decodes_with_them() {
    let cfg = ClientConfig {
        from: Some("agent://\u{e9}\tx".into()),
        user_agent: "ua/1 (\u{2603})".into(),
        capabilities: vec!["weather".into(), "m\u{fc}sli".into()],
        ..Default::default()
    };
    cfg.check().unwrap();
    let mut c = client(cfg);
    c.handle_open(0);
    let hello = decode(&texts(&mut c)[0], usize::MAX).unwrap();
    assert_eq!(hello.header("From"), Some("agent://\u{e9}\tx"));
    assert_eq!(hello.header("User-Agent"), Some("ua/1 (\u{2603})"));
    assert_eq!(hello.header("Capabilities"), Some("weather,m\u{fc}sli"));
}

#[test]
fn a_server_configuration_no_header_can_carry_closes_the_session_at_once() {
    for bad in BAD {
        for (cfg, field) in [
            (
                ServerConfig {
                    agent: bad.into(),
                    ..Default::default()
                },
                "agent",
            ),
            (
                ServerConfig {
                    user_agent: bad.into(),
                    ..Default::default()
                },
                "user_agent",
            ),
            (
                ServerConfig {
                    capabilities: vec![bad.into()],
                    ..Default::default()
                },
                "capabilities[0]",
            ),
        ] {
            assert_invalid(&cfg.check().unwrap_err(), field);
            let mut s = ServerSession::new(cfg, Box::new(SeededEntropy::new(1)));
            s.handle_open(0);
            s.handle_text(
                0,
                "RKT/1.0 PING\nVersion: 1\nMessage-ID: p\nSession-ID: s\nTimestamp: 2026-06-28T12:00:00Z\nTTL: 30\n",
            );
            assert_eq!(s.state(), ServerState::Closed);
            let out: Vec<Outgoing> = std::iter::from_fn(|| s.poll_transmit()).collect();
            assert_eq!(
                out,
                [Outgoing::Close {
                    code: 1011,
                    reason: "invalid configuration".into()
                }],
                "{field}: no PONG"
            );
            match std::iter::from_fn(|| s.poll_event()).collect::<Vec<_>>().as_slice() {
                [ServerEvent::Closed { code: 1011, reason }] => {
                    assert!(
                        reason.starts_with(&format!("invalid configuration: {field} holds ")),
                        "{reason}"
                    )
                }
                other => panic!("{field}: {other:?}"),
            }
            assert_eq!(s.poll_timeout(), None);
        }
    }
    // The reference server's own check (the native server's and the CLI's) refuses it too.
    let cfg = ReferenceConfig {
        agent: "rkt://a\0b".into(),
        ..Default::default()
    };
    assert_invalid(&cfg.check().unwrap_err(), "agent");
}

/// A session after a HELLO_ACK with `extra` header lines, and what it sent after it.
fn acked(cfg: ClientConfig, extra: &str) -> (ClientSession, Vec<String>) {
    let mut c = client(cfg);
    c.handle_open(0);
    let hello = decode(&texts(&mut c)[0], usize::MAX).unwrap();
    let ack = format!(
        "RKT/1.0 HELLO_ACK\nVersion: 1\nMessage-ID: ack\nReply-To: {}\nSession-ID: s\nTimestamp: 2026-06-28T12:00:00Z\n{extra}\n{}",
        hello.message_id(),
        r#"{"agreed_version":1,"session_timeout":300}"#
    );
    c.handle_text(0, &ack);
    let sent = texts(&mut c);
    (c, sent)
}

/// The server's `Capabilities` in `Ready` are its list split at commas, each trimmed, empty
/// ones left out; none without the header.
#[test]
fn the_servers_capabilities_are_its_list_split_and_trimmed() {
    for (extra, expected) in [
        (
            "Capabilities: weather, forecast ,,alerts\n",
            vec!["weather", "forecast", "alerts"],
        ),
        ("", vec![]),
    ] {
        let (mut c, _) = acked(ClientConfig::default(), extra);
        let events: Vec<_> = std::iter::from_fn(|| c.poll_event()).collect();
        let [ClientEvent::Ready { server, .. }] = &events[..] else {
            panic!("{events:?}")
        };
        assert_eq!(server.capabilities, expected, "{extra:?}");
    }
}

/// A configured `authorization` that is the scheme's name alone (six bytes, nothing after) is
/// taken whole as the token.
#[test]
fn an_authorization_of_the_scheme_name_alone_is_the_token() {
    for authorization in ["bearer", "BEARER"] {
        let cfg = ClientConfig {
            authorization: Some(authorization.into()),
            ..Default::default()
        };
        let (_, sent) = acked(cfg, "");
        let auth = decode(&sent[0], usize::MAX).unwrap();
        assert_eq!(auth.kind, MessageType::Auth, "{authorization:?}");
        let body: serde_json::Value = serde_json::from_str(auth.body.as_deref().unwrap()).unwrap();
        assert_eq!(body["token"], authorization, "{authorization:?}");
    }
}
