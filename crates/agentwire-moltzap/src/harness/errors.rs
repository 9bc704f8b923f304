//! The closed failures of the contract. Every reason and kind is one of the spec's names
//! (`as_str` gives the kebab-case name, `parse` reads it back); every message is the failed
//! action, then its cause (`send failed: agent:dana is not a known agent`), names the input when
//! the failing step knows it, and states no remedy.
//!
//! The enums hold the spec's whole vocabulary, and this endpoint returns only part of it: it
//! keeps its state in memory (no store to fail or to bind a post's intent in), its subscription
//! and acknowledgements are local (they reach no daemon), and a [`RequestedSchema`] is valid by
//! construction. The reasons it never returns say so in their docs: `persistence-failed`,
//! `delivery-pending`, `ListenError`'s `incompatible-daemon`, `transport-failed` and
//! `decode-failed`, `DeliveryAcknowledgeError`'s `delivery-conflict`, `persistence-failed` and
//! `transport-failed`, and the collective `schema-invalid`.
//!
//! [`RequestedSchema`]: super::schema::RequestedSchema

use super::address::{AgentAddress, MessageAddress};
use super::id::CollectiveId;
use super::json::JsonPath;
use std::fmt;

macro_rules! closed_reason {
    ($(#[$m:meta])* $name:ident { $($(#[$vm:meta])* $variant:ident => $text:literal),+ $(,)? }) => {
        $(#[$m])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum $name {
            $($(#[$vm])* $variant),+
        }

        impl $name {
            /// Every reason, in the spec's order.
            pub const ALL: &'static [$name] = &[$($name::$variant),+];

            /// The spec's name.
            pub fn as_str(self) -> &'static str {
                match self {
                    $($name::$variant => $text),+
                }
            }

            /// The reason with this name.
            pub fn parse(s: &str) -> Option<$name> {
                match s {
                    $($text => Some($name::$variant),)+
                    _ => None,
                }
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.as_str())
            }
        }
    };
}

closed_reason!(
    /// `SendError.reason`.
    SendErrorReason {
        InvalidAddress => "invalid-address",
        UnknownAgent => "unknown-agent",
        MembershipInvalid => "membership-invalid",
        ContentInvalid => "content-invalid",
        NotRegistered => "not-registered",
        VersionMismatch => "version-mismatch",
        CertificationUnavailable => "certification-unavailable",
        /// The store failed while binding the post's intent. Never returned by this endpoint:
        /// it has no store (its state is in memory).
        PersistenceFailed => "persistence-failed",
        NetworkUnavailable => "network-unavailable",
        /// The message will still be sent: its intent was bound durably and a later step failed.
        /// Never returned by this endpoint, which binds no intent durably: a send that may have
        /// gone out is `outcome-unknown`, and the host may resume it (`Endpoint::resume`).
        DeliveryPending => "delivery-pending",
        /// The message may have been sent.
        OutcomeUnknown => "outcome-unknown",
    }
);

closed_reason!(
    /// `ListenError.reason`. This endpoint's subscription is local (it replays its own inbox and
    /// sends nothing), so `listen` fails only `already-listening`; the connection's failures come
    /// as `EndpointEvent::ConnectFailed` and `Disconnected`.
    ListenErrorReason {
        AlreadyListening => "already-listening",
        /// Never returned by this endpoint (see the enum).
        IncompatibleDaemon => "incompatible-daemon",
        /// Never returned by this endpoint (see the enum).
        TransportFailed => "transport-failed",
        /// Never returned by this endpoint (see the enum).
        DecodeFailed => "decode-failed",
    }
);

closed_reason!(
    /// `DeliveryAcknowledgeError.reason`. This endpoint's acknowledgement only removes a
    /// delivery from its in-memory replay set (it is stored nowhere and sent nowhere), so it fails
    /// only `unknown-delivery`.
    DeliveryAcknowledgeErrorReason {
        UnknownDelivery => "unknown-delivery",
        /// Never returned by this endpoint (see the enum).
        DeliveryConflict => "delivery-conflict",
        /// Never returned by this endpoint (see the enum).
        PersistenceFailed => "persistence-failed",
        /// Never returned by this endpoint (see the enum).
        TransportFailed => "transport-failed",
    }
);

closed_reason!(
    /// `ConnectError.reason`.
    ConnectErrorReason {
        TransportFailed => "transport-failed",
        DecodeFailed => "decode-failed",
        IncompatibleDaemon => "incompatible-daemon",
    }
);

closed_reason!(
    /// `FirewallSendError.refusal`: why the local message firewall refused a send.
    FirewallRefusal {
        Prohibited => "prohibited",
        UnresolvedEvidence => "unresolved-evidence",
        CheckUnavailable => "check-unavailable",
        NormViolation => "norm-violation",
        ApprovalRequired => "approval-required",
    }
);

/// The action a message says failed: a send, or a reply (an answer to a request).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FailedAction {
    Send,
    Reply,
}

impl FailedAction {
    pub fn as_str(self) -> &'static str {
        match self {
            FailedAction::Send => "send",
            FailedAction::Reply => "reply",
        }
    }
}

/// A refused send: the reason, and the cause the message states.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SendError {
    pub reason: SendErrorReason,
    pub action: FailedAction,
    /// What failed, naming the input (`agent:dana is not a known agent`).
    pub cause: String,
}

/// `s` as a JSON string (quotes, `\"`, `\\`, `\n`, `\u0000`…): how a message quotes the input
/// it refuses, as the spec's messages read (`send failed: "agent:da na" is not an agent
/// address`), never Rust's `{:?}` escapes.
pub fn quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    agentwire_core::json::push_string(&mut out, s);
    out
}

impl SendError {
    pub fn new(reason: SendErrorReason, cause: impl Into<String>) -> SendError {
        SendError {
            reason,
            action: FailedAction::Send,
            cause: cause.into(),
        }
    }

    /// The same failure, reported as a failed reply.
    #[must_use]
    pub fn as_reply(mut self) -> SendError {
        self.action = FailedAction::Reply;
        self
    }

    /// `invalid-address`: `input` is not an address, because `why`.
    pub fn invalid_address(input: &str, why: &str) -> SendError {
        let shown = if input.chars().count() > 80 {
            format!("{}…", quote(&input.chars().take(80).collect::<String>()))
        } else {
            quote(input)
        };
        SendError::new(
            SendErrorReason::InvalidAddress,
            format!("{shown} is not an address: {why}"),
        )
    }

    /// `unknown-agent`: `agent:dana is not a known agent`.
    pub fn unknown_agent(agent: &AgentAddress) -> SendError {
        SendError::new(SendErrorReason::UnknownAgent, format!("{agent} is not a known agent"))
    }

    /// `membership-invalid`, with its cause.
    pub fn membership_invalid(cause: impl Into<String>) -> SendError {
        SendError::new(SendErrorReason::MembershipInvalid, cause)
    }

    /// `content-invalid`, with its cause.
    pub fn content_invalid(cause: impl Into<String>) -> SendError {
        SendError::new(SendErrorReason::ContentInvalid, cause)
    }
}

impl fmt::Display for SendError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} failed: {}", self.action.as_str(), self.cause)
    }
}

impl std::error::Error for SendError {}

/// A send the local message firewall refused: no message intent was created. Always returned
/// on the send itself, whatever its `failureDelivery`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FirewallSendError {
    pub refusal: FirewallRefusal,
    pub action: FailedAction,
    /// The feedback of the registered policy template that refused it, if any.
    pub feedback: Option<String>,
}

impl FirewallSendError {
    pub fn new(refusal: FirewallRefusal, feedback: Option<String>) -> FirewallSendError {
        FirewallSendError {
            refusal,
            action: FailedAction::Send,
            feedback,
        }
    }

    /// The same refusal, reported as a failed reply (a refused answer).
    #[must_use]
    pub fn as_reply(mut self) -> FirewallSendError {
        self.action = FailedAction::Reply;
        self
    }
}

impl fmt::Display for FirewallSendError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} failed: the local message firewall refused it ({})",
            self.action.as_str(),
            self.refusal
        )?;
        match &self.feedback {
            Some(feedback) => write!(f, ": {feedback}"),
            None => Ok(()),
        }
    }
}

impl std::error::Error for FirewallSendError {}

/// What is wrong with one field of a value: a schema, an answer, a message text's operation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FieldProblem {
    Missing,
    Unexpected,
    /// Present but not valid: what was expected instead.
    Invalid(String),
}

/// One failing field, by path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldIssue {
    pub path: JsonPath,
    pub problem: FieldProblem,
}

impl FieldIssue {
    pub fn missing(path: JsonPath) -> FieldIssue {
        FieldIssue {
            path,
            problem: FieldProblem::Missing,
        }
    }

    pub fn unexpected(path: JsonPath) -> FieldIssue {
        FieldIssue {
            path,
            problem: FieldProblem::Unexpected,
        }
    }

    pub fn invalid(path: JsonPath, expected: impl Into<String>) -> FieldIssue {
        FieldIssue {
            path,
            problem: FieldProblem::Invalid(expected.into()),
        }
    }
}

impl fmt::Display for FieldIssue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.problem {
            FieldProblem::Missing => write!(f, "{} is missing", self.path),
            FieldProblem::Unexpected => write!(f, "{} is unexpected", self.path),
            FieldProblem::Invalid(expected) => write!(f, "{}: expected {expected}", self.path),
        }
    }
}

fn join(f: &mut fmt::Formatter<'_>, items: impl IntoIterator<Item = impl fmt::Display>) -> fmt::Result {
    for (i, item) in items.into_iter().enumerate() {
        if i > 0 {
            f.write_str("; ")?;
        }
        write!(f, "{item}")?;
    }
    Ok(())
}

/// A member a gather or all_gather could not reach, with the reason its post (or its
/// resolution) failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnreachableMember {
    pub member: AgentAddress,
    pub reason: SendErrorReason,
    pub detail: Option<String>,
}

impl fmt::Display for UnreachableMember {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (&self.reason, &self.detail) {
            (SendErrorReason::UnknownAgent, None) => write!(f, "{} is not a known agent", self.member),
            (reason, None) => write!(f, "{} was not reached ({reason})", self.member),
            (reason, Some(d)) => write!(f, "{} was not reached ({reason}: {d})", self.member),
        }
    }
}

/// `CollectiveError.failure`, keyed by `kind`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CollectiveFailure {
    MembersUnreachable(Vec<UnreachableMember>),
    /// Each failing path of the requested schema and the form-mode shape it expects. Never
    /// returned by this endpoint: a `SendInput` carries a [`RequestedSchema`], which only
    /// [`RequestedSchema::parse`] builds, and its `Err` is these issues (a host that reads a
    /// schema from its model may report them with this variant).
    ///
    /// [`RequestedSchema`]: super::schema::RequestedSchema
    /// [`RequestedSchema::parse`]: super::schema::RequestedSchema::parse
    SchemaInvalid(Vec<FieldIssue>),
    /// Each failing field of an answer: missing, unexpected or invalid.
    AnswerInvalid(Vec<FieldIssue>),
    /// No request is open in the conversation the answer names.
    RequestNone(MessageAddress),
    /// More than one request is open in that conversation.
    RequestAmbiguous(MessageAddress),
    /// The conversation's requests were answered.
    RequestAnswered(MessageAddress),
    RequestExpired,
    DeadlinePassed,
}

impl CollectiveFailure {
    /// The spec's `kind`.
    pub fn kind(&self) -> &'static str {
        match self {
            CollectiveFailure::MembersUnreachable(_) => "members-unreachable",
            CollectiveFailure::SchemaInvalid(_) => "schema-invalid",
            CollectiveFailure::AnswerInvalid(_) => "answer-invalid",
            CollectiveFailure::RequestNone(_) => "request-none",
            CollectiveFailure::RequestAmbiguous(_) => "request-ambiguous",
            CollectiveFailure::RequestAnswered(_) => "request-answered",
            CollectiveFailure::RequestExpired => "request-expired",
            CollectiveFailure::DeadlinePassed => "deadline-passed",
        }
    }

    /// Every kind, in the spec's order (each variant's [`CollectiveFailure::kind`]).
    pub const KINDS: [&'static str; 8] = [
        "members-unreachable",
        "schema-invalid",
        "answer-invalid",
        "request-none",
        "request-ambiguous",
        "request-answered",
        "request-expired",
        "deadline-passed",
    ];

    /// `reply` for the failures of an answer, `send` for the others.
    pub fn action(&self) -> FailedAction {
        match self {
            CollectiveFailure::AnswerInvalid(_)
            | CollectiveFailure::RequestNone(_)
            | CollectiveFailure::RequestAmbiguous(_)
            | CollectiveFailure::RequestAnswered(_)
            | CollectiveFailure::RequestExpired => FailedAction::Reply,
            _ => FailedAction::Send,
        }
    }
}

/// The conversation an answer names, in a message: `the conversation with agent:bob` (a
/// direct conversation is named by its other agent) or the group's canonical address.
struct Conversation<'a>(&'a MessageAddress);

impl fmt::Display for Conversation<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            MessageAddress::Agent(a) => write!(f, "the conversation with {a}"),
            MessageAddress::Group(g) => write!(f, "{g}"),
        }
    }
}

/// A refused collective operation or answer: the operation's id and one failure.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CollectiveError {
    pub id: CollectiveId,
    pub failure: CollectiveFailure,
}

impl fmt::Display for CollectiveError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} failed: ", self.failure.action().as_str())?;
        match &self.failure {
            CollectiveFailure::MembersUnreachable(members) => join(f, members),
            CollectiveFailure::SchemaInvalid(issues) => {
                f.write_str("the requested schema is invalid: ")?;
                join(f, issues)
            }
            CollectiveFailure::AnswerInvalid(issues) => {
                f.write_str("the answer is invalid: ")?;
                join(f, issues)
            }
            CollectiveFailure::RequestNone(to) => write!(f, "no question is open in {}", Conversation(to)),
            CollectiveFailure::RequestAmbiguous(to) => {
                write!(f, "more than one question is open in {}", Conversation(to))
            }
            CollectiveFailure::RequestAnswered(to) => {
                write!(f, "the question in {} was already answered", Conversation(to))
            }
            CollectiveFailure::RequestExpired => f.write_str("the question's deadline has passed"),
            CollectiveFailure::DeadlinePassed => f.write_str("the deadline passed before the operation was sent"),
        }
    }
}

impl std::error::Error for CollectiveError {}

/// A message text that states an operation but does not validate: each failing field.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MessageTextError {
    pub issues: Vec<FieldIssue>,
}

impl fmt::Display for MessageTextError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("send failed: the message states an invalid operation: ")?;
        join(f, &self.issues)
    }
}

impl std::error::Error for MessageTextError {}

macro_rules! reason_error {
    ($(#[$m:meta])* $name:ident, $reason:ident, $action:literal, |$r:ident| $cause:expr) => {
        $(#[$m])*
        #[derive(Debug, Clone, PartialEq, Eq)]
        pub struct $name {
            pub reason: $reason,
            /// What the failing step knows (never a credential or private state).
            pub detail: Option<String>,
        }

        impl $name {
            pub fn new(reason: $reason) -> $name {
                $name { reason, detail: None }
            }

            pub fn with_detail(reason: $reason, detail: impl Into<String>) -> $name {
                $name {
                    reason,
                    detail: Some(detail.into()),
                }
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                let $r = self.reason;
                write!(f, concat!($action, " failed: {}"), $cause)?;
                match &self.detail {
                    Some(d) => write!(f, ": {d}"),
                    None => Ok(()),
                }
            }
        }

        impl std::error::Error for $name {}
    };
}

reason_error!(
    /// Opening the message subscription failed.
    ListenError, ListenErrorReason, "listen", |r| match r {
        ListenErrorReason::AlreadyListening => "this endpoint already has a message subscription",
        ListenErrorReason::IncompatibleDaemon => "the daemon does not speak this endpoint's protocol",
        ListenErrorReason::TransportFailed => "the connection to the daemon failed",
        ListenErrorReason::DecodeFailed => "a message from the daemon could not be read",
    }
);

reason_error!(
    /// Acknowledging a delivery failed.
    DeliveryAcknowledgeError, DeliveryAcknowledgeErrorReason, "acknowledge", |r| match r {
        DeliveryAcknowledgeErrorReason::UnknownDelivery => "the delivery is not known",
        DeliveryAcknowledgeErrorReason::DeliveryConflict => "the delivery conflicts with the one stored",
        DeliveryAcknowledgeErrorReason::PersistenceFailed => "the acknowledgement could not be stored",
        DeliveryAcknowledgeErrorReason::TransportFailed => "the connection to the daemon failed",
    }
);

reason_error!(
    /// Acquiring the endpoint failed.
    ConnectError, ConnectErrorReason, "connect", |r| match r {
        ConnectErrorReason::TransportFailed => "the connection to the daemon failed",
        ConnectErrorReason::DecodeFailed => "a message from the daemon could not be read",
        ConnectErrorReason::IncompatibleDaemon => "the daemon does not speak this endpoint's protocol",
    }
);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reasons_are_exactly_the_specs() {
        let names: Vec<_> = SendErrorReason::ALL.iter().map(|r| r.as_str()).collect();
        assert_eq!(
            names,
            [
                "invalid-address",
                "unknown-agent",
                "membership-invalid",
                "content-invalid",
                "not-registered",
                "version-mismatch",
                "certification-unavailable",
                "persistence-failed",
                "network-unavailable",
                "delivery-pending",
                "outcome-unknown"
            ]
        );
        let names = |all: &[&str]| all.join(",");
        assert_eq!(
            names(&ListenErrorReason::ALL.iter().map(|r| r.as_str()).collect::<Vec<_>>()),
            "already-listening,incompatible-daemon,transport-failed,decode-failed"
        );
        assert_eq!(
            names(
                &DeliveryAcknowledgeErrorReason::ALL
                    .iter()
                    .map(|r| r.as_str())
                    .collect::<Vec<_>>()
            ),
            "unknown-delivery,delivery-conflict,persistence-failed,transport-failed"
        );
        assert_eq!(
            names(&ConnectErrorReason::ALL.iter().map(|r| r.as_str()).collect::<Vec<_>>()),
            "transport-failed,decode-failed,incompatible-daemon"
        );
        assert_eq!(
            names(&FirewallRefusal::ALL.iter().map(|r| r.as_str()).collect::<Vec<_>>()),
            "prohibited,unresolved-evidence,check-unavailable,norm-violation,approval-required"
        );
        for r in FirewallRefusal::ALL {
            assert_eq!(FirewallRefusal::parse(r.as_str()), Some(*r));
        }
        let e = FirewallSendError::new(FirewallRefusal::NormViolation, Some("do not share the key".into()));
        assert_eq!(
            e.to_string(),
            "send failed: the local message firewall refused it (norm-violation): do not share the key"
        );
        assert_eq!(
            FirewallSendError::new(FirewallRefusal::CheckUnavailable, None)
                .as_reply()
                .to_string(),
            "reply failed: the local message firewall refused it (check-unavailable)"
        );
        for r in SendErrorReason::ALL {
            assert_eq!(SendErrorReason::parse(r.as_str()), Some(*r));
        }
        assert_eq!(SendErrorReason::parse("Invalid-Address"), None);
    }

    /// `KINDS` is every variant's `kind()`, in the spec's order: the match makes a new variant
    /// fail to compile here until it is listed.
    #[test]
    fn kinds_are_every_variants_kind() {
        let to = MessageAddress::Agent(AgentAddress::parse("agent:bob").unwrap());
        let every = [
            CollectiveFailure::MembersUnreachable(Vec::new()),
            CollectiveFailure::SchemaInvalid(Vec::new()),
            CollectiveFailure::AnswerInvalid(Vec::new()),
            CollectiveFailure::RequestNone(to.clone()),
            CollectiveFailure::RequestAmbiguous(to.clone()),
            CollectiveFailure::RequestAnswered(to),
            CollectiveFailure::RequestExpired,
            CollectiveFailure::DeadlinePassed,
        ];
        for f in &every {
            match f {
                CollectiveFailure::MembersUnreachable(_)
                | CollectiveFailure::SchemaInvalid(_)
                | CollectiveFailure::AnswerInvalid(_)
                | CollectiveFailure::RequestNone(_)
                | CollectiveFailure::RequestAmbiguous(_)
                | CollectiveFailure::RequestAnswered(_)
                | CollectiveFailure::RequestExpired
                | CollectiveFailure::DeadlinePassed => {}
            }
        }
        let kinds: Vec<&str> = every.iter().map(CollectiveFailure::kind).collect();
        assert_eq!(kinds, CollectiveFailure::KINDS);
    }

    #[test]
    fn messages_are_the_action_then_the_cause() {
        let dana = AgentAddress::parse("agent:dana").unwrap();
        assert_eq!(
            SendError::unknown_agent(&dana).to_string(),
            "send failed: agent:dana is not a known agent"
        );
        let id = CollectiveId::parse("col_AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8").unwrap();
        let e = CollectiveError {
            id: id.clone(),
            failure: CollectiveFailure::RequestExpired,
        };
        assert_eq!(e.to_string(), "reply failed: the question's deadline has passed");
        let e = CollectiveError {
            id,
            failure: CollectiveFailure::MembersUnreachable(vec![
                UnreachableMember {
                    member: dana,
                    reason: SendErrorReason::UnknownAgent,
                    detail: None,
                },
                UnreachableMember {
                    member: AgentAddress::parse("agent:erin").unwrap(),
                    reason: SendErrorReason::CertificationUnavailable,
                    detail: None,
                },
            ]),
        };
        assert_eq!(
            e.to_string(),
            "send failed: agent:dana is not a known agent; agent:erin was not reached (certification-unavailable)"
        );
        assert_eq!(
            ListenError::new(ListenErrorReason::AlreadyListening).to_string(),
            "listen failed: this endpoint already has a message subscription"
        );
        assert_eq!(
            ConnectError::with_detail(ConnectErrorReason::IncompatibleDaemon, "no MCP Events").to_string(),
            "connect failed: the daemon does not speak this endpoint's protocol: no MCP Events"
        );
        let m = MessageTextError {
            issues: vec![
                FieldIssue::missing(JsonPath::root("deadline")),
                FieldIssue::invalid(JsonPath::root("requestedSchema").key("type"), "\"object\""),
            ],
        };
        assert_eq!(
            m.to_string(),
            "send failed: the message states an invalid operation: deadline is missing; requestedSchema.type: expected \"object\""
        );
        let bob = MessageAddress::Agent(AgentAddress::parse("agent:bob").unwrap());
        let group =
            MessageAddress::Group(crate::harness::address::GroupAddress::parse("group:alice,bob,carol").unwrap());
        let reply = |failure| {
            CollectiveError {
                id: CollectiveId::parse("col_AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8").unwrap(),
                failure,
            }
            .to_string()
        };
        assert_eq!(
            reply(CollectiveFailure::RequestNone(bob.clone())),
            "reply failed: no question is open in the conversation with agent:bob"
        );
        assert_eq!(
            reply(CollectiveFailure::RequestAmbiguous(group.clone())),
            "reply failed: more than one question is open in group:alice,bob,carol"
        );
        assert_eq!(
            reply(CollectiveFailure::RequestAnswered(bob.clone())),
            "reply failed: the question in the conversation with agent:bob was already answered"
        );
        assert_eq!(CollectiveFailure::RequestNone(bob).kind(), "request-none");
    }

    /// Review finding "Error messages": invalid input is quoted as a JSON string, not with
    /// Rust's `{:?}` escapes (which write `\u{7}`, `\0` and `\'`, and leave U+0085 bare).
    #[test]
    fn refused_input_is_quoted_as_a_json_string() {
        assert_eq!(quote("agent:da na"), r#""agent:da na""#);
        assert_eq!(
            quote("a\"b\\c\nd\te\u{7}f\0g'h é"),
            r#""a\"b\\c\nd\te\u0007f\u0000g'h é""#
        );
        assert_eq!(
            SendError::invalid_address("agent:da na", "a space").to_string(),
            r#"send failed: "agent:da na" is not an address: a space"#
        );
        assert_eq!(
            SendError::invalid_address("agent:\u{7}bell'", "why").to_string(),
            r#"send failed: "agent:\u0007bell'" is not an address: why"#
        );
        // Long input: the first 80 characters, quoted, then an ellipsis.
        let long = format!("agent:{}", "\n".repeat(100));
        assert_eq!(
            SendError::invalid_address(&long, "why").to_string(),
            format!("send failed: \"agent:{}\"… is not an address: why", "\\n".repeat(74))
        );
        // 80 characters are shown whole, 81 cut to 80 (characters, not bytes: é is two).
        let at_limit = format!("agent:{}", "é".repeat(74));
        assert_eq!(
            SendError::invalid_address(&at_limit, "why").to_string(),
            format!("send failed: \"{at_limit}\" is not an address: why")
        );
        assert_eq!(
            SendError::invalid_address(&format!("{at_limit}x"), "why").to_string(),
            format!("send failed: \"{at_limit}\"… is not an address: why")
        );
        // Every quoted text reads back as the input.
        for input in [
            "plain",
            "quote\"",
            "back\\slash",
            "ctl\u{1}\u{1f}\u{7f}",
            "nel\u{85}",
            "😀",
        ] {
            let q = quote(input);
            assert_eq!(serde_json::from_str::<String>(&q).unwrap(), input);
            assert_eq!(q, serde_json::to_string(input).unwrap());
        }
    }
}
