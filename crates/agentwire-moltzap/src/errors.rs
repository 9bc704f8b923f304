//! MoltZap error codes, their names, and the typed error every MoltZap failure becomes.

use crate::frame::{Id, RpcError};
use crate::frame_error::FrameError;
use agentwire_core::{Error, ErrorKind};
use serde::Serialize;

/// The error-code table of the released server (`-32700 … -32022`), defined once: each code's
/// name (also the current generation's `_tag`), its [`ErrorKind`] and whether a retry may help.
pub mod codes {
    use agentwire_core::ErrorKind;

    /// One row of the table.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub struct CodeInfo {
        pub code: i64,
        pub name: &'static str,
        pub kind: ErrorKind,
        pub retryable: bool,
    }

    macro_rules! table {
        ($($konst:ident = $code:literal, $name:literal, $kind:ident, $retry:literal;)*) => {
            $(pub const $konst: i64 = $code;)*
            /// Every code, in the order the released spec lists them.
            pub const TABLE: &[CodeInfo] = &[
                $(CodeInfo { code: $code, name: $name, kind: ErrorKind::$kind, retryable: $retry }),*
            ];
        };
    }

    table! {
        PARSE_ERROR = -32700, "ParseError", Protocol, false;
        INVALID_REQUEST = -32600, "InvalidRequest", Protocol, false;
        METHOD_NOT_FOUND = -32601, "MethodNotFound", Invalid, false;
        INVALID_PARAMS = -32602, "InvalidParams", Invalid, false;
        INTERNAL_ERROR = -32603, "InternalError", Remote, true;
        UNAUTHORIZED = -32000, "Unauthorized", Auth, false;
        FORBIDDEN = -32001, "Forbidden", Remote, false;
        NOT_FOUND = -32002, "NotFound", Remote, false;
        CONFLICT = -32003, "Conflict", Remote, false;
        RATE_LIMITED = -32004, "RateLimited", RateLimited, true;
        NOT_IN_CONTACTS = -32005, "NotInContacts", Remote, false;
        BLOCKED = -32006, "Blocked", Remote, false;
        CONVERSATION_FULL = -32007, "ConversationFull", Remote, false;
        PROTOCOL_MISMATCH = -32008, "ProtocolMismatch", Version, false;
        APP_NOT_FOUND = -32010, "AppNotFound", Remote, false;
        AGENT_NOT_FOUND = -32011, "AgentNotFound", Remote, false;
        SKILL_TIMEOUT = -32012, "SkillTimeout", Remote, false;
        SKILL_MISMATCH = -32013, "SkillMismatch", Remote, false;
        PERMISSION_TIMEOUT = -32014, "PermissionTimeout", Remote, false;
        PERMISSION_DENIED = -32015, "PermissionDenied", Remote, false;
        IDENTITY_REJECTED = -32016, "IdentityRejected", Remote, false;
        MAX_PARTICIPANTS = -32017, "MaxParticipants", Remote, false;
        AGENT_NO_OWNER = -32018, "AgentNoOwner", Remote, false;
        HOOK_BLOCKED = -32019, "HookBlocked", Remote, false;
        SESSION_CLOSED = -32020, "SessionClosed", Remote, false;
        SESSION_NOT_FOUND = -32021, "SessionNotFound", Remote, false;
        CONVERSATION_ARCHIVED = -32022, "ConversationArchived", Remote, false;
    }

    pub fn by_code(code: i64) -> Option<&'static CodeInfo> {
        TABLE.iter().find(|c| c.code == code)
    }

    /// A row by name, for a current-generation `_tag`: the exact name, else the name with an
    /// `Error` suffix removed (`"RateLimitedError"` → `RateLimited`).
    pub fn by_tag(tag: &str) -> Option<&'static CodeInfo> {
        TABLE.iter().find(|c| c.name == tag).or_else(|| {
            tag.strip_suffix("Error")
                .and_then(|t| TABLE.iter().find(|c| c.name == t))
        })
    }

    /// The row an error names. A `_tag` (current generation only: released errors are read
    /// with none) names it, its code then deciding nothing: a tag the table does not have is
    /// no row, whatever the code (a current server's new error on JSON-RPC's generic -32000 is
    /// not the released `Unauthorized`). Without a tag (the released generation, or a current
    /// server that sent none), the code's row.
    pub fn of_error(code: Option<i64>, tag: Option<&str>) -> Option<&'static CodeInfo> {
        match tag {
            Some(tag) => by_tag(tag),
            None => code.and_then(by_code),
        }
    }

    /// The name of a code, if the table has it.
    pub fn name(code: i64) -> Option<&'static str> {
        by_code(code).map(|c| c.name)
    }
}

/// A MoltZap failure: the shared error shape plus what MoltZap says about it. Serialized as
/// `{kind, code?, message, retryable, name?, tag?, data?, requestId?}`, the keys RKT's and
/// Switch's errors use for the same facts, `data` embedded when it is JSON: the object the npm
/// package's `AgentwireError.info` and the component's `engine-error.json` carry.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MoltZapError {
    #[serde(flatten)]
    pub error: Error,
    /// The typed name: the `_tag` when the server sent one, else the table name of the code.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// The `_tag` exactly as sent (current generation).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tag: Option<String>,
    /// The error's `data` (remote errors) or `{"field": …}` (frame errors), as JSON text.
    #[serde(skip_serializing_if = "Option::is_none", serialize_with = "embedded")]
    pub data: Option<String>,
    /// The request the error is about.
    #[serde(skip_serializing_if = "Option::is_none", rename = "requestId")]
    pub request_id: Option<Id>,
    /// The request ended before its frame left (timed out, cancelled or closed while still
    /// queued): the server cannot have acted on it, so sending it again cannot make a second one.
    #[serde(skip)]
    pub unsent: bool,
}

/// A core error (one the engine did not get from a server), without a response's fields.
impl From<Error> for MoltZapError {
    fn from(error: Error) -> Self {
        MoltZapError {
            error,
            name: None,
            tag: None,
            data: None,
            request_id: None,
            unsent: false,
        }
    }
}

impl MoltZapError {
    pub fn local(kind: ErrorKind, message: impl Into<String>) -> Self {
        Error::new(kind, message).into()
    }

    #[must_use]
    pub fn for_request(mut self, id: Id) -> Self {
        self.request_id = Some(id);
        self
    }

    /// Marks the error as ending a request whose frame never left ([`MoltZapError::unsent`]).
    #[must_use]
    pub fn unsent(mut self, unsent: bool) -> Self {
        self.unsent = unsent;
        self
    }

    /// Ends a request that got no response (`closed`, `timeout`): [`MoltZapError::unsent`] set
    /// when its frame never left, and retryable only when that, or when the method is
    /// idempotent ([`agentwire_core::Error::unanswered`], the rule every engine keeps).
    #[must_use]
    pub fn unanswered(mut self, unsent: bool, idempotent: bool) -> Self {
        self.error = self.error.unanswered(!unsent, idempotent);
        self.unsent(unsent)
    }

    pub fn kind(&self) -> ErrorKind {
        self.error.kind
    }

    pub fn code(&self) -> Option<i64> {
        self.error.code
    }

    /// The typed error for an error response. The `_tag`, when one was sent, decides the kind,
    /// else the code ([`codes::of_error`]); unknown tags and codes are [`ErrorKind::Remote`],
    /// not retryable.
    pub fn remote(err: &RpcError, request_id: Option<&Id>) -> Self {
        let info = codes::of_error(Some(err.code), err.tag.as_deref());
        let (kind, retryable) = info.map_or((ErrorKind::Remote, false), |i| (i.kind, i.retryable));
        let name = err.tag.clone().or_else(|| info.map(|i| i.name.to_string()));
        let message = match (&err.message, &name) {
            (m, Some(n)) if m.is_empty() => n.clone(),
            (m, _) => m.clone(),
        };
        MoltZapError {
            error: Error::new(kind, message).with_code(err.code).retryable(retryable),
            name,
            tag: err.tag.clone(),
            data: err.data.as_ref().map(|d| d.get().to_string()),
            request_id: request_id.cloned(),
            unsent: false,
        }
    }

    /// The typed error for a frame that could not be decoded: [`ErrorKind::Limit`] for a bound,
    /// else [`ErrorKind::Decode`]; `data` is `{"field": …}`.
    pub fn frame(err: &FrameError) -> Self {
        let kind = if err.is_limit() {
            ErrorKind::Limit
        } else {
            ErrorKind::Decode
        };
        let mut field = String::new();
        crate::encode::push_str(&mut field, err.field());
        MoltZapError {
            error: Error::new(kind, err.to_string()),
            name: None,
            tag: None,
            data: Some(format!(r#"{{"field":{field}}}"#)),
            request_id: err.id.clone(),
            unsent: false,
        }
    }
}

/// `data` as the JSON it is, copied verbatim, or as a string when serde_json would refuse it (a
/// lone surrogate escape, a number beyond `f64`, nesting past its limit: what core's strict
/// reader refuses, as Switch's `detail`), so the error always serializes, to text or to a value.
fn embedded<S: serde::Serializer>(data: &Option<String>, s: S) -> Result<S::Ok, S::Error> {
    use agentwire_core::json::{read, SERDE_DEPTH};
    let Some(d) = data.as_deref() else {
        return s.serialize_none();
    };
    let raw = read::parse(d, SERDE_DEPTH)
        .ok()
        .and_then(|_| serde_json::value::RawValue::from_string(d.to_owned()).ok());
    match raw {
        Some(raw) => raw.serialize(s),
        None => s.serialize_str(d),
    }
}

impl std::fmt::Display for MoltZapError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.error.fmt(f)
    }
}

impl std::error::Error for MoltZapError {}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::frame_error::FrameErrorKind;

    #[test]
    fn table_is_complete_and_unique() {
        assert_eq!(codes::TABLE.len(), 27);
        for (i, a) in codes::TABLE.iter().enumerate() {
            for b in &codes::TABLE[i + 1..] {
                assert_ne!(a.code, b.code);
                assert_ne!(a.name, b.name);
            }
        }
        assert_eq!(codes::name(-32022), Some("ConversationArchived"));
        assert_eq!(codes::name(-32009), None);
    }

    #[test]
    fn kinds_of_remote_errors() {
        let cases = [
            (-32000, ErrorKind::Auth, false),
            (-32004, ErrorKind::RateLimited, true),
            (-32008, ErrorKind::Version, false),
            (-32600, ErrorKind::Protocol, false),
            (-32601, ErrorKind::Invalid, false),
            (-32602, ErrorKind::Invalid, false),
            (-32603, ErrorKind::Remote, true),
            (-32002, ErrorKind::Remote, false),
            (-1, ErrorKind::Remote, false),
        ];
        for (code, kind, retryable) in cases {
            let e = MoltZapError::remote(&RpcError::new(code, "m"), None);
            assert_eq!(
                (e.kind(), e.error.retryable, e.code()),
                (kind, retryable, Some(code)),
                "{code}"
            );
        }
    }

    #[test]
    fn tag_wins_over_code() {
        let mut err = RpcError::new(-32603, "no");
        err.tag = Some("Unauthorized".into());
        let e = MoltZapError::remote(&err, Some(&Id::from("1")));
        assert_eq!(e.kind(), ErrorKind::Auth);
        assert_eq!(e.name.as_deref(), Some("Unauthorized"));
        err.tag = Some("RateLimitedError".into());
        let e = MoltZapError::remote(&err, None);
        assert_eq!((e.kind(), e.error.retryable), (ErrorKind::RateLimited, true));
        assert_eq!(e.name.as_deref(), Some("RateLimitedError"));
        err.tag = Some("SomethingNew".into());
        let e = MoltZapError::remote(&err, None);
        assert_eq!(e.kind(), ErrorKind::Remote);
        assert_eq!(e.name.as_deref(), Some("SomethingNew"));
        // An unknown tag is no row, whatever the code: not the released -32000's `auth`.
        for code in [-32000, -32004, -32603] {
            err.code = code;
            let e = MoltZapError::remote(&err, None);
            assert_eq!(
                (e.kind(), e.error.retryable, e.code()),
                (ErrorKind::Remote, false, Some(code))
            );
        }
    }

    /// An error response with an empty message says its name instead, when it has one.
    #[test]
    fn an_empty_message_is_the_errors_name() {
        let message = |code, tag: Option<&str>| {
            let mut err = RpcError::new(code, "");
            err.tag = tag.map(str::to_owned);
            MoltZapError::remote(&err, None).error.message
        };
        assert_eq!(message(-32004, None), "RateLimited");
        assert_eq!(message(-1, Some("SomethingNew")), "SomethingNew");
        assert_eq!(message(-1, None), "");
    }

    #[test]
    fn serializes_to_the_shared_shape() {
        let e = MoltZapError::remote(&RpcError::new(-32000, "Authentication failed"), Some(&Id::Num(7)));
        let v = serde_json::to_value(&e).unwrap();
        assert_eq!(
            v,
            serde_json::json!({"kind":"auth","code":-32000,"message":"Authentication failed","retryable":false,"name":"Unauthorized","requestId":7})
        );
    }

    #[test]
    fn data_is_embedded_when_it_is_json() {
        let mut e = MoltZapError::frame(&FrameError::new(FrameErrorKind::MissingField("id")));
        assert_eq!(
            serde_json::to_value(&e).unwrap()["data"],
            serde_json::json!({"field": "id"})
        );
        for (data, as_text) in [(r#""\ud800""#, true), ("1e400", true), (r#"[1,{"a":null}]"#, false)] {
            e.data = Some(data.into());
            let v = serde_json::to_value(&e).unwrap();
            let expected = if as_text {
                serde_json::json!(data)
            } else {
                serde_json::from_str(data).unwrap()
            };
            assert_eq!(v["data"], expected, "{data}");
            let text = serde_json::to_string(&e).unwrap();
            assert_eq!(serde_json::from_str::<serde_json::Value>(&text).unwrap(), v);
        }
    }
}
