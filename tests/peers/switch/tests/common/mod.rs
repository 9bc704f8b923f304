//! Test helpers: a tiny HTTP/1.1 client (plain answers, and the SSE stream with its chunked
//! body decoded), a tokio-tungstenite WebSocket client with the `Authorization` header, and
//! frame readers. Every wait is bounded.
#![allow(dead_code)]

mod sse;
#[allow(unused_imports)]
pub use sse::*;

use agentwire_peer_switch::{spawn, Agent, Generation, PeerConfig, PeerHandle};
use futures_util::{SinkExt, StreamExt};
use serde_json::Value;
use std::net::SocketAddr;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::{MaybeTlsStream, WebSocketStream};

pub const WAIT: Duration = Duration::from_secs(5);

pub type Ws = WebSocketStream<MaybeTlsStream<TcpStream>>;

/// Runs a test body with an overall bound.
pub async fn bounded<F: std::future::Future<Output = ()>>(f: F) {
    tokio::time::timeout(Duration::from_secs(20), f)
        .await
        .expect("test timed out");
}

/// Short intervals: pings every 100 ms, a TTL of 5 s (tests that lapse set their own).
pub fn cfg(generation: Generation) -> PeerConfig {
    let mut c = PeerConfig::new(generation);
    c.heartbeat_interval = Duration::from_millis(100);
    c.heartbeat_ttl = Duration::from_secs(5);
    c
}

pub async fn peer(cfg: PeerConfig) -> PeerHandle {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    spawn(listener, cfg).unwrap()
}

/// A peer with agents alice and bob in room lobby.
pub async fn world(generation: Generation) -> (PeerHandle, Agent, Agent, String) {
    let h = peer(cfg(generation)).await;
    let (a, b) = (h.add_agent("alice"), h.add_agent("bob"));
    let room = h.add_room("lobby", &[&a.id, &b.id]);
    (h, a, b, room)
}

/// A fresh connection id (a UUID v4).
pub fn cid() -> String {
    agentwire_peer_kit::ids::uuid()
}

// ---- HTTP ------------------------------------------------------------------------------

#[derive(Debug)]
pub struct Resp {
    pub status: u16,
    pub head: String,
    pub body: String,
}

impl Resp {
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.body).unwrap_or_else(|e| panic!("not JSON ({e}): {}", self.body))
    }

    pub fn header(&self, name: &str) -> Option<String> {
        self.head.lines().find_map(|l| {
            let (n, v) = l.split_once(':')?;
            n.eq_ignore_ascii_case(name).then(|| v.trim().to_string())
        })
    }
}

fn request_text(addr: SocketAddr, method: &str, path: &str, headers: &[(&str, &str)], body: Option<&str>) -> String {
    let mut req = format!("{method} {path} HTTP/1.1\r\nhost: {addr}\r\n");
    for (n, v) in headers {
        req.push_str(&format!("{n}: {v}\r\n"));
    }
    if let Some(b) = body {
        req.push_str(&format!(
            "content-type: application/json\r\ncontent-length: {}\r\n",
            b.len()
        ));
    }
    req.push_str("\r\n");
    req.push_str(body.unwrap_or(""));
    req
}

/// One request; the answer read to the end.
pub async fn request(addr: SocketAddr, method: &str, path: &str, headers: &[(&str, &str)], body: Option<&str>) -> Resp {
    tokio::time::timeout(WAIT, async {
        let mut tcp = TcpStream::connect(addr).await.unwrap();
        tcp.write_all(request_text(addr, method, path, headers, body).as_bytes())
            .await
            .unwrap();
        let mut out = Vec::new();
        tcp.read_to_end(&mut out).await.unwrap();
        let text = String::from_utf8(out).unwrap();
        let (head, body) = text.split_once("\r\n\r\n").unwrap();
        Resp {
            status: head[9..12].parse().unwrap(),
            head: head.to_string(),
            body: body.to_string(),
        }
    })
    .await
    .expect("HTTP request timed out")
}

pub fn bearer(key: &str) -> String {
    format!("Bearer {key}")
}

pub async fn get(h: &PeerHandle, path: &str, key: &str) -> Resp {
    request(h.addr(), "GET", path, &[("authorization", &bearer(key))], None).await
}

pub async fn post(h: &PeerHandle, path: &str, key: &str, body: &str) -> Resp {
    request(h.addr(), "POST", path, &[("authorization", &bearer(key))], Some(body)).await
}

/// An operation acting for `conn` (the `X-Switch-Connection-Id` header) when given.
pub async fn op(h: &PeerHandle, a: &Agent, conn: Option<&str>, name: &str, args: &str) -> Resp {
    let auth = bearer(&a.key);
    let mut headers = vec![("authorization", auth.as_str())];
    if let Some(c) = conn {
        headers.push(("x-switch-connection-id", c));
    }
    request(
        h.addr(),
        "POST",
        &format!("/agents/{}/ops/{name}", a.id),
        &headers,
        Some(args),
    )
    .await
}

/// `(status, body as JSON)` of a connection route.
pub async fn route(h: &PeerHandle, a: &Agent, tail: &str, body: &str) -> (u16, Value) {
    let r = post(h, &format!("/agents/{}/connection/{tail}", a.id), &a.key, body).await;
    (r.status, r.json())
}

pub async fn beat(h: &PeerHandle, a: &Agent, conn: &str, cursor: u64) -> (u16, Value) {
    route(
        h,
        a,
        "beat",
        &format!(r#"{{"connection_id":"{conn}","cursor":{cursor}}}"#),
    )
    .await
}

// ---- WebSocket ---------------------------------------------------------------------------

/// Opens `/agents/{id}/connection/ws?QUERY` with `authorization` (when given).
pub async fn ws_try(h: &PeerHandle, agent_id: &str, query: &str, authorization: Option<&str>) -> Result<Ws, String> {
    let url = format!("{}/agents/{agent_id}/connection/ws?{query}", h.ws_url());
    let mut req = url.into_client_request().unwrap();
    if let Some(a) = authorization {
        req.headers_mut().insert("authorization", a.parse().unwrap());
    }
    match tokio::time::timeout(WAIT, tokio_tungstenite::connect_async(req)).await {
        Ok(Ok((ws, _))) => Ok(ws),
        Ok(Err(e)) => Err(e.to_string()),
        Err(_) => panic!("WebSocket open timed out"),
    }
}

pub async fn ws(h: &PeerHandle, a: &Agent, query: &str) -> Ws {
    ws_try(h, &a.id, query, Some(&bearer(&a.key)))
        .await
        .expect("WebSocket open failed")
}

/// The next frame, pings included; `None` when the socket ended (close or drop).
pub async fn next_any(w: &mut Ws) -> Option<Value> {
    tokio::time::timeout(WAIT, async {
        loop {
            match w.next().await {
                Some(Ok(Message::Text(t))) => {
                    return Some(serde_json::from_str(t.as_str()).unwrap_or(Value::String(t.to_string())))
                }
                Some(Ok(Message::Close(_))) | Some(Err(_)) | None => return None,
                Some(Ok(_)) => continue,
            }
        }
    })
    .await
    .expect("no frame in time")
}

/// The next frame that is not a `ping`.
pub async fn next(w: &mut Ws) -> Value {
    loop {
        let v = next_any(w).await.expect("socket ended");
        if v["event"] != "ping" {
            return v;
        }
    }
}

/// Only pings (or nothing) arrive within `wait`.
pub async fn quiet(w: &mut Ws, wait: Duration) {
    let got = tokio::time::timeout(wait, async {
        loop {
            match w.next().await {
                Some(Ok(Message::Text(t))) if !t.as_str().contains(r#""event":"ping""#) => return t.to_string(),
                Some(Ok(_)) => continue,
                _ => return String::from("<ended>"),
            }
        }
    })
    .await;
    if let Ok(t) = got {
        panic!("unexpected: {t}");
    }
}

pub async fn send(w: &mut Ws, text: &str) {
    tokio::time::timeout(WAIT, w.send(Message::text(text.to_string())))
        .await
        .expect("send timed out")
        .expect("send failed");
}

/// Frames until the socket ends (pings skipped), and how it ended: `Some(code)` for a close
/// frame, `None` for an abrupt end.
pub async fn until_end(w: &mut Ws) -> (Vec<Value>, Option<u16>) {
    tokio::time::timeout(WAIT, async {
        let mut frames = Vec::new();
        loop {
            match w.next().await {
                Some(Ok(Message::Text(t))) => {
                    let v: Value = serde_json::from_str(t.as_str()).unwrap_or(Value::String(t.to_string()));
                    if v["event"] != "ping" {
                        frames.push(v);
                    }
                }
                Some(Ok(Message::Close(f))) => {
                    // Send the close reply tungstenite queued, so the server need not wait for it.
                    let _ = w.flush().await;
                    return (frames, f.map(|f| u16::from(f.code)));
                }
                Some(Ok(_)) => continue,
                Some(Err(_)) | None => return (frames, None),
            }
        }
    })
    .await
    .expect("socket did not end")
}
