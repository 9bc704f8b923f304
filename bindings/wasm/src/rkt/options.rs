//! RKT options as the npm package passes them (JSON, camelCase), mapped onto the engine's
//! configuration. Absent fields keep the engine's defaults.

use agentwire_core::json::fields::{FieldError, Object};
use agentwire_core::json::read;
use agentwire_core::ErrorKind;
use agentwire_rkt::{ClientConfig, Priority, RequestOptions};
use serde_json::Value;
use wasm_bindgen::JsValue;

fn invalid(what: &str, e: impl std::fmt::Display) -> JsValue {
    crate::errors::local(ErrorKind::Invalid, format!("{what}: {e}"))
}

/// `ClientConfig` from the options JSON (`None` or `""`: the defaults).
pub(crate) fn config(json: Option<String>) -> Result<ClientConfig, JsValue> {
    let mut cfg = ClientConfig::default();
    let Some(text) = json.as_deref().filter(|t| !t.is_empty()) else {
        return Ok(cfg);
    };
    let tape = read::parse(text, 8).map_err(|e| invalid("RKT options", e))?;
    (|| -> Result<(), FieldError> {
        let c = Object::strict(
            tape.root(),
            &[
                "userAgent",
                "from",
                "capabilities",
                "ttlS",
                "maxMessageSize",
                "maxInFlight",
                "maxStreamBuffer",
                "maxStreamBufferBytes",
                "handshakeTimeoutMs",
                "apiKey",
                "keepalive",
            ],
        )?;
        fn set<T>(slot: &mut T, v: Option<T>) {
            if let Some(v) = v {
                *slot = v;
            }
        }
        set(&mut cfg.user_agent, c.string("userAgent")?);
        set(&mut cfg.capabilities, c.strings("capabilities")?);
        set(&mut cfg.ttl_s, c.uint("ttlS")?);
        set(&mut cfg.max_message_size, c.uint("maxMessageSize")?);
        set(&mut cfg.max_in_flight, c.uint("maxInFlight")?);
        set(&mut cfg.max_stream_buffer, c.uint("maxStreamBuffer")?);
        set(&mut cfg.max_stream_buffer_bytes, c.uint("maxStreamBufferBytes")?);
        set(&mut cfg.handshake_timeout_ms, c.uint("handshakeTimeoutMs")?);
        set(&mut cfg.keepalive, c.bool("keepalive")?);
        cfg.from = c.string("from")?;
        // An API key, sent as `AUTH {scheme: bearer}` right after the handshake.
        cfg.authorization = c.string("apiKey")?.map(|k| format!("Bearer {k}"));
        Ok(())
    })()
    .map_err(|e| invalid("RKT options", e))?;
    crate::socket::frame_bound("maxMessageSize", cfg.max_message_size).map_err(|e| invalid("RKT options", e))?;
    Ok(cfg)
}

/// `RequestOptions` from a request's options JSON, no longer than `max` (`max_message_size`:
/// its `context` goes into the message). The `context` is read by the rule of every binding's
/// JSON argument, [`agentwire_rkt::json::json_arg`] (as the component reads it): the object
/// around it adds no level to its depth, and a context that is not JSON (too deep, a lone
/// surrogate escape, a number beyond `f64`) is refused with that rule's message, "context is not
/// JSON: …".
pub(crate) fn request(json: Option<String>, stream: bool, max: usize) -> Result<RequestOptions, JsValue> {
    agentwire_rkt::json::arg_within("request options", json.as_deref(), max).map_err(local)?;
    let mut opts = RequestOptions {
        stream,
        ..RequestOptions::default()
    };
    let Some(text) = json.as_deref().filter(|t| !t.is_empty()) else {
        return Ok(opts);
    };
    // Leniently and at any depth, so that the context's text reaches `json_arg` as it is: the
    // reader does not recurse, and the text is bounded by `max`. The other fields are decoded,
    // so a lone surrogate escape or a number beyond f64 in them is refused, as before.
    let tape = read::parse_lenient(text, usize::MAX).map_err(|e| invalid("request options", e))?;
    (|| -> Result<(), FieldError> {
        let r = Object::strict(tape.root(), &["priority", "ttlS", "to", "context"])?;
        r.decoded(&["priority", "ttlS", "to"])?;
        const PRIORITIES: [Priority; 4] = [Priority::Low, Priority::Normal, Priority::High, Priority::Urgent];
        let names = PRIORITIES.map(Priority::as_str);
        opts.priority = r
            .choice("priority", &names, "\"LOW\", \"NORMAL\", \"HIGH\" or \"URGENT\"")?
            .map(|i| PRIORITIES[i]);
        opts.ttl_s = r.uint("ttlS")?;
        opts.to = r.string("to")?;
        Ok(())
    })()
    .map_err(|e| invalid("request options", e))?;
    // The context stays a JSON value (the engine's type): its own text, read by the one rule.
    if let Some(ctx) = tape.root().get("context") {
        opts.context = agentwire_rkt::json::json_arg("context", Some(ctx.raw())).map_err(local)?;
    }
    Ok(opts)
}

/// `memorySet`'s `ttlS` (whole seconds, cut): NaN, a negative number and Infinity are refused
/// (the entry has no TTL of "never"; leave it out for the server's default). The value is not
/// quoted: formatting an `f64` would bring the float formatter into `agentwire/rkt` (+9 KB).
pub(crate) fn ttl_s(ttl: Option<f64>) -> Result<Option<u64>, JsValue> {
    match ttl {
        Some(t) if !(t >= 0.0 && t.is_finite()) => Err(invalid("memorySet", "ttlS must be a finite number ≥ 0")),
        t => Ok(t.map(|t| t as u64)),
    }
}

/// A JSON argument (`params`, a memory value) no longer than `max` (`max_message_size`) as a
/// value (`agentwire_rkt::json::json_arg_within`).
pub(crate) fn json_arg(what: &str, json: Option<String>, max: usize) -> Result<Option<Value>, JsValue> {
    agentwire_rkt::json::json_arg_within(what, json.as_deref(), max).map_err(local)
}

fn local(e: agentwire_rkt::RktError) -> JsValue {
    crate::errors::local(e.error.kind, e.error.message)
}
