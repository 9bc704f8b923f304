//! `agentwire:engine/moltzap`: the MoltZap `Session` behind the `session` resource.

use crate::bindings::exports::agentwire::engine::moltzap::{
    Closed, Config, Connected, Credentials, Drained, Event, Failure, GenerationChoice, Guest, GuestSession, Other,
    Push, Response, State,
};
use crate::bindings::exports::agentwire::engine::types::{EngineError, Outgoing};
use crate::common::{engine_error, outgoing, size};
use crate::Engine;
use agentwire_moltzap::{MoltZapError, Session as Engine_, SessionConfig, SessionState};
use std::cell::RefCell;

impl Guest for Engine {
    type Session = Session;
}

pub struct Session(RefCell<Engine_>);

fn err(e: MoltZapError) -> EngineError {
    let json = serde_json::to_string(&e).unwrap_or_default();
    engine_error(&e.error, json)
}

fn config(c: Config) -> SessionConfig {
    let d = SessionConfig::default();
    let mut decode = d.decode.clone();
    decode.max_message_bytes = c.max_message_bytes.map_or(decode.max_message_bytes, size);
    SessionConfig {
        generation: match c.generation {
            None => d.generation,
            Some(GenerationChoice::Current) => agentwire_moltzap::GenerationChoice::Current,
            Some(GenerationChoice::Released) => agentwire_moltzap::GenerationChoice::Released,
            Some(GenerationChoice::Auto) => agentwire_moltzap::GenerationChoice::Auto,
        },
        request_timeout_ms: c.request_timeout_ms.unwrap_or(d.request_timeout_ms),
        max_in_flight: c.max_in_flight.map_or(d.max_in_flight, size),
        handshake_timeout_ms: c.handshake_timeout_ms.unwrap_or(d.handshake_timeout_ms),
        ping_interval_ms: c.ping_interval_ms.or(d.ping_interval_ms),
        idle_probe_ms: c.idle_probe_ms.unwrap_or(d.idle_probe_ms),
        decode,
        max_send_bytes: c.max_send_bytes.map_or(d.max_send_bytes, size),
        id_prefix: c.id_prefix.unwrap_or(d.id_prefix),
    }
}

fn push(data: String, conversation_id: Option<String>) -> Push {
    Push {
        data,
        conversation_id,
        message_id: None,
        sender_id: None,
        agent_id: None,
        status: None,
    }
}

fn event(e: agentwire_moltzap::Event) -> Event {
    use agentwire_moltzap::Event as E;
    match e {
        E::Connected { id, generation, hello } => Event::Connected(Connected {
            id,
            generation: generation.as_str().to_owned(),
            hello: hello.raw,
            protocol_version: hello.protocol_version,
            agent_id: hello.agent_id,
        }),
        E::ConnectFailed { id, error } => Event::ConnectFailed(Failure { id, error: err(error) }),
        E::Response { id, result } => Event::Response(Response { id, body: result }),
        E::Failed { id, error } => Event::Failed(Failure { id, error: err(error) }),
        E::MessageReceived {
            data,
            conversation_id,
            message_id,
            sender_id,
        } => Event::MessageReceived(Push {
            message_id,
            sender_id,
            ..push(data, conversation_id)
        }),
        E::ConversationCreated { data, conversation_id } => Event::ConversationCreated(push(data, conversation_id)),
        E::ConversationUpdated { data, conversation_id } => Event::ConversationUpdated(push(data, conversation_id)),
        E::ConversationArchived { data, conversation_id } => Event::ConversationArchived(push(data, conversation_id)),
        E::ConversationUnarchived { data, conversation_id } => {
            Event::ConversationUnarchived(push(data, conversation_id))
        }
        E::PresenceChanged { data, agent_id, status } => Event::PresenceChanged(Push {
            agent_id,
            status,
            ..push(data, None)
        }),
        E::Other { name, data } => Event::Other(Other { name, data }),
        E::Diagnostic(e) => Event::Diagnostic(err(e)),
        E::MissedPings { count } => Event::MissedPings(count),
        E::Disconnected { code, reason } => Event::Disconnected(Closed { code, reason }),
    }
}

impl GuestSession for Session {
    fn new(config_: Config) -> Self {
        Session(RefCell::new(Engine_::new(config(config_))))
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

    fn handle_ping(&self, now: u64) {
        self.0.borrow_mut().handle_ping(now);
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

    fn connect(&self, now: u64, credentials: Credentials) -> Result<String, EngineError> {
        let credentials = match credentials {
            Credentials::AgentKey(k) => agentwire_moltzap::Credentials::AgentKey(k),
            Credentials::SessionToken(t) => agentwire_moltzap::Credentials::SessionToken(t),
        };
        self.0.borrow_mut().connect(now, credentials).map_err(err)
    }

    fn call(
        &self,
        now: u64,
        method: String,
        params: Option<String>,
        timeout_ms: Option<u64>,
    ) -> Result<String, EngineError> {
        let mut s = self.0.borrow_mut();
        match timeout_ms {
            None => s.call(now, &method, params.as_deref()),
            Some(ms) => s.call_with_timeout(now, &method, params.as_deref(), ms),
        }
        .map_err(err)
    }

    fn cancel(&self, id: String) -> bool {
        self.0.borrow_mut().cancel(&id)
    }

    fn close(&self, code: u16, reason: String) {
        self.0.borrow_mut().close(code, &reason);
    }

    fn state(&self) -> State {
        match self.0.borrow().state() {
            SessionState::Closed => State::Closed,
            SessionState::Open => State::Open,
            SessionState::Connecting => State::Connecting,
            SessionState::Ready => State::Ready,
        }
    }

    fn generation(&self) -> String {
        self.0.borrow().generation().as_str().to_owned()
    }
}
