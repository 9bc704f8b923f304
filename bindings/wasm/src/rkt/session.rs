//! `RktSession`: the sans-IO RKT client session for users who bring their own transport. Feed
//! it the socket's events with the time, then drain `pollTransmit`, `pollEvent` and
//! `pollTimeout` until empty.

use super::options;
use crate::errors::{self, opt_text, text, u16_arg};
use crate::host::JsEntropy;
use crate::outgoing::{self, millis};
use agentwire_rkt::json::error_json;
use agentwire_rkt::{ClientSession, RktError};
use wasm_bindgen::prelude::*;

#[wasm_bindgen]
pub struct RktSession {
    inner: ClientSession,
}

fn err(e: RktError) -> JsValue {
    errors::to_js(&error_json(&e).to_string())
}

#[wasm_bindgen]
impl RktSession {
    /// A session with the options JSON (see `RktOptions` in the package's types).
    #[wasm_bindgen(constructor)]
    pub fn new(options: JsValue) -> Result<RktSession, JsValue> {
        Ok(RktSession {
            inner: ClientSession::new(options::config(opt_text(options, "options")?)?, Box::new(JsEntropy)),
        })
    }

    /// The socket opened (subprotocol `rkt.1.0`): queues HELLO.
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
        self.inner.poll_event().map(|e| e.to_json().to_string())
    }

    /// When `handleTimeout` is next due (ms since the epoch), or `undefined`.
    #[wasm_bindgen(js_name = pollTimeout)]
    pub fn poll_timeout(&self) -> Option<f64> {
        self.inner.poll_timeout().map(|t| t as f64)
    }

    /// REQUEST `intent` with `params` (JSON text); returns its id.
    pub fn request(
        &mut self,
        now: f64,
        intent: JsValue,
        params: JsValue,
        options: JsValue,
        stream: bool,
    ) -> Result<String, JsValue> {
        let intent = text(intent, "intent")?;
        let max = self.inner.max_message_size();
        let params = options::json_arg("params", opt_text(params, "params")?, max)?;
        let opts = options::request(opt_text(options, "options")?, stream, max)?;
        self.inner.request(millis(now), &intent, params, opts).map_err(err)
    }

    pub fn discover(&mut self, now: f64) -> Result<String, JsValue> {
        self.inner.discover(millis(now)).map_err(err)
    }

    #[wasm_bindgen(js_name = memorySet)]
    pub fn memory_set(
        &mut self,
        now: f64,
        key: JsValue,
        value: JsValue,
        namespace: JsValue,
        ttl_s: Option<f64>,
    ) -> Result<String, JsValue> {
        let (key, namespace) = (text(key, "key")?, opt_text(namespace, "namespace")?);
        let max = self.inner.max_message_size();
        let value = options::json_arg("value", Some(text(value, "value")?), max)?.unwrap_or_default();
        let ttl = options::ttl_s(ttl_s)?;
        self.inner
            .memory_set(millis(now), &key, value, namespace.as_deref(), ttl)
            .map_err(err)
    }

    #[wasm_bindgen(js_name = memoryGet)]
    pub fn memory_get(&mut self, now: f64, key: JsValue, namespace: JsValue) -> Result<String, JsValue> {
        let (key, namespace) = (text(key, "key")?, opt_text(namespace, "namespace")?);
        self.inner
            .memory_get(millis(now), &key, namespace.as_deref())
            .map_err(err)
    }

    pub fn ping(&mut self, now: f64) -> Result<String, JsValue> {
        self.inner.ping(millis(now)).map_err(err)
    }

    /// Ends a command early (`failed` with kind `cancelled`); false when it is not pending (or
    /// `id` is not a string).
    pub fn cancel(&mut self, id: JsValue) -> bool {
        id.as_string().is_some_and(|id| self.inner.cancel(&id))
    }

    /// GOODBYE and a close frame.
    pub fn goodbye(&mut self, now: f64) {
        self.inner.goodbye(millis(now));
    }
}
