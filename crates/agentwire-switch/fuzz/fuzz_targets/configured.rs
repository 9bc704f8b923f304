//! Fuzzes the connection as `connection` does, under any configuration a user can pass (the npm
//! options and the component's `config` record map onto `ConnectionConfig` field by field):
//! timeouts, heartbeats, backoff, queue bounds and decode limits from 0 to `u64::MAX`. Nothing
//! may panic; a configuration `start` refuses ends the run; the events keep the properties
//! `connection` checks (every event's text is its `to_json` object; sequences rise).
//!
//! Input: six config bytes (each picks a value of `VALUES` for one group of fields), then the
//! mode byte and the script of `connection`.
#![no_main]

use agentwire_core::SeededEntropy;
use agentwire_switch::connection::{Connection, ConnectionConfig, Event, Transmit, Transport};
use agentwire_switch::open::OpenParams;
use libfuzzer_sys::fuzz_target;

/// `event`'s text read back as serde_json reads it (without its depth limit: a `detail` may nest
/// as deep as serde_json takes, and the event around it one more).
fn text_as_value(event: &Event) -> serde_json::Value {
    let text = event.to_json_string();
    let mut de = serde_json::Deserializer::from_str(&text);
    de.disable_recursion_limit();
    serde::Deserialize::deserialize(&mut de).unwrap_or_else(|err| panic!("{text}: {err}"))
}

/// Small, around the defaults, at the edges of u32 and u64.
const VALUES: [u64; 16] = [
    0, 1, 2, 3, 64, 127, 128, 200, 1_000, 30_000, 65_536, 1 << 20, u32::MAX as u64, 1 << 53, u64::MAX - 1, u64::MAX,
];

fuzz_target!(|data: &[u8]| {
    let Some((c, rest)) = data.split_first_chunk::<6>() else {
        return;
    };
    let Some((&mode, script)) = rest.split_first() else {
        return;
    };
    let v = |i: usize, hi: bool| VALUES[usize::from(if hi { c[i] >> 4 } else { c[i] & 15 })];
    let size = |x: u64| usize::try_from(x).unwrap_or(usize::MAX);
    let mut cfg = ConnectionConfig::new(OpenParams::new("agent", "19209fad-88d2-4353-b857-10454fb40fa5"));
    cfg.transport = match mode % 3 {
        0 => Transport::WebSocket,
        1 => Transport::Sse,
        _ => Transport::Auto,
    };
    cfg.max_queued_events = 1 + usize::from(mode >> 4);
    if mode & 8 != 0 {
        cfg.max_queued_bytes = 64 * (1 + usize::from(mode >> 4)); // a few events' worth
    }
    cfg.open_timeout_ms = v(0, false);
    cfg.heartbeat_interval_ms = v(0, true);
    cfg.beat_timeout_ms = v(1, false);
    cfg.stream_idle_timeout_ms = v(1, true);
    cfg.missed_heartbeats = u32::try_from(v(2, false)).unwrap_or(u32::MAX);
    cfg.max_reconnect_attempts = (c[2] & 0x10 != 0).then(|| u32::try_from(v(2, false)).unwrap_or(u32::MAX));
    cfg.connect_attempts = (c[2] & 0x20 != 0).then(|| u32::try_from(v(2, false)).unwrap_or(u32::MAX));
    cfg.backoff.base_ms = v(3, false);
    cfg.backoff.max_ms = v(3, true);
    cfg.backoff.min_ms = v(4, false);
    cfg.backoff.factor = [1.0, 1.5, 2.0, 1e308][usize::from(c[2] >> 6)];
    cfg.decode.max_depth = size(v(4, true));
    cfg.decode.max_message_bytes = size(v(5, false));
    cfg.sse.max_event_bytes = size(v(5, false));
    cfg.sse.max_line_bytes = size(v(5, true));
    let mut c = Connection::new(cfg, Box::new(SeededEntropy::new(u64::from(mode))));
    let mut now = 0u64;
    if c.start(now).is_err() {
        return;
    }
    let mut last: Option<u64> = None;
    let mut http_ids = Vec::new();
    // Each record: an op byte, a length byte, then that many bytes.
    let mut rest = script;
    while let [op, len, tail @ ..] = rest {
        let n = usize::from(*len).min(tail.len());
        let (body, next) = tail.split_at(n);
        rest = next;
        let text = String::from_utf8_lossy(body);
        now = now.saturating_add(u64::from(*op >> 3) * 97);
        match op & 7 {
            0 => c.handle_open(now),
            1 => c.handle_text(now, &text),
            2 => c.handle_bytes(now, body),
            3 => c.handle_close(now, u16::from_le_bytes([body.first().copied().unwrap_or(0), *len]), &text),
            4 if body.first() == Some(&255) => {
                let e = agentwire_switch::SwitchError::local(agentwire_core::ErrorKind::Auth, text.as_ref());
                c.handle_open_unusable(now, e)
            }
            4 => c.handle_open_failed(now, body.first().map(|b| 100 + u16::from(*b) * 2), &text),
            5 => {
                if let Some(id) = http_ids.pop() {
                    c.handle_http_response(now, id, 200 + u16::from(*len % 3) * 100 + u16::from(*len % 30), &text);
                }
            }
            // From 0xf8 on, a leap of 2^b ms: clocks jump, and timers must still saturate.
            6 if *len >= 0xf8 => {
                now = now.saturating_add(1 << (body.first().copied().unwrap_or(0) % 64));
                c.handle_timeout(now)
            }
            6 => c.handle_timeout(now.saturating_add(u64::from(*len) * 1000)),
            _ => c.close(now),
        }
        loop {
            let mut progressed = false;
            while let Some(t) = c.poll_transmit() {
                progressed = true;
                if let Transmit::Http { id, .. } = t {
                    http_ids.push(id);
                }
            }
            while let Some(e) = c.poll_event() {
                progressed = true;
                assert_eq!(text_as_value(&e), e.to_json());
                if let Event::Event { event, gap } = e {
                    if gap.is_none() {
                        if let Some(prev) = last {
                            assert!(event.sequence > prev, "{} after {prev}", event.sequence);
                        }
                    }
                    last = Some(event.sequence);
                }
            }
            if !progressed {
                break;
            }
        }
    }
});
