//! MoltZap options as the npm package passes them (JSON, camelCase), mapped onto the engine's
//! configuration, and the credentials. Absent fields keep the engine's defaults.

use crate::errors;
use agentwire_core::json::fields::{FieldError, Object};
use agentwire_core::json::read;
use agentwire_core::ErrorKind;
use agentwire_moltzap::{Credentials, GenerationChoice, MoltZapError, SessionConfig};
use wasm_bindgen::JsValue;

/// `agentKey` (both generations) or `sessionToken` (released), at most one.
#[derive(Default)]
struct Secret {
    agent_key: Option<String>,
    session_token: Option<String>,
}

impl Secret {
    fn credentials(self) -> Result<Option<Credentials>, JsValue> {
        match (self.agent_key, self.session_token) {
            (Some(_), Some(_)) => Err(invalid("MoltZap credentials: give agentKey or sessionToken, not both")),
            (Some(k), None) => Ok(Some(Credentials::AgentKey(k))),
            (None, Some(t)) => Ok(Some(Credentials::SessionToken(t))),
            (None, None) => Ok(None),
        }
    }
}

/// The options: the session's configuration and the credentials, if given.
pub(crate) struct Options {
    pub(crate) session: SessionConfig,
    pub(crate) credentials: Option<Credentials>,
}

fn invalid(m: impl Into<String>) -> JsValue {
    errors::local(ErrorKind::Invalid, m)
}

/// The options JSON (`None` or `""`: the defaults, no credentials).
pub(crate) fn options(json: Option<String>) -> Result<Options, JsValue> {
    let mut cfg = SessionConfig::default();
    let Some(text) = json.as_deref().filter(|t| !t.is_empty()) else {
        return Ok(Options {
            session: cfg,
            credentials: None,
        });
    };
    let tape = read::parse(text, 8).map_err(|e| invalid(format!("MoltZap options: {e}")))?;
    let mut read = || -> Result<Secret, FieldError> {
        let c = Object::strict(
            tape.root(),
            &[
                "agentKey",
                "sessionToken",
                "generation",
                "requestTimeoutMs",
                "maxInFlight",
                "handshakeTimeoutMs",
                "pingIntervalMs",
                "idleProbeMs",
                "idPrefix",
                "maxMessageBytes",
                "maxSendBytes",
            ],
        )?;
        fn set<T>(slot: &mut T, v: Option<T>) {
            if let Some(v) = v {
                *slot = v;
            }
        }
        set(&mut cfg.request_timeout_ms, c.uint("requestTimeoutMs")?);
        set(&mut cfg.max_in_flight, c.uint("maxInFlight")?);
        set(&mut cfg.handshake_timeout_ms, c.uint("handshakeTimeoutMs")?);
        set(&mut cfg.idle_probe_ms, c.uint("idleProbeMs")?);
        set(&mut cfg.id_prefix, c.string("idPrefix")?);
        set(&mut cfg.decode.max_message_bytes, c.uint("maxMessageBytes")?);
        set(&mut cfg.max_send_bytes, c.uint("maxSendBytes")?);
        const GENERATIONS: [GenerationChoice; 3] = [
            GenerationChoice::Current,
            GenerationChoice::Released,
            GenerationChoice::Auto,
        ];
        let g = c.choice(
            "generation",
            &["current", "released", "auto"],
            "\"current\", \"released\" or \"auto\"",
        )?;
        set(&mut cfg.generation, g.map(|i| GENERATIONS[i]));
        cfg.ping_interval_ms = c.uint("pingIntervalMs")?;
        Ok(Secret {
            agent_key: c.string("agentKey")?,
            session_token: c.string("sessionToken")?,
        })
    };
    let secret = read().map_err(|e| invalid(format!("MoltZap options: {e}")))?;
    crate::socket::frame_bound("maxMessageBytes", cfg.decode.max_message_bytes)
        .map_err(|e| invalid(format!("MoltZap options: {e}")))?;
    Ok(Options {
        session: cfg,
        credentials: secret.credentials()?,
    })
}

/// Credentials as `connect` takes them: `{"agentKey": …}` / `{"sessionToken": …}` JSON, or a
/// bare agent key (`moltzap_agent_…`, never starting with `{`).
pub(crate) fn credentials(text: &str) -> Result<Credentials, JsValue> {
    if !text.trim_start().starts_with('{') {
        return Ok(Credentials::AgentKey(text.to_string()));
    }
    let tape = read::parse(text, 8).map_err(|e| invalid(format!("credentials: {e}")))?;
    let secret = (|| -> Result<Secret, FieldError> {
        let o = Object::strict(tape.root(), &["agentKey", "sessionToken"])?;
        Ok(Secret {
            agent_key: o.string("agentKey")?,
            session_token: o.string("sessionToken")?,
        })
    })()
    .map_err(|e| invalid(format!("credentials: {e}")))?;
    secret
        .credentials()?
        .ok_or_else(|| invalid("credentials: give agentKey or sessionToken"))
}

/// A JavaScript timeout (ms) as the engine's; refused when negative or NaN (`Infinity`: none).
pub(crate) fn timeout_ms(ms: f64) -> Result<u64, JsValue> {
    if ms.is_nan() || ms < 0.0 {
        return Err(invalid(format!(
            "timeoutMs must be a number ≥ 0, not {}",
            errors::js_number(ms)
        )));
    }
    Ok(ms as u64)
}

/// An engine error as a JavaScript error (`{kind, code?, message, retryable, name?, tag?, data?,
/// requestId?}`).
pub(crate) fn error(e: &MoltZapError) -> JsValue {
    // An error is strings, numbers, booleans and JSON checked as it is embedded: it serializes.
    errors::to_js(&serde_json::to_string(e).unwrap_or_default())
}
