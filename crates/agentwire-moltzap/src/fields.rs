//! The keys of one frame object, each value borrowed as raw JSON, read in one pass.

use crate::frame_error::{quoted, FrameError, FrameErrorKind};
use serde::de::{self, Deserializer, IgnoredAny, MapAccess, Visitor};
use serde::Deserialize;
use serde_json::value::RawValue;
use std::borrow::Cow;
use std::fmt;

pub(crate) const F_JSONRPC: u16 = 1;
pub(crate) const F_TYPE: u16 = 1 << 1;
pub(crate) const F_ID: u16 = 1 << 2;
pub(crate) const F_METHOD: u16 = 1 << 3;
pub(crate) const F_PARAMS: u16 = 1 << 4;
pub(crate) const F_RESULT: u16 = 1 << 5;
pub(crate) const F_ERROR: u16 = 1 << 6;
pub(crate) const F_EVENT: u16 = 1 << 7;
pub(crate) const F_DATA: u16 = 1 << 8;

const NAMES: [(u16, &str); 9] = [
    (F_JSONRPC, "jsonrpc"),
    (F_TYPE, "type"),
    (F_ID, "id"),
    (F_METHOD, "method"),
    (F_PARAMS, "params"),
    (F_RESULT, "result"),
    (F_ERROR, "error"),
    (F_EVENT, "event"),
    (F_DATA, "data"),
];

/// The name of the first known key in `present` that is not in `allowed`.
pub(crate) fn first_outside(present: u16, allowed: u16) -> Option<&'static str> {
    NAMES
        .iter()
        .find(|(bit, _)| present & !allowed & bit != 0)
        .map(|(_, n)| *n)
}

#[derive(Default)]
pub(crate) struct Fields<'a> {
    pub jsonrpc: Option<&'a RawValue>,
    pub kind: Option<&'a RawValue>,
    pub id: Option<&'a RawValue>,
    pub method: Option<&'a RawValue>,
    pub params: Option<&'a RawValue>,
    pub result: Option<&'a RawValue>,
    pub error: Option<&'a RawValue>,
    pub event: Option<&'a RawValue>,
    pub data: Option<&'a RawValue>,
    /// Which known keys were present (`F_*` bits).
    pub present: u16,
    /// The first key that is none of the above.
    pub unknown: Option<String>,
    /// The first key seen twice.
    duplicate: Option<String>,
    /// Which known keys were seen more than once (`F_*` bits).
    duplicated: u16,
}

impl<'a> Fields<'a> {
    /// Reads the keys of a frame object (the caller checked it starts with `{`). A key given
    /// twice is not refused here (the first value is kept): see [`Fields::duplicate`].
    ///
    /// Read as a [`Top`] (serde_json's `deserialize_any`), not as a map: the same reading of an
    /// object, errors included, without serde_json's type error for a value that is not one,
    /// which keeps Rust's float formatting in the wasm (docs/size.md).
    pub(crate) fn parse(json: &'a str) -> Result<Self, FrameError> {
        match serde_json::from_str(json).map_err(|e| FrameError::syntax(&e))? {
            Top::Frame(f) => Ok(f),
            // Not reached: the caller checked for `{`.
            Top::Batch(_) | Top::Other => Err(FrameError::new(FrameErrorKind::NotAnObject)),
        }
    }

    /// The first known key given twice.
    pub(crate) fn duplicate(&self) -> Option<&str> {
        self.duplicate.as_deref()
    }

    /// Whether `id` was given more than once (whichever key was first given twice).
    pub(crate) fn id_duplicated(&self) -> bool {
        self.duplicated & F_ID != 0
    }
}

/// One top-level JSON value of a message, read in a single pass: a frame object (its keys), a
/// batch (its elements, raw), or anything else.
pub(crate) enum Top<'a> {
    Frame(Fields<'a>),
    Batch(Vec<&'a RawValue>),
    Other,
}

impl<'de> Deserialize<'de> for Top<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(TopVisitor)
    }
}

struct TopVisitor;

macro_rules! other {
    ($($name:ident: $t:ty),*) => {
        $(fn $name<E: de::Error>(self, _: $t) -> Result<Top<'de>, E> { Ok(Top::Other) })*
    };
}

impl<'de> Visitor<'de> for TopVisitor {
    type Value = Top<'de>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a frame object or a batch")
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Top<'de>, A::Error> {
        FieldsVisitor.visit_map(map).map(Top::Frame)
    }

    fn visit_seq<A: de::SeqAccess<'de>>(self, mut seq: A) -> Result<Top<'de>, A::Error> {
        let mut batch = Vec::new();
        while let Some(el) = seq.next_element::<&'de RawValue>()? {
            batch.push(el);
        }
        Ok(Top::Batch(batch))
    }

    fn visit_unit<E: de::Error>(self) -> Result<Top<'de>, E> {
        Ok(Top::Other)
    }

    other!(visit_bool: bool, visit_i64: i64, visit_u64: u64, visit_f64: f64, visit_str: &str, visit_borrowed_str: &'de str, visit_string: String);
}

struct FieldsVisitor;

impl<'de> Visitor<'de> for FieldsVisitor {
    type Value = Fields<'de>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a frame object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Fields<'de>, A::Error> {
        let mut f = Fields::default();
        while let Some(Key(key)) = map.next_key::<Key<'de>>()? {
            let (bit, slot) = match key.as_ref() {
                "jsonrpc" => (F_JSONRPC, &mut f.jsonrpc),
                "type" => (F_TYPE, &mut f.kind),
                "id" => (F_ID, &mut f.id),
                "method" => (F_METHOD, &mut f.method),
                "params" => (F_PARAMS, &mut f.params),
                "result" => (F_RESULT, &mut f.result),
                "error" => (F_ERROR, &mut f.error),
                "event" => (F_EVENT, &mut f.event),
                "data" => (F_DATA, &mut f.data),
                _ => {
                    map.next_value::<IgnoredAny>()?;
                    if f.unknown.is_none() {
                        f.unknown = Some(quoted(key.into_owned()));
                    }
                    continue;
                }
            };
            if f.present & bit != 0 {
                map.next_value::<IgnoredAny>()?;
                f.duplicated |= bit;
                if f.duplicate.is_none() {
                    f.duplicate = Some(quoted(key.into_owned()));
                }
                continue;
            }
            *slot = Some(map.next_value::<&'de RawValue>()?);
            f.present |= bit;
        }
        Ok(f)
    }
}

/// An object key, borrowed unless it has escapes.
struct Key<'a>(Cow<'a, str>);

impl<'de> Deserialize<'de> for Key<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Key<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a key")
            }
            fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Key<'de>, E> {
                Ok(Key(Cow::Borrowed(v)))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Key<'de>, E> {
                Ok(Key(Cow::Owned(v.to_string())))
            }
        }
        d.deserialize_str(V)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// `Fields` as serde read it before, through `deserialize_map`.
    struct ByMap<'a>(Fields<'a>);

    impl<'de> Deserialize<'de> for ByMap<'de> {
        fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
            d.deserialize_map(FieldsVisitor).map(ByMap)
        }
    }

    fn show(f: &Fields<'_>) -> String {
        let raw = [
            f.jsonrpc, f.kind, f.id, f.method, f.params, f.result, f.error, f.event, f.data,
        ];
        let raw: Vec<_> = raw.iter().map(|r| r.map(RawValue::get)).collect();
        format!(
            "{raw:?} {} {:?} {:?} {}",
            f.present, f.unknown, f.duplicate, f.duplicated
        )
    }

    /// `Fields::parse` (through `Top`) reads an object as `deserialize_map` did: the same keys
    /// and values, the same syntax error word for word; and a batch through `Top` is the `Vec`
    /// of raw elements it was.
    fn agree(text: &str) {
        if text.starts_with('{') {
            let ours = Fields::parse(text).map(|f| show(&f));
            let theirs = serde_json::from_str::<ByMap<'_>>(text)
                .map(|f| show(&f.0))
                .map_err(|e| FrameError::syntax(&e));
            assert_eq!(ours, theirs, "{text}");
        }
        if text.starts_with('[') {
            let raw = |v: Vec<&RawValue>| v.iter().map(|r| r.get().to_string()).collect::<Vec<_>>();
            let ours = match serde_json::from_str::<Top<'_>>(text) {
                Ok(Top::Batch(b)) => Ok(raw(b)),
                Ok(_) => panic!("{text}: not a batch"),
                Err(e) => Err(e.to_string()),
            };
            let theirs = serde_json::from_str::<Vec<&RawValue>>(text)
                .map(raw)
                .map_err(|e| e.to_string());
            assert_eq!(ours, theirs, "{text}");
        }
    }

    #[test]
    fn an_object_and_a_batch_are_read_as_before() {
        for text in [
            r#"{"jsonrpc":"2.0","id":1,"method":"m","params":{"a":[1,2]}}"#,
            r#"{"id":1,"id":2,"x":3,"y":4,"ty\u0070e":"event"}"#,
            r#"{"\ud800":1}"#,
            r#"{"id":"\ud800","x":1e999}"#,
            "{",
            "{}",
            r#"{"a":1,}"#,
            r#"{"a" 1}"#,
            r#"{"a":1} x"#,
            r#"{"a":1}{"b":2}"#,
            "{\"a\":\"\u{1}\"}",
            r#"{1:2}"#,
            "[]",
            "[1,[2,[3]],{\"a\":\"\\ud800\"}]",
            "[1,]",
            "[1 2]",
            "[",
            "[1] 2",
        ] {
            agree(text);
        }
        let deep = format!("[{}1{}]", "[".repeat(200), "]".repeat(200));
        agree(&deep);
        let deep = format!(r#"{{"params":{}1{}}}"#, "[".repeat(200), "]".repeat(200));
        agree(&deep);
    }

    fn piece() -> impl Strategy<Value = &'static str> {
        prop::sample::select(vec![
            "{",
            "}",
            "[",
            "]",
            ",",
            ":",
            " ",
            "\"id\"",
            "\"jsonrpc\"",
            "\"method\"",
            "\"x\"",
            "\"\\ud800\"",
            "\"2.0\"",
            "1",
            "-0",
            "1e999",
            "null",
            "true",
            "\"a\\\"b\"",
            "\"\\u00e9\"",
            "x",
        ])
    }

    proptest! {
        #[test]
        fn any_text_is_read_as_before(open in prop::sample::select(vec!["{", "["]), rest in prop::collection::vec(piece(), 0..12)) {
            agree(&format!("{open}{}", rest.concat()));
        }

        #[test]
        fn objects_are_read_as_before(members in prop::collection::vec((piece(), piece()), 0..6)) {
            let body: Vec<String> = members.iter().map(|(k, v)| format!("{k}:{v}")).collect();
            agree(&format!("{{{}}}", body.join(",")));
            agree(&format!("[{}]", body.join(",")));
        }
    }
}
