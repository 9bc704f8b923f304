//! The client's bookkeeping of commands: what is queued for HELLO_ACK, what is in flight, what
//! a stream holds out of order, and which replies are dropped quietly. Found by mutation
//! testing: each test fails with one change to `client/` that the other tests let through.
use agentwire_core::{ErrorKind, Outgoing, SeededEntropy};
use agentwire_rkt::*;

const T0: u64 = 1_782_648_000_000;

fn client(cfg: ClientConfig) -> (ClientSession, String) {
    let mut c = ClientSession::new(cfg, Box::new(SeededEntropy::new(1)));
    c.handle_open(T0);
    let Some(Outgoing::Text(hello)) = c.poll_transmit() else {
        panic!("no HELLO")
    };
    (c, message_id(&hello).to_string())
}

fn no_keepalive() -> ClientConfig {
    ClientConfig {
        keepalive: false,
        ..Default::default()
    }
}

fn hello_ack(hello: &str) -> String {
    hello_ack_with(hello, 300)
}

/// The HELLO_ACK answering `hello`, agreeing version 1 with this `session_timeout` (seconds).
fn hello_ack_with(hello: &str, session_timeout: u64) -> String {
    let body = format!(r#"{{"agreed_version":1,"session_timeout":{session_timeout}}}"#);
    reply("HELLO_ACK", "ack", hello, "", &body)
}

fn ready(cfg: ClientConfig) -> ClientSession {
    ready_with(cfg, 300)
}

/// A session past its handshake, whose HELLO_ACK gave this `session_timeout` (seconds).
fn ready_with(cfg: ClientConfig, session_timeout: u64) -> ClientSession {
    let (mut c, hello) = client(cfg);
    c.handle_text(T0, &hello_ack_with(&hello, session_timeout));
    drain(&mut c);
    c
}

fn message_id(frame: &str) -> &str {
    frame.lines().find_map(|l| l.strip_prefix("Message-ID: ")).unwrap()
}

/// A server message answering `to`, with `extra` header lines and a body.
fn reply(kind: &str, id: &str, to: &str, extra: &str, body: &str) -> String {
    format!("RKT/1.0 {kind}\nVersion: 1\nMessage-ID: {id}\nReply-To: {to}\nSession-ID: s\nTimestamp: 2026-06-28T12:00:00Z\n{extra}\n{body}")
}

/// The same message with a Timestamp without a zone: undecodable, its Reply-To still readable.
fn undecodable(kind: &str, id: &str, to: &str) -> String {
    reply(kind, id, to, "", "{}").replace("12:00:00Z", "12:00:00")
}

fn drain(c: &mut ClientSession) -> Vec<ClientEvent> {
    while c.poll_transmit().is_some() {}
    events(c)
}

fn events(c: &mut ClientSession) -> Vec<ClientEvent> {
    std::iter::from_fn(|| c.poll_event()).collect()
}

fn sent(c: &mut ClientSession) -> Vec<String> {
    std::iter::from_fn(|| c.poll_transmit())
        .map(|o| match o {
            Outgoing::Text(t) => t,
            other => panic!("{other:?}"),
        })
        .collect()
}

/// An undecodable frame naming the HELLO once the session is ready answers nothing the session
/// waits for: it is an `Error`, and the session stays open (only during the handshake does an
/// unreadable answer to HELLO end it).
#[test]
fn an_undecodable_late_answer_to_hello_does_not_close_a_ready_session() {
    let (mut c, hello) = client(no_keepalive());
    c.handle_text(T0, &hello_ack(&hello));
    drain(&mut c);
    c.handle_text(T0 + 1, &undecodable("HELLO_ACK", "ack2", &hello));
    let events = events(&mut c);
    assert!(
        matches!(&events[..], [ClientEvent::Error(e)] if e.kind() == ErrorKind::Decode),
        "{events:?}"
    );
    assert_eq!(c.state(), ClientState::Ready);
    assert_eq!(c.poll_transmit(), None, "no close frame");
}

/// An undecodable frame naming a command still queued for HELLO_ACK cannot answer it (it was
/// never sent): an `Error`, and the command is sent on HELLO_ACK all the same.
#[test]
fn an_undecodable_frame_naming_a_queued_command_leaves_it_queued() {
    let (mut c, hello) = client(no_keepalive());
    let id = c.discover(T0).unwrap();
    c.handle_text(T0 + 1, &undecodable("RESPONSE", "r1", &id));
    let events = events(&mut c);
    assert!(
        matches!(&events[..], [ClientEvent::Error(e)] if e.kind() == ErrorKind::Decode),
        "{events:?}"
    );
    c.handle_text(T0 + 2, &hello_ack(&hello));
    let wire = sent(&mut c);
    assert!(wire.iter().any(|f| message_id(f) == id), "{wire:?}");
    assert_eq!(c.in_flight(), 1);
}

/// Cancelling one command queued for HELLO_ACK takes only that one out of the queue: the others
/// are sent on HELLO_ACK.
#[test]
fn cancelling_a_queued_command_leaves_the_others_queued() {
    let (mut c, hello) = client(no_keepalive());
    let a = c.discover(T0).unwrap();
    let b = c.ping(T0).unwrap();
    let d = c.memory_get(T0, "k", None).unwrap();
    assert!(c.cancel(&b));
    drain(&mut c);
    c.handle_text(T0 + 1, &hello_ack(&hello));
    let wire = sent(&mut c);
    let ids: Vec<&str> = wire.iter().map(|f| message_id(f)).collect();
    assert_eq!(ids, [a.as_str(), d.as_str()]);
}

/// The AUTH sent for `authorization` is the session's own: once answered, no user command is
/// counted in flight, and `max_in_flight` commands may still be made.
#[test]
fn the_configured_auth_answered_leaves_nothing_in_flight() {
    let cfg = ClientConfig {
        authorization: Some("Bearer k1".into()),
        max_in_flight: 1,
        ..no_keepalive()
    };
    let (mut c, hello) = client(cfg);
    c.handle_text(T0, &hello_ack(&hello));
    let wire = sent(&mut c);
    let auth = wire.iter().find(|f| f.starts_with("RKT/1.0 AUTH\n")).expect("AUTH");
    let body = r#"{"session_token":"t","scopes":[],"expires_in":60}"#;
    c.handle_text(T0 + 1, &reply("AUTH_OK", "ok", message_id(auth), "", body));
    let events = events(&mut c);
    assert!(
        matches!(&events[..], [ClientEvent::Ready { .. }, ClientEvent::AuthOk { .. }]),
        "{events:?}"
    );
    assert_eq!(c.in_flight(), 0);
    let id = c.discover(T0 + 2).unwrap();
    assert_eq!(c.in_flight(), 1);
    c.handle_text(T0 + 3, &reply("RESPONSE", "r", &id, "", "{}"));
    assert_eq!(c.in_flight(), 0);
}

/// Entropy that makes every id the same: each command takes the place of the one pending before.
struct SameId;

impl agentwire_core::Entropy for SameId {
    fn fill(&mut self, buf: &mut [u8]) {
        buf.fill(7);
    }
}

/// A command whose id repeats a pending one's (ids are random UUIDs: as good as impossible)
/// takes its place, and `in_flight` stays exact: the configured AUTH replaced by the user's
/// request no longer counts as the session's own, a request replaced by a request counts once.
#[test]
fn a_command_replacing_one_of_the_same_id_keeps_in_flight_exact() {
    let cfg = ClientConfig {
        authorization: Some("Bearer k1".into()),
        ..no_keepalive()
    };
    let mut c = ClientSession::new(cfg, Box::new(SameId));
    c.handle_open(T0);
    let hello = sent(&mut c).remove(0);
    c.handle_text(T0, &hello_ack(message_id(&hello)));
    let wire = sent(&mut c);
    assert!(wire[0].starts_with("RKT/1.0 AUTH\n"), "{wire:?}");
    assert_eq!(c.in_flight(), 0);
    let id = c.discover(T0 + 1).unwrap();
    assert_eq!(id, message_id(&wire[0]));
    assert_eq!(c.in_flight(), 1);
    c.discover(T0 + 2).unwrap();
    assert_eq!(c.in_flight(), 1);
}

/// The bytes a cancelled stream held out of order are given back to `max_stream_buffer_bytes`
/// (a budget over all streams): the next stream may hold as much.
#[test]
fn a_cancelled_stream_gives_back_the_bytes_it_held() {
    let mut c = ready(ClientConfig {
        max_stream_buffer_bytes: 10,
        ..no_keepalive()
    });
    let opts = || RequestOptions {
        stream: true,
        ..Default::default()
    };
    for round in 0..3 {
        let id = c.request(T0, "feed", None, opts()).unwrap();
        drain(&mut c);
        c.handle_text(T0, &reply("STREAM_BEGIN", "b", &id, "", ""));
        // Seq 1 before Seq 0: held, 8 bytes of the 10.
        c.handle_text(T0, &reply("STREAM_DATA", "d1", &id, "Seq: 1\n", r#""123456""#));
        let events = events(&mut c);
        assert!(
            matches!(&events[..], [ClientEvent::StreamBegin { .. }]),
            "round {round}: {events:?}"
        );
        assert!(c.cancel(&id));
        drain(&mut c);
    }
}

/// A late ERROR for a command already ended (cancelled after its frame left) is dropped quietly,
/// as a late RESPONSE is.
#[test]
fn a_late_error_to_a_cancelled_command_is_dropped_quietly() {
    let mut c = ready(no_keepalive());
    let id = c.discover(T0).unwrap();
    drain(&mut c);
    assert!(c.cancel(&id));
    drain(&mut c);
    let body = r#"{"code":500,"name":"INTERNAL","message":"late"}"#;
    c.handle_text(T0 + 1, &reply("ERROR", "e1", &id, "", body));
    assert_eq!(events(&mut c), vec![]);
}

/// A reply of the wrong type to a REQUEST (a PONG) is not its answer: an `Error` naming it,
/// and the request still waits for its RESPONSE. Only a stream answering a REQUEST sent without
/// `Stream: true` fails it at once.
#[test]
fn a_pong_answering_a_request_leaves_it_pending() {
    let mut c = ready(no_keepalive());
    let id = c.request(T0, "maps.navigate", None, RequestOptions::default()).unwrap();
    drain(&mut c);
    c.handle_text(T0 + 1, &reply("PONG", "p1", &id, "", ""));
    let events = events(&mut c);
    assert!(
        matches!(&events[..], [ClientEvent::Error(e)] if e.kind() == ErrorKind::Protocol && e.request_id.as_deref() == Some(id.as_str())),
        "{events:?}"
    );
    c.handle_text(T0 + 2, &reply("RESPONSE", "r1", &id, "", "{}"));
    let events = self::events(&mut c);
    assert!(
        matches!(&events[..], [ClientEvent::Response { id: r, .. }] if r == &id),
        "{events:?}"
    );
}

/// A stream opened and `request`ed with `Stream: true`, its STREAM_BEGIN read.
fn open_stream(c: &mut ClientSession) -> String {
    let opts = RequestOptions {
        stream: true,
        ..Default::default()
    };
    let id = c.request(T0, "feed", None, opts).unwrap();
    drain(c);
    c.handle_text(T0, &reply("STREAM_BEGIN", "b", &id, "", ""));
    drain(c);
    id
}

fn chunk(id: &str, seq: u64, body: &str) -> String {
    reply("STREAM_DATA", &format!("d{seq}"), id, &format!("Seq: {seq}\n"), body)
}

/// A chunk up to `max_stream_buffer` Seqs ahead of the next one due is held; one further ahead
/// fails the stream (`protocol`), wherever the stream is.
#[test]
fn a_chunk_is_held_up_to_max_stream_buffer_ahead_and_no_further() {
    let cfg = ClientConfig {
        max_stream_buffer: 4,
        ..no_keepalive()
    };
    let mut c = ready(cfg);
    let id = open_stream(&mut c);
    for seq in 0..3 {
        c.handle_text(T0, &chunk(&id, seq, "1"));
    }
    assert_eq!(drain(&mut c).len(), 3);
    // Seq 3 is due: Seq 7 is 4 ahead, held.
    c.handle_text(T0, &chunk(&id, 7, "7"));
    assert_eq!(drain(&mut c), vec![]);
    // Seq 8 is 5 ahead.
    c.handle_text(T0, &chunk(&id, 8, "8"));
    let events = drain(&mut c);
    assert!(
        matches!(&events[..], [ClientEvent::Failed { id: f, error }] if f == &id && error.kind() == ErrorKind::Protocol),
        "{events:?}"
    );
}

/// `max_stream_buffer_bytes` bounds the bytes held out of order even while fewer than
/// `max_stream_buffer` chunks are: up to it they are held, past it the stream fails with `limit`.
#[test]
fn the_bytes_held_out_of_order_are_bounded_on_their_own() {
    let cfg = ClientConfig {
        max_stream_buffer_bytes: 16,
        ..no_keepalive()
    };
    let mut c = ready(cfg);
    let id = open_stream(&mut c);
    // Seq 0 missing: 8 + 8 bytes held, exactly the bound.
    c.handle_text(T0, &chunk(&id, 1, r#""123456""#));
    c.handle_text(T0, &chunk(&id, 2, r#""123456""#));
    assert_eq!(drain(&mut c), vec![]);
    // One byte more.
    c.handle_text(T0, &chunk(&id, 3, "1"));
    let events = drain(&mut c);
    assert!(
        matches!(&events[..], [ClientEvent::Failed { id: f, error }] if f == &id && error.kind() == ErrorKind::Limit),
        "{events:?}"
    );
}

/// A STREAM_END whose body gives no `count` (the field is optional in practice) ends the stream
/// with no `Error`: there is nothing to check. Only an unreadable body is said.
#[test]
fn a_stream_end_without_a_count_ends_the_stream_silently() {
    let mut c = ready(no_keepalive());
    let id = open_stream(&mut c);
    c.handle_text(T0, &chunk(&id, 0, "1"));
    drain(&mut c);
    c.handle_text(T0, &reply("STREAM_END", "e", &id, "", r#"{"total":1}"#));
    let events = drain(&mut c);
    assert!(
        matches!(&events[..], [ClientEvent::StreamEnd { id: e, .. }] if e == &id),
        "{events:?}"
    );
}

/// Chunks released in order give their bytes back to `max_stream_buffer_bytes`: a stream may
/// hold up to the bound again and again.
#[test]
fn released_chunks_give_back_the_bytes_they_held() {
    let cfg = ClientConfig {
        max_stream_buffer_bytes: 16,
        ..no_keepalive()
    };
    let mut c = ready(cfg);
    let id = open_stream(&mut c);
    for round in 0..3u64 {
        let base = round * 3;
        c.handle_text(T0, &chunk(&id, base + 1, r#""123456""#));
        c.handle_text(T0, &chunk(&id, base + 2, r#""123456""#));
        c.handle_text(T0, &chunk(&id, base, "1"));
        let events = drain(&mut c);
        assert_eq!(events.len(), 3, "round {round}: {events:?}");
        assert!(
            events.iter().all(|e| matches!(e, ClientEvent::StreamData { .. })),
            "round {round}: {events:?}"
        );
    }
}

/// A STREAM_END counting fewer chunks than were delivered says so (not "a gap").
#[test]
fn a_stream_end_counting_fewer_chunks_than_delivered_says_so() {
    let mut c = ready(no_keepalive());
    // (count, a chunk held past a gap, what the error says)
    let cases = [
        (0, None, "says 0 chunks but 1 were delivered"),
        (2, None, "missing Seq [1]"),
        (1, Some(2), "missing Seq [1]"),
    ];
    for (count, held, says) in cases {
        let id = open_stream(&mut c);
        c.handle_text(T0, &chunk(&id, 0, "1"));
        if let Some(seq) = held {
            c.handle_text(T0, &chunk(&id, seq, "1"));
        }
        drain(&mut c);
        c.handle_text(
            T0,
            &reply("STREAM_END", "e", &id, "", &format!(r#"{{"count":{count}}}"#)),
        );
        let events = drain(&mut c);
        let [ClientEvent::Failed { error, .. }] = &events[..] else {
            panic!("{events:?}")
        };
        assert_eq!(error.kind(), ErrorKind::Protocol);
        assert!(error.error.message.contains(says), "{}", error.error.message);
    }
}

/// Every command that went out and ended early is remembered (up to 256), not only the last:
/// late replies to two cancelled commands are both dropped quietly.
#[test]
fn late_replies_to_every_cancelled_command_are_dropped_quietly() {
    let mut c = ready(no_keepalive());
    let ids: Vec<String> = (0..3).map(|_| c.discover(T0).unwrap()).collect();
    drain(&mut c);
    for id in &ids {
        assert!(c.cancel(id));
    }
    assert_eq!(events(&mut c).len(), 3);
    for id in &ids {
        c.handle_text(T0 + 1, &reply("RESPONSE", "late", id, "", "{}"));
        c.handle_text(T0 + 1, &reply("ERROR", "late", id, "", r#"{"code":500,"message":"m"}"#));
    }
    let events = events(&mut c);
    assert!(events.is_empty(), "{events:?}");
}

/// Without `keepalive` no timer is armed and no PING leaves, however long the session idles;
/// with it, none when the server's `session_timeout` is under 2 s.
#[test]
fn no_keepalive_ping_when_it_is_off_or_the_session_timeout_is_too_short() {
    let mut c = ready(no_keepalive());
    assert_eq!(c.poll_timeout(), None);
    c.handle_timeout(T0 + 3_600_000);
    assert!(drain(&mut c).is_empty());
    assert!(c.poll_transmit().is_none());

    let c = ready_with(ClientConfig::default(), 1);
    assert_eq!(c.poll_timeout(), None);
}

/// A STREAM_END without a count while chunks are held names every Seq missing up to the last
/// one held.
#[test]
fn a_stream_end_without_a_count_names_every_seq_missing_below_the_last_held() {
    let mut c = ready(no_keepalive());
    let id = open_stream(&mut c);
    for seq in [0, 3, 5] {
        c.handle_text(T0, &chunk(&id, seq, r#""x""#));
    }
    drain(&mut c);
    c.handle_text(T0, &reply("STREAM_END", "e", &id, "", ""));
    let events = events(&mut c);
    let [ClientEvent::Failed { id: failed, error }] = &events[..] else {
        panic!("{events:?}")
    };
    assert_eq!(failed, &id);
    assert!(error.error.message.ends_with("missing Seq [1, 2, 4]"), "{error}");
}
