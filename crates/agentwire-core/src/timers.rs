//! Timer bookkeeping: named deadlines, the earliest one for `poll_timeout`, and the expired ones
//! for `handle_timeout`.

use crate::Millis;
use std::collections::{BTreeSet, HashMap};
use std::hash::Hash;

/// A set of deadlines keyed by `K`. Setting a key again moves its deadline.
#[derive(Debug, Clone)]
pub struct Timers<K: Ord + Hash + Clone> {
    by_key: HashMap<K, Millis>,
    order: BTreeSet<(Millis, K)>,
}

impl<K: Ord + Hash + Clone> Default for Timers<K> {
    fn default() -> Self {
        Timers {
            by_key: HashMap::new(),
            order: BTreeSet::new(),
        }
    }
}

impl<K: Ord + Hash + Clone> Timers<K> {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn set(&mut self, key: K, at: Millis) {
        if let Some(old) = self.by_key.insert(key.clone(), at) {
            self.order.remove(&(old, key.clone()));
        }
        self.order.insert((at, key));
    }

    pub fn cancel(&mut self, key: &K) -> bool {
        match self.by_key.remove(key) {
            Some(at) => {
                self.order.remove(&(at, key.clone()));
                true
            }
            None => false,
        }
    }

    pub fn deadline(&self, key: &K) -> Option<Millis> {
        self.by_key.get(key).copied()
    }

    /// The earliest deadline, for `poll_timeout`.
    pub fn next(&self) -> Option<Millis> {
        self.order.first().map(|(at, _)| *at)
    }

    /// Removes and returns every key whose deadline is at or before `now`, earliest first.
    pub fn expire(&mut self, now: Millis) -> Vec<K> {
        let mut out = Vec::new();
        while let Some((at, _)) = self.order.first() {
            if *at > now {
                break;
            }
            let (_, key) = self.order.pop_first().expect("checked non-empty");
            self.by_key.remove(&key);
            out.push(key);
        }
        out
    }

    pub fn len(&self) -> usize {
        self.by_key.len()
    }

    pub fn is_empty(&self) -> bool {
        self.by_key.is_empty()
    }

    pub fn clear(&mut self) {
        self.by_key.clear();
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
