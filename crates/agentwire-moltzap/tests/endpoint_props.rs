//! The harness `Endpoint` under arbitrary scripts (`tests/script/endpoint.rs`), with and without
//! the message firewall: no panic, and every send it accepted ends with exactly one `SendDone`.

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
fn a_busy_fixed_script_runs_with_and_without_the_firewall() {
    let mut data: Vec<u8> = (0..600u32)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
        .collect();
    for firewall in [false, true] {
        data[0] = (data[0] & !1) | u8::from(firewall);
        let (sends, deliveries, checks) = script::run(&data);
        // The script reaches the endpoint's paths: sends are accepted, items delivered, and
        // with the firewall, sends and items checked.
        assert!(
            sends >= 10 && deliveries >= 5 && (checks >= 10) == firewall,
            "firewall {firewall}: sends {sends}, deliveries {deliveries}, checks {checks}"
        );
    }
}
