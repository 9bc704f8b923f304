//! The script both connection targets (`connection`, `configured`) play on a started
//! connection: a record is an op byte, a length byte, then that many bytes. Nothing may panic;
//! every event's text (`to_json_string`, what bindings hand out) is its `to_json` object, and
//! domain events have strictly rising sequences between gaps.

use agentwire_switch::connection::{Connection, Event, Transmit};

/// The connection's config from the mode byte: the transport, and small queue bounds.
pub fn base_config(mode: u8) -> agentwire_switch::connection::ConnectionConfig {
    use agentwire_switch::connection::{ConnectionConfig, Transport};
    let mut cfg = ConnectionConfig::new(agentwire_switch::open::OpenParams::new(
        "agent",
        "19209fad-88d2-4353-b857-10454fb40fa5",
    ));
    cfg.transport = match mode % 3 {
        0 => Transport::WebSocket,
        1 => Transport::Sse,
        _ => Transport::Auto,
    };
    cfg.max_queued_events = 1 + usize::from(mode >> 4);
    if mode & 8 != 0 {
        cfg.max_queued_bytes = 64 * (1 + usize::from(mode >> 4)); // a few events' worth
    }
    cfg
}

/// `event`'s text read back as serde_json reads it (without its depth limit: a `detail` may nest
/// as deep as serde_json takes, and the event around it one more).
fn text_as_value(event: &Event) -> serde_json::Value {
    let text = event.to_json_string();
    let mut de = serde_json::Deserializer::from_str(&text);
    de.disable_recursion_limit();
    serde::Deserialize::deserialize(&mut de).unwrap_or_else(|err| panic!("{text}: {err}"))
}

/// Plays `script` on `c`, started at time 0.
pub fn play(c: &mut Connection, script: &[u8]) {
    let mut now = 0u64;
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
            3 => c.handle_close(
                now,
                u16::from_le_bytes([body.first().copied().unwrap_or(0), *len]),
                &text,
            ),
            4 if body.first() == Some(&255) => {
                let e = agentwire_switch::SwitchError::local(agentwire_core::ErrorKind::Auth, text.as_ref());
                c.handle_open_unusable(now, e)
            }
            4 if body.first() == Some(&254) => c.handle_open_error(now, &text),
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
            _ if *len == 0xfe => {
                c.reconnect_now(now);
            }
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
}
