//! One WebSocket connection: decoding the client's requests with the frame layer, answering
//! them, the outbound queue, pings (current generation) and the faults.

use crate::state::{Fail, Out};
use crate::{Faults, Peer, Step, GARBAGE};
use agentwire_moltzap::{
    codes, decode_message_with, encode_response, DecodeOptions, Frame, FrameErrorKind, Generation, Id, Outcome,
    Request, RpcError,
};
use agentwire_peer_kit::http::{Prefixed, REQUEST_TIMEOUT};
use agentwire_peer_kit::ws as kit_ws;
use futures_util::{SinkExt, StreamExt};
use serde_json::value::RawValue;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;
use tokio::net::TcpStream;
use tokio::sync::{mpsc, watch, Notify};
use tokio_tungstenite::tungstenite::{Error as WsError, Message};
use tokio_tungstenite::WebSocketStream;

type Ws = WebSocketStream<Prefixed<TcpStream>>;

/// Unanswered pings after which the connection is closed (current generation).
pub const MAX_MISSED_PINGS: u32 = 3;
/// Close code sent after [`MAX_MISSED_PINGS`] unanswered pings.
pub const PING_TIMEOUT_CLOSE: u16 = 1001;
const CLOSE_GRACE: Duration = Duration::from_secs(1);

/// Upgrades and serves one WebSocket until it ends.
pub(crate) async fn websocket(stream: Prefixed<TcpStream>, peer: &Peer, stopped: watch::Receiver<bool>) {
    let Some(ws) = kit_ws::accept(stream, peer.cfg.max_message_bytes, REQUEST_TIMEOUT).await else {
        return;
    };
    let id = peer.next_conn.fetch_add(1, Ordering::Relaxed);
    let (tx, rx) = mpsc::channel(peer.cfg.outbound_queue.max(1));
    let kill = Arc::new(Notify::new());
    peer.open_ws.fetch_add(1, Ordering::Relaxed);
    peer.state().open(id, tx.clone(), kill.clone());
    // Undone on drop, so a panic or an abort of this task gives both back too.
    let _open = Opened { peer, id };
    let mut conn = Conn {
        ws,
        peer,
        id,
        tx,
        kill,
        received: 0,
        missed: 0,
        delayed: Vec::new(),
    };
    conn.run(rx, stopped).await;
}

/// A WebSocket counted in `/health` and known to the state, until this is dropped.
struct Opened<'a> {
    peer: &'a Peer,
    id: u64,
}

impl Drop for Opened<'_> {
    fn drop(&mut self) {
        self.peer.state().close(self.id);
        self.peer.open_ws.fetch_sub(1, Ordering::Relaxed);
    }
}

struct Conn<'a> {
    ws: Ws,
    peer: &'a Peer,
    id: u64,
    tx: mpsc::Sender<Out>,
    kill: Arc<Notify>,
    /// Text and binary messages received.
    received: u64,
    /// Pings sent since the last pong.
    missed: u32,
    /// Sends held back by [`Faults::delay_send_to`]: (when to handle, request).
    delayed: Vec<(tokio::time::Instant, Request)>,
}

impl Conn<'_> {
    fn generation(&self) -> Generation {
        self.peer.cfg.generation
    }

    async fn run(&mut self, mut rx: mpsc::Receiver<Out>, mut stopped: watch::Receiver<bool>) {
        let pinging = self.generation() == Generation::Current;
        let every = self.peer.cfg.ping_interval.max(Duration::from_millis(1));
        let mut ticker = tokio::time::interval_at(tokio::time::Instant::now() + every, every);
        let kill = self.kill.clone();
        loop {
            let (delayed, due) = (!self.delayed.is_empty(), self.next_delayed());
            tokio::select! {
                biased;
                _ = kill.notified() => {
                    return self.close(1008, "slow consumer: outbound queue full").await;
                }
                _ = stopped.changed() => return self.close(1001, "server shutting down").await,
                out = rx.recv() => match out {
                    Some(Out::Text(text)) => {
                        if !self.send(Message::text(text)).await {
                            return;
                        }
                    }
                    Some(Out::Drop) | None => return,
                },
                frame = self.ws.next() => match frame {
                    Some(Ok(Message::Text(text))) => self.on_text(text.as_str()),
                    Some(Ok(Message::Binary(bytes))) => match std::str::from_utf8(&bytes) {
                        Ok(text) => self.on_text(text),
                        Err(_) => {
                            self.received += 1;
                            self.reply_error(None, "", &Fail { code: -32700, message: "Invalid JSON".into() });
                        }
                    },
                    Some(Ok(Message::Pong(_))) => {
                        if !self.peer.faults().ignore_pongs {
                            self.missed = 0;
                        }
                    }
                    Some(Ok(_)) => {} // pings are answered by tungstenite; a close is answered too
                    Some(Err(WsError::Capacity(_))) => return self.close(1009, "message too big").await,
                    Some(Err(_)) | None => return,
                },
                _ = tokio::time::sleep_until(due), if delayed => {
                    self.run_delayed();
                }
                _ = ticker.tick(), if pinging => {
                    if self.peer.faults().no_pings {
                        continue;
                    }
                    if self.missed >= MAX_MISSED_PINGS {
                        return self.close(PING_TIMEOUT_CLOSE, "3 pings unanswered").await;
                    }
                    self.missed += 1;
                    let payload = self.missed.to_string().into_bytes();
                    if !self.send(Message::Ping(payload.into())).await {
                        return;
                    }
                }
            }
        }
    }

    /// Sends one message; false when the socket is gone, the write blocked longer than
    /// [`PeerConfig::write_timeout`](crate::PeerConfig::write_timeout) (a client that stopped
    /// reading: nothing else happens on this connection while a write blocks, no reads and no
    /// pings, so it is dropped) or the connection was killed while the write was blocked.
    async fn send(&mut self, msg: Message) -> bool {
        let kill = self.kill.clone();
        let write = tokio::time::timeout(self.peer.cfg.write_timeout, self.ws.send(msg));
        tokio::select! {
            r = write => matches!(r, Ok(Ok(()))),
            _ = kill.notified() => false,
        }
    }

    async fn close(&mut self, code: u16, reason: &str) {
        kit_ws::close(&mut self.ws, code, reason, CLOSE_GRACE).await;
    }

    /// Queues an outbound message; a full queue makes this connection a slow consumer.
    fn queue(&self, out: Out) {
        if let Err(mpsc::error::TrySendError::Full(_)) = self.tx.try_send(out) {
            self.kill.notify_one();
        }
    }

    fn on_text(&mut self, text: &str) {
        self.received += 1;
        let faults = self.peer.faults();
        match self.generation() {
            Generation::Released => match self.released_request(text) {
                Ok(req) => self.handle(&faults, req),
                Err((id, fail)) => self.reply_error(id.as_ref(), "", &fail),
            },
            Generation::Current => {
                // Standard JSON-RPC frames with no custom field (moltzap-transport.md): an
                // unknown key, the released `type` included, is an invalid request (-32600).
                let opts = DecodeOptions {
                    max_message_bytes: self.peer.cfg.max_message_bytes,
                    reject_unknown_keys: true,
                    ..DecodeOptions::default()
                };
                for frame in decode_message_with(Generation::Current, text, &opts) {
                    match frame {
                        Ok(Frame::Request(req)) => self.handle(&faults, req),
                        Ok(Frame::Notification(_)) => {} // JSON-RPC: notifications are not answered
                        Ok(Frame::Response(r)) => self.reply_error(r.id.as_ref(), "", &invalid_frame()),
                        Err(e) if matches!(e.kind, FrameErrorKind::Syntax(_) | FrameErrorKind::Empty) => {
                            self.reply_error(None, "", &invalid_json())
                        }
                        Err(e) => self.reply_error(e.id.as_ref(), "", &invalid_frame()),
                    }
                }
            }
        }
        if faults.drop_after_frames.is_some_and(|n| self.received >= n) {
            self.queue(Out::Drop);
        }
    }

    /// A released server reads one JSON value per message (`JSON.parse`): anything else is
    /// -32700; a value that is not one request object is -32600.
    fn released_request(&self, text: &str) -> Result<Request, (Option<Id>, Fail)> {
        if serde_json::from_str::<&RawValue>(text).is_err() {
            return Err((None, invalid_json()));
        }
        if !text.trim_start().starts_with('{') {
            return Err((None, invalid_frame()));
        }
        let opts = DecodeOptions {
            max_message_bytes: self.peer.cfg.max_message_bytes,
            reject_unknown_keys: true,
            ..DecodeOptions::default()
        };
        match decode_message_with(Generation::Released, text, &opts)
            .into_iter()
            .next()
        {
            Some(Ok(Frame::Request(req))) => Ok(req),
            Some(Ok(Frame::Response(r))) => Err((r.id, invalid_frame())),
            Some(Err(e)) => Err((e.id, invalid_frame())),
            _ => Err((None, invalid_frame())),
        }
    }

    /// The earliest deadline among the delayed sends.
    fn next_delayed(&self) -> tokio::time::Instant {
        let far = tokio::time::Instant::now() + Duration::from_secs(3600);
        self.delayed.iter().map(|(at, _)| *at).min().unwrap_or(far)
    }

    /// Handles the delayed sends that are due, in the order of their deadlines.
    fn run_delayed(&mut self) {
        let now = tokio::time::Instant::now();
        let mut due: Vec<(tokio::time::Instant, Request)> = Vec::new();
        let mut i = 0;
        while i < self.delayed.len() {
            if self.delayed[i].0 <= now {
                due.push(self.delayed.remove(i));
            } else {
                i += 1;
            }
        }
        due.sort_by_key(|(at, _)| *at);
        let faults = self.peer.faults();
        for (_, req) in due {
            self.process(&faults, req);
        }
    }

    fn handle(&mut self, faults: &Faults, req: Request) {
        let method = req.method.as_str();
        if faults.drop_at.as_ref() == Some(&Step::BeforeAnswer(method.to_string())) {
            return self.queue(Out::Drop);
        }
        if let Some(name) = send_target(&req) {
            if self.peer.state().authenticated(self.id) {
                if faults.refuse_send_to.contains(&name) {
                    let fail = Fail {
                        code: codes::INTERNAL_ERROR,
                        message: "Internal error".into(),
                    };
                    return self.reply(faults, &req.id, method, &Outcome::Error(self.rpc_error(&fail)));
                }
                if let Some((_, ms)) = faults.delay_send_to.iter().find(|(n, _)| *n == name) {
                    let at = tokio::time::Instant::now() + Duration::from_millis(*ms);
                    self.delayed.push((at, req));
                    return;
                }
            }
        }
        self.process(faults, req);
    }

    /// Handles and answers a request (after the faults that hold it back).
    fn process(&mut self, faults: &Faults, req: Request) {
        let method = req.method.as_str();
        let handshake = match self.generation() {
            Generation::Released => "auth/connect",
            Generation::Current => "agent/network/connect",
        };
        let mut connected = false;
        let answer = {
            let mut state = self.peer.state();
            let was = state.authenticated(self.id);
            if method == handshake {
                let r = state.connect(self.id, req.params.as_deref());
                connected = r.is_ok() && !was;
                r
            } else if !was {
                Err(Fail {
                    code: codes::UNAUTHORIZED,
                    message: format!("Not authenticated. Send {handshake} first."),
                })
            } else {
                state.call(self.id, method, req.params.as_deref())
            }
        };
        match answer {
            Ok(result) => self.reply(faults, &req.id, method, &Outcome::Result(result)),
            Err(fail) => self.reply(faults, &req.id, method, &Outcome::Error(self.rpc_error(&fail))),
        }
        if connected && faults.drop_at == Some(Step::AfterConnect) {
            self.queue(Out::Drop);
        }
        if faults.drop_at.as_ref() == Some(&Step::AfterAnswer(method.to_string())) {
            self.queue(Out::Drop);
        }
    }

    fn rpc_error(&self, fail: &Fail) -> RpcError {
        let mut e = RpcError::new(fail.code, fail.message.clone());
        if self.generation() == Generation::Current {
            e.tag = codes::name(fail.code).map(str::to_string);
        }
        e
    }

    fn reply_error(&self, id: Option<&Id>, method: &str, fail: &Fail) {
        let faults = self.peer.faults();
        let outcome = Outcome::Error(self.rpc_error(fail));
        if let Ok(text) = encode_response(self.generation(), id, &outcome) {
            self.answer(&faults, method, text);
        }
    }

    fn reply(&self, faults: &Faults, id: &Id, method: &str, outcome: &Outcome) {
        if let Ok(text) = encode_response(self.generation(), Some(id), outcome) {
            self.answer(faults, method, text);
        }
    }

    /// Puts an answer on the queue, with the faults that concern answers.
    fn answer(&self, faults: &Faults, method: &str, text: String) {
        if faults.never_answer.iter().any(|m| m == method) {
            return;
        }
        let garbage = self.peer.take_garbage();
        let delay = faults.delay_ms.iter().find(|(m, _)| m == method).map(|(_, d)| *d);
        match delay {
            Some(ms) => {
                let tx = self.tx.clone();
                tokio::spawn(async move {
                    tokio::time::sleep(Duration::from_millis(ms)).await;
                    if garbage {
                        let _ = tx.send(Out::Text(GARBAGE.to_string())).await;
                    }
                    let _ = tx.send(Out::Text(text)).await;
                });
            }
            None => {
                if garbage {
                    self.queue(Out::Text(GARBAGE.to_string()));
                }
                self.queue(Out::Text(text));
            }
        }
    }
}

/// The agent name of a `messages/send` whose `to` is `agent:<name>`.
fn send_target(req: &Request) -> Option<String> {
    #[derive(serde::Deserialize)]
    struct To {
        #[serde(default)]
        to: Option<String>,
    }
    if req.method != "messages/send" {
        return None;
    }
    let to: To = serde_json::from_str(req.params.as_deref()?.get()).ok()?;
    to.to?.strip_prefix("agent:").map(str::to_string)
}

fn invalid_json() -> Fail {
    Fail {
        code: codes::PARSE_ERROR,
        message: "Invalid JSON".into(),
    }
}

fn invalid_frame() -> Fail {
    Fail {
        code: codes::INVALID_REQUEST,
        message: "Invalid request frame".into(),
    }
}
