//! Reply bodies that are not JSON, from a bare peer on 127.0.0.1: the native client gives them
//! back as the engine's `json::body_value` does (their text as a string), as npm and the
//! component do, rather than failing calls the server already carried out.

mod common;

use agentwire_native::rkt::RktClient;
use agentwire_rkt::{ClientConfig, RequestOptions};
use common::bounded;
use futures_util::{SinkExt, StreamExt};
use serde_json::{json, Value};
use tokio_tungstenite::tungstenite::Message;

/// A peer for one connection that answers every command with `body`: a REQUEST with
/// `Stream: true` with STREAM_BEGIN, one STREAM_DATA and STREAM_END, anything else with a
/// RESPONSE. Returns its `ws://` URL.
async fn answering(body: &'static str) -> String {
    common::rkt_peer(move |mut ws| async move {
        while let Some(Ok(m)) = ws.next().await {
            let Message::Text(t) = m else { continue };
            let Some(id) = t.lines().find_map(|l| l.strip_prefix("Message-ID: ")) else {
                continue;
            };
            let reply = |kind: &str, n: usize, extra: &str, body: &str| {
                format!(
                    "RKT/1.0 {kind}\nVersion: 1\nMessage-ID: r{n}-{id}\nReply-To: {id}\nSession-ID: s-1\n\
                     Timestamp: 2026-06-28T12:00:00Z\n{extra}Content-Type: application/json\n\n{body}"
                )
            };
            let replies = if t.contains("\nStream: true\n") {
                vec![
                    reply("STREAM_BEGIN", 0, "", r#"{"intent":"echo"}"#),
                    reply("STREAM_DATA", 1, "Seq: 0\n", body),
                    reply("STREAM_END", 2, "", r#"{"count":1}"#),
                ]
            } else {
                vec![reply("RESPONSE", 0, "", body)]
            };
            for r in replies {
                if ws.send(Message::text(r)).await.is_err() {
                    return;
                }
            }
        }
    })
    .await
}

#[tokio::test]
async fn a_reply_body_that_is_not_json_is_its_text() {
    bounded(async {
        for body in ["not json", r#""\ud800""#, r#"{"balance":1e400}"#] {
            let cfg = ClientConfig {
                keepalive: false,
                ..ClientConfig::default()
            };
            let c = RktClient::connect(&answering(body).await, cfg).await.unwrap();
            let text = Value::String(body.into());
            let opts = RequestOptions::default;
            assert_eq!(c.request("echo", None, opts()).await.unwrap(), text, "request");
            assert_eq!(c.pay(1.0, "RKTT", None, None).await.unwrap(), text, "pay");
            assert_eq!(
                c.memory_set("k", json!(1), None, None).await.unwrap(),
                text,
                "memory_set"
            );
            assert_eq!(c.discover().await.unwrap(), text, "discover");
            let mut chunks = c.stream("echo", None, opts()).await.unwrap();
            assert_eq!(chunks.recv().await.unwrap().unwrap(), text, "stream chunk");
            assert!(chunks.recv().await.is_none(), "the stream ends");
            // MEMORY_GET reads its reply: a string is not the object it needs.
            let e = c.memory_get("k", None).await.unwrap_err();
            assert_eq!(e.kind(), agentwire_core::ErrorKind::Decode, "{e}");
            c.close().await;
        }
        // A body that is JSON is still its value.
        let c = RktClient::connect(&answering(r#"{"ok":true}"#).await, ClientConfig::default())
            .await
            .unwrap();
        assert_eq!(
            c.request("echo", None, RequestOptions::default()).await.unwrap(),
            json!({"ok": true})
        );
    })
    .await
}
