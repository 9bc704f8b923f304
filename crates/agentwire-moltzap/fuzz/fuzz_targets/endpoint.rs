//! Fuzzes the harness `Endpoint` with the scripts of `tests/script/endpoint.rs` (server answers,
//! collective records, time, sends, listen and acknowledge, reconnects): nothing may panic, and
//! every send the endpoint accepted ends with exactly one `SendDone`.
#![no_main]

#[path = "../../tests/script/endpoint.rs"]
mod script;

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = script::run(data);
});
