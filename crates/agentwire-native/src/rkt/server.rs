//! The reference RKT agent on a `TcpListener`: a `ServerSession` and a `reference::Connection`
//! per socket, one `reference::Shared` (memory, ledger, tokens) for the whole server.
//!
//! The upgrade is refused with HTTP 403 from a page on another site (an `Origin` that is neither
//! a page on 127.0.0.1, localhost or `[::1]` nor in `ReferenceConfig::allowed_origins`) and, when
//! the server is bound to a loopback address, for a `Host` that is not 127.0.0.1, localhost or
//! `[::1]` (DNS rebinding): see `agentwire_core::http::local`. Native clients send no `Origin`. It
//! is refused with HTTP 404 off `/rkt` and with HTTP 400 when the client does not
//! offer the `rkt.1.0` subprotocol. At most `ReferenceConfig::max_connections` connections are
//! served at once: one past it is closed as soon as it is accepted. One line per connection goes
//! to stderr when it opens and when it closes (dropped if stderr cannot be written); message
//! contents are never logged.

use crate::clock::{driven, driver_now};
use crate::pump::{pump, Handler, StopSignal};
use crate::wire::{self, frame_limit, Counted, Wire, CLOSE_GRACE};
use crate::OsEntropy;
use agentwire_core::http::local;
use agentwire_core::Millis;
use agentwire_rkt::codec::SUBPROTOCOL;
use agentwire_rkt::reference::{self, Connection, ReferenceConfig, Shared};
use agentwire_rkt::{ServerConfig, ServerEvent, ServerSession};
use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{oneshot, watch, OwnedSemaphorePermit, Semaphore};
use tokio::task::{JoinHandle, JoinSet};
use tokio_tungstenite::tungstenite::handshake::server::{ErrorResponse, Request, Response};
use tokio_tungstenite::tungstenite::http::header::{
    CONNECTION, CONTENT_LENGTH, CONTENT_TYPE, HOST, ORIGIN, SEC_WEBSOCKET_PROTOCOL,
};
use tokio_tungstenite::tungstenite::http::{HeaderName, HeaderValue, StatusCode};
use tokio_tungstenite::tungstenite::Error as WsError;
use tokio_tungstenite::WebSocketStream;

/// A line to stderr through [`crate::log`]: never waits (a stderr nobody reads would stall the
/// runtime's workers) and never panics (a reader gone, `2>&1 | head`). The lines are advice;
/// nothing depends on them.
macro_rules! log {
    ($($arg:tt)*) => {{
        if let Some(log) = crate::log::stderr() {
            log.line(format!($($arg)*));
        }
    }};
}

/// The path the agent is served at.
pub const PATH: &str = "/rkt";
/// How long a TCP connection may take to complete the WebSocket upgrade.
const UPGRADE_TIMEOUT: Duration = Duration::from_secs(10);

struct Agent {
    cfg: ReferenceConfig,
    session: ServerConfig,
    shared: Mutex<Shared>,
    /// Bound to a loopback address: the `Host` must name this machine.
    loopback: bool,
}

/// Serves the reference agent on `listener` until the process ends.
///
/// # Cancel safety
///
/// Dropping the future (or aborting its task) drops every connection at once, without GOODBYE
/// (clients see close 1006); [`serve_until`] with a shutdown future ends them gracefully.
pub async fn serve(listener: TcpListener, cfg: ReferenceConfig) -> io::Result<()> {
    serve_until(listener, cfg, std::future::pending()).await
}

/// Serves until `shutdown` completes; then every open session is ended with GOODBYE and close
/// 1000 (connections still open after a grace period are dropped). A configuration that
/// [`ReferenceConfig::check`] refuses is an `InvalidInput` error before anything is accepted.
///
/// # Cancel safety
///
/// Dropping the future itself, rather than completing `shutdown`, drops every connection at
/// once, without GOODBYE, as [`serve`] does.
pub async fn serve_until(
    listener: TcpListener,
    cfg: ReferenceConfig,
    shutdown: impl Future<Output = ()>,
) -> io::Result<()> {
    cfg.check()
        .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e.to_string()))?;
    let addr = listener.local_addr()?;
    let agent = Arc::new(Agent {
        session: cfg.server_config(),
        shared: Mutex::new(Shared::new(&cfg)),
        cfg,
        loopback: addr.ip().is_loopback(),
    });
    let (stop, stopped) = watch::channel(());
    let cap = agent.cfg.max_connections;
    // A connection holds a slot until its task ends.
    let slots = Arc::new(Semaphore::new(cap.min(Semaphore::MAX_PERMITS)));
    let mut connections = JoinSet::new();
    tokio::pin!(shutdown);
    loop {
        tokio::select! {
            _ = &mut shutdown => break,
            accepted = listener.accept() => match accepted {
                Ok((tcp, peer)) => match slots.clone().try_acquire_owned() {
                    Ok(slot) => {
                        connections.spawn(driven(connection(tcp, peer, agent.clone(), stopped.clone(), slot)));
                    }
                    Err(_) => {
                        drop(tcp);
                        log!("rkt {peer}: refused: {cap} connections open (max_connections)");
                    }
                },
                Err(e) => {
                    // Usually out of file descriptors: wait for connections to end.
                    log!("rkt {addr}: accept failed: {e}");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
            },
            Some(joined) = connections.join_next(), if !connections.is_empty() => {
                if let Err(e) = joined {
                    log!("rkt {addr}: connection task failed: {e}");
                }
            }
        }
    }
    drop(listener);
    drop(stop);
    // Open connections get as long to end as one closing handshake.
    let _ = tokio::time::timeout(CLOSE_GRACE, async { while connections.join_next().await.is_some() {} }).await;
    connections.shutdown().await;
    crate::log::flush_stderr();
    Ok(())
}

/// A server running in the background, for tests and embedding.
#[must_use = "dropping the handle stops the server"]
pub struct ServerHandle {
    local_addr: SocketAddr,
    stop: oneshot::Sender<()>,
    task: JoinHandle<io::Result<()>>,
}

impl std::fmt::Debug for ServerHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServerHandle")
            .field("local_addr", &self.local_addr)
            .finish_non_exhaustive()
    }
}

/// Starts [`serve_until`] on a task. Dropping the handle stops the server too.
pub fn spawn(listener: TcpListener, cfg: ReferenceConfig) -> io::Result<ServerHandle> {
    let local_addr = listener.local_addr()?;
    let (stop, stopped) = oneshot::channel::<()>();
    let task = tokio::spawn(serve_until(listener, cfg, async {
        let _ = stopped.await;
    }));
    Ok(ServerHandle { local_addr, stop, task })
}

impl ServerHandle {
    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    /// `ws://ADDR/rkt`.
    pub fn url(&self) -> String {
        format!("ws://{}{PATH}", self.local_addr)
    }

    /// Stops accepting, ends the open sessions and waits for the server to finish.
    ///
    /// # Cancel safety
    ///
    /// Dropped before it returns, the shutdown goes on in the server's task (GOODBYE to each
    /// session, bounded); only the wait is given up.
    pub async fn shutdown(self) -> io::Result<()> {
        let _ = self.stop.send(());
        self.task.await.map_err(io::Error::other)?
    }
}

fn refusal(status: StatusCode, body: String) -> ErrorResponse {
    let mut resp = ErrorResponse::new(None);
    *resp.status_mut() = status;
    let headers = resp.headers_mut();
    headers.insert(CONTENT_TYPE, HeaderValue::from_static("text/plain; charset=utf-8"));
    headers.insert(CONTENT_LENGTH, HeaderValue::from(body.len()));
    headers.insert(CONNECTION, HeaderValue::from_static("close"));
    *resp.body_mut() = Some(body);
    resp
}

/// The upgrade rules: the request is this machine's or an allowed origin's (see the module's
/// documentation), the path is `/rkt` and the client offers `rkt.1.0`, which is echoed.
fn check_upgrade(agent: &Agent, req: &Request, mut resp: Response) -> Result<Response, ErrorResponse> {
    // A value that is not text is checked as "", which no rule allows.
    let values = |name: HeaderName| {
        req.headers()
            .get_all(name)
            .into_iter()
            .map(|v| v.to_str().unwrap_or(""))
    };
    if agent.loopback && !local::allows_host(values(HOST)) {
        return Err(refusal(
            StatusCode::FORBIDDEN,
            "this server answers requests to 127.0.0.1, localhost or [::1] only\n".to_owned(),
        ));
    }
    if !local::allows_origin(values(ORIGIN), &agent.cfg.allowed_origins) {
        return Err(refusal(
            StatusCode::FORBIDDEN,
            "pages on this Origin may not connect: only pages on 127.0.0.1, localhost or [::1] and the \
             allowed origins (ReferenceConfig::allowed_origins, `agentwire rkt serve --allow-origin`)\n"
                .to_owned(),
        ));
    }
    let path = req.uri().path();
    if path != PATH {
        return Err(refusal(
            StatusCode::NOT_FOUND,
            format!("no RKT agent at {path}: connect to {PATH}\n"),
        ));
    }
    let offered = req
        .headers()
        .get_all(SEC_WEBSOCKET_PROTOCOL)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .any(|p| p.trim() == SUBPROTOCOL);
    if !offered {
        let body =
            format!("the WebSocket subprotocol {SUBPROTOCOL} is required (Sec-WebSocket-Protocol: {SUBPROTOCOL})\n");
        return Err(refusal(StatusCode::BAD_REQUEST, body));
    }
    resp.headers_mut()
        .insert(SEC_WEBSOCKET_PROTOCOL, HeaderValue::from_static(SUBPROTOCOL));
    Ok(resp)
}

/// Serves one TCP connection; `_slot` is its place under `max_connections`, freed at the end.
async fn connection(
    tcp: TcpStream,
    peer: SocketAddr,
    agent: Arc<Agent>,
    stopped: watch::Receiver<()>,
    _slot: OwnedSemaphorePermit,
) {
    let _ = tcp.set_nodelay(true);
    let limit = frame_limit(agent.session.max_message_size);
    let ws_cfg = wire::ws_config(limit);
    let check = |req: &Request, resp: Response| check_upgrade(&agent, req, resp);
    let upgrade = tokio_tungstenite::accept_hdr_async_with_config(Counted::new(tcp), check, Some(ws_cfg));
    let ws = match tokio::time::timeout(UPGRADE_TIMEOUT, upgrade).await {
        Ok(Ok(ws)) => ws,
        Ok(Err(WsError::Http(resp))) => return log!("rkt {peer}: refused with HTTP {}", resp.status()),
        Ok(Err(e)) => return log!("rkt {peer}: upgrade failed: {e}"),
        Err(_) => {
            return log!(
                "rkt {peer}: no WebSocket upgrade within {} s",
                UPGRADE_TIMEOUT.as_secs()
            )
        }
    };
    log!("rkt {peer}: open");
    let started = Instant::now();
    let end = Driver::new(ws, &agent).run(stopped).await;
    log!(
        "rkt {peer}: closed {} {} ({} messages in, {} out, {:.1} s)",
        end.code,
        end.reason,
        end.received,
        end.sent,
        started.elapsed().as_secs_f64()
    );
}

struct End {
    code: u16,
    reason: String,
    received: u64,
    sent: u64,
}

struct Driver<'a> {
    wire: Wire<TcpStream>,
    agent: &'a Agent,
    session: ServerSession,
    conn: Connection,
}

impl<'a> Driver<'a> {
    fn new(ws: WebSocketStream<Counted<TcpStream>>, agent: &'a Agent) -> Self {
        Driver {
            wire: Wire::new(ws),
            agent,
            session: ServerSession::new(agent.session.clone(), Box::new(OsEntropy)),
            conn: Connection::new(&agent.cfg),
        }
    }

    async fn run(mut self, stopped: watch::Receiver<()>) -> End {
        self.session.handle_open(driver_now());
        let mut handler = Reference {
            agent: self.agent,
            conn: self.conn,
            closed: None,
        };
        pump(
            &mut self.wire,
            &mut self.session,
            &mut handler,
            &mut StopSignal::new(stopped),
        )
        .await;
        // The credit the connection held without authentication goes with it.
        let mut shared = self.agent.shared.lock().unwrap_or_else(PoisonError::into_inner);
        handler.conn.close(&mut shared);
        drop(shared);
        let (code, reason) = handler.closed.unwrap_or((1006, String::new()));
        End {
            code,
            reason,
            received: self.wire.received(),
            sent: self.wire.sent(),
        }
    }
}

/// Hands each inbound message to the reference agent.
struct Reference<'a> {
    agent: &'a Agent,
    conn: Connection,
    /// The close, once the session is over.
    closed: Option<(u16, String)>,
}

impl Handler<ServerSession> for Reference<'_> {
    type Input = ();

    fn on_event(&mut self, session: &mut ServerSession, now: Millis, event: ServerEvent) -> bool {
        match event {
            ServerEvent::Inbound(msg) => {
                let mut shared = self.agent.shared.lock().unwrap_or_else(PoisonError::into_inner);
                reference::handle(
                    &self.agent.cfg,
                    &mut shared,
                    &mut self.conn,
                    session,
                    &mut OsEntropy,
                    now,
                    msg,
                );
            }
            ServerEvent::Closed { code, reason } => {
                self.closed = Some((code, reason));
                return true;
            }
            ServerEvent::Ready { .. } | ServerEvent::Rejected(_) | ServerEvent::PeerError(_) | ServerEvent::Goodbye => {
            }
        }
        false
    }

    /// The server is stopping: GOODBYE.
    fn on_input(&mut self, session: &mut ServerSession, _stop: ()) {
        session.goodbye(driver_now());
    }

    fn on_input_end(&mut self, _session: &mut ServerSession) {}
}
