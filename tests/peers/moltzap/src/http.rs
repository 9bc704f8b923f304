//! The HTTP side of the port: the request head is read here (with `agentwire_peer_kit::http`:
//! at most 16 KiB, within 10 s); `/ws` upgrades go on to tungstenite with the bytes already read
//! replayed, everything else is answered here, one request per connection. Errors are
//! `{"error": ...}` bodies.

use crate::state::error_body;
use crate::{conn, Peer, Step};
use agentwire_peer_kit::http::{self as kit, BodyError, Prefixed, JSON};
use std::sync::atomic::Ordering;
use tokio::net::TcpStream;
use tokio::sync::watch;

async fn respond(tcp: &mut TcpStream, status: u16, body: &str) {
    kit::respond(tcp, status, JSON, body).await;
}

/// Answers a request that was not read to its end (see [`kit::respond_unread`]).
async fn respond_unread(tcp: &mut TcpStream, status: u16, body: &str) {
    kit::respond_unread(tcp, status, JSON, body).await;
}

/// Serves one TCP connection, `open` of them with this one.
pub(crate) async fn connection(mut tcp: TcpStream, open: usize, peer: &Peer, stopped: watch::Receiver<bool>) {
    if kit::refuse_past(
        &mut tcp,
        open,
        peer.cfg.max_connections,
        &error_body("Too many connections"),
    )
    .await
    {
        return;
    }
    let mut buf = Vec::with_capacity(1024);
    let head = match kit::read_head(&mut tcp, &mut buf).await {
        Ok(head) => head,
        Err(e) => {
            if let Some((status, message)) = e.answer() {
                respond_unread(&mut tcp, status, &error_body(message)).await;
            }
            return;
        }
    };
    match (head.method.as_str(), head.path.as_str()) {
        ("GET", "/ws") if head.upgrade => {
            if peer.faults().drop_at == Some(Step::Upgrade) {
                return; // dropped: the TCP connection closes unanswered
            }
            conn::websocket(Prefixed::new(buf, tcp), peer, stopped).await;
        }
        ("GET", "/health") => {
            let body = format!(
                r#"{{"status":"ok","connections":{},"authenticated":{}}}"#,
                peer.open_ws.load(Ordering::Relaxed),
                peer.state().authenticated_count()
            );
            respond(&mut tcp, 200, &body).await;
        }
        ("POST", agentwire_moltzap::register::PATH) => {
            let Some(len) = head.content_length else {
                return respond_unread(&mut tcp, 400, &error_body("Content-Length required")).await;
            };
            match kit::read_body(&mut tcp, &head, buf, len).await {
                Ok(body) => {
                    let (status, answer) = peer.state().register(&body);
                    respond(&mut tcp, status, &answer).await;
                }
                Err(BodyError::TooLarge) => respond_unread(&mut tcp, 413, &error_body("Body too large")).await,
                Err(BodyError::Timeout) => respond_unread(&mut tcp, 408, &error_body("Request timeout")).await,
                Err(BodyError::EndedEarly) => {} // the client is gone
            }
        }
        _ => respond(&mut tcp, 404, &error_body("Not found")).await,
    }
}
