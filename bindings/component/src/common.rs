//! What the three interfaces share: errors, outgoing frames, entropy, small conversions.

use crate::bindings::exports::agentwire::engine::types::{CloseFrame, EngineError, ErrorKind, Outgoing};
use crate::bindings::wasi::random::random;
use agentwire_core::{Entropy, ErrorKind as Kind};

/// The host's randomness through `wasi:random/random` (the component's one import), taken 256
/// bytes at a time: one call into the host per eight UUIDs, not one per id. Each byte is handed
/// out once.
pub struct WasiEntropy {
    pool: [u8; 256],
    used: usize,
}

impl WasiEntropy {
    pub fn boxed() -> Box<WasiEntropy> {
        Box::new(WasiEntropy {
            pool: [0; 256],
            used: 256,
        })
    }
}

impl WasiEntropy {
    /// A fresh pool. WASI gives exactly the bytes asked for; a host that gives fewer is asked
    /// again for the rest, a bounded number of times, and then traps: ids drawn from a short
    /// pool would repeat.
    fn refill(&mut self) {
        let mut filled = 0;
        for _ in 0..16 {
            if filled == self.pool.len() {
                break;
            }
            let fresh = random::get_random_bytes((self.pool.len() - filled) as u64);
            let n = fresh.len().min(self.pool.len() - filled);
            self.pool[filled..filled + n].copy_from_slice(&fresh[..n]);
            filled += n;
        }
        assert!(
            filled == self.pool.len(),
            "the host's wasi:random/random gives too few bytes"
        );
        self.used = 0;
    }
}

impl Entropy for WasiEntropy {
    fn fill(&mut self, mut buf: &mut [u8]) {
        while !buf.is_empty() {
            if self.used == self.pool.len() {
                self.refill();
            }
            let n = buf.len().min(self.pool.len() - self.used);
            let (now, rest) = buf.split_at_mut(n);
            now.copy_from_slice(&self.pool[self.used..self.used + n]);
            self.pool[self.used..self.used + n].fill(0);
            self.used += n;
            buf = rest;
        }
    }
}

pub fn kind(k: Kind) -> ErrorKind {
    match k {
        Kind::Decode => ErrorKind::Decode,
        Kind::Protocol => ErrorKind::Protocol,
        Kind::Remote => ErrorKind::Remote,
        Kind::Auth => ErrorKind::Auth,
        Kind::RateLimited => ErrorKind::RateLimited,
        Kind::Version => ErrorKind::Version,
        Kind::Timeout => ErrorKind::Timeout,
        Kind::Cancelled => ErrorKind::Cancelled,
        Kind::Closed => ErrorKind::Closed,
        Kind::Limit => ErrorKind::Limit,
        Kind::State => ErrorKind::State,
        Kind::Invalid => ErrorKind::Invalid,
        Kind::Internal => ErrorKind::Internal,
    }
}

/// The core kind a host's `error-kind` names: `kind` read backwards.
pub fn core_kind(k: ErrorKind) -> Kind {
    Kind::ALL.into_iter().find(|&c| kind(c) == k).unwrap_or(Kind::Internal)
}

/// An engine error from its core fields and the protocol's JSON of the whole error.
pub fn engine_error(e: &agentwire_core::Error, json: String) -> EngineError {
    EngineError {
        kind: kind(e.kind),
        code: e.code,
        message: e.message.clone(),
        retryable: e.retryable,
        json,
    }
}

pub fn outgoing(o: agentwire_core::Outgoing) -> Outgoing {
    match o {
        agentwire_core::Outgoing::Text(t) => Outgoing::Text(t),
        agentwire_core::Outgoing::Binary(b) => Outgoing::Binary(b),
        agentwire_core::Outgoing::Close { code, reason } => Outgoing::Close(CloseFrame { code, reason }),
    }
}

/// A `u32` bound from WIT as the engine's `usize`.
pub fn size(n: u32) -> usize {
    n as usize
}
