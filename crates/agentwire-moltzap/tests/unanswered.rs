//! A request cut off from its response (the socket closed, or its timeout passed) is retryable
//! only when making it again is safe: its frame never left (`unsent`), or the method is
//! idempotent (a read, `system/ping`). A `messages/send` that went out may have posted, with a
//! `postId` too (the dedupe is an agentwire extension a server may not implement): before, it
//! was `retryable: true`, and the retry posted the message twice.

use agentwire_core::{ErrorKind, Outgoing, MAY_HAVE_RUN};
use agentwire_moltzap::session::SendMessage;
use agentwire_moltzap::{Credentials, Event, GenerationChoice, MoltZapError, Session, SessionConfig};

fn ready() -> Session {
    let mut s = Session::new(SessionConfig {
        generation: GenerationChoice::Current,
        ..SessionConfig::default()
    });
    s.handle_open(0);
    let id = s.connect(0, Credentials::AgentKey("moltzap_agent_k".into())).unwrap();
    drain(&mut s);
    s.handle_text(1, &format!(r#"{{"jsonrpc":"2.0","id":"{id}","result":{{}}}}"#));
    assert!(matches!(failures(&mut s)[..], []));
    s
}

fn drain(s: &mut Session) -> usize {
    std::iter::from_fn(|| s.poll_transmit())
        .filter(|o| matches!(o, Outgoing::Text(_)))
        .count()
}

fn failures(s: &mut Session) -> Vec<(String, MoltZapError)> {
    std::iter::from_fn(|| s.poll_event())
        .filter_map(|e| match e {
            Event::Failed { id, error } => Some((id, error)),
            _ => None,
        })
        .collect()
}

fn keyed(text: &str) -> SendMessage {
    SendMessage {
        post_id: Some("p-1".into()),
        ..SendMessage::text_to_agent("bob", text)
    }
}

/// Each request's failure after `end` (a close or the timeout), checked: `(id, retryable,
/// unsent)`.
fn check(s: &mut Session, want: &[(String, bool, bool)], kind: ErrorKind) {
    let got = failures(s);
    assert_eq!(got.len(), want.len(), "{got:?}");
    for (id, retryable, unsent) in want {
        let (_, e) = got.iter().find(|(g, _)| g == id).unwrap();
        assert_eq!(
            (e.kind(), e.error.retryable, e.unsent),
            (kind, *retryable, *unsent),
            "{id}: {e:?}"
        );
        assert_eq!(e.error.message.ends_with(MAY_HAVE_RUN), !retryable, "{e:?}");
    }
}

#[test]
fn a_close_after_sending_ends_a_send_as_final() {
    let mut s = ready();
    let send = s
        .messages_send(2, &SendMessage::text_to_agent("bob", "order 1"))
        .unwrap();
    let with_key = s.messages_send(2, &keyed("order 2")).unwrap();
    let read = s.agent_message_list(2, &Default::default()).unwrap();
    let ping = s.system_ping(2).unwrap();
    let create = s.call(2, "conversations/create", Some(r#"{"type":"dm"}"#)).unwrap();
    assert_eq!(drain(&mut s), 5);
    let unsent = s
        .messages_send(3, &SendMessage::text_to_agent("bob", "order 3"))
        .unwrap();
    s.handle_close(4, 1006, "");
    let want = [
        (send, false, false),
        (create, false, false),
        (with_key, false, false),
        (read, true, false),
        (ping, true, false),
        (unsent, true, true),
    ];
    check(&mut s, &want, ErrorKind::Closed);
}

#[test]
fn a_timeout_after_sending_ends_a_send_as_final() {
    let mut s = ready();
    let send = s
        .messages_send(2, &SendMessage::text_to_agent("bob", "order 1"))
        .unwrap();
    let with_key = s.messages_send(2, &keyed("order 2")).unwrap();
    assert_eq!(drain(&mut s), 2);
    let unsent = s
        .messages_send(2, &SendMessage::text_to_agent("bob", "order 3"))
        .unwrap();
    s.handle_timeout(s.poll_timeout().unwrap());
    let want = [(send, false, false), (with_key, false, false), (unsent, true, true)];
    check(&mut s, &want, ErrorKind::Timeout);
    assert_eq!(drain(&mut s), 0, "the unsent send is never written");
}

/// No `postId` makes a sent `messages/send` safe to repeat: a server that does not implement the
/// extension (the spec has none) ignores it and posts again.
#[test]
fn no_post_id_makes_a_send_idempotent() {
    let mut s = ready();
    let calls = [
        r#"{"to":"agent:bob","parts":[],"postId":"p-9"}"#,
        r#"{"to":"agent:bob","parts":[],"postId":""}"#,
        r#"{"to":"agent:bob","parts":[],"postId":7}"#,
        r#"{"to":"agent:bob","parts":[]}"#,
        r#"[{"postId":"p-9"}]"#,
    ];
    let want: Vec<_> = (calls.iter())
        .map(|params| (s.call(2, "messages/send", Some(params)).unwrap(), false, false))
        .collect();
    drain(&mut s);
    s.handle_close(3, 1006, "");
    check(&mut s, &want, ErrorKind::Closed);
}

/// `unsent` says whether a request's frame is still to be polled (held in the session): what
/// the npm client asks when its own timer or signal gives up on a call.
#[test]
fn unsent_is_true_until_the_frame_is_polled() {
    let mut s = ready();
    let id = s.system_ping(2).unwrap();
    assert!(s.unsent(&id) && s.has_transmit());
    assert_eq!(drain(&mut s), 1);
    assert!(!s.unsent(&id) && !s.has_transmit());
    assert!(!s.unsent("not-a-request"));
    let held = s.system_ping(3).unwrap();
    assert!(s.cancel(&held));
    assert!(!s.unsent(&held), "ended: no longer pending");
}
