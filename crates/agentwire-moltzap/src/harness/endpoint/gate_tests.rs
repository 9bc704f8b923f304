//! Sans-IO tests of the wait for the connection (`ROUTER_ATTACH_TIMEOUT`, `gate.rs`) against a
//! scripted server.

use super::scripted_tests::Script;
use super::*;
use crate::harness::address::MessageAddressInput;
use crate::harness::collective::AskOp;
use crate::harness::errors::{CollectiveFailure, SendErrorReason};
use crate::harness::send::{CollectiveOperation, SendInput, SendOptions};
use serde_json::json;

pub(super) fn text(to: &str, t: &str) -> SendInput {
    SendInput::Message {
        to: MessageAddressInput::parse(to).unwrap(),
        text: t.into(),
        collective: None,
    }
}

pub(super) fn ask(to: &str, op: AskOp, deadline: u32) -> SendInput {
    SendInput::Message {
        to: MessageAddressInput::parse(to).unwrap(),
        text: "q".into(),
        collective: Some(CollectiveOperation::Ask {
            op,
            deadline,
            requested_schema: crate::harness::collective::tests::schema(),
        }),
    }
}

/// The outcome of `send`, once it ended.
pub(super) fn done(s: &Script, send: SendId) -> Option<Result<SendResult, SendFailure>> {
    let mut ends = s.events.iter().filter_map(|e| match e {
        EndpointEvent::SendDone { send: x, outcome } if *x == send => Some(outcome.clone()),
        _ => None,
    });
    let first = ends.next();
    assert!(ends.next().is_none(), "two SendDone for {send:?}");
    first
}

pub(super) fn send_reason(outcome: Option<Result<SendResult, SendFailure>>) -> SendErrorReason {
    match outcome {
        Some(Err(SendFailure::Send(e))) => e.reason,
        other => panic!("not a SendError: {other:?}"),
    }
}

#[test]
fn a_send_issued_while_connecting_waits_and_goes_out_once_connected() {
    let mut s = Script::unconnected(|_| {});
    s.start_connect();
    let send =
        s.ep.send(s.now, text("agent:bob", "hi"), SendOptions::default())
            .unwrap();
    s.pump();
    assert!(s.take("messages/send").is_none(), "posted before the connection");
    assert_eq!(done(&s, send), None);
    let hello = s.take_connect();
    s.now += 500;
    s.reply(&hello, json!({}));
    let post = s.take("messages/send").expect("posted once connected");
    assert_eq!(post["params"]["parts"][0]["text"], "hi");
    s.reply(&post, json!({"message": {}}));
    assert_eq!(done(&s, send), Some(Ok(SendResult::default())));
}

#[test]
fn a_send_waiting_for_the_connection_fails_network_unavailable_at_the_bound() {
    let mut s = Script::unconnected(|c| c.attach_wait_ms = 2_000);
    // The socket is open; the connect has not gone out yet.
    s.ep.handle_open(s.now);
    let start = s.now;
    let send =
        s.ep.send(s.now, text("agent:bob", "hi"), SendOptions::default())
            .unwrap();
    s.pump();
    assert_eq!(s.ep.poll_timeout(), Some(start + 2_000));
    s.tick();
    assert_eq!(s.now, start + 2_000);
    assert_eq!(send_reason(done(&s, send)), SendErrorReason::NetworkUnavailable);
    // Connecting later posts nothing for it.
    s.ep.connect(s.now, Credentials::AgentKey("moltzap_agent_k".into()))
        .unwrap();
    s.pump();
    let hello = s.take_connect();
    s.reply(&hello, json!({}));
    assert!(s.take("messages/send").is_none());
}

#[test]
fn a_connect_refused_for_its_credentials_fails_the_waiting_sends_at_once_and_refuses_new_ones() {
    let mut s = Script::unconnected(|_| {});
    s.start_connect();
    let multicast =
        s.ep.send(s.now, text("agent:bob", "hi"), SendOptions::default())
            .unwrap();
    let gather =
        s.ep.send(s.now, ask("agent:bob", AskOp::Gather, 60), SendOptions::default())
            .unwrap();
    let hello = s.take_connect();
    // -32000 Unauthorized: the same credentials would be refused again.
    let refusal = json!({"jsonrpc": "2.0", "id": hello["id"], "error": {"code": -32000, "message": "no"}});
    s.ep.handle_text(s.now, &refusal.to_string());
    s.pump();
    assert!(s.events.iter().any(|e| matches!(e, EndpointEvent::ConnectFailed(_))));
    assert_eq!(send_reason(done(&s, multicast)), SendErrorReason::NetworkUnavailable);
    assert_eq!(send_reason(done(&s, gather)), SendErrorReason::NetworkUnavailable);
    // No connection is expected now: a send fails at once, until the next connect.
    let Err(SendFailure::Send(e)) = s.ep.send(s.now, text("agent:bob", "hi"), SendOptions::default()) else {
        panic!()
    };
    assert_eq!(e.reason, SendErrorReason::NetworkUnavailable);
    assert!(s.take("messages/send").is_none() && s.take("agents/lookupByName").is_none());
}

#[test]
fn a_connect_refused_for_its_version_fails_the_waiting_sends_at_once() {
    let mut s = Script::unconnected(|_| {});
    s.start_connect();
    let send =
        s.ep.send(s.now, text("agent:bob", "hi"), SendOptions::default())
            .unwrap();
    let hello = s.take_connect();
    s.reply(&hello, json!({"protocolVersion": "0.0.1"}));
    assert!(s.events.iter().any(|e| matches!(
        e,
        EndpointEvent::ConnectFailed(c) if c.reason == crate::harness::errors::ConnectErrorReason::IncompatibleDaemon
    )));
    assert_eq!(send_reason(done(&s, send)), SendErrorReason::NetworkUnavailable);
}

#[test]
fn a_connect_that_times_out_leaves_the_sends_waiting_and_a_later_connect_sends_them() {
    // The handshake times out (10 s) before the sends' bound.
    let mut s = Script::unconnected(|c| c.attach_wait_ms = 20_000);
    s.start_connect();
    let multicast =
        s.ep.send(s.now, text("agent:bob", "hi"), SendOptions::default())
            .unwrap();
    let gather =
        s.ep.send(s.now, ask("agent:bob", AskOp::Gather, 60), SendOptions::default())
            .unwrap();
    s.take_connect();
    s.tick(); // the connect gets no answer
    assert!(s.events.iter().any(|e| matches!(e, EndpointEvent::ConnectFailed(_))));
    assert_eq!(done(&s, multicast), None, "still waiting for attachment");
    assert_eq!(done(&s, gather), None);
    // Attachment is still expected: a new send waits too.
    let later =
        s.ep.send(s.now, text("agent:carol", "later"), SendOptions::default())
            .unwrap();
    s.pump();
    assert_eq!(done(&s, later), None);
    s.ep.connect(s.now, Credentials::AgentKey("moltzap_agent_k".into()))
        .unwrap();
    s.pump();
    let hello = s.take_connect();
    s.reply(&hello, json!({}));
    let first = s.take("messages/send").expect("the multicast goes out");
    assert_eq!(first["params"]["to"], "agent:bob");
    assert!(s.take("agents/lookupByName").is_some(), "the gather goes out");
    let second = s.take("messages/send").expect("the later send goes out");
    assert_eq!(second["params"]["to"], "agent:carol");
}

#[test]
fn a_socket_lost_while_connecting_leaves_the_sends_to_their_attachment_bound() {
    let mut s = Script::unconnected(|c| c.attach_wait_ms = 2_000);
    s.start_connect();
    let start = s.now;
    let send =
        s.ep.send(s.now, text("agent:bob", "hi"), SendOptions::default())
            .unwrap();
    s.now += 50;
    s.ep.handle_close(s.now, 1006, "");
    s.pump();
    assert!(s.events.iter().any(|e| matches!(e, EndpointEvent::ConnectFailed(_))));
    assert_eq!(
        done(&s, send),
        None,
        "no send fails merely because the endpoint is attaching"
    );
    s.tick();
    assert_eq!(s.now, start + 2_000);
    assert_eq!(send_reason(done(&s, send)), SendErrorReason::NetworkUnavailable);
}

#[test]
fn after_a_lost_connection_sends_wait_for_the_reconnect_and_after_close_they_fail() {
    let mut s = Script::new(|_| {});
    s.ep.handle_close(s.now, 1006, "");
    s.pump();
    let send =
        s.ep.send(s.now, text("agent:bob", "hi"), SendOptions::default())
            .unwrap();
    s.pump();
    assert!(s.take("messages/send").is_none());
    s.sent.clear();
    s.connect();
    let post = s.take("messages/send").expect("posted after the reconnect");
    s.reply(&post, json!({"message": {}}));
    assert_eq!(done(&s, send), Some(Ok(SendResult::default())));
    // Lost again; the host closes the endpoint: the waiting send fails, a new one at once.
    s.ep.handle_close(s.now, 1006, "");
    let waiting =
        s.ep.send(s.now, text("agent:bob", "again"), SendOptions::default())
            .unwrap();
    s.ep.close(s.now, 1000, "bye");
    s.pump();
    assert_eq!(send_reason(done(&s, waiting)), SendErrorReason::NetworkUnavailable);
    let Err(SendFailure::Send(e)) = s.ep.send(s.now, text("agent:bob", "hi"), SendOptions::default()) else {
        panic!()
    };
    assert_eq!(e.reason, SendErrorReason::NetworkUnavailable);
}

#[test]
fn validation_refuses_at_once_while_connecting_and_a_deadline_ends_the_wait() {
    let mut s = Script::unconnected(|_| {});
    s.start_connect();
    let Err(SendFailure::Send(e)) = s.ep.send(s.now, text("agent:alice", "hi"), SendOptions::default()) else {
        panic!()
    };
    assert_eq!(e.reason, SendErrorReason::MembershipInvalid);
    let Err(SendFailure::Send(e)) =
        s.ep.send(s.now, ask("agent:bob", AskOp::Gather, 0), SendOptions::default())
    else {
        panic!()
    };
    assert_eq!(e.reason, SendErrorReason::ContentInvalid);
    // A gather whose 1 s deadline passes while it waits: `deadline-passed`, nothing posted.
    let send =
        s.ep.send(s.now, ask("agent:bob", AskOp::Gather, 1), SendOptions::default())
            .unwrap();
    s.now += 1_000;
    s.ep.handle_timeout(s.now);
    s.pump();
    let Some(Err(SendFailure::Collective(e))) = done(&s, send) else {
        panic!("{:?}", s.events)
    };
    assert_eq!(e.failure, CollectiveFailure::DeadlinePassed);
    let hello = s.take_connect();
    s.reply(&hello, json!({}));
    assert!(s.take("agents/lookupByName").is_none() && s.take("messages/send").is_none());
}

#[test]
fn a_resumed_intent_waits_for_the_connection_too() {
    let mut s = Script::new(|_| {});
    s.ep.send(s.now, text("agent:bob", "once"), SendOptions::default())
        .unwrap();
    s.pump();
    assert!(s.take("messages/send").is_some());
    // The connection is lost with the post in flight: its outcome is unknown.
    s.ep.handle_close(s.now, 1006, "");
    s.pump();
    let intent = s.ep.unfinished()[0].clone();
    let again = s.ep.resume(s.now, intent.clone()).unwrap();
    s.pump();
    assert!(s.take("messages/send").is_none());
    s.sent.clear();
    s.connect();
    let post = s.take("messages/send").expect("resumed once connected");
    assert_eq!(post["params"]["postId"], intent.post_id.as_str());
    s.reply(&post, json!({"message": {}}));
    assert!(matches!(done(&s, again), Some(Ok(_))));
}

#[test]
fn a_waiting_send_is_checked_again_when_the_server_turns_out_released() {
    let mut s = Script::unconnected(|_| {});
    let session = SessionConfig {
        generation: crate::session::GenerationChoice::Auto,
        ..SessionConfig::default()
    };
    let cfg = EndpointConfig::new(super::scripted_tests::alice());
    s.ep = Endpoint::new(cfg, session, Box::new(agentwire_core::SeededEntropy::new(7)));
    s.start_connect();
    let gather =
        s.ep.send(s.now, ask("agent:bob", AskOp::Gather, 60), SendOptions::default())
            .unwrap();
    let group =
        s.ep.send(s.now, text("group:bob,carol", "hi"), SendOptions::default())
            .unwrap();
    let direct =
        s.ep.send(s.now, text("agent:bob", "hi"), SendOptions::default())
            .unwrap();
    // A released server refuses the current handshake; the session falls back on the same socket.
    let hello = s.take_connect();
    let refusal = json!({"jsonrpc": "2.0", "id": hello["id"], "error": {"code": -32600, "message": "Invalid Request"}});
    s.ep.handle_text(s.now, &refusal.to_string());
    s.pump();
    let again = s.take("auth/connect").expect("the released handshake");
    let ok = json!({"jsonrpc": "2.0", "type": "response", "id": again["id"], "result": {}});
    s.ep.handle_text(s.now, &ok.to_string());
    s.pump();
    assert_eq!(send_reason(done(&s, gather)), SendErrorReason::VersionMismatch);
    assert_eq!(send_reason(done(&s, group)), SendErrorReason::VersionMismatch);
    let post = s.take("messages/send").expect("the direct multicast goes out");
    assert_eq!(
        post["params"]["parts"].as_array().unwrap().len(),
        1,
        "its text part alone"
    );
    assert_eq!(done(&s, direct), None);
}

/// An endpoint attaching (its connect in flight), over a session taking `max_in_flight`.
fn attaching(max_in_flight: usize) -> Script {
    let mut s = Script::unconnected(|_| {});
    s.ep = Endpoint::new(
        EndpointConfig::new(super::scripted_tests::alice()),
        SessionConfig {
            max_in_flight,
            ..SessionConfig::default()
        },
        Box::new(agentwire_core::SeededEntropy::new(7)),
    );
    s.start_connect();
    s
}

/// Sends `n` multicasts of `text` while attaching: how many were accepted, and that every
/// other was refused `network-unavailable` at once.
fn send_while_attaching(s: &mut Script, n: usize, text_: &str) -> usize {
    let mut accepted = 0;
    for _ in 0..n {
        match s.ep.send(s.now, text("agent:bob", text_), SendOptions::default()) {
            Ok(_) => accepted += 1,
            Err(SendFailure::Send(e)) => assert_eq!(e.reason, SendErrorReason::NetworkUnavailable),
            Err(other) => panic!("{other:?}"),
        }
    }
    accepted
}

/// Sends waiting for the connection are bounded in count by the session's `max_in_flight`
/// (default 1,024: once connected, no more can go out at once): past it a send is refused
/// `network-unavailable` at once; those accepted all go out at `Connected`.
#[test]
fn sends_waiting_for_the_connection_are_bounded_by_max_in_flight() {
    let mut s = attaching(SessionConfig::default().max_in_flight);
    let accepted = send_while_attaching(&mut s, 1_100, "hi");
    assert_eq!(accepted, 1_024);
    let hello = s.take_connect();
    s.reply(&hello, json!({}));
    let posts = s.sent.iter().filter(|v| v["method"] == "messages/send").count();
    assert_eq!(posts, 1_024, "every accepted send goes out once connected");
    // Once connected, sends are accepted again (the session bounds them).
    assert!(s
        .ep
        .send(s.now, text("agent:bob", "hi"), SendOptions::default())
        .is_ok());
}

/// ... and in bytes by `max_waiting_send_bytes` (default 64 MiB, each send's content counted
/// as `max_inbox_bytes` counts a delivery), whatever `max_in_flight` allows.
#[test]
fn sends_waiting_for_the_connection_are_bounded_in_bytes() {
    let mut s = attaching(100_000);
    let big = "x".repeat(30_000);
    let n = 3_000;
    let accepted = send_while_attaching(&mut s, n, &big);
    let one = crate::harness::collective::multicast_content(&big)
        .unwrap()
        .to_json()
        .footprint();
    // The default `max_waiting_send_bytes`.
    let budget: usize = 64 << 20;
    assert!(accepted < n, "all {n} sends wait");
    assert!(
        accepted <= budget / one && accepted + 1 >= budget / one,
        "{accepted} sends of {one} bytes wait, against {budget}"
    );
}

/// A members lookup that gets no answer posted nothing: it fails `network-unavailable`, and its
/// message says the Registry was not reached (it said "the message to the Registry may have been
/// sent", the `outcome-unknown` wording, before).
#[test]
fn a_member_lookup_that_times_out_says_the_registry_was_not_reached() {
    let mut s = Script::new(|_| {});
    let send =
        s.ep.send(s.now, ask("group:bob,carol", AskOp::Gather, 60), SendOptions::default())
            .unwrap();
    s.pump();
    assert!(s.take("agents/lookupByName").is_some());
    s.tick(); // the lookup times out
    let Some(Err(SendFailure::Send(e))) = done(&s, send) else {
        panic!("not a SendError: {:?}", done(&s, send))
    };
    assert_eq!(e.reason, SendErrorReason::NetworkUnavailable);
    assert!(s.take("messages/send").is_none(), "nothing posted");
    assert_eq!(
        e.to_string(),
        "send failed: the Registry was not reached (no response before the request timeout)"
    );
}
