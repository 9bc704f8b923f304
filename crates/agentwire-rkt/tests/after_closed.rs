//! `Closed` is terminal: whatever the driver hands the session after it (a frame, a binary frame,
//! another close, an open, the time) produces no event, no frame and no timer. Before,
//! `handle_binary` still reported an `Error`.

use agentwire_core::{Outgoing, SeededEntropy};
use agentwire_rkt::codec::decode;
use agentwire_rkt::*;

fn opened() -> (ClientSession, String) {
    let mut c = ClientSession::new(ClientConfig::default(), Box::new(SeededEntropy::new(1)));
    c.handle_open(0);
    let hello = c.poll_transmit().unwrap();
    let id = decode(hello.as_text().unwrap(), usize::MAX)
        .unwrap()
        .message_id()
        .to_owned();
    (c, id)
}

fn message(kind: &str, reply_to: &str, body: &str) -> String {
    format!("RKT/1.0 {kind}\nVersion: 1\nMessage-ID: m-{kind}\nReply-To: {reply_to}\nSession-ID: s\nTimestamp: 2026-06-28T12:00:00Z\nTTL: 30\n\n{body}")
}

const ACK: &str = r#"{"agreed_version":1,"session_timeout":300}"#;

/// Drains what the session produced up to `Closed`, which must be the last event.
fn drain_to_closed(c: &mut ClientSession) {
    let events: Vec<_> = std::iter::from_fn(|| c.poll_event()).collect();
    assert!(matches!(events.last(), Some(ClientEvent::Closed { .. })), "{events:?}");
    while c.poll_transmit().is_some() {}
    assert_eq!(c.state(), ClientState::Closed);
}

fn assert_silent(c: &mut ClientSession, what: &str) {
    let event = c.poll_event();
    let frame: Option<Outgoing> = c.poll_transmit();
    assert!(event.is_none() && frame.is_none(), "{what}: {event:?} {frame:?}");
    assert_eq!(c.poll_timeout(), None, "{what}");
}

/// What the driver hands the session, at `now`.
type Input<'a> = dyn Fn(&mut ClientSession, u64) + 'a;

/// Every input after `Closed`, each checked for silence.
fn feed_everything(c: &mut ClientSession, hello: &str) {
    let mut now = 10_000;
    let inputs: [(&str, &Input); 8] = [
        ("a PING", &|c, now| c.handle_text(now, &message("PING", "x", ""))),
        ("a HELLO_ACK", &|c, now| {
            c.handle_text(now, &message("HELLO_ACK", hello, ACK))
        }),
        ("garbage", &|c, now| c.handle_text(now, "garbage")),
        ("a binary frame", &|c, now| c.handle_binary(now, b"\x01")),
        ("an empty binary frame", &|c, now| c.handle_binary(now, b"")),
        ("another close", &|c, now| c.handle_close(now, 1006, "again")),
        ("an open", &|c, now| c.handle_open(now)),
        ("the time", &|c, now| c.handle_timeout(now + 86_400_000)),
    ];
    for (what, input) in inputs {
        now += 1;
        input(c, now);
        assert_silent(c, what);
    }
}

#[test]
fn nothing_comes_out_after_closed_whichever_way_it_closed() {
    // The socket dropped while ready, with a command and the keepalive pending.
    let (mut c, hello) = opened();
    c.handle_text(1, &message("HELLO_ACK", &hello, ACK));
    c.request(2, "echo", None, RequestOptions::default()).unwrap();
    c.handle_close(3, 1006, "gone");
    drain_to_closed(&mut c);
    feed_everything(&mut c, &hello);

    // The server said GOODBYE.
    let (mut c, hello) = opened();
    c.handle_text(1, &message("HELLO_ACK", &hello, ACK));
    c.handle_text(2, &message("GOODBYE", "x", ""));
    drain_to_closed(&mut c);
    feed_everything(&mut c, &hello);

    // The handshake timed out.
    let (mut c, hello) = opened();
    c.handle_timeout(c.poll_timeout().unwrap());
    drain_to_closed(&mut c);
    feed_everything(&mut c, &hello);

    // The user said goodbye.
    let (mut c, hello) = opened();
    c.handle_text(1, &message("HELLO_ACK", &hello, ACK));
    c.goodbye(2);
    drain_to_closed(&mut c);
    feed_everything(&mut c, &hello);
}

/// The socket closed (`handle_close`): what waited to go on it has nowhere to go. A PONG to a
/// PING read just before, or the GOODBYE and close frame of a `goodbye` not polled yet, is not
/// handed to the driver after `Closed` as a frame to send on a socket it has been told is gone.
#[test]
fn frames_queued_when_the_socket_closes_go_with_it() {
    let (mut c, hello) = opened();
    c.handle_text(1, &message("HELLO_ACK", &hello, ACK));
    while c.poll_transmit().is_some() {}
    c.handle_text(2, &message("PING", "x", ""));
    c.handle_close(3, 1006, "gone");
    assert_eq!(c.poll_transmit(), None);
    drain_to_closed(&mut c);

    // Said GOODBYE, then the socket closed before the driver took the frames.
    let (mut c, hello) = opened();
    c.handle_text(1, &message("HELLO_ACK", &hello, ACK));
    c.goodbye(2);
    c.handle_close(3, 1006, "gone");
    assert_eq!(c.poll_transmit(), None);
    drain_to_closed(&mut c);

    // A server session: its HELLO_ACK not taken when the client's socket closed.
    let mut c = ClientSession::new(ClientConfig::default(), Box::new(SeededEntropy::new(1)));
    let mut s = ServerSession::new(ServerConfig::default(), Box::new(SeededEntropy::new(2)));
    s.handle_open(0);
    c.handle_open(0);
    let hello = c.poll_transmit().unwrap();
    s.handle_text(1, hello.as_text().unwrap());
    s.handle_close(2, 1006, "gone");
    assert_eq!(s.poll_transmit(), None);
}
