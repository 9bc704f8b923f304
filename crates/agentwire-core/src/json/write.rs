//! Hand-written JSON output: an object written key by key, strings escaped as `serde_json` and
//! `JSON.stringify` escape them ([`super::push_string`]). What the engines' events use instead of
//! a derived `Serialize` (a few hundred bytes of wasm, and no serializer state per string).

use super::push_string;

/// A JSON object being written into a `String`. Keys are the caller's own names (ASCII, nothing
/// to escape); values are escaped or, for [`Obj::raw`], copied verbatim.
pub struct Obj<'a> {
    pub out: &'a mut String,
    first: bool,
}

impl<'a> Obj<'a> {
    /// Writes `{`.
    pub fn begin(out: &'a mut String) -> Self {
        out.push('{');
        Obj { out, first: true }
    }

    /// Writes the next key and its colon; the caller writes the value into `out`.
    pub fn key(&mut self, k: &str) {
        if !std::mem::replace(&mut self.first, false) {
            self.out.push(',');
        }
        self.out.push('"');
        self.out.push_str(k);
        self.out.push_str("\":");
    }

    pub fn str(&mut self, k: &str, v: &str) {
        self.key(k);
        push_string(self.out, v);
    }

    /// Left out when `None`.
    pub fn opt_str(&mut self, k: &str, v: Option<&str>) {
        if let Some(v) = v {
            self.str(k, v);
        }
    }

    pub fn u64(&mut self, k: &str, v: u64) {
        self.key(k);
        push_u64(self.out, v);
    }

    pub fn i64(&mut self, k: &str, v: i64) {
        self.key(k);
        push_i64(self.out, v);
    }

    pub fn bool(&mut self, k: &str, v: bool) {
        self.key(k);
        self.out.push_str(if v { "true" } else { "false" });
    }

    pub fn strings(&mut self, k: &str, v: &[String]) {
        self.key(k);
        self.out.push('[');
        for (i, s) in v.iter().enumerate() {
            if i > 0 {
                self.out.push(',');
            }
            push_string(self.out, s);
        }
        self.out.push(']');
    }

    /// JSON text the caller checked, verbatim; left out when it is `null` (as the engines'
    /// `to_json` leave out null fields).
    pub fn raw(&mut self, k: &str, json: &str) {
        if !super::is_null(json) {
            self.key(k);
            self.out.push_str(json);
        }
    }

    /// Writes `}`.
    pub fn end(self) {
        self.out.push('}');
    }
}

/// Appends `n` in decimal.
pub fn push_u64(out: &mut String, mut n: u64) {
    let mut digits = [0u8; 20];
    let mut i = digits.len();
    loop {
        i -= 1;
        digits[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    for &d in &digits[i..] {
        out.push(char::from(d));
    }
}

/// Appends `n` in decimal.
pub fn push_i64(out: &mut String, n: i64) {
    if n < 0 {
        out.push('-');
    }
    push_u64(out, n.unsigned_abs());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_what_serde_json_writes() {
        let mut out = String::new();
        let mut o = Obj::begin(&mut out);
        o.str("type", "a \"b\"\n\u{1}é");
        o.opt_str("none", None);
        o.opt_str("some", Some(""));
        o.u64("zero", 0);
        o.u64("max", u64::MAX);
        o.i64("min", i64::MIN);
        o.bool("yes", true);
        o.strings("rooms", &["r1".into(), "\\".into()]);
        o.strings("empty", &[]);
        o.raw("null", " null ");
        o.raw("payload", r#"{"x":[1,2]}"#);
        o.end();
        let want = serde_json::json!({
            "type": "a \"b\"\n\u{1}é", "some": "", "zero": 0, "max": u64::MAX, "min": i64::MIN, "yes": true,
            "rooms": ["r1", "\\"], "empty": [], "payload": {"x": [1, 2]},
        });
        assert_eq!(serde_json::from_str::<serde_json::Value>(&out).unwrap(), want);
        assert!(
            out.starts_with(r#"{"type":"a \"b\"\n\u0001é","some":"","zero":0,"max":18446744073709551615"#),
            "{out}"
        );
    }

    #[test]
    fn numbers_are_decimal() {
        for n in [0, 1, 9, 10, 99, 100, 12345, u64::from(u32::MAX), u64::MAX - 1, u64::MAX] {
            let mut s = String::new();
            push_u64(&mut s, n);
            assert_eq!(s, n.to_string());
        }
        for n in [0, 1, -1, 42, -42, i64::MAX, i64::MIN, i64::MIN + 1] {
            let mut s = String::new();
            push_i64(&mut s, n);
            assert_eq!(s, n.to_string());
        }
    }
}

/// `serde_json::to_string(v)`, given up as soon as the text would pass `max` bytes (`Ok(None)`):
/// a payload too large to send is refused without being written out in full first.
pub fn to_string_within<T: serde::Serialize + ?Sized>(v: &T, max: usize) -> Result<Option<String>, serde_json::Error> {
    struct Within(Vec<u8>, usize);
    impl std::io::Write for Within {
        fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
            if self.0.len() + b.len() > self.1 {
                return Err(std::io::ErrorKind::WriteZero.into());
            }
            self.0.extend_from_slice(b);
            Ok(b.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut w = Within(Vec::new(), max);
    match serde_json::to_writer(&mut w, v) {
        // serde_json writes UTF-8 only.
        Ok(()) => String::from_utf8(w.0).map(Some).map_err(serde::ser::Error::custom),
        Err(e) if e.is_io() => Ok(None),
        Err(e) => Err(e),
    }
}

#[cfg(test)]
mod within_tests {
    use super::to_string_within;

    #[test]
    fn to_string_within_stops_at_the_bound() {
        let v = serde_json::json!({"text": "x".repeat(100)});
        let full = serde_json::to_string(&v).unwrap();
        assert_eq!(to_string_within(&v, full.len()).unwrap(), Some(full.clone()));
        assert_eq!(to_string_within(&v, full.len() - 1).unwrap(), None);
        assert_eq!(to_string_within(&v, 10).unwrap(), None);
    }

    /// Only running out of room is `Ok(None)`: a value serde_json cannot write is its error.
    #[test]
    fn a_value_serde_json_refuses_is_an_error_not_too_large() {
        let v: std::collections::BTreeMap<Vec<u8>, u8> = [(vec![1], 1)].into();
        let e = to_string_within(&v, 1000).unwrap_err();
        assert!(!e.is_io(), "{e}");
        assert_eq!(e.to_string(), serde_json::to_string(&v).unwrap_err().to_string());
    }
}
