//! Rate limits: one token bucket per agent for what a browser asks of the relay (a WebSocket
//! open, an HTTP call), and one per socket for the frames a browser sends up it (a Switch client
//! sends one pong per ping, far below the default `FRAME_LIMIT_PER_MINUTE`; and a browser's
//! frames never eat into its agent's budget, so one tab cannot close the others).
//!
//! Buckets are only made for agents that passed the token check and have a configured key, so
//! the map is bounded by the relay's configuration, and again by [`MAX_AGENTS`]. In a Worker the
//! state lives in one isolate: Cloudflare may run several, each with its own buckets, so the
//! limit is per isolate (docs in `worker-relay/README.md`).

use agentwire_core::{Millis, TokenBucket};
use std::collections::BTreeMap;

/// Most agents (or connections) tracked at once; past it the longest-idle bucket is dropped.
pub const MAX_AGENTS: usize = 4096;

/// Token buckets by key (an agent id, or a socket's number).
#[derive(Debug, Clone)]
pub struct Limiter<K = String> {
    per_minute: u32,
    burst: u32,
    buckets: BTreeMap<K, (TokenBucket, Millis)>,
}

impl<K: Ord + Clone> Limiter<K> {
    /// `per_minute` requests a minute per agent, with up to `burst` at once.
    pub fn new(per_minute: u32, burst: u32) -> Self {
        Limiter {
            per_minute,
            burst,
            buckets: BTreeMap::new(),
        }
    }

    /// Takes one request's worth for `key`, or says in how many ms one is available.
    pub fn take<Q>(&mut self, key: &Q, now: Millis) -> Result<(), Millis>
    where
        K: std::borrow::Borrow<Q>,
        Q: Ord + ToOwned<Owned = K> + ?Sized,
    {
        self.take_n(key, 1, now)
    }

    /// Takes `n` requests' worth for `key` at once.
    pub fn take_n<Q>(&mut self, key: &Q, n: u32, now: Millis) -> Result<(), Millis>
    where
        K: std::borrow::Borrow<Q>,
        Q: Ord + ToOwned<Owned = K> + ?Sized,
    {
        if !self.buckets.contains_key(key) && self.buckets.len() >= MAX_AGENTS {
            let idle = self
                .buckets
                .iter()
                .min_by_key(|(_, (_, used))| *used)
                .map(|(k, _)| k.clone());
            if let Some(idle) = idle {
                self.buckets.remove::<K>(&idle);
            }
        }
        let (per_minute, burst) = (self.per_minute, self.burst);
        let (bucket, used) = self
            .buckets
            .entry(key.to_owned())
            .or_insert_with(|| (TokenBucket::new(f64::from(per_minute) / 60.0, f64::from(burst)), now));
        *used = now;
        bucket.take_n(n, now)
    }
}

impl<K: Ord> Limiter<K> {
    /// Drops `key`'s bucket (a connection that ended).
    pub fn forget<Q>(&mut self, key: &Q)
    where
        K: std::borrow::Borrow<Q>,
        Q: Ord + ?Sized,
    {
        self.buckets.remove(key);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_agent_has_its_own_bucket() {
        let mut l = Limiter::new(60, 2);
        assert!(l.take("a", 0).is_ok());
        assert!(l.take("a", 0).is_ok());
        assert_eq!(l.take("a", 0), Err(1000));
        assert!(l.take("b", 0).is_ok());
        assert!(l.take("a", 1000).is_ok());
    }

    #[test]
    fn a_forgotten_key_starts_full() {
        let mut l = Limiter::new(60, 1);
        assert!(l.take("c", 0).is_ok());
        assert!(l.take("c", 0).is_err());
        l.forget("c");
        assert!(l.take("c", 0).is_ok());
    }

    #[test]
    fn the_map_stays_bounded() {
        let mut l = Limiter::new(60, 1);
        for i in 0..(MAX_AGENTS + 10) {
            assert!(l.take(&format!("agent-{i}"), i as Millis).is_ok());
        }
        assert_eq!(l.buckets.len(), MAX_AGENTS);
        // The most recent agent kept its (empty) bucket.
        assert!(l.take(&format!("agent-{}", MAX_AGENTS + 9), 0).is_err());
    }
}
