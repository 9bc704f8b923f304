//! [`register`]: `POST /api/v1/auth/register` over HTTP/1.1 (`https://` with TLS). The request and the answer
//! are the engine's ([`agentwire_moltzap::register`]); the shared HTTP client moves them.

use crate::http::{exchange, Origin};
use agentwire_core::Error;
use agentwire_moltzap::register::{parse_response, unanswered, Registered, Registration, MAX_RESPONSE_BYTES};
use agentwire_moltzap::MoltZapError;
use std::time::Duration;

/// Registers an agent at `origin` (`http://host:port`, a trailing `/` or path prefix allowed;
/// `ws://` is taken as its `http://`, and a trailing `/ws`, the WebSocket path of the same
/// server, is dropped): returns the agent id and its agent key. Bounded by `timeout` from
/// connecting to the last byte.
pub async fn register(
    origin: &str,
    registration: &Registration,
    timeout: Duration,
) -> Result<Registered, MoltZapError> {
    let request = registration.request()?;
    let origin = Origin::parse(http_origin(origin)).map_err(local)?;
    let (status, body) = exchange(&origin, None, &request, timeout, MAX_RESPONSE_BYTES)
        .await
        .map_err(|f| unanswered(f.error, f.sent))?;
    parse_response(status, &body)
}

fn local(e: Error) -> MoltZapError {
    MoltZapError::local(e.kind, e.message)
}

/// `origin` without the WebSocket path (`/ws`) of the same server.
fn http_origin(origin: &str) -> &str {
    let trimmed = origin.trim_end_matches('/');
    trimmed.strip_suffix("/ws").unwrap_or(trimmed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_websocket_path_is_not_part_of_the_origin() {
        assert_eq!(http_origin("ws://127.0.0.1:9/ws"), "ws://127.0.0.1:9");
        assert_eq!(http_origin("http://h/base/"), "http://h/base");
        assert_eq!(http_origin("http://h/wsx"), "http://h/wsx");
    }

    /// A registration answer of 64 KiB is read whole; one byte more is a `limit` error, its code
    /// the status (the bound is `MAX_RESPONSE_BYTES`, written out here so that changing it, or
    /// reading without it, fails).
    #[tokio::test]
    async fn an_answer_is_read_up_to_64_kib() {
        use tokio::io::AsyncWriteExt;
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let origin = format!("http://{}", listener.local_addr().unwrap());
        let ok = r#"{"agentId":"a1","apiKey":"k1"}"#;
        let server = tokio::spawn(async move {
            for len in [64 * 1024, 64 * 1024 + 1] {
                let mut s = crate::http::chunk_tests::request_read(&listener).await;
                let body = format!("{ok}{}", " ".repeat(len - ok.len()));
                let answer = format!("HTTP/1.1 200 OK\r\nContent-Length: {len}\r\n\r\n{body}");
                // The client may stop reading at its bound.
                let _ = s.write_all(answer.as_bytes()).await;
            }
        });
        let registration = Registration::new("alice");
        let wait = Duration::from_secs(10);
        let got = register(&origin, &registration, wait).await.unwrap();
        assert_eq!((got.agent_id.as_str(), got.api_key.as_str()), ("a1", "k1"));
        let e = register(&origin, &registration, wait).await.unwrap_err();
        assert_eq!(
            (e.kind(), e.code()),
            (agentwire_core::ErrorKind::Limit, Some(200)),
            "{e}"
        );
        assert!(e.error.message.contains("over 65536 bytes"), "{e}");
        server.await.unwrap();
    }
}
