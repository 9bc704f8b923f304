//! Heap held by a connected `Session` with 10,000 requests in flight, measured by a counting
//! allocator; and request 10,001 refused with `limit`. Prints the figures; exits 1 when a check
//! fails.
//!
//! `cargo bench -p agentwire-moltzap --bench memory`

use agentwire_core::{ErrorKind, SeededEntropy};
use agentwire_moltzap::{Credentials, Event, Session, SessionConfig};
use std::alloc::{GlobalAlloc, Layout, System};
use std::process::ExitCode;
use std::sync::atomic::{AtomicIsize, Ordering};

struct Counting;

static LIVE: AtomicIsize = AtomicIsize::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        LIVE.fetch_add(layout.size() as isize, Ordering::Relaxed);
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE.fetch_sub(layout.size() as isize, Ordering::Relaxed);
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        LIVE.fetch_add(new_size as isize - layout.size() as isize, Ordering::Relaxed);
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static ALLOC: Counting = Counting;

const PENDING: usize = 10_000;

fn main() -> ExitCode {
    let cfg = SessionConfig {
        max_in_flight: PENDING,
        ..SessionConfig::default()
    };
    let mut s = Session::new(cfg, Box::new(SeededEntropy::new(1)));
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
    let before = LIVE.load(Ordering::Relaxed);
    for i in 0..PENDING {
        if let Err(e) = s.system_ping(2 + i as u64) {
            eprintln!("call {i} failed: {e:?}");
            return ExitCode::FAILURE;
        }
        // The frame goes to the socket; what stays is the correlation state.
        while s.poll_transmit().is_some() {}
    }
    let held = LIVE.load(Ordering::Relaxed) - before;
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
