//! Property tests: arbitrary inputs in any order never panic, nothing follows the one close,
//! never two beats in flight, every frame sent to the browser is one the engine decodes, and the
//! SSE body's chunking never changes what is sent.

use super::testutil::*;
use super::{Bridge, BridgeConfig, Output};
use agentwire_switch::sse::encode_event;
use proptest::prelude::*;

#[derive(Debug, Clone)]
enum Op {
    Open {
        status: u16,
        event_stream: bool,
        body: String,
    },
    /// A well-formed-ish SSE frame (see [`frame`]), fed in two chunks split at `cut`.
    Frame {
        kind: u8,
        seq: u64,
        cut: usize,
    },
    Bytes(Vec<u8>),
    End(bool),
    Pong(u64),
    Text(String),
    ClientClose,
    Beat {
        status: u16,
        body: String,
    },
    Advance(u64),
}

fn frame(kind: u8, seq: u64) -> String {
    match kind % 14 {
        0 => SSE_STATE.to_owned(),
        1..=4 => message_frame(seq, "hi"),
        5 => ": keepalive\n\n".to_owned(),
        6 => encode_event("evicted", r#"{"reason":"heartbeat lapsed"}"#, None),
        7 => encode_event(
            "gap",
            &format!(r#"{{"from_sequence":{seq},"resumed_at":{},"reason":"r"}}"#, seq / 2),
            None,
        ),
        8 => encode_event("subscription_changed", r#"{"rooms":["r2"],"reason":"x"}"#, None),
        9 => encode_event("message", "}{ not json", Some(&seq.to_string())),
        10 => encode_event("refused", r#"{"status":409,"detail":"no"}"#, None),
        // Rooms a gap names, written to the byte (`Bridge::fit_naming_rooms` checks its length).
        12 => encode_event(
            "subscription_changed",
            r#"{"rooms":["r1","\u00e9","r1","\ud83d\ude00\"","r3"],"reason":"x"}"#,
            None,
        ),
        13 => {
            let room = ["r1", "r2", r"\u00e9", "r9"][seq as usize % 4];
            encode_event("room_released", &format!(r#"{{"room_id":"{room}"}}"#), None)
        }
        _ => encode_event("ping", "{}", None),
    }
}

fn status() -> impl Strategy<Value = u16> {
    prop_oneof![
        Just(0u16),
        Just(200),
        Just(401),
        Just(404),
        Just(409),
        Just(422),
        Just(503),
        0u16..1000,
    ]
}

fn body() -> impl Strategy<Value = String> {
    prop_oneof![
        Just(String::new()),
        Just(r#"{"detail":"x","code":"taken_over"}"#.to_owned()),
        Just(r#"{"detail":{"message":"m"}}"#.to_owned()),
        ".{0,40}",
    ]
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        2 => (status(), any::<bool>(), body()).prop_map(|(status, event_stream, body)| Op::Open { status, event_stream, body }),
        8 => (any::<u8>(), 0u64..50, any::<usize>()).prop_map(|(kind, seq, cut)| Op::Frame { kind, seq, cut }),
        2 => proptest::collection::vec(any::<u8>(), 0..200).prop_map(Op::Bytes),
        1 => any::<bool>().prop_map(Op::End),
        4 => (0u64..60).prop_map(Op::Pong),
        1 => ".{0,30}".prop_map(Op::Text),
        1 => Just(Op::ClientClose),
        4 => (status(), body()).prop_map(|(status, body)| Op::Beat { status, body }),
        4 => (0u64..8_000).prop_map(Op::Advance),
    ]
}

/// Small limits, so that every limit is reached (frames the bridge writes itself included).
fn config(limit: usize) -> BridgeConfig {
    let mut cfg = BridgeConfig::new("agent", CID);
    cfg.set_max_frame_bytes(limit);
    cfg.max_pending_bytes = 16 * limit;
    cfg
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn arbitrary_inputs_keep_the_invariants(
        ops in proptest::collection::vec(op(), 0..80),
        limit in prop_oneof![48usize..400, Just(2048usize)],
    ) {
        let cfg = config(limit);
        let mut b = Bridge::new(cfg.clone(), 0);
        let mut now = 0u64;
        let mut closed = false;
        let mut in_flight = false;
        for op in ops {
            match op {
                Op::Open { status, event_stream, body } => {
                    let ct = event_stream.then_some("text/event-stream");
                    b.handle_open_response(now, status, ct, &body);
                }
                Op::Frame { kind, seq, cut } => {
                    let f = frame(kind, seq);
                    let (a, z) = f.as_bytes().split_at(cut % (f.len() + 1));
                    b.handle_sse(now, a);
                    b.handle_sse(now, z);
                }
                Op::Bytes(bytes) => b.handle_sse(now, &bytes),
                Op::End(failed) => b.handle_sse_end(now, failed.then_some("reset")),
                Op::Pong(c) => b.handle_client_text(now, &format!(r#"{{"type":"pong","cursor":{c}}}"#)),
                Op::Text(t) => b.handle_client_text(now, &t),
                Op::ClientClose => b.handle_client_close(now),
                Op::Beat { status, body } => {
                    b.handle_beat_response(now, status, &body);
                    in_flight = false;
                }
                Op::Advance(d) => {
                    now += d;
                    b.handle_timeout(now);
                }
            }
            let mut pending = 0usize;
            while let Some(o) = b.poll_output() {
                prop_assert!(!closed, "output after the close: {:?}", o);
                match o {
                    Output::ToClient(t) => {
                        prop_assert!(t.len() <= cfg.max_frame_bytes);
                        prop_assert!(agentwire_switch::frame::decode(&t).is_ok(), "the engine cannot read {}", t);
                        pending += t.len();
                    }
                    Output::Beat(_) => {
                        prop_assert!(!in_flight, "two beats in flight");
                        in_flight = true;
                    }
                    Output::Close { code, reason } => {
                        prop_assert!(reason.len() <= 123);
                        prop_assert!(code == 1000 || code == 1011 || (4000..=4999).contains(&code), "{}", code);
                        closed = true;
                        in_flight = false;
                    }
                }
            }
            prop_assert!(pending <= cfg.max_pending_bytes + cfg.max_frame_bytes);
            prop_assert_eq!(b.is_closed(), closed);
            prop_assert_eq!(b.poll_timeout().is_none(), closed);
            prop_assert!(b.buffered_bytes() <= limit + 3 * (limit + 64) + 2);
        }
    }

    #[test]
    fn chunking_never_changes_the_frames(
        kinds in proptest::collection::vec((1u8..12, 0u64..50), 0..20),
        cuts in proptest::collection::vec(any::<usize>(), 0..30),
    ) {
        let mut body = SSE_STATE.to_owned();
        for (k, seq) in kinds {
            body.push_str(&frame(k, seq));
        }
        let run = |pieces: &[&[u8]]| {
            let mut b = streaming(0);
            for p in pieces {
                b.handle_sse(1, p);
            }
            drain(&mut b)
        };
        let whole = run(&[body.as_bytes()]);
        let bytes = body.as_bytes();
        let mut at: Vec<usize> = cuts.into_iter().map(|c| c % (bytes.len() + 1)).collect();
        at.sort_unstable();
        let mut pieces = Vec::new();
        let mut from = 0;
        for c in at {
            pieces.push(&bytes[from..c]);
            from = c;
        }
        pieces.push(&bytes[from..]);
        prop_assert_eq!(run(&pieces), whole);
    }
}
