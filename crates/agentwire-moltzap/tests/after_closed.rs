//! After `Disconnected` (and before the first `handle_open`) the session is closed: whatever
//! the driver hands it but a new socket (a frame, a binary frame, a ping, another close, the
//! time) produces no event, no frame and no timer, whichever way it closed.

use agentwire_core::Outgoing;
use agentwire_moltzap::{Credentials, Event, GenerationChoice, Session, SessionConfig, SessionState};

fn cfg() -> SessionConfig {
    SessionConfig {
        generation: GenerationChoice::Current,
        ping_interval_ms: Some(1000),
        ..SessionConfig::default()
    }
}

/// A current session, connected, with a request pending and every timer armed.
fn ready() -> (Session, String) {
    let mut s = Session::new(cfg());
    s.handle_open(0);
    let id = s.connect(0, Credentials::AgentKey("moltzap_agent_k".into())).unwrap();
    s.handle_text(1, &format!(r#"{{"jsonrpc":"2.0","id":"{id}","result":{{}}}}"#));
    let call = s.system_ping(2).unwrap();
    (s, call)
}

fn drain_to_disconnected(s: &mut Session) {
    let events: Vec<_> = std::iter::from_fn(|| s.poll_event()).collect();
    assert!(matches!(events.last(), Some(Event::Disconnected { .. })), "{events:?}");
    while s.poll_transmit().is_some() {}
    assert_eq!(s.state(), SessionState::Closed);
}

fn assert_silent(s: &mut Session, what: &str) {
    let event = s.poll_event();
    let frame: Option<Outgoing> = s.poll_transmit();
    assert!(event.is_none() && frame.is_none(), "{what}: {event:?} {frame:?}");
    assert_eq!(s.poll_timeout(), None, "{what}");
}

/// What the driver hands the session, at `now`.
type Input<'a> = dyn Fn(&mut Session, u64) + 'a;

/// Every input but `handle_open` (a new socket), each checked for silence.
fn feed_everything(s: &mut Session, pending: &str) {
    let answer = format!(r#"{{"jsonrpc":"2.0","id":"{pending}","result":{{}}}}"#);
    let push = r#"{"jsonrpc":"2.0","method":"presence/changed","params":{"agentId":"a","status":"online"}}"#;
    let mut now = 100_000;
    let inputs: [(&str, &Input); 8] = [
        ("an answer", &|s, now| s.handle_text(now, &answer)),
        ("a push", &|s, now| s.handle_text(now, push)),
        ("garbage", &|s, now| s.handle_text(now, "garbage")),
        ("a binary frame", &|s, now| s.handle_binary(now, answer.as_bytes())),
        ("bad UTF-8", &|s, now| s.handle_binary(now, &[0xff, 0xfe])),
        ("a ping", &|s, now| s.handle_ping(now)),
        ("another close", &|s, now| s.handle_close(now, 1006, "again")),
        ("the time", &|s, now| s.handle_timeout(now + 86_400_000)),
    ];
    for (what, input) in inputs {
        now += 1;
        input(s, now);
        assert_silent(s, what);
    }
}

#[test]
fn nothing_comes_out_after_disconnected_whichever_way_it_closed() {
    // Never opened.
    let mut s = Session::new(cfg());
    feed_everything(&mut s, "aw-1");

    // The socket dropped.
    let (mut s, call) = ready();
    s.handle_close(3, 1006, "gone");
    drain_to_disconnected(&mut s);
    feed_everything(&mut s, &call);

    // The user closed it.
    let (mut s, call) = ready();
    s.close(1000, "bye");
    drain_to_disconnected(&mut s);
    feed_everything(&mut s, &call);

    // Taken as dead: missed pings, then the probe unanswered.
    let (mut s, call) = ready();
    while let Some(at) = s.poll_timeout().filter(|_| s.state() == SessionState::Ready) {
        s.handle_timeout(at);
        while s.poll_transmit().is_some() {}
    }
    drain_to_disconnected(&mut s);
    feed_everything(&mut s, &call);

    // Closed by the session itself: a protocol version out of range.
    let mut s = Session::new(cfg());
    s.handle_open(0);
    let id = s.connect(0, Credentials::AgentKey("moltzap_agent_k".into())).unwrap();
    let hello = format!(r#"{{"jsonrpc":"2.0","id":"{id}","result":{{"protocolVersion":"1999.1.0"}}}}"#);
    s.handle_text(1, &hello);
    drain_to_disconnected(&mut s);
    feed_everything(&mut s, &id);
}

/// The socket closed (`handle_close`): the close frame of a `close` not polled yet had that
/// socket to go on and goes with it, as every other frame does, rather than being handed over
/// after `Disconnected` for a socket the driver reported gone.
#[test]
fn a_close_frame_queued_when_the_socket_closes_goes_with_it() {
    let (mut s, _) = ready();
    s.close(1000, "bye");
    s.handle_close(3, 1006, "gone");
    assert_eq!(s.poll_transmit(), None);
    drain_to_disconnected(&mut s);
}
