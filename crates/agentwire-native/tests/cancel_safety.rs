//! Cancel safety and sharing of the native clients: futures dropped at any await point (a
//! `tokio::time::timeout`, a `tokio::select!`), clients shared between tasks by `Arc`, the
//! event and chunk receivers read beside a timer. Against the local peers on 127.0.0.1; every
//! wait is bounded.

// `MoltZapError` is the engine's error, by value, as the engine returns it.
#![allow(clippy::result_large_err)]

mod common;
mod switch_common;

use agentwire_native::moltzap::MoltZapClient;
use agentwire_native::rkt::{RktClient, StreamChunks};
use agentwire_native::switch::SwitchClient;
use agentwire_rkt::reference::ReferenceConfig;
use agentwire_rkt::{ClientConfig, RequestOptions};
use common::{bounded, read_beside_a_timer, server, Tiny};
use futures_util::StreamExt;
use serde_json::json;
use std::sync::Arc;
use std::time::Duration;

fn is_send_sync<T: Send + Sync + 'static>(_: &T) {}
fn is_send<T: Send + 'static>(_: T) {}

/// Every client, receiver and call future can go to `tokio::spawn` (a client shared by `Arc`).
#[allow(dead_code, unused_must_use)] // compiled, not run: the bounds are the test
fn clients_and_their_futures_are_send_and_shareable(
    r: Arc<RktClient>,
    m: Arc<MoltZapClient>,
    s: Arc<SwitchClient>,
    chunks: StreamChunks,
) {
    is_send_sync(&r);
    is_send_sync(&m);
    is_send_sync(&s);
    is_send(chunks);
    let o = RequestOptions::default;
    let r2 = r.clone();
    is_send(async move { r2.request("echo", None, o()).await });
    let r2 = r.clone();
    is_send(async move { r2.stream("echo", None, o()).await.unwrap().next().await });
    let r2 = r.clone();
    is_send(async move { (r2.ping().await, r2.discover().await, r2.close().await) });
    is_send(RktClient::connect("ws://127.0.0.1:1/rkt", ClientConfig::default()));
    let key = agentwire_moltzap::Credentials::AgentKey("k".into());
    is_send(MoltZapClient::connect("ws://127.0.0.1:1/ws", key, Default::default()));
    let registration = agentwire_moltzap::register::Registration::new("name");
    is_send(
        async move { agentwire_native::moltzap::register("http://127.0.0.1:1", &registration, Duration::ZERO).await },
    );
    let cfg = agentwire_switch::ConnectionConfig::new(agentwire_switch::open::OpenParams::new("a", "c"));
    is_send(SwitchClient::connect("http://127.0.0.1:1", "k", cfg));
    is_send(agentwire_native::switch::op(
        "http://127.0.0.1:1",
        "k",
        "a",
        None,
        "x",
        "{}",
        Duration::ZERO,
    ));
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    is_send(agentwire_native::rkt::serve(
        tokio::net::TcpListener::from_std(listener).unwrap(),
        ReferenceConfig::default(),
    ));
    let m2 = m.clone();
    is_send(async move { (m2.call("x", None).await, m2.close().await) });
    let s2 = s.clone();
    is_send(async move { (s2.op("x", "{}").await, s2.list_ops().await, s2.close().await) });
    is_send(async move {
        let mut s = Arc::into_inner(s).unwrap();
        s.next_event().await
    });
}

/// Eight tasks share one client (`max_in_flight` 4) and give up on their calls and streams after
/// a random few hundred microseconds, at every point of the call; every answer that does come is
/// the caller's own, and afterwards no slot is held: four slow-enough calls at once all succeed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn calls_given_up_at_random_points_leave_no_slot_and_no_crossed_answer() {
    bounded(async {
        let srv = server(ReferenceConfig::default()).await;
        let cfg = ClientConfig {
            max_in_flight: 4,
            ..ClientConfig::default()
        };
        let c = Arc::new(RktClient::connect(&srv.url(), cfg).await.unwrap());
        let mut tasks = Vec::new();
        for t in 0..8u64 {
            let c = c.clone();
            tasks.push(tokio::spawn(async move {
                let (mut tiny, mut answered) = (Tiny(0x9E37_79B9 + t), 0);
                for i in 0..150u64 {
                    let params = json!({"t": t, "i": i});
                    let wait = tiny.next(600);
                    if i % 5 == 0 {
                        let call = async {
                            let chunks =
                                c.stream("weather.forecast", Some(json!({"days": 3})), RequestOptions::default());
                            chunks
                                .await?
                                .collect::<Vec<_>>()
                                .await
                                .into_iter()
                                .collect::<Result<Vec<_>, _>>()
                        };
                        if let Ok(r) = tokio::time::timeout(wait, call).await {
                            match r {
                                Ok(days) => assert_eq!(days.len(), 3),
                                Err(e) => assert_eq!(e.kind(), agentwire_core::ErrorKind::Limit, "{e}"),
                            }
                        }
                        continue;
                    }
                    match tokio::time::timeout(wait, c.request("echo", Some(params.clone()), RequestOptions::default()))
                        .await
                    {
                        Ok(Ok(v)) => {
                            assert_eq!(v["data"], params, "another caller's answer");
                            answered += 1;
                        }
                        Ok(Err(e)) => assert_eq!(e.kind(), agentwire_core::ErrorKind::Limit, "{e}"),
                        Err(_) => {}
                    }
                }
                answered
            }));
        }
        let mut answered = 0;
        for t in tasks {
            answered += t.await.unwrap();
        }
        println!("answered {answered} of 960 given-up requests");
        let calls = (0..4).map(|i| c.request("echo", Some(json!(i)), RequestOptions::default()));
        for (i, r) in futures_util::future::join_all(calls).await.into_iter().enumerate() {
            assert_eq!(r.expect("a free slot")["data"], json!(i));
        }
        c.close().await;
    })
    .await
}

/// A peer that answers each REQUEST with a stream of `chunks` chunks (`0`, `1`, ...), a few
/// hundred microseconds apart, then STREAM_END; its `ws://` URL.
async fn trickling_stream_peer(chunks: u32) -> String {
    use futures_util::SinkExt;
    use tokio_tungstenite::tungstenite::Message;
    common::rkt_peer(move |mut ws| async move {
        let mut tiny = Tiny(0x5EED);
        while let Some(Ok(Message::Text(t))) = ws.next().await {
            let Some(id) = common::request_id(&t) else {
                continue;
            };
            let head = |kind: &str, n: u32| common::stream_head(kind, n, id);
            let _ = ws
                .send(Message::text(head("STREAM_BEGIN", 0) + r#"{"intent":"echo"}"#))
                .await;
            for n in 0..chunks {
                let _ = ws.send(Message::text(head("STREAM_DATA", n) + &n.to_string())).await;
                tokio::time::sleep(tiny.next(800)).await;
            }
            let _ = ws.send(Message::text(head("STREAM_END", chunks))).await;
        }
    })
    .await
}

/// `StreamChunks::recv` and `next` are cancel-safe: read beside a timer that often wins, every
/// chunk of a trickled stream still comes, in order, then the end.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stream_chunks_read_beside_a_timer_lose_nothing() {
    bounded(async {
        let c = RktClient::connect(&trickling_stream_peer(200).await, ClientConfig::default())
            .await
            .unwrap();
        let want: Vec<_> = (0..200).map(|n| json!(n)).collect();
        for by_stream in [false, true] {
            let mut chunks = c.stream("count", None, RequestOptions::default()).await.unwrap();
            let (got, timer_won) = if by_stream {
                read_beside_a_timer!(201, chunks.next())
            } else {
                read_beside_a_timer!(201, chunks.recv())
            };
            let got: Vec<_> = got.into_iter().map(Result::unwrap).collect();
            println!("{} chunks, the timer won {timer_won} times", got.len());
            assert!(timer_won > 20, "the timer won only {timer_won} times");
            assert_eq!(got, want, "every chunk, in order, then the end");
        }
        c.close().await;
    })
    .await
}

/// Bob with the events handed out and room for one event only: the `Connected` fills it, so
/// the task waits to hand over its last events until they are read (or `close` stops it).
async fn switch_bob_with_a_full_channel(w: &switch_common::World) -> (SwitchClient, agentwire_native::switch::Events) {
    use agentwire_native::switch::SwitchOptions;
    let opts = SwitchOptions {
        event_capacity: 1,
        ..SwitchOptions::default()
    };
    let cfg = switch_common::config(&w.b, agentwire_switch::Transport::WebSocket, &[&w.room]);
    let mut b = switch_common::connect_with(&w.h, &w.b.key, cfg, opts).await.unwrap();
    let events = b.events().unwrap();
    (b, events)
}

/// Whether the task behind the events has ended, without waiting: the unread events are read
/// and the channel is then empty (`false`: its task is still alive) or over (`true`).
fn task_ended(events: &mut agentwire_native::switch::Events) -> bool {
    use tokio::sync::mpsc::error::TryRecvError;
    loop {
        match events.try_recv() {
            Ok(_) => continue,
            Err(TryRecvError::Empty) => return false,
            Err(TryRecvError::Disconnected) => return true,
        }
    }
}

/// `SwitchClient::close` given up after 100 ms (a `timeout` around it) leaves the close to the
/// next `close`, which waits for the task to end (or stops it), as the first would have: before,
/// the first had taken the task's handle with it, and the second returned at once with the task
/// still alive.
#[tokio::test]
async fn a_close_given_up_leaves_the_next_close_to_end_the_task() {
    switch_common::bounded(async {
        let w = switch_common::world(switch_common::peer_config(agentwire_peer_switch::Generation::Current)).await;
        let (b, mut events) = switch_bob_with_a_full_channel(&w).await;
        assert!(tokio::time::timeout(Duration::from_millis(100), b.close())
            .await
            .is_err());
        b.close().await;
        assert!(
            task_ended(&mut events),
            "close returned with the connection's task alive"
        );
    })
    .await;
}

/// A second `close` from another holder of a shared client, while the first waits, waits for the
/// same end: before, it returned at once, with the connection's task still alive.
#[tokio::test]
async fn a_second_close_from_another_task_waits_for_the_same_end() {
    switch_common::bounded(async {
        let w = switch_common::world(switch_common::peer_config(agentwire_peer_switch::Generation::Current)).await;
        let (b, mut events) = switch_bob_with_a_full_channel(&w).await;
        let b = Arc::new(b);
        let first = tokio::spawn({
            let b = b.clone();
            async move { b.close().await }
        });
        tokio::time::sleep(Duration::from_millis(100)).await;
        b.close().await;
        assert!(task_ended(&mut events), "the second close returned with the task alive");
        first.await.unwrap();
    })
    .await;
}

/// `SwitchClient::next_event` is cancel-safe: read beside a timer that often wins, every one of
/// 100 messages posted a few hundred microseconds apart still comes, in order.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn switch_events_read_beside_a_timer_lose_nothing() {
    switch_common::bounded(async {
        let w = switch_common::world(switch_common::peer_config(agentwire_peer_switch::Generation::Current)).await;
        let mut b = switch_common::bob_in_the_room(&w).await;
        let poster = async {
            let mut tiny = Tiny(11);
            for n in 0..100 {
                w.h.post_as_user(&w.room, "carol", &format!("m{n}"));
                tokio::time::sleep(tiny.next(800)).await;
            }
        };
        let reader = async {
            let (mut bodies, mut timer_won_total) = (Vec::new(), 0);
            while bodies.len() < 100 {
                let (got, timer_won) = read_beside_a_timer!(1, b.next_event());
                timer_won_total += timer_won;
                match got.into_iter().next().expect("an event within 20 s") {
                    agentwire_switch::Event::Event { event, .. } => bodies.push(event.message().unwrap().body),
                    agentwire_switch::Event::Connected { .. } => {}
                    other => panic!("{other:?}"),
                }
            }
            (bodies, timer_won_total)
        };
        let ((), (bodies, timer_won_total)) = tokio::join!(poster, reader);
        assert_eq!(bodies, (0..100).map(|n| format!("m{n}")).collect::<Vec<_>>());
        assert!(timer_won_total > 20, "the timer won only {timer_won_total} times");
        b.close().await;
    })
    .await;
}

/// `RktClient::close` dropped at its first await (polled once, as in a `select!` that another
/// branch wins) still closes: later calls fail `closed`, and the next `close` returns.
#[tokio::test]
async fn an_rkt_close_dropped_at_once_still_closes() {
    bounded(async {
        let srv = server(ReferenceConfig::default()).await;
        let c = RktClient::connect(&srv.url(), ClientConfig::default()).await.unwrap();
        assert!(
            futures_util::FutureExt::now_or_never(c.close()).is_none(),
            "close waits"
        );
        let e = c.request("echo", None, RequestOptions::default()).await.unwrap_err();
        assert_eq!(e.kind(), agentwire_core::ErrorKind::Closed, "{e}");
        tokio::time::timeout(Duration::from_secs(4), c.close())
            .await
            .expect("the next close returns");
    })
    .await
}

/// Polls `count` every 20 ms until it reads 0, for at most 8 s; the last count read.
async fn until_none_open(count: impl Fn() -> usize) -> usize {
    for _ in 0..400 {
        if count() == 0 {
            return 0;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    count()
}

/// Connects given up at random points (0-4 ms: the dial, the upgrade, the handshake) leave no
/// connection open on the server: each client's socket ends with its future.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connects_given_up_at_random_points_leave_no_connection_open() {
    switch_common::bounded(async {
        let mut tiny = Tiny(0xABCD);
        // RKT: with room for 2 connections, two connect after 40 given up.
        let srv = server(ReferenceConfig {
            max_connections: 2,
            ..ReferenceConfig::default()
        })
        .await;
        let url = srv.url();
        for _ in 0..40 {
            // One that completes may be refused while the cap still counts the ones given up.
            let connect = RktClient::connect(&url, ClientConfig::default());
            drop(tokio::time::timeout(tiny.next(4_000), connect).await);
        }
        let mut open = Vec::new();
        for _ in 0..400 {
            if open.len() == 2 {
                break;
            }
            match RktClient::connect(&srv.url(), ClientConfig::default()).await {
                Ok(c) => open.push(c),
                Err(_) => tokio::time::sleep(Duration::from_millis(20)).await,
            }
        }
        assert_eq!(open.len(), 2, "the server's slots were freed");
        // MoltZap.
        let h = agentwire_peer_moltzap::spawn(
            tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap(),
            agentwire_peer_moltzap::PeerConfig::new(agentwire_moltzap::Generation::Current),
        )
        .unwrap();
        let registration = agentwire_moltzap::register::Registration::new("kim");
        let key = agentwire_native::moltzap::register(&h.http_url(), &registration, Duration::from_secs(5))
            .await
            .unwrap()
            .api_key;
        let url = h.ws_url();
        for _ in 0..40 {
            let credentials = agentwire_moltzap::Credentials::AgentKey(key.clone());
            let connect = MoltZapClient::connect(&url, credentials, Default::default());
            drop(tokio::time::timeout(tiny.next(4_000), connect).await);
        }
        assert_eq!(
            until_none_open(|| h.connections()).await,
            0,
            "MoltZap sockets left open"
        );
        // Switch.
        let w = switch_common::world(switch_common::peer_config(agentwire_peer_switch::Generation::Current)).await;
        let origin = w.h.http_url();
        for _ in 0..40 {
            let cfg = switch_common::config(&w.b, agentwire_switch::Transport::WebSocket, &[&w.room]);
            let connect = SwitchClient::connect(&origin, &w.b.key, cfg);
            drop(tokio::time::timeout(tiny.next(4_000), connect).await);
        }
        assert_eq!(
            until_none_open(|| w.h.connections(&w.b.id)).await,
            0,
            "Switch connections left open"
        );
    })
    .await;
}

/// `serve_until`'s future dropped (its task aborted here) drops every connection at once: a
/// client's next call fails `closed` (1006, no GOODBYE). `ServerHandle::shutdown` dropped at its
/// first await still ends the server gracefully: the client sees GOODBYE.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dropped_server_future_drops_its_connections_and_a_dropped_shutdown_still_ends_it() {
    use agentwire_rkt::ClientEvent;
    bounded(async {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("ws://{}/rkt", listener.local_addr().unwrap());
        let serving = tokio::spawn(agentwire_native::rkt::serve(listener, ReferenceConfig::default()));
        let c = RktClient::connect(&url, ClientConfig::default()).await.unwrap();
        serving.abort();
        assert!(serving.await.unwrap_err().is_cancelled());
        // The connections' tasks are aborted with the server's: each ends at its next turn.
        let mut e = None;
        for _ in 0..100 {
            match c.ping().await {
                Ok(_) => tokio::time::sleep(Duration::from_millis(20)).await,
                Err(error) => {
                    e = Some(error);
                    break;
                }
            }
        }
        let e = e.expect("the connection was dropped within 2 s");
        assert_eq!(e.kind(), agentwire_core::ErrorKind::Closed, "{e}");
        assert!(e.error.message.contains("1006"), "{e}");

        let srv = server(ReferenceConfig::default()).await;
        let mut c = RktClient::connect(&srv.url(), ClientConfig::default()).await.unwrap();
        let mut events = c.events().unwrap();
        assert!(futures_util::FutureExt::now_or_never(srv.shutdown()).is_none());
        assert!(matches!(events.recv().await, Some(ClientEvent::Goodbye)));
        assert!(matches!(
            events.recv().await,
            Some(ClientEvent::Closed { code: 1000, .. })
        ));
    })
    .await
}

/// Operations given up at random points (0-3 ms: the dial, the write, the answer), from four
/// tasks sharing one client, leave the agent connection live and the next operation answered.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn switch_operations_given_up_at_random_points_leave_the_client_serving() {
    use agentwire_switch::ops::{ConnectToRoom, PostMessage};
    switch_common::bounded(async {
        let w = switch_common::world(switch_common::peer_config(agentwire_peer_switch::Generation::Current)).await;
        let b = switch_common::bob_in_the_room(&w).await;
        b.call(&ConnectToRoom::new(&w.room)).await.unwrap();
        let b = Arc::new(b);
        let mut tasks = Vec::new();
        for t in 0..4 {
            let b = b.clone();
            tasks.push(tokio::spawn(async move {
                let mut tiny = Tiny(0x1234 + t);
                for i in 0..30 {
                    let post = PostMessage::new(format!("{t}-{i}"));
                    if let Ok(r) = tokio::time::timeout(tiny.next(3_000), b.call(&post)).await {
                        r.unwrap();
                    }
                }
            }));
        }
        for t in tasks {
            t.await.unwrap();
        }
        b.call(&PostMessage::new("after")).await.unwrap();
        assert_eq!(b.status().state, agentwire_switch::State::Live);
        b.close().await;
    })
    .await;
}
