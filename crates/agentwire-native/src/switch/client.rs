//! [`SwitchClient`]: one agent connection, its events, and operations acting for it.

use super::driver::{Command, Driver};
use super::socket::{Dialer, CLOSE_GRACE};
use super::Status;
use super::{check_op_timeout, exchange};
use crate::events;

/// A Switch client's events ([`SwitchClient::events`]), bounded in count and in bytes.
pub type Events = events::Events<Event>;
use crate::clock::{driven, driver_now};
use crate::http::{check_key, Origin};
use crate::OsEntropy;
use agentwire_core::ErrorKind;
use agentwire_switch::frame::ConnectionState;
use agentwire_switch::ops::{self, Operation, OpsCatalog, Placed, Subscribed};
use agentwire_switch::unanswered;
use agentwire_switch::{Connection, ConnectionConfig, Event, HttpRequest, State, SwitchError};
use serde_json::value::RawValue;
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;
use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinHandle;

/// Each operation's bound unless [`SwitchOptions::op_timeout`] says otherwise.
pub const DEFAULT_OP_TIMEOUT: Duration = Duration::from_millis(agentwire_switch::ops::DEFAULT_OP_TIMEOUT_MS);
/// [`SwitchClient::connect`] waits for the first `connection_state` at most this many times the
/// engine's `open_timeout_ms` (the engine's own reconnects, with their backoff, run meanwhile).
pub const CONNECT_OPEN_TIMEOUTS: u32 = 3;

/// How a client is set up beyond the engine's [`ConnectionConfig`].
#[derive(Debug, Clone)]
pub struct SwitchOptions {
    /// Events waiting in the channel for [`SwitchClient::next_event`] (default 256). Beyond it,
    /// events wait in the engine, bounded by [`ConnectionConfig::max_queued_events`].
    pub event_capacity: usize,
    /// The same bound in bytes, by [`Event::queued_bytes`] (default 16 MiB; an event larger
    /// than it waits alone). Beyond it, events wait in the engine, bounded by
    /// [`ConnectionConfig::max_queued_bytes`].
    pub event_capacity_bytes: usize,
    /// Each operation's bound, from connecting to the last byte (default 30 s; at least 1 ms,
    /// [`agentwire_switch::ops::MIN_OP_TIMEOUT_MS`], or `connect_with` refuses it, `invalid`).
    pub op_timeout: Duration,
    /// `connect`'s bound; `None`: [`CONNECT_OPEN_TIMEOUTS`] × `open_timeout_ms`.
    pub connect_timeout: Option<Duration>,
}

impl Default for SwitchOptions {
    fn default() -> Self {
        SwitchOptions {
            event_capacity: 256,
            event_capacity_bytes: 16 << 20,
            op_timeout: DEFAULT_OP_TIMEOUT,
            connect_timeout: None,
        }
    }
}

/// An agent connection to a Switch server, attached. Events arrive through
/// [`SwitchClient::next_event`] (the first is the `Connected` of the first attach); operations
/// run concurrently over HTTP (`&self`). Dropping the client closes the connection;
/// [`SwitchClient::close`] does it and waits.
///
/// # Cancel safety
///
/// An operation ([`SwitchClient::op`], [`SwitchClient::call`] and the others) has an HTTP
/// connection of its own, which a dropped future drops: nothing of it is left, and the agent
/// connection and other operations go on. It is not cancel-safe in what it did: one dropped
/// after its request went out may have been carried out by the server (a message posted), and
/// its answer is lost. [`SwitchClient::next_event`] and the [`Events`] receiver are cancel-safe;
/// [`SwitchClient::connect_with`] and [`SwitchClient::close`] say what dropping them does.
#[must_use = "dropping the client closes its connection"]
pub struct SwitchClient {
    origin: Origin,
    key: Arc<str>,
    agent_id: String,
    connection_id: String,
    attached: ConnectionState,
    op_timeout: Duration,
    commands: mpsc::UnboundedSender<Command>,
    /// `None` once [`SwitchClient::events`] has handed it out.
    events: Mutex<Option<Events>>,
    status: Arc<Mutex<Status>>,
    /// The connection's task, until a [`SwitchClient::close`] has seen it end; a `close` holds
    /// it while it waits, so a second one waits for the same end, and one dropped before the
    /// end leaves it to the next.
    task: tokio::sync::Mutex<Option<JoinHandle<()>>>,
}

impl std::fmt::Debug for SwitchClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SwitchClient")
            .field("origin", &self.origin)
            .field("agent_id", &self.agent_id)
            .field("connection_id", &self.connection_id)
            .finish_non_exhaustive()
    }
}

impl SwitchClient {
    /// Connects with [`SwitchOptions::default`].
    pub async fn connect(origin: &str, key: &str, cfg: ConnectionConfig) -> Result<SwitchClient, SwitchError> {
        Self::connect_with(origin, key, cfg, SwitchOptions::default()).await
    }

    /// Opens the connection at `origin` (`http://host:port` or `ws://host:port`, `https://` or
    /// `wss://` for TLS (see [`crate::tls`]), optionally with a path prefix) with `key`, and resolves on the first `connection_state`. It fails with the
    /// error of the engine's `Stopped` (a refusal, a bad key, a server without the chosen
    /// transport, or a failed open once `cfg.connect_attempts` have failed: by default the
    /// first, a retryable `could not connect: …`), or with a `timeout` error when nothing
    /// attached within [`SwitchOptions::connect_timeout`] (default [`CONNECT_OPEN_TIMEOUTS`] ×
    /// `cfg.open_timeout_ms`; with more attempts the engine reopens with its backoff in between).
    /// Invalid parameters are an `invalid` error before anything is sent.
    ///
    /// # Cancel safety
    ///
    /// Dropped before it resolves, at any point, the connection ends with it (its task closes
    /// the socket or the open under way).
    pub async fn connect_with(
        origin: &str,
        key: &str,
        cfg: ConnectionConfig,
        opts: SwitchOptions,
    ) -> Result<SwitchClient, SwitchError> {
        let parsed = Origin::parse(origin)?;
        check_key(key)?;
        check_op_timeout(opts.op_timeout, "op_timeout")?;
        let limit = opts.connect_timeout.unwrap_or_else(|| {
            Duration::from_millis(cfg.open_timeout_ms.saturating_mul(u64::from(CONNECT_OPEN_TIMEOUTS)))
        });
        let key: Arc<str> = Arc::from(key);
        let dialer = Dialer {
            origin: parsed.clone(),
            key: key.clone(),
            max_message_bytes: cfg.decode.max_message_bytes,
        };
        let (agent_id, connection_id) = (cfg.open.agent_id.clone(), cfg.open.connection_id.clone());
        let mut conn = Connection::new(cfg, Box::new(OsEntropy));
        conn.start(driver_now())?;
        let status = Arc::new(Mutex::new(Status {
            state: conn.state(),
            wire: conn.wire(),
            cursor: conn.cursor(),
            generation: None,
            rooms: Vec::new(),
            attempt: 0,
            last_problem: None,
        }));
        let (commands, inbox) = mpsc::unbounded_channel();
        let (events_tx, events) = events::channel(opts.event_capacity, opts.event_capacity_bytes);
        let (ready, attached) = oneshot::channel();
        let seen = status.clone();
        let driver = Driver::new(conn, dialer, events_tx, inbox, status.clone(), ready);
        let task = tokio::spawn(driven(driver.run()));
        let client = |attached| SwitchClient {
            origin: parsed,
            key,
            agent_id,
            connection_id,
            attached,
            op_timeout: opts.op_timeout,
            commands,
            events: Mutex::new(Some(events)),
            status,
            task: tokio::sync::Mutex::new(Some(task)),
        };
        match tokio::time::timeout(limit, attached).await {
            Ok(Ok(Ok(state))) => Ok(client(state)),
            Ok(Ok(Err(e))) => Err(e),
            Ok(Err(_)) => Err(SwitchError::local(ErrorKind::Closed, "the connection task ended")),
            Err(_) => {
                let last = seen.lock().ok().and_then(|s| s.last_problem.clone());
                let m = format!(
                    "no connection_state from {origin} within {} ms{}",
                    limit.as_millis(),
                    last.map(|l| format!(" (last: {l})")).unwrap_or_default()
                );
                Err(SwitchError::local(ErrorKind::Timeout, m))
            } // the task sees its commands end and closes
        }
    }

    pub fn agent_id(&self) -> &str {
        &self.agent_id
    }

    pub fn connection_id(&self) -> &str {
        &self.connection_id
    }

    /// The `connection_state` of the first attach.
    pub fn attached(&self) -> &ConnectionState {
        &self.attached
    }

    /// Where the connection is now.
    pub fn status(&self) -> Status {
        match self.status.lock() {
            Ok(s) => s.clone(),
            Err(poisoned) => poisoned.into_inner().clone(),
        }
    }

    /// Changes the bound of later operations; under 1 ms, an `invalid` error and no change.
    pub fn set_op_timeout(&mut self, timeout: Duration) -> Result<(), SwitchError> {
        check_op_timeout(timeout, "op_timeout")?;
        self.op_timeout = timeout;
        Ok(())
    }

    /// The next event; `None` after `Stopped` (and after `close`), and at once after
    /// [`SwitchClient::events`] handed the channel out.
    ///
    /// # Cancel safety
    ///
    /// Cancel-safe: dropped before it resolves (another branch of a `tokio::select!` won), no
    /// event is lost; the next call gets it.
    pub async fn next_event(&mut self) -> Option<Event> {
        self.events_mut().as_mut()?.recv().await
    }

    /// An event already waiting, if any.
    pub fn try_next_event(&mut self) -> Option<Event> {
        self.events_mut().as_mut()?.try_recv().ok()
    }

    fn events_mut(&mut self) -> &mut Option<Events> {
        self.events.get_mut().unwrap_or_else(PoisonError::into_inner)
    }

    /// The event channel itself, to read events while operations run on the client (a task of
    /// its own, or `tokio::select!` beside `op`/`call`, which `next_event`'s `&mut self` does not
    /// allow); `None` after the first call, and then `next_event` returns `None`. Events are held
    /// as [`SwitchOptions::event_capacity`] says, before this call too.
    pub fn events(&mut self) -> Option<Events> {
        self.events_mut().take()
    }

    async fn send(&self, request: &HttpRequest) -> Result<(u16, String), SwitchError> {
        exchange(&self.origin, &self.key, request, self.op_timeout).await
    }

    /// Runs operation `name` with `args` (a JSON object) for this connection; the answer's
    /// `result`, raw. The server's refusals are typed: 400 `invalid` (bad argument, not
    /// connected to a room), 403 `auth`, 404 `invalid` (unknown operation), 409 `state`.
    pub async fn op(&self, name: &str, args_json: &str) -> Result<Box<RawValue>, SwitchError> {
        let request = ops::op(&self.agent_id, Some(&self.connection_id), name, args_json)?;
        let (status, body) = self.send(&request).await?;
        ops::decode_result(status, &body).map_err(|e| unanswered::answered(&request, e))
    }

    /// A typed operation for this connection: `client.call(&PostMessage::new("hi"))`.
    pub async fn call<O: Operation>(&self, args: &O) -> Result<O::Output, SwitchError> {
        let request = ops::request(&self.agent_id, Some(&self.connection_id), args)?;
        let (status, body) = self.send(&request).await?;
        ops::decode::<O>(status, &body).map_err(|e| unanswered::answered(&request, e))
    }

    /// `GET ops`: the operations the server offers.
    pub async fn list_ops(&self) -> Result<OpsCatalog, SwitchError> {
        let (status, body) = self.send(&ops::list_ops(&self.agent_id)?).await?;
        ops::decode_ops(status, &body)
    }

    /// Claims `room` cooperatively (409 when a live sibling holds it, unless `takeover`).
    pub async fn subscribe(&self, room: &str, takeover: bool) -> Result<Subscribed, SwitchError> {
        let request = ops::subscribe(&self.agent_id, &self.connection_id, room, takeover)?;
        let (status, body) = self.send(&request).await?;
        ops::decode_subscribe(status, &body)
    }

    pub async fn unsubscribe(&self, room: &str) -> Result<Subscribed, SwitchError> {
        let request = ops::unsubscribe(&self.agent_id, &self.connection_id, room)?;
        let (status, body) = self.send(&request).await?;
        ops::decode_unsubscribe(status, &body)
    }

    /// Replaces every placement of this connection (session id → room), fenced with the
    /// generation of the last `connection_state`.
    pub async fn placements(&self, map: &BTreeMap<String, String>) -> Result<Placed, SwitchError> {
        let generation = self.status().generation;
        let request = ops::placements(&self.agent_id, &self.connection_id, map, generation.as_ref())?;
        let (status, body) = self.send(&request).await?;
        ops::decode_placements(status, &body)
    }

    /// Reopens at once if the connection is waiting out its backoff before a reopen (the network
    /// came back, and the next attempt may be up to the backoff's `max_ms` away); otherwise
    /// nothing. The attempt count is kept.
    pub fn reconnect_now(&self) {
        let _ = self.commands.send(Command::ReconnectNow);
    }

    /// Closes the connection (a WebSocket with 1000) and waits, bounded (3 s), for its task to end;
    /// past that, the task is stopped, so nothing of the connection outlives `close`.
    /// Events not read yet are dropped, unless [`SwitchClient::events`] handed the channel out:
    /// then it stays readable, and while it is full and unread the task waits to hand over its
    /// last events, so `close` takes the whole 3 s. It takes `&self`, so that any holder of a
    /// client shared between tasks (an `Arc`) can close it; a `close` while another waits waits
    /// for the same end, and one after the end returns at once.
    ///
    /// # Cancel safety
    ///
    /// Dropped before it returns (a `tokio::time::timeout` around it), the close goes on: the
    /// connection is told to close at the first poll. The wait is left to the next `close`, which
    /// waits for the task (bounded again) and stops it if need be; until then the task may still
    /// be handing over its last events.
    pub async fn close(&self) {
        if let Some(events) = self.events.lock().unwrap_or_else(PoisonError::into_inner).as_mut() {
            events.close();
        }
        let _ = self.commands.send(Command::Close);
        let mut held = self.task.lock().await;
        let Some(task) = held.as_mut() else {
            return;
        };
        if tokio::time::timeout(CLOSE_GRACE + Duration::from_secs(1), &mut *task)
            .await
            .is_err()
        {
            // A write still blocked (up to its 5 s bound): the task ends here, with `close`.
            task.abort();
            let _ = (&mut *task).await;
        }
        // Only once it has ended: a `JoinHandle` is not polled again after its end.
        *held = None;
    }

    /// True once the connection has stopped (closed, refused, taken over).
    pub fn is_stopped(&self) -> bool {
        self.status().state == State::Stopped
    }
}
