//! Sans-IO tests against a scripted server: records waiting for their conversation (overflow,
//! lookups that time out), recovery after a reconnect, a member's held answers and requests, and
//! refusals routed inbound.

use super::records::{MAX_RECOVERY_LIMIT, RECOVERY_ATTEMPTS, RESOLVE_ATTEMPTS};
use super::*;
use crate::harness::address::MessageAddressInput;
use crate::harness::collective::{
    close_content, request_content, AskOp, ClosePart, CollectiveResponse, RecordHash, ResponsePart,
};
use crate::harness::content::Part;
use crate::harness::errors::SendErrorReason;
use crate::harness::id::Nonce;
use crate::harness::inbound::CollectiveMemberOutcome;
use crate::harness::json::JsonValue;
use crate::harness::schema::AnswerContent;
use crate::harness::send::{build_request, CollectiveOperation, FailureDelivery, SendInput, SendOptions};
use agentwire_core::SeededEntropy;
use serde_json::{json, Value};

pub(super) const TIMEOUT_MS: u64 = 100;

/// One endpoint and what the scripted server has seen of it.
pub(super) struct Script {
    pub ep: Endpoint,
    pub now: Millis,
    /// Requests sent and not answered, in order.
    pub sent: Vec<Value>,
    pub events: Vec<EndpointEvent>,
}

pub(super) fn alice() -> AgentAddress {
    AgentAddress::parse("agent:alice").unwrap()
}

impl Script {
    /// Connected, its first recovery answered with an empty window (nothing was posted before).
    pub(super) fn new(tune: impl FnOnce(&mut EndpointConfig)) -> Script {
        let mut s = Script::unconnected(tune);
        s.connect();
        s.recover_nothing();
        s
    }

    /// Answers the recovery in flight (every connect reads the recent window back, the first
    /// too) with an empty window.
    pub(super) fn recover_nothing(&mut self) {
        if let Some(list) = self.take("agent/message/list") {
            self.reply(&list, json!({"messages": [], "hasMore": false}));
        }
    }

    /// No socket yet.
    pub(super) fn unconnected(tune: impl FnOnce(&mut EndpointConfig)) -> Script {
        let mut cfg = EndpointConfig::new(alice());
        tune(&mut cfg);
        let session = SessionConfig {
            request_timeout_ms: TIMEOUT_MS,
            ..SessionConfig::default()
        };
        Script {
            ep: Endpoint::new(cfg, session, Box::new(SeededEntropy::new(7))),
            now: 1_000,
            sent: Vec::new(),
            events: Vec::new(),
        }
    }

    pub(super) fn connect(&mut self) {
        self.start_connect();
        let hello = self.take_connect();
        self.reply(&hello, json!({}));
        assert!(self.events.iter().any(|e| matches!(e, EndpointEvent::Connected { .. })));
    }

    /// The socket opens and the connect goes out; its answer is left to the test.
    pub(super) fn start_connect(&mut self) {
        self.ep.handle_open(self.now);
        self.ep
            .connect(self.now, Credentials::AgentKey("moltzap_agent_k".into()))
            .unwrap();
        self.pump();
    }

    /// The connect request in flight.
    pub(super) fn take_connect(&mut self) -> Value {
        self.take("agent/network/connect").expect("a connect")
    }

    /// The socket closes and a new connection is made (the endpoint then recovers).
    pub(super) fn reconnect(&mut self) {
        self.ep.handle_close(self.now, 1006, "");
        self.pump();
        self.sent.clear();
        self.connect();
    }

    pub(super) fn listen(&mut self) {
        self.ep.listen().unwrap();
    }

    pub(super) fn pump(&mut self) {
        while let Some(out) = self.ep.poll_transmit() {
            // A close frame carries no request.
            if let Some(text) = out.as_text() {
                self.sent.push(serde_json::from_str(text).unwrap());
            }
        }
        self.events.extend(std::iter::from_fn(|| self.ep.poll_event()));
    }

    /// Takes the first unanswered request of `method`.
    pub(super) fn take(&mut self, method: &str) -> Option<Value> {
        let i = self.sent.iter().position(|v| v["method"] == method)?;
        Some(self.sent.remove(i))
    }

    pub(super) fn reply(&mut self, request: &Value, result: Value) {
        let text = json!({"jsonrpc": "2.0", "id": request["id"], "result": result}).to_string();
        self.ep.handle_text(self.now, &text);
        self.pump();
    }

    /// Answers the pending `conversations/get` with `members` (alice among them).
    pub(super) fn conversation(&mut self, kind: &str, members: &[&str]) {
        let get = self.take("conversations/get").expect("a conversations/get");
        let ps: Vec<Value> = members
            .iter()
            .map(|n| json!({"participant": {"type": "agent", "id": n}, "agentName": n}))
            .collect();
        let id = get["params"]["conversationId"].clone();
        self.reply(
            &get,
            json!({"conversation": {"id": id, "type": kind}, "participants": ps}),
        );
    }

    pub(super) fn push(&mut self, message: &Value) {
        self.push_unpolled(message);
        self.pump();
    }

    /// A live push whose events the host has not polled yet.
    pub(super) fn push_unpolled(&mut self, message: &Value) {
        let text = json!({"jsonrpc": "2.0", "method": "messages/received", "params": {"message": message}});
        self.ep.handle_text(self.now, &text.to_string());
    }

    /// Time passes to the next timer, which fires.
    pub(super) fn tick(&mut self) {
        let at = self.ep.poll_timeout().expect("a timer");
        self.now = self.now.max(at);
        self.ep.handle_timeout(self.now);
        self.pump();
    }

    pub(super) fn items(&self) -> Vec<&InboundItem> {
        self.events
            .iter()
            .filter_map(|e| match e {
                EndpointEvent::Delivery(d) => Some(&d.item),
                _ => None,
            })
            .collect()
    }

    /// The texts of the multicasts delivered, in order.
    pub(super) fn texts(&self) -> Vec<String> {
        self.items()
            .into_iter()
            .filter_map(|i| match i {
                InboundItem::Multicast { message } => {
                    let content = match message {
                        crate::harness::inbound::InboundMessage::Direct(d) => &d.content,
                        crate::harness::inbound::InboundMessage::Group(g) => g.content(),
                    };
                    match &content.parts()[0] {
                        Part::Text(t) => Some(t.clone()),
                        Part::Data(_) => None,
                    }
                }
                _ => None,
            })
            .collect()
    }

    pub(super) fn logged(&self, record: &str) -> Vec<&LogKind> {
        self.events
            .iter()
            .filter_map(|e| match e {
                EndpointEvent::Logged(l) if l.record.as_deref() == Some(record) => Some(&l.kind),
                _ => None,
            })
            .collect()
    }
}

pub(super) fn message(id: &str, conv: &str, sender: &str, parts: Value) -> Value {
    json!({"id": id, "conversationId": conv, "senderId": sender, "parts": parts, "createdAt": "t"})
}

pub(super) fn plain(id: &str, conv: &str, sender: &str, text: &str) -> Value {
    message(id, conv, sender, json!([{"type": "text", "text": text}]))
}

pub(super) fn parts_of(content: &crate::harness::content::Content) -> Value {
    serde_json::from_str(&crate::harness::canonical::to_canonical(&content.to_json())).unwrap()
}

pub(super) fn hash_of(m: &Value) -> RecordHash {
    let parts = JsonValue::parse(&m["parts"].to_string()).unwrap();
    super::wire::record_hash(
        m["conversationId"].as_str().unwrap(),
        m["id"].as_str().unwrap(),
        m["senderId"].as_str().unwrap(),
        &parts,
    )
}

#[test]
fn a_delivery_dropped_for_overflow_before_it_is_polled_is_not_reported() {
    let mut s = Script::new(|c| c.max_inbox = 2);
    s.listen();
    s.push(&plain("m1", "c1", "bob", "one"));
    s.conversation("dm", &["alice", "bob"]);
    assert_eq!(s.texts(), vec!["one"]);
    s.events.clear();
    // Three more before the host polls: m1, then m2, leave the inbox of two.
    for (id, text) in [("m2", "two"), ("m3", "three"), ("m4", "four")] {
        s.push_unpolled(&plain(id, "c1", "bob", text));
    }
    s.pump();
    assert_eq!(s.texts(), vec!["three", "four"], "m2 could not be acknowledged");
    assert!(s.events.iter().any(|e| matches!(
        e,
        EndpointEvent::Logged(LogEntry {
            kind: LogKind::InboxOverflow(_),
            ..
        })
    )));
}

#[test]
fn a_record_with_a_null_post_id_reads_its_id_as_the_post_id() {
    let mut s = Script::new(|_| {});
    s.listen();
    let mut m = plain("m1", "c1", "bob", "one");
    m["postId"] = Value::Null;
    s.push(&m);
    s.conversation("dm", &["alice", "bob"]);
    assert_eq!(s.texts(), vec!["one"]);
}

#[test]
fn unlisten_drops_the_queued_deliveries_that_the_next_listen_replays() {
    let mut s = Script::new(|_| {});
    s.listen();
    s.push(&plain("m1", "c1", "bob", "one"));
    s.conversation("dm", &["alice", "bob"]);
    assert_eq!(s.texts(), vec!["one"]);
    s.events.clear();
    // m2's delivery is queued, not polled; the host subscribes again and again first.
    s.push_unpolled(&plain("m2", "c1", "bob", "two"));
    for _ in 0..100 {
        s.ep.unlisten();
        s.ep.listen().unwrap();
    }
    s.pump();
    assert_eq!(s.texts(), vec!["one", "two"], "each unacknowledged delivery once");
    s.events.clear();
    s.push_unpolled(&plain("m3", "c1", "bob", "three"));
    s.ep.unlisten();
    s.pump();
    assert!(s.texts().is_empty(), "no delivery past the end of the subscription");
}

// ---- item 1: an overflow-dropped record is not counted as seen ----

#[test]
fn a_record_dropped_for_overflow_is_read_back_by_the_next_recovery() {
    let mut s = Script::new(|c| c.max_pending_records = 1);
    s.listen();
    let one = plain("m1", "c1", "bob", "one");
    let two = plain("m2", "c1", "bob", "two");
    s.push(&one);
    // m1 waits for its conversation; m2 finds the queue full.
    s.push(&two);
    assert_eq!(s.logged("m2"), vec![&LogKind::RecordsOverflow]);
    s.conversation("dm", &["alice", "bob"]);
    assert_eq!(s.texts(), vec!["one"]);
    s.reconnect();
    let list = s.take("agent/message/list").expect("a recovery");
    s.reply(&list, json!({"messages": [one, two], "hasMore": false}));
    assert_eq!(s.texts(), vec!["one", "two"], "m2 is read back once, m1 is not");
}

// ---- item 2: a lookup that times out is retried, then its records are dropped ----

#[test]
fn a_conversation_lookup_that_times_out_is_asked_again_after_a_backoff() {
    let mut s = Script::new(|_| {});
    s.listen();
    s.push(&plain("m1", "c1", "bob", "one"));
    assert!(s.take("conversations/get").is_some());
    // No answer: the request times out; no record or reconnect comes.
    s.tick();
    assert!(s.take("conversations/get").is_none(), "not asked again at once");
    s.tick();
    assert!(s.sent.iter().any(|v| v["method"] == "conversations/get"), "asked again");
    s.conversation("dm", &["alice", "bob"]);
    assert_eq!(s.texts(), vec!["one"]);
}

#[test]
fn a_conversation_that_never_answers_drops_its_records_and_the_queue_moves_on() {
    let mut s = Script::new(|_| {});
    s.listen();
    s.push(&plain("m1", "c1", "bob", "one"));
    s.push(&plain("m2", "c2", "bob", "two"));
    let mut asked = 0;
    while s.logged("m1").is_empty() {
        if s.take("conversations/get").is_some() {
            asked += 1;
        }
        s.tick();
        assert!(asked <= RESOLVE_ATTEMPTS, "asked {asked} times");
    }
    assert_eq!(asked, RESOLVE_ATTEMPTS);
    assert!(
        matches!(s.logged("m1")[..], [LogKind::Unreadable(why)] if why.contains("could not be looked up")),
        "{:?}",
        s.logged("m1")
    );
    // The record behind it is resolved and delivered.
    let get = s
        .sent
        .iter()
        .find(|v| v["method"] == "conversations/get")
        .cloned()
        .unwrap();
    assert_eq!(get["params"]["conversationId"], "c2");
    s.conversation("dm", &["alice", "bob"]);
    assert_eq!(s.texts(), vec!["two"]);
}

// ---- item 3: live pushes wait for the recovered window; the limit is capped ----

#[test]
fn live_pushes_after_a_reconnect_wait_for_the_recovered_window() {
    let mut s = Script::new(|c| c.recovery_limit = 500);
    s.listen();
    s.push(&plain("m0", "c1", "bob", "zero"));
    s.conversation("dm", &["alice", "bob"]);
    s.reconnect();
    let list = s.take("agent/message/list").expect("a recovery");
    assert_eq!(
        list["params"]["limit"], MAX_RECOVERY_LIMIT,
        "servers cap the window at 100"
    );
    // A live push overtakes the window on the wire: it waits for it.
    let two = plain("m2", "c1", "bob", "two");
    s.push(&two);
    assert_eq!(s.texts(), vec!["zero"]);
    let one = plain("m1", "c1", "bob", "one");
    s.reply(
        &list,
        json!({"messages": [plain("m0", "c1", "bob", "zero"), one, two], "hasMore": false}),
    );
    assert_eq!(s.texts(), vec!["zero", "one", "two"], "in chain order, each once");
}

#[test]
fn a_recovery_without_an_answer_is_retried_and_only_then_releases_the_live_pushes() {
    let mut s = Script::new(|_| {});
    s.listen();
    s.push(&plain("m0", "c1", "bob", "zero"));
    s.conversation("dm", &["alice", "bob"]);
    s.reconnect();
    assert!(s.take("agent/message/list").is_some());
    s.push(&plain("m1", "c1", "bob", "one"));
    s.tick(); // the recovery times out
    assert_eq!(s.texts(), vec!["zero"], "the live push still waits");
    assert!(s.take("agent/message/list").is_none(), "not asked again at once");
    let mut asked = 1;
    while s.texts().len() == 1 {
        s.tick();
        if s.take("agent/message/list").is_some() {
            asked += 1;
        }
        assert!(asked <= RECOVERY_ATTEMPTS, "asked {asked} times");
    }
    assert_eq!(asked, RECOVERY_ATTEMPTS);
    assert_eq!(s.texts(), vec!["zero", "one"]);
}

#[test]
fn a_retried_recovery_that_is_answered_keeps_the_chain_order() {
    let mut s = Script::new(|_| {});
    s.listen();
    s.push(&plain("m0", "c1", "bob", "zero"));
    s.conversation("dm", &["alice", "bob"]);
    s.reconnect();
    assert!(s.take("agent/message/list").is_some());
    let two = plain("m2", "c1", "bob", "two");
    s.push(&two);
    s.tick(); // times out
    s.tick(); // the retry goes out
    let list = s.take("agent/message/list").expect("asked again");
    s.reply(
        &list,
        json!({"messages": [plain("m1", "c1", "bob", "one"), two], "hasMore": false}),
    );
    assert_eq!(s.texts(), vec!["zero", "one", "two"]);
}

// ---- item 4: a member keeps each member's first answer; held requests have their budget ----

pub(super) fn request(op: AskOp, requester: &str, seed: u8, now: Millis) -> (crate::harness::id::CollectiveId, Value) {
    let from = AgentAddress::from_name(requester).unwrap();
    let part = build_request(
        op,
        &from,
        Nonce::from_bytes(&[seed; 32]),
        now,
        600,
        crate::harness::collective::tests::schema(),
    )
    .unwrap();
    let id = part.id.clone();
    (id, parts_of(&request_content("q", part).unwrap()))
}

pub(super) fn answer(id: &crate::harness::id::CollectiveId, ok: bool) -> Value {
    let mut content = AnswerContent::default();
    content
        .0
        .insert("ok".into(), crate::harness::schema::AnswerValue::Bool(ok));
    parts_of(
        &crate::harness::collective::response_content(ResponsePart {
            id: id.clone(),
            response: CollectiveResponse::Accept(content),
        })
        .unwrap(),
    )
}

/// A close of `id` listing `included`.
pub(super) fn close(id: &crate::harness::id::CollectiveId, included: Vec<RecordHash>) -> Value {
    parts_of(
        &close_content(ClosePart {
            id: id.clone(),
            included,
        })
        .unwrap(),
    )
}

/// The collective results delivered.
fn results(s: &Script) -> Vec<&crate::harness::inbound::CollectiveResult> {
    s.items()
        .into_iter()
        .filter_map(|i| match i {
            InboundItem::CollectiveResult(r) => Some(r),
            _ => None,
        })
        .collect()
}

/// The conversation the first request delivered arrived in.
fn request_to(s: &Script) -> MessageAddressInput {
    s.items()
        .into_iter()
        .find_map(|i| match i {
            InboundItem::CollectiveRequest { to, .. } => Some(to.clone()),
            _ => None,
        })
        .expect("a request")
}

/// Alice holds bob's all_gather request in the group `g` of alice, bob and carol.
fn held_all_gather(s: &mut Script) -> crate::harness::id::CollectiveId {
    let (id, req) = request(AskOp::AllGather, "bob", 1, s.now);
    s.push(&message("r", "g", "bob", req));
    s.conversation("group", &["alice", "bob", "carol"]);
    assert_eq!(s.items().len(), 1, "the request is presented");
    id
}

#[test]
fn held_answers_have_a_byte_budget_that_a_close_frees() {
    // Room for two answers' footprints: carol's first two fit, her third does not (though
    // under the four kept per member), unless a close waiting for it lists it.
    let mut s = Script::new(|_| {});
    s.listen();
    let id = held_all_gather(&mut s);
    let one = {
        let mut c = AnswerContent::default();
        c.0.insert("ok".into(), crate::harness::schema::AnswerValue::Bool(true));
        let hash = hash_of(&message("a1", "g", "carol", answer(&id, true)));
        let carol = AgentAddress::parse("agent:carol").unwrap();
        super::answers::held_footprint(&hash, &carol, &CollectiveResponse::Accept(c))
    };
    s.ep.cfg.max_held_answer_bytes = 2 * one;
    for n in 1..=3 {
        s.push(&message(&format!("a{n}"), "g", "carol", answer(&id, n != 2)));
    }
    assert_eq!(s.logged("a2"), vec![&LogKind::AnswerRecorded]);
    assert_eq!(s.logged("a3"), vec![&LogKind::AnswerIgnored], "over the budget");
    let listed = message("a4", "g", "carol", answer(&id, false));
    s.push(&message("x", "g", "bob", close(&id, vec![hash_of(&listed)])));
    assert!(
        matches!(&s.logged("x")[..], [LogKind::CloseWaiting(_)]),
        "{:?}",
        s.logged("x")
    );
    s.push(&listed);
    assert_eq!(
        s.logged("a4"),
        vec![&LogKind::AnswerRecorded],
        "listed by the waiting close"
    );
    assert_eq!(results(&s).len(), 1, "the close applied");
    // The close freed its answers: the next request's fit again.
    let (next, req) = request(AskOp::AllGather, "bob", 2, s.now);
    s.push(&message("r2", "g", "bob", req));
    for n in 1..=2 {
        let a = format!("b{n}");
        s.push(&message(&a, "g", "carol", answer(&next, true)));
        assert_eq!(s.logged(&a), vec![&LogKind::AnswerRecorded], "{a}");
    }
}

#[test]
fn an_all_gather_member_keeps_a_few_answers_per_member_and_the_first_close_picks() {
    let mut s = Script::new(|_| {});
    s.listen();
    let id = held_all_gather(&mut s);
    let first = message("a1", "g", "carol", answer(&id, true));
    let second = message("a2", "g", "carol", answer(&id, false));
    s.push(&first);
    s.push(&second);
    assert_eq!(s.logged("a1"), vec![&LogKind::AnswerRecorded]);
    assert_eq!(s.logged("a2"), vec![&LogKind::AnswerRecorded]);
    // Past the bound a member's answers are ignored.
    for n in 3..=super::answers::MAX_ANSWERS_PER_MEMBER + 1 {
        s.push(&message(&format!("a{n}"), "g", "carol", answer(&id, true)));
    }
    let last = format!("a{}", super::answers::MAX_ANSWERS_PER_MEMBER + 1);
    assert_eq!(s.logged(&last), vec![&LogKind::AnswerIgnored]);
    // The close lists the answer the requester counted; it alone is the result's.
    s.push(&message("x1", "g", "bob", close(&id, vec![hash_of(&second)])));
    assert_eq!(s.logged("x1"), vec![&LogKind::CloseApplied]);
    s.push(&message("x2", "g", "bob", close(&id, vec![hash_of(&first)])));
    assert!(matches!(&s.logged("x2")[..], [LogKind::CloseIgnored(why)] if why.contains("first close")));
    let [r] = results(&s)[..] else {
        panic!("{:?}", s.items())
    };
    let carol = &r.outcomes()[1];
    assert_eq!(carol.member.to_string(), "agent:carol");
    assert!(
        matches!(&carol.outcome, CollectiveMemberOutcome::Answered { content } if content.0.get("ok") == Some(&crate::harness::schema::AnswerValue::Bool(false))),
        "{carol:?}"
    );
}

#[test]
fn a_close_from_anyone_but_the_requester_is_logged_and_gives_no_result() {
    let mut s = Script::new(|_| {});
    s.listen();
    let id = held_all_gather(&mut s);
    let ans = message("a1", "g", "carol", answer(&id, true));
    s.push(&ans);
    // carol, a member of the group, closes bob's all_gather: consumed, logged, no result.
    s.push(&message("x1", "g", "carol", close(&id, vec![hash_of(&ans)])));
    assert!(
        matches!(&s.logged("x1")[..], [LogKind::CloseIgnored(why)] if why.contains("requester")),
        "{:?}",
        s.logged("x1")
    );
    assert!(results(&s).is_empty(), "{:?}", s.items());
    // It was not the first close either: bob's close still applies.
    s.push(&message("x2", "g", "bob", close(&id, vec![hash_of(&ans)])));
    assert_eq!(s.logged("x2"), vec![&LogKind::CloseApplied]);
    assert_eq!(results(&s).len(), 1);
}

// ---- the requester's side: each member's first answer, in its direct conversation ----

/// Alice asks `to` (bob and carol) with `op`; the members are found and every post is
/// certified. The operation's id.
fn asked(s: &mut Script, to: &str, op: AskOp) -> crate::harness::id::CollectiveId {
    let send =
        s.ep.send(s.now, super::gate_tests::ask(to, op, 60), SendOptions::default())
            .unwrap();
    s.pump();
    let lookup = s.take("agents/lookupByName").expect("the members are looked up");
    s.reply(
        &lookup,
        json!({"agents": [{"id": "bob", "name": "bob"}, {"id": "carol", "name": "carol"}]}),
    );
    while let Some(post) = s.take("messages/send") {
        s.reply(&post, json!({"message": {}}));
    }
    match super::gate_tests::done(s, send) {
        Some(Ok(SendResult {
            operation_id: Some(id), ..
        })) => id,
        other => panic!("{other:?}"),
    }
}

/// The `ok` a member answered, as the result records it.
fn answered_ok(r: &crate::harness::inbound::CollectiveResult, member: &str) -> Option<bool> {
    let o = r.outcomes().iter().find(|o| o.member.as_str() == member)?;
    match &o.outcome {
        CollectiveMemberOutcome::Answered { content } => match content.0.get("ok") {
            Some(crate::harness::schema::AnswerValue::Bool(b)) => Some(*b),
            _ => None,
        },
        _ => None,
    }
}

#[test]
fn the_requester_keeps_each_members_first_answer() {
    let mut s = Script::new(|_| {});
    s.listen();
    let id = asked(&mut s, "group:bob,carol", AskOp::Gather);
    s.push(&message("a1", "c1", "bob", answer(&id, true)));
    s.conversation("dm", &["alice", "bob"]);
    s.push(&message("a2", "c1", "bob", answer(&id, false)));
    assert_eq!(s.logged("a1"), vec![&LogKind::AnswerRecorded]);
    assert_eq!(s.logged("a2"), vec![&LogKind::AnswerIgnored]);
    s.push(&message("a3", "c2", "carol", answer(&id, false)));
    s.conversation("dm", &["alice", "carol"]);
    let [r] = results(&s)[..] else {
        panic!("{:?}", s.items())
    };
    assert_eq!(answered_ok(r, "agent:bob"), Some(true), "{:?}", r.outcomes());
    assert_eq!(answered_ok(r, "agent:carol"), Some(false));
}

#[test]
fn a_gather_answer_counts_only_in_the_members_direct_conversation() {
    let mut s = Script::new(|_| {});
    s.listen();
    let id = asked(&mut s, "group:bob,carol", AskOp::Gather);
    // bob answers in a group alice shares with him: not his direct conversation.
    s.push(&message("a1", "g", "bob", answer(&id, false)));
    s.conversation("group", &["alice", "bob", "carol"]);
    assert_eq!(s.logged("a1"), vec![&LogKind::AnswerUnmatched]);
    s.push(&message("a2", "c1", "bob", answer(&id, true)));
    s.conversation("dm", &["alice", "bob"]);
    assert_eq!(s.logged("a2"), vec![&LogKind::AnswerRecorded]);
    s.push(&message("a3", "c2", "carol", answer(&id, true)));
    s.conversation("dm", &["alice", "carol"]);
    let [r] = results(&s)[..] else {
        panic!("{:?}", s.items())
    };
    assert_eq!(answered_ok(r, "agent:bob"), Some(true), "{:?}", r.outcomes());
}

#[test]
fn the_close_lists_the_counted_answers_in_member_order() {
    let mut s = Script::new(|_| {});
    s.listen();
    let id = asked(&mut s, "group:bob,carol", AskOp::AllGather);
    // carol answers first; the close still lists bob's answer first.
    let carol = message("a1", "g", "carol", answer(&id, false));
    s.push(&carol);
    s.conversation("group", &["alice", "bob", "carol"]);
    let bob = message("a2", "g", "bob", answer(&id, true));
    s.push(&bob);
    assert_eq!(s.logged("a1"), vec![&LogKind::AnswerRecorded]);
    assert_eq!(s.logged("a2"), vec![&LogKind::AnswerRecorded]);
    let post = s.take("messages/send").expect("the close is posted");
    assert_eq!(
        post["params"]["parts"],
        close(&id, vec![hash_of(&bob), hash_of(&carol)])
    );
    s.reply(&post, json!({"message": {}}));
    let [r] = results(&s)[..] else {
        panic!("{:?}", s.items())
    };
    assert_eq!(answered_ok(r, "agent:bob"), Some(true));
    assert_eq!(answered_ok(r, "agent:carol"), Some(false));
}

#[test]
fn by_default_an_all_gather_post_not_certified_fails_the_send_at_20_seconds() {
    let mut s = Script::new(|_| {});
    // The default configuration, and a session that waits for answers longer than the send.
    s.ep = Endpoint::new(
        EndpointConfig {
            recovery_limit: 0,
            ..EndpointConfig::new(alice())
        },
        SessionConfig::default(),
        Box::new(SeededEntropy::new(7)),
    );
    s.sent.clear();
    s.connect();
    let start = s.now;
    let send =
        s.ep.send(
            s.now,
            super::gate_tests::ask("group:bob,carol", AskOp::AllGather, 600),
            SendOptions::default(),
        )
        .unwrap();
    s.pump();
    let lookup = s.take("agents/lookupByName").expect("the members are looked up");
    s.reply(
        &lookup,
        json!({"agents": [{"id": "bob", "name": "bob"}, {"id": "carol", "name": "carol"}]}),
    );
    let _post = s.take("messages/send").expect("the group post");
    // The post is never certified.
    while super::gate_tests::done(&s, send).is_none() {
        s.tick();
    }
    assert_eq!(s.now - start, 20_000, "the send ended at {} ms", s.now - start);
    let Some(Err(SendFailure::Collective(e))) = super::gate_tests::done(&s, send) else {
        panic!("{:?}", s.events)
    };
    let crate::harness::errors::CollectiveFailure::MembersUnreachable(members) = e.failure else {
        panic!("{e:?}")
    };
    let named: Vec<(&str, SendErrorReason)> = members.iter().map(|m| (m.member.as_str(), m.reason)).collect();
    assert_eq!(
        named,
        vec![
            ("agent:bob", SendErrorReason::CertificationUnavailable),
            ("agent:carol", SendErrorReason::CertificationUnavailable)
        ]
    );
}

// ---- a close processed before the answers it lists waits for them ----

#[test]
fn a_live_close_released_by_a_failed_recovery_still_applies_when_its_answers_are_read_back() {
    let mut s = Script::new(|_| {});
    s.listen();
    let id = held_all_gather(&mut s);
    let ans = message("a1", "g", "carol", answer(&id, true));
    let x = message("x", "g", "bob", close(&id, vec![hash_of(&ans)]));
    s.reconnect();
    assert!(s.take("agent/message/list").is_some());
    // The close arrives live while the recovery is outstanding; the recovery gets no answer.
    s.push(&x);
    s.tick();
    s.reconnect();
    let list = s.take("agent/message/list").expect("a recovery");
    s.reply(&list, json!({"messages": [ans, x], "hasMore": false}));
    assert_eq!(results(&s).len(), 1, "{:?}", s.events);
    assert_eq!(results(&s)[0].outcomes()[1].outcome.kind(), "answered");
}

#[test]
fn a_close_listing_an_answer_dropped_for_overflow_waits_until_it_is_read_back() {
    let mut s = Script::new(|c| c.max_pending_records = 1);
    s.listen();
    let id = held_all_gather(&mut s);
    // A record waits for its conversation: carol's answer behind it finds the queue full.
    s.push(&plain("m1", "c2", "dana", "one"));
    let ans = message("a1", "g", "carol", answer(&id, true));
    s.push(&ans);
    assert_eq!(s.logged("a1"), vec![&LogKind::RecordsOverflow]);
    s.conversation("dm", &["alice", "dana"]);
    let x = message("x", "g", "bob", close(&id, vec![hash_of(&ans)]));
    s.push(&x);
    assert!(
        matches!(&s.logged("x")[..], [LogKind::CloseWaiting(_)]),
        "{:?}",
        s.logged("x")
    );
    assert!(results(&s).is_empty());
    // The request is closed: an answer now is refused, nothing posted.
    let reply = SendInput::Response {
        to: request_to(&s),
        response: CollectiveResponse::Decline,
    };
    assert!(matches!(
        s.ep.send(s.now, reply, SendOptions::default()),
        Err(SendFailure::Collective(e)) if e.failure == crate::harness::errors::CollectiveFailure::RequestExpired
    ));
    s.reconnect();
    let list = s.take("agent/message/list").expect("a recovery");
    s.reply(&list, json!({"messages": [ans, x], "hasMore": false}));
    assert_eq!(s.logged("x").last(), Some(&&LogKind::CloseApplied));
    assert_eq!(results(&s).len(), 1);
    assert_eq!(results(&s)[0].outcomes()[1].outcome.kind(), "answered");
}

#[test]
fn a_waiting_close_is_ignored_when_its_request_is_forgotten() {
    let mut s = Script::new(|_| {});
    s.listen();
    let id = held_all_gather(&mut s);
    let ans = message("a1", "g", "carol", answer(&id, true));
    s.push(&message("x", "g", "bob", close(&id, vec![hash_of(&ans)])));
    assert!(matches!(&s.logged("x")[..], [LogKind::CloseWaiting(_)]));
    s.now += 600_000 + crate::harness::send::DEADLINE_GRACE_MS;
    s.ep.handle_timeout(s.now);
    s.pump();
    assert!(matches!(
        &s.logged("x")[..],
        [LogKind::CloseWaiting(_), LogKind::CloseIgnored(_)]
    ));
    assert!(results(&s).is_empty());
}

#[test]
fn held_requests_have_their_own_budget_and_cannot_block_the_agents_asks() {
    let mut s = Script::new(|c| {
        c.max_operations = 1;
        c.max_held_requests = 1;
    });
    s.listen();
    let (_, from_bob) = request(AskOp::Gather, "bob", 1, s.now);
    s.push(&message("r1", "c1", "bob", from_bob));
    s.conversation("dm", &["alice", "bob"]);
    let (_, from_carol) = request(AskOp::Gather, "carol", 2, s.now);
    s.push(&message("r2", "c2", "carol", from_carol));
    s.conversation("dm", &["alice", "carol"]);
    assert_eq!(s.items().len(), 1, "carol's request is not held");
    assert!(matches!(s.logged("r2")[..], [LogKind::Unreadable(why)] if why.contains("held")));
    // The agent's own ask still has its budget.
    let ask = SendInput::Message {
        to: MessageAddressInput::parse("agent:bob").unwrap(),
        text: "q".into(),
        collective: Some(CollectiveOperation::Ask {
            op: AskOp::Gather,
            deadline: 60,
            requested_schema: crate::harness::collective::tests::schema(),
        }),
    };
    assert!(s.ep.send(s.now, ask, SendOptions::default()).is_ok());
}

/// A gather request from bob (nonce from `i`), 30 days out, whose schema is as many short enum
/// values as fit the content limit: 50 properties of 95 values each (few values per enum keep
/// the parse quick in debug builds).
fn fat_request(i: u32, now: Millis) -> Value {
    use crate::harness::json::JsonPath;
    use crate::harness::schema::RequestedSchema;
    static SCHEMA: std::sync::OnceLock<RequestedSchema> = std::sync::OnceLock::new();
    let schema = SCHEMA.get_or_init(|| {
        let values: Vec<String> = (0..95).map(|k| format!("v{k}")).collect();
        let properties: serde_json::Map<String, Value> = (0..50)
            .map(|p| (format!("p{p}"), json!({"type": "string", "enum": values})))
            .collect();
        let v = json!({"type": "object", "properties": properties});
        RequestedSchema::parse(&JsonValue::parse(&v.to_string()).unwrap(), &JsonPath::default()).unwrap()
    });
    let mut nonce = [0u8; 32];
    nonce[..4].copy_from_slice(&i.to_le_bytes());
    let from = AgentAddress::from_name("bob").unwrap();
    let part = build_request(
        AskOp::Gather,
        &from,
        Nonce::from_bytes(&nonce),
        now,
        crate::harness::send::MAX_DEADLINE_SECS,
        schema.clone(),
    )
    .unwrap();
    parts_of(&request_content("q", part).unwrap())
}

/// Held requests are bounded in heap, not only in count: requests whose schema takes about 0.3
/// MiB parsed (a 32 KiB wire content) stop being held at `max_held_request_bytes` (64 MiB by
/// default), far below `max_held_requests` (1,024); past it each is logged, not delivered, as
/// past the count, and acknowledging the deliveries frees no room (the held copy answers them).
#[test]
fn held_requests_are_bounded_in_bytes_too() {
    let mut s = Script::new(|_| {});
    s.listen();
    let n = 500;
    let (mut delivered, mut refused, mut measured) = (0, 0, 0);
    for i in 0..n {
        let id = format!("r{i}");
        s.push(&message(&id, "c1", "bob", fat_request(i, s.now)));
        if i == 0 {
            s.conversation("dm", &["alice", "bob"]);
        }
        for d in s.items() {
            measured = d.to_json().footprint();
        }
        delivered += s.items().len();
        if matches!(s.logged(&id)[..], [LogKind::Unreadable(why)] if why.contains("held")) {
            refused += 1;
        }
        // The runtime acknowledges every delivery: the inbox keeps none of them.
        let ids: Vec<DeliveryId> = s
            .events
            .iter()
            .filter_map(|e| match e {
                EndpointEvent::Delivery(d) => Some(d.id),
                _ => None,
            })
            .collect();
        for d in ids {
            s.ep.acknowledge(d).unwrap();
        }
        s.events.clear();
    }
    // The default `max_held_request_bytes`; a held request takes more than its delivered item
    // (its schema is kept parsed as well as given).
    let budget: usize = 64 << 20;
    assert!(measured > 150_000, "a request's item takes {measured} bytes");
    assert_eq!(delivered + refused, n as usize, "every request is delivered or logged");
    assert!(
        delivered <= budget / measured,
        "{delivered} requests held, each over {measured} bytes, against {budget}"
    );
    assert!(delivered >= budget / measured / 4, "{delivered} requests held");
}

// ---- item 5: refusals before the id is minted go inbound too ----

#[test]
fn under_inbound_delivery_every_refused_collective_send_completes_and_fails_inbound() {
    let mut s = Script::new(|_| {});
    s.listen();
    let inbound = SendOptions {
        failure_delivery: FailureDelivery::Inbound,
    };
    let ask = |to: &str, op, deadline| SendInput::Message {
        to: MessageAddressInput::parse(to).unwrap(),
        text: "q".into(),
        collective: Some(CollectiveOperation::Ask {
            op,
            deadline,
            requested_schema: crate::harness::collective::tests::schema(),
        }),
    };
    let cases = [
        (ask("agent:alice", AskOp::Gather, 60), "agent:alice", "own address"),
        (ask("agent:bob", AskOp::Gather, 0), "agent:bob", "deadline"),
        (ask("agent:bob", AskOp::AllGather, 60), "agent:bob", "one agent"),
        (
            ask("group:bob,bob,carol", AskOp::Gather, 60),
            "group:bob,bob,carol",
            "more than once",
        ),
    ];
    for (input, to, says) in cases {
        let before = s.events.len();
        let send = s.ep.send(s.now, input, inbound).expect("completes");
        s.pump();
        let new = &s.events[before..];
        let Some(EndpointEvent::SendDone {
            outcome: Ok(result), ..
        }) = new
            .iter()
            .find(|e| matches!(e, EndpointEvent::SendDone { send: x, .. } if *x == send))
        else {
            panic!("{new:?}")
        };
        let Some(EndpointEvent::Delivery(InboundDelivery {
            item: InboundItem::OperationFailed { id, to: at, error },
            ..
        })) = new.iter().find(|e| matches!(e, EndpointEvent::Delivery(_)))
        else {
            panic!("{new:?}")
        };
        assert_eq!(result.operation_id.as_ref(), Some(id));
        assert_eq!(at.to_string(), to);
        assert!(error.starts_with("send failed: ") && error.contains(says), "{error}");
    }
    assert!(s.take("messages/send").is_none(), "nothing was posted");
    // A multicast has no operation id: its refusal is returned.
    let own = SendInput::Message {
        to: MessageAddressInput::parse("agent:alice").unwrap(),
        text: "hi".into(),
        collective: None,
    };
    let Err(SendFailure::Send(e)) = s.ep.send(s.now, own, inbound) else {
        panic!()
    };
    assert_eq!(e.reason, SendErrorReason::MembershipInvalid);
    // Under the default routing the same refusal is returned on the send.
    let Err(SendFailure::Send(e)) =
        s.ep.send(s.now, ask("agent:bob", AskOp::Gather, 0), SendOptions::default())
    else {
        panic!()
    };
    assert_eq!(e.reason, SendErrorReason::ContentInvalid);
}

// ---- an answer of unknown outcome ----

/// Alice's answer goes out and the connection drops before its reply: `outcome-unknown`.
fn answer_lost(s: &mut Script) -> Value {
    let to = request_to(s);
    let reply = SendInput::Response {
        to,
        response: CollectiveResponse::Decline,
    };
    let send = s.ep.send(s.now, reply, SendOptions::default()).unwrap();
    s.pump();
    let post = s.take("messages/send").expect("the answer is posted");
    s.ep.handle_close(s.now, 1006, "");
    s.pump();
    assert_eq!(
        super::gate_tests::send_reason(super::gate_tests::done(s, send)),
        SendErrorReason::OutcomeUnknown
    );
    post
}

#[test]
fn an_answer_of_unknown_outcome_leaves_its_request_answered_and_takes_no_second() {
    let mut s = Script::new(|_| {});
    s.listen();
    let (_, req) = request(AskOp::Gather, "bob", 1, s.now);
    s.push(&message("r", "c1", "bob", req));
    s.conversation("dm", &["alice", "bob"]);
    answer_lost(&mut s);
    // It may have been posted: a second answer is refused at once, nothing sent.
    let again = SendInput::Response {
        to: request_to(&s),
        response: CollectiveResponse::Decline,
    };
    let Err(SendFailure::Collective(e)) = s.ep.send(s.now, again, SendOptions::default()) else {
        panic!()
    };
    assert!(
        matches!(e.failure, crate::harness::errors::CollectiveFailure::RequestAnswered(_)),
        "{e:?}"
    );
    s.sent.clear();
    s.connect();
    assert!(s.take("messages/send").is_none());
}

/// The connection drops while the answer's frame is still queued: it never left, so the send
/// fails `network-unavailable` (the daemon cannot have acted on it), the request stays open,
/// and the frame is not sent on the next connection.
#[test]
fn an_answer_whose_frame_never_left_fails_network_unavailable_and_leaves_its_request_open() {
    let mut s = Script::new(|_| {});
    s.listen();
    let (_, req) = request(AskOp::Gather, "bob", 1, s.now);
    s.push(&message("r", "c1", "bob", req));
    s.conversation("dm", &["alice", "bob"]);
    s.sent.clear();
    let to = request_to(&s);
    let reply = || SendInput::Response {
        to: to.clone(),
        response: CollectiveResponse::Decline,
    };
    let send = s.ep.send(s.now, reply(), SendOptions::default()).unwrap();
    s.ep.handle_close(s.now, 1006, "");
    s.pump();
    assert_eq!(
        super::gate_tests::send_reason(super::gate_tests::done(&s, send)),
        SendErrorReason::NetworkUnavailable
    );
    assert!(s.take("messages/send").is_none(), "nothing left");
    s.connect();
    assert!(s.take("messages/send").is_none(), "not sent on the next connection");
    // The request is still open: the answer can be sent again, once.
    s.ep.send(s.now, reply(), SendOptions::default()).unwrap();
    s.pump();
    assert!(s.take("messages/send").is_some());
}

#[test]
fn a_close_listing_the_members_own_answer_of_unknown_outcome_applies_once_it_is_read_back() {
    let mut s = Script::new(|_| {});
    s.listen();
    let id = held_all_gather(&mut s);
    let post = answer_lost(&mut s);
    // The answer was posted after all: the recovery reads it back, then bob's close listing it.
    let own = message("a-own", "g", "alice", post["params"]["parts"].clone());
    let x = message("x", "g", "bob", close(&id, vec![hash_of(&own)]));
    s.sent.clear();
    s.connect();
    let list = s.take("agent/message/list").expect("a recovery");
    s.reply(&list, json!({"messages": [own, x], "hasMore": false}));
    assert_eq!(s.logged("x"), vec![&LogKind::CloseApplied]);
    let [r] = results(&s)[..] else { panic!("{:?}", s.events) };
    let kinds: Vec<&str> = r.outcomes().iter().map(|o| o.outcome.kind()).collect();
    assert_eq!(kinds, ["declined", "no-answer"], "alice, then carol");
}

// ---- the conversation cache is bounded ----

#[test]
fn known_conversations_are_bounded_and_the_least_recently_used_is_looked_up_again() {
    let mut s = Script::new(|c| c.max_conversations = 2);
    s.listen();
    s.push(&plain("m1", "c1", "bob", "1"));
    s.conversation("dm", &["alice", "bob"]);
    s.push(&plain("m2", "c2", "carol", "2"));
    s.conversation("dm", &["alice", "carol"]);
    s.push(&plain("m3", "c1", "bob", "3"));
    assert!(s.take("conversations/get").is_none(), "c1 is known");
    s.push(&plain("m4", "c3", "dana", "4"));
    s.conversation("dm", &["alice", "dana"]);
    assert_eq!(s.ep.conversations_known(), 2);
    // c2 was the least recently used: forgotten, and looked up again; c1 was kept.
    s.push(&plain("m5", "c1", "bob", "5"));
    assert!(s.take("conversations/get").is_none(), "c1 is still known");
    s.push(&plain("m6", "c2", "carol", "6"));
    let get = s
        .sent
        .iter()
        .find(|v| v["method"] == "conversations/get")
        .expect("c2 again");
    assert_eq!(get["params"]["conversationId"], "c2");
    s.conversation("dm", &["alice", "carol"]);
    assert_eq!(s.texts(), vec!["1", "2", "3", "4", "5", "6"]);
    assert_eq!(s.ep.conversations_known(), 2);
}

// ---- an ask that ends early leaves no timer; nothing is posted past the deadline ----

fn gather(to: &str, deadline: u32) -> SendInput {
    super::gate_tests::ask(to, AskOp::Gather, deadline)
}

#[test]
fn asks_that_end_at_their_member_lookup_leave_no_deadline_timer() {
    let mut s = Script::new(|_| {});
    for n in 0..50 {
        let send =
            s.ep.send(s.now, gather("agent:dana", 600), SendOptions::default())
                .unwrap();
        s.pump();
        let lookup = s.take("agents/lookupByName").expect("a lookup");
        if n % 2 == 0 {
            // dana is unknown
            s.reply(&lookup, json!({"agents": []}));
        } else {
            // the Registry refuses
            let refusal = json!({"jsonrpc": "2.0", "id": lookup["id"], "error": {"code": -32603, "message": "no"}});
            s.ep.handle_text(s.now, &refusal.to_string());
            s.pump();
        }
        assert!(matches!(super::gate_tests::done(&s, send), Some(Err(_))));
    }
    assert!(s.ep.timers.is_empty(), "{} timers left", s.ep.timers.len());
    assert!(s.take("messages/send").is_none());
}

#[test]
fn a_deadline_that_passes_during_the_member_lookup_fails_deadline_passed_and_posts_nothing() {
    let mut s = Script::new(|_| {});
    let send =
        s.ep.send(s.now, gather("agent:bob", 1), SendOptions::default())
            .unwrap();
    s.pump();
    let lookup = s.take("agents/lookupByName").expect("a lookup");
    // The lookup is answered after the deadline (its timer not yet run).
    s.now += 1_000;
    s.reply(&lookup, json!({"agents": [{"id": "b", "name": "bob"}]}));
    let Some(Err(SendFailure::Collective(e))) = super::gate_tests::done(&s, send) else {
        panic!("{:?}", s.events)
    };
    assert_eq!(e.failure, crate::harness::errors::CollectiveFailure::DeadlinePassed);
    assert!(s.take("messages/send").is_none());
    assert!(s.ep.timers.is_empty());
}

#[test]
fn the_deadline_fails_an_ask_whose_member_lookup_is_still_in_flight() {
    let mut s = Script::new(|_| {});
    // A session whose requests wait longer than the deadline.
    let mut cfg = EndpointConfig::new(alice());
    cfg.recovery_limit = 0;
    s.ep = Endpoint::new(cfg, SessionConfig::default(), Box::new(SeededEntropy::new(7)));
    s.sent.clear();
    s.connect();
    let send =
        s.ep.send(s.now, gather("agent:bob", 1), SendOptions::default())
            .unwrap();
    s.pump();
    let lookup = s.take("agents/lookupByName").expect("a lookup");
    s.now += 1_000;
    s.ep.handle_timeout(s.now);
    s.pump();
    let Some(Err(SendFailure::Collective(e))) = super::gate_tests::done(&s, send) else {
        panic!("{:?}", s.events)
    };
    assert_eq!(e.failure, crate::harness::errors::CollectiveFailure::DeadlinePassed);
    s.reply(&lookup, json!({"agents": [{"id": "b", "name": "bob"}]}));
    assert!(s.take("messages/send").is_none());
}

// ---- held requests: finished ones make room for new ones ----

/// A gather from `from` (seed `seed`, `deadline` seconds out) pushed as record `record` in the
/// direct conversation `conv`, whose lookup is answered when `first`.
fn push_gather(s: &mut Script, record: &str, conv: &str, from: &str, seed: u8, deadline: u32, first: bool) {
    let requester = AgentAddress::from_name(from).unwrap();
    let part = build_request(
        AskOp::Gather,
        &requester,
        Nonce::from_bytes(&[seed; 32]),
        s.now,
        deadline,
        crate::harness::collective::tests::schema(),
    )
    .unwrap();
    s.push(&message(
        record,
        conv,
        from,
        parts_of(&request_content("q", part).unwrap()),
    ));
    if first {
        s.conversation("dm", &["alice", from]);
    }
}

/// Alice answers the one open request in her direct conversation with `to`, and its post is
/// certified.
fn decline(s: &mut Script, to: &str) {
    let reply = SendInput::Response {
        to: MessageAddressInput::parse(&format!("agent:{to}")).unwrap(),
        response: CollectiveResponse::Decline,
    };
    s.ep.send(s.now, reply, SendOptions::default()).unwrap();
    s.pump();
    let post = s.take("messages/send").expect("the answer's post");
    s.reply(&post, json!({}));
}

fn held_refused(s: &Script, record: &str) -> bool {
    matches!(s.logged(record)[..], [LogKind::Unreadable(why)] if why.contains("held"))
}

/// A member answering every gather it gets, one every 3 s with a 60 s deadline (an ordinary
/// busy group): the requests it answered no longer need holding, and make room, so none is
/// dropped however long it runs. (From the longevity review's
/// `longevity_answered_requests_fill_the_held_budget_and_new_ones_are_dropped`: request #1024,
/// 51 minutes in, was the first dropped, and every one after it.)
#[test]
fn answered_requests_make_room_so_a_steady_stream_is_never_dropped() {
    let mut s = Script::new(|_| {});
    s.listen();
    let bob = AgentAddress::from_name("bob").unwrap();
    for i in 0..1100u32 {
        let mut nonce = [0u8; 32];
        nonce[..4].copy_from_slice(&i.to_be_bytes());
        let part = build_request(
            AskOp::Gather,
            &bob,
            Nonce::from_bytes(&nonce),
            s.now,
            60,
            crate::harness::collective::tests::schema(),
        )
        .unwrap();
        let record = format!("r{i}");
        let before = s.items().len();
        s.push(&message(
            &record,
            "c1",
            "bob",
            parts_of(&request_content("q", part).unwrap()),
        ));
        if i == 0 {
            s.conversation("dm", &["alice", "bob"]);
        }
        assert!(!held_refused(&s, &record), "#{i} dropped");
        assert_eq!(s.items().len(), before + 1, "#{i} delivered");
        decline(&mut s, "bob");
        assert!(s.ep.held.len() <= 1_024);
        s.now += 3_000;
        s.ep.handle_timeout(s.now);
        s.pump();
    }
    assert_eq!(
        s.ep.held.len(),
        1_024,
        "the table stays full of finished requests, the newest"
    );
}

/// Only finished requests make room: a table full of open ones refuses the next (a flood cannot
/// push out real requests), and an all_gather waiting for its close is kept past its deadline,
/// while answered gathers and expired unanswered ones go, the earliest deadline first.
#[test]
fn only_finished_requests_make_room_the_earliest_deadline_first() {
    let mut s = Script::new(|c| c.max_held_requests = 3);
    s.listen();
    // An all_gather waiting for its close (deadline 600 s), and two gathers: carol's (deadline
    // 100 s) and dave's (200 s).
    let all = held_all_gather(&mut s);
    push_gather(&mut s, "rc", "c-carol", "carol", 11, 100, true);
    push_gather(&mut s, "rd", "c-dave", "dave", 12, 200, true);
    assert_eq!(s.items().len(), 3);
    // Full of open requests: erin's is refused, and nothing is evicted.
    push_gather(&mut s, "re", "c-erin", "erin", 13, 300, true);
    assert!(held_refused(&s, "re"));
    assert_eq!(s.ep.held.len(), 3);
    // Dave's and carol's answered: erin's takes carol's place (the earlier deadline).
    decline(&mut s, "dave");
    decline(&mut s, "carol");
    push_gather(&mut s, "re2", "c-erin", "erin", 14, 300, false);
    assert!(!held_refused(&s, "re2"));
    assert_eq!(s.items().len(), 4);
    assert_eq!(s.ep.held.len(), 3);
    // What carol's request lost: an answer in her conversation finds no request at all.
    let again = SendInput::Response {
        to: MessageAddressInput::parse("agent:carol").unwrap(),
        response: CollectiveResponse::Decline,
    };
    let Err(SendFailure::Collective(e)) = s.ep.send(s.now, again, SendOptions::default()) else {
        panic!()
    };
    assert!(
        matches!(e.failure, crate::harness::errors::CollectiveFailure::RequestNone(_)),
        "{e:?}"
    );
    // Frank's takes dave's place; then the table is the all_gather and two open gathers.
    push_gather(&mut s, "rf", "c-frank", "frank", 15, 400, true);
    assert!(!held_refused(&s, "rf"));
    push_gather(&mut s, "rg", "c-gus", "gus", 16, 500, true);
    assert!(held_refused(&s, "rg"));
    // Past every deadline (within the hour): erin's and frank's expired unanswered and go, the
    // all_gather waits for its close and stays.
    s.now += 700_000;
    push_gather(&mut s, "rh", "c-hal", "hal", 17, 60, true);
    push_gather(&mut s, "ri", "c-ivy", "ivy", 18, 60, true);
    assert!(!held_refused(&s, "rh") && !held_refused(&s, "ri"));
    push_gather(&mut s, "rj", "c-joe", "joe", 19, 60, true);
    assert!(held_refused(&s, "rj"), "the all_gather and two open gathers");
    assert!(s.ep.held.contains_key(&all));
    // Its close still applies.
    s.push(&message("x", "g", "bob", close(&all, vec![])));
    assert_eq!(s.logged("x"), vec![&LogKind::CloseApplied]);
    assert_eq!(results(&s).len(), 1);
    // Closed, it is finished: it makes room too.
    push_gather(&mut s, "rj2", "c-joe", "joe", 20, 60, false);
    assert!(!held_refused(&s, "rj2"));
    assert!(!s.ep.held.contains_key(&all));
}

/// The byte budget makes room the same way, and refuses (evicting nothing) a request that would
/// not fit even with every finished one gone.
#[test]
fn finished_requests_make_room_in_bytes_too() {
    let mut s = Script::new(|_| {});
    s.listen();
    push_gather(&mut s, "r1", "c-bob", "bob", 1, 100, true);
    let one = s.ep.held_request_bytes;
    s.ep.cfg.max_held_request_bytes = 2 * one;
    push_gather(&mut s, "r2", "c-carol", "carol", 2, 100, true);
    push_gather(&mut s, "r3", "c-dave", "dave", 3, 100, true);
    assert!(matches!(s.logged("r3")[..], [LogKind::Unreadable(why)] if why.contains("max_held_request_bytes")));
    decline(&mut s, "bob");
    push_gather(&mut s, "r4", "c-dave", "dave", 4, 100, false);
    assert!(!held_refused(&s, "r4"));
    assert_eq!(s.ep.held.len(), 2);
    assert_eq!(s.ep.held_request_bytes, 2 * one, "bob's bytes were freed");
    // Carol's answered: the only finished one, yet a request over the whole budget does not fit.
    decline(&mut s, "carol");
    s.ep.cfg.max_held_request_bytes = one + one / 2;
    push_gather(&mut s, "r5", "c-erin", "erin", 5, 100, true);
    assert!(held_refused(&s, "r5"));
    assert_eq!(
        s.ep.held.len(),
        2,
        "nothing evicted for a request that would not fit anyway"
    );
}
