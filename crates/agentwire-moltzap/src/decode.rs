//! Decoding one WebSocket message into frames.
//!
//! A message holds one or more top-level JSON values (released servers may concatenate several
//! objects in one message); each value is a frame object or a batch array of them. Each frame is
//! decoded on its own, so one bad frame does not lose the others. Only a syntax error stops the
//! message: nothing after it can be located reliably.

use crate::fields::{
    self, Fields, Top, F_DATA, F_ERROR, F_EVENT, F_ID, F_JSONRPC, F_METHOD, F_PARAMS, F_RESULT, F_TYPE,
};
use crate::frame::{Frame, Generation, Id, Notification, Outcome, Request, Response, RpcError};
use crate::frame_error::{FrameError, FrameErrorKind as K};
use agentwire_core::json::fields::{named_array, Object};
use agentwire_core::json::nests_deeper_than;
use agentwire_core::json::read::{self as json, parse_lenient, Value};
use agentwire_core::text::clip;
use agentwire_core::text::QUOTE_MAX;
use serde_json::value::RawValue;
use std::borrow::Cow;

/// Bounds and strictness of decoding. The defaults suit a client.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DecodeOptions {
    /// Largest message, in bytes, checked before parsing (default 8 MiB: a full
    /// `agent/message/list` window, 100 messages of the released policy's 65,536 bytes, fits).
    /// What the session sends has its own bound, `SessionConfig::max_send_bytes`.
    pub max_message_bytes: usize,
    /// Deepest nesting of arrays and objects, the frame itself included (default 64), checked
    /// before parsing.
    pub max_depth: usize,
    /// Longest string id, in bytes (default 256).
    pub max_id_len: usize,
    /// Most frames in one message, batch elements and concatenated values together (default 1024).
    pub max_frames: usize,
    /// Refuse keys the frame's type does not have, as the released server does (default false:
    /// a client tolerates them; a test peer imitating the server sets it).
    pub reject_unknown_keys: bool,
}

impl Default for DecodeOptions {
    fn default() -> Self {
        DecodeOptions {
            max_message_bytes: 8 << 20,
            max_depth: 64,
            max_id_len: 256,
            max_frames: 1024,
            reject_unknown_keys: false,
        }
    }
}

/// Decodes a text message with the default options.
pub fn decode_message(generation: Generation, text: &str) -> Vec<Result<Frame, FrameError>> {
    decode_message_with(generation, text, &DecodeOptions::default())
}

/// Decodes a binary message with the default options: invalid UTF-8 is a typed error.
pub fn decode_bytes(generation: Generation, bytes: &[u8]) -> Vec<Result<Frame, FrameError>> {
    decode_bytes_with(generation, bytes, &DecodeOptions::default())
}

pub fn decode_bytes_with(generation: Generation, bytes: &[u8], opts: &DecodeOptions) -> Vec<Result<Frame, FrameError>> {
    if bytes.len() > opts.max_message_bytes {
        return vec![Err(FrameError::new(K::TooLarge {
            size: bytes.len(),
            limit: opts.max_message_bytes,
        }))];
    }
    match std::str::from_utf8(bytes) {
        Ok(text) => decode_message_with(generation, text, opts),
        Err(e) => vec![Err(FrameError::new(K::InvalidUtf8 {
            valid_up_to: e.valid_up_to(),
        }))],
    }
}

/// Decodes a text message: one result per frame, in order.
pub fn decode_message_with(generation: Generation, text: &str, opts: &DecodeOptions) -> Vec<Result<Frame, FrameError>> {
    if text.len() > opts.max_message_bytes {
        return vec![Err(FrameError::new(K::TooLarge {
            size: text.len(),
            limit: opts.max_message_bytes,
        }))];
    }
    if text.trim_ascii().is_empty() {
        return vec![Err(FrameError::new(K::Empty))];
    }
    if nests_deeper_than(text.as_bytes(), opts.max_depth) {
        return decode_deep(generation, text, opts);
    }
    let mut out = Vec::with_capacity(1);
    for value in serde_json::Deserializer::from_str(text).into_iter::<Top<'_>>() {
        let more = match value {
            Err(e) => {
                out.push(Err(FrameError::syntax(&e)));
                false
            }
            Ok(Top::Frame(f)) => push(&mut out, opts, decode_fields(generation, &f, opts)),
            Ok(Top::Other) => push(&mut out, opts, Err(FrameError::new(K::NotAnObject))),
            Ok(Top::Batch(batch)) if batch.is_empty() => push(&mut out, opts, Err(FrameError::new(K::EmptyBatch))),
            Ok(Top::Batch(batch)) => batch
                .into_iter()
                .all(|el| push(&mut out, opts, decode_frame(generation, el, opts))),
        };
        if !more {
            break;
        }
    }
    out
}

/// A message that nests past the limit somewhere: the limit is each frame's, so each top-level
/// value, and each element of a batch, is checked on its own (the batch array is not a level).
/// A frame within the limit decodes as usual; one past it is that frame's `TooDeep`, and the
/// others are not lost. Values are split as raw text, which serde_json skips without recursing
/// (its skipping keeps its own stack of brackets), so nothing here recurses with the depth.
fn decode_deep(generation: Generation, text: &str, opts: &DecodeOptions) -> Vec<Result<Frame, FrameError>> {
    let mut out = Vec::with_capacity(1);
    for value in serde_json::Deserializer::from_str(text).into_iter::<&RawValue>() {
        let value = match value {
            Ok(v) => v,
            Err(e) => {
                out.push(Err(FrameError::syntax(&e)));
                break;
            }
        };
        let more = if value.get().starts_with('[') {
            // A `Top` (serde_json's `deserialize_any`), not a `Vec`: the same elements, raw,
            // without serde_json's type error for a value that is not an array (docs/size.md).
            match serde_json::from_str::<Top<'_>>(value.get()) {
                Ok(Top::Batch(batch)) if batch.is_empty() => push(&mut out, opts, Err(FrameError::new(K::EmptyBatch))),
                Ok(Top::Batch(batch)) => batch
                    .into_iter()
                    .all(|el| push(&mut out, opts, decode_frame_within(generation, el, opts))),
                // Not reached: the value was read as JSON just before, an array.
                Ok(Top::Frame(_) | Top::Other) => push(&mut out, opts, Err(FrameError::new(K::NotAnObject))),
                Err(e) => push(&mut out, opts, Err(FrameError::syntax(&e))),
            }
        } else {
            push(&mut out, opts, decode_frame_within(generation, value, opts))
        };
        if !more {
            break;
        }
    }
    out
}

/// Decodes one frame whose nesting has not been checked yet.
fn decode_frame_within(generation: Generation, value: &RawValue, opts: &DecodeOptions) -> Result<Frame, FrameError> {
    let text = value.get();
    if !text.starts_with('{') || !nests_deeper_than(text.as_bytes(), opts.max_depth) {
        return decode_frame(generation, value, opts);
    }
    let e = FrameError::new(K::TooDeep { limit: opts.max_depth });
    // The frame's own keys, each value raw (skipped without recursion, like the split above):
    // its id and shape, so that a session fails the request it answers at once instead of at
    // its timeout. Nothing in it is decoded.
    Err(match Fields::parse(text) {
        Ok(f) => identified(generation, &f, opts, e),
        Err(_) => e,
    })
}

/// The largest message [`single_push`] reads. Its tape takes up to 8 bytes per byte of text (16
/// per value), while it lasts; a message that is not a push is then decoded again. Past this
/// size (pushes are a few KiB), the general path alone.
const SINGLE_PUSH_MAX_BYTES: usize = 64 << 10;

/// A message that is exactly one push frame of the usual shape, read on one tape instead of by
/// serde: `{"jsonrpc":"2.0","method":<name>,"params":<payload>}` (current) or
/// `{"jsonrpc":"2.0","type":"event","event":<name>,"data":<payload>}` (released), those keys
/// only, each at most once, the payload optional. `push` gets the name and the payload's value
/// on the tape (parsed leniently, as serde skips a payload), and its result is returned; the
/// message is then what [`decode_message_with`] decodes as one [`Frame::Notification`] of that
/// name with that payload's text. Anything else gives `None` (without calling `push`) and is
/// for [`decode_message_with`]: other frames, batches and concatenated values, a limit passed
/// (or more than [`SINGLE_PUSH_MAX_BYTES`]), no `"method"` (current) or `"event"` (released) in
/// the text, JSON in error, a key given twice or not one of those, `"2.0"` or `"event"` written otherwise,
/// a name that is not a string or has a lone surrogate escape.
pub(crate) fn single_push<R>(
    generation: Generation,
    text: &str,
    opts: &DecodeOptions,
    push: impl FnOnce(String, Option<Value<'_, '_>>) -> R,
) -> Option<R> {
    const CURRENT: [&str; 3] = ["jsonrpc", "method", "params"];
    const RELEASED: [&str; 4] = ["jsonrpc", "event", "data", "type"];
    if text.len() > opts.max_message_bytes.min(SINGLE_PUSH_MAX_BYTES) || opts.max_frames == 0 {
        return None;
    }
    let (keys, name_key): (&[&str], &str) = match generation {
        Generation::Current => (&CURRENT, r#""method""#),
        Generation::Released => (&RELEASED, r#""event""#),
    };
    // Not a check of the frame, a shortcut: a push has its name's key written out (escaped, it
    // goes the general way), and what has none (a response, most often) is not parsed twice. A
    // text with it elsewhere is parsed, and then declined below.
    if !text.contains(name_key) {
        return None;
    }
    // The tape's depth limit is the pre-parse check's: nesting past it fails here.
    let tape = parse_lenient(text, opts.max_depth).ok()?;
    let root = tape.root();
    if root.kind() != json::Kind::Object {
        return None;
    }
    let mut found = [None; 4];
    for (k, v) in root.members() {
        if found[k.find(keys)?].replace(v).is_some() {
            return None;
        }
    }
    let [jsonrpc, name, payload, kind] = found;
    let is = |v: Option<Value<'_, '_>>, raw: &str| v.is_some_and(|v| v.raw() == raw);
    if !is(jsonrpc, "\"2.0\"") || (generation == Generation::Released && !is(kind, "\"event\"")) {
        return None;
    }
    let name = name
        .filter(|n| n.kind() == json::Kind::String && !n.lossy())?
        .as_str()?;
    Some(push(name.into_owned(), payload))
}

/// Appends a frame; past the limit, appends one `TooManyFrames` and returns false.
fn push(out: &mut Vec<Result<Frame, FrameError>>, opts: &DecodeOptions, frame: Result<Frame, FrameError>) -> bool {
    if out.len() >= opts.max_frames {
        out.push(Err(FrameError::new(K::TooManyFrames { limit: opts.max_frames })));
        return false;
    }
    out.push(frame);
    true
}

/// Decodes one frame object.
pub(crate) fn decode_frame(
    generation: Generation,
    value: &RawValue,
    opts: &DecodeOptions,
) -> Result<Frame, FrameError> {
    if !value.get().starts_with('{') {
        return Err(FrameError::new(K::NotAnObject));
    }
    decode_fields(generation, &Fields::parse(value.get())?, opts)
}

fn decode_fields(generation: Generation, f: &Fields<'_>, opts: &DecodeOptions) -> Result<Frame, FrameError> {
    if let Some(k) = f.duplicate() {
        let e = FrameError::new(K::DuplicateKey(k.to_owned()));
        return Err(identified(generation, f, opts, e));
    }
    // The id first, so every later error names it.
    let id = parse_id(f.id, generation, opts)?;
    frame_from_fields(generation, f, id.clone(), opts).map_err(|mut e| {
        e.response = is_response(generation, f);
        e.with_id(id)
    })
}

/// Shaped as a response: `result` or `error` present; released: `type: "response"`.
fn is_response(generation: Generation, f: &Fields<'_>) -> bool {
    f.result.is_some()
        || f.error.is_some()
        || (generation == Generation::Released
            && f.kind.is_some_and(|t| string(t, "type").is_ok_and(|t| t == "response")))
}

/// `e`, for a frame refused before it was decoded, with the frame's id (when it is a valid one,
/// given once: of two ids, which one the peer meant is unknown) and whether the frame is shaped
/// as a response.
fn identified(generation: Generation, f: &Fields<'_>, opts: &DecodeOptions, mut e: FrameError) -> FrameError {
    e.response = is_response(generation, f);
    if f.id_duplicated() {
        return e;
    }
    e.with_id(parse_id(f.id, generation, opts).ok().flatten())
}

fn frame_from_fields(
    generation: Generation,
    f: &Fields<'_>,
    id: Option<Id>,
    opts: &DecodeOptions,
) -> Result<Frame, FrameError> {
    match f.jsonrpc {
        None => return Err(FrameError::new(K::MissingField("jsonrpc"))),
        Some(v) if v.get() != "\"2.0\"" && string(v, "jsonrpc")? != "2.0" => {
            return Err(FrameError::bad("jsonrpc", "must be \"2.0\""))
        }
        Some(_) => {}
    }
    let kind = match generation {
        Generation::Released => {
            let t = f.kind.ok_or(FrameError::new(K::MissingField("type")))?;
            let t: std::borrow::Cow<'_, str> = match t.get() {
                r#""request""# => "request".into(),
                r#""response""# => "response".into(),
                r#""event""# => "event".into(),
                _ => string(t, "type")?.into(),
            };
            match &*t {
                "request" => Kind::Request,
                "response" => Kind::Response,
                "event" => Kind::Event,
                other => {
                    return Err(FrameError::bad(
                        "type",
                        format!("is `{}`, not request, response or event", clip(other, QUOTE_MAX)),
                    ))
                }
            }
        }
        Generation::Current => {
            let answer = f.result.is_some() || f.error.is_some();
            match (f.method.is_some(), answer) {
                (true, true) => return Err(FrameError::new(K::Ambiguous("`method` with `result` or `error`"))),
                (true, false) if f.id.is_some() => Kind::Request,
                (true, false) => Kind::Event,
                (false, true) => Kind::Response,
                (false, false) if f.id.is_some() => return Err(FrameError::new(K::MissingField("result"))),
                (false, false) => return Err(FrameError::new(K::MissingField("method"))),
            }
        }
    };
    if opts.reject_unknown_keys {
        check_keys(generation, kind, f)?;
    }
    match kind {
        Kind::Response => response(generation, f, id).map(Frame::Response),
        Kind::Request => {
            let id = id.ok_or_else(|| match f.id {
                None => FrameError::new(K::MissingField("id")),
                Some(_) => FrameError::bad("id", "is null in a request"),
            })?;
            let method = string(f.method.ok_or(FrameError::new(K::MissingField("method")))?, "method")?;
            Ok(Frame::Request(Request {
                id,
                method,
                params: f.params.map(RawValue::to_owned),
            }))
        }
        Kind::Event => {
            let (name, payload) = match generation {
                Generation::Released => (f.event.ok_or(FrameError::new(K::MissingField("event")))?, f.data),
                Generation::Current => (f.method.ok_or(FrameError::new(K::MissingField("method")))?, f.params),
            };
            let field = if generation == Generation::Released {
                "event"
            } else {
                "method"
            };
            Ok(Frame::Notification(Notification {
                name: string(name, field)?,
                params: payload.map(RawValue::to_owned),
            }))
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Request,
    Response,
    /// A released event or a current notification.
    Event,
}

fn check_keys(generation: Generation, kind: Kind, f: &Fields<'_>) -> Result<(), FrameError> {
    let typ = if generation == Generation::Released { F_TYPE } else { 0 };
    let allowed = F_JSONRPC
        | typ
        | match (kind, generation) {
            (Kind::Request, _) => F_ID | F_METHOD | F_PARAMS,
            (Kind::Response, _) => F_ID | F_RESULT | F_ERROR,
            (Kind::Event, Generation::Released) => F_EVENT | F_DATA,
            (Kind::Event, Generation::Current) => F_METHOD | F_PARAMS,
        };
    if let Some(name) = fields::first_outside(f.present, allowed) {
        return Err(FrameError::new(K::UnknownKey(name.to_string())));
    }
    match &f.unknown {
        Some(k) => Err(FrameError::new(K::UnknownKey(k.clone()))),
        None => Ok(()),
    }
}

fn response(generation: Generation, f: &Fields<'_>, id: Option<Id>) -> Result<Response, FrameError> {
    let outcome = match (f.result, f.error) {
        (Some(_), Some(_)) => return Err(FrameError::new(K::Ambiguous("both `result` and `error`"))),
        // Released: `result` is optional (`"result":<any>?`): a handler that returns nothing
        // (`undefined`, which JSON.stringify drops) answers with neither key, a success.
        (None, None) if generation == Generation::Released && id.is_some() => Outcome::Result(
            RawValue::from_string("null".to_owned()).map_err(|_| FrameError::new(K::MissingField("result")))?,
        ),
        (None, None) => return Err(FrameError::new(K::MissingField("result"))),
        (Some(r), None) => {
            if id.is_none() {
                return Err(match f.id {
                    None => FrameError::new(K::MissingField("id")),
                    Some(_) => FrameError::bad("id", "is null in a successful response"),
                });
            }
            Outcome::Result(r.to_owned())
        }
        (None, Some(e)) => Outcome::Error(rpc_error(generation, e)?),
    };
    Ok(Response { id, outcome })
}

/// The error object's keys, in the order serde read them from an array too.
const ERROR_FIELDS: [&str; 4] = ["code", "message", "data", "_tag"];

/// The error object, read as serde read it into a derived struct: an object (unknown keys
/// skipped, a key given twice or holding a lone surrogate escape refused, `null` in `data` or
/// `_tag` absent) or an array of the fields in that order; `code` an integer within `i64`,
/// `message` a string. `_tag` only in the current generation (the released server has none, and
/// its encoding writes none: a released error read with one would not survive its own
/// encoding): a string `_tag`, else a string `_tag` of an object `data`. On core's reader, not
/// serde's: serde's type errors keep Rust's float formatting in the wasm (docs/size.md).
fn rpc_error(generation: Generation, raw: &RawValue) -> Result<RpcError, FrameError> {
    let bad = |reason: &dyn std::fmt::Display| FrameError::bad("error", reason.to_string());
    // The text was read as JSON with the frame (its nesting checked): no limit of its own here.
    let tape = parse_lenient(raw.get(), usize::MAX).map_err(|e| bad(&e))?;
    let named = named_array(tape.root(), &ERROR_FIELDS);
    let named_tape;
    let root = match &named {
        Some(text) => {
            named_tape = parse_lenient(text, usize::MAX).map_err(|e| bad(&e))?;
            named_tape.root()
        }
        None => tape.root(),
    };
    let o = Object::known(root, &ERROR_FIELDS).map_err(|e| bad(&e))?;
    o.decoded(&ERROR_FIELDS[..2]).map_err(|e| bad(&e))?;
    let code = match o.get("code") {
        Some(v) => v
            .as_i64()
            .ok_or_else(|| bad(&"`code` must be an integer that fits 64 bits"))?,
        None => return Err(bad(&"`code` is missing")),
    };
    let message = o
        .string("message")
        .map_err(|e| bad(&e))?
        .ok_or_else(|| bad(&"`message` is missing"))?;
    let data = o.get("data");
    let tag = match generation {
        Generation::Released => None,
        Generation::Current => tag_of(o.get("_tag")).or_else(|| {
            let data = Object::known(data?, &["_tag"]).ok()?;
            tag_of(data.get("_tag"))
        }),
    };
    Ok(RpcError {
        code,
        message,
        data: match data {
            // A value of the text just read: not refused.
            Some(d) => Some(RawValue::from_string(d.raw().to_owned()).map_err(|e| FrameError::bad_serde("error", &e))?),
            None => None,
        },
        tag,
    })
}

/// A `_tag`'s text: a string without a lone surrogate escape, else none.
fn tag_of(v: Option<Value<'_, '_>>) -> Option<String> {
    v.filter(|v| !v.lossy())?.as_str().map(Cow::into_owned)
}

/// A string field's text, escapes decoded; a lone surrogate escape is refused, as serde refused it
/// (on core's reader: serde's type errors keep Rust's float formatting in the wasm).
fn string(raw: &RawValue, field: &'static str) -> Result<String, FrameError> {
    if !raw.get().starts_with('"') {
        return Err(FrameError::bad(field, "must be a string"));
    }
    // One string: no nesting. Its text was read as JSON with the frame, so this does not fail.
    let tape = parse_lenient(raw.get(), 0).map_err(|e| FrameError::bad(field, e.to_string()))?;
    let s = tape.root();
    if s.lossy() {
        return Err(FrameError::bad(field, "has a lone surrogate escape"));
    }
    Ok(s.as_str().unwrap_or_default().into_owned())
}

fn parse_id(raw: Option<&RawValue>, generation: Generation, opts: &DecodeOptions) -> Result<Option<Id>, FrameError> {
    let Some(raw) = raw else { return Ok(None) };
    let s = raw.get();
    match s.bytes().next().unwrap_or(b' ') {
        b'n' => Ok(None),
        b'"' => {
            let id = string(raw, "id")?;
            if id.len() > opts.max_id_len {
                return Err(FrameError::new(K::IdTooLong {
                    len: id.len(),
                    limit: opts.max_id_len,
                }));
            }
            Ok(Some(Id::Str(id)))
        }
        b'-' | b'0'..=b'9' if generation == Generation::Current => match s.parse::<i64>() {
            Ok(n) => Ok(Some(Id::Num(n))),
            Err(_) => Err(FrameError::bad("id", "must be an integer that fits 64 bits")),
        },
        _ if generation == Generation::Released => Err(FrameError::bad("id", "must be a string (released generation)")),
        _ => Err(FrameError::bad("id", "must be a string or an integer")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// What [`single_push`] reads agrees with [`decode_message_with`]: the same one notification.
    /// True when the fast path took the message.
    fn agree(generation: Generation, text: &str, opts: &DecodeOptions) -> bool {
        let fast = single_push(generation, text, opts, |name, payload| {
            (name, payload.map(|p| p.raw().to_string()))
        });
        let Some((name, params)) = fast else { return false };
        let general = decode_message_with(generation, text, opts);
        let want: Vec<Result<Frame, FrameError>> = vec![Ok(Frame::Notification(Notification {
            name,
            params: params.map(|p| RawValue::from_string(p).expect("a raw value")),
        }))];
        assert_eq!(format!("{general:?}"), format!("{want:?}"), "{generation:?}: {text}");
        true
    }

    #[test]
    fn the_one_push_path_agrees_with_the_general_path() {
        let payload =
            r#"{"message":{"id":"m","conversationId":"c","senderId":"s","parts":[{"type":"text","text":"hi \"x\""}]}}"#;
        let current = format!(r#"{{"jsonrpc":"2.0","method":"messages/received","params":{payload}}}"#);
        let released = format!(r#"{{"jsonrpc":"2.0","type":"event","event":"messages/received","data":{payload}}}"#);
        // (generation, text, taken by the one-push path)
        let c = |text: &str, taken| (Generation::Current, text.to_string(), taken);
        let r = |text: &str, taken| (Generation::Released, text.to_string(), taken);
        let mut texts = vec![
            c(&current, true),
            r(&released, true),
            c(
                &format!(r#" {{ "params" : {payload} , "method":"x/y" ,"jsonrpc":"2.0" }} "#),
                true,
            ),
            c(r#"{"jsonrpc":"2.0","method":"m\u0065ssages/received"}"#, true),
            c(r#"{"jsonrpc":"2.0","method":"x","par\u0061ms":[1]}"#, true),
            c(r#"{"jsonrpc":"2.0","method":"x","params":null}"#, true),
            c(r#"{"jsonrpc":"2.0","method":"x","params":"\ud800 1e999"}"#, true),
            c(r#"{"jsonrpc":"2.0","method":"x","params":[1e999,"\udc00"]}"#, true),
            r(r#"{"jsonrpc":"2.0","type":"event","event":"x"}"#, true),
            // For the general path: errors, other frames, what serde reads otherwise.
            c(r#"{"jsonrpc":"2.0","method":"x","params":1,"params":2}"#, false),
            c(r#"{"jsonrpc":"2.0","method":"x","id":1}"#, false),
            c(r#"{"jsonrpc":"2.0","method":"x","type":"event"}"#, false),
            c(r#"{"jsonrpc":"2.0","method":"x","extra":1}"#, false),
            c(r#"{"jsonrpc":"2.\u0030","method":"x"}"#, false),
            c(r#"{"jsonrpc":"2.1","method":"x"}"#, false),
            c(r#"{"jsonrpc":"2.0","method":"\ud800"}"#, false),
            c(r#"{"jsonrpc":"2.0","method":7}"#, false),
            c(r#"{"jsonrpc":"2.0","params":{}}"#, false),
            c(r#"{"jsonrpc":"2.0","\ud800":1,"method":"x"}"#, false),
            c(&format!("{current}{current}"), false),
            c(&format!("[{current}]"), false),
            c(&released, false),
            r(&current, false),
            r(r#"{"jsonrpc":"2.0","type":"request","event":"x"}"#, false),
            r(r#"{"jsonrpc":"2.0","event":"x"}"#, false),
            c("", false),
            c("null", false),
        ];
        // Every prefix of a valid push: truncated text fails on both paths.
        texts.extend((0..current.len()).map(|n| (Generation::Current, current[..n].to_string(), false)));
        for (generation, text, taken) in &texts {
            let opts = DecodeOptions::default();
            assert_eq!(agree(*generation, text, &opts), *taken, "{generation:?}: {text}");
            let strict = DecodeOptions {
                reject_unknown_keys: true,
                ..DecodeOptions::default()
            };
            assert_eq!(
                agree(*generation, text, &strict),
                *taken,
                "strict {generation:?}: {text}"
            );
        }
        // Limits: past one, the general path reports it.
        let limited = [
            DecodeOptions {
                max_message_bytes: current.len() - 1,
                ..DecodeOptions::default()
            },
            DecodeOptions {
                max_depth: 4,
                ..DecodeOptions::default()
            },
            DecodeOptions {
                max_frames: 0,
                ..DecodeOptions::default()
            },
        ];
        for opts in &limited {
            assert!(!agree(Generation::Current, &current, opts), "{opts:?}");
        }
        // At the size limit, taken: the limit is the largest message.
        let exact = DecodeOptions {
            max_message_bytes: current.len(),
            ..DecodeOptions::default()
        };
        assert!(agree(Generation::Current, &current, &exact));
        // serde's depth limit (128) is not the payload's: it skips the payload without one.
        let deep = format!(
            r#"{{"jsonrpc":"2.0","method":"x","params":{}1{}}}"#,
            "[".repeat(150),
            "]".repeat(150)
        );
        let deep_ok = DecodeOptions {
            max_depth: 200,
            ..DecodeOptions::default()
        };
        assert!(agree(Generation::Current, &deep, &deep_ok));
        let big = format!(
            r#"{{"jsonrpc":"2.0","method":"x","params":"{}"}}"#,
            "a".repeat(SINGLE_PUSH_MAX_BYTES)
        );
        assert!(!agree(Generation::Current, &big, &DecodeOptions::default()));
        assert!(agree(
            Generation::Current,
            &current,
            &DecodeOptions {
                max_depth: 5,
                ..DecodeOptions::default()
            }
        ));
    }

    fn values() -> impl Strategy<Value = &'static str> {
        prop::sample::select(vec![
            r#""2.0""#,
            r#""event""#,
            r#""messages/received""#,
            r#""presence/changed""#,
            "null",
            r#"{"message":{"id":"m","senderId":"s"}}"#,
            r#"{"agentId":"a","agentId":"b"}"#,
            "[1,2]",
            r#""\ud800""#,
            "1e999",
            r#""2.\u0030""#,
            "7",
            "{",
        ])
    }

    fn object(members: Vec<(&str, &str, &str)>) -> String {
        let body: Vec<String> = members
            .iter()
            .map(|(k, v, s)| format!(r#"{s}"{k}"{s}:{s}{v}"#))
            .collect();
        format!("{{{}}}", body.join(","))
    }

    /// A frame object from a few keys and values, spaced at random.
    fn frame() -> impl Strategy<Value = String> {
        let key = prop::sample::select(vec![
            "jsonrpc",
            "method",
            "params",
            "event",
            "data",
            "type",
            "id",
            "result",
            "x",
            "par\\u0061ms",
        ]);
        let space = prop::sample::select(vec!["", " ", "\n"]);
        prop::collection::vec((key, values(), space), 0..6).prop_map(object)
    }

    /// A push's keys, in any order, some left out, with any of the values: often a push.
    fn push(keys: &'static [&'static str]) -> impl Strategy<Value = String> {
        // Mostly the value a push has there.
        let usual = |k: &str| match k {
            "jsonrpc" => r#""2.0""#,
            "type" => r#""event""#,
            "method" | "event" => r#""messages/received""#,
            _ => r#"{"message":{"id":"m","conversationId":"c"}}"#,
        };
        let members = keys.iter().map(|&k| {
            let value = prop_oneof![3 => Just(usual(k)), 1 => values()];
            (Just(k), value, prop::sample::select(vec!["", " "]))
        });
        let members: Vec<_> = members.collect();
        (
            members,
            prop::sample::subsequence((0..keys.len()).collect::<Vec<_>>(), 1..=keys.len()),
        )
            .prop_flat_map(|(members, keep)| {
                Just(keep.into_iter().map(|i| members[i]).collect::<Vec<_>>()).prop_shuffle()
            })
            .prop_map(object)
    }

    proptest! {
        #[test]
        fn the_one_push_path_agrees_on_any_frame(text in frame(), released in any::<bool>()) {
            let generation = if released { Generation::Released } else { Generation::Current };
            agree(generation, &text, &DecodeOptions::default());
        }

        #[test]
        fn the_one_push_path_agrees_on_pushes(
            current in push(&["jsonrpc", "method", "params"]),
            released in push(&["jsonrpc", "type", "event", "data"]),
        ) {
            agree(Generation::Current, &current, &DecodeOptions::default());
            agree(Generation::Released, &released, &DecodeOptions::default());
        }
    }
}

#[cfg(test)]
#[path = "decode_error_tests.rs"]
mod error_tests;
