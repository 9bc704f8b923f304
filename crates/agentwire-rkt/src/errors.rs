//! RKT error codes and the typed error every RKT failure becomes.

use crate::body::ErrorBody;
use crate::codec::{DecodeError, DecodeErrorKind};
use agentwire_core::{Error, ErrorKind};
use serde::Serialize;
use serde_json::json;

/// Error codes on the wire. The guide defines 401, 429, 602, 603 and 605; agentwire adds the
/// others (see `docs/protocols/rkt.md`).
pub mod codes {
    /// The message could not be decoded or its body is invalid.
    pub const BAD_MESSAGE: i64 = 400;
    pub const UNAUTHORIZED: i64 = 401;
    /// The message is not valid in the session's state (a REQUEST before HELLO, a second HELLO).
    pub const NOT_READY: i64 = 409;
    pub const TOO_LARGE: i64 = 413;
    pub const RATE_LIMITED: i64 = 429;
    pub const INTERNAL: i64 = 500;
    pub const CAPABILITY_MISSING: i64 = 602;
    pub const VERSION_UNSUPPORTED: i64 = 603;
    pub const PAYMENT_REQUIRED: i64 = 605;

    /// The `name` of an ERROR body for a code.
    pub fn name(code: i64) -> &'static str {
        match code {
            BAD_MESSAGE => "BAD_MESSAGE",
            UNAUTHORIZED => "UNAUTHORIZED",
            NOT_READY => "NOT_READY",
            TOO_LARGE => "MESSAGE_TOO_LARGE",
            RATE_LIMITED => "RATE_LIMITED",
            INTERNAL => "INTERNAL",
            CAPABILITY_MISSING => "CAPABILITY_MISSING",
            VERSION_UNSUPPORTED => "VERSION_UNSUPPORTED",
            PAYMENT_REQUIRED => "PAYMENT_REQUIRED",
            _ => "ERROR",
        }
    }
}

/// An RKT failure: the shared error shape plus what RKT says about it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RktError {
    #[serde(flatten)]
    pub error: Error,
    /// The ERROR body's `name`, for remote errors.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// The ERROR body's `details`, as JSON text.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub details: Option<String>,
    /// The message the error is about (`request_id` of the body, else `Reply-To`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub request_id: Option<String>,
    /// `Retry-After` in seconds, for 429.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub retry_after_s: Option<u64>,
}

/// A core error (one the engine did not get from a server), without a body's fields.
impl From<Error> for RktError {
    fn from(error: Error) -> Self {
        RktError {
            error,
            name: None,
            details: None,
            request_id: None,
            retry_after_s: None,
        }
    }
}

impl RktError {
    pub fn local(kind: ErrorKind, message: impl Into<String>) -> Self {
        Error::new(kind, message).into()
    }

    #[must_use]
    pub fn for_request(mut self, id: &str) -> Self {
        self.request_id = Some(id.to_string());
        self
    }

    pub fn kind(&self) -> ErrorKind {
        self.error.kind
    }

    pub fn code(&self) -> Option<i64> {
        self.error.code
    }

    /// The typed error for an ERROR message from the peer.
    pub fn remote(body: &ErrorBody, reply_to: Option<&str>, retry_after_s: Option<u64>) -> Self {
        let kind = match body.code {
            codes::UNAUTHORIZED => ErrorKind::Auth,
            codes::RATE_LIMITED => ErrorKind::RateLimited,
            codes::VERSION_UNSUPPORTED => ErrorKind::Version,
            codes::TOO_LARGE => ErrorKind::Limit,
            codes::BAD_MESSAGE | codes::NOT_READY => ErrorKind::Protocol,
            _ => ErrorKind::Remote,
        };
        let retryable = body.code == codes::RATE_LIMITED || (500..600).contains(&body.code);
        let retry_after_s = retry_after_s.or_else(|| {
            body.details
                .as_ref()
                .and_then(|d| d.get("retry_after"))
                .and_then(|v| v.as_u64())
        });
        let message = if body.message.is_empty() {
            codes::name(body.code).to_string()
        } else {
            body.message.clone()
        };
        RktError {
            error: Error::new(kind, message).with_code(body.code).retryable(retryable),
            name: (!body.name.is_empty()).then(|| body.name.clone()),
            details: body.details.as_ref().map(|d| d.to_string()),
            request_id: body.request_id.clone().or_else(|| reply_to.map(str::to_string)),
            retry_after_s,
        }
    }

    /// The typed error for a frame that could not be decoded. Its `request_id` is left to the
    /// caller: what the frame answers (a client's) or the frame itself (a server's).
    pub fn decode(err: &DecodeError) -> Self {
        let kind = match err.kind {
            DecodeErrorKind::TooLarge { .. } => ErrorKind::Limit,
            DecodeErrorKind::UnsupportedVersion(_) => ErrorKind::Version,
            _ => ErrorKind::Decode,
        };
        RktError {
            error: Error::new(kind, err.to_string()),
            name: None,
            details: Some(json!({ "field": err.field() }).to_string()),
            request_id: None,
            retry_after_s: None,
        }
    }
}

impl std::fmt::Display for RktError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.error.fmt(f)
    }
}

impl std::error::Error for RktError {}

/// The ERROR body a server sends for a message it could not decode.
pub fn decode_error_body(err: &DecodeError) -> ErrorBody {
    let code = match err.kind {
        DecodeErrorKind::TooLarge { .. } => codes::TOO_LARGE,
        DecodeErrorKind::UnsupportedVersion(_) => codes::VERSION_UNSUPPORTED,
        _ => codes::BAD_MESSAGE,
    };
    error_body(
        code,
        err.to_string(),
        Some(json!({ "field": err.field() })),
        err.message_id.clone(),
    )
}

/// An ERROR body with the standard name for `code`.
pub fn error_body(
    code: i64,
    message: impl Into<String>,
    details: Option<serde_json::Value>,
    request_id: Option<String>,
) -> ErrorBody {
    ErrorBody {
        code,
        name: codes::name(code).to_string(),
        message: message.into(),
        details,
        request_id,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every code's `name` is the one docs/protocols/rkt.md gives it; any other code is `ERROR`.
    #[test]
    fn every_code_has_its_documented_name() {
        for (code, name) in [
            (400, "BAD_MESSAGE"),
            (401, "UNAUTHORIZED"),
            (409, "NOT_READY"),
            (413, "MESSAGE_TOO_LARGE"),
            (429, "RATE_LIMITED"),
            (500, "INTERNAL"),
            (602, "CAPABILITY_MISSING"),
            (603, "VERSION_UNSUPPORTED"),
            (605, "PAYMENT_REQUIRED"),
            (418, "ERROR"),
        ] {
            assert_eq!(codes::name(code), name, "{code}");
            assert_eq!(error_body(code, "m", None, None).name, name, "{code}");
        }
    }

    /// An ERROR's code gives the typed error's kind and whether it may be retried, as the table
    /// in docs/protocols/rkt.md says.
    #[test]
    fn a_remote_error_has_the_kind_its_code_documents() {
        for (code, kind, retryable) in [
            (400, ErrorKind::Protocol, false),
            (401, ErrorKind::Auth, false),
            (409, ErrorKind::Protocol, false),
            (413, ErrorKind::Limit, false),
            (429, ErrorKind::RateLimited, true),
            (500, ErrorKind::Remote, true),
            (599, ErrorKind::Remote, true),
            (602, ErrorKind::Remote, false),
            (603, ErrorKind::Version, false),
            (605, ErrorKind::Remote, false),
            (418, ErrorKind::Remote, false),
        ] {
            let e = RktError::remote(&error_body(code, "m", None, None), None, None);
            assert_eq!((e.kind(), e.error.retryable), (kind, retryable), "{code}");
        }
    }

    /// A frame too large is `limit` and 413, one of another protocol version `version` and
    /// 603, any other undecodable one `decode` and 400.
    #[test]
    fn an_undecodable_frame_has_the_kind_and_code_of_why() {
        let hello =
            "RKT/1.0 HELLO\nVersion: 1\nMessage-ID: h\nSession-ID: s\nTimestamp: 2026-06-28T12:00:00Z\nTTL: 30\n\n";
        for (text, max, kind, code) in [
            (hello, 10, ErrorKind::Limit, codes::TOO_LARGE),
            (
                &*hello.replace("RKT/1.0", "RKT/2.0"),
                usize::MAX,
                ErrorKind::Version,
                codes::VERSION_UNSUPPORTED,
            ),
            (
                &*hello.replace("Version: 1\n", ""),
                usize::MAX,
                ErrorKind::Decode,
                codes::BAD_MESSAGE,
            ),
        ] {
            let err = crate::codec::decode(text, max).unwrap_err();
            assert_eq!(RktError::decode(&err).kind(), kind, "{err}");
            assert_eq!(decode_error_body(&err).code, code, "{err}");
        }
    }
}
