//! The socket half of a driver, the same for every protocol: [`Wire`] owns the WebSocket and
//! moves frames between it and an [`Engine`] (a sans-IO session). A driver keeps only what is
//! its protocol's own: the events, the commands, the timers.

use agentwire_core::{Millis, Outgoing};
use futures_util::{SinkExt, StreamExt};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;
use tokio_tungstenite::tungstenite::protocol::CloseFrame;
use tokio_tungstenite::tungstenite::{Error as WsError, Message};
use tokio_tungstenite::WebSocketStream;

/// How long a closing handshake may take.
pub(crate) const CLOSE_GRACE: Duration = Duration::from_secs(2);
/// How long one write (putting a frame on the socket, or flushing) may block before the socket
/// counts as dead: a peer that stops reading fills the TCP buffers, and without a bound the
/// driver's loop (timers, commands, close) would wait forever. Every driver's sockets use it.
pub(crate) const WRITE_TIMEOUT: Duration = Duration::from_secs(5);

/// Why a socket counts as dead after a write that did not end within [`WRITE_TIMEOUT`].
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

/// What a frame from [`Wire::next`] is: `None` once the stream has ended.
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

/// A WebSocket, the close frame to end it with, and what went over it.
pub(crate) struct Wire<S> {
    ws: WebSocketStream<S>,
    /// The close frame to send when the session is over.
    close: Option<CloseFrame>,
    /// A write failed: the socket is gone, later writes are skipped.
    broken: bool,
    /// Messages were fed since the last flush.
    unflushed: bool,
    /// Text and binary messages received and sent.
    received: u64,
    sent: u64,
}

impl<S: AsyncRead + AsyncWrite + Unpin> Wire<S> {
    pub(crate) fn new(ws: WebSocketStream<S>) -> Self {
        Wire {
            ws,
            close: None,
            broken: false,
            unflushed: false,
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

    /// The next frame from the peer, for [`Wire::receive`]. Cancel-safe (a `select!` branch).
    pub(crate) async fn next(&mut self) -> Frame {
        self.ws.next().await
    }

    /// Hands a frame from [`Wire::next`] to the engine. A message over the size limit closes
    /// with 1009; a socket error or an end without a close frame is a 1006 close.
    pub(crate) fn receive(&mut self, engine: &mut impl Engine, now: Millis, frame: Frame) {
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

    /// Feeds every frame the engine has to send (unflushed); true when there was any. A failed
    /// or blocked write is the engine's 1006 close.
    pub(crate) async fn transmit(&mut self, engine: &mut impl Engine, now: Millis) -> bool {
        let mut any = false;
        while let Some(out) = engine.poll_transmit() {
            any = true;
            if let Err(reason) = self.feed(out).await {
                engine.handle_close(now, 1006, &reason);
            }
        }
        any
    }

    /// Flushes what was fed; false when there was nothing to flush (or the socket is broken),
    /// true when the engine may have more to say (a failed flush, or one blocked for
    /// [`WRITE_TIMEOUT`], is its 1006 close).
    pub(crate) async fn flush(&mut self, engine: &mut impl Engine, now: Millis) -> bool {
        if !self.unflushed || self.broken {
            return false;
        }
        self.unflushed = false;
        let failed = match tokio::time::timeout(WRITE_TIMEOUT, self.ws.flush()).await {
            Ok(Ok(())) => None,
            Ok(Err(e)) => Some(e.to_string()),
            Err(_) => Some(write_blocked()),
        };
        if let Some(reason) = failed {
            self.broken = true;
            engine.handle_close(now, 1006, &reason);
        }
        true
    }

    /// Puts one frame on the socket without flushing; a close is kept for [`Wire::finish`].
    /// After a failed write (its reason is the error), or one blocked for [`WRITE_TIMEOUT`], the
    /// socket is broken and frames are dropped.
    async fn feed(&mut self, out: Outgoing) -> Result<(), String> {
        let msg = match out {
            Outgoing::Text(text) => Message::text(text),
            Outgoing::Binary(bytes) => Message::binary(bytes),
            Outgoing::Close { code, reason } => {
                self.close = Some(CloseFrame {
                    code: CloseCode::from(code),
                    reason: reason.into(),
                });
                return Ok(());
            }
        };
        if self.broken {
            return Ok(());
        }
        self.sent += 1;
        self.unflushed = true;
        let failed = match tokio::time::timeout(WRITE_TIMEOUT, self.ws.feed(msg)).await {
            Ok(Ok(())) => return Ok(()),
            Ok(Err(e)) => e.to_string(),
            Err(_) => write_blocked(),
        };
        self.broken = true;
        Err(failed)
    }

    /// Sends the close frame (or answers the peer's) and waits, bounded, for the socket to end.
    pub(crate) async fn finish(&mut self) {
        if self.broken {
            return;
        }
        let close = self.close.take();
        let ws = &mut self.ws;
        let _ = tokio::time::timeout(CLOSE_GRACE, async {
            let _ = ws.close(close).await;
            while let Some(Ok(_)) = ws.next().await {}
        })
        .await;
    }
}
