//! The answer to the upstream open: a stream, or a refusal translated into the current
//! generation's refusal (`refused` frame and 4000 + status) or a retryable 1011.

use super::{json_string, Bridge, Phase, Timer};
use crate::close;
use agentwire_core::text::prefix;
use agentwire_core::Millis;
use agentwire_switch::SwitchError;
use serde_json::value::RawValue;

/// Largest `detail` forwarded in a `refused` frame; a longer one is cut and sent as text.
const MAX_DETAIL_BYTES: usize = 4096;

impl Bridge {
    /// The upstream answered the stream open: its status, its `Content-Type` and, for anything
    /// but 200, its (bounded) body. `status` 0: no answer at all (connection refused, DNS, TLS).
    pub fn handle_open_response(&mut self, now: Millis, status: u16, content_type: Option<&str>, body: &str) {
        if self.phase != Phase::Opening {
            return;
        }
        match status {
            200 if content_type.is_some_and(is_event_stream) => {
                self.phase = Phase::Attaching;
                self.arm_stream_idle(now);
            }
            200 => {
                let m = format!(
                    "upstream answered 200 with {}, not an event stream",
                    content_type.unwrap_or("no content type")
                );
                self.close(1011, &m);
            }
            // The relay's own key was refused (the browser's token was verified before): a
            // retryable 1011 with the relay's reason, never 4401 (final for the browser).
            401 => self.close(close::KEY_REFUSED, close::KEY_REFUSED_REASON),
            400 | 403 | 409 | 422 => {
                let e = SwitchError::http(status, body);
                self.refuse(status, refusal_detail(status, body), &e.message);
            }
            0 => self.close(1011, "upstream unreachable"),
            _ => {
                let m = SwitchError::http(status, body).message;
                self.close(1011, &format!("upstream: {m}"));
            }
        }
    }

    pub(super) fn arm_stream_idle(&mut self, now: Millis) {
        if self.cfg.stream_idle_timeout_ms > 0 {
            self.timers
                .set(Timer::StreamIdle, now.saturating_add(self.cfg.stream_idle_timeout_ms));
        }
    }
}

/// `text/event-stream`, with any parameters, in any case.
fn is_event_stream(content_type: &str) -> bool {
    content_type
        .split(';')
        .next()
        .is_some_and(|t| t.trim().eq_ignore_ascii_case("text/event-stream"))
}

/// The `detail` of a refusal body (`{"detail": ...}`: a string, or an object such as a protocol
/// mismatch, kept as JSON); otherwise the body's text; `"HTTP <status>"` for an empty body.
fn refusal_detail(status: u16, body: &str) -> Box<RawValue> {
    if let Some(detail) = SwitchError::http(status, body).detail {
        if detail.len() <= MAX_DETAIL_BYTES {
            if let Ok(raw) = RawValue::from_string(detail) {
                return raw;
            }
        }
    }
    let text = body.trim();
    if text.is_empty() {
        return json_string(&format!("HTTP {status}"));
    }
    json_string(prefix(text, MAX_DETAIL_BYTES))
}

#[cfg(test)]
mod tests {
    use super::super::testutil::*;
    use super::super::Output;
    use super::*;

    fn answer(status: u16, ct: Option<&str>, body: &str) -> Vec<Output> {
        let mut b = opening(0);
        b.handle_open_response(5, status, ct, body);
        drain(&mut b)
    }

    fn close_code(out: &[Output]) -> u16 {
        match out.last() {
            Some(Output::Close { code, .. }) => *code,
            other => panic!("no close: {other:?}"),
        }
    }

    #[test]
    fn an_event_stream_streams() {
        let mut b = opening(0);
        b.handle_open_response(5, 200, Some("Text/Event-Stream; charset=utf-8"), "");
        assert!(drain(&mut b).is_empty());
        assert!(!b.is_closed() && !b.is_attached());
        assert_eq!(
            b.poll_timeout(),
            Some(10_000),
            "the open deadline runs until connection_state"
        );
        assert_eq!(close_code(&answer(200, Some("application/json"), "{}")), 1011);
        assert_eq!(close_code(&answer(200, None, "")), 1011);
    }

    /// The relay's key refused: 1011 (retried with backoff) with the relay's reason, no frame;
    /// never 4401, which would stop the browser for good as if its relay token were bad.
    #[test]
    fn the_relays_key_refused_closes_1011_without_a_frame() {
        let out = answer(401, Some("text/plain"), "Invalid credentials");
        assert_eq!(
            out,
            vec![Output::Close {
                code: 1011,
                reason: "the relay's key for this agent was refused".into()
            }]
        );
    }

    #[test]
    fn refusals_become_a_refused_frame_and_4000_plus_status() {
        let out = answer(
            400,
            Some("application/json"),
            r#"{"detail": "connection_id is required to open an event stream"}"#,
        );
        assert_eq!(out.len(), 2);
        assert_eq!(
            text(&out[0]),
            r#"{"event":"refused","data":{"status":400,"detail":"connection_id is required to open an event stream"}}"#
        );
        assert_eq!(close_code(&out), 4400);

        let mismatch = r#"{"detail":{"message":"the ranges do not overlap","contract":"agent-protocol","server":{"version":"0.19.0","speaks":1,"accepts":1},"client":{"speaks":7,"accepts":7},"remedy":"update switch-core"}}"#;
        let out = answer(409, Some("application/json"), mismatch);
        let v = json(&out[0]);
        assert_eq!(v["data"]["status"], 409);
        assert_eq!(v["data"]["detail"]["contract"], "agent-protocol");
        assert_eq!(close_code(&out), 4409);

        // The engine reads it as the spec's refusal: stopped, with the status and detail.
        let frame = agentwire_switch::frame::decode(text(&out[0])).unwrap();
        let agentwire_switch::frame::Frame::Refused(r) = frame else {
            panic!()
        };
        assert_eq!(r.detail_text(), "the ranges do not overlap");

        let out = answer(403, Some("text/plain"), "Room not found: r1");
        assert_eq!(json(&out[0])["data"]["detail"], "Room not found: r1");
        assert_eq!(close_code(&out), 4403);

        let fastapi = r#"{"detail":[{"type":"int_parsing","loc":["query","protocol"],"msg":"Input should be a valid integer","input":"x"}]}"#;
        let out = answer(422, Some("application/json"), fastapi);
        assert_eq!(json(&out[0])["data"]["detail"][0]["loc"][1], "protocol");
        assert_eq!(close_code(&out), 4422);

        let out = answer(409, None, "");
        assert_eq!(json(&out[0])["data"]["detail"], "HTTP 409");
        let out = answer(400, None, &"y".repeat(10_000));
        assert_eq!(
            json(&out[0])["data"]["detail"].as_str().unwrap().len(),
            MAX_DETAIL_BYTES
        );
    }

    #[test]
    fn everything_else_is_retried_with_1011() {
        for status in [0, 404, 405, 408, 429, 500, 502, 503, 301, 204] {
            let out = answer(status, None, "oops");
            assert_eq!(out.len(), 1, "{status}: {out:?}");
            assert_eq!(close_code(&out), 1011, "{status}");
        }
    }

    fn close_reason(out: &[Output]) -> &str {
        match out.last() {
            Some(Output::Close { reason, .. }) => reason,
            other => panic!("no close: {other:?}"),
        }
    }

    /// The 1011s that are not an HTTP failure say what happened, not an upstream status.
    #[test]
    fn a_200_that_is_not_a_stream_and_no_answer_close_1011_with_their_own_reason() {
        let out = answer(200, Some("application/json"), "{}");
        assert_eq!(out.len(), 1, "{out:?}");
        assert_eq!(
            close_reason(&out),
            "upstream answered 200 with application/json, not an event stream"
        );
        let out = answer(200, None, "");
        assert_eq!(
            close_reason(&out),
            "upstream answered 200 with no content type, not an event stream"
        );
        let out = answer(0, None, "");
        assert_eq!(
            out,
            vec![Output::Close {
                code: 1011,
                reason: "upstream unreachable".into()
            }]
        );
    }

    #[test]
    fn an_answer_that_never_comes_closes_1011() {
        let mut b = opening(0);
        assert_eq!(b.poll_timeout(), Some(10_000));
        b.handle_timeout(9_999);
        assert!(drain(&mut b).is_empty());
        assert!(!b.open_timed_out());
        b.handle_timeout(10_000);
        assert_eq!(close_code(&drain(&mut b)), 1011);
        assert!(b.open_timed_out(), "the Worker logs it upstream_timeout");
        // A late answer changes nothing.
        b.handle_open_response(10_001, 200, Some("text/event-stream"), "");
        assert!(drain(&mut b).is_empty());
    }

    #[test]
    fn a_stream_without_connection_state_closes_1011_at_the_open_deadline() {
        let mut b = opening(0);
        b.handle_open_response(5, 200, Some("text/event-stream"), "");
        b.handle_sse(6, b": keepalive\n\n");
        b.handle_timeout(10_000);
        assert_eq!(close_code(&drain(&mut b)), 1011);
        assert!(b.open_timed_out());
    }

    #[test]
    fn a_second_answer_is_ignored() {
        let mut b = opening(0);
        b.handle_open_response(5, 200, Some("text/event-stream"), "");
        b.handle_open_response(6, 401, None, "");
        assert!(drain(&mut b).is_empty() && !b.is_closed());
    }
}
