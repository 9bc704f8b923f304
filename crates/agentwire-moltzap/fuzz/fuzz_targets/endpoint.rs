//! Fuzzes the harness `Endpoint` with the scripts of `tests/script/endpoint.rs` (server answers,
//! collective records, time, sends, listen and acknowledge, reconnects; current or released, a
//! released reconnect's recovery answered with fuzzed pages, cursors and rows): nothing may
//! panic, every send the endpoint accepted ends with exactly one `SendDone`, every record is
//! delivered at most once, and a released recovery is bounded and ends.
#![no_main]

#[path = "../../tests/script/endpoint.rs"]
mod script;

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = script::run(data);
});
