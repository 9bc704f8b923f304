//! `agentwire:engine/rkt`: `ClientSession` behind the `session` resource.

use crate::bindings::exports::agentwire::engine::rkt::{
    AuthOk, Chunk, Closed, Config, Drained, Event, Failure, Guest, GuestSession, PeerInfo, Pong, Priority, Ready,
    Reply, RequestOptions, State,
};
use crate::bindings::exports::agentwire::engine::types::{EngineError, Outgoing};
use crate::common::{engine_error, outgoing, size, WasiEntropy};
use crate::Engine;
use agentwire_rkt::json::error_json;
use agentwire_rkt::json::json_arg_within;
use agentwire_rkt::{ClientConfig, ClientEvent, ClientSession, ClientState, RktError};
use std::cell::RefCell;

impl Guest for Engine {
    type Session = Session;
}

pub struct Session(RefCell<ClientSession>);

fn err(e: RktError) -> EngineError {
    engine_error(&e.error, error_json(&e).to_string())
}

fn config(c: Config) -> ClientConfig {
    let d = ClientConfig::default();
    ClientConfig {
        user_agent: c.user_agent.unwrap_or(d.user_agent),
        from: c.sender,
        capabilities: c.capabilities,
        ttl_s: c.ttl_s.unwrap_or(d.ttl_s),
        max_message_size: c.max_message_size.map_or(d.max_message_size, size),
        max_in_flight: c.max_in_flight.map_or(d.max_in_flight, size),
        max_stream_buffer: c.max_stream_buffer.map_or(d.max_stream_buffer, size),
        max_stream_buffer_bytes: c.max_stream_buffer_bytes.map_or(d.max_stream_buffer_bytes, size),
        handshake_timeout_ms: c.handshake_timeout_ms.unwrap_or(d.handshake_timeout_ms),
        authorization: c.authorization,
        keepalive: c.keepalive.unwrap_or(d.keepalive),
        ..d
    }
}

fn priority(p: Priority) -> agentwire_rkt::Priority {
    match p {
        Priority::Low => agentwire_rkt::Priority::Low,
        Priority::Normal => agentwire_rkt::Priority::Normal,
        Priority::High => agentwire_rkt::Priority::High,
        Priority::Urgent => agentwire_rkt::Priority::Urgent,
    }
}

fn event(e: ClientEvent) -> Event {
    match e {
        ClientEvent::Ready {
            agreed_version,
            session_timeout,
            server,
        } => Event::Ready(Ready {
            agreed_version,
            session_timeout,
            server: PeerInfo {
                sender: server.from,
                user_agent: server.user_agent,
                capabilities: server.capabilities,
            },
        }),
        ClientEvent::Response { id, body } => Event::Response(Reply { id, body }),
        ClientEvent::StreamBegin { id, body } => Event::StreamBegin(Reply { id, body }),
        ClientEvent::StreamData { id, seq, body } => Event::StreamData(Chunk { id, seq, body }),
        ClientEvent::StreamEnd { id, body } => Event::StreamEnd(Reply { id, body }),
        ClientEvent::AuthOk { id, auth } => Event::AuthOk(AuthOk {
            id,
            session_token: auth.session_token,
            scopes: auth.scopes,
            expires_in: auth.expires_in,
        }),
        ClientEvent::Pong { id, rtt_ms } => Event::Pong(Pong { id, rtt_ms }),
        ClientEvent::Failed { id, error } => Event::Failed(Failure { id, error: err(error) }),
        ClientEvent::Error(e) => Event::Error(err(e)),
        ClientEvent::Goodbye => Event::Goodbye,
        ClientEvent::Closed { code, reason } => Event::Closed(Closed { code, reason }),
    }
}

impl GuestSession for Session {
    fn new(config_: Config) -> Self {
        Session(RefCell::new(ClientSession::new(config(config_), WasiEntropy::boxed())))
    }

    fn handle_open(&self, now: u64) {
        self.0.borrow_mut().handle_open(now);
    }

    fn handle_text(&self, now: u64, text: String) {
        self.0.borrow_mut().handle_text(now, &text);
    }

    fn handle_binary(&self, now: u64, bytes: Vec<u8>) {
        self.0.borrow_mut().handle_binary(now, &bytes);
    }

    fn handle_close(&self, now: u64, code: u16, reason: String) {
        self.0.borrow_mut().handle_close(now, code, &reason);
    }

    fn handle_timeout(&self, now: u64) {
        self.0.borrow_mut().handle_timeout(now);
    }

    fn poll_transmit(&self) -> Option<Outgoing> {
        self.0.borrow_mut().poll_transmit().map(outgoing)
    }

    fn poll_event(&self) -> Option<Event> {
        self.0.borrow_mut().poll_event().map(event)
    }

    fn poll_timeout(&self) -> Option<u64> {
        self.0.borrow().poll_timeout()
    }

    drain_methods!(outgoing);

    fn request(
        &self,
        now: u64,
        intent: String,
        params: Option<String>,
        options: RequestOptions,
    ) -> Result<String, EngineError> {
        let max = self.0.borrow().max_message_size();
        let params = json_arg_within("params", params.as_deref(), max).map_err(err)?;
        let context = json_arg_within("context", options.context.as_deref(), max).map_err(err)?;
        let opts = agentwire_rkt::RequestOptions {
            stream: options.streamed,
            priority: options.priority.map(priority),
            ttl_s: options.ttl_s,
            to: options.to,
            context,
        };
        self.0.borrow_mut().request(now, &intent, params, opts).map_err(err)
    }

    fn discover(&self, now: u64) -> Result<String, EngineError> {
        self.0.borrow_mut().discover(now).map_err(err)
    }

    fn memory_set(
        &self,
        now: u64,
        key: String,
        value: String,
        namespace: Option<String>,
        ttl_s: Option<u64>,
    ) -> Result<String, EngineError> {
        let max = self.0.borrow().max_message_size();
        let value = json_arg_within("value", Some(&value), max)
            .map_err(err)?
            .unwrap_or_default();
        self.0
            .borrow_mut()
            .memory_set(now, &key, value, namespace.as_deref(), ttl_s)
            .map_err(err)
    }

    fn memory_get(&self, now: u64, key: String, namespace: Option<String>) -> Result<String, EngineError> {
        self.0
            .borrow_mut()
            .memory_get(now, &key, namespace.as_deref())
            .map_err(err)
    }

    fn pay(
        &self,
        now: u64,
        amount: f64,
        currency: String,
        description: Option<String>,
        recipient: Option<String>,
    ) -> Result<String, EngineError> {
        self.0
            .borrow_mut()
            .pay(now, amount, &currency, description.as_deref(), recipient.as_deref())
            .map_err(err)
    }

    fn ping(&self, now: u64) -> Result<String, EngineError> {
        self.0.borrow_mut().ping(now).map_err(err)
    }

    fn cancel(&self, id: String) -> bool {
        self.0.borrow_mut().cancel(&id)
    }

    fn goodbye(&self, now: u64) {
        self.0.borrow_mut().goodbye(now);
    }

    fn state(&self) -> State {
        match self.0.borrow().state() {
            ClientState::Idle => State::Idle,
            ClientState::Handshaking => State::Handshaking,
            ClientState::Ready => State::Ready,
            ClientState::Closed => State::Closed,
        }
    }

    fn session_id(&self) -> String {
        self.0.borrow().session_id().to_owned()
    }

    fn in_flight(&self) -> u32 {
        u32::try_from(self.0.borrow().in_flight()).unwrap_or(u32::MAX)
    }
}
