//! Shared memory: values by namespace and key, with a TTL and a bound on entries.

use agentwire_core::Millis;
use serde_json::Value;
use std::collections::HashMap;

#[derive(Debug)]
pub struct MemoryStore {
    entries: HashMap<(String, String), (Value, Option<Millis>)>,
    max_entries: usize,
}

/// Why a value was not stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MemoryError {
    Full { max_entries: usize },
}

impl MemoryStore {
    pub fn new(max_entries: usize) -> Self {
        MemoryStore { entries: HashMap::new(), max_entries }
    }

    /// Stores `value`; `ttl_s` makes it expire. Returns the expiry time.
    pub fn set(&mut self, now: Millis, namespace: &str, key: &str, value: Value, ttl_s: Option<u64>) -> Result<Option<Millis>, MemoryError> {
        let k = (namespace.to_string(), key.to_string());
        if !self.entries.contains_key(&k) && self.entries.len() >= self.max_entries {
            self.entries.retain(|_, (_, exp)| exp.is_none_or(|e| e > now));
            if self.entries.len() >= self.max_entries {
                return Err(MemoryError::Full { max_entries: self.max_entries });
            }
        }
        let expires = ttl_s.map(|t| now.saturating_add(t.saturating_mul(1000)));
        self.entries.insert(k, (value, expires));
        Ok(expires)
    }

    pub fn get(&mut self, now: Millis, namespace: &str, key: &str) -> Option<&Value> {
        let k = (namespace.to_string(), key.to_string());
        if self.entries.get(&k).is_some_and(|(_, exp)| exp.is_some_and(|e| e <= now)) {
            self.entries.remove(&k);
            return None;
        }
        self.entries.get(&k).map(|(v, _)| v)
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn namespaces_ttl_and_bound() {
        let mut m = MemoryStore::new(2);
        m.set(0, "a", "k", json!(1), Some(10)).unwrap();
        m.set(0, "b", "k", json!(2), None).unwrap();
        assert_eq!(m.get(5_000, "a", "k"), Some(&json!(1)));
        assert_eq!(m.get(5_000, "b", "k"), Some(&json!(2)));
        assert_eq!(m.set(5_000, "c", "k", json!(3), None), Err(MemoryError::Full { max_entries: 2 }));
        assert_eq!(m.get(10_000, "a", "k"), None);
        assert!(m.set(10_000, "c", "k", json!(3), None).is_ok());
        m.set(10_000, "b", "k", json!(4), None).unwrap(); // overwrite needs no room
        assert_eq!(m.get(10_000, "b", "k"), Some(&json!(4)));
    }
}
