//! Sans-IO tests of the message firewall (`firewall.rs`) against a scripted server: outgoing
//! checks, the deadline and the answer's second match, inbound admission and results.

use super::gate_tests::{ask, done, text};
use super::scripted_tests::{answer, hash_of, message, parts_of, plain, request, Script};
use super::*;
use crate::harness::address::{MessageAddress, MessageAddressInput};
use crate::harness::collective::{close_content, AskOp, ClosePart, CollectiveResponse};
use crate::harness::errors::{CollectiveFailure, FirewallRefusal};
use crate::harness::guidance::{AnswerGuidance, CheckedGuidance};
use crate::harness::inbound::{CollectiveMemberOutcome, QuestionOrWithheld};
use crate::harness::send::{FailureDelivery, SendInput, SendOptions};
use serde_json::json;

fn firewall(c: &mut EndpointConfig) {
    c.firewall = Some(FirewallConfig::default());
}

/// The checks asked so far, in order.
fn checks(s: &Script) -> Vec<(CheckId, CheckSubject)> {
    s.events
        .iter()
        .filter_map(|e| match e {
            EndpointEvent::FirewallCheck { check, subject } => Some((*check, subject.clone())),
            _ => None,
        })
        .collect()
}

fn last_check(s: &Script) -> CheckId {
    checks(s).last().expect("a check").0
}

fn verdict(s: &mut Script, check: CheckId, v: FirewallVerdict) {
    assert!(s.ep.firewall_verdict(s.now, check, v), "{check} is not pending");
    s.pump();
}

/// Answers the latest check.
fn verdict_last(s: &mut Script, v: FirewallVerdict) {
    let check = last_check(s);
    verdict(s, check, v);
}

fn refuse(refusal: FirewallRefusal) -> FirewallVerdict {
    FirewallVerdict::Refuse {
        refusal,
        feedback: Some("not that".into()),
    }
}

fn admit() -> FirewallVerdict {
    FirewallVerdict::Admit(None)
}

fn guidance() -> CheckedGuidance {
    crate::harness::guidance::tests::guidance()
}

fn deliveries(s: &Script) -> Vec<&InboundDelivery> {
    s.events
        .iter()
        .filter_map(|e| match e {
            EndpointEvent::Delivery(d) => Some(d),
            _ => None,
        })
        .collect()
}

fn decline(to: &str) -> SendInput {
    SendInput::Response {
        to: MessageAddressInput::parse(to).unwrap(),
        response: CollectiveResponse::Decline,
    }
}

fn collective_failure(r: Option<Result<SendResult, SendFailure>>) -> CollectiveFailure {
    match r {
        Some(Err(SendFailure::Collective(e))) => e.failure,
        other => panic!("not a collective refusal: {other:?}"),
    }
}

// ---- outgoing ----

#[test]
fn a_refused_send_ends_with_the_firewall_error_and_posts_nothing_whatever_the_routing() {
    let mut s = Script::new(firewall);
    s.listen();
    let send =
        s.ep.send(s.now, text("agent:bob", "hi"), SendOptions::default())
            .unwrap();
    s.pump();
    let [(check, CheckSubject::Outgoing { op, to, content })] = &checks(&s)[..] else {
        panic!("{:?}", checks(&s))
    };
    assert_eq!((*op, to.to_string().as_str()), (OutgoingOp::Multicast, "agent:bob"));
    assert_eq!(content.parts().len(), 2, "the content as it would be certified");
    assert!(s.take("messages/send").is_none(), "posted before the verdict");
    verdict(&mut s, *check, refuse(FirewallRefusal::NormViolation));
    let Some(Err(SendFailure::Firewall(e))) = done(&s, send) else {
        panic!("{:?}", s.events)
    };
    assert_eq!(
        e.to_string(),
        "send failed: the local message firewall refused it (norm-violation): not that"
    );
    // Under `failureDelivery: "inbound"` a firewall refusal is still returned on the send.
    let inbound = SendOptions {
        failure_delivery: FailureDelivery::Inbound,
    };
    let gather = s.ep.send(s.now, ask("agent:bob", AskOp::Gather, 60), inbound).unwrap();
    s.pump();
    verdict_last(&mut s, refuse(FirewallRefusal::Prohibited));
    assert!(matches!(done(&s, gather), Some(Err(SendFailure::Firewall(_)))));
    assert!(deliveries(&s).is_empty(), "no operationFailed item");
    assert!(s.take("messages/send").is_none() && s.take("agents/lookupByName").is_none());
}

#[test]
fn an_admitted_send_goes_out_after_its_verdict_and_carries_the_checks_guidance() {
    let mut s = Script::new(firewall);
    let send =
        s.ep.send(s.now, text("agent:bob", "hi"), SendOptions::default())
            .unwrap();
    s.pump();
    let check = last_check(&s);
    verdict(&mut s, check, FirewallVerdict::Admit(Some(guidance())));
    assert!(!s.ep.firewall_verdict(s.now, check, admit()), "answered twice");
    let post = s.take("messages/send").expect("posted after admission");
    s.reply(&post, json!({"message": {}}));
    assert_eq!(
        done(&s, send),
        Some(Ok(SendResult {
            operation_id: None,
            guidance: Some(guidance()),
        }))
    );
}

#[test]
fn a_gather_whose_deadline_passes_during_its_check_fails_deadline_passed_and_posts_nothing() {
    let mut s = Script::new(firewall);
    let send =
        s.ep.send(s.now, ask("group:bob,carol", AskOp::Gather, 1), SendOptions::default())
            .unwrap();
    s.pump();
    let check = last_check(&s);
    assert!(matches!(
        checks(&s)[0].1,
        CheckSubject::Outgoing {
            op: OutgoingOp::Gather,
            ..
        }
    ));
    s.tick();
    assert_eq!(collective_failure(done(&s, send)), CollectiveFailure::DeadlinePassed);
    assert!(
        !s.ep.firewall_verdict(s.now, check, admit()),
        "the check ended with its send"
    );
    s.pump();
    assert!(s.take("agents/lookupByName").is_none() && s.take("messages/send").is_none());
}

#[test]
fn an_answer_is_matched_again_after_its_check_and_a_refused_one_leaves_its_request_open() {
    let mut s = Script::new(firewall);
    s.listen();
    let (_, req) = request(AskOp::Gather, "bob", 1, s.now);
    s.push(&message("r", "c1", "bob", req));
    s.conversation("dm", &["alice", "bob"]);
    verdict_last(&mut s, admit());
    assert_eq!(s.items().len(), 1, "the request is presented");
    // Refused: returned as a failed reply, and the request stays open.
    let first = s.ep.send(s.now, decline("agent:bob"), SendOptions::default()).unwrap();
    s.pump();
    assert!(matches!(
        checks(&s).last().unwrap().1,
        CheckSubject::Outgoing {
            op: OutgoingOp::Answer,
            ..
        }
    ));
    verdict_last(&mut s, refuse(FirewallRefusal::ApprovalRequired));
    let Some(Err(SendFailure::Firewall(e))) = done(&s, first) else {
        panic!()
    };
    assert!(e.to_string().starts_with("reply failed: "), "{e}");
    // Admitted after the request expired: matched again, `request-expired`, nothing posted.
    let second = s.ep.send(s.now, decline("agent:bob"), SendOptions::default()).unwrap();
    s.pump();
    let check = last_check(&s);
    s.now += 601_000;
    verdict(&mut s, check, admit());
    assert_eq!(collective_failure(done(&s, second)), CollectiveFailure::RequestExpired);
    assert!(s.take("messages/send").is_none());
}

#[test]
fn a_check_without_a_verdict_is_refused_check_unavailable_both_ways() {
    let mut s = Script::new(firewall);
    s.listen();
    let send =
        s.ep.send(s.now, text("agent:bob", "hi"), SendOptions::default())
            .unwrap();
    s.pump();
    s.push(&plain("m1", "c1", "bob", "one"));
    s.conversation("dm", &["alice", "bob"]);
    assert_eq!(checks(&s).len(), 2);
    s.tick();
    let Some(Err(SendFailure::Firewall(e))) = done(&s, send) else {
        panic!()
    };
    assert_eq!(e.refusal, FirewallRefusal::CheckUnavailable);
    assert!(s.items().is_empty());
    assert!(
        matches!(s.logged("m1")[..], [LogKind::Withheld(w)] if w.reason == FirewallRefusal::CheckUnavailable),
        "{:?}",
        s.logged("m1")
    );
}

#[test]
fn pending_checks_and_admissions_are_bounded_apart() {
    let mut s = Script::new(|c| {
        c.firewall = Some(FirewallConfig {
            max_checks: 1,
            ..FirewallConfig::default()
        })
    });
    s.listen();
    s.ep.send(s.now, text("agent:bob", "one"), SendOptions::default())
        .unwrap();
    s.pump();
    let first = last_check(&s);
    let Err(SendFailure::Firewall(e)) = s.ep.send(s.now, text("agent:bob", "two"), SendOptions::default()) else {
        panic!()
    };
    assert_eq!(e.refusal, FirewallRefusal::CheckUnavailable);
    // Records wait in the record queue while the admission queue is full.
    s.push(&plain("m1", "c1", "bob", "one"));
    s.conversation("dm", &["alice", "bob"]);
    s.push(&plain("m2", "c1", "bob", "two"));
    assert_eq!(checks(&s).len(), 2, "one send, one record");
    let m1 = last_check(&s);
    // The full admission queue does not block sends: they have their own budget.
    verdict(&mut s, first, admit());
    assert!(s
        .ep
        .send(s.now, text("agent:bob", "three"), SendOptions::default())
        .is_ok());
    s.pump();
    assert_eq!(checks(&s).len(), 3);
    verdict(&mut s, m1, admit());
    assert_eq!(checks(&s).len(), 4, "the next record is checked");
    verdict_last(&mut s, admit());
    assert_eq!(s.texts(), vec!["one", "two"]);
}

/// Items waiting for admission are bounded in heap, not only in count: multicasts whose 32 KiB
/// data part `[0,0,…]` takes about 0.5 MiB as a tree stop being taken from the record queue
/// at `max_admission_bytes` (64 MiB by default), far below `max_checks` (1,024), and none is
/// lost: each is checked once room is made.
#[test]
fn items_waiting_for_admission_are_bounded_in_bytes_too() {
    let mut s = Script::new(firewall);
    s.listen();
    let zeros = vec![0; 16_300];
    let n = 200;
    let mut pending = Vec::new();
    let mut measured = 0;
    // The inbound checks asked (the largest item's footprint); the events go.
    let take_checks = |s: &mut Script, pending: &mut Vec<CheckId>| {
        let mut largest = 0;
        for (check, subject) in checks(s) {
            if let CheckSubject::Inbound(item) = subject {
                largest = largest.max(item.to_json().footprint());
                pending.push(check);
            }
        }
        s.events.clear();
        largest
    };
    for i in 0..n {
        let parts = json!([{"type": "text", "text": format!("m{i}")}, {"type": "data", "value": zeros}]);
        s.push(&message(&format!("m{i}"), "c1", "bob", parts));
        if i == 0 {
            s.conversation("dm", &["alice", "bob"]);
        }
        measured = measured.max(take_checks(&mut s, &mut pending));
    }
    // The default `max_admission_bytes`.
    let budget: usize = 64 << 20;
    assert!(measured > 400_000, "an item takes {measured} bytes");
    assert!(
        pending.len() <= budget / measured + 1,
        "{} items wait for admission, {} bytes each, against {budget}",
        pending.len(),
        measured
    );
    assert!(pending.len() >= budget / measured / 2, "{} items wait", pending.len());
    // Admitting them, one by one, takes the waiting records in order until every one was
    // checked (each delivery is acknowledged, so the inbox keeps none).
    let mut delivered = Vec::new();
    let mut next = 0;
    while next < pending.len() {
        assert!(s.ep.firewall_verdict(s.now, pending[next], admit()));
        next += 1;
        s.pump();
        delivered.extend(s.texts());
        for d in deliveries(&s).iter().map(|d| d.id).collect::<Vec<_>>() {
            s.ep.acknowledge(d).unwrap();
        }
        take_checks(&mut s, &mut pending);
    }
    let expected: Vec<String> = (0..n).map(|i| format!("m{i}")).collect();
    assert_eq!(delivered, expected);
}

// ---- inbound ----

#[test]
fn admitted_items_keep_their_order_and_guidance_and_a_withheld_one_is_never_shown() {
    let mut s = Script::new(firewall);
    s.listen();
    s.push(&plain("m1", "c1", "bob", "one"));
    s.conversation("dm", &["alice", "bob"]);
    s.push(&plain("m2", "c1", "bob", "two"));
    s.push(&plain("m3", "c1", "bob", "three"));
    let c: Vec<CheckId> = checks(&s).into_iter().map(|(c, _)| c).collect();
    assert!(matches!(
        &checks(&s)[0].1,
        CheckSubject::Inbound(InboundItem::Multicast { .. })
    ));
    verdict(&mut s, c[2], FirewallVerdict::Admit(Some(guidance())));
    verdict(&mut s, c[1], refuse(FirewallRefusal::Prohibited));
    assert!(s.items().is_empty(), "the first item is not admitted yet");
    verdict(&mut s, c[0], admit());
    assert_eq!(s.texts(), vec!["one", "three"]);
    let d = deliveries(&s);
    assert_eq!(d[0].guidance, None);
    assert_eq!(d[1].guidance, Some(LocalGuidance::Checked(guidance())));
    let withheld = Withheld {
        check_id: c[1].to_string(),
        reason: FirewallRefusal::Prohibited,
    };
    assert_eq!(s.logged("m2"), vec![&LogKind::Withheld(withheld)]);
    // The replay carries the guidance too.
    s.ep.unlisten();
    s.events.clear();
    s.listen();
    s.pump();
    assert_eq!(deliveries(&s)[1].guidance, Some(LocalGuidance::Checked(guidance())));
}

#[test]
fn a_request_waiting_for_admission_cannot_be_answered_and_a_withheld_one_never_can() {
    let mut s = Script::new(firewall);
    s.listen();
    let (_, req) = request(AskOp::Gather, "bob", 1, s.now);
    s.push(&message("r", "c1", "bob", req));
    s.conversation("dm", &["alice", "bob"]);
    assert!(matches!(
        &checks(&s)[0].1,
        CheckSubject::Inbound(InboundItem::CollectiveRequest { .. })
    ));
    let none = CollectiveFailure::RequestNone(MessageAddress::Agent(AgentAddress::parse("agent:bob").unwrap()));
    let Err(SendFailure::Collective(e)) = s.ep.send(s.now, decline("agent:bob"), SendOptions::default()) else {
        panic!()
    };
    assert_eq!(e.failure, none, "waiting for admission");
    verdict_last(&mut s, refuse(FirewallRefusal::UnresolvedEvidence));
    assert!(s.items().is_empty());
    assert!(matches!(s.logged("r")[..], [LogKind::Withheld(_)]));
    let Err(SendFailure::Collective(e)) = s.ep.send(s.now, decline("agent:bob"), SendOptions::default()) else {
        panic!()
    };
    assert_eq!(e.failure, none, "withheld");
}

#[test]
fn an_all_gather_member_still_gets_the_result_with_the_withheld_question_and_answer() {
    let mut s = Script::new(firewall);
    s.listen();
    let (id, req) = request(AskOp::AllGather, "bob", 1, s.now);
    s.push(&message("r", "g", "bob", req));
    s.conversation("group", &["alice", "bob", "carol", "dave"]);
    let request_check = last_check(&s);
    verdict(&mut s, request_check, refuse(FirewallRefusal::Prohibited));
    let carol = message("a1", "g", "carol", answer(&id, true));
    let dave = message(
        "a2",
        "g",
        "dave",
        parts_of(
            &crate::harness::collective::response_content(crate::harness::collective::ResponsePart {
                id: id.clone(),
                response: CollectiveResponse::Decline,
            })
            .unwrap(),
        ),
    );
    s.push(&carol);
    s.push(&dave);
    let close = close_content(ClosePart {
        id: id.clone(),
        included: vec![hash_of(&carol), hash_of(&dave)],
    })
    .unwrap();
    s.push(&message("x", "g", "bob", parts_of(&close)));
    assert_eq!(s.logged("x"), vec![&LogKind::CloseApplied]);
    // carol's answer is checked before the result reaches the runtime.
    let Some((answer_check, CheckSubject::Answer { member, .. })) = checks(&s).last().cloned() else {
        panic!("{:?}", checks(&s))
    };
    assert_eq!(member.as_str(), "agent:carol");
    assert!(s.items().is_empty());
    verdict(&mut s, answer_check, refuse(FirewallRefusal::NormViolation));
    let [InboundItem::CollectiveResult(r)] = &s.items()[..] else {
        panic!("{:?}", s.items())
    };
    assert_eq!(
        r.question(),
        &QuestionOrWithheld::Withheld(Withheld {
            check_id: request_check.to_string(),
            reason: FirewallRefusal::Prohibited,
        })
    );
    let kinds: Vec<(&str, &str)> = r
        .outcomes()
        .iter()
        .map(|o| (o.member.as_str(), o.outcome.kind()))
        .collect();
    assert_eq!(
        kinds,
        vec![
            ("agent:alice", "no-answer"),
            ("agent:carol", "withheld"),
            ("agent:dave", "declined")
        ]
    );
    assert_eq!(
        r.outcomes()[1].outcome,
        CollectiveMemberOutcome::Withheld(Withheld {
            check_id: answer_check.to_string(),
            reason: FirewallRefusal::NormViolation,
        })
    );
    assert_eq!(deliveries(&s)[0].guidance, None);
}

#[test]
fn the_requesters_result_carries_each_answers_admission_and_advice() {
    let mut s = Script::new(firewall);
    s.listen();
    let send =
        s.ep.send(s.now, ask("group:bob,carol", AskOp::Gather, 60), SendOptions::default())
            .unwrap();
    s.pump();
    verdict_last(&mut s, admit());
    let lookup = s.take("agents/lookupByName").expect("the members are looked up");
    s.reply(
        &lookup,
        json!({"agents": [{"id": "bob", "name": "bob"}, {"id": "carol", "name": "carol"}]}),
    );
    for _ in 0..2 {
        let post = s.take("messages/send").expect("a request post");
        s.reply(&post, json!({"message": {}}));
    }
    let id = match done(&s, send) {
        Some(Ok(SendResult {
            operation_id: Some(id), ..
        })) => id,
        other => panic!("{other:?}"),
    };
    s.push(&message("a1", "c1", "bob", answer(&id, true)));
    s.conversation("dm", &["alice", "bob"]);
    s.push(&message("a2", "c2", "carol", answer(&id, false)));
    s.conversation("dm", &["alice", "carol"]);
    let answers: Vec<(CheckId, String)> = checks(&s)
        .into_iter()
        .filter_map(|(c, subject)| match subject {
            CheckSubject::Answer { member, operation, .. } if operation == id => Some((c, member.to_string())),
            _ => None,
        })
        .collect();
    assert_eq!(answers.len(), 2, "{:?}", checks(&s));
    verdict(&mut s, answers[0].0, FirewallVerdict::Admit(Some(guidance())));
    verdict(&mut s, answers[1].0, refuse(FirewallRefusal::Prohibited));
    let d = deliveries(&s);
    let [InboundDelivery {
        item: InboundItem::CollectiveResult(r),
        guidance: advice,
        ..
    }] = &d[..]
    else {
        panic!("{d:?}")
    };
    assert_eq!(r.question(), &QuestionOrWithheld::Text("q".into()), "its own question");
    assert_eq!(r.outcomes()[0].outcome.kind(), "answered");
    assert_eq!(r.outcomes()[1].outcome.kind(), "withheld");
    assert_eq!(
        advice,
        &Some(LocalGuidance::Result {
            question: None,
            answers: vec![AnswerGuidance {
                member: AgentAddress::parse(&answers[0].1).unwrap(),
                guidance: guidance(),
            }],
        })
    );
}

#[test]
fn an_answer_refused_on_its_second_match_names_an_id_minted_for_the_refusal() {
    let mut s = Script::new(firewall);
    s.listen();
    let (request_id, req) = request(AskOp::Gather, "bob", 1, s.now);
    s.push(&message("r", "c1", "bob", req));
    s.conversation("dm", &["alice", "bob"]);
    verdict_last(&mut s, admit());
    // Returned: the refusal's id is not the peer's request id.
    let first = s.ep.send(s.now, decline("agent:bob"), SendOptions::default()).unwrap();
    s.pump();
    let check = last_check(&s);
    s.now += 601_000;
    verdict(&mut s, check, admit());
    let Some(Err(SendFailure::Collective(e))) = done(&s, first) else {
        panic!("{:?}", s.events)
    };
    assert_eq!(e.failure, CollectiveFailure::RequestExpired);
    assert_ne!(e.id, request_id);
    // Inbound: the send names the minted id, and so does the `operationFailed`, at bob's address.
    let (second_id, req) = request(AskOp::Gather, "bob", 2, s.now);
    s.push(&message("r2", "c1", "bob", req));
    verdict_last(&mut s, admit());
    let inbound = SendOptions {
        failure_delivery: FailureDelivery::Inbound,
    };
    let second = s.ep.send(s.now, decline("agent:bob"), inbound).unwrap();
    s.pump();
    let check = last_check(&s);
    s.now += 601_000;
    verdict(&mut s, check, admit());
    let Some(Ok(SendResult {
        operation_id: Some(minted),
        ..
    })) = done(&s, second)
    else {
        panic!("{:?}", s.events)
    };
    assert!(minted != second_id && minted != e.id);
    let failed = deliveries(&s)
        .into_iter()
        .find_map(|d| match &d.item {
            InboundItem::OperationFailed { id, to, .. } => Some((id.clone(), to.to_string())),
            _ => None,
        })
        .expect("an operationFailed");
    assert_eq!(failed, (minted, "agent:bob".to_owned()));
    assert!(s.take("messages/send").is_none());
}
