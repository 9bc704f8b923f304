//! Config records with every optional field absent (the engine's defaults), to start from with
//! struct update syntax: `rkt::Config { ttl_s: Some(10), ..defaults::rkt() }`. And the RKT
//! server's side of a scripted exchange, for tests and the bench that run without a socket.

use crate::bindings::exports::agentwire::engine::{moltzap, rkt, switch};

pub fn rkt() -> rkt::Config {
    rkt::Config {
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
    }
}

/// RKT request options with nothing but `streamed` set.
pub fn rkt_request(streamed: bool) -> rkt::RequestOptions {
    rkt::RequestOptions {
        streamed,
        priority: None,
        ttl_s: None,
        to: None,
        context: None,
    }
}

pub fn moltzap() -> moltzap::Config {
    moltzap::Config {
        generation: None,
        request_timeout_ms: None,
        max_in_flight: None,
        handshake_timeout_ms: None,
        ping_interval_ms: None,
        idle_probe_ms: None,
        max_message_bytes: None,
        max_send_bytes: None,
        id_prefix: None,
    }
}

/// Agent `agent_id` on connection `connection_id`, no rooms.
pub fn switch(agent_id: &str, connection_id: &str) -> switch::Config {
    switch::Config {
        agent_id: agent_id.to_owned(),
        connection_id: connection_id.to_owned(),
        rooms: vec![],
        scope: None,
        filter: None,
        start_after: None,
        expected_generation: None,
        spawn_capable: None,
        protocol: None,
        transport: None,
        max_reconnect_attempts: None,
        connect_attempts: None,
        backoff: None,
        open_timeout_ms: None,
        heartbeat_interval_ms: None,
        missed_heartbeats: None,
        beat_timeout_ms: None,
        stream_idle_timeout_ms: None,
        max_queued_events: None,
        max_queued_bytes: None,
        max_message_bytes: None,
        max_depth: None,
        client: None,
        client_version: None,
    }
}

/// A header of an RKT message (`None` when absent).
fn header<'a>(wire: &'a str, name: &str) -> Option<&'a str> {
    wire.lines()
        .take_while(|l| !l.is_empty())
        .find_map(|l| l.strip_prefix(name).and_then(|r| r.strip_prefix(": ")))
}

/// The server's `kind` answer (`HELLO_ACK`, `RESPONSE`, ...) with `body` to the client's message
/// `wire`: `Reply-To` its `Message-ID`, in its session.
pub fn rkt_reply(wire: &str, kind: &str, body: &str) -> String {
    format!(
        "RKT/1.0 {kind}\nVersion: 1\nMessage-ID: 01960000-0000-7000-ab12-000000000002\nReply-To: {}\nSession-ID: {}\nTimestamp: 2026-06-28T12:00:00Z\nFrom: rkt://scripted\n\n{body}",
        header(wire, "Message-ID").unwrap_or_default(),
        header(wire, "Session-ID").unwrap_or_default(),
    )
}
