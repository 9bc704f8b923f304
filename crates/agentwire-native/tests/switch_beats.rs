//! `SwitchClient` on the SSE wire against a hand-made server that holds a beat's answer until
//! after the stream it was sent for has ended: the engine forgot that beat when the driver
//! reported the stream gone, so its answer is not the engine's to hear.

mod switch_common;

use agentwire_core::Entropy;
use agentwire_native::switch::SwitchClient;
use agentwire_native::OsEntropy;
use agentwire_switch::open::OpenParams;
use agentwire_switch::{ConnectionConfig, Event, Transport};
use std::time::Duration;
use switch_common::*;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;

/// Reads a request's head (and its short body, which is not looked at): its first line.
async fn request_line(s: &mut TcpStream) -> String {
    let mut buf = Vec::new();
    let mut byte = [0u8; 1024];
    while !buf.windows(4).any(|w| w == b"\r\n\r\n") {
        let n = s.read(&mut byte).await.unwrap();
        assert!(n > 0, "the request ended early");
        buf.extend_from_slice(&byte[..n]);
    }
    String::from_utf8_lossy(&buf)
        .lines()
        .next()
        .unwrap_or_default()
        .to_owned()
}

/// Each stream gets `connection_state` (beats every 200 ms) and stays open, but the first ends
/// once its first beat came; that beat is answered 300 ms after, later ones at once.
async fn serve(listener: TcpListener, agent: String, cid: String) {
    let (beat_tx, mut beat_rx) = mpsc::unbounded_channel::<TcpStream>();
    let mut streams = 0;
    let mut kept = Vec::new();
    let mut first_stream: Option<TcpStream> = None;
    let mut beats = 0;
    loop {
        tokio::select! {
            accepted = listener.accept() => {
                let Ok((mut s, _)) = accepted else { return };
                let line = request_line(&mut s).await;
                if line.starts_with("GET ") {
                    streams += 1;
                    let state = format!(
                        r#"{{"connection_id":"{cid}","agent_id":"{agent}","scope":"single","filter":"all","spawn_capable":false,"rooms":[],"cursor":0,"protocol":1,"heartbeat_interval_seconds":0.2}}"#
                    );
                    let head = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\n\r\n";
                    let _ = s.write_all(format!("{head}event: connection_state\ndata: {state}\n\n").as_bytes()).await;
                    match streams {
                        1 => first_stream = Some(s),
                        _ => kept.push(s),
                    }
                } else {
                    let _ = beat_tx.send(s);
                }
            }
            Some(beat) = beat_rx.recv() => {
                beats += 1;
                let answer = |mut beat: TcpStream| async move {
                    let body = r#"{"ok":true}"#;
                    let _ = beat
                        .write_all(format!("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}", body.len()).as_bytes())
                        .await;
                };
                if beats == 1 {
                    // The stream it was sent for ends first.
                    drop(first_stream.take());
                    tokio::spawn(async move {
                        tokio::time::sleep(Duration::from_millis(300)).await;
                        answer(beat).await;
                    });
                } else {
                    answer(beat).await;
                }
            }
        }
    }
}

#[tokio::test]
async fn a_beat_answered_after_its_stream_ended_is_not_reported_to_the_engine() {
    bounded(async {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let (agent, cid) = (OsEntropy.uuid_v4(), OsEntropy.uuid_v4());
        tokio::spawn(serve(listener, agent.clone(), cid.clone()));
        let mut cfg = ConnectionConfig::new(OpenParams::new(agent, cid));
        cfg.transport = Transport::Sse;
        let mut client = tokio::time::timeout(WAIT, SwitchClient::connect(&url, "sk_test", cfg))
            .await
            .expect("connect is bounded")
            .expect("connected");
        // The first beat comes 200 ms after the attach, the stream ends, its answer 300 ms later.
        let seen = quiet(&mut client, 2_000).await;
        assert!(
            seen.iter().any(|e| matches!(e, Event::Disconnected { .. })),
            "the stream ended: {seen:?}"
        );
        let late: Vec<_> = seen
            .iter()
            .filter(|e| matches!(e, Event::Diagnostic(d) if d.message.contains("not waiting")))
            .collect();
        assert!(
            late.is_empty(),
            "the old stream's beat answer reached the engine: {late:?}"
        );
        client.close().await;
    })
    .await;
}
