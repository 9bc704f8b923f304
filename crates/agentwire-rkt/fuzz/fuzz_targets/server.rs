//! Fuzzes the server session with the reference agent behind it: the input is split at NUL
//! bytes into text frames (line mode and whole messages alike), fed with advancing time. It
//! must never panic, every frame must get a bounded answer, every frame it writes must decode,
//! and a session that is still open must answer a clean HELLO + PING afterwards.
#![no_main]

use agentwire_core::SeededEntropy;
use agentwire_rkt::reference::{self, Connection, ReferenceConfig, Shared};
use agentwire_rkt::{decode, ServerEvent, ServerSession, ServerState};
use libfuzzer_sys::fuzz_target;

const T0: u64 = 1_782_648_000_000;
const HELLO: &str =
    "RKT/1.0 HELLO\nVersion: 1\nMessage-ID: h\nSession-ID: s\nTimestamp: 2026-06-28T12:00:00Z\nTTL: 30\n";
const PING: &str = "RKT/1.0 PING\nVersion: 1\nMessage-ID: p\nSession-ID: s\nTimestamp: 2026-06-28T12:00:00Z\nTTL: 30\n";

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let mut cfg = ReferenceConfig::default();
    cfg.prices.insert("weather.forecast".into(), 0.5);
    let mut shared = Shared::new(&cfg);
    let mut conn = Connection::new(&cfg);
    let mut entropy = SeededEntropy::new(7);
    let mut session = ServerSession::new(cfg.server_config(), Box::new(SeededEntropy::new(8)));
    session.handle_open(T0);
    let mut now = T0;
    let mut pump = |session: &mut ServerSession, now: u64| -> usize {
        while let Some(ev) = session.poll_event() {
            if let ServerEvent::Inbound(m) = ev {
                reference::handle(&cfg, &mut shared, &mut conn, session, &mut entropy, now, m);
            }
        }
        std::iter::from_fn(|| session.poll_transmit())
            .inspect(|out| {
                // Every frame the session writes is one its own decoder reads.
                if let Some(text) = out.as_text() {
                    if let Err(e) = decode(text, usize::MAX) {
                        panic!("{e}: {text:?}");
                    }
                }
            })
            .count()
    };
    for frame in text.split('\0') {
        now += 250;
        session.handle_text(now, frame);
        if let Some(t) = session.poll_timeout() {
            if t <= now {
                session.handle_timeout(now);
            }
        }
        // A frame can complete at most a few messages, each answered by a bounded number of frames.
        assert!(pump(&mut session, now) <= 64);
    }
    session.handle_timeout(now + 61_000);
    pump(&mut session, now + 61_000);
    if session.state() != ServerState::Closed {
        session.handle_text(now + 61_000, HELLO);
        session.handle_text(now + 61_000, PING);
        let mut answers = Vec::new();
        while let Some(ev) = session.poll_event() {
            drop(ev);
        }
        while let Some(out) = session.poll_transmit() {
            answers.push(out);
        }
        assert!(
            answers
                .iter()
                .any(|o| o.as_text().is_some_and(|t| t.starts_with("RKT/1.0 PONG\n"))),
            "{answers:?}"
        );
    }
});
