//! The session's bookkeeping of requests, generations and liveness, pinned where a change to
//! `session/` went unnoticed by the other tests. Found by mutation testing: each test fails with
//! one such change.
use agentwire_core::Outgoing;
use agentwire_moltzap::{Credentials, Event, Generation, GenerationChoice, Session, SessionConfig, SessionState};
use serde_json::Value;

const KEY: &str = "moltzap_agent_ca5f41b0a56c4169_9d8d82a1e90c89f40b71eb74d4d4d57cfce54c354f90e03f";

fn sent(s: &mut Session) -> Vec<Value> {
    let mut out = Vec::new();
    while let Some(o) = s.poll_transmit() {
        match o {
            Outgoing::Text(t) => out.push(serde_json::from_str(&t).expect("the session writes JSON")),
            other => out.push(serde_json::json!({"close": format!("{other:?}")})),
        }
    }
    out
}

fn events(s: &mut Session) -> Vec<Event> {
    std::iter::from_fn(|| s.poll_event()).collect()
}

/// A released session speaks the released generation from the socket's opening, on every
/// socket, before its connect.
#[test]
fn a_released_session_is_released_from_the_socket_opening() {
    let mut s = Session::new(SessionConfig {
        generation: GenerationChoice::Released,
        ..SessionConfig::default()
    });
    for at in [0, 100] {
        s.handle_open(at);
        assert_eq!(s.generation(), Generation::Released);
        s.handle_close(at + 1, 1000, "bye");
    }
}

/// Pings stopping before the connect report nothing and send no liveness probe: the watch is a
/// connected session's, and the connect must be the first request on the socket.
#[test]
fn pings_stopping_before_the_connect_report_nothing_and_send_no_probe() {
    let mut s = Session::new(SessionConfig {
        ping_interval_ms: Some(1_000),
        ..SessionConfig::default()
    });
    s.handle_open(0);
    s.handle_ping(0);
    s.handle_timeout(3_000);
    assert!(events(&mut s).is_empty());
    assert_eq!(sent(&mut s), Vec::<Value>::new());
    let id = s.connect(3_001, Credentials::AgentKey(KEY.into())).unwrap();
    let wire = sent(&mut s);
    assert_eq!(wire.len(), 1);
    assert_eq!(wire[0]["id"], id.as_str());
    assert_eq!(wire[0]["method"], "agent/network/connect");
}

/// A `ping_interval_ms` of 0 watches nothing (as `None`): no `MissedPings` at once, neither
/// from `Connected` nor from a ping after it.
#[test]
fn a_ping_interval_of_zero_watches_nothing() {
    let mut s = Session::new(SessionConfig {
        ping_interval_ms: Some(0),
        idle_probe_ms: 0,
        ..SessionConfig::default()
    });
    s.handle_open(0);
    let id = s.connect(0, Credentials::AgentKey(KEY.into())).unwrap();
    sent(&mut s);
    s.handle_text(1, &format!(r#"{{"jsonrpc":"2.0","id":"{id}","result":{{}}}}"#));
    assert!(matches!(events(&mut s)[..], [Event::Connected { .. }]));
    assert_eq!(s.poll_timeout(), None);
    s.handle_ping(2);
    assert_eq!(s.poll_timeout(), None);
    s.handle_timeout(10);
    assert!(events(&mut s).is_empty());
    assert_eq!(s.state(), SessionState::Ready);
}

/// The liveness probe takes a request id of its own: the next request never shares it, so the
/// probe's answer is never taken for the request's (nor the request's for the probe's).
#[test]
fn the_liveness_probe_and_the_next_request_have_different_ids() {
    let mut s = Session::new(SessionConfig {
        idle_probe_ms: 1_000,
        ..SessionConfig::default()
    });
    s.handle_open(0);
    let id = s.connect(0, Credentials::AgentKey(KEY.into())).unwrap();
    sent(&mut s);
    s.handle_text(1, &format!(r#"{{"jsonrpc":"2.0","id":"{id}","result":{{}}}}"#));
    assert!(matches!(events(&mut s)[..], [Event::Connected { .. }]));
    s.handle_timeout(1_001);
    let wire = sent(&mut s);
    assert_eq!(wire.len(), 1, "{wire:?}");
    assert_eq!(wire[0]["method"], "system/ping");
    let probe = wire[0]["id"].as_str().unwrap().to_string();
    let call = s.call(1_002, "agents/list", None).unwrap();
    assert_ne!(call, probe);
    // The probe's answer, then the request's: each goes where it belongs.
    s.handle_text(1_003, &format!(r#"{{"jsonrpc":"2.0","id":"{probe}","result":{{}}}}"#));
    assert!(events(&mut s).is_empty());
    s.handle_text(
        1_004,
        &format!(r#"{{"jsonrpc":"2.0","id":"{call}","result":{{"agents":[]}}}}"#),
    );
    assert!(matches!(&events(&mut s)[..], [Event::Response { id, .. }] if id == &call));
    assert_eq!(s.in_flight(), 0);
}
