//! A client whose machine's wall clock steps back an hour, against a server whose clock is right:
//! fed the wall clock itself, its keepalive PING never leaves and the server ends the session
//! as idle; fed `now` through [`agentwire_core::Clock`], as the drivers do, it keeps the session.

use agentwire_core::{Clock, Millis, Outgoing, SeededEntropy};
use agentwire_rkt::*;

const T0: Millis = 1_782_648_000_000;
const STEP_BACK: Millis = 3_600_000;

fn texts(out: &mut Vec<String>, from: impl FnMut() -> Option<Outgoing>) -> bool {
    let mut closed = false;
    for o in std::iter::from_fn(from) {
        match o {
            Outgoing::Text(t) => out.push(t),
            Outgoing::Close { .. } => closed = true,
            Outgoing::Binary(_) => {}
        }
    }
    closed
}

/// 400 s of real time, second by second; 60 s in, the client's wall clock steps back an hour.
/// `client_now(wall, mono_us)` is what its driver passes. Gives (PINGs sent, when the server
/// closed).
fn run(mut client_now: impl FnMut(Millis, u64) -> Millis) -> (usize, Option<u64>) {
    let mut client = ClientSession::new(ClientConfig::default(), Box::new(SeededEntropy::new(1)));
    let mut server = ServerSession::new(ServerConfig::default(), Box::new(SeededEntropy::new(2)));
    let now = client_now(T0, 0);
    server.handle_open(T0);
    client.handle_open(now);
    let (mut c2s, mut s2c) = (Vec::new(), Vec::new());
    texts(&mut c2s, || client.poll_transmit());
    for t in c2s.drain(..) {
        server.handle_text(T0, &t);
    }
    texts(&mut s2c, || server.poll_transmit());
    for t in s2c.drain(..) {
        client.handle_text(now, &t);
    }
    assert!(matches!(
        client.poll_event(),
        Some(ClientEvent::Ready {
            session_timeout: 300,
            ..
        })
    ));
    let (mut pings, mut closed_at) = (0, None);
    for s in 1..=400u64 {
        let real = T0 + s * 1_000;
        let wall = if s >= 60 { real - STEP_BACK } else { real };
        let now = client_now(wall, s * 1_000_000);
        if client.poll_timeout().is_some_and(|at| at <= now) {
            client.handle_timeout(now);
        }
        texts(&mut c2s, || client.poll_transmit());
        pings += c2s.iter().filter(|t| t.starts_with("RKT/1.0 PING\n")).count();
        for t in c2s.drain(..) {
            server.handle_text(real, &t);
        }
        if server.poll_timeout().is_some_and(|at| at <= real) {
            server.handle_timeout(real);
        }
        if texts(&mut s2c, || server.poll_transmit()) && closed_at.is_none() {
            closed_at = Some(s);
        }
        for t in s2c.drain(..) {
            client.handle_text(now, &t);
        }
    }
    (pings, closed_at)
}

#[test]
fn the_wall_clock_alone_loses_the_session_when_it_steps_back() {
    assert_eq!(run(|wall, _| wall), (0, Some(300)));
}

#[test]
fn the_clock_keeps_the_keepalive_going_through_a_step_back() {
    let mut clock = Clock::new();
    let (pings, closed_at) = run(|wall, mono| clock.read(wall, mono));
    assert_eq!(closed_at, None);
    assert!(pings >= 2, "{pings} PINGs in 400 s, one every 150 s expected");
}
