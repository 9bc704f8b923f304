//! `agentwire:engine/switch`: the Switch `Connection` behind the `session` resource, and the
//! engine's operation requests.

use crate::bindings::exports::agentwire::engine::switch::{
    Config, Connected, Disconnected, DomainEvent, Drained, Event, Filter, Guest, GuestSession, HttpCall, HttpRequest,
    OpenRequest, Scope, State, Transmit, Transport, Wire,
};
use crate::bindings::exports::agentwire::engine::types::{CloseFrame, EngineError, ErrorKind};
use crate::common::{core_kind, engine_error, size, WasiEntropy};
use crate::Engine;
use agentwire_switch::open::{OpenParams, ProtocolRange, StartFrom};
use agentwire_switch::{ops, unanswered, Connection, ConnectionConfig, SwitchError};
use std::cell::RefCell;

pub struct Session(RefCell<Connection>);

fn err(e: SwitchError) -> EngineError {
    let core = agentwire_core::Error {
        kind: e.kind,
        code: e.status.map(i64::from),
        message: e.message.clone(),
        retryable: e.retryable,
    };
    engine_error(&core, e.to_json_string())
}

fn request(r: agentwire_core::HttpRequest) -> HttpRequest {
    HttpRequest {
        method: r.method.as_str().to_owned(),
        path: r.path,
        headers: r.headers.into_iter().map(|(k, v)| (k.to_owned(), v)).collect(),
        body: r.body,
    }
}

/// A host's request back as the engine's, for the rules that read it (its method and path): a
/// method other than `GET` is taken as a `POST`, one that may act twice. The headers are left
/// out: their names are the engine's own constants, and no rule reads them.
fn engine_request(r: HttpRequest) -> agentwire_core::HttpRequest {
    let method = match r.method.eq_ignore_ascii_case("GET") {
        true => agentwire_core::Method::Get,
        false => agentwire_core::Method::Post,
    };
    agentwire_core::HttpRequest {
        method,
        path: r.path,
        headers: Vec::new(),
        body: r.body,
    }
}

fn wire(w: agentwire_switch::Wire) -> Wire {
    match w {
        agentwire_switch::Wire::WebSocket => Wire::Websocket,
        agentwire_switch::Wire::Sse => Wire::Sse,
    }
}

fn config(c: Config) -> ConnectionConfig {
    let mut open = OpenParams::new(c.agent_id, c.connection_id);
    open.rooms = c.rooms;
    if let Some(s) = c.scope {
        open.scope = match s {
            Scope::Single => agentwire_switch::open::Scope::Single,
            Scope::All => agentwire_switch::open::Scope::All,
        };
    }
    if let Some(f) = c.filter {
        open.filter = match f {
            Filter::All => agentwire_switch::open::Filter::All,
            Filter::Addressed => agentwire_switch::open::Filter::Addressed,
        };
    }
    if let Some(after) = c.start_after {
        open.start_from = StartFrom::After(after);
    }
    open.expected_generation = c.expected_generation;
    open.spawn_capable = c.spawn_capable.unwrap_or(open.spawn_capable);
    open.protocol = c.protocol.map(|p| ProtocolRange {
        speaks: p.speaks,
        accepts: p.accepts,
    });
    open.client = c.client.or(open.client);
    open.client_version = c.client_version.or(open.client_version);
    let mut cfg = ConnectionConfig::new(open);
    if let Some(t) = c.transport {
        cfg.transport = match t {
            Transport::Websocket => agentwire_switch::Transport::WebSocket,
            Transport::Sse => agentwire_switch::Transport::Sse,
            Transport::Auto => agentwire_switch::Transport::Auto,
        };
    }
    cfg.max_reconnect_attempts = c.max_reconnect_attempts;
    if let Some(n) = c.connect_attempts {
        cfg.set_connect_attempts(n);
    }
    if let Some(b) = c.backoff {
        cfg.backoff = agentwire_core::Backoff {
            base_ms: b.base_ms,
            max_ms: b.max_ms,
            factor: b.factor,
            min_ms: b.min_ms,
        };
    }
    if let Some(n) = c.max_message_bytes.map(size) {
        // One bound for a message on either wire, as the WIT says.
        cfg.set_max_message_bytes(n);
    }
    cfg.decode.max_depth = c.max_depth.map_or(cfg.decode.max_depth, size);
    cfg.open_timeout_ms = c.open_timeout_ms.unwrap_or(cfg.open_timeout_ms);
    cfg.heartbeat_interval_ms = c.heartbeat_interval_ms.unwrap_or(cfg.heartbeat_interval_ms);
    cfg.missed_heartbeats = c.missed_heartbeats.unwrap_or(cfg.missed_heartbeats);
    cfg.beat_timeout_ms = c.beat_timeout_ms.unwrap_or(cfg.beat_timeout_ms);
    cfg.stream_idle_timeout_ms = c.stream_idle_timeout_ms.unwrap_or(cfg.stream_idle_timeout_ms);
    cfg.max_queued_events = c.max_queued_events.map_or(cfg.max_queued_events, size);
    cfg.max_queued_bytes = c.max_queued_bytes.map_or(cfg.max_queued_bytes, size);
    cfg
}

fn event(e: agentwire_switch::Event) -> Event {
    use agentwire_switch::Event as E;
    match e {
        E::Connected { wire: w, resumed, .. } => {
            let json = e.to_json_string();
            Event::Connected(Connected {
                wire: wire(w),
                resumed,
                json,
            })
        }
        // Moved out of the engine's event, not copied.
        E::Event { event, gap } => Event::Event(DomainEvent {
            kind: event.kind.as_str().to_owned(),
            room_id: event.room_id,
            sequence: event.sequence,
            bridge_id: event.bridge_id,
            channel_type: event.channel_type,
            payload: Box::<str>::from(event.payload).into_string(),
            gap: gap.map(|g| g.to_json().to_string()),
        }),
        E::SubscriptionChanged(_) => Event::SubscriptionChanged(e.to_json_string()),
        E::RoomReleased(_) => Event::RoomReleased(e.to_json_string()),
        E::Control { .. } => Event::Control(e.to_json_string()),
        E::Evicted(_) => Event::Evicted(e.to_json_string()),
        E::Disconnected {
            code,
            reason,
            retry_in_ms,
            attempt,
        } => Event::Disconnected(Disconnected {
            code,
            reason,
            retry_in_ms,
            attempt,
        }),
        E::Stopped { error } => Event::Stopped(error.map(err)),
        E::Diagnostic(d) => Event::Diagnostic(err(d)),
    }
}

fn transmit(t: agentwire_switch::Transmit) -> Transmit {
    use agentwire_switch::Transmit as T;
    match t {
        T::Open(open) => Transmit::Open(OpenRequest {
            wire: wire(open.wire),
            request: request(open.request),
        }),
        T::Text(text) => Transmit::Text(text),
        T::Http { id, request: r } => Transmit::Http(HttpCall {
            id,
            request: request(r),
        }),
        T::Close { code, reason } => Transmit::Close(CloseFrame { code, reason }),
    }
}

impl Guest for Engine {
    type Session = Session;

    fn op_request(
        agent_id: String,
        connection_id: Option<String>,
        name: String,
        args: String,
    ) -> Result<HttpRequest, EngineError> {
        ops::op(&agent_id, connection_id.as_deref(), &name, &args)
            .map(request)
            .map_err(err)
    }

    fn op_result(request: HttpRequest, status: u16, body: String) -> Result<String, EngineError> {
        ops::decode_answer(&engine_request(request), status, &body).map_err(err)
    }

    fn op_failed(request: HttpRequest, kind: ErrorKind, message: String, sent: bool) -> EngineError {
        let error = agentwire_core::Error::new(core_kind(kind), message);
        err(unanswered::unanswered(&engine_request(request), error, sent))
    }

    fn subscribe_request(
        agent_id: String,
        connection_id: String,
        room_id: String,
        takeover: bool,
    ) -> Result<HttpRequest, EngineError> {
        ops::subscribe(&agent_id, &connection_id, &room_id, takeover)
            .map(request)
            .map_err(err)
    }

    fn unsubscribe_request(
        agent_id: String,
        connection_id: String,
        room_id: String,
    ) -> Result<HttpRequest, EngineError> {
        ops::unsubscribe(&agent_id, &connection_id, &room_id)
            .map(request)
            .map_err(err)
    }
}

impl GuestSession for Session {
    fn new(config_: Config) -> Self {
        Session(RefCell::new(Connection::new(config(config_), WasiEntropy::boxed())))
    }

    fn start(&self, now: u64) -> Result<(), EngineError> {
        self.0.borrow_mut().start(now).map_err(err)
    }

    fn close(&self, now: u64) {
        self.0.borrow_mut().close(now);
    }

    fn reconnect_now(&self, now: u64) -> bool {
        self.0.borrow_mut().reconnect_now(now)
    }

    fn set_declared_rooms(&self, rooms: Vec<String>) -> Result<(), EngineError> {
        self.0.borrow_mut().set_declared_rooms(rooms).map_err(err)
    }

    fn handle_open(&self, now: u64) {
        self.0.borrow_mut().handle_open(now);
    }

    fn handle_open_failed(&self, now: u64, status: Option<u16>, body: String) {
        self.0.borrow_mut().handle_open_failed(now, status, &body);
    }

    fn handle_open_error(&self, now: u64, reason: String) {
        self.0.borrow_mut().handle_open_error(now, &reason);
    }

    fn handle_open_unusable(&self, now: u64, kind: ErrorKind, message: String) {
        let error = SwitchError::local(core_kind(kind), message);
        self.0.borrow_mut().handle_open_unusable(now, error);
    }

    fn handle_text(&self, now: u64, text: String) {
        self.0.borrow_mut().handle_text(now, &text);
    }

    fn handle_binary(&self, now: u64, bytes: Vec<u8>) {
        self.0.borrow_mut().handle_binary(now, &bytes);
    }

    fn handle_bytes(&self, now: u64, chunk: Vec<u8>) {
        self.0.borrow_mut().handle_bytes(now, &chunk);
    }

    fn handle_close(&self, now: u64, code: u16, reason: String) {
        self.0.borrow_mut().handle_close(now, code, &reason);
    }

    fn handle_http_response(&self, now: u64, id: u64, status: u16, body: String) {
        self.0.borrow_mut().handle_http_response(now, id, status, &body);
    }

    fn handle_http_failed(&self, now: u64, id: u64, reason: String) {
        self.0.borrow_mut().handle_http_failed(now, id, &reason);
    }

    fn handle_timeout(&self, now: u64) {
        self.0.borrow_mut().handle_timeout(now);
    }

    fn poll_transmit(&self) -> Option<Transmit> {
        self.0.borrow_mut().poll_transmit().map(transmit)
    }

    fn poll_event(&self) -> Option<Event> {
        self.0.borrow_mut().poll_event().map(event)
    }

    fn poll_timeout(&self) -> Option<u64> {
        self.0.borrow().poll_timeout()
    }

    drain_methods!(transmit);

    fn state(&self) -> State {
        use agentwire_switch::State as S;
        match self.0.borrow().state() {
            S::Idle => State::Idle,
            S::Opening => State::Opening,
            S::Attaching => State::Attaching,
            S::Live => State::Live,
            S::Backoff => State::Backoff,
            S::Stopped => State::Stopped,
        }
    }

    fn cursor(&self) -> Option<u64> {
        self.0.borrow().cursor()
    }

    fn generation(&self) -> Option<String> {
        self.0.borrow().generation().map(ToString::to_string)
    }

    fn wire(&self) -> Wire {
        wire(self.0.borrow().wire())
    }

    fn attempt(&self) -> u32 {
        self.0.borrow().attempt()
    }

    fn rooms(&self) -> Vec<String> {
        self.0.borrow().rooms().to_vec()
    }

    fn connection_id(&self) -> String {
        self.0.borrow().connection_id().to_owned()
    }

    fn agent_id(&self) -> String {
        self.0.borrow().agent_id().to_owned()
    }
}
