//! The optional message firewall, sans-IO: the endpoint asks, the host answers later.
//!
//! Each check is an [`EndpointEvent::FirewallCheck`] naming a [`CheckId`] and its
//! [`CheckSubject`]; the host answers with [`Endpoint::firewall_verdict`]. A check without a
//! verdict within [`FirewallConfig::check_timeout_ms`] is refused as `check-unavailable` (the
//! firewall fails closed).
//!
//! - An outgoing send waits for its check before anything is posted: a refusal ends it with a
//!   `FirewallSendError`, an admission carries the check's guidance on its `SendResult`.
//! - Every inbound item waits for admission before the runtime sees it, in one queue that keeps
//!   the order items were produced in: a multicast or a request is checked as it is; a
//!   collective result's `answered` outcomes are checked one by one, and its question is the
//!   request's own admission (an all_gather member) or this agent's own text (the requester). A
//!   withheld multicast or request is logged and never delivered; in a result, a withheld
//!   answer or question becomes a `withheld` value naming the check.
//! - Records are taken from the inbound queue only while fewer than
//!   [`FirewallConfig::max_checks`] items, taking less than
//!   [`FirewallConfig::max_admission_bytes`], wait for admission (they wait in the record queue
//!   otherwise), and a send finding `max_checks` checks of sends pending is refused at once
//!   (`check-unavailable`): the two budgets are apart, so inbound traffic cannot block sends.

use super::{Endpoint, EndpointEvent, LogKind, SendFailure, SendId, Timer};
use crate::harness::address::{AgentAddress, MessageAddress};
use crate::harness::content::Content;
use crate::harness::errors::{FirewallRefusal, FirewallSendError};
use crate::harness::guidance::{AnswerGuidance, CheckedGuidance, LocalGuidance};
use crate::harness::id::CollectiveId;
use crate::harness::inbound::{
    CollectiveMemberOutcome, CollectiveResult, InboundItem, MemberOutcome, QuestionOrWithheld, Withheld,
};
use crate::harness::schema::AnswerContent;
use agentwire_core::Millis;
use std::collections::{BTreeMap, HashMap};
use std::fmt;

/// One firewall check. Its text (`chk_<n>`) is the `checkId` a `withheld` value names; a
/// firewall's guidance may use it as its own `checkId`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct CheckId(pub u64);

impl fmt::Display for CheckId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "chk_{}", self.0)
    }
}

/// The firewall's bounds. Installing one ([`super::EndpointConfig::firewall`]) makes every
/// send and every inbound item wait for a verdict.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FirewallConfig {
    /// How long a check waits for its verdict (default 30,000 ms); then it is refused as
    /// `check-unavailable`: an outgoing send fails, an inbound item is withheld.
    pub check_timeout_ms: u64,
    /// Checks of sends pending at once, and, a budget apart, items from records waiting for
    /// admission (default 1,024 each). Past it a send is refused at once (`check-unavailable`)
    /// and records wait in the record queue (bounded by `max_pending_records`).
    pub max_checks: usize,
    /// The heap the items waiting for admission may take, about (default 64 MiB, counted as
    /// [`max_inbox_bytes`](super::EndpointConfig::max_inbox_bytes) is: a data part of 32 KiB
    /// of `[0,0,…]` takes about 0.5 MiB). At or past it records wait in the record queue, as
    /// past `max_checks`; one record is always taken when none waits for admission.
    pub max_admission_bytes: usize,
}

impl Default for FirewallConfig {
    fn default() -> FirewallConfig {
        FirewallConfig {
            check_timeout_ms: 30_000,
            max_checks: 1_024,
            max_admission_bytes: 64 << 20,
        }
    }
}

/// The operation an outgoing check is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum OutgoingOp {
    Multicast,
    Gather,
    AllGather,
    Answer,
}

impl OutgoingOp {
    pub fn as_str(self) -> &'static str {
        match self {
            OutgoingOp::Multicast => "multicast",
            OutgoingOp::Gather => "gather",
            OutgoingOp::AllGather => "all_gather",
            OutgoingOp::Answer => "answer",
        }
    }
}

/// What a check is asked about.
#[derive(Debug, Clone, PartialEq)]
pub enum CheckSubject {
    /// An operation this agent is about to post: `content` is what would be certified.
    Outgoing {
        op: OutgoingOp,
        to: MessageAddress,
        content: Content,
    },
    /// A `multicast` or `collectiveRequest` item before the runtime sees it (an all_gather
    /// request that arrived late is checked too: its admission decides the question of the
    /// result its close gives).
    Inbound(InboundItem),
    /// One member's `answered` outcome in a collective result, before the result is delivered.
    Answer {
        operation: CollectiveId,
        question: String,
        member: AgentAddress,
        content: AnswerContent,
    },
}

/// The host's answer to a check.
#[derive(Debug, Clone, PartialEq)]
pub enum FirewallVerdict {
    /// Admitted, with the check's advice when it drew any.
    Admit(Option<CheckedGuidance>),
    /// Refused: an outgoing send fails with this `FirewallSendError`; an inbound item is
    /// withheld (`feedback` is not shown).
    Refuse {
        refusal: FirewallRefusal,
        feedback: Option<String>,
    },
}

/// Where a checked subject stands.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Admission {
    Pending(CheckId),
    Admitted(Option<CheckedGuidance>),
    Withheld(Withheld),
}

impl Admission {
    fn of(check: CheckId, verdict: FirewallVerdict) -> Admission {
        match verdict {
            FirewallVerdict::Admit(g) => Admission::Admitted(g),
            FirewallVerdict::Refuse { refusal, .. } => Admission::Withheld(Withheld {
                check_id: check.to_string(),
                reason: refusal,
            }),
        }
    }

    fn pending(&self) -> bool {
        matches!(self, Admission::Pending(_))
    }

    fn guidance(&self) -> Option<CheckedGuidance> {
        match self {
            Admission::Admitted(g) => g.clone(),
            _ => None,
        }
    }
}

/// What a pending check decides.
#[derive(Debug, Clone, PartialEq)]
enum Target {
    Send(SendId),
    /// The item of an entry.
    Entry(u64),
    /// One answer of a result entry.
    Answer(u64, AgentAddress),
}

/// An item waiting for admission.
#[derive(Debug)]
enum Entry {
    /// A multicast or a request. `request`: the held request's id, and whether it is presented
    /// (a late all_gather request is not).
    Item {
        record: String,
        item: InboundItem,
        admission: Admission,
        request: Option<(CollectiveId, bool)>,
    },
    /// A result: its question's admission (none: this agent's own question) and each answered
    /// outcome's.
    Result {
        result: CollectiveResult,
        question: Option<Admission>,
        answers: BTreeMap<AgentAddress, Admission>,
    },
    /// An item with no peer text (`operationFailed`): it keeps its place in the order only.
    Local(InboundItem),
}

impl Entry {
    /// About the heap it takes: its item measured as the inbox measures a delivery's
    /// ([`super::item_footprint`]).
    fn footprint(&self) -> usize {
        std::mem::size_of::<(Entry, usize)>()
            + match self {
                Entry::Item { record, item, .. } => record.len() + super::item_footprint(item),
                Entry::Result { result, answers, .. } => {
                    const ADMISSION: usize = std::mem::size_of::<(AgentAddress, Admission)>() + 16;
                    super::item_footprint(&InboundItem::CollectiveResult(result.clone()))
                        + answers.keys().map(|m| ADMISSION + m.as_str().len()).sum::<usize>()
                }
                Entry::Local(item) => super::item_footprint(item),
            }
    }

    fn ready(&self) -> bool {
        match self {
            Entry::Item { admission, .. } => !admission.pending(),
            Entry::Result { question, answers, .. } => {
                !question.as_ref().is_some_and(Admission::pending) && !answers.values().any(Admission::pending)
            }
            Entry::Local(_) => true,
        }
    }
}

/// The firewall's state in the endpoint.
#[derive(Debug)]
pub(super) struct Firewall {
    pub cfg: FirewallConfig,
    next_check: u64,
    checks: HashMap<CheckId, Target>,
    /// Items waiting for admission, in order, each with its heap, about ([`Entry::footprint`]).
    queue: BTreeMap<u64, (Entry, usize)>,
    /// The sum of the queue's footprints.
    queue_bytes: usize,
    next_entry: u64,
}

impl Firewall {
    pub fn new(cfg: FirewallConfig) -> Firewall {
        Firewall {
            cfg,
            next_check: 0,
            checks: HashMap::new(),
            queue: BTreeMap::new(),
            queue_bytes: 0,
            next_entry: 0,
        }
    }

    /// Records wait while `max_checks` items, or `max_admission_bytes` of them, wait for
    /// admission.
    pub fn full(&self) -> bool {
        self.queue.len() >= self.cfg.max_checks.max(1)
            || (!self.queue.is_empty() && self.queue_bytes >= self.cfg.max_admission_bytes)
    }

    /// Queues an entry (measured) under `key`.
    fn enqueue(&mut self, key: u64, entry: Entry) {
        let bytes = entry.footprint();
        self.queue_bytes += bytes;
        self.queue.insert(key, (entry, bytes));
    }
}

impl Endpoint {
    /// Answers a check. False when it is not pending: answered already, timed out, or its send
    /// ended (a deadline passed, the connection failed).
    pub fn firewall_verdict(&mut self, now: Millis, check: CheckId, verdict: FirewallVerdict) -> bool {
        let Some(target) = self.firewall.as_mut().and_then(|f| f.checks.remove(&check)) else {
            return false;
        };
        self.timers.cancel(&Timer::Check(check));
        self.apply_verdict(now, check, target, verdict);
        true
    }

    /// A check's time is up: refused as `check-unavailable`.
    pub(super) fn check_expired(&mut self, now: Millis, check: CheckId) {
        let Some(target) = self.firewall.as_mut().and_then(|f| f.checks.remove(&check)) else {
            return;
        };
        let verdict = FirewallVerdict::Refuse {
            refusal: FirewallRefusal::CheckUnavailable,
            feedback: None,
        };
        self.apply_verdict(now, check, target, verdict);
    }

    fn apply_verdict(&mut self, now: Millis, check: CheckId, target: Target, verdict: FirewallVerdict) {
        match target {
            Target::Send(send) => return self.send_checked(now, send, verdict),
            Target::Entry(key) => {
                let admission = Admission::of(check, verdict);
                let mut request = None;
                if let Some(Entry::Item {
                    admission: a,
                    request: r,
                    ..
                }) = self.entry_mut(key)
                {
                    *a = admission.clone();
                    request = r.as_ref().map(|(id, _)| id.clone());
                }
                if let Some(id) = request {
                    self.request_admitted(&id, &admission);
                }
                // A result built meanwhile (an all_gather member's) waits on the same check.
                if let Some(fw) = self.firewall.as_mut() {
                    for (entry, _) in fw.queue.values_mut() {
                        if let Entry::Result { question: Some(q), .. } = entry {
                            if *q == Admission::Pending(check) {
                                *q = admission.clone();
                            }
                        }
                    }
                }
            }
            Target::Answer(key, member) => {
                if let Some(Entry::Result { answers, .. }) = self.entry_mut(key) {
                    answers.insert(member, Admission::of(check, verdict));
                }
            }
        }
        self.drain_admitted();
        // Records that waited for room in the admission queue.
        self.process(now);
    }

    fn entry_mut(&mut self, key: u64) -> Option<&mut Entry> {
        self.firewall
            .as_mut()
            .and_then(|f| f.queue.get_mut(&key))
            .map(|(e, _)| e)
    }

    /// Asks the host for a verdict.
    fn ask_check(&mut self, now: Millis, target: Target, subject: CheckSubject) -> Option<CheckId> {
        let fw = self.firewall.as_mut()?;
        fw.next_check += 1;
        let check = CheckId(fw.next_check);
        fw.checks.insert(check, target);
        let at = now.saturating_add(fw.cfg.check_timeout_ms);
        self.timers.set(Timer::Check(check), at);
        self.events.push_back(EndpointEvent::FirewallCheck { check, subject });
        Some(check)
    }

    /// The check of an outgoing send, when a firewall is installed; a refusal at once when too
    /// many are pending.
    pub(super) fn check_send(
        &mut self,
        now: Millis,
        send: SendId,
        op: OutgoingOp,
        to: &MessageAddress,
        content: &Content,
    ) -> Result<Option<CheckId>, SendFailure> {
        let Some(fw) = &self.firewall else {
            return Ok(None);
        };
        // Outgoing checks have their own budget, so inbound traffic cannot block the agent's sends.
        let outgoing = fw.checks.values().filter(|t| matches!(t, Target::Send(_))).count();
        if outgoing >= fw.cfg.max_checks.max(1) {
            let e = FirewallSendError::new(
                FirewallRefusal::CheckUnavailable,
                Some("too many firewall checks are pending".to_owned()),
            );
            return Err(SendFailure::Firewall(if op == OutgoingOp::Answer {
                e.as_reply()
            } else {
                e
            }));
        }
        let subject = CheckSubject::Outgoing {
            op,
            to: to.clone(),
            content: content.clone(),
        };
        Ok(self.ask_check(now, Target::Send(send), subject))
    }

    /// Drops the pending check of a send that ended.
    pub(super) fn drop_check(&mut self, check: CheckId) {
        if let Some(fw) = self.firewall.as_mut() {
            fw.checks.remove(&check);
        }
        self.timers.cancel(&Timer::Check(check));
    }

    /// Records wait while the admission queue is full.
    pub(super) fn admission_full(&self) -> bool {
        self.firewall.as_ref().is_some_and(Firewall::full)
    }

    /// A multicast or request from `record`, for the runtime. `request`: the held request's id
    /// and whether it is presented. Without a firewall a presented item is delivered at once.
    /// Returns the request's admission (none without a firewall).
    pub(super) fn admit_item(
        &mut self,
        now: Millis,
        record: &str,
        item: InboundItem,
        request: Option<(CollectiveId, bool)>,
    ) -> Option<Admission> {
        let Some(fw) = self.firewall.as_mut() else {
            if request.as_ref().is_none_or(|(_, shown)| *shown) {
                self.deliver(item, None);
            }
            return None;
        };
        let key = fw.next_entry;
        fw.next_entry += 1;
        let check = self.ask_check(now, Target::Entry(key), CheckSubject::Inbound(item.clone()))?;
        let admission = Admission::Pending(check);
        if let Some(fw) = self.firewall.as_mut() {
            fw.enqueue(
                key,
                Entry::Item {
                    record: record.to_owned(),
                    item,
                    admission: admission.clone(),
                    request,
                },
            );
        }
        Some(admission)
    }

    /// A collective result for the runtime: delivered as its local projection once its
    /// question's admission (`None`: this agent's own question) and each answered outcome's
    /// check are in.
    pub(super) fn admit_result(&mut self, now: Millis, result: CollectiveResult, question: Option<Admission>) {
        let Some(fw) = self.firewall.as_mut() else {
            return self.deliver(InboundItem::CollectiveResult(result), None);
        };
        let key = fw.next_entry;
        fw.next_entry += 1;
        let mut answers = BTreeMap::new();
        for o in result.outcomes() {
            if o.member == self.cfg.agent {
                // This member's own answer: checked when it was sent.
                continue;
            }
            if let CollectiveMemberOutcome::Answered { content } = &o.outcome {
                let subject = CheckSubject::Answer {
                    operation: result.id().clone(),
                    question: match result.question() {
                        QuestionOrWithheld::Text(t) => t.clone(),
                        QuestionOrWithheld::Withheld(_) => String::new(),
                    },
                    member: o.member.clone(),
                    content: content.clone(),
                };
                if let Some(check) = self.ask_check(now, Target::Answer(key, o.member.clone()), subject) {
                    answers.insert(o.member.clone(), Admission::Pending(check));
                }
            }
        }
        if let Some(fw) = self.firewall.as_mut() {
            fw.enqueue(
                key,
                Entry::Result {
                    result,
                    question,
                    answers,
                },
            );
        }
        self.drain_admitted();
    }

    /// An item with no peer text: delivered in its turn.
    pub(super) fn admit_local(&mut self, item: InboundItem) {
        let Some(fw) = self.firewall.as_mut() else {
            return self.deliver(item, None);
        };
        let key = fw.next_entry;
        fw.next_entry += 1;
        fw.enqueue(key, Entry::Local(item));
        self.drain_admitted();
    }

    /// Delivers (or drops, when withheld) every admitted item at the front of the queue.
    fn drain_admitted(&mut self) {
        loop {
            let Some(fw) = self.firewall.as_mut() else {
                return;
            };
            let Some(first) = fw.queue.first_entry() else {
                return;
            };
            if !first.get().0.ready() {
                return;
            }
            let (entry, bytes) = first.remove();
            fw.queue_bytes -= bytes;
            match entry {
                Entry::Item {
                    record,
                    item,
                    admission,
                    request,
                } => self.item_admitted(&record, item, admission, request),
                Entry::Result {
                    result,
                    question,
                    answers,
                } => {
                    let (item, guidance) = project(result, question, answers);
                    self.deliver(item, guidance);
                }
                Entry::Local(item) => self.deliver(item, None),
            }
        }
    }

    fn item_admitted(
        &mut self,
        record: &str,
        item: InboundItem,
        admission: Admission,
        request: Option<(CollectiveId, bool)>,
    ) {
        match admission {
            Admission::Admitted(guidance) => {
                if let Some((id, shown)) = &request {
                    if !shown {
                        return;
                    }
                    self.request_presented(id);
                }
                self.deliver(item, guidance.map(LocalGuidance::Checked));
            }
            Admission::Withheld(w) => self.log(Some(record), LogKind::Withheld(w)),
            Admission::Pending(_) => {}
        }
    }
}

/// A result as the runtime sees it: a withheld question or answer replaced by its `withheld`
/// value, every other outcome unchanged, and the advice of each check that drew any.
fn project(
    result: CollectiveResult,
    question: Option<Admission>,
    answers: BTreeMap<AgentAddress, Admission>,
) -> (InboundItem, Option<LocalGuidance>) {
    let question_guidance = question.as_ref().and_then(Admission::guidance);
    let shown_question = match question {
        Some(Admission::Withheld(w)) => QuestionOrWithheld::Withheld(w),
        _ => result.question().clone(),
    };
    let mut advice = Vec::new();
    let outcomes: Vec<MemberOutcome> = result
        .outcomes()
        .iter()
        .map(|o| match answers.get(&o.member) {
            Some(Admission::Withheld(w)) => MemberOutcome {
                member: o.member.clone(),
                outcome: CollectiveMemberOutcome::Withheld(w.clone()),
            },
            Some(a) => {
                if let Some(guidance) = a.guidance() {
                    advice.push(AnswerGuidance {
                        member: o.member.clone(),
                        guidance,
                    });
                }
                o.clone()
            }
            None => o.clone(),
        })
        .collect();
    let guidance = (question_guidance.is_some() || !advice.is_empty()).then_some(LocalGuidance::Result {
        question: question_guidance,
        answers: advice,
    });
    let projected = CollectiveResult::new(
        result.op(),
        result.id().clone(),
        result.to().clone(),
        shown_question,
        outcomes,
    )
    .unwrap_or(result);
    (InboundItem::CollectiveResult(projected), guidance)
}
