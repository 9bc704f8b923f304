//! A small HTTP/1.1 client over a [`crate::tls::dial`] stream (plain, or TLS for `https://`), shared by the drivers (Switch operations,
//! beats and SSE streams; MoltZap registration): one request per connection
//! (`Connection: close`) with `Authorization: Bearer <key>` added when a key is given, the response head
//! read with [`agentwire_core::http::HeadReader`] (at most [`MAX_HEAD_BYTES`]), and the body by
//! `Content-Length`, `chunked` (decoded incrementally by [`Dechunker`], so an SSE stream is read
//! as it arrives) or up to the close.

use crate::tls::{self, Stream};
use agentwire_core::http::{parse_head, Dechunker, Framing, Head, HeadReader};
use agentwire_core::url::Url;
use agentwire_core::{Error, ErrorKind, HttpRequest};
use std::fmt::Write as _;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// Largest response head (status line and headers).
pub(crate) const MAX_HEAD_BYTES: usize = 16 << 10;
/// Bytes read from the socket at a time.
const READ_BUF: usize = 16 << 10;

/// Where requests go: `http://host:port[/prefix]` or `ws://…` (the same server); `https://` or
/// `wss://` for TLS (default port 443). The [`Url`] it is read from, whose path is the prefix.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Origin {
    url: Url,
}

impl Origin {
    /// `host[:port]`, the `Host` header: [`Url::authority`].
    pub(crate) fn authority(&self) -> String {
        self.url.authority()
    }

    /// A path prefix before every `/agents/...` path, without a trailing `/` (often empty).
    pub(crate) fn prefix(&self) -> &str {
        &self.url.path
    }

    /// Read by [`agentwire_core::url::base`], as the npm package reads a Switch base URL.
    pub(crate) fn parse(origin: &str) -> Result<Origin, Error> {
        let url = agentwire_core::url::base(origin).map_err(|m| {
            let shown = agentwire_core::redact::url(origin);
            Error::new(ErrorKind::Invalid, format!("{shown}: {m}"))
        })?;
        Ok(Origin { url })
    }

    /// The WebSocket URL of a request path (`/agents/...?...`).
    pub(crate) fn ws_url(&self, path: &str) -> String {
        let scheme = if self.url.tls() { "wss" } else { "ws" };
        format!("{scheme}://{}{}{path}", self.authority(), self.prefix())
    }

    /// Connects to it (TCP, and TLS for `https://`): [`tls::dial`].
    pub(crate) async fn dial(&self) -> Result<Stream, Error> {
        tls::dial(&self.url.host, self.url.port_or_default(), self.url.tls()).await
    }
}

/// The key goes into a header: refuse anything that could break the request.
pub(crate) fn check_key(key: &str) -> Result<(), Error> {
    if key.is_empty() || key.len() > 4096 || !key.bytes().all(|b| b.is_ascii_graphic()) {
        return Err(Error::new(
            ErrorKind::Invalid,
            "the agent key must be 1..=4096 printable ASCII characters without spaces",
        ));
    }
    Ok(())
}

fn closed(m: String) -> Error {
    Error::new(ErrorKind::Closed, m).retryable(true)
}

fn decode(m: impl std::fmt::Display) -> Error {
    Error::new(ErrorKind::Decode, format!("HTTP answer: {m}"))
}

/// A request that got no whole answer: why, and whether the request was written (or may have
/// been: its bytes were handed to the socket), so that the server may have acted on it. The
/// engine decides from both what the caller is told (`retryable`).
#[derive(Debug)]
pub(crate) struct Unanswered {
    pub(crate) error: Error,
    pub(crate) sent: bool,
}

/// One request, its whole answer: `(status, body)`; bounded by `timeout` from connecting to
/// the last byte, and the body by `max_body` bytes. `key`: the Bearer token, if any.
pub(crate) async fn exchange(
    origin: &Origin,
    key: Option<&str>,
    request: &HttpRequest,
    timeout: Duration,
    max_body: usize,
) -> Result<(u16, String), Unanswered> {
    let sent = AtomicBool::new(false);
    let call = async {
        let response = Response::send_noting(origin, key, request, &sent).await?;
        let status = response.status;
        Ok((status, response.body_string(max_body).await?))
    };
    let result = match tokio::time::timeout(timeout, call).await {
        Ok(r) => r,
        Err(_) => Err(Error::new(
            ErrorKind::Timeout,
            format!(
                "no answer to {} {} from {} within {} ms",
                request.method.as_str(),
                path_only(&request.path),
                origin.authority(),
                timeout.as_millis()
            ),
        )),
    };
    result.map_err(|error| Unanswered {
        error,
        sent: sent.load(Ordering::Relaxed),
    })
}

/// The path of a request without its query (for messages).
fn path_only(path: &str) -> &str {
    path.split('?').next().unwrap_or(path)
}

/// The request bytes: method, path, `Host`, `Authorization`, the request's headers, the body.
fn request_bytes(origin: &Origin, key: Option<&str>, request: &HttpRequest) -> Result<Vec<u8>, Error> {
    let bad = |what: &str| Error::new(ErrorKind::Invalid, format!("request {what} has control characters"));
    if request.path.bytes().any(|b| b.is_ascii_control() || b == b' ') || !request.path.starts_with('/') {
        return Err(bad("path"));
    }
    let mut head = format!(
        "{} {}{} HTTP/1.1\r\nHost: {}\r\n",
        request.method.as_str(),
        origin.prefix(),
        request.path,
        origin.authority()
    );
    if let Some(key) = key {
        check_key(key)?;
        let _ = write!(head, "Authorization: Bearer {key}\r\n");
    }
    for (name, value) in &request.headers {
        if value.bytes().any(|b| b.is_ascii_control()) {
            return Err(bad("header"));
        }
        let _ = write!(head, "{name}: {value}\r\n");
    }
    if let Some(body) = &request.body {
        let _ = write!(head, "Content-Length: {}\r\n", body.len());
    }
    head.push_str("Connection: close\r\n\r\n");
    let mut bytes = head.into_bytes();
    if let Some(body) = &request.body {
        bytes.extend_from_slice(body.as_bytes());
    }
    Ok(bytes)
}

/// How the body of a response is delimited, and how much of it is left.
#[derive(Debug)]
enum Body {
    Length(u64),
    Chunked(Dechunker),
    ToClose,
    Done,
}

/// A response whose head has been read; the body is read with [`Response::chunk`].
#[derive(Debug)]
pub(crate) struct Response {
    pub(crate) status: u16,
    stream: Stream,
    /// Bytes read past the head and not decoded yet.
    pending: Vec<u8>,
    body: Body,
}

impl Response {
    /// Connects, sends the request and reads the head. Not bounded in time: the caller bounds it.
    pub(crate) async fn send(origin: &Origin, key: Option<&str>, request: &HttpRequest) -> Result<Response, Error> {
        Response::send_noting(origin, key, request, &AtomicBool::new(false)).await
    }

    /// [`Response::send`], setting `sent` once the whole request is handed to the socket: from
    /// then on the server may have it, whatever happens to its answer. A write that fails is
    /// not the whole request (a server acts on none that is cut short).
    async fn send_noting(
        origin: &Origin,
        key: Option<&str>,
        request: &HttpRequest,
        sent: &AtomicBool,
    ) -> Result<Response, Error> {
        let bytes = request_bytes(origin, key, request)?;
        let mut stream = origin.dial().await?;
        // The flush matters over TLS: write_all can return with the last records still in
        // rustls' buffer, and reading does not send them.
        let written = match stream.write_all(&bytes).await {
            Ok(()) => {
                sent.store(true, Ordering::Relaxed);
                stream.flush().await
            }
            Err(e) => Err(e),
        };
        written.map_err(|e| closed(format!("cannot send to {}: {e}", origin.authority())))?;
        let mut buf = Vec::with_capacity(1024);
        loop {
            // Parses only when the head may be whole: a head trickled a byte at a time is not
            // parsed again from its start for every byte.
            let mut reader = HeadReader::new();
            let Head { status, len, framing } = loop {
                if let Some(head) = reader.poll(&buf)? {
                    break head;
                }
                if buf.len() >= MAX_HEAD_BYTES {
                    // Malformed is said before too long, as when every read was parsed.
                    parse_head(&buf)?;
                    return Err(Error::new(
                        ErrorKind::Limit,
                        format!("HTTP answer head over {MAX_HEAD_BYTES} bytes"),
                    ));
                }
                let mut chunk = [0u8; 4096];
                let room = (MAX_HEAD_BYTES - buf.len()).min(chunk.len());
                let n = stream
                    .read(&mut chunk[..room])
                    .await
                    .map_err(|e| closed(format!("{}: {e}", origin.authority())))?;
                if n == 0 {
                    parse_head(&buf)?;
                    return Err(closed(format!(
                        "{} closed the connection before answering",
                        origin.authority()
                    )));
                }
                buf.extend_from_slice(&chunk[..n]);
            };
            buf.drain(..len);
            // An informational answer (100 Continue) is followed by the real one.
            if (100..200).contains(&status) {
                continue;
            }
            let body = match framing {
                Framing::Empty => Body::Done,
                Framing::Length(n) => Body::Length(n),
                Framing::Chunked => Body::Chunked(Dechunker::default()),
                Framing::ToClose => Body::ToClose,
            };
            return Ok(Response {
                status,
                stream,
                pending: buf,
                body,
            });
        }
    }

    /// The next piece of the body, decoded; `None` at its end. Cancel-safe: nothing read is
    /// lost when the future is dropped (the read takes bytes from the socket only when it
    /// completes, into `pending`, which is decoded before anything else is read). The read goes
    /// into `pending`'s spare room, kept from one call to the next: a call that waits and is
    /// dropped (the Switch driver makes a new one on every turn of its loop) allocates nothing.
    pub(crate) async fn chunk(&mut self) -> Result<Option<Vec<u8>>, Error> {
        loop {
            let mut out = Vec::new();
            match &mut self.body {
                Body::Done => return Ok(None),
                Body::ToClose => out.extend_from_slice(&self.pending),
                Body::Length(left) => {
                    let take = (*left).min(self.pending.len() as u64) as usize;
                    out.extend_from_slice(&self.pending[..take]);
                    *left -= take as u64;
                    if *left == 0 {
                        self.body = Body::Done;
                    }
                }
                Body::Chunked(d) => {
                    let fed = d.feed(&self.pending, &mut out);
                    self.pending.clear();
                    fed.map_err(decode)?;
                    if d.done() {
                        self.body = Body::Done;
                    }
                }
            }
            self.pending.clear();
            if !out.is_empty() {
                return Ok(Some(out));
            }
            if matches!(self.body, Body::Done) {
                return Ok(None);
            }
            // Once per response: `pending` keeps its capacity (it is cleared, never taken).
            self.pending.reserve(READ_BUF);
            let n = self
                .stream
                .read_buf(&mut self.pending)
                .await
                .map_err(|e| closed(e.to_string()))?;
            if n == 0 {
                return match self.body {
                    Body::ToClose => {
                        self.body = Body::Done;
                        Ok(None)
                    }
                    _ => Err(closed("the connection closed before the end of the body".into())),
                };
            }
        }
    }

    /// The first `limit` bytes of the body as text (lossy UTF-8), or what came of them by
    /// `deadline`: what is read of a refusal, whose body may trickle or never end. An error
    /// before its end, `limit` or `deadline` (the connection closed in the middle of it, a
    /// broken chunked encoding) is the error: a body cut short is not the answer the server
    /// sent. What was read when `deadline` passes is kept ([`Response::chunk`] is cancel-safe).
    pub(crate) async fn body_start(mut self, limit: usize, deadline: tokio::time::Instant) -> Result<String, Error> {
        let mut body = Vec::new();
        while body.len() < limit {
            match tokio::time::timeout_at(deadline, self.chunk()).await {
                Ok(Ok(Some(piece))) => body.extend_from_slice(&piece),
                Ok(Ok(None)) | Err(_) => break,
                Ok(Err(e)) => return Err(e),
            }
        }
        body.truncate(limit);
        Ok(String::from_utf8_lossy(&body).into_owned())
    }

    /// The whole body as text (lossy UTF-8), at most `limit` bytes (past it: a `limit` error).
    pub(crate) async fn body_string(mut self, limit: usize) -> Result<String, Error> {
        let mut body = Vec::new();
        while let Some(piece) = self.chunk().await? {
            if body.len() + piece.len() > limit {
                return Err(
                    Error::new(ErrorKind::Limit, format!("HTTP answer body over {limit} bytes"))
                        .with_code(i64::from(self.status)),
                );
            }
            body.extend_from_slice(&piece);
        }
        Ok(String::from_utf8_lossy(&body).into_owned())
    }
}

#[cfg(test)]
pub(crate) mod chunk_tests;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn origins() {
        let o = Origin::parse("http://127.0.0.1:9/").unwrap();
        assert_eq!((o.authority().as_str(), o.prefix()), ("127.0.0.1:9", ""));
        let o = Origin::parse("ws://localhost/base/").unwrap();
        assert_eq!((o.authority().as_str(), o.prefix()), ("localhost", "/base"));
        assert_eq!(o.ws_url("/agents/a"), "ws://localhost/base/agents/a");
        let o = Origin::parse("[::1]").unwrap();
        assert_eq!((o.authority().as_str(), o.url.port_or_default()), ("[::1]", 80));
        // The `Host` header names no default port (RFC 9110 §7.2, RFC 6455 §4.1).
        let o = Origin::parse("https://example.com/base").unwrap();
        assert_eq!(
            (o.authority().as_str(), o.url.port_or_default(), o.url.tls()),
            ("example.com", 443, true)
        );
        assert_eq!(o.ws_url("/agents/a"), "wss://example.com/base/agents/a");
        let o = Origin::parse("HTTPS://Example.com:443/").unwrap();
        assert_eq!(
            (o.authority().as_str(), o.url.port_or_default(), o.url.tls()),
            ("example.com", 443, true)
        );
        let o = Origin::parse("https://example.com:80").unwrap();
        assert_eq!(o.authority(), "example.com:80");
        let o = Origin::parse("wss://[::1]:8443").unwrap();
        assert_eq!(
            (o.url.host.as_str(), o.url.port_or_default(), o.url.tls()),
            ("[::1]", 8443, true)
        );
        let o = Origin::parse("http://h").unwrap();
        assert_eq!((o.url.port_or_default(), o.url.tls()), (80, false));
        for bad in [
            "ftp://x",
            "http://h:x",
            "http://",
            "http://u@h/",
            "http://h/?q",
            "http://:80",
            "http://h:+80",
            "http://h:-0",
            "http://\u{205f}",
            "http://h/a\u{3000}b",
            // Ports no server listens on: refused, not dialed and retried.
            "http://h:0",
            "https://h:65536",
        ] {
            assert_eq!(Origin::parse(bad).unwrap_err().kind, ErrorKind::Invalid, "{bad}");
        }
        // A refusal does not quote a credential.
        for bad in ["http://u:SECRET@h", "http://h/?token=SECRET"] {
            let e = Origin::parse(bad).unwrap_err();
            assert!(!e.message.contains("SECRET"), "{}", e.message);
        }
        assert!(Origin::parse("http://u:SECRET@h")
            .unwrap_err()
            .message
            .contains("user information"));
    }

    #[test]
    fn keys_and_requests() {
        assert!(check_key("sk_switch_abc").is_ok());
        for bad in ["", "a b", "a\r\nX: y", "é"] {
            assert!(check_key(bad).is_err(), "{bad:?}");
        }
        assert!(check_key(&"k".repeat(4096)).is_ok(), "4096 characters are a key");
        assert!(check_key(&"k".repeat(4097)).is_err(), "4097 are not");
        let o = Origin::parse("http://h:1/p").unwrap();
        let r = HttpRequest::post_json("/agents/a/ops/x".into(), "{}".into());
        let text = String::from_utf8(request_bytes(&o, Some("k"), &r).unwrap()).unwrap();
        assert!(text.starts_with("POST /p/agents/a/ops/x HTTP/1.1\r\nHost: h:1\r\nAuthorization: Bearer k\r\n"));
        assert!(
            text.ends_with("Content-Length: 2\r\nConnection: close\r\n\r\n{}"),
            "{text}"
        );
        let r = HttpRequest::get("/a".into()).with_header("X", "a\nb");
        assert!(request_bytes(&o, Some("k"), &r).is_err());
        for bad in ["/a b", "/a\tb", "a", ""] {
            let e = request_bytes(&o, None, &HttpRequest::get(bad.into())).unwrap_err();
            assert!(e.message.contains("request path"), "{bad:?}: {e}");
        }
        let text = String::from_utf8(request_bytes(&o, None, &HttpRequest::get("/a".into())).unwrap()).unwrap();
        assert!(!text.contains("Authorization"), "{text}");
    }

    proptest::proptest! {
        /// Any origin text: no panic; an accepted one gives a host, a `Host` header and a URL with
        /// no space or control character, and a port of digits only when one was written.
        #[test]
        fn any_origin(text in "\\PC*|((http|ws)s?://)?[a-z0-9.:\\[\\]+@ /?#\\r\\n-]{0,24}") {
            if let Ok(o) = Origin::parse(&text) {
                let clean = |s: &str| !s.contains(|c: char| c.is_whitespace() || c.is_control());
                proptest::prop_assert!(!o.url.host.is_empty() && clean(&o.authority()), "{o:?}");
                proptest::prop_assert!(clean(&o.ws_url("/agents/a")), "{o:?}");
                proptest::prop_assert!(!o.prefix().ends_with('/'), "{o:?}");
                let request = request_bytes(&o, Some("k"), &HttpRequest::get("/a".into())).unwrap();
                let text = String::from_utf8(request).unwrap();
                proptest::prop_assert_eq!(text.matches("\r\n").count(), text.lines().count(), "{}", text);
            }
        }
    }
}
