//! Which calls may be made again when their answer never came. A driver whose HTTP call fails
//! (the connection closed, the deadline passed) reports it through [`unanswered`], which keeps
//! `retryable` to what a caller may rely on: making the same call again is safe.

use crate::error::SwitchError;
use crate::http::{HttpRequest, Method};
use agentwire_core::Error;

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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ops::{self, PostMessage, ReadContext};
    use agentwire_core::{ErrorKind, MAY_HAVE_RUN};

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
