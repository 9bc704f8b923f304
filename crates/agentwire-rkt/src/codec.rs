//! The RKT text codec: `RKT/1.0 TYPE`, `Name: value` headers, one blank line, optional body.
//!
//! Serialization follows the guide's examples exactly; parsing is tolerant where the guide's
//! example clients differ and strict where a wrong guess would corrupt a session. Every rule is
//! listed in `docs/protocols/rkt.md`.

use agentwire_core::parse_iso8601;
use agentwire_core::text::{clip, NAME_MAX};
use std::borrow::Cow;
use std::fmt;

/// The default size limit of one message, in bytes (1 MiB).
pub const DEFAULT_MAX_MESSAGE_SIZE: usize = 1 << 20;
/// The protocol token of the start line.
pub const PROTOCOL: &str = "RKT/1.0";
/// The WebSocket subprotocol a server requires.
pub const SUBPROTOCOL: &str = "rkt.1.0";
/// The most headers one message may carry besides `Content-Type` (the guide's messages have at
/// most 12). `Content-Type` is apart so that a message decoded with a body and no
/// `Content-Type` still decodes once `encode` has added one.
pub const MAX_HEADERS: usize = 64;
/// The longest id (`Message-ID`, `Session-ID`, `Reply-To`) accepted.
pub const MAX_ID_LEN: usize = 128;

macro_rules! message_types {
    ($($variant:ident => $name:literal, reply: $reply:literal;)*) => {
        /// Every message type agentwire speaks: the fourteen the guide names, `MEMORY_GET` (its
        /// clients' `memoryGet()` implies one; the guide never names it) and `PING`/`PONG`.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum MessageType { $($variant),* }

        impl MessageType {
            pub const ALL: &'static [MessageType] = &[$(MessageType::$variant),*];

            pub fn as_str(self) -> &'static str {
                match self { $(MessageType::$variant => $name),* }
            }

            pub fn parse(s: &str) -> Option<Self> {
                match s { $($name => Some(MessageType::$variant),)* _ => None }
            }

            /// Replies carry `Reply-To` and may omit `TTL`.
            pub fn is_reply(self) -> bool {
                match self { $(MessageType::$variant => $reply),* }
            }
        }
    };
}

message_types! {
    Hello => "HELLO", reply: false;
    HelloAck => "HELLO_ACK", reply: true;
    Request => "REQUEST", reply: false;
    Response => "RESPONSE", reply: true;
    StreamBegin => "STREAM_BEGIN", reply: true;
    StreamData => "STREAM_DATA", reply: true;
    StreamEnd => "STREAM_END", reply: true;
    Discover => "DISCOVER", reply: false;
    MemorySet => "MEMORY_SET", reply: false;
    MemoryGet => "MEMORY_GET", reply: false;
    Pay => "PAY", reply: false;
    Auth => "AUTH", reply: false;
    AuthOk => "AUTH_OK", reply: true;
    Error => "ERROR", reply: false;
    Goodbye => "GOODBYE", reply: false;
    Ping => "PING", reply: false;
    Pong => "PONG", reply: true;
}

impl fmt::Display for MessageType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Headers in wire order, with their names as written. Lookups ignore ASCII case. Names and
/// values share one buffer: a message's headers cost two allocations, not two per header (in
/// wasm, where the allocator is slow, that was a tenth of a request's round trip).
#[derive(Clone, Default)]
pub struct Headers {
    text: String,
    /// Per header, in `text`: where its name starts, where it ends and its value starts, where
    /// its value ends.
    spans: Vec<[usize; 3]>,
}

impl Headers {
    pub fn new() -> Self {
        Headers {
            text: String::with_capacity(256),
            spans: Vec::with_capacity(10),
        }
    }

    fn position(&self, name: &str) -> Option<usize> {
        // Bytes, lengths first: every lookup passes over every header.
        let (text, name) = (self.text.as_bytes(), name.as_bytes());
        self.spans
            .iter()
            .position(|s| s[1] - s[0] == name.len() && text[s[0]..s[1]].eq_ignore_ascii_case(name))
    }

    pub fn get(&self, name: &str) -> Option<&str> {
        self.position(name).map(|i| self.value_at(i))
    }

    fn value_at(&self, i: usize) -> &str {
        let s = self.spans[i];
        &self.text[s[1]..s[2]]
    }

    /// Appends a header without looking for one of the same name.
    fn push(&mut self, name: &str, value: &str) {
        let start = self.text.len();
        self.text.push_str(name);
        let mid = self.text.len();
        self.text.push_str(value);
        self.spans.push([start, mid, self.text.len()]);
    }

    /// Replaces the value of `name`, or appends it. A character the decoder refuses in a value
    /// (a control character but tab, CR and LF included, or DEL; see [`header_value_fault`])
    /// becomes a space, and one it refuses in a name (any but a letter, a digit, `-` and `_`)
    /// becomes `_` (an empty name is `_`), so a header can never split a message, and a message
    /// built by hand still decodes. The sessions refuse such a value from their caller instead
    /// (`invalid`); the names they write are their own.
    pub fn set(&mut self, name: &str, value: impl AsRef<str>) {
        let value = value.as_ref();
        let name = match is_token(name) {
            true => Cow::Borrowed(name),
            false if name.is_empty() => Cow::Borrowed("_"),
            false => replace_chars(name, |c| !u8::try_from(c).is_ok_and(is_token_byte), '_'),
        };
        let value = match has_control(value) {
            true => replace_chars(value, |c| u8::try_from(c).is_ok_and(refused_in_value), ' '),
            false => Cow::Borrowed(value),
        };
        match self.position(&name) {
            Some(i) => self.rebuild(i, Some(&value)),
            None => self.push(&name, &value),
        }
    }

    pub fn remove(&mut self, name: &str) -> Option<String> {
        let i = self.position(name)?;
        let value = self.value_at(i).to_owned();
        self.rebuild(i, None);
        Some(value)
    }

    /// The headers again with the `at`-th given `value`, or left out (`None`).
    fn rebuild(&mut self, at: usize, value: Option<&str>) {
        let old = std::mem::take(self);
        self.text.reserve(old.text.len() + value.map_or(0, str::len));
        for (i, (name, v)) in old.iter().enumerate() {
            match (i == at, value) {
                (false, _) => self.push(name, v),
                (true, Some(value)) => self.push(name, value),
                (true, None) => {}
            }
        }
    }

    pub fn iter(&self) -> impl Iterator<Item = (&str, &str)> {
        self.spans
            .iter()
            .map(|s| (&self.text[s[0]..s[1]], &self.text[s[1]..s[2]]))
    }

    pub fn len(&self) -> usize {
        self.spans.len()
    }

    pub fn is_empty(&self) -> bool {
        self.spans.is_empty()
    }
}

impl PartialEq for Headers {
    fn eq(&self, other: &Self) -> bool {
        self.iter().eq(other.iter())
    }
}

impl Eq for Headers {}

/// An `Authorization` value shows as `"<redacted>"`.
impl fmt::Debug for Headers {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let shown = self
            .iter()
            .map(|(name, value)| match name.eq_ignore_ascii_case("authorization") {
                true => (name, "<redacted>"),
                false => (name, value),
            });
        f.debug_list().entries(shown).finish()
    }
}

/// One decoded (or to-be-encoded) RKT message. The body is kept as text: the session parses the
/// bodies it needs and hands the rest to the user as raw JSON. `Debug` hides an `Authorization`
/// header and the body of AUTH and AUTH_OK (a key, a session token).
#[derive(Clone, PartialEq, Eq)]
pub struct Message {
    pub kind: MessageType,
    pub headers: Headers,
    pub body: Option<String>,
}

impl fmt::Debug for Message {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let Message { kind, headers, body } = self;
        let secret = matches!(kind, MessageType::Auth | MessageType::AuthOk);
        let body: &dyn fmt::Debug = match (secret, body) {
            (true, Some(_)) => &Some(agentwire_core::redact::Redacted),
            _ => body,
        };
        f.debug_struct("Message")
            .field("kind", kind)
            .field("headers", headers)
            .field("body", body)
            .finish()
    }
}

impl Message {
    pub fn new(kind: MessageType) -> Self {
        Message {
            kind,
            headers: Headers::new(),
            body: None,
        }
    }

    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name)
    }

    pub fn message_id(&self) -> &str {
        self.headers.get("Message-ID").unwrap_or("")
    }

    pub fn reply_to(&self) -> Option<&str> {
        self.headers.get("Reply-To")
    }

    /// `TTL` in seconds (validated by [`decode`]).
    pub fn ttl(&self) -> Option<u32> {
        self.headers.get("TTL").and_then(|v| v.parse().ok())
    }

    /// `Seq` of a `STREAM_DATA` (validated by [`decode`]).
    pub fn seq(&self) -> Option<u64> {
        self.headers.get("Seq").and_then(|v| v.parse().ok())
    }
}

/// What was wrong with a message that could not be decoded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DecodeErrorKind {
    /// Larger than the configured limit.
    TooLarge { size: usize, limit: usize },
    /// Empty or whitespace only.
    Empty,
    /// The first line is not `RKT/<major>.<minor> <TYPE>` with digits for the numbers.
    BadStartLine,
    /// `RKT/x.y` with a major version other than 1.
    UnsupportedVersion(String),
    /// A type the protocol does not define.
    UnknownType(String),
    /// A header line without `Name: value` form, or whose value holds `control`, a character
    /// [`header_value_fault`] finds (`line` is 1-based, counted in the text as given).
    BadHeaderLine { line: usize, control: Option<char> },
    /// The same header twice.
    DuplicateHeader(String),
    /// More than [`MAX_HEADERS`] headers.
    TooManyHeaders { limit: usize },
    /// A header this message type requires.
    MissingHeader(&'static str),
    /// A header whose value is not valid.
    BadHeaderValue { name: &'static str, reason: &'static str },
    /// The body is not as long as `Content-Length` says, or data follows it.
    ContentLength { declared: usize, actual: usize },
}

/// A message that could not be decoded: what was wrong, and whatever could still be read of the
/// message's identity so the reply can name it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DecodeError {
    pub kind: DecodeErrorKind,
    pub message_type: Option<String>,
    pub message_id: Option<String>,
    /// The message's `Reply-To`, when it can be read: the command it answers.
    pub reply_to: Option<String>,
}

impl DecodeErrorKind {
    /// The kind's name in snake_case, as the golden vectors and the bindings spell it.
    pub fn name(&self) -> &'static str {
        match self {
            DecodeErrorKind::TooLarge { .. } => "too_large",
            DecodeErrorKind::Empty => "empty",
            DecodeErrorKind::BadStartLine => "bad_start_line",
            DecodeErrorKind::UnsupportedVersion(_) => "unsupported_version",
            DecodeErrorKind::UnknownType(_) => "unknown_type",
            DecodeErrorKind::BadHeaderLine { .. } => "bad_header_line",
            DecodeErrorKind::DuplicateHeader(_) => "duplicate_header",
            DecodeErrorKind::TooManyHeaders { .. } => "too_many_headers",
            DecodeErrorKind::MissingHeader(_) => "missing_header",
            DecodeErrorKind::BadHeaderValue { .. } => "bad_header_value",
            DecodeErrorKind::ContentLength { .. } => "content_length",
        }
    }
}

impl DecodeError {
    /// The header or part of the message at fault, for the `details.field` of an ERROR reply.
    pub fn field(&self) -> &str {
        match &self.kind {
            DecodeErrorKind::TooLarge { .. } | DecodeErrorKind::Empty => "message",
            DecodeErrorKind::BadStartLine | DecodeErrorKind::UnsupportedVersion(_) => "start-line",
            DecodeErrorKind::UnknownType(_) => "type",
            DecodeErrorKind::BadHeaderLine { .. } => "headers",
            DecodeErrorKind::DuplicateHeader(_) | DecodeErrorKind::TooManyHeaders { .. } => "headers",
            DecodeErrorKind::MissingHeader(n) => n,
            DecodeErrorKind::BadHeaderValue { name, .. } => name,
            DecodeErrorKind::ContentLength { .. } => "Content-Length",
        }
    }
}

impl fmt::Display for DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.kind {
            DecodeErrorKind::TooLarge { size, limit } => {
                write!(f, "message of {size} bytes exceeds the limit of {limit} bytes")
            }
            DecodeErrorKind::Empty => f.write_str("empty message"),
            DecodeErrorKind::BadStartLine => f.write_str("start line is not `RKT/1.0 TYPE`"),
            DecodeErrorKind::UnsupportedVersion(v) => write!(f, "unsupported protocol version `{}`", clip(v, NAME_MAX)),
            DecodeErrorKind::UnknownType(t) => write!(f, "unknown message type `{}`", clip(t, NAME_MAX)),
            DecodeErrorKind::BadHeaderLine { line, control: None } => {
                write!(f, "line {line} is not a `Name: value` header")
            }
            DecodeErrorKind::BadHeaderLine { line, control: Some(c) } => {
                write!(
                    f,
                    "line {line} holds the control character U+{:04X} in its value",
                    u32::from(*c)
                )
            }
            DecodeErrorKind::DuplicateHeader(n) => write!(f, "header `{}` appears twice", clip(n, NAME_MAX)),
            DecodeErrorKind::TooManyHeaders { limit } => write!(f, "more than {limit} headers"),
            DecodeErrorKind::MissingHeader(n) => write!(f, "required header `{n}` is missing"),
            DecodeErrorKind::BadHeaderValue { name, reason } => write!(f, "header `{name}` {reason}"),
            DecodeErrorKind::ContentLength { declared, actual } => {
                write!(f, "Content-Length is {declared} but the body is {actual} bytes")
            }
        }
    }
}

impl std::error::Error for DecodeError {}

/// Serializes a message exactly like the guide's examples: start line, one `Name: value` line per
/// header, then, with a body, `Content-Type: application/json` (unless set), one blank line and
/// the body with no trailing newline; without a body the message ends after the last header
/// with a single `\n`.
pub fn encode(msg: &Message) -> String {
    let body_len = msg.body.as_ref().map_or(0, |b| b.len() + 34);
    let mut out = String::with_capacity(24 + msg.headers.len() * 40 + body_len);
    encode_into(msg, &mut out);
    out
}

/// [`encode`] into a buffer the caller reuses.
pub fn encode_into(msg: &Message, out: &mut String) {
    out.push_str(PROTOCOL);
    out.push(' ');
    out.push_str(msg.kind.as_str());
    out.push('\n');
    for (name, value) in msg.headers.iter() {
        out.push_str(name);
        out.push_str(": ");
        out.push_str(value);
        out.push('\n');
    }
    if let Some(body) = &msg.body {
        if msg.headers.get("Content-Type").is_none() {
            out.push_str("Content-Type: application/json\n");
        }
        out.push('\n');
        out.push_str(body);
    }
}

fn is_token_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'-' || b == b'_'
}

fn is_token(s: &str) -> bool {
    // No early exit, so the check vectorizes.
    !s.is_empty() && s.bytes().fold(true, |ok, b| ok & is_token_byte(b))
}

// Byte searches and trims for the header section: `str::split_once(char)` and
// `trim_matches([' ', '\t'])` go through the generic char searcher (a `memcmp` call per match),
// which was about a quarter of decode's time.

/// The position of the first `byte` in `s`: eight bytes at a time, then one at a time.
fn find_byte(s: &str, byte: u8) -> Option<usize> {
    const LO: u64 = 0x0101_0101_0101_0101;
    const HI: u64 = 0x8080_8080_8080_8080;
    let b = s.as_bytes();
    let mut i = 0;
    while i + 8 <= b.len() {
        let word = u64::from_le_bytes(b[i..i + 8].try_into().unwrap()) ^ (LO * u64::from(byte));
        // The lowest set bit marks the first zero byte, that is the first `byte`.
        let zero = word.wrapping_sub(LO) & !word & HI;
        if zero != 0 {
            return Some(i + (zero.trailing_zeros() / 8) as usize);
        }
        i += 8;
    }
    b[i..].iter().position(|&c| c == byte).map(|p| i + p)
}

fn is_blank(b: u8) -> bool {
    b == b' ' || b == b'\t'
}

/// `s` without trailing spaces and tabs.
fn trim_blanks_end(s: &str) -> &str {
    &s[..s.bytes().rposition(|c| !is_blank(c)).map_or(0, |i| i + 1)]
}

/// `s` without leading and trailing spaces and tabs.
fn trim_blanks(s: &str) -> &str {
    trim_blanks_end(&s[s.bytes().position(|c| !is_blank(c)).unwrap_or(s.len())..])
}

/// `Name: value` with a token name: the shape of a header line.
fn split_header(line: &str) -> Option<(&str, &str)> {
    let colon = find_byte(line, b':')?;
    let name = trim_blanks_end(&line[..colon]);
    is_token(name).then(|| (name, trim_blanks(&line[colon + 1..])))
}

/// `rest` past any empty lines (`\n` or `\r\n`).
fn skip_empty_lines(mut rest: &str) -> &str {
    while let Some(after) = rest.strip_prefix('\n').or_else(|| rest.strip_prefix("\r\n")) {
        rest = after;
    }
    rest
}

/// True when the text after the blank lines is more headers rather than a body: the guide's
/// TypeScript client writes an empty line for an empty `extra` argument before `Content-Type`.
fn continues_headers(first: &str) -> bool {
    // `split_header(first line).is_some()` (a token, blanks, then `:`), without scanning the
    // rest of the line, which for a one-line JSON body is the whole body. JSON never starts so.
    let b = first.as_bytes();
    let name = b.iter().take_while(|&&c| is_token_byte(c)).count();
    name > 0 && b[name..].iter().find(|&&c| !is_blank(c)) == Some(&b':')
}

/// The first line of `text` without its `\n` or `\r\n`, and the text after it. Only the start
/// line and headers are split this way: the body is kept byte for byte, so `Content-Length`
/// counts what was sent.
fn next_line(text: &str) -> (&str, &str) {
    match find_byte(text, b'\n') {
        Some(i) => {
            let line = &text[..i];
            (line.strip_suffix('\r').unwrap_or(line), &text[i + 1..])
        }
        None => (text, ""),
    }
}

/// An id (`Message-ID`, `Session-ID`, `Reply-To`): 1 to [`MAX_ID_LEN`] printable ASCII characters.
pub(crate) fn valid_id(v: &str) -> bool {
    // No early exit, so the check vectorizes.
    !v.is_empty() && v.len() <= MAX_ID_LEN && v.bytes().fold(true, |ok, b| ok & b.is_ascii_graphic())
}

/// A byte no header value may hold: a control character other than tab (CR and LF included),
/// or DEL.
#[inline]
fn refused_in_value(b: u8) -> bool {
    (b < 0x20 && b != b'\t') | (b == 0x7f)
}

/// `s` with each character `refused` replaced by `by`.
fn replace_chars(s: &str, refused: fn(char) -> bool, by: char) -> Cow<'static, str> {
    Cow::Owned(s.chars().map(|c| if refused(c) { by } else { c }).collect())
}

/// A value holds a byte [`refused_in_value`]. No early exit, so the check vectorizes.
fn has_control(v: &str) -> bool {
    v.bytes().fold(false, |bad, b| bad | refused_in_value(b))
}

/// The first character of `value` the decoder refuses in a header value: a control character
/// other than tab (CR and LF included), or DEL. `None` when the value can be written as it is.
pub fn header_value_fault(value: &str) -> Option<char> {
    value.bytes().find(|&b| refused_in_value(b)).map(char::from)
}

/// The value of header `name` in a message that could not be decoded, if it is a valid id.
pub(crate) fn find_id(text: &str, name: &str) -> Option<String> {
    text.lines()
        .skip(1)
        .take_while(|l| !l.trim().is_empty())
        .filter_map(split_header)
        .find(|(n, _)| n.eq_ignore_ascii_case(name))
        .map(|(_, v)| v)
        .filter(|v| valid_id(v))
        .map(str::to_string)
}

/// Who reads a message: a few rules differ by direction (`docs/protocols/rkt.md`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Reader {
    /// The server, or any reader of the strict rules ([`decode`]).
    Server,
    /// The client ([`decode_for_client`]): a newer server may send what it does not know.
    Client,
}

/// Decodes one message. See the module docs and `docs/protocols/rkt.md` for the rules.
pub fn decode(text: &str, max_size: usize) -> Result<Message, DecodeError> {
    decode_as(text, max_size, Reader::Server)
}

/// Decodes one message a server sent, as the client reads it: [`decode`], except that
/// - a message of a type this client does not know is read through (headers, body) before it
///   is refused, so [`DecodeErrorKind::UnknownType`] means a message that is otherwise well
///   formed (one that is not is refused for its first fault, `message_type` naming its type);
/// - the optional headers the client does not act on, `Stream` and `Priority` (request headers
///   a server has no use to send), and `Retry-After` (read as far as the client can, into
///   [`RktError::retry_after_s`](crate::RktError::retry_after_s)), are not checked: any value
///   is kept as it is.
pub fn decode_for_client(text: &str, max_size: usize) -> Result<Message, DecodeError> {
    decode_as(text, max_size, Reader::Client)
}

fn decode_as(text: &str, max_size: usize, reader: Reader) -> Result<Message, DecodeError> {
    let fail = |kind, message_type: Option<&str>| DecodeError {
        kind,
        message_type: message_type.map(str::to_string),
        message_id: find_id(text, "Message-ID"),
        reply_to: find_id(text, "Reply-To"),
    };
    if text.len() > max_size {
        // Name the message if its id is near the top, without reading the whole of it.
        let head = agentwire_core::text::prefix(text, 4096).len();
        return Err(DecodeError {
            kind: DecodeErrorKind::TooLarge {
                size: text.len(),
                limit: max_size,
            },
            message_type: None,
            message_id: find_id(&text[..head], "Message-ID"),
            reply_to: find_id(&text[..head], "Reply-To"),
        });
    }
    let trimmed = text.trim_start_matches(['\r', '\n', ' ', '\t', '\u{feff}']);
    // Blank lines before the start line are lines of the text: a bad header's number counts them.
    let leading_lines = text[..text.len() - trimmed.len()]
        .bytes()
        .filter(|&b| b == b'\n')
        .count();
    let text = trimmed;
    if text.trim().is_empty() {
        return Err(fail(DecodeErrorKind::Empty, None));
    }
    let (start, mut rest) = next_line(text);
    let start = start.trim_end_matches([' ', '\t']);
    let (proto, type_name) = start
        .split_once(' ')
        .ok_or_else(|| fail(DecodeErrorKind::BadStartLine, None))?;
    let version = proto
        .strip_prefix("RKT/")
        .ok_or_else(|| fail(DecodeErrorKind::BadStartLine, None))?;
    let type_name = type_name.trim_start_matches(' ');
    // `major.minor`, both digits: anything else is no version (a bad start line); a major
    // other than 1 is one this codec does not speak.
    let number = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    match version.split_once('.') {
        Some((major, minor)) if number(major) && number(minor) => {
            if major != "1" {
                return Err(fail(
                    DecodeErrorKind::UnsupportedVersion(version.to_string()),
                    Some(type_name),
                ));
            }
        }
        _ => return Err(fail(DecodeErrorKind::BadStartLine, None)),
    }
    let kind = MessageType::parse(type_name);
    let unknown = || DecodeErrorKind::UnknownType(type_name.to_string());
    match kind {
        None if !is_token(type_name) => return Err(fail(DecodeErrorKind::BadStartLine, None)),
        None if reader == Reader::Server => return Err(fail(unknown(), Some(type_name))),
        _ => {}
    }
    let fail = |k| fail(k, Some(type_name));

    let mut headers = Headers::new();
    let mut content_type = false;
    let mut line_no = 1 + leading_lines;
    loop {
        let (line, next) = next_line(rest);
        line_no += 1;
        if line.bytes().all(is_blank) {
            // One pass over a run of empty lines, so a long run costs linear time.
            let after = skip_empty_lines(next);
            if continues_headers(after) {
                line_no += next[..next.len() - after.len()].bytes().filter(|&b| b == b'\n').count();
                rest = after;
                continue;
            }
            rest = next;
            break;
        }
        let bad_line = |control| fail(DecodeErrorKind::BadHeaderLine { line: line_no, control });
        let (name, value) = split_header(line).ok_or_else(|| bad_line(None))?;
        let is_content_type = name.eq_ignore_ascii_case("Content-Type");
        if headers.len() - usize::from(content_type) == MAX_HEADERS && !is_content_type {
            return Err(fail(DecodeErrorKind::TooManyHeaders { limit: MAX_HEADERS }));
        }
        if headers.get(name).is_some() {
            return Err(fail(DecodeErrorKind::DuplicateHeader(name.to_string())));
        }
        content_type |= is_content_type;
        if has_control(value) {
            return Err(bad_line(header_value_fault(value)));
        }
        headers.push(name, value);
        rest = next;
        if next.is_empty() {
            break;
        }
    }

    let body = match headers.get("Content-Length") {
        Some(v) => {
            let declared: usize = digits(v).ok_or(()).map_err(|_| {
                fail(DecodeErrorKind::BadHeaderValue {
                    name: "Content-Length",
                    reason: NOT_A_BYTE_COUNT,
                })
            })?;
            let mismatch = || {
                fail(DecodeErrorKind::ContentLength {
                    declared,
                    actual: rest.trim_end().len(),
                })
            };
            if declared > rest.len() || !rest.is_char_boundary(declared) || !rest[declared..].trim().is_empty() {
                return Err(mismatch());
            }
            // The declared bytes are the body, even blank ones, so it re-encodes to the same length.
            (declared > 0).then(|| rest[..declared].to_string())
        }
        None => Some(rest.trim_end())
            .filter(|b| !b.trim().is_empty())
            .map(str::to_string),
    };
    validate(kind, &headers, reader).map_err(fail)?;
    match kind {
        Some(kind) => Ok(Message { kind, headers, body }),
        None => Err(fail(unknown())),
    }
}

/// What a `Content-Length` that is not a `usize` written in digits is told: the range, as
/// `Version`, `TTL` and `Seq` are (`usize::MAX` is the target's).
#[cfg(target_pointer_width = "64")]
const NOT_A_BYTE_COUNT: &str = "is not a byte count from 0 to 18446744073709551615";
#[cfg(not(target_pointer_width = "64"))]
const NOT_A_BYTE_COUNT: &str = "is not a byte count from 0 to 4294967295";

/// A decimal number written with digits only (`str::parse` also takes a leading `+`).
fn digits<T: std::str::FromStr>(v: &str) -> Option<T> {
    (!v.is_empty() && v.bytes().all(|b| b.is_ascii_digit()))
        .then(|| v.parse().ok())
        .flatten()
}

/// The header rules of a message of type `kind`; of a type not known (`None`), those of every
/// type: `TTL` and `Reply-To` are checked when given, and required of none. The client checks
/// no optional header it does not act on (`Stream`, `Priority`, `Retry-After`): a newer server's
/// value of one is no reason to refuse the answer it comes with.
fn validate(kind: Option<MessageType>, h: &Headers, reader: Reader) -> Result<(), DecodeErrorKind> {
    let is_reply = kind.is_some_and(MessageType::is_reply);
    let required = |name: &'static str| h.get(name).ok_or(DecodeErrorKind::MissingHeader(name));
    let bad = |name, reason| DecodeErrorKind::BadHeaderValue { name, reason };

    let version = required("Version")?;
    if digits::<u32>(version).is_none_or(|v| v < 1) {
        return Err(bad("Version", "is not a whole number from 1 to 4294967295"));
    }
    for name in ["Message-ID", "Session-ID"] {
        if !valid_id(required(name)?) {
            return Err(bad(name, "is not an id of 1 to 128 printable characters"));
        }
    }
    if parse_iso8601(required("Timestamp")?).is_none() {
        return Err(bad("Timestamp", "is not an ISO 8601 UTC date-time"));
    }
    // An ERROR never needs TTL: it answers a message (by `Reply-To` or its body's `request_id`)
    // and may omit it as the guide's HELLO_ACK does; no receiver reads the TTL of an ERROR.
    let ttl_optional = is_reply || kind.is_none_or(|k| k == MessageType::Error);
    match h.get("TTL") {
        Some(v) if digits::<u32>(v).is_none() => {
            return Err(bad("TTL", "is not a number of seconds from 0 to 4294967295"))
        }
        None if !ttl_optional => return Err(DecodeErrorKind::MissingHeader("TTL")),
        _ => {}
    }
    match h.get("Reply-To") {
        Some(v) if !valid_id(v) => return Err(bad("Reply-To", "is not an id of 1 to 128 printable characters")),
        None if is_reply => return Err(DecodeErrorKind::MissingHeader("Reply-To")),
        _ => {}
    }
    if kind == Some(MessageType::StreamData) && digits::<u64>(required("Seq")?).is_none() {
        return Err(bad("Seq", "is not a whole number from 0 to 18446744073709551615"));
    }
    if reader == Reader::Client {
        return Ok(());
    }
    if let Some(v) = h.get("Stream") {
        if !v.eq_ignore_ascii_case("true") && !v.eq_ignore_ascii_case("false") {
            return Err(bad("Stream", "is not `true` or `false`"));
        }
    }
    if let Some(v) = h.get("Priority") {
        if crate::Priority::parse(v).is_none() {
            return Err(bad("Priority", "is not LOW, NORMAL, HIGH or URGENT"));
        }
    }
    if let Some(v) = h.get("Retry-After") {
        if digits::<u64>(v).is_none() {
            return Err(bad(
                "Retry-After",
                "is not a number of seconds from 0 to 18446744073709551615",
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::Headers;

    fn pairs(h: &Headers) -> Vec<(&str, &str)> {
        h.iter().collect()
    }

    #[test]
    fn headers_set_replace_remove_in_wire_order() {
        let mut h = Headers::new();
        h.set("Message-ID", "m1");
        h.set("TTL", String::from("30"));
        h.set("From", "rkt://a\nInjected: yes\r");
        assert_eq!(
            pairs(&h),
            [("Message-ID", "m1"), ("TTL", "30"), ("From", "rkt://a Injected: yes ")]
        );
        // Every character the decoder refuses in a value, not only CR and LF; tab and
        // non-ASCII stay.
        h.set("To", "a\0b\x1b[31m\x7fc\td\u{e9}");
        assert_eq!(h.remove("To").as_deref(), Some("a b [31m c\td\u{e9}"));
        // Replaced in place, under the name as first written; lookups ignore case.
        h.set("ttl", "a much longer value than before");
        assert_eq!(h.get("TTL"), Some("a much longer value than before"));
        assert_eq!(
            pairs(&h),
            [
                ("Message-ID", "m1"),
                ("TTL", "a much longer value than before"),
                ("From", "rkt://a Injected: yes ")
            ]
        );
        assert_eq!(h.remove("message-id"), Some("m1".to_owned()));
        assert_eq!(h.remove("Message-ID"), None);
        assert_eq!(h.len(), 2);
        h.set("Seq", "");
        assert_eq!(h.get("seq"), Some(""));
        assert_eq!(h.get("Se"), None);
        assert_eq!(
            format!("{h:?}"),
            r#"[("TTL", "a much longer value than before"), ("From", "rkt://a Injected: yes "), ("Seq", "")]"#
        );
    }

    #[test]
    fn headers_equal_by_content_not_by_history() {
        let mut a = Headers::new();
        a.set("A", "1");
        a.set("B", "2");
        a.set("A", "1");
        let mut b = Headers::default();
        b.set("A", "x");
        b.set("B", "2");
        assert_ne!(a, b);
        b.set("A", "1");
        assert_eq!(a, b);
        b.remove("B");
        assert_ne!(a, b);
        assert!(Headers::new().is_empty());
        assert_eq!(Headers::new(), Headers::default());
    }
}
