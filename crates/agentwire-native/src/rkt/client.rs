//! [`RktClient`]: an async RKT client. One task owns the socket and the `ClientSession`; the
//! client's methods send it commands with a reply channel, and the task routes each engine event
//! to the command it answers by Message-ID.
//!
//! Reply bodies come back as the engine's [`body_value`] reads them, as npm and the component
//! give them: a body that is JSON is its value, any other text (not JSON, a lone surrogate
//! escape, a number past `f64`) is that text as a `Value::String`, never an error (the server
//! may already have carried out the PAY or MEMORY_SET it answers).

use crate::call::{self, Caller, CancelOnDrop, Ending, Waiting};
use crate::clock::{driven, driver_now};
use crate::events::{self, ByteBudget, EventTx, Weigh};
use crate::pump::{pump, Handler};
use crate::tls::Stream;
use crate::wire::{self, frame_limit, ConnectError, Counted, Wire};
use crate::OsEntropy;
use agentwire_core::{ErrorKind, Millis};
use agentwire_rkt::codec::SUBPROTOCOL;
use agentwire_rkt::json::body_value;
use agentwire_rkt::{
    resolve, AuthBody, AuthOkBody, ClientConfig, ClientEvent, ClientSession, MemoryGetBody, PeerInfo, RequestOptions,
    RktError,
};
use serde_json::Value;
use std::time::{Duration, Instant};
use tokio::sync::{mpsc, oneshot};
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::error::ProtocolError;
use tokio_tungstenite::tungstenite::http::{header::SEC_WEBSOCKET_PROTOCOL, HeaderValue};
use tokio_tungstenite::tungstenite::Error as WsError;
use tokio_tungstenite::WebSocketStream;

/// The chunks of a stream: each STREAM_DATA body in `Seq` order (as [`body_value`] reads it: one
/// that is not JSON is its text as a string); [`StreamChunks::recv`] ends (`None`) after
/// STREAM_END, or after one `Err` when the stream fails. Dropping it before the end cancels the
/// stream. Chunks wait unread as their text, at most [`STREAM_CAPACITY`] of
/// them and [`STREAM_UNREAD_BYTES_EACH`] bytes per stream, and [`STREAM_UNREAD_BYTES`] for all
/// the client's streams together: a stream whose chunk finds one full fails with `limit` (the
/// reader fell behind).
#[must_use = "dropping the chunks cancels the stream"]
pub struct StreamChunks {
    rx: events::Events<Chunk>,
    /// Cancels the stream in the engine when the reader goes.
    _cancel: CancelOnDrop<Start>,
}

impl StreamChunks {
    /// The next chunk; `None` once the stream is over.
    ///
    /// # Cancel safety
    ///
    /// Cancel-safe, as is the `Stream`'s `next`: dropped before it resolves (another branch of
    /// a `tokio::select!` won), no chunk is lost; the next call gets it.
    pub async fn recv(&mut self) -> Option<Result<Value, RktError>> {
        self.rx.recv().await.map(|chunk| chunk.map(parse_body))
    }
}

/// The chunks as a `Stream` (`futures::StreamExt`), as [`StreamChunks::recv`] gives them.
impl futures_util::Stream for StreamChunks {
    type Item = Result<Value, RktError>;

    fn poll_next(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Self::Item>> {
        self.rx.poll_recv(cx).map(|c| c.map(|chunk| chunk.map(parse_body)))
    }
}

/// A chunk's body as received (parsed when read), or the stream's error.
type Chunk = Result<Option<String>, RktError>;

impl Weigh for Chunk {
    fn weight(&self) -> usize {
        self.as_ref().map_or(0, |body| body.as_ref().map_or(0, String::len))
    }
}

impl std::fmt::Debug for StreamChunks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StreamChunks").finish_non_exhaustive()
    }
}

/// Chunks a stream may hold unread before it fails with `limit` (one slot more is kept for that
/// error).
pub const STREAM_CAPACITY: usize = 1024;

/// Bytes of chunk text that all of a client's streams may hold unread together (64 MiB); a
/// chunk larger than that is taken only when no other is unread.
pub const STREAM_UNREAD_BYTES: usize = 64 << 20;

/// Bytes of chunk text one stream may hold unread (16 MiB): a stream whose reader stalls fails
/// on its own before it takes the budget of the others.
pub const STREAM_UNREAD_BYTES_EACH: usize = 16 << 20;

/// Events [`RktClient::events`] may hold unread. The last two slots are kept: one for `Goodbye`,
/// one for `Closed`, so the end of the connection is always seen; errors past the others are
/// dropped.
pub const EVENT_CAPACITY: usize = 64;

/// Bytes of error messages [`RktClient::events`] may hold unread (1 MiB); an error past them is
/// dropped.
pub const EVENT_UNREAD_BYTES: usize = 1 << 20;

/// What the connection says that answers no call, from [`RktClient::events`]: `Error` (a message
/// the client could not decode or place, an unsolicited ERROR such as a 429 or 503 with no
/// `Reply-To`, a keepalive PING unanswered), then `Goodbye` when the server says it, and `Closed`
/// last. Replies go to the calls that wait for them, never here.
pub type Events = events::Events<ClientEvent>;

/// An error's text; `Goodbye` and `Closed` weigh nothing.
impl Weigh for ClientEvent {
    fn weight(&self) -> usize {
        match self {
            ClientEvent::Error(e) => e.error.message.len() + e.details.as_ref().map_or(0, String::len),
            _ => 0,
        }
    }
}

/// What the server said in HELLO_ACK, and where it is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerInfo {
    /// The `ws://` URL connected to.
    pub url: String,
    pub server: PeerInfo,
    pub agreed_version: u32,
    pub session_timeout_s: u64,
}

type Reply<T> = call::Reply<T, RktError>;
/// How a call starts its command in the engine, and who waits for its answer.
type Start = (
    Box<dyn FnOnce(&mut ClientSession, Millis) -> Result<String, RktError> + Send>,
    Waiter,
);
type Command = call::Command<Start>;

enum Waiter {
    /// RESPONSE body, raw.
    Body(Reply<Option<String>>),
    Auth(Reply<AuthOkBody>),
    /// PONG: the round trip from `sent`, measured here. The engine's `rtt_ms` is in whole
    /// milliseconds (its clock's); a socket driver can time I/O finer, which `rkt ping` prints.
    Pong {
        reply: Reply<Duration>,
        sent: Instant,
    },
    Stream(StreamWaiter),
}

struct StreamWaiter {
    /// Until the first reply: who waits for the stream to begin.
    opening: Option<Reply<()>>,
    chunks: EventTx<Chunk>,
}

/// A call's error once the connection is over: with the close code and reason when the app did
/// not close it ([`Ending`]).
fn closed_error(ending: Option<&str>) -> RktError {
    RktError::local(ErrorKind::Closed, call::closed_message(ending))
}

/// A reply's or chunk's body by the engine's rule ([`body_value`]), as npm and the component
/// give it: no body is `null`, a body that is not JSON is its text as a string.
fn parse_body(body: Option<String>) -> Value {
    body_value(body.as_deref())
}

impl Waiter {
    fn fail(self, error: RktError) {
        match self {
            Waiter::Body(r) => drop(r.send(Err(error))),
            Waiter::Auth(r) => drop(r.send(Err(error))),
            Waiter::Pong { reply, .. } => drop(reply.send(Err(error))),
            Waiter::Stream(mut s) => match s.opening.take() {
                Some(reply) => drop(reply.send(Err(error))),
                None => drop(s.chunks.try_send(Err(error))),
            },
        }
    }
}

impl StreamWaiter {
    /// Tells the caller the stream began (on its first reply).
    fn open(&mut self) {
        if let Some(reply) = self.opening.take() {
            let _ = reply.send(Ok(()));
        }
    }

    /// Queues a chunk; false when the stream cannot go on (reader gone or too far behind).
    fn push(&mut self, chunk: Option<String>) -> bool {
        self.open();
        if self.chunks.is_closed() {
            return false;
        }
        let m = if self.chunks.slots() <= 1 {
            format!("{STREAM_CAPACITY} stream chunks unread: the reader fell behind")
        } else if self.chunks.try_send(Ok(chunk)).is_err() {
            format!(
                "a stream's chunks unread reached {STREAM_UNREAD_BYTES_EACH} bytes, or all streams' \
                 {STREAM_UNREAD_BYTES}: the reader fell behind"
            )
        } else {
            return true;
        };
        // An error weighs nothing, and one slot is kept for it.
        let _ = self.chunks.try_send(Err(RktError::local(ErrorKind::Limit, m)));
        false
    }
}

/// An RKT client connection. Calls may run concurrently (`&self`); each is answered by its own
/// reply. Dropping a call's future before it resolves (a `tokio::select!`, a
/// `tokio::time::timeout`) cancels the command: its `max_in_flight` slot is free at once, and its
/// late reply is dropped. Dropping the client says GOODBYE and closes the connection; calls still waiting then
/// fail with kind `closed`. Once the server or the network ended the connection, later calls
/// fail `closed` with its close code and reason ("the connection is closed (1008 session
/// expired)"); after the app's own [`RktClient::close`], "the connection is closed". A write that blocks for 5 s (a server that stopped reading) ends the
/// connection the same way (close 1006).
///
/// # Cancel safety
///
/// A call ([`RktClient::request`], [`RktClient::stream`], [`RktClient::discover`],
/// [`RktClient::memory_set`], [`RktClient::memory_get`], [`RktClient::pay`],
/// [`RktClient::auth`], [`RktClient::ping`]) may be dropped at any await point, from any task:
/// the client's own task writes every frame, never the call, so a dropped call leaves no frame
/// half-written and the connection serves the next calls; its command is cancelled in the engine
/// (slot freed, late reply dropped). It is not cancel-safe in what it did: a call dropped after
/// its frame went out may have been carried out by the server (a PAY, a MEMORY_SET), and its
/// answer is lost; make it again only when doing it twice is safe. [`RktClient::close`] and
/// [`RktClient::connect`] say what dropping them does; the [`Events`] and [`StreamChunks`]
/// receivers are cancel-safe.
#[must_use = "dropping the client closes its connection"]
pub struct RktClient {
    caller: Caller<Start>,
    info: ServerInfo,
    events: Option<Events>,
    /// What the streams' unread chunks may take, together.
    stream_bytes: ByteBudget,
}

impl std::fmt::Debug for RktClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RktClient")
            .field("info", &self.info)
            .finish_non_exhaustive()
    }
}

impl RktClient {
    /// Connects to `address` (`rkt://host`, `host[:port]`, `ws://...`; `rkts://host` and `wss://...`
    /// over TLS, see [`crate::tls`]; see
    /// [`agentwire_rkt::resolve()`]) and completes HELLO/HELLO_ACK and, with
    /// `cfg.authorization`, the AUTH it sends (a refused key fails `connect` with the AUTH's
    /// error, kind `auth`), all within `cfg.handshake_timeout_ms`. A timeout (`timeout`) says
    /// which phase hung: "no WebSocket upgrade from …" (the network, a proxy, the server's HTTP
    /// side) or "… answered the WebSocket upgrade but no HELLO_ACK …" (the RKT server). A
    /// configuration [`ClientConfig::check`] refuses fails `invalid` before anything opens.
    ///
    /// # Cancel safety
    ///
    /// Dropped before it resolves, at any point, the connection ends with it: a socket still
    /// upgrading is closed, a session under way says GOODBYE and closes.
    pub async fn connect(address: &str, cfg: ClientConfig) -> Result<RktClient, RktError> {
        let url = resolve(address).map_err(|e| RktError::local(ErrorKind::Invalid, e.0))?;
        // Before the network: a limit of 0 would otherwise be spent on the upgrade.
        cfg.check()?;
        let limit = cfg.handshake_timeout_ms;
        // One deadline for both phases; a limit past the clock's range is 30 years (as
        // `tokio::time::timeout` takes it).
        let now = tokio::time::Instant::now();
        let deadline = (now.checked_add(Duration::from_millis(limit)))
            .unwrap_or_else(|| now + Duration::from_secs(30 * 365 * 86_400));
        let shown = agentwire_core::redact::url(&url).to_string();
        let ws = match tokio::time::timeout_at(deadline, upgrade(&url, &cfg)).await {
            Ok(ws) => ws?,
            Err(_) => {
                let m = format!("no WebSocket upgrade from {shown} within {limit} ms");
                return Err(RktError::local(ErrorKind::Timeout, m));
            }
        };
        let waited = match cfg.authorization {
            Some(_) => "HELLO_ACK and AUTH_OK",
            None => "HELLO_ACK",
        };
        // Dropped at the deadline, the caller's commands end: the session says GOODBYE and closes.
        let started = start(url, ws, cfg);
        let info = match tokio::time::timeout_at(deadline, started.handshake).await {
            Ok(info) => info.map_err(|_| closed_error(started.ending.get()))??,
            Err(_) => {
                let m = format!("{shown} answered the WebSocket upgrade but no {waited} within {limit} ms");
                return Err(RktError::local(ErrorKind::Timeout, m));
            }
        };
        Ok(RktClient {
            caller: started.caller,
            info,
            events: Some(started.events),
            stream_bytes: ByteBudget::new(STREAM_UNREAD_BYTES),
        })
    }

    /// The server's HELLO_ACK: `From`, `User-Agent`, `Capabilities`, agreed version, timeout.
    pub fn server_info(&self) -> &ServerInfo {
        &self.info
    }

    /// What the connection says that answers no call ([`Events`]: errors, `Goodbye`, `Closed`
    /// last); `None` after the first call. Events from the handshake on are held until read, at
    /// most [`EVENT_CAPACITY`] and [`EVENT_UNREAD_BYTES`]; past either, errors are dropped, never
    /// `Goodbye` or `Closed`. Drop the receiver to discard them.
    pub fn events(&mut self) -> Option<Events> {
        self.events.take()
    }

    /// Starts a command and waits for its answer; dropping the future cancels the command in
    /// the engine (`ClientSession::cancel`), which frees its `max_in_flight` slot at once.
    async fn submit<T>(
        &self,
        start: impl FnOnce(&mut ClientSession, Millis) -> Result<String, RktError> + Send + 'static,
        waiter: impl FnOnce(Reply<T>) -> Waiter,
    ) -> Result<T, RktError> {
        let (reply, answer) = oneshot::channel();
        self.caller
            .call((Box::new(start), waiter(reply)), answer, closed_error)
            .await
    }

    /// REQUEST `intent`; returns the RESPONSE body (`{"intent", "data"}` from the reference
    /// agent), parsed as [`body_value`] does: one that is not JSON is its text as a string.
    /// `opts.stream` is ignored: use [`RktClient::stream`]. `params` and `opts.context` are
    /// written as compact JSON from the value (keys sorted, `1e3` as `1000.0`: see
    /// [`ClientSession::request`]).
    pub async fn request(&self, intent: &str, params: Option<Value>, opts: RequestOptions) -> Result<Value, RktError> {
        let intent = intent.to_string();
        let opts = RequestOptions { stream: false, ..opts };
        let body = self
            .submit(move |s, now| s.request(now, &intent, params, opts), Waiter::Body)
            .await?;
        Ok(parse_body(body))
    }

    /// REQUEST `intent` with `Stream: true`. Resolves at the first reply: an ERROR fails here;
    /// otherwise the receiver yields every STREAM_DATA body in order and ends after STREAM_END.
    /// A server that answers with a plain RESPONSE yields its body as the one chunk. `params`
    /// and `opts.context` are written as in [`RktClient::request`].
    pub async fn stream(
        &self,
        intent: &str,
        params: Option<Value>,
        opts: RequestOptions,
    ) -> Result<StreamChunks, RktError> {
        let intent = intent.to_string();
        let opts = RequestOptions { stream: true, ..opts };
        let start = move |s: &mut ClientSession, now| s.request(now, &intent, params, opts);
        let (chunks, rx) = events::channel_sharing(STREAM_CAPACITY + 1, STREAM_UNREAD_BYTES_EACH, &self.stream_bytes);
        let (reply, answer) = oneshot::channel();
        let waiter = Waiter::Stream(StreamWaiter {
            opening: Some(reply),
            chunks,
        });
        let (ticket, ()) = self
            .caller
            .call_with_ticket((Box::new(start), waiter), answer, closed_error)
            .await?;
        Ok(StreamChunks {
            rx,
            _cancel: self.caller.cancel_on_drop(ticket),
        })
    }

    /// DISCOVER: the capability manifest (its body as [`body_value`] reads it).
    pub async fn discover(&self) -> Result<Value, RktError> {
        Ok(parse_body(self.submit(|s, now| s.discover(now), Waiter::Body).await?))
    }

    /// MEMORY_SET; returns the server's acknowledgement body ([`body_value`]: one that is not
    /// JSON is its text as a string, not an error, since the value was set). `value` is written
    /// as compact JSON from the value (keys sorted, `1e3` as `1000.0`: see
    /// [`ClientSession::memory_set`]).
    pub async fn memory_set(
        &self,
        key: &str,
        value: Value,
        namespace: Option<&str>,
        ttl_s: Option<u64>,
    ) -> Result<Value, RktError> {
        let (key, namespace) = (key.to_string(), namespace.map(str::to_string));
        let start = move |s: &mut ClientSession, now| s.memory_set(now, &key, value, namespace.as_deref(), ttl_s);
        Ok(parse_body(self.submit(start, Waiter::Body).await?))
    }

    /// MEMORY_GET; `None` when the key is not set (or expired), as
    /// [`MemoryGetBody::read_reply`] reads the reply ([`body_value`] of its body: one that is
    /// not a JSON object is `decode`).
    pub async fn memory_get(&self, key: &str, namespace: Option<&str>) -> Result<Option<Value>, RktError> {
        let (key, namespace) = (key.to_string(), namespace.map(str::to_string));
        let start = move |s: &mut ClientSession, now| s.memory_get(now, &key, namespace.as_deref());
        let reply = parse_body(self.submit(start, Waiter::Body).await?);
        MemoryGetBody::read_reply(&reply)
    }

    /// PAY; returns the receipt body ([`body_value`]: one that is not JSON is its text as a
    /// string, not an error, since the payment was made).
    pub async fn pay(
        &self,
        amount: f64,
        currency: &str,
        description: Option<&str>,
        recipient: Option<&str>,
    ) -> Result<Value, RktError> {
        let currency = currency.to_string();
        let (description, recipient) = (description.map(str::to_string), recipient.map(str::to_string));
        let start = move |s: &mut ClientSession, now| {
            s.pay(now, amount, &currency, description.as_deref(), recipient.as_deref())
        };
        Ok(parse_body(self.submit(start, Waiter::Body).await?))
    }

    /// AUTH; returns AUTH_OK with the session token.
    pub async fn auth(&self, auth: AuthBody) -> Result<AuthOkBody, RktError> {
        self.submit(move |s, now| s.auth(now, auth), Waiter::Auth).await
    }

    /// PING; the round trip from handing PING to the engine to reading PONG, timed by the driver
    /// (finer than the engine's `rtt_ms`, which is in whole milliseconds).
    pub async fn ping(&self) -> Result<Duration, RktError> {
        self.submit(
            |s, now| s.ping(now),
            |reply| Waiter::Pong {
                reply,
                sent: Instant::now(),
            },
        )
        .await
    }

    /// GOODBYE, close 1000, and waits (bounded) for the connection to end. Calls still waiting,
    /// from any task, then fail with kind `closed`, as do later ones. It takes `&self`, so that
    /// any holder of a client shared between tasks (an `Arc`) can close it.
    ///
    /// # Cancel safety
    ///
    /// Dropped before it returns, the close goes on: from its first poll the client's task is
    /// told to close, and calls fail `closed`. Only the wait is given up; another `close` waits
    /// again.
    pub async fn close(&self) {
        self.caller.close().await
    }
}

/// The WebSocket to `url`, upgraded with the RKT subprotocol.
async fn upgrade(url: &str, cfg: &ClientConfig) -> Result<WebSocketStream<Counted<Stream>>, RktError> {
    let mut request = url.into_client_request().map_err(|e| connect_error(url, e))?;
    request
        .headers_mut()
        .insert(SEC_WEBSOCKET_PROTOCOL, HeaderValue::from_static(SUBPROTOCOL));
    let ws_cfg = wire::ws_config(frame_limit(cfg.max_message_size));
    wire::connect(request, ws_cfg).await.map_err(|e| connect_error(url, e))
}

/// A session started on its socket ([`start`]), HELLO sent.
struct Started {
    caller: Caller<Start>,
    /// How the connection ended, unless the app closed it.
    ending: Ending,
    /// The handshake's outcome.
    handshake: oneshot::Receiver<Result<ServerInfo, RktError>>,
    events: Events,
}

/// Starts the task that owns `ws` and the session; the session says HELLO.
fn start(url: String, ws: WebSocketStream<Counted<Stream>>, cfg: ClientConfig) -> Started {
    let (commands, inbox) = mpsc::unbounded_channel();
    let (ready, handshake) = oneshot::channel();
    let (notices, events) = events::channel(EVENT_CAPACITY, EVENT_UNREAD_BYTES);
    let ending = Ending::default();
    let routes = Routes {
        url,
        ending: ending.clone(),
        waiting: Waiting::default(),
        ready: Some(ready),
        closers: Vec::new(),
        notices,
    };
    let session = ClientSession::new(cfg, Box::new(OsEntropy));
    tokio::spawn(driven(drive(Wire::new(ws), session, routes, inbox)));
    Started {
        caller: Caller::new(commands, ending.clone()),
        ending,
        handshake,
        events,
    }
}

fn connect_error(url: &str, e: impl Into<ConnectError>) -> RktError {
    // Quoted without credentials; `refused_upgrade` takes the URL itself and does the same.
    let shown = agentwire_core::redact::url(url);
    let e = match e.into() {
        ConnectError::Dial(e) => return RktError::local(e.kind, format!("{shown}: {}", e.message)),
        ConnectError::Ws(e) => e,
    };
    match e {
        WsError::Http(resp) => {
            let body = resp.body().as_deref().map(String::from_utf8_lossy).unwrap_or_default();
            agentwire_core::Error::refused_upgrade(url, resp.status().as_u16(), &body).into()
        }
        WsError::Protocol(ProtocolError::SecWebSocketSubProtocolError(e)) => RktError::local(
            ErrorKind::Protocol,
            format!("{shown} did not accept the subprotocol {SUBPROTOCOL}: {e}"),
        ),
        WsError::Url(e) => RktError::local(ErrorKind::Invalid, format!("{shown}: {e}")),
        e => RktError::local(ErrorKind::Closed, format!("cannot connect to {shown}: {e}")),
    }
}

/// Routes the session's events to the calls waiting for them.
struct Routes {
    url: String,
    /// How the connection ended, for later calls' errors, unless the app closed it.
    ending: Ending,
    waiting: Waiting<Waiter>,
    /// Until HELLO_ACK: who waits for the session to be ready.
    ready: Option<Reply<ServerInfo>>,
    closers: Vec<oneshot::Sender<()>>,
    /// To [`RktClient::events`].
    notices: EventTx<ClientEvent>,
}

/// The task that owns the socket and the session.
async fn drive(
    mut wire: Wire<Stream>,
    mut session: ClientSession,
    mut routes: Routes,
    mut inbox: mpsc::UnboundedReceiver<Command>,
) {
    session.handle_open(driver_now());
    pump(&mut wire, &mut session, &mut routes, &mut inbox).await;
    for done in routes.closers.drain(..) {
        let _ = done.send(());
    }
}

impl Handler<ClientSession> for Routes {
    type Input = Command;

    fn on_input(&mut self, session: &mut ClientSession, command: Command) {
        match command {
            Command::Start {
                ticket,
                start: (start, mut waiter),
            } => match start(session, driver_now()) {
                Ok(id) => {
                    // Timed from the engine taking PING, not from the caller's queueing it.
                    if let Waiter::Pong { sent, .. } = &mut waiter {
                        *sent = Instant::now();
                    }
                    self.waiting.insert(ticket, id, waiter);
                }
                Err(e) => waiter.fail(e),
            },
            Command::Cancel(ticket) => {
                if let Some(id) = self.waiting.cancel(ticket) {
                    session.cancel(&id);
                }
            }
            Command::Close(done) => {
                self.closers.push(done);
                session.goodbye(driver_now());
            }
        }
    }

    fn on_input_end(&mut self, session: &mut ClientSession) {
        session.goodbye(driver_now());
    }

    /// Routes one event to its waiter; true when the session closed. The engine answers a
    /// command only with its own kind of reply (it drops the others), so each reply meets the
    /// waiter its command made.
    fn on_event(&mut self, session: &mut ClientSession, _now: Millis, event: ClientEvent) -> bool {
        match event {
            ClientEvent::Ready {
                agreed_version,
                session_timeout,
                server,
            } => {
                if let Some(ready) = self.ready.take() {
                    let url = self.url.clone();
                    let _ = ready.send(Ok(ServerInfo {
                        url,
                        server,
                        agreed_version,
                        session_timeout_s: session_timeout,
                    }));
                }
            }
            ClientEvent::Response { id, body } => match self.waiting.remove(&id) {
                Some(Waiter::Body(reply)) => drop(reply.send(Ok(body))),
                Some(Waiter::Stream(mut stream)) => drop(stream.push(body)),
                _ => {}
            },
            ClientEvent::StreamBegin { id, .. } => {
                if let Some(Waiter::Stream(stream)) = self.waiting.get_mut(&id) {
                    stream.open();
                }
            }
            ClientEvent::StreamData { id, body, .. } => {
                if let Some(Waiter::Stream(stream)) = self.waiting.get_mut(&id) {
                    if !stream.push(body) {
                        self.waiting.remove(&id);
                        session.cancel(&id);
                    }
                }
            }
            ClientEvent::StreamEnd { id, .. } => {
                if let Some(Waiter::Stream(mut stream)) = self.waiting.remove(&id) {
                    stream.open();
                }
            }
            ClientEvent::AuthOk { id, auth } => {
                if let Some(Waiter::Auth(reply)) = self.waiting.remove(&id) {
                    let _ = reply.send(Ok(auth));
                }
            }
            ClientEvent::Pong { id, .. } => {
                if let Some(Waiter::Pong { reply, sent }) = self.waiting.remove(&id) {
                    let _ = reply.send(Ok(sent.elapsed()));
                }
            }
            ClientEvent::Failed { id, error } => {
                if let Some(waiter) = self.waiting.remove(&id) {
                    waiter.fail(error);
                }
            }
            ClientEvent::Error(error) => {
                // Before `Ready`, the session keeps the handshake's (`handshake_error`).
                if self.ready.is_none() && self.notices.slots() > 2 {
                    let _ = self.notices.try_send(ClientEvent::Error(error));
                }
            }
            ClientEvent::Goodbye => {
                if self.notices.slots() > 1 {
                    let _ = self.notices.try_send(ClientEvent::Goodbye);
                }
            }
            ClientEvent::Closed { code, reason } => {
                // Not the app's own close(): later calls say how it ended.
                if self.closers.is_empty() {
                    self.ending.set(code, &reason);
                }
                if let Some(ready) = self.ready.take() {
                    let m = format!("connection closed ({code} {reason}) during the handshake");
                    let error =
                        (session.handshake_error().cloned()).unwrap_or_else(|| RktError::local(ErrorKind::Closed, m));
                    let _ = ready.send(Err(error));
                } else {
                    let _ = self.notices.try_send(ClientEvent::Closed { code, reason });
                }
                return true;
            }
        }
        false
    }
}
