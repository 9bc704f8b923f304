//! Typed fields of a JSON object read from a [`Tape`](super::read::Tape), with errors that name the
//! field: what options and frame decoders need, without a derived `Deserialize` per type.
//! `null` reads as absent, as serde reads an `Option`.

use super::read::{Kind, Value};
use std::borrow::Cow;
use std::fmt;

/// What was wrong with a field (or with the object itself).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FieldError {
    /// The value is not an object.
    NotObject(Kind),
    /// A key the reader does not know (strict objects only).
    Unknown(String),
    /// A key given twice.
    Repeated(String),
    /// A field of the wrong type: `expected` names what was wanted.
    Type {
        field: &'static str,
        expected: &'static str,
        got: Kind,
    },
    /// A number that is not a whole number from 0 to `max`: too large, negative or fractional.
    Range { field: &'static str, max: u64 },
    /// A number out of the field's range, or a string not among its choices.
    Invalid {
        field: &'static str,
        expected: &'static str,
    },
    /// What names it (a field in backquotes, "a key", ...) holds a lone surrogate escape or a
    /// number beyond `f64`: taken by [`parse_lenient`](super::read::parse_lenient), refused
    /// where serde refused them, in what is decoded.
    Lossy(String),
}

impl fmt::Display for FieldError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FieldError::NotObject(k) => write!(f, "expected an object, got {}", k.name()),
            FieldError::Unknown(k) => write!(f, "unknown field `{k}`"),
            FieldError::Repeated(k) => write!(f, "field `{k}` given twice"),
            FieldError::Type { field, expected, got } => write!(f, "`{field}` must be {expected}, not {}", got.name()),
            FieldError::Range { field, max } => write!(f, "`{field}` {}", WholeRange(*max)),
            FieldError::Invalid { field, expected } => write!(f, "`{field}` must be {expected}"),
            FieldError::Lossy(what) => write!(f, "{what} has a lone surrogate escape or a number beyond f64"),
        }
    }
}

impl std::error::Error for FieldError {}

/// What [`FieldError::Range`] says after the field's name, "must be a whole number from 0 to
/// `max`", for a reader that names its fields its own way.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WholeRange(pub u64);

impl fmt::Display for WholeRange {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "must be a whole number from 0 to {}", self.0)
    }
}

/// An unsigned integer type that [`Object::uint`] reads, with its maximum for the error.
pub trait Uint: TryFrom<u64> {
    const MAX: u64;
}

macro_rules! uint {
    ($($t:ty),*) => {$(
        impl Uint for $t {
            // Lossless: every unsigned type here is at most 64 bits wide.
            const MAX: u64 = <$t>::MAX as u64;
        }
    )*};
}
uint!(u8, u16, u32, u64, usize);

/// An object whose fields are read by name.
#[derive(Clone, Copy, Debug)]
pub struct Object<'t, 'a>(Value<'t, 'a>);

type Field<T> = Result<Option<T>, FieldError>;

impl<'t, 'a> Object<'t, 'a> {
    /// `v` as an object with no keys but `known`, each at most once.
    pub fn strict(v: Value<'t, 'a>, known: &[&str]) -> Result<Self, FieldError> {
        let o = Self::lenient(v)?;
        if let Some(k) = v.odd_key(known) {
            let name = k.text().into_owned();
            return Err(if known.contains(&name.as_str()) {
                FieldError::Repeated(name)
            } else {
                FieldError::Unknown(name)
            });
        }
        Ok(o)
    }

    /// `v` as an object the way a derived `Deserialize` without `deny_unknown_fields` reads one:
    /// unknown keys ignored (their values skipped), a `known` key given twice refused, and, as
    /// serde decodes every key, a key holding a lone surrogate escape refused.
    pub fn known(v: Value<'t, 'a>, known: &[&str]) -> Result<Self, FieldError> {
        Self::known_with(v, known, &mut |_, _| {})
    }

    /// [`Object::known`], handing `found` each known key's value with the key's index in
    /// `known`, in the text's order, as the one pass over the members meets them (before it
    /// has seen all of them: use the values only when it returns `Ok`).
    pub fn known_with(
        v: Value<'t, 'a>,
        known: &[&str],
        // `dyn`: one copy of the pass in the wasm, whatever the callers.
        found: &mut dyn FnMut(usize, Value<'t, 'a>),
    ) -> Result<Self, FieldError> {
        let o = Self::lenient(v)?;
        // One pass over the members (this runs on every push a MoltZap session routes): the
        // known keys seen so far as bits, so the first one given again is refused, as serde
        // refuses the first duplicate it meets. Past the 64th known key, a count.
        let mut seen = 0u64;
        let mut lossy = false;
        for (k, value) in v.members() {
            lossy |= k.lossy();
            let Some(i) = k.find(known) else {
                continue;
            };
            found(i, value);
            let again = match 1u64.checked_shl(i as u32) {
                Some(bit) => {
                    let again = seen & bit != 0;
                    seen |= bit;
                    again
                }
                None => v.members().filter(|(m, _)| m.is(known[i])).nth(1).is_some(),
            };
            if again {
                return Err(FieldError::Repeated(known[i].to_string()));
            }
        }
        if lossy {
            return Err(FieldError::Lossy("a key".into()));
        }
        Ok(o)
    }

    /// Refuses `null` in a field that is not an `Option` but has a default (serde's
    /// `#[serde(default)]`: absent is the default, `null` is the wrong type).
    pub fn not_null(&self, field: &'static str, expected: &'static str) -> Result<(), FieldError> {
        match self.0.get(field) {
            Some(v) if v.is_null() => Err(FieldError::Type {
                field,
                expected,
                got: Kind::Null,
            }),
            _ => Ok(()),
        }
    }

    /// Refuses the first of `fields` whose value holds what only the lenient parse takes: the
    /// fields a decoder reads (serde refused them there), where the others are skipped.
    pub fn decoded(&self, fields: &[&str]) -> Result<(), FieldError> {
        match fields.iter().find(|f| self.0.get(f).is_some_and(|v| v.lossy())) {
            Some(f) => Err(FieldError::Lossy(format!("`{f}`"))),
            None => Ok(()),
        }
    }

    /// `v` as an object, any keys allowed (the first of a repeated key counts).
    pub fn lenient(v: Value<'t, 'a>) -> Result<Self, FieldError> {
        match v.kind() {
            Kind::Object => Ok(Object(v)),
            k => Err(FieldError::NotObject(k)),
        }
    }

    /// The object as a value.
    pub fn value(&self) -> Value<'t, 'a> {
        self.0
    }

    /// A field's value; `null` is absent.
    pub fn get(&self, field: &str) -> Option<Value<'t, 'a>> {
        self.0.get(field).filter(|v| !v.is_null())
    }

    fn typed<T>(
        &self,
        field: &'static str,
        expected: &'static str,
        read: impl Fn(&Value<'t, 'a>) -> Option<T>,
    ) -> Field<T> {
        match self.get(field) {
            None => Ok(None),
            Some(v) => read(&v).map(Some).ok_or(FieldError::Type {
                field,
                expected,
                got: v.kind(),
            }),
        }
    }

    pub fn str(&self, field: &'static str) -> Field<Cow<'a, str>> {
        self.typed(field, "a string", Value::as_str)
    }

    pub fn string(&self, field: &'static str) -> Field<String> {
        Ok(self.str(field)?.map(Cow::into_owned))
    }

    pub fn bool(&self, field: &'static str) -> Field<bool> {
        self.typed(field, "a boolean", Value::as_bool)
    }

    pub fn f64(&self, field: &'static str) -> Field<f64> {
        self.typed(field, "a number", Value::as_f64)
    }

    /// A whole number from 0 to `T`'s maximum, written in digits. Another number (too large,
    /// negative, fractional) is [`FieldError::Range`]; a value of another kind is a type error.
    pub fn uint<T: Uint>(&self, field: &'static str) -> Field<T> {
        match self.get(field) {
            Some(v) if v.kind() == Kind::Number => v
                .as_u64()
                .and_then(|n| T::try_from(n).ok())
                .map(Some)
                .ok_or(FieldError::Range { field, max: T::MAX }),
            _ => self.typed(field, "a whole number ≥ 0", |_| None),
        }
    }

    /// An array of strings.
    pub fn strings(&self, field: &'static str) -> Field<Vec<String>> {
        self.typed(field, "an array of strings", |v| {
            (v.kind() == Kind::Array).then(|| {
                v.items()
                    .map(|s| s.as_str().map(Cow::into_owned))
                    .collect::<Option<Vec<_>>>()
            })?
        })
    }

    /// A string that is one of `choices`: its index. `expected` names them for the error.
    pub fn choice(&self, field: &'static str, choices: &[&str], expected: &'static str) -> Field<usize> {
        match self.str(field)? {
            None => Ok(None),
            Some(s) => choices
                .iter()
                .position(|c| *c == s)
                .map(Some)
                .ok_or(FieldError::Invalid { field, expected }),
        }
    }
}

/// serde reads a struct from an array too: its items are the fields in declaration order, at
/// most as many as there are fields (those missing at the end take their defaults). The object
/// such an array stands for, written out; `None` when `v` is not an array or has too many items.
pub fn named_array(v: Value<'_, '_>, fields: &[&str]) -> Option<String> {
    if v.kind() != Kind::Array || v.items().count() > fields.len() {
        return None;
    }
    let mut o = String::from("{");
    for (i, (item, name)) in v.items().zip(fields).enumerate() {
        if i > 0 {
            o.push(',');
        }
        super::push_string(&mut o, name);
        o.push(':');
        o.push_str(item.raw());
    }
    o.push('}');
    Some(o)
}

#[cfg(test)]
mod tests {
    use super::{named_array, FieldError, Object};
    use crate::json::read::{parse, Kind};

    #[test]
    fn fields_by_type_with_null_as_absent() {
        let t = parse(
            r#"{"s":"x","n":7,"b":true,"f":1.5,"l":["a","b"],"z":null,"big":300,"c":"two"}"#,
            4,
        )
        .unwrap();
        let o = Object::strict(t.root(), &["s", "n", "b", "f", "l", "z", "big", "c"]).unwrap();
        assert_eq!(o.string("s").unwrap().as_deref(), Some("x"));
        assert_eq!(o.uint::<u64>("n").unwrap(), Some(7));
        assert_eq!(o.bool("b").unwrap(), Some(true));
        assert_eq!(o.f64("f").unwrap(), Some(1.5));
        assert_eq!(o.f64("n").unwrap(), Some(7.0));
        assert_eq!(o.strings("l").unwrap(), Some(vec!["a".to_string(), "b".to_string()]));
        assert_eq!(o.string("z").unwrap(), None);
        assert_eq!(o.string("absent").unwrap(), None);
        assert_eq!(o.choice("c", &["one", "two"], "\"one\" or \"two\"").unwrap(), Some(1));
        // A number that does not fit is out of range, and the error names the range.
        assert_eq!(
            o.uint::<u8>("big").unwrap_err().to_string(),
            "`big` must be a whole number from 0 to 255"
        );
        assert_eq!(
            o.uint::<u8>("big").unwrap_err(),
            FieldError::Range { field: "big", max: 255 }
        );
        assert_eq!(
            o.string("n").unwrap_err(),
            FieldError::Type {
                field: "n",
                expected: "a string",
                got: Kind::Number
            }
        );
        assert_eq!(
            o.uint::<u32>("f").unwrap_err().to_string(),
            "`f` must be a whole number from 0 to 4294967295"
        );
        assert_eq!(
            o.uint::<u16>("s").unwrap_err().to_string(),
            "`s` must be a whole number ≥ 0, not a string"
        );
        assert_eq!(
            o.strings("s").unwrap_err().to_string(),
            "`s` must be an array of strings, not a string"
        );
        assert_eq!(
            o.choice("s", &["one"], "\"one\"").unwrap_err().to_string(),
            "`s` must be \"one\""
        );
    }

    #[test]
    fn uint_out_of_range_names_the_range() {
        let t = parse(
            r#"{"big":5000000000,"exp":5e9,"neg":-1,"huge":18446744073709551616,"max":4294967295}"#,
            4,
        )
        .unwrap();
        let o = Object::lenient(t.root()).unwrap();
        assert_eq!(o.uint::<u32>("max").unwrap(), Some(u32::MAX));
        for field in ["big", "exp", "neg"] {
            assert_eq!(
                o.uint::<u32>(field).unwrap_err().to_string(),
                format!("`{field}` must be a whole number from 0 to 4294967295")
            );
        }
        assert_eq!(
            o.uint::<u64>("huge").unwrap_err().to_string(),
            "`huge` must be a whole number from 0 to 18446744073709551615"
        );
    }

    #[test]
    fn strict_objects_refuse_unknown_and_repeated_keys() {
        let t = parse(r#"{"a":1,"b":2}"#, 2).unwrap();
        assert_eq!(
            Object::strict(t.root(), &["a"]).unwrap_err().to_string(),
            "unknown field `b`"
        );
        let t = parse(r#"{"a":1,"a":2}"#, 2).unwrap();
        assert_eq!(
            Object::strict(t.root(), &["a"]).unwrap_err().to_string(),
            "field `a` given twice"
        );
        assert_eq!(Object::lenient(t.root()).unwrap().uint::<u8>("a").unwrap(), Some(1));
        let t = parse("[1]", 2).unwrap();
        assert_eq!(
            Object::lenient(t.root()).unwrap_err().to_string(),
            "expected an object, got an array"
        );
    }

    #[test]
    fn known_keys_once_unknown_ones_ignored() {
        let t = parse(r#"{"a":1,"b":2,"b":3,"c":4,"\u0061":5}"#, 2).unwrap();
        assert!(Object::known(t.root(), &["b"]).is_err());
        assert_eq!(
            Object::known(t.root(), &["a"]).unwrap_err(),
            FieldError::Repeated("a".into()),
            "escaped spellings count"
        );
        assert_eq!(
            Object::known(t.root(), &["c", "d"]).unwrap().uint::<u8>("c").unwrap(),
            Some(4)
        );
        // The first key given again in the text is the one refused, as serde refuses it.
        assert_eq!(
            Object::known(t.root(), &["a", "b"]).unwrap_err(),
            FieldError::Repeated("b".into())
        );
        // Past the 64th known key too.
        let names: Vec<String> = (0..70).map(|n| format!("k{n}")).collect();
        let known: Vec<&str> = names.iter().map(String::as_str).collect();
        for (text, repeated) in [
            (r#"{"k66":1,"k1":2,"k66":3}"#, Some("k66")),
            (r#"{"k66":1,"k67":2,"k1":2}"#, None),
        ] {
            let t = parse(text, 2).unwrap();
            assert_eq!(
                Object::known(t.root(), &known).err(),
                repeated.map(|k| FieldError::Repeated(k.into())),
                "{text}"
            );
        }
    }

    #[test]
    fn arrays_stand_for_structs_as_serde_reads_them() {
        let t = parse(r#"["x", {"k":[1]}]"#, 3).unwrap();
        assert_eq!(
            named_array(t.root(), &["a", "b", "c"]).as_deref(),
            Some(r#"{"a":"x","b":{"k":[1]}}"#)
        );
        assert_eq!(named_array(t.root(), &["a"]), None, "too many items");
        assert_eq!(
            named_array(t.root(), &["a", "b"]).as_deref(),
            Some(r#"{"a":"x","b":{"k":[1]}}"#),
            "as many items as fields"
        );
        assert_eq!(named_array(parse("{}", 1).unwrap().root(), &["a"]), None);
    }

    #[test]
    fn lossy_keys_and_decoded_fields_are_refused_skipped_ones_kept() {
        use crate::json::read::parse_lenient;
        let t = parse_lenient(r#"{"a":"\ud800","b":1,"skip":[1e400]}"#, 3).unwrap();
        let o = Object::known(t.root(), &["a", "b"]).unwrap();
        assert!(o.decoded(&["b"]).is_ok(), "`skip` and `a` are not decoded");
        assert_eq!(
            o.decoded(&["b", "a"]).unwrap_err().to_string(),
            "`a` has a lone surrogate escape or a number beyond f64"
        );
        let t = parse_lenient(r#"{"\udc00":1}"#, 2).unwrap();
        assert_eq!(
            Object::known(t.root(), &["a"]).unwrap_err(),
            FieldError::Lossy("a key".into())
        );
    }

    #[test]
    fn not_null_refuses_only_null() {
        let t = parse(r#"{"s":"x","z":null}"#, 2).unwrap();
        let o = Object::lenient(t.root()).unwrap();
        assert_eq!(
            o.not_null("z", "a string").unwrap_err().to_string(),
            "`z` must be a string, not null"
        );
        assert!(o.not_null("s", "a string").is_ok() && o.not_null("absent", "a string").is_ok());
    }
}
