//! The one error type of the Switch engine: what went wrong (`kind`), the HTTP or refusal status
//! when a server said it, the server's `code` (`taken_over`, `no_stream`, ...) when it gave one,
//! its `detail` as sent, and whether the same call may succeed later.

use crate::frame::{detail_text, refusal_is_transient, top_level_rest, top_level_str, FrameError};
use crate::json::{self, JsonError, Obj};
use agentwire_core::json::read::Value;
use agentwire_core::text::{clip, QUOTE_MAX};
use agentwire_core::{Error, ErrorKind};
use serde_json::value::RawValue;
use std::borrow::Cow;
use std::fmt;

/// A typed Switch error. `status` is the HTTP status of an HTTP answer, or the status of a
/// `refused` frame / a `4000 + status` close code. `code` is the eviction or refusal code.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SwitchError {
    pub kind: ErrorKind,
    pub status: Option<u16>,
    pub code: Option<String>,
    pub message: String,
    /// The server's `detail` (a string or an object), as JSON text.
    pub detail: Option<String>,
    pub retryable: bool,
}

impl SwitchError {
    /// An error of this engine (not a server's answer); retryable as [`Error::new`] decides.
    pub fn local(kind: ErrorKind, message: impl Into<String>) -> Self {
        let e = Error::new(kind, message);
        SwitchError {
            kind: e.kind,
            status: None,
            code: None,
            message: e.message,
            detail: None,
            retryable: e.retryable,
        }
    }

    #[must_use]
    pub fn with_status(mut self, status: u16) -> Self {
        self.status = Some(status);
        self
    }

    #[must_use]
    pub fn with_code(mut self, code: impl Into<String>) -> Self {
        self.code = Some(code.into());
        self
    }

    #[must_use]
    pub fn retryable(mut self, retryable: bool) -> Self {
        self.retryable = retryable;
        self
    }

    /// An error answer over HTTP (an operation, a beat, a stream open): the kind from the
    /// status, the message from the body's `detail` (string, object `message`, or a validation
    /// list), the body's `code` when it has one.
    pub fn http(status: u16, body: &str) -> Self {
        let (detail, code) = body_detail(body);
        let text = match &detail {
            Some(raw) => clip(&detail_text(raw), QUOTE_MAX).into_owned(),
            None if body.trim().is_empty() => String::new(),
            None => clip(body.trim(), QUOTE_MAX).into_owned(),
        };
        let kind = status_kind(status);
        let retryable = refusal_is_transient(status) || (status == 409 && code.as_deref() != Some("taken_over"));
        let message = if text.is_empty() {
            format!("HTTP {status}")
        } else {
            format!("HTTP {status}: {text}")
        };
        SwitchError {
            kind,
            status: Some(status),
            code,
            message,
            detail: detail.map(str::to_owned),
            retryable,
        }
    }

    /// A `refused` frame (or a `4000 + status` close without one). The status is an HTTP
    /// status and has its meaning: the kind an HTTP answer of that status has, retryable when
    /// [`refusal_is_transient`] (the connection reopens on it); but 4403 is "a declared room
    /// can't be served", not a credential problem (`invalid`), and a 409 naming the protocol or
    /// a contract is `version`.
    pub fn refused(status: u16, detail: Option<&RawValue>) -> Self {
        let text = detail.map(|d| detail_text(d.get())).unwrap_or_default();
        let kind = match status {
            403 => ErrorKind::Invalid,
            409 if text.contains("protocol") || detail.is_some_and(|d| d.get().contains("\"contract\"")) => {
                ErrorKind::Version
            }
            _ => status_kind(status),
        };
        let message = if text.is_empty() {
            format!("connection refused with status {status}")
        } else {
            format!(
                "connection refused with status {status}: {}",
                clip(&text, QUOTE_MAX).into_owned()
            )
        };
        // `{"code": "taken_over", ...}`: the code an HTTP answer would carry too. The spec gives
        // the frame a `status` and a `detail` only, and says no more of where `taken_over` goes
        // than "the open is refused with taken_over": a 409 whose detail's text is
        // `taken_over` or starts with `taken_over:` or `taken_over ` carries that code too.
        let code = detail
            .and_then(|d| json::parse(d.get()).ok().and_then(|tape| detail_code(tape.root())))
            .or_else(|| (status == 409 && names_taken_over(&text)).then(|| "taken_over".to_owned()));
        SwitchError {
            kind,
            status: Some(status),
            code,
            message,
            detail: detail.map(|d| d.get().to_owned()),
            retryable: refusal_is_transient(status),
        }
    }
}

/// The kind of an HTTP status, answer or refusal.
fn status_kind(status: u16) -> ErrorKind {
    match status {
        400 | 404 | 413 | 422 => ErrorKind::Invalid,
        401 | 403 => ErrorKind::Auth,
        408 => ErrorKind::Timeout,
        409 => ErrorKind::State,
        429 => ErrorKind::RateLimited,
        _ => ErrorKind::Remote,
    }
}

/// `detail` (raw, or `error` when there is no `detail`) and `code` of an error body, when it is a
/// JSON object whose `detail`, `code` and `error` are each given once, `code` a string (or
/// `null`); otherwise neither. A `detail` object may carry the code itself
/// (`{"detail": {"code": ..}}`). A body cut short (a refusal over
/// [`REFUSAL_BODY_MAX`](agentwire_core::http::REFUSAL_BODY_MAX), read no further) keeps the code
/// written before the cut ([`prefix_code`]).
fn body_detail(body: &str) -> (Option<&str>, Option<String>) {
    let read = || -> Result<_, JsonError> {
        let tape = json::parse(body)?;
        let o = Obj::new(tape.root(), &["detail", "code", "error"])?;
        let detail = o.get("detail");
        let code = match o.opt_string("code")? {
            Some(code) => Some(code),
            None => detail.and_then(detail_code),
        };
        Ok((detail.or(o.get("error")).map(|d| d.raw()), code))
    };
    match read() {
        Ok(read) => read,
        Err(JsonError::Syntax(_)) if json::cut_short(body) => (None, prefix_code(body)),
        Err(_) => (None, None),
    }
}

/// The code of a body cut short, read as `frame::event_id_hint` reads a cut frame's id: the
/// top-level `code` string, or else that of a top-level `detail` object, written whole (no
/// escape) before the cut. A `code` anywhere else (inside another value) does not count.
fn prefix_code(body: &str) -> Option<String> {
    let code = top_level_str(body, "code").or_else(|| {
        let detail = top_level_rest(body, "detail")?;
        detail.starts_with('{').then(|| top_level_str(detail, "code"))?
    })?;
    Some(code.to_owned())
}

/// `taken_over`, or `taken_over` then `:` or a space, and anything after.
fn names_taken_over(text: &str) -> bool {
    text.strip_prefix("taken_over")
        .is_some_and(|rest| rest.is_empty() || rest.starts_with(':') || rest.starts_with(' '))
}

/// `{"code": "..", ...}`: the code of a `detail` object.
fn detail_code(detail: Value<'_, '_>) -> Option<String> {
    let code = Obj::new(detail, &["code"]).ok()?.value("code")?;
    code.as_str().map(Cow::into_owned)
}

impl fmt::Display for SwitchError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.kind.as_str(), self.message)?;
        if let Some(code) = &self.code {
            write!(f, " ({code})")?;
        }
        Ok(())
    }
}

impl std::error::Error for SwitchError {}

impl From<FrameError> for SwitchError {
    fn from(e: FrameError) -> Self {
        let e = Error::from(e);
        SwitchError::local(e.kind, e.message).retryable(false)
    }
}

impl From<Error> for SwitchError {
    /// A shared-shape error (a driver's transport failure): `code` is taken as a status when it
    /// is one.
    fn from(e: Error) -> Self {
        let status = e
            .code
            .and_then(|c| u16::try_from(c).ok())
            .filter(|s| (100..600).contains(s));
        SwitchError {
            kind: e.kind,
            status,
            code: None,
            message: e.message,
            detail: None,
            retryable: e.retryable,
        }
    }
}

impl From<SwitchError> for Error {
    /// The shared shape: `code` is the status.
    fn from(e: SwitchError) -> Self {
        let mut out = Error::new(e.kind, e.message).retryable(e.retryable);
        out.code = e.status.map(i64::from);
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn http_bodies_of_the_captures() {
        let e = SwitchError::http(
            400,
            r#"{"detail": "Not connected to a room. Call connect_to_room first."}"#,
        );
        assert_eq!(e.kind, ErrorKind::Invalid);
        assert_eq!(
            e.message,
            "HTTP 400: Not connected to a room. Call connect_to_room first."
        );
        let e = SwitchError::http(401, "Invalid credentials");
        assert_eq!(
            (e.kind, e.message.as_str()),
            (ErrorKind::Auth, "HTTP 401: Invalid credentials")
        );
        let e = SwitchError::http(409, r#"{"detail":"x","code":"taken_over"}"#);
        assert_eq!((e.code.as_deref(), e.retryable), (Some("taken_over"), false));
        let e = SwitchError::http(409, r#"{"detail":"connection c has no stream attached"}"#);
        assert!(e.retryable);
        let e = SwitchError::http(503, "");
        assert_eq!(
            (e.kind, e.retryable, e.message.as_str()),
            (ErrorKind::Remote, true, "HTTP 503")
        );
        let shared: Error = e.into();
        assert_eq!(shared.code, Some(503));
    }

    #[test]
    fn the_servers_text_in_a_message_is_cut_to_512_bytes_on_a_character() {
        // 3 + 2 × 1000 bytes: byte 512 falls inside an `é`.
        let long = format!("abc{}", "é".repeat(1000));
        let object = format!(r#"{{"message":"{long}","contract":"agent-protocol"}}"#);
        let bodies = [
            format!(r#"{{"detail":"{long}"}}"#),
            format!(r#"{{"detail":{object}}}"#),
            format!(r#"{{"error":"{long}"}}"#),
            long.clone(),
        ];
        for body in &bodies {
            let e = SwitchError::http(500, body);
            let text = e.message.strip_prefix("HTTP 500: ").unwrap();
            assert_eq!(text, format!("abc{}…", "é".repeat(254)), "{body:.20}");
        }
        let e = SwitchError::http(500, &bodies[0]);
        assert_eq!(
            e.detail.as_deref(),
            Some(format!("\"{long}\"").as_str()),
            "the detail is kept whole"
        );
        for (detail, kind) in [
            (format!("\"{long}\""), ErrorKind::Invalid),
            (object, ErrorKind::Version),
        ] {
            let d: Box<RawValue> = serde_json::from_str(&detail).unwrap();
            let e = SwitchError::refused(if kind == ErrorKind::Invalid { 400 } else { 409 }, Some(&d));
            assert_eq!(e.kind, kind);
            let text = e.message.split_once(": ").unwrap().1;
            assert_eq!(text, format!("abc{}…", "é".repeat(254)));
        }
    }

    #[test]
    fn statuses_that_may_pass_later_are_retryable() {
        // (status, kind, retryable)
        for (status, kind, retryable) in [
            (429, ErrorKind::RateLimited, true),
            (408, ErrorKind::Timeout, true),
            (500, ErrorKind::Remote, true),
            (599, ErrorKind::Remote, true),
            (400, ErrorKind::Invalid, false),
            (418, ErrorKind::Remote, false),
        ] {
            let e = SwitchError::http(status, r#"{"detail":"x"}"#);
            assert_eq!(
                (e.kind, e.retryable, e.status),
                (kind, retryable, Some(status)),
                "{status}"
            );
            // A `refused` frame's status means what it means over HTTP.
            let d: Box<RawValue> = serde_json::from_str(r#""x""#).unwrap();
            let e = SwitchError::refused(status, Some(&d));
            assert_eq!((e.kind, e.retryable), (kind, retryable), "refused {status}");
        }
    }

    #[test]
    fn an_error_displays_its_kind_message_and_code() {
        let e = SwitchError::http(409, r#"{"detail":"x","code":"taken_over"}"#);
        assert_eq!(e.to_string(), "state: HTTP 409: x (taken_over)");
        assert_eq!(SwitchError::http(503, "").to_string(), "remote: HTTP 503");
    }

    #[test]
    fn refusals() {
        let d: Box<RawValue> =
            serde_json::from_str(r#"{"message":"ranges do not overlap","contract":"agent-protocol"}"#).unwrap();
        let e = SwitchError::refused(409, Some(&d));
        assert_eq!(e.kind, ErrorKind::Version);
        assert_eq!(e.message, "connection refused with status 409: ranges do not overlap");
        assert_eq!(SwitchError::refused(401, None).kind, ErrorKind::Auth);
        assert_eq!(SwitchError::refused(403, None).kind, ErrorKind::Invalid);
        // A 409 is a version mismatch only when it names the protocol or a contract.
        let kind = |detail: &str| {
            let d: Box<RawValue> = serde_json::from_str(detail).unwrap();
            SwitchError::refused(409, Some(&d)).kind
        };
        assert_eq!(kind(r#""taken_over: connection c was taken over""#), ErrorKind::State);
        assert_eq!(kind(r#"{"message":"held elsewhere"}"#), ErrorKind::State);
        assert_eq!(kind(r#""protocol 7 is not spoken""#), ErrorKind::Version);
        assert_eq!(SwitchError::refused(409, None).kind, ErrorKind::State);
    }

    /// A `refused` frame's detail that names `taken_over` in its text and has no code (the local
    /// Switch peer's, before it put the code in the detail) carries the code: the spec leaves the
    /// frame's detail open. An HTTP body's `code` is where the spec puts it, so no text counts
    /// there.
    #[test]
    fn a_refused_frame_naming_taken_over_in_its_text_has_that_code() {
        let code = |status, detail: &str| {
            let d: Box<RawValue> = serde_json::from_str(detail).unwrap();
            SwitchError::refused(status, Some(&d)).code
        };
        let taken = Some("taken_over".to_owned());
        assert_eq!(
            code(409, r#""taken_over: connection c was taken over by another open""#),
            taken
        );
        assert_eq!(code(409, r#""taken_over""#), taken);
        assert_eq!(code(409, r#"{"message":"taken_over (generation 4, not 3)"}"#), taken);
        assert_eq!(
            code(409, r#"{"code":"closed","message":"taken_over: x"}"#).as_deref(),
            Some("closed")
        );
        for (status, detail) in [
            (409, r#""taken_over_soon""#),
            (409, r#""was taken_over""#),
            (403, r#""taken_over""#),
        ] {
            assert_eq!(code(status, detail), None, "{status} {detail}");
        }
        assert_eq!(SwitchError::http(409, r#"{"detail":"taken_over: x"}"#).code, None);
    }

    /// A body cut short (a refusal over `REFUSAL_BODY_MAX`, read no further) keeps the code
    /// written before the cut: the top-level `code`, or the `detail` object's. A `code` inside
    /// another value, or a body broken other than by its end, gives none.
    #[test]
    fn a_body_cut_short_keeps_the_code_before_the_cut() {
        let rooms = format!("[{}", r#""r","#.repeat(100));
        let code = |body: &str| SwitchError::http(409, body);
        for body in [
            format!(r#"{{"detail":"taken_over: x","code":"taken_over","rooms":{rooms}"#),
            format!(r#"{{ "code" : "taken_over", "detail":"x","rooms":{rooms}"#),
            format!(r#"{{"detail":{{"message":"m","code":"taken_over"}},"rooms":{rooms}"#),
            r#"{"rooms":{"x":[1]},"code":"taken_over","detail":"taken_o"#.to_owned(),
        ] {
            let e = code(&body);
            assert_eq!(
                (e.code.as_deref(), e.retryable),
                (Some("taken_over"), false),
                "{body:.70}"
            );
        }
        assert_eq!(
            code(r#"{"code":"no_stream","rooms":["r""#).code.as_deref(),
            Some("no_stream")
        );
        for body in [
            // Nested in another value.
            format!(r#"{{"detail":"x","rooms":[{{"code":"taken_over"}},{rooms}"#),
            format!(r#"{{"x":{{"code":"taken_over"}},"rooms":{rooms}"#),
            format!(r#"{{"detail":{{"m":{{"code":"taken_over"}},"x":{rooms}"#),
            // A detail that names it in its text: an HTTP answer's code is its body's `code`.
            format!(r#"{{"detail":"taken_over: x","rooms":{rooms}"#),
            // Cut inside the code, or the code written with an escape.
            r#"{"detail":"x","code":"taken_ov"#.to_owned(),
            format!(r#"{{"code":"taken\u005fover","rooms":{rooms}"#),
            // Broken, not cut short.
            r#"{"code":"taken_over",}"#.to_owned(),
            r#"{"code":"taken_over"} x"#.to_owned(),
        ] {
            let e = code(&body);
            assert_eq!((e.code, e.retryable), (None, true), "{body:.70}");
        }
    }

    #[test]
    fn error_bodies_detail_code_and_error() {
        // Every field: `code` at the top wins over the detail's; `detail` over `error`.
        let e = SwitchError::http(
            409,
            r#"{"detail":{"message":"taken","code":"inner"},"code":"taken_over","error":"e","x":1}"#,
        );
        assert_eq!(
            (e.message.as_str(), e.code.as_deref(), e.detail.as_deref()),
            (
                "HTTP 409: taken",
                Some("taken_over"),
                Some(r#"{"message":"taken","code":"inner"}"#)
            )
        );
        // The code of a `detail` object; `code: null` is absent.
        let e = SwitchError::http(409, r#"{"code":null,"detail":{"code":"no_stream","message":"m"}}"#);
        assert_eq!((e.code.as_deref(), e.retryable), (Some("no_stream"), true));
        // `error` when there is no `detail` (or it is null); escapes decoded in the text.
        let e = SwitchError::http(500, r#"{"detail":null,"error":"caf\u00e9"}"#);
        assert_eq!(
            (e.message.as_str(), e.detail.as_deref()),
            ("HTTP 500: café", Some(r#""caf\u00e9""#))
        );
        // A validation list is kept as JSON; it carries no code.
        let e = SwitchError::http(422, r#"{"detail":[{"loc":["body","x"],"msg":"field required"}]}"#);
        assert_eq!(e.message, r#"HTTP 422: [{"loc":["body","x"],"msg":"field required"}]"#);
        assert_eq!((e.kind, e.code), (ErrorKind::Invalid, None));
        // A detail object without a string `message` is kept as JSON; a non-string code is none.
        let e = SwitchError::http(409, r#"{"detail":{"message":7,"code":7}}"#);
        assert_eq!(e.message, r#"HTTP 409: {"message":7,"code":7}"#);
        assert_eq!(e.code, None);
    }

    #[test]
    fn error_bodies_that_are_not_read_give_the_body_as_text() {
        // As the derived reader refused them: a field of the wrong type, a field twice, not an
        // object. The message is then the body itself.
        for body in [
            r#"{"detail":"x","code":409}"#,
            r#"{"detail":"x","detail":"y"}"#,
            r#"["x"]"#,
            r#"{"detail":"x""#,
        ] {
            let e = SwitchError::http(409, body);
            assert_eq!(
                (e.message, e.code, e.detail),
                (format!("HTTP 409: {body}"), None, None),
                "{body}"
            );
        }
        let long = format!("{{\"detail\":{}", "7".repeat(600));
        let e = SwitchError::http(400, &long);
        assert!(e.message.ends_with('…') && e.message.len() < 530, "{}", e.message);
    }
}
