//! Fuzzes the connection as `connection` does, under any configuration a user can pass (the npm
//! options and the component's `config` record map onto `ConnectionConfig` field by field):
//! timeouts, heartbeats, backoff, queue bounds and decode limits from 0 to `u64::MAX`. Nothing
//! may panic; a configuration `start` refuses ends the run; the events keep the properties
//! `connection` checks (every event's text is its `to_json` object; sequences rise).
//!
//! Input: six config bytes (each picks a value of `VALUES` for one group of fields), then the
//! mode byte and the script of `connection` (`common/script.rs`).
#![no_main]

#[path = "../common/script.rs"]
mod script;

use agentwire_core::SeededEntropy;
use agentwire_switch::connection::Connection;
use libfuzzer_sys::fuzz_target;

/// Small, around the defaults, at the edges of u32 and u64.
const VALUES: [u64; 16] = [
    0,
    1,
    2,
    3,
    64,
    127,
    128,
    200,
    1_000,
    30_000,
    65_536,
    1 << 20,
    u32::MAX as u64,
    1 << 53,
    u64::MAX - 1,
    u64::MAX,
];

fuzz_target!(|data: &[u8]| {
    let Some((c, rest)) = data.split_first_chunk::<6>() else {
        return;
    };
    let Some((&mode, steps)) = rest.split_first() else {
        return;
    };
    let v = |i: usize, hi: bool| VALUES[usize::from(if hi { c[i] >> 4 } else { c[i] & 15 })];
    let size = |x: u64| usize::try_from(x).unwrap_or(usize::MAX);
    let mut cfg = script::base_config(mode);
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
    if c.start(0).is_err() {
        return;
    }
    script::play(&mut c, steps);
});
