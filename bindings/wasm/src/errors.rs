//! Errors as JavaScript values, and the panic hook.
//!
//! Every error the engines report has the shape `{kind, code?, message, retryable, ...}`. The
//! npm package registers a factory (`setErrorFactory`) that turns that JSON into its
//! `AgentwireError`; without one (the raw wasm-bindgen module) a plain `Error` carries the JSON
//! as its message.

use agentwire_core::{Error, ErrorKind};
use js_sys::Function;
use std::cell::RefCell;
use wasm_bindgen::prelude::*;

thread_local! {
    static FACTORY: RefCell<Option<Function>> = const { RefCell::new(None) };
    static LAST_PANIC: RefCell<Option<String>> = const { RefCell::new(None) };
}

/// Registers `(json: string) => Error`, used for every error handed to JavaScript.
#[wasm_bindgen(js_name = setErrorFactory)]
pub fn set_error_factory(factory: Function) {
    FACTORY.with(|f| *f.borrow_mut() = Some(factory));
}

/// An error object (`{kind, code?, message, retryable, ...}`, JSON text) as a JavaScript error.
pub(crate) fn to_js(text: &str) -> JsValue {
    let made = FACTORY.with(|f| {
        f.borrow()
            .as_ref()
            .and_then(|f| f.call1(&JsValue::UNDEFINED, &JsValue::from_str(text)).ok())
    });
    made.unwrap_or_else(|| js_sys::Error::new(text).into())
}

/// A local error of the shared shape as a JavaScript error.
pub(crate) fn local(kind: ErrorKind, message: impl Into<String>) -> JsValue {
    to_js(&Error::new(kind, message).to_json_string())
}

/// `v` as text, or kind `invalid` naming the argument `name`: a value from plain JavaScript
/// that is not a string (a number, a `Uint8Array`) is refused here, without the allocation of
/// wasm-bindgen's string glue (which reads `.length` and traps, or leaks, on anything else).
pub(crate) fn text(v: JsValue, name: &str) -> Result<String, JsValue> {
    v.as_string()
        .ok_or_else(|| local(ErrorKind::Invalid, format!("`{name}` must be a string")))
}

/// `String(n)` in JavaScript: a number in a message as the caller wrote it (`-Infinity`, `1e-7`,
/// where Rust's `{}` says `-inf` and `0.0000001` and brings in its float formatting, about 9 KB
/// gzipped).
#[cfg(any(feature = "moltzap", feature = "switch"))]
pub(crate) fn js_number(n: f64) -> String {
    js_sys::Number::from(n)
        .to_string_with_radix(10)
        .map(String::from)
        .unwrap_or_default()
}

/// `v` as a close code or an HTTP status, or kind `invalid` naming the argument `name`: a number
/// that is an integer from 0 to 65535, as the engines take it. wasm-bindgen's `u16` took any value
/// modulo 65536 (`70000` closed with 4464, `-1` with 65535, `undefined` with 0).
pub(crate) fn u16_arg(v: JsValue, name: &str) -> Result<u16, JsValue> {
    // The cast saturates (NaN is 0): only a value it keeps is one.
    match v.as_f64() {
        Some(n) if n as u16 as f64 == n => Ok(n as u16),
        _ => {
            let m = format!("`{name}` must be an integer from 0 to 65535");
            Err(local(ErrorKind::Invalid, m))
        }
    }
}

/// [`text`] for an optional argument: `undefined` and `null` are `None`.
#[cfg(any(feature = "rkt", feature = "moltzap"))]
pub(crate) fn opt_text(v: JsValue, name: &str) -> Result<Option<String>, JsValue> {
    match v.is_undefined() || v.is_null() {
        true => Ok(None),
        false => text(v, name).map(Some),
    }
}

/// The message of the last panic, if one happened: after it the module is unusable, and the npm
/// package reports it as an error of kind `internal`.
#[wasm_bindgen(js_name = lastPanic)]
pub fn last_panic() -> Option<String> {
    LAST_PANIC.with(|p| p.borrow().clone())
}

/// Installed at start-up: a panic (a bug; no input should cause one) is kept for `lastPanic` and
/// written to `console.error` before the trap.
pub(crate) fn install_panic_hook() {
    std::panic::set_hook(Box::new(|info| {
        let message = format!("agentwire bug: {info}");
        LAST_PANIC.with(|p| *p.borrow_mut() = Some(message.clone()));
        web_sys::console::error_1(&JsValue::from_str(&message));
    }));
}

/// The engine's error kinds, for the package's check of its own `ErrorKind` type.
#[wasm_bindgen(js_name = errorKinds)]
pub fn error_kinds() -> Vec<String> {
    ErrorKind::ALL.iter().map(|k| k.as_str().to_string()).collect()
}

/// The `type`s of the events of `protocol` (`rkt`, `moltzap`, `switch`), as the engine names
/// them, for the package's check of its own event types; none for anything else (a value that is
/// not a string too: read without wasm-bindgen's string glue, which traps on a number).
#[wasm_bindgen(js_name = eventTypes)]
pub fn event_types(protocol: JsValue) -> Vec<String> {
    let list: &[&str] = match protocol.as_string().as_deref().unwrap_or_default() {
        #[cfg(feature = "rkt")]
        "rkt" => &agentwire_rkt::json::EVENT_TYPES,
        #[cfg(feature = "moltzap")]
        "moltzap" => &agentwire_moltzap::session::EVENT_TYPES,
        #[cfg(feature = "switch")]
        "switch" => &agentwire_switch::connection::EVENT_TYPES,
        _ => &[],
    };
    list.iter().map(|t| t.to_string()).collect()
}
