//! The HTTP side of the port: the request head is read here (at most 16 KiB, the whole request
//! within 10 s), a WebSocket upgrade goes on to tungstenite with the bytes already read
//! replayed, the SSE stream is served on the socket, everything else is answered with a
//! `Content-Length` body and `Connection: close` (one request per TCP connection).

use crate::{routes, sse, ws, Generation, Peer, MAX_TCP};
use std::io;
use std::pin::Pin;
use std::sync::atomic::Ordering;
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, ReadBuf};
use tokio::net::TcpStream;
use tokio::sync::watch;

/// Largest request head.
pub(crate) const MAX_HEAD: usize = 16 * 1024;
/// Largest request body.
pub(crate) const MAX_BODY: usize = 64 * 1024;
/// Time to send the whole request (head and body).
pub(crate) const REQUEST_TIMEOUT: Duration = Duration::from_secs(10);
/// Time to write an answer.
const WRITE_TIMEOUT: Duration = Duration::from_secs(5);

/// A stream that first replays bytes already read from `inner`.
pub(crate) struct Prefixed<S> {
    prefix: Vec<u8>,
    pos: usize,
    inner: S,
}

impl<S> Prefixed<S> {
    pub(crate) fn new(prefix: Vec<u8>, inner: S) -> Self {
        Prefixed { prefix, pos: 0, inner }
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for Prefixed<S> {
    fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        if self.pos < self.prefix.len() {
            let n = buf.remaining().min(self.prefix.len() - self.pos);
            let start = self.pos;
            buf.put_slice(&self.prefix[start..start + n]);
            self.pos += n;
            return Poll::Ready(Ok(()));
        }
        Pin::new(&mut self.inner).poll_read(cx, buf)
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for Prefixed<S> {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write(cx, buf)
    }
    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }
    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

/// The request head, with the headers the peer reads.
#[derive(Debug, Default)]
pub(crate) struct Head {
    pub(crate) method: String,
    /// Percent-encoded, without the query.
    pub(crate) path: String,
    pub(crate) query: String,
    pub(crate) upgrade: bool,
    pub(crate) content_length: Option<usize>,
    pub(crate) chunked: bool,
    pub(crate) authorization: Option<String>,
    pub(crate) last_event_id: Option<String>,
    pub(crate) connection_id: Option<String>,
    /// Bytes of the head.
    pub(crate) len: usize,
}

enum HeadError {
    TooLarge,
    Bad,
    Closed,
}

fn parse_head(buf: &[u8]) -> Result<Option<Head>, HeadError> {
    let mut headers = [httparse::EMPTY_HEADER; 64];
    let mut req = httparse::Request::new(&mut headers);
    match req.parse(buf) {
        Ok(httparse::Status::Partial) => Ok(None),
        Ok(httparse::Status::Complete(len)) => {
            let target = req.path.unwrap_or("/");
            let (path, query) = target.split_once('?').unwrap_or((target, ""));
            let mut head = Head {
                method: req.method.unwrap_or("").to_owned(),
                path: path.to_owned(),
                query: query.to_owned(),
                len,
                ..Head::default()
            };
            for h in req.headers.iter() {
                let value = std::str::from_utf8(h.value).map_err(|_| HeadError::Bad)?.trim();
                let name = h.name.to_ascii_lowercase();
                match name.as_str() {
                    "upgrade" => head.upgrade = value.eq_ignore_ascii_case("websocket"),
                    "content-length" => head.content_length = Some(value.parse().map_err(|_| HeadError::Bad)?),
                    "transfer-encoding" => head.chunked = value.to_ascii_lowercase().contains("chunked"),
                    "authorization" => head.authorization = Some(value.to_owned()),
                    "last-event-id" => head.last_event_id = Some(value.to_owned()),
                    "x-switch-connection-id" => head.connection_id = Some(value.to_owned()),
                    _ => {}
                }
            }
            Ok(Some(head))
        }
        Err(httparse::Error::TooManyHeaders) => Err(HeadError::TooLarge),
        Err(_) => Err(HeadError::Bad),
    }
}

async fn read_head(tcp: &mut TcpStream, buf: &mut Vec<u8>) -> Result<Head, HeadError> {
    let mut chunk = [0u8; 4096];
    loop {
        let n = tcp.read(&mut chunk).await.map_err(|_| HeadError::Closed)?;
        if n == 0 {
            return Err(HeadError::Closed);
        }
        buf.extend_from_slice(&chunk[..n]);
        match parse_head(buf)? {
            Some(head) if head.len > MAX_HEAD => return Err(HeadError::TooLarge),
            Some(head) => return Ok(head),
            None => {}
        }
        if buf.len() > MAX_HEAD {
            return Err(HeadError::TooLarge);
        }
    }
}

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
}

pub(crate) fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        408 => "Request Timeout",
        409 => "Conflict",
        411 => "Length Required",
        413 => "Content Too Large",
        422 => "Unprocessable Content",
        431 => "Request Header Fields Too Large",
        503 => "Service Unavailable",
        _ => "Unknown",
    }
}

/// Answers a request that was not read to its end, then reads (a bounded amount of) what the
/// client still sends, so closing does not reset the connection before the answer is read.
async fn respond_unread(tcp: &mut TcpStream, reply: Reply) {
    respond(tcp, reply).await;
    let _ = tokio::time::timeout(Duration::from_millis(500), async {
        let mut chunk = [0u8; 4096];
        let mut left = 256 * 1024usize;
        while let Ok(n @ 1..) = tcp.read(&mut chunk).await {
            left = left.saturating_sub(n);
            if left == 0 {
                break;
            }
        }
    })
    .await;
}

pub(crate) async fn respond<S: AsyncWrite + Unpin>(tcp: &mut S, reply: Reply) {
    let kind = if reply.json {
        "application/json"
    } else {
        "text/plain; charset=utf-8"
    };
    let msg = format!(
        "HTTP/1.1 {} {}\r\ncontent-type: {kind}\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{}",
        reply.status,
        reason(reply.status),
        reply.body.len(),
        reply.body
    );
    let _ = tokio::time::timeout(WRITE_TIMEOUT, async {
        let _ = tcp.write_all(msg.as_bytes()).await;
        let _ = tcp.shutdown().await;
    })
    .await;
}

/// Reads the body announced by `head` (the bytes after the head in `buf` first).
async fn read_body(tcp: &mut TcpStream, head: &Head, mut buf: Vec<u8>) -> Result<Vec<u8>, Reply> {
    if head.chunked {
        return Err(Reply::detail(411, "Content-Length required"));
    }
    let len = head.content_length.unwrap_or(0);
    if len > MAX_BODY {
        return Err(Reply::detail(413, "Request body too large"));
    }
    let mut body = buf.split_off(head.len.min(buf.len()));
    let mut chunk = [0u8; 4096];
    while body.len() < len {
        match tcp.read(&mut chunk).await {
            Ok(0) | Err(_) => return Err(Reply::detail(400, "Request body ended early")),
            Ok(n) => body.extend_from_slice(&chunk[..n]),
        }
    }
    body.truncate(len);
    Ok(body)
}

/// Serves one TCP connection.
pub(crate) async fn connection(mut tcp: TcpStream, peer: &Peer, stopped: watch::Receiver<bool>) {
    let _ = tcp.set_nodelay(true);
    if peer.open_tcp.load(Ordering::Relaxed) > MAX_TCP {
        return respond(&mut tcp, Reply::detail(503, "Too many connections")).await;
    }
    let mut buf = Vec::with_capacity(1024);
    let head = match tokio::time::timeout(REQUEST_TIMEOUT, read_head(&mut tcp, &mut buf)).await {
        Err(_) => return respond_unread(&mut tcp, Reply::detail(408, "Request timeout")).await,
        Ok(Err(HeadError::Closed)) => return,
        Ok(Err(HeadError::TooLarge)) => {
            return respond_unread(&mut tcp, Reply::detail(431, "Request head too large")).await
        }
        Ok(Err(HeadError::Bad)) => return respond_unread(&mut tcp, Reply::detail(400, "Bad request")).await,
        Ok(Ok(head)) => head,
    };
    let segments = routes::segments(&head.path);
    let seg: Vec<&str> = segments.iter().map(String::as_str).collect();
    if head.upgrade {
        let ws_route = matches!(seg.as_slice(), ["agents", _, "connection", "ws"]);
        if peer.cfg.generation == Generation::Released || !ws_route {
            // switch-core 0.19 has no WebSocket route: Starlette refuses the upgrade.
            let reply = match routes::authenticate(peer, head.authorization.as_deref()) {
                Err(r) => r,
                Ok(_) if ws_route || peer.cfg.generation == Generation::Released => Reply::text(403, ""),
                Ok(_) => Reply::detail(404, "Not Found"),
            };
            return respond(&mut tcp, reply).await;
        }
        return ws::serve(Prefixed::new(buf, tcp), head, peer, stopped).await;
    }
    if head.method == "GET" && matches!(seg.as_slice(), ["agents", _, "events"]) {
        return sse::serve(tcp, head, peer, stopped).await;
    }
    let read = tokio::time::timeout(REQUEST_TIMEOUT, read_body(&mut tcp, &head, buf)).await;
    match read {
        Err(_) => respond_unread(&mut tcp, Reply::detail(408, "Request timeout")).await,
        Ok(Err(reply)) => respond_unread(&mut tcp, reply).await,
        Ok(Ok(body)) => respond(&mut tcp, routes::handle(peer, &head, &seg, &body)).await,
    }
}
