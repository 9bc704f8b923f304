//! The reference agent's memory limit bounds the heap the store really takes, measured with a
//! counting allocator (this file holds a single test so that nothing else allocates meanwhile).

use agentwire_rkt::reference::MemoryStore;
use serde_json::Value;

#[global_allocator]
static ALLOCATOR: agentwire_test_alloc::Counting = agentwire_test_alloc::Counting;

#[test]
fn a_full_store_takes_about_its_byte_limit_in_heap() {
    // `[0,0,...]`: 2 bytes of JSON text a value node, 32 bytes or more as a parsed tree.
    let text = format!("[{}0]", "0,".repeat(999));
    let cap = 1 << 20;
    let before = agentwire_test_alloc::live();
    let mut store = MemoryStore::new(100_000, cap);
    let mut stored = 0;
    loop {
        let value: Value = serde_json::from_str(&text).unwrap();
        if store.set(0, "n", &format!("k{stored}"), value, None).is_err() {
            break;
        }
        stored += 1;
    }
    let heap = agentwire_test_alloc::live().saturating_sub(before);
    assert!(stored > 0);
    assert!(store.bytes() <= cap);
    // The text itself, plus the keys and the map's own bookkeeping: well under twice the limit.
    assert!(
        heap < 2 * cap as isize,
        "{stored} values of {} bytes of text take {heap} bytes of heap under a limit of {cap}",
        text.len()
    );
    drop(store);
}
