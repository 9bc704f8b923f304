//! A global allocator that counts the bytes live, for the tests and benches that measure what
//! something holds in heap. A test binary installs it with
//!
//! ```ignore
//! #[global_allocator]
//! static ALLOCATOR: agentwire_test_alloc::Counting = agentwire_test_alloc::Counting;
//! ```
//!
//! and reads [`live`] before and after. One binary has one global allocator, so the count is
//! the binary's own: keep other work out of the binary while it measures.
//!
//! [`explore`] is the other test support the protocol crates share: every order of a session's
//! inputs up to a small depth.

pub mod explore;

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicIsize, Ordering};

static LIVE: AtomicIsize = AtomicIsize::new(0);

/// The system allocator, counting the bytes it hands out and takes back.
pub struct Counting;

// SAFETY: every call is passed to `System` unchanged; only a counter is updated besides.
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

/// The bytes allocated through [`Counting`] and not yet freed (0 when it is not installed).
pub fn live() -> isize {
    LIVE.load(Ordering::Relaxed)
}
