//! What the harness endpoint keeps is bounded in heap, not only in count: records waiting for
//! their conversation keep their parts as canonical text (none past the content limit), and the
//! inbox keeps at most `max_inbox_bytes`. Measured with a counting allocator, so this file holds
//! one test (tests in one binary run on threads that share the count).

use agentwire_core::SeededEntropy;
use agentwire_moltzap::harness::endpoint::{Endpoint, EndpointConfig, EndpointEvent, LogKind};
use agentwire_moltzap::harness::AgentAddress;
use agentwire_moltzap::{Credentials, SessionConfig};
use agentwire_test_alloc::live;

#[global_allocator]
static ALLOCATOR: agentwire_test_alloc::Counting = agentwire_test_alloc::Counting;

/// An endpoint connected as alice; `cfg` adjusts the defaults.
fn connected(cfg: impl FnOnce(&mut EndpointConfig)) -> Endpoint {
    let mut c = EndpointConfig::new(AgentAddress::parse("agent:alice").unwrap());
    cfg(&mut c);
    let mut ep = Endpoint::new(c, SessionConfig::default(), Box::new(SeededEntropy::new(1)));
    ep.handle_open(0);
    ep.connect(0, Credentials::AgentKey("moltzap_agent_k".into())).unwrap();
    let (id, _) = sent(&mut ep).unwrap();
    ep.handle_text(1, &format!(r#"{{"jsonrpc":"2.0","id":"{id}","result":{{}}}}"#));
    // Every connect reads the recent window back, the first too: nothing was posted before.
    let (id, method) = sent(&mut ep).unwrap();
    assert_eq!(method, "agent/message/list");
    ep.handle_text(
        1,
        &format!(r#"{{"jsonrpc":"2.0","id":"{id}","result":{{"messages":[]}}}}"#),
    );
    while ep.poll_event().is_some() {}
    ep
}

/// The next request sent: (id, method).
fn sent(ep: &mut Endpoint) -> Option<(String, String)> {
    let o = ep.poll_transmit()?;
    let v: serde_json::Value = serde_json::from_str(o.as_text()?).ok()?;
    Some((
        v["id"].as_str()?.to_owned(),
        v["method"].as_str().unwrap_or("").to_owned(),
    ))
}

/// A `messages/received` push from bob in conversation c1 with `parts`.
fn push(i: usize, parts: &str) -> String {
    format!(
        r#"{{"jsonrpc":"2.0","method":"messages/received","params":{{"message":{{"id":"m{i}","conversationId":"c1","senderId":"b","parts":{parts}}}}}}}"#
    )
}

/// `[0,0,…,0]` of `zeros` zeros: its tree takes about 16 times its text.
fn zeros(zeros: usize) -> String {
    format!("[{}0]", "0,".repeat(zeros - 1))
}

/// Pushes records `ids` with `parts` whose conversation lookup is never answered; returns the
/// heap they hold.
fn held_by_waiting(ep: &mut Endpoint, ids: std::ops::Range<usize>, parts: &str) -> isize {
    let base = live();
    for i in ids {
        ep.handle_text(2, &push(i, parts));
        while ep.poll_transmit().is_some() {}
        while ep.poll_event().is_some() {}
    }
    live() - base
}

#[test]
fn what_the_endpoint_keeps_is_bounded_in_heap() {
    // 1. Records waiting for their conversation (its lookup is never answered). Parts over the
    // content limit (a frame of 200 KB) keep nothing: before, each kept its parsed tree, about
    // 3 MB.
    let mut ep = connected(|_| {});
    let big = format!(r#"[{{"type":"data","value":{}}}]"#, zeros(100_000));
    let held = held_by_waiting(&mut ep, 0..20, &big);
    assert!(held < 20 * 16_384, "20 records over the limit hold {held} bytes");

    // Parts within the limit are kept as their canonical text: before, about 480 KB each.
    let within = format!(r#"[{{"type":"data","value":{}}}]"#, zeros(15_000));
    let held = held_by_waiting(&mut ep, 100..300, &within);
    assert!(
        held < 200 * 2 * within.len() as isize,
        "200 records of {} bytes hold {held} bytes",
        within.len()
    );
    drop(ep);

    // 2. The inbox: deliveries nobody acknowledges, each about 0.5 MB as a tree, against an
    // 8 MiB budget. The oldest go, logged.
    let budget = 8 << 20;
    let mut ep = connected(|c| c.max_inbox_bytes = budget);
    let base = live();
    let mut dropped = 0;
    for i in 0..100 {
        ep.handle_text(2, &push(i, &within));
        while let Some((id, method)) = sent(&mut ep) {
            assert_eq!(method, "conversations/get");
            ep.handle_text(
                3,
                &format!(
                    r#"{{"jsonrpc":"2.0","id":"{id}","result":{{"conversation":{{"type":"dm"}},"participants":[{{"participant":{{"id":"a"}},"agentName":"alice"}},{{"participant":{{"id":"b"}},"agentName":"bob"}}]}}}}"#
                ),
            );
        }
        while let Some(ev) = ep.poll_event() {
            if let EndpointEvent::Logged(entry) = ev {
                dropped += usize::from(matches!(entry.kind, LogKind::InboxOverflow(_)));
            }
        }
    }
    let held = live() - base;
    let kept = ep.pending_deliveries();
    assert_eq!(kept + dropped, 100, "every delivery is kept or logged dropped");
    assert!((8..30).contains(&kept), "{kept} deliveries kept");
    assert!(
        held < (budget as isize) * 3 / 2,
        "the inbox holds {held} bytes against {budget}"
    );
}
