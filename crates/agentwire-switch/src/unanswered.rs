//! Which calls may be made again when their answer never came. A driver whose HTTP call fails
//! (the connection closed, the deadline passed) reports it through [`unanswered`], and the error
//! a decoder gives an answer through [`answered`] (a gateway's 502 or 504 without a `code` says
//! the server's answer never came too), which keep `retryable` to what a caller may rely on:
//! making the same call again is safe.

use crate::error::SwitchError;
use crate::http::{HttpRequest, Method};
use agentwire_core::{Error, ErrorKind, MAY_HAVE_RUN};

/// Operations that only read, or whose effect is the same done twice, from the released server's
/// catalogue (`GET ops`): `connect_to_room` always takes the room over and `release_role` is
/// idempotent by its description. Every other operation (a post, a task step, a create, an
/// edit, one this list does not know) may act twice.
pub const IDEMPOTENT_OPS: [&str; 19] = [
    "connect_to_room",
    "get_agent_detail",
    "get_role_detail",
    "get_room_detail",
    "get_room_group_detail",
    "list_agents",
    "list_all_rooms",
    "list_bridges",
    "list_linked_rooms",
    "list_participants",
    "list_reference_types",
    "list_references",
    "list_roles",
    "list_room_groups",
    "list_rooms",
    "list_tasks",
    "load_internal_documents",
    "read_context",
    "release_role",
];

/// Whether sending `request` twice is the same as sending it once: a `GET`; an operation of
/// [`IDEMPOTENT_OPS`]; a connection's `subscribe`, `unsubscribe`, `placements` (each sets the
/// connection's claims) or `beat`. Anything else, the legacy `POST message` included, is not.
pub fn idempotent(request: &HttpRequest) -> bool {
    if request.method == Method::Get {
        return true;
    }
    let path = request.path.split('?').next().unwrap_or_default();
    let mut tail = path.rsplit('/');
    match (tail.next(), tail.next()) {
        (Some(name), Some("ops")) => IDEMPOTENT_OPS.contains(&name),
        (Some(route), Some("connection")) => matches!(route, "subscribe" | "unsubscribe" | "placements" | "beat"),
        _ => false,
    }
}

/// The error a driver reports when `request` got no answer: its transport's `error`, and `sent`
/// when the request was written, or may have been. A `closed` or `timeout` of a request sent
/// that is not [`idempotent`] is not retryable, its message saying the server may have carried
/// it out ([`Error::unanswered`]); one never sent, or idempotent, keeps what its kind says.
pub fn unanswered(request: &HttpRequest, error: Error, sent: bool) -> SwitchError {
    error.unanswered(sent, idempotent(request)).into()
}

/// Whether `status` is what a gateway (the relay, a reverse proxy, a CDN) answers when its
/// upstream did not answer: 502 (unreachable, or the connection lost), 504 (no answer in time),
/// Cloudflare's 520 to 524. The upstream may have read the request and acted on it, unless the
/// answer says otherwise with a `code` ([`gateway`]).
pub fn gateway_status(status: u16) -> bool {
    matches!(status, 502 | 504 | 520..=524)
}

/// The error a decoder ([`crate::ops::decode_result`], [`crate::ops::decode`], ...) gave the
/// answer to `request`, as a caller may rely on it: [`gateway`] with whether `request` is
/// [`idempotent`]. Every driver passes its decoder's error through this.
pub fn answered(request: &HttpRequest, error: SwitchError) -> SwitchError {
    gateway(error, idempotent(request))
}

/// A gateway's answer that the server did not answer ([`gateway_status`], kind `remote`, no
/// `code`) is an unanswered call: to a request that is not `idempotent` it is not retryable, its
/// message saying the server may have carried it out ([`MAY_HAVE_RUN`]); its kind and status are
/// kept. Any other error, and one of an idempotent request, is returned unchanged. A gateway
/// status whose body carries a `code` is an answer: a gateway that got none has no code to give
/// (the relay's own 502 and 504 for an unreachable or late upstream carry none, a CDN's page is
/// HTML), while the relay gives one when its upstream did answer and it answers in its place
/// (`relay_key_refused`: the upstream refused the relay's key and carried nothing out).
pub fn gateway(mut error: SwitchError, idempotent: bool) -> SwitchError {
    let from_gateway =
        error.kind == ErrorKind::Remote && error.status.is_some_and(gateway_status) && error.code.is_none();
    if from_gateway && !idempotent && error.retryable {
        error.retryable = false;
        error.message.push_str(MAY_HAVE_RUN);
    }
    error
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ops::{self, PostMessage, ReadContext};

    const CID: &str = "0f8fad5b-d9cb-469f-a165-70867728950e";

    fn closed() -> Error {
        Error::new(ErrorKind::Closed, "closed the connection before answering")
    }

    /// Before, every transport failure was retryable: a post cut after it reached the server
    /// was posted again by the retry.
    #[test]
    fn a_post_sent_and_unanswered_is_final() {
        let post = ops::request("a", Some(CID), &PostMessage::new("order 1")).unwrap();
        let e = unanswered(&post, closed(), true);
        assert_eq!((e.kind, e.retryable), (ErrorKind::Closed, false));
        assert!(e.message.ends_with(MAY_HAVE_RUN), "{}", e.message);
        let timeout = Error::new(ErrorKind::Timeout, "no answer");
        assert!(!unanswered(&post, timeout, true).retryable);
        // Never written (refused, unreachable): retryable.
        let e = unanswered(&post, closed(), false);
        assert_eq!((e.kind, e.retryable), (ErrorKind::Closed, true));
        assert!(!e.message.contains(MAY_HAVE_RUN));
    }

    #[test]
    fn reads_and_claims_sent_and_unanswered_stay_retryable() {
        let read = ops::request("a", Some(CID), &ReadContext::default()).unwrap();
        let safe = [
            read,
            ops::op("a", Some(CID), "connect_to_room", r#"{"room_id":"r"}"#).unwrap(),
            ops::list_ops("a").unwrap(),
            ops::subscribe("a", CID, "r", true).unwrap(),
            ops::unsubscribe("a", CID, "r").unwrap(),
            ops::beat("a", CID, 3).unwrap(),
        ];
        for request in &safe {
            assert!(idempotent(request), "{}", request.path);
            assert!(unanswered(request, closed(), true).retryable, "{}", request.path);
        }
        for name in [
            "post_message",
            "send_targeted_message",
            "create_room",
            "delegate_task",
            "list_rooms_and_post",
        ] {
            let request = ops::op("a", Some(CID), name, "{}").unwrap();
            assert!(!idempotent(&request), "{name}");
        }
    }

    /// Before, every 5xx was retryable: a post whose answer the relay (or nginx, Cloudflare)
    /// replaced with a 502 or 504 after the server got it was posted again by the retry.
    #[test]
    fn a_post_answered_by_a_gateway_is_final() {
        let post = ops::request("a", Some(CID), &PostMessage::new("order 1")).unwrap();
        let body = r#"{"detail":"the upstream did not answer in time"}"#;
        for status in [502, 504, 520, 521, 522, 523, 524] {
            let e = ops::decode::<PostMessage>(status, body)
                .map_err(|e| answered(&post, e))
                .unwrap_err();
            assert_eq!(
                (e.kind, e.status, e.retryable),
                (ErrorKind::Remote, Some(status), false),
                "{status}"
            );
            assert!(
                e.message.starts_with(&format!("HTTP {status}: the upstream")),
                "{}",
                e.message
            );
            assert!(e.message.ends_with(MAY_HAVE_RUN), "{}", e.message);
        }
        // A server's own 500 or 503, a 525 or a 501: the server answered, retryable as before.
        for status in [500, 501, 503, 525] {
            let e = answered(&post, SwitchError::http(status, ""));
            assert!(e.retryable && !e.message.contains(MAY_HAVE_RUN), "{status}");
        }
        // An idempotent call through the gateway stays retryable.
        let read = ops::request("a", Some(CID), &ReadContext::default()).unwrap();
        for request in [read, ops::beat("a", CID, 3).unwrap(), ops::list_ops("a").unwrap()] {
            let e = answered(&request, SwitchError::http(502, ""));
            assert_eq!(
                (e.kind, e.retryable, e.message.as_str()),
                (ErrorKind::Remote, true, "HTTP 502")
            );
        }
        // Not a gateway's answer: unchanged.
        let limit = SwitchError::local(ErrorKind::Limit, "too large").with_status(502);
        assert_eq!(answered(&post, limit.clone()), limit);
        let raw = ops::op("a", Some(CID), "post_message", r#"{"body":"x"}"#).unwrap();
        let e = ops::decode_result(504, "").map_err(|e| answered(&raw, e)).unwrap_err();
        assert_eq!((e.status, e.retryable), (Some(504), false));
    }

    /// A gateway's answer with a `code` in its body is one its upstream gave: the relay's
    /// "relay_key_refused" (the upstream refused the relay's key: nothing was carried out) is a
    /// retryable remote error, not one that may have run. Before, every 502 to a post was taken
    /// for no answer: a refused post was reported as possibly posted, and never sent again.
    #[test]
    fn a_gateway_answer_with_a_code_is_an_answer() {
        let post = ops::request("a", Some(CID), &PostMessage::new("order 1")).unwrap();
        for (status, body, code) in [
            (
                502,
                r#"{"code":"relay_key_refused","detail":"the relay's key for this agent was refused","error":"upstream"}"#,
                "relay_key_refused",
            ),
            (504, r#"{"detail":{"code":"some_code"}}"#, "some_code"),
        ] {
            let e = ops::decode::<PostMessage>(status, body)
                .map_err(|e| answered(&post, e))
                .unwrap_err();
            assert_eq!(
                (e.kind, e.status, e.code.as_deref(), e.retryable),
                (ErrorKind::Remote, Some(status), Some(code), true),
                "{body}"
            );
            assert!(!e.message.contains(MAY_HAVE_RUN), "{}", e.message);
        }
        // Without one (the relay's own 502 for an unreachable upstream, a CDN's HTML page): no
        // answer, as before.
        for body in [
            r#"{"detail":"the upstream could not be reached","error":"upstream"}"#,
            "<html>502 Bad Gateway</html>",
            r#"{"code":null,"detail":"x"}"#,
        ] {
            let e = answered(&post, SwitchError::http(502, body));
            assert!(!e.retryable && e.message.ends_with(MAY_HAVE_RUN), "{body}: {e:?}");
        }
    }

    /// Every name on the list is an operation the released server offers.
    #[test]
    fn the_idempotent_ops_are_in_the_catalogue() {
        let text = include_str!("../../../tests/vectors/switch-0.19/ops.json");
        let catalog = ops::decode_ops(200, text).unwrap();
        for name in IDEMPOTENT_OPS {
            assert!(catalog.operations.contains_key(name), "{name}");
        }
    }
}
