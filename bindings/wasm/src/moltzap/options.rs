//! MoltZap options as the npm package passes them (JSON, camelCase), mapped onto the engine's
//! configuration, and the credentials. Absent fields keep the engine's defaults.

use crate::errors;
use agentwire_core::ErrorKind;
use agentwire_moltzap::{Credentials, GenerationChoice, MoltZapError, SessionConfig};
use serde::Deserialize;
use serde_json::Value;
use wasm_bindgen::JsValue;

#[derive(Deserialize, Clone, Copy)]
#[serde(rename_all = "lowercase")]
enum Generation {
    Current,
    Released,
    Auto,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct Config {
    generation: Option<Generation>,
    request_timeout_ms: Option<u64>,
    max_in_flight: Option<usize>,
    handshake_timeout_ms: Option<u64>,
    ping_interval_ms: Option<u64>,
    id_prefix: Option<String>,
}

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
    // The credential keys are taken out first (`null` counts as absent), then the rest is read
    // strictly: serde's `flatten` and `deny_unknown_fields` do not combine.
    let (secret, c) = match json.as_deref() {
        None | Some("") => (Secret::default(), Config::default()),
        Some(text) => {
            let mut v: Value = serde_json::from_str(text).map_err(|e| invalid(format!("MoltZap options: {e}")))?;
            let Some(o) = v.as_object_mut() else {
                return Err(invalid("MoltZap options: not a JSON object"));
            };
            let mut secret = Secret::default();
            for (key, slot) in [
                ("agentKey", &mut secret.agent_key),
                ("sessionToken", &mut secret.session_token),
            ] {
                match o.remove(key) {
                    None | Some(Value::Null) => {}
                    Some(Value::String(s)) => *slot = Some(s),
                    Some(_) => return Err(invalid(format!("MoltZap options: {key} must be a string"))),
                }
            }
            let c = serde_json::from_value(v).map_err(|e| invalid(format!("MoltZap options: {e}")))?;
            (secret, c)
        }
    };
    let mut cfg = SessionConfig::default();
    macro_rules! take {
        ($($field:ident),*) => {$( if let Some(v) = c.$field { cfg.$field = v; } )*};
    }
    take!(request_timeout_ms, max_in_flight, handshake_timeout_ms, id_prefix);
    if let Some(g) = c.generation {
        cfg.generation = match g {
            Generation::Current => GenerationChoice::Current,
            Generation::Released => GenerationChoice::Released,
            Generation::Auto => GenerationChoice::Auto,
        };
    }
    cfg.ping_interval_ms = c.ping_interval_ms;
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
    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase", deny_unknown_fields)]
    struct Only {
        agent_key: Option<String>,
        session_token: Option<String>,
    }
    let o: Only = serde_json::from_str(text).map_err(|e| invalid(format!("credentials: {e}")))?;
    let secret = Secret {
        agent_key: o.agent_key,
        session_token: o.session_token,
    };
    secret
        .credentials()?
        .ok_or_else(|| invalid("credentials: give agentKey or sessionToken"))
}

/// A JavaScript timeout (ms) as the engine's; refused when negative or NaN (`Infinity`: none).
pub(crate) fn timeout_ms(ms: f64) -> Result<u64, JsValue> {
    if ms.is_nan() || ms < 0.0 {
        return Err(invalid(format!("timeoutMs must be a number ≥ 0, not {ms}")));
    }
    Ok(ms as u64)
}

/// A JSON argument given as text: `None` or `""` is none.
pub(crate) fn json_arg(json: &Option<String>) -> Option<&str> {
    json.as_deref().filter(|t| !t.is_empty())
}

/// An engine error as a JavaScript error (`{kind, code?, message, retryable, name?, tag?, data?,
/// request_id?}`).
pub(crate) fn error(e: &MoltZapError) -> JsValue {
    let json = serde_json::to_value(e).unwrap_or_else(
        |_| serde_json::json!({"kind": e.kind().as_str(), "message": e.error.message, "retryable": e.error.retryable}),
    );
    errors::to_js(&json)
}
