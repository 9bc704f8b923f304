//! `MoltZapSession`: the sans-IO MoltZap client session for users who bring their own
//! transport. Feed it the socket's events with the time, then drain `pollTransmit`, `pollEvent`
//! and `pollTimeout` until empty.

use super::options::{self, error};
use crate::errors::{opt_text, text, u16_arg};
use crate::outgoing::{self, millis};
use agentwire_core::ErrorKind;
use agentwire_moltzap::{Credentials, Session, SessionState};
use wasm_bindgen::prelude::*;

#[wasm_bindgen]
pub struct MoltZapSession {
    inner: Session,
    /// From the options, for a `connect` without credentials.
    credentials: Option<Credentials>,
}

#[wasm_bindgen]
impl MoltZapSession {
    /// A session with the options JSON (see `MoltZapOptions` in the package's types).
    #[wasm_bindgen(constructor)]
    pub fn new(options: JsValue) -> Result<MoltZapSession, JsValue> {
        let o = options::options(opt_text(options, "options")?)?;
        Ok(MoltZapSession {
            inner: Session::new(o.session),
            credentials: o.credentials,
        })
    }

    /// The socket opened (no subprotocol); `connect` may follow.
    #[wasm_bindgen(js_name = handleOpen)]
    pub fn handle_open(&mut self, now: f64) {
        self.inner.handle_open(millis(now));
    }

    #[wasm_bindgen(js_name = handleText)]
    pub fn handle_text(&mut self, now: f64, data: JsValue) -> Result<(), JsValue> {
        self.inner.handle_text(millis(now), &text(data, "text")?);
        Ok(())
    }

    #[wasm_bindgen(js_name = handleBinary)]
    pub fn handle_binary(&mut self, now: f64, bytes: &[u8]) {
        self.inner.handle_binary(millis(now), bytes);
    }

    /// The transport answered a WebSocket ping (for `pingIntervalMs`: a host that sees pings).
    #[wasm_bindgen(js_name = handlePing)]
    pub fn handle_ping(&mut self, now: f64) {
        self.inner.handle_ping(millis(now));
    }

    /// The socket closed: pending requests fail with `closed`, then `disconnected`.
    #[wasm_bindgen(js_name = handleClose)]
    pub fn handle_close(&mut self, now: f64, code: JsValue, reason: JsValue) -> Result<(), JsValue> {
        let code = u16_arg(code, "code")?;
        self.inner.handle_close(millis(now), code, &text(reason, "reason")?);
        Ok(())
    }

    #[wasm_bindgen(js_name = handleTimeout)]
    pub fn handle_timeout(&mut self, now: f64) {
        self.inner.handle_timeout(millis(now));
    }

    /// The next frame to send, or `undefined`.
    #[wasm_bindgen(js_name = pollTransmit)]
    pub fn poll_transmit(&mut self) -> JsValue {
        self.inner.poll_transmit().map_or(JsValue::UNDEFINED, outgoing::to_js)
    }

    /// The next event as JSON text (`{"type": ...}`), or `undefined`.
    #[wasm_bindgen(js_name = pollEvent)]
    pub fn poll_event(&mut self) -> Option<String> {
        self.inner.poll_event().map(|e| e.to_json_string())
    }

    /// When `handleTimeout` is next due (ms since the epoch), or `undefined`.
    #[wasm_bindgen(js_name = pollTimeout)]
    pub fn poll_timeout(&self) -> Option<f64> {
        self.inner.poll_timeout().map(|t| t as f64)
    }

    /// Authenticates with `credentials` (`{"agentKey": …}` or `{"sessionToken": …}` JSON, or an
    /// agent key), else with those of the options; returns the request id that `connected` or
    /// `connectFailed` carries.
    pub fn connect(&mut self, now: f64, credentials: JsValue) -> Result<String, JsValue> {
        let credentials = match opt_text(credentials, "credentials")?.as_deref() {
            Some(text) => options::credentials(text)?,
            None => self.credentials.clone().ok_or_else(|| {
                crate::errors::local(ErrorKind::Invalid, "no credentials: give agentKey or sessionToken")
            })?,
        };
        self.inner.connect(millis(now), credentials).map_err(|e| error(&e))
    }

    /// Sends `method` with `params` (JSON text: an object or an array); returns its id, which
    /// `response` or `failed` carries. `timeoutMs` overrides `requestTimeoutMs`.
    pub fn call(
        &mut self,
        now: f64,
        method: JsValue,
        params: JsValue,
        timeout_ms: Option<f64>,
    ) -> Result<String, JsValue> {
        let (method, params) = (text(method, "method")?, opt_text(params, "params")?);
        let (now, params) = (millis(now), params.as_deref());
        match timeout_ms {
            None => self.inner.call(now, &method, params),
            Some(ms) => self
                .inner
                .call_with_timeout(now, &method, params, options::timeout_ms(ms)?),
        }
        .map_err(|e| error(&e))
    }

    /// Ends a request (`failed` with kind `cancelled`) or the connect (`connectFailed`); false
    /// when it is not pending.
    pub fn cancel(&mut self, id: JsValue) -> bool {
        id.as_string().is_some_and(|id| self.inner.cancel(&id))
    }

    /// Queues a close frame: pending requests fail with `closed`, then `disconnected`.
    pub fn close(&mut self, code: JsValue, reason: JsValue) -> Result<(), JsValue> {
        let code = u16_arg(code, "code")?;
        self.inner.close(code, &text(reason, "reason")?);
        Ok(())
    }

    /// `closed`, `open`, `connecting` or `ready`.
    #[wasm_bindgen(getter)]
    pub fn state(&self) -> String {
        match self.inner.state() {
            SessionState::Closed => "closed",
            SessionState::Open => "open",
            SessionState::Connecting => "connecting",
            SessionState::Ready => "ready",
        }
        .to_string()
    }

    /// The generation spoken now: `current` or `released` (`auto` settles at the connect).
    #[wasm_bindgen(getter)]
    pub fn generation(&self) -> String {
        self.inner.generation().as_str().to_string()
    }
}
