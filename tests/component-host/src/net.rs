//! Blocking sockets for the drivers: a WebSocket with bounded reads, and one-shot HTTP/1.1
//! calls. Loopback tests only need this much.

use anyhow::{anyhow, bail, Result};
use std::io::{ErrorKind as IoKind, Read, Write};
use std::net::TcpStream;
use std::time::Duration;
use tungstenite::client::IntoClientRequest;
use tungstenite::protocol::frame::coding::CloseCode;
use tungstenite::protocol::CloseFrame;
use tungstenite::{Error as WsError, HandshakeError, Message, WebSocket};

/// What one bounded read gave.
#[derive(Debug)]
pub enum Input {
    Text(String),
    Binary(Vec<u8>),
    Ping,
    /// The socket is gone: its close frame, or 1006 when it dropped without one.
    Closed {
        code: u16,
        reason: String,
    },
    /// Nothing within the wait.
    Idle,
}

/// An upgrade that did not happen: the status of a refusal (none when no answer came) and why.
#[derive(Debug)]
pub struct Refused {
    pub status: Option<u16>,
    pub reason: String,
}

pub struct Socket {
    ws: WebSocket<TcpStream>,
    closed: bool,
}

/// `host:port` of an `http://` or `ws://` URL.
fn authority(url: &str) -> Result<&str> {
    let rest = url
        .split_once("://")
        .map(|(_, r)| r)
        .ok_or_else(|| anyhow!("no scheme in {url}"))?;
    Ok(rest.split('/').next().unwrap_or(rest))
}

impl Socket {
    /// Opens `url` (`ws://`), offering `protocol` and adding `headers` to the upgrade.
    pub fn connect(url: &str, protocol: Option<&str>, headers: &[(String, String)]) -> Result<Socket> {
        Socket::open(url, protocol, headers).map_err(|e| anyhow!("{}", e.reason))
    }

    /// [`Socket::connect`], with a refused upgrade's status and body.
    pub fn open(url: &str, protocol: Option<&str>, headers: &[(String, String)]) -> Result<Socket, Refused> {
        let refused = |e: &dyn std::fmt::Display| Refused {
            status: None,
            reason: format!("{url}: {e}"),
        };
        let stream = TcpStream::connect(authority(url).map_err(|e| refused(&e))?).map_err(|e| refused(&e))?;
        stream.set_nodelay(true).map_err(|e| refused(&e))?;
        stream
            .set_read_timeout(Some(Duration::from_secs(5)))
            .map_err(|e| refused(&e))?;
        let mut request = url.into_client_request().map_err(|e| refused(&e))?;
        if let Some(p) = protocol {
            request
                .headers_mut()
                .insert("Sec-WebSocket-Protocol", p.parse().map_err(|e| refused(&e))?);
        }
        for (name, value) in headers {
            let name = tungstenite::http::HeaderName::try_from(name.as_str()).map_err(|e| refused(&e))?;
            request
                .headers_mut()
                .insert(name, value.parse().map_err(|e| refused(&e))?);
        }
        match tungstenite::client(request, stream) {
            Ok((ws, _)) => Ok(Socket { ws, closed: false }),
            Err(HandshakeError::Failure(WsError::Http(response))) => Err(Refused {
                status: Some(response.status().as_u16()),
                reason: String::from_utf8_lossy(response.body().as_deref().unwrap_or_default()).into_owned(),
            }),
            Err(e) => Err(refused(&e)),
        }
    }

    pub fn send_text(&mut self, text: String) -> Result<()> {
        self.ws.send(Message::text(text))?;
        Ok(())
    }

    pub fn send_binary(&mut self, bytes: Vec<u8>) -> Result<()> {
        self.ws.send(Message::binary(bytes))?;
        Ok(())
    }

    /// Sends a close frame (the engine says nothing after one).
    pub fn close(&mut self, code: u16, reason: String) {
        let frame = CloseFrame {
            code: CloseCode::from(code),
            reason: reason.into(),
        };
        let _ = self.ws.close(Some(frame));
        let _ = self.ws.flush();
    }

    /// The next input, waiting at most `wait`.
    pub fn next(&mut self, wait: Duration) -> Input {
        if self.closed {
            std::thread::sleep(wait);
            return Input::Idle;
        }
        let _ = self
            .ws
            .get_mut()
            .set_read_timeout(Some(wait.max(Duration::from_millis(1))));
        match self.ws.read() {
            Ok(Message::Text(t)) => Input::Text(t.to_string()),
            Ok(Message::Binary(b)) => Input::Binary(b.to_vec()),
            Ok(Message::Ping(_)) => {
                let _ = self.ws.flush(); // the pong tungstenite queued
                Input::Ping
            }
            Ok(Message::Close(frame)) => {
                let _ = self.ws.flush();
                self.closed = true;
                match frame {
                    Some(f) => Input::Closed {
                        code: f.code.into(),
                        reason: f.reason.to_string(),
                    },
                    None => Input::Closed {
                        code: 1005,
                        reason: String::new(),
                    },
                }
            }
            Ok(_) => Input::Idle,
            Err(WsError::Io(e)) if matches!(e.kind(), IoKind::WouldBlock | IoKind::TimedOut) => Input::Idle,
            Err(_) => {
                self.closed = true;
                Input::Closed {
                    code: 1006,
                    reason: String::new(),
                }
            }
        }
    }
}

/// An HTTP call that got no answer: why, whether the request may have left (`sent`: the
/// connection was made), and whether the wait for the answer ran out (`timed_out`).
#[derive(Debug)]
pub struct NoAnswer {
    pub error: anyhow::Error,
    pub sent: bool,
    pub timed_out: bool,
}

impl std::fmt::Display for NoAnswer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:#}", self.error)
    }
}

/// One HTTP/1.1 call to `base` (`http://host:port`), `Connection: close`: the status and body.
pub fn http(
    base: &str,
    method: &str,
    path: &str,
    headers: &[(String, String)],
    body: Option<&str>,
) -> Result<(u16, String), NoAnswer> {
    let unsent = |error: anyhow::Error| NoAnswer {
        error,
        sent: false,
        timed_out: false,
    };
    let stream = authority(base)
        .and_then(|a| Ok(TcpStream::connect(a)?))
        .map_err(unsent)?;
    exchange(stream, base, method, path, headers, body).map_err(|error| {
        let timed_out = error
            .downcast_ref::<std::io::Error>()
            .is_some_and(|e| matches!(e.kind(), IoKind::WouldBlock | IoKind::TimedOut));
        NoAnswer {
            error,
            sent: true,
            timed_out,
        }
    })
}

/// The request on a connection made, and its answer.
fn exchange(
    mut stream: TcpStream,
    base: &str,
    method: &str,
    path: &str,
    headers: &[(String, String)],
    body: Option<&str>,
) -> Result<(u16, String)> {
    stream.set_read_timeout(Some(Duration::from_secs(10)))?;
    let mut head = format!(
        "{method} {path} HTTP/1.1\r\nHost: {}\r\nConnection: close\r\n",
        authority(base)?
    );
    for (name, value) in headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    let body = body.unwrap_or("");
    if method != "GET" || !body.is_empty() {
        head.push_str(&format!("Content-Length: {}\r\n", body.len()));
    }
    head.push_str("\r\n");
    stream.write_all(head.as_bytes())?;
    stream.write_all(body.as_bytes())?;
    let mut raw = Vec::new();
    stream.read_to_end(&mut raw)?;
    let text = String::from_utf8_lossy(&raw);
    let (head, rest) = text.split_once("\r\n\r\n").ok_or_else(|| anyhow!("no HTTP head"))?;
    let status: u16 = head
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| anyhow!("bad status line"))?;
    let chunked = head.lines().any(|l| {
        l.to_ascii_lowercase().starts_with("transfer-encoding:") && l.to_ascii_lowercase().contains("chunked")
    });
    let body = if chunked { dechunk(rest)? } else { rest.to_owned() };
    Ok((status, body))
}

fn dechunk(mut s: &str) -> Result<String> {
    let mut out = String::new();
    loop {
        let (size, rest) = s.split_once("\r\n").ok_or_else(|| anyhow!("bad chunk"))?;
        let n = usize::from_str_radix(size.trim(), 16)?;
        if n == 0 {
            return Ok(out);
        }
        if rest.len() < n {
            bail!("short chunk");
        }
        out.push_str(&rest[..n]);
        s = rest[n..].trim_start_matches("\r\n");
    }
}
