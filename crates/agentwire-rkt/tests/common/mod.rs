//! What the RKT session tests share: a client session opened at `T0` (keepalive off), made
//! ready by a HELLO_ACK, a server message answering a request, and draining a session.
#![allow(dead_code)] // each test binary uses its own part

use agentwire_core::{Outgoing, SeededEntropy};
use agentwire_rkt::*;

pub const T0: u64 = 1_782_648_000_000;

pub fn open() -> (ClientSession, String) {
    let cfg = ClientConfig {
        keepalive: false,
        ..Default::default()
    };
    let mut c = ClientSession::new(cfg, Box::new(SeededEntropy::new(1)));
    c.handle_open(T0);
    let Some(Outgoing::Text(hello)) = c.poll_transmit() else {
        panic!("no HELLO")
    };
    let id = hello.lines().find_map(|l| l.strip_prefix("Message-ID: ")).unwrap();
    (c, id.to_string())
}

pub fn ready() -> ClientSession {
    let (mut c, hello) = open();
    c.handle_text(T0, &hello_ack(&hello));
    drain(&mut c);
    c
}

/// The HELLO_ACK answering HELLO `hello`: version 1, a session timeout of 300 s.
pub fn hello_ack(hello: &str) -> String {
    reply(
        "HELLO_ACK",
        "ack",
        hello,
        "",
        r#"{"agreed_version":1,"session_timeout":300}"#,
    )
}

/// A server message answering `to`, with `extra` header lines and a body.
pub fn reply(kind: &str, id: &str, to: &str, extra: &str, body: &str) -> String {
    format!("RKT/1.0 {kind}\nVersion: 1\nMessage-ID: {id}\nReply-To: {to}\nSession-ID: s\nTimestamp: 2026-06-28T12:00:00Z\n{extra}\n{body}")
}

pub fn drain(c: &mut ClientSession) -> Vec<ClientEvent> {
    while c.poll_transmit().is_some() {}
    std::iter::from_fn(|| c.poll_event()).collect()
}
