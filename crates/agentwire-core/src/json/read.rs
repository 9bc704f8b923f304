//! A JSON reader without serde: one parser, not generic over anything, that checks a text against
//! RFC 8259 and records where each value lies (a [`Tape`]), and borrowed [`Value`] views that
//! read fields from it. A decoder written on it costs a few hundred bytes of wasm, where a derived
//! `Deserialize` costs kilobytes per type (`docs/size.md`).
//!
//! What it accepts is what `serde_json` accepts: strings with valid escapes (a lone surrogate
//! escape is refused), numbers in JSON's grammar whose value is a finite `f64`, one value with
//! JSON whitespace around it. Strings are validated when the tape is made, so reading them
//! later cannot fail. One known difference: a number of more than 19 digits within a few units
//! in the last place of `f64::MAX` (`1.7976931348623156355e308`) is below it, and read here,
//! where serde_json without `float_roundtrip` overflows on it and refuses it as out of range.

use std::borrow::Cow;
use std::fmt;

/// A JSON value's type, named as in error messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Null,
    Bool,
    Number,
    String,
    Array,
    Object,
}

impl Kind {
    pub fn name(self) -> &'static str {
        match self {
            Kind::Null => "null",
            Kind::Bool => "a boolean",
            Kind::Number => "a number",
            Kind::String => "a string",
            Kind::Array => "an array",
            Kind::Object => "an object",
        }
    }
}

/// Why a text is not JSON (or nests deeper than allowed), and the byte offset where that shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReadError {
    pub at: usize,
    pub reason: Reason,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reason {
    /// The text ends inside a value (or is empty).
    Eof,
    /// A byte that cannot start or continue a value here.
    Unexpected,
    /// A control character (below U+0020) unescaped in a string.
    Control,
    /// `\` followed by something other than `"\/bfnrtu` and four hex digits.
    BadEscape,
    /// A `\u` escape of one half of a surrogate pair without the other.
    LoneSurrogate,
    /// A number outside JSON's grammar.
    BadNumber,
    /// A number whose value is beyond `f64`.
    NumberOutOfRange,
    /// Something other than whitespace after the value.
    Trailing,
    /// Arrays and objects nested deeper than the limit given.
    TooDeep,
    /// A text of 4 GiB or more.
    TooLong,
}

impl fmt::Display for ReadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let what = match self.reason {
            Reason::Eof => "unexpected end of input",
            Reason::Unexpected => "unexpected character",
            Reason::Control => "control character in a string",
            Reason::BadEscape => "invalid escape",
            Reason::LoneSurrogate => "lone surrogate in a \\u escape",
            Reason::BadNumber => "invalid number",
            Reason::NumberOutOfRange => "number out of range",
            Reason::Trailing => "trailing characters",
            Reason::TooDeep => "nested too deep",
            Reason::TooLong => "text too long",
        };
        write!(f, "{what} at byte {}", self.at)
    }
}

impl std::error::Error for ReadError {}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Tag {
    Null,
    True,
    False,
    Number,
    /// A string without escapes: its text is the raw text between the quotes.
    Plain,
    /// A string with escapes.
    Escaped,
    /// A string with a `\u` escape of half a surrogate pair (lenient texts only).
    Lossy,
    /// A number beyond `f64` (lenient texts only).
    Huge,
    Array,
    Object,
}

/// One value on the tape: its raw text is `start..end` (strings with their quotes), and `next`
/// is the index of the node after it and everything inside it.
#[derive(Debug, Clone, Copy)]
struct Node {
    tag: Tag,
    start: u32,
    end: u32,
    next: u32,
}

/// A parsed text: every value in document order (an object's members as key, value, key, ...).
#[derive(Debug, Clone)]
pub struct Tape<'a> {
    text: &'a str,
    nodes: Vec<Node>,
}

/// Parses `text`, refusing arrays and objects nested deeper than `max_depth`.
pub fn parse(text: &str, max_depth: usize) -> Result<Tape<'_>, ReadError> {
    parse_with(text, max_depth, false)
}

/// Parses `text` as [`parse`] does, and as `JSON.parse` does also takes a `\u` escape of half a
/// surrogate pair without the other half (read as U+FFFD) and a number beyond `f64` (read as an
/// infinity): JavaScript's `JSON.stringify` writes the first, Python the second, and serde_json
/// skips both where it does not decode. [`Value::lossy`] says where they are.
pub fn parse_lenient(text: &str, max_depth: usize) -> Result<Tape<'_>, ReadError> {
    parse_with(text, max_depth, true)
}

fn parse_with(text: &str, max_depth: usize, lenient: bool) -> Result<Tape<'_>, ReadError> {
    if text.len() >= u32::MAX as usize {
        return Err(ReadError {
            at: 0,
            reason: Reason::TooLong,
        });
    }
    let mut p = Parser {
        b: text.as_bytes(),
        nodes: Vec::with_capacity(text.len() / 12 + 2),
        open: NONE,
        depth: 0,
        lenient,
    };
    p.run(max_depth)?;
    Ok(Tape { text, nodes: p.nodes })
}

struct Parser<'a> {
    b: &'a [u8],
    nodes: Vec<Node>,
    /// The innermost open array or object (`NONE` at the top). While a container is open, its
    /// node's `next` holds the one around it: the open containers are a list through the tape.
    open: u32,
    depth: usize,
    lenient: bool,
}

const NONE: u32 = u32::MAX;

fn err<T>(at: usize, reason: Reason) -> Result<T, ReadError> {
    Err(ReadError { at, reason })
}

impl Parser<'_> {
    fn run(&mut self, max_depth: usize) -> Result<(), ReadError> {
        let mut i = 0;
        loop {
            // A value starts at `i` (after whitespace). An array or object that is not empty
            // only opens: its first value comes next.
            let (j, opened) = self.value(self.ws(i), max_depth)?;
            i = j;
            if opened {
                continue;
            }
            // After a value: close containers, or move to the next member; done at the top.
            loop {
                i = self.ws(i);
                let Some(top) = self.nodes.get(self.open as usize) else {
                    return if i == self.b.len() {
                        Ok(())
                    } else {
                        err(i, Reason::Trailing)
                    };
                };
                let object = top.tag == Tag::Object;
                match self.b.get(i) {
                    Some(b',') => {
                        i += 1;
                        if object {
                            i = self.key(self.ws(i))?;
                        }
                        break;
                    }
                    Some(b'}') if object => i = self.close(i),
                    Some(b']') if !object => i = self.close(i),
                    Some(_) => return err(i, Reason::Unexpected),
                    None => return err(i, Reason::Eof),
                }
            }
        }
    }

    fn ws(&self, mut i: usize) -> usize {
        while matches!(self.b.get(i), Some(b' ' | b'\t' | b'\n' | b'\r')) {
            i += 1;
        }
        i
    }

    fn push(&mut self, tag: Tag, start: usize, end: usize) {
        let next = self.nodes.len() as u32 + 1;
        self.nodes.push(Node {
            tag,
            start: start as u32,
            end: end as u32,
            next,
        });
    }

    /// Ends the innermost container at the bracket at `i`; returns the index after it.
    fn close(&mut self, i: usize) -> usize {
        let next = self.nodes.len() as u32;
        if let Some(n) = self.nodes.get_mut(self.open as usize) {
            self.open = n.next;
            self.depth -= 1;
            n.end = i as u32 + 1;
            n.next = next;
        }
        i + 1
    }

    /// Reads one value at `i`: the index after it, or, for an array or object that is not
    /// empty, the index where its first value starts (after the first key) and `true`.
    fn value(&mut self, i: usize, max_depth: usize) -> Result<(usize, bool), ReadError> {
        let b = self.b;
        let end = match b.get(i) {
            None => return err(i, Reason::Eof),
            Some(&c @ (b'{' | b'[')) => {
                if self.depth >= max_depth {
                    return err(i, Reason::TooDeep);
                }
                let tag = if c == b'{' { Tag::Object } else { Tag::Array };
                let node = Node {
                    tag,
                    start: i as u32,
                    end: i as u32 + 1,
                    next: self.open,
                };
                self.open = self.nodes.len() as u32;
                self.depth += 1;
                self.nodes.push(node);
                let j = self.ws(i + 1);
                return match (tag, b.get(j)) {
                    (Tag::Object, Some(b'}')) | (Tag::Array, Some(b']')) => Ok((self.close(j), false)),
                    (Tag::Object, _) => Ok((self.key(j)?, true)),
                    _ => Ok((j, true)),
                };
            }
            Some(b'"') => self.string(i)?,
            Some(b't') => self.literal(i, b"true", Tag::True)?,
            Some(b'f') => self.literal(i, b"false", Tag::False)?,
            Some(b'n') => self.literal(i, b"null", Tag::Null)?,
            Some(b'-' | b'0'..=b'9') => {
                let (end, huge) = number(b, i)?;
                if huge && !self.lenient {
                    return err(i, Reason::NumberOutOfRange);
                }
                self.push(if huge { Tag::Huge } else { Tag::Number }, i, end);
                end
            }
            Some(_) => return err(i, Reason::Unexpected),
        };
        Ok((end, false))
    }

    /// The string at `i` onto the tape: the index after it.
    fn string(&mut self, i: usize) -> Result<usize, ReadError> {
        let (end, escaped, lone) = string(self.b, i)?;
        let tag = match (escaped, lone) {
            (_, Some(at)) if !self.lenient => return err(at, Reason::LoneSurrogate),
            (_, Some(_)) => Tag::Lossy,
            (true, None) => Tag::Escaped,
            (false, None) => Tag::Plain,
        };
        self.push(tag, i, end);
        Ok(end)
    }

    fn literal(&mut self, i: usize, word: &[u8], tag: Tag) -> Result<usize, ReadError> {
        let end = i + word.len();
        match self.b.get(i..end) {
            Some(w) if w == word => {
                self.push(tag, i, end);
                Ok(end)
            }
            _ => err(
                i,
                if self.b.len() < end && word.starts_with(&self.b[i..]) {
                    Reason::Eof
                } else {
                    Reason::Unexpected
                },
            ),
        }
    }

    /// A member's key at `i`, then its colon; returns the index after the colon.
    fn key(&mut self, i: usize) -> Result<usize, ReadError> {
        match self.b.get(i) {
            Some(b'"') => {}
            Some(_) => return err(i, Reason::Unexpected),
            None => return err(i, Reason::Eof),
        }
        let end = self.string(i)?;
        let j = self.ws(end);
        match self.b.get(j) {
            Some(b':') => Ok(j + 1),
            Some(_) => err(j, Reason::Unexpected),
            None => err(j, Reason::Eof),
        }
    }
}

/// The string whose opening quote is at `i`: the index after its closing quote, whether it has
/// escapes, and where its first lone surrogate escape is. Checks every escape.
fn string(b: &[u8], i: usize) -> Result<(usize, bool, Option<usize>), ReadError> {
    let mut j = i + 1;
    let mut escaped = false;
    let mut lone = None;
    loop {
        j = super::plain_run(b, j);
        match b.get(j) {
            None => return err(j, Reason::Eof),
            Some(b'"') => return Ok((j + 1, escaped, lone)),
            Some(b'\\') => {
                escaped = true;
                let (next, paired) = escape(b, j)?;
                if !paired && lone.is_none() {
                    lone = Some(j);
                }
                j = next;
            }
            // A control character: `plain_run` stops only at these three kinds of byte.
            Some(_) => return err(j, Reason::Control),
        }
    }
}

/// The escape whose backslash is at `i`: the index after it, and false for a `\u` escape of half
/// a surrogate pair without the other half.
fn escape(b: &[u8], i: usize) -> Result<(usize, bool), ReadError> {
    match b.get(i + 1) {
        None => err(i + 1, Reason::Eof),
        Some(b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't') => Ok((i + 2, true)),
        Some(b'u') => match hex4(b, i + 2)? {
            0xd800..=0xdbff if b.get(i + 6) == Some(&b'\\') && b.get(i + 7) == Some(&b'u') => {
                match hex4(b, i + 8)? {
                    0xdc00..=0xdfff => Ok((i + 12, true)),
                    // The next escape stands alone: it is read on its own.
                    _ => Ok((i + 6, false)),
                }
            }
            0xd800..=0xdfff => Ok((i + 6, false)),
            _ => Ok((i + 6, true)),
        },
        Some(_) => err(i + 1, Reason::BadEscape),
    }
}

fn hex4(b: &[u8], i: usize) -> Result<u32, ReadError> {
    let mut v = 0;
    for k in i..i + 4 {
        let d = match b.get(k) {
            None => return err(k, Reason::Eof),
            Some(&c) => (c as char).to_digit(16),
        };
        match d {
            Some(d) => v = v * 16 + d,
            None => return err(k, Reason::BadEscape),
        }
    }
    Ok(v)
}

/// The number starting at `i`: the index after it, and true when its value is beyond `f64`.
fn number(b: &[u8], i: usize) -> Result<(usize, bool), ReadError> {
    let digits = |mut j: usize| {
        while matches!(b.get(j), Some(b'0'..=b'9')) {
            j += 1;
        }
        j
    };
    let mut j = i + usize::from(b[i] == b'-');
    let int = j;
    match b.get(j) {
        Some(b'0') => j += 1,
        Some(b'1'..=b'9') => j = digits(j + 1),
        None => return err(j, Reason::Eof),
        Some(_) => return err(j, Reason::BadNumber),
    }
    let mut plain = j - int <= 19;
    if b.get(j) == Some(&b'.') {
        plain = false;
        let k = digits(j + 1);
        if k == j + 1 {
            return err(k, if k == b.len() { Reason::Eof } else { Reason::BadNumber });
        }
        j = k;
    }
    if let Some(b'e' | b'E') = b.get(j) {
        plain = false;
        j += 1;
        if let Some(b'+' | b'-') = b.get(j) {
            j += 1;
        }
        let k = digits(j);
        if k == j {
            return err(k, if k == b.len() { Reason::Eof } else { Reason::BadNumber });
        }
        j = k;
    }
    // Up to 19 integer digits always fit an f64's range; anything else is checked by value.
    Ok((j, !plain && !f64_of(&b[i..j]).is_finite()))
}

/// The value of a number the parser checked, within a few units in the last place of the
/// correctly rounded value (as `serde_json` without `float_roundtrip`): core's exact parser
/// brings 13 KB of tables into the wasm. Infinite when beyond `f64`.
fn f64_of(b: &[u8]) -> f64 {
    const POW10: [f64; 23] = [
        1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19,
        1e20, 1e21, 1e22,
    ];
    let neg = b.first() == Some(&b'-');
    let (mut m, mut e, mut frac) = (0u64, 0i64, false);
    let mut i = usize::from(neg);
    while let Some(&c) = b.get(i) {
        match c {
            b'0'..=b'9' if m < 1_000_000_000_000_000_000 => {
                m = m * 10 + u64::from(c - b'0');
                e -= i64::from(frac);
            }
            // Digits past the 19th only scale (or, after the point, are dropped).
            b'0'..=b'9' => e += i64::from(!frac),
            b'.' => frac = true,
            _ => break,
        }
        i += 1;
    }
    if let Some(b'e' | b'E') = b.get(i) {
        let sign = if b.get(i + 1) == Some(&b'-') { -1 } else { 1 };
        let digits = b[i + 1..].iter().skip_while(|c| !c.is_ascii_digit());
        // Capped far above any text's length, so the digits' own shift always counts in full.
        let x = digits.fold(0i64, |x, &c| (x * 10 + i64::from(c - b'0')).min(1_000_000_000_000));
        e += sign * x;
    }
    let mut v = m as f64;
    while e > 22 && v.is_finite() && v != 0.0 {
        v *= 1e22;
        e -= 22;
    }
    while e < -22 && v != 0.0 {
        v /= 1e22;
        e += 22;
    }
    let p = POW10[e.unsigned_abs().min(22) as usize];
    let v = if e >= 0 { v * p } else { v / p };
    if neg {
        -v
    } else {
        v
    }
}

impl<'a> Tape<'a> {
    /// The top-level value.
    pub fn root(&self) -> Value<'_, 'a> {
        Value { tape: self, i: 0 }
    }

    /// The text parsed.
    pub fn text(&self) -> &'a str {
        self.text
    }
}

/// A value on a [`Tape`]: cheap to copy, borrowed from the text.
#[derive(Clone, Copy)]
pub struct Value<'t, 'a> {
    tape: &'t Tape<'a>,
    i: u32,
}

impl fmt::Debug for Value<'_, '_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.raw())
    }
}

impl<'t, 'a> Value<'t, 'a> {
    fn node(&self) -> Node {
        self.tape.nodes[self.i as usize]
    }

    pub fn kind(&self) -> Kind {
        match self.node().tag {
            Tag::Null => Kind::Null,
            Tag::True | Tag::False => Kind::Bool,
            Tag::Number | Tag::Huge => Kind::Number,
            Tag::Plain | Tag::Escaped | Tag::Lossy => Kind::String,
            Tag::Array => Kind::Array,
            Tag::Object => Kind::Object,
        }
    }

    /// The value's text as received (a string with its quotes and escapes).
    pub fn raw(&self) -> &'a str {
        let n = self.node();
        self.tape.text.get(n.start as usize..n.end as usize).unwrap_or("")
    }

    pub fn is_null(&self) -> bool {
        self.node().tag == Tag::Null
    }

    pub fn as_bool(&self) -> Option<bool> {
        match self.node().tag {
            Tag::True => Some(true),
            Tag::False => Some(false),
            _ => None,
        }
    }

    /// A string's text, escapes decoded (borrowed when it has none).
    pub fn as_str(&self) -> Option<Cow<'a, str>> {
        let inner = || {
            let raw = self.raw();
            raw.get(1..raw.len().saturating_sub(1)).unwrap_or("")
        };
        match self.node().tag {
            Tag::Plain => Some(Cow::Borrowed(inner())),
            Tag::Escaped | Tag::Lossy => Some(Cow::Owned(unescape(inner()))),
            _ => None,
        }
    }

    /// A number written as an integer (no fraction, no exponent) from 0 to `u64::MAX`.
    pub fn as_u64(&self) -> Option<u64> {
        if self.node().tag != Tag::Number {
            return None;
        }
        self.raw().bytes().try_fold(0u64, |v, c| match c {
            b'0'..=b'9' => v.checked_mul(10)?.checked_add(u64::from(c - b'0')),
            _ => None,
        })
    }

    /// A number written as an integer within `i64`. `-0` is not one: serde_json reads it as the
    /// float `-0.0`, which an `i64` refuses.
    pub fn as_i64(&self) -> Option<i64> {
        let raw = self.raw();
        if self.node().tag != Tag::Number || raw == "-0" {
            return None;
        }
        let (neg, digits) = match raw.strip_prefix('-') {
            Some(d) => (true, d),
            None => (false, raw),
        };
        let m = digits.bytes().try_fold(0i64, |v, c| match c {
            b'0'..=b'9' => v.checked_mul(10)?.checked_sub(i64::from(c - b'0')),
            _ => None,
        })?;
        if neg {
            Some(m)
        } else {
            m.checked_neg()
        }
    }

    /// Any number, as the nearest `f64`.
    pub fn as_f64(&self) -> Option<f64> {
        match self.node().tag {
            Tag::Number => Some(f64_of(self.raw().as_bytes())),
            Tag::Huge => Some(if self.raw().starts_with('-') {
                f64::NEG_INFINITY
            } else {
                f64::INFINITY
            }),
            _ => None,
        }
    }

    /// True when the value holds (or is) a string with a lone surrogate escape or a number
    /// beyond `f64`, which only [`parse_lenient`] takes: what serde refuses where it decodes.
    pub fn lossy(&self) -> bool {
        let tape = &self.tape.nodes;
        let end = self.node().next as usize;
        tape.get(self.i as usize..end)
            .is_some_and(|n| n.iter().any(|n| matches!(n.tag, Tag::Lossy | Tag::Huge)))
    }

    /// The first member of an object named `key` (`None` for other values).
    pub fn get(&self, key: &str) -> Option<Value<'t, 'a>> {
        self.members().find(|(k, _)| k.is(key)).map(|(_, v)| v)
    }

    /// An object's members in order (empty for other values).
    pub fn members(&self) -> Members<'t, 'a> {
        let n = self.node();
        let (at, end) = if n.tag == Tag::Object {
            (self.i + 1, n.next)
        } else {
            (0, 0)
        };
        Members {
            tape: self.tape,
            at,
            end,
        }
    }

    /// An array's items in order (empty for other values).
    pub fn items(&self) -> Items<'t, 'a> {
        let n = self.node();
        let (at, end) = if n.tag == Tag::Array {
            (self.i + 1, n.next)
        } else {
            (0, 0)
        };
        Items {
            tape: self.tape,
            at,
            end,
        }
    }

    /// The first key of an object that is not in `allowed`, or that appears twice.
    pub fn odd_key(&self, allowed: &[&str]) -> Option<Key<'t, 'a>> {
        let mut seen = 0u64;
        for (k, _) in self.members() {
            let Some(pos) = k.find(allowed) else {
                return Some(k);
            };
            if pos >= 64 {
                // Past what the bit set holds: counted.
                if self.members().filter(|(m, _)| m.is(allowed[pos])).nth(1).is_some() {
                    return Some(k);
                }
                continue;
            }
            let bit = 1u64 << pos;
            if seen & bit != 0 {
                return Some(k);
            }
            seen |= bit;
        }
        None
    }
}

/// An object's key.
#[derive(Clone, Copy)]
pub struct Key<'t, 'a>(Value<'t, 'a>);

impl<'t, 'a> Key<'t, 'a> {
    /// The key's text, escapes decoded.
    pub fn text(&self) -> Cow<'a, str> {
        self.0.as_str().unwrap_or_default()
    }

    /// True when the key has a lone surrogate escape (lenient texts only).
    pub fn lossy(&self) -> bool {
        self.0.lossy()
    }

    /// True when the key's text is `name`.
    #[inline]
    pub fn is(&self, name: &str) -> bool {
        self.find(&[name]).is_some()
    }

    /// The index of the first of `names` that is the key's text. The tape is read once, and an
    /// unescaped key is compared as bytes: this runs for every member of every object a decoder
    /// looks keys up in.
    pub fn find(&self, names: &[&str]) -> Option<usize> {
        let n = self.0.node();
        let plain = match n.tag {
            Tag::Plain => self
                .0
                .tape
                .text
                .as_bytes()
                .get(n.start as usize + 1..(n.end as usize).saturating_sub(1)),
            _ => None,
        };
        match plain {
            Some(key) => names
                .iter()
                .position(|name| name.len() == key.len() && name.as_bytes() == key),
            None => {
                let text = self.text();
                names.iter().position(|name| *name == text)
            }
        }
    }
}

impl fmt::Debug for Key<'_, '_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.0.raw())
    }
}

pub struct Members<'t, 'a> {
    tape: &'t Tape<'a>,
    at: u32,
    end: u32,
}

impl<'t, 'a> Iterator for Members<'t, 'a> {
    type Item = (Key<'t, 'a>, Value<'t, 'a>);

    fn next(&mut self) -> Option<Self::Item> {
        if self.at >= self.end {
            return None;
        }
        let key = Value {
            tape: self.tape,
            i: self.at,
        };
        let value = Value {
            tape: self.tape,
            i: self.at + 1,
        };
        self.at = value.node().next;
        Some((Key(key), value))
    }
}

pub struct Items<'t, 'a> {
    tape: &'t Tape<'a>,
    at: u32,
    end: u32,
}

impl<'t, 'a> Iterator for Items<'t, 'a> {
    type Item = Value<'t, 'a>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.at >= self.end {
            return None;
        }
        let v = Value {
            tape: self.tape,
            i: self.at,
        };
        self.at = v.node().next;
        Some(v)
    }
}

/// Decodes the escapes of a string the parser checked (so none is malformed; a malformed one
/// would become U+FFFD rather than a panic).
fn unescape(raw: &str) -> String {
    let mut out = String::with_capacity(raw.len());
    let mut rest = raw;
    while let Some(k) = rest.find('\\') {
        out.push_str(&rest[..k]);
        let e = &rest[k + 1..];
        let (c, used) = match e.as_bytes().first() {
            Some(b'b') => ('\u{8}', 1),
            Some(b'f') => ('\u{c}', 1),
            Some(b'n') => ('\n', 1),
            Some(b'r') => ('\r', 1),
            Some(b't') => ('\t', 1),
            Some(b'u') => {
                let hi = hex(e.get(1..5));
                let lo = if e.get(5..7) == Some("\\u") {
                    hex(e.get(7..11))
                } else {
                    0
                };
                if (0xd800..0xdc00).contains(&hi) && (0xdc00..0xe000).contains(&lo) {
                    let c = char::from_u32(0x10000 + ((hi - 0xd800) << 10) + (lo - 0xdc00));
                    (c.unwrap_or('\u{fffd}'), 11)
                } else {
                    // A lone surrogate (lenient texts) is U+FFFD.
                    (char::from_u32(hi).unwrap_or('\u{fffd}'), 5)
                }
            }
            Some(&c) if c.is_ascii() => (c as char, 1),
            _ => ('\u{fffd}', 0),
        };
        out.push(c);
        rest = e.get(used..).unwrap_or("");
    }
    out.push_str(rest);
    out
}

fn hex(s: Option<&str>) -> u32 {
    s.and_then(|s| u32::from_str_radix(s, 16).ok()).unwrap_or(0xfffd)
}

#[cfg(test)]
#[path = "read_tests.rs"]
mod tests;
