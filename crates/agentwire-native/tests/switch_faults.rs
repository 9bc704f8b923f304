//! `SwitchClient` against a misbehaving Switch test peer, in both generations: dropped sockets,
//! a stalled server, lapses, garbage frames, a reader that falls behind, hostile HTTP answers.
//! Every test is bounded; heartbeats are 200 ms.

// `SwitchError` is the engine's error, by value, as the engine returns it.
#![allow(clippy::result_large_err)]

mod switch_common;

use agentwire_core::ErrorKind;
use agentwire_native::switch::{self, SwitchOptions};
use agentwire_peer_switch::{Faults, Generation};
use agentwire_switch::frame::EvictionCode;
use agentwire_switch::{Event, State, Transport};
use std::time::Duration;
use switch_common::*;
use tokio::net::TcpListener;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropped_sockets_lose_no_event() {
    bounded(async {
        for (generation, transport) in [
            (Generation::Current, Transport::WebSocket),
            (Generation::Released, Transport::Sse),
        ] {
            let w = world(peer_config(generation)).await;
            let mut b = connect(&w.h, &w.b.key, config(&w.b, transport, &[&w.room]))
                .await
                .unwrap();
            w.h.set_faults(Faults {
                drop_after_events: Some(2),
                ..Faults::default()
            });
            posts(&w, &["d1", "d2", "d3", "d4", "d5"]);
            let (bodies, _, other) = domain_events(&mut b, 5).await;
            assert_eq!(bodies, ["d1", "d2", "d3", "d4", "d5"], "{transport:?}");
            let drops = other.iter().filter(|e| matches!(e, Event::Disconnected { .. })).count();
            assert!(drops >= 2, "{transport:?}: {other:?}");
            let rest = quiet(&mut b, 400).await;
            assert!(
                !rest.iter().any(|e| matches!(e, Event::Event { .. })),
                "{transport:?}: {rest:?}"
            );
            b.close().await;
        }
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stalled_server_is_detected_and_left() {
    bounded(async {
        let w = world(peer_config(Generation::Current)).await;
        let mut b = bob_in_the_room(&w).await;
        w.h.set_faults(Faults {
            stall: true,
            ..Faults::default()
        });
        let gone = until(&mut b, "the disconnect", |e| matches!(e, Event::Disconnected { .. })).await;
        let Event::Disconnected { reason, .. } = gone else {
            unreachable!()
        };
        assert!(reason.contains("no ping"), "{reason}");
        // The reopen is taken and then hears nothing: `status()` shows it attaching, a state
        // the engine enters without an event.
        let deadline = tokio::time::Instant::now() + WAIT;
        while b.status().state != State::Attaching {
            assert!(tokio::time::Instant::now() < deadline, "{:?}", b.status().state);
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        w.h.set_faults(Faults::default());
        until(&mut b, "the resumed attach", |e| {
            matches!(e, Event::Connected { resumed: true, .. })
        })
        .await;
        posts(&w, &["after the stall"]);
        let (event, _) = next_domain(&mut b, &mut Vec::new()).await;
        assert_eq!(event.message().unwrap().body, "after the stall");
        b.close().await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lapsed_connection_is_resumed() {
    bounded(async {
        for (generation, transport) in [
            (Generation::Current, Transport::WebSocket),
            (Generation::Released, Transport::Sse),
        ] {
            let w = world(peer_config(generation)).await;
            let mut b = connect(&w.h, &w.b.key, config(&w.b, transport, &[&w.room]))
                .await
                .unwrap();
            w.h.set_faults(Faults {
                ignore_heartbeats: true,
                ..Faults::default()
            });
            let lapsed = until(&mut b, "the lapse", |e| matches!(e, Event::Evicted(_))).await;
            let Event::Evicted(ev) = lapsed else { unreachable!() };
            assert_eq!(ev.effective_code(), EvictionCode::HeartbeatLapsed, "{transport:?}");
            w.h.set_faults(Faults::default());
            until(&mut b, "the resumed attach", |e| {
                matches!(e, Event::Connected { resumed: true, .. })
            })
            .await;
            posts(&w, &["after the lapse"]);
            let (event, _) = next_domain(&mut b, &mut Vec::new()).await;
            assert_eq!(event.message().unwrap().body, "after the lapse", "{transport:?}");
            b.close().await;
        }
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn garbage_is_a_diagnostic_and_loses_no_event() {
    bounded(async {
        for (generation, transport) in [
            (Generation::Current, Transport::WebSocket),
            (Generation::Released, Transport::Sse),
        ] {
            let w = world(peer_config(generation)).await;
            let mut b = connect(&w.h, &w.b.key, config(&w.b, transport, &[&w.room]))
                .await
                .unwrap();
            w.h.set_faults(Faults {
                garbage_every: Some(2),
                ..Faults::default()
            });
            posts(&w, &["g1", "g2", "g3", "g4"]);
            let (bodies, _, other) = domain_events(&mut b, 4).await;
            assert_eq!(bodies, ["g1", "g2", "g3", "g4"], "{transport:?}");
            let diagnostics = other
                .iter()
                .filter(|e| matches!(e, Event::Diagnostic(d) if d.kind == ErrorKind::Decode))
                .count();
            assert!(diagnostics >= 1, "{transport:?}: {other:?}");
            assert!(
                !other.iter().any(|e| matches!(e, Event::Disconnected { .. })),
                "{other:?}"
            );
            b.close().await;
        }
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slow_reader_keeps_the_connection_and_loses_nothing() {
    let few = SwitchOptions {
        event_capacity: 2,
        ..SwitchOptions::default()
    };
    slow_reader(few).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slow_reader_of_a_channel_bounded_in_bytes_loses_nothing() {
    // Room for 256 events but one byte: one domain event at a time waits in the channel.
    let one_byte = SwitchOptions {
        event_capacity_bytes: 1,
        ..SwitchOptions::default()
    };
    slow_reader(one_byte).await;
}

/// Twelve events for a reader that waits two TTLs first: the channel fills by `opts`, the
/// engine's queue (3 events) overflows, and the reader still gets all twelve, in order.
async fn slow_reader(opts: SwitchOptions) {
    bounded(async {
        let w = world(peer_config(Generation::Current)).await;
        let mut cfg = config(&w.b, Transport::WebSocket, &[&w.room]);
        cfg.max_queued_events = 3;
        let mut b = connect_with(&w.h, &w.b.key, cfg, opts).await.unwrap();
        let bodies: Vec<String> = (1..=12).map(|n| format!("s{n}")).collect();
        for body in &bodies {
            w.h.post_as_user(&w.room, "carol", body);
        }
        // Not reading for two TTLs: the pongs still go out.
        tokio::time::sleep(Duration::from_millis(2_000)).await;
        assert_eq!(w.h.connections(&w.b.id), 1);
        let (got, seqs, other) = domain_events(&mut b, 12).await;
        assert_eq!(got, bodies);
        assert!(seqs.windows(2).all(|s| s[0] < s[1]), "{seqs:?}");
        assert!(
            !other.iter().any(|e| matches!(e, Event::Evicted(_))),
            "no lapse: {other:?}"
        );
        assert!(
            other
                .iter()
                .any(|e| matches!(e, Event::Diagnostic(d) if d.kind == ErrorKind::Limit)),
            "the engine's bound was hit: {other:?}"
        );
        let rest = quiet(&mut b, 400).await;
        assert!(!rest.iter().any(|e| matches!(e, Event::Event { .. })), "{rest:?}");
        b.close().await;
    })
    .await;
}

/// A raw server that answers each connection with the next canned bytes, then closes.
async fn canned(answers: Vec<Vec<u8>>) -> String {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move {
        for answer in answers {
            let Ok((mut tcp, _)) = listener.accept().await else {
                return;
            };
            let mut buf = [0u8; 4096];
            let _ = tcp.read(&mut buf).await;
            let _ = tcp.write_all(&answer).await;
        }
    });
    url
}

/// A raw server that reads each connection's request, lets `answer` write what it will, and
/// holds the connection open (for 10 s at most): a server that never finishes its answer.
async fn holding<F, Fut>(answer: F) -> String
where
    F: Fn(tokio::net::TcpStream) -> Fut + Send + 'static,
    Fut: std::future::Future<Output = tokio::net::TcpStream> + Send,
{
    use tokio::io::AsyncReadExt;
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(tokio::time::timeout(Duration::from_secs(10), async move {
        let mut held = Vec::new();
        while let Ok((mut tcp, _)) = listener.accept().await {
            let mut buf = [0u8; 4096];
            let _ = tcp.read(&mut buf).await;
            held.push(answer(tcp).await);
        }
    }));
    url
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile_http_answers_are_typed_errors() {
    bounded(async {
        let endless_head = [&b"HTTP/1.1 200 OK\r\nX-Pad: "[..], &[b'a'; 20_000]].concat();
        let many_headers = [&b"HTTP/1.1 200 OK\r\n"[..], &b"X-Pad: a\r\n".repeat(100), b"\r\n"].concat();
        let cases: Vec<(&[u8], Result<&str, ErrorKind>)> = vec![
            (b"garbage\r\n\r\n", Err(ErrorKind::Decode)),
            (&endless_head, Err(ErrorKind::Limit)),
            (&many_headers, Err(ErrorKind::Decode)),
            (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", Err(ErrorKind::Decode)),
            (b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n{}", Err(ErrorKind::Closed)),
            (b"HTTP/1.1 200 OK\r\nContent-Length: x\r\n\r\n{}", Err(ErrorKind::Decode)),
            (b"", Err(ErrorKind::Closed)),
            (b"HTTP/1.1 200 OK\r\n\r\n{\"result\":{\"a\":1}}", Ok(r#"{"a":1}"#)),
            (
                b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\n{\"res\r\n9\r\nult\":[1]}\r\n0\r\n\r\n",
                Ok("[1]"),
            ),
            (b"HTTP/1.1 503 Busy\r\nContent-Length: 0\r\n\r\n", Err(ErrorKind::Remote)),
        ];
        let url = canned(cases.iter().map(|(a, _)| a.to_vec()).collect()).await;
        for (answer, expected) in cases {
            let got = switch::op(&url, "k", "a", None, "list_rooms", "{}", switch::DEFAULT_OP_TIMEOUT).await;
            let shown = String::from_utf8_lossy(&answer[..answer.len().min(40)]).into_owned();
            match (got, expected) {
                (Ok(raw), Ok(want)) => assert_eq!(raw.get(), want, "{shown}"),
                (Err(e), Err(kind)) => assert_eq!(e.kind, kind, "{shown}: {e}"),
                (got, want) => panic!("{shown}: {got:?} instead of {want:?}"),
            }
        }
    })
    .await;
}

/// An SSE open whose refusal breaks off in the middle of its body (a half-closed connection 105
/// bytes into a `409 taken_over`, in the delivery review) is no answer, retried: cut, it was a
/// final `HTTP 409` without its code. The next, whole, refusal is the one `connect` fails with.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_sse_refusal_whose_body_breaks_off_is_retried() {
    bounded(async {
        let url = canned(vec![
            b"HTTP/1.1 409 Conflict\r\nContent-Length: 90\r\n\r\n{\"detail\":\"taken_over: conn".to_vec(),
            b"HTTP/1.1 409 Conflict\r\nContent-Length: 33\r\n\r\n{\"detail\":\"room already claimed\"}".to_vec(),
        ])
        .await;
        let w = world(peer_config(Generation::Released)).await;
        let mut cfg = config(&w.b, Transport::Sse, &[]);
        cfg.connect_attempts = Some(2);
        let e = tokio::time::timeout(WAIT, agentwire_native::switch::SwitchClient::connect(&url, "k", cfg))
            .await
            .expect("bounded")
            .unwrap_err();
        assert_eq!((e.status, e.retryable), (Some(409), false), "{e}");
        assert!(e.message.contains("room already claimed"), "{e}");
    })
    .await;
}

/// An SSE open whose refusal's body trickles and is still not over when the driver's wait
/// (`REFUSAL_BODY_WAIT_MS`, 2 s) passes: what came of it is the refusal, so a `409 taken_over`
/// keeps its code (final, not retryable), as in the npm driver (it was an empty body: a
/// retryable 409 without its code).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_sse_refusal_whose_body_trickles_past_the_wait_keeps_its_code() {
    use tokio::io::AsyncWriteExt;
    bounded(async {
        let url = holding(|mut tcp| async move {
            let head = "HTTP/1.1 409 Conflict\r\nTransfer-Encoding: chunked\r\n\r\n";
            let _ = tcp
                .write_all(format!("{head}13\r\n{{\"detail\":\"taken_ov\r\n").as_bytes())
                .await;
            tokio::time::sleep(Duration::from_millis(800)).await;
            let _ = tcp.write_all(b"18\r\ner\",\"code\":\"taken_over\"}\r\n").await;
            tokio::time::sleep(Duration::from_millis(800)).await;
            let _ = tcp.write_all(b"1\r\n \r\n").await; // and never the last chunk
            tcp
        })
        .await;
        let w = world(peer_config(Generation::Released)).await;
        let mut cfg = config(&w.b, Transport::Sse, &[]);
        cfg.open_timeout_ms = 5_000;
        let started = std::time::Instant::now();
        let e = tokio::time::timeout(WAIT, agentwire_native::switch::SwitchClient::connect(&url, "k", cfg))
            .await
            .expect("bounded")
            .unwrap_err();
        assert_eq!(
            (e.status, e.code.as_deref(), e.retryable),
            (Some(409), Some("taken_over"), false),
            "{e}"
        );
        assert!(
            started.elapsed() >= Duration::from_millis(1_900),
            "{:?}",
            started.elapsed()
        );
    })
    .await;
}

/// An SSE open to a server that takes the connection and never answers ends by the engine's open
/// timeout (`open_timeout_ms`; the driver has no deadline of its own on it), and `connect` gives
/// up with a timeout naming it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_sse_open_that_is_never_answered_ends_by_the_engines_open_timeout() {
    bounded(async {
        let url = holding(|tcp| async move { tcp }).await; // answer nothing
        let w = world(peer_config(Generation::Released)).await;
        let mut cfg = config(&w.b, Transport::Sse, &[]);
        cfg.open_timeout_ms = 300;
        let opts = SwitchOptions {
            connect_timeout: Some(Duration::from_millis(1_000)),
            ..SwitchOptions::default()
        };
        let e = agentwire_native::switch::SwitchClient::connect_with(&url, "k", cfg, opts)
            .await
            .unwrap_err();
        assert_eq!(e.kind, ErrorKind::Timeout, "{e}");
        assert!(
            e.message.contains("no connection_state within 300 ms of opening"),
            "{e}"
        );
    })
    .await;
}

/// A server whose `connection_state` cannot be read: `connect` fails at once with the decode
/// error naming the field, not with a timeout after the open deadline.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unreadable_connection_state_fails_connect_at_once_with_its_error() {
    use tokio::io::AsyncWriteExt;
    bounded(async {
        let url = holding(|mut tcp| async move {
            let head = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncache-control: no-cache\r\n\r\n";
            let body = "event: connection_state\ndata: {\"connection_id\":7}\n\n";
            let _ = tcp.write_all(format!("{head}{body}").as_bytes()).await;
            tcp
        })
        .await;
        let w = world(peer_config(Generation::Released)).await;
        let mut cfg = config(&w.b, Transport::Sse, &[]);
        cfg.open_timeout_ms = 5_000;
        let started = std::time::Instant::now();
        let e = agentwire_native::switch::SwitchClient::connect(&url, "k", cfg)
            .await
            .unwrap_err();
        assert_eq!(
            (e.kind, e.code.as_deref(), e.retryable),
            (ErrorKind::Decode, Some("data.connection_id"), false),
            "{e}"
        );
        assert!(e.message.contains("connection_state could not be read"), "{e}");
        assert!(started.elapsed() < Duration::from_secs(4), "{:?}", started.elapsed());
    })
    .await;
}
