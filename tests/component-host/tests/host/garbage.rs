//! Bad input through the component: every session takes garbage text and bytes as values
//! (diagnostic events, errors), never a trap, and stays usable. No sockets: the inputs go
//! straight in, as a host would pass what a hostile server sent.

use super::runtime;
use agentwire_component_host::bindings::exports::agentwire::engine::{moltzap, rkt, switch};

/// Deterministic garbage: random bytes, broken frames of each protocol, deep nesting, huge ids.
fn inputs() -> Vec<Vec<u8>> {
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
    let config = rkt::Config {
        user_agent: None,
        sender: None,
        capabilities: vec![],
        ttl_s: None,
        max_message_size: None,
        max_in_flight: None,
        max_stream_buffer: None,
        max_stream_buffer_bytes: None,
        handshake_timeout_ms: None,
        authorization: None,
        keepalive: None,
    };
    let s = api.call_constructor(&mut i.store, &config).unwrap();
    api.call_handle_open(&mut i.store, s, 1_000).unwrap();
    let mut errors = 0;
    feed(|now, input| {
        api.call_handle_text(&mut i.store, s, now, &String::from_utf8_lossy(input))?;
        api.call_handle_binary(&mut i.store, s, now, input)?;
        while api.call_poll_transmit(&mut i.store, s)?.is_some() {}
        while let Some(e) = api.call_poll_event(&mut i.store, s)? {
            errors += usize::from(matches!(e, rkt::Event::Error(_) | rkt::Event::Closed(_)));
        }
        api.call_handle_timeout(&mut i.store, s, now)
    });
    assert!(errors > 0, "garbage was reported");
    api.call_state(&mut i.store, s).unwrap();
    s.resource_drop(&mut i.store).unwrap();
}

#[test]
fn moltzap_takes_garbage_as_values_and_still_connects() {
    let mut i = runtime().instantiate().unwrap();
    let api = i.engine.agentwire_engine_moltzap().session();
    let config = moltzap::Config {
        generation: Some(moltzap::GenerationChoice::Auto),
        request_timeout_ms: None,
        max_in_flight: None,
        handshake_timeout_ms: None,
        ping_interval_ms: None,
        max_message_bytes: None,
        id_prefix: None,
    };
    let s = api.call_constructor(&mut i.store, &config).unwrap();
    api.call_handle_open(&mut i.store, s, 1_000).unwrap();
    let mut diagnostics = 0;
    feed(|now, input| {
        api.call_handle_text(&mut i.store, s, now, &String::from_utf8_lossy(input))?;
        api.call_handle_binary(&mut i.store, s, now, input)?;
        while api.call_poll_transmit(&mut i.store, s)?.is_some() {}
        while let Some(e) = api.call_poll_event(&mut i.store, s)? {
            diagnostics += usize::from(matches!(e, moltzap::Event::Diagnostic(_)));
        }
        Ok(())
    });
    assert!(diagnostics > 0, "garbage was reported");
    // Still a working session: a connect goes out.
    let credentials = moltzap::Credentials::AgentKey("moltzap_agent_x".into());
    api.call_connect(&mut i.store, s, 5_000, &credentials).unwrap().unwrap();
    assert!(api.call_poll_transmit(&mut i.store, s).unwrap().is_some());
    s.resource_drop(&mut i.store).unwrap();
}

#[test]
fn switch_takes_garbage_as_values() {
    let mut i = runtime().instantiate().unwrap();
    let api = i.engine.agentwire_engine_switch().session();
    let config = switch::Config {
        agent_id: "agent".into(),
        connection_id: "19209fad-88d2-4353-b857-10454fb40fa5".into(),
        rooms: vec![],
        scope: None,
        filter: None,
        start_after: None,
        transport: Some(switch::Transport::Auto),
        max_reconnect_attempts: None,
        open_timeout_ms: None,
        heartbeat_interval_ms: None,
        missed_heartbeats: None,
        beat_timeout_ms: None,
        stream_idle_timeout_ms: None,
        max_queued_events: None,
        client: None,
        client_version: None,
    };
    let s = api.call_constructor(&mut i.store, &config).unwrap();
    api.call_start(&mut i.store, s, 1_000).unwrap().unwrap();
    while api.call_poll_transmit(&mut i.store, s).unwrap().is_some() {}
    api.call_handle_open(&mut i.store, s, 1_000).unwrap();
    feed(|now, input| {
        api.call_handle_text(&mut i.store, s, now, &String::from_utf8_lossy(input))?;
        api.call_handle_bytes(&mut i.store, s, now, input)?;
        api.call_handle_http_response(&mut i.store, s, now, now, 200, &String::from_utf8_lossy(input))?;
        api.call_handle_open_failed(&mut i.store, s, now, Some(500), &String::from_utf8_lossy(input))?;
        while api.call_poll_transmit(&mut i.store, s)?.is_some() {}
        while api.call_poll_event(&mut i.store, s)?.is_some() {}
        api.call_handle_timeout(&mut i.store, s, now)
    });
    // The free functions take garbage too.
    let ops = i.engine.agentwire_engine_switch();
    for input in inputs() {
        let text = String::from_utf8_lossy(&input);
        let _ = ops.call_op_result(&mut i.store, 200, &text).unwrap();
        let _ = ops
            .call_op_request(&mut i.store, &text, Some(&text), &text, &text)
            .unwrap();
    }
    api.call_state(&mut i.store, s).unwrap();
    s.resource_drop(&mut i.store).unwrap();
}
