//! Agent registration over HTTP, sans-IO: the request a driver sends to
//! `POST /api/v1/auth/register` and the decoding of its answer. The transport (HTTP client,
//! `fetch`) is the driver's; the shapes, the name rule and the error mapping live here once.
//!
//! ```
//! use agentwire_moltzap::register::{parse_response, Registration};
//!
//! let body = Registration::new("alice-bot").description("tests").body()?;
//! assert_eq!(body, r#"{"name":"alice-bot","description":"tests"}"#);
//! let ok = parse_response(201, r#"{"agentId":"a1","apiKey":"moltzap_agent_x"}"#)?;
//! assert_eq!(ok.api_key, "moltzap_agent_x");
//! # Ok::<(), agentwire_moltzap::MoltZapError>(())
//! ```

use crate::errors::MoltZapError;
use agentwire_core::{ErrorKind, HttpRequest};
use serde::{Deserialize, Serialize};

/// The path of the registration endpoint on the server's HTTP origin.
pub const PATH: &str = "/api/v1/auth/register";

/// Bytes of a registration answer a driver reads at most.
pub const MAX_RESPONSE_BYTES: usize = 64 * 1024;

/// True when `name` is a valid agent name: `^[a-z0-9][a-z0-9_-]{1,30}[a-z0-9]$`.
pub fn valid_name(name: &str) -> bool {
    let b = name.as_bytes();
    let edge = |c: u8| c.is_ascii_lowercase() || c.is_ascii_digit();
    (3..=32).contains(&b.len())
        && edge(b[0])
        && edge(b[b.len() - 1])
        && b.iter().all(|&c| edge(c) || c == b'_' || c == b'-')
}

/// What to register.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Registration {
    pub name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub invite_code: Option<String>,
}

impl Registration {
    pub fn new(name: impl Into<String>) -> Self {
        Registration {
            name: name.into(),
            description: None,
            invite_code: None,
        }
    }

    #[must_use]
    pub fn description(mut self, description: impl Into<String>) -> Self {
        self.description = Some(description.into());
        self
    }

    #[must_use]
    pub fn invite_code(mut self, code: impl Into<String>) -> Self {
        self.invite_code = Some(code.into());
        self
    }

    /// The JSON body to POST; an invalid name is refused here, before anything is sent.
    pub fn body(&self) -> Result<String, MoltZapError> {
        if !valid_name(&self.name) {
            let m = format!(
                "invalid agent name {:?}: must match ^[a-z0-9][a-z0-9_-]{{1,30}}[a-z0-9]$",
                self.name
            );
            return Err(MoltZapError::local(ErrorKind::Invalid, m));
        }
        serde_json::to_string(self).map_err(|e| MoltZapError::local(ErrorKind::Invalid, e.to_string()))
    }

    /// `POST /api/v1/auth/register` with [`Registration::body`], for a driver to send (no key).
    pub fn request(&self) -> Result<HttpRequest, MoltZapError> {
        Ok(HttpRequest::post_json(PATH.to_owned(), self.body()?))
    }
}

/// A registered agent: its id and the agent key to connect with. `Debug` hides the key.
#[derive(Clone, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Registered {
    pub agent_id: String,
    pub api_key: String,
}

impl std::fmt::Debug for Registered {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Registered")
            .field("agent_id", &self.agent_id)
            .field("api_key", &agentwire_core::redact::Redacted)
            .finish()
    }
}

/// Characters of a refusal's text kept in the error's message.
const SAID_CHARS: usize = 200;

#[derive(Deserialize)]
struct ErrorBody {
    error: String,
}

/// What a driver reports when its registration got no answer: the transport's `error`, `sent`
/// when the request was written (or may have been). A registration is not idempotent (the
/// agent may exist, its key lost with the answer; the name is then taken), so a `closed` or
/// `timeout` after it left is not retryable ([`agentwire_core::Error::unanswered`]); one that
/// never left is, and is [`MoltZapError::unsent`].
pub fn unanswered(error: agentwire_core::Error, sent: bool) -> MoltZapError {
    MoltZapError::from(error).unanswered(!sent, false)
}

/// Decodes the answer: 200/201 with `{agentId, apiKey}`, or an error status with
/// `{"error": "..."}` (400 invalid → `invalid`; 500 "Registration failed", e.g. a taken name →
/// `remote`; anything else → `remote` naming the status). The error's code is the HTTP status.
/// Only 429 and 503 are retryable; a gateway's no-answer (502, 504, 520 to 524) is a
/// registration that may have been made, final, its message ending with
/// [`agentwire_core::MAY_HAVE_RUN`].
pub fn parse_response(status: u16, body: &str) -> Result<Registered, MoltZapError> {
    if (200..300).contains(&status) {
        let not = |why: String| {
            MoltZapError::local(
                ErrorKind::Decode,
                format!("registration answer is not {{agentId, apiKey}}: {why}"),
            )
        };
        let ok = serde_json::from_str::<Registered>(body).map_err(|e| not(e.to_string()))?;
        if ok.agent_id.is_empty() || ok.api_key.is_empty() {
            return Err(not("an empty agentId or apiKey".into()));
        }
        return Ok(ok);
    }
    // What the server said, at most SAID_CHARS characters of it, whether JSON or not.
    let said: String = match serde_json::from_str::<ErrorBody>(body) {
        Ok(b) => b.error.chars().take(SAID_CHARS).collect(),
        Err(_) => body.chars().take(SAID_CHARS).collect(),
    };
    let kind = match status {
        400 | 422 => ErrorKind::Invalid,
        401 | 403 => ErrorKind::Auth,
        429 => ErrorKind::RateLimited,
        _ => ErrorKind::Remote,
    };
    // The released server's whole answer to a taken name.
    let hint = if status == 500 && said == "Registration failed" {
        " (the name may be taken: try another)"
    } else {
        ""
    };
    // A gateway's answer that its upstream did not answer (what
    // `agentwire_switch::unanswered::gateway_status` counts): the registration left and may have
    // been made, so it is not retryable ([`unanswered`]'s rule). 429 and 503 did nothing.
    let gateway = matches!(status, 502 | 504 | 520..=524);
    let may_have_run = if gateway { agentwire_core::MAY_HAVE_RUN } else { "" };
    let mut e = MoltZapError::local(
        kind,
        format!("registration refused with HTTP {status}: {said}{hint}{may_have_run}"),
    );
    e.error = e
        .error
        .with_code(i64::from(status))
        .retryable(matches!(status, 429 | 503));
    Err(e)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_registration_sent_and_unanswered_is_final() {
        let closed = || agentwire_core::Error::new(ErrorKind::Closed, "closed before answering");
        let e = unanswered(closed(), true);
        assert_eq!(
            (e.kind(), e.error.retryable, e.unsent),
            (ErrorKind::Closed, false, false)
        );
        assert!(e.error.message.ends_with(agentwire_core::MAY_HAVE_RUN));
        let e = unanswered(closed(), false);
        assert_eq!((e.kind(), e.error.retryable, e.unsent), (ErrorKind::Closed, true, true));
        // Not a transport failure: unchanged.
        let invalid = agentwire_core::Error::new(ErrorKind::Invalid, "bad origin");
        assert_eq!(unanswered(invalid.clone(), false).error, invalid);
    }

    /// Retryable: 429 and 503 (the server said to come back; it did nothing). A gateway's answer
    /// that its upstream did not answer (502, 504, Cloudflare's 520 to 524, what
    /// `agentwire_switch::unanswered::gateway_status` counts) is an unanswered registration
    /// that left: the agent may exist, so it is final and says so. Any other status is final.
    #[test]
    fn which_statuses_are_retryable() {
        let e = |status| parse_response(status, r#"{"error":"x"}"#).unwrap_err().error;
        for status in [429, 503] {
            assert!(e(status).retryable, "{status}");
            assert!(!e(status).message.ends_with(agentwire_core::MAY_HAVE_RUN), "{status}");
        }
        for status in [502, 504, 520, 521, 522, 523, 524] {
            let e = e(status);
            assert!(!e.retryable, "{status}");
            assert_eq!(
                e.message,
                format!(
                    "registration refused with HTTP {status}: x{}",
                    agentwire_core::MAY_HAVE_RUN
                )
            );
        }
        for status in [300, 404, 409, 500, 501, 505, 511, 519, 525, 599, 600, 999] {
            let e = e(status);
            assert!(!e.retryable, "{status}");
            assert!(!e.message.ends_with(agentwire_core::MAY_HAVE_RUN), "{status}");
        }
    }

    /// 401 and 403 are `auth`, 429 `rate_limited`; the taken-name hint is for a 500 saying exactly
    /// "Registration failed", nothing else.
    #[test]
    fn refusals_have_their_kind_and_the_hint_only_for_a_taken_name() {
        let e = |status, body| parse_response(status, body).unwrap_err().error;
        for status in [401, 403] {
            assert_eq!(e(status, r#"{"error":"no"}"#).kind, ErrorKind::Auth, "{status}");
        }
        assert_eq!(e(422, r#"{"error":"no"}"#).kind, ErrorKind::Invalid);
        assert_eq!(e(429, r#"{"error":"no"}"#).kind, ErrorKind::RateLimited);
        assert_eq!(
            e(500, r#"{"error":"x"}"#).message,
            "registration refused with HTTP 500: x"
        );
        assert_eq!(
            e(400, r#"{"error":"Registration failed"}"#).message,
            "registration refused with HTTP 400: Registration failed"
        );
    }

    /// What a driver reads of an answer at most: 64 KiB (agentwire-native's
    /// `an_answer_is_read_up_to_64_kib` holds its driver to it).
    #[test]
    fn an_answer_is_read_up_to_64_kib() {
        assert_eq!(MAX_RESPONSE_BYTES, 65_536);
    }

    #[test]
    fn names_follow_the_rule() {
        for ok in ["abc", "a-b_c", "0ab", &"a".repeat(32)] {
            assert!(valid_name(ok), "{ok}");
        }
        for bad in ["ab", "-ab", "ab-", "Abc", "a b", "a.c", &"a".repeat(33), "", "ąbc"] {
            assert!(!valid_name(bad), "{bad}");
        }
        let e = Registration::new("Bad").body().unwrap_err();
        assert_eq!(e.error.kind, ErrorKind::Invalid);
        assert!(e.error.message.contains("\"Bad\""), "{}", e.error.message);
    }

    #[test]
    fn bodies_and_answers() {
        let body = Registration::new("abc").invite_code("i1").body().unwrap();
        assert_eq!(body, r#"{"name":"abc","inviteCode":"i1"}"#);
        let ok = parse_response(201, r#"{"agentId":"a","apiKey":"k","extra":1}"#).unwrap();
        assert_eq!((ok.agent_id.as_str(), ok.api_key.as_str()), ("a", "k"));
        let e = parse_response(500, r#"{"error":"Registration failed"}"#).unwrap_err();
        assert_eq!((e.error.kind, e.error.code), (ErrorKind::Remote, Some(500)));
        assert!(e
            .error
            .message
            .ends_with("Registration failed (the name may be taken: try another)"));
        let e = parse_response(400, "not json").unwrap_err();
        assert_eq!(e.error.kind, ErrorKind::Invalid);
        assert!(e.error.message.ends_with("not json"));
        assert!(parse_response(429, "").unwrap_err().error.retryable);
        assert_eq!(parse_response(200, "{}").unwrap_err().error.kind, ErrorKind::Decode);
        let e = parse_response(201, r#"{"agentId":"a","apiKey":""}"#).unwrap_err();
        assert_eq!(e.error.kind, ErrorKind::Decode);
        let long = format!(r#"{{"error":"{}"}}"#, "x".repeat(5000));
        let e = parse_response(400, &long).unwrap_err();
        assert!(e.error.message.len() < 300, "{}", e.error.message.len());
    }
}
