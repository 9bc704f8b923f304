//! The Worker's view of `agentwire-relay`: every decision the relay makes is made here, by the
//! engine, and the Worker's JavaScript (`worker-relay/src/`) only performs it (sockets, `fetch`,
//! timers). Values cross as JSON text.
//!
//! - [`RelayCore`]: the configuration and the per-agent rate limits of one isolate; `route`
//!   returns the [`Decision`](agentwire_relay::route::Decision) for a request.
//! - [`BridgeCore`]: one SSE bridge (a browser socket over a released upstream).
//! - [`forward_close`], [`close_reason`], [`upgrade_refused`] (`forwardClose`, `closeReason`,
//!   `upgradeRefused` in JavaScript): close codes and refused upgrades; [`upstream_answer`]
//!   (`upstreamAnswer`): what an HTTP call's upstream answer becomes.

mod bridge;

pub use bridge::BridgeCore;

use agentwire_relay::config::{Config, SETTINGS};
use agentwire_relay::redact::Redactor;
use agentwire_relay::route::{self, Relay, Request};
use wasm_bindgen::prelude::*;

/// A time from JavaScript (ms since the epoch, a `number`) as the engine's.
pub(crate) use agentwire_core::millis_from_f64 as millis;

/// The names of the settings, for the Worker to read from `env`.
#[wasm_bindgen(js_name = settingNames)]
pub fn setting_names() -> Vec<String> {
    SETTINGS.iter().map(|s| s.to_string()).collect()
}

/// The relay of one isolate.
#[wasm_bindgen]
pub struct RelayCore {
    relay: Relay,
    keys: Redactor,
    sockets: u32,
}

#[wasm_bindgen]
impl RelayCore {
    /// Reads the settings from `env_json` (`{NAME: string}`); throws an `Error` naming the bad
    /// setting (never its value).
    #[wasm_bindgen(constructor)]
    pub fn new(env_json: &str) -> Result<RelayCore, JsError> {
        let env: std::collections::BTreeMap<String, serde_json::Value> =
            serde_json::from_str(env_json).map_err(|_| JsError::new("relay settings: not a JSON object"))?;
        let get = |name: &str| match env.get(name) {
            Some(serde_json::Value::String(s)) => Some(s.clone()),
            Some(serde_json::Value::Number(n)) => Some(n.to_string()),
            Some(serde_json::Value::Bool(b)) => Some(b.to_string()),
            _ => None,
        };
        let cfg = Config::from_env(get).map_err(|e| JsError::new(&e.to_string()))?;
        let keys = Redactor::new(cfg.keys());
        Ok(RelayCore {
            relay: Relay::new(cfg),
            keys,
            sockets: 0,
        })
    }

    /// The decision for one request, as JSON (`{"action": "respond"|"refuse"|"proxy"|"connect",
    /// ...}`). `headers_json` is `[[name, value], ...]`.
    pub fn route(&mut self, method: &str, url: &str, headers_json: &str, body: Option<String>, now: f64) -> String {
        let headers: Vec<(String, String)> = serde_json::from_str(headers_json).unwrap_or_default();
        let req = Request {
            method,
            url,
            headers: &headers,
            body: body.as_deref(),
        };
        let decision = self.relay.route(&req, millis(now));
        serde_json::to_string(&decision).unwrap_or_default()
    }

    /// The CORS headers of an answer to a request with `Origin: origin` (`undefined`: none), as
    /// JSON `[[name, value], ...]`: those of an allowed origin, `Vary: Origin` alone otherwise.
    /// For the Worker's own answers (a body over `maxBodyBytes`, a failure), which have them as
    /// the route's answers do.
    pub fn cors(&self, origin: Option<String>) -> String {
        serde_json::to_string(&self.relay.cors(origin.as_deref())).unwrap_or_default()
    }

    /// The upstream refused a WebSocket upgrade in a way that means it has none.
    #[wasm_bindgen(js_name = learnReleased)]
    pub fn learn_released(&mut self, now: f64) {
        self.relay.learn_released(millis(now));
    }

    /// A number for a new socket, for `takeFrames` and `forgetSocket`.
    #[wasm_bindgen(js_name = newSocket)]
    pub fn new_socket(&mut self) -> u32 {
        self.sockets = self.sockets.wrapping_add(1);
        self.sockets
    }

    /// Takes `frameBatch` frames' worth of `socket`'s limit: call it once per `frameBatch`
    /// frames the browser sends.
    #[wasm_bindgen(js_name = takeFrames)]
    pub fn take_frames(&mut self, socket: u32, now: f64) -> bool {
        self.relay.take_frames(socket, millis(now)).is_ok()
    }

    /// How many frames one `takeFrames` counts.
    #[wasm_bindgen(getter, js_name = frameBatch)]
    pub fn frame_batch(&self) -> u32 {
        route::FRAME_BATCH
    }

    /// `socket` ended.
    #[wasm_bindgen(js_name = forgetSocket)]
    pub fn forget_socket(&mut self, socket: u32) {
        self.relay.forget_socket(socket);
    }

    #[wasm_bindgen(getter, js_name = maxMessageBytes)]
    pub fn max_message_bytes(&self) -> usize {
        self.relay.config().max_message_bytes
    }

    #[wasm_bindgen(getter, js_name = maxBodyBytes)]
    pub fn max_body_bytes(&self) -> usize {
        self.relay.config().max_body_bytes
    }

    /// `text` with every agent key replaced by `[key]`: for any text the relay did not write
    /// itself (an upstream error, an exception) before it goes to a log line or a browser.
    pub fn redact(&self, text: &str) -> String {
        self.keys.redact(text)
    }

    /// At most `max` bytes of `text` with no agent key in it, not even in part: `text` is what
    /// was read of an upstream's body, `redactMargin` bytes past `max`, and `complete` says
    /// whether that was all of it. Every key is replaced, then the text is cut, then a tail
    /// that starts a key is taken out (`agentwire_relay::redact`).
    #[wasm_bindgen(js_name = redactCut)]
    pub fn redact_cut(&self, text: &str, max: usize, complete: bool) -> String {
        self.keys.redact_cut(text, max, complete)
    }

    /// What the browser gets for the upstream socket's close with `code` and `reason`, as JSON
    /// `{code, reason, keyRefused}`: the code through the close table, and the upstream's reason
    /// with no key in it, not even the start of one its stack cut at 123 bytes (a reason under
    /// 120 bytes was not cut: a cut at a character boundary loses at most 3); for the upstream's
    /// 4401 (the relay's own key refused) 1011 with the relay's reason instead
    /// (`agentwire_relay::close::from_upstream`).
    #[wasm_bindgen(js_name = upstreamClose)]
    pub fn upstream_close(&self, code: Option<u16>, reason: &str) -> String {
        use agentwire_relay::close;
        let (code, key_refused) = close::from_upstream(code);
        let reason = if key_refused {
            close::KEY_REFUSED_REASON.to_owned()
        } else {
            self.keys.redact_cut(reason, close::MAX_REASON, reason.len() < 120)
        };
        serde_json::json!({ "code": code, "reason": reason, "keyRefused": key_refused }).to_string()
    }

    /// Bytes to read past a bound before [`redact_cut`](Self::redact_cut): the longest key.
    #[wasm_bindgen(getter, js_name = redactMargin)]
    pub fn redact_margin(&self) -> usize {
        self.keys.margin()
    }
}

/// The close code to send on the other side for one received (`undefined`: none).
#[wasm_bindgen(js_name = forwardClose)]
pub fn forward_close(code: Option<u16>) -> u16 {
    agentwire_relay::close::forward(code)
}

/// How long a refused stream open's body is read, in milliseconds, before the bridge core gets
/// what came of it (`agentwire_core::http::REFUSAL_BODY_WAIT_MS`, what every driver waits): a
/// refusal whose body trickles or never ends is its status, not the open's timeout.
#[wasm_bindgen(js_name = refusalBodyWaitMs)]
pub fn refusal_body_wait_ms() -> f64 {
    agentwire_core::http::REFUSAL_BODY_WAIT_MS as f64
}

/// A close reason cut to what a close frame carries.
#[wasm_bindgen(js_name = closeReason)]
pub fn close_reason(reason: &str) -> String {
    agentwire_relay::close::reason(reason).to_owned()
}

/// What a refused upstream upgrade with `status` means: `{"then":"bridge"}` or
/// `{"then":"close","code":N}` (with `"keyRefused":true` for a 401: the relay's key refused).
#[wasm_bindgen(js_name = upgradeRefused)]
pub fn upgrade_refused(status: u16) -> String {
    serde_json::to_string(&route::upgrade_refused(status)).unwrap_or_default()
}

/// What the browser gets for the upstream's answer with `status` to an HTTP call:
/// `{"then":"pass"}` or `{"then":"replace","status":N,"body":"…"}` (with `"keyRefused":true`
/// for a 401: the relay's key refused). The body's `code` says the upstream did answer
/// (`route::upstream_answer`).
#[wasm_bindgen(js_name = upstreamAnswer)]
pub fn upstream_answer(status: u16) -> String {
    serde_json::to_string(&route::upstream_answer(status)).unwrap_or_default()
}

/// Close codes the relay itself uses: `{tooBig, tryAgainLater, policy, fallback,
/// tokenExpired, keyRefused}`, and `tokenExpiredReason`, `keyRefusedReason`,
/// `upstreamTimeoutReason`, `upstreamUnreachableReason`.
#[wasm_bindgen(js_name = closeCodes)]
pub fn close_codes() -> String {
    use agentwire_relay::close::*;
    serde_json::json!({
        "tooBig": TOO_BIG,
        "tryAgainLater": TRY_AGAIN_LATER,
        "policy": POLICY,
        "fallback": FALLBACK,
        "tokenExpired": TOKEN_EXPIRED,
        "tokenExpiredReason": TOKEN_EXPIRED_REASON,
        "keyRefused": KEY_REFUSED,
        "keyRefusedReason": KEY_REFUSED_REASON,
        "upstreamTimeoutReason": UPSTREAM_TIMEOUT_REASON,
        "upstreamUnreachableReason": UPSTREAM_UNREACHABLE_REASON,
    })
    .to_string()
}
