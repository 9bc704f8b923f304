//! A command cut off from its answer (the connection closed, or its TTL passed) is retryable
//! only when making it again is safe: it never left, or RKT makes it idempotent (PING,
//! DISCOVER, MEMORY_GET, MEMORY_SET, AUTH). A PAY or a REQUEST that went out may have been
//! carried out: before, it was `retryable: true`, and a retried PAY paid twice.

use agentwire_core::{ErrorKind, SeededEntropy, MAY_HAVE_RUN};
use agentwire_rkt::codec::decode;
use agentwire_rkt::*;

fn ready() -> ClientSession {
    let mut c = ClientSession::new(ClientConfig::default(), Box::new(SeededEntropy::new(1)));
    c.handle_open(0);
    let hello = c.poll_transmit().unwrap();
    let hello = decode(hello.as_text().unwrap(), usize::MAX).unwrap();
    let ack = format!(
        "RKT/1.0 HELLO_ACK\nVersion: 1\nMessage-ID: a\nReply-To: {}\nSession-ID: s\nTimestamp: 2026-06-28T12:00:00Z\n\n{{\"agreed_version\":1,\"session_timeout\":300}}",
        hello.message_id()
    );
    c.handle_text(0, &ack);
    assert_eq!(c.state(), ClientState::Ready);
    c
}

/// The `Failed` of each command, by id, after the session's events are drained.
fn failures(c: &mut ClientSession) -> Vec<(String, RktError)> {
    std::iter::from_fn(|| c.poll_event())
        .filter_map(|e| match e {
            ClientEvent::Failed { id, error } => Some((id, error)),
            _ => None,
        })
        .collect()
}

fn assert_final(e: &RktError, kind: ErrorKind) {
    assert_eq!((e.kind(), e.error.retryable), (kind, false), "{e}");
    assert!(e.error.message.ends_with(MAY_HAVE_RUN), "{e}");
}

fn assert_retryable(e: &RktError, kind: ErrorKind) {
    assert_eq!((e.kind(), e.error.retryable), (kind, true), "{e}");
    assert!(!e.error.message.contains(MAY_HAVE_RUN), "{e}");
}

/// Sent, then the connection closed: PAY and REQUEST are final, the idempotent ones are not.
#[test]
fn a_close_after_sending_ends_only_the_idempotent_commands_as_retryable() {
    let mut c = ready();
    let pay = c.pay(0, 5.0, "RKTT", Some("order 1"), None).unwrap();
    let request = c.request(0, "echo", None, RequestOptions::default()).unwrap();
    let safe = [
        c.ping(0).unwrap(),
        c.discover(0).unwrap(),
        c.memory_get(0, "k", None).unwrap(),
        c.memory_set(0, "k", serde_json::json!(1), None, None).unwrap(),
    ];
    while c.poll_transmit().is_some() {} // all written
    c.handle_close(1, 1006, "");
    let failed = failures(&mut c);
    assert_eq!(failed.len(), 6);
    for (id, e) in &failed {
        match id {
            id if *id == pay || *id == request => assert_final(e, ErrorKind::Closed),
            id => {
                assert!(safe.contains(id));
                assert_retryable(e, ErrorKind::Closed);
            }
        }
    }
}

/// Never polled, then the connection closed: the frame is taken back, so even a PAY may be made
/// again; so may one queued for HELLO_ACK.
#[test]
fn a_command_that_never_left_stays_retryable() {
    let mut c = ready();
    let pay = c.pay(0, 5.0, "RKTT", None, None).unwrap();
    c.handle_close(1, 1006, "");
    let failed = failures(&mut c);
    assert_eq!(failed.len(), 1);
    assert_eq!(failed[0].0, pay);
    assert_retryable(&failed[0].1, ErrorKind::Closed);

    let mut c = ClientSession::new(ClientConfig::default(), Box::new(SeededEntropy::new(1)));
    c.handle_open(0);
    while c.poll_transmit().is_some() {} // the HELLO
    let queued = c.pay(0, 5.0, "RKTT", None, None).unwrap();
    assert!(c.poll_transmit().is_none(), "waits for HELLO_ACK");
    c.handle_close(1, 1006, "");
    let failed = failures(&mut c);
    assert_eq!(failed[0].0, queued);
    assert_retryable(&failed[0].1, ErrorKind::Closed);
}

/// A TTL that passes after the frame left is the same: PAY final, PING retryable; one whose
/// frame was never polled is taken back and retryable.
#[test]
fn a_timeout_after_sending_is_final_for_a_pay() {
    let mut c = ready();
    let pay = c.pay(0, 5.0, "RKTT", None, None).unwrap();
    let ping = c.ping(0).unwrap();
    while c.poll_transmit().is_some() {}
    let unsent = c.pay(0, 5.0, "RKTT", None, None).unwrap();
    c.handle_timeout(c.poll_timeout().unwrap());
    let failed = failures(&mut c);
    assert_eq!(failed.len(), 3);
    for (id, e) in &failed {
        if *id == pay {
            assert_final(e, ErrorKind::Timeout);
        } else {
            assert!(*id == ping || *id == unsent);
            assert_retryable(e, ErrorKind::Timeout);
        }
    }
    assert!(c.poll_transmit().is_none(), "the unsent PAY is never written");
}

/// `unsent` says whether a command's frame is still to be polled (queued for HELLO_ACK, or held
/// in the session): what the npm client asks when its own timer or signal gives up on a call.
#[test]
fn unsent_is_true_until_the_frame_is_polled() {
    let mut c = ClientSession::new(ClientConfig::default(), Box::new(agentwire_core::SeededEntropy::new(2)));
    c.handle_open(0);
    let early = c.ping(0).unwrap(); // queued for HELLO_ACK
    assert!(c.unsent(&early));
    let mut c = ready();
    let id = c.request(1, "s", None, RequestOptions::default()).unwrap();
    assert!(c.unsent(&id) && c.has_transmit());
    while c.poll_transmit().is_some() {}
    assert!(!c.unsent(&id) && !c.has_transmit());
    assert!(!c.unsent("not-a-command"));
    let held = c.request(1, "s", None, RequestOptions::default()).unwrap();
    assert!(c.cancel(&held));
    assert!(!c.unsent(&held), "ended: no longer pending");
}
