//! The harness `Endpoint` under arbitrary scripts (`tests/script/endpoint.rs`): no panic, and
//! every send it accepted ends with exactly one `SendDone`.

#[path = "script/endpoint.rs"]
mod script;

use proptest::prelude::*;

proptest! {
    #![proptest_config(ProptestConfig::with_cases(384))]

    #[test]
    fn every_send_ends_exactly_once_and_nothing_panics(data in prop::collection::vec(any::<u8>(), 0..300)) {
        let _ = script::run(&data);
    }
}

#[test]
fn a_busy_fixed_script_runs() {
    let data: Vec<u8> = (0..600u32)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
        .collect();
    let (sends, deliveries) = script::run(&data);
    // The script reaches the endpoint's paths: sends are accepted and items delivered.
    assert!(sends >= 10 && deliveries >= 5, "sends {sends}, deliveries {deliveries}");
}
