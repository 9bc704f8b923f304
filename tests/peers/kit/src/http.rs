//! Raw HTTP/1.1 on a port that also serves WebSockets, one request per TCP connection: the
//! request head is read here (at most [`MAX_HEAD`], within [`REQUEST_TIMEOUT`]), a body with a
//! `Content-Length` (at most [`MAX_BODY`]), and every answer carries a `Content-Length` body and
//! `Connection: close`. A WebSocket upgrade goes on to tungstenite through [`Prefixed`], with the
//! bytes already read replayed.
//!
//! The peers serve this machine only: [`read_head`] refuses (403, [`HeadError::NotLocal`]) a
//! request, WebSocket upgrades included, whose `Host` is not 127.0.0.1, localhost or `[::1]` (DNS
//! rebinding: a page on `evil.example` that resolves to 127.0.0.1) or whose `Origin` is present
//! and not a page on one of them (any site's page can open a WebSocket to 127.0.0.1); the rule is
//! `agentwire_core::http::local`'s. Clients that send no `Origin` (everything but a browser) are
//! unaffected.
//!
//! Which routes exist, what an error body looks like and which headers matter is the peer's.

use agentwire_core::http::local;
use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, ReadBuf};

/// Largest request head.
pub const MAX_HEAD: usize = 16 * 1024;
/// Largest request body.
pub const MAX_BODY: usize = 64 * 1024;
/// Time to send the whole request, head and body, counted from [`read_head`]'s start.
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(10);
/// Time to write an answer.
pub const WRITE_TIMEOUT: Duration = Duration::from_secs(5);
/// How long [`respond_unread`] reads what the client still sends.
const DRAIN_TIMEOUT: Duration = Duration::from_millis(500);
/// How much [`respond_unread`] reads at most.
const DRAIN_BYTES: usize = 256 * 1024;
/// Headers in a request head; more is [`HeadError::TooLarge`].
const MAX_HEADERS: usize = 64;

/// `Content-Type` of a JSON answer.
pub const JSON: &str = "application/json";
/// `Content-Type` of a text answer.
pub const TEXT: &str = "text/plain; charset=utf-8";

/// A stream that first replays bytes already read from `inner`.
pub struct Prefixed<S> {
    prefix: Vec<u8>,
    pos: usize,
    inner: S,
}

impl<S> Prefixed<S> {
    pub fn new(prefix: Vec<u8>, inner: S) -> Self {
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

/// A request head.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Head {
    pub method: String,
    /// Percent-encoded, without the query.
    pub path: String,
    /// After the `?`, percent-encoded; empty without one.
    pub query: String,
    /// Every header in order, the names as sent, the values trimmed.
    pub headers: Vec<(String, String)>,
    /// `Upgrade: websocket`.
    pub upgrade: bool,
    pub content_length: Option<usize>,
    /// `Transfer-Encoding` names `chunked`.
    pub chunked: bool,
    /// Bytes of the head.
    pub len: usize,
    /// When the whole request must have arrived: set by [`read_head`] ([`REQUEST_TIMEOUT`] after
    /// it started), used by [`read_body`].
    pub deadline: Option<tokio::time::Instant>,
}

impl Head {
    /// The value of header `name` (any case); the last one when it is repeated.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .rev()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// Why no request head was read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HeadError {
    /// Not complete within [`REQUEST_TIMEOUT`].
    Timeout,
    /// Over [`MAX_HEAD`] bytes or too many headers.
    TooLarge,
    /// Not HTTP/1.1, a header value that is not UTF-8 or a bad `Content-Length`.
    Bad,
    /// The client closed (or reset) the connection first: nobody to answer.
    Closed,
    /// A `Host` that is not this machine, or an `Origin` that is not a page on it
    /// ([`is_local`]).
    NotLocal,
}

impl HeadError {
    /// The status and message to answer with (`None`: close without answering).
    pub fn answer(self) -> Option<(u16, &'static str)> {
        match self {
            HeadError::Timeout => Some((408, "Request timeout")),
            HeadError::TooLarge => Some((431, "Request head too large")),
            HeadError::Bad => Some((400, "Bad request")),
            HeadError::NotLocal => Some((
                403,
                "Forbidden: this server answers requests to 127.0.0.1, localhost or [::1] from pages on them only",
            )),
            HeadError::Closed => None,
        }
    }
}

/// The head at the start of `buf`, `None` while it is incomplete.
pub fn parse_head(buf: &[u8]) -> Result<Option<Head>, HeadError> {
    let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
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
                match h.name.to_ascii_lowercase().as_str() {
                    "upgrade" => head.upgrade = value.eq_ignore_ascii_case("websocket"),
                    "content-length" => head.content_length = Some(value.parse().map_err(|_| HeadError::Bad)?),
                    "transfer-encoding" => head.chunked = value.to_ascii_lowercase().contains("chunked"),
                    _ => {}
                }
                head.headers.push((h.name.to_owned(), value.to_owned()));
            }
            Ok(Some(head))
        }
        Err(httparse::Error::TooManyHeaders) => Err(HeadError::TooLarge),
        Err(_) => Err(HeadError::Bad),
    }
}

/// Whether the request is this machine's: every `Host` it sent names 127.0.0.1, localhost or
/// `[::1]` (any port), and every `Origin` it sent is a page on one of them (none sent is fine
/// for both): `agentwire_core::http::local::{allows_host, allows_origin}`.
pub fn is_local(head: &Head) -> bool {
    let values = |name: &'static str| {
        head.headers
            .iter()
            .filter(move |(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    };
    local::allows_host(values("host")) && local::allows_origin(values("origin"), &[] as &[&str])
}

/// Reads the request head into `buf` within [`REQUEST_TIMEOUT`]; what was read past the head
/// (the start of a body, or WebSocket frames) stays in `buf` after `head.len`. A head over
/// [`MAX_HEAD`] is refused however it arrives, in one read or in many; one that is not
/// [`is_local`] is [`HeadError::NotLocal`].
pub async fn read_head<S: AsyncRead + Unpin>(tcp: &mut S, buf: &mut Vec<u8>) -> Result<Head, HeadError> {
    let deadline = tokio::time::Instant::now() + REQUEST_TIMEOUT;
    let read = async {
        let mut chunk = [0u8; 4096];
        loop {
            let n = tcp.read(&mut chunk).await.map_err(|_| HeadError::Closed)?;
            if n == 0 {
                return Err(HeadError::Closed);
            }
            buf.extend_from_slice(&chunk[..n]);
            match parse_head(buf)? {
                Some(head) if head.len > MAX_HEAD => return Err(HeadError::TooLarge),
                Some(head) if !is_local(&head) => return Err(HeadError::NotLocal),
                Some(head) => {
                    return Ok(Head {
                        deadline: Some(deadline),
                        ..head
                    })
                }
                None => {}
            }
            if buf.len() > MAX_HEAD {
                return Err(HeadError::TooLarge);
            }
        }
    };
    tokio::time::timeout_at(deadline, read)
        .await
        .unwrap_or(Err(HeadError::Timeout))
}

/// Why no body was read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BodyError {
    /// Over [`MAX_BODY`] (nothing was read).
    TooLarge,
    /// The client closed the connection first.
    EndedEarly,
    /// Not complete within [`REQUEST_TIMEOUT`].
    Timeout,
}

/// Reads a body of `len` bytes by the head's deadline (what is left of [`REQUEST_TIMEOUT`]; the
/// whole of it for a head without one): the bytes after `head` in `buf` first (`buf` as
/// [`read_head`] left it), then from `tcp`.
pub async fn read_body<S: AsyncRead + Unpin>(
    tcp: &mut S,
    head: &Head,
    mut buf: Vec<u8>,
    len: usize,
) -> Result<Vec<u8>, BodyError> {
    if len > MAX_BODY {
        return Err(BodyError::TooLarge);
    }
    let mut body = buf.split_off(head.len.min(buf.len()));
    let read = async {
        let mut chunk = [0u8; 4096];
        while body.len() < len {
            match tcp.read(&mut chunk).await {
                Ok(0) | Err(_) => return Err(BodyError::EndedEarly),
                Ok(n) => body.extend_from_slice(&chunk[..n]),
            }
        }
        body.truncate(len);
        Ok(body)
    };
    let deadline = head
        .deadline
        .unwrap_or_else(|| tokio::time::Instant::now() + REQUEST_TIMEOUT);
    tokio::time::timeout_at(deadline, read)
        .await
        .unwrap_or(Err(BodyError::Timeout))
}

/// The reason phrase of `status`.
pub fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        201 => "Created",
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
        500 => "Internal Server Error",
        503 => "Service Unavailable",
        _ => "Unknown",
    }
}

/// Answers with `body` (within [`WRITE_TIMEOUT`]) and closes the sending side.
pub async fn respond<S: AsyncWrite + Unpin>(tcp: &mut S, status: u16, content_type: &str, body: &str) {
    let msg = format!(
        "HTTP/1.1 {status} {}\r\ncontent-type: {content_type}\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
        reason(status),
        body.len(),
    );
    let _ = tokio::time::timeout(WRITE_TIMEOUT, async {
        let _ = tcp.write_all(msg.as_bytes()).await;
        let _ = tcp.shutdown().await;
    })
    .await;
}

/// The start of every connection: no Nagle delay, and past `max` open connections (`open` is the
/// count with this one) a 503 with `body` (JSON). True when the connection was refused.
pub async fn refuse_past(tcp: &mut tokio::net::TcpStream, open: usize, max: usize, body: &str) -> bool {
    let _ = tcp.set_nodelay(true);
    if open <= max {
        return false;
    }
    respond(tcp, 503, JSON, body).await;
    true
}

/// [`respond`] to a request that was not read to its end, then reads (a bounded amount, for a
/// bounded time) what the client still sends: closing with unread input would reset the
/// connection, and the client could lose the answer.
pub async fn respond_unread<S: AsyncRead + AsyncWrite + Unpin>(
    tcp: &mut S,
    status: u16,
    content_type: &str,
    body: &str,
) {
    respond(tcp, status, content_type, body).await;
    let _ = tokio::time::timeout(DRAIN_TIMEOUT, async {
        let mut chunk = [0u8; 4096];
        let mut left = DRAIN_BYTES;
        while let Ok(n @ 1..) = tcp.read(&mut chunk).await {
            left = left.saturating_sub(n);
            if left == 0 {
                break;
            }
        }
    })
    .await;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn heads() {
        let raw = "GET /a/b%20c?x=1&y HTTP/1.1\r\nHost: h\r\nUpgrade: WebSocket\r\nAuthorization: Bearer k\r\n\
                   authorization: Bearer last\r\nTransfer-Encoding: gzip, Chunked\r\n\r\nrest";
        let head = parse_head(raw.as_bytes()).unwrap().unwrap();
        assert_eq!(
            (head.method.as_str(), head.path.as_str(), head.query.as_str()),
            ("GET", "/a/b%20c", "x=1&y")
        );
        assert!(head.upgrade && head.chunked && head.content_length.is_none());
        assert_eq!(head.header("AUTHORIZATION"), Some("Bearer last"));
        assert_eq!(head.header("host"), Some("h"));
        assert_eq!(head.header("nope"), None);
        assert_eq!(head.len, raw.len() - "rest".len());
        let post = parse_head(b"POST / HTTP/1.1\r\ncontent-length: 12\r\n\r\n")
            .unwrap()
            .unwrap();
        assert_eq!((post.query.as_str(), post.content_length), ("", Some(12)));
        assert_eq!(parse_head(b"GET / HTTP/1.1\r\nHost: h\r\n").unwrap(), None);
        assert_eq!(parse_head(b"NOT HTTP\r\n\r\n"), Err(HeadError::Bad));
        assert_eq!(
            parse_head(b"POST / HTTP/1.1\r\ncontent-length: x\r\n\r\n"),
            Err(HeadError::Bad)
        );
        let many = format!("GET / HTTP/1.1\r\n{}\r\n", "a: b\r\n".repeat(MAX_HEADERS + 1));
        assert_eq!(parse_head(many.as_bytes()), Err(HeadError::TooLarge));
    }

    /// Host and Origin: this machine's only (the rule is `agentwire_core::http::local`'s; here,
    /// that every value sent counts, and that [`read_head`] applies it).
    #[tokio::test]
    async fn only_this_machines_requests() {
        let head = |extra: &str| {
            let raw = format!("GET /ws HTTP/1.1\r\nUpgrade: websocket\r\n{extra}\r\n");
            parse_head(raw.as_bytes()).unwrap().unwrap()
        };
        for ok in [
            "",
            "Host: 127.0.0.1:7750\r\n",
            "host: LOCALHOST:7750\r\nOrigin: http://127.0.0.1:7700\r\n",
            "Host: [::1]:7750\r\norigin: http://localhost:7700\r\n",
            "Origin: https://[::1]\r\n",
        ] {
            assert!(is_local(&head(ok)), "{ok:?}");
        }
        for refused in [
            "Host: evil.example:7750\r\n",
            "Host: localhost.evil.com:7750\r\n",
            "Host: 127.0.0.1.evil.com\r\n",
            "Host: 127.0.0.1:7750\r\nOrigin: http://evil.example\r\n",
            "Host: 127.0.0.1:7750\r\nOrigin: null\r\n",
            "Host: evil.example:7750\r\nOrigin: http://evil.example:7750\r\n",
            "Host: 127.0.0.1:7750\r\nHost: evil.example\r\n",
            "Origin: http://127.0.0.1:7700\r\nOrigin: http://evil.example\r\n",
        ] {
            assert!(!is_local(&head(refused)), "{refused:?}");
        }
        let req = "POST /api/v1/auth/register HTTP/1.1\r\nHost: evil.example:7750\r\ncontent-length: 2\r\n\r\n{}";
        let (mut src, mut buf) = (req.as_bytes(), Vec::new());
        let e = read_head(&mut src, &mut buf).await.unwrap_err();
        assert_eq!((e, e.answer().map(|a| a.0)), (HeadError::NotLocal, Some(403)));
    }

    #[tokio::test]
    async fn head_bounds() {
        // Just over the bound, complete within the reads that cross it: still refused.
        let big = format!("GET / HTTP/1.1\r\nx: {}\r\n\r\n", "a".repeat(MAX_HEAD));
        let (mut src, mut buf) = (big.as_bytes(), Vec::new());
        assert_eq!(read_head(&mut src, &mut buf).await, Err(HeadError::TooLarge));
        let endless = "a".repeat(MAX_HEAD * 2);
        let (mut src, mut buf) = (endless.as_bytes(), Vec::new());
        assert_eq!(read_head(&mut src, &mut buf).await, Err(HeadError::TooLarge));
        let (mut src, mut buf) = (&b"GET / HTTP/1.1\r\n"[..], Vec::new());
        assert_eq!(read_head(&mut src, &mut buf).await, Err(HeadError::Closed));
        // What follows the head stays in the buffer for the body.
        let req = "POST /r HTTP/1.1\r\ncontent-length: 5\r\n\r\nhello, and more";
        let (mut src, mut buf) = (req.as_bytes(), Vec::new());
        let head = read_head(&mut src, &mut buf).await.unwrap();
        assert_eq!(read_body(&mut src, &head, buf, 5).await.unwrap(), b"hello");
        let (mut src, mut buf) = (&b"POST / HTTP/1.1\r\n\r\nabc"[..], Vec::new());
        let head = read_head(&mut src, &mut buf).await.unwrap();
        assert_eq!(
            read_body(&mut src, &head, buf.clone(), 4).await,
            Err(BodyError::EndedEarly)
        );
        assert_eq!(
            read_body(&mut src, &head, buf, MAX_BODY + 1).await,
            Err(BodyError::TooLarge)
        );
    }

    /// The head and the body share one [`REQUEST_TIMEOUT`]: a head that takes 8 s leaves 2 s for
    /// the body (the body had 10 s of its own).
    #[tokio::test(start_paused = true)]
    async fn the_whole_request_within_the_timeout() {
        let (mut client, mut server) = tokio::io::duplex(4096);
        let writer = tokio::spawn(async move {
            client.write_all(b"POST / HTTP/1.1\r\n").await.unwrap();
            tokio::time::sleep(Duration::from_secs(8)).await;
            client.write_all(b"content-length: 2\r\n\r\n").await.unwrap();
            tokio::time::sleep(Duration::from_secs(8)).await;
            let _ = client.write_all(b"ok").await;
            client
        });
        let mut buf = Vec::new();
        let head = read_head(&mut server, &mut buf).await.unwrap();
        assert_eq!(read_body(&mut server, &head, buf, 2).await, Err(BodyError::Timeout));
        drop(writer);
    }

    #[tokio::test]
    async fn answers() {
        let mut out = Vec::new();
        respond(&mut out, 413, JSON, r#"{"error":"x"}"#).await;
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "HTTP/1.1 413 Content Too Large\r\ncontent-type: application/json\r\ncontent-length: 13\r\n\
             connection: close\r\n\r\n{\"error\":\"x\"}"
        );
        assert_eq!(reason(299), "Unknown");
        let mut replay = Prefixed::new(b"ab".to_vec(), &b"cd"[..]);
        let mut all = String::new();
        replay.read_to_string(&mut all).await.unwrap();
        assert_eq!(all, "abcd");
    }
}
