//! The HTTP side of the port: the request head is read here (bounded in size and time); `/ws`
//! upgrades go on to tungstenite with the bytes already read replayed, everything else is
//! answered here, one request per connection.

use crate::{conn, Peer, Step};
use std::io;
use std::pin::Pin;
use std::sync::atomic::Ordering;
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, ReadBuf};
use tokio::net::TcpStream;
use tokio::sync::watch;

/// Largest request head.
const MAX_HEAD: usize = 16 * 1024;
/// Largest request body.
const MAX_BODY: usize = 64 * 1024;
/// Time to send the whole request (head and body).
const REQUEST_TIMEOUT: Duration = Duration::from_secs(10);

/// A stream that first replays bytes already read from `inner`.
pub(crate) struct Prefixed<S> {
    prefix: Vec<u8>,
    pos: usize,
    inner: S,
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

struct Head {
    method: String,
    path: String,
    upgrade: bool,
    content_length: Option<usize>,
    /// Bytes of the head.
    len: usize,
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
            let mut upgrade = false;
            let mut content_length = None;
            for h in req.headers.iter() {
                let value = std::str::from_utf8(h.value).map_err(|_| HeadError::Bad)?.trim();
                if h.name.eq_ignore_ascii_case("upgrade") && value.eq_ignore_ascii_case("websocket") {
                    upgrade = true;
                } else if h.name.eq_ignore_ascii_case("content-length") {
                    content_length = Some(value.parse::<usize>().map_err(|_| HeadError::Bad)?);
                }
            }
            let path = req.path.unwrap_or("/");
            Ok(Some(Head {
                method: req.method.unwrap_or("").to_string(),
                path: path.split('?').next().unwrap_or(path).to_string(),
                upgrade,
                content_length,
                len,
            }))
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
        if let Some(head) = parse_head(buf)? {
            return Ok(head);
        }
        if buf.len() > MAX_HEAD {
            return Err(HeadError::TooLarge);
        }
    }
}

async fn respond(tcp: &mut TcpStream, status: u16, body: &str) {
    let reason = match status {
        200 => "OK",
        201 => "Created",
        400 => "Bad Request",
        404 => "Not Found",
        408 => "Request Timeout",
        413 => "Payload Too Large",
        431 => "Request Header Fields Too Large",
        500 => "Internal Server Error",
        503 => "Service Unavailable",
        _ => "Unknown",
    };
    let msg = format!(
        "HTTP/1.1 {status} {reason}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    );
    let _ = tokio::time::timeout(Duration::from_secs(5), async {
        let _ = tcp.write_all(msg.as_bytes()).await;
        let _ = tcp.shutdown().await;
    })
    .await;
}

fn error_body(message: &str) -> String {
    serde_json::json!({ "error": message }).to_string()
}

/// Serves one TCP connection.
pub(crate) async fn connection(mut tcp: TcpStream, peer: &Peer, stopped: watch::Receiver<bool>) {
    let _ = tcp.set_nodelay(true);
    if peer.open_tcp.load(Ordering::Relaxed) > peer.cfg.max_connections {
        return respond(&mut tcp, 503, &error_body("Too many connections")).await;
    }
    let mut buf = Vec::with_capacity(1024);
    let head = match tokio::time::timeout(REQUEST_TIMEOUT, read_head(&mut tcp, &mut buf)).await {
        Err(_) => return respond(&mut tcp, 408, &error_body("Request timeout")).await,
        Ok(Err(HeadError::Closed)) => return,
        Ok(Err(HeadError::TooLarge)) => return respond(&mut tcp, 431, &error_body("Request head too large")).await,
        Ok(Err(HeadError::Bad)) => return respond(&mut tcp, 400, &error_body("Bad request")).await,
        Ok(Ok(head)) => head,
    };
    match (head.method.as_str(), head.path.as_str()) {
        ("GET", "/ws") if head.upgrade => {
            if peer.faults().drop_at == Some(Step::Upgrade) {
                return; // dropped: the TCP connection closes unanswered
            }
            let stream = Prefixed {
                prefix: buf,
                pos: 0,
                inner: tcp,
            };
            conn::websocket(stream, peer, stopped).await;
        }
        ("GET", "/health") => {
            let body = format!(
                r#"{{"status":"ok","connections":{}}}"#,
                peer.open_ws.load(Ordering::Relaxed)
            );
            respond(&mut tcp, 200, &body).await;
        }
        ("POST", agentwire_moltzap::register::PATH) => {
            let Some(len) = head.content_length else {
                return respond(&mut tcp, 400, &error_body("Content-Length required")).await;
            };
            if len > MAX_BODY {
                return respond(&mut tcp, 413, &error_body("Body too large")).await;
            }
            let mut body = buf.split_off(head.len.min(buf.len()));
            let read = tokio::time::timeout(REQUEST_TIMEOUT, async {
                let mut chunk = [0u8; 4096];
                while body.len() < len {
                    let n = tcp.read(&mut chunk).await?;
                    if n == 0 {
                        return Err(io::ErrorKind::UnexpectedEof.into());
                    }
                    body.extend_from_slice(&chunk[..n]);
                }
                body.truncate(len);
                Ok::<_, io::Error>(())
            })
            .await;
            match read {
                Ok(Ok(())) => {
                    let (status, answer) = peer.state().register(&body);
                    respond(&mut tcp, status, &answer).await;
                }
                Ok(Err(_)) => {}
                Err(_) => respond(&mut tcp, 408, &error_body("Request timeout")).await,
            }
        }
        _ => respond(&mut tcp, 404, &error_body("Not found")).await,
    }
}
