//! `MoltZapClient` end to end against the MoltZap peer on 127.0.0.1, in both generations and
//! `auto`: registration, handshake, send and fan-out, list windows, errors, timeouts,
//! cancellation, dropped sockets, garbage, pings, a reader that falls behind. Every wait is
//! bounded.

// `MoltZapError` is the engine's error, by value, as the engine returns it.
#![allow(clippy::result_large_err)]

mod common;

use agentwire_core::ErrorKind;
use agentwire_moltzap::register::Registration;
use agentwire_moltzap::session::{AgentMessageList, SendMessage};
use agentwire_moltzap::{Credentials, Event, Generation, GenerationChoice, MoltZapError};
use agentwire_native::moltzap::{register, Events, MoltZapClient, MoltZapConfig};
use agentwire_peer_moltzap::{spawn, Faults, PeerConfig, PeerHandle, Step};
use serde_json::Value;
use std::time::Duration;
use tokio::net::TcpListener;

const WAIT: Duration = Duration::from_secs(5);

async fn peer(cfg: PeerConfig) -> PeerHandle {
    spawn(TcpListener::bind("127.0.0.1:0").await.unwrap(), cfg).unwrap()
}

fn config(generation: GenerationChoice) -> MoltZapConfig {
    let mut cfg = MoltZapConfig::default();
    cfg.session.generation = generation;
    cfg.session.handshake_timeout_ms = 3_000;
    cfg
}

async fn agent(h: &PeerHandle, name: &str) -> String {
    register(&h.http_url(), &Registration::new(name), WAIT)
        .await
        .unwrap()
        .api_key
}

async fn connect(h: &PeerHandle, key: &str, cfg: MoltZapConfig) -> Result<MoltZapClient, MoltZapError> {
    tokio::time::timeout(
        WAIT,
        MoltZapClient::connect(&h.ws_url(), Credentials::AgentKey(key.into()), cfg),
    )
    .await
    .expect("connect is bounded")
}

/// The next event that is not a presence change.
async fn next_event(events: &mut Events) -> Event {
    loop {
        let event = tokio::time::timeout(WAIT, events.recv())
            .await
            .expect("an event within 5 s")
            .expect("the event channel is open");
        if !matches!(event, Event::PresenceChanged { .. }) {
            return event;
        }
    }
}

fn json(text: &str) -> Value {
    serde_json::from_str(text).unwrap()
}

async fn dm_round_trip(peer_gen: Generation, choice: GenerationChoice) {
    let h = peer(PeerConfig::new(peer_gen)).await;
    let (ka, kb) = (agent(&h, "alice").await, agent(&h, "bob").await);
    let a = connect(&h, &ka, config(choice)).await.unwrap();
    let mut b = connect(&h, &kb, config(choice)).await.unwrap();
    assert_eq!(a.info().generation, peer_gen, "{choice:?}");
    let mut inbox = b.events().unwrap();
    assert!(b.events().is_none(), "the event channel is taken once");

    let sent = a
        .request(|s, now| s.messages_send(now, &SendMessage::text_to_agent("bob", "hello bob")))
        .await
        .unwrap();
    let sent = json(&sent);
    match next_event(&mut inbox).await {
        Event::ConversationCreated { .. } => match next_event(&mut inbox).await {
            Event::MessageReceived { data, .. } => assert!(data.contains("hello bob"), "{data}"),
            other => panic!("{other:?}"),
        },
        Event::MessageReceived { data, .. } => assert!(data.contains("hello bob"), "{data}"),
        other => panic!("{other:?}"),
    }
    let conversation = sent["message"]["conversationId"].as_str().unwrap().to_string();
    let list = b
        .request(move |s, now| s.messages_list(now, &conversation, Some(10)))
        .await
        .unwrap();
    assert!(list.contains("hello bob"), "{list}");
    let pong = json(&a.call("system/ping", Some("{}")).await.unwrap());
    assert!(pong["ts"].is_string(), "{pong}");
    a.close().await;
    // After the app's own close(), a call says only that the connection is closed.
    let e = a.call("system/ping", Some("{}")).await.unwrap_err();
    assert_eq!(
        (e.error.kind, e.error.message.as_str()),
        (ErrorKind::Closed, "the connection is closed")
    );
    b.close().await;
    h.shutdown().await;
}

#[tokio::test]
async fn current_generation_round_trip() {
    dm_round_trip(Generation::Current, GenerationChoice::Current).await;
}

#[tokio::test]
async fn released_generation_round_trip() {
    dm_round_trip(Generation::Released, GenerationChoice::Released).await;
}

#[tokio::test]
async fn auto_picks_each_generation() {
    dm_round_trip(Generation::Released, GenerationChoice::Auto).await;
    dm_round_trip(Generation::Current, GenerationChoice::Auto).await;
}

#[tokio::test]
async fn released_hello_carries_the_agent() {
    let h = peer(PeerConfig::new(Generation::Released)).await;
    let key = agent(&h, "carol").await;
    let c = connect(&h, &key, config(GenerationChoice::Released)).await.unwrap();
    let hello = &c.info().hello;
    assert_eq!(
        hello.protocol_version.as_deref(),
        Some(agentwire_moltzap::RELEASED_PROTOCOL)
    );
    assert!(
        hello.agent_id.is_some() && hello.heartbeat_interval_ms.is_some(),
        "{hello:?}"
    );
}

/// A configuration no session could work with is refused before anything opens, as the
/// engine's `SessionConfig::check` words it: a `handshake_timeout_ms` of 0 bounded the upgrade
/// first, and an upgrade not done at once failed `timeout` "no WebSocket upgrade from … within
/// 0 ms", after the TCP connection was made.
#[tokio::test]
async fn a_configuration_check_refuses_before_connecting() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("ws://{}/ws", listener.local_addr().unwrap());
    let mut cfg = config(GenerationChoice::Current);
    cfg.session.handshake_timeout_ms = 0;
    let connecting = MoltZapClient::connect(&url, Credentials::AgentKey("moltzap_agent_x".into()), cfg);
    let e = tokio::time::timeout(WAIT, connecting)
        .await
        .expect("bounded")
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Invalid, "{e}");
    assert_eq!(e.error.message, "handshake_timeout_ms must be at least 1");
    let accepted = tokio::time::timeout(Duration::from_millis(200), listener.accept()).await;
    assert!(accepted.is_err(), "the connect opened a connection");
}

/// A URL is read as every target reads it (`agentwire_core::url::websocket`): a scheme in
/// capitals, `http://` for `ws://` and surrounding spaces connect (they were refused "URL scheme
/// not supported" and "not a ws:// URL"); a port out of range is refused `invalid` before
/// anything is dialed (65536 was read as no port and port 80 dialed; 0 failed `closed`,
/// retryable); user information is refused, not dropped.
#[tokio::test]
async fn urls_are_read_as_a_browser_reads_them() {
    let h = peer(PeerConfig::new(Generation::Current)).await;
    let key = agent(&h, "erin").await;
    let cfg = || config(GenerationChoice::Current);
    let url = format!(" HTTP://{} ", h.ws_url().trim_start_matches("ws://"));
    let c = MoltZapClient::connect(&url, Credentials::AgentKey(key.clone()), cfg())
        .await
        .unwrap();
    assert_eq!(c.info().url, h.ws_url());
    c.close().await;
    let authority = h
        .ws_url()
        .trim_start_matches("ws://")
        .trim_end_matches("/ws")
        .to_owned();
    for (url, wrong) in [
        ("ws://127.0.0.1:65536/ws".to_owned(), "port"),
        ("ws://127.0.0.1:0/ws".to_owned(), "port"),
        (format!("ws://erin:{key}@{authority}/ws"), "user information"),
    ] {
        let connecting = MoltZapClient::connect(&url, Credentials::AgentKey(key.clone()), cfg());
        let e = tokio::time::timeout(WAIT, connecting).await.unwrap().unwrap_err();
        assert_eq!(
            (e.error.kind, e.error.retryable),
            (ErrorKind::Invalid, false),
            "{url}: {e:?}"
        );
        assert!(
            e.error.message.contains(wrong) && !e.error.message.contains(&key),
            "{e:?}"
        );
    }
}

#[tokio::test]
async fn refusals_are_typed() {
    for generation in [Generation::Current, Generation::Released] {
        let h = peer(PeerConfig::new(generation)).await;
        let choice = GenerationChoice::Auto;
        let e = connect(&h, "moltzap_agent_wrong", config(choice)).await.unwrap_err();
        assert_eq!(e.error.kind, ErrorKind::Auth, "{generation:?}: {e:?}");
        let key = agent(&h, "dave").await;
        let c = connect(&h, &key, config(choice)).await.unwrap();
        let e = c.call("no/such/method", Some("{}")).await.unwrap_err();
        assert_eq!(e.error.code, Some(-32601), "{e:?}");
        let e = c.call("system/ping", Some("not json")).await.unwrap_err();
        assert_eq!(e.error.kind, ErrorKind::Invalid);
        let e = register(&h.http_url(), &Registration::new("dave"), WAIT)
            .await
            .unwrap_err();
        assert_eq!((e.error.kind, e.error.code), (ErrorKind::Remote, Some(500)), "{e:?}");
        let e = register(&h.http_url(), &Registration::new("No"), WAIT)
            .await
            .unwrap_err();
        assert_eq!(e.error.kind, ErrorKind::Invalid);
    }
    let e = MoltZapClient::connect(
        "not a url",
        Credentials::AgentKey("k".into()),
        config(GenerationChoice::Current),
    )
    .await
    .unwrap_err();
    assert_eq!(e.error.kind, ErrorKind::Invalid, "{e:?}");
    // A refused upgrade means what core's `Error::refused_upgrade` says, as for RKT.
    for (status, kind, retryable) in [
        (401, ErrorKind::Auth, false),
        (403, ErrorKind::Auth, false),
        (404, ErrorKind::Protocol, false),
        (503, ErrorKind::Remote, true),
    ] {
        let url = common::refusing(status, "/ws").await;
        let e = MoltZapClient::connect(
            &url,
            Credentials::AgentKey("k".into()),
            config(GenerationChoice::Current),
        )
        .await
        .unwrap_err();
        assert_eq!(
            (e.error.kind, e.error.code, e.error.retryable),
            (kind, Some(i64::from(status)), retryable),
            "{e:?}"
        );
    }
}

#[tokio::test]
async fn an_oversized_request_is_refused_locally_and_the_connection_goes_on() {
    let h = peer(PeerConfig::new(Generation::Current)).await;
    let (ka, _) = (agent(&h, "alice").await, agent(&h, "bob").await);
    let a = connect(&h, &ka, config(GenerationChoice::Current)).await.unwrap();
    // 3 MB of text: over the 1 MiB default max_send_bytes, refused by the engine before the socket sees it.
    let huge = SendMessage::text_to_agent("bob", "x".repeat(3 << 20));
    let e = a.request(move |s, now| s.messages_send(now, &huge)).await.unwrap_err();
    assert_eq!(e.error.kind, ErrorKind::Limit, "{e:?}");
    assert!(e.error.message.contains("max_send_bytes 1048576"), "{e:?}");
    let sent = a
        .request(|s, now| s.messages_send(now, &SendMessage::text_to_agent("bob", "small")))
        .await
        .unwrap();
    assert!(sent.contains("small"), "{sent}");
    a.close().await;
    h.shutdown().await;
}

#[tokio::test]
async fn timeouts_and_cancellation_free_their_slot() {
    let h = peer(PeerConfig::new(Generation::Current)).await;
    let key = agent(&h, "erin").await;
    let mut cfg = config(GenerationChoice::Current);
    cfg.session.max_in_flight = 1;
    let c = connect(&h, &key, cfg).await.unwrap();
    h.set_faults(Faults {
        never_answer: vec!["system/ping".into()],
        ..Faults::default()
    });
    let e = c
        .call_with_timeout("system/ping", Some("{}"), Duration::from_millis(200))
        .await
        .unwrap_err();
    assert_eq!(e.error.kind, ErrorKind::Timeout);
    // A call whose future is dropped is cancelled: its slot is free for the next one.
    let gave_up = tokio::time::timeout(Duration::from_millis(100), c.call("system/ping", Some("{}"))).await;
    assert!(gave_up.is_err());
    h.set_faults(Faults::default());
    let pong = tokio::time::timeout(WAIT, c.call("system/ping", Some("{}")))
        .await
        .unwrap();
    assert!(pong.is_ok(), "{pong:?}");
}

#[tokio::test]
async fn a_dropped_socket_is_reported_and_a_new_connect_recovers_the_window() {
    let h = peer(PeerConfig::new(Generation::Current)).await;
    let (ka, kb) = (agent(&h, "frank").await, agent(&h, "gina").await);
    let a = connect(&h, &ka, config(GenerationChoice::Current)).await.unwrap();
    let mut b = connect(&h, &kb, config(GenerationChoice::Current)).await.unwrap();
    let mut events = b.events().unwrap();
    h.set_faults(Faults {
        drop_at: Some(Step::BeforeAnswer("system/ping".into())),
        ..Faults::default()
    });
    let e = b.call("system/ping", Some("{}")).await.unwrap_err();
    assert_eq!(e.error.kind, ErrorKind::Closed);
    assert!(e.error.retryable);
    loop {
        match next_event(&mut events).await {
            Event::Disconnected { code, .. } => {
                assert_eq!(code, 1006);
                break;
            }
            Event::Diagnostic(_) => {}
            other => panic!("{other:?}"),
        }
    }
    assert!(
        tokio::time::timeout(WAIT, events.recv()).await.unwrap().is_none(),
        "the channel ends"
    );
    assert_eq!(
        b.call("system/ping", Some("{}")).await.unwrap_err().error.kind,
        ErrorKind::Closed
    );
    h.set_faults(Faults::default());
    // Missed while away, read back after the new connect.
    a.request(|s, now| s.messages_send(now, &SendMessage::text_to_agent("gina", "while you were out")))
        .await
        .unwrap();
    let b = connect(&h, &kb, config(GenerationChoice::Current)).await.unwrap();
    let window = b
        .request(|s, now| {
            s.agent_message_list(
                now,
                &AgentMessageList {
                    limit: 5,
                    ..Default::default()
                },
            )
        })
        .await
        .unwrap();
    assert!(window.contains("while you were out"), "{window}");
}

#[tokio::test]
async fn garbage_is_a_diagnostic_and_the_session_goes_on() {
    for generation in [Generation::Current, Generation::Released] {
        let h = peer(PeerConfig::new(generation)).await;
        let key = agent(&h, "hank").await;
        let mut c = connect(&h, &key, config(GenerationChoice::Auto)).await.unwrap();
        let mut events = c.events().unwrap();
        h.set_faults(Faults {
            garbage_before_answers: 1,
            ..Faults::default()
        });
        assert!(c.call("system/ping", Some("{}")).await.is_ok());
        match next_event(&mut events).await {
            Event::Diagnostic(e) => assert_eq!(e.error.kind, ErrorKind::Decode, "{e:?}"),
            other => panic!("{other:?}"),
        }
        assert!(c.call("system/ping", Some("{}")).await.is_ok());
    }
}

#[tokio::test]
async fn pings_are_answered_and_missing_ones_reported() {
    // Pings every 300 ms: three missed (a pause of 900 ms on a loaded machine) are reported.
    let cfg = PeerConfig::new(Generation::Current).with_ping_interval(Duration::from_millis(300));
    let h = peer(cfg).await;
    let key = agent(&h, "ivy").await;
    let mut client_cfg = config(GenerationChoice::Current);
    client_cfg.session.ping_interval_ms = Some(300);
    let mut c = connect(&h, &key, client_cfg.clone()).await.unwrap();
    let mut events = c.events().unwrap();
    // Ten ping intervals: the driver answers every ping, the peer keeps the socket.
    let quiet = tokio::time::timeout(Duration::from_millis(3_000), next_event(&mut events)).await;
    assert!(quiet.is_err(), "no event while pings flow: {quiet:?}");
    assert!(c.call("system/ping", Some("{}")).await.is_ok());
    h.set_faults(Faults {
        no_pings: true,
        ..Faults::default()
    });
    let mut c2 = connect(&h, &key, client_cfg).await.unwrap();
    let mut events2 = c2.events().unwrap();
    match next_event(&mut events2).await {
        Event::MissedPings { count } => assert_eq!(count, 3),
        other => panic!("{other:?}"),
    }
}

/// A server that goes silent with the socket open (no pings, `system/ping` never answered: what a
/// half-open connection looks like from the client): the session's idle probe goes unanswered,
/// the session closes, and the driver reports `Disconnected` 1006 and ends the channel; later
/// calls fail `closed`, saying that code and reason.
#[tokio::test]
async fn a_silent_server_is_found_dead_by_the_idle_probe() {
    let h = peer(PeerConfig::new(Generation::Current)).await;
    let key = agent(&h, "sil").await;
    let mut cfg = config(GenerationChoice::Current);
    cfg.session.idle_probe_ms = 200;
    cfg.session.request_timeout_ms = 300;
    let mut c = connect(&h, &key, cfg).await.unwrap();
    let mut events = c.events().unwrap();
    h.set_faults(Faults {
        no_pings: true,
        never_answer: vec!["system/ping".into()],
        ..Faults::default()
    });
    let started = std::time::Instant::now();
    match next_event(&mut events).await {
        Event::Disconnected { code, reason } => {
            assert_eq!(code, 1006);
            assert!(reason.starts_with("no frame from the server for "), "{reason}");
        }
        other => panic!("{other:?}"),
    }
    let took = started.elapsed();
    assert!(took < Duration::from_secs(3), "{took:?}");
    assert!(
        tokio::time::timeout(WAIT, events.recv()).await.unwrap().is_none(),
        "the channel ends"
    );
    let e = c.call("system/ping", Some("{}")).await.unwrap_err();
    assert_eq!(e.error.kind, ErrorKind::Closed);
    assert!(
        e.error
            .message
            .starts_with("the connection is closed (1006 no frame from the server for "),
        "{e:?}"
    );
}

#[tokio::test]
async fn a_reader_that_falls_behind_ends_the_connection() {
    let mut cfg = config(GenerationChoice::Current);
    cfg.event_capacity = 3;
    falls_behind(cfg, 3).await;
}

#[tokio::test]
async fn a_reader_that_falls_behind_in_bytes_ends_the_connection() {
    // Room for 4096 events but one byte: the first push is held alone, the second closes.
    let mut cfg = config(GenerationChoice::Current);
    cfg.event_capacity_bytes = 1;
    falls_behind(cfg, 1).await;
}

/// Six pushes for a reader that reads only after they were sent: `held` of them, then the close.
async fn falls_behind(cfg: MoltZapConfig, held: usize) {
    let h = peer(PeerConfig::new(Generation::Current)).await;
    let (ka, kb) = (agent(&h, "jack").await, agent(&h, "kate").await);
    let a = connect(&h, &ka, config(GenerationChoice::Current)).await.unwrap();
    let mut b = connect(&h, &kb, cfg).await.unwrap();
    let mut events = b.events().unwrap();
    for i in 0..6 {
        let m = SendMessage::text_to_agent("kate", format!("m{i}"));
        a.request(move |s, now| s.messages_send(now, &m)).await.unwrap();
    }
    let mut seen = 0;
    loop {
        match tokio::time::timeout(WAIT, events.recv()).await.unwrap() {
            Some(Event::Disconnected { code, reason }) => {
                assert_eq!(code, 1008);
                assert!(reason.contains("fell behind"), "{reason}");
                break;
            }
            Some(_) => seen += 1,
            None => panic!("ended without Disconnected"),
        }
    }
    assert_eq!(seen, held, "what the channel holds, then the close");
}

/// Pushes are kept until `events()` is taken and read; a client that wants none takes the
/// receiver and drops it: then pushes are discarded and `event_capacity` of them do not end the
/// connection.
#[tokio::test]
async fn a_dropped_event_receiver_discards_pushes_and_keeps_the_connection() {
    let h = peer(PeerConfig::new(Generation::Current)).await;
    let (ka, kb) = (agent(&h, "liam").await, agent(&h, "mona").await);
    let a = connect(&h, &ka, config(GenerationChoice::Current)).await.unwrap();
    let mut cfg = config(GenerationChoice::Current);
    cfg.event_capacity = 3;
    let mut b = connect(&h, &kb, cfg).await.unwrap();
    drop(b.events());
    for i in 0..6 {
        let m = SendMessage::text_to_agent("mona", format!("m{i}"));
        a.request(move |s, now| s.messages_send(now, &m)).await.unwrap();
    }
    // Past the capacity, b still answers: its connection is open. (The peer queued the pushes
    // on b's connection before answering a, and queues b's answer behind them: b reads all six
    // before the answer, whatever the timing.)
    let m = SendMessage::text_to_agent("liam", "still here");
    let sent = tokio::time::timeout(WAIT, b.request(move |s, now| s.messages_send(now, &m))).await;
    assert!(sent.unwrap().is_ok());
}

/// A client that never calls `events()` still has its pushes held, and is disconnected (1008)
/// once `event_capacity` of them wait, as its documentation says.
#[tokio::test]
async fn pushes_never_taken_end_the_connection_at_the_capacity() {
    let h = peer(PeerConfig::new(Generation::Current)).await;
    let (ka, kb) = (agent(&h, "nora").await, agent(&h, "otto").await);
    let a = connect(&h, &ka, config(GenerationChoice::Current)).await.unwrap();
    let mut cfg = config(GenerationChoice::Current);
    cfg.event_capacity = 3;
    let b = connect(&h, &kb, cfg).await.unwrap();
    for i in 0..6 {
        let m = SendMessage::text_to_agent("otto", format!("m{i}"));
        a.request(move |s, now| s.messages_send(now, &m)).await.unwrap();
    }
    // The answer is queued behind the six pushes on b's connection (see above): b reads them
    // first, and the fourth ends the connection.
    let m = SendMessage::text_to_agent("nora", "gone?");
    let sent = tokio::time::timeout(WAIT, b.request(move |s, now| s.messages_send(now, &m))).await;
    assert_eq!(sent.unwrap().unwrap_err().kind(), ErrorKind::Closed);
}

/// `Events::recv` is cancel-safe: read beside a timer that often wins (a `select!` loop), every
/// one of 100 direct messages sent a few hundred microseconds apart still comes, in order.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn events_read_beside_a_timer_lose_nothing() {
    use common::{read_beside_a_timer, Tiny};
    let h = peer(PeerConfig::new(Generation::Current)).await;
    let (ka, kb) = (agent(&h, "hana").await, agent(&h, "ivan").await);
    let a = connect(&h, &ka, config(GenerationChoice::Current)).await.unwrap();
    let mut b = connect(&h, &kb, config(GenerationChoice::Current)).await.unwrap();
    let mut events = b.events().unwrap();
    let sender = tokio::spawn(async move {
        let mut tiny = Tiny(7);
        for n in 0..100 {
            let m = SendMessage::text_to_agent("ivan", format!("m{n}"));
            a.request(move |s, now| s.messages_send(now, &m)).await.unwrap();
            tokio::time::sleep(tiny.next(800)).await;
        }
        a
    });
    let mut bodies = Vec::new();
    let mut timer_won_total = 0;
    while bodies.len() < 100 {
        let (got, timer_won) = read_beside_a_timer!(1, events.recv());
        timer_won_total += timer_won;
        match got.into_iter().next().expect("an event within 20 s") {
            Event::MessageReceived { data, .. } => bodies.push(json(&data)["message"]["parts"][0]["text"].clone()),
            Event::ConversationCreated { .. } | Event::PresenceChanged { .. } => {}
            other => panic!("{other:?}"),
        }
    }
    let want: Vec<_> = (0..100).map(|n| Value::String(format!("m{n}"))).collect();
    assert_eq!(bodies, want, "every message, in order");
    assert!(timer_won_total > 20, "the timer won only {timer_won_total} times");
    sender.await.unwrap().close().await;
    b.close().await;
    h.shutdown().await;
}

/// `MoltZapClient::close` dropped at its first await (polled once, as in a `select!` that
/// another branch wins) still closes: later calls fail `closed`, and the next `close` returns.
#[tokio::test]
async fn a_close_dropped_at_once_still_closes() {
    let h = peer(PeerConfig::new(Generation::Current)).await;
    let key = agent(&h, "jonas").await;
    let c = connect(&h, &key, config(GenerationChoice::Current)).await.unwrap();
    assert!(
        futures_util::FutureExt::now_or_never(c.close()).is_none(),
        "close waits"
    );
    let e = c.call("system/ping", Some("{}")).await.unwrap_err();
    assert_eq!(e.error.kind, ErrorKind::Closed, "{e}");
    tokio::time::timeout(WAIT, c.close())
        .await
        .expect("the next close returns");
    h.shutdown().await;
}

/// A call dropped after its request went out is not undone: the server may carry it out, and
/// its answer is lost (`MoltZapClient`'s "Cancel safety"). A send whose answer the peer holds
/// back 2 s, given up after 200 ms, still reaches its recipient; the connection goes on.
#[tokio::test]
async fn a_call_dropped_after_it_went_out_may_still_be_carried_out() {
    let h = peer(PeerConfig::new(Generation::Current)).await;
    let (ka, kb) = (agent(&h, "lena").await, agent(&h, "mika").await);
    let a = connect(&h, &ka, config(GenerationChoice::Current)).await.unwrap();
    let mut b = connect(&h, &kb, config(GenerationChoice::Current)).await.unwrap();
    let mut events = b.events().unwrap();
    h.set_faults(Faults {
        delay_ms: vec![("messages/send".into(), 2_000)],
        ..Faults::default()
    });
    let m = SendMessage::text_to_agent("mika", "sent anyway");
    let send = a.request(move |s, now| s.messages_send(now, &m));
    assert!(tokio::time::timeout(Duration::from_millis(200), send).await.is_err());
    loop {
        match next_event(&mut events).await {
            Event::MessageReceived { data, .. } => break assert!(data.contains("sent anyway"), "{data}"),
            Event::ConversationCreated { .. } => {}
            other => panic!("{other:?}"),
        }
    }
    h.set_faults(Faults::default());
    assert!(a.call("system/ping", Some("{}")).await.is_ok());
}

/// A text message to otto.
async fn send(a: &MoltZapClient, text: String) -> Result<String, MoltZapError> {
    let m = SendMessage::text_to_agent("otto", text);
    a.request(move |s, now| s.messages_send(now, &m)).await
}

/// Four tasks share one client (`max_in_flight` 4) and give up on their sends after a random
/// 0-3 ms, at every point of the call: every answer that does come is the caller's own, and
/// afterwards no slot is held (four sends at once all succeed).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn calls_given_up_at_random_points_leave_no_slot_and_no_crossed_answer() {
    use common::Tiny;
    let h = peer(PeerConfig::new(Generation::Current)).await;
    let (ka, _) = (agent(&h, "nora").await, agent(&h, "otto").await);
    let mut cfg = config(GenerationChoice::Current);
    cfg.session.max_in_flight = 4;
    let a = std::sync::Arc::new(connect(&h, &ka, cfg).await.unwrap());
    let mut tasks = Vec::new();
    for t in 0..4u64 {
        let a = a.clone();
        tasks.push(tokio::spawn(async move {
            let mut tiny = Tiny(0x77 + t);
            for i in 0..40 {
                let text = format!("t{t}-{i}");
                match tokio::time::timeout(tiny.next(3_000), send(&a, text.clone())).await {
                    Ok(Ok(answer)) => assert!(answer.contains(&format!("\"{text}\"")), "{text}: {answer}"),
                    Ok(Err(e)) => assert_eq!(e.error.kind, ErrorKind::Limit, "{e}"),
                    Err(_) => {}
                }
            }
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
    let sends = (0..4).map(|n| send(&a, format!("after-{n}")));
    for r in futures_util::future::join_all(sends).await {
        r.expect("a free slot");
    }
    a.close().await;
    h.shutdown().await;
}
