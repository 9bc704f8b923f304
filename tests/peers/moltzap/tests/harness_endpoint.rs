//! The HarnessEndpoint acceptance items that need real parties: endpoints (the engine's sans-IO
//! `Endpoint`, each over its own WebSocket) against the MoltZap peer on 127.0.0.1. Each test is
//! bounded in time; the clock is the wall clock in epoch milliseconds.

mod common;

use agentwire_core::{Outgoing, SeededEntropy};
use agentwire_moltzap::harness::{
    AgentAddress, AnswerContent, AnswerValue, AskOp, CollectiveFailure, CollectiveOperation, CollectiveResponse,
    DeliveryId, Endpoint, EndpointConfig, EndpointEvent, InboundItem, InboundMessage, JsonValue, LogKind,
    MessageAddress, MessageAddressInput, RequestedSchema, SendErrorReason, SendFailure, SendId, SendInput, SendOptions,
};
use agentwire_moltzap::harness::{
    CheckSubject, FailureDelivery, FirewallConfig, FirewallRefusal, FirewallVerdict, JsonPath, OutgoingOp,
};
use agentwire_moltzap::session::SessionConfig;
use agentwire_moltzap::{Credentials, GenerationChoice};
use agentwire_peer_moltzap::{Faults, Generation, PeerConfig, PeerHandle};
use common::*;
use futures_util::{SinkExt, StreamExt};
use std::collections::BTreeMap;
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use tokio::sync::mpsc;
use tokio_tungstenite::tungstenite::Message;

/// The `agent:` address of `name`, as an answer's conversation.
fn agent(name: &str) -> MessageAddress {
    MessageAddress::Agent(AgentAddress::parse(&format!("agent:{name}")).unwrap())
}

fn now() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_millis() as u64
}

enum In {
    Text(String),
    Closed(u16, String),
}

/// One endpoint over its own socket, and everything it reported.
struct Party {
    name: String,
    /// The agent key, for a reconnect.
    key: String,
    ep: Endpoint,
    tx: futures_util::stream::SplitSink<Ws, Message>,
    rx: mpsc::UnboundedReceiver<In>,
    events: Vec<EndpointEvent>,
}

impl Party {
    /// One round: what arrived, the timers, what to send.
    async fn step(&mut self) {
        while let Ok(m) = self.rx.try_recv() {
            match m {
                In::Text(t) => self.ep.handle_text(now(), &t),
                In::Closed(code, reason) => self.ep.handle_close(now(), code, &reason),
            }
        }
        if self.ep.poll_timeout().is_some_and(|t| t <= now()) {
            self.ep.handle_timeout(now());
        }
        while let Some(out) = self.ep.poll_transmit() {
            let msg = match out {
                Outgoing::Text(t) => Message::text(t),
                Outgoing::Binary(b) => Message::binary(b),
                Outgoing::Close { .. } => Message::Close(None),
            };
            let _ = self.tx.send(msg).await;
        }
        while let Some(ev) = self.ep.poll_event() {
            self.events.push(ev);
        }
    }

    fn deliveries(&self) -> Vec<(DeliveryId, InboundItem)> {
        self.events
            .iter()
            .filter_map(|e| match e {
                EndpointEvent::Delivery(d) => Some((d.id, d.item.clone())),
                _ => None,
            })
            .collect()
    }

    fn done(&self, send: SendId) -> Option<Result<agentwire_moltzap::harness::SendResult, SendFailure>> {
        self.events.iter().find_map(|e| match e {
            EndpointEvent::SendDone { send: s, outcome } if *s == send => Some(outcome.clone()),
            _ => None,
        })
    }

    fn results(&self) -> Vec<InboundItem> {
        self.deliveries()
            .into_iter()
            .map(|(_, i)| i)
            .filter(|i| matches!(i, InboundItem::CollectiveResult(_)))
            .collect()
    }

    fn requests(&self) -> Vec<InboundItem> {
        self.deliveries()
            .into_iter()
            .map(|(_, i)| i)
            .filter(|i| matches!(i, InboundItem::CollectiveRequest { .. }))
            .collect()
    }

    fn send(&mut self, input: SendInput) -> Result<SendId, SendFailure> {
        self.ep.send(now(), input, SendOptions::default())
    }
}

/// Steps every party until `done` holds (panics after `limit`).
async fn run_until(parties: &mut [&mut Party], limit: Duration, mut done: impl FnMut(&[&mut Party]) -> bool) {
    let end = tokio::time::Instant::now() + limit;
    loop {
        for p in parties.iter_mut() {
            p.step().await;
        }
        if done(parties) {
            return;
        }
        assert!(tokio::time::Instant::now() < end, "not done within {limit:?}");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// Steps every party for `d`.
async fn run_for(parties: &mut [&mut Party], d: Duration) {
    let end = tokio::time::Instant::now() + d;
    while tokio::time::Instant::now() < end {
        for p in parties.iter_mut() {
            p.step().await;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

async fn party(h: &PeerHandle, name: &str, generation: GenerationChoice) -> Party {
    let session = SessionConfig {
        generation,
        ..SessionConfig::default()
    };
    party_with(h, name, session).await
}

async fn party_with(h: &PeerHandle, name: &str, session: SessionConfig) -> Party {
    let mut p = unconnected(h, name, session, |_| {}).await;
    run_until(&mut [&mut p], WAIT, |ps| {
        ps[0]
            .events
            .iter()
            .any(|e| matches!(e, EndpointEvent::Connected { .. }))
    })
    .await;
    p.ep.listen().unwrap();
    p
}

/// A party whose socket is open and whose connect has gone out, not yet answered.
async fn unconnected(
    h: &PeerHandle,
    name: &str,
    session: SessionConfig,
    tune: impl FnOnce(&mut EndpointConfig),
) -> Party {
    let (_, key) = register(h, name).await;
    let (sink, rx) = open_socket(h).await;
    let mut cfg = EndpointConfig::new(AgentAddress::parse(&format!("agent:{name}")).unwrap());
    cfg.send_wait_ms = 300;
    tune(&mut cfg);
    let seed = name
        .bytes()
        .fold(7u64, |a, b| a.wrapping_mul(31).wrapping_add(u64::from(b)));
    let mut ep = Endpoint::new(cfg, session, Box::new(SeededEntropy::new(seed)));
    ep.handle_open(now());
    ep.connect(now(), Credentials::AgentKey(key.clone())).unwrap();
    Party {
        name: name.to_owned(),
        key,
        ep,
        tx: sink,
        rx,
        events: Vec::new(),
    }
}

/// A new socket to the peer, and what arrives on it.
async fn open_socket(
    h: &PeerHandle,
) -> (
    futures_util::stream::SplitSink<Ws, Message>,
    mpsc::UnboundedReceiver<In>,
) {
    let (sink, mut stream) = ws(h).await.split();
    let (itx, rx) = mpsc::unbounded_channel();
    tokio::spawn(async move {
        while let Some(m) = stream.next().await {
            match m {
                Ok(Message::Text(t)) => {
                    let _ = itx.send(In::Text(t.to_string()));
                }
                Ok(Message::Close(f)) => {
                    let (c, r) = f
                        .map(|f| (u16::from(f.code), f.reason.to_string()))
                        .unwrap_or((1005, String::new()));
                    let _ = itx.send(In::Closed(c, r));
                    return;
                }
                Ok(_) => {}
                Err(_) => {
                    let _ = itx.send(In::Closed(1006, String::new()));
                    return;
                }
            }
        }
        let _ = itx.send(In::Closed(1006, String::new()));
    });
    (sink, rx)
}

async fn parties(h: &PeerHandle, names: &[&str]) -> Vec<Party> {
    let mut out = Vec::new();
    for n in names {
        out.push(party(h, n, GenerationChoice::Current).await);
    }
    out
}

fn to(s: &str) -> MessageAddressInput {
    MessageAddressInput::parse(s).unwrap()
}

fn schema() -> RequestedSchema {
    let v = JsonValue::parse(
        r#"{"type":"object","properties":{"day":{"type":"string","enum":["mon","tue"]},"n":{"type":"integer","minimum":1}},"required":["day"]}"#,
    )
    .unwrap();
    RequestedSchema::parse(&v, &JsonPath::root("requestedSchema")).unwrap()
}

fn ask(to_: &str, op: AskOp, deadline: u32) -> SendInput {
    SendInput::Message {
        to: to(to_),
        text: "which day?".into(),
        collective: Some(CollectiveOperation::Ask {
            op,
            deadline,
            requested_schema: schema(),
        }),
    }
}

fn accept(to_: &str, day: &str) -> SendInput {
    let mut m = BTreeMap::new();
    m.insert("day".to_owned(), AnswerValue::String(day.to_owned()));
    SendInput::Response {
        to: to(to_),
        response: CollectiveResponse::Accept(AnswerContent(m)),
    }
}

fn decline(to_: &str) -> SendInput {
    SendInput::Response {
        to: to(to_),
        response: CollectiveResponse::Decline,
    }
}

fn text(to_: &str, t: &str) -> SendInput {
    SendInput::Message {
        to: to(to_),
        text: t.into(),
        collective: None,
    }
}

/// `(member, outcome kind)` of a result.
fn outcomes(item: &InboundItem) -> Vec<(String, &'static str)> {
    match item {
        InboundItem::CollectiveResult(r) => r
            .outcomes()
            .iter()
            .map(|o| (o.member.as_str().to_owned(), o.outcome.kind()))
            .collect(),
        other => panic!("not a result: {other:?}"),
    }
}

fn collective_failure(r: Result<SendId, SendFailure>) -> CollectiveFailure {
    match r {
        Err(SendFailure::Collective(e)) => e.failure,
        other => panic!("not a collective refusal: {other:?}"),
    }
}

#[tokio::test]
async fn multicasts_deliver_certified_content_without_the_part_direct_and_group() {
    let h = current().await;
    let mut ps = parties(&h, &["alice", "bob", "carol"]).await;
    let [a, b, c] = &mut ps[..] else { unreachable!() };
    let first = a.send(text("agent:bob", "hello bob")).unwrap();
    let second = a.send(text("agent:bob", "hello bob")).unwrap();
    let group = a.send(text("group:carol,bob", "hello all")).unwrap();
    run_until(&mut [a, b, c], WAIT, |ps| {
        ps[1].deliveries().len() == 3 && ps[2].deliveries().len() == 1
    })
    .await;
    for s in [first, second, group] {
        assert_eq!(a.done(s), Some(Ok(Default::default())));
    }
    let got = b.deliveries();
    let (
        InboundItem::Multicast {
            message: InboundMessage::Direct(d1),
        },
        InboundItem::Multicast {
            message: InboundMessage::Direct(d2),
        },
    ) = (&got[0].1, &got[1].1)
    else {
        panic!("{got:?}")
    };
    // The certified content without its collective part: the text alone.
    assert_eq!(d1.content.to_canonical(), r#"[{"text":"hello bob","type":"text"}]"#);
    assert_eq!(d1.sender.as_str(), "agent:alice");
    assert_eq!(d1.address.as_str(), "agent:alice");
    // Distinct calls with identical input mint distinct posts.
    assert_ne!(d1.post_id, d2.post_id);
    let InboundItem::Multicast {
        message: InboundMessage::Group(g),
    } = &c.deliveries()[0].1
    else {
        panic!()
    };
    assert_eq!(g.address().to_string(), "group:alice,bob,carol");
    assert_eq!(g.sender().as_str(), "agent:alice");
    assert_eq!(g.members().len(), 3);
}

#[tokio::test]
async fn a_gather_runs_end_to_end_on_three_endpoints_validating_answers_on_both_sides() {
    let h = current().await;
    let mut ps = parties(&h, &["alice", "bob", "carol"]).await;
    let [a, b, c] = &mut ps[..] else { unreachable!() };
    let send = a.send(ask("group:bob,carol", AskOp::Gather, 30)).unwrap();
    run_until(&mut [a, b, c], WAIT, |ps| {
        ps[1].requests().len() == 1 && ps[2].requests().len() == 1 && ps[0].done(send).is_some()
    })
    .await;
    let id = a.done(send).unwrap().unwrap().operation_id.unwrap();
    let InboundItem::CollectiveRequest {
        id: rid,
        to: rto,
        question,
        ..
    } = &b.requests()[0]
    else {
        panic!()
    };
    assert_eq!(
        (rid, rto.to_string().as_str(), question.as_str()),
        (&id, "agent:alice", "which day?")
    );
    // The answering side validates against the stored schema and sends nothing on failure.
    let bad = b.send(accept("agent:alice", "sun"));
    let CollectiveFailure::AnswerInvalid(issues) = collective_failure(bad) else {
        panic!()
    };
    assert!(issues[0].to_string().contains("content.day"), "{issues:?}");
    let ok = b.send(accept("agent:alice", "tue")).unwrap();
    let no = c.send(decline("agent:alice")).unwrap();
    run_until(&mut [a, b, c], WAIT, |ps| ps[0].results().len() == 1).await;
    assert_eq!(
        outcomes(&a.results()[0]),
        vec![("agent:bob".into(), "answered"), ("agent:carol".into(), "declined")]
    );
    assert!(b.done(ok).unwrap().is_ok() && c.done(no).unwrap().is_ok());
    // Each request takes one answer.
    let again = b.send(decline("agent:alice"));
    assert_eq!(
        collective_failure(again),
        CollectiveFailure::RequestAnswered(agent("alice"))
    );
    // Members get no result of a gather.
    assert!(b.results().is_empty() && c.results().is_empty());
}

#[tokio::test]
async fn a_gather_refuses_an_unknown_member_before_any_post() {
    let h = current().await;
    let mut ps = parties(&h, &["alice", "bob"]).await;
    let [a, b] = &mut ps[..] else { unreachable!() };
    let send = a.send(ask("group:bob,zed", AskOp::Gather, 30)).unwrap();
    run_until(&mut [a, b], WAIT, |ps| ps[0].done(send).is_some()).await;
    let Some(Err(SendFailure::Collective(e))) = a.done(send) else {
        panic!()
    };
    let CollectiveFailure::MembersUnreachable(m) = &e.failure else {
        panic!()
    };
    assert_eq!(
        (m.len(), m[0].member.as_str(), m[0].reason),
        (1, "agent:zed", SendErrorReason::UnknownAgent)
    );
    assert_eq!(e.to_string(), "send failed: agent:zed is not a known agent");
    run_for(&mut [a, b], Duration::from_millis(200)).await;
    assert!(b.deliveries().is_empty(), "bob was asked: {:?}", b.deliveries());
    // Routed inbound: the send completes naming its operation, the error arrives as an item.
    let send =
        a.ep.send(
            now(),
            ask("agent:zed", AskOp::Gather, 30),
            SendOptions {
                failure_delivery: FailureDelivery::Inbound,
            },
        )
        .unwrap();
    run_until(&mut [a, b], WAIT, |ps| {
        ps[0].done(send).is_some() && !ps[0].deliveries().is_empty()
    })
    .await;
    let op = a.done(send).unwrap().unwrap().operation_id.unwrap();
    let InboundItem::OperationFailed { id, error, .. } = &a.deliveries()[0].1 else {
        panic!()
    };
    assert_eq!(
        (id, error.as_str()),
        (&op, "send failed: agent:zed is not a known agent")
    );
}

#[tokio::test]
async fn a_gather_makes_a_refused_member_no_answer_and_fails_only_when_every_post_was_refused() {
    let h = current().await;
    let mut ps = parties(&h, &["alice", "bob", "carol"]).await;
    h.set_faults(Faults {
        refuse_send_to: vec!["carol".into()],
        ..Faults::default()
    });
    let [a, b, c] = &mut ps[..] else { unreachable!() };
    let send = a.send(ask("group:bob,carol", AskOp::Gather, 30)).unwrap();
    run_until(&mut [a, b, c], WAIT, |ps| ps[1].requests().len() == 1).await;
    b.send(accept("agent:alice", "mon")).unwrap();
    run_until(&mut [a, b, c], WAIT, |ps| ps[0].results().len() == 1).await;
    assert!(a.done(send).unwrap().is_ok());
    assert_eq!(
        outcomes(&a.results()[0]),
        vec![("agent:bob".into(), "answered"), ("agent:carol".into(), "no-answer")]
    );
    // Every post refused: the send fails naming every member, and there is no result.
    let send = a.send(ask("agent:carol", AskOp::Gather, 30)).unwrap();
    run_until(&mut [a, b, c], WAIT, |ps| ps[0].done(send).is_some()).await;
    let Some(Err(SendFailure::Collective(e))) = a.done(send) else {
        panic!()
    };
    let CollectiveFailure::MembersUnreachable(m) = &e.failure else {
        panic!()
    };
    assert_eq!(
        (m[0].member.as_str(), m[0].reason),
        ("agent:carol", SendErrorReason::CertificationUnavailable)
    );
    run_for(&mut [a, b, c], Duration::from_millis(200)).await;
    assert_eq!(a.results().len(), 1, "exactly one refusal or one result");
}

#[tokio::test]
async fn a_gather_keeps_a_post_certifying_past_the_send_wait_and_counts_its_answer() {
    let h = current().await;
    let mut ps = parties(&h, &["alice", "bob", "carol"]).await;
    h.set_faults(Faults {
        delay_send_to: vec![("carol".into(), 900)],
        ..Faults::default()
    });
    let [a, b, c] = &mut ps[..] else { unreachable!() };
    let send = a.send(ask("group:bob,carol", AskOp::Gather, 30)).unwrap();
    // The send returns after its 300 ms wait, with carol's post still certifying.
    run_until(&mut [a, b, c], WAIT, |ps| ps[0].done(send).is_some()).await;
    assert!(a.done(send).unwrap().is_ok());
    assert!(c.requests().is_empty(), "carol's post certified before the wait ended");
    h.set_faults(Faults::default());
    run_until(&mut [a, b, c], WAIT, |ps| {
        ps[2].requests().len() == 1 && ps[1].requests().len() == 1
    })
    .await;
    b.send(decline("agent:alice")).unwrap();
    c.send(accept("agent:alice", "mon")).unwrap();
    run_until(&mut [a, b, c], WAIT, |ps| ps[0].results().len() == 1).await;
    assert_eq!(
        outcomes(&a.results()[0]),
        vec![("agent:bob".into(), "declined"), ("agent:carol".into(), "answered")]
    );
}

#[tokio::test]
async fn a_gather_completes_at_the_deadline_with_no_answer_and_ignores_a_late_answer() {
    let h = current().await;
    let mut ps = parties(&h, &["alice", "bob", "carol"]).await;
    let [a, b, c] = &mut ps[..] else { unreachable!() };
    let send = a.send(ask("group:bob,carol", AskOp::Gather, 2)).unwrap();
    run_until(&mut [a, b, c], WAIT, |ps| {
        ps[1].requests().len() == 1 && ps[2].requests().len() == 1
    })
    .await;
    let on_time = b.send(accept("agent:alice", "mon")).unwrap();
    run_until(&mut [a, b, c], WAIT, |ps| ps[1].done(on_time).is_some()).await;
    // carol's answer is certified only after the deadline.
    h.set_faults(Faults {
        delay_send_to: vec![("alice".into(), 2500)],
        ..Faults::default()
    });
    run_for(&mut [a, b, c], Duration::from_millis(100)).await;
    let late = c.send(accept("agent:alice", "tue")).unwrap();
    run_until(&mut [a, b, c], Duration::from_secs(6), |ps| {
        ps[0].results().len() == 1 && ps[2].done(late).is_some()
    })
    .await;
    assert!(a.done(send).unwrap().is_ok());
    // bob's answer was sent before the fault: answered; carol's certified past the deadline.
    let got = outcomes(&a.results()[0]);
    assert_eq!(
        got,
        vec![("agent:bob".into(), "answered"), ("agent:carol".into(), "no-answer")]
    );
    run_until(&mut [a, b, c], WAIT, |ps| {
        ps[0].events.iter().any(|e| matches!(e, EndpointEvent::Logged(l) if l.kind == LogKind::AnswerIgnored || l.kind == LogKind::AnswerUnmatched))
    })
    .await;
    assert_eq!(a.results().len(), 1, "a late answer changes nothing");
    // After the deadline the member's endpoint refuses an answer itself.
    assert_eq!(
        collective_failure(b.send(decline("agent:alice"))),
        CollectiveFailure::RequestAnswered(agent("alice"))
    );
}

#[tokio::test]
async fn an_answer_needs_exactly_one_open_request_in_its_conversation() {
    let h = current().await;
    let mut ps = parties(&h, &["alice", "bob"]).await;
    let [a, b] = &mut ps[..] else { unreachable!() };
    assert_eq!(
        collective_failure(b.send(decline("agent:alice"))),
        CollectiveFailure::RequestNone(agent("alice"))
    );
    a.send(ask("agent:bob", AskOp::Gather, 30)).unwrap();
    a.send(ask("agent:bob", AskOp::Gather, 30)).unwrap();
    run_until(&mut [a, b], WAIT, |ps| ps[1].requests().len() == 2).await;
    let before = b.events.len();
    let ambiguous = b.send(decline("agent:alice"));
    let Err(SendFailure::Collective(e)) = &ambiguous else {
        panic!("{ambiguous:?}")
    };
    // The message names the conversation.
    assert_eq!(
        e.to_string(),
        "reply failed: more than one question is open in the conversation with agent:alice"
    );
    assert_eq!(
        collective_failure(ambiguous),
        CollectiveFailure::RequestAmbiguous(agent("alice"))
    );
    run_for(&mut [a, b], Duration::from_millis(150)).await;
    assert!(
        b.events[before..]
            .iter()
            .all(|e| !matches!(e, EndpointEvent::SendDone { .. })),
        "something was sent"
    );
    assert!(a.results().is_empty());
}

#[tokio::test]
async fn an_all_gather_on_four_endpoints_gives_every_member_the_requesters_result() {
    let h = current().await;
    let mut ps = parties(&h, &["alice", "bob", "carol", "dave"]).await;
    let [a, b, c, d] = &mut ps[..] else { unreachable!() };
    let send = a.send(ask("group:bob,carol,dave", AskOp::AllGather, 3)).unwrap();
    run_until(&mut [a, b, c, d], WAIT, |ps| {
        ps[1..].iter().all(|p| p.requests().len() == 1) && ps[0].done(send).is_some()
    })
    .await;
    let InboundItem::CollectiveRequest { to: rto, .. } = &b.requests()[0] else {
        panic!()
    };
    assert_eq!(rto.to_string(), "group:alice,bob,carol,dave");
    b.send(accept("group:alice,bob,carol,dave", "tue")).unwrap();
    c.send(decline("group:alice,bob,carol,dave")).unwrap();
    // dave stays silent. Before the close, no model sees a peer's answer.
    run_for(&mut [a, b, c, d], Duration::from_millis(500)).await;
    for p in [&*b, &*c, &*d] {
        assert_eq!(
            p.deliveries().len(),
            1,
            "{} saw more than the request: {:?}",
            p.name,
            p.deliveries()
        );
    }
    run_until(&mut [a, b, c, d], Duration::from_secs(6), |ps| {
        ps.iter().all(|p| p.results().len() == 1)
    })
    .await;
    let expected = vec![
        ("agent:bob".to_owned(), "answered"),
        ("agent:carol".to_owned(), "declined"),
        ("agent:dave".to_owned(), "no-answer"),
    ];
    let requester = &a.results()[0];
    assert_eq!(outcomes(requester), expected);
    for p in [&*b, &*c, &*d] {
        assert_eq!(&p.results()[0], requester, "{}'s result differs", p.name);
    }
}

#[tokio::test]
async fn an_all_gather_names_each_unreachable_member_and_needs_a_group() {
    let h = current().await;
    let mut ps = parties(&h, &["alice", "bob", "carol"]).await;
    let [a, b, c] = &mut ps[..] else { unreachable!() };
    let send = a.send(ask("group:bob,carol,zed", AskOp::AllGather, 30)).unwrap();
    run_until(&mut [a, b, c], WAIT, |ps| ps[0].done(send).is_some()).await;
    let Some(Err(SendFailure::Collective(e))) = a.done(send) else {
        panic!()
    };
    assert_eq!(e.to_string(), "send failed: agent:zed is not a known agent");
    let Err(SendFailure::Send(e)) = a.send(ask("agent:bob", AskOp::AllGather, 30)) else {
        panic!()
    };
    assert_eq!(e.reason, SendErrorReason::MembershipInvalid);
    run_for(&mut [a, b, c], Duration::from_millis(150)).await;
    assert!(b.deliveries().is_empty() && c.deliveries().is_empty());
}

#[tokio::test]
async fn an_unacknowledged_delivery_replays_with_the_same_identity() {
    let h = current().await;
    let mut ps = parties(&h, &["alice", "bob"]).await;
    let [a, b] = &mut ps[..] else { unreachable!() };
    a.send(text("agent:bob", "one")).unwrap();
    a.send(text("agent:bob", "two")).unwrap();
    run_until(&mut [a, b], WAIT, |ps| ps[1].deliveries().len() == 2).await;
    let first = b.deliveries();
    assert!(b.ep.listen().is_err(), "a second subscription");
    b.ep.acknowledge(first[0].0).unwrap();
    assert!(b.ep.acknowledge(first[0].0).is_err(), "acknowledged twice");
    b.ep.unlisten();
    b.events.clear();
    b.ep.listen().unwrap();
    run_for(&mut [a, b], Duration::from_millis(50)).await;
    assert_eq!(
        b.deliveries(),
        vec![first[1].clone()],
        "one stable replay of the unacknowledged delivery"
    );
}

#[tokio::test]
async fn a_released_server_gets_plain_text_and_collectives_are_refused() {
    let h = agentwire_peer_moltzap::spawn(
        tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap(),
        PeerConfig::new(Generation::Released),
    )
    .unwrap();
    let mut a = party(&h, "alice", GenerationChoice::Released).await;
    let mut b = party(&h, "bob", GenerationChoice::Released).await;
    let Err(SendFailure::Send(e)) = a.send(ask("agent:bob", AskOp::Gather, 30)) else {
        panic!()
    };
    assert_eq!(e.reason, SendErrorReason::VersionMismatch);
    let Err(SendFailure::Send(e)) = a.send(text("group:bob,carol", "hi")) else {
        panic!()
    };
    assert_eq!(e.reason, SendErrorReason::VersionMismatch);
    let s = a.send(text("agent:bob", "plain")).unwrap();
    run_until(&mut [&mut a, &mut b], WAIT, |ps| ps[1].deliveries().len() == 1).await;
    assert!(a.done(s).unwrap().is_ok());
    let InboundItem::Multicast {
        message: InboundMessage::Direct(d),
    } = &b.deliveries()[0].1
    else {
        panic!()
    };
    assert_eq!(d.content.to_canonical(), r#"[{"text":"plain","type":"text"}]"#);
}

#[tokio::test]
async fn a_released_endpoint_reads_back_what_was_sent_while_its_socket_was_down() {
    // One conversation per `conversations/list` page: bob's two are listed on two pages (carol's,
    // the more recent, first), so alice's are read back only when the cursor is followed.
    let mut cfg = PeerConfig::new(Generation::Released);
    cfg.max_conversations_page = 1;
    let h = agentwire_peer_moltzap::spawn(tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap(), cfg).unwrap();
    let mut a = party(&h, "alice", GenerationChoice::Released).await;
    let mut b = party(&h, "bob", GenerationChoice::Released).await;
    let mut c = party(&h, "carol", GenerationChoice::Released).await;
    let one = a.send(text("agent:bob", "one")).unwrap();
    run_until(&mut [&mut a, &mut b], WAIT, |ps| ps[1].deliveries().len() == 1).await;
    assert!(a.done(one).unwrap().is_ok());
    // bob's socket goes; alice and carol post meanwhile.
    b.ep.close(now(), 1000, "");
    run_until(&mut [&mut b], WAIT, |ps| {
        ps[0]
            .events
            .iter()
            .any(|e| matches!(e, EndpointEvent::Disconnected { .. }))
    })
    .await;
    let sends = [
        a.send(text("agent:bob", "two")).unwrap(),
        a.send(text("agent:bob", "three")).unwrap(),
    ];
    run_until(&mut [&mut a], WAIT, |ps| sends.iter().all(|s| ps[0].done(*s).is_some())).await;
    let from_carol = c.send(text("agent:bob", "four")).unwrap();
    run_until(&mut [&mut c], WAIT, |ps| ps[0].done(from_carol).is_some()).await;
    // bob connects again: the released recovery lists both pages and reads both conversations
    // back.
    let (tx, rx) = open_socket(&h).await;
    (b.tx, b.rx) = (tx, rx);
    b.ep.handle_open(now());
    b.ep.connect(now(), Credentials::AgentKey(b.key.clone())).unwrap();
    run_until(&mut [&mut a, &mut b, &mut c], WAIT, |ps| ps[1].deliveries().len() == 4).await;
    let texts: Vec<String> = b
        .deliveries()
        .iter()
        .map(|(_, i)| match i {
            InboundItem::Multicast {
                message: InboundMessage::Direct(d),
            } => d.content.to_canonical(),
            other => panic!("{other:?}"),
        })
        .collect();
    let plain = |t: &str| format!(r#"[{{"text":"{t}","type":"text"}}]"#);
    // Oldest first: alice's in order; carol's after the ones posted before it (one
    // millisecond may hold two posts, so only the order within a conversation is asserted).
    let alices: Vec<&String> = texts.iter().filter(|t| **t != plain("four")).collect();
    assert_eq!(alices, vec![&plain("one"), &plain("two"), &plain("three")], "{texts:?}");
    assert!(texts.contains(&plain("four")), "{texts:?}");
    run_for(&mut [&mut a, &mut b, &mut c], Duration::from_millis(100)).await;
    assert_eq!(b.deliveries().len(), 4, "each once");
}

#[tokio::test]
async fn an_unfinished_intent_keeps_its_post_id_and_the_server_keeps_one_post() {
    let h = current().await;
    let short = SessionConfig {
        request_timeout_ms: 300,
        ..SessionConfig::default()
    };
    let mut a = party_with(&h, "alice", short).await;
    let mut b = party(&h, "bob", GenerationChoice::Current).await;
    // The post is made, its answer never comes: the outcome is unknown.
    h.set_faults(Faults {
        never_answer: vec!["messages/send".into()],
        ..Faults::default()
    });
    let s = a.send(text("agent:bob", "once")).unwrap();
    run_until(&mut [&mut a, &mut b], WAIT, |ps| ps[0].done(s).is_some()).await;
    let Some(Err(SendFailure::Send(e))) = a.done(s) else {
        panic!()
    };
    assert_eq!(e.reason, SendErrorReason::OutcomeUnknown);
    let intent = a.ep.unfinished()[0].clone();
    h.set_faults(Faults::default());
    // Resumed with the same PostId: the server keeps one post, and bob has one delivery.
    let again = a.ep.resume(now(), intent.clone()).unwrap();
    run_until(&mut [&mut a, &mut b], WAIT, |ps| ps[0].done(again).is_some()).await;
    assert!(a.done(again).unwrap().is_ok());
    assert!(a.ep.unfinished().is_empty());
    run_for(&mut [&mut a, &mut b], Duration::from_millis(150)).await;
    let got = b.deliveries();
    assert_eq!(got.len(), 1, "{got:?}");
    let InboundItem::Multicast {
        message: InboundMessage::Direct(d),
    } = &got[0].1
    else {
        panic!()
    };
    assert_eq!(d.post_id, intent.post_id);
}

#[tokio::test]
async fn a_send_issued_while_connecting_waits_for_the_connection() {
    let h = current().await;
    let mut b = party(&h, "bob", GenerationChoice::Current).await;
    // alice sends before her connect is answered: the send waits, then goes out.
    let mut a = unconnected(&h, "alice", SessionConfig::default(), |_| {}).await;
    let s = a.send(text("agent:bob", "early")).unwrap();
    assert!(a.done(s).is_none());
    run_until(&mut [&mut a, &mut b], WAIT, |ps| {
        ps[0].done(s).is_some() && ps[1].deliveries().len() == 1
    })
    .await;
    assert_eq!(a.done(s), Some(Ok(Default::default())));
    let InboundItem::Multicast {
        message: InboundMessage::Direct(d),
    } = &b.deliveries()[0].1
    else {
        panic!()
    };
    assert_eq!(d.content.to_canonical(), r#"[{"text":"early","type":"text"}]"#);
}

/// The checks a party was asked and has not answered, in order.
fn open_checks(
    p: &Party,
    answered: &[agentwire_moltzap::harness::CheckId],
) -> Vec<(agentwire_moltzap::harness::CheckId, CheckSubject)> {
    p.events
        .iter()
        .filter_map(|e| match e {
            EndpointEvent::FirewallCheck { check, subject } if !answered.contains(check) => {
                Some((*check, subject.clone()))
            }
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn a_firewall_checks_sends_and_admits_items_end_to_end() {
    let h = current().await;
    let mut a = party(&h, "alice", GenerationChoice::Current).await;
    let mut b = unconnected(&h, "bob", SessionConfig::default(), |c| {
        c.firewall = Some(FirewallConfig::default())
    })
    .await;
    run_until(&mut [&mut b], WAIT, |ps| {
        ps[0]
            .events
            .iter()
            .any(|e| matches!(e, EndpointEvent::Connected { .. }))
    })
    .await;
    b.ep.listen().unwrap();
    let mut answered = Vec::new();
    // bob's firewall withholds one multicast and admits the next.
    a.send(text("agent:bob", "withhold me")).unwrap();
    run_until(&mut [&mut a, &mut b], WAIT, |ps| open_checks(ps[1], &[]).len() == 1).await;
    let (c1, _) = open_checks(&b, &answered)[0].clone();
    assert!(b.ep.firewall_verdict(
        now(),
        c1,
        FirewallVerdict::Refuse {
            refusal: FirewallRefusal::Prohibited,
            feedback: None,
        }
    ));
    answered.push(c1);
    // A gather from alice: bob's firewall admits the request, then bob's answer.
    let send = a.send(ask("agent:bob", AskOp::Gather, 30)).unwrap();
    run_until(&mut [&mut a, &mut b], WAIT, |ps| {
        !open_checks(ps[1], &answered).is_empty()
    })
    .await;
    let (c2, subject) = open_checks(&b, &answered)[0].clone();
    assert!(
        matches!(subject, CheckSubject::Inbound(InboundItem::CollectiveRequest { .. })),
        "{subject:?}"
    );
    assert!(b.ep.firewall_verdict(now(), c2, FirewallVerdict::Admit(None)));
    answered.push(c2);
    run_until(&mut [&mut a, &mut b], WAIT, |ps| ps[1].requests().len() == 1).await;
    assert_eq!(b.deliveries().len(), 1, "the withheld multicast is not shown");
    let reply = b.send(decline("agent:alice")).unwrap();
    run_until(&mut [&mut a, &mut b], WAIT, |ps| {
        !open_checks(ps[1], &answered).is_empty()
    })
    .await;
    let (c3, subject) = open_checks(&b, &answered)[0].clone();
    assert!(
        matches!(
            subject,
            CheckSubject::Outgoing {
                op: OutgoingOp::Answer,
                ..
            }
        ),
        "{subject:?}"
    );
    assert!(b.ep.firewall_verdict(now(), c3, FirewallVerdict::Admit(None)));
    run_until(&mut [&mut a, &mut b], WAIT, |ps| {
        ps[0].results().len() == 1 && ps[1].done(reply).is_some()
    })
    .await;
    assert!(a.done(send).unwrap().is_ok() && b.done(reply).unwrap().is_ok());
    assert_eq!(outcomes(&a.results()[0]), vec![("agent:bob".into(), "declined")]);
}
