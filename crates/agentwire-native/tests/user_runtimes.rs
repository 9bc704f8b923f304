//! The clients inside users' own test runtimes: a current-thread runtime, tokio's paused time
//! (`start_paused`, `pause()` + `advance()`), runtimes made and dropped per test, a client used
//! from a runtime other than the one that connected it. Peers on 127.0.0.1; every test is bounded
//! in real time by a watchdog thread (a paused runtime's own timers do not bound it).

#![allow(clippy::result_large_err)]

mod common;
mod switch_common;

use agentwire_core::ErrorKind;
use agentwire_moltzap::register::Registration;
use agentwire_moltzap::{Credentials, Generation};
use agentwire_native::moltzap::{register, MoltZapClient, MoltZapConfig};
use agentwire_native::rkt::RktClient;
use agentwire_peer_moltzap::{spawn, Faults, PeerConfig};
use agentwire_rkt::{ClientConfig, RequestOptions};
use agentwire_switch::{Event, Transport};
use std::future::Future;
use std::sync::mpsc::RecvTimeoutError;
use std::time::{Duration, Instant};
use tokio::net::TcpListener;

/// CPU time this thread has used (Linux: /proc/thread-self/stat, clock ticks of 10 ms).
fn thread_cpu() -> Duration {
    let stat = std::fs::read_to_string("/proc/thread-self/stat").unwrap();
    let fields: Vec<&str> = stat.rsplit_once(')').unwrap().1.split_whitespace().collect();
    let ticks: u64 = fields[11].parse::<u64>().unwrap() + fields[12].parse::<u64>().unwrap();
    Duration::from_millis(ticks * 10)
}

/// A current-thread runtime with I/O and time enabled, its clock paused when `paused`.
fn current_thread(paused: bool) -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .start_paused(paused)
        .build()
        .unwrap()
}

/// Runs `body` on a current-thread runtime (time paused when `paused`) on its own thread, bounded
/// by `limit` of real time.
fn on_runtime<T: Send + 'static, F: Future<Output = T> + 'static>(
    paused: bool,
    limit: Duration,
    body: impl FnOnce() -> F + Send + 'static,
) -> T {
    let (tx, rx) = std::sync::mpsc::channel();
    let thread = std::thread::spawn(move || {
        let _ = tx.send(current_thread(paused).block_on(body()));
    });
    match rx.recv_timeout(limit) {
        Ok(out) => out,
        Err(RecvTimeoutError::Disconnected) => std::panic::resume_unwind(thread.join().unwrap_err()),
        Err(RecvTimeoutError::Timeout) => panic!("the test did not end within {limit:?}"),
    }
}

/// A peer that completes the RKT handshake, then never says anything again.
async fn silent_rkt() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("ws://{}", listener.local_addr().unwrap());
    tokio::spawn(async move {
        let (tcp, _) = listener.accept().await.unwrap();
        let ws = common::rkt_hello(tcp).await;
        std::future::pending::<()>().await;
        drop(ws);
    });
    url
}

/// A request with a TTL of `ttl_s`.
fn ttl(ttl_s: u32) -> RequestOptions {
    RequestOptions {
        ttl_s: Some(ttl_s),
        ..Default::default()
    }
}

/// A MoltZap peer that never answers `x/y`, and a client connected to it.
async fn moltzap_never_answering() -> (agentwire_peer_moltzap::PeerHandle, MoltZapClient) {
    let mut cfg = PeerConfig::new(Generation::Current);
    cfg.faults = Faults {
        never_answer: vec!["x/y".into()],
        ..Default::default()
    };
    let h = spawn(TcpListener::bind("127.0.0.1:0").await.unwrap(), cfg).unwrap();
    let key = register(&h.http_url(), &Registration::new("alice"), Duration::from_secs(5))
        .await
        .unwrap()
        .api_key;
    let client = MoltZapClient::connect(&h.ws_url(), Credentials::AgentKey(key), MoltZapConfig::default())
        .await
        .unwrap();
    (h, client)
}

/// Under `start_paused`, a call's timeout against a silent peer fires when tokio's clock reaches
/// it, at once in real time and without burning CPU. It used to take the timeout in real time
/// with the driver waking over and over meanwhile (5 s and about 2 s of CPU for a 5 s TTL): the
/// engine's deadline was on the wall clock, the driver's timer on tokio's paused one.
#[test]
fn call_timeouts_fire_under_paused_time_without_waiting_on_the_wall_clock() {
    let (kinds, real, cpu) = on_runtime(true, Duration::from_secs(30), || async {
        let url = silent_rkt().await;
        let rkt = RktClient::connect(&url, ClientConfig::default()).await.unwrap();
        let (_peer, moltzap) = moltzap_never_answering().await;
        let (started, cpu) = (Instant::now(), thread_cpu());
        let virtual_start = tokio::time::Instant::now();
        let rkt_err = rkt.request("echo", None, ttl(5)).await.unwrap_err();
        let moltzap_err = moltzap
            .call_with_timeout("x/y", None, Duration::from_secs(5))
            .await
            .unwrap_err();
        assert!(virtual_start.elapsed() >= Duration::from_secs(10));
        (
            (rkt_err.error.kind, moltzap_err.error.kind),
            started.elapsed(),
            thread_cpu() - cpu,
        )
    });
    assert_eq!(kinds, (ErrorKind::Timeout, ErrorKind::Timeout));
    assert!(
        real < Duration::from_secs(1),
        "two 5 s timeouts took {real:?} of real time"
    );
    assert!(cpu < Duration::from_millis(500), "and {cpu:?} of CPU");
}

/// Paused time moved by `advance()`: a call with a 5 s TTL is still waiting 1 ms before its TTL
/// and has failed at it, as a tokio `sleep(5 s)` would, with no real time spent waiting.
#[test]
fn advance_fires_a_call_timeout_at_its_deadline() {
    let real = on_runtime(true, Duration::from_secs(30), || async {
        let url = silent_rkt().await;
        let client = RktClient::connect(&url, ClientConfig::default()).await.unwrap();
        let started = Instant::now();
        let call = tokio::spawn(async move { client.request("echo", None, ttl(5)).await });
        let sleep = tokio::spawn(tokio::time::sleep(Duration::from_secs(5)));
        let settle = || async {
            for _ in 0..20 {
                tokio::task::yield_now().await;
            }
        };
        settle().await;
        tokio::time::advance(Duration::from_millis(4_999)).await;
        settle().await;
        assert!(
            !sleep.is_finished() && !call.is_finished(),
            "the call failed before its TTL"
        );
        tokio::time::advance(Duration::from_millis(1)).await;
        settle().await;
        assert!(sleep.is_finished(), "tokio's own sleep has ended");
        assert!(call.is_finished(), "the call is still waiting at its TTL");
        let err = call.await.unwrap().unwrap_err();
        assert_eq!(err.error.kind, ErrorKind::Timeout, "{err:?}");
        started.elapsed()
    });
    assert!(real < Duration::from_secs(1), "the TTL took {real:?} of real time");
}

/// Under paused time, connections made at different times agree on the time: one connected
/// before half an hour of paused time (kept alive by its keepalive meanwhile) sets a key with a
/// TTL of 60 s on the reference server, and one connected after finds it expired 61 s on.
#[test]
fn connections_made_at_different_paused_times_agree_on_the_time() {
    on_runtime(true, Duration::from_secs(30), || async {
        let server = common::server(Default::default()).await;
        let early = RktClient::connect(&server.url(), ClientConfig::default())
            .await
            .unwrap();
        tokio::time::sleep(Duration::from_secs(1_800)).await;
        let late = RktClient::connect(&server.url(), ClientConfig::default())
            .await
            .unwrap();
        early.memory_set("k", "v".into(), None, Some(60)).await.unwrap();
        assert!(late.memory_get("k", None).await.unwrap().is_some(), "set");
        tokio::time::sleep(Duration::from_secs(61)).await;
        assert_eq!(late.memory_get("k", None).await.unwrap(), None, "expired");
        assert_eq!(early.memory_get("k", None).await.unwrap(), None, "expired");
    });
}

/// A Switch connection (WebSocket, SSE) whose peer stalls is found dead by its heartbeat under
/// paused time, as the heartbeat's timers say in tokio's clock, not the wall clock's.
#[test]
fn a_stalled_switch_socket_is_found_dead_under_paused_time() {
    for transport in [Transport::WebSocket, Transport::Sse] {
        stalled_switch_found_dead(transport);
    }
}

fn stalled_switch_found_dead(transport: Transport) {
    use switch_common::*;
    let (real, cpu) = on_runtime(true, Duration::from_secs(60), move || async move {
        let mut peer = peer_config(agentwire_peer_switch::Generation::Current);
        peer.heartbeat_interval = Duration::from_secs(10);
        peer.heartbeat_ttl = Duration::from_secs(30);
        let w = world(peer).await;
        let mut cfg = config(&w.b, transport, &[&w.room]);
        cfg.heartbeat_interval_ms = 10_000;
        cfg.beat_timeout_ms = 10_000;
        let mut b = connect(&w.h, &w.b.key, cfg).await.unwrap();
        assert!(matches!(next(&mut b).await, Event::Connected { .. }));
        w.h.set_faults(agentwire_peer_switch::Faults {
            stall: true,
            ..Default::default()
        });
        let (started, cpu) = (Instant::now(), thread_cpu());
        loop {
            let event = tokio::time::timeout(Duration::from_secs(600), b.next_event()).await;
            match event.expect("the stall is found").expect("the connection goes on") {
                Event::Disconnected { .. } => break,
                Event::Stopped { error } => panic!("stopped: {error:?}"),
                _ => {}
            }
        }
        (started.elapsed(), thread_cpu() - cpu)
    });
    assert!(
        real < Duration::from_secs(2),
        "{transport:?}: the stall was found after {real:?} of real time"
    );
    assert!(cpu < Duration::from_millis(500), "{transport:?}: and {cpu:?} of CPU");
}

/// A runtime per test: clients connected on a runtime that is then dropped fail their calls from
/// the next runtime with `closed` at once, close at once, and are dropped outside any runtime
/// without a panic (no Drop needs a reactor).
#[test]
fn clients_outlive_the_runtime_that_connected_them() {
    let first = current_thread(false);
    let (rkt, server, moltzap, mut switch, peers) = first.block_on(async {
        let server = common::server(Default::default()).await;
        let rkt = RktClient::connect(&server.url(), ClientConfig::default())
            .await
            .unwrap();
        let (moltzap_peer, moltzap) = moltzap_never_answering().await;
        let w = switch_common::world(switch_common::peer_config(agentwire_peer_switch::Generation::Current)).await;
        let switch = switch_common::bob_in_the_room(&w).await;
        (rkt, server, moltzap, switch, (moltzap_peer, w))
    });
    drop(first);
    let events = switch.events();
    current_thread(false).block_on(async {
        let bounded = Duration::from_secs(5);
        let rkt_err = tokio::time::timeout(bounded, rkt.request("echo", None, ttl(5))).await;
        assert_eq!(rkt_err.expect("at once").unwrap_err().error.kind, ErrorKind::Closed);
        let moltzap_err = tokio::time::timeout(bounded, moltzap.call("x/y", None)).await;
        assert_eq!(moltzap_err.expect("at once").unwrap_err().error.kind, ErrorKind::Closed);
        tokio::time::timeout(bounded, rkt.close()).await.expect("at once");
        tokio::time::timeout(bounded, moltzap.close()).await.expect("at once");
        tokio::time::timeout(bounded, switch.close()).await.expect("at once");
        drop(peers);
    });
    drop((rkt, server, moltzap, switch, events));
}

/// A client connected on a runtime that keeps running is used from another one (a
/// current-thread runtime of a test, say): calls, pings and close go through.
#[test]
fn a_client_is_used_from_a_runtime_other_than_the_one_that_connected_it() {
    let first = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let (server, rkt) = first.block_on(async {
        let server = common::server(Default::default()).await;
        let rkt = RktClient::connect(&server.url(), ClientConfig::default())
            .await
            .unwrap();
        (server, rkt)
    });
    let second = current_thread(false);
    second.block_on(async {
        let answer = tokio::time::timeout(Duration::from_secs(5), rkt.request("echo", None, ttl(5))).await;
        answer.expect("in time").expect("answered");
        tokio::time::timeout(Duration::from_secs(5), rkt.ping())
            .await
            .expect("in time")
            .expect("pong");
        tokio::time::timeout(Duration::from_secs(5), rkt.close())
            .await
            .expect("in time");
    });
    first.block_on(async { server.shutdown().await.unwrap() });
}

/// The limit lib.rs states: a connection's task moves only while its own runtime runs, so a
/// client connected in a `block_on` of a current-thread runtime that is not running again waits
/// when called from another runtime.
#[test]
fn a_client_of_a_current_thread_runtime_not_running_waits_for_it() {
    let first = current_thread(false);
    let (server, rkt) = first.block_on(async {
        let server = common::server(Default::default()).await;
        let rkt = RktClient::connect(&server.url(), ClientConfig::default())
            .await
            .unwrap();
        (server, rkt)
    });
    let second = current_thread(false);
    let waited = second
        .block_on(async { tokio::time::timeout(Duration::from_millis(300), rkt.request("echo", None, ttl(5))).await });
    assert!(waited.is_err(), "answered without its runtime: {waited:?}");
    drop((server, rkt));
}
