//! [`register`]: `POST /api/v1/auth/register` over plain HTTP/1.1. The body and the answer are
//! the engine's ([`agentwire_moltzap::register`]); this file only moves them over a socket.

use agentwire_core::ErrorKind;
use agentwire_moltzap::register::{parse_response, Registered, Registration, MAX_RESPONSE_BYTES, PATH};
use agentwire_moltzap::MoltZapError;
use std::borrow::Cow;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// Registers an agent at `origin` (`http://host:port`, a trailing `/` or path prefix allowed;
/// `ws://` is taken as its `http://`): returns the agent id and its agent key. Bounded by
/// `timeout` from connecting to the last byte.
pub async fn register(
    origin: &str,
    registration: &Registration,
    timeout: Duration,
) -> Result<Registered, MoltZapError> {
    let body = registration.body()?;
    let target = Target::parse(origin)?;
    let exchange = async {
        let mut stream = TcpStream::connect(&target.authority)
            .await
            .map_err(|e| closed(format!("cannot connect to {}: {e}", target.authority)))?;
        let request = format!(
            "POST {}{PATH} HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\nAccept: application/json\r\n\
             Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
            target.prefix,
            target.authority,
            body.len()
        );
        stream
            .write_all(request.as_bytes())
            .await
            .map_err(|e| closed(e.to_string()))?;
        let mut answer = Vec::new();
        let mut limited = (&mut stream).take(MAX_RESPONSE_BYTES as u64 + 1);
        limited
            .read_to_end(&mut answer)
            .await
            .map_err(|e| closed(e.to_string()))?;
        if answer.len() > MAX_RESPONSE_BYTES {
            let m = format!("registration answer over {MAX_RESPONSE_BYTES} bytes");
            return Err(MoltZapError::local(ErrorKind::Limit, m));
        }
        let (status, body) = split_response(&answer)?;
        parse_response(status, &body)
    };
    match tokio::time::timeout(timeout, exchange).await {
        Ok(result) => result,
        Err(_) => Err(MoltZapError::local(
            ErrorKind::Timeout,
            format!("no registration answer from {origin} within {} ms", timeout.as_millis()),
        )),
    }
}

fn closed(m: String) -> MoltZapError {
    MoltZapError::local(ErrorKind::Closed, m)
}

/// Where to send the request.
#[derive(Debug, PartialEq, Eq)]
struct Target {
    authority: String,
    /// Path before [`PATH`], without a trailing `/`.
    prefix: String,
}

impl Target {
    fn parse(origin: &str) -> Result<Target, MoltZapError> {
        let invalid = |m: &str| MoltZapError::local(ErrorKind::Invalid, format!("{origin}: {m}"));
        let rest = match origin.split_once("://") {
            Some(("http" | "ws", rest)) => rest,
            Some(("https" | "wss", _)) => return Err(invalid("this build has no TLS support")),
            Some(_) => return Err(invalid("expected an http:// origin")),
            None => origin,
        };
        let (authority, path) = rest.split_once('/').map_or((rest, ""), |(a, p)| (a, p));
        if authority.is_empty() || authority.contains(['@', ' ', '?', '#']) {
            return Err(invalid("no host"));
        }
        let authority = if authority
            .rsplit_once(':')
            .is_some_and(|(_, p)| p.parse::<u16>().is_ok())
        {
            authority.to_string()
        } else {
            format!("{authority}:80")
        };
        // The WebSocket path (`/ws`) of the same server is not part of the HTTP prefix.
        let path = path.trim_end_matches('/');
        let path = path.strip_suffix("ws").unwrap_or(path).trim_end_matches('/');
        let prefix = if path.is_empty() {
            String::new()
        } else {
            format!("/{path}")
        };
        if prefix.contains(['?', '#', ' ']) {
            return Err(invalid("the origin may not carry a query"));
        }
        Ok(Target { authority, prefix })
    }
}

/// Status and body of a complete HTTP/1.1 response (`Content-Length`, chunked, or to EOF).
fn split_response(raw: &[u8]) -> Result<(u16, String), MoltZapError> {
    let decode = |m: &str| MoltZapError::local(ErrorKind::Decode, format!("registration answer: {m}"));
    let head_end = raw
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .ok_or_else(|| decode("no end of headers"))?;
    let head = std::str::from_utf8(&raw[..head_end]).map_err(|_| decode("headers are not UTF-8"))?;
    let mut lines = head.split("\r\n");
    let status = lines
        .next()
        .and_then(|l| l.split(' ').nth(1))
        .and_then(|s| s.parse::<u16>().ok())
        .ok_or_else(|| decode("no status line"))?;
    let header = |name: &str| {
        head.split("\r\n")
            .skip(1)
            .filter_map(|l| l.split_once(':'))
            .find(|(k, _)| k.trim().eq_ignore_ascii_case(name))
            .map(|(_, v)| v.trim().to_ascii_lowercase())
    };
    let rest = &raw[head_end + 4..];
    let body: Cow<[u8]> = if header("transfer-encoding").is_some_and(|v| v.contains("chunked")) {
        Cow::Owned(dechunk(rest).ok_or_else(|| decode("bad chunked body"))?)
    } else if let Some(n) = header("content-length").and_then(|v| v.parse::<usize>().ok()) {
        Cow::Borrowed(
            rest.get(..n)
                .ok_or_else(|| decode("body shorter than Content-Length"))?,
        )
    } else {
        Cow::Borrowed(rest)
    };
    Ok((status, String::from_utf8_lossy(&body).into_owned()))
}

fn dechunk(mut body: &[u8]) -> Option<Vec<u8>> {
    let mut out = Vec::new();
    loop {
        let line_end = body.windows(2).position(|w| w == b"\r\n")?;
        let size = std::str::from_utf8(&body[..line_end]).ok()?;
        let size = usize::from_str_radix(size.split(';').next()?.trim(), 16).ok()?;
        body = &body[line_end + 2..];
        if size == 0 {
            return Some(out);
        }
        out.extend_from_slice(body.get(..size)?);
        body = body.get(size + 2..)?;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn origins() {
        let t = Target::parse("http://127.0.0.1:9/").unwrap();
        assert_eq!((t.authority.as_str(), t.prefix.as_str()), ("127.0.0.1:9", ""));
        let t = Target::parse("ws://127.0.0.1:9/ws").unwrap();
        assert_eq!((t.authority.as_str(), t.prefix.as_str()), ("127.0.0.1:9", ""));
        let t = Target::parse("localhost/base/").unwrap();
        assert_eq!((t.authority.as_str(), t.prefix.as_str()), ("localhost:80", "/base"));
        for bad in ["https://x", "ftp://x", "http://", "http://u@h/", "http://h/?q"] {
            assert_eq!(Target::parse(bad).unwrap_err().error.kind, ErrorKind::Invalid, "{bad}");
        }
    }

    #[test]
    fn responses() {
        let r = b"HTTP/1.1 201 Created\r\ncontent-length: 2\r\n\r\n{}xx";
        assert_eq!(split_response(r).unwrap(), (201, "{}".to_string()));
        let r = b"HTTP/1.1 500 Oops\r\nTransfer-Encoding: chunked\r\n\r\n3\r\n{\"e\r\n2\r\n\"}\r\n0\r\n\r\n";
        assert_eq!(split_response(r).unwrap(), (500, "{\"e\"}".to_string()));
        let r = b"HTTP/1.1 200 OK\r\n\r\nto eof";
        assert_eq!(split_response(r).unwrap(), (200, "to eof".to_string()));
        for bad in [
            &b"HTTP/1.1 200 OK\r\n"[..],
            b"garbage\r\n\r\n",
            b"HTTP/1.1 200\r\nContent-Length: 9\r\n\r\n{}",
        ] {
            assert_eq!(split_response(bad).unwrap_err().error.kind, ErrorKind::Decode);
        }
    }
}
