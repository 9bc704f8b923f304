//! Shared helpers of the bridge's unit tests.

use super::{Bridge, BridgeConfig, Output};
use agentwire_core::Millis;
use agentwire_switch::sse::encode_event;

pub const CID: &str = "19209fad-88d2-4353-b857-10454fb40fa5";

/// The released `connection_state` (the 0.19 capture's shape): cursor 4, room `r1`.
pub const SSE_STATE: &str = "event: connection_state\ndata: {\"connection_id\":\"19209fad-88d2-4353-b857-10454fb40fa5\",\"agent_id\":\"agent\",\"scope\":\"single\",\"filter\":\"all\",\"spawn_capable\":false,\"rooms\":[\"r1\"],\"cursor\":4,\"protocol\":1,\"heartbeat_interval_seconds\":2.0,\"server\":{\"version\":\"0.19.0\",\"contracts\":{\"agent-protocol\":{\"speaks\":1,\"accepts\":1}}},\"client\":{\"speaks\":null,\"accepts\":null,\"artifact\":null,\"version\":null}}\n\n";

/// The interval field of [`SSE_STATE`], for replacing.
pub const HB: &str = "\"heartbeat_interval_seconds\":2.0";

/// The `data` of a released `message` event in room `r1`.
pub fn message_data(seq: u64, body: &str) -> String {
    let body = serde_json::to_string(body).unwrap();
    format!(
        r#"{{"type":"message","room_id":"r1","bridge_id":null,"channel_type":"channel_public","payload":{{"body":{body}}},"sequence":{seq}}}"#
    )
}

/// A released `message` event as an SSE frame.
pub fn message_frame(seq: u64, body: &str) -> String {
    encode_event("message", &message_data(seq, body), Some(&seq.to_string()))
}

/// A bridge waiting for its open answer.
pub fn opening(now: Millis) -> Bridge {
    Bridge::new(BridgeConfig::new("agent", CID), now)
}

/// A bridge whose stream opened at `now`.
pub fn streaming(now: Millis) -> Bridge {
    let mut b = opening(now);
    b.handle_open_response(now, 200, Some("text/event-stream"), "");
    b
}

/// A bridge attached at `now + 1` (its `connection_state` drained).
pub fn live(now: Millis) -> Bridge {
    let mut b = streaming(now);
    b.handle_sse(now + 1, SSE_STATE.as_bytes());
    let out = drain(&mut b);
    assert_eq!(out.len(), 1, "{out:?}");
    assert!(b.is_attached());
    b
}

pub fn drain(b: &mut Bridge) -> Vec<Output> {
    std::iter::from_fn(|| b.poll_output()).collect()
}

pub fn text(o: &Output) -> &str {
    match o {
        Output::ToClient(t) => t,
        other => panic!("not a frame for the browser: {other:?}"),
    }
}

pub fn json(o: &Output) -> serde_json::Value {
    serde_json::from_str(text(o)).unwrap()
}
