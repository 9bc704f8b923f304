//! [`MoltZapClient`]: an async MoltZap client. One task owns the socket and the engine's
//! [`Session`]; the client's calls reach it as commands with a reply channel, answered by
//! request id, and server pushes go to one bounded event channel.

use crate::call::{self, Caller, Ending, Waiting};
use crate::clock::{driven, driver_now};
use crate::events::{self, EventTx};
use crate::pump::{pump, Handler};
use crate::tls::Stream;
use crate::wire::{self, frame_limit, ConnectError, Counted, Wire};
use agentwire_core::{ErrorKind, Millis};
use agentwire_moltzap::{Credentials, Event, Generation, HelloOk, MoltZapError, RequestId, Session, SessionConfig};
use std::time::Duration;
use tokio::sync::{mpsc, oneshot};
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::Error as WsError;

/// Server pushes, diagnostics and the final `Disconnected`, in arrival order; the channel ends
/// after `Disconnected`.
pub type Events = events::Events<Event>;

/// How a client is set up. `Default` gives the engine's defaults, and 4096 buffered events of
/// 64 MiB at most.
#[derive(Debug, Clone)]
pub struct MoltZapConfig {
    pub session: SessionConfig,
    /// Events held for the reader of [`MoltZapClient::events`], counted from the connect (events
    /// are held before `events()` is called too). When the reader falls this far behind, or
    /// never takes the receiver, the client closes the connection (`Disconnected` with code 1008
    /// follows): recover by connecting again and reading a bounded `agent/message/list` window.
    /// Taking the receiver and dropping it discards events instead.
    pub event_capacity: usize,
    /// The same bound in bytes of the events' text (their data and ids; see
    /// [`events::Weigh`]): past it, too, the client closes the connection with 1008. A push
    /// larger than it is taken only into an empty channel (it is then held alone), else it
    /// closes the connection too.
    pub event_capacity_bytes: usize,
}

impl Default for MoltZapConfig {
    fn default() -> Self {
        MoltZapConfig {
            session: SessionConfig::default(),
            event_capacity: 4096,
            event_capacity_bytes: 64 << 20,
        }
    }
}

/// Where the client is connected, and what the server said.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConnectionInfo {
    pub url: String,
    /// The generation spoken (the one `auto` chose).
    pub generation: Generation,
    pub hello: HelloOk,
}

type Reply<T> = call::Reply<T, MoltZapError>;
type Start = (
    Box<dyn FnOnce(&mut Session, Millis) -> Result<RequestId, MoltZapError> + Send>,
    Reply<String>,
);
type Command = call::Command<Start>;

/// A call's error once the connection is over: with the close code and reason when the app did
/// not close it ([`Ending`]).
fn closed_error(ending: Option<&str>) -> MoltZapError {
    MoltZapError::local(ErrorKind::Closed, call::closed_message(ending))
}

/// A MoltZap connection, authenticated. Calls may run concurrently (`&self`). Dropping a call's
/// future cancels the request; dropping the client closes the connection (1000). Once the
/// server, the network or the session ended the connection, later calls fail `closed` with its
/// close code and reason ("the connection is closed (1006 no frame from the server for …)");
/// after the app's own [`MoltZapClient::close`], "the connection is closed".
///
/// Server pushes are buffered for [`MoltZapClient::events`] from the connect on, until they are
/// taken, whether or not `events()` was ever called: a client that never takes them is
/// disconnected (close 1008) once `event_capacity` pushes, or `event_capacity_bytes` of them,
/// are waiting. A client that wants no
/// events calls `events()` and drops the receiver: pushes are then discarded.
///
/// # Cancel safety
///
/// A call ([`MoltZapClient::call`], [`MoltZapClient::call_with_timeout`],
/// [`MoltZapClient::request`]) may be dropped at any await point, from any task: the client's own
/// task writes every frame, never the call, so a dropped call leaves no frame half-written and
/// the connection serves the next calls; the request is cancelled in the engine (slot freed,
/// late answer dropped). It is not cancel-safe in what it did: a call dropped after its request
/// went out may have been carried out by the server (a message sent), and its answer is lost.
/// [`MoltZapClient::close`] and [`MoltZapClient::connect`] say what dropping them does; the
/// [`Events`] receiver is cancel-safe.
#[must_use = "dropping the client closes its connection"]
pub struct MoltZapClient {
    caller: Caller<Start>,
    info: ConnectionInfo,
    events: Option<Events>,
}

impl std::fmt::Debug for MoltZapClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MoltZapClient")
            .field("info", &self.info)
            .finish_non_exhaustive()
    }
}

impl MoltZapClient {
    /// Opens the WebSocket at `url` (`ws://host:port/ws`, or `wss://` over TLS: see
    /// [`crate::tls`]; read by [`agentwire_core::url::parse`], a URL that can never be dialed an
    /// `invalid` error) and authenticates, in the generation
    /// of `cfg.session.generation`. The upgrade and the handshake each take at most
    /// `handshake_timeout_ms`. A refused connect (`auth`), a protocol version out of range
    /// (`version`) or a timeout is the error; the socket is then closed, as it is when the future
    /// is dropped before it resolves. A configuration [`SessionConfig::check`] refuses fails
    /// `invalid` before anything opens.
    ///
    /// # Cancel safety
    ///
    /// Dropped before it resolves, at any point, the connection ends with it: a socket still
    /// upgrading is closed, a session under way closes (1000).
    pub async fn connect(
        url: &str,
        credentials: Credentials,
        cfg: MoltZapConfig,
    ) -> Result<MoltZapClient, MoltZapError> {
        // Before the network: a limit of 0 would otherwise be spent on the upgrade.
        cfg.session.check()?;
        let url = &agentwire_core::url::websocket(url)
            .map_err(|m| MoltZapError::local(ErrorKind::Invalid, format!("{}: {m}", agentwire_core::redact::url(url))))?
            .to_string();
        let limit = cfg.session.handshake_timeout_ms;
        let upgrade = tokio::time::timeout(Duration::from_millis(limit), open(url, &cfg.session)).await;
        let ws = match upgrade {
            Ok(ws) => ws?,
            Err(_) => {
                let url = agentwire_core::redact::url(url);
                let m = format!("no WebSocket upgrade from {url} within {limit} ms");
                return Err(MoltZapError::local(ErrorKind::Timeout, m));
            }
        };
        let (commands, inbox) = mpsc::unbounded_channel();
        let (events_tx, events) = events::channel(cfg.event_capacity.max(1) + 1, cfg.event_capacity_bytes);
        let (ready, handshake) = oneshot::channel();
        let ending = Ending::default();
        let routes = Routes {
            ending: ending.clone(),
            events: events_tx,
            overflowed: false,
            waiting: Waiting::default(),
            connect: None,
            closers: Vec::new(),
        };
        let session = Session::new(cfg.session);
        tokio::spawn(driven(drive(Wire::new(ws), session, routes, inbox, credentials, ready)));
        let (generation, hello) = handshake.await.map_err(|_| closed_error(ending.get()))??;
        Ok(MoltZapClient {
            caller: Caller::new(commands, ending),
            info: ConnectionInfo {
                url: url.to_string(),
                generation,
                hello,
            },
            events: Some(events),
        })
    }

    pub fn info(&self) -> &ConnectionInfo {
        &self.info
    }

    /// The event channel; `None` after the first call. Events not read, before this call too,
    /// are held, at most `event_capacity` and `event_capacity_bytes`: past either the connection
    /// is closed with 1008 (`Disconnected` comes last). Drop the receiver to discard events instead.
    pub fn events(&mut self) -> Option<Events> {
        self.events.take()
    }

    /// Sends `method` with `params` (JSON text: an object or an array) and returns the
    /// response's `result` as raw JSON text. Fails with the server's typed error, `timeout`
    /// (`request_timeout_ms`), `limit` (`max_in_flight`) or `closed`.
    pub async fn call(&self, method: &str, params: Option<&str>) -> Result<String, MoltZapError> {
        let (method, params) = (method.to_string(), params.map(str::to_string));
        self.request(move |s, now| s.call(now, &method, params.as_deref()))
            .await
    }

    /// [`MoltZapClient::call`] with its own timeout.
    pub async fn call_with_timeout(
        &self,
        method: &str,
        params: Option<&str>,
        timeout: Duration,
    ) -> Result<String, MoltZapError> {
        let (method, params) = (method.to_string(), params.map(str::to_string));
        let ms = u64::try_from(timeout.as_millis()).unwrap_or(u64::MAX);
        self.request(move |s, now| s.call_with_timeout(now, &method, params.as_deref(), ms))
            .await
    }

    /// Any request the engine builds, typed methods included:
    /// `client.request(|s, now| s.messages_send(now, &msg)).await`.
    pub async fn request(
        &self,
        start: impl FnOnce(&mut Session, Millis) -> Result<RequestId, MoltZapError> + Send + 'static,
    ) -> Result<String, MoltZapError> {
        let (reply, answer) = oneshot::channel();
        self.caller.call((Box::new(start), reply), answer, closed_error).await
    }

    /// Closes the connection (1000) and waits, bounded, for it to end. Calls still waiting, from
    /// any task, then fail with kind `closed`, as do later ones. It takes `&self`, so that any
    /// holder of a client shared between tasks (an `Arc`) can close it.
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

async fn open(
    url: &str,
    cfg: &SessionConfig,
) -> Result<tokio_tungstenite::WebSocketStream<Counted<Stream>>, MoltZapError> {
    let request = url.into_client_request().map_err(|e| connect_error(url, e))?;
    let limit = frame_limit(cfg.decode.max_message_bytes);
    let ws_cfg = wire::ws_config(limit);
    let ws = wire::connect(request, ws_cfg)
        .await
        .map_err(|e| connect_error(url, e))?;
    Ok(ws)
}

fn connect_error(url: &str, e: impl Into<ConnectError>) -> MoltZapError {
    // Quoted without credentials; `refused_upgrade` takes the URL itself and does the same.
    let shown = agentwire_core::redact::url(url);
    let e = match e.into() {
        ConnectError::Dial(e) => return MoltZapError::local(e.kind, format!("{shown}: {}", e.message)),
        ConnectError::Ws(e) => e,
    };
    let (kind, m) = match e {
        WsError::Http(resp) => {
            let body = resp.body().as_deref().map(String::from_utf8_lossy).unwrap_or_default();
            return agentwire_core::Error::refused_upgrade(url, resp.status().as_u16(), &body).into();
        }
        WsError::Url(e) => (ErrorKind::Invalid, format!("{shown}: {e}")),
        WsError::HttpFormat(e) => (ErrorKind::Invalid, format!("{shown} is not a ws:// URL: {e}")),
        e => (ErrorKind::Closed, format!("cannot connect to {shown}: {e}")),
    };
    MoltZapError::local(kind, m)
}

type Hello = Reply<(Generation, HelloOk)>;

/// Routes the session's events to the calls waiting for them and to the event channel.
struct Routes {
    /// How the connection ended, for later calls' errors, unless the app closed it.
    ending: Ending,
    events: EventTx<Event>,
    /// The reader fell behind: only `Disconnected` is delivered from now on.
    overflowed: bool,
    waiting: Waiting<Reply<String>>,
    /// Until the handshake ends: the connect's id and who waits for it.
    connect: Option<(RequestId, Hello)>,
    closers: Vec<oneshot::Sender<()>>,
}

/// The task that owns the socket and the session.
async fn drive(
    mut wire: Wire<Stream>,
    mut session: Session,
    mut routes: Routes,
    mut inbox: mpsc::UnboundedReceiver<Command>,
    credentials: Credentials,
    ready: Hello,
) {
    let now = driver_now();
    session.handle_open(now);
    match session.connect(now, credentials) {
        Ok(id) => routes.connect = Some((id, ready)),
        Err(e) => {
            let _ = ready.send(Err(e));
            session.close(1000, "connect refused locally");
        }
    }
    pump(&mut wire, &mut session, &mut routes, &mut inbox).await;
    for done in routes.closers.drain(..) {
        let _ = done.send(());
    }
}

impl Handler<Session> for Routes {
    type Input = Command;

    fn on_input(&mut self, session: &mut Session, command: Command) {
        match command {
            Command::Start {
                ticket,
                start: (start, reply),
            } => match start(session, driver_now()) {
                Ok(id) => self.waiting.insert(ticket, id, reply),
                Err(e) => drop(reply.send(Err(e))),
            },
            Command::Cancel(ticket) => {
                if let Some(id) = self.waiting.cancel(ticket) {
                    session.cancel(&id);
                }
            }
            Command::Close(done) => {
                self.closers.push(done);
                session.close(1000, "client closed");
            }
        }
    }

    fn on_input_end(&mut self, session: &mut Session) {
        session.close(1000, "client dropped");
    }

    /// Routes one event; true when the session is over.
    fn on_event(&mut self, session: &mut Session, _now: Millis, event: Event) -> bool {
        match event {
            Event::Connected { id, generation, hello } => {
                if let Some((_, ready)) = self.connect.take().filter(|(c, _)| *c == id) {
                    let _ = ready.send(Ok((generation, hello)));
                }
            }
            Event::ConnectFailed { id, error } => {
                if let Some((_, ready)) = self.connect.take().filter(|(c, _)| *c == id) {
                    let _ = ready.send(Err(error));
                    session.close(1000, "connect failed");
                }
            }
            Event::Response { id, result } => self.answer(&id, Ok(result)),
            Event::Failed { id, error } => self.answer(&id, Err(error)),
            Event::Disconnected { code, reason } => {
                // Not the app's own close(): later calls say how it ended.
                if self.closers.is_empty() {
                    self.ending.set(code, &reason);
                }
                if let Some((_, ready)) = self.connect.take() {
                    let m = format!("connection closed ({code} {reason}) during the handshake");
                    let _ = ready.send(Err(MoltZapError::local(ErrorKind::Closed, m)));
                }
                let _ = self.events.try_send(Event::Disconnected { code, reason });
                return true;
            }
            push => self.push(session, push),
        }
        false
    }
}

impl Routes {
    fn answer(&mut self, id: &str, result: Result<String, MoltZapError>) {
        if let Some(reply) = self.waiting.remove(id) {
            let _ = reply.send(result);
        }
    }

    /// Hands a push to the reader; a reader `event_capacity` events or `event_capacity_bytes`
    /// behind ends the connection. The last slot is kept for `Disconnected`, which weighs nothing.
    fn push(&mut self, session: &mut Session, event: Event) {
        if self.overflowed || self.events.is_closed() {
            return;
        }
        let unread = self.events.max_slots() - self.events.slots();
        let full = self.events.slots() <= 1;
        if full || self.events.try_send(event).is_err() {
            self.overflowed = true;
            let what = if full { "" } else { ", past event_capacity_bytes" };
            session.close(1008, &format!("{unread} events unread{what}: the reader fell behind"));
        }
    }
}
