//! `MoltZapDriver`: a MoltZap client over a WebSocket. The engine decides everything; the
//! driver feeds it the socket, the clock and the timer, sends its frames and routes its events:
//! the connect's answer to `onReady`/`onFail`, a request's answer to the callbacks of its call,
//! everything else to `onEvent`.

use super::options::{self, error};
use crate::errors::{self, opt_text, text};
use crate::host::Timer;
use crate::socket::{
    as_sink, closed_words, deliver_calls, elsewhere, later, send_recheck, send_while_room, timer, Calls, Input,
    OpenDeadline, Sink, Socket,
};
use agentwire_core::json::{read, write::Obj};
use agentwire_core::{ErrorKind, Millis};
use agentwire_moltzap::session::SendMessage;
use agentwire_moltzap::{Credentials, Event, MoltZapError, RequestId, Session, SessionState};
use js_sys::Function;
use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;
use wasm_bindgen::prelude::*;

struct Driver {
    session: Session,
    socket: Option<Socket>,
    timer: Option<Timer>,
    url: String,
    /// Until the socket opens: what the connect sends.
    credentials: Option<Credentials>,
    /// The connect in flight.
    connect_id: Option<RequestId>,
    /// Per request: `resolve(result JSON text)`, `reject(error)`.
    waiters: HashMap<RequestId, (Function, Function)>,
    /// Let go of after `disconnected`, the last event: the facade's callback may reach this
    /// driver's JS wrapper, and a cycle through wasm memory is one no garbage collector sees.
    on_event: Option<Function>,
    /// Until `Connected`: `(onReady(ready JSON), onFail(error))`.
    ready: Option<(Function, Function)>,
    /// Until the socket opens: when it must have.
    opening: Option<OpenDeadline>,
    closed: bool,
    /// How it ended (`socket::ended`).
    how: Option<String>,
}

fn closed_error(m: impl Into<String>) -> MoltZapError {
    MoltZapError::local(ErrorKind::Closed, m)
}

impl Sink for Driver {
    fn input(&mut self, now: Millis, input: Input, calls: &mut Calls) -> Result<(), Input> {
        match input {
            Input::Open => {
                self.opening = None;
                self.session.handle_open(now);
                if let Some(credentials) = self.credentials.take() {
                    match self.session.connect(now, credentials) {
                        Ok(id) => self.connect_id = Some(id),
                        Err(e) => {
                            if let Some((_, on_fail)) = self.ready.take() {
                                calls.push(&on_fail, error(&e));
                            }
                            self.session.close(1000, "connect refused locally");
                        }
                    }
                }
            }
            Input::Text(t) => self.session.handle_text(now, &t),
            Input::Binary(b) => self.session.handle_binary(now, &b),
            Input::Closed { code, reason, refused } => {
                if self.session.state() == SessionState::Closed && !self.closed {
                    // The socket never opened (refused, unreachable): the session has nothing to end.
                    let e = match refused {
                        // The socket saw the refused upgrade's answer (`fetchWebSocket`).
                        Some(r) => agentwire_core::Error::refused_upgrade(&self.url, r.status, &r.body).into(),
                        None => closed_error(format!(
                            "{}: connection closed ({code} {reason}) before it opened",
                            agentwire_core::redact::url(&self.url)
                        )),
                    };
                    self.end_unopened(code, &reason, e, calls);
                } else {
                    self.session.handle_close(now, code, &reason);
                }
            }
            Input::Timer => {
                if let Some(t) = &mut self.timer {
                    t.fired();
                }
                match self.opening.and_then(|o| o.missed(now, &self.url)) {
                    // Not open in time: the socket is dropped (closed) and the connect fails.
                    Some(m) => {
                        let e = MoltZapError::local(ErrorKind::Timeout, m);
                        self.end_unopened(1006, "the WebSocket did not open in time", e, calls);
                    }
                    None => self.session.handle_timeout(now),
                }
            }
            Input::Cancel(id) => {
                self.session.cancel(&id);
            }
        }
        self.pump(now, calls);
        Ok(())
    }
}

impl Driver {
    /// Sends the engine's frames, routes its events (which may queue frames: a failed connect
    /// closes the socket) and re-arms the timer.
    fn pump(&mut self, now: Millis, calls: &mut Calls) {
        let mut held;
        loop {
            let mut idle = true;
            // The socket is looked at only when a frame waits (reading `bufferedAmount` per
            // input cost about 15 % of an event's time), and not once the session is closed.
            let bounded = self.session.has_transmit() && self.session.state() != SessionState::Closed;
            let sent = send_while_room(self.socket.as_ref(), bounded, now, || {
                let frame = self.session.poll_transmit();
                idle &= frame.is_none();
                frame
            });
            held = sent.unwrap_or_else(|m| {
                // The socket sent nothing for long: dead, as one that dropped (its handlers let go).
                self.socket = None;
                self.session.handle_close(now, 1006, m);
                idle = false;
                false
            });
            while let Some(event) = self.session.poll_event() {
                idle = false;
                self.route(event, calls);
            }
            if idle {
                break;
            }
        }
        if self.closed {
            // Over, and every frame sent (a failed connect's close frame comes after its
            // `Disconnected` is queued): nothing more comes. A test double or a user's constructor
            // may hold what reaches the client, so the socket goes too (its handlers detached).
            self.socket = None;
        }
        if let Some(t) = &mut self.timer {
            match self.closed {
                true => t.cancel(),
                false => {
                    let at = OpenDeadline::earliest(self.session.poll_timeout(), self.opening);
                    t.arm_by(send_recheck(at, held, now), now)
                }
            }
        }
    }

    fn route(&mut self, event: Event, calls: &mut Calls) {
        match event {
            Event::Response { id, result } => {
                if let Some((resolve, _)) = self.waiters.remove(&id) {
                    calls.push(&resolve, result.into());
                }
            }
            Event::Failed { id, error: e } => {
                if let Some((_, reject)) = self.waiters.remove(&id) {
                    calls.push(&reject, error(&e));
                }
            }
            Event::Connected { ref id, .. } => {
                if self.connect_id.as_ref() == Some(id) {
                    self.connect_id = None;
                    if let Some((on_ready, _)) = self.ready.take() {
                        calls.push(&on_ready, ready_info(&event, &self.url).into());
                    }
                }
            }
            Event::ConnectFailed { id, error: e } => {
                if self.connect_id.as_ref() == Some(&id) {
                    self.connect_id = None;
                    if let Some((_, on_fail)) = self.ready.take() {
                        calls.push(&on_fail, error(&e));
                    }
                    // A connection that was never ready ends (no-op when the session is closed).
                    self.session.close(1000, "connect failed");
                }
            }
            Event::Disconnected { code, ref reason } => {
                self.closed = true;
                crate::socket::ended(&mut self.how, code, reason);
                self.connect_id = None;
                if let Some((_, on_fail)) = self.ready.take() {
                    let m = format!(
                        "{}: connection closed ({code} {reason}) during the handshake",
                        agentwire_core::redact::url(&self.url)
                    );
                    calls.push(&on_fail, error(&closed_error(m)));
                }
                // Every request has had its `Failed` by now; anything left is answered here.
                for (_, (_, reject)) in self.waiters.drain() {
                    calls.push(&reject, error(&closed_error(closed_words(&self.how))));
                }
                if let Some(f) = self.on_event.take() {
                    calls.push(&f, event.to_json_string().into());
                }
            }
            other => {
                if let Some(f) = &self.on_event {
                    calls.push_event(f, other.to_json_lazy());
                }
            }
        }
    }

    /// Ends a connection whose socket never opened (the session never saw it): `onFail(e)`,
    /// then `disconnected`.
    fn end_unopened(&mut self, code: u16, reason: &str, e: MoltZapError, calls: &mut Calls) {
        self.credentials = None;
        self.opening = None;
        // Dropping the socket removes its handlers and closes it if it is still connecting.
        self.socket = None;
        if let Some((_, on_fail)) = self.ready.take() {
            calls.push(&on_fail, error(&e));
        }
        let reason = reason.to_string();
        self.route(Event::Disconnected { code, reason }, calls);
    }
}

/// A MoltZap client connection driven by the engine. The npm package's `MoltZapClient` wraps
/// it.
#[wasm_bindgen]
pub struct MoltZapDriver {
    state: Rc<RefCell<Driver>>,
}

#[wasm_bindgen]
impl MoltZapDriver {
    /// Opens `url` (`ws(s)://host:port/ws`, no subprotocol) with `webSocket` as the constructor
    /// when given, and connects with the options' `agentKey` or `sessionToken` (required).
    /// `onReady(readyJson: {url, generation, hello})` follows the HelloOk; `onFail(error)` a
    /// connect that failed or a socket that closed first (the connection then ends). `onEvent(json)`
    /// gets what answers no call: pushes, `diagnostic`, and `disconnected` last.
    #[wasm_bindgen(constructor)]
    pub fn new(
        url: JsValue,
        options: Option<String>,
        web_socket: Option<Function>,
        on_event: Function,
        on_ready: Function,
        on_fail: Function,
    ) -> Result<MoltZapDriver, JsValue> {
        let url = &text(url, "url")?;
        let o = options::options(options)?;
        let invalid = |m: &str| errors::local(ErrorKind::Invalid, m);
        // As the native client reads it: a URL no target could dial is refused here.
        let url = &agentwire_core::url::websocket(url)
            .map_err(|m| invalid(&format!("{}: {m}", agentwire_core::redact::url(url))))?
            .to_string();
        let credentials = o
            .credentials
            .ok_or_else(|| invalid("MoltZap options: agentKey or sessionToken is required"))?;
        if o.session.ping_interval_ms.is_some() {
            // The WebSocket API answers pings itself and never reports them.
            return Err(invalid(
                "MoltZap options: pingIntervalMs needs a transport that reports pings (MoltZapSession)",
            ));
        }
        let opening = OpenDeadline::new(crate::host::now(), o.session.handshake_timeout_ms);
        let state = Rc::new(RefCell::new(Driver {
            session: Session::new(o.session),
            socket: None,
            timer: None,
            url: url.to_string(),
            credentials: Some(credentials),
            connect_id: None,
            waiters: HashMap::new(),
            on_event: Some(on_event),
            ready: Some((on_ready, on_fail)),
            opening: Some(opening),
            closed: false,
            how: None,
        }));
        let sink = as_sink(&state);
        let socket = Socket::open(url, &[], web_socket.as_ref(), sink.clone())
            .map_err(|m| errors::local(ErrorKind::Invalid, format!("{}: {m}", agentwire_core::redact::url(url))))?;
        {
            let mut d = state.borrow_mut();
            d.socket = Some(socket);
            let mut t = timer(sink);
            t.arm(Some(opening.at), crate::host::now());
            d.timer = Some(t);
        }
        Ok(MoltZapDriver { state })
    }

    /// Starts a request the engine builds with `start`; its reply goes to `resolve(result JSON
    /// text)` or `reject(error)`. Throws when the engine refuses it. `start` is a trait object:
    /// one copy of this for every request.
    fn start(
        &self,
        resolve: Function,
        reject: Function,
        start: &dyn Fn(&mut Session, Millis) -> Result<String, MoltZapError>,
    ) -> Result<String, JsValue> {
        deliver_calls(&self.state, |d, now, calls| {
            if d.closed {
                return Err(error(&closed_error(closed_words(&d.how))));
            }
            // Refused before the engine has it: the connection is left as it was.
            Socket::usable(d.socket.as_ref())?;
            let id = start(&mut d.session, now).map_err(|e| error(&e))?;
            d.waiters.insert(id.clone(), (resolve, reject));
            d.pump(now, calls);
            Ok(id)
        })?
    }

    /// Sends `method` with `params` (JSON text: an object or an array); `resolve(result JSON
    /// text)` or `reject(error)`. `timeoutMs` overrides `requestTimeoutMs`. Returns the request
    /// id; throws when the engine refuses the call (not connected, `limit`, bad params).
    pub fn call(
        &self,
        method: JsValue,
        params: Option<String>,
        timeout_ms: Option<f64>,
        resolve: Function,
        reject: Function,
    ) -> Result<String, JsValue> {
        let method = text(method, "method")?;
        let timeout = timeout_ms.map(options::timeout_ms).transpose()?;
        self.start(resolve, reject, &|s, now| {
            let params = params.as_deref();
            match timeout {
                None => s.call(now, &method, params),
                Some(ms) => s.call_with_timeout(now, &method, params, ms),
            }
        })
    }

    /// `messages/send` of one text part to `agent:<toAgent>` or to `conversationId`;
    /// `resolve(result JSON text: {message})`.
    #[wasm_bindgen(js_name = sendText)]
    pub fn send_text(
        &self,
        to_agent: JsValue,
        conversation_id: JsValue,
        message: JsValue,
        resolve: Function,
        reject: Function,
    ) -> Result<String, JsValue> {
        let (to_agent, conversation_id) = (
            opt_text(to_agent, "agent")?,
            opt_text(conversation_id, "conversationId")?,
        );
        let message = text(message, "text")?;
        let msg = match (to_agent, conversation_id) {
            (Some(name), None) => SendMessage::text_to_agent(&name, message),
            (None, Some(c)) => SendMessage::text_to_conversation(c, message),
            _ => {
                let m = "sendText: give exactly one of an agent name and a conversation id";
                return Err(errors::local(ErrorKind::Invalid, m));
            }
        };
        self.start(resolve, reject, &|s, now| s.messages_send(now, &msg))
    }

    /// Recent messages (`Session::recent_messages`): one conversation's, or the window across
    /// all; `resolve(result JSON text)`.
    #[wasm_bindgen(js_name = recentMessages)]
    pub fn recent_messages(
        &self,
        conversation_id: JsValue,
        limit: u32,
        resolve: Function,
        reject: Function,
    ) -> Result<String, JsValue> {
        let conversation_id = opt_text(conversation_id, "conversationId")?;
        self.start(resolve, reject, &|s, now| {
            s.recent_messages(now, conversation_id.as_deref(), limit)
        })
    }

    /// Ends a call early: its `reject` gets kind `cancelled`. True when its frame had not left
    /// (held while the socket was backed up): making it again is safe.
    pub fn cancel(&self, id: &str) -> bool {
        deliver_calls(&self.state, |d, now, calls| {
            let unsent = d.session.unsent(id);
            let found = d.waiters.contains_key(id) && d.session.cancel(id);
            d.pump(now, calls);
            found && unsent
        })
        .unwrap_or_else(|_| later(&self.state, id))
    }

    /// Closes the connection (1000): pending calls are rejected with `closed`, then `onEvent`
    /// gets `disconnected`. A socket the host refuses here (another request's, in workerd) can
    /// be neither used nor closed: the driver lets go of it, and the connection ends with 1006.
    pub fn close(&self) -> Result<(), JsValue> {
        deliver_calls(&self.state, |d, now, calls| {
            if d.closed {
                return;
            }
            d.how.get_or_insert_with(String::new);
            let refused = d.socket.as_ref().and_then(Socket::refused);
            if d.session.state() == SessionState::Closed {
                // Still opening: the session has no socket to close.
                let m = format!(
                    "{}: closed by the client before the connection opened",
                    agentwire_core::redact::url(&d.url)
                );
                d.end_unopened(1000, "client closed", closed_error(m), calls);
            } else if let Some(m) = refused {
                d.socket = None;
                d.session.handle_close(now, 1006, &elsewhere(&m));
            } else {
                d.session.close(1000, "client closed");
            }
            d.pump(now, calls);
        })
    }

    /// Whether the connection is over.
    #[wasm_bindgen(getter)]
    pub fn closed(&self) -> bool {
        self.state.try_borrow().map(|d| d.closed).unwrap_or(false)
    }

    /// What a connect's timeout adds to its message: the phase it stopped in.
    #[wasm_bindgen(getter)]
    pub fn why(&self) -> String {
        let d = self.state.try_borrow();
        d.map_or_else(
            |_| String::new(),
            |d| OpenDeadline::phase(d.opening, "answer to the connect"),
        )
    }
}

/// What `ready` gets: the `connected` event's object without its `type` and `id`, with the `url`
/// (written from the event's text on core's reader: a `serde_json::Value` would bring its tree
/// and writer into the wasm).
fn ready_info(event: &Event, url: &str) -> String {
    let text = event.to_json_string();
    let mut out = String::with_capacity(text.len() + url.len() + 16);
    let mut o = Obj::begin(&mut out);
    if let Ok(tape) = read::parse_lenient(&text, usize::MAX) {
        for (k, v) in tape.root().members().filter(|(k, _)| !k.is("type") && !k.is("id")) {
            o.raw(&k.text(), v.raw());
        }
    }
    o.str("url", url);
    o.end();
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use agentwire_moltzap::{Generation, HelloOk};

    /// `ready` gets what it got when it was built on the event's `serde_json` tree: the event's
    /// object, `type` and `id` taken out, `url` put in; the answer embedded as JSON, or as text
    /// where a `Value` would not hold it.
    #[test]
    fn ready_info_is_the_connected_event_without_type_and_id_with_the_url() {
        let url = "ws://h/\"x\u{7f}";
        for raw in [
            r#"{"protocolVersion":"1","n":[1.5,{"a":null}]}"#,
            "{}",
            "null",
            r#"{"x":"\ud800"}"#,
            "{\"n\":1e400}",
            "not json",
        ] {
            let event = Event::Connected {
                id: "c1".into(),
                generation: Generation::Current,
                hello: HelloOk {
                    raw: raw.into(),
                    protocol_version: Some("0.4".into()),
                    agent_id: Some("a\n".into()),
                    heartbeat_interval_ms: Some(5_000),
                },
            };
            let mut old = event.to_json();
            old["url"] = url.into();
            let o = old.as_object_mut().unwrap();
            o.remove("type");
            o.remove("id");
            let ours: serde_json::Value = serde_json::from_str(&ready_info(&event, url)).unwrap();
            assert_eq!(ours, old, "{raw}");
        }
    }
}
