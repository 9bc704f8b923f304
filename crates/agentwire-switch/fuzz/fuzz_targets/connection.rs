//! Fuzzes the connection: a script of inputs (WebSocket texts, SSE chunks, closes, beat answers,
//! time, `reconnect_now`) taken from the fuzz input must never panic, and the domain events it
//! surfaces must have strictly rising sequences between gaps (never one twice). Every event's
//! text (`to_json_string`, what bindings hand out) is its `to_json` object. The script is
//! `common/script.rs`, shared with `configured`.
#![no_main]

#[path = "../common/script.rs"]
mod script;

use agentwire_core::SeededEntropy;
use agentwire_switch::connection::Connection;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&mode, steps)) = data.split_first() else {
        return;
    };
    let cfg = script::base_config(mode);
    let mut c = Connection::new(cfg, Box::new(SeededEntropy::new(u64::from(mode))));
    if c.start(0).is_err() {
        return;
    }
    script::play(&mut c, steps);
});
