use serde::{Deserialize, Serialize};
use std::fmt;

/// What class of failure an [`Error`] is. Serialized in `snake_case`; every binding exposes the
/// same strings.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorKind {
    /// A frame from the peer could not be decoded (syntax, missing field, bad value).
    Decode,
    /// The peer broke the protocol (unexpected message in this state, unknown reply id, ...).
    Protocol,
    /// The peer answered with an error of its own (the code says which).
    Remote,
    /// Authentication is missing or was refused.
    Auth,
    /// The peer asked us to slow down.
    RateLimited,
    /// No common protocol version.
    Version,
    /// A request waited longer than its deadline.
    Timeout,
    /// The user cancelled the request.
    Cancelled,
    /// The connection is closed or closing.
    Closed,
    /// A configured bound was hit (size, requests in flight, buffered chunks).
    Limit,
    /// The call is not valid in the session's current state.
    State,
    /// The user passed an invalid argument or configuration.
    Invalid,
    /// A bug in agentwire (in wasm, a panic: the module is unusable after it). No input from a
    /// peer or a user should ever produce one.
    Internal,
}

impl ErrorKind {
    /// Every kind, in declaration order: what bindings check their own lists against.
    pub const ALL: [ErrorKind; 13] = [
        ErrorKind::Decode,
        ErrorKind::Protocol,
        ErrorKind::Remote,
        ErrorKind::Auth,
        ErrorKind::RateLimited,
        ErrorKind::Version,
        ErrorKind::Timeout,
        ErrorKind::Cancelled,
        ErrorKind::Closed,
        ErrorKind::Limit,
        ErrorKind::State,
        ErrorKind::Invalid,
        ErrorKind::Internal,
    ];

    /// The serialized name of this kind.
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorKind::Decode => "decode",
            ErrorKind::Protocol => "protocol",
            ErrorKind::Remote => "remote",
            ErrorKind::Auth => "auth",
            ErrorKind::RateLimited => "rate_limited",
            ErrorKind::Version => "version",
            ErrorKind::Timeout => "timeout",
            ErrorKind::Cancelled => "cancelled",
            ErrorKind::Closed => "closed",
            ErrorKind::Limit => "limit",
            ErrorKind::State => "state",
            ErrorKind::Invalid => "invalid",
            ErrorKind::Internal => "internal",
        }
    }
}

/// What [`Error::unanswered`] adds to the message of a command that was sent, is not
/// idempotent, and got no answer.
pub const MAY_HAVE_RUN: &str = " (it was sent: the server may have carried it out, so making it again may do it twice)";

/// The one error shape of every engine: `{kind, code?, message, retryable}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Error {
    pub kind: ErrorKind,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code: Option<i64>,
    pub message: String,
    pub retryable: bool,
}

impl Error {
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        let retryable = matches!(kind, ErrorKind::RateLimited | ErrorKind::Timeout | ErrorKind::Closed);
        Error {
            kind,
            code: None,
            message: message.into(),
            retryable,
        }
    }

    /// What a WebSocket upgrade of `url` (quoted without credentials, [`crate::redact::url`])
    /// refused with HTTP `status` (and `body`, quoted up to [`crate::text::QUOTE_MAX`]) means to a
    /// client, the same on every surface: 401 and 403 a credential (`auth`), 408 `timeout`, 429
    /// `rate_limited`, 5xx the server's trouble (`remote`, retryable), anything else not the
    /// endpoint it should be (`protocol`). `code` is the status. (Switch decides its own in its
    /// engine: its open carries the key, and its statuses say more.)
    pub fn refused_upgrade(url: &str, status: u16, body: &str) -> Self {
        let message = format!(
            "{} refused the WebSocket upgrade with HTTP {status}: {}",
            crate::redact::url(url),
            crate::text::clip(body.trim(), crate::text::QUOTE_MAX)
        );
        let kind = match status {
            401 | 403 => ErrorKind::Auth,
            408 => ErrorKind::Timeout,
            429 => ErrorKind::RateLimited,
            500..=599 => ErrorKind::Remote,
            _ => ErrorKind::Protocol,
        };
        let e = Error::new(kind, message).with_code(i64::from(status));
        match kind {
            ErrorKind::Remote => e.retryable(true),
            _ => e,
        }
    }

    /// What a command that ended by `closed` or `timeout` before its answer is told, the same
    /// in every engine. Retryable as those kinds are when its frame or request never left
    /// (`sent` false: the server cannot have acted on it) or when its protocol makes doing it
    /// twice the same as doing it once (`idempotent`: a read, a ping, a set to a value). Sent
    /// and not idempotent, it is not retryable and its message says the server may have carried
    /// it out ([`MAY_HAVE_RUN`]): the same call made again could do it twice. Any other kind, and
    /// an error already not retryable, is returned unchanged.
    #[must_use]
    pub fn unanswered(mut self, sent: bool, idempotent: bool) -> Self {
        if sent && !idempotent && self.retryable && matches!(self.kind, ErrorKind::Closed | ErrorKind::Timeout) {
            self.retryable = false;
            self.message.push_str(MAY_HAVE_RUN);
        }
        self
    }

    #[must_use]
    pub fn with_code(mut self, code: i64) -> Self {
        self.code = Some(code);
        self
    }

    #[must_use]
    pub fn retryable(mut self, retryable: bool) -> Self {
        self.retryable = retryable;
        self
    }

    /// The error as JSON text, what its `Serialize` writes (`code` left out when absent),
    /// written by hand: bindings hand it to their hosts without serde_json's serializer.
    pub fn to_json_string(&self) -> String {
        let mut out = String::with_capacity(48 + self.message.len());
        let mut o = crate::json::write::Obj::begin(&mut out);
        o.str("kind", self.kind.as_str());
        if let Some(code) = self.code {
            o.i64("code", code);
        }
        o.str("message", &self.message);
        o.bool("retryable", self.retryable);
        o.end();
        out
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.code {
            Some(code) => write!(f, "{} {}: {}", self.kind.as_str(), code, self.message),
            None => write!(f, "{}: {}", self.kind.as_str(), self.message),
        }
    }
}

impl std::error::Error for Error {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refused_upgrade_means_the_same_everywhere() {
        for (status, kind, retryable) in [
            (401, ErrorKind::Auth, false),
            (403, ErrorKind::Auth, false),
            (404, ErrorKind::Protocol, false),
            (426, ErrorKind::Protocol, false),
            (408, ErrorKind::Timeout, true),
            (429, ErrorKind::RateLimited, true),
            (502, ErrorKind::Remote, true),
            (503, ErrorKind::Remote, true),
        ] {
            // A credential in the URL is not quoted.
            let e = Error::refused_upgrade("ws://u:KEY@h/p?token=SECRET", status, " no \n");
            assert_eq!(
                e.message,
                format!("ws://h/p refused the WebSocket upgrade with HTTP {status}: no")
            );
            assert_eq!(
                (e.kind, e.retryable, e.code),
                (kind, retryable, Some(i64::from(status))),
                "{status}"
            );
        }
    }

    /// The body is quoted up to the bound every message keeps to, however much a driver read.
    #[test]
    fn a_refused_upgrade_quotes_the_start_of_a_long_body() {
        let body = "é".repeat(4096);
        let e = Error::refused_upgrade("ws://h/p", 502, &body);
        let quoted = e
            .message
            .strip_prefix("ws://h/p refused the WebSocket upgrade with HTTP 502: ")
            .unwrap();
        assert_eq!(quoted, format!("{}…", "é".repeat(crate::text::QUOTE_MAX / 2)));
    }

    /// Only a command that left, is not idempotent and ended `closed` or `timeout` stops being
    /// retryable; one that never left, or that is safe to repeat, keeps what its kind says.
    #[test]
    fn an_unanswered_command_is_retryable_only_when_repeating_it_is_safe() {
        for kind in [ErrorKind::Closed, ErrorKind::Timeout] {
            let e = || Error::new(kind, "no answer");
            let sent = e().unanswered(true, false);
            assert!(!sent.retryable, "{kind:?}");
            assert_eq!(sent.message, format!("no answer{MAY_HAVE_RUN}"));
            assert_eq!(e().unanswered(false, false), e());
            assert_eq!(e().unanswered(true, true), e());
            assert!(e().unanswered(false, false).retryable);
        }
        // Other kinds, and an error already final, are left as they are.
        for e in [
            Error::new(ErrorKind::Cancelled, "c"),
            Error::new(ErrorKind::RateLimited, "r"),
            Error::new(ErrorKind::Closed, "taken over").retryable(false),
        ] {
            assert_eq!(e.clone().unanswered(true, false), e);
        }
    }

    #[test]
    fn serializes_to_the_shared_shape() {
        let e = Error::new(ErrorKind::RateLimited, "slow down").with_code(429);
        let v = serde_json::to_value(&e).unwrap();
        assert_eq!(
            v,
            serde_json::json!({"kind":"rate_limited","code":429,"message":"slow down","retryable":true})
        );
        let e = Error::new(ErrorKind::Decode, "bad");
        assert_eq!(
            serde_json::to_string(&e).unwrap(),
            r#"{"kind":"decode","message":"bad","retryable":false}"#
        );
        assert_eq!(e.to_string(), "decode: bad");
    }

    #[test]
    fn json_text_is_what_serde_writes() {
        for e in [
            Error::new(ErrorKind::RateLimited, "slow \"down\"\n").with_code(429),
            Error::new(ErrorKind::Decode, "").with_code(i64::MIN),
            Error::new(ErrorKind::Internal, "é \u{1}").retryable(true),
        ] {
            assert_eq!(e.to_json_string(), serde_json::to_string(&e).unwrap());
        }
    }

    #[test]
    fn kind_names_match_serde() {
        for k in ErrorKind::ALL {
            assert_eq!(serde_json::to_value(k).unwrap(), k.as_str());
        }
    }
}
