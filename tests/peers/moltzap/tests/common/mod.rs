//! Test helpers: a raw HTTP client, a plain tokio-tungstenite client, and normalization of
//! uuids and timestamps. Every wait is bounded.
#![allow(dead_code)]

use agentwire_peer_moltzap::{spawn, Generation, PeerConfig, PeerHandle};
use futures_util::{SinkExt, StreamExt};
use serde_json::Value;
use std::net::SocketAddr;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::{MaybeTlsStream, WebSocketStream};

pub const WAIT: Duration = Duration::from_secs(5);

pub type Ws = WebSocketStream<MaybeTlsStream<TcpStream>>;

pub async fn peer(cfg: PeerConfig) -> PeerHandle {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    spawn(listener, cfg).unwrap()
}

pub async fn released() -> PeerHandle {
    peer(PeerConfig::new(Generation::Released)).await
}

pub async fn current() -> PeerHandle {
    peer(PeerConfig::new(Generation::Current)).await
}

/// One HTTP/1.1 request; (status, body).
pub async fn http(addr: SocketAddr, method: &str, path: &str, body: Option<&str>) -> (u16, String) {
    tokio::time::timeout(WAIT, async {
        let mut tcp = TcpStream::connect(addr).await.unwrap();
        let body = body.unwrap_or("");
        let req = format!(
            "{method} {path} HTTP/1.1\r\nhost: {addr}\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{body}",
            body.len()
        );
        tcp.write_all(req.as_bytes()).await.unwrap();
        let mut out = Vec::new();
        tcp.read_to_end(&mut out).await.unwrap();
        let text = String::from_utf8(out).unwrap();
        let status = text[9..12].parse().unwrap();
        let body = text.split_once("\r\n\r\n").map(|(_, b)| b.to_string()).unwrap_or_default();
        (status, body)
    })
    .await
    .expect("HTTP request timed out")
}

/// Registers `name`: (agentId, apiKey).
pub async fn register(h: &PeerHandle, name: &str) -> (String, String) {
    let (status, body) = http(
        h.local_addr(),
        "POST",
        "/api/v1/auth/register",
        Some(&format!(r#"{{"name":"{name}"}}"#)),
    )
    .await;
    assert_eq!(status, 201, "{body}");
    let v: Value = serde_json::from_str(&body).unwrap();
    (
        v["agentId"].as_str().unwrap().to_string(),
        v["apiKey"].as_str().unwrap().to_string(),
    )
}

pub async fn ws(h: &PeerHandle) -> Ws {
    let (ws, _) = tokio::time::timeout(WAIT, tokio_tungstenite::connect_async(h.ws_url()))
        .await
        .expect("connect timed out")
        .expect("connect failed");
    ws
}

pub async fn send(ws: &mut Ws, text: &str) {
    tokio::time::timeout(WAIT, ws.send(Message::text(text.to_string())))
        .await
        .expect("send timed out")
        .expect("send failed");
}

/// The next text message (pings and pongs skipped), or None when the socket ended.
pub async fn next_text_within(ws: &mut Ws, wait: Duration) -> Option<String> {
    tokio::time::timeout(wait, async {
        loop {
            match ws.next().await {
                Some(Ok(Message::Text(t))) => return Some(t.to_string()),
                Some(Ok(Message::Ping(_) | Message::Pong(_) | Message::Frame(_))) => continue,
                Some(Ok(Message::Binary(_))) => panic!("binary message"),
                Some(Ok(Message::Close(_))) | Some(Err(_)) | None => return None,
            }
        }
    })
    .await
    .expect("no message in time")
}

pub async fn next_text(ws: &mut Ws) -> String {
    next_text_within(ws, WAIT).await.expect("socket ended")
}

pub async fn next_json(ws: &mut Ws) -> Value {
    serde_json::from_str(&next_text(ws).await).unwrap()
}

/// Nothing arrives within `wait` (pings skipped), and the socket is still open: a close, an
/// error or the end of the stream fails (a dropped socket is not silence).
pub async fn silent(ws: &mut Ws, wait: Duration) {
    let got = tokio::time::timeout(wait, async {
        loop {
            match ws.next().await {
                Some(Ok(Message::Text(t))) => return format!("unexpected message {t}"),
                Some(Ok(Message::Ping(_) | Message::Pong(_) | Message::Frame(_))) => continue,
                Some(Ok(Message::Binary(b))) => return format!("unexpected binary message of {} bytes", b.len()),
                Some(Ok(Message::Close(f))) => return format!("socket ended: close {f:?}"),
                Some(Err(e)) => return format!("socket ended: {e}"),
                None => return "socket ended".to_string(),
            }
        }
    })
    .await;
    if let Ok(what) = got {
        panic!("{what}");
    }
}

/// A request and its answer.
pub async fn call(ws: &mut Ws, frame: &str) -> Value {
    send(ws, frame).await;
    next_json(ws).await
}

/// Released request text.
pub fn rreq(id: &str, method: &str, params: &str) -> String {
    format!(r#"{{"jsonrpc":"2.0","type":"request","id":"{id}","method":"{method}","params":{params}}}"#)
}

/// Current request text.
pub fn creq(id: &str, method: &str, params: &str) -> String {
    format!(r#"{{"jsonrpc":"2.0","id":"{id}","method":"{method}","params":{params}}}"#)
}

pub async fn auth_released(ws: &mut Ws, key: &str) -> Value {
    let v = call(
        ws,
        &rreq(
            "auth",
            "auth/connect",
            &format!(r#"{{"agentKey":"{key}","minProtocol":"1","maxProtocol":"1"}}"#),
        ),
    )
    .await;
    assert!(v.get("result").is_some(), "{v}");
    v
}

pub async fn auth_current(ws: &mut Ws, key: &str) -> Value {
    let v = call(
        ws,
        &creq(
            "auth",
            "agent/network/connect",
            &format!(r#"{{"agentKey":"{key}","minProtocol":"2026.811.0","maxProtocol":"2026.811.0"}}"#),
        ),
    )
    .await;
    assert_eq!(v["result"], serde_json::json!({}), "{v}");
    v
}

fn is_uuid(s: &[u8]) -> bool {
    s.len() == 36
        && s.iter().enumerate().all(|(i, c)| match i {
            8 | 13 | 18 | 23 => *c == b'-',
            _ => c.is_ascii_hexdigit(),
        })
}

fn is_ts(s: &[u8]) -> bool {
    // 2026-12-02T12:36:49.731Z
    const SHAPE: &[u8] = b"dddd-dd-ddTdd:dd:dd.dddZ";
    s.len() == SHAPE.len()
        && s.iter().zip(SHAPE).all(|(c, p)| match p {
            b'd' => c.is_ascii_digit(),
            _ => c == p,
        })
}

/// Replaces uuids with `<uuid>` and ISO timestamps with `<ts>`; returns the uuids in order.
pub fn normalize(text: &str) -> (String, Vec<String>) {
    let b = text.as_bytes();
    let (mut out, mut ids, mut i) = (String::with_capacity(text.len()), Vec::new(), 0);
    while i < b.len() {
        if i + 36 <= b.len() && is_uuid(&b[i..i + 36]) {
            ids.push(text[i..i + 36].to_string());
            out.push_str("<uuid>");
            i += 36;
        } else if i + 24 <= b.len() && is_ts(&b[i..i + 24]) {
            out.push_str("<ts>");
            i += 24;
        } else {
            let ch = text[i..].chars().next().unwrap();
            out.push(ch);
            i += ch.len_utf8();
        }
    }
    (out, ids)
}
