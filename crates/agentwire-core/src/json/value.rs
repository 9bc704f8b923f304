//! [`parse`]: a text as a `serde_json::Value`, read as `serde_json::from_str::<Value>` reads it
//! in a build without serde_json's `raw_value` feature, whatever the build: serde_json's reader
//! (`deserialize_any`), its recursion limit, numbers, strings and errors, with a visitor of its
//! own. With `raw_value` on (any build that has MoltZap or Switch: the npm `agentwire` entry,
//! agentwire-native), the `Value` visitor reads a map whose first key is serde_json's raw-value
//! token by a typed `deserialize_str`, which reaches serde_json's type error and so serde's
//! `Unexpected` and Rust's `f64` formatting (`docs/size.md`, stop 44); here that key is a key.

use serde::de::{self, Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Value};
use std::fmt;

/// The map key by which a `serde_json::Value` parse with serde_json's `raw_value` feature reads
/// a map as the JSON text of the string after it; [`parse`] reads it as any other key.
pub const RAW_VALUE_TOKEN: &str = "$serde_json::private::RawValue";

/// What `serde_json::from_str::<Value>(text)` gives without serde_json's `raw_value` feature: the
/// same values (numbers as serde_json reads them, the last of two equal keys) and the same
/// errors, word for word, line and column included.
pub fn parse(text: &str) -> Result<Value, serde_json::Error> {
    serde_json::from_str::<Any>(text).map(|a| a.0)
}

/// Any value, read through serde_json's `deserialize_any` only.
struct Any(Value);

impl<'de> Deserialize<'de> for Any {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(AnyVisitor)
    }
}

struct AnyVisitor;

impl<'de> Visitor<'de> for AnyVisitor {
    type Value = Any;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any valid JSON value")
    }

    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Any, E> {
        Ok(Any(Value::Bool(v)))
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Any, E> {
        Ok(Any(Value::Number(v.into())))
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Any, E> {
        Ok(Any(Value::Number(v.into())))
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Any, E> {
        // `null` for a non-finite one, as the `Value` visitor (serde_json's reader gives none).
        Ok(Any(Value::from(v)))
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Any, E> {
        Ok(Any(Value::String(v.to_owned())))
    }

    fn visit_string<E: de::Error>(self, v: String) -> Result<Any, E> {
        Ok(Any(Value::String(v)))
    }

    fn visit_unit<E: de::Error>(self) -> Result<Any, E> {
        Ok(Any(Value::Null))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Any, A::Error> {
        let mut items = Vec::new();
        while let Some(Any(v)) = seq.next_element()? {
            items.push(v);
        }
        Ok(Any(Value::Array(items)))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Any, A::Error> {
        let mut values = Map::new();
        while let Some((Key(k), Any(v))) = map.next_entry()? {
            values.insert(k, v);
        }
        Ok(Any(Value::Object(values)))
    }
}

/// A map key (serde_json reads a key as a string, whatever the visitor asks for).
struct Key(String);

impl<'de> Deserialize<'de> for Key {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(KeyVisitor)
    }
}

struct KeyVisitor;

impl<'de> Visitor<'de> for KeyVisitor {
    type Value = Key;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a string key")
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Key, E> {
        Ok(Key(v.to_owned()))
    }
}

#[cfg(test)]
#[path = "value_tests.rs"]
mod tests;
