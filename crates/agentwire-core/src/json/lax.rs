//! JSON read the way serde_json reads into a derived `Deserialize`: the values serde skips
//! (unknown keys, `RawValue`s) it only checks for syntax, so a lone surrogate escape in them
//! (`"\ud83d"`: half an emoji, which JavaScript's `JSON.stringify` writes) or a number beyond
//! `f64` (a big integer from Python) is no error there, where [`read::parse`] refuses the whole
//! text. [`read()`] patches those (same length: `\ufffd`; `0` and spaces) and remembers where, so
//! that a decoder refuses them only where serde decoded them ([`Taint`]). Used by the RKT and
//! MoltZap client decoders that replaced derived `Deserialize`s and keep their behaviour.

use super::read::{self, ReadError, Reason, Value};

/// Numbers beyond `f64` patched at most (each costs a parse of the whole text).
const MAX_NUMBERS: usize = 16;

/// Where the text was patched.
pub struct Taint {
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
    pub fn value(&self, v: Value<'_, '_>) -> bool {
        !self.bad.is_empty() && self.count(v.raw()) > 0
    }

    /// True when a key of object `v` would have been refused (serde decodes the keys of a struct
    /// it reads): a patched place in `v` that is in none of its values.
    pub fn keys(&self, v: Value<'_, '_>) -> bool {
        !self.bad.is_empty() && self.count(v.raw()) > v.members().map(|(_, m)| self.count(m.raw())).sum::<usize>()
    }
}

/// Parses `text` (no depth limit: serde skips without one, and the decoders apply its limit
/// where it decoded) and hands its top value to `f`, with where it was patched.
pub fn read<T>(text: &str, f: impl FnOnce(Value<'_, '_>, &Taint) -> T) -> Result<T, ReadError> {
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
