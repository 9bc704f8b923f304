//! Received records end to end, through the public `Endpoint` against a scripted server: a
//! request whose nonce another implementation encoded differently, and collective parts with
//! keys beside the collective key (the review findings "Nonce on input" and "The collective data
//! part"). The record hash a close lists is computed here over the parts exactly as they
//! arrived, so a reader that rewrote the part would not find the answer.

use agentwire_core::{base64url, SeededEntropy};
use agentwire_moltzap::harness::{
    to_canonical, AgentAddress, CollectiveId, CollectiveMemberOutcome, ConsumeReason, Endpoint, EndpointConfig,
    EndpointEvent, InboundItem, InboundMessage, JsonValue, LogKind, Nonce,
};
use agentwire_moltzap::{Credentials, SessionConfig};
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

const KEY: &str = "org.social-harness/collective";
const NOW: u64 = 1_000_000;
/// 32 bytes 0x00..0x1f, written as hex: not the 43-character form this endpoint mints.
const HEX_NONCE: &str = "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f";
const B64_NONCE: &str = "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8";

struct Server {
    ep: Endpoint,
    sent: Vec<Value>,
    events: Vec<EndpointEvent>,
}

impl Server {
    /// Alice's endpoint, connected and listening.
    fn new() -> Server {
        let cfg = EndpointConfig::new(AgentAddress::parse("agent:alice").unwrap());
        let mut s = Server {
            ep: Endpoint::new(cfg, SessionConfig::default(), Box::new(SeededEntropy::new(5))),
            sent: Vec::new(),
            events: Vec::new(),
        };
        s.ep.handle_open(NOW);
        s.ep.connect(NOW, Credentials::AgentKey("moltzap_agent_k".into()))
            .unwrap();
        s.pump();
        let hello = s.take("agent/network/connect");
        s.reply(&hello, json!({}));
        // Every connect reads the recent window back, the first too: nothing was posted before.
        let list = s.take("agent/message/list");
        s.reply(&list, json!({"messages": [], "hasMore": false}));
        s.ep.listen().unwrap();
        s
    }

    fn pump(&mut self) {
        while let Some(out) = self.ep.poll_transmit() {
            if let Some(text) = out.as_text() {
                self.sent.push(serde_json::from_str(text).unwrap());
            }
        }
        self.events.extend(std::iter::from_fn(|| self.ep.poll_event()));
    }

    fn take(&mut self, method: &str) -> Value {
        let i = self
            .sent
            .iter()
            .position(|v| v["method"] == method)
            .unwrap_or_else(|| panic!("no {method} in {:?}", self.sent));
        self.sent.remove(i)
    }

    fn reply(&mut self, request: &Value, result: Value) {
        let text = json!({"jsonrpc": "2.0", "id": request["id"], "result": result}).to_string();
        self.ep.handle_text(NOW, &text);
        self.pump();
    }

    fn push(&mut self, message: &Value) {
        let text = json!({"jsonrpc": "2.0", "method": "messages/received", "params": {"message": message}});
        self.ep.handle_text(NOW, &text.to_string());
        self.pump();
    }

    /// Answers the pending `conversations/get` with `members`.
    fn conversation(&mut self, kind: &str, members: &[&str]) {
        let get = self.take("conversations/get");
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

    fn items(&self) -> Vec<&InboundItem> {
        self.events
            .iter()
            .filter_map(|e| match e {
                EndpointEvent::Delivery(d) => Some(&d.item),
                _ => None,
            })
            .collect()
    }

    fn logged(&self, record: &str) -> Vec<&LogKind> {
        self.events
            .iter()
            .filter_map(|e| match e {
                EndpointEvent::Logged(l) if l.record.as_deref() == Some(record) => Some(&l.kind),
                _ => None,
            })
            .collect()
    }
}

fn message(id: &str, conv: &str, sender: &str, parts: Value) -> Value {
    json!({"id": id, "conversationId": conv, "senderId": sender, "parts": parts, "createdAt": "t"})
}

/// `rh_` + base64url(SHA-256(RFC 8785 of `{conversationId, id, senderId, parts}`)), over the
/// record's parts as sent.
fn record_hash(m: &Value) -> String {
    let covered = json!({
        "conversationId": m["conversationId"],
        "id": m["id"],
        "senderId": m["senderId"],
        "parts": m["parts"],
    });
    let canonical = to_canonical(&JsonValue::parse(&covered.to_string()).unwrap());
    format!("rh_{}", base64url::encode(&Sha256::digest(canonical.as_bytes())))
}

fn id_of(requester: &str, nonce: &str) -> String {
    CollectiveId::derive(&AgentAddress::parse(requester).unwrap(), &Nonce::parse(nonce).unwrap()).to_string()
}

/// Bob's all_gather request to alice and carol: its nonce in hex, its id hashed over `id_nonce`,
/// and a key beside the collective key.
fn all_gather_request(id_nonce: &str) -> Value {
    json!([
        {"type": "text", "text": "Lunch?"},
        {"type": "data", "value": {
            "org.example/trace": {"hop": 1},
            KEY: {
                "kind": "operation",
                "op": "all_gather",
                "id": id_of("agent:bob", id_nonce),
                "nonce": HEX_NONCE,
                "deadlineAt": NOW + 600_000,
                "requestedSchema": {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]},
            },
        }},
    ])
}

/// Review findings "Nonce on input" and "The collective data part", end to end: an all_gather
/// member reads a request whose nonce is hex and whose part has a sibling key, holds carol's
/// answer with a sibling key by the hash of its parts as received, and applies bob's close.
#[test]
fn a_member_reads_a_hex_nonce_and_sibling_keys_and_counts_the_answer_by_its_received_hash() {
    let mut s = Server::new();
    let id = id_of("agent:bob", HEX_NONCE);
    s.push(&message("r", "g", "bob", all_gather_request(HEX_NONCE)));
    s.conversation("group", &["alice", "bob", "carol"]);
    let [InboundItem::CollectiveRequest { id: got, question, .. }] = s.items()[..] else {
        panic!("{:?}", s.events)
    };
    assert_eq!((got.as_str(), question.as_str()), (id.as_str(), "Lunch?"));

    let answer = message(
        "a1",
        "g",
        "carol",
        json!([{"type": "data", "value": {
            KEY: {"kind": "response", "id": id, "action": "accept", "content": {"ok": true}},
            "x": [null, {"y": "z"}],
        }}]),
    );
    s.push(&answer);
    assert_eq!(s.logged("a1"), vec![&LogKind::AnswerRecorded]);

    // The hash is over the parts as carol sent them, sibling key and all: a reader that rewrote
    // the part to the key alone would hash something else.
    let hash = record_hash(&answer);
    let mut rewritten = answer.clone();
    rewritten["parts"][0]["value"].as_object_mut().unwrap().remove("x");
    assert_ne!(hash, record_hash(&rewritten));

    let close = json!([{"type": "data", "value": {
        KEY: {"kind": "close", "id": id, "included": [hash]},
        "org.example/trace": {"hop": 2},
    }}]);
    s.push(&message("x", "g", "bob", close));
    assert_eq!(s.logged("x"), vec![&LogKind::CloseApplied], "{:?}", s.events);
    let results: Vec<_> = s
        .items()
        .into_iter()
        .filter_map(|i| match i {
            InboundItem::CollectiveResult(r) => Some(r),
            _ => None,
        })
        .collect();
    let [r] = results[..] else { panic!("{:?}", s.events) };
    let outcomes: Vec<(String, &CollectiveMemberOutcome)> = r
        .outcomes()
        .iter()
        .map(|o| (o.member.to_string(), &o.outcome))
        .collect();
    assert_eq!(outcomes[0].0, "agent:alice");
    assert_eq!(outcomes[0].1.kind(), "no-answer");
    assert_eq!(outcomes[1].0, "agent:carol");
    assert_eq!(outcomes[1].1.kind(), "answered");
}

/// Still refused: a request whose id does not hash its nonce as received (here, the id of the
/// same 32 bytes in the base64url form), and one whose nonce holds a control character.
#[test]
fn a_request_whose_id_does_not_hash_its_nonce_as_received_is_consumed() {
    let mut s = Server::new();
    s.push(&message("r1", "g", "bob", all_gather_request(B64_NONCE)));
    s.conversation("group", &["alice", "bob", "carol"]);
    assert_eq!(s.logged("r1"), vec![&LogKind::Consumed(ConsumeReason::IdNotDerived)]);
    let mut bad = all_gather_request(HEX_NONCE);
    bad[1]["value"][KEY]["nonce"] = json!(format!("{HEX_NONCE}\n"));
    s.push(&message("r2", "g", "bob", bad));
    assert!(
        matches!(&s.logged("r2")[..], [LogKind::Consumed(ConsumeReason::MalformedPart(issues))]
            if issues.iter().any(|i| i.to_string().contains("nonce"))),
        "{:?}",
        s.logged("r2")
    );
    assert!(s.items().is_empty());
}

fn multicast_parts(text: &str) -> Value {
    json!([{"type": "text", "text": text}, {"type": "data", "value": {KEY: {"kind": "operation", "op": "multicast"}}}])
}

/// A malformed `conversations/get` or `agents/lookup` answer is treated like a refusal: the
/// records waiting are logged, nothing is cached, and the next record in the conversation asks
/// again (it used to be cached as unreadable until evicted, 4,096 conversations later).
#[test]
fn a_malformed_conversation_answer_is_not_cached() {
    let unnamed = r#"{"conversation":{"type":"dm"},"participants":[{"participant":{"id":"alice"}},{"participant":{"id":"bob"}}]}"#;
    let answers = [
        (r#"{"conversation":{"id":"c","type":"dm"}}"#, None),
        (r#"{"participants":[]}"#, None),
        (
            r#"{"conversation":{"type":"dm"},"participants":[{"participant":{"type":"agent"}}]}"#,
            None,
        ),
        // Not JSON the endpoint reads: a number beyond f64.
        (r#"{"conversation":{"type":"dm"},"participants":[],"n":1e999}"#, None),
        (
            unnamed,
            Some(r#"{"agents":[{"id":"alice","name":"alice"},{"id":"bob","name":"bob"}],"n":1e999}"#),
        ),
    ];
    for (get_answer, lookup_answer) in answers {
        let mut s = Server::new();
        s.push(&message("m1", "c", "bob", multicast_parts("one")));
        let mut answer = |method: &str, result: &str| {
            let id = s.take(method)["id"].clone();
            s.ep.handle_text(NOW, &format!(r#"{{"jsonrpc":"2.0","id":{id},"result":{result}}}"#));
            s.pump();
        };
        answer("conversations/get", get_answer);
        if let Some(names) = lookup_answer {
            answer("agents/lookup", names);
        }
        assert!(
            matches!(s.logged("m1")[..], [LogKind::Unreadable(_)]),
            "{get_answer}: {:?}",
            s.logged("m1")
        );
        s.push(&message("m2", "c", "bob", multicast_parts("two")));
        assert!(
            s.sent.iter().any(|v| v["method"] == "conversations/get"),
            "{get_answer}: m2 {:?}",
            s.logged("m2")
        );
        s.conversation("dm", &["alice", "bob"]);
        assert_eq!(s.items().len(), 1, "{get_answer}: m2 not delivered");
    }
}

/// A group's members come from `agents/lookup` only when it names every participant asked for,
/// and only those: an answer that leaves one out (or answers for an id never asked) would make
/// a different, smaller group. Such an answer is a failed lookup (logged, nothing cached).
#[test]
fn a_group_is_delivered_only_with_every_participant_named() {
    let agent = |id: &str, name: &str| json!({"id": id, "name": name});
    let (a, b, c, d) = (
        agent("a1", "alice"),
        agent("b1", "bob"),
        agent("c1", "carol"),
        agent("d1", "dave"),
    );
    let mallory = agent("x1", "mallory");
    let lookups = [
        (json!({"agents": [a, b, c]}), None),
        (json!({"agents": [a, b, c, mallory]}), None),
        (json!({"agents": [a, b, c, d, agent("d1", "dan")]}), None),
        (json!({}), None),
        (
            json!({"agents": [d, mallory, c, b, a]}),
            Some("group:alice,bob,carol,dave"),
        ),
    ];
    for (answer, group) in lookups {
        let mut s = Server::new();
        s.push(&message("m1", "g", "b1", multicast_parts("hi")));
        let get = s.take("conversations/get");
        let ps: Vec<Value> = ["a1", "b1", "c1", "d1"]
            .iter()
            .map(|i| json!({"participant": {"type": "agent", "id": i}}))
            .collect();
        s.reply(
            &get,
            json!({"conversation": {"id": "g", "type": "group"}, "participants": ps}),
        );
        let look = s.take("agents/lookup");
        assert_eq!(look["params"]["agentIds"], json!(["a1", "b1", "c1", "d1"]));
        s.reply(&look, answer.clone());
        let delivered: Vec<String> = s
            .items()
            .iter()
            .map(|i| match i {
                InboundItem::Multicast {
                    message: InboundMessage::Group(g),
                } => format!("{}", g.address()),
                other => panic!("{other:?}"),
            })
            .collect();
        match group {
            Some(g) => assert_eq!(delivered, [g], "{answer}"),
            None => {
                assert!(delivered.is_empty(), "{answer}: delivered as {delivered:?}");
                assert!(matches!(s.logged("m1")[..], [LogKind::Unreadable(_)]), "{answer}");
                // Nothing cached: the next record asks again.
                s.push(&message("m2", "g", "b1", multicast_parts("again")));
                s.take("conversations/get");
            }
        }
    }
}

/// A member receives an all_gather request only once its post is certified, and its answer
/// carries the id minted from the post's nonce: a member's answer in the group shows the post
/// certified, so the send returns the id then, even while the `messages/send` answer is late
/// (the send used to fail `members-unreachable` at the 20 s wait, with bob's answer recorded).
#[test]
fn a_members_answer_certifies_an_all_gather_post() {
    use agentwire_moltzap::harness::{
        CollectiveOperation, JsonPath, MessageAddressInput, RequestedSchema, SendInput, SendOptions,
    };
    let mut s = Server::new();
    let schema = r#"{"type":"object","properties":{"ok":{"type":"boolean"}},"required":["ok"]}"#;
    let requested_schema = RequestedSchema::parse(&JsonValue::parse(schema).unwrap(), &JsonPath::default()).unwrap();
    let input = SendInput::Message {
        to: MessageAddressInput::parse("group:bob,carol").unwrap(),
        text: "Lunch?".into(),
        collective: Some(CollectiveOperation::Ask {
            op: agentwire_moltzap::harness::AskOp::AllGather,
            deadline: 600,
            requested_schema,
        }),
    };
    let send = s.ep.send(NOW, input, SendOptions::default()).unwrap();
    s.pump();
    let look = s.take("agents/lookupByName");
    s.reply(
        &look,
        json!({"agents": [{"id": "bob", "name": "bob"}, {"id": "carol", "name": "carol"}]}),
    );
    let post = s.take("messages/send");
    let id = post["params"]["parts"][1]["value"][KEY]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let answer = json!([{"type": "data", "value": {KEY: {"kind": "response", "id": id, "action": "accept", "content": {"ok": true}}}}]);
    s.push(&message("a1", "g", "bob", answer.clone()));
    s.conversation("group", &["alice", "bob", "carol"]);
    assert_eq!(s.logged("a1"), [&LogKind::AnswerRecorded]);
    let done = |s: &Server| -> Vec<String> {
        s.events
            .iter()
            .filter_map(|e| match e {
                EndpointEvent::SendDone { send: x, outcome } if *x == send => Some(format!(
                    "{:?}",
                    outcome.as_ref().map(|r| r.operation_id.as_ref().map(|i| i.to_string()))
                )),
                _ => None,
            })
            .collect()
    };
    let returned = [format!("{:?}", Ok::<_, ()>(Some(id.clone())))];
    assert_eq!(done(&s), returned);
    // The wait ends, and the late answer to the post is an error: the send returned already.
    s.ep.handle_timeout(NOW + 20_000);
    s.pump();
    let late = json!({"jsonrpc": "2.0", "id": post["id"], "error": {"code": -32000, "message": "late"}});
    s.ep.handle_text(NOW + 20_001, &late.to_string());
    s.pump();
    assert_eq!(done(&s), returned);
    // The operation goes on: carol's answer completes it and the close is posted.
    s.push(&message("a2", "g", "carol", answer));
    assert_eq!(s.logged("a2"), [&LogKind::AnswerRecorded]);
    s.take("messages/send");
}
