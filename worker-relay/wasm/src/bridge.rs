//! [`BridgeCore`]: one SSE bridge (`agentwire_relay::bridge::Bridge`) for the Worker's
//! `src/bridge.js`, which reads the upstream stream, sends the beats and runs the timer.

use crate::millis;
use agentwire_relay::bridge::{Bridge, BridgeConfig, Output};
use serde::{Deserialize, Serialize};
use wasm_bindgen::prelude::*;

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Options {
    agent_id: String,
    connection_id: String,
    ping_interval_ms: Option<u64>,
    max_frame_bytes: Option<usize>,
    open_timeout_ms: Option<u64>,
    beat_timeout_ms: Option<u64>,
    max_unacked_bytes: Option<usize>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
enum Out<'a> {
    ToClient(&'a str),
    Beat {
        method: &'static str,
        path: &'a str,
        headers: Vec<(&'static str, &'a str)>,
        body: Option<&'a str>,
    },
    Close {
        code: u16,
        reason: &'a str,
        /// No `connection_state` within the open's timeout (`Bridge::open_timed_out`).
        #[serde(rename = "timedOut", skip_serializing_if = "std::ops::Not::not")]
        timed_out: bool,
    },
}

/// One bridged browser socket.
#[wasm_bindgen]
pub struct BridgeCore {
    bridge: Bridge,
}

#[wasm_bindgen]
impl BridgeCore {
    /// `options_json`: `{agentId, connectionId, pingIntervalMs?, maxFrameBytes?, openTimeoutMs?,
    /// beatTimeoutMs?, maxUnackedBytes?}`. The Worker passes `UPSTREAM_TIMEOUT_MS` as both timeouts, and its beat
    /// `fetch` has no timeout of its own: the bridge's is the one bound on a beat.
    #[wasm_bindgen(constructor)]
    pub fn new(options_json: &str, now: f64) -> Result<BridgeCore, JsError> {
        let o: Options =
            serde_json::from_str(options_json).map_err(|e| JsError::new(&format!("bridge options: {e}")))?;
        let mut cfg = BridgeConfig::new(o.agent_id, o.connection_id);
        if let Some(p) = o.ping_interval_ms {
            cfg.ping_interval_ms = p;
        }
        if let Some(m) = o.max_frame_bytes {
            cfg.set_max_frame_bytes(m);
        }
        if let Some(t) = o.open_timeout_ms {
            cfg.open_timeout_ms = t;
        }
        if let Some(t) = o.beat_timeout_ms {
            cfg.beat_timeout_ms = t;
        }
        if let Some(m) = o.max_unacked_bytes {
            cfg.max_unacked_bytes = m;
        }
        Ok(BridgeCore {
            bridge: Bridge::new(cfg, millis(now)),
        })
    }

    #[wasm_bindgen(js_name = handleOpenResponse)]
    pub fn handle_open_response(&mut self, now: f64, status: u16, content_type: Option<String>, body: &str) {
        self.bridge
            .handle_open_response(millis(now), status, content_type.as_deref(), body);
    }

    #[wasm_bindgen(js_name = handleSse)]
    pub fn handle_sse(&mut self, now: f64, chunk: &[u8]) {
        self.bridge.handle_sse(millis(now), chunk);
    }

    #[wasm_bindgen(js_name = handleSseEnd)]
    pub fn handle_sse_end(&mut self, now: f64, error: Option<String>) {
        self.bridge.handle_sse_end(millis(now), error.as_deref());
    }

    #[wasm_bindgen(js_name = handleClientText)]
    pub fn handle_client_text(&mut self, now: f64, text: &str) {
        self.bridge.handle_client_text(millis(now), text);
    }

    #[wasm_bindgen(js_name = handleClientClose)]
    pub fn handle_client_close(&mut self, now: f64) {
        self.bridge.handle_client_close(millis(now));
    }

    /// The answer to the last beat (`status` 0: it failed).
    #[wasm_bindgen(js_name = handleBeatResponse)]
    pub fn handle_beat_response(&mut self, now: f64, status: u16, body: &str) {
        self.bridge.handle_beat_response(millis(now), status, body);
    }

    #[wasm_bindgen(js_name = handleTimeout)]
    pub fn handle_timeout(&mut self, now: f64) {
        self.bridge.handle_timeout(millis(now));
    }

    /// The next output as JSON (`{"toClient": text}`, `{"beat": {method, path, headers, body}}`,
    /// `{"close": {code, reason, timedOut?}}`: `timedOut` when no `connection_state` came within
    /// the open's timeout), or `undefined`.
    #[wasm_bindgen(js_name = pollOutput)]
    pub fn poll_output(&mut self) -> Option<String> {
        let out = self.bridge.poll_output()?;
        let json = match &out {
            Output::ToClient(text) => serde_json::to_string(&Out::ToClient(text)),
            Output::Beat(req) => serde_json::to_string(&Out::Beat {
                method: req.method.as_str(),
                path: &req.path,
                headers: req.headers.iter().map(|(n, v)| (*n, v.as_str())).collect(),
                body: req.body.as_deref(),
            }),
            Output::Close { code, reason } => serde_json::to_string(&Out::Close {
                code: *code,
                reason,
                timed_out: self.bridge.open_timed_out(),
            }),
        };
        json.ok()
    }

    /// When to call `handleTimeout` (ms since the epoch), or `undefined`.
    #[wasm_bindgen(js_name = pollTimeout)]
    pub fn poll_timeout(&self) -> Option<f64> {
        self.bridge.poll_timeout().map(|t| t as f64)
    }

    /// Whether to read more of the upstream stream: false while the browser is
    /// `maxUnackedBytes` behind (until a pong acknowledges enough), and once closed.
    #[wasm_bindgen(getter, js_name = wantsSse)]
    pub fn wants_sse(&self) -> bool {
        self.bridge.wants_sse()
    }
}
