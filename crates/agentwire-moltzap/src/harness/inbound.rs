//! The inbound values of the contract: [`InboundMessage`] (direct or group), [`InboundItem`]
//! (`multicast`, `collectiveRequest`, `collectiveResult`, `operationFailed`), a collective
//! result's [`MemberOutcome`]s, and [`Withheld`] text. Pure values with their JSON shapes; no
//! delivery, acknowledgement or collective state is here.

use super::address::{AgentAddress, GroupAddress, MessageAddressInput, MIN_GROUP_MEMBERS};
use super::collective::AskOp;
use super::content::Content;
use super::errors::FirewallRefusal;
use super::id::{CollectiveId, PostId};
use super::json::{JsonNumber, JsonValue};
use super::schema::{AnswerContent, RequestedSchema};
use std::fmt;

/// A value an inbound constructor refuses.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum InboundValueError {
    /// A group message's member list is not its group's members.
    MembersMismatch { group: GroupAddress },
    /// A group has fewer than [`MIN_GROUP_MEMBERS`] members.
    TooFewMembers { count: usize },
    /// A group message's sender is not one of its members.
    SenderNotMember { sender: AgentAddress, group: GroupAddress },
    /// A collective result lists no outcome.
    NoOutcomes,
}

impl fmt::Display for InboundValueError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            InboundValueError::MembersMismatch { group } => {
                write!(f, "the member list is not the members of {group}")
            }
            InboundValueError::TooFewMembers { count } => {
                write!(f, "a group has at least {MIN_GROUP_MEMBERS} members, not {count}")
            }
            InboundValueError::SenderNotMember { sender, group } => {
                write!(f, "{sender} is not a member of {group}")
            }
            InboundValueError::NoOutcomes => f.write_str("a collective result lists no outcome"),
        }
    }
}

impl std::error::Error for InboundValueError {}

/// A message in a direct conversation: the remote author is both `sender` and the
/// perspective-relative `address`.
#[derive(Debug, Clone, PartialEq)]
pub struct DirectMessage {
    pub post_id: PostId,
    pub address: AgentAddress,
    pub sender: AgentAddress,
    pub content: Content,
}

impl DirectMessage {
    /// A direct message from `sender`, addressed (from this agent's side) to `sender`.
    pub fn new(post_id: PostId, sender: AgentAddress, content: Content) -> DirectMessage {
        DirectMessage {
            post_id,
            address: sender.clone(),
            sender,
            content,
        }
    }

    /// `{"kind":"direct","postId","address","sender","content"}`.
    pub fn to_json(&self) -> JsonValue {
        JsonValue::object([
            ("kind", "direct".into()),
            ("postId", self.post_id.as_str().into()),
            ("address", self.address.as_str().into()),
            ("sender", self.sender.as_str().into()),
            ("content", self.content.to_json()),
        ])
    }
}

/// A message in a group conversation: the canonical complete group address, the actual sender,
/// and the exact complete member list (at least three, the sender among them).
#[derive(Debug, Clone, PartialEq)]
pub struct GroupMessage {
    post_id: PostId,
    address: GroupAddress,
    sender: AgentAddress,
    members: Vec<AgentAddress>,
    content: Content,
}

impl GroupMessage {
    /// Refuses `members` other than exactly `address`'s members in canonical order, fewer than
    /// [`MIN_GROUP_MEMBERS`] of them, or a `sender` who is not among them.
    pub fn new(
        post_id: PostId,
        address: GroupAddress,
        sender: AgentAddress,
        members: Vec<AgentAddress>,
        content: Content,
    ) -> Result<GroupMessage, InboundValueError> {
        if members.len() < MIN_GROUP_MEMBERS {
            return Err(InboundValueError::TooFewMembers { count: members.len() });
        }
        if members != address.members() {
            return Err(InboundValueError::MembersMismatch { group: address });
        }
        if !members.contains(&sender) {
            return Err(InboundValueError::SenderNotMember { sender, group: address });
        }
        Ok(GroupMessage {
            post_id,
            address,
            sender,
            members,
            content,
        })
    }

    /// The members taken from `address`; refuses a `sender` who is not among them.
    pub fn from_address(
        post_id: PostId,
        address: GroupAddress,
        sender: AgentAddress,
        content: Content,
    ) -> Result<GroupMessage, InboundValueError> {
        let members = address.members().to_vec();
        GroupMessage::new(post_id, address, sender, members, content)
    }

    pub fn post_id(&self) -> &PostId {
        &self.post_id
    }

    pub fn address(&self) -> &GroupAddress {
        &self.address
    }

    pub fn sender(&self) -> &AgentAddress {
        &self.sender
    }

    pub fn members(&self) -> &[AgentAddress] {
        &self.members
    }

    pub fn content(&self) -> &Content {
        &self.content
    }

    /// `{"kind":"group","postId","address","sender","members","content"}`.
    pub fn to_json(&self) -> JsonValue {
        JsonValue::object([
            ("kind", "group".into()),
            ("postId", self.post_id.as_str().into()),
            ("address", self.address.to_string().into()),
            ("sender", self.sender.as_str().into()),
            (
                "members",
                JsonValue::Array(self.members.iter().map(|m| m.as_str().into()).collect()),
            ),
            ("content", self.content.to_json()),
        ])
    }
}

/// A delivered message, keyed by `kind`.
#[derive(Debug, Clone, PartialEq)]
pub enum InboundMessage {
    Direct(DirectMessage),
    Group(GroupMessage),
}

impl InboundMessage {
    pub fn to_json(&self) -> JsonValue {
        match self {
            InboundMessage::Direct(m) => m.to_json(),
            InboundMessage::Group(m) => m.to_json(),
        }
    }
}

/// Text the local firewall withheld from the runtime, never peer content.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Withheld {
    pub check_id: String,
    pub reason: FirewallRefusal,
}

impl Withheld {
    /// `{"kind":"withheld","checkId","reason"}`.
    pub fn to_json(&self) -> JsonValue {
        JsonValue::object([
            ("kind", "withheld".into()),
            ("checkId", self.check_id.clone().into()),
            ("reason", self.reason.as_str().into()),
        ])
    }
}

/// One member's outcome in a collective result, keyed by `kind`.
#[derive(Debug, Clone, PartialEq)]
pub enum CollectiveMemberOutcome {
    Answered {
        content: AnswerContent,
    },
    Declined,
    /// The answer failed validation: the validation message.
    Invalid {
        reason: String,
    },
    /// Unreachable, or silent at the deadline.
    NoAnswer,
    /// The answer the local firewall withheld.
    Withheld(Withheld),
}

impl CollectiveMemberOutcome {
    /// The spec's `kind`.
    pub fn kind(&self) -> &'static str {
        match self {
            CollectiveMemberOutcome::Answered { .. } => "answered",
            CollectiveMemberOutcome::Declined => "declined",
            CollectiveMemberOutcome::Invalid { .. } => "invalid",
            CollectiveMemberOutcome::NoAnswer => "no-answer",
            CollectiveMemberOutcome::Withheld(_) => "withheld",
        }
    }

    pub fn to_json(&self) -> JsonValue {
        match self {
            CollectiveMemberOutcome::Answered { content } => {
                JsonValue::object([("kind", "answered".into()), ("content", content.to_json())])
            }
            CollectiveMemberOutcome::Invalid { reason } => {
                JsonValue::object([("kind", "invalid".into()), ("reason", reason.clone().into())])
            }
            CollectiveMemberOutcome::Withheld(w) => w.to_json(),
            other => JsonValue::object([("kind", other.kind().into())]),
        }
    }
}

/// A member and its outcome.
#[derive(Debug, Clone, PartialEq)]
pub struct MemberOutcome {
    pub member: AgentAddress,
    pub outcome: CollectiveMemberOutcome,
}

impl MemberOutcome {
    /// `{"member","outcome"}`.
    pub fn to_json(&self) -> JsonValue {
        JsonValue::object([
            ("member", self.member.as_str().into()),
            ("outcome", self.outcome.to_json()),
        ])
    }
}

/// A result's question: its text, or the firewall's [`Withheld`] in its place.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum QuestionOrWithheld {
    Text(String),
    Withheld(Withheld),
}

impl QuestionOrWithheld {
    /// A string, or the withheld object.
    pub fn to_json(&self) -> JsonValue {
        match self {
            QuestionOrWithheld::Text(t) => t.clone().into(),
            QuestionOrWithheld::Withheld(w) => w.to_json(),
        }
    }
}

/// A gather's or all_gather's result: at least one outcome.
#[derive(Debug, Clone, PartialEq)]
pub struct CollectiveResult {
    op: AskOp,
    id: CollectiveId,
    to: MessageAddressInput,
    question: QuestionOrWithheld,
    outcomes: Vec<MemberOutcome>,
}

impl CollectiveResult {
    /// Refuses an empty `outcomes`.
    pub fn new(
        op: AskOp,
        id: CollectiveId,
        to: MessageAddressInput,
        question: QuestionOrWithheld,
        outcomes: Vec<MemberOutcome>,
    ) -> Result<CollectiveResult, InboundValueError> {
        if outcomes.is_empty() {
            return Err(InboundValueError::NoOutcomes);
        }
        Ok(CollectiveResult {
            op,
            id,
            to,
            question,
            outcomes,
        })
    }

    pub fn op(&self) -> AskOp {
        self.op
    }

    pub fn id(&self) -> &CollectiveId {
        &self.id
    }

    pub fn to(&self) -> &MessageAddressInput {
        &self.to
    }

    pub fn question(&self) -> &QuestionOrWithheld {
        &self.question
    }

    pub fn outcomes(&self) -> &[MemberOutcome] {
        &self.outcomes
    }
}

/// One delivered item, keyed by `kind`.
#[derive(Debug, Clone, PartialEq)]
pub enum InboundItem {
    Multicast {
        message: InboundMessage,
    },
    CollectiveRequest {
        op: AskOp,
        id: CollectiveId,
        post_id: PostId,
        from: AgentAddress,
        /// The conversation the request arrived in; answers go there.
        to: MessageAddressInput,
        question: String,
        requested_schema: RequestedSchema,
        /// Epoch milliseconds (a classified request's is at most 2^53 - 1).
        deadline_at: u64,
    },
    CollectiveResult(CollectiveResult),
    OperationFailed {
        id: CollectiveId,
        to: MessageAddressInput,
        error: String,
    },
}

impl InboundItem {
    /// The spec's `kind`.
    pub fn kind(&self) -> &'static str {
        match self {
            InboundItem::Multicast { .. } => "multicast",
            InboundItem::CollectiveRequest { .. } => "collectiveRequest",
            InboundItem::CollectiveResult(_) => "collectiveResult",
            InboundItem::OperationFailed { .. } => "operationFailed",
        }
    }

    pub fn to_json(&self) -> JsonValue {
        let kind = ("kind", JsonValue::from(self.kind()));
        match self {
            InboundItem::Multicast { message } => JsonValue::object([kind, ("message", message.to_json())]),
            InboundItem::CollectiveRequest {
                op,
                id,
                post_id,
                from,
                to,
                question,
                requested_schema,
                deadline_at,
            } => JsonValue::object([
                kind,
                ("op", op.as_str().into()),
                ("id", id.as_str().into()),
                ("postId", post_id.as_str().into()),
                ("from", from.as_str().into()),
                ("to", to.to_string().into()),
                ("question", question.clone().into()),
                ("requestedSchema", requested_schema.to_json()),
                // Every u64 is finite; past 2^53 it is rounded, as any JSON reader would.
                (
                    "deadlineAt",
                    JsonNumber::new(*deadline_at as f64).map_or(JsonValue::Null, JsonValue::Number),
                ),
            ]),
            InboundItem::CollectiveResult(r) => JsonValue::object([
                kind,
                ("op", r.op.as_str().into()),
                ("id", r.id.as_str().into()),
                ("to", r.to.to_string().into()),
                ("question", r.question.to_json()),
                (
                    "outcomes",
                    JsonValue::Array(r.outcomes.iter().map(MemberOutcome::to_json).collect()),
                ),
            ]),
            InboundItem::OperationFailed { id, to, error } => JsonValue::object([
                kind,
                ("id", id.as_str().into()),
                ("to", to.to_string().into()),
                ("error", error.clone().into()),
            ]),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::harness::canonical::to_canonical;
    use crate::harness::schema::AnswerValue;

    fn a(s: &str) -> AgentAddress {
        AgentAddress::parse(s).unwrap()
    }

    fn post() -> PostId {
        PostId::parse("post_1").unwrap()
    }

    fn id() -> CollectiveId {
        CollectiveId::parse("col_AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8").unwrap()
    }

    fn group() -> GroupAddress {
        GroupAddress::parse("group:alice,bob,carol").unwrap()
    }

    fn withheld() -> Withheld {
        Withheld {
            check_id: "chk_1".into(),
            reason: FirewallRefusal::Prohibited,
        }
    }

    #[test]
    fn public_type_canaries_pin_the_inbound_shapes() {
        let c = |v: JsonValue| to_canonical(&v);
        let content = Content::text("hi").unwrap();
        let direct = DirectMessage::new(post(), a("agent:bob"), content.clone());
        assert_eq!(
            c(direct.to_json()),
            r#"{"address":"agent:bob","content":[{"text":"hi","type":"text"}],"kind":"direct","postId":"post_1","sender":"agent:bob"}"#
        );
        let grp = GroupMessage::from_address(post(), group(), a("agent:bob"), content).unwrap();
        assert_eq!(
            c(grp.to_json()),
            r#"{"address":"group:alice,bob,carol","content":[{"text":"hi","type":"text"}],"kind":"group","members":["agent:alice","agent:bob","agent:carol"],"postId":"post_1","sender":"agent:bob"}"#
        );
        let item = InboundItem::Multicast {
            message: InboundMessage::Direct(direct),
        };
        assert_eq!(
            c(item.to_json()),
            r#"{"kind":"multicast","message":{"address":"agent:bob","content":[{"text":"hi","type":"text"}],"kind":"direct","postId":"post_1","sender":"agent:bob"}}"#
        );
        assert_eq!(InboundMessage::Group(grp.clone()).to_json(), grp.to_json());

        assert_eq!(
            c(withheld().to_json()),
            r#"{"checkId":"chk_1","kind":"withheld","reason":"prohibited"}"#
        );

        let request = InboundItem::CollectiveRequest {
            op: AskOp::AllGather,
            id: id(),
            post_id: post(),
            from: a("agent:alice"),
            to: group().into(),
            question: "ok?".into(),
            requested_schema: crate::harness::collective::tests::schema(),
            deadline_at: 61_000,
        };
        assert_eq!(
            c(request.to_json()),
            concat!(
                r#"{"deadlineAt":61000,"from":"agent:alice","id":"col_AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8","#,
                r#""kind":"collectiveRequest","op":"all_gather","postId":"post_1","question":"ok?","#,
                r#""requestedSchema":{"properties":{"ok":{"type":"boolean"}},"required":["ok"],"type":"object"},"#,
                r#""to":"group:alice,bob,carol"}"#
            )
        );

        let mut answer = AnswerContent::default();
        answer.0.insert("ok".into(), AnswerValue::Bool(true));
        let outcomes = vec![
            (a("agent:bob"), CollectiveMemberOutcome::Answered { content: answer }),
            (a("agent:carol"), CollectiveMemberOutcome::Declined),
            (
                a("agent:dana"),
                CollectiveMemberOutcome::Invalid {
                    reason: "ok is missing".into(),
                },
            ),
            (a("agent:erin"), CollectiveMemberOutcome::NoAnswer),
            (a("agent:fred"), CollectiveMemberOutcome::Withheld(withheld())),
        ]
        .into_iter()
        .map(|(member, outcome)| MemberOutcome { member, outcome })
        .collect();
        let result = CollectiveResult::new(
            AskOp::Gather,
            id(),
            MessageAddressInput::parse("agent:bob").unwrap(),
            QuestionOrWithheld::Text("ok?".into()),
            outcomes,
        )
        .unwrap();
        assert_eq!(
            c(InboundItem::CollectiveResult(result).to_json()),
            concat!(
                r#"{"id":"col_AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8","kind":"collectiveResult","op":"gather","#,
                r#""outcomes":[{"member":"agent:bob","outcome":{"content":{"ok":true},"kind":"answered"}},"#,
                r#"{"member":"agent:carol","outcome":{"kind":"declined"}},"#,
                r#"{"member":"agent:dana","outcome":{"kind":"invalid","reason":"ok is missing"}},"#,
                r#"{"member":"agent:erin","outcome":{"kind":"no-answer"}},"#,
                r#"{"member":"agent:fred","outcome":{"checkId":"chk_1","kind":"withheld","reason":"prohibited"}}],"#,
                r#""question":"ok?","to":"agent:bob"}"#
            )
        );
        let withheld_question = CollectiveResult::new(
            AskOp::AllGather,
            id(),
            group().into(),
            QuestionOrWithheld::Withheld(withheld()),
            vec![MemberOutcome {
                member: a("agent:bob"),
                outcome: CollectiveMemberOutcome::NoAnswer,
            }],
        )
        .unwrap();
        assert_eq!(
            c(withheld_question.question().to_json()),
            r#"{"checkId":"chk_1","kind":"withheld","reason":"prohibited"}"#
        );

        let failed = InboundItem::OperationFailed {
            id: id(),
            to: group().into(),
            error: "send failed: the question's deadline has passed".into(),
        };
        assert_eq!(
            c(failed.to_json()),
            r#"{"error":"send failed: the question's deadline has passed","id":"col_AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8","kind":"operationFailed","to":"group:alice,bob,carol"}"#
        );
    }

    #[test]
    fn a_group_message_carries_exactly_its_groups_members() {
        let content = Content::text("hi").unwrap();
        let members = group().members().to_vec();
        let m = GroupMessage::new(post(), group(), a("agent:bob"), members.clone(), content.clone()).unwrap();
        assert_eq!(m.members(), members, "the members, as the group lists them");
        let mut reordered = members.clone();
        reordered.reverse();
        let e = GroupMessage::new(post(), group(), a("agent:bob"), reordered, content.clone()).unwrap_err();
        assert_eq!(
            e.to_string(),
            "the member list is not the members of group:alice,bob,carol"
        );
        let e = GroupMessage::new(post(), group(), a("agent:bob"), members[..2].to_vec(), content.clone()).unwrap_err();
        assert_eq!(e, InboundValueError::TooFewMembers { count: 2 });
        assert_eq!(e.to_string(), "a group has at least 3 members, not 2");
        let mut extra = members;
        extra.push(a("agent:dana"));
        assert!(matches!(
            GroupMessage::new(post(), group(), a("agent:bob"), extra, content.clone()),
            Err(InboundValueError::MembersMismatch { .. })
        ));
        let e = GroupMessage::from_address(post(), group(), a("agent:dana"), content).unwrap_err();
        assert_eq!(e.to_string(), "agent:dana is not a member of group:alice,bob,carol");
    }

    #[test]
    fn a_result_has_an_outcome() {
        let e = CollectiveResult::new(
            AskOp::Gather,
            id(),
            a("agent:bob").into(),
            QuestionOrWithheld::Text("ok?".into()),
            vec![],
        )
        .unwrap_err();
        assert_eq!(e, InboundValueError::NoOutcomes);
        assert_eq!(e.to_string(), "a collective result lists no outcome");
    }
}
