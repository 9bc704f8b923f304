//! What the Switch client tests share: a peer with two agents in a room, fast heartbeats, a
//! client configuration, and bounded waits for events.
#![allow(dead_code)]

use agentwire_core::{Backoff, Entropy};
use agentwire_native::switch::{SwitchClient, SwitchOptions};
use agentwire_native::OsEntropy;
use agentwire_peer_switch::{spawn, Agent, Generation, PeerConfig, PeerHandle};
use agentwire_switch::frame::{DomainEvent, Gap};
use agentwire_switch::open::OpenParams;
use agentwire_switch::{ConnectionConfig, Event, SwitchError, Transport};
use std::future::Future;
use std::time::Duration;
use tokio::net::TcpListener;

/// One wait for an event.
pub const WAIT: Duration = Duration::from_secs(8);
/// One whole test.
pub const TEST: Duration = Duration::from_secs(30);

pub async fn bounded<F: Future<Output = ()>>(test: F) {
    tokio::time::timeout(TEST, test)
        .await
        .expect("the test finishes within 30 s");
}

pub fn peer_config(generation: Generation) -> PeerConfig {
    let mut cfg = PeerConfig::new(generation);
    cfg.heartbeat_interval = Duration::from_millis(200);
    cfg.heartbeat_ttl = Duration::from_millis(1_000);
    cfg
}

/// A peer with agents alice and bob in one room.
pub struct World {
    pub h: PeerHandle,
    pub a: Agent,
    pub b: Agent,
    pub room: String,
}

pub async fn world(cfg: PeerConfig) -> World {
    let h = spawn(TcpListener::bind("127.0.0.1:0").await.unwrap(), cfg).unwrap();
    let (a, b) = (h.add_agent("alice"), h.add_agent("bob"));
    let room = h.add_room("lobby", &[&a.id, &b.id]);
    World { h, a, b, room }
}

pub fn config(agent: &Agent, transport: Transport, rooms: &[&str]) -> ConnectionConfig {
    let mut cfg = ConnectionConfig::new(OpenParams::new(agent.id.clone(), OsEntropy.uuid_v4()));
    cfg.transport = transport;
    cfg.open.rooms = rooms.iter().map(|r| r.to_string()).collect();
    cfg.heartbeat_interval_ms = 200;
    cfg.open_timeout_ms = 1_500;
    cfg.beat_timeout_ms = 1_000;
    cfg.backoff = Backoff {
        base_ms: 50,
        max_ms: 400,
        factor: 2.0,
        min_ms: 20,
    };
    cfg
}

/// Bob, connected over the WebSocket with the room declared.
pub async fn bob_in_the_room(w: &World) -> SwitchClient {
    connect(&w.h, &w.b.key, config(&w.b, Transport::WebSocket, &[&w.room]))
        .await
        .unwrap()
}

pub async fn connect(h: &PeerHandle, key: &str, cfg: ConnectionConfig) -> Result<SwitchClient, SwitchError> {
    connect_with(h, key, cfg, SwitchOptions::default()).await
}

pub async fn connect_with(
    h: &PeerHandle,
    key: &str,
    cfg: ConnectionConfig,
    opts: SwitchOptions,
) -> Result<SwitchClient, SwitchError> {
    tokio::time::timeout(WAIT, SwitchClient::connect_with(&h.http_url(), key, cfg, opts))
        .await
        .expect("connect is bounded")
}

pub async fn next(client: &mut SwitchClient) -> Event {
    tokio::time::timeout(WAIT, client.next_event())
        .await
        .expect("an event within the wait")
        .expect("the connection is still on")
}

/// The next domain event; the events skipped on the way are returned too.
pub async fn next_domain(client: &mut SwitchClient, skipped: &mut Vec<Event>) -> (DomainEvent, Option<Gap>) {
    loop {
        match next(client).await {
            Event::Event { event, gap } => return (event, gap),
            Event::Stopped { error } => panic!("stopped: {error:?}"),
            other => skipped.push(other),
        }
    }
}

/// `n` domain events: their bodies and sequences, and the other events seen meanwhile.
pub async fn domain_events(client: &mut SwitchClient, n: usize) -> (Vec<String>, Vec<u64>, Vec<Event>) {
    let (mut bodies, mut seqs, mut other) = (Vec::new(), Vec::new(), Vec::new());
    while bodies.len() < n {
        let (e, _) = next_domain(client, &mut other).await;
        bodies.push(e.message().expect("a message").body);
        seqs.push(e.sequence);
    }
    (bodies, seqs, other)
}

/// Reads until an event matches; returns it.
pub async fn until(client: &mut SwitchClient, what: &str, pred: impl Fn(&Event) -> bool) -> Event {
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        let e = tokio::time::timeout_at(deadline, client.next_event())
            .await
            .unwrap_or_else(|_| panic!("no {what} in time"))
            .unwrap_or_else(|| panic!("the connection ended before {what}"));
        if pred(&e) {
            return e;
        }
    }
}

/// Nothing more arrives for a while (domain events, evictions, disconnects).
pub async fn quiet(client: &mut SwitchClient, ms: u64) -> Vec<Event> {
    let mut seen = Vec::new();
    let deadline = tokio::time::Instant::now() + Duration::from_millis(ms);
    while let Ok(Some(e)) = tokio::time::timeout_at(deadline, client.next_event()).await {
        seen.push(e);
    }
    seen
}

pub fn is_disruption(e: &Event) -> bool {
    matches!(
        e,
        Event::Event { .. } | Event::Evicted(_) | Event::Disconnected { .. } | Event::Stopped { .. }
    )
}

pub fn posts(w: &World, bodies: &[&str]) {
    for b in bodies {
        w.h.post_as_user(&w.room, "carol", b);
    }
}
