//! How the endpoint's posts and records map onto MoltZap messages (`docs/protocols/moltzap-harness.md`,
//! "Transport mapping"): the `messages/send` params of a post, a received or returned message
//! read as a record, its record hash, and a MoltZap failure as a `SendError` reason.

use crate::codes;
use crate::errors::MoltZapError;
use crate::harness::collective::RecordHash;
use crate::harness::content::{Content, MAX_CONTENT_BYTES};
use crate::harness::errors::{SendError, SendErrorReason};
use crate::harness::id::PostId;
use crate::harness::json::{JsonObject, JsonValue};
use crate::harness::{canonical::to_canonical, content::Part};
use agentwire_core::{base64url, ErrorKind};
use sha2::{Digest, Sha256};

/// One message as the endpoint reads it: a certified record.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Record {
    pub id: String,
    pub conversation_id: String,
    pub sender_id: String,
    /// The post's identity: its `postId` when it carries one, else its message id.
    pub post_id: PostId,
    /// The parts as certified (the value the record hash covers), kept as their canonical
    /// text: a parsed tree takes many times the text, and records wait in queues. Empty when
    /// that text is over [`MAX_CONTENT_BYTES`] (no content can be read from them).
    parts: String,
    /// The byte length of the parts' canonical text.
    parts_len: usize,
    pub hash: RecordHash,
    /// The server's `createdAt` (ISO 8601), when it is a string of at most
    /// [`MAX_CREATED_AT_BYTES`]: a released recovery picks the conversations active since the
    /// newest one seen.
    pub created_at: Option<String>,
}

/// The longest `createdAt` kept (servers send 24 bytes: `2026-12-02T12:36:49.853Z`).
pub(super) const MAX_CREATED_AT_BYTES: usize = 64;

/// The longest message, conversation or sender id a record may have. Ids are kept (the records
/// seen, the queues, the conversation cache, thousands of each), so their length is bounded as
/// a post id's is; servers send UUIDs.
pub const MAX_RECORD_ID_BYTES: usize = 256;

fn text_field<'a>(o: &'a JsonObject, key: &str) -> Result<&'a str, String> {
    match o.get(key) {
        Some(JsonValue::String(s)) if s.len() > MAX_RECORD_ID_BYTES => {
            Err(format!("message.{key} is over {MAX_RECORD_ID_BYTES} bytes"))
        }
        Some(JsonValue::String(s)) if !s.is_empty() => Ok(s),
        Some(_) => Err(format!("message.{key} is not a non-empty string")),
        None => Err(format!("message.{key} is missing")),
    }
}

impl Record {
    /// Reads `{"message": Message}` (a `messages/received` payload or a `messages/send` result).
    pub fn from_wrapped(text: &str) -> Result<Record, String> {
        let value = JsonValue::parse(text).map_err(|e| format!("not JSON: {e}"))?;
        match &value {
            JsonValue::Object(o) => match o.get("message") {
                Some(m) => Record::from_message(m),
                None => Err("no message".to_owned()),
            },
            _ => Err("not an object".to_owned()),
        }
    }

    /// Reads a bare Message.
    pub fn from_message(m: &JsonValue) -> Result<Record, String> {
        let JsonValue::Object(o) = m else {
            return Err("message is not an object".to_owned());
        };
        let id = text_field(o, "id")?.to_owned();
        let conversation_id = text_field(o, "conversationId")?.to_owned();
        let sender_id = text_field(o, "senderId")?.to_owned();
        let parts = match o.get("parts") {
            Some(p @ JsonValue::Array(_)) => p,
            _ => return Err("message.parts is not an array".to_owned()),
        };
        let post_id = match o.get("postId") {
            Some(JsonValue::String(p)) => PostId::parse(p).ok_or("message.postId is not a post id")?,
            Some(JsonValue::Null) | None => PostId::parse(&id).ok_or("message.id is not usable as a post id")?,
            Some(_) => return Err("message.postId is not a string".to_owned()),
        };
        // One canonical text serves the hash and the record (the parts may be megabytes).
        let mut parts = to_canonical(parts);
        let hash = hash_covering(&conversation_id, &id, &sender_id, &parts);
        let parts_len = parts.len();
        if parts_len > MAX_CONTENT_BYTES {
            parts = String::new();
        }
        let created_at = match o.get("createdAt") {
            Some(JsonValue::String(t)) if !t.is_empty() && t.len() <= MAX_CREATED_AT_BYTES => Some(t.clone()),
            _ => None,
        };
        Ok(Record {
            id,
            conversation_id,
            sender_id,
            post_id,
            parts,
            parts_len,
            hash,
            created_at,
        })
    }

    /// The parts as harness `Content`; a record with other parts (`image`, `file`), none, or
    /// over the limit is not one an endpoint can read.
    pub fn content(&self) -> Result<Content, String> {
        // A content's encoding is its parts' canonical text (a part has no other key), so parts
        // over the limit are no content.
        if self.parts_len > MAX_CONTENT_BYTES {
            return Err(format!(
                "content is not harness content: the parts take {} bytes, over the {MAX_CONTENT_BYTES}-byte limit",
                self.parts_len
            ));
        }
        let parts = JsonValue::parse(&self.parts).map_err(|e| format!("content is not harness content: {e}"))?;
        Content::from_json(&parts).map_err(|issues| {
            let named: Vec<String> = issues.iter().map(ToString::to_string).collect();
            format!("content is not harness content: {}", named.join("; "))
        })
    }
}

/// [`hash_covering`] from the parts' tree (tests).
#[cfg(test)]
pub(super) fn record_hash(conversation_id: &str, id: &str, sender_id: &str, parts: &JsonValue) -> RecordHash {
    hash_covering(conversation_id, id, sender_id, &to_canonical(parts))
}

/// `rh_` + base64url(SHA-256(RFC 8785 of `{conversationId, id, senderId, parts}`)), from the
/// parts' canonical text (written once for the record, and neither their tree nor their text
/// copied for the hash).
fn hash_covering(conversation_id: &str, id: &str, sender_id: &str, canonical_parts: &str) -> RecordHash {
    let (before, after) = around_parts(conversation_id, id, sender_id);
    let mut sha = Sha256::new();
    sha.update(before.as_bytes());
    sha.update(canonical_parts.as_bytes());
    sha.update(after.as_bytes());
    // 3 + 43 base64url characters: within `RecordHash`'s rule.
    RecordHash::from_checked(format!("rh_{}", base64url::encode(&sha.finalize())))
}

/// The canonical text of `{conversationId, id, parts, senderId}` (the members in RFC 8785's
/// order) before and after the parts' canonical text.
fn around_parts(conversation_id: &str, id: &str, sender_id: &str) -> (String, String) {
    use agentwire_core::json::push_string;
    let mut before = String::from("{\"conversationId\":");
    push_string(&mut before, conversation_id);
    before.push_str(",\"id\":");
    push_string(&mut before, id);
    before.push_str(",\"parts\":");
    let mut after = String::from(",\"senderId\":");
    push_string(&mut after, sender_id);
    after.push('}');
    (before, after)
}

/// The `messages/send` params of a post: `{to, parts, postId}` in the current generation;
/// `{to, parts}` with the text parts only in the released one, which has no data parts.
pub(super) fn send_params(to: &str, content: &Content, post_id: &PostId, released: bool) -> String {
    let parts: Vec<JsonValue> = content
        .parts()
        .iter()
        .filter(|p| !released || matches!(p, Part::Text(_)))
        .map(Part::to_json)
        .collect();
    let mut o = JsonObject::new();
    o.insert("to".to_owned(), to.into());
    o.insert("parts".to_owned(), JsonValue::Array(parts));
    if !released {
        o.insert("postId".to_owned(), post_id.as_str().into());
    }
    to_canonical(&JsonValue::Object(o))
}

/// A failed `messages/send` as the spec's reason: a timeout or a close after sending is
/// `outcome-unknown`; a request that could not be sent, or ended before its frame left
/// ([`MoltZapError::unsent`]), is `network-unavailable` (the daemon cannot have acted on it). The
/// row the error names decides ([`codes::of_error`], as for the error's kind): a `_tag`'s
/// (current generation) when it has one, else its numeric code's; any other server error (an
/// unknown tag, whatever its code, or an unknown code) is `certification-unavailable`.
pub(super) fn send_failure(err: &MoltZapError, to: &str) -> SendError {
    let row = codes::of_error(err.code(), err.tag.as_deref()).map(|row| row.code);
    let reason = match (row, err.code(), err.kind()) {
        (Some(codes::NOT_FOUND | codes::AGENT_NOT_FOUND), ..) => SendErrorReason::UnknownAgent,
        (Some(codes::CONVERSATION_FULL | codes::MAX_PARTICIPANTS), ..) => SendErrorReason::MembershipInvalid,
        (Some(codes::UNAUTHORIZED), ..) => SendErrorReason::NotRegistered,
        (Some(codes::PROTOCOL_MISMATCH), ..) | (.., ErrorKind::Version) => SendErrorReason::VersionMismatch,
        (Some(codes::INVALID_PARAMS), ..) => SendErrorReason::ContentInvalid,
        (Some(_), ..) | (None, Some(_), _) => SendErrorReason::CertificationUnavailable,
        (None, None, _) if err.unsent => SendErrorReason::NetworkUnavailable,
        (None, None, ErrorKind::Timeout | ErrorKind::Closed | ErrorKind::Cancelled) => SendErrorReason::OutcomeUnknown,
        (None, None, ErrorKind::Limit | ErrorKind::State) => SendErrorReason::NetworkUnavailable,
        (None, None, _) => SendErrorReason::OutcomeUnknown,
    };
    let cause = match reason {
        SendErrorReason::UnknownAgent => format!("{to} is not a known agent"),
        SendErrorReason::OutcomeUnknown => format!("the message to {to} may have been sent ({})", err.error.message),
        _ => format!("{to} was not reached ({})", err.error.message),
    };
    SendError::new(reason, cause)
}

#[cfg(test)]
mod tests {
    use super::*;

    const MSG: &str = r#"{"message":{"id":"m1","conversationId":"c1","senderId":"a1","postId":"p-1","parts":[{"type":"text","text":"hi"},{"type":"data","value":{"org.social-harness/collective":{"kind":"operation","op":"multicast"}}}],"createdAt":"2026-12-03T00:00:00Z"}}"#;

    #[test]
    fn a_record_reads_its_post_id_parts_and_hash() {
        let r = Record::from_wrapped(MSG).unwrap();
        assert_eq!(r.post_id.as_str(), "p-1");
        assert_eq!(r.content().unwrap().parts().len(), 2);
        assert!(r.hash.as_str().starts_with("rh_") && r.hash.as_str().len() == 46);
        // The hash covers exactly the four fields: createdAt does not change it.
        let later = MSG.replace("2026-12-03T00:00:00Z", "2027-01-01T00:00:00Z");
        assert_eq!(Record::from_wrapped(&later).unwrap().hash, r.hash);
        let other = MSG.replace("\"hi\"", "\"ho\"");
        assert_ne!(Record::from_wrapped(&other).unwrap().hash, r.hash);
        let no_post = MSG.replace(r#""postId":"p-1","#, "");
        assert_eq!(Record::from_wrapped(&no_post).unwrap().post_id.as_str(), "m1");
    }

    #[test]
    fn the_covered_text_is_the_canonical_object() {
        let parts = JsonValue::parse(
            r#"[{"type":"text","text":"h\u00e9 \"q\"\n"},{"type":"data","value":{"b":1e21,"a":[0.5,-0]}}]"#,
        )
        .unwrap();
        for (c, i, s) in [("c1", "m1", "a1"), ("c\"\u{1}", "é😀", "\\")] {
            let covered = JsonValue::object([
                ("conversationId", c.into()),
                ("id", i.into()),
                ("senderId", s.into()),
                ("parts", parts.clone()),
            ]);
            let (before, after) = around_parts(c, i, s);
            assert_eq!(before + &to_canonical(&parts) + &after, to_canonical(&covered));
        }
    }

    #[test]
    fn a_record_with_an_id_too_long_to_keep_is_unreadable() {
        let at_most = "x".repeat(MAX_RECORD_ID_BYTES);
        let over = "x".repeat(MAX_RECORD_ID_BYTES + 1);
        for (key, value) in [("conversationId", "c1"), ("senderId", "a1")] {
            let field = format!(r#""{key}":"{value}""#);
            let kept = MSG.replace(&field, &format!(r#""{key}":"{at_most}""#));
            assert!(Record::from_wrapped(&kept).is_ok(), "{key}");
            let why = Record::from_wrapped(&MSG.replace(&field, &format!(r#""{key}":"{over}""#))).unwrap_err();
            assert_eq!(why, format!("message.{key} is over 256 bytes"));
        }
        let why = Record::from_wrapped(&MSG.replace(r#""id":"m1""#, &format!(r#""id":"{over}""#))).unwrap_err();
        assert_eq!(why, "message.id is over 256 bytes");
    }

    #[test]
    fn a_record_keeps_its_parts_as_text_and_none_over_the_limit() {
        let r = Record::from_wrapped(MSG).unwrap();
        assert_eq!(
            r.parts,
            r#"[{"text":"hi","type":"text"},{"type":"data","value":{"org.social-harness/collective":{"kind":"operation","op":"multicast"}}}]"#
        );
        let text = "a".repeat(MAX_CONTENT_BYTES);
        let over = MSG.replace(r#""text":"hi""#, &format!(r#""text":"{text}""#));
        let r = Record::from_wrapped(&over).unwrap();
        assert!(r.parts.is_empty() && r.parts_len > MAX_CONTENT_BYTES);
        let why = r.content().unwrap_err();
        assert!(why.ends_with("over the 32768-byte limit"), "{why}");
        // The hash still covers the parts as received.
        let v = JsonValue::parse(&over).unwrap();
        let parts = v.as_object().unwrap()["message"].as_object().unwrap()["parts"].clone();
        assert_eq!(r.hash, record_hash("c1", "m1", "a1", &parts));
    }

    #[test]
    fn records_that_are_not_messages_are_named() {
        for bad in [
            "",
            "{}",
            r#"{"message":1}"#,
            r#"{"message":{"id":"m","conversationId":"c","senderId":"s","parts":{}}}"#,
        ] {
            assert!(Record::from_wrapped(bad).is_err(), "{bad}");
        }
        let image = MSG.replace(r#"{"type":"text","text":"hi"}"#, r#"{"type":"image","url":"u"}"#);
        assert!(Record::from_wrapped(&image).unwrap().content().is_err());
    }

    #[test]
    fn send_params_carry_the_post_id_and_drop_data_parts_for_released_servers() {
        let c = crate::harness::collective::multicast_content("hi").unwrap();
        let p = PostId::parse("p-1").unwrap();
        let cur = send_params("agent:bob", &c, &p, false);
        assert_eq!(
            cur,
            r#"{"parts":[{"text":"hi","type":"text"},{"type":"data","value":{"org.social-harness/collective":{"kind":"operation","op":"multicast"}}}],"postId":"p-1","to":"agent:bob"}"#
        );
        assert_eq!(
            send_params("agent:bob", &c, &p, true),
            r#"{"parts":[{"text":"hi","type":"text"}],"to":"agent:bob"}"#
        );
    }

    #[test]
    fn moltzap_failures_map_to_send_reasons() {
        use crate::frame::RpcError;
        let remote = |code: i64| MoltZapError::remote(&RpcError::new(code, "m"), None);
        assert_eq!(
            send_failure(&remote(-32002), "agent:dana").to_string(),
            "send failed: agent:dana is not a known agent"
        );
        assert_eq!(
            send_failure(&remote(-32603), "agent:x").reason,
            SendErrorReason::CertificationUnavailable
        );
        assert_eq!(
            send_failure(&remote(-32000), "agent:x").reason,
            SendErrorReason::NotRegistered
        );
        let closed = MoltZapError::local(ErrorKind::Closed, "closed");
        assert_eq!(send_failure(&closed, "agent:x").reason, SendErrorReason::OutcomeUnknown);
        // Ended before its frame left: the daemon cannot have acted on it.
        for kind in [ErrorKind::Closed, ErrorKind::Timeout, ErrorKind::Cancelled] {
            let unsent = MoltZapError::local(kind, "m").unsent(true);
            assert_eq!(
                send_failure(&unsent, "agent:x").reason,
                SendErrorReason::NetworkUnavailable
            );
        }
        let full = MoltZapError::local(ErrorKind::Limit, "too many");
        assert_eq!(
            send_failure(&full, "agent:x").reason,
            SendErrorReason::NetworkUnavailable
        );
        // A current server's `_tag` decides before its code.
        let tagged = |code: i64, tag: &str| {
            let mut e = RpcError::new(code, "m");
            e.tag = Some(tag.to_owned());
            MoltZapError::remote(&e, None)
        };
        assert_eq!(
            send_failure(&tagged(-32000, "AgentNotFound"), "agent:x").reason,
            SendErrorReason::UnknownAgent
        );
        assert_eq!(
            send_failure(&tagged(-1, "ConversationFullError"), "agent:x").reason,
            SendErrorReason::MembershipInvalid
        );
        assert_eq!(
            send_failure(&tagged(-32000, "SomethingNew"), "agent:x").reason,
            SendErrorReason::CertificationUnavailable,
            "an unknown tag is no row, whatever its code: any other server error"
        );
    }
}
