//! Frames of the low-level sessions as JavaScript values: `{type: "text", text}`,
//! `{type: "binary", data: Uint8Array}` or `{type: "close", code, reason}`.

#[cfg(any(feature = "rkt", feature = "moltzap"))]
use {
    agentwire_core::Outgoing,
    js_sys::{Object, Reflect, Uint8Array},
    wasm_bindgen::JsValue,
};

#[cfg(any(feature = "rkt", feature = "moltzap"))]
fn object(fields: &[(&str, JsValue)]) -> JsValue {
    let o = Object::new();
    for (k, v) in fields {
        let _ = Reflect::set(&o, &JsValue::from_str(k), v);
    }
    o.into()
}

#[cfg(any(feature = "rkt", feature = "moltzap"))]
pub(crate) fn to_js(frame: Outgoing) -> JsValue {
    match frame {
        Outgoing::Text(text) => object(&[("type", "text".into()), ("text", text.into())]),
        Outgoing::Binary(bytes) => object(&[
            ("type", "binary".into()),
            ("data", Uint8Array::from(bytes.as_slice()).into()),
        ]),
        Outgoing::Close { code, reason } => object(&[
            ("type", "close".into()),
            ("code", code.into()),
            ("reason", reason.into()),
        ]),
    }
}

/// A time from JavaScript (ms since the epoch, a `number`) as the engine's.
pub(crate) use agentwire_core::millis_from_f64 as millis;
