//! The task that owns a [`Connection`]: it performs the engine's transmits (opens, the pong,
//! beats, closes), feeds it what the socket, the beats and the clock bring, and hands its events
//! to the client through a channel bounded in events and bytes (`crate::events`).
//!
//! **Backpressure.** The socket is read whatever the reader does, so pings are answered and
//! beats sent (while a pong or close is written, up to the write's 5 s bound, the loop waits for
//! it: those frames are small, so only a server that stopped reading holds it up). Events are
//! taken from the engine only while the channel has room (one more waits, parked, for room);
//! the rest stay queued in the engine, whose `max_queued_events` and
//! `max_queued_bytes` are the bound: past it the engine takes no further event and, once the
//! reader has drained the queue, reopens from its cursor, so a slow reader loses nothing. Memory
//! stays bounded by the channel's `event_capacity` events and `event_capacity_bytes` bytes, the
//! parked event, and the engine's bounds (plus its control slack).

use super::socket::{Dialer, Incoming, OpenFailed, Socket, CLOSE_GRACE};
use super::Status;
use crate::clock::driver_now;
use crate::clock::until;
use crate::events::EventTx;
use agentwire_core::ErrorKind;
use agentwire_switch::connection::Transmit;
use agentwire_switch::frame::ConnectionState;
use agentwire_switch::{Connection, Event, SwitchError};
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::{mpsc, oneshot};
use tokio::task::{JoinHandle, JoinSet};

/// What the client asks of its task.
pub(crate) enum Command {
    Close,
    /// [`Connection::reconnect_now`].
    ReconnectNow,
}

type Opening = Pin<Box<dyn Future<Output = Result<Socket, OpenFailed>> + Send>>;
type BeatAnswer = (u64, Result<(u16, String), SwitchError>);
pub(crate) type Ready = oneshot::Sender<Result<ConnectionState, SwitchError>>;

pub(crate) struct Driver {
    pub(crate) conn: Connection,
    pub(crate) dialer: Dialer,
    pub(crate) events: EventTx<Event>,
    pub(crate) commands: mpsc::UnboundedReceiver<Command>,
    pub(crate) status: Arc<Mutex<Status>>,
    /// Until the first `Connected` (or `Stopped`): who waits in `connect`.
    pub(crate) ready: Option<Ready>,
    /// Bound on a beat (the engine's own beat timeout decides first).
    pub(crate) beat_timeout: Duration,
    socket: Option<Socket>,
    opening: Option<Opening>,
    beats: JoinSet<BeatAnswer>,
    /// WebSocket closing handshakes in flight.
    closing: Vec<JoinHandle<()>>,
    /// An event taken from the engine, waiting for room in the channel.
    parked: Option<Event>,
    /// `Stopped` was taken from the engine: the task ends once it is delivered.
    stopped: bool,
}

impl Driver {
    pub(crate) fn new(
        conn: Connection,
        dialer: Dialer,
        events: EventTx<Event>,
        commands: mpsc::UnboundedReceiver<Command>,
        status: Arc<Mutex<Status>>,
        ready: Ready,
    ) -> Self {
        let beat_timeout = Duration::from_millis(conn.config().beat_timeout_ms.saturating_add(1_000));
        Driver {
            conn,
            dialer,
            events,
            commands,
            status,
            ready: Some(ready),
            beat_timeout,
            socket: None,
            opening: None,
            beats: JoinSet::new(),
            closing: Vec::new(),
            parked: None,
            stopped: false,
        }
    }

    /// Runs until the connection has stopped and its `Stopped` was delivered (or nobody reads).
    pub(crate) async fn run(mut self) {
        let mut commands_open = true;
        loop {
            self.flush().await;
            self.publish();
            if self.stopped && self.parked.is_none() {
                break;
            }
            let wake = self.conn.poll_timeout().map(until);
            tokio::select! {
                command = self.commands.recv(), if commands_open => match command {
                    Some(Command::ReconnectNow) => {
                        self.conn.reconnect_now(driver_now());
                    }
                    Some(Command::Close) => self.conn.close(driver_now()),
                    None => {
                        commands_open = false; // the client is gone
                        self.conn.close(driver_now());
                    }
                },
                opened = next_opened(&mut self.opening) => {
                    self.opening = None;
                    let now = driver_now();
                    match opened {
                        Ok(socket) => {
                            self.socket = Some(socket);
                            self.conn.handle_open(now);
                        }
                        // No status: this driver reads every refusal's, so it is a network failure.
                        Err(OpenFailed::Failed(None, reason)) => self.conn.handle_open_error(now, &reason),
                        Err(OpenFailed::Failed(status, body)) => self.conn.handle_open_failed(now, status, &body),
                        Err(OpenFailed::Unusable(e)) => self.conn.handle_open_unusable(now, e.into()),
                    }
                }
                incoming = next_incoming(&mut self.socket) => self.on_incoming(incoming),
                Some(answer) = self.beats.join_next(), if !self.beats.is_empty() => {
                    if let Ok((id, answer)) = answer {
                        let now = driver_now();
                        match answer {
                            Ok((status, body)) => self.conn.handle_http_response(now, id, status, &body),
                            Err(e) => self.conn.handle_http_failed(now, id, &e.message),
                        }
                    }
                }
                () = self.events.send_parked(&mut self.parked), if self.parked.is_some() => {}
                _ = tokio::time::sleep(wake.unwrap_or_default()), if wake.is_some() => {
                    self.conn.handle_timeout(driver_now());
                }
            }
        }
        self.finish().await;
    }

    /// Drains the engine's transmits and events until both are empty (events only while the
    /// channel has room).
    async fn flush(&mut self) {
        loop {
            let mut progressed = false;
            while let Some(t) = self.conn.poll_transmit() {
                progressed = true;
                self.transmit(t).await;
            }
            // The rooms are as the whole input left them before its first event is taken.
            self.publish_rooms();
            while self.parked.is_none() {
                let Some(event) = self.conn.poll_event() else { break };
                progressed = true;
                self.observe(&event);
                // The reader's `status()` already shows the cursor this event moved (not the
                // rooms: comparing them per event cost rooms × events).
                self.publish_position();
                if let Err(event) = self.events.try_send(event) {
                    self.parked = Some(event);
                }
            }
            if !progressed {
                return;
            }
        }
    }

    async fn transmit(&mut self, t: Transmit) {
        match t {
            Transmit::Open(open) => {
                self.drop_socket(None);
                self.opening = Some(Box::pin(self.dialer.clone().open(open)));
            }
            Transmit::Text(text) => {
                let Some(socket) = &mut self.socket else { return };
                if let Err(reason) = socket.send_text(text).await {
                    self.drop_socket(None);
                    self.conn.handle_close(driver_now(), 1006, &reason);
                }
            }
            Transmit::Http { id, request } => {
                let (origin, key, limit) = (self.dialer.origin.clone(), self.dialer.key.clone(), self.beat_timeout);
                self.beats
                    .spawn(async move { (id, super::exchange(&origin, &key, &request, limit).await) });
            }
            Transmit::Close { code, reason } => {
                self.opening = None;
                self.forget_beats();
                self.drop_socket(Some((code, &reason)));
            }
        }
    }

    /// Lets go of the beats in flight. The engine forgets them with the socket or stream they were
    /// sent for (its close, or the driver reporting it gone): an answer fed to it afterwards is a
    /// late one, a diagnostic. Dropping the set aborts them and drops the answers already in it
    /// too, which `abort_all` leaves for `join_next`.
    fn forget_beats(&mut self) {
        self.beats = JoinSet::new();
    }

    /// Drops the current socket; a WebSocket gets its close frame in a task of its own.
    fn drop_socket(&mut self, frame: Option<(u16, &str)>) {
        if let Some(socket) = self.socket.take() {
            self.closing.retain(|h| !h.is_finished());
            if let Some(handle) = socket.close(frame.or(Some((1000, "")))) {
                self.closing.push(handle);
            }
        }
    }

    fn on_incoming(&mut self, incoming: Incoming) {
        let now = driver_now();
        match incoming {
            Incoming::Text(text) => self.conn.handle_text(now, text.as_str()),
            Incoming::Binary(bytes) => self.conn.handle_binary(now, &bytes),
            Incoming::Bytes(bytes) => self.conn.handle_bytes(now, &bytes),
            Incoming::Closed { code, reason } => {
                // Answer the peer's close frame (or drop the stream), then tell the engine.
                if let Some(socket) = self.socket.take() {
                    self.closing.retain(|h| !h.is_finished());
                    self.closing.extend(socket.close(None));
                }
                self.forget_beats();
                self.conn.handle_close(now, code, &reason);
            }
        }
    }

    /// What the task itself needs from an event on its way to the reader.
    fn observe(&mut self, event: &Event) {
        match event {
            Event::Connected { state, .. } => {
                if let Some(ready) = self.ready.take() {
                    self.publish(); // `connect` returns into a client whose status is already Live
                    let _ = ready.send(Ok(state.clone()));
                }
            }
            Event::Disconnected { reason, .. } => {
                if let Ok(mut s) = self.status.lock() {
                    s.last_problem = Some(reason.clone());
                }
            }
            Event::Stopped { error } => {
                self.stopped = true;
                if let Some(ready) = self.ready.take() {
                    let error = error.clone().unwrap_or_else(|| {
                        SwitchError::local(ErrorKind::Closed, "the connection was closed before it attached")
                    });
                    let _ = ready.send(Err(error));
                }
            }
            _ => {}
        }
    }

    /// Copies the engine's position and rooms for the client's `status()`.
    fn publish(&self) {
        self.publish_position();
        self.publish_rooms();
    }

    /// Copies the engine's position (state, wire, cursor, attempt, generation).
    fn publish_position(&self) {
        let Ok(mut s) = self.status.lock() else { return };
        s.state = self.conn.state();
        s.wire = self.conn.wire();
        s.cursor = self.conn.cursor();
        s.attempt = self.conn.attempt();
        if s.generation.as_ref() != self.conn.generation() {
            s.generation = self.conn.generation().cloned();
        }
    }

    /// Copies the engine's rooms, when they changed (a pass over them).
    fn publish_rooms(&self) {
        let Ok(mut s) = self.status.lock() else { return };
        if s.rooms != self.conn.rooms() {
            s.rooms = self.conn.rooms().to_vec();
        }
    }

    /// Ends what is left: the socket (its close frame), beats, and waits (bounded) for the
    /// closing handshakes.
    async fn finish(&mut self) {
        self.drop_socket(None);
        self.opening = None;
        self.beats.abort_all();
        let closing = std::mem::take(&mut self.closing);
        let _ = tokio::time::timeout(CLOSE_GRACE + Duration::from_millis(500), async {
            for handle in closing {
                let _ = handle.await;
            }
        })
        .await;
    }
}

async fn next_opened(opening: &mut Option<Opening>) -> Result<Socket, OpenFailed> {
    match opening {
        Some(f) => f.await,
        None => std::future::pending().await,
    }
}

async fn next_incoming(socket: &mut Option<Socket>) -> Incoming {
    match socket {
        Some(s) => s.recv().await,
        None => std::future::pending().await,
    }
}
