//! A member's side: the requests it holds, an answer matched to the one open request of its
//! conversation, an all_gather's answers held by record hash until the requester's close, and
//! the result that close gives.

use super::firewall::{Admission, OutgoingOp};
use super::{Endpoint, LogKind, SendFailure, SendId, Timer};
use crate::harness::address::{AgentAddress, MessageAddress, MessageAddressInput};
use crate::harness::classify::{Conversation, InboundRequest};
use crate::harness::collective::{response_content, AskOp, ClosePart, CollectiveResponse, RecordHash, ResponsePart};
use crate::harness::errors::{CollectiveError, CollectiveFailure, SendError};
use crate::harness::id::{CollectiveId, PostId};
use crate::harness::inbound::{
    CollectiveMemberOutcome, CollectiveResult, InboundItem, MemberOutcome, QuestionOrWithheld,
};
use crate::harness::json::JsonPath;
use crate::harness::schema::RequestedSchema;
use crate::harness::send::{SendOptions, DEADLINE_GRACE_MS};
use crate::MoltZapError;
use agentwire_core::Millis;
use std::collections::BTreeMap;

#[derive(Debug, Clone, PartialEq)]
enum State {
    /// Waiting for the firewall's admission: not presented, cannot be answered.
    Admitting,
    /// Withheld by the firewall: never presented, never answerable; an all_gather's close
    /// still gives its result.
    Withheld,
    /// Presented and open for an answer.
    Open,
    /// Kept for its close, never presented (it arrived past its deadline).
    Late,
    /// This member's answer is being certified.
    Answering,
    Answered,
    /// The all_gather's close was applied.
    Closed,
}

/// A request this endpoint received.
pub(super) struct Held {
    op: AskOp,
    post_id: PostId,
    from: AgentAddress,
    /// The conversation it arrived in: the requester's `agent:` address, or the group.
    conversation: MessageAddress,
    question: String,
    schema: RequestedSchema,
    deadline_at: u64,
    state: State,
    /// All_gather: the answers seen in the group conversation, this member's own included.
    answers: BTreeMap<RecordHash, (AgentAddress, CollectiveResponse)>,
    /// A close that arrived while this member's own answer was being certified.
    waiting_close: Option<(String, ClosePart)>,
    /// The firewall's admission of the request (none without a firewall): the question of the
    /// result its close gives.
    admission: Option<Admission>,
}

impl Endpoint {
    /// A request (`late`: an all_gather request past its deadline, kept for its close only).
    #[allow(clippy::too_many_arguments)]
    pub(super) fn hold_request(
        &mut self,
        now: Millis,
        record: &str,
        post_id: PostId,
        conversation: &Conversation,
        sender: &AgentAddress,
        request: InboundRequest,
        late: bool,
    ) {
        let id = request.part.id.clone();
        if let Some(h) = self.held.get(&id) {
            let kind = if h.post_id == post_id {
                LogKind::Unreadable("a request already held (replayed)".to_owned())
            } else {
                LogKind::IdReused
            };
            self.log(Some(record), kind);
            return;
        }
        if self.held.len() >= self.cfg.max_held_requests {
            self.log(
                Some(record),
                LogKind::Unreadable("too many requests are held".to_owned()),
            );
            return;
        }
        let address = match conversation {
            Conversation::Direct { peer } => MessageAddress::Agent(peer.clone()),
            Conversation::Group(g) => MessageAddress::Group(g.clone()),
        };
        let deadline_at = request.part.deadline_at;
        self.timers
            .set(Timer::Forget(id.clone()), deadline_at.saturating_add(DEADLINE_GRACE_MS));
        self.held.insert(
            id.clone(),
            Held {
                op: request.part.op,
                post_id: post_id.clone(),
                from: sender.clone(),
                conversation: address.clone(),
                question: request.question.clone(),
                schema: request.part.requested_schema.clone(),
                deadline_at,
                state: match (late, self.firewall.is_some()) {
                    (true, _) => State::Late,
                    (false, true) => State::Admitting,
                    (false, false) => State::Open,
                },
                answers: BTreeMap::new(),
                waiting_close: None,
                admission: None,
            },
        );
        let item = InboundItem::CollectiveRequest {
            op: request.part.op,
            id: id.clone(),
            post_id,
            from: sender.clone(),
            to: MessageAddressInput::from(address),
            question: request.question,
            requested_schema: request.part.requested_schema,
            deadline_at,
        };
        let admission = self.admit_item(now, record, item, Some((id.clone(), !late)));
        if let Some(h) = self.held.get_mut(&id) {
            h.admission = admission;
        }
    }

    /// The firewall decided on a held request: the decision stands for its result's question,
    /// and a withheld request can never be answered.
    pub(super) fn request_admitted(&mut self, id: &CollectiveId, admission: &Admission) {
        if let Some(h) = self.held.get_mut(id) {
            h.admission = Some(admission.clone());
            if matches!(admission, Admission::Withheld(_)) && h.state == State::Admitting {
                h.state = State::Withheld;
            }
        }
    }

    /// An admitted request reached the runtime: it is open for an answer.
    pub(super) fn request_presented(&mut self, id: &CollectiveId) {
        if let Some(h) = self.held.get_mut(id) {
            if h.state == State::Admitting {
                h.state = State::Open;
            }
        }
    }

    /// An answer to the one open request in `to`: matched and validated now; then checked, and
    /// matched again (claimed) just before it is posted.
    pub(super) fn start_answer(
        &mut self,
        now: Millis,
        send: SendId,
        to: MessageAddress,
        response: CollectiveResponse,
        options: SendOptions,
    ) -> Result<(), (SendFailure, Option<(CollectiveId, MessageAddressInput)>)> {
        let refuse = |this: &mut Endpoint, failure: CollectiveFailure| {
            let id = CollectiveId::mint(this.entropy.as_mut());
            let operation = Some((id.clone(), MessageAddressInput::from(to.clone())));
            (SendFailure::Collective(CollectiveError { id, failure }), operation)
        };
        let id = match self.open_request(now, &to) {
            Ok(id) => id,
            Err(failure) => return Err(refuse(self, failure)),
        };
        let operation = Some((id.clone(), MessageAddressInput::from(to.clone())));
        let Some(held) = self.held.get(&id) else {
            return Err(refuse(self, CollectiveFailure::RequestNone(to.clone())));
        };
        if let CollectiveResponse::Accept(content) = &response {
            if let Err(issues) = held.schema.validate(content, &JsonPath::root("content")) {
                let failure = CollectiveError {
                    id,
                    failure: CollectiveFailure::AnswerInvalid(issues),
                };
                return Err((failure.into(), operation));
            }
        }
        let content = response_content(ResponsePart {
            id: id.clone(),
            response,
        })
        .map_err(|e| (SendFailure::Send(e.as_reply()), operation.clone()))?;
        let check = self
            .check_send(now, send, OutgoingOp::Answer, &to, &content)
            .map_err(|f| (f, None))?;
        let kind = super::outgoing::Kind::Answer {
            request: id,
            to,
            content,
        };
        self.register(now, send, options, kind, check);
        Ok(())
    }

    /// Matched again just before the answer is posted, and claimed: a request that closed or
    /// expired meanwhile (its check, the wait for the connection) refuses it as
    /// `request-expired`, one answered meanwhile as `request-answered`.
    pub(super) fn claim(
        &mut self,
        now: Millis,
        id: &CollectiveId,
        to: &MessageAddress,
    ) -> Result<(), CollectiveFailure> {
        match self.held.get_mut(id) {
            Some(h) if h.state == State::Open && now < h.deadline_at => {
                h.state = State::Answering;
                Ok(())
            }
            Some(h) if matches!(h.state, State::Answering | State::Answered) => {
                Err(CollectiveFailure::RequestAnswered(to.clone()))
            }
            _ => Err(CollectiveFailure::RequestExpired),
        }
    }

    /// The one request open in `to`: received, presented, not answered, before its deadline and
    /// close. Requests never presented (late, waiting for admission, withheld) do not count.
    fn open_request(&self, now: Millis, to: &MessageAddress) -> Result<CollectiveId, CollectiveFailure> {
        let here: Vec<(&CollectiveId, &Held)> = self
            .held
            .iter()
            .filter(|(_, h)| {
                &h.conversation == to && !matches!(h.state, State::Late | State::Admitting | State::Withheld)
            })
            .collect();
        let open: Vec<&CollectiveId> = here
            .iter()
            .filter(|(_, h)| h.state == State::Open && now < h.deadline_at)
            .map(|(id, _)| *id)
            .collect();
        match open.as_slice() {
            [one] => Ok((*one).clone()),
            [] if here
                .iter()
                .any(|(_, h)| matches!(h.state, State::Answered | State::Answering)) =>
            {
                Err(CollectiveFailure::RequestAnswered(to.clone()))
            }
            [] if !here.is_empty() => Err(CollectiveFailure::RequestExpired),
            [] => Err(CollectiveFailure::RequestNone(to.clone())),
            _ => Err(CollectiveFailure::RequestAmbiguous(to.clone())),
        }
    }

    /// This member's answer post was certified (the request is answered; an all_gather records
    /// it by its record hash, and a close that waited for it is applied) or refused (the request
    /// stays open).
    pub(super) fn answer_settled(
        &mut self,
        now: Millis,
        send: SendId,
        request: &CollectiveId,
        result: Result<String, MoltZapError>,
    ) {
        let operation = self.operation_of(send);
        match result {
            Ok(text) => {
                let mut waiting = None;
                if let Some(h) = self.held.get_mut(request) {
                    h.state = State::Answered;
                    if h.op == AskOp::AllGather {
                        if let Ok(record) = super::wire::Record::from_wrapped(&text) {
                            if let Ok(content) = record.content() {
                                if let Some(ResponsePart { response, .. }) = response_of(&content) {
                                    h.answers.insert(record.hash, (self.cfg.agent.clone(), response));
                                }
                            }
                        }
                        waiting = h.waiting_close.take();
                    }
                }
                self.succeed(send, None);
                if let Some((record, close)) = waiting {
                    self.apply_close(now, &record, request, close);
                }
            }
            Err(e) => {
                let mut waiting = None;
                if let Some(h) = self.held.get_mut(request) {
                    if h.state == State::Answering {
                        h.state = State::Open;
                    }
                    waiting = h.waiting_close.take();
                }
                // A close that waited for this answer applies without it.
                if let Some((record, close)) = waiting {
                    self.apply_close(now, &record, request, close);
                }
                let to = operation.as_ref().map(|(_, to)| to.to_string()).unwrap_or_default();
                let failure: SendError = super::wire::send_failure(&e, &to).as_reply();
                self.fail(send, operation, failure.into());
            }
        }
    }

    /// An answer in a conversation whose request this endpoint holds (not its own operation):
    /// an all_gather member keeps each member's first answer by record hash until the close
    /// (the requester counts the first too); a later one is logged `AnswerIgnored`.
    pub(super) fn member_answer(
        &mut self,
        record: &str,
        conversation: &Conversation,
        sender: &AgentAddress,
        part: ResponsePart,
        hash: crate::harness::collective::RecordHash,
    ) {
        match self.held.get_mut(&part.id) {
            Some(h)
                if h.op == AskOp::AllGather
                    && matches!(conversation, Conversation::Group(g) if MessageAddress::Group(g.clone()) == h.conversation)
                    && h.state != State::Closed =>
            {
                if h.answers.values().any(|(member, _)| member == sender) {
                    self.log(Some(record), LogKind::AnswerIgnored);
                } else {
                    h.answers.insert(hash, (sender.clone(), part.response));
                    self.log(Some(record), LogKind::AnswerRecorded);
                }
            }
            _ => self.log(Some(record), LogKind::AnswerUnmatched),
        }
    }

    /// A close in `conversation` from `sender`.
    pub(super) fn member_close(
        &mut self,
        now: Millis,
        record: &str,
        conversation: &Conversation,
        sender: &AgentAddress,
        close: ClosePart,
    ) {
        let why = match self.held.get_mut(&close.id) {
            None => Some("names an unknown operation"),
            Some(h) if h.op != AskOp::AllGather => Some("closes a gather"),
            Some(h) if !matches!(conversation, Conversation::Group(g) if MessageAddress::Group(g.clone()) == h.conversation) => {
                Some("arrived outside the request's group")
            }
            Some(h) if &h.from != sender => Some("does not come from the requester"),
            Some(h) if h.state == State::Closed => Some("is not the first close"),
            Some(h) if h.state == State::Answering && h.waiting_close.is_some() => Some("is not the first close"),
            Some(h) if h.state == State::Answering => {
                h.waiting_close = Some((record.to_owned(), close.clone()));
                return;
            }
            Some(_) => None,
        };
        match why {
            Some(why) => self.log(Some(record), LogKind::CloseIgnored(why.to_owned())),
            None => {
                let id = close.id.clone();
                self.apply_close(now, record, &id, close);
            }
        }
    }

    /// Builds the result from exactly the answers the close lists, as the requester did.
    fn apply_close(&mut self, now: Millis, record: &str, id: &CollectiveId, close: ClosePart) {
        let Some(h) = self.held.get(id) else {
            return;
        };
        let MessageAddress::Group(group) = &h.conversation else {
            return;
        };
        let mut listed: BTreeMap<&AgentAddress, &CollectiveResponse> = BTreeMap::new();
        for hash in &close.included {
            match h.answers.get(hash) {
                Some((member, response)) if member != &h.from && !listed.contains_key(member) => {
                    listed.insert(member, response);
                }
                Some(_) => {
                    self.log(
                        Some(record),
                        LogKind::CloseIgnored("lists two answers of one member".to_owned()),
                    );
                    return;
                }
                None => {
                    self.log(
                        Some(record),
                        LogKind::CloseIgnored(format!("lists {} which this endpoint does not hold", hash.as_str())),
                    );
                    return;
                }
            }
        }
        let outcomes: Vec<MemberOutcome> = group
            .others(&h.from)
            .map(|m| MemberOutcome {
                member: m.clone(),
                outcome: match listed.get(m) {
                    Some(response) => super::asks::outcome_of(response, &h.schema),
                    None => CollectiveMemberOutcome::NoAnswer,
                },
            })
            .collect();
        let result = CollectiveResult::new(
            AskOp::AllGather,
            id.clone(),
            MessageAddressInput::from(MessageAddress::Group(group.clone())),
            QuestionOrWithheld::Text(h.question.clone()),
            outcomes,
        );
        let question = h.admission.clone();
        if let Some(h) = self.held.get_mut(id) {
            h.state = State::Closed;
        }
        self.log(Some(record), LogKind::CloseApplied);
        if let Ok(result) = result {
            self.admit_result(now, result, question);
        }
    }
}

/// The response part of this member's own answer content.
fn response_of(content: &crate::harness::content::Content) -> Option<ResponsePart> {
    use crate::harness::collective::CollectivePart;
    use crate::harness::content::Part;
    content.parts().iter().find_map(|p| match p {
        Part::Data(v) => match CollectivePart::parse(v) {
            Ok(CollectivePart::Response(r)) => Some(r),
            _ => None,
        },
        _ => None,
    })
}
