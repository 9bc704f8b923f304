//! Heap held by a connected `Session` with 10,000 requests in flight, measured by a counting
//! allocator; and request 10,001 refused with `limit`. Prints the figures; exits 1 when a check
//! fails.
//!
//! `cargo bench -p agentwire-moltzap --bench memory`

use agentwire_core::ErrorKind;
use agentwire_moltzap::{Credentials, Event, Session, SessionConfig};
use std::process::ExitCode;

#[global_allocator]
static ALLOCATOR: agentwire_test_alloc::Counting = agentwire_test_alloc::Counting;

const PENDING: usize = 10_000;

fn main() -> ExitCode {
    let cfg = SessionConfig {
        max_in_flight: PENDING,
        ..SessionConfig::default()
    };
    let mut s = Session::new(cfg);
    s.handle_open(0);
    let id = s
        .connect(0, Credentials::AgentKey("moltzap_agent_bench".into()))
        .unwrap();
    while s.poll_transmit().is_some() {}
    s.handle_text(1, &format!(r#"{{"jsonrpc":"2.0","id":"{id}","result":{{}}}}"#));
    if !matches!(s.poll_event(), Some(Event::Connected { .. })) {
        eprintln!("not connected");
        return ExitCode::FAILURE;
    }
    let before = agentwire_test_alloc::live();
    for i in 0..PENDING {
        if let Err(e) = s.system_ping(2 + i as u64) {
            eprintln!("call {i} failed: {e:?}");
            return ExitCode::FAILURE;
        }
        // The frame goes to the socket; what stays is the correlation state.
        while s.poll_transmit().is_some() {}
    }
    let held = agentwire_test_alloc::live() - before;
    let over = s.system_ping(20_000);
    let refused = matches!(&over, Err(e) if e.error.kind == ErrorKind::Limit);
    println!(
        "{PENDING} requests in flight: {held} bytes of heap ({} bytes per request); request {} refused with limit: {refused}",
        held / PENDING as isize,
        PENDING + 1
    );
    if !refused || s.in_flight() != PENDING {
        eprintln!(
            "expected a limit error and {PENDING} in flight, got {over:?} and {}",
            s.in_flight()
        );
        return ExitCode::FAILURE;
    }
    ExitCode::SUCCESS
}
