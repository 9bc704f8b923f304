//! The frames of both generations, as decoded. Payloads stay raw JSON text.

use serde::{Serialize, Serializer};
use serde_json::value::RawValue;
use std::fmt;

/// Which MoltZap wire generation a connection speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Generation {
    /// Standard JSON-RPC 2.0 (protocol `2026.811.0`): string or number ids, notifications,
    /// batches, `_tag` errors.
    #[default]
    Current,
    /// What released servers speak (protocol `2026.425.3`): a `type` field, string ids,
    /// `{"type":"event","event","data"}` events.
    Released,
}

impl Generation {
    pub fn as_str(self) -> &'static str {
        match self {
            Generation::Current => "current",
            Generation::Released => "released",
        }
    }
}

/// A request id. The current generation allows strings and integers; the released one only
/// strings. Fractional numbers are refused (JSON-RPC discourages them and no MoltZap peer sends
/// them).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Id {
    Str(String),
    Num(i64),
}

impl Id {
    pub fn as_str(&self) -> Option<&str> {
        match self {
            Id::Str(s) => Some(s),
            Id::Num(_) => None,
        }
    }
}

impl From<&str> for Id {
    fn from(s: &str) -> Self {
        Id::Str(s.to_string())
    }
}

impl From<String> for Id {
    fn from(s: String) -> Self {
        Id::Str(s)
    }
}

impl From<i64> for Id {
    fn from(n: i64) -> Self {
        Id::Num(n)
    }
}

impl fmt::Display for Id {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Id::Str(s) => f.write_str(s),
            Id::Num(n) => write!(f, "{n}"),
        }
    }
}

/// Serialized as it is on the wire: a JSON string or number.
impl Serialize for Id {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Id::Str(v) => s.serialize_str(v),
            Id::Num(n) => s.serialize_i64(*n),
        }
    }
}

/// Raw JSON text from a string, validated (a convenience for [`crate::encode_request`] params).
pub fn raw(json: &str) -> Result<Box<RawValue>, serde_json::Error> {
    RawValue::from_string(json.to_string())
}

fn raw_eq(a: &Option<Box<RawValue>>, b: &Option<Box<RawValue>>) -> bool {
    a.as_deref().map(RawValue::get) == b.as_deref().map(RawValue::get)
}

/// One decoded frame.
#[derive(Debug, Clone)]
pub enum Frame {
    /// The answer to a request.
    Response(Response),
    /// A current-generation notification (`method`, `params`) or a released-generation event
    /// (`event`, `data`).
    Notification(Notification),
    /// A request. MoltZap servers never send one to a client (in either generation); a client
    /// session reports it as a protocol error. Test peers use it for what clients send.
    Request(Request),
}

impl PartialEq for Frame {
    fn eq(&self, other: &Self) -> bool {
        match (self, other) {
            (Frame::Response(a), Frame::Response(b)) => a == b,
            (Frame::Notification(a), Frame::Notification(b)) => a == b,
            (Frame::Request(a), Frame::Request(b)) => a == b,
            _ => false,
        }
    }
}

/// A response. `id` is `None` for `"id": null` (or an absent id), which servers send when
/// they could not read the request's id (the released server's parse-error reply); only error
/// responses may lack an id.
#[derive(Debug, Clone, PartialEq)]
pub struct Response {
    pub id: Option<Id>,
    pub outcome: Outcome,
}

impl Response {
    pub fn result(&self) -> Option<&RawValue> {
        match &self.outcome {
            Outcome::Result(r) => Some(r),
            Outcome::Error(_) => None,
        }
    }

    pub fn error(&self) -> Option<&RpcError> {
        match &self.outcome {
            Outcome::Error(e) => Some(e),
            Outcome::Result(_) => None,
        }
    }
}

/// Exactly one of `result` and `error`.
#[derive(Debug, Clone)]
pub enum Outcome {
    Result(Box<RawValue>),
    Error(RpcError),
}

impl PartialEq for Outcome {
    fn eq(&self, other: &Self) -> bool {
        match (self, other) {
            (Outcome::Result(a), Outcome::Result(b)) => a.get() == b.get(),
            (Outcome::Error(a), Outcome::Error(b)) => a == b,
            _ => false,
        }
    }
}

/// A JSON-RPC error object `{"code","message","data"?}`. `tag` is the current generation's
/// `_tag` (from the error object itself, else from `data._tag` when `data` is an object).
#[derive(Debug, Clone)]
pub struct RpcError {
    pub code: i64,
    pub message: String,
    pub data: Option<Box<RawValue>>,
    pub tag: Option<String>,
}

impl RpcError {
    pub fn new(code: i64, message: impl Into<String>) -> Self {
        RpcError {
            code,
            message: message.into(),
            data: None,
            tag: None,
        }
    }
}

impl PartialEq for RpcError {
    fn eq(&self, other: &Self) -> bool {
        self.code == other.code
            && self.message == other.message
            && self.tag == other.tag
            && raw_eq(&self.data, &other.data)
    }
}

/// A notification (current) or an event (released): a name and its payload.
#[derive(Debug, Clone)]
pub struct Notification {
    /// `method` (current) or `event` (released).
    pub name: String,
    /// `params` (current) or `data` (released).
    pub params: Option<Box<RawValue>>,
}

impl PartialEq for Notification {
    fn eq(&self, other: &Self) -> bool {
        self.name == other.name && raw_eq(&self.params, &other.params)
    }
}

/// A request.
#[derive(Debug, Clone)]
pub struct Request {
    pub id: Id,
    pub method: String,
    pub params: Option<Box<RawValue>>,
}

impl PartialEq for Request {
    fn eq(&self, other: &Self) -> bool {
        self.id == other.id && self.method == other.method && raw_eq(&self.params, &other.params)
    }
}
