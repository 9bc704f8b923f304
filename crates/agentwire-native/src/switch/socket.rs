//! The socket of one open: a WebSocket, or the body of an SSE `GET`. Opening it, reading what
//! arrives as the engine's inputs, writing the pong, and dropping it.

use crate::http::{Origin, Response};
use crate::tls::Stream;
use crate::wire::{self, write_blocked, WRITE_TIMEOUT};
use agentwire_core::http::{REFUSAL_BODY_MAX, REFUSAL_BODY_WAIT_MS};
use agentwire_core::{Error, ErrorKind};
use agentwire_switch::connection::OpenRequest;
use agentwire_switch::Wire;
use futures_util::{SinkExt, StreamExt};
use std::sync::Arc;
use std::time::Duration;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::http::HeaderValue;
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;
use tokio_tungstenite::tungstenite::protocol::CloseFrame;
use tokio_tungstenite::tungstenite::{Error as WsError, Message, Utf8Bytes};
use tokio_tungstenite::WebSocketStream;

type Ws = WebSocketStream<Stream>;

/// How long a closing handshake may take (here in its own task): the one every driver uses.
pub(crate) use crate::wire::CLOSE_GRACE;
/// The WebSocket's own cap, as a multiple of the engine's limit (at least 16 MiB): a message over
/// the engine's limit but under this one reaches the engine, which reports the event as lost (a
/// gap on the next event) and moves past it; only a larger one closes the socket (1009), and the
/// resume would meet it again.
const HARD_CAP_FACTOR: usize = 16;
const HARD_CAP_MIN: usize = 16 << 20;

/// What an open needs besides its request.
#[derive(Debug, Clone)]
pub(crate) struct Dialer {
    pub(crate) origin: Origin,
    pub(crate) key: Arc<str>,
    /// The engine's largest message; the WebSocket refuses far larger ones.
    pub(crate) max_message_bytes: usize,
}

/// An open that failed.
pub(crate) enum OpenFailed {
    /// The HTTP status of a refusal (`None`: no answer) and its body or reason; the engine
    /// decides whether to reopen.
    Failed(Option<u16>, String),
    /// No retry can help: a certificate not trusted (`auth`), a host that cannot be a TLS
    /// server name (`invalid`).
    Unusable(Error),
}

impl OpenFailed {
    fn no_answer(reason: String) -> Self {
        OpenFailed::Failed(None, reason)
    }

    /// A failure to reach the server, with `context` before its message.
    fn dial(e: Error, context: &str) -> Self {
        match e.kind {
            ErrorKind::Auth | ErrorKind::Invalid => OpenFailed::Unusable(e),
            _ => OpenFailed::no_answer(format!("{context}{}", e.message)),
        }
    }
}

pub(crate) enum Socket {
    Ws(Box<Ws>),
    Sse(Box<Response>),
}

/// One input from the socket.
pub(crate) enum Incoming {
    Text(Utf8Bytes),
    Binary(Vec<u8>),
    /// A piece of the SSE body.
    Bytes(Vec<u8>),
    /// The socket or stream ended (1006: without a close frame, or any end of an SSE body).
    Closed {
        code: u16,
        reason: String,
    },
}

impl Dialer {
    /// Performs a `Transmit::Open`: the WebSocket upgrade, or the SSE `GET` up to its `200` head.
    /// Not bounded here: the engine's open timer (`open_timeout_ms`) decides, and its
    /// `Transmit::Close` drops an open still under way.
    pub(crate) async fn open(self, open: OpenRequest) -> Result<Socket, OpenFailed> {
        match open.wire {
            Wire::WebSocket => self.open_ws(open).await,
            Wire::Sse => self.open_sse(open).await,
        }
    }

    async fn open_ws(&self, open: OpenRequest) -> Result<Socket, OpenFailed> {
        let url = self.origin.ws_url(&open.request.path);
        // Messages name the URL without its query (the connection's parameters).
        let shown = url.split('?').next().unwrap_or_default();
        let mut request = url
            .as_str()
            .into_client_request()
            .map_err(|e| OpenFailed::no_answer(format!("{shown}: {e}")))?;
        let headers = request.headers_mut();
        let auth =
            HeaderValue::from_str(&format!("Bearer {}", self.key)).map_err(|e| OpenFailed::no_answer(e.to_string()))?;
        headers.insert("Authorization", auth);
        for (name, value) in &open.request.headers {
            if let Ok(v) = HeaderValue::from_str(value) {
                headers.insert(*name, v);
            }
        }
        let limit = self.max_message_bytes.saturating_mul(HARD_CAP_FACTOR).max(HARD_CAP_MIN);
        let cfg = wire::ws_config(limit);
        let stream = self
            .origin
            .dial()
            .await
            .map_err(|e| OpenFailed::dial(e, &format!("cannot open {shown}: ")))?;
        match tokio_tungstenite::client_async_with_config(request, stream, Some(cfg)).await {
            Ok((ws, _)) => Ok(Socket::Ws(Box::new(ws))),
            Err(WsError::Http(response)) => {
                let body = response
                    .body()
                    .as_deref()
                    .map(String::from_utf8_lossy)
                    .unwrap_or_default();
                Err(OpenFailed::Failed(Some(response.status().as_u16()), body.into_owned()))
            }
            Err(e) => Err(OpenFailed::no_answer(format!("cannot open {shown}: {e}"))),
        }
    }

    async fn open_sse(&self, open: OpenRequest) -> Result<Socket, OpenFailed> {
        let response = Response::send(&self.origin, Some(&self.key), &open.request)
            .await
            .map_err(|e| OpenFailed::dial(e, ""))?;
        if response.status == 200 {
            return Ok(Socket::Sse(Box::new(response)));
        }
        let status = response.status;
        // The start of the refusal's body, bounded in size (what the engine reads) and time: what
        // came of it in REFUSAL_BODY_WAIT_MS is handed over (a trickled `409 taken_over` keeps
        // its code). One that breaks off before its end is no answer, retried: cut, a
        // `409 taken_over` would be a final refusal without its code.
        let deadline = tokio::time::Instant::now() + Duration::from_millis(REFUSAL_BODY_WAIT_MS);
        match response.body_start(REFUSAL_BODY_MAX, deadline).await {
            Err(e) => Err(OpenFailed::no_answer(format!(
                "the HTTP {status} answer broke off: {}",
                e.message
            ))),
            Ok(body) => Err(OpenFailed::Failed(Some(status), body)),
        }
    }
}

impl Socket {
    /// The next input; cancel-safe (a `select!` branch). WebSocket pings and pongs are
    /// tungstenite's and skipped.
    pub(crate) async fn recv(&mut self) -> Incoming {
        match self {
            Socket::Ws(ws) => loop {
                match ws.next().await {
                    Some(Ok(Message::Text(t))) => return Incoming::Text(t),
                    Some(Ok(Message::Binary(b))) => return Incoming::Binary(b.to_vec()),
                    Some(Ok(Message::Close(frame))) => {
                        let (code, reason) =
                            frame.map_or((1005, String::new()), |f| (f.code.into(), f.reason.to_string()));
                        return Incoming::Closed { code, reason };
                    }
                    Some(Ok(_)) => continue,
                    Some(Err(WsError::Capacity(e))) => {
                        return Incoming::Closed {
                            code: 1009,
                            reason: format!("message too big: {e}"),
                        }
                    }
                    Some(Err(e)) => {
                        return Incoming::Closed {
                            code: 1006,
                            reason: e.to_string(),
                        }
                    }
                    None => {
                        return Incoming::Closed {
                            code: 1006,
                            reason: "the socket ended without a close frame".into(),
                        }
                    }
                }
            },
            Socket::Sse(body) => match body.chunk().await {
                Ok(Some(bytes)) => Incoming::Bytes(bytes),
                Ok(None) => Incoming::Closed {
                    code: 1006,
                    reason: "the event stream ended".into(),
                },
                Err(e) => Incoming::Closed {
                    code: 1006,
                    reason: format!("the event stream broke: {}", e.message),
                },
            },
        }
    }

    /// Sends a WebSocket text message (the pong); the error is why the socket is dead.
    pub(crate) async fn send_text(&mut self, text: String) -> Result<(), String> {
        let Socket::Ws(ws) = self else {
            return Ok(()); // the SSE transport sends nothing on its stream
        };
        match tokio::time::timeout(WRITE_TIMEOUT, ws.send(Message::text(text))).await {
            Ok(Ok(())) => Ok(()),
            Ok(Err(e)) => Err(format!("write failed: {e}")),
            Err(_) => Err(write_blocked()),
        }
    }

    /// Ends the socket: a WebSocket gets its close frame (`code`, `reason`; `None` to answer the
    /// peer's) and a bounded handshake in a task of its own; an SSE stream is dropped.
    pub(crate) fn close(self, frame: Option<(u16, &str)>) -> Option<tokio::task::JoinHandle<()>> {
        let Socket::Ws(mut ws) = self else {
            return None;
        };
        let frame = frame.map(|(code, reason)| CloseFrame {
            code: CloseCode::from(sendable(code)),
            reason: agentwire_core::text::prefix(reason, 123).to_owned().into(),
        });
        Some(tokio::spawn(async move {
            let _ = tokio::time::timeout(CLOSE_GRACE, async {
                let _ = ws.close(frame).await;
                while let Some(Ok(_)) = ws.next().await {}
            })
            .await;
        }))
    }
}

/// A close code a client may put on the wire (1005, 1006 and 1015 are reserved): others are 1000.
fn sendable(code: u16) -> u16 {
    match code {
        1000..=1003 | 1007..=1014 | 3000..=4999 => code,
        _ => 1000,
    }
}
