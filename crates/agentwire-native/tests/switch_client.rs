//! `SwitchClient` end to end against the Switch test peer on 127.0.0.1, in both generations:
//! the WebSocket and SSE transports and `auto`, fan-out, resume after a restart (with and
//! without lost numbering), takeover, operations and their typed errors and their bound, reading
//! an event already waiting, a wrong key. The faults are in `switch_faults.rs`. Every test is
//! bounded; heartbeats are 200 ms.

// `SwitchError` is the engine's error, by value, as the engine returns it.
#![allow(clippy::result_large_err)]

mod switch_common;

use agentwire_core::ErrorKind;
use agentwire_native::switch::{self, SwitchClient, SwitchOptions};
use agentwire_peer_switch::{Agent, Generation};
use agentwire_switch::frame::EvictionCode;
use agentwire_switch::ops::{ConnectToRoom, PostMessage};
use agentwire_switch::{Event, State, Transport, Wire};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;
use switch_common::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn websocket_post_message_reaches_another_agent() {
    bounded(async {
        let w = world(peer_config(Generation::Current)).await;
        let a = connect(&w.h, &w.a.key, config(&w.a, Transport::WebSocket, &[]))
            .await
            .unwrap();
        let mut b = bob_in_the_room(&w).await;
        match next(&mut b).await {
            Event::Connected { wire, resumed, state } => {
                assert_eq!((wire, resumed), (Wire::WebSocket, false));
                assert_eq!(state.rooms, vec![w.room.clone()]);
                assert_eq!(b.attached().connection_id, b.connection_id());
            }
            other => panic!("{other:?}"),
        }
        let status = b.status();
        assert_eq!((status.state, status.wire), (State::Live, Wire::WebSocket));
        assert!(status.generation.is_some(), "the current generation issues one");
        assert_eq!(status.rooms, vec![w.room.clone()]);

        let ctx = a.call(&ConnectToRoom::new(&w.room)).await.unwrap();
        assert_eq!(ctx.room_id, w.room);
        let posted = a.call(&PostMessage::new("hello bob")).await.unwrap();
        assert!(!posted.event_id.is_empty());
        let (event, gap) = next_domain(&mut b, &mut Vec::new()).await;
        assert!(gap.is_none());
        assert_eq!(event.room_id, w.room);
        let m = event.message().unwrap();
        assert_eq!(m.body, "hello bob");
        assert_eq!(b.status().cursor, Some(event.sequence));
        a.close().await;
        b.close().await;
    })
    .await;
}

/// With the event channel taken out of the client, one agent waits for its events while its
/// own operations run (`next_event`'s `&mut self` cannot sit beside `call`'s `&self`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn events_taken_out_are_read_while_operations_run() {
    bounded(async {
        let w = world(peer_config(Generation::Current)).await;
        let mut b = bob_in_the_room(&w).await;
        let mut events = b.events().unwrap();
        assert!(
            b.events().is_none() && b.next_event().await.is_none(),
            "handed out once"
        );
        assert!(matches!(events.recv().await, Some(Event::Connected { .. })));
        b.call(&ConnectToRoom::new(&w.room)).await.unwrap();
        let message = PostMessage::new("to myself");
        let (mut posted, mut seen) = (false, None);
        {
            let post = b.call(&message);
            tokio::pin!(post);
            while !posted || seen.is_none() {
                tokio::select! {
                    r = &mut post, if !posted => posted = r.is_ok(),
                    e = events.recv() => if let Some(Event::Event { event, .. }) = e {
                        seen = event.message().ok().map(|m| m.body);
                    },
                }
            }
        }
        assert_eq!(seen.as_deref(), Some("to myself"));
        b.close().await;
    })
    .await;
}

/// A client shared by `Arc` between tasks is closed by any holder (`close(&self)`): the
/// connection stops, the events handed out end, and a second `close` returns at once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_shared_client_is_closed_by_any_holder() {
    bounded(async {
        let w = world(peer_config(Generation::Current)).await;
        let mut b = bob_in_the_room(&w).await;
        let mut events = b.events().unwrap();
        assert!(matches!(events.recv().await, Some(Event::Connected { .. })));
        let b = std::sync::Arc::new(b);
        let other = b.clone();
        tokio::spawn(async move { other.close().await }).await.unwrap();
        assert!(b.is_stopped());
        while let Some(e) = events.recv().await {
            assert!(matches!(e, Event::Disconnected { .. } | Event::Stopped { .. }), "{e:?}");
        }
        tokio::time::timeout(std::time::Duration::from_millis(100), b.close())
            .await
            .unwrap();
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restart_resumes_with_exactly_the_missed_events() {
    bounded(async {
        let w = world(peer_config(Generation::Current)).await;
        let mut b = bob_in_the_room(&w).await;
        posts(&w, &["m1", "m2", "m3"]);
        let (bodies, _, _) = domain_events(&mut b, 3).await;
        assert_eq!(bodies, ["m1", "m2", "m3"]);
        w.h.restart(false);
        match until(&mut b, "the disconnect", |e| matches!(e, Event::Disconnected { .. })).await {
            Event::Disconnected { code, reason, .. } => assert_eq!(code, Some(1012), "{reason:?}"),
            _ => unreachable!(),
        }
        posts(&w, &["m4", "m5", "m6"]);
        let (bodies, seqs, other) = domain_events(&mut b, 3).await;
        assert_eq!(bodies, ["m4", "m5", "m6"], "the missed events, in order");
        assert!(seqs.windows(2).all(|s| s[0] < s[1]), "{seqs:?}");
        assert!(
            other
                .iter()
                .any(|e| matches!(e, Event::Connected { resumed: true, .. })),
            "{other:?}"
        );
        let rest = quiet(&mut b, 500).await;
        assert!(
            !rest.iter().any(|e| matches!(e, Event::Event { .. })),
            "no duplicates: {rest:?}"
        );
        b.close().await;
    })
    .await;
}

/// `reconnect_now` cuts a backoff short: after a restart, with a backoff of a minute, the client
/// is back within the test's wait.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reconnect_now_cuts_the_backoff_short() {
    bounded(async {
        let w = world(peer_config(Generation::Current)).await;
        let mut cfg = config(&w.b, Transport::WebSocket, &[&w.room]);
        cfg.backoff = agentwire_core::Backoff {
            base_ms: 60_000,
            max_ms: 60_000,
            factor: 1.0,
            min_ms: 60_000,
        };
        let mut b = connect(&w.h, &w.b.key, cfg).await.unwrap();
        until(&mut b, "the attach", |e| matches!(e, Event::Connected { .. })).await;
        b.reconnect_now(); // live: nothing
        w.h.restart(false);
        match until(&mut b, "the disconnect", |e| matches!(e, Event::Disconnected { .. })).await {
            Event::Disconnected { retry_in_ms, .. } => assert!(retry_in_ms >= 60_000, "{retry_in_ms}"),
            _ => unreachable!(),
        }
        b.reconnect_now();
        match until(&mut b, "the reattach", |e| matches!(e, Event::Connected { .. })).await {
            Event::Connected { resumed, .. } => assert!(resumed),
            _ => unreachable!(),
        }
        b.close().await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restart_that_lost_the_numbering_attaches_a_gap() {
    bounded(async {
        let w = world(peer_config(Generation::Current)).await;
        let mut b = bob_in_the_room(&w).await;
        posts(&w, &["m1", "m2", "m3"]);
        domain_events(&mut b, 3).await;
        w.h.restart(true);
        until(&mut b, "the resumed attach", |e| {
            matches!(e, Event::Connected { resumed: true, .. })
        })
        .await;
        posts(&w, &["after"]);
        let (event, gap) = next_domain(&mut b, &mut Vec::new()).await;
        assert_eq!(event.message().unwrap().body, "after");
        let gap = gap.expect("the gap rides on the next event");
        // As switch-core's gap_restart.sse: from_sequence and resumed_at are both the head at
        // the reopen (0: nothing was posted between the restart and the reopen), not the cursor.
        assert_eq!((gap.from_sequence, gap.resumed_at), (0, 0));
        assert_eq!(gap.all_rooms, Some(true));
        assert!(
            event.sequence > gap.resumed_at,
            "{} after {}",
            event.sequence,
            gap.resumed_at
        );
        b.close().await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sse_against_a_released_peer_stays_alive_on_beats() {
    bounded(async {
        let w = world(peer_config(Generation::Released)).await;
        let mut b = connect(&w.h, &w.b.key, config(&w.b, Transport::Sse, &[&w.room]))
            .await
            .unwrap();
        match next(&mut b).await {
            Event::Connected { wire, state, .. } => {
                assert_eq!(wire, Wire::Sse);
                assert!(state.generation.is_none(), "0.19 has no generation");
            }
            other => panic!("{other:?}"),
        }
        // Three TTLs without a stream byte from us: only the beats keep it.
        let meanwhile = quiet(&mut b, 3_000).await;
        assert!(!meanwhile.iter().any(is_disruption), "{meanwhile:?}");
        assert_eq!(w.h.connections(&w.b.id), 1);
        posts(&w, &["over sse"]);
        let (event, _) = next_domain(&mut b, &mut Vec::new()).await;
        assert_eq!(event.message().unwrap().body, "over sse");
        assert_eq!(b.status().wire, Wire::Sse);
        b.close().await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn auto_ends_on_sse_against_a_released_peer() {
    bounded(async {
        let w = world(peer_config(Generation::Released)).await;
        let mut b = connect(&w.h, &w.b.key, config(&w.b, Transport::Auto, &[&w.room]))
            .await
            .unwrap();
        assert_eq!(b.status().wire, Wire::Sse);
        let first = until(&mut b, "connected", |e| matches!(e, Event::Connected { .. })).await;
        assert!(
            matches!(
                first,
                Event::Connected {
                    wire: Wire::Sse,
                    resumed: false,
                    ..
                }
            ),
            "{first:?}"
        );
        posts(&w, &["auto"]);
        let (event, _) = next_domain(&mut b, &mut Vec::new()).await;
        assert_eq!(event.message().unwrap().body, "auto");
        b.close().await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_takeover_stops_the_first_client() {
    bounded(async {
        for (generation, transport) in [
            (Generation::Current, Transport::WebSocket),
            (Generation::Released, Transport::Sse),
        ] {
            let w = world(peer_config(generation)).await;
            let cfg = config(&w.b, transport, &[&w.room]);
            let mut first = connect(&w.h, &w.b.key, cfg.clone()).await.unwrap();
            let second = connect(&w.h, &w.b.key, cfg).await.unwrap();
            let evicted = until(&mut first, "the eviction", |e| matches!(e, Event::Evicted(_))).await;
            let Event::Evicted(ev) = evicted else { unreachable!() };
            assert_eq!(ev.effective_code(), EvictionCode::TakenOver, "{transport:?}");
            match next(&mut first).await {
                Event::Stopped { error: Some(e) } => {
                    assert_eq!(e.code.as_deref(), Some("taken_over"), "{transport:?}");
                    assert!(!e.retryable);
                }
                other => panic!("{transport:?}: {other:?}"),
            }
            let end = tokio::time::timeout(WAIT, first.next_event()).await.unwrap();
            assert!(end.is_none(), "nothing after Stopped");
            assert!(first.is_stopped());
            assert_eq!(second.status().state, State::Live);
            second.close().await;
        }
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn operations_and_their_typed_errors() {
    bounded(async {
        let w = world(peer_config(Generation::Current)).await;
        let a = connect(&w.h, &w.a.key, config(&w.a, Transport::WebSocket, &[]))
            .await
            .unwrap();
        let catalog = a.list_ops().await.unwrap();
        assert!(catalog.operations.contains_key("post_message"));
        assert!(catalog.operations.contains_key("connect_to_room"));

        let e = a.call(&PostMessage::new("too early")).await.unwrap_err();
        assert_eq!((e.kind, e.status), (ErrorKind::Invalid, Some(400)), "{e}");
        let e = a.op("no_such_operation", "{}").await.unwrap_err();
        assert_eq!((e.kind, e.status), (ErrorKind::Invalid, Some(404)), "{e}");
        let e = a.op("../x", "{}").await.unwrap_err();
        assert_eq!((e.kind, e.status), (ErrorKind::Invalid, None), "refused before sending");

        a.call(&ConnectToRoom::new(&w.room)).await.unwrap();
        let raw = a.op("post_message", r#"{"body":"raw"}"#).await.unwrap();
        assert!(raw.get().contains("event_id"), "{}", raw.get());

        let sub = a.subscribe(&w.room, true).await.unwrap();
        assert!(sub.rooms.contains(&w.room), "{sub:?}");
        let unsub = a.unsubscribe(&w.room).await.unwrap();
        assert!(!unsub.rooms.contains(&w.room), "{unsub:?}");
        let placed = a
            .placements(&BTreeMap::from([("session-1".to_owned(), w.room.clone())]))
            .await
            .unwrap();
        assert_eq!(placed.placements.get("session-1"), Some(&w.room));

        // Without a client.
        let catalog = switch::list_ops(&w.h.http_url(), &w.a.key, &w.a.id, switch::DEFAULT_OP_TIMEOUT)
            .await
            .unwrap();
        assert!(catalog.operations.contains_key("post_message"));
        let e = switch::op(
            &w.h.http_url(),
            "sk_switch_wrong",
            &w.a.id,
            None,
            "list_rooms",
            "{}",
            switch::DEFAULT_OP_TIMEOUT,
        )
        .await
        .unwrap_err();
        assert_eq!((e.kind, e.status), (ErrorKind::Auth, Some(401)), "{e}");
        let e = switch::op(
            "https://127.0.0.1:1",
            "k",
            "a",
            None,
            "list_rooms",
            "{}",
            switch::DEFAULT_OP_TIMEOUT,
        )
        .await
        .unwrap_err();
        // https:// is TLS (tests/tls.rs); nothing listens there: a retryable `closed`.
        assert!(e.kind == ErrorKind::Closed && e.retryable, "{e}");
        let e = switch::list_ops("http://127.0.0.1:1", "k", "a", switch::DEFAULT_OP_TIMEOUT)
            .await
            .unwrap_err();
        assert_eq!(e.kind, ErrorKind::Closed, "{e}");
        a.close().await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wrong_key_stops_with_an_auth_error() {
    bounded(async {
        for (generation, transport) in [
            (Generation::Current, Transport::WebSocket),
            (Generation::Current, Transport::Sse),
            (Generation::Released, Transport::Auto),
            (Generation::Released, Transport::Sse),
        ] {
            let w = world(peer_config(generation)).await;
            let e = connect(&w.h, "sk_switch_wrong", config(&w.b, transport, &[]))
                .await
                .unwrap_err();
            assert_eq!(e.kind, ErrorKind::Auth, "{transport:?}: {e}");
            assert!(!e.retryable);
        }
        // A released server has no WebSocket: the WebSocket transport is refused as a version error.
        let w = world(peer_config(Generation::Released)).await;
        let e = connect(&w.h, &w.b.key, config(&w.b, Transport::WebSocket, &[]))
            .await
            .unwrap_err();
        assert_eq!(e.kind, ErrorKind::Version, "{e}");
        // Nothing listening: the engine stops at the first failed open (`connect_attempts`).
        let cfg = config(&w.b, Transport::WebSocket, &[]);
        let e = SwitchClient::connect("http://127.0.0.1:1", "k", cfg).await.unwrap_err();
        assert_eq!((e.kind, e.retryable), (ErrorKind::Closed, true), "{e}");
        // The driver reads every refusal's status: no status is a network failure, said as such,
        // and the URL named without its query.
        assert!(
            e.message
                .starts_with("could not connect: cannot open ws://127.0.0.1:1/agents/"),
            "{e}"
        );
        assert!(!e.message.contains("no HTTP status") && !e.message.contains('?'), "{e}");
        // Told to retry until attached, the engine reopens; connect gives up with a timeout.
        let mut cfg = config(&w.b, Transport::WebSocket, &[]);
        cfg.open_timeout_ms = 300;
        cfg.connect_attempts = None;
        let e = SwitchClient::connect("http://127.0.0.1:1", "k", cfg).await.unwrap_err();
        assert_eq!(e.kind, ErrorKind::Timeout, "{e}");
        assert!(e.message.contains("cannot open ws://127.0.0.1:1/"), "{e}");
        let e = SwitchClient::connect("ftp://x", "k", config(&w.b, Transport::WebSocket, &[]))
            .await
            .unwrap_err();
        assert_eq!(e.kind, ErrorKind::Invalid);
    })
    .await;
}

/// A TCP proxy on 127.0.0.1 to `backend` that, while `hold` is set, takes new connections and
/// neither forwards nor answers them (the connections already piped go on).
async fn holding_proxy(backend: std::net::SocketAddr) -> (String, Arc<AtomicBool>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let origin = format!("http://{}", listener.local_addr().unwrap());
    let hold = Arc::new(AtomicBool::new(false));
    let holding = hold.clone();
    tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((mut tcp, _)) = listener.accept().await {
            if holding.load(Ordering::SeqCst) {
                held.push(tcp);
                continue;
            }
            tokio::spawn(async move {
                if let Ok(mut up) = tokio::net::TcpStream::connect(backend).await {
                    let _ = tokio::io::copy_bidirectional(&mut tcp, &mut up).await;
                }
            });
        }
    });
    (origin, hold)
}

/// `set_op_timeout` bounds the operations that follow: against a server that takes an operation
/// and never answers, a client connected with a 20 s bound and then set to 300 ms fails the next
/// operation `timeout` after 300 ms, saying so.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn set_op_timeout_bounds_the_operations_that_follow() {
    bounded(async {
        let w = world(peer_config(Generation::Current)).await;
        let (origin, hold) = holding_proxy(w.h.addr()).await;
        let opts = SwitchOptions {
            op_timeout: Duration::from_secs(20),
            ..SwitchOptions::default()
        };
        let cfg = config(&w.a, Transport::WebSocket, &[]);
        let mut a = tokio::time::timeout(WAIT, SwitchClient::connect_with(&origin, &w.a.key, cfg, opts))
            .await
            .expect("connect is bounded")
            .unwrap();
        a.call(&ConnectToRoom::new(&w.room)).await.unwrap();

        hold.store(true, Ordering::SeqCst);
        a.set_op_timeout(Duration::from_millis(300)).unwrap();
        let started = std::time::Instant::now();
        let e = a.call(&PostMessage::new("held")).await.unwrap_err();
        assert_eq!(e.kind, ErrorKind::Timeout, "{e}");
        assert!(e.message.contains("within 300 ms"), "{e}");
        assert!(started.elapsed() < Duration::from_secs(5), "{:?}", started.elapsed());

        hold.store(false, Ordering::SeqCst);
        // Under 1 ms: refused, the bound unchanged.
        let e = a.set_op_timeout(Duration::from_micros(999)).unwrap_err();
        assert_eq!(
            (e.kind, e.message.as_str()),
            (ErrorKind::Invalid, "op_timeout must be at least 1 ms")
        );
        a.set_op_timeout(Duration::from_secs(5)).unwrap();
        a.call(&PostMessage::new("answered")).await.unwrap();
        a.close().await;
    })
    .await;
}

/// An operation bound of 0 (one tokio tick in practice: every operation a `timeout`) is refused
/// by the engine's rule, as npm's `opTimeoutMs`: `connect_with`'s `op_timeout` and the free
/// functions' `timeout`, `invalid` naming the option, before any connection is made. (They took
/// it.)
#[tokio::test]
async fn an_operation_bound_of_zero_is_refused_before_connecting() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let origin = format!("http://{}", listener.local_addr().unwrap());
    let agent = Agent {
        id: "a".into(),
        name: "a".into(),
        key: "k".into(),
    };
    let opts = SwitchOptions {
        op_timeout: Duration::ZERO,
        ..SwitchOptions::default()
    };
    let connecting = SwitchClient::connect_with(&origin, "k", config(&agent, Transport::WebSocket, &[]), opts);
    let e = tokio::time::timeout(WAIT, connecting)
        .await
        .expect("bounded")
        .unwrap_err();
    assert_eq!(
        (e.kind, e.message.as_str()),
        (ErrorKind::Invalid, "op_timeout must be at least 1 ms")
    );
    let e = switch::list_ops(&origin, "k", "a", Duration::ZERO).await.unwrap_err();
    assert_eq!(
        (e.kind, e.message.as_str()),
        (ErrorKind::Invalid, "timeout must be at least 1 ms")
    );
    let e = switch::op(&origin, "k", "a", None, "list_rooms", "{}", Duration::ZERO)
        .await
        .unwrap_err();
    assert_eq!(
        (e.kind, e.message.as_str()),
        (ErrorKind::Invalid, "timeout must be at least 1 ms")
    );
    let accepted = tokio::time::timeout(Duration::from_millis(200), listener.accept()).await;
    assert!(accepted.is_err(), "a connection was made");
}

/// `try_next_event` hands over an event already waiting without awaiting, and nothing once the
/// channel was taken out with `events()` (the events go there) or the client is closed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn try_next_event_takes_only_an_event_already_waiting() {
    bounded(async {
        let w = world(peer_config(Generation::Current)).await;
        let mut b = bob_in_the_room(&w).await;
        assert!(matches!(next(&mut b).await, Event::Connected { .. }));
        posts(&w, &["waiting"]);
        let deadline = std::time::Instant::now() + WAIT;
        let event = loop {
            match b.try_next_event() {
                Some(Event::Event { event, .. }) => break event,
                Some(other) => assert!(!is_disruption(&other), "{other:?}"),
                None => {
                    assert!(std::time::Instant::now() < deadline, "no event in time");
                    tokio::time::sleep(Duration::from_millis(10)).await;
                }
            }
        };
        assert_eq!(event.message().unwrap().body, "waiting");

        let mut events = b.events().unwrap();
        posts(&w, &["taken out"]);
        let deadline = std::time::Instant::now() + WAIT;
        while events.is_empty() {
            assert!(std::time::Instant::now() < deadline, "no event in time");
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        assert!(b.try_next_event().is_none());
        assert!(events.try_recv().is_ok());
        b.close().await;
        assert!(b.try_next_event().is_none());
    })
    .await;
}
