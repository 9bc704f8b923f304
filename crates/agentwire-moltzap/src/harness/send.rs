//! [`SendInput`]: what a runtime sends (an operation, or an answer), [`SendResult`], and the
//! request a gather or all_gather builds.

use super::address::{AgentAddress, MessageAddressInput};
use super::collective::{multicast_content, AskOp, CollectiveResponse, RequestPart, MAX_DEADLINE_AT};
use super::content::Content;
use super::errors::SendError;
use super::guidance::CheckedGuidance;
use super::id::{CollectiveId, Nonce};
use super::json::{JsonObject, JsonValue};
use super::schema::RequestedSchema;
use agentwire_core::Millis;

/// The longest relative deadline: 30 days, in seconds.
pub const MAX_DEADLINE_SECS: u32 = 2_592_000;

/// How long past its deadline a request may still be held: an all_gather member keeps a
/// request an hour past it for the close, and a request whose deadline is further than
/// `MAX_DEADLINE_SECS` plus this from now is refused.
pub const DEADLINE_GRACE_MS: u64 = 3_600_000;

/// The operation a message carries; `None` in [`SendInput::Message`] means multicast too.
#[derive(Debug, Clone, PartialEq)]
pub enum CollectiveOperation {
    Multicast,
    /// A gather or all_gather: `text` is the question.
    Ask {
        op: AskOp,
        /// Whole seconds from now, 1 to [`MAX_DEADLINE_SECS`].
        deadline: u32,
        requested_schema: RequestedSchema,
    },
}

/// One send.
#[derive(Debug, Clone, PartialEq)]
pub enum SendInput {
    Message {
        to: MessageAddressInput,
        text: String,
        collective: Option<CollectiveOperation>,
    },
    /// An answer to the one request open in the conversation `to`.
    Response {
        to: MessageAddressInput,
        response: CollectiveResponse,
    },
}

impl SendInput {
    pub fn to(&self) -> &MessageAddressInput {
        match self {
            SendInput::Message { to, .. } | SendInput::Response { to, .. } => to,
        }
    }

    /// For a multicast (no `collective`, or `op: multicast`), the content it certifies: the
    /// text part, then the multicast part (`content-invalid` past the limit). `None` for an
    /// ask or an answer.
    pub fn multicast_content(&self) -> Option<Result<Content, SendError>> {
        match self {
            SendInput::Message {
                text,
                collective: None | Some(CollectiveOperation::Multicast),
                ..
            } => Some(multicast_content(text)),
            _ => None,
        }
    }
}

/// What a successful send returns.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct SendResult {
    /// The operation's id, for a gather or all_gather.
    pub operation_id: Option<CollectiveId>,
    /// The local firewall's advice on the admitted send: its check's guidance, when that check
    /// left a norm judgment uncertain.
    pub guidance: Option<CheckedGuidance>,
}

impl SendResult {
    /// `{"operationId"?, "guidance"?}`.
    pub fn to_json(&self) -> JsonValue {
        let mut fields = JsonObject::new();
        if let Some(id) = &self.operation_id {
            fields.insert("operationId".to_owned(), id.as_str().into());
        }
        if let Some(g) = &self.guidance {
            fields.insert("guidance".to_owned(), g.to_json());
        }
        JsonValue::Object(fields)
    }
}

/// Where a refused gather, all_gather or answer reports its failure.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum FailureDelivery {
    /// Returned on the send (the default).
    #[default]
    Result,
    /// The send completes naming its operation, and the error arrives as an `operationFailed`
    /// item. A multicast's failure and a `FirewallSendError` are returned either way.
    Inbound,
}

impl FailureDelivery {
    pub fn as_str(self) -> &'static str {
        match self {
            FailureDelivery::Result => "result",
            FailureDelivery::Inbound => "inbound",
        }
    }

    pub fn parse(s: &str) -> Option<FailureDelivery> {
        match s {
            "result" => Some(FailureDelivery::Result),
            "inbound" => Some(FailureDelivery::Inbound),
            _ => None,
        }
    }
}

/// A send's runtime options: they cross MCP in request metadata, outside the model's arguments.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct SendOptions {
    pub failure_delivery: FailureDelivery,
}

impl SendOptions {
    /// `{"failureDelivery"}`.
    pub fn to_json(&self) -> JsonValue {
        JsonValue::object([("failureDelivery", self.failure_delivery.as_str().into())])
    }
}

/// True when `deadline` is a valid relative deadline (1 to 30 days in whole seconds).
pub fn deadline_valid(deadline: u32) -> bool {
    (1..=MAX_DEADLINE_SECS).contains(&deadline)
}

/// The request part of an ask by `requester` at `now`: its id derived from `nonce`, the
/// deadline made absolute (`now` + `deadline` seconds). `None` when `deadline` is out of range
/// or the absolute deadline would pass 2^53 - 1.
pub fn build_request(
    op: AskOp,
    requester: &AgentAddress,
    nonce: Nonce,
    now: Millis,
    deadline: u32,
    requested_schema: RequestedSchema,
) -> Option<RequestPart> {
    let deadline_at = now.checked_add(u64::from(deadline) * 1000)?;
    (deadline_valid(deadline) && deadline_at <= MAX_DEADLINE_AT).then(|| RequestPart {
        op,
        id: CollectiveId::derive(requester, &nonce),
        nonce,
        deadline_at,
        requested_schema,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use agentwire_core::SeededEntropy;

    #[test]
    fn a_send_result_and_its_options_pin_their_shapes() {
        use crate::harness::canonical::to_canonical;
        assert_eq!(to_canonical(&SendResult::default().to_json()), "{}");
        let id = CollectiveId::parse("col_AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8").unwrap();
        let r = SendResult {
            operation_id: Some(id),
            guidance: Some(crate::harness::guidance::CheckedGuidance {
                check_id: "chk_1".into(),
                subjects: vec![],
                instructions: vec![],
            }),
        };
        assert_eq!(
            to_canonical(&r.to_json()),
            r#"{"guidance":{"checkId":"chk_1","instructions":[],"subjects":[]},"operationId":"col_AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8"}"#
        );
        assert_eq!(
            to_canonical(&SendOptions::default().to_json()),
            r#"{"failureDelivery":"result"}"#
        );
        let inbound = SendOptions {
            failure_delivery: FailureDelivery::Inbound,
        };
        assert_eq!(to_canonical(&inbound.to_json()), r#"{"failureDelivery":"inbound"}"#);
        for d in [FailureDelivery::Result, FailureDelivery::Inbound] {
            assert_eq!(FailureDelivery::parse(d.as_str()), Some(d));
        }
        assert_eq!(FailureDelivery::parse("Inbound"), None);
    }

    #[test]
    fn a_request_derives_its_id_and_makes_the_deadline_absolute() {
        let alice = AgentAddress::parse("agent:alice").unwrap();
        let mut e = SeededEntropy::new(3);
        let nonce = Nonce::mint(&mut e);
        let schema = crate::harness::collective::tests::schema();
        let r = build_request(AskOp::Gather, &alice, nonce.clone(), 1_000, 60, schema.clone()).unwrap();
        assert_eq!(r.deadline_at, 61_000);
        assert!(r.id.derives_from(&alice, &nonce));
        assert!(build_request(AskOp::Gather, &alice, nonce.clone(), 0, 0, schema.clone()).is_none());
        assert!(build_request(
            AskOp::Gather,
            &alice,
            nonce.clone(),
            0,
            MAX_DEADLINE_SECS,
            schema.clone()
        )
        .is_some());
        assert!(build_request(
            AskOp::Gather,
            &alice,
            nonce.clone(),
            0,
            MAX_DEADLINE_SECS + 1,
            schema.clone()
        )
        .is_none());
        assert!(build_request(AskOp::Gather, &alice, nonce, u64::MAX, 1, schema).is_none());
    }
}
