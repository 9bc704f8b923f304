//! `SwitchDriver`: a Switch agent connection over a relay, or directly to a Switch server with
//! the agent key as the token (Node, Workers). The engine decides everything; the driver performs
//! its transmits (a WebSocket per `open` on the WebSocket wire, a streamed `fetch` per `open` on
//! the SSE wire, its pongs, `fetch` for its HTTP calls and beats, closes), feeds it the socket or
//! the stream's bytes, the answers, the clock and the timer, and hands every event to `onEvent`.
//! Operations (`op`, `listOps`, subscribe, ...) are `fetch` calls built and decoded by the
//! engine's `ops` module.

use super::driver::{take_call, Driver, QueueShare};
use super::fetch::{self, FetchError};
use super::options;
use super::refresh::{check_token, token_exp, Refresh};
use crate::errors::{self, text};
use crate::host::{wall, JsEntropy};
use crate::socket::{as_sink, deliver_calls, timer, Calls, NO_WEB_SOCKET};
use agentwire_core::json::read::{self, Kind};
use agentwire_core::json::write::Obj;
use agentwire_core::{Error, ErrorKind, Millis};
use agentwire_switch::ops;
use agentwire_switch::unanswered::{answered, unanswered};
use agentwire_switch::{Connection, HttpRequest, State, SwitchError};
use js_sys::Function;
use std::cell::RefCell;
use std::collections::BTreeMap;
use std::rc::Rc;
use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::spawn_local;
use web_sys::AbortController;

pub(super) fn err(e: &SwitchError) -> JsValue {
    errors::to_js(&e.to_json_string())
}

fn invalid(m: impl Into<String>) -> JsValue {
    errors::local(ErrorKind::Invalid, m)
}

/// The base URL (read by [`agentwire_core::url::base`], as the native client reads it) as the
/// HTTP base and the WebSocket base, both without a trailing `/`.
fn bases(url: &str) -> Result<(String, String), String> {
    let mut base = agentwire_core::url::base(url)
        // Quoted without credentials (a `?token=` or `user:key@` is what is refused).
        .map_err(|m| format!("{:?}: {m}", agentwire_core::redact::url(url)))?;
    let tls = base.tls();
    base.scheme = if tls { "https" } else { "http" };
    let http = base.to_string();
    base.scheme = if tls { "wss" } else { "ws" };
    Ok((http, base.to_string()))
}

/// A Switch agent connection driven by the engine. The npm package's `SwitchClient` wraps it.
#[wasm_bindgen]
pub struct SwitchDriver {
    state: Rc<RefCell<Driver>>,
    agent_id: String,
    connection_id: String,
    http_base: Rc<str>,
    op_timeout_ms: u64,
}

#[wasm_bindgen]
impl SwitchDriver {
    /// Opens the connection through the relay at `baseUrl` (`http(s)://host[:port][/prefix]`)
    /// with `token` (offered as the subprotocol `agentwire.token.<token>` beside `agentwire.v1`,
    /// and sent as `Authorization: Bearer` on HTTP calls), the options JSON (`SwitchOptions`;
    /// `agentId` required) and `webSocket` as the constructor when given. With `transport` `sse`
    /// (or `auto`, after a refused upgrade) `baseUrl` is a Switch server and `token` its agent
    /// key: the event stream is a `fetch` with `Authorization: Bearer`. `onEvent(json)` gets
    /// every event of the connection, `connected` first once attached, `stopped` last.
    /// `refresh()` (a token, or a promise of one) renews the token: before its `exp`, at once when
    /// the relay closes a socket for it, and before a reopen that finds it due; a reopen with an
    /// expired token waits for it (see `refresh.rs`). A failure, or no answer within
    /// `openTimeoutMs`, is a `diagnostic` event of kind `auth`. Throws an
    /// `invalid` error for a bad URL, token or option.
    #[wasm_bindgen(constructor)]
    pub fn new(
        base_url: JsValue,
        token: JsValue,
        options: &str,
        web_socket: Option<Function>,
        on_event: Function,
        refresh: Option<Function>,
    ) -> Result<SwitchDriver, JsValue> {
        let (base_url, token) = (text(base_url, "url")?, text(token, "token")?);
        let parsed = options::config(options)?;
        let (http_base, ws_base) = bases(&base_url).map_err(invalid)?;
        check_token(&token).map_err(invalid)?;
        let http_base: Rc<str> = Rc::from(http_base);
        let token: Rc<str> = Rc::from(token);
        let (agent_id, connection_id) = (parsed.cfg.open.agent_id.clone(), parsed.cfg.open.connection_id.clone());
        // Past the engine's own beat timeout, which decides first (as the native driver does).
        let http_timeout_ms = parsed.cfg.beat_timeout_ms.saturating_add(1_000);
        let open_timeout_ms = parsed.cfg.open_timeout_ms;
        let share = QueueShare::new(parsed.cfg.max_queued_bytes);
        let state = Rc::new_cyclic(|me| {
            RefCell::new(Driver {
                conn: Connection::new(parsed.cfg, Box::new(JsEntropy)),
                me: me.clone(),
                http_base: http_base.clone(),
                ws_base,
                token: token.clone(),
                tokens: 0,
                refresh: refresh.map(|f| Refresh::new(f, &token, wall(), open_timeout_ms)),
                waiting_open: None,
                ctor: web_socket,
                socket: None,
                retired: Vec::new(),
                epoch: 0,
                timer: None,
                on_event: Some(on_event),
                calls_in_flight: Vec::new(),
                http_timeout_ms,
                ops_in_flight: Vec::new(),
                next_op: 0,
                no_web_socket: None,
                held: false,
                last_problem: None,
                share,
            })
        });
        state.borrow_mut().timer = Some(timer(as_sink(&state)));
        deliver_calls(&state, |d, now, calls| {
            d.conn.start(now).map_err(|e| err(&e))?;
            d.pump(now, calls);
            // Not retryable, as with RKT and MoltZap (an error, before any event).
            if d.no_web_socket == Some(true) {
                return Err(invalid(NO_WEB_SOCKET));
            }
            d.no_web_socket = Some(false);
            Ok::<_, JsValue>(())
        })??;
        Ok(SwitchDriver {
            state,
            agent_id,
            connection_id,
            http_base,
            op_timeout_ms: parsed.op_timeout_ms,
        })
    }

    /// Runs `f` on the driver, then makes its calls; a `state` error when the driver is busy
    /// (called from inside the WebSocket constructor).
    fn with<T>(&self, f: impl FnOnce(&mut Driver, Millis, &mut Calls) -> T) -> Result<T, JsValue> {
        deliver_calls(&self.state, f)
    }

    /// Sends `request` with the token; `resolve(decode(status, body))` or `reject(error)`,
    /// within `timeout_ms` (`None`: `opTimeoutMs`). Once the connection has stopped, calls
    /// throw, and those in flight reject, with kind `closed`.
    fn http(
        &self,
        request: Result<HttpRequest, SwitchError>,
        timeout_ms: Option<f64>,
        decode: fn(u16, &str) -> Result<String, SwitchError>,
        resolve: Function,
        reject: Function,
    ) -> Result<AbortController, JsValue> {
        let timeout_ms = options::timeout_ms(timeout_ms, self.op_timeout_ms)?;
        let request = request.map_err(|e| err(&e))?;
        let controller = fetch::controller().map_err(|e| err(&e.into()))?;
        let started = self.with(|d, _, _| {
            if d.conn.state() == State::Stopped {
                return None;
            }
            d.next_op += 1;
            d.ops_in_flight.push((d.next_op, controller.clone()));
            Some((d.next_op, d.token.clone()))
        })?;
        let Some((id, token)) = started else {
            return Err(errors::local(ErrorKind::Closed, "the connection is closed"));
        };
        let handle = controller.clone();
        let (base, me) = (self.http_base.clone(), Rc::downgrade(&self.state));
        spawn_local(async move {
            let answer = fetch::fetch(base, token, request.clone(), timeout_ms, controller)
                .await
                .map_err(|e: FetchError| e.unanswered(&request))
                .and_then(|(status, body)| decode(status, &body).map_err(|e| answered(&request, e)));
            // Taken out of the list here, or already by the stop that aborted it (tasks run while
            // nothing is borrowed).
            let stopped = me.upgrade().is_none_or(|state| {
                state
                    .try_borrow_mut()
                    .is_ok_and(|mut d| take_call(&mut d.ops_in_flight, id).is_none())
            });
            let mut calls = Calls::default();
            match answer {
                Ok(text) => calls.push(&resolve, JsValue::from(text)),
                Err(_) if stopped => {
                    let closed = Error::new(ErrorKind::Closed, "the connection closed before the answer");
                    calls.push(&reject, err(&unanswered(&request, closed, true)))
                }
                Err(e) => calls.push(&reject, err(&e)),
            }
            calls.run();
        });
        Ok(handle)
    }

    /// The HTTP calls below return the `AbortController` of their fetch: aborting it ends the call
    /// with kind `cancelled`. Each is bounded by `timeoutMs` (default `opTimeoutMs`).
    ///
    /// Operation `name` with `args` (a JSON object; `undefined`: `{}`) acting for this connection;
    /// `resolve(result JSON text)`, the answer's `result` as sent. Throws an `invalid` error for a
    /// bad name or arguments.
    pub fn op(
        &self,
        name: JsValue,
        args: Option<String>,
        timeout_ms: Option<f64>,
        resolve: Function,
        reject: Function,
    ) -> Result<AbortController, JsValue> {
        let request = ops::op(
            &self.agent_id,
            Some(&self.connection_id),
            &text(name, "name")?,
            args.as_deref().unwrap_or(""),
        );
        self.http(
            request,
            timeout_ms,
            |status, body| ops::decode_result(status, body).map(|r| r.get().to_owned()),
            resolve,
            reject,
        )
    }

    /// `GET ops`: `resolve(JSON text {operations: {name: {description, input_schema}}})`.
    #[wasm_bindgen(js_name = listOps)]
    pub fn list_ops(
        &self,
        timeout_ms: Option<f64>,
        resolve: Function,
        reject: Function,
    ) -> Result<AbortController, JsValue> {
        self.http(
            ops::list_ops(&self.agent_id),
            timeout_ms,
            |status, body| ops::decode_ops(status, body).map(|_| body.to_owned()),
            resolve,
            reject,
        )
    }

    /// Claims `room` for this connection (409 `state` when a live sibling holds it, unless
    /// `takeover`); `resolve(JSON text {ok, rooms, evicted_connection_id?, warning?})`.
    pub fn subscribe(
        &self,
        room: JsValue,
        takeover: bool,
        timeout_ms: Option<f64>,
        resolve: Function,
        reject: Function,
    ) -> Result<AbortController, JsValue> {
        let room = text(room, "room")?;
        self.http(
            ops::subscribe(&self.agent_id, &self.connection_id, &room, takeover),
            timeout_ms,
            |status, body| ops::decode_subscribe(status, body).map(|_| body.to_owned()),
            resolve,
            reject,
        )
    }

    /// Releases `room`; `resolve(JSON text {ok, rooms, ...})`.
    pub fn unsubscribe(
        &self,
        room: JsValue,
        timeout_ms: Option<f64>,
        resolve: Function,
        reject: Function,
    ) -> Result<AbortController, JsValue> {
        let room = text(room, "room")?;
        self.http(
            ops::unsubscribe(&self.agent_id, &self.connection_id, &room),
            timeout_ms,
            |status, body| ops::decode_unsubscribe(status, body).map(|_| body.to_owned()),
            resolve,
            reject,
        )
    }

    /// Replaces every placement of this connection with `map` (JSON object: session id → room),
    /// fenced with the generation of the last `connection_state`; `resolve(JSON text
    /// {placements, rooms, released})`.
    pub fn placements(
        &self,
        map: &str,
        timeout_ms: Option<f64>,
        resolve: Function,
        reject: Function,
    ) -> Result<AbortController, JsValue> {
        let map = placements_map(map).map_err(|e| invalid(format!("placements: {e} (an object of strings)")))?;
        let generation = self.with(|d, _, _| d.conn.generation().cloned())?;
        self.http(
            ops::placements(&self.agent_id, &self.connection_id, &map, generation.as_ref()),
            timeout_ms,
            |status, body| ops::decode_placements(status, body).map(|_| body.to_owned()),
            resolve,
            reject,
        )
    }

    /// Replaces the relay token for every later open and HTTP call (the socket already open
    /// keeps the one it was opened with, until the relay closes it at that token's `exp` and the
    /// engine reopens); `refresh` is then due before this one's `exp`. Throws an `invalid` error
    /// for a malformed token.
    #[wasm_bindgen(js_name = setToken)]
    pub fn set_token(&self, token: JsValue) -> Result<(), JsValue> {
        let token = text(token, "token")?;
        check_token(&token).map_err(invalid)?;
        self.with(|d, now, calls| {
            d.token = Rc::from(token.as_str());
            d.tokens += 1;
            if let Some(r) = &mut d.refresh {
                r.schedule(token_exp(&token), wall());
            }
            // A reopen waiting for `refreshToken` goes with this token.
            d.release(now, None);
            d.pump(now, calls);
        })
    }

    /// Reopens at once if the connection waits out its backoff before a reopen (the network came
    /// back: the `online` event); returns whether it did. The attempt count is kept.
    #[wasm_bindgen(js_name = reconnectNow)]
    pub fn reconnect_now(&self) -> Result<bool, JsValue> {
        self.with(|d, now, calls| {
            let reopened = d.conn.reconnect_now(now);
            d.pump(now, calls);
            reopened
        })
    }

    /// Closes for good: the socket with 1000, then `onEvent` gets `stopped` (without `error`),
    /// after every event still held.
    pub fn close(&self) -> Result<(), JsValue> {
        self.with(|d, now, calls| {
            d.held = false;
            d.conn.close(now);
            d.pump(now, calls);
        })
    }

    /// `true`: the page cannot take more events now; they wait in the engine. `false`: hand
    /// them over again.
    pub fn hold(&self, held: bool) -> Result<(), JsValue> {
        self.with(|d, now, calls| {
            d.held = held;
            d.pump(now, calls);
        })
    }

    /// Where the connection is, as JSON text: `{state, wire, cursor?, generation?, connectionId,
    /// agentId, rooms, attempt, lastProblem?, held?}`.
    pub fn status(&self) -> Result<String, JsValue> {
        let d = self.state.try_borrow().map_err(|_| crate::socket::busy(&self.state))?;
        let c = &d.conn;
        let mut out = String::with_capacity(256);
        let mut s = Obj::begin(&mut out);
        s.str("state", c.state().as_str());
        s.str("wire", c.wire().as_str());
        if let Some(cursor) = c.cursor() {
            s.u64("cursor", cursor);
        }
        if let Some(g) = c.generation() {
            s.key("generation");
            g.push_json(s.out);
        }
        s.str("connectionId", c.connection_id());
        s.str("agentId", c.agent_id());
        s.strings("rooms", c.rooms());
        s.u64("attempt", u64::from(c.attempt()));
        if let Some(p) = &d.last_problem {
            s.str("lastProblem", p);
        }
        if d.held && c.has_pending_events() {
            s.bool("held", true);
        }
        s.end();
        Ok(out)
    }

    /// What a connect's timeout adds to its message: ` (last: <the last disconnect's reason>)`,
    /// or nothing.
    #[wasm_bindgen(getter)]
    pub fn why(&self) -> String {
        let d = self.state.try_borrow();
        match d.as_ref().map(|d| d.last_problem.as_deref()) {
            Ok(Some(p)) => format!(" (last: {p})"),
            _ => String::new(),
        }
    }

    /// Whether the connection is over (closed, refused, taken over, gave up).
    #[wasm_bindgen(getter)]
    pub fn stopped(&self) -> bool {
        self.state
            .try_borrow()
            .map(|d| d.conn.state() == State::Stopped)
            .unwrap_or(false)
    }

    #[wasm_bindgen(getter, js_name = connectionId)]
    pub fn connection_id(&self) -> String {
        self.connection_id.clone()
    }

    #[wasm_bindgen(getter, js_name = agentId)]
    pub fn agent_id(&self) -> String {
        self.agent_id.clone()
    }
}

/// `placements`' argument (JSON text of an object of strings, session id → room) as the engine
/// takes it. A session given twice keeps its last room, as with `JSON.parse`.
fn placements_map(map: &str) -> Result<BTreeMap<String, String>, String> {
    let tape = read::parse(map, 2).map_err(|e| e.to_string())?;
    let root = tape.root();
    if root.kind() != Kind::Object {
        return Err(format!("{} instead of an object", root.kind().name()));
    }
    let mut out = BTreeMap::new();
    for (session, room) in root.members() {
        let Some(room) = room.as_str() else {
            return Err(format!("{:?} is {}", session.text(), room.kind().name()));
        };
        out.insert(session.text().into_owned(), room.into_owned());
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placements_maps() {
        let m = placements_map(r#"{"s-2":"r-b","s-1":"r-\u0061","s-2":"r-c"}"#).unwrap();
        let want: BTreeMap<String, String> = [("s-1", "r-a"), ("s-2", "r-c")]
            .into_iter()
            .map(|(s, r)| (s.to_owned(), r.to_owned()))
            .collect();
        assert_eq!(m, want);
        assert_eq!(placements_map(" {} ").unwrap(), BTreeMap::new());
        assert_eq!(placements_map("[]").unwrap_err(), "an array instead of an object");
        assert_eq!(placements_map(r#"{"s":1}"#).unwrap_err(), r#""s" is a number"#);
        assert_eq!(placements_map(r#"{"s":{"r":"x"}}"#).unwrap_err(), r#""s" is an object"#);
        assert!(placements_map(r#"{"s":"r""#).is_err());
        assert!(placements_map("").is_err());
    }

    #[test]
    fn base_urls() {
        assert_eq!(
            bases("https://relay.example/switch/").unwrap(),
            (
                "https://relay.example/switch".into(),
                "wss://relay.example/switch".into()
            )
        );
        assert_eq!(
            bases("HTTP://127.0.0.1:7751").unwrap(),
            ("http://127.0.0.1:7751".into(), "ws://127.0.0.1:7751".into())
        );
        // As the native client reads a base URL (agentwire_core::url::base).
        assert_eq!(bases("wss://h:443").unwrap(), ("https://h".into(), "wss://h".into()));
        assert_eq!(bases("h:1").unwrap(), ("http://h:1".into(), "ws://h:1".into()));
        for bad in [
            "https://h:65536",
            "https://h:0",
            "ftp://h",
            "http://",
            "http:///x",
            "http://h/?q",
            "http://h#f",
            "http://u:p@h",
            "http://h /x",
        ] {
            assert!(bases(bad).is_err(), "{bad}");
        }
        assert!(check_token("sk_switch_abc-DEF.sig").is_ok());
        for bad in ["", "a b", "a=", "a/b", "a,b"] {
            assert!(check_token(bad).is_err(), "{bad}");
        }
    }
}
