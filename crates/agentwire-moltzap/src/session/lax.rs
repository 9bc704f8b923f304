//! JSON read the way serde_json reads into a derived `Deserialize`: the values serde skips
//! (unknown keys, `RawValue`s) it only checks for syntax, so a lone surrogate escape in them
//! (`"\ud83d"`: half an emoji, which JavaScript's `JSON.stringify` writes) or a number beyond
//! `f64` (a big integer from Python) is no error there, where [`read::parse`] refuses the whole
//! text. [`read()`] patches those (same length: `\ufffd`; `0` and spaces) and remembers where, so
//! that a decoder refuses them only where serde decoded them ([`Taint`]). [`read()`] and [`Taint`]
//! are the same as in `agentwire-rkt`'s `lax.rs`; the rest is what a derived `Deserialize` does
//! with an object.

use agentwire_core::json::fields::{FieldError, Object};
use agentwire_core::json::read::{self, Kind, ReadError, Reason, Value};
use std::fmt;

/// serde_json's recursion limit: the arrays and objects serde decodes (rather than skips) nest at
/// most this deep, counted from the top of the text.
pub(crate) const SERDE_DEPTH: usize = 127;

/// Why a text does not decode as a type: what is wrong, naming the field.
#[derive(Debug)]
pub(crate) struct Refused(pub(crate) String);

impl From<FieldError> for Refused {
    fn from(e: FieldError) -> Self {
        Refused(e.to_string())
    }
}

impl From<ReadError> for Refused {
    fn from(e: ReadError) -> Self {
        Refused(e.to_string())
    }
}

impl fmt::Display for Refused {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

pub(crate) fn missing(field: &str) -> Refused {
    Refused(format!("`{field}` is missing or null"))
}

/// What serde says of a text it decoded with a lone surrogate escape or a number beyond `f64`.
pub(crate) fn unreadable(what: &str) -> Refused {
    Refused(format!("{what} has a lone surrogate escape or a number beyond f64"))
}

/// `v` as an object the way a derived `Deserialize` without `deny_unknown_fields` reads it: its
/// keys decoded, unknown ones ignored (their values skipped: any depth, anything patched), a
/// known key given twice refused.
pub(crate) fn object<'t, 'a>(v: Value<'t, 'a>, known: &[&str], taint: &Taint) -> Result<Object<'t, 'a>, Refused> {
    let o = Object::lenient(v)?;
    if let Some(k) = known
        .iter()
        .find(|k| v.members().filter(|(m, _)| m.is(k)).nth(1).is_some())
    {
        return Err(FieldError::Repeated((*k).to_string()).into());
    }
    if taint.keys(v) {
        return Err(unreadable("a key"));
    }
    Ok(o)
}

/// Refuses the `fields` of `o` that serde decodes and that hold a patched place.
pub(crate) fn decoded(o: &Object<'_, '_>, fields: &[&str], taint: &Taint) -> Result<(), Refused> {
    match fields.iter().find(|f| o.value().get(f).is_some_and(|v| taint.value(v))) {
        Some(f) => Err(unreadable(&format!("`{f}`"))),
        None => Ok(()),
    }
}

/// serde reads a struct from an array too: its items are the fields in declaration order, at
/// most as many as there are fields, those missing at the end defaulted (every defaulted field
/// here is `#[serde(default)]`). The object such an array stands for, written out; `None` when
/// `v` is not an array or has too many items.
pub(crate) fn named(v: Value<'_, '_>, fields: &[&str]) -> Option<String> {
    if v.kind() != Kind::Array || v.items().count() > fields.len() {
        return None;
    }
    let mut o = String::from("{");
    for (i, (item, name)) in v.items().zip(fields).enumerate() {
        if i > 0 {
            o.push(',');
        }
        o.push('"');
        o.push_str(name);
        o.push_str("\":");
        o.push_str(item.raw());
    }
    o.push('}');
    Some(o)
}

/// Numbers beyond `f64` patched at most (each costs a parse of the whole text).
const MAX_NUMBERS: usize = 16;

/// Where the text was patched.
pub(crate) struct Taint {
    base: usize,
    bad: Vec<usize>,
}

impl Taint {
    /// How many patched places lie in `s` (a slice of the text parsed).
    fn count(&self, s: &str) -> usize {
        let start = (s.as_ptr() as usize).wrapping_sub(self.base);
        self.bad.iter().filter(|&&b| b.wrapping_sub(start) < s.len()).count()
    }

    /// True when serde, decoding `v` rather than skipping it, would have refused it.
    pub(crate) fn value(&self, v: Value<'_, '_>) -> bool {
        !self.bad.is_empty() && self.count(v.raw()) > 0
    }

    /// True when a key of object `v` would have been refused (serde decodes the keys of a struct
    /// it reads): a patched place in `v` that is in none of its values.
    pub(crate) fn keys(&self, v: Value<'_, '_>) -> bool {
        !self.bad.is_empty() && self.count(v.raw()) > v.members().map(|(_, m)| self.count(m.raw())).sum::<usize>()
    }
}

/// Parses `text` (no depth limit: serde skips without one, and the decoders apply its limit
/// where it decoded) and hands its top value to `f`, with where it was patched.
pub(crate) fn read<T>(text: &str, f: impl FnOnce(Value<'_, '_>, &Taint) -> T) -> Result<T, ReadError> {
    let mut f = Some(f);
    let mut out = None;
    read_with(text, &mut |v, taint| out = f.take().map(|f| f(v, taint)))?;
    // `read_with` calls back exactly once when it succeeds.
    out.ok_or(ReadError {
        at: 0,
        reason: Reason::Eof,
    })
}

/// [`read()`], not generic: one copy of the loop in the wasm.
fn read_with(text: &str, f: &mut dyn FnMut(Value<'_, '_>, &Taint)) -> Result<(), ReadError> {
    let mut fixed: Option<String> = None;
    let mut bad = Vec::new();
    let (mut surrogates, mut numbers) = (false, 0);
    loop {
        let t = fixed.as_deref().unwrap_or(text);
        let e = match read::parse(t, usize::MAX) {
            Ok(tape) => {
                let taint = Taint {
                    base: t.as_ptr() as usize,
                    bad,
                };
                f(tape.root(), &taint);
                return Ok(());
            }
            Err(e) => e,
        };
        let mut b = fixed.take().unwrap_or_else(|| text.to_string()).into_bytes();
        match e.reason {
            Reason::LoneSurrogate if !surrogates => {
                surrogates = true;
                lone_surrogates(&mut b, &mut bad);
            }
            Reason::NumberOutOfRange if numbers < MAX_NUMBERS => {
                numbers += 1;
                bad.push(e.at);
                // The number becomes `0` and spaces.
                for (k, c) in b.iter_mut().skip(e.at).enumerate() {
                    if !matches!(c, b'0'..=b'9' | b'-' | b'+' | b'.' | b'e' | b'E') {
                        break;
                    }
                    *c = if k == 0 { b'0' } else { b' ' };
                }
            }
            _ => return Err(e),
        }
        // ASCII replaced by ASCII: still UTF-8.
        fixed = Some(String::from_utf8(b).unwrap_or_default());
    }
}

/// Makes every `\u` escape of half a surrogate pair without the other half `\ufffd`, noting
/// where. Exact up to the first syntax error, which a parse reports anyway.
fn lone_surrogates(b: &mut [u8], bad: &mut Vec<usize>) {
    let hex = |b: &[u8], i: usize| {
        b.get(i..i + 4)?
            .iter()
            .try_fold(0, |v, &c| Some(v * 16 + (c as char).to_digit(16)?))
    };
    let (mut i, mut string) = (0, false);
    while let Some(&c) = b.get(i) {
        i += match c {
            b'"' => {
                string = !string;
                1
            }
            b'\\' if string => match hex(b, i + 2).filter(|_| b.get(i + 1) == Some(&b'u')) {
                Some(0xd800..=0xdbff)
                    if b.get(i + 6..i + 8) == Some(b"\\u") && matches!(hex(b, i + 8), Some(0xdc00..=0xdfff)) =>
                {
                    12
                }
                Some(0xd800..=0xdfff) => {
                    bad.push(i);
                    if let Some(h) = b.get_mut(i + 2..i + 6) {
                        h.copy_from_slice(b"fffd");
                    }
                    6
                }
                Some(_) => 6,
                None => 2,
            },
            _ => 1,
        };
    }
}

#[cfg(test)]
mod tests {
    use super::read;

    #[test]
    fn patches_only_what_the_reader_refuses_and_says_where() {
        let text = r#"{"a":"x\ud83d","b":"\ud83d\ude00","c":[1e400, -2e999],"d":"\udc00\\ud800"}"#;
        let got = read(text, |v, taint| {
            let f = |k| taint.value(v.get(k).unwrap());
            (
                [f("a"), f("b"), f("c"), f("d")],
                taint.keys(v),
                v.get("b").unwrap().as_str().unwrap().into_owned(),
                v.get("c").unwrap().raw().to_string(),
            )
        })
        .unwrap();
        assert_eq!(got.0, [true, false, true, true]);
        assert!(!got.1, "no key is patched");
        assert_eq!(got.2, "😀", "a pair is left alone");
        assert_eq!(got.3, "[0    , 0     ]");
        let keys = read(r#"{"\udead":1,"x":"\ud800"}"#, |v, taint| taint.keys(v)).unwrap();
        assert!(keys);
        assert!(read(r#"{"a":"\ud800"} x"#, |_, _| ()).is_err(), "other errors stay");
        let many = format!("[{}]", vec!["1e400"; 17].join(","));
        assert!(read(&many, |_, _| ()).is_err(), "at most 16 numbers are patched");
        let clean = read(r#"{"a":1}"#, |v, taint| taint.value(v) || taint.keys(v)).unwrap();
        assert!(!clean);
    }
}
