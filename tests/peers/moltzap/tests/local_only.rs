//! The peer serves this machine only: a request whose Host is another name (DNS rebinding) or
//! whose Origin is another site's page gets 403, registration and WebSocket upgrades alike;
//! pages on 127.0.0.1, localhost and `[::1]`, and clients that send no Origin, are served.

mod common;

use common::*;
use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::Error as WsError;

/// The status of an upgrade to `url` with `headers` (`Host` replaces the URL's): 101 or the refusal's.
async fn upgrade(url: &str, headers: &[(&'static str, String)]) -> u16 {
    let mut req = url.into_client_request().unwrap();
    for (name, value) in headers {
        req.headers_mut().insert(*name, value.parse().unwrap());
    }
    match tokio::time::timeout(WAIT, tokio_tungstenite::connect_async(req)).await {
        Ok(Ok((_, resp))) => resp.status().as_u16(),
        Ok(Err(WsError::Http(resp))) => resp.status().as_u16(),
        Ok(Err(e)) => panic!("{headers:?}: {e}"),
        Err(_) => panic!("WebSocket open timed out"),
    }
}

/// `POST /api/v1/auth/register` as a page would send it (`text/plain`: no CORS preflight) with
/// `host` and `origin`; (status, body).
async fn register_from(h: &agentwire_peer_moltzap::PeerHandle, host: &str, origin: &str) -> (u16, String) {
    tokio::time::timeout(WAIT, async {
        let mut tcp = TcpStream::connect(h.local_addr()).await.unwrap();
        let body = r#"{"name":"evil-site"}"#;
        let req = format!(
            "POST /api/v1/auth/register HTTP/1.1\r\nHost: {host}\r\nOrigin: {origin}\r\n\
             Content-Type: text/plain\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        );
        tcp.write_all(req.as_bytes()).await.unwrap();
        let mut out = Vec::new();
        tcp.read_to_end(&mut out).await.unwrap();
        let text = String::from_utf8(out).unwrap();
        let body = text
            .split_once("\r\n\r\n")
            .map(|(_, b)| b.to_owned())
            .unwrap_or_default();
        (text[9..12].parse().unwrap(), body)
    })
    .await
    .expect("HTTP request timed out")
}

#[tokio::test]
async fn another_sites_page_is_refused() {
    let h = current().await;
    let port = h.local_addr().port();
    let evil_host = format!("evil.example:{port}");
    let url = h.ws_url();
    for refused in [
        vec![("Origin", "http://evil.example".to_owned())],
        vec![("Origin", "null".to_owned())],
        vec![("Host", evil_host.clone())],
        vec![("Host", format!("127.0.0.1.evil.example:{port}"))],
        vec![("Host", evil_host.clone()), ("Origin", format!("http://{evil_host}"))],
    ] {
        assert_eq!(upgrade(&url, &refused).await, 403, "{refused:?}");
    }
    for served in [
        vec![],
        vec![("Origin", "http://127.0.0.1:7700".to_owned())],
        vec![
            ("Host", format!("[::1]:{port}")),
            ("Origin", "http://[::1]:7700".to_owned()),
        ],
    ] {
        assert_eq!(upgrade(&url, &served).await, 101, "{served:?}");
    }
    // DNS rebinding: the page's own name as Host and Origin; cross-site: only the Origin.
    for (host, origin) in [
        (evil_host.as_str(), format!("http://{evil_host}")),
        (&format!("127.0.0.1:{port}"), "http://evil.example".to_owned()),
    ] {
        let (status, body) = register_from(&h, host, &origin).await;
        assert_eq!(status, 403, "{host} {origin}: {body}");
        let v: Value = serde_json::from_str(&body).unwrap();
        assert!(v["error"].as_str().unwrap().contains("127.0.0.1"), "{body}");
    }
    let (status, body) = register_from(&h, &format!("localhost:{port}"), "http://localhost:7700").await;
    assert_eq!(status, 201, "{body}");
    h.shutdown().await;
}
