//! The HTTP side of the port: the request head is read here (with `agentwire_peer_kit::http`:
//! at most 16 KiB, within 10 s), a WebSocket upgrade goes on to tungstenite with the bytes
//! already read replayed, the SSE stream is served on the socket, everything else is answered
//! with a `Content-Length` body and `Connection: close` (one request per TCP connection). Errors
//! are `{"detail": ...}` bodies.

use crate::{routes, sse, ws, Generation, Peer, MAX_TCP};
use agentwire_peer_kit::http::{self as kit, BodyError, Head, Prefixed};
use tokio::io::AsyncWrite;
use tokio::net::TcpStream;
use tokio::sync::watch;

/// An answer with a body.
#[derive(Debug)]
pub(crate) struct Reply {
    pub(crate) status: u16,
    /// `application/json`, else `text/plain`.
    pub(crate) json: bool,
    pub(crate) body: String,
}

impl Reply {
    pub(crate) fn json(status: u16, body: String) -> Self {
        Reply {
            status,
            json: true,
            body,
        }
    }

    pub(crate) fn text(status: u16, body: &str) -> Self {
        Reply {
            status,
            json: false,
            body: body.to_owned(),
        }
    }

    pub(crate) fn detail(status: u16, detail: &str) -> Self {
        Reply::json(status, crate::query::Refusal::new(status, detail).body())
    }

    fn content_type(&self) -> &'static str {
        if self.json {
            kit::JSON
        } else {
            kit::TEXT
        }
    }
}

pub(crate) async fn respond<S: AsyncWrite + Unpin>(tcp: &mut S, reply: Reply) {
    kit::respond(tcp, reply.status, reply.content_type(), &reply.body).await;
}

/// Answers a request that was not read to its end (see [`kit::respond_unread`]).
async fn respond_unread(tcp: &mut TcpStream, reply: Reply) {
    kit::respond_unread(tcp, reply.status, reply.content_type(), &reply.body).await;
}

/// Reads the body announced by `head` (the bytes after the head in `buf` first); no
/// `Content-Length` is an empty body.
async fn read_body(tcp: &mut TcpStream, head: &Head, buf: Vec<u8>) -> Result<Vec<u8>, Reply> {
    if head.chunked {
        return Err(Reply::detail(411, "Content-Length required"));
    }
    let len = head.content_length.unwrap_or(0);
    kit::read_body(tcp, head, buf, len).await.map_err(|e| match e {
        BodyError::TooLarge => Reply::detail(413, "Request body too large"),
        BodyError::EndedEarly => Reply::detail(400, "Request body ended early"),
        BodyError::Timeout => Reply::detail(408, "Request timeout"),
    })
}

/// Serves one TCP connection, `open` of them with this one.
pub(crate) async fn connection(mut tcp: TcpStream, open: usize, peer: &Peer, stopped: watch::Receiver<bool>) {
    let full = Reply::detail(503, "Too many connections");
    if kit::refuse_past(&mut tcp, open, MAX_TCP, &full.body).await {
        return;
    }
    let mut buf = Vec::with_capacity(1024);
    let head = match kit::read_head(&mut tcp, &mut buf).await {
        Ok(head) => head,
        Err(e) => {
            if let Some((status, message)) = e.answer() {
                respond_unread(&mut tcp, Reply::detail(status, message)).await;
            }
            return;
        }
    };
    let segments = routes::segments(&head.path);
    let seg: Vec<&str> = segments.iter().map(String::as_str).collect();
    if head.upgrade {
        let ws_route = matches!(seg.as_slice(), ["agents", _, "connection", "ws"]);
        if peer.cfg.generation == Generation::Released || !ws_route {
            // switch-core 0.19 has no WebSocket route: Starlette refuses the upgrade.
            let reply = match routes::authenticate(peer, head.header("authorization")) {
                Err(r) => r,
                Ok(_) if ws_route || peer.cfg.generation == Generation::Released => Reply::text(403, ""),
                Ok(_) => Reply::detail(404, "Not Found"),
            };
            return respond(&mut tcp, reply).await;
        }
        return ws::serve(Prefixed::new(buf, tcp), head, peer, stopped).await;
    }
    if head.method == "GET" && matches!(seg.as_slice(), ["agents", _, "events"]) {
        if !accepts_event_stream(&head) {
            // switch-core answers a legacy long-poll JSON without the header (its shape is not
            // captured): a JSON body with no events, nothing opened, so a client that forgets
            // the header gets no stream here either.
            let reply = match routes::authenticate(peer, head.header("authorization")) {
                Ok(_) => Reply::json(200, r#"{"events":[]}"#.to_owned()),
                Err(r) => r,
            };
            return respond(&mut tcp, reply).await;
        }
        return sse::serve(tcp, head, peer, stopped).await;
    }
    match read_body(&mut tcp, &head, buf).await {
        Err(reply) => respond_unread(&mut tcp, reply).await,
        Ok(body) => respond(&mut tcp, routes::handle(peer, &head, &seg, &body)).await,
    }
}

/// `Accept` names `text/event-stream` (any case, parameters ignored, in a list).
fn accepts_event_stream(head: &Head) -> bool {
    head.headers
        .iter()
        .filter(|(n, _)| n.eq_ignore_ascii_case("accept"))
        .flat_map(|(_, v)| v.split(','))
        .any(|range| {
            range
                .split(';')
                .next()
                .is_some_and(|t| t.trim().eq_ignore_ascii_case("text/event-stream"))
        })
}
