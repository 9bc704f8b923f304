//! Switch options as the npm package passes them (JSON, camelCase), mapped onto the engine's
//! [`ConnectionConfig`]. Absent fields keep the engine's defaults; `agentId` is required and
//! `connectionId` defaults to a fresh UUID.

use crate::errors;
use crate::host::JsEntropy;
use agentwire_core::{Entropy, ErrorKind};
use agentwire_switch::open::{Filter, OpenParams, ProtocolRange, Scope, StartFrom};
use agentwire_switch::{ConnectionConfig, Transport};
use serde::Deserialize;
use wasm_bindgen::JsValue;

/// Each HTTP call's bound unless `opTimeoutMs` says otherwise (the native driver's
/// `DEFAULT_OP_TIMEOUT`).
pub(crate) const DEFAULT_OP_TIMEOUT_MS: u64 = 30_000;

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct Options {
    agent_id: Option<String>,
    connection_id: Option<String>,
    rooms: Option<Vec<String>>,
    scope: Option<ScopeOpt>,
    filter: Option<FilterOpt>,
    start_from: Option<Position>,
    expected_generation: Option<Generation>,
    spawn_capable: Option<bool>,
    protocol: Option<u32>,
    protocol_accepts: Option<u32>,
    client: Option<String>,
    client_version: Option<String>,
    transport: Option<TransportOpt>,
    /// `false`: stop at the first disconnect (`maxReconnectAttempts: 0`).
    reconnect: Option<bool>,
    max_reconnect_attempts: Option<u32>,
    backoff: Option<BackoffOpt>,
    open_timeout_ms: Option<u64>,
    heartbeat_interval_ms: Option<u64>,
    missed_heartbeats: Option<u32>,
    beat_timeout_ms: Option<u64>,
    stream_idle_timeout_ms: Option<u64>,
    max_queued_events: Option<usize>,
    max_message_bytes: Option<usize>,
    max_depth: Option<usize>,
    op_timeout_ms: Option<u64>,
}

#[derive(Deserialize)]
#[serde(rename_all = "lowercase")]
enum ScopeOpt {
    Single,
    All,
}

#[derive(Deserialize)]
#[serde(rename_all = "lowercase")]
enum FilterOpt {
    All,
    Addressed,
}

#[derive(Deserialize)]
#[serde(rename_all = "lowercase")]
enum TransportOpt {
    Websocket,
    Sse,
    Auto,
}

/// `"head"`, a sequence, or a sequence as a string of digits (beyond 2^53).
#[derive(Deserialize)]
#[serde(untagged)]
enum Position {
    Number(u64),
    Text(String),
}

#[derive(Deserialize)]
#[serde(untagged)]
enum Generation {
    Number(u64),
    Text(String),
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct BackoffOpt {
    base_ms: Option<u64>,
    max_ms: Option<u64>,
    factor: Option<f64>,
    min_ms: Option<u64>,
}

/// What a session or a driver is built from.
pub(crate) struct Parsed {
    pub(crate) cfg: ConnectionConfig,
    pub(crate) op_timeout_ms: u64,
}

fn invalid(m: impl Into<String>) -> JsValue {
    errors::local(ErrorKind::Invalid, m)
}

/// The configuration from the options JSON. `websocket_only`: the driver (it talks to the
/// relay, which always speaks the WebSocket), where another `transport` is an error.
pub(crate) fn config(json: &str, websocket_only: bool) -> Result<Parsed, JsValue> {
    let o: Options = serde_json::from_str(json).map_err(|e| invalid(format!("Switch options: {e}")))?;
    let agent_id = o
        .agent_id
        .ok_or_else(|| invalid("Switch options: `agentId` is required"))?;
    let connection_id = o.connection_id.unwrap_or_else(|| JsEntropy.uuid_v4());
    let mut open = OpenParams::new(agent_id, connection_id);
    if let Some(rooms) = o.rooms {
        open.rooms = rooms;
    }
    if let Some(s) = o.scope {
        open.scope = match s {
            ScopeOpt::Single => Scope::Single,
            ScopeOpt::All => Scope::All,
        };
    }
    if let Some(f) = o.filter {
        open.filter = match f {
            FilterOpt::All => Filter::All,
            FilterOpt::Addressed => Filter::Addressed,
        };
    }
    open.start_from = match o.start_from {
        None => StartFrom::Head,
        Some(Position::Number(n)) => StartFrom::After(n),
        Some(Position::Text(t)) if t == "head" => StartFrom::Head,
        Some(Position::Text(t)) => StartFrom::After(t.parse().map_err(|_| {
            invalid(format!(
                "Switch options: `startFrom` must be \"head\" or a sequence (got {t:?})"
            ))
        })?),
    };
    open.expected_generation = o.expected_generation.map(|g| match g {
        Generation::Number(n) => n.to_string(),
        Generation::Text(t) => t,
    });
    if let Some(s) = o.spawn_capable {
        open.spawn_capable = s;
    }
    open.protocol = match (o.protocol, o.protocol_accepts) {
        (None, None) => None,
        (Some(speaks), accepts) => Some(ProtocolRange {
            speaks,
            accepts: accepts.unwrap_or(speaks),
        }),
        (None, Some(_)) => return Err(invalid("Switch options: `protocolAccepts` needs `protocol`")),
    };
    open.client = o.client;
    open.client_version = o.client_version;

    let mut cfg = ConnectionConfig::new(open);
    cfg.transport = match o.transport {
        None | Some(TransportOpt::Websocket) => Transport::WebSocket,
        Some(_) if websocket_only => {
            return Err(invalid(
                "Switch options: the driver speaks the WebSocket only (the relay bridges SSE servers); \
                 `transport` must be \"websocket\"",
            ))
        }
        Some(TransportOpt::Sse) => Transport::Sse,
        Some(TransportOpt::Auto) => Transport::Auto,
    };
    cfg.max_reconnect_attempts = match (o.reconnect, o.max_reconnect_attempts) {
        (Some(false), Some(_)) => {
            return Err(invalid(
                "Switch options: `maxReconnectAttempts` with `reconnect: false`",
            ))
        }
        (Some(false), None) => Some(0),
        (_, max) => max,
    };
    if let Some(b) = o.backoff {
        let d = &mut cfg.backoff;
        d.base_ms = b.base_ms.unwrap_or(d.base_ms);
        d.max_ms = b.max_ms.unwrap_or(d.max_ms);
        d.min_ms = b.min_ms.unwrap_or(d.min_ms);
        // Checked by the engine at `start`.
        d.factor = b.factor.unwrap_or(d.factor);
    }
    macro_rules! take {
        ($($field:ident),*) => {$( if let Some(v) = o.$field { cfg.$field = v; } )*};
    }
    take!(
        open_timeout_ms,
        heartbeat_interval_ms,
        missed_heartbeats,
        beat_timeout_ms,
        stream_idle_timeout_ms,
        max_queued_events
    );
    if let Some(v) = o.max_message_bytes {
        cfg.decode.max_message_bytes = v;
    }
    if let Some(v) = o.max_depth {
        cfg.decode.max_depth = v;
    }
    let op_timeout_ms = o.op_timeout_ms.unwrap_or(DEFAULT_OP_TIMEOUT_MS);
    if op_timeout_ms == 0 {
        return Err(invalid("Switch options: `opTimeoutMs` must be at least 1"));
    }
    Ok(Parsed { cfg, op_timeout_ms })
}

/// A timeout given by JavaScript (`undefined`: `default`), in whole milliseconds.
pub(crate) fn timeout_ms(ms: Option<f64>, default: u64) -> Result<u64, JsValue> {
    match ms {
        None => Ok(default),
        Some(ms) if ms.is_finite() && ms >= 1.0 => Ok(ms as u64),
        Some(ms) => Err(invalid(format!("timeout of {ms} ms: must be at least 1"))),
    }
}
