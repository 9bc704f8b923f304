//! The harness `Endpoint` under arbitrary scripts (`tests/script/endpoint.rs`), with and without
//! the message firewall, speaking the current or the released generation: no panic, every send
//! it accepted ends with exactly one `SendDone`, every record is delivered at most once, and a
//! released recovery (its pages, windows and give-up) is bounded and ends.

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
    for released in [false, true] {
        for firewall in [false, true] {
            data[0] = (data[0] & !3) | u8::from(firewall) | u8::from(released) << 1;
            let r = script::run(&data);
            // The script reaches the endpoint's paths: sends are accepted, items delivered, and
            // with the firewall, sends and items checked; released, recoveries list and read.
            assert!(
                r.sends >= 10
                    && r.deliveries >= 5
                    && (r.checks >= 5) == firewall
                    && (r.recovery_asks >= 20) == released,
                "released {released}, firewall {firewall}: {r:?}"
            );
        }
    }
}
