//! Commands that end together fail oldest call first, also within a millisecond: at the close,
//! and when their TTLs run out in the same `handle_timeout`. The ids are random UUIDs; here the
//! entropy makes each id sort before the one made before it, so an order taken from the ids
//! (as it once was, at the close and for timers of the same deadline) is the reverse of the
//! call order.
use agentwire_core::{Entropy, Outgoing};
use agentwire_rkt::*;

const T0: u64 = 1_782_648_000_000;

/// Every id made sorts before the one made before it: the bytes of each fill count down.
struct CountingDown(u8);

impl Entropy for CountingDown {
    fn fill(&mut self, buf: &mut [u8]) {
        buf.fill(self.0);
        self.0 -= 1;
    }
}

fn no_keepalive() -> ClientConfig {
    ClientConfig {
        keepalive: false,
        ..Default::default()
    }
}

/// A session after its HELLO, and the HELLO's id.
fn opened(cfg: ClientConfig) -> (ClientSession, String) {
    let mut c = ClientSession::new(cfg, Box::new(CountingDown(0xf0)));
    c.handle_open(T0);
    let Some(Outgoing::Text(hello)) = c.poll_transmit() else {
        panic!("no HELLO")
    };
    (c, message_id(&hello))
}

fn message_id(frame: &str) -> String {
    let id = frame.lines().find_map(|l| l.strip_prefix("Message-ID: "));
    id.unwrap().to_string()
}

fn hello_ack(hello: &str) -> String {
    format!(
        "RKT/1.0 HELLO_ACK\nVersion: 1\nMessage-ID: ack\nReply-To: {hello}\nSession-ID: s\n\
         Timestamp: 2026-06-28T12:00:00Z\n\n{{\"agreed_version\":1,\"session_timeout\":300}}"
    )
}

fn ready() -> ClientSession {
    let (mut c, hello) = opened(no_keepalive());
    c.handle_text(T0, &hello_ack(&hello));
    while c.poll_event().is_some() {}
    c
}

/// Four DISCOVERs made in the same millisecond, their frames polled.
fn four_calls(c: &mut ClientSession, now: u64) -> Vec<String> {
    let ids: Vec<String> = (0..4).map(|_| c.discover(now).unwrap()).collect();
    let mut sorted = ids.clone();
    sorted.sort();
    sorted.reverse();
    assert_eq!(sorted, ids, "the entropy makes each id sort before the one before it");
    while c.poll_transmit().is_some() {}
    ids
}

/// The ids of the `Failed` events, in the order they came.
fn failed(c: &mut ClientSession) -> Vec<String> {
    std::iter::from_fn(|| c.poll_event())
        .filter_map(|e| match e {
            ClientEvent::Failed { id, .. } => Some(id),
            _ => None,
        })
        .collect()
}

#[test]
fn at_the_close_commands_fail_oldest_call_first() {
    let mut c = ready();
    let ids = four_calls(&mut c, T0 + 5);
    c.handle_close(T0 + 6, 1006, "gone");
    assert_eq!(failed(&mut c), ids);
}

#[test]
fn commands_past_their_ttl_in_the_same_millisecond_fail_oldest_call_first() {
    let mut c = ready();
    let ids = four_calls(&mut c, T0 + 5);
    c.handle_timeout(T0 + 5 + 30_000);
    assert_eq!(failed(&mut c), ids);
}

/// Commands queued for HELLO_ACK are sent highest priority first, but their TTLs restart in
/// call order: those of the same TTL time out, and fail at the close, oldest call first.
#[test]
fn commands_queued_for_hello_ack_fail_oldest_call_first_whatever_their_priority() {
    let priorities = [Priority::Low, Priority::Normal, Priority::High, Priority::Urgent];
    for close in [false, true] {
        let (mut c, hello) = opened(no_keepalive());
        let ids: Vec<String> = priorities
            .iter()
            .map(|p| {
                let opts = RequestOptions {
                    priority: Some(*p),
                    ..Default::default()
                };
                c.request(T0 + 1, "x", None, opts).unwrap()
            })
            .collect();
        c.handle_text(T0 + 2, &hello_ack(&hello));
        let sent: Vec<String> = std::iter::from_fn(|| c.poll_transmit())
            .map(|o| match o {
                Outgoing::Text(t) => message_id(&t),
                other => panic!("{other:?}"),
            })
            .collect();
        let mut by_priority = ids.clone();
        by_priority.reverse();
        assert_eq!(sent, by_priority, "sent highest priority first");
        match close {
            true => c.handle_close(T0 + 3, 1006, "gone"),
            false => c.handle_timeout(T0 + 2 + 30_000),
        }
        assert_eq!(failed(&mut c), ids, "close: {close}");
    }
}
