//! Forward compatibility (review A, 2026-12-07): a server newer than the client.
mod common;

use agentwire_core::ErrorKind;
use agentwire_switch::connection::{ConnectionConfig, Event, Transport};
use common::*;

fn ws() -> ConnectionConfig {
    config(Transport::WebSocket)
}

/// Sound: an unknown eviction code keeps its raw code on the stop error, not retried.
#[test]
fn sound_unknown_eviction_code_is_kept() {
    let mut d = Driver::live_ws(ws(), 0, &[]);
    d.text(&evicted("quota_exceeded"));
    let (_, e) = d.drain();
    assert!(
        e.iter().any(|e| matches!(e, Event::Stopped { error: Some(err) } if err.code.as_deref() == Some("quota_exceeded") && err.kind == ErrorKind::Closed)),
        "{e:?}"
    );
}

/// Sound: keys in another order, escaped names, pretty-printing, unknown keys at every level.
#[test]
fn sound_serializer_variants() {
    let mut d = Driver::live_ws(ws(), 0, &[]);
    d.text(&format!(
        "{{\n \"id\": 1,\n \"new_top\": true,\n \"data\": {{\"sequence\": 1, \"payload\": {{}}, \"room_\\u0069d\": \"{ROOM}\", \"new_inner\": [1]}},\n \"event\": \"m\\u0065ssage\"\n}}"
    ));
    let ev = d.events();
    assert_eq!(sequences(&ev), vec![1], "{ev:?}");
}
