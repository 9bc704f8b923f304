//! The reference server seen through a raw WebSocket, on 127.0.0.1.

mod common;

use agentwire_rkt::reference::ReferenceConfig;
use common::{bounded, server};
use futures_util::{SinkExt, StreamExt};
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;
use tokio_tungstenite::tungstenite::{Error as WsError, Message};

type Raw = tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

async fn raw(url: &str, subprotocol: Option<&str>) -> Result<Raw, WsError> {
    let mut req = url.into_client_request().unwrap();
    if let Some(p) = subprotocol {
        req.headers_mut().insert("Sec-WebSocket-Protocol", p.parse().unwrap());
    }
    tokio_tungstenite::connect_async(req).await.map(|(ws, _)| ws)
}

fn refusal(result: Result<Raw, WsError>) -> (u16, String) {
    match result {
        Err(WsError::Http(resp)) => {
            let body = String::from_utf8_lossy(resp.body().as_deref().unwrap_or_default()).into_owned();
            (resp.status().as_u16(), body)
        }
        Err(e) => panic!("expected an HTTP refusal, got {e}"),
        Ok(_) => panic!("expected an HTTP refusal, got a WebSocket"),
    }
}

async fn next_text(ws: &mut Raw) -> String {
    loop {
        match ws.next().await.expect("socket ended").expect("socket failed") {
            Message::Text(t) => return t.to_string(),
            Message::Ping(_) | Message::Pong(_) => continue,
            other => panic!("expected text, got {other:?}"),
        }
    }
}

fn message(kind: &str, id: &str, extra: &str, body: Option<&str>) -> String {
    let mut m = format!(
        "RKT/1.0 {kind}\nVersion: 1\nMessage-ID: {id}\nSession-ID: s-1\nTimestamp: 2026-06-28T12:00:00Z\nTTL: 30\n{extra}"
    );
    if let Some(b) = body {
        m.push_str(&format!("Content-Type: application/json\n\n{b}"));
    }
    m
}

async fn hello(ws: &mut Raw) {
    ws.send(Message::text(message(
        "HELLO",
        "h-1",
        "User-Agent: raw/1\n",
        Some(r#"{"min_version":1,"max_version":1}"#),
    )))
    .await
    .unwrap();
    let ack = next_text(ws).await;
    assert!(
        ack.starts_with("RKT/1.0 HELLO_ACK\n") && ack.contains("Reply-To: h-1\n"),
        "{ack}"
    );
}

#[tokio::test]
async fn upgrade_without_the_subprotocol_is_refused() {
    bounded(async {
        let srv = server(ReferenceConfig::default()).await;
        let (status, body) = refusal(raw(&srv.url(), None).await);
        assert_eq!(status, 400);
        assert!(body.contains("subprotocol rkt.1.0 is required"), "{body}");
        let (status, _) = refusal(raw(&srv.url(), Some("chat, superchat")).await);
        assert_eq!(status, 400);
    })
    .await
}

#[tokio::test]
async fn upgrade_off_the_rkt_path_is_refused() {
    bounded(async {
        let srv = server(ReferenceConfig::default()).await;
        let (status, body) = refusal(raw(&format!("ws://{}/", srv.local_addr()), Some("rkt.1.0")).await);
        assert_eq!(status, 404);
        assert!(body.contains("/rkt"), "{body}");
        let (status, _) = refusal(raw(&format!("ws://{}/rkt/x", srv.local_addr()), Some("rkt.1.0")).await);
        assert_eq!(status, 404);
    })
    .await
}

/// An upgrade with `rkt.1.0` and `headers` (`Host` replaces the URL's).
async fn with_headers(url: &str, headers: &[(&'static str, String)]) -> Result<Raw, WsError> {
    let mut req = url.into_client_request().unwrap();
    req.headers_mut()
        .insert("Sec-WebSocket-Protocol", "rkt.1.0".parse().unwrap());
    for (name, value) in headers {
        req.headers_mut().insert(*name, value.parse().unwrap());
    }
    tokio_tungstenite::connect_async(req).await.map(|(ws, _)| ws)
}

/// Any website's page can open a WebSocket to 127.0.0.1 (the browser sends its Origin), and after
/// DNS rebinding reach it under its own name (Host): both get 403, pages on this machine and
/// native clients (no Origin) are served.
#[tokio::test]
async fn upgrade_from_another_sites_page_is_refused() {
    bounded(async {
        let srv = server(ReferenceConfig::default()).await;
        let port = srv.local_addr().port();
        let url = srv.url();
        for headers in [
            vec![("Origin", "http://evil.example".to_owned())],
            vec![("Origin", "null".to_owned())],
            vec![("Origin", format!("http://localhost.evil.example:{port}"))],
            vec![("Host", format!("evil.example:{port}"))],
            vec![("Host", format!("127.0.0.1.evil.example:{port}"))],
            vec![
                ("Host", format!("evil.example:{port}")),
                ("Origin", format!("http://evil.example:{port}")),
            ],
        ] {
            let (status, body) = refusal(with_headers(&url, &headers).await);
            assert_eq!(status, 403, "{headers:?}");
            assert!(body.contains("127.0.0.1, localhost or [::1]"), "{body}");
        }
        for headers in [
            vec![],
            vec![("Origin", "http://127.0.0.1:7700".to_owned())],
            vec![
                ("Host", format!("LOCALHOST:{port}")),
                ("Origin", "http://localhost:7700".to_owned()),
            ],
            vec![
                ("Host", format!("[::1]:{port}")),
                ("Origin", "https://[::1]".to_owned()),
            ],
        ] {
            let mut ws = with_headers(&url, &headers)
                .await
                .unwrap_or_else(|e| panic!("{headers:?}: {e}"));
            hello(&mut ws).await;
        }
    })
    .await
}

#[tokio::test]
async fn allowed_origins_may_connect_too() {
    bounded(async {
        let srv = server(ReferenceConfig {
            allowed_origins: vec!["https://app.example".into()],
            ..ReferenceConfig::default()
        })
        .await;
        let origin = |o: &str| vec![("Origin", o.to_owned())];
        let mut ws = with_headers(&srv.url(), &origin("https://app.example")).await.unwrap();
        hello(&mut ws).await;
        let (status, _) = refusal(with_headers(&srv.url(), &origin("https://evil.example")).await);
        assert_eq!(status, 403);
        let (status, _) = refusal(with_headers(&srv.url(), &origin("http://app.example")).await);
        assert_eq!(status, 403);
    })
    .await
}

#[tokio::test]
async fn upgrade_echoes_the_subprotocol_among_several() {
    bounded(async {
        let srv = server(ReferenceConfig::default()).await;
        let mut req = srv.url().into_client_request().unwrap();
        req.headers_mut()
            .insert("Sec-WebSocket-Protocol", "other, rkt.1.0".parse().unwrap());
        let (mut ws, resp) = tokio_tungstenite::connect_async(req).await.unwrap();
        assert_eq!(resp.headers()["Sec-WebSocket-Protocol"], "rkt.1.0");
        hello(&mut ws).await;
    })
    .await
}

#[tokio::test]
async fn malformed_message_gets_an_error_and_the_session_goes_on() {
    bounded(async {
        let srv = server(ReferenceConfig::default()).await;
        let mut ws = raw(&srv.url(), Some("rkt.1.0")).await.unwrap();
        hello(&mut ws).await;
        let bad =
            message("REQUEST", "bad-1", "", Some(r#"{"intent":"echo"}"#)).replace("2026-06-28T12:00:00Z", "yesterday");
        ws.send(Message::text(bad)).await.unwrap();
        let err = next_text(&mut ws).await;
        assert!(err.starts_with("RKT/1.0 ERROR\n"), "{err}");
        assert!(err.contains("Reply-To: bad-1\n"), "{err}");
        assert!(err.contains("Timestamp") && err.contains("\"code\":400"), "{err}");

        ws.send(Message::text(message(
            "REQUEST",
            "ok-1",
            "",
            Some(r#"{"intent":"echo","params":{"a":1}}"#),
        )))
        .await
        .unwrap();
        let resp = next_text(&mut ws).await;
        assert!(
            resp.starts_with("RKT/1.0 RESPONSE\n") && resp.contains("Reply-To: ok-1\n"),
            "{resp}"
        );
        let body: serde_json::Value = serde_json::from_str(resp.split_once("\n\n").unwrap().1).unwrap();
        assert_eq!(body, serde_json::json!({"intent": "echo", "data": {"a": 1}}));
    })
    .await
}

#[tokio::test]
async fn oversized_messages_get_413_or_close_1009() {
    bounded(async {
        let srv = server(ReferenceConfig::default()).await;
        let limit = agentwire_rkt::codec::DEFAULT_MAX_MESSAGE_SIZE;
        let mut ws = raw(&srv.url(), Some("rkt.1.0")).await.unwrap();
        hello(&mut ws).await;
        let body = format!(r#"{{"intent":"echo","params":"{}"}}"#, "x".repeat(limit));
        ws.send(Message::text(message("REQUEST", "big-1", "", Some(&body))))
            .await
            .unwrap();
        let err = next_text(&mut ws).await;
        assert!(
            err.starts_with("RKT/1.0 ERROR\n") && err.contains("\"code\":413"),
            "{err}"
        );

        let huge = "x".repeat(2 * limit);
        ws.send(Message::text(huge)).await.unwrap();
        match ws.next().await {
            Some(Ok(Message::Close(Some(frame)))) => assert_eq!(frame.code, CloseCode::Size),
            other => panic!("expected close 1009, got {other:?}"),
        }
    })
    .await
}
