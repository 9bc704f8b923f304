//! Sans-IO tests against a scripted server: records waiting for their conversation (overflow,
//! lookups that time out), recovery after a reconnect, a member's held answers and requests, and
//! refusals routed inbound.

use super::records::{MAX_RECOVERY_LIMIT, RESOLVE_ATTEMPTS};
use super::*;
use crate::harness::address::MessageAddressInput;
use crate::harness::collective::{
    close_content, request_content, AskOp, ClosePart, CollectiveResponse, RecordHash, ResponsePart,
};
use crate::harness::content::Part;
use crate::harness::errors::SendErrorReason;
use crate::harness::id::Nonce;
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
    pub(super) fn new(tune: impl FnOnce(&mut EndpointConfig)) -> Script {
        let mut s = Script::unconnected(tune);
        s.connect();
        s
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
            self.sent.push(serde_json::from_str(out.as_text().unwrap()).unwrap());
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
        let text = json!({"jsonrpc": "2.0", "method": "messages/received", "params": {"message": message}});
        self.ep.handle_text(self.now, &text.to_string());
        self.pump();
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
fn a_failed_recovery_releases_the_live_pushes() {
    let mut s = Script::new(|_| {});
    s.listen();
    s.push(&plain("m0", "c1", "bob", "zero"));
    s.conversation("dm", &["alice", "bob"]);
    s.reconnect();
    assert!(s.take("agent/message/list").is_some());
    s.push(&plain("m1", "c1", "bob", "one"));
    s.tick(); // the recovery times out
    assert_eq!(s.texts(), vec!["zero", "one"]);
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

#[test]
fn an_all_gather_member_keeps_only_each_members_first_answer() {
    let mut s = Script::new(|_| {});
    s.listen();
    let (id, req) = request(AskOp::AllGather, "bob", 1, s.now);
    s.push(&message("r", "g", "bob", req));
    s.conversation("group", &["alice", "bob", "carol"]);
    assert_eq!(s.items().len(), 1, "the request is presented");
    let first = message("a1", "g", "carol", answer(&id, true));
    let second = message("a2", "g", "carol", answer(&id, false));
    s.push(&first);
    s.push(&second);
    assert_eq!(s.logged("a1"), vec![&LogKind::AnswerRecorded]);
    assert_eq!(s.logged("a2"), vec![&LogKind::AnswerIgnored]);
    // A close listing the ignored answer lists one this endpoint does not hold.
    let close = |included: Vec<RecordHash>| {
        parts_of(
            &close_content(ClosePart {
                id: id.clone(),
                included,
            })
            .unwrap(),
        )
    };
    s.push(&message("x1", "g", "bob", close(vec![hash_of(&second)])));
    assert!(matches!(s.logged("x1")[..], [LogKind::CloseIgnored(_)]));
    s.push(&message("x2", "g", "bob", close(vec![hash_of(&first)])));
    assert_eq!(s.logged("x2"), vec![&LogKind::CloseApplied]);
    let Some(InboundItem::CollectiveResult(r)) = s.items().last() else {
        panic!("{:?}", s.items())
    };
    assert_eq!(r.outcomes()[1].outcome.kind(), "answered");
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
