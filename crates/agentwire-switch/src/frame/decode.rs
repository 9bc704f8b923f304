//! The decoders: one WebSocket text message, or one SSE frame, into a [`Frame`]. They read on
//! core's serde-free reader ([`agentwire_core::json::read`]), leniently as serde_json read the raw
//! parts (a lone surrogate escape or a huge number inside a payload passes through as received),
//! and refuse those only in a field decoded as text or number, as serde did. Objects are read as
//! the derived `Deserialize`s they replace read them (`decode_serde`, kept in the tests as the
//! reference): unknown keys ignored, a known key given twice or a key with a lone surrogate
//! escape refused, `null` read as absent.

use super::error::{FrameError, FrameErrorKind};
use super::{
    ConnGeneration, ConnectionState, DomainEvent, EventKind, Evicted, EvictionCode, Frame, Gap, Refused, RoomReleased,
    SubscriptionChanged,
};
use crate::json::raw;
use agentwire_core::json::fields::{Object, WholeRange};
use agentwire_core::json::read::{self, Kind, Value};
use serde_json::value::RawValue;

/// Bounds checked before parsing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DecodeOptions {
    /// Largest message (or SSE `data`), in bytes (default 1 MiB).
    pub max_message_bytes: usize,
    /// Deepest nesting of arrays and objects, the frame included (default 64; at most
    /// [`MAX_DEPTH`]).
    pub max_depth: usize,
}

/// The largest `max_depth` a connection takes: serde_json's recursion limit, which the payload
/// views and `Event::to_json` read within (deeper, `to_json` and `to_json_string` would disagree).
pub const MAX_DEPTH: usize = 128;

impl Default for DecodeOptions {
    fn default() -> Self {
        DecodeOptions {
            max_message_bytes: 1 << 20,
            max_depth: 64,
        }
    }
}

/// Decodes one WebSocket text message with the default limits.
pub fn decode(text: &str) -> Result<Frame, FrameError> {
    decode_with(text, &DecodeOptions::default())
}

/// Decodes one SSE frame of the released generation with the default limits.
pub fn decode_sse(event_name: &str, data: &str, id: Option<&str>) -> Result<Frame, FrameError> {
    decode_sse_with(event_name, data, id, &DecodeOptions::default())
}

/// The envelope's keys (a flat control frame's `type` is read only when there is no `event`, as
/// the serde decoder's one-pass path for events ignored it).
const ENVELOPE: &[&str] = &["event", "data", "id"];

/// Any WebSocket frame: its envelope, then its body.
pub fn decode_with(text: &str, opts: &DecodeOptions) -> Result<Frame, FrameError> {
    check_limits(text, opts)?;
    if !text.trim_ascii_start().starts_with('{') {
        return Err(FrameError::new(
            FrameErrorKind::Syntax,
            Some("message".into()),
            "frame is not a JSON object",
        ));
    }
    let tape = parse(text, "invalid JSON: ")?;
    let root = Some(tape.root());
    let env = Body::new(root, "", ENVELOPE)?;
    if let Some(event) = env.get("event") {
        let name = string(event, "event")?;
        let id = env.get("id");
        if id.is_some() || EventKind::known(&name).is_some() {
            let id = json_id(id.ok_or_else(|| FrameError::missing("id"))?)?;
            let data = env.get("data").ok_or_else(|| FrameError::missing("data"))?;
            return domain(&name, Some(data), id);
        }
        return control(&name, env.get("data"), "data.");
    }
    if let Some(kind) = Body::new(root, "", &["type"])?.get("type") {
        let name = string(kind, "type")?;
        if EventKind::known(&name).is_some() {
            // Only control frames come flat; a domain event needs its envelope and id.
            return Err(FrameError::missing("id"));
        }
        return control(&name, root, "");
    }
    Err(FrameError::missing("event"))
}

/// One SSE frame: its event name, its `data` and its `id:` line (a domain event has one).
pub fn decode_sse_with(
    event_name: &str,
    data: &str,
    id: Option<&str>,
    opts: &DecodeOptions,
) -> Result<Frame, FrameError> {
    check_limits(data, opts)?;
    // No data and `null` are no data, as a WebSocket frame's absent or null `data` is.
    let tape = match data.trim_ascii() {
        "" | "null" => None,
        _ => Some(parse(data, "invalid JSON in `data`: ")?),
    };
    let body = tape.as_ref().map(read::Tape::root);
    if let Some(id) = id {
        // Digits only: `str::parse` would take `+5`.
        let id = agentwire_core::decimal::parse_u64(id)
            .ok_or_else(|| FrameError::wrong("id", format_args!("is `{id}`, not a sequence number")))?;
        return domain(event_name, body, id);
    }
    if EventKind::known(event_name).is_some() {
        return Err(FrameError::missing("id"));
    }
    control(event_name, body, "data.")
}

/// The sequence of a WebSocket domain event that could not be decoded: the number of the
/// top-level `"id"` key (switch-core puts it last, but anywhere counts), found without parsing
/// (`top_level_value`), so that text cut short or otherwise broken still gives it. A hint for
/// reporting the loss; `None` when there is no top-level `"id"` followed by a whole number.
pub fn event_id_hint(text: &str) -> Option<u64> {
    let v = &text.as_bytes()[top_level_value(text, b"id")?..];
    let n = v.iter().take_while(|b| b.is_ascii_digit()).count();
    if n == 0 || n > 20 || !matches!(v.get(n), Some(b' ' | b'\t' | b'\n' | b'\r' | b',' | b'}')) {
        return None;
    }
    std::str::from_utf8(&v[..n]).ok()?.parse().ok()
}

/// The name of a WebSocket frame that could not be decoded: its top-level `"event"` string (or,
/// without one, a flat control frame's `"type"`), found as [`event_id_hint`] finds the id.
/// `None` when there is none or it holds an escape.
pub(crate) fn frame_name_hint(text: &str) -> Option<&str> {
    top_level_str(text, "event").or_else(|| top_level_str(text, "type"))
}

/// The string value of `key` in the top-level object of `text`, found as [`event_id_hint`]
/// finds the id (so in text cut short too); `None` when there is none, it is not a string, it
/// holds an escape or it is cut off.
pub(crate) fn top_level_str<'a>(text: &'a str, key: &str) -> Option<&'a str> {
    let value = text.get(top_level_value(text, key.as_bytes())?..)?.strip_prefix('"')?;
    let end = value.bytes().position(|b| b == b'"' || b == b'\\')?;
    (value.as_bytes()[end] == b'"').then(|| &value[..end])
}

/// The value of `key` in the top-level object of `text`, from its first byte to the end of
/// `text` (unchecked: it may be broken or cut short), as [`top_level_str`] finds it.
pub(crate) fn top_level_rest<'a>(text: &'a str, key: &str) -> Option<&'a str> {
    text.get(top_level_value(text, key.as_bytes())?..)
}

/// Where the value of `key` starts (past its `:` and any whitespace) when `key` is a key of the
/// top-level object of `text`, the first such. One pass without parsing, so it works on broken
/// text: strings are skipped (escapes included), nesting is counted, and only a string at depth
/// 1 right after the `{` or a `,` is a key; the scan ends with the top-level object. A key
/// written with escapes does not match.
fn top_level_value(text: &str, key: &[u8]) -> Option<usize> {
    let b = text.as_bytes();
    let mut i = b.iter().position(|c| !c.is_ascii_whitespace())?;
    if b[i] != b'{' {
        return None;
    }
    let mut depth = 0usize;
    let mut at_key = false;
    while i < b.len() {
        match b[i] {
            b'"' => {
                let start = i + 1;
                i = start;
                while *b.get(i)? != b'"' {
                    i += if b[i] == b'\\' { 2 } else { 1 };
                }
                if depth == 1 && std::mem::take(&mut at_key) && &b[start..i] == key {
                    let ws = |from: usize| {
                        b[from..]
                            .iter()
                            .position(|c| !c.is_ascii_whitespace())
                            .map(|n| from + n)
                    };
                    let colon = ws(i + 1)?;
                    return if b[colon] == b':' { ws(colon + 1) } else { None };
                }
            }
            b'{' | b'[' => {
                depth += 1;
                at_key = depth == 1;
            }
            b'}' | b']' => {
                depth = depth.saturating_sub(1);
                if depth == 0 {
                    return None;
                }
            }
            b',' => at_key = depth == 1,
            _ => {}
        }
        i += 1;
    }
    None
}

pub(super) fn check_limits(text: &str, opts: &DecodeOptions) -> Result<(), FrameError> {
    if text.len() > opts.max_message_bytes {
        return Err(FrameError::new(
            FrameErrorKind::TooLarge,
            Some("message".into()),
            format!(
                "message of {} bytes exceeds the limit of {} bytes",
                text.len(),
                opts.max_message_bytes
            ),
        ));
    }
    if agentwire_core::json::nests_deeper_than(text.as_bytes(), opts.max_depth) {
        return Err(FrameError::new(
            FrameErrorKind::TooDeep,
            Some("message".into()),
            format!("JSON nests deeper than {} levels", opts.max_depth),
        ));
    }
    Ok(())
}

/// `text` on a tape, leniently (the raw parts pass as received). Its depth was checked by
/// `check_limits`, so the reader's own bound is not reached.
fn parse<'a>(text: &'a str, what: &str) -> Result<read::Tape<'a>, FrameError> {
    read::parse_lenient(text, usize::MAX).map_err(|e| FrameError::syntax(format!("{what}{e}")))
}

/// `id` on the WebSocket: a JSON number, a u64.
fn json_id(v: Value<'_, '_>) -> Result<u64, FrameError> {
    if v.kind() == Kind::String {
        return Err(FrameError::wrong("id", "must be a JSON number, not a string"));
    }
    let s = v.raw();
    s.parse::<u64>().map_err(|_| match v.kind() {
        Kind::Number => FrameError::wrong("id", WholeRange(u64::MAX)),
        _ => FrameError::wrong("id", format_args!("is `{s}`, not a non-negative integer")),
    })
}

/// A JSON string (not one with a lone surrogate escape, which serde refused).
fn string(v: Value<'_, '_>, field: &str) -> Result<String, FrameError> {
    match v.as_str() {
        Some(s) if !v.lossy() => Ok(s.into_owned()),
        Some(_) => Err(lossy(field, v)),
        None => Err(FrameError::wrong(field, "must be a string")),
    }
}

/// The error of a field of the right type holding what serde refused ([`Value::lossy`]): a
/// string (or strings) with a lone surrogate escape, or a number beyond `f64`. Saying it has
/// the wrong type would mislead.
pub(super) fn lossy(field: &str, v: Value<'_, '_>) -> FrameError {
    if v.kind() == Kind::Number {
        FrameError::wrong(field, "is a number beyond f64")
    } else {
        FrameError::wrong(field, "has a lone surrogate escape (not valid Unicode)")
    }
}

/// The error of a body that is not a JSON object (`prefix` names it: `data.`, or the frame).
pub(super) fn not_object(prefix: &str) -> FrameError {
    let field = prefix.trim_end_matches('.');
    FrameError::wrong(if field.is_empty() { "frame" } else { field }, "must be a JSON object")
}

/// An object's fields, named in errors after `prefix` (`data.`, or none for a flat frame). No
/// body (an absent or null `data`) is an object without fields. The fields are found in one pass
/// over the members, as they are checked.
#[derive(Clone, Copy)]
struct Body<'t, 'a> {
    known: &'static [&'static str],
    values: [Option<Value<'t, 'a>>; MAX_FIELDS],
    prefix: &'static str,
}

/// The most fields a [`Body`] reads ([`CONTROL`]'s).
const MAX_FIELDS: usize = CONTROL.len();

impl<'t, 'a> Body<'t, 'a> {
    fn new(
        obj: Option<Value<'t, 'a>>,
        prefix: &'static str,
        known: &'static [&'static str],
    ) -> Result<Self, FrameError> {
        let mut values = [None; MAX_FIELDS];
        if let Some(v) = obj {
            if v.kind() != Kind::Object {
                return Err(not_object(prefix));
            }
            let mut found = |i: usize, v: Value<'t, 'a>| {
                if let Some(slot) = values.get_mut(i) {
                    *slot = Some(v).filter(|v| !v.is_null());
                }
            };
            Object::known_with(v, known, &mut found).map_err(|e| FrameError::syntax(e.to_string()))?;
        }
        Ok(Body { known, values, prefix })
    }

    /// A field; `null` is absent.
    fn get(&self, name: &str) -> Option<Value<'t, 'a>> {
        let i = self.known.iter().position(|k| *k == name)?;
        self.values.get(i).copied().flatten()
    }

    fn path(&self, name: &str) -> String {
        format!("{}{name}", self.prefix)
    }

    /// A required field, read by `read` (which names what it expects when it gives `None`).
    fn req<T>(&self, name: &str, read: Reader<T>) -> Result<T, FrameError> {
        self.opt(name, read)?
            .ok_or_else(|| FrameError::missing(&self.path(name)))
    }

    /// An optional field (absent or null: `None`).
    fn opt<T>(&self, name: &str, read: Reader<T>) -> Result<Option<T>, FrameError> {
        let Some(v) = self.get(name) else { return Ok(None) };
        match read.0(v) {
            Some(t) if !v.lossy() => Ok(Some(t)),
            Some(_) => Err(lossy(&self.path(name), v)),
            // A number, but not a whole one in range: say the range, not a wrong type.
            None if v.kind() == Kind::Number && read.2 > 0 => {
                Err(FrameError::wrong(&self.path(name), WholeRange(read.2)))
            }
            None => Err(FrameError::wrong(
                &self.path(name),
                format_args!("has the wrong type: expected {}, got {}", read.1, v.kind().name()),
            )),
        }
    }
}

/// How a field is read, what it is when it cannot be, and, for a whole number, its maximum (a
/// number it cannot read is out of that range; 0 for the other readers).
type Reader<T> = (fn(Value<'_, '_>) -> Option<T>, &'static str, u64);

const U64: Reader<u64> = (|v| v.as_u64(), "a whole number ≥ 0", u64::MAX);
const U16: Reader<u16> = (
    |v| v.as_u64().and_then(|n| u16::try_from(n).ok()),
    "a whole number up to 65535",
    u16::MAX as u64,
);
const TEXT: Reader<String> = (|v| v.as_str().map(|s| s.into_owned()), "a string", 0);
const BOOL: Reader<bool> = (|v| v.as_bool(), "a boolean", 0);
const F64: Reader<f64> = (|v| v.as_f64(), "a number", 0);
const TEXTS: Reader<Vec<String>> = (
    |v| match v.kind() {
        Kind::Array => v.items().map(|i| i.as_str().map(|s| s.into_owned())).collect(),
        _ => None,
    },
    "an array of strings",
    0,
);

/// A domain event's `data` fields.
const DATA: &[&str] = &["type", "room_id", "bridge_id", "channel_type", "payload", "sequence"];

fn domain(name: &str, data: Option<Value<'_, '_>>, id: u64) -> Result<Frame, FrameError> {
    let d = Body::new(data, "data.", DATA)?;
    let kind = EventKind::parse(name);
    if let Some(t) = d.get("type") {
        let t = string(t, "data.type")?;
        if t != name {
            return Err(FrameError::mismatch(
                "data.type",
                format_args!("is `{t}` but the event is `{name}`"),
            ));
        }
    }
    let sequence = d.req("sequence", U64)?;
    if sequence != id {
        return Err(FrameError::mismatch(
            "id",
            format_args!("is {id} but `data.sequence` is {sequence}"),
        ));
    }
    let room_id = match d.get("room_id") {
        None => return Err(FrameError::missing("data.room_id")),
        Some(r) => string(r, "data.room_id")?,
    };
    Ok(Frame::Event(DomainEvent {
        kind,
        room_id,
        bridge_id: d.opt("bridge_id", TEXT)?,
        channel_type: d.opt("channel_type", TEXT)?,
        sequence,
        payload: raw(d.get("payload").ok_or_else(|| FrameError::missing("data.payload"))?),
    }))
}

/// A control frame's fields, all kinds together (as one derived struct read them).
const CONTROL: &[&str] = &[
    "connection_id",
    "agent_id",
    "generation",
    "scope",
    "filter",
    "spawn_capable",
    "rooms",
    "cursor",
    "protocol",
    "heartbeat_interval_seconds",
    "server",
    "client",
    "from_sequence",
    "resumed_at",
    "resumed_position",
    "all_rooms",
    "reason",
    "code",
    "room_id",
    "session_id",
    "status",
    "detail",
];

fn control(name: &str, body: Option<Value<'_, '_>>, p: &'static str) -> Result<Frame, FrameError> {
    let known = matches!(
        name,
        "connection_state" | "gap" | "evicted" | "subscription_changed" | "room_released" | "ping" | "refused"
    );
    if !known {
        return Ok(Frame::Unknown {
            name: name.to_owned(),
            raw: match body {
                Some(v) => raw(v),
                None => empty_object(),
            },
        });
    }
    let f = Body::new(body, p, CONTROL)?;
    let reason = || -> Result<String, FrameError> { Ok(f.opt("reason", TEXT)?.unwrap_or_default()) };
    let opt_raw = |name: &str| -> Result<_, FrameError> { Ok(f.get(name).map(raw)) };
    Ok(match name {
        "connection_state" => Frame::ConnectionState(ConnectionState {
            connection_id: f.req("connection_id", TEXT)?,
            agent_id: f.req("agent_id", TEXT)?,
            generation: f
                .get("generation")
                .map(|g| ConnGeneration::from_value(g, &f.path("generation")))
                .transpose()?,
            scope: f.req("scope", TEXT)?,
            filter: f.req("filter", TEXT)?,
            spawn_capable: f.opt("spawn_capable", BOOL)?.unwrap_or(false),
            rooms: f.req("rooms", TEXTS)?,
            cursor: f.req("cursor", U64)?,
            protocol: f.opt("protocol", U64)?,
            heartbeat_interval_seconds: f.opt("heartbeat_interval_seconds", F64)?,
            server: opt_raw("server")?,
            client: opt_raw("client")?,
        }),
        "gap" => Frame::Gap(Gap {
            from_sequence: f.req("from_sequence", U64)?,
            resumed_at: f.req("resumed_at", U64)?,
            resumed_position: opt_raw("resumed_position")?,
            rooms: f.opt("rooms", TEXTS)?,
            all_rooms: f.opt("all_rooms", BOOL)?,
            reason: reason()?,
        }),
        "evicted" => Frame::Evicted(Evicted {
            code: f.opt("code", TEXT)?.map(|c| EvictionCode::parse(&c)),
            reason: reason()?,
            room_id: f.opt("room_id", TEXT)?,
        }),
        "subscription_changed" => Frame::SubscriptionChanged(SubscriptionChanged {
            rooms: f.req("rooms", TEXTS)?,
            reason: reason()?,
        }),
        "room_released" => Frame::RoomReleased(RoomReleased {
            room_id: f.req("room_id", TEXT)?,
            session_id: f.opt("session_id", TEXT)?,
        }),
        "refused" => Frame::Refused(Refused {
            status: f.req("status", U16)?,
            detail: opt_raw("detail")?.unwrap_or_else(empty_string),
        }),
        _ => Frame::Ping,
    })
}

fn empty_object() -> Box<RawValue> {
    // SAFETY: `{}` is one well-formed JSON value. (The checked constructor would bring serde_json's
    // whole parser into the wasm for a constant: about 2 KB gzipped.)
    unsafe { RawValue::from_string_unchecked("{}".into()) }
}

fn empty_string() -> Box<RawValue> {
    // `""` is what a refusal without detail carried before.
    // SAFETY: `""` is one well-formed JSON value.
    unsafe { RawValue::from_string_unchecked("\"\"".into()) }
}

#[cfg(test)]
#[path = "decode_tests.rs"]
mod tests;
