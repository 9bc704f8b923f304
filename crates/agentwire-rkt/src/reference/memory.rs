//! Shared memory: values by namespace and key, with a TTL and a bound on entries.

use agentwire_core::Millis;
use serde_json::Value;
use std::collections::HashMap;

/// Values by `(namespace, key)`, bounded in entries and in bytes (namespace + key + the value's
/// JSON text). Each value is kept as its compact JSON text, not as a parsed tree (which takes up
/// to 20 times the text in heap: 32 bytes or more a node, for the 2 bytes of each `0,`), so the
/// byte limit bounds the heap the values take; past it, each entry costs a fixed overhead of
/// about 100 bytes (the map's slot and the string headers), bounded by `max_entries`. A value is
/// parsed again when read. Expired entries are dropped when read, and swept when the store is
/// full.
#[derive(Debug)]
pub struct MemoryStore {
    entries: HashMap<(String, String), Entry>,
    max_entries: usize,
    max_bytes: usize,
    bytes: usize,
}

#[derive(Debug)]
struct Entry {
    /// The value's compact JSON text.
    text: Box<str>,
    expires: Option<Millis>,
    size: usize,
}

/// Why a value was not stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MemoryError {
    Full {
        max_entries: usize,
        max_bytes: usize,
    },
    /// A value nested deeper than serde_json reads back (128 levels): only one built in code
    /// can be, never one decoded from a message.
    TooDeep,
}

impl MemoryStore {
    pub fn new(max_entries: usize, max_bytes: usize) -> Self {
        MemoryStore {
            entries: HashMap::new(),
            max_entries,
            max_bytes,
            bytes: 0,
        }
    }

    fn fits(&self, k: &(String, String), size: usize) -> bool {
        let old = self.entries.get(k).map_or(0, |e| e.size);
        let entries = self.entries.len() + usize::from(old == 0 && !self.entries.contains_key(k));
        entries <= self.max_entries && self.bytes - old + size <= self.max_bytes
    }

    fn sweep(&mut self, now: Millis) {
        let bytes = &mut self.bytes;
        self.entries.retain(|_, e| {
            let keep = e.expires.is_none_or(|x| x > now);
            if !keep {
                *bytes -= e.size;
            }
            keep
        });
    }

    /// Stores `value`; `ttl_s` makes it expire. Returns the expiry time.
    pub fn set(
        &mut self,
        now: Millis,
        namespace: &str,
        key: &str,
        value: Value,
        ttl_s: Option<u64>,
    ) -> Result<Option<Millis>, MemoryError> {
        let k = (namespace.to_string(), key.to_string());
        let text = value_text(&value)?;
        drop(value);
        let size = namespace.len() + key.len() + text.len();
        if !self.fits(&k, size) {
            self.sweep(now);
            if !self.fits(&k, size) {
                return Err(MemoryError::Full {
                    max_entries: self.max_entries,
                    max_bytes: self.max_bytes,
                });
            }
        }
        let expires = ttl_s.map(|t| now.saturating_add(t.saturating_mul(1000)));
        if let Some(old) = self.entries.insert(k, Entry { text, expires, size }) {
            self.bytes -= old.size;
        }
        self.bytes += size;
        Ok(expires)
    }

    /// The value stored under `(namespace, key)`, parsed from its text.
    pub fn get(&mut self, now: Millis, namespace: &str, key: &str) -> Option<Value> {
        // The text was written by serde_json and read back once by `set`.
        self.get_text(now, namespace, key)
            .and_then(|t| serde_json::from_str(t).ok())
    }

    /// The compact JSON text of the value stored under `(namespace, key)`.
    pub fn get_text(&mut self, now: Millis, namespace: &str, key: &str) -> Option<&str> {
        let k = (namespace.to_string(), key.to_string());
        if self
            .entries
            .get(&k)
            .is_some_and(|e| e.expires.is_some_and(|x| x <= now))
        {
            if let Some(old) = self.entries.remove(&k) {
                self.bytes -= old.size;
            }
            return None;
        }
        self.entries.get(&k).map(|e| &*e.text)
    }

    /// Bytes held (namespace + key + value's compact JSON text, of every entry).
    pub fn bytes(&self) -> usize {
        self.bytes
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

/// The compact JSON text of `value`, if it reads back: serde_json writes nothing it cannot read
/// but a value nested past its recursion limit (128 levels).
fn value_text(value: &Value) -> Result<Box<str>, MemoryError> {
    let text = serde_json::to_string(value).map_err(|_| MemoryError::TooDeep)?;
    // A trial read (the tree is dropped at once): what `get` will do.
    serde_json::from_str::<Value>(&text).map_err(|_| MemoryError::TooDeep)?;
    Ok(text.into_boxed_str())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn namespaces_ttl_and_bound() {
        let mut m = MemoryStore::new(2, 1 << 20);
        m.set(0, "a", "k", json!(1), Some(10)).unwrap();
        m.set(0, "b", "k", json!(2), None).unwrap();
        assert_eq!(m.get(5_000, "a", "k"), Some(json!(1)));
        assert_eq!(m.get(5_000, "b", "k"), Some(json!(2)));
        assert_eq!(
            m.set(5_000, "c", "k", json!(3), None),
            Err(MemoryError::Full {
                max_entries: 2,
                max_bytes: 1 << 20
            })
        );
        assert_eq!(m.get(10_000, "a", "k"), None);
        assert!(m.set(10_000, "c", "k", json!(3), None).is_ok());
        m.set(10_000, "b", "k", json!(4), None).unwrap(); // overwrite needs no room
        assert_eq!(m.get(10_000, "b", "k"), Some(json!(4)));
        assert_eq!(m.bytes(), 3 + 3);
    }

    #[test]
    fn a_full_store_sweeps_the_entries_expired_unread() {
        let mut m = MemoryStore::new(2, 1 << 20);
        m.set(0, "n", "a", json!(1), Some(10)).unwrap(); // expires at 10 000, 3 bytes
        m.set(0, "n", "b", json!(22), None).unwrap(); // 4 bytes
        assert!(m.set(9_999, "n", "c", json!(333), None).is_err(), "a is still alive");
        assert_eq!((m.len(), m.bytes()), (2, 3 + 4));
        // Never read, a goes when the store needs its room, at its expiry.
        m.set(10_000, "n", "c", json!(333), None).unwrap();
        assert_eq!((m.len(), m.bytes()), (2, 4 + 5));
        assert_eq!(m.get(10_000, "n", "c"), Some(json!(333)));
        assert!(!m.is_empty());
    }

    #[test]
    fn bytes_are_bounded() {
        let mut m = MemoryStore::new(100, 20);
        m.set(0, "n", "k", json!("0123456789"), Some(1)).unwrap(); // 1 + 1 + 12 bytes
        assert!(m.set(0, "n", "k2", json!("01234"), None).is_err());
        m.set(0, "n", "k", json!("x"), None).unwrap(); // overwriting frees the old bytes
        assert_eq!(m.bytes(), 5);
        m.set(0, "n", "k2", json!("01234"), None).unwrap();
        assert_eq!(m.bytes(), 5 + 10);
    }

    #[test]
    fn values_are_kept_as_their_compact_text_and_read_back_exactly() {
        let mut m = MemoryStore::new(100, 1 << 20);
        let value = json!({"a": [0, -0.0, 1.5e300, u64::MAX, i64::MIN, "\u{e9}\n\"", null, true], "b": {}});
        let text = serde_json::to_string(&value).unwrap();
        m.set(0, "n", "k", value.clone(), None).unwrap();
        assert_eq!(m.get_text(0, "n", "k"), Some(text.as_str()));
        assert_eq!(m.get(0, "n", "k"), Some(value));
        assert_eq!(m.bytes(), 2 + text.len());
    }

    #[test]
    fn a_value_too_deep_to_read_back_is_refused() {
        let nested = |n: usize| {
            let mut v = json!(0);
            for _ in 0..n {
                v = json!([v]);
            }
            v
        };
        let mut m = MemoryStore::new(100, 1 << 20);
        assert_eq!(m.set(0, "n", "k", nested(200), None), Err(MemoryError::TooDeep));
        assert!(m.is_empty());
        m.set(0, "n", "k", nested(100), None).unwrap();
        assert_eq!(m.get(0, "n", "k"), Some(nested(100)));
    }
}
