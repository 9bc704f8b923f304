//! The requester's side of a gather or all_gather: the request posts, the send's wait, the
//! answers counted (each member's first, before the deadline), and the one result, or the
//! all_gather's close and then its result.

use super::{wire, Call, Endpoint, SendFailure, SendId, Timer};
use crate::harness::address::{AgentAddress, MessageAddress};
use crate::harness::classify::Conversation;
use crate::harness::collective::{close_content, AskOp, ClosePart, CollectiveResponse, RecordHash, ResponsePart};
use crate::harness::content::Content;
use crate::harness::errors::{CollectiveError, CollectiveFailure, SendErrorReason, UnreachableMember};
use crate::harness::id::CollectiveId;
use crate::harness::inbound::{
    CollectiveMemberOutcome, CollectiveResult, InboundItem, MemberOutcome, QuestionOrWithheld,
};
use crate::harness::json::JsonPath;
use crate::harness::schema::RequestedSchema;
use crate::MoltZapError;
use agentwire_core::Millis;
use std::collections::BTreeMap;

/// Where a request post is.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Post {
    Pending,
    Certified,
    Refused(UnreachableMember),
}

#[derive(Debug, Clone, PartialEq)]
enum Stage {
    /// Waiting for its firewall check or the connection: nothing posted yet.
    Waiting,
    /// Members being looked up.
    Resolving,
    /// Posts out; answers counted.
    Running,
    /// An all_gather's close is being certified, with the outcomes it gives.
    Closing(Vec<MemberOutcome>),
}

/// A gather or all_gather this endpoint started.
pub(super) struct Ask {
    pub op: AskOp,
    pub id: CollectiveId,
    pub send: SendId,
    pub to: MessageAddress,
    pub question: String,
    pub schema: RequestedSchema,
    pub deadline_at: u64,
    /// In member order (sorted).
    pub members: Vec<AgentAddress>,
    /// The request's content, as posted.
    pub content: Content,
    /// A gather's post per member; an all_gather's one post under its first member.
    posts: BTreeMap<AgentAddress, Post>,
    /// Each member's first answer, with its record hash.
    answers: BTreeMap<AgentAddress, (CollectiveResponse, RecordHash)>,
    stage: Stage,
}

impl Ask {
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        op: AskOp,
        id: CollectiveId,
        send: SendId,
        to: MessageAddress,
        question: String,
        schema: RequestedSchema,
        deadline_at: u64,
        members: Vec<AgentAddress>,
        content: Content,
    ) -> Ask {
        Ask {
            op,
            id,
            send,
            to,
            question,
            schema,
            deadline_at,
            members,
            content,
            posts: BTreeMap::new(),
            answers: BTreeMap::new(),
            stage: Stage::Waiting,
        }
    }

    fn all_refused(&self) -> bool {
        !self.posts.is_empty() && self.posts.values().all(|p| matches!(p, Post::Refused(_)))
    }

    fn any_pending(&self) -> bool {
        self.posts.values().any(|p| *p == Post::Pending)
    }

    /// Every member has an outcome: an answer, or (gather) a refused post.
    fn every_member_settled(&self) -> bool {
        self.members.iter().all(|m| {
            self.answers.contains_key(m)
                || (self.op == AskOp::Gather && matches!(self.posts.get(m), Some(Post::Refused(_))))
        })
    }
}

/// A member's outcome from its answer, validated against the request's schema.
pub(super) fn outcome_of(response: &CollectiveResponse, schema: &RequestedSchema) -> CollectiveMemberOutcome {
    match response {
        CollectiveResponse::Decline => CollectiveMemberOutcome::Declined,
        CollectiveResponse::Accept(content) => match schema.validate(content, &JsonPath::root("content")) {
            Ok(()) => CollectiveMemberOutcome::Answered {
                content: content.clone(),
            },
            Err(issues) => CollectiveMemberOutcome::Invalid {
                reason: issues.iter().map(ToString::to_string).collect::<Vec<_>>().join("; "),
            },
        },
    }
}

impl Endpoint {
    /// The send went out: its members are looked up.
    pub(super) fn ask_launched(&mut self, id: &CollectiveId) {
        if let Some(ask) = self.asks.get_mut(id) {
            ask.stage = Stage::Resolving;
        }
    }

    /// An ask ends: it is dropped with its deadline timer (the one place an ask is removed).
    pub(super) fn drop_ask(&mut self, id: &CollectiveId) -> Option<Ask> {
        self.timers.cancel(&Timer::Deadline(id.clone()));
        self.asks.remove(id)
    }

    /// The members are known: post the request(s) and start the clocks. A deadline that passed
    /// while the members were looked up fails the send `deadline-passed`, with nothing posted.
    pub(super) fn ask_resolved(&mut self, now: Millis, id: &CollectiveId) {
        let Some(ask) = self.asks.get_mut(id) else {
            return;
        };
        if now >= ask.deadline_at {
            let failure = CollectiveError {
                id: id.clone(),
                failure: CollectiveFailure::DeadlinePassed,
            };
            let send = ask.send;
            return self.abort(send, failure.into());
        }
        ask.stage = Stage::Running;
        let (send, deadline_at, op) = (ask.send, ask.deadline_at, ask.op);
        let content = ask.content.clone();
        let to = ask.to.clone();
        let members = ask.members.clone();
        let wait_until = now.saturating_add(self.cfg.send_wait_ms).min(deadline_at);
        self.timers.set(Timer::SendWait(send), wait_until);
        self.timers.set(Timer::Deadline(id.clone()), deadline_at);
        match op {
            AskOp::Gather => {
                for m in &members {
                    if let Some(a) = self.asks.get_mut(id) {
                        a.posts.insert(m.clone(), Post::Pending);
                    }
                }
                for m in members {
                    let direct = MessageAddress::Agent(m.clone());
                    self.post(now, send, Some(m), &direct, &content);
                }
            }
            AskOp::AllGather => {
                if let Some(first) = members.first() {
                    if let Some(a) = self.asks.get_mut(id) {
                        a.posts.insert(first.clone(), Post::Pending);
                    }
                    self.post(now, send, Some(first.clone()), &to, &content);
                }
            }
        }
    }

    /// A request post was certified or refused.
    pub(super) fn ask_post_settled(
        &mut self,
        now: Millis,
        id: &CollectiveId,
        member: Option<AgentAddress>,
        result: Result<String, MoltZapError>,
    ) {
        let Some(ask) = self.asks.get_mut(id) else {
            return;
        };
        let Some(member) = member else {
            return;
        };
        let to_text = super::outgoing::to_text(&MessageAddress::Agent(member.clone()));
        let settled = match result {
            Ok(_) => Post::Certified,
            Err(e) => {
                let failure = wire::send_failure(&e, &to_text);
                Post::Refused(UnreachableMember {
                    member: member.clone(),
                    reason: failure.reason,
                    detail: Some(e.error.message.clone()),
                })
            }
        };
        // An answer may have shown the post certified already.
        if ask.posts.get(&member) == Some(&Post::Pending) {
            ask.posts.insert(member, settled);
        }
        let send = ask.send;
        match ask.op {
            AskOp::Gather => {
                if ask.all_refused() && self.sends.contains_key(&send) {
                    // Refused before the send returned: the operation never starts.
                    self.ask_refused(id);
                } else if ask.all_refused() {
                    // The send already returned the id: refused members are `no-answer`.
                    self.maybe_complete(now, id);
                } else if !ask.any_pending() {
                    self.succeed(send, Some(id.clone()));
                    self.maybe_complete(now, id);
                } else {
                    self.maybe_complete(now, id);
                }
            }
            AskOp::AllGather => {
                if let Some(Post::Refused(refused)) = ask.posts.values().next().cloned() {
                    if self.sends.contains_key(&send) {
                        self.all_gather_unreachable(id, refused.reason, refused.detail);
                    }
                } else {
                    self.succeed(send, Some(id.clone()));
                }
            }
        }
    }

    /// Every gather post was refused: the send fails naming every member, and nothing starts.
    fn ask_refused(&mut self, id: &CollectiveId) {
        let Some(ask) = self.drop_ask(id) else {
            return;
        };
        let members = ask
            .posts
            .into_values()
            .filter_map(|p| match p {
                Post::Refused(m) => Some(m),
                _ => None,
            })
            .collect();
        let failure = CollectiveError {
            id: id.clone(),
            failure: CollectiveFailure::MembersUnreachable(members),
        };
        let operation = Some((id.clone(), ask.to.into()));
        self.fail(ask.send, operation, failure.into());
    }

    /// An all_gather's group post was refused or not certified in time: every member is named.
    fn all_gather_unreachable(&mut self, id: &CollectiveId, reason: SendErrorReason, detail: Option<String>) {
        let Some(ask) = self.drop_ask(id) else {
            return;
        };
        let members = ask
            .members
            .iter()
            .map(|m| UnreachableMember {
                member: m.clone(),
                reason,
                detail: detail.clone(),
            })
            .collect();
        let failure = CollectiveError {
            id: id.clone(),
            failure: CollectiveFailure::MembersUnreachable(members),
        };
        let operation = Some((id.clone(), ask.to.into()));
        self.fail(ask.send, operation, SendFailure::Collective(failure));
    }

    /// The send's wait is over: a gather returns its id (posts still certifying keep going); an
    /// all_gather whose post is not certified fails with `certification-unavailable`.
    pub(super) fn send_wait_over(&mut self, now: Millis, send: SendId) {
        let Some(id) = self.asks.iter().find(|(_, a)| a.send == send).map(|(id, _)| id.clone()) else {
            return;
        };
        let Some(ask) = self.asks.get(&id) else {
            return;
        };
        match ask.op {
            AskOp::Gather => self.succeed(send, Some(id)),
            AskOp::AllGather if ask.any_pending() && now < ask.deadline_at => {
                self.all_gather_unreachable(&id, SendErrorReason::CertificationUnavailable, None)
            }
            // At the deadline the operation completes, and its result stands.
            AskOp::AllGather => {}
        }
    }

    /// The requester's deadline: the operation completes with what it has. One still waiting
    /// for its check, the connection or its member lookup fails `deadline-passed`, with nothing
    /// posted.
    pub(super) fn deadline(&mut self, now: Millis, id: &CollectiveId) {
        if let Some(ask) = self.asks.get(id) {
            if matches!(ask.stage, Stage::Waiting | Stage::Resolving) {
                let failure = CollectiveError {
                    id: id.clone(),
                    failure: CollectiveFailure::DeadlinePassed,
                };
                self.abort(ask.send, failure.into());
            } else if ask.stage == Stage::Running {
                let send = ask.send;
                self.succeed(send, Some(id.clone()));
                self.complete(now, id);
            }
        }
    }

    fn maybe_complete(&mut self, now: Millis, id: &CollectiveId) {
        if let Some(ask) = self.asks.get(id) {
            if ask.stage == Stage::Running && ask.every_member_settled() {
                let send = ask.send;
                self.succeed(send, Some(id.clone()));
                self.complete(now, id);
            }
        }
    }

    /// Records an answer from `sender` in `conversation`; false when it belongs to no operation
    /// this endpoint started (the caller then tries the held requests).
    pub(super) fn ask_answer(
        &mut self,
        now: Millis,
        record: &str,
        conversation: &Conversation,
        sender: &AgentAddress,
        part: &ResponsePart,
        hash: &RecordHash,
    ) -> bool {
        let Some(ask) = self.asks.get_mut(&part.id) else {
            return false;
        };
        let in_place = match (ask.op, conversation, &ask.to) {
            (AskOp::Gather, Conversation::Direct { peer }, _) => peer == sender,
            (AskOp::AllGather, Conversation::Group(g), MessageAddress::Group(ours)) => g == ours,
            _ => false,
        };
        if !in_place || !ask.members.contains(sender) {
            self.log(Some(record), super::LogKind::AnswerUnmatched);
            return true;
        }
        if ask.stage != Stage::Running || ask.answers.contains_key(sender) || now >= ask.deadline_at {
            self.log(Some(record), super::LogKind::AnswerIgnored);
            return true;
        }
        ask.answers
            .insert(sender.clone(), (part.response.clone(), hash.clone()));
        // A member receives a request only once its post is certified, and the answer names
        // the id minted from that post's nonce: the post is certified (an all_gather's one post
        // is kept under its first member), and an all_gather's send returns the id.
        let post = match ask.op {
            AskOp::Gather => Some(sender),
            AskOp::AllGather => ask.members.first(),
        };
        if let Some(p) = post.and_then(|m| ask.posts.get_mut(m)).filter(|p| **p == Post::Pending) {
            *p = Post::Certified;
            if ask.op == AskOp::AllGather {
                let send = ask.send;
                self.succeed(send, Some(part.id.clone()));
            }
        }
        self.log(Some(record), super::LogKind::AnswerRecorded);
        self.maybe_complete(now, &part.id);
        true
    }

    /// The outcomes, in member order; a gather's result is delivered now, an all_gather's after
    /// its close is certified.
    fn complete(&mut self, now: Millis, id: &CollectiveId) {
        let Some(ask) = self.asks.get_mut(id) else {
            return;
        };
        self.timers.cancel(&Timer::Deadline(id.clone()));
        let outcomes: Vec<MemberOutcome> = ask
            .members
            .iter()
            .map(|m| MemberOutcome {
                member: m.clone(),
                outcome: match ask.answers.get(m) {
                    Some((response, _)) => outcome_of(response, &ask.schema),
                    None => CollectiveMemberOutcome::NoAnswer,
                },
            })
            .collect();
        match ask.op {
            AskOp::Gather => {
                let Some(ask) = self.drop_ask(id) else {
                    return;
                };
                self.deliver_result(now, ask, outcomes);
            }
            AskOp::AllGather => {
                let included: Vec<RecordHash> = ask
                    .members
                    .iter()
                    .filter_map(|m| ask.answers.get(m).map(|(_, h)| h.clone()))
                    .collect();
                ask.stage = Stage::Closing(outcomes);
                let to = ask.to.clone();
                let close = close_content(ClosePart {
                    id: id.clone(),
                    included,
                });
                match close {
                    Ok(content) => {
                        let post_id = crate::harness::id::PostId::mint(self.entropy.as_mut());
                        let params = wire::send_params(&to.to_string(), &content, &post_id, false);
                        if let Err(e) = self.call(now, "messages/send", &params, Call::Close(id.clone())) {
                            self.close_answered(now, id, Err(e));
                        }
                    }
                    Err(e) => self.close_failed(id, e.to_string()),
                }
            }
        }
    }

    /// The close was certified (the result is delivered) or not (`operationFailed`).
    pub(super) fn close_answered(&mut self, now: Millis, id: &CollectiveId, result: Result<String, MoltZapError>) {
        match result {
            Ok(_) => {
                let Some(mut ask) = self.drop_ask(id) else {
                    return;
                };
                let outcomes = match std::mem::replace(&mut ask.stage, Stage::Resolving) {
                    Stage::Closing(o) => o,
                    _ => return,
                };
                self.deliver_result(now, ask, outcomes);
            }
            Err(e) => {
                let to = self.asks.get(id).map(|a| a.to.to_string()).unwrap_or_default();
                let cause = wire::send_failure(&e, &to);
                self.close_failed(
                    id,
                    format!(
                        "send failed: the close was not certified ({}: {})",
                        cause.reason, e.error.message
                    ),
                );
            }
        }
    }

    fn close_failed(&mut self, id: &CollectiveId, error: String) {
        if let Some(ask) = self.drop_ask(id) {
            self.admit_local(InboundItem::OperationFailed {
                id: id.clone(),
                to: ask.to.into(),
                error,
            });
        }
    }

    /// The requester's result: its question is its own text, so only the answers are checked.
    fn deliver_result(&mut self, now: Millis, ask: Ask, outcomes: Vec<MemberOutcome>) {
        if let Ok(result) = CollectiveResult::new(
            ask.op,
            ask.id,
            ask.to.into(),
            QuestionOrWithheld::Text(ask.question),
            outcomes,
        ) {
            self.admit_result(now, result, None);
        }
    }
}
