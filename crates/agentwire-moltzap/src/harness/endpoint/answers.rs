//! A member's side: the requests it holds, an answer matched to the one open request of its
//! conversation, an all_gather's answers held by record hash until the requester's close, and
//! the result that close gives.

use super::firewall::{Admission, OutgoingOp};
use super::{Endpoint, LogKind, SendFailure, SendId, Timer};
use crate::harness::address::{AgentAddress, MessageAddress, MessageAddressInput};
use crate::harness::classify::{Conversation, InboundRequest};
use crate::harness::collective::{response_content, AskOp, ClosePart, CollectiveResponse, RecordHash, ResponsePart};
use crate::harness::errors::{CollectiveError, CollectiveFailure, SendError, SendErrorReason};
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

/// The answers of one member an all_gather member keeps for the close (the requester lists the
/// member's first, which records missed or read back out of order can make a later one here).
/// Past it a member's answers are logged `AnswerIgnored`, unless a waiting close lists them.
pub(super) const MAX_ANSWERS_PER_MEMBER: usize = 4;

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
    /// This member's answer ended `outcome-unknown`: it may have been posted, so the request
    /// takes no other (`request-answered`). Reading the answer back (an echo, a recovery)
    /// makes it `Answered`.
    Unconfirmed,
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
    /// The requester's first close (its record id), while it waits: for this member's own
    /// answer being certified, or for an answer it lists that this member does not hold yet.
    /// Tried again whenever an answer to the request is recorded; dropped (logged) when the
    /// request is forgotten.
    waiting_close: Option<(String, ClosePart)>,
    /// The firewall's admission of the request (none without a firewall): the question of the
    /// result its close gives.
    admission: Option<Admission>,
    /// What it takes, about ([`held_request_footprint`]), counted in `held_request_bytes`.
    bytes: usize,
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
        let bytes = held_request_footprint(&request.question, &request.part.requested_schema);
        if let Err(why) = self.make_room(now, bytes) {
            self.log(Some(record), LogKind::Unreadable(why.to_owned()));
            return;
        }
        self.held_request_bytes += bytes;
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
                bytes,
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

    /// Room for one more held request of `bytes`: when `max_held_requests` or
    /// `max_held_request_bytes` is reached, finished requests ([`Held::finished`]) are forgotten,
    /// the earliest deadline first, as their `Forget` timer would an hour past it. Unfinished
    /// ones always stay (a flood cannot push out a request still open or waiting for its close);
    /// when forgetting every finished one would not make room, none is forgotten and the reason
    /// is returned.
    fn make_room(&mut self, now: Millis, bytes: usize) -> Result<(), &'static str> {
        let (max_count, max_bytes) = (self.cfg.max_held_requests, self.cfg.max_held_request_bytes);
        let fits = |count: usize, held: usize| count < max_count && held.saturating_add(bytes) <= max_bytes;
        if fits(self.held.len(), self.held_request_bytes) {
            return Ok(());
        }
        let mut finished: Vec<(u64, &CollectiveId, usize)> = self
            .held
            .iter()
            .filter(|(_, h)| h.finished(now))
            .map(|(id, h)| (h.deadline_at, id, h.bytes))
            .collect();
        finished.sort_unstable();
        let (mut count, mut held, mut n) = (self.held.len(), self.held_request_bytes, 0);
        for (_, _, b) in &finished {
            if fits(count, held) {
                break;
            }
            count -= 1;
            held -= b;
            n += 1;
        }
        if !fits(count, held) {
            return Err(if count >= max_count {
                "too many requests are held"
            } else {
                "too many requests are held (max_held_request_bytes)"
            });
        }
        let gone: Vec<CollectiveId> = finished.into_iter().take(n).map(|(_, id, _)| id.clone()).collect();
        for id in gone {
            self.timers.cancel(&Timer::Forget(id.clone()));
            self.forget_request(&id);
        }
        Ok(())
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
        self.wait_room(&content)
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
            Some(h) if h.is_open(now) => {
                h.state = State::Answering;
                Ok(())
            }
            Some(h) if h.is_answered() => Err(CollectiveFailure::RequestAnswered(to.clone())),
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
        let open: Vec<&CollectiveId> = here.iter().filter(|(_, h)| h.is_open(now)).map(|(id, _)| *id).collect();
        match open.as_slice() {
            [one] => Ok((*one).clone()),
            [] if here.iter().any(|(_, h)| h.is_answered()) => Err(CollectiveFailure::RequestAnswered(to.clone())),
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
                if let Some(h) = self.held.get_mut(request) {
                    if matches!(h.state, State::Answering | State::Unconfirmed) {
                        h.state = State::Answered;
                    }
                    // The endpoint's own answer is kept past `max_held_answer_bytes` (one per
                    // held request, so `max_held_requests` bounds them), not once closed.
                    if h.op == AskOp::AllGather && h.state != State::Closed {
                        if let Ok(record) = super::wire::Record::from_wrapped(&text) {
                            if let Ok(content) = record.content() {
                                if let Some(ResponsePart { response, .. }) = response_of(&content) {
                                    let me = self.cfg.agent.clone();
                                    let bytes = held_footprint(&record.hash, &me, &response);
                                    let old = h.answers.insert(record.hash.clone(), (me, response));
                                    let freed = old.map_or(0, |(m, r)| held_footprint(&record.hash, &m, &r));
                                    self.held_answer_bytes = self.held_answer_bytes + bytes - freed;
                                }
                            }
                        }
                    }
                }
                self.succeed(send, None);
                self.retry_close(now, request);
            }
            Err(e) => {
                let to = operation.as_ref().map(|(_, to)| to.to_string()).unwrap_or_default();
                let failure = super::wire::send_failure(&e, &to);
                if let Some(h) = self.held.get_mut(request) {
                    if h.state == State::Answering {
                        // `outcome-unknown`: the answer may have been posted, so the request is
                        // answered, unconfirmed (no second answer); refused, it is open again.
                        h.state = if failure.reason == SendErrorReason::OutcomeUnknown {
                            State::Unconfirmed
                        } else {
                            State::Open
                        };
                    }
                }
                // A close that waited for this answer is tried: without it, or (unconfirmed)
                // waiting until the answer is read back.
                self.retry_close(now, request);
                let failure: SendError = failure.as_reply();
                self.fail(send, operation, failure.into());
            }
        }
    }

    /// This agent's own record in a group conversation (echoed from another connection, or
    /// read back by a recovery): an answer to an all_gather request it holds is recorded by its
    /// record hash, like a peer's, so a close listing it applies (an answer whose send ended
    /// `outcome-unknown` is confirmed by it).
    pub(super) fn own_answer(
        &mut self,
        now: Millis,
        record: &str,
        conversation: &Conversation,
        content: &crate::harness::content::Content,
        hash: &RecordHash,
    ) {
        let Some(ResponsePart { id, response }) = response_of(content) else {
            return;
        };
        let me = self.cfg.agent.clone();
        let bytes = held_footprint(hash, &me, &response);
        let room = self.held_answer_bytes + bytes <= self.cfg.max_held_answer_bytes;
        let Some(h) = self.held.get_mut(&id) else {
            return;
        };
        if h.op != AskOp::AllGather || !h.in_place(conversation) || h.state == State::Closed {
            return;
        }
        if h.answers.contains_key(hash) {
            return;
        }
        if !h.keeps(&me, hash, room) {
            return self.log(Some(record), LogKind::AnswerIgnored);
        }
        h.answers.insert(hash.clone(), (me, response));
        self.held_answer_bytes += bytes;
        // Certified: the request took this agent's answer (from this endpoint, or another).
        if matches!(h.state, State::Unconfirmed | State::Open) {
            h.state = State::Answered;
        }
        self.log(Some(record), LogKind::AnswerRecorded);
        self.retry_close(now, &id);
    }

    /// A held request is forgotten (an hour past its deadline, or finished and making room for
    /// a new one), with a close still waiting for an answer it lists.
    pub(super) fn forget_request(&mut self, id: &CollectiveId) {
        let Some(Held {
            waiting_close,
            answers,
            bytes,
            ..
        }) = self.held.remove(id)
        else {
            return;
        };
        self.held_request_bytes -= bytes;
        self.held_answer_bytes -= answers_footprint(&answers);
        if let Some((record, close)) = waiting_close {
            let missing = close
                .included
                .iter()
                .find(|h| !answers.contains_key(*h))
                .map_or("", |h| h.as_str());
            let why = format!("lists {missing} which this endpoint does not hold");
            self.log(Some(&record), LogKind::CloseIgnored(why));
        }
    }

    /// A close waiting on `id` is tried again (an answer was recorded, or this member's own
    /// answer settled).
    fn retry_close(&mut self, now: Millis, id: &CollectiveId) {
        let waiting = match self.held.get_mut(id) {
            Some(h) if h.state != State::Answering => h.waiting_close.take(),
            _ => None,
        };
        if let Some((record, close)) = waiting {
            self.apply_close(now, &record, id, close, false);
        }
    }

    /// An answer in a conversation whose request this endpoint holds (not its own operation):
    /// an all_gather member records it by record hash until the close, which picks the ones it
    /// lists (at most [`MAX_ANSWERS_PER_MEMBER`] per member; past it, or a duplicate, it is
    /// logged `AnswerIgnored`). A close waiting for it is tried again.
    pub(super) fn member_answer(
        &mut self,
        now: Millis,
        record: &str,
        conversation: &Conversation,
        sender: &AgentAddress,
        part: ResponsePart,
        hash: crate::harness::collective::RecordHash,
    ) {
        let bytes = held_footprint(&hash, sender, &part.response);
        let room = self.held_answer_bytes + bytes <= self.cfg.max_held_answer_bytes;
        match self.held.get_mut(&part.id) {
            Some(h) if h.op == AskOp::AllGather && h.in_place(conversation) && h.state != State::Closed => {
                if h.answers.contains_key(&hash) || !h.keeps(sender, &hash, room) {
                    self.log(Some(record), LogKind::AnswerIgnored);
                } else {
                    h.answers.insert(hash, (sender.clone(), part.response));
                    self.held_answer_bytes += bytes;
                    self.log(Some(record), LogKind::AnswerRecorded);
                    self.retry_close(now, &part.id);
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
            Some(h) if h.state == State::Closed || h.waiting_close.is_some() => Some("is not the first close"),
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
                self.apply_close(now, record, &id, close, true);
            }
        }
    }

    /// Builds the result from exactly the answers the close lists, as the requester did. A
    /// listed answer not held yet makes the close wait with its request (`first`: logged
    /// `CloseWaiting` the first time), until that answer is recorded.
    fn apply_close(&mut self, now: Millis, record: &str, id: &CollectiveId, close: ClosePart, first: bool) {
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
                    let why = format!("lists {} which this endpoint does not hold yet", hash.as_str());
                    if let Some(h) = self.held.get_mut(id) {
                        h.waiting_close = Some((record.to_owned(), close));
                    }
                    if first {
                        self.log(Some(record), LogKind::CloseWaiting(why));
                    }
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
            // A closed request takes no answer and gives no other result: its answers go.
            self.held_answer_bytes -= answers_footprint(&std::mem::take(&mut h.answers));
        }
        self.log(Some(record), LogKind::CloseApplied);
        if let Ok(result) = result {
            self.admit_result(now, result, question);
        }
    }
}

impl Held {
    /// Nothing this member still does needs it held: an all_gather whose close was applied, a
    /// gather it answered (certified), a gather past its deadline it never answered. Not one
    /// waiting for its firewall admission, being answered or of unknown outcome, nor an
    /// all_gather before its close (kept up to an hour past its deadline for it).
    fn finished(&self, now: Millis) -> bool {
        match (self.op, &self.state) {
            (AskOp::AllGather, state) => *state == State::Closed,
            (AskOp::Gather, State::Answered) => true,
            (AskOp::Gather, State::Open | State::Withheld) => now >= self.deadline_at,
            (AskOp::Gather, _) => false,
        }
    }

    /// Presented, not answered, before its deadline and close (a close from the requester that
    /// waits for an answer it lists has closed it too).
    fn is_open(&self, now: Millis) -> bool {
        self.state == State::Open && now < self.deadline_at && self.waiting_close.is_none()
    }

    /// Answered by this member (certified, in flight, or of unknown outcome).
    fn is_answered(&self) -> bool {
        matches!(self.state, State::Answering | State::Answered | State::Unconfirmed)
    }

    /// In the request's own group.
    fn in_place(&self, conversation: &Conversation) -> bool {
        matches!(conversation, Conversation::Group(g) if MessageAddress::Group(g.clone()) == self.conversation)
    }

    /// Whether an answer of `member` with `hash` is kept: while the member has fewer than
    /// [`MAX_ANSWERS_PER_MEMBER`] kept and the endpoint has `room` in `max_held_answer_bytes`,
    /// or when a waiting close lists it.
    fn keeps(&self, member: &AgentAddress, hash: &RecordHash, room: bool) -> bool {
        let kept = self.answers.values().filter(|(m, _)| m == member).count();
        (room && kept < MAX_ANSWERS_PER_MEMBER)
            || self
                .waiting_close
                .as_ref()
                .is_some_and(|(_, c)| c.included.contains(hash))
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

/// What a held request takes, about: its bookkeeping, its question and its schema (as given and
/// as read, [`RequestedSchema::footprint`]); its answers are counted apart
/// (`max_held_answer_bytes`).
fn held_request_footprint(question: &str, schema: &RequestedSchema) -> usize {
    std::mem::size_of::<(CollectiveId, Held)>() + 16 + question.len() + schema.footprint()
}

/// What one held answer takes, about: its key (the record hash), its member and its response.
pub(super) fn held_footprint(hash: &RecordHash, member: &AgentAddress, response: &CollectiveResponse) -> usize {
    const ENTRY: usize = std::mem::size_of::<(RecordHash, AgentAddress)>() + 16;
    ENTRY + hash.as_str().len() + member.as_str().len() + response.footprint()
}

fn answers_footprint(answers: &BTreeMap<RecordHash, (AgentAddress, CollectiveResponse)>) -> usize {
    answers.iter().map(|(h, (m, r))| held_footprint(h, m, r)).sum()
}
