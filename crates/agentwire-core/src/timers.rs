//! Timer bookkeeping: named deadlines, the earliest one for `poll_timeout`, and the expired ones
//! for `handle_timeout`.

use crate::Millis;

/// A set of deadlines keyed by `K`. Setting a key again moves its deadline.
///
/// One vector sorted by deadline. Keys of the same deadline expire in the order they were set
/// ([`Timers::new`]; set again, a key goes last among them), not by the key's own order: a key
/// holding a random id would fire in the order of its randomness, one holding a counter's text
/// `aw-10` before `aw-2`. [`Timers::ties_by_key`] orders them by key instead, for a fixed set of
/// kinds whose order at a tie is part of a design. A session holds a handful of timers, and
/// one small vector per key type keeps the wasm build far smaller than a map plus an ordered set.
#[derive(Debug, Clone)]
pub struct Timers<K: Ord + Clone> {
    order: Vec<(Millis, K)>,
    /// Ties expire in the keys' order, not the order they were set.
    by_key: bool,
}

impl<K: Ord + Clone> Default for Timers<K> {
    fn default() -> Self {
        Timers {
            order: Vec::new(),
            by_key: false,
        }
    }
}

impl<K: Ord + Clone> Timers<K> {
    /// Keys of the same deadline expire in the order they were set.
    pub fn new() -> Self {
        Self::default()
    }

    /// Keys of the same deadline expire in the keys' order (`K`'s `Ord`), whenever they were set.
    pub fn ties_by_key() -> Self {
        Timers {
            order: Vec::new(),
            by_key: true,
        }
    }

    fn position(&self, key: &K) -> Option<usize> {
        self.order.iter().position(|(_, k)| k == key)
    }

    pub fn set(&mut self, key: K, at: Millis) {
        if let Some(i) = self.position(&key) {
            self.order.remove(i);
        }
        let i = match self.by_key {
            true => self.order.partition_point(|(t, k)| (*t, k) < (at, &key)),
            // After every key of the same deadline: ties expire in the order they were set.
            false => self.order.partition_point(|(t, _)| *t <= at),
        };
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

    /// Removes and returns every key whose deadline is at or before `now`, earliest first, keys of
    /// the same deadline in the order they were set (or by key: [`Timers::ties_by_key`]).
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

    /// Keys of the same deadline expire in the order they were set, not in their own order; set
    /// again, a key goes after the others of its (new) deadline.
    #[test]
    fn ties_expire_in_the_order_set() {
        let mut t = Timers::new();
        for k in ["d", "c", "b", "a"] {
            t.set(k, 10);
        }
        t.set("z", 5);
        t.set("c", 10);
        assert_eq!(t.expire(10), vec!["z", "d", "b", "a", "c"]);
        let mut t = Timers::ties_by_key();
        for k in ["d", "c", "b", "a"] {
            t.set(k, 10);
        }
        t.set("z", 5);
        assert_eq!(t.expire(10), vec!["z", "a", "b", "c", "d"]);
        // Found by mutation testing: above, each key set goes first, so inserting every key at
        // the front (`<` → `==`) passed. Set in the keys' order, and a later deadline last.
        let mut t = Timers::ties_by_key();
        for (k, at) in [("a", 10), ("b", 10), ("c", 5), ("d", 20)] {
            t.set(k, at);
        }
        assert_eq!(t.expire(20), vec!["c", "a", "b", "d"]);
    }

    /// Found by mutation testing: no test read `deadline` or `len`, saw `is_empty` false or
    /// cleared, so each of them replaced by a constant (or `clear` by nothing) passed.
    #[test]
    fn deadline_len_and_clear() {
        let mut t = Timers::new();
        assert_eq!((t.len(), t.deadline(&"a")), (0, None));
        t.set("a", 30);
        t.set("b", 10);
        assert_eq!((t.len(), t.is_empty()), (2, false));
        assert_eq!(
            (t.deadline(&"a"), t.deadline(&"b"), t.deadline(&"c")),
            (Some(30), Some(10), None)
        );
        t.set("a", 5);
        assert_eq!((t.len(), t.deadline(&"a")), (2, Some(5)));
        assert!(t.cancel(&"a"));
        assert_eq!((t.len(), t.deadline(&"a")), (1, None));
        t.clear();
        assert!(t.is_empty() && t.next().is_none() && t.deadline(&"b").is_none());
    }
}
