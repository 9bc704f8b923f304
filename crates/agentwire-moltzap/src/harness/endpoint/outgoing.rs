//! `send`: validation before anything is posted, the member lookup, the posts, and how a
//! refusal is routed (`failureDelivery`).

use super::firewall::{CheckId, OutgoingOp};
use super::gate::{ask_check_op, released_refusal};
use super::{wire, Call, Endpoint, SendFailure, SendId};
use crate::frame::Generation;
use crate::harness::address::{AgentAddress, MessageAddress, MessageAddressInput};
use crate::harness::collective::{multicast_content, request_content, AskOp};
use crate::harness::content::Content;
use crate::harness::errors::{CollectiveError, CollectiveFailure, SendError, SendErrorReason, UnreachableMember};
use crate::harness::guidance::CheckedGuidance;
use crate::harness::id::{CollectiveId, Nonce, PostId};
use crate::harness::inbound::InboundItem;
use crate::harness::json::JsonValue;
use crate::harness::send::{build_request, CollectiveOperation, FailureDelivery, SendInput, SendOptions, SendResult};
use crate::MoltZapError;
use agentwire_core::Millis;

/// A send in progress.
pub(super) struct PendingSend {
    pub options: SendOptions,
    pub kind: Kind,
    /// The firewall's advice on the admitted send.
    pub guidance: Option<CheckedGuidance>,
    /// Its firewall check, while pending.
    pub check: Option<CheckId>,
    /// Its lookup or post started (after its check and the connection).
    pub launched: bool,
    /// What its content takes ([`super::content_footprint`]), counted in
    /// `waiting_send_bytes` until it is launched.
    pub bytes: usize,
}

#[derive(Clone)]
pub(super) enum Kind {
    /// One post; a group's names are looked up first. `post_id` is set once minted (or given
    /// by a resumed intent).
    Multicast {
        to: MessageAddress,
        content: Content,
        post_id: Option<PostId>,
    },
    /// A gather or all_gather: its state is in `Endpoint::asks`.
    Ask(CollectiveId),
    /// An answer to the held request `request`, claimed when it goes out.
    Answer {
        request: CollectiveId,
        to: MessageAddress,
        content: Content,
    },
}

/// A multicast whose outcome is unknown (`outcome-unknown`: it timed out or the connection
/// ended after it was sent). The host may keep it (it is plain data) and [`Endpoint::resume`]
/// it, on this endpoint or a new one after a restart: the same `PostId` goes out again, and the
/// server keeps one post.
#[derive(Debug, Clone, PartialEq)]
pub struct UnfinishedIntent {
    pub post_id: PostId,
    pub to: MessageAddress,
    pub content: Content,
}

/// Unfinished intents kept (oldest dropped first).
const UNFINISHED_CAP: usize = 256;

/// The `to` text of a post.
pub(super) fn to_text(to: &MessageAddress) -> String {
    to.to_string()
}

impl Endpoint {
    /// Starts one send. Validation that needs no network (address, content, deadline, the
    /// answer's request and its content against that request's schema) happens here, before
    /// anything is posted (a gather's `RequestedSchema` is valid already: only
    /// `RequestedSchema::parse` builds one, so no send is `schema-invalid`): a refusal is returned at
    /// once (or, for a refused gather, all_gather or answer under `failureDelivery: "inbound"`,
    /// any refusal but the firewall's, the send completes naming its operation, an id minted
    /// for the refusal when none was yet, and an `operationFailed` item follows). Otherwise the
    /// outcome comes as exactly one `SendDone` for the returned id: the send first waits for
    /// its firewall check, if one is installed, and for the connection (at most
    /// `attach_wait_ms`), then goes out.
    pub fn send(&mut self, now: Millis, input: SendInput, options: SendOptions) -> Result<SendId, SendFailure> {
        let send = SendId(self.next_send);
        self.next_send += 1;
        let collective = matches!(
            input,
            SendInput::Message {
                collective: Some(CollectiveOperation::Ask { .. }),
                ..
            } | SendInput::Response { .. }
        );
        let input_to = input.to().clone();
        match self.start(now, send, input, options) {
            Ok(()) => Ok(send),
            Err((failure, operation)) => {
                let operation = match (operation, &failure) {
                    // A gather, all_gather or answer refused before its id was minted (not
                    // connected, its address, its deadline, the released generation): under
                    // `failureDelivery: "inbound"` it is still a refused operation, so it gets
                    // an id of its own and its failure goes inbound like any other.
                    (None, SendFailure::Send(_) | SendFailure::Collective(_))
                        if collective && options.failure_delivery == FailureDelivery::Inbound =>
                    {
                        let id = CollectiveId::mint(self.entropy.as_mut());
                        let to = input_to
                            .canonical(&self.cfg.agent)
                            .map(MessageAddressInput::from)
                            .unwrap_or(input_to);
                        Some((id, to))
                    }
                    (operation, _) => operation,
                };
                self.refused(send, options, operation, failure)
            }
        }
    }

    /// A refusal before the send was registered: returned, or routed inbound.
    fn refused(
        &mut self,
        send: SendId,
        options: SendOptions,
        operation: Option<(CollectiveId, MessageAddressInput)>,
        failure: SendFailure,
    ) -> Result<SendId, SendFailure> {
        match (options.failure_delivery, operation, &failure) {
            (FailureDelivery::Inbound, Some((id, to)), SendFailure::Send(_) | SendFailure::Collective(_)) => {
                self.events.push_back(super::EndpointEvent::SendDone {
                    send,
                    outcome: Ok(SendResult {
                        operation_id: Some(id.clone()),
                        guidance: None,
                    }),
                });
                let error = failure.to_string();
                self.admit_local(InboundItem::OperationFailed { id, to, error });
                Ok(send)
            }
            _ => Err(failure),
        }
    }

    /// Ends a registered send with a failure, routed as its options say. `operation` names the
    /// collective operation the failure belongs to (none for a multicast).
    pub(super) fn fail(
        &mut self,
        send: SendId,
        operation: Option<(CollectiveId, MessageAddressInput)>,
        failure: SendFailure,
    ) {
        let Some(pending) = self.end_send(send) else {
            return;
        };
        let options = pending.options;
        if let Err(failure) = self.refused(send, options, operation, failure) {
            self.events.push_back(super::EndpointEvent::SendDone {
                send,
                outcome: Err(failure),
            });
        }
    }

    /// Removes a send that ended, with its timers and its pending check.
    pub(super) fn end_send(&mut self, send: SendId) -> Option<PendingSend> {
        let pending = self.sends.remove(&send)?;
        if !pending.launched {
            self.waiting_sends -= 1;
            self.waiting_send_bytes -= pending.bytes;
        }
        self.timers.cancel(&super::Timer::SendWait(send));
        self.timers.cancel(&super::Timer::Attach(send));
        if let Some(check) = pending.check {
            self.drop_check(check);
        }
        Some(pending)
    }

    /// The send succeeded.
    pub(super) fn succeed(&mut self, send: SendId, operation_id: Option<CollectiveId>) {
        let guidance = self.sends.get_mut(&send).and_then(|s| s.guidance.take());
        self.done(send, Ok(SendResult { operation_id, guidance }));
    }

    #[allow(clippy::type_complexity)]
    fn start(
        &mut self,
        now: Millis,
        send: SendId,
        input: SendInput,
        options: SendOptions,
    ) -> Result<(), (SendFailure, Option<(CollectiveId, MessageAddressInput)>)> {
        let plain = |e: SendError| (SendFailure::Send(e), None);
        if !self.may_send() {
            return Err(plain(SendError::new(
                SendErrorReason::NetworkUnavailable,
                "the endpoint is not connected",
            )));
        }
        // Known before the connection only when configured; checked again at launch.
        let released = self.session.generation() == Generation::Released;
        let to = input.to().canonical(&self.cfg.agent).map_err(plain)?;
        match input {
            SendInput::Message {
                text,
                collective: None | Some(CollectiveOperation::Multicast),
                ..
            } => {
                if released && matches!(to, MessageAddress::Group(_)) {
                    return Err(plain(released_refusal("group sends")));
                }
                let content = multicast_content(&text).map_err(plain)?;
                self.wait_room(&content).map_err(plain)?;
                let check = self
                    .check_send(now, send, OutgoingOp::Multicast, &to, &content)
                    .map_err(|f| (f, None))?;
                let kind = Kind::Multicast {
                    to,
                    content,
                    post_id: None,
                };
                self.register(now, send, options, kind, check);
                Ok(())
            }
            SendInput::Message {
                text,
                collective:
                    Some(CollectiveOperation::Ask {
                        op,
                        deadline,
                        requested_schema,
                    }),
                ..
            } => {
                if released {
                    return Err(plain(released_refusal("collective operations")));
                }
                let members: Vec<AgentAddress> = match (&to, op) {
                    (MessageAddress::Agent(a), AskOp::Gather) => vec![a.clone()],
                    (MessageAddress::Group(g), _) => g.others(&self.cfg.agent).cloned().collect(),
                    (MessageAddress::Agent(a), AskOp::AllGather) => {
                        return Err(plain(SendError::membership_invalid(format!(
                            "an all_gather asks a group of two or more other agents, and {a} is one agent"
                        ))))
                    }
                };
                let nonce = Nonce::mint(self.entropy.as_mut());
                let part = build_request(op, &self.cfg.agent, nonce, now, deadline, requested_schema.clone())
                    .ok_or_else(|| {
                        plain(SendError::content_invalid(format!(
                            "the deadline must be whole seconds from 1 to {}, and is {deadline}",
                            crate::harness::send::MAX_DEADLINE_SECS
                        )))
                    })?;
                let id = part.id.clone();
                let deadline_at = part.deadline_at;
                let operation = Some((id.clone(), MessageAddressInput::from(to.clone())));
                let content = request_content(&text, part).map_err(|e| (SendFailure::Send(e), operation.clone()))?;
                if self.asks.len() >= self.cfg.max_operations {
                    let e = SendError::new(
                        SendErrorReason::NetworkUnavailable,
                        "too many collective operations are open",
                    );
                    return Err((SendFailure::Send(e), operation));
                }
                self.wait_room(&content)
                    .map_err(|e| (SendFailure::Send(e), operation.clone()))?;
                let check = self
                    .check_send(now, send, ask_check_op(op), &to, &content)
                    .map_err(|f| (f, None))?;
                self.asks.insert(
                    id.clone(),
                    super::asks::Ask::new(
                        op,
                        id.clone(),
                        send,
                        to,
                        text,
                        requested_schema,
                        deadline_at,
                        members,
                        content,
                    ),
                );
                // The deadline runs from now: a send still waiting for its check or the
                // connection when it passes fails `deadline-passed`.
                self.timers.set(super::Timer::Deadline(id.clone()), deadline_at);
                self.register(now, send, options, Kind::Ask(id), check);
                Ok(())
            }
            SendInput::Response { response, .. } => {
                if released {
                    return Err(plain(released_refusal("collective answers")));
                }
                self.start_answer(now, send, to, response, options)
            }
        }
    }

    /// A validated send: it goes out once its check is in and the endpoint is connected.
    pub(super) fn register(
        &mut self,
        now: Millis,
        send: SendId,
        options: SendOptions,
        kind: Kind,
        check: Option<CheckId>,
    ) {
        // A send that goes out at once (connected, no check) never waits: it is not measured.
        let at_once = check.is_none() && self.session.state() == crate::session::SessionState::Ready;
        let bytes = match &kind {
            _ if at_once => 0,
            Kind::Multicast { content, .. } | Kind::Answer { content, .. } => super::content_footprint(content),
            Kind::Ask(id) => self.asks.get(id).map_or(0, |a| super::content_footprint(&a.content)),
        };
        self.waiting_sends += 1;
        self.waiting_send_bytes += bytes;
        self.sends.insert(
            send,
            PendingSend {
                options,
                kind,
                guidance: None,
                check,
                launched: false,
                bytes,
            },
        );
        self.try_launch(now, send);
    }

    /// The multicasts whose outcome is unknown, oldest first.
    pub fn unfinished(&self) -> &[UnfinishedIntent] {
        &self.unfinished
    }

    /// Sends an unfinished intent again with its own `PostId` (and drops it from
    /// [`Endpoint::unfinished`]). It was checked when first sent, so no firewall check runs; it
    /// waits for the connection as a send does. The outcome comes as a `SendDone` like any
    /// send's.
    pub fn resume(&mut self, now: Millis, intent: UnfinishedIntent) -> Result<SendId, SendFailure> {
        if !self.may_send() {
            return Err(SendError::new(SendErrorReason::NetworkUnavailable, "the endpoint is not connected").into());
        }
        if self.session.generation() == Generation::Released {
            // A released server keeps no postId: sending again could post twice.
            return Err(SendError::new(
                SendErrorReason::VersionMismatch,
                "the server speaks the released MoltZap generation, which keeps no post identity to resume",
            )
            .into());
        }
        self.wait_room(&intent.content)?;
        self.unfinished.retain(|u| u.post_id != intent.post_id);
        let send = SendId(self.next_send);
        self.next_send += 1;
        let kind = Kind::Multicast {
            to: intent.to,
            content: intent.content,
            post_id: Some(intent.post_id),
        };
        self.register(now, send, SendOptions::default(), kind, None);
        Ok(send)
    }

    /// `agents/lookupByName` for `names`.
    pub(super) fn lookup(&mut self, now: Millis, send: SendId, names: &[AgentAddress]) {
        let names: Vec<JsonValue> = names.iter().map(|a| a.name().into()).collect();
        let params = crate::harness::canonical::to_canonical(&JsonValue::object([("names", JsonValue::Array(names))]));
        if let Err(e) = self.call(now, "agents/lookupByName", &params, Call::Lookup(send)) {
            self.members_resolved(now, send, Err(e));
        }
    }

    /// One post of a send (`member` names a gather's member).
    pub(super) fn post(
        &mut self,
        now: Millis,
        send: SendId,
        member: Option<AgentAddress>,
        to: &MessageAddress,
        content: &Content,
    ) {
        let post_id = match self.sends.get_mut(&send).map(|p| &mut p.kind) {
            Some(Kind::Multicast { post_id: Some(p), .. }) => p.clone(),
            Some(Kind::Multicast { post_id, .. }) => {
                let minted = PostId::mint(self.entropy.as_mut());
                *post_id = Some(minted.clone());
                minted
            }
            _ => PostId::mint(self.entropy.as_mut()),
        };
        let released = self.session.generation() == Generation::Released;
        let params = wire::send_params(&to_text(to), content, &post_id, released);
        let call = Call::Post {
            send,
            member: member.clone(),
        };
        if let Err(e) = self.call(now, "messages/send", &params, call) {
            self.post_answered(now, send, member, Err(e));
        }
    }

    pub(super) fn members_resolved(&mut self, now: Millis, send: SendId, result: Result<String, MoltZapError>) {
        let Some(pending) = self.sends.get(&send) else {
            return;
        };
        let wanted: Vec<AgentAddress> = match &pending.kind {
            Kind::Multicast {
                to: MessageAddress::Group(g),
                ..
            } => g.others(&self.cfg.agent).cloned().collect(),
            Kind::Ask(id) => match self.asks.get(id) {
                Some(a) => a.members.clone(),
                None => return,
            },
            _ => return,
        };
        let known = match result {
            Ok(text) => known_names(&text),
            Err(e) => {
                // A lookup posts nothing: one that may have reached the Registry (a timeout, a
                // close after it went out) is `network-unavailable`, its cause saying so.
                let failure = match wire::send_failure(&e, "the Registry") {
                    f if f.reason == SendErrorReason::OutcomeUnknown => SendError::new(
                        SendErrorReason::NetworkUnavailable,
                        format!("the Registry was not reached ({})", e.error.message),
                    ),
                    f => f,
                };
                let operation = self.operation_of(send);
                if let Some((id, _)) = &operation {
                    self.drop_ask(id);
                }
                self.fail(send, operation, SendFailure::Send(failure));
                return;
            }
        };
        let unknown: Vec<AgentAddress> = wanted
            .into_iter()
            .filter(|m| !known.iter().any(|k| k == m.name()))
            .collect();
        match self.sends.get(&send).map(|p| &p.kind) {
            Some(Kind::Multicast { to, content, .. }) => {
                let (to, content) = (to.clone(), content.clone());
                match unknown.first() {
                    Some(u) => self.fail(send, None, SendFailure::Send(SendError::unknown_agent(u))),
                    None => self.post(now, send, None, &to, &content),
                }
            }
            Some(Kind::Ask(id)) => {
                let id = id.clone();
                if unknown.is_empty() {
                    self.ask_resolved(now, &id);
                } else {
                    let operation = self.operation_of(send);
                    self.drop_ask(&id);
                    let members = unknown
                        .into_iter()
                        .map(|member| UnreachableMember {
                            member,
                            reason: SendErrorReason::UnknownAgent,
                            detail: None,
                        })
                        .collect();
                    let failure = CollectiveError {
                        id,
                        failure: CollectiveFailure::MembersUnreachable(members),
                    };
                    self.fail(send, operation, failure.into());
                }
            }
            _ => {}
        }
    }

    /// The collective operation a send runs, with its address (for inbound failures).
    pub(super) fn operation_of(&self, send: SendId) -> Option<(CollectiveId, MessageAddressInput)> {
        match &self.sends.get(&send)?.kind {
            Kind::Multicast { .. } => None,
            Kind::Ask(id) => self.asks.get(id).map(|a| (id.clone(), a.to.clone().into())),
            Kind::Answer { request, to, .. } => Some((request.clone(), to.clone().into())),
        }
    }

    pub(super) fn post_answered(
        &mut self,
        now: Millis,
        send: SendId,
        member: Option<AgentAddress>,
        result: Result<String, MoltZapError>,
    ) {
        let Some(pending) = self.sends.get(&send) else {
            // A gather's send returned before all its posts settled: the ask still counts them.
            if let Some(id) = self.asks.iter().find(|(_, a)| a.send == send).map(|(id, _)| id.clone()) {
                self.ask_post_settled(now, &id, member, result);
            }
            return;
        };
        match &pending.kind {
            Kind::Multicast { to, content, post_id } => match result {
                Ok(_) => self.succeed(send, None),
                Err(e) => {
                    let failure = wire::send_failure(&e, &to_text(to));
                    if let (SendErrorReason::OutcomeUnknown, Some(post_id)) = (failure.reason, post_id) {
                        if self.unfinished.len() >= UNFINISHED_CAP {
                            self.unfinished.remove(0);
                        }
                        self.unfinished.push(UnfinishedIntent {
                            post_id: post_id.clone(),
                            to: to.clone(),
                            content: content.clone(),
                        });
                    }
                    self.fail(send, None, failure.into());
                }
            },
            Kind::Ask(id) => {
                let id = id.clone();
                self.ask_post_settled(now, &id, member, result);
            }
            Kind::Answer { request, .. } => {
                let request = request.clone();
                self.answer_settled(now, send, &request, result);
            }
        }
    }
}

/// The names an `agents/lookupByName` answer lists (`{agents: [{name}]}`).
fn known_names(text: &str) -> Vec<String> {
    let Ok(JsonValue::Object(o)) = JsonValue::parse(text) else {
        return Vec::new();
    };
    let Some(JsonValue::Array(agents)) = o.get("agents") else {
        return Vec::new();
    };
    agents
        .iter()
        .filter_map(|a| match a {
            JsonValue::Object(card) => match card.get("name") {
                Some(JsonValue::String(n)) => Some(n.clone()),
                _ => None,
            },
            _ => None,
        })
        .collect()
}
