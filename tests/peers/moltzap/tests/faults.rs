//! Each fault, and the current generation's pings.

mod common;

use agentwire_peer_moltzap::{Faults, Generation, PeerConfig, Step, GARBAGE};
use common::*;
use futures_util::{SinkExt, StreamExt};
use std::time::{Duration, Instant};
use tokio_tungstenite::tungstenite::Message;

async fn bounded<F: std::future::Future<Output = ()>>(f: F) {
    tokio::time::timeout(Duration::from_secs(20), f)
        .await
        .expect("test timed out");
}

/// How the socket ended: `Some(code)` for a close frame, `None` for an abrupt end.
async fn end_of(w: &mut Ws) -> Option<u16> {
    tokio::time::timeout(WAIT, async {
        loop {
            match w.next().await {
                Some(Ok(Message::Close(f))) => return f.map(|f| u16::from(f.code)),
                Some(Ok(Message::Text(t))) => panic!("unexpected text {t}"),
                Some(Ok(_)) => continue,
                Some(Err(_)) | None => return None,
            }
        }
    })
    .await
    .expect("socket did not end")
}

fn ping() -> String {
    rreq("p", "system/ping", "{}")
}

#[tokio::test]
async fn drop_after_frames() {
    bounded(async {
        let h = peer(PeerConfig::new(Generation::Released).with_faults(Faults {
            drop_after_frames: Some(2),
            ..Faults::default()
        }))
        .await;
        let (_, key) = register(&h, "drop-n").await;
        let mut w = ws(&h).await;
        auth_released(&mut w, &key).await;
        assert!(call(&mut w, &ping()).await["result"]["ts"].is_string());
        assert_eq!(end_of(&mut w).await, None);
        h.shutdown().await;
    })
    .await;
}

#[tokio::test]
async fn drop_at_steps() {
    bounded(async {
        let h = released().await;
        let (_, key) = register(&h, "drop-step").await;
        // At the upgrade: the WebSocket handshake fails.
        h.set_faults(Faults {
            drop_at: Some(Step::Upgrade),
            ..Faults::default()
        });
        let r = tokio::time::timeout(WAIT, tokio_tungstenite::connect_async(h.ws_url()))
            .await
            .unwrap();
        assert!(r.is_err());
        // After connect: the HelloOk arrives, then the socket drops.
        h.set_faults(Faults {
            drop_at: Some(Step::AfterConnect),
            ..Faults::default()
        });
        let mut w = ws(&h).await;
        auth_released(&mut w, &key).await;
        assert_eq!(end_of(&mut w).await, None);
        // Before answering a method: no answer.
        h.set_faults(Faults {
            drop_at: Some(Step::BeforeAnswer("system/ping".into())),
            ..Faults::default()
        });
        let mut w = ws(&h).await;
        auth_released(&mut w, &key).await;
        send(&mut w, &ping()).await;
        assert_eq!(end_of(&mut w).await, None);
        // After answering it.
        h.set_faults(Faults {
            drop_at: Some(Step::AfterAnswer("system/ping".into())),
            ..Faults::default()
        });
        let mut w = ws(&h).await;
        auth_released(&mut w, &key).await;
        assert!(call(&mut w, &ping()).await["result"].is_object());
        assert_eq!(end_of(&mut w).await, None);
        // Cleared: a normal session.
        h.set_faults(Faults::default());
        let mut w = ws(&h).await;
        auth_released(&mut w, &key).await;
        assert!(call(&mut w, &ping()).await["result"].is_object());
        h.shutdown().await;
    })
    .await;
}

#[tokio::test]
async fn delay_and_never_answer() {
    bounded(async {
        let h = released().await;
        let (_, key) = register(&h, "slowpoke").await;
        let (_, kb) = register(&h, "slow-b").await;
        let mut w = ws(&h).await;
        let mut b = ws(&h).await;
        auth_released(&mut w, &key).await;
        auth_released(&mut b, &kb).await;
        h.set_faults(Faults {
            delay_ms: vec![("system/ping".into(), 300)],
            never_answer: vec!["messages/send".into()],
            ..Faults::default()
        });
        let t = Instant::now();
        send(&mut w, &rreq("d", "system/ping", "{}")).await;
        send(&mut w, &rreq("q", "agents/list", "{}")).await;
        // The undelayed answer overtakes the delayed one.
        assert_eq!(next_json(&mut w).await["id"], "q");
        assert_eq!(next_json(&mut w).await["id"], "d");
        assert!(t.elapsed() >= Duration::from_millis(300));
        // Never answered, but the message is still delivered.
        send(
            &mut w,
            &rreq(
                "n",
                "messages/send",
                r#"{"to":"agent:slow-b","parts":[{"type":"text","text":"x"}]}"#,
            ),
        )
        .await;
        assert_eq!(next_json(&mut b).await["event"], "messages/received");
        silent(&mut w, Duration::from_millis(200)).await;
        h.shutdown().await;
    })
    .await;
}

#[tokio::test]
async fn garbage_before_next_answer() {
    bounded(async {
        let h = current().await;
        let (_, key) = register(&h, "garbage").await;
        let mut w = ws(&h).await;
        auth_current(&mut w, &key).await;
        h.set_faults(Faults {
            garbage_before_answers: 1,
            ..Faults::default()
        });
        send(&mut w, &creq("1", "system/ping", "{}")).await;
        assert_eq!(next_text(&mut w).await, GARBAGE);
        assert_eq!(next_json(&mut w).await["id"], "1");
        // Only once.
        assert_eq!(call(&mut w, &creq("2", "system/ping", "{}")).await["id"], "2");
        assert_eq!(h.faults().garbage_before_answers, 0);
        h.shutdown().await;
    })
    .await;
}

fn pinging(ms: u64) -> PeerConfig {
    PeerConfig::new(Generation::Current).with_ping_interval(Duration::from_millis(ms))
}

#[tokio::test]
async fn healthy_client_keeps_its_socket() {
    bounded(async {
        // Pings every 200 ms: three missed (a pause of 600 ms on a loaded machine) close it.
        let h = peer(pinging(200)).await;
        let (_, key) = register(&h, "ponger").await;
        let mut w = ws(&h).await;
        auth_current(&mut w, &key).await;
        // tungstenite answers pings while the client reads.
        let mut pings = 0;
        let until = Instant::now() + Duration::from_millis(2_000);
        while let Ok(m) = tokio::time::timeout_at(until.into(), w.next()).await {
            match m {
                Some(Ok(Message::Ping(_))) => pings += 1,
                other => panic!("{other:?}"),
            }
        }
        assert!(pings >= 5, "{pings} pings");
        assert!(call(&mut w, &creq("1", "system/ping", "{}")).await["result"]["ts"].is_string());
        h.shutdown().await;
    })
    .await;
}

#[tokio::test]
async fn silent_client_is_closed_after_three_pings() {
    bounded(async {
        let h = peer(pinging(40)).await;
        let (_, key) = register(&h, "deaf").await;
        let mut w = ws(&h).await;
        auth_current(&mut w, &key).await;
        // Not reading: no pong goes out.
        tokio::time::sleep(Duration::from_millis(400)).await;
        let mut pings = 0;
        let code = tokio::time::timeout(WAIT, async {
            loop {
                match w.next().await {
                    Some(Ok(Message::Ping(_))) => pings += 1,
                    Some(Ok(Message::Close(f))) => return f.map(|f| u16::from(f.code)),
                    Some(Ok(m)) => panic!("{m:?}"),
                    Some(Err(_)) | None => return None,
                }
            }
        })
        .await
        .unwrap();
        assert_eq!((pings, code), (3, Some(1001)));
        h.shutdown().await;
    })
    .await;
}

#[tokio::test]
async fn ignored_pongs_and_no_pings() {
    bounded(async {
        let h = peer(pinging(30).with_faults(Faults {
            ignore_pongs: true,
            ..Faults::default()
        }))
        .await;
        let (_, key) = register(&h, "ignored").await;
        let mut w = ws(&h).await;
        auth_current(&mut w, &key).await;
        assert_eq!(end_of(&mut w).await, Some(1001)); // reading (so ponging) does not help
        h.set_faults(Faults {
            no_pings: true,
            ..Faults::default()
        });
        let mut w = ws(&h).await;
        auth_current(&mut w, &key).await;
        let got = tokio::time::timeout(Duration::from_millis(300), w.next()).await;
        assert!(got.is_err(), "{got:?}");
        h.shutdown().await;
    })
    .await;
}

#[tokio::test]
async fn slow_consumer_is_cut_off() {
    bounded(async {
        let mut cfg = PeerConfig::new(Generation::Released);
        cfg.outbound_queue = 2;
        let h = peer(cfg).await;
        let (_, ka) = register(&h, "fast-a").await;
        let (_, kb) = register(&h, "slow-b2").await;
        let mut a = ws(&h).await;
        let mut b = ws(&h).await;
        auth_released(&mut a, &ka).await;
        auth_released(&mut b, &kb).await;
        // B stops reading; A sends ~10 MB to B.
        let text = "y".repeat(32_000);
        let frame = rreq(
            "s",
            "messages/send",
            &format!(r#"{{"to":"agent:slow-b2","parts":[{{"type":"text","text":"{text}"}}]}}"#),
        );
        let (mut sink, mut stream) = a.split();
        let answers = tokio::spawn(async move {
            let mut n = 0;
            while n < 300 {
                match stream.next().await {
                    Some(Ok(Message::Text(t))) => {
                        assert!(t.contains(r#""result""#), "{t}");
                        n += 1;
                    }
                    Some(Ok(_)) => {}
                    other => panic!("{other:?}"),
                }
            }
        });
        for _ in 0..300 {
            sink.feed(Message::text(frame.clone())).await.unwrap();
        }
        sink.flush().await.unwrap();
        answers.await.unwrap();
        let mut events = 0;
        let ended = tokio::time::timeout(WAIT, async {
            loop {
                match b.next().await {
                    Some(Ok(Message::Text(_))) => events += 1,
                    Some(Ok(Message::Close(f))) => return f.map(|f| u16::from(f.code)),
                    Some(Ok(_)) => {}
                    Some(Err(_)) | None => return None,
                }
            }
        })
        .await
        .unwrap();
        assert!(events < 300, "all {events} events arrived");
        assert!(matches!(ended, None | Some(1008)), "{ended:?}");
        // The peer forgets B (its close handshake may still be finishing).
        let t = Instant::now();
        while h.connections() != 1 {
            assert!(t.elapsed() < WAIT, "{} connections", h.connections());
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        h.shutdown().await;
    })
    .await;
}

/// A client that stops reading: once the TCP buffers are full a write blocks; it is bounded by
/// `write_timeout`, then the connection is dropped (before, the write blocked for good: nothing
/// was read, no ping went out, the 3-missed-pings close never came).
#[tokio::test]
async fn a_client_that_stops_reading_is_cut_off() {
    bounded(async {
        // Pings every 2 s, not faster: `b` reads nothing while each 330 KiB call is framed, and on
        // a loaded machine a 100 ms ping interval cut `b` (3 missed) instead of `a`.
        let mut cfg = pinging(2_000);
        cfg.write_timeout = Duration::from_millis(300);
        let h = peer(cfg).await;
        let (_, ka) = register(&h, "stuck").await;
        let (_, kb) = register(&h, "flooder").await;
        let mut a = ws(&h).await;
        auth_current(&mut a, &ka).await;
        let mut b = ws(&h).await;
        auth_current(&mut b, &kb).await;
        // `a` reads nothing from here on. 64 messages of 10 x 32 KiB text: about 20 MiB for `a`.
        let part = format!(r#"{{"type":"text","text":"{}"}}"#, "x".repeat(32_768));
        let parts = vec![part; 10].join(",");
        let send = format!(r#"{{"to":"agent:stuck","parts":[{parts}]}}"#);
        for i in 0..64 {
            let answer = call(&mut b, &creq(&format!("m{i}"), "messages/send", &send)).await;
            assert!(answer.get("result").is_some(), "{}", answer["error"]);
            if h.connections() == 1 {
                break;
            }
        }
        // `b` keeps reading (its pings answered) while `a` is cut off.
        for _ in 0..100 {
            if h.connections() == 1 {
                break;
            }
            assert!(call(&mut b, &creq("p", "system/ping", "{}")).await["result"]["ts"].is_string());
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        assert_eq!(h.connections(), 1, "the stuck connection is still open");
        assert!(call(&mut b, &creq("p", "system/ping", "{}")).await["result"]["ts"].is_string());
        drop(a);
        h.shutdown().await;
    })
    .await;
}

/// The helper `silent` fails on a socket that ended: a dropped socket is not silence.
#[tokio::test]
#[should_panic(expected = "socket ended")]
async fn silent_fails_when_the_socket_ended() {
    let h = peer(PeerConfig::new(Generation::Current).with_faults(Faults {
        drop_at: Some(Step::AfterConnect),
        ..Faults::default()
    }))
    .await;
    let (_, key) = register(&h, "dropped").await;
    let mut w = ws(&h).await;
    auth_current(&mut w, &key).await;
    silent(&mut w, Duration::from_millis(500)).await;
}
