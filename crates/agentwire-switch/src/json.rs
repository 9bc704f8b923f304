//! Hand-written decoders on core's serde-free reader ([`agentwire_core::json::read`]): the HTTP
//! answers ([`crate::ops`]), the error bodies ([`crate::error`]) and the control-frame parts read
//! off the domain-event path. Each costs a few hundred bytes of wasm where a derived
//! `Deserialize` cost kilobytes (`docs/size.md`).
//!
//! They read what the derived `Deserialize` they replace read: unknown keys are ignored, a known
//! key given twice is refused, an `Option` field may be absent or `null`, a `#[serde(default)]`
//! field may be absent but not `null`, a required field must be there (a raw one may be `null`).
//! One difference, on purpose: a derived struct also read a JSON array as its fields in order;
//! here a struct is an object only (no server sends an array there).

use agentwire_core::json::fields::{FieldError, Object};
use agentwire_core::json::read::{self, Kind, Tape, Value};
use serde_json::value::RawValue;
use std::borrow::Cow;
use std::collections::BTreeMap;
use std::fmt;

/// Nesting allowed in an answer. serde_json kept no bound for raw values and ignored fields (its
/// typed values stop at 127); the reader's tape costs 16 bytes a value, so a 16 MiB answer of
/// nothing but `[` would take hundreds of MB before failing at its end. Four times serde's typed
/// limit keeps any real answer and stops that at the 513th bracket.
const ANSWER_DEPTH: usize = 512;

/// `text` on a tape (it must be one JSON value). Lenient, as serde_json was for the raw values
/// an answer carries (a stored message's lone surrogate escape, a huge number): they pass
/// through as received; a field decoded as text refuses them (`Obj`), as serde did.
pub(crate) fn parse(text: &str) -> Result<Tape<'_>, JsonError> {
    read::parse_lenient(text, ANSWER_DEPTH).map_err(|e| JsonError::Syntax(e.to_string()))
}

/// Whether `text` is JSON cut short: read as [`parse`] reads it, it ends inside a value (and is
/// not broken before that).
pub(crate) fn cut_short(text: &str) -> bool {
    matches!(read::parse_lenient(text, ANSWER_DEPTH), Err(e) if e.reason == read::Reason::Eof)
}

/// Why a value is not what a decoder reads: the message names the field at fault.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum JsonError {
    /// Not JSON.
    Syntax(String),
    /// A field of the wrong type, a key given twice, not an object, a lone surrogate escape or a
    /// number beyond `f64` in a field decoded as text.
    Field(FieldError),
    /// A required field is absent.
    Missing(&'static str),
    /// The value itself is of the wrong type (`expected` names the right one).
    Expected { expected: &'static str, got: Kind },
    /// An error inside that field's value.
    In(&'static str, Box<JsonError>),
}

impl JsonError {
    fn within(self, field: &'static str) -> Self {
        JsonError::In(field, Box::new(self))
    }
}

impl From<FieldError> for JsonError {
    fn from(e: FieldError) -> Self {
        JsonError::Field(e)
    }
}

impl fmt::Display for JsonError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            JsonError::Syntax(m) => f.write_str(m),
            JsonError::Field(e) => e.fmt(f),
            JsonError::Missing(field) => write!(f, "missing field `{field}`"),
            JsonError::Expected { expected, got } => write!(f, "expected {expected}, got {}", got.name()),
            JsonError::In(field, e) => write!(f, "in `{field}`: {e}"),
        }
    }
}

/// A value decoded from JSON the way this module reads it. Implemented by every answer type of
/// [`crate::ops`]; not nameable outside the crate, so [`crate::ops::Operation`]'s outputs are
/// this crate's answers.
pub trait FromJson: Sized {
    fn from_json(v: Value<'_, '_>) -> Result<Self, JsonError>;
}

/// An array of such values (`list_rooms`, `list_participants`).
impl<T: FromJson> FromJson for Vec<T> {
    fn from_json(v: Value<'_, '_>) -> Result<Self, JsonError> {
        if v.kind() != Kind::Array {
            return Err(JsonError::Expected {
                expected: "an array",
                got: v.kind(),
            });
        }
        v.items().map(T::from_json).collect()
    }
}

/// A value's text as a [`RawValue`] (a copy; `null` stays `null`), without parsing it again.
pub(crate) fn raw(v: Value<'_, '_>) -> Box<RawValue> {
    // SAFETY: `from_string_unchecked` needs one well-formed JSON value without surrounding
    // whitespace. A tape value's text is exactly the span of a value the reader parsed, and the
    // reader takes only what serde_json takes (the proptests of agentwire-core's
    // `json/read_tests.rs` and the fuzz target `read core` compare the two); serde_json
    // re-parses it in debug builds, so every test and fuzz run checks this.
    unsafe { RawValue::from_string_unchecked(v.raw().to_owned()) }
}

/// A field decoded as text that holds what only the lenient parse takes (serde refused it).
fn lossy(field: &'static str) -> JsonError {
    FieldError::Lossy(format!("`{field}`")).into()
}

fn wrong(field: &'static str, expected: &'static str, got: Kind) -> JsonError {
    FieldError::Type { field, expected, got }.into()
}

/// An object read as a derived `Deserialize` reads one: fields by name, unknown keys ignored.
#[derive(Clone, Copy)]
pub(crate) struct Obj<'t, 'a>(Object<'t, 'a>);

impl<'t, 'a> Obj<'t, 'a> {
    /// `v` as an object whose fields are `known`: a known key given twice is refused.
    pub(crate) fn new(v: Value<'t, 'a>, known: &[&str]) -> Result<Self, JsonError> {
        Ok(Obj(Object::known(v, known)?))
    }

    /// A field's value, `null` included.
    pub(crate) fn value(&self, field: &str) -> Option<Value<'t, 'a>> {
        self.0.value().get(field)
    }

    /// A field's value; `null` is absent.
    pub(crate) fn get(&self, field: &str) -> Option<Value<'t, 'a>> {
        self.0.get(field)
    }

    fn required(&self, field: &'static str) -> Result<Value<'t, 'a>, JsonError> {
        self.value(field).ok_or(JsonError::Missing(field))
    }

    /// For a field that is not an `Option`: `null` is refused (absent is fine).
    fn not_null(&self, field: &'static str, expected: &'static str) -> Result<(), JsonError> {
        Ok(self.0.not_null(field, expected)?)
    }

    /// Refuses a field decoded as text that holds what only the lenient parse takes.
    fn decoded(&self, field: &'static str) -> Result<(), JsonError> {
        match self.value(field) {
            Some(v) if v.lossy() => Err(lossy(field)),
            _ => Ok(()),
        }
    }

    /// `String`.
    pub(crate) fn string(&self, field: &'static str) -> Result<String, JsonError> {
        self.decoded(field)?;
        let v = self.required(field)?;
        v.as_str()
            .map(Cow::into_owned)
            .ok_or_else(|| wrong(field, "a string", v.kind()))
    }

    /// `u64`: a number out of range says the range ([`FieldError::Range`]).
    pub(crate) fn u64(&self, field: &'static str) -> Result<u64, JsonError> {
        let v = self.required(field)?;
        self.0
            .uint(field)?
            .ok_or_else(|| wrong(field, "a whole number ≥ 0", v.kind()))
    }

    /// `Option<String>`.
    pub(crate) fn opt_string(&self, field: &'static str) -> Result<Option<String>, JsonError> {
        self.decoded(field)?;
        Ok(self.0.string(field)?)
    }

    /// `Option<u64>`.
    pub(crate) fn opt_u64(&self, field: &'static str) -> Result<Option<u64>, JsonError> {
        Ok(self.0.uint(field)?)
    }

    /// `#[serde(default)] String`.
    pub(crate) fn string_or_empty(&self, field: &'static str) -> Result<String, JsonError> {
        self.not_null(field, "a string")?;
        Ok(self.opt_string(field)?.unwrap_or_default())
    }

    /// `#[serde(default)] bool`.
    pub(crate) fn flag(&self, field: &'static str) -> Result<bool, JsonError> {
        self.not_null(field, "a boolean")?;
        Ok(self.0.bool(field)?.unwrap_or(false))
    }

    /// `#[serde(default)] Vec<String>`.
    pub(crate) fn strings(&self, field: &'static str) -> Result<Vec<String>, JsonError> {
        self.not_null(field, "an array of strings")?;
        self.decoded(field)?;
        Ok(self.0.strings(field)?.unwrap_or_default())
    }

    /// `Option<Box<RawValue>>` (serde_json reads `null` as `None` there too).
    pub(crate) fn opt_raw(&self, field: &'static str) -> Result<Option<Box<RawValue>>, JsonError> {
        Ok(self.get(field).map(raw))
    }

    /// `Box<RawValue>`: required, `null` kept.
    pub(crate) fn raw(&self, field: &'static str) -> Result<Box<RawValue>, JsonError> {
        Ok(raw(self.required(field)?))
    }

    /// The members of an object field (`#[serde(default)]` maps: absent is empty, `null`
    /// refused), each value read by `each`; a key given twice keeps its last value, as a
    /// `BTreeMap` did.
    pub(crate) fn map<T>(
        &self,
        field: &'static str,
        each: impl Fn(Value<'t, 'a>) -> Result<T, JsonError>,
    ) -> Result<BTreeMap<String, T>, JsonError> {
        let mut out = BTreeMap::new();
        let Some(v) = self.value(field) else {
            return Ok(out);
        };
        if v.kind() != Kind::Object {
            return Err(wrong(field, "an object", v.kind()));
        }
        for (k, item) in v.members() {
            if k.lossy() {
                return Err(lossy(field));
            }
            out.insert(k.text().into_owned(), each(item).map_err(|e| e.within(field))?);
        }
        Ok(out)
    }

    /// `#[serde(default)] BTreeMap<String, String>`.
    pub(crate) fn string_map(&self, field: &'static str) -> Result<BTreeMap<String, String>, JsonError> {
        self.map(field, |v| {
            if v.lossy() {
                return Err(lossy(field));
            }
            v.as_str().map(Cow::into_owned).ok_or(JsonError::Expected {
                expected: "a string",
                got: v.kind(),
            })
        })
    }

    /// The items of an array field (`#[serde(default)] Vec`: absent is empty, `null` refused),
    /// each read by `each`.
    pub(crate) fn list<T>(
        &self,
        field: &'static str,
        each: impl Fn(Value<'t, 'a>) -> Result<T, JsonError>,
    ) -> Result<Vec<T>, JsonError> {
        match self.value(field) {
            None => Ok(Vec::new()),
            Some(v) if v.kind() == Kind::Array => v.items().map(|i| each(i).map_err(|e| e.within(field))).collect(),
            Some(v) => Err(wrong(field, "an array", v.kind())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn obj<'t>(t: &'t Tape<'t>, known: &[&str]) -> Result<Obj<'t, 't>, JsonError> {
        Obj::new(t.root(), known)
    }

    #[test]
    fn known_keys_once_unknown_keys_ignored() {
        let t = parse(r#"{"a":1,"x":2,"x":3,"b":"s"}"#).unwrap();
        let o = obj(&t, &["a", "b"]).unwrap();
        assert_eq!((o.u64("a").unwrap(), o.string("b").unwrap().as_str()), (1, "s"));
        let t = parse(r#"{"a":1,"x":2,"a":3}"#).unwrap();
        assert_eq!(obj(&t, &["a", "b"]).err().unwrap().to_string(), "field `a` given twice");
        // An escaped key is the same key.
        let t = parse(r#"{"a":1,"\u0061":2}"#).unwrap();
        assert!(matches!(
            obj(&t, &["a"]).err(),
            Some(JsonError::Field(FieldError::Repeated(k))) if k == "a"
        ));
        let t = parse(r#"["a",1]"#).unwrap();
        assert_eq!(
            obj(&t, &["a"]).err().unwrap().to_string(),
            "expected an object, got an array"
        );
        assert!(matches!(parse("{").unwrap_err(), JsonError::Syntax(_)));
    }

    #[test]
    fn null_is_absent_only_for_options() {
        let t = parse(r#"{"s":null,"n":null,"f":null,"l":null,"m":null,"r":null}"#).unwrap();
        let o = obj(&t, &["s", "n", "f", "l", "m", "r"]).unwrap();
        assert_eq!(o.opt_string("s").unwrap(), None);
        assert_eq!(o.opt_u64("n").unwrap(), None);
        assert!(o.opt_raw("r").unwrap().is_none());
        assert_eq!(o.raw("r").unwrap().get(), "null", "a required raw field keeps null");
        assert_eq!(o.string("s").unwrap_err().to_string(), "`s` must be a string, not null");
        assert_eq!(o.flag("f").unwrap_err().to_string(), "`f` must be a boolean, not null");
        assert_eq!(
            o.strings("l").unwrap_err().to_string(),
            "`l` must be an array of strings, not null"
        );
        assert_eq!(
            o.string_map("m").unwrap_err().to_string(),
            "`m` must be an object, not null"
        );
        assert_eq!(
            o.list("l", |v| Ok(raw(v))).unwrap_err().to_string(),
            "`l` must be an array, not null"
        );
        assert_eq!(
            o.string_or_empty("s").unwrap_err().to_string(),
            "`s` must be a string, not null"
        );
        let t = parse("{}").unwrap();
        let o = obj(&t, &["s"]).unwrap();
        assert_eq!(o.string("s").unwrap_err().to_string(), "missing field `s`");
        assert_eq!(o.raw("s").unwrap_err(), JsonError::Missing("s"));
        assert_eq!(o.u64("s").unwrap_err(), JsonError::Missing("s"));
        assert!(!o.flag("s").unwrap());
        assert!(o.strings("s").unwrap().is_empty() && o.string_map("s").unwrap().is_empty());
        assert_eq!(o.string_or_empty("s").unwrap(), "");
    }

    #[test]
    fn maps_keep_the_last_value_and_name_the_field() {
        let t = parse(r#"{"m":{"k":"1","k":"2","\u006a":"3"},"bad":{"k":4},"l":[{"x":1},2]}"#).unwrap();
        let o = obj(&t, &["m", "bad", "l"]).unwrap();
        let m = o.string_map("m").unwrap();
        assert_eq!((m.len(), m["k"].as_str(), m["j"].as_str()), (2, "2", "3"));
        assert_eq!(
            o.string_map("bad").unwrap_err().to_string(),
            "in `bad`: expected a string, got a number"
        );
        assert_eq!(
            o.list("l", |v| Obj::new(v, &["x"])?.u64("x")).unwrap_err().to_string(),
            "in `l`: expected an object, got a number"
        );
        assert_eq!(o.list("l", |v| Ok(raw(v))).unwrap()[1].get(), "2");
    }

    #[test]
    fn text_fields_refuse_what_only_the_lenient_parse_takes() {
        let t = parse(
            r#"{"a":"r\ud800","b":["\udc00"],"c":{"\ud83d":"x"},"d":{"k":"\ud800"},"e":"ok","r":["\ud800",1e400]}"#,
        )
        .unwrap();
        let o = obj(&t, &["a", "b", "c", "d", "e", "r"]).unwrap();
        for e in [
            o.string("a").unwrap_err(),
            o.opt_string("a").unwrap_err(),
            o.strings("b").unwrap_err(),
            o.string_map("c").unwrap_err(),
        ] {
            assert!(e.to_string().contains("lone surrogate"), "{e}");
        }
        assert!(o
            .string_map("d")
            .unwrap_err()
            .to_string()
            .contains("`d` has a lone surrogate"));
        assert_eq!(o.string("e").unwrap(), "ok");
        assert_eq!(
            o.raw("r").unwrap().get(),
            r#"["\ud800",1e400]"#,
            "raw values pass through"
        );
    }

    #[test]
    fn answers_nest_at_most_512_deep() {
        let deep = |n: usize| format!("{}{}", "[".repeat(n), "]".repeat(n));
        assert!(parse(&deep(512)).is_ok());
        assert!(parse(&deep(513)).unwrap_err().to_string().contains("nested too deep"));
    }

    #[test]
    fn raw_values_are_the_text_as_received() {
        let t = parse(" { \"r\" : [1, {\"a\" :\"\\u00e9\"} ] } ").unwrap();
        let o = obj(&t, &["r"]).unwrap();
        assert_eq!(o.raw("r").unwrap().get(), r#"[1, {"a" :"\u00e9"} ]"#);
        // Deeper than serde's typed limit (127), within the answer's (512).
        let deep = format!(r#"{{"r":{}{}}}"#, "[".repeat(500), "]".repeat(500));
        let t = parse(&deep).unwrap();
        assert_eq!(obj(&t, &["r"]).unwrap().raw("r").unwrap().get().len(), 1000);
    }
}
