//! Configs through the component: each WIT option reaches the engine as the WIT says, and a
//! config that could never work is refused at once rather than failing later (a review from a
//! host author's side found each of these).

use super::runtime;
use agentwire_component_host::bindings::exports::agentwire::engine::{moltzap, switch};
use agentwire_component_host::defaults;
use agentwire_component_host::ErrorKind;

fn switch_config() -> switch::Config {
    switch::Config {
        start_after: Some(0),
        ..defaults::switch(
            "a0000000-0000-4000-8000-000000000001",
            "c0000000-0000-4000-8000-000000000001",
        )
    }
}

/// Whether an SSE session with `max-message-bytes` of `max` delivers one event whose `data` (on
/// one line) is a frame of `len` bytes.
fn sse_frame_arrives(max: u32, len: usize) -> bool {
    let mut i = runtime().instantiate().unwrap();
    let api = i.engine.agentwire_engine_switch().session();
    let cfg = switch::Config {
        transport: Some(switch::Transport::Sse),
        max_message_bytes: Some(max),
        ..switch_config()
    };
    let s = api.call_constructor(&mut i.store, &cfg).unwrap();
    api.call_start(&mut i.store, s, 1).unwrap().unwrap();
    api.call_drain(&mut i.store, s).unwrap();
    api.call_handle_open(&mut i.store, s, 1).unwrap();
    let state = super::garbage::connection_state_sse();
    api.call_handle_bytes(&mut i.store, s, 1, state.as_bytes()).unwrap();
    api.call_drain(&mut i.store, s).unwrap();
    let frame = |b: &str| format!(r#"{{"type":"message","room_id":"r","payload":{{"b":"{b}"}},"sequence":1}}"#);
    let frame = frame(&"x".repeat(len - frame("").len()));
    assert_eq!(frame.len(), len);
    let event = format!("id: 1\nevent: message\ndata: {frame}\n\n");
    api.call_handle_bytes(&mut i.store, s, 2, event.as_bytes()).unwrap();
    let d = api.call_drain(&mut i.store, s).unwrap();
    let got = d.events.iter().filter(|e| matches!(e, switch::Event::Event(_))).count();
    got == 1
}

/// `max-message-bytes` bounds an SSE event's `data` and line too, as the engine's
/// `ConnectionConfig::set_max_message_bytes` does: with 8 MiB, an event of 2 MiB arrives (the SSE
/// limits stayed at 1 MiB and dropped it); a frame of exactly the bound on one `data: ` line
/// arrives (the line bound was the same number, and the `data: ` made the line too long), one
/// byte more does not.
#[test]
fn switch_max_message_bytes_bounds_sse_too() {
    assert!(sse_frame_arrives(8 << 20, 2 << 20));
    assert!(sse_frame_arrives(4096, 4096));
    assert!(!sse_frame_arrives(4096, 4097));
}

/// Bounds of 0 that refuse every frame, and an idle timeout of 0: refused by `start`.
#[test]
fn switch_refuses_bounds_that_would_refuse_every_frame() {
    let mut i = runtime().instantiate().unwrap();
    let api = i.engine.agentwire_engine_switch().session();
    for cfg in [
        switch::Config {
            max_message_bytes: Some(0),
            ..switch_config()
        },
        switch::Config {
            max_depth: Some(0),
            ..switch_config()
        },
        switch::Config {
            stream_idle_timeout_ms: Some(0),
            ..switch_config()
        },
    ] {
        let s = api.call_constructor(&mut i.store, &cfg).unwrap();
        let e = api.call_start(&mut i.store, s, 1).unwrap().unwrap_err();
        assert_eq!(e.kind, ErrorKind::Invalid, "{e:?}");
    }
}

/// A host's `handle-open-unusable` with `internal` (agentwire's own kind) is taken as `protocol`.
#[test]
fn switch_takes_an_internal_open_failure_as_protocol() {
    let mut i = runtime().instantiate().unwrap();
    let api = i.engine.agentwire_engine_switch().session();
    let s = api.call_constructor(&mut i.store, &switch_config()).unwrap();
    api.call_start(&mut i.store, s, 1).unwrap().unwrap();
    api.call_drain(&mut i.store, s).unwrap();
    api.call_handle_open_unusable(&mut i.store, s, 1, ErrorKind::Internal, "cert")
        .unwrap();
    let d = api.call_drain(&mut i.store, s).unwrap();
    match &d.events[..] {
        [switch::Event::Stopped(Some(e))] => assert_eq!(e.kind, ErrorKind::Protocol, "{e:?}"),
        other => panic!("{other:?}"),
    }
}

/// MoltZap's two frame bounds are apart, as the engine's are: a small `max-message-bytes` leaves
/// sending alone, and a small `max-send-bytes` refuses the connect with `limit`.
#[test]
fn moltzap_bounds_what_comes_in_and_what_goes_out_apart() {
    let mut i = runtime().instantiate().unwrap();
    let api = i.engine.agentwire_engine_moltzap().session();
    let credentials = moltzap::Credentials::AgentKey("moltzap_agent_x".into());
    let small_in = moltzap::Config {
        max_message_bytes: Some(64),
        ..defaults::moltzap()
    };
    let small_out = moltzap::Config {
        max_send_bytes: Some(64),
        ..defaults::moltzap()
    };
    // An id prefix whose ids the answers could not carry back (over 256 bytes): refused at once.
    let long_ids = moltzap::Config {
        id_prefix: Some("p".repeat(300)),
        ..defaults::moltzap()
    };
    for (cfg, refused) in [
        (small_in, None),
        (small_out, Some(ErrorKind::Limit)),
        (long_ids, Some(ErrorKind::Invalid)),
    ] {
        let s = api.call_constructor(&mut i.store, &cfg).unwrap();
        api.call_handle_open(&mut i.store, s, 1).unwrap();
        let connect = api.call_connect(&mut i.store, s, 1, &credentials).unwrap();
        assert_eq!(connect.err().map(|e| e.kind), refused, "{cfg:?}");
    }
}
