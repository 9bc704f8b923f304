//! Bad input through the component: every session takes garbage text and bytes as values
//! (diagnostic events, errors), never a trap, and stays usable. No sockets: the inputs go
//! straight in, as a host would pass what a hostile server sent.

use super::runtime;
use agentwire_component_host::bindings::exports::agentwire::engine::{moltzap, rkt, switch};
use agentwire_component_host::defaults::{self, rkt_reply};
use agentwire_component_host::{ErrorKind, Outgoing};

/// Deterministic garbage: random bytes, broken frames of each protocol, deep nesting, huge ids.
pub(super) fn inputs() -> Vec<Vec<u8>> {
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut next = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let mut out: Vec<Vec<u8>> = [
        "",
        "{",
        "[]",
        "null",
        "RKT/1.0 RESPONSE\n\n",
        "RKT/1.0 HELLO_ACK\nVersion: 1\n\n{\"agreed_version\":99}",
        r#"{"jsonrpc":"2.0","id":"aw-1","result":{}}"#,
        r#"{"jsonrpc":"2.0","method":"messages/received","params":{"message":7}}"#,
        r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"x"}}"#,
        r#"{"event":"connection_state","data":{"cursor":-1}}"#,
        r#"{"event":"message","data":{"sequence":18446744073709551615},"id":1e400}"#,
        "\u{feff}{\"type\":\"\u{0}\"}",
    ]
    .iter()
    .map(|s| s.as_bytes().to_vec())
    .collect();
    out.push(format!("{}{}", "[".repeat(10_000), "]".repeat(10_000)).into_bytes());
    out.push(format!(r#"{{"jsonrpc":"2.0","id":"{}","result":1}}"#, "x".repeat(20_000)).into_bytes());
    for len in [1, 7, 64, 513, 4096] {
        for _ in 0..20 {
            out.push((0..len).map(|_| next() as u8).collect());
        }
    }
    out
}

/// Feeds every input as text (lossy UTF-8) and as bytes, draining after each: no call traps.
fn feed(mut step: impl FnMut(u64, &[u8]) -> wasmtime::Result<()>) {
    for (n, input) in inputs().iter().enumerate() {
        step(1_000 + n as u64, input).unwrap_or_else(|e| panic!("input {n} trapped: {e:?}"));
    }
}

#[test]
fn rkt_takes_garbage_as_values() {
    let mut i = runtime().instantiate().unwrap();
    let api = i.engine.agentwire_engine_rkt().session();
    let config = defaults::rkt();
    let s = api.call_constructor(&mut i.store, &config).unwrap();
    api.call_handle_open(&mut i.store, s, 1_000).unwrap();
    // Ready first, so garbage meets the replies' and streams' paths too.
    let Some(Outgoing::Text(hello)) = api.call_poll_transmit(&mut i.store, s).unwrap() else {
        panic!("no HELLO")
    };
    let ack = rkt_reply(&hello, "HELLO_ACK", r#"{"agreed_version":1,"session_timeout":300}"#);
    api.call_handle_text(&mut i.store, s, 1_000, &ack).unwrap();
    assert!(matches!(
        api.call_poll_event(&mut i.store, s).unwrap(),
        Some(rkt::Event::Ready(_))
    ));
    let options = defaults::rkt_request(true);
    let (mut text_errors, mut closed) = (0, false);
    feed(|now, input| {
        // A stream open, so replies and chunks have somewhere to go.
        if !closed {
            api.call_request(&mut i.store, s, now, "echo", None, &options)?.ok();
        }
        api.call_handle_text(&mut i.store, s, now, &String::from_utf8_lossy(input))?;
        while api.call_poll_transmit(&mut i.store, s)?.is_some() {}
        while let Some(e) = api.call_poll_event(&mut i.store, s)? {
            text_errors += usize::from(matches!(e, rkt::Event::Error(_)));
            closed |= matches!(e, rkt::Event::Closed(_));
        }
        api.call_handle_binary(&mut i.store, s, now, input)?;
        while api.call_poll_transmit(&mut i.store, s)?.is_some() {}
        while api.call_poll_event(&mut i.store, s)?.is_some() {}
        api.call_handle_timeout(&mut i.store, s, now)
    });
    assert!(text_errors >= 100, "garbage text was reported: {text_errors}");
    // Still a working session: a request goes out; or, if the garbage closed it, a request
    // fails as a value.
    let sent = api
        .call_request(&mut i.store, s, 9_000, "echo", None, &options)
        .unwrap();
    if closed {
        assert!(sent.is_err(), "a request on a closed session: {sent:?}");
    } else {
        sent.unwrap();
        assert!(api.call_poll_transmit(&mut i.store, s).unwrap().is_some());
    }
    s.resource_drop(&mut i.store).unwrap();
}

#[test]
fn moltzap_takes_garbage_as_values_and_still_connects() {
    let mut i = runtime().instantiate().unwrap();
    let api = i.engine.agentwire_engine_moltzap().session();
    let config = moltzap::Config {
        generation: Some(moltzap::GenerationChoice::Auto),
        ..defaults::moltzap()
    };
    let s = api.call_constructor(&mut i.store, &config).unwrap();
    api.call_handle_open(&mut i.store, s, 1_000).unwrap();
    // Connected first, so garbage meets the responses' and pushes' paths.
    let credentials = moltzap::Credentials::AgentKey("moltzap_agent_x".into());
    let id = api.call_connect(&mut i.store, s, 1_000, &credentials).unwrap().unwrap();
    while api.call_poll_transmit(&mut i.store, s).unwrap().is_some() {}
    let hello = format!(r#"{{"jsonrpc":"2.0","id":"{id}","result":{{}}}}"#);
    api.call_handle_text(&mut i.store, s, 1_000, &hello).unwrap();
    assert!(matches!(
        api.call_poll_event(&mut i.store, s).unwrap(),
        Some(moltzap::Event::Connected(_))
    ));
    let mut diagnostics = 0;
    feed(|now, input| {
        // A request pending, so a response-shaped garbage frame has an id to meet.
        api.call_call(&mut i.store, s, now, "agents/list", None, None)?.ok();
        api.call_handle_text(&mut i.store, s, now, &String::from_utf8_lossy(input))?;
        api.call_handle_binary(&mut i.store, s, now, input)?;
        while api.call_poll_transmit(&mut i.store, s)?.is_some() {}
        while let Some(e) = api.call_poll_event(&mut i.store, s)? {
            diagnostics += usize::from(matches!(e, moltzap::Event::Diagnostic(_)));
        }
        Ok(())
    });
    assert!(diagnostics >= 100, "garbage was reported: {diagnostics}");
    // Still a working session.
    assert_eq!(api.call_state(&mut i.store, s).unwrap(), moltzap::State::Ready);
    api.call_call(&mut i.store, s, 9_000, "agents/list", None, None)
        .unwrap()
        .unwrap();
    assert!(api.call_poll_transmit(&mut i.store, s).unwrap().is_some());
    s.resource_drop(&mut i.store).unwrap();
}

pub(super) fn switch_config(transport: switch::Transport) -> switch::Config {
    switch::Config {
        start_after: Some(0),
        transport: Some(transport),
        open_timeout_ms: Some(3_600_000),
        heartbeat_interval_ms: Some(3_600_000),
        stream_idle_timeout_ms: Some(3_600_000),
        ..defaults::switch(
            "e9dc227d-d507-4a61-98ac-65eb81f2f27a",
            "19209fad-88d2-4353-b857-10454fb40fa5",
        )
    }
}

/// The captured `connection_state` of a switch-core 0.19 server, as its SSE frame; its `data` is
/// the WebSocket frame's too.
pub(super) fn connection_state_sse() -> String {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../tests/vectors/switch-0.19/connection_state.sse"
    );
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

#[test]
fn switch_takes_garbage_as_values_on_the_websocket_and_the_sse_stream() {
    for transport in [switch::Transport::Websocket, switch::Transport::Sse] {
        let mut i = runtime().instantiate().unwrap();
        let api = i.engine.agentwire_engine_switch().session();
        let s = api.call_constructor(&mut i.store, &switch_config(transport)).unwrap();
        api.call_start(&mut i.store, s, 1_000).unwrap().unwrap();
        while api.call_poll_transmit(&mut i.store, s).unwrap().is_some() {}
        api.call_handle_open(&mut i.store, s, 1_000).unwrap();
        // Live first, so garbage meets the domain events' path.
        let sse = connection_state_sse();
        if transport == switch::Transport::Sse {
            api.call_handle_bytes(&mut i.store, s, 1_000, sse.as_bytes()).unwrap();
        } else {
            let data = sse.lines().find_map(|l| l.strip_prefix("data: ")).unwrap();
            let frame = format!(r#"{{"event":"connection_state","data":{data}}}"#);
            api.call_handle_text(&mut i.store, s, 1_000, &frame).unwrap();
        }
        let mut connected = false;
        while let Some(e) = api.call_poll_event(&mut i.store, s).unwrap() {
            connected |= matches!(e, switch::Event::Connected(_));
        }
        assert!(connected, "{transport:?}: live before the garbage");
        let mut diagnostics = 0;
        feed(|now, input| {
            match transport {
                switch::Transport::Sse => {
                    // Raw, then as the data of a message event (one line of it).
                    api.call_handle_bytes(&mut i.store, s, now, input)?;
                    api.call_handle_bytes(&mut i.store, s, now, b"\n\n")?;
                    let line = String::from_utf8_lossy(input).replace(['\r', '\n'], " ");
                    let frame = format!("event: message\ndata: {line}\n\n");
                    api.call_handle_bytes(&mut i.store, s, now, frame.as_bytes())?;
                }
                _ => api.call_handle_text(&mut i.store, s, now, &String::from_utf8_lossy(input))?,
            }
            while api.call_poll_transmit(&mut i.store, s)?.is_some() {}
            while let Some(e) = api.call_poll_event(&mut i.store, s)? {
                diagnostics += usize::from(matches!(e, switch::Event::Diagnostic(_)));
            }
            Ok(())
        });
        assert!(diagnostics >= 50, "{transport:?}: garbage was reported: {diagnostics}");
        // Rooms no open URL can carry are refused as a value, not kept for the next reopen.
        for bad in [vec!["a,b".to_owned()], vec![String::new()], vec!["r".to_owned(); 257]] {
            let e = api.call_set_declared_rooms(&mut i.store, s, &bad).unwrap().unwrap_err();
            assert_eq!(e.kind, ErrorKind::Invalid, "{transport:?}");
        }
        let state = api.call_state(&mut i.store, s).unwrap();
        assert_ne!(state, switch::State::Stopped, "{transport:?}");
        s.resource_drop(&mut i.store).unwrap();
    }
}

#[test]
fn switch_operation_functions_take_garbage_as_values() {
    let mut i = runtime().instantiate().unwrap();
    let ops = i.engine.agentwire_engine_switch();
    let post = ops
        .call_op_request(&mut i.store, "a", None, "post_message", r#"{"body":"x"}"#)
        .unwrap()
        .unwrap();
    let mut refused = 0;
    for input in inputs() {
        let text = String::from_utf8_lossy(&input);
        refused += usize::from(ops.call_op_result(&mut i.store, &post, 200, &text).unwrap().is_err());
        refused += usize::from(
            ops.call_op_request(&mut i.store, &text, Some(&text), &text, &text)
                .unwrap()
                .is_err(),
        );
    }
    // No call trapped; nearly all are refused (a few inputs are well-formed answers).
    assert!(refused > 2 * inputs().len() - 10, "{refused} of {}", 2 * inputs().len());
}
