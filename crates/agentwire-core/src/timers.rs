//! Timer bookkeeping: named deadlines, the earliest one for `poll_timeout`, and the expired ones
//! for `handle_timeout`.

use crate::Millis;
use std::hash::Hash;

/// A set of deadlines keyed by `K`. Setting a key again moves its deadline.
///
/// One vector sorted by `(deadline, key)`: a session holds a handful of timers, and one small
/// vector per key type keeps the wasm build far smaller than a map plus an ordered set.
#[derive(Debug, Clone)]
pub struct Timers<K: Ord + Hash + Clone> {
    order: Vec<(Millis, K)>,
}

impl<K: Ord + Hash + Clone> Default for Timers<K> {
    fn default() -> Self {
        Timers { order: Vec::new() }
    }
}

impl<K: Ord + Hash + Clone> Timers<K> {
    pub fn new() -> Self {
        Self::default()
    }

    fn position(&self, key: &K) -> Option<usize> {
        self.order.iter().position(|(_, k)| k == key)
    }

    pub fn set(&mut self, key: K, at: Millis) {
        if let Some(i) = self.position(&key) {
            self.order.remove(i);
        }
        let i = self.order.partition_point(|(t, k)| (*t, k) < (at, &key));
        self.order.insert(i, (at, key));
    }

    pub fn cancel(&mut self, key: &K) -> bool {
        match self.position(key) {
            Some(i) => {
                self.order.remove(i);
                true
            }
            None => false,
        }
    }

    pub fn deadline(&self, key: &K) -> Option<Millis> {
        self.position(key).map(|i| self.order[i].0)
    }

    /// The earliest deadline, for `poll_timeout`.
    pub fn next(&self) -> Option<Millis> {
        self.order.first().map(|(at, _)| *at)
    }

    /// Removes and returns every key whose deadline is at or before `now`, earliest first.
    pub fn expire(&mut self, now: Millis) -> Vec<K> {
        let due = self.order.partition_point(|(at, _)| *at <= now);
        self.order.drain(..due).map(|(_, key)| key).collect()
    }

    pub fn len(&self) -> usize {
        self.order.len()
    }

    pub fn is_empty(&self) -> bool {
        self.order.is_empty()
    }

    pub fn clear(&mut self) {
        self.order.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn earliest_first_reset_and_cancel() {
        let mut t = Timers::new();
        t.set("a", 30);
        t.set("b", 10);
        t.set("c", 20);
        assert_eq!(t.next(), Some(10));
        t.set("b", 40);
        assert_eq!(t.next(), Some(20));
        assert!(t.cancel(&"c"));
        assert!(!t.cancel(&"c"));
        assert_eq!(t.expire(29), Vec::<&str>::new());
        assert_eq!(t.expire(100), vec!["a", "b"]);
        assert!(t.is_empty());
        assert_eq!(t.next(), None);
    }
}
