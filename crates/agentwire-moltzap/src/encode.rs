//! Encoding frames, byte for byte in the key order of the specs and of the released server:
//! `jsonrpc`, [`type`,] `id`, then `method`/`params`, `result`/`error` or `event`/`data`.
//! Strings are escaped like `JSON.stringify`; raw payloads are written as they are.

use crate::frame::{Frame, Generation, Id, Outcome, RpcError};
pub(crate) use agentwire_core::json::push_string as push_str;
use serde_json::value::RawValue;
use std::fmt::{self, Write};

/// A frame the generation cannot carry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EncodeError {
    /// The released generation only has string ids.
    NumericIdInReleased,
    /// A successful response needs an id.
    ResultWithoutId,
}

impl fmt::Display for EncodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            EncodeError::NumericIdInReleased => "the released generation only allows string ids",
            EncodeError::ResultWithoutId => "a successful response needs an id",
        })
    }
}

impl std::error::Error for EncodeError {}

fn head(generation: Generation, kind: &str, capacity: usize) -> String {
    let mut out = String::with_capacity(capacity + 48);
    out.push_str(r#"{"jsonrpc":"2.0""#);
    if generation == Generation::Released {
        out.push_str(r#","type":""#);
        out.push_str(kind);
        out.push('"');
    }
    out
}

fn push_id(out: &mut String, generation: Generation, id: Option<&Id>) -> Result<(), EncodeError> {
    out.push_str(r#","id":"#);
    match id {
        None => out.push_str("null"),
        Some(Id::Str(s)) => push_str(out, s),
        Some(Id::Num(_)) if generation == Generation::Released => return Err(EncodeError::NumericIdInReleased),
        Some(Id::Num(n)) => {
            let _ = write!(out, "{n}");
        }
    }
    Ok(())
}

fn push_raw(out: &mut String, key: &str, value: Option<&RawValue>) {
    if let Some(v) = value {
        out.push_str(",\"");
        out.push_str(key);
        out.push_str("\":");
        out.push_str(v.get());
    }
}

/// `{"jsonrpc":"2.0",["type":"request",]"id":…,"method":…[,"params":…]}`. Params are omitted when
/// `None`.
pub fn encode_request(
    generation: Generation,
    id: &Id,
    method: &str,
    params: Option<&RawValue>,
) -> Result<String, EncodeError> {
    match id {
        Id::Str(id) => Ok(encode_request_str(generation, id, method, params)),
        Id::Num(_) => {
            let mut out = request_head(generation, method, params);
            push_id(&mut out, generation, Some(id))?;
            Ok(request_tail(out, method, params))
        }
    }
}

/// [`encode_request`] with a string id, which both generations carry: it cannot fail (the
/// session sends only string ids).
pub(crate) fn encode_request_str(generation: Generation, id: &str, method: &str, params: Option<&RawValue>) -> String {
    let mut out = request_head(generation, method, params);
    out.push_str(r#","id":"#);
    push_str(&mut out, id);
    request_tail(out, method, params)
}

fn request_head(generation: Generation, method: &str, params: Option<&RawValue>) -> String {
    head(
        generation,
        "request",
        method.len() + params.map_or(0, |p| p.get().len()),
    )
}

fn request_tail(mut out: String, method: &str, params: Option<&RawValue>) -> String {
    out.push_str(r#","method":"#);
    push_str(&mut out, method);
    push_raw(&mut out, "params", params);
    out.push('}');
    out
}

/// A server-to-client notification: `{"jsonrpc":"2.0","method","params"?}` (current) or
/// `{"jsonrpc":"2.0","type":"event","event","data"?}` (released). Clients never send one; test
/// peers do.
pub fn encode_notification(generation: Generation, name: &str, params: Option<&RawValue>) -> String {
    let mut out = head(generation, "event", name.len() + params.map_or(0, |p| p.get().len()));
    let (name_key, payload_key) = match generation {
        Generation::Released => (r#","event":"#, "data"),
        Generation::Current => (r#","method":"#, "params"),
    };
    out.push_str(name_key);
    push_str(&mut out, name);
    push_raw(&mut out, payload_key, params);
    out.push('}');
    out
}

/// `{"jsonrpc":"2.0",["type":"response",]"id":…,"result":…}` or `…,"error":{"code","message",
/// "_tag"?,"data"?}}`; `id: None` is written `null`. `_tag` is written in the current generation
/// only (the released server has no such key).
pub fn encode_response(generation: Generation, id: Option<&Id>, outcome: &Outcome) -> Result<String, EncodeError> {
    let mut out = head(generation, "response", 64);
    push_id(&mut out, generation, id)?;
    match outcome {
        Outcome::Result(r) => {
            if id.is_none() {
                return Err(EncodeError::ResultWithoutId);
            }
            push_raw(&mut out, "result", Some(r));
        }
        Outcome::Error(e) => push_error(&mut out, generation, e),
    }
    out.push('}');
    Ok(out)
}

/// Any frame, with the encoder of its kind.
pub fn encode_frame(generation: Generation, frame: &Frame) -> Result<String, EncodeError> {
    match frame {
        Frame::Request(q) => encode_request(generation, &q.id, &q.method, q.params.as_deref()),
        Frame::Response(r) => encode_response(generation, r.id.as_ref(), &r.outcome),
        Frame::Notification(n) => Ok(encode_notification(generation, &n.name, n.params.as_deref())),
    }
}

fn push_error(out: &mut String, generation: Generation, e: &RpcError) {
    let _ = write!(out, r#","error":{{"code":{},"message":"#, e.code);
    push_str(out, &e.message);
    if let (Some(tag), Generation::Current) = (&e.tag, generation) {
        out.push_str(r#","_tag":"#);
        push_str(out, tag);
    }
    push_raw(out, "data", e.data.as_deref());
    out.push('}');
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encode_errors_say_what_the_frame_lacks() {
        assert_eq!(
            EncodeError::NumericIdInReleased.to_string(),
            "the released generation only allows string ids"
        );
        assert_eq!(
            EncodeError::ResultWithoutId.to_string(),
            "a successful response needs an id"
        );
    }

    #[test]
    fn escapes_like_serde_json() {
        for s in [
            "",
            "plain",
            "q\"b\\s",
            "\n\r\t\u{8}\u{c}\u{0}\u{1f}\u{7f}",
            "é — ✓ 😀",
            "/",
        ] {
            let mut out = String::new();
            push_str(&mut out, s);
            assert_eq!(out, serde_json::to_string(s).unwrap());
        }
    }
}
