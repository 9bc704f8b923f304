//! [`JsonValue`], the closed JSON the harness carries in `data` parts, and its strict parser.
//!
//! Closed: null, booleans, finite numbers ([`JsonNumber`], an `f64` that is never NaN or
//! infinite), strings, arrays and string-keyed objects. Objects are maps (a key appears once);
//! their canonical order is decided by the encoder ([`super::canonical`]), so two objects with
//! the same members are equal whatever order they were written in.
//!
//! [`JsonValue::parse`] reads RFC 8259 JSON text (whitespace around the value allowed) and also
//! refuses what is syntactically JSON but not a `JsonValue`: a key repeated in one object, a
//! number beyond `f64` (`1e400`), a lone surrogate escape (`"\ud800"`). Nesting is bounded by
//! [`MAX_DEPTH`], so no input can exhaust the stack. [`parse_lenient`] reads the same syntax but
//! collects those value issues (each with its path) instead of stopping at the first, for
//! callers that must name every failing field.

use std::collections::BTreeMap;
use std::fmt;

/// Arrays and objects nested deeper than this are refused (the value itself counts as 1).
pub const MAX_DEPTH: usize = 128;

/// A JSON object: string keys, each once.
pub type JsonObject = BTreeMap<String, JsonValue>;

/// A finite `f64`. `-0` is kept as given but equals `0` and encodes as `0`.
#[derive(Debug, Clone, Copy, PartialEq, PartialOrd)]
pub struct JsonNumber(f64);

impl JsonNumber {
    /// `None` for NaN and the infinities.
    pub fn new(value: f64) -> Option<JsonNumber> {
        value.is_finite().then_some(JsonNumber(value))
    }

    pub fn get(self) -> f64 {
        self.0
    }

    /// The value as an integer when it is one and lies within ±2^53 (where every integer is exact).
    pub fn as_safe_integer(self) -> Option<i64> {
        const MAX: f64 = 9_007_199_254_740_991.0;
        (self.0.fract() == 0.0 && self.0.abs() <= MAX).then_some(self.0 as i64)
    }
}

macro_rules! number_from {
    ($($t:ty),*) => {$(
        impl From<$t> for JsonNumber {
            fn from(v: $t) -> JsonNumber {
                JsonNumber(f64::from(v))
            }
        }
        impl From<$t> for JsonValue {
            fn from(v: $t) -> JsonValue {
                JsonValue::Number(JsonNumber::from(v))
            }
        }
    )*};
}
number_from!(i8, i16, i32, u8, u16, u32);

/// A closed JSON value.
#[derive(Debug, Clone, PartialEq)]
pub enum JsonValue {
    Null,
    Bool(bool),
    Number(JsonNumber),
    String(String),
    Array(Vec<JsonValue>),
    Object(JsonObject),
}

impl From<bool> for JsonValue {
    fn from(v: bool) -> JsonValue {
        JsonValue::Bool(v)
    }
}

impl From<&str> for JsonValue {
    fn from(v: &str) -> JsonValue {
        JsonValue::String(v.to_owned())
    }
}

impl From<String> for JsonValue {
    fn from(v: String) -> JsonValue {
        JsonValue::String(v)
    }
}

impl From<JsonObject> for JsonValue {
    fn from(v: JsonObject) -> JsonValue {
        JsonValue::Object(v)
    }
}

impl From<Vec<JsonValue>> for JsonValue {
    fn from(v: Vec<JsonValue>) -> JsonValue {
        JsonValue::Array(v)
    }
}

impl JsonValue {
    /// Parses JSON text strictly (see the module documentation).
    pub fn parse(text: &str) -> Result<JsonValue, JsonError> {
        let (value, issues) = parse_with(text, true)?;
        match issues.into_iter().next() {
            None => Ok(value),
            Some(ValueIssue {
                kind: ValueIssueKind::TooDeep { offset },
                ..
            }) => Err(JsonError::TooDeep { offset }),
            Some(issue) => Err(JsonError::Value(issue)),
        }
    }

    /// An object from `(key, value)` pairs; a later pair replaces an earlier one with its key.
    pub fn object<K: Into<String>>(pairs: impl IntoIterator<Item = (K, JsonValue)>) -> JsonValue {
        JsonValue::Object(pairs.into_iter().map(|(k, v)| (k.into(), v)).collect())
    }

    pub fn as_str(&self) -> Option<&str> {
        match self {
            JsonValue::String(s) => Some(s),
            _ => None,
        }
    }

    pub fn as_object(&self) -> Option<&JsonObject> {
        match self {
            JsonValue::Object(o) => Some(o),
            _ => None,
        }
    }

    pub fn as_array(&self) -> Option<&[JsonValue]> {
        match self {
            JsonValue::Array(a) => Some(a),
            _ => None,
        }
    }

    pub fn as_number(&self) -> Option<JsonNumber> {
        match self {
            JsonValue::Number(n) => Some(*n),
            _ => None,
        }
    }

    /// About the heap this value takes as a tree, in bytes: one node per value, the strings'
    /// bytes, and a map entry's key and bookkeeping. A tree takes many times its JSON text
    /// (`[0,0,…]` about 16 times), so what the endpoint keeps is bounded by this, not by text.
    pub(crate) fn footprint(&self) -> usize {
        const NODE: usize = std::mem::size_of::<JsonValue>();
        match self {
            JsonValue::Null | JsonValue::Bool(_) | JsonValue::Number(_) => NODE,
            JsonValue::String(s) => NODE + s.len(),
            JsonValue::Array(a) => NODE + a.iter().map(JsonValue::footprint).sum::<usize>(),
            JsonValue::Object(o) => object_footprint(o),
        }
    }

    /// `"null"`, `"boolean"`, `"number"`, `"string"`, `"array"` or `"object"`.
    pub fn type_name(&self) -> &'static str {
        match self {
            JsonValue::Null => "null",
            JsonValue::Bool(_) => "boolean",
            JsonValue::Number(_) => "number",
            JsonValue::String(_) => "string",
            JsonValue::Array(_) => "array",
            JsonValue::Object(_) => "object",
        }
    }
}

/// What [`JsonValue::footprint`] counts for `JsonValue::Object(o)`, without building it.
pub(crate) fn object_footprint(o: &JsonObject) -> usize {
    const NODE: usize = std::mem::size_of::<JsonValue>();
    // A B-tree entry: its key's `String`, its value, and about a node's share of links.
    const ENTRY: usize = std::mem::size_of::<String>() + NODE + 16;
    NODE + o
        .iter()
        .map(|(k, v)| ENTRY - NODE + k.len() + v.footprint())
        .sum::<usize>()
}

/// Where in a value something is: `requestedSchema.properties.age.minimum`, `included[2]`; a key
/// that is not a plain name (`[A-Za-z0-9_$-]+`) is written quoted: `content["a b"]`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct JsonPath(String);

impl JsonPath {
    /// The path of a named top-level field (`deadline`); empty for the value itself.
    pub fn root(name: &str) -> JsonPath {
        JsonPath::default().key(name)
    }

    #[must_use]
    pub fn key(&self, key: &str) -> JsonPath {
        let mut p = self.clone();
        p.push_key(key);
        p
    }

    #[must_use]
    pub fn index(&self, i: usize) -> JsonPath {
        let mut p = self.clone();
        p.push_index(i);
        p
    }

    fn push_key(&mut self, key: &str) {
        let plain = !key.is_empty() && key.bytes().all(|b| b.is_ascii_alphanumeric() || b"_$-".contains(&b));
        let s = &mut self.0;
        if plain {
            if !s.is_empty() {
                s.push('.');
            }
            s.push_str(key);
        } else {
            s.push('[');
            agentwire_core::json::push_string(s, key);
            s.push(']');
        }
    }

    fn push_index(&mut self, i: usize) {
        use fmt::Write;
        let _ = write!(self.0, "[{i}]");
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for JsonPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(if self.0.is_empty() { "(the value)" } else { &self.0 })
    }
}

/// Syntactically valid JSON that is not a [`JsonValue`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ValueIssue {
    pub path: JsonPath,
    pub kind: ValueIssueKind,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ValueIssueKind {
    /// This key appeared before in the same object (the lenient parse keeps the first).
    DuplicateKey(String),
    /// A number whose magnitude is beyond `f64` (the lenient parse reads it as `0`).
    NumberOutOfRange,
    /// A `\uD800`–`\uDFFF` escape not part of a pair (the lenient parse reads U+FFFD).
    LoneSurrogate,
    /// An array or object deeper than [`MAX_DEPTH`], starting at this byte offset (the lenient
    /// parse reads `null`; past the limit only the brackets and strings are checked).
    TooDeep { offset: usize },
}

impl fmt::Display for ValueIssue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.kind {
            ValueIssueKind::DuplicateKey(k) => {
                write!(f, "{}: the key {} appears twice", self.path, super::errors::quote(k))
            }
            ValueIssueKind::NumberOutOfRange => write!(f, "{}: the number is not finite", self.path),
            ValueIssueKind::LoneSurrogate => write!(f, "{}: a lone surrogate escape", self.path),
            ValueIssueKind::TooDeep { .. } => write!(f, "{}: nested deeper than {MAX_DEPTH}", self.path),
        }
    }
}

/// Why a text is not a [`JsonValue`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum JsonError {
    /// Not JSON text: what was expected, at this byte offset.
    Syntax { offset: usize, expected: &'static str },
    /// Arrays and objects nested deeper than [`MAX_DEPTH`], at this byte offset.
    TooDeep { offset: usize },
    /// JSON text, but not a closed value.
    Value(ValueIssue),
}

impl fmt::Display for JsonError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            JsonError::Syntax { offset, expected } => write!(f, "invalid JSON at byte {offset}: expected {expected}"),
            JsonError::TooDeep { offset } => write!(f, "JSON nested deeper than {MAX_DEPTH} at byte {offset}"),
            JsonError::Value(issue) => issue.fmt(f),
        }
    }
}

impl std::error::Error for JsonError {}

/// Parses JSON text, collecting value issues instead of refusing them (see the module
/// documentation); only syntax and depth errors are errors.
pub fn parse_lenient(text: &str) -> Result<(JsonValue, Vec<ValueIssue>), JsonError> {
    parse_with(text, false)
}

/// With `first_only`, only the first value issue is recorded (what [`JsonValue::parse`]
/// reports); the text is still read to its end, so a later syntax error still decides.
fn parse_with(text: &str, first_only: bool) -> Result<(JsonValue, Vec<ValueIssue>), JsonError> {
    let mut p = Parser {
        b: text.as_bytes(),
        text,
        i: 0,
        issues: Vec::new(),
        first_only,
        path: Vec::new(),
    };
    p.ws();
    let v = p.value(1)?;
    p.ws();
    if p.i != p.b.len() {
        return Err(p.syntax("the end of the text"));
    }
    Ok((v, p.issues))
}

/// One step of the path to the value being read: a member's key (moved into its object once
/// the value is read) or an item's index.
enum Segment {
    Key(String),
    Index(usize),
}

struct Parser<'a> {
    b: &'a [u8],
    text: &'a str,
    i: usize,
    issues: Vec<ValueIssue>,
    first_only: bool,
    /// Where the value being read is. A [`JsonPath`] is written from it only when an issue is
    /// recorded: building one per value copied the parent's path each time, so a long key over
    /// many values cost their product.
    path: Vec<Segment>,
}

impl Parser<'_> {
    /// Records an issue at the value being read, its path written from the segments (and
    /// `key`, a member not yet pushed).
    fn issue(&mut self, key: Option<&str>, kind: ValueIssueKind) {
        if self.first_only && !self.issues.is_empty() {
            return;
        }
        let mut path = JsonPath::default();
        for s in &self.path {
            match s {
                Segment::Key(k) => path.push_key(k),
                Segment::Index(i) => path.push_index(*i),
            }
        }
        if let Some(k) = key {
            path.push_key(k);
        }
        self.issues.push(ValueIssue { path, kind });
    }

    fn syntax(&self, expected: &'static str) -> JsonError {
        JsonError::Syntax {
            offset: self.i,
            expected,
        }
    }

    fn ws(&mut self) {
        while matches!(self.b.get(self.i), Some(b' ' | b'\t' | b'\n' | b'\r')) {
            self.i += 1;
        }
    }

    fn eat(&mut self, c: u8) -> bool {
        let hit = self.b.get(self.i) == Some(&c);
        self.i += usize::from(hit);
        hit
    }

    fn literal(&mut self, word: &'static str, v: JsonValue) -> Result<JsonValue, JsonError> {
        if self.b[self.i..].starts_with(word.as_bytes()) {
            self.i += word.len();
            Ok(v)
        } else {
            Err(self.syntax("a JSON value"))
        }
    }

    fn value(&mut self, depth: usize) -> Result<JsonValue, JsonError> {
        match self.b.get(self.i) {
            Some(b'{') | Some(b'[') if depth > MAX_DEPTH => {
                let offset = self.i;
                self.skip_nested()?;
                self.issue(None, ValueIssueKind::TooDeep { offset });
                Ok(JsonValue::Null)
            }
            Some(b'{') => self.object(depth),
            Some(b'[') => self.array(depth),
            Some(b'"') => Ok(JsonValue::String(self.string()?)),
            Some(b't') => self.literal("true", JsonValue::Bool(true)),
            Some(b'f') => self.literal("false", JsonValue::Bool(false)),
            Some(b'n') => self.literal("null", JsonValue::Null),
            Some(b'-' | b'0'..=b'9') => self.number(),
            _ => Err(self.syntax("a JSON value")),
        }
    }

    fn object(&mut self, depth: usize) -> Result<JsonValue, JsonError> {
        self.i += 1;
        let mut map = JsonObject::new();
        self.ws();
        if self.eat(b'}') {
            return Ok(JsonValue::Object(map));
        }
        loop {
            self.ws();
            if self.b.get(self.i) != Some(&b'"') {
                return Err(self.syntax("a string key"));
            }
            let key = self.string()?;
            self.ws();
            if !self.eat(b':') {
                return Err(self.syntax("':'"));
            }
            self.ws();
            self.path.push(Segment::Key(key));
            let v = self.value(depth + 1)?;
            let Some(Segment::Key(key)) = self.path.pop() else {
                unreachable!("the member's key was pushed last")
            };
            match map.entry(key) {
                std::collections::btree_map::Entry::Occupied(e) => {
                    let key = e.key().clone();
                    self.issue(Some(&key), ValueIssueKind::DuplicateKey(key.clone()));
                }
                std::collections::btree_map::Entry::Vacant(e) => {
                    e.insert(v);
                }
            }
            self.ws();
            if self.eat(b'}') {
                return Ok(JsonValue::Object(map));
            }
            if !self.eat(b',') {
                return Err(self.syntax("',' or '}'"));
            }
        }
    }

    fn array(&mut self, depth: usize) -> Result<JsonValue, JsonError> {
        self.i += 1;
        let mut items = Vec::new();
        self.ws();
        if self.eat(b']') {
            return Ok(JsonValue::Array(items));
        }
        self.path.push(Segment::Index(0));
        loop {
            self.ws();
            if let Some(Segment::Index(i)) = self.path.last_mut() {
                *i = items.len();
            }
            let v = self.value(depth + 1)?;
            items.push(v);
            self.ws();
            if self.eat(b']') {
                self.path.pop();
                return Ok(JsonValue::Array(items));
            }
            if !self.eat(b',') {
                return Err(self.syntax("',' or ']'"));
            }
        }
    }

    /// At a `{` or `[` past [`MAX_DEPTH`]: skips to its matching bracket without recursion,
    /// checking only that brackets match and strings end.
    fn skip_nested(&mut self) -> Result<(), JsonError> {
        let mut open: Vec<u8> = Vec::new();
        while let Some(&c) = self.b.get(self.i) {
            self.i += 1;
            match c {
                b'{' => open.push(b'}'),
                b'[' => open.push(b']'),
                b'}' | b']' => {
                    if open.pop() != Some(c) {
                        self.i -= 1;
                        return Err(self.syntax("a matching bracket"));
                    }
                    if open.is_empty() {
                        return Ok(());
                    }
                }
                b'"' => loop {
                    match self.b.get(self.i) {
                        None => return Err(self.syntax("the end of a string")),
                        Some(b'"') => {
                            self.i += 1;
                            break;
                        }
                        Some(b'\\') => self.i += 2,
                        Some(_) => self.i += 1,
                    }
                },
                _ => {}
            }
        }
        Err(self.syntax("the end of an array or object"))
    }

    fn hex4(&mut self) -> Result<u32, JsonError> {
        let mut v = 0u32;
        for _ in 0..4 {
            let d = match self.b.get(self.i) {
                Some(c @ b'0'..=b'9') => c - b'0',
                Some(c @ b'a'..=b'f') => c - b'a' + 10,
                Some(c @ b'A'..=b'F') => c - b'A' + 10,
                _ => return Err(self.syntax("four hex digits")),
            };
            v = v << 4 | u32::from(d);
            self.i += 1;
        }
        Ok(v)
    }

    /// At the opening quote; returns the unescaped string.
    fn string(&mut self) -> Result<String, JsonError> {
        self.i += 1;
        let mut out = String::new();
        loop {
            let start = self.i;
            while matches!(self.b.get(self.i), Some(&c) if c != b'"' && c != b'\\' && c >= 0x20) {
                self.i += 1;
            }
            // `start` and `i` sit next to ASCII bytes (or the ends), so on char boundaries.
            out.push_str(&self.text[start..self.i]);
            match self.b.get(self.i) {
                Some(b'"') => {
                    self.i += 1;
                    return Ok(out);
                }
                Some(b'\\') => {
                    self.i += 1;
                    let c = match self.b.get(self.i) {
                        Some(b'"') => '"',
                        Some(b'\\') => '\\',
                        Some(b'/') => '/',
                        Some(b'b') => '\u{8}',
                        Some(b'f') => '\u{c}',
                        Some(b'n') => '\n',
                        Some(b'r') => '\r',
                        Some(b't') => '\t',
                        Some(b'u') => {
                            self.i += 1;
                            let hi = self.hex4()?;
                            out.push(self.code_point(hi)?);
                            continue;
                        }
                        _ => return Err(self.syntax("an escape")),
                    };
                    self.i += 1;
                    out.push(c);
                }
                Some(_) => return Err(self.syntax("no control character in a string")),
                None => return Err(self.syntax("'\"'")),
            }
        }
    }

    fn code_point(&mut self, hi: u32) -> Result<char, JsonError> {
        if (0xd800..0xdc00).contains(&hi) && self.b[self.i..].starts_with(b"\\u") {
            let save = self.i;
            self.i += 2;
            let lo = self.hex4()?;
            if (0xdc00..0xe000).contains(&lo) {
                let c = 0x10000 + ((hi - 0xd800) << 10) + (lo - 0xdc00);
                return Ok(char::from_u32(c).unwrap_or('\u{fffd}'));
            }
            self.i = save;
        }
        char::from_u32(hi).map(Ok).unwrap_or_else(|| {
            self.issue(None, ValueIssueKind::LoneSurrogate);
            Ok('\u{fffd}')
        })
    }

    fn digits(&mut self) -> usize {
        let start = self.i;
        while matches!(self.b.get(self.i), Some(b'0'..=b'9')) {
            self.i += 1;
        }
        self.i - start
    }

    fn number(&mut self) -> Result<JsonValue, JsonError> {
        let start = self.i;
        self.eat(b'-');
        match self.b.get(self.i) {
            Some(b'0') => self.i += 1,
            Some(b'1'..=b'9') => {
                self.digits();
            }
            _ => return Err(self.syntax("a digit")),
        }
        if self.eat(b'.') && self.digits() == 0 {
            return Err(self.syntax("a digit after '.'"));
        }
        if self.eat(b'e') || self.eat(b'E') {
            if !self.eat(b'+') {
                self.eat(b'-');
            }
            if self.digits() == 0 {
                return Err(self.syntax("a digit in the exponent"));
            }
        }
        let v: f64 = self.text[start..self.i].parse().unwrap_or(f64::INFINITY);
        Ok(JsonValue::Number(JsonNumber::new(v).unwrap_or_else(|| {
            self.issue(None, ValueIssueKind::NumberOutOfRange);
            JsonNumber(0.0)
        })))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_every_kind() {
        let v = JsonValue::parse(r#" {"a":[null,true,false,-1.5e2,"x\u00e9\ud83d\ude00\n"],"b":{}} "#).unwrap();
        let a = v.as_object().unwrap()["a"].as_array().unwrap();
        assert_eq!(a[3], JsonValue::from(-150));
        assert_eq!(a[4].as_str(), Some("xé😀\n"));
    }

    #[test]
    fn reads_every_escape_in_either_case_of_hex() {
        let v = JsonValue::parse(r#""\"\\\/\b\f\n\r\t\u00e9\u00C9\uAbCd\uD83D\uDE00""#).unwrap();
        assert_eq!(v.as_str(), Some("\"\\/\u{8}\u{c}\n\r\t\u{e9}\u{c9}\u{abcd}\u{1f600}"));
        for (text, read) in [("\"\\uFFFF\"", "\u{ffff}"), ("\"\\u0009x\"", "\tx")] {
            assert_eq!(JsonValue::parse(text).unwrap().as_str(), Some(read), "{text}");
        }
        // A high surrogate followed by an escape that is not a low one: a lone surrogate, and
        // the next escape read as itself.
        let (v, issues) = parse_lenient(r#"["\ud800\u0041","\ud800\ud800"]"#).unwrap();
        let strings: Vec<&str> = v.as_array().unwrap().iter().filter_map(JsonValue::as_str).collect();
        assert_eq!(strings, ["\u{fffd}A", "\u{fffd}\u{fffd}"]);
        assert_eq!(issues.len(), 3);
    }

    #[test]
    fn refuses_duplicate_keys_nonfinite_numbers_and_lone_surrogates() {
        let e = JsonValue::parse(r#"{"a":{"k":1,"k":2}}"#).unwrap_err();
        assert_eq!(e.to_string(), r#"a.k: the key "k" appears twice"#);
        // The key is quoted as a JSON string, not with `{:?}` escapes.
        let e = JsonValue::parse(r#"{"k\u0001'":1,"k\u0001'":2}"#).unwrap_err();
        assert_eq!(e.to_string(), r#"["k\u0001'"]: the key "k\u0001'" appears twice"#);
        let e = JsonValue::parse(r#"[1, -1e400]"#).unwrap_err();
        assert_eq!(e.to_string(), "[1]: the number is not finite");
        assert!(matches!(
            JsonValue::parse(r#""\ud800x""#),
            Err(JsonError::Value(ValueIssue {
                kind: ValueIssueKind::LoneSurrogate,
                ..
            }))
        ));
        // Lenient: every issue, with the first duplicate kept.
        let (v, issues) = parse_lenient(r#"{"a":1,"a":2,"b":1e999,"c":"\udc00"}"#).unwrap();
        assert_eq!(issues.len(), 3);
        assert_eq!(v.as_object().unwrap()["a"], JsonValue::from(1));
    }

    #[test]
    fn refuses_bad_syntax() {
        for bad in [
            "",
            " ",
            "{",
            "[1,]",
            "{\"a\"}",
            "01",
            "1.",
            "1e",
            "-",
            "+1",
            "NaN",
            "Infinity",
            "'a'",
            "\"a",
            "\"\t\"",
            "\"\\x\"",
            "\"\\u12\"",
            "[1] 2",
            "tru",
            "{\"a\":1,}",
            "{1:2}",
        ] {
            assert!(
                matches!(JsonValue::parse(bad), Err(JsonError::Syntax { .. })),
                "{bad:?}"
            );
        }
    }

    #[test]
    fn depth_is_bounded_without_recursion_past_it() {
        let ok = "[".repeat(MAX_DEPTH) + &"]".repeat(MAX_DEPTH);
        assert!(JsonValue::parse(&ok).is_ok());
        let deep = "[".repeat(MAX_DEPTH + 1) + &"]".repeat(MAX_DEPTH + 1);
        assert!(matches!(JsonValue::parse(&deep), Err(JsonError::TooDeep { .. })));
        // Objects count as arrays do.
        let objects = |n: usize| r#"{"a":"#.repeat(n - 1) + "{}" + &"}".repeat(n - 1);
        assert!(JsonValue::parse(&objects(MAX_DEPTH)).is_ok());
        assert!(matches!(
            JsonValue::parse(&objects(MAX_DEPTH + 1)),
            Err(JsonError::TooDeep { .. })
        ));
        let huge = "[".repeat(1_000_000);
        assert!(matches!(JsonValue::parse(&huge), Err(JsonError::Syntax { .. })));
        let huge = "[".repeat(1_000_000) + &"]".repeat(1_000_000);
        assert!(matches!(
            JsonValue::parse(&huge),
            Err(JsonError::TooDeep { offset: 128 })
        ));
        // The lenient parse reads past it, the deep value as null, and says where it was.
        let (v, issues) = parse_lenient(&format!(r#"{{"a":{deep},"b":1}}"#)).unwrap();
        assert_eq!(v.as_object().map(|o| o.len()), Some(2));
        assert_eq!(issues.len(), 1);
        assert!(issues[0].path.as_str().starts_with("a[0]"), "{}", issues[0].path);
        assert!(matches!(issues[0].kind, ValueIssueKind::TooDeep { .. }));
        for bad in [
            format!("{{\"a\":{}", "[".repeat(200)),
            format!("[{}}}", "[".repeat(200)),
        ] {
            assert!(matches!(parse_lenient(&bad), Err(JsonError::Syntax { .. })), "{bad}");
        }
    }

    #[test]
    fn past_the_limit_strings_are_skipped_whole_and_a_stray_bracket_is_named_where_it_is() {
        let open = "[".repeat(MAX_DEPTH + 1);
        let close = "]".repeat(MAX_DEPTH + 1);
        // Brackets, an escaped quote and an escaped backslash inside a string do not count.
        let text = format!(r#"{{"a":{open}"]}}\"[{{\\",1{close},"b":"x"}}"#);
        let (v, issues) = parse_lenient(&text).unwrap();
        assert_eq!(v.as_object().unwrap()["b"].as_str(), Some("x"));
        let offset = r#"{"a":"#.len() + MAX_DEPTH - 1;
        let kinds: Vec<&ValueIssueKind> = issues.iter().map(|i| &i.kind).collect();
        assert_eq!(kinds, [&ValueIssueKind::TooDeep { offset }]);
        // A bracket that does not match is named at its own offset.
        assert_eq!(
            parse_lenient(&format!("{open}}}")),
            Err(JsonError::Syntax {
                offset: MAX_DEPTH + 1,
                expected: "a matching bracket"
            })
        );
    }

    #[test]
    fn issues_name_their_paths_through_keys_and_items() {
        let text = r#"{"a b":[1,{"x":[0,1e999]}],"k":{"k":1,"k":[2]},"s":{"\ud800":["\udc00"]},"z":[[],[[1e400]]]}"#;
        let (_, issues) = parse_lenient(text).unwrap();
        let named: Vec<String> = issues.iter().map(ToString::to_string).collect();
        assert_eq!(
            named,
            [
                r#"["a b"][1].x[1]: the number is not finite"#,
                r#"k.k: the key "k" appears twice"#,
                "s: a lone surrogate escape",
                "s[\"\u{fffd}\"][0]: a lone surrogate escape",
                "z[1][0][0]: the number is not finite",
            ]
        );
        // The strict parse names the first, and a later syntax error still decides.
        assert_eq!(JsonValue::parse(text).unwrap_err().to_string(), named[0]);
        assert!(matches!(
            JsonValue::parse(r#"[1e999,"\ud800",]"#),
            Err(JsonError::Syntax { offset: 16, .. })
        ));
        // A long key over many values: the path is written when an issue is recorded.
        let key = "k".repeat(100_000);
        let text = format!(r#"{{"{key}":[{}1e999]}}"#, "0,".repeat(100_000));
        let e = JsonValue::parse(&text).unwrap_err();
        assert_eq!(e.to_string(), format!("{key}[100000]: the number is not finite"));
    }

    #[test]
    fn paths_quote_keys_that_are_not_plain() {
        let p = JsonPath::root("content").key("a b").index(2).key("x");
        assert_eq!(p.as_str(), r#"content["a b"][2].x"#);
    }

    #[test]
    fn a_value_names_its_type_and_weighs_its_nodes_strings_and_entries() {
        let v = JsonValue::parse(r#"[null,true,1,"abc",[],{"key":"ab"}]"#).unwrap();
        let items = v.as_array().unwrap();
        let names: Vec<&str> = items.iter().map(JsonValue::type_name).collect();
        assert_eq!(names, ["null", "boolean", "number", "string", "array", "object"]);
        const NODE: usize = std::mem::size_of::<JsonValue>();
        const ENTRY: usize = std::mem::size_of::<String>() + NODE + 16;
        let weights: Vec<usize> = items.iter().map(JsonValue::footprint).collect();
        let object = NODE + ENTRY + "key".len() + "ab".len();
        assert_eq!(weights, [NODE, NODE, NODE, NODE + 3, NODE, object]);
        assert_eq!(object_footprint(items[5].as_object().unwrap()), object);
        assert_eq!(v.footprint(), NODE + weights.iter().sum::<usize>());
    }

    #[test]
    fn safe_integers() {
        assert_eq!(JsonNumber::new(3.0).unwrap().as_safe_integer(), Some(3));
        assert_eq!(JsonNumber::new(3.5).unwrap().as_safe_integer(), None);
        assert_eq!(JsonNumber::new(1e300).unwrap().as_safe_integer(), None);
        assert!(JsonNumber::new(f64::NAN).is_none());
    }
}
