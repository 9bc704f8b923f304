//! The values of MoltZap's `HarnessEndpoint` contract (`../shared/specs/moltzap-harness-endpoint.md`),
//! as pure, sans-IO code: canonical JSON, addresses, content, the collective part on the wire,
//! the collective id, inbound classification of a certified record, the requested-schema and
//! answer validation, `parseMessageText`, the inbound items and the firewall's guidance as
//! values, and the closed failures; and the endpoint (`endpoint`): the operations over a session,
//! delivery and acknowledgement, the wait for the connection and the message firewall's checks.
//! The decisions are in `docs/protocols/moltzap-harness.md`.

pub mod address;
pub mod canonical;
pub mod classify;
pub mod collective;
pub mod content;
pub mod endpoint;
pub mod errors;
pub mod guidance;
pub mod id;
pub mod inbound;
pub mod json;
pub mod message_text;
pub mod schema;
pub mod send;

pub use address::{AgentAddress, GroupAddress, MessageAddress, MessageAddressInput};
pub use canonical::{format_number, to_canonical};
pub use classify::{classify, Classified, ConsumeReason, Conversation, InboundRequest};
pub use collective::{AskOp, ClosePart, CollectivePart, CollectiveResponse, RecordHash, RequestPart, ResponsePart};
pub use content::{Content, Part, MAX_CONTENT_BYTES};
pub use endpoint::{
    CheckId, CheckSubject, DeliveryId, Endpoint, EndpointConfig, EndpointEvent, FirewallConfig, FirewallVerdict,
    InboundDelivery, LogEntry, LogKind, OutgoingOp, SendFailure, SendId, UnfinishedIntent, MAX_RECORD_ID_BYTES,
};
pub use errors::{
    CollectiveError, CollectiveFailure, ConnectError, ConnectErrorReason, DeliveryAcknowledgeError,
    DeliveryAcknowledgeErrorReason, FieldIssue, FieldProblem, FirewallRefusal, FirewallSendError, ListenError,
    ListenErrorReason, MessageTextError, SendError, SendErrorReason,
};
pub use guidance::{
    AnswerGuidance, CheckedGuidance, Instruction, LocalGuidance, Probability, ProbabilityError, ResponseExpectation,
    Subject,
};
pub use id::{CollectiveId, Nonce, PostId};
pub use inbound::{
    CollectiveMemberOutcome, CollectiveResult, DirectMessage, GroupMessage, InboundItem, InboundMessage,
    InboundValueError, MemberOutcome, QuestionOrWithheld, Withheld,
};
pub use json::{JsonError, JsonNumber, JsonObject, JsonPath, JsonValue};
pub use message_text::parse_message_text;
pub use schema::{AnswerContent, AnswerValue, PrimitiveSchema, RequestedSchema};
pub use send::{CollectiveOperation, FailureDelivery, SendInput, SendOptions, SendResult};
