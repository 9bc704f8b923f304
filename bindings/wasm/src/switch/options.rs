//! Switch options as the npm package passes them (JSON, camelCase), mapped onto the engine's
//! [`ConnectionConfig`]. Absent fields keep the engine's defaults; `agentId` is required and
//! `connectionId` defaults to a fresh UUID.

use crate::errors;
use crate::host::JsEntropy;
use agentwire_core::json::fields::{FieldError, Object};
use agentwire_core::json::read;
use agentwire_core::{Entropy, ErrorKind};
use agentwire_switch::open::{Filter, OpenParams, ProtocolRange, Scope, StartFrom};
use agentwire_switch::ops::check_op_timeout_ms;
use agentwire_switch::{ConnectionConfig, Transport};
use wasm_bindgen::JsValue;

/// Each HTTP call's bound unless `opTimeoutMs` says otherwise (the engine's).
pub(crate) const DEFAULT_OP_TIMEOUT_MS: u64 = agentwire_switch::ops::DEFAULT_OP_TIMEOUT_MS;

/// The keys of the options object (camelCase, as the npm package's `SwitchOptions`).
const KEYS: &[&str] = &[
    "agentId",
    "connectionId",
    "rooms",
    "scope",
    "filter",
    "startFrom",
    "expectedGeneration",
    "spawnCapable",
    "protocol",
    "protocolAccepts",
    "client",
    "clientVersion",
    "transport",
    "reconnect",
    "maxReconnectAttempts",
    "connectAttempts",
    "backoff",
    "openTimeoutMs",
    "heartbeatIntervalMs",
    "missedHeartbeats",
    "beatTimeoutMs",
    "streamIdleTimeoutMs",
    "maxQueuedEvents",
    "maxQueuedBytes",
    "maxMessageBytes",
    "maxDepth",
    "opTimeoutMs",
];

/// What a session or a driver is built from.
pub(crate) struct Parsed {
    pub(crate) cfg: ConnectionConfig,
    pub(crate) op_timeout_ms: u64,
}

fn invalid(m: impl Into<String>) -> JsValue {
    errors::local(ErrorKind::Invalid, m)
}

/// The configuration from the options JSON.
pub(crate) fn config(json: &str) -> Result<Parsed, JsValue> {
    read(json).map_err(|e| match e {
        Refusal::Field(e) => invalid(format!("Switch options: {e}")),
        Refusal::Other(m) => invalid(format!("Switch options: {m}")),
    })
}

enum Refusal {
    Field(FieldError),
    Other(String),
}

impl From<FieldError> for Refusal {
    fn from(e: FieldError) -> Self {
        Refusal::Field(e)
    }
}

fn read(json: &str) -> Result<Parsed, Refusal> {
    let tape = read::parse(json, 8).map_err(|e| Refusal::Other(e.to_string()))?;
    let o = Object::strict(tape.root(), KEYS)?;
    let agent_id = o
        .string("agentId")?
        .ok_or_else(|| Refusal::Other("`agentId` is required".into()))?;
    let connection_id = o.string("connectionId")?.unwrap_or_else(|| JsEntropy.uuid_v4());
    let mut open = OpenParams::new(agent_id, connection_id);
    if let Some(rooms) = o.strings("rooms")? {
        open.rooms = rooms;
    }
    if let Some(s) = o.choice("scope", &["single", "all"], "\"single\" or \"all\"")? {
        open.scope = [Scope::Single, Scope::All][s];
    }
    if let Some(f) = o.choice("filter", &["all", "addressed"], "\"all\" or \"addressed\"")? {
        open.filter = [Filter::All, Filter::Addressed][f];
    }
    // `"head"`, a sequence, or a sequence as a string of digits (beyond 2^53).
    open.start_from = match o.get("startFrom") {
        None => StartFrom::Head,
        Some(v) if v.as_str().as_deref() == Some("head") => StartFrom::Head,
        Some(v) => match v.as_u64().or_else(|| agentwire_core::decimal::parse_u64(&v.as_str()?)) {
            Some(n) => StartFrom::After(n),
            None => {
                return Err(Refusal::Other(format!(
                    "`startFrom` must be \"head\" or a sequence (got {})",
                    v.raw()
                )))
            }
        },
    };
    open.expected_generation = match o.get("expectedGeneration") {
        None => None,
        Some(v) => Some(match (v.as_u64(), v.as_str()) {
            (Some(n), _) => n.to_string(),
            (None, Some(t)) => t.into_owned(),
            _ => {
                return Err(Refusal::Other(
                    "`expectedGeneration` must be a string or a whole number ≥ 0".into(),
                ))
            }
        }),
    };
    if let Some(s) = o.bool("spawnCapable")? {
        open.spawn_capable = s;
    }
    open.protocol = match (o.uint("protocol")?, o.uint("protocolAccepts")?) {
        (None, None) => None,
        (Some(speaks), accepts) => Some(ProtocolRange {
            speaks,
            accepts: accepts.unwrap_or(speaks),
        }),
        (None, Some(_)) => return Err(Refusal::Other("`protocolAccepts` needs `protocol`".into())),
    };
    open.client = o.string("client")?;
    open.client_version = o.string("clientVersion")?;

    let mut cfg = ConnectionConfig::new(open);
    let transport = o.choice(
        "transport",
        &["websocket", "sse", "auto"],
        "\"websocket\", \"sse\" or \"auto\"",
    )?;
    // The relay speaks only the WebSocket; `sse` and `auto` are for a server reached directly.
    cfg.transport = match transport {
        None | Some(0) => Transport::WebSocket,
        Some(1) => Transport::Sse,
        Some(_) => Transport::Auto,
    };
    cfg.max_reconnect_attempts = match (o.bool("reconnect")?, o.uint("maxReconnectAttempts")?) {
        (Some(false), Some(_)) => return Err(Refusal::Other("`maxReconnectAttempts` with `reconnect: false`".into())),
        (Some(false), None) => Some(0),
        (_, max) => max,
    };
    // 0: reopen until attached (the caller bounds the wait, `timeoutMs`).
    if let Some(n) = o.uint("connectAttempts")? {
        cfg.set_connect_attempts(n);
    }
    if let Some(b) = o.get("backoff") {
        let b = Object::strict(b, &["baseMs", "maxMs", "factor", "minMs"])
            .map_err(|e| Refusal::Other(format!("`backoff`: {e}")))?;
        let d = &mut cfg.backoff;
        d.base_ms = b.uint("baseMs")?.unwrap_or(d.base_ms);
        d.max_ms = b.uint("maxMs")?.unwrap_or(d.max_ms);
        d.min_ms = b.uint("minMs")?.unwrap_or(d.min_ms);
        // Checked by the engine at `start`.
        d.factor = b.f64("factor")?.unwrap_or(d.factor);
    }
    let set = |slot: &mut u64, v: Option<u64>| {
        if let Some(v) = v {
            *slot = v;
        }
    };
    set(&mut cfg.open_timeout_ms, o.uint("openTimeoutMs")?);
    set(&mut cfg.heartbeat_interval_ms, o.uint("heartbeatIntervalMs")?);
    set(&mut cfg.beat_timeout_ms, o.uint("beatTimeoutMs")?);
    set(&mut cfg.stream_idle_timeout_ms, o.uint("streamIdleTimeoutMs")?);
    if let Some(v) = o.uint("missedHeartbeats")? {
        cfg.missed_heartbeats = v;
    }
    if let Some(v) = o.uint("maxQueuedEvents")? {
        cfg.max_queued_events = v;
    }
    if let Some(v) = o.uint("maxQueuedBytes")? {
        cfg.max_queued_bytes = v;
    }
    if let Some(v) = o.uint("maxMessageBytes")? {
        // A WebSocket message, and an SSE event and line (the engine's one meaning).
        cfg.set_max_message_bytes(crate::socket::frame_bound("maxMessageBytes", v).map_err(Refusal::Other)?);
    }
    if let Some(v) = o.uint("maxDepth")? {
        cfg.decode.max_depth = v;
    }
    let op_timeout_ms = o.uint("opTimeoutMs")?.unwrap_or(DEFAULT_OP_TIMEOUT_MS);
    let op_timeout_ms = check_op_timeout_ms(op_timeout_ms, "`opTimeoutMs`").map_err(|e| Refusal::Other(e.message))?;
    Ok(Parsed { cfg, op_timeout_ms })
}

/// A timeout given by JavaScript (`undefined`: `default`), in whole milliseconds; `Infinity`:
/// the longest the fetch takes (as the other clients' calls, which it leaves unbounded).
pub(crate) fn timeout_ms(ms: Option<f64>, default: u64) -> Result<u64, JsValue> {
    match ms {
        None => Ok(default),
        // Below 1 (a fraction, negative, NaN): 0, which the engine's rule refuses. The number is
        // written as JavaScript writes it (`-Infinity`, `1e-7`; Rust's `{}` says `-inf` and
        // `0.0000001`, and its float formatting is the module's largest function).
        Some(ms) => check_op_timeout_ms(ms as u64, &format!("timeout of {} ms:", errors::js_number(ms)))
            .map_err(|e| invalid(e.message)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use agentwire_switch::sse::SseLimits;

    fn parsed(json: &str) -> ConnectionConfig {
        match read(json) {
            Ok(p) => p.cfg,
            Err(Refusal::Field(e)) => panic!("{e}"),
            Err(Refusal::Other(m)) => panic!("{m}"),
        }
    }

    /// `maxMessageBytes` bounds a frame on either wire, as the component's option and the relay
    /// bridge's do: it set only the decoder's bound, and an SSE event of 1.5 MiB with 2 MiB
    /// was dropped by the parser's 1 MiB line bound.
    #[test]
    fn max_message_bytes_bounds_sse_too() {
        let cfg = parsed(r#"{"agentId":"a","connectionId":"c","maxMessageBytes":2097152}"#);
        assert_eq!(cfg.decode.max_message_bytes, 2 << 20);
        assert_eq!(cfg.sse, SseLimits::for_message(2 << 20));
    }
}
