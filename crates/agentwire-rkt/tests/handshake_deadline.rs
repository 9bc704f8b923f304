//! The handshake, the configured AUTH included, ends by `handshake_timeout_ms` after HELLO
//! (docs/protocols/rkt.md, "Auth"). A HELLO_ACK read at or past that deadline, before the
//! driver called `handle_timeout`, is the handshake timeout, as if the timer had fired first,
//! with or without `authorization`. Before, it gave `Ready` without authorization and, with it,
//! sent an AUTH whose deadline had already passed, failed by the next `handle_timeout` as "no
//! reply within the TTL of 30 s" after 0 ms.

use agentwire_core::{ErrorKind, Outgoing, SeededEntropy};
use agentwire_rkt::codec::decode;
use agentwire_rkt::*;

fn opened(authorization: Option<&str>) -> (ClientSession, String) {
    let cfg = ClientConfig {
        authorization: authorization.map(str::to_string),
        handshake_timeout_ms: 1000,
        ..ClientConfig::default()
    };
    let mut c = ClientSession::new(cfg, Box::new(SeededEntropy::new(1)));
    c.handle_open(0);
    let hello = c.poll_transmit().unwrap();
    let id = decode(hello.as_text().unwrap(), usize::MAX)
        .unwrap()
        .message_id()
        .to_owned();
    (c, id)
}

fn ack(reply_to: &str) -> String {
    format!("RKT/1.0 HELLO_ACK\nVersion: 1\nMessage-ID: a\nReply-To: {reply_to}\nSession-ID: s\nTimestamp: 2026-06-28T12:00:00Z\n\n{{\"agreed_version\":1,\"session_timeout\":300}}")
}

fn events(c: &mut ClientSession) -> Vec<ClientEvent> {
    std::iter::from_fn(|| c.poll_event()).collect()
}

fn frames(c: &mut ClientSession) -> Vec<Outgoing> {
    std::iter::from_fn(|| c.poll_transmit()).collect()
}

/// The session timed the handshake out: one `timeout` error with `message`, then `Closed`; the
/// only frame the close.
fn assert_timed_out(c: &mut ClientSession, message: &str) {
    match &events(c)[..] {
        [ClientEvent::Error(e), ClientEvent::Closed { code: 1000, .. }] => {
            assert_eq!((e.kind(), e.error.message.as_str()), (ErrorKind::Timeout, message));
        }
        other => panic!("{other:?}"),
    }
    assert!(
        matches!(&frames(c)[..], [Outgoing::Close { code: 1000, .. }]),
        "no AUTH sent"
    );
    assert_eq!(c.state(), ClientState::Closed);
}

#[test]
fn a_hello_ack_read_past_the_deadline_is_the_handshake_timeout_with_or_without_auth() {
    for authorization in [None, Some("Bearer k")] {
        let (mut c, hello) = opened(authorization);
        c.handle_text(1500, &ack(&hello));
        assert_timed_out(
            &mut c,
            "the HELLO_ACK was read 500 ms past the handshake timeout of 1000 ms",
        );
        // At the deadline itself too: the timer reported first would have ended it.
        let (mut c, hello) = opened(authorization);
        c.handle_text(1000, &ack(&hello));
        assert_timed_out(
            &mut c,
            "the HELLO_ACK was read 0 ms past the handshake timeout of 1000 ms",
        );
        // The other order, the timer first, ends it the same way.
        let (mut c, hello) = opened(authorization);
        c.handle_timeout(1500);
        c.handle_text(1500, &ack(&hello));
        assert_timed_out(&mut c, "no HELLO_ACK before the handshake timeout");
    }
}

#[test]
fn a_hello_ack_just_in_time_is_taken_and_the_auth_gets_what_is_left_said_so() {
    let (mut c, hello) = opened(None);
    c.handle_text(999, &ack(&hello));
    assert!(matches!(&events(&mut c)[..], [ClientEvent::Ready { .. }]));

    let (mut c, hello) = opened(Some("Bearer k"));
    c.handle_text(999, &ack(&hello));
    assert!(events(&mut c).is_empty(), "Ready waits for the AUTH");
    let auth = frames(&mut c);
    assert!(matches!(&auth[..], [Outgoing::Text(t)] if t.starts_with("RKT/1.0 AUTH\n")));
    assert_eq!(c.poll_timeout(), Some(1000), "the handshake's deadline, not the TTL");
    c.handle_timeout(1000);
    match &events(&mut c)[..] {
        [ClientEvent::Error(e), ClientEvent::Closed { .. }] => {
            assert_eq!(e.kind(), ErrorKind::Timeout);
            assert_eq!(
                e.error.message,
                "the AUTH sent for the configured authorization failed: no AUTH_OK before the handshake timeout of 1000 ms"
            );
        }
        other => panic!("{other:?}"),
    }
}

/// An AUTH whose TTL ends exactly at the handshake's deadline is bounded by its TTL, and says
/// so; one millisecond later, by the handshake's.
#[test]
fn an_auth_whose_ttl_ends_with_the_handshake_says_its_ttl() {
    for (acked_at, message) in [
        (1000, "no reply within the TTL of 1 s"),
        (1001, "no AUTH_OK before the handshake timeout of 2000 ms"),
    ] {
        let cfg = ClientConfig {
            authorization: Some("Bearer k".into()),
            handshake_timeout_ms: 2000,
            ttl_s: 1,
            ..ClientConfig::default()
        };
        let mut c = ClientSession::new(cfg, Box::new(SeededEntropy::new(1)));
        c.handle_open(0);
        let hello = decode(c.poll_transmit().unwrap().as_text().unwrap(), usize::MAX).unwrap();
        c.handle_text(acked_at, &ack(hello.message_id()));
        frames(&mut c);
        assert_eq!(c.poll_timeout(), Some(2000));
        c.handle_timeout(2000);
        match &events(&mut c)[..] {
            [ClientEvent::Error(e), ClientEvent::Closed { .. }] => assert_eq!(
                e.error.message,
                format!("the AUTH sent for the configured authorization failed: {message}")
            ),
            other => panic!("{acked_at}: {other:?}"),
        }
    }
}
