//! RKT options as the npm package passes them (JSON, camelCase), mapped onto the engine's
//! configuration. Absent fields keep the engine's defaults.

use agentwire_core::ErrorKind;
use agentwire_rkt::{ClientConfig, Priority, RequestOptions};
use serde::Deserialize;
use serde_json::Value;
use wasm_bindgen::JsValue;

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct Config {
    user_agent: Option<String>,
    from: Option<String>,
    capabilities: Option<Vec<String>>,
    ttl_s: Option<u32>,
    max_message_size: Option<usize>,
    max_in_flight: Option<usize>,
    max_stream_buffer: Option<usize>,
    max_stream_buffer_bytes: Option<usize>,
    handshake_timeout_ms: Option<u64>,
    /// An API key, sent as `AUTH {scheme: bearer}` right after the handshake.
    api_key: Option<String>,
    keepalive: Option<bool>,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct Request {
    priority: Option<Priority>,
    ttl_s: Option<u32>,
    to: Option<String>,
    context: Option<Value>,
}

fn invalid(what: &str, e: serde_json::Error) -> JsValue {
    crate::errors::local(ErrorKind::Invalid, format!("{what}: {e}"))
}

/// `ClientConfig` from the options JSON (`None` or `""`: the defaults).
pub(crate) fn config(json: Option<String>) -> Result<ClientConfig, JsValue> {
    let c: Config = match json.as_deref() {
        None | Some("") => Config::default(),
        Some(text) => serde_json::from_str(text).map_err(|e| invalid("RKT options", e))?,
    };
    let mut cfg = ClientConfig::default();
    macro_rules! take {
        ($($field:ident),*) => {$( if let Some(v) = c.$field { cfg.$field = v; } )*};
    }
    take!(
        user_agent,
        capabilities,
        ttl_s,
        max_message_size,
        max_in_flight,
        max_stream_buffer,
        max_stream_buffer_bytes,
        handshake_timeout_ms,
        keepalive
    );
    cfg.from = c.from;
    cfg.authorization = c.api_key.map(|k| format!("Bearer {k}"));
    Ok(cfg)
}

/// `RequestOptions` from a request's options JSON.
pub(crate) fn request(json: Option<String>, stream: bool) -> Result<RequestOptions, JsValue> {
    let r: Request = match json.as_deref() {
        None | Some("") => Request::default(),
        Some(text) => serde_json::from_str(text).map_err(|e| invalid("request options", e))?,
    };
    Ok(RequestOptions {
        stream,
        priority: r.priority,
        ttl_s: r.ttl_s,
        to: r.to,
        context: r.context,
    })
}

/// A JSON argument (`params`, a memory value) as a value; `None` or `""` is none.
pub(crate) fn json_arg(what: &str, json: Option<String>) -> Result<Option<Value>, JsValue> {
    match json.as_deref() {
        None | Some("") => Ok(None),
        Some(text) => serde_json::from_str(text).map(Some).map_err(|e| invalid(what, e)),
    }
}
