//! The JSON bodies of the message types, and the header values with a closed set of values.
//!
//! The bodies a client reads (HELLO_ACK, ERROR, AUTH_OK, STREAM_END) have a `from_json` on
//! [`agentwire_core::json::read`], which accepts what their derived `Deserialize` accepts: the
//! derive stays for the server and the reference agent, but the client (and so the wasm) does
//! not instantiate serde for them.

use crate::errors::RktError;
use agentwire_core::json::fields::{self, FieldError, Object};
use agentwire_core::json::read::{parse_lenient, ReadError};
use agentwire_core::json::SERDE_DEPTH;
use agentwire_core::ErrorKind;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::fmt;

/// `Priority` header values. Requests queued before the session is ready are sent in this order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum Priority {
    Low,
    #[default]
    Normal,
    High,
    Urgent,
}

impl Priority {
    pub fn parse(s: &str) -> Option<Self> {
        [Priority::Low, Priority::Normal, Priority::High, Priority::Urgent]
            .into_iter()
            .find(|p| p.as_str().eq_ignore_ascii_case(s))
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Priority::Low => "LOW",
            Priority::Normal => "NORMAL",
            Priority::High => "HIGH",
            Priority::Urgent => "URGENT",
        }
    }
}

/// HELLO: the version range the client speaks. A HELLO without a body means `1..=1`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HelloBody {
    pub min_version: u32,
    pub max_version: u32,
}

/// HELLO_ACK: the version both speak and the idle timeout of the session, in seconds.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HelloAckBody {
    pub agreed_version: u32,
    pub session_timeout: u64,
}

/// REQUEST.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RequestBody {
    pub intent: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub params: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context: Option<Value>,
}

/// MEMORY_SET. `ttl` in seconds; no `ttl` keeps the value until it is overwritten.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MemorySetBody {
    pub key: String,
    pub value: Value,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttl: Option<u64>,
}

/// MEMORY_GET.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MemoryGetBody {
    pub key: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
}

impl MemoryGetBody {
    /// What the RESPONSE to MEMORY_GET (`{"key","namespace","found","value"}`, parsed) says:
    /// `found: true` is `Some(value)` (an absent `value` is `null`), `found: false` is `None` (the
    /// key is not set, or expired). A server that sends no `found` is read by its `value`: absent
    /// or `null` is `None`. A reply that is not an object, or a `found` that is not a boolean, is a
    /// `decode` error.
    pub fn read_reply(reply: &Value) -> Result<Option<Value>, RktError> {
        let decode = |m: &str| RktError::local(ErrorKind::Decode, format!("MEMORY_GET reply: {m}"));
        let Some(reply) = reply.as_object() else {
            return Err(decode("not a JSON object"));
        };
        let value = reply.get("value").cloned().unwrap_or(Value::Null);
        match reply.get("found") {
            Some(Value::Bool(true)) => Ok(Some(value)),
            Some(Value::Bool(false)) => Ok(None),
            None => Ok(Some(value).filter(|v| !v.is_null())),
            Some(_) => Err(decode("`found` is not a boolean")),
        }
    }
}

/// The namespace used when a MEMORY message names none.
pub const DEFAULT_NAMESPACE: &str = "default";

/// PAY.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PayBody {
    pub amount: f64,
    pub currency: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recipient: Option<String>,
}

/// AUTH: a bearer token (API key), or a DID asking for scopes. `Debug` hides the token.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "scheme", rename_all = "lowercase")]
pub enum AuthBody {
    Bearer {
        token: String,
        #[serde(default)]
        scopes: Vec<String>,
    },
    Did {
        did: String,
        #[serde(default)]
        scopes: Vec<String>,
    },
}

impl std::fmt::Debug for AuthBody {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            AuthBody::Bearer { token: _, scopes } => f
                .debug_struct("Bearer")
                .field("token", &agentwire_core::redact::Redacted)
                .field("scopes", scopes)
                .finish(),
            AuthBody::Did { did, scopes } => f.debug_struct("Did").field("did", did).field("scopes", scopes).finish(),
        }
    }
}

/// AUTH_OK. `Debug` hides the session token.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AuthOkBody {
    pub session_token: String,
    #[serde(default)]
    pub scopes: Vec<String>,
    /// The token's lifetime in seconds, as the server gives it; `None` when it gives none (or
    /// `null`): the guide asks only for "a session token", so the token has no known expiry.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_in: Option<u64>,
}

impl std::fmt::Debug for AuthOkBody {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let AuthOkBody {
            session_token: _,
            scopes,
            expires_in,
        } = self;
        f.debug_struct("AuthOkBody")
            .field("session_token", &agentwire_core::redact::Redacted)
            .field("scopes", scopes)
            .field("expires_in", expires_in)
            .finish()
    }
}

/// ERROR, as the guide shows it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ErrorBody {
    pub code: i64,
    #[serde(default)]
    pub name: String,
    #[serde(default)]
    pub message: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub details: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_id: Option<String>,
}

/// STREAM_END: how many STREAM_DATA came before it, so a lost tail is detected.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StreamEndBody {
    pub count: u64,
}

/// Why a body does not read as its type.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum BodyError {
    /// Not JSON.
    Json(ReadError),
    /// Not an object, a known field given twice, a field of the wrong type, or a lone surrogate
    /// escape or a number beyond `f64` where serde decodes (a known field, a key), not where it
    /// skips.
    Field(FieldError),
    /// A required field absent or `null`.
    Missing(&'static str),
}

impl fmt::Display for BodyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BodyError::Json(e) => e.fmt(f),
            BodyError::Field(e) => e.fmt(f),
            BodyError::Missing(field) => write!(f, "`{field}` is missing or null"),
        }
    }
}

impl From<ReadError> for BodyError {
    fn from(e: ReadError) -> Self {
        BodyError::Json(e)
    }
}

impl From<FieldError> for BodyError {
    fn from(e: FieldError) -> Self {
        BodyError::Field(e)
    }
}

/// Reads a body the way its derived `Deserialize` (without `deny_unknown_fields`) does: an
/// object whose known keys are `fields` (unknown keys ignored, their values skipped: any depth,
/// lone surrogates and huge numbers included; a known key given twice refused), or serde's array form of a
/// struct: the fields in declaration order, at most as many items as fields, those missing at the
/// end defaulted (every defaulted field of these bodies is `#[serde(default)]`).
fn body<T>(
    text: &str,
    fields: &[&'static str],
    read: impl FnOnce(&Object<'_, '_>) -> Result<T, BodyError>,
) -> Result<T, BodyError> {
    let (mut read, mut out) = (Some(read), None);
    body_with(text, fields, &mut |o| {
        out = read.take().map(|r| r(o)).transpose()?;
        Ok(())
    })?;
    // `body_with` calls back exactly once when it succeeds.
    out.ok_or(BodyError::Missing(""))
}

/// [`body`], not generic: one copy in the wasm for every body type.
fn body_with(
    text: &str,
    fields: &[&'static str],
    read: &mut dyn FnMut(&Object<'_, '_>) -> Result<(), BodyError>,
) -> Result<(), BodyError> {
    // Lenient (and any depth): what serde skips, it only checked for syntax.
    let tape = parse_lenient(text, usize::MAX)?;
    let root = tape.root();
    if let Some(named) = fields::named_array(root, fields) {
        if let Some((_, f)) = root.items().zip(fields).find(|(v, _)| v.lossy()) {
            return Err(FieldError::Lossy(format!("`{f}`")).into());
        }
        // The same object written out with the names: no second set of typed getters.
        return body_with(&named, fields, read);
    }
    let o = Object::known(root, fields)?;
    // Every known field is decoded.
    o.decoded(fields)?;
    read(&o)
}

fn required<T>(v: Option<T>, field: &'static str) -> Result<T, BodyError> {
    v.ok_or(BodyError::Missing(field))
}

impl HelloAckBody {
    pub(crate) fn from_json(text: &str) -> Result<Self, BodyError> {
        body(text, &["agreed_version", "session_timeout"], |o| {
            Ok(HelloAckBody {
                agreed_version: required(o.uint("agreed_version")?, "agreed_version")?,
                session_timeout: required(o.uint("session_timeout")?, "session_timeout")?,
            })
        })
    }
}

impl AuthOkBody {
    pub(crate) fn from_json(text: &str) -> Result<Self, BodyError> {
        body(text, &["session_token", "scopes", "expires_in"], |o| {
            o.not_null("scopes", "an array of strings")?;
            Ok(AuthOkBody {
                session_token: required(o.string("session_token")?, "session_token")?,
                scopes: o.strings("scopes")?.unwrap_or_default(),
                expires_in: o.uint("expires_in")?,
            })
        })
    }
}

impl ErrorBody {
    pub(crate) fn from_json(text: &str) -> Result<Self, BodyError> {
        body(text, &["code", "name", "message", "details", "request_id"], Self::read)
    }

    fn read(o: &Object<'_, '_>) -> Result<Self, BodyError> {
        let code = match o.get("code") {
            None => return Err(BodyError::Missing("code")),
            Some(v) => v.as_i64().ok_or(FieldError::Type {
                field: "code",
                expected: "an integer",
                got: v.kind(),
            })?,
        };
        o.not_null("name", "a string")?;
        o.not_null("message", "a string")?;
        // The details stay a JSON value (the type's field): their own text, parsed once more,
        // refused past the depth serde_json allows them inside the body's object.
        let details = match o.get("details") {
            None => None,
            Some(v) => {
                let deep = agentwire_core::json::nests_deeper_than(v.raw().as_bytes(), SERDE_DEPTH - 1);
                let parsed = if deep {
                    None
                } else {
                    agentwire_core::json::value::parse(v.raw()).ok()
                };
                Some(parsed.ok_or(FieldError::Invalid {
                    field: "details",
                    expected: "JSON nested at most 126 levels deep",
                })?)
            }
        };
        Ok(ErrorBody {
            code,
            name: o.string("name")?.unwrap_or_default(),
            message: o.string("message")?.unwrap_or_default(),
            details,
            request_id: o.string("request_id")?,
        })
    }
}

impl StreamEndBody {
    pub(crate) fn from_json(text: &str) -> Result<Self, BodyError> {
        body(text, &["count"], |o| {
            Ok(StreamEndBody {
                count: required(o.uint("count")?, "count")?,
            })
        })
    }
}

#[cfg(test)]
#[path = "body_tests.rs"]
mod tests;
