//! The socket half of a driver, the same for every protocol: [`Wire`] owns the WebSocket and
//! moves frames between it and an [`Engine`] (a sans-IO session). A driver keeps only what is
//! its protocol's own: the events, the commands, the timers.

use crate::tls;
use agentwire_core::{Millis, Outgoing};
use futures_util::{Sink, SinkExt, Stream, StreamExt};
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, Waker};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::time::{Instant, Sleep};
use tokio_tungstenite::tungstenite::error::UrlError;
use tokio_tungstenite::tungstenite::handshake::client::Request;
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;
use tokio_tungstenite::tungstenite::protocol::{CloseFrame, WebSocketConfig};
use tokio_tungstenite::tungstenite::{Error as WsError, Message};
use tokio_tungstenite::WebSocketStream;

/// How long a closing handshake may take.
pub(crate) const CLOSE_GRACE: Duration = Duration::from_secs(2);
/// How long a write may go without progress (no byte accepted by the socket) before the socket
/// counts as dead: a peer that stops reading fills the TCP buffers, and without a bound the
/// session would wait forever. A peer that reads slowly but steadily is not cut off (progress is
/// seen as the kernel takes bytes, which on a large send buffer can be seconds apart: a reader of
/// a few tens of KiB/s under a long write can still be cut). The Switch driver's socket, which
/// has its own write code, bounds each whole send by it.
pub(crate) const WRITE_TIMEOUT: Duration = Duration::from_secs(5);

/// Why a socket counts as dead after a write that made no progress for [`WRITE_TIMEOUT`].
pub(crate) fn write_blocked() -> String {
    format!("write blocked for {} ms", WRITE_TIMEOUT.as_millis())
}

/// Bytes allowed on a WebSocket message beyond the engine's own limit, so a message just over it
/// still reaches the engine and gets its error (an RKT error reply, a MoltZap diagnostic), while
/// a far larger one is refused by the WebSocket layer before it is buffered.
const FRAME_SLACK: usize = 4096;

/// The WebSocket's message and frame limit for an engine limit of `engine_max` bytes (saturating:
/// `usize::MAX` is no limit).
pub(crate) fn frame_limit(engine_max: usize) -> usize {
    engine_max.saturating_add(FRAME_SLACK)
}

/// The read buffer each WebSocket starts with, and the most read from the socket at once.
/// tungstenite's default is 128 KiB, reserved for every socket for its whole life (and
/// zero-filled before each read): with many idle connections that is most of their memory
/// (about 146 KB of heap each, against about 32 KB at 16 KiB). 16 KiB holds any frame these
/// protocols send in the ordinary course (their replies, events and pings are a few KiB at most)
/// and costs little throughput; tungstenite still grows the buffer to hold a larger frame, up to
/// the frame limit, so nothing is refused for it.
pub(crate) const READ_BUFFER_BYTES: usize = 16 << 10;

/// The WebSocket configuration of every native socket, client or server: a read buffer of
/// [`READ_BUFFER_BYTES`] and `limit` as the message and frame limit.
pub(crate) fn ws_config(limit: usize) -> WebSocketConfig {
    WebSocketConfig::default()
        .read_buffer_size(READ_BUFFER_BYTES)
        .max_message_size(Some(limit))
        .max_frame_size(Some(limit))
}

/// What a frame from the peer is: `None` once the stream has ended.
pub(crate) type Frame = Option<Result<Message, WsError>>;

/// The socket side of a sans-IO session: frames in, frames out.
pub(crate) trait Engine {
    fn handle_text(&mut self, now: Millis, text: &str);
    fn handle_binary(&mut self, now: Millis, bytes: &[u8]);
    fn handle_close(&mut self, now: Millis, code: u16, reason: &str);
    fn poll_transmit(&mut self) -> Option<Outgoing>;
    /// A WebSocket ping arrived (tungstenite answers it); most engines do not care.
    fn handle_ping(&mut self, _now: Millis) {}
}

/// Implements [`Engine`] by the sessions' own methods of the same names.
macro_rules! engines {
    ($($session:ty),* $(,)?) => {$( engines!(@impl $session {}); )*};
    (@ping $($session:ty),* $(,)?) => {$( engines!(@impl $session {
        fn handle_ping(&mut self, now: Millis) {
            <$session>::handle_ping(self, now)
        }
    }); )*};
    (@impl $session:ty { $($extra:tt)* }) => {
        impl Engine for $session {
            fn handle_text(&mut self, now: Millis, text: &str) {
                <$session>::handle_text(self, now, text)
            }
            fn handle_binary(&mut self, now: Millis, bytes: &[u8]) {
                <$session>::handle_binary(self, now, bytes)
            }
            fn handle_close(&mut self, now: Millis, code: u16, reason: &str) {
                <$session>::handle_close(self, now, code, reason)
            }
            fn poll_transmit(&mut self) -> Option<Outgoing> {
                <$session>::poll_transmit(self)
            }
            $($extra)*
        }
    };
}

engines!(agentwire_rkt::ClientSession, agentwire_rkt::ServerSession);
engines!(@ping agentwire_moltzap::Session);

/// A byte stream that counts the bytes written to it: a write in progress is alive as long as
/// this grows (see [`WRITE_TIMEOUT`]).
pub(crate) struct Counted<S> {
    inner: S,
    written: u64,
}

impl<S> Counted<S> {
    pub(crate) fn new(inner: S) -> Self {
        Counted { inner, written: 0 }
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for Counted<S> {
    fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_read(cx, buf)
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for Counted<S> {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<std::io::Result<usize>> {
        let this = &mut *self;
        let written = Pin::new(&mut this.inner).poll_write(cx, buf);
        if let Poll::Ready(Ok(n)) = written {
            this.written += n as u64;
        }
        written
    }
    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }
    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

/// Why [`connect`] failed: dialing (TCP, TLS; see [`crate::tls`]), or the WebSocket upgrade.
pub(crate) enum ConnectError {
    Dial(agentwire_core::Error),
    Ws(WsError),
}

impl From<WsError> for ConnectError {
    fn from(e: WsError) -> Self {
        ConnectError::Ws(e)
    }
}

/// Opens a client WebSocket (`ws://`, or `wss://` over TLS; see [`crate::tls::dial`]) over a
/// [`Counted`] stream. Over TLS the count is of the plaintext the TLS layer took, which it takes
/// only as its own buffer (at most rustls' 64 KiB) drains into the socket: progress still means
/// the peer reads.
pub(crate) async fn connect(
    request: Request,
    cfg: WebSocketConfig,
) -> Result<WebSocketStream<Counted<tls::Stream>>, ConnectError> {
    let uri = request.uri();
    let host = uri.host().ok_or(WsError::Url(UrlError::NoHostName))?;
    let tls = match uri.scheme_str() {
        Some("ws") => false,
        Some("wss") => true,
        _ => return Err(WsError::Url(UrlError::UnsupportedUrlScheme).into()),
    };
    let port = uri.port_u16().unwrap_or(if tls { 443 } else { 80 });
    let stream = tls::dial(host, port, tls).await.map_err(ConnectError::Dial)?;
    let (ws, _) = tokio_tungstenite::client_async_with_config(request, Counted::new(stream), Some(cfg)).await?;
    Ok(ws)
}

/// What the socket did, from [`Wire::io`]: for [`Wire::handle`].
pub(crate) enum Io {
    /// A frame from the peer (`None`: the stream has ended).
    Frame(Frame),
    /// Everything fed went out: the engine's next frames may go.
    Flushed,
    /// The write failed, or made no progress for [`WRITE_TIMEOUT`].
    WriteFailed(String),
}

/// A WebSocket, the close frame to end it with, and what went over it.
///
/// Writes never hold up the driver's loop: [`Wire::transmit`] puts frames into the WebSocket's
/// buffer without waiting, and [`Wire::io`] (a `select!` branch) flushes it while it waits for
/// the peer's next frame. Once the buffer is over tungstenite's write buffer size (128 KiB, or one
/// larger message), the engine keeps its next frames, and the peer's frames wait (TCP
/// backpressure), until the buffer is out. Replies that arrive meanwhile wait too, and two ends
/// that both write without reading (two native drivers echoing large messages) stall until the
/// [`WRITE_TIMEOUT`] cuts them: a limit of this design, as of the one before it (which read
/// nothing during any write).
pub(crate) struct Wire<S> {
    ws: WebSocketStream<Counted<S>>,
    /// The close frame to send when the session is over.
    close: Option<CloseFrame>,
    /// A write failed: the socket is gone, later writes are skipped.
    broken: bool,
    /// Messages were fed since the last completed flush.
    unflushed: bool,
    /// A frame taken from the engine that the WebSocket's buffer had no room for yet.
    parked: Option<Message>,
    /// While unflushed: the bytes written when the write last made progress, and when the socket
    /// counts as dead if it makes none.
    progress: u64,
    deadline: Option<Pin<Box<Sleep>>>,
    /// Text and binary messages received and sent.
    received: u64,
    sent: u64,
}

impl<S: AsyncRead + AsyncWrite + Unpin> Wire<S> {
    pub(crate) fn new(ws: WebSocketStream<Counted<S>>) -> Self {
        Wire {
            ws,
            close: None,
            broken: false,
            unflushed: false,
            parked: None,
            progress: 0,
            deadline: None,
            received: 0,
            sent: 0,
        }
    }

    pub(crate) fn received(&self) -> u64 {
        self.received
    }

    pub(crate) fn sent(&self) -> u64 {
        self.sent
    }

    /// What the socket does next: the pending write flushed (or failed, or stuck for
    /// [`WRITE_TIMEOUT`]), or the peer's next frame (not while a frame is parked). Cancel-safe
    /// (a `select!` branch).
    pub(crate) async fn io(&mut self) -> Io {
        std::future::poll_fn(|cx| self.poll_io(cx)).await
    }

    fn poll_io(&mut self, cx: &mut Context<'_>) -> Poll<Io> {
        if self.unflushed && !self.broken {
            match Pin::new(&mut self.ws).poll_flush(cx) {
                Poll::Ready(Ok(())) => {
                    self.unflushed = false;
                    self.deadline = None;
                    return Poll::Ready(Io::Flushed);
                }
                Poll::Ready(Err(e)) => return Poll::Ready(Io::WriteFailed(e.to_string())),
                Poll::Pending => {
                    let written = self.ws.get_ref().written;
                    if written != self.progress || self.deadline.is_none() {
                        self.progress = written;
                        let at = Instant::now() + WRITE_TIMEOUT;
                        match &mut self.deadline {
                            Some(sleep) => sleep.as_mut().reset(at),
                            None => self.deadline = Some(Box::pin(tokio::time::sleep_until(at))),
                        }
                    }
                    if let Some(sleep) = &mut self.deadline {
                        if sleep.as_mut().poll(cx).is_ready() {
                            return Poll::Ready(Io::WriteFailed(write_blocked()));
                        }
                    }
                }
            }
        }
        if self.parked.is_some() {
            return Poll::Pending;
        }
        Pin::new(&mut self.ws).poll_next(cx).map(Io::Frame)
    }

    /// Takes what [`Wire::io`] reported: a frame goes to the engine, a failed write is its 1006
    /// close.
    pub(crate) fn handle(&mut self, engine: &mut impl Engine, now: Millis, io: Io) {
        match io {
            Io::Frame(frame) => self.receive(engine, now, frame),
            Io::Flushed => {}
            Io::WriteFailed(reason) => {
                self.broken = true;
                self.deadline = None;
                engine.handle_close(now, 1006, &reason);
            }
        }
    }

    /// Hands a frame from the peer to the engine. A message over the size limit closes with
    /// 1009; a socket error or an end without a close frame is a 1006 close.
    fn receive(&mut self, engine: &mut impl Engine, now: Millis, frame: Frame) {
        match frame {
            Some(Ok(Message::Text(text))) => {
                self.received += 1;
                engine.handle_text(now, text.as_str());
            }
            Some(Ok(Message::Binary(bytes))) => {
                self.received += 1;
                engine.handle_binary(now, &bytes);
            }
            Some(Ok(Message::Close(frame))) => {
                let (code, reason) = frame.map_or((1005, String::new()), |f| (f.code.into(), f.reason.to_string()));
                engine.handle_close(now, code, &reason);
            }
            Some(Ok(Message::Ping(_))) => engine.handle_ping(now), // the pong is tungstenite's
            Some(Ok(_)) => {}                                      // WebSocket pong, raw frame
            Some(Err(WsError::Capacity(e))) => {
                let reason = format!("message too big: {e}");
                self.close = Some(CloseFrame {
                    code: CloseCode::Size,
                    reason: reason.clone().into(),
                });
                engine.handle_close(now, 1009, &reason);
            }
            Some(Err(e)) => engine.handle_close(now, 1006, &e.to_string()),
            None => engine.handle_close(now, 1006, "connection ended without a close frame"),
        }
    }

    /// Puts the engine's frames into the WebSocket's buffer, without waiting, while it has room;
    /// true when any was taken. A failed write is the engine's 1006 close. Once the socket is
    /// broken, frames are dropped.
    pub(crate) fn transmit(&mut self, engine: &mut impl Engine, now: Millis) -> bool {
        let mut any = false;
        loop {
            if self.parked.is_none() {
                let Some(out) = engine.poll_transmit() else {
                    return any;
                };
                any = true;
                self.parked = self.message(out);
            }
            let Some(msg) = self.parked.take() else {
                continue;
            };
            if self.broken {
                continue;
            }
            let noop = &mut Context::from_waker(Waker::noop());
            let accepted = match Pin::new(&mut self.ws).poll_ready(noop) {
                Poll::Pending => {
                    self.parked = Some(msg);
                    return any;
                }
                Poll::Ready(Ok(())) => Pin::new(&mut self.ws).start_send(msg),
                Poll::Ready(Err(e)) => Err(e),
            };
            any = true; // taken (a parked one too): a failed send is a close, with events to give
            self.unflushed = true;
            match accepted {
                Ok(()) => self.sent += 1,
                Err(e) => {
                    self.broken = true;
                    self.deadline = None;
                    engine.handle_close(now, 1006, &e.to_string());
                }
            }
        }
    }

    /// The WebSocket message for a frame of the engine's; a close is kept for [`Wire::finish`].
    fn message(&mut self, out: Outgoing) -> Option<Message> {
        match out {
            Outgoing::Text(text) => Some(Message::text(text)),
            Outgoing::Binary(bytes) => Some(Message::binary(bytes)),
            Outgoing::Close { code, reason } => {
                self.close = Some(CloseFrame {
                    code: CloseCode::from(code),
                    reason: reason.into(),
                });
                None
            }
        }
    }

    /// Sends what is left (the parked frame, the engine's last frames), then the close frame (or
    /// the answer to the peer's), and waits for the socket to end; all of it within
    /// [`CLOSE_GRACE`].
    pub(crate) async fn finish(&mut self, engine: &mut impl Engine) {
        if self.broken {
            return;
        }
        let _ = tokio::time::timeout(CLOSE_GRACE, async {
            let mut next = self.parked.take();
            loop {
                if let Some(msg) = next.take() {
                    if self.ws.feed(msg).await.is_err() {
                        return;
                    }
                    self.sent += 1;
                }
                match engine.poll_transmit() {
                    Some(out) => next = self.message(out),
                    None => break,
                }
            }
            let _ = self.ws.close(self.close.take()).await;
            while let Some(Ok(_)) = self.ws.next().await {}
        })
        .await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The numbers written out: 16 KiB read at a time (the idle memory test bounds it only from
    /// above), the engine's limit and 4 KiB more on messages and frames, no limit kept as none.
    #[test]
    fn a_socket_reads_16_kib_at_a_time_and_takes_4_kib_over_the_engines_limit() {
        let cfg = ws_config(frame_limit(1_000));
        assert_eq!(cfg.read_buffer_size, 16 * 1024);
        assert_eq!((cfg.max_message_size, cfg.max_frame_size), (Some(5_096), Some(5_096)));
        assert_eq!(frame_limit(usize::MAX), usize::MAX);
    }
}
