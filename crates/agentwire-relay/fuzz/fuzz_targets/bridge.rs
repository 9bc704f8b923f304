//! Fuzzes the SSE bridge: a script of inputs (open answers, SSE chunks, stream ends, browser
//! texts and closes, beat answers, time) taken from the fuzz input must never panic; nothing may
//! follow the one close; never two beats in flight; every frame for the browser must be within the
//! frame limit; and the bridge is closed exactly when it said so. (That every such frame is one
//! the engine decodes is checked by the property test `bridge::proptests`: this target has only
//! the fuzz crate's dependencies.)
//!
//! Input: a config byte (frame limit, ping interval), then records of an op byte, a length byte
//! and that many bytes. Op low 3 bits: 0 open answer, 1 SSE chunk, 2 stream end, 3 browser
//! text, 4 browser pong (cursor from the bytes), 5 beat answer, 6 time, 7 browser close; the
//! high bits advance the clock.
#![no_main]

use agentwire_relay::bridge::{Bridge, BridgeConfig, Output};
use libfuzzer_sys::fuzz_target;

const CID: &str = "19209fad-88d2-4353-b857-10454fb40fa5";

fuzz_target!(|data: &[u8]| {
    let Some((&mode, script)) = data.split_first() else {
        return;
    };
    let mut cfg = BridgeConfig::new("agent", CID);
    cfg.set_max_frame_bytes(64 + usize::from(mode & 0x0f) * 256);
    cfg.max_pending_bytes = 16 * cfg.max_frame_bytes;
    cfg.ping_interval_ms = u64::from(mode >> 4) * 150;
    let (limit, pending_limit) = (cfg.max_frame_bytes, cfg.max_pending_bytes);
    let mut b = Bridge::new(cfg, 0);
    let mut now = 0u64;
    let mut closed = false;
    let mut in_flight = false;
    let mut rest = script;
    while let [op, len, tail @ ..] = rest {
        let n = usize::from(*len).min(tail.len());
        let (body, next) = tail.split_at(n);
        rest = next;
        let text = String::from_utf8_lossy(body);
        now += u64::from(*op >> 3) * 97;
        let status = |bytes: &[u8]| match bytes.first() {
            None => 200,
            Some(&s) => [0, 200, 400, 401, 403, 404, 409, 422, 429, 500][usize::from(s) % 10],
        };
        match op & 7 {
            0 => {
                let ct = (len & 1 == 0).then_some("text/event-stream");
                b.handle_open_response(now, status(body), ct, &text);
            }
            1 => b.handle_sse(now, body),
            2 => b.handle_sse_end(now, (len & 1 == 1).then_some("reset")),
            3 => b.handle_client_text(now, &text),
            4 => {
                let cursor = body
                    .iter()
                    .fold(0u64, |c, d| c.wrapping_mul(31).wrapping_add(u64::from(*d)));
                b.handle_client_text(now, &format!(r#"{{"type":"pong","cursor":{cursor}}}"#));
            }
            5 => {
                b.handle_beat_response(now, status(body), &text);
                in_flight = false;
            }
            6 => {
                now += u64::from(*len) * 100;
                b.handle_timeout(now);
            }
            _ => b.handle_client_close(now),
        }
        let mut pending = 0usize;
        while let Some(o) = b.poll_output() {
            assert!(!closed, "output after the close: {o:?}");
            match o {
                Output::ToClient(t) => {
                    assert!(t.len() <= limit, "{} bytes over {limit}", t.len());
                    pending += t.len();
                }
                Output::Beat(_) => {
                    assert!(!in_flight, "two beats in flight");
                    in_flight = true;
                }
                Output::Close { reason, .. } => {
                    assert!(reason.len() <= 123);
                    closed = true;
                    in_flight = false;
                }
            }
        }
        assert!(pending <= pending_limit + limit);
        assert_eq!(b.is_closed(), closed);
        assert_eq!(b.poll_timeout().is_none(), closed);
    }
});
