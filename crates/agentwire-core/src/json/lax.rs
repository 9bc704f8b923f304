//! JSON read the way serde_json reads into a derived `Deserialize`: the values serde skips
//! (unknown keys, `RawValue`s) it only checks for syntax, so a lone surrogate escape in them
//! (`"\ud83d"`: half an emoji, which JavaScript's `JSON.stringify` writes) or a number beyond
//! `f64` (a big integer from Python) is no error there, where [`read::parse`] refuses the whole
//! text. [`read()`] parses leniently ([`read::parse_lenient`]) and hands the decoder a [`Taint`]
//! that says where such values are, so that it refuses them only where serde decoded them. Used by
//! the RKT and MoltZap client decoders that replaced derived `Deserialize`s and keep their
//! behaviour.

use super::read::{self, ReadError, Value};

/// Where the lenient parse found what serde refuses when it decodes it.
pub struct Taint(());

impl Taint {
    /// True when serde, decoding `v` rather than skipping it, would have refused it.
    pub fn value(&self, v: Value<'_, '_>) -> bool {
        v.lossy()
    }

    /// True when a key of object `v` would have been refused (serde decodes the keys of a struct
    /// it reads).
    pub fn keys(&self, v: Value<'_, '_>) -> bool {
        v.members().any(|(k, _)| k.lossy())
    }
}

/// Parses `text` leniently (no depth limit: serde skips without one, and the decoders apply its
/// limit where it decoded) and hands its top value to `f`, with the [`Taint`] to ask.
pub fn read<T>(text: &str, f: impl FnOnce(Value<'_, '_>, &Taint) -> T) -> Result<T, ReadError> {
    let tape = read::parse_lenient(text, usize::MAX)?;
    Ok(f(tape.root(), &Taint(())))
}

#[cfg(test)]
mod tests {
    use super::read;

    #[test]
    fn marks_only_what_the_strict_reader_refuses_and_keeps_the_text() {
        let text = r#"{"a":"x\ud83d","b":"\ud83d\ude00","c":[1e400, -2e999],"d":"\udc00\\ud800"}"#;
        let got = read(text, |v, taint| {
            let f = |k| taint.value(v.get(k).unwrap());
            (
                [f("a"), f("b"), f("c"), f("d")],
                taint.keys(v),
                v.get("b").unwrap().as_str().unwrap().into_owned(),
                v.get("c").unwrap().raw().to_string(),
                v.get("a").unwrap().as_str().unwrap().into_owned(),
            )
        })
        .unwrap();
        assert_eq!(got.0, [true, false, true, true]);
        assert!(!got.1, "no key is marked");
        assert_eq!(got.2, "😀", "a pair is left alone");
        assert_eq!(got.3, "[1e400, -2e999]", "the text as received");
        assert_eq!(got.4, "x\u{fffd}", "a lone surrogate reads as U+FFFD");
        let keys = read(r#"{"\udead":1,"x":"\ud800"}"#, |v, taint| taint.keys(v)).unwrap();
        assert!(keys);
        assert!(read(r#"{"a":"\ud800"} x"#, |_, _| ()).is_err(), "other errors stay");
        let many = format!("[{}]", vec!["1e400"; 100].join(","));
        assert!(read(&many, |v, taint| v
            .items()
            .all(|n| taint.value(n) && n.as_f64() == Some(f64::INFINITY)))
        .unwrap());
        let clean = read(r#"{"a":1}"#, |v, taint| taint.value(v) || taint.keys(v)).unwrap();
        assert!(!clean);
    }
}
