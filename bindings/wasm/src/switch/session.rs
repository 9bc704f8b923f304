//! `SwitchSession`: the sans-IO Switch agent connection for users who bring their own transport.
//! `start`, then feed it what happens (the socket or stream, HTTP answers, the timer) with the
//! time, and after every input drain `pollTransmit` and `pollEvent` until both are empty, then
//! re-arm the timer at `pollTimeout`.

use super::{options, transmit_to_js};
use crate::errors::{self, text, u16_arg};
use crate::host::JsEntropy;
use crate::outgoing::millis;
use agentwire_switch::{Connection, SwitchError};
use wasm_bindgen::prelude::*;

#[wasm_bindgen]
pub struct SwitchSession {
    inner: Connection,
}

fn err(e: SwitchError) -> JsValue {
    errors::to_js(&e.to_json_string())
}

/// An HTTP call id from JavaScript (a `number`).
fn call_id(id: f64) -> u64 {
    if id.is_finite() && id >= 0.0 {
        id as u64
    } else {
        u64::MAX
    }
}

#[wasm_bindgen]
impl SwitchSession {
    /// A connection with the options JSON (see `SwitchOptions` in the package's types; `agentId`
    /// is required). Every transport is allowed here: with `sse`, feed the stream's body with
    /// `handleBytes`.
    #[wasm_bindgen(constructor)]
    pub fn new(options: JsValue) -> Result<SwitchSession, JsValue> {
        let parsed = options::config(&text(options, "options")?)?;
        Ok(SwitchSession {
            inner: Connection::new(parsed.cfg, Box::new(JsEntropy)),
        })
    }

    /// Checks the options and queues the first `open`. Throws an `invalid` error (nothing
    /// queued) when an open parameter is wrong, a `state` error when already started.
    pub fn start(&mut self, now: f64) -> Result<(), JsValue> {
        self.inner.start(millis(now)).map_err(err)
    }

    /// The socket (or the stream's `200`) of the last `open` is open.
    #[wasm_bindgen(js_name = handleOpen)]
    pub fn handle_open(&mut self, now: f64) {
        self.inner.handle_open(millis(now));
    }

    /// The last `open` failed: `status` of a refused upgrade or stream, `undefined` when no
    /// answer came (refused connection, DNS, TLS, or a WebSocket that never opened).
    #[wasm_bindgen(js_name = handleOpenFailed)]
    pub fn handle_open_failed(&mut self, now: f64, status: JsValue, body: JsValue) -> Result<(), JsValue> {
        let status = match status.is_undefined() || status.is_null() {
            true => None,
            false => Some(u16_arg(status, "status")?),
        };
        self.inner.handle_open_failed(millis(now), status, &text(body, "body")?);
        Ok(())
    }

    /// The last `open` failed before any HTTP answer, for a reason the host states (a refused
    /// connection, DNS, a socket that could not be made): `reason` is the failure's message,
    /// without `handleOpenFailed`'s guess for a host that cannot tell these from a refusal.
    #[wasm_bindgen(js_name = handleOpenError)]
    pub fn handle_open_error(&mut self, now: f64, reason: JsValue) -> Result<(), JsValue> {
        self.inner.handle_open_error(millis(now), &text(reason, "reason")?);
        Ok(())
    }

    /// A WebSocket text message.
    #[wasm_bindgen(js_name = handleText)]
    pub fn handle_text(&mut self, now: f64, data: JsValue) -> Result<(), JsValue> {
        self.inner.handle_text(millis(now), &text(data, "text")?);
        Ok(())
    }

    /// A WebSocket binary message (read as UTF-8 text; Switch sends none).
    #[wasm_bindgen(js_name = handleBinary)]
    pub fn handle_binary(&mut self, now: f64, bytes: &[u8]) {
        self.inner.handle_binary(millis(now), bytes);
    }

    /// A chunk of the SSE body (transport `sse`), split anywhere.
    #[wasm_bindgen(js_name = handleBytes)]
    pub fn handle_bytes(&mut self, now: f64, chunk: &[u8]) {
        self.inner.handle_bytes(millis(now), chunk);
    }

    /// The socket closed (1006 when it dropped without a close frame), or the stream ended.
    #[wasm_bindgen(js_name = handleClose)]
    pub fn handle_close(&mut self, now: f64, code: JsValue, reason: JsValue) -> Result<(), JsValue> {
        let code = u16_arg(code, "code")?;
        self.inner.handle_close(millis(now), code, &text(reason, "reason")?);
        Ok(())
    }

    /// The answer to the `http` transmit `id`.
    #[wasm_bindgen(js_name = handleHttpResponse)]
    pub fn handle_http_response(&mut self, now: f64, id: f64, status: JsValue, body: JsValue) -> Result<(), JsValue> {
        let status = u16_arg(status, "status")?;
        let body = text(body, "body")?;
        self.inner.handle_http_response(millis(now), call_id(id), status, &body);
        Ok(())
    }

    /// The `http` transmit `id` got no answer (refused, reset, timed out).
    #[wasm_bindgen(js_name = handleHttpFailed)]
    pub fn handle_http_failed(&mut self, now: f64, id: f64, reason: JsValue) -> Result<(), JsValue> {
        let reason = text(reason, "reason")?;
        self.inner.handle_http_failed(millis(now), call_id(id), &reason);
        Ok(())
    }

    #[wasm_bindgen(js_name = handleTimeout)]
    pub fn handle_timeout(&mut self, now: f64) {
        self.inner.handle_timeout(millis(now));
    }

    /// The next thing to do, or `undefined`:
    /// - `{type: "open", wire: "websocket" | "sse", method, path, headers}`: replace the current
    ///   socket or stream with a new one for `path` (and query), adding `Authorization`;
    /// - `{type: "text", text}`: send on the WebSocket (the pong);
    /// - `{type: "http", id, method, path, headers, body?}`: make the call, then
    ///   `handleHttpResponse(id, ..)` or `handleHttpFailed(id, ..)`;
    /// - `{type: "close", code, reason}`: close the socket or stream and report nothing more
    ///   about it.
    ///
    /// `headers` is an object of the protocol's own headers.
    #[wasm_bindgen(js_name = pollTransmit)]
    pub fn poll_transmit(&mut self) -> JsValue {
        self.inner.poll_transmit().map_or(JsValue::UNDEFINED, transmit_to_js)
    }

    /// The next event as JSON text (`{"type": ...}`), or `undefined` (also while a pong waits in
    /// `pollTransmit`: drain both).
    #[wasm_bindgen(js_name = pollEvent)]
    pub fn poll_event(&mut self) -> Option<String> {
        self.inner.poll_event().map(|e| e.to_json_string())
    }

    /// When `handleTimeout` is next due (ms since the epoch), or `undefined`.
    #[wasm_bindgen(js_name = pollTimeout)]
    pub fn poll_timeout(&self) -> Option<f64> {
        self.inner.poll_timeout().map(|t| t as f64)
    }

    /// Closes for good: a `close` transmit (if a socket is open) and a `stopped` event.
    pub fn close(&mut self, now: f64) {
        self.inner.close(millis(now));
    }

    /// Reopens now (an `open` transmit) if the connection waits out its backoff before a reopen
    /// (the network came back); returns whether it did. The attempt count is kept.
    #[wasm_bindgen(js_name = reconnectNow)]
    pub fn reconnect_now(&mut self, now: f64) -> bool {
        self.inner.reconnect_now(millis(now))
    }

    /// `idle`, `opening`, `attaching`, `live`, `backoff` or `stopped`.
    #[wasm_bindgen(getter)]
    pub fn state(&self) -> String {
        self.inner.state().as_str().to_owned()
    }

    /// The transport of the current (or next) open: `websocket` or `sse`.
    #[wasm_bindgen(getter)]
    pub fn wire(&self) -> String {
        self.inner.wire().as_str().to_owned()
    }

    /// The highest sequence handed out (the resume point), or `undefined` before any.
    #[wasm_bindgen(getter)]
    pub fn cursor(&self) -> Option<f64> {
        self.inner.cursor().map(|c| c as f64)
    }

    /// The generation of the last `connection_state` as text, or `undefined`.
    #[wasm_bindgen(getter)]
    pub fn generation(&self) -> Option<String> {
        self.inner.generation().map(ToString::to_string)
    }

    /// The covered rooms as the server last reported them.
    #[wasm_bindgen(getter)]
    pub fn rooms(&self) -> Vec<String> {
        self.inner.rooms().to_vec()
    }

    /// Reconnect attempts since the connection was last stable.
    #[wasm_bindgen(getter)]
    pub fn attempt(&self) -> u32 {
        self.inner.attempt()
    }

    #[wasm_bindgen(getter, js_name = connectionId)]
    pub fn connection_id(&self) -> String {
        self.inner.connection_id().to_owned()
    }

    #[wasm_bindgen(getter, js_name = agentId)]
    pub fn agent_id(&self) -> String {
        self.inner.agent_id().to_owned()
    }
}
