//! Switch Rooms: the driver behind the package's `SwitchClient` (over a relay, see
//! `shared/DESIGN.md`, "Switch in the browser: the relay"), and the sans-IO session.

mod client;
mod driver;
mod fetch;
mod options;
mod refresh;
mod renew;
mod session;
mod stream;

pub use client::SwitchDriver;
pub use session::SwitchSession;

use agentwire_switch::{HttpRequest, Transmit};
use js_sys::{Object, Reflect};
use wasm_bindgen::JsValue;

fn set(o: &Object, k: &str, v: &JsValue) {
    let _ = Reflect::set(o, &JsValue::from_str(k), v);
}

/// A request's headers as a plain object (what `fetch` takes as `headers`).
pub(crate) fn headers_object(request: &HttpRequest) -> Object {
    let h = Object::new();
    for (name, value) in &request.headers {
        set(&h, name, &JsValue::from_str(value));
    }
    h
}

fn request_fields(o: &Object, request: &HttpRequest) {
    set(o, "method", &request.method.as_str().into());
    set(o, "path", &request.path.as_str().into());
    set(o, "headers", &headers_object(request).into());
}

/// A transmit as the object `SwitchSession.pollTransmit` returns.
pub(crate) fn transmit_to_js(t: Transmit) -> JsValue {
    let o = Object::new();
    match t {
        Transmit::Open(open) => {
            set(&o, "type", &"open".into());
            set(&o, "wire", &open.wire.as_str().into());
            request_fields(&o, &open.request);
        }
        Transmit::Text(text) => {
            set(&o, "type", &"text".into());
            set(&o, "text", &text.into());
        }
        Transmit::Http { id, request } => {
            set(&o, "type", &"http".into());
            set(&o, "id", &(id as f64).into());
            request_fields(&o, &request);
            if let Some(body) = &request.body {
                set(&o, "body", &body.as_str().into());
            }
        }
        Transmit::Close { code, reason } => {
            set(&o, "type", &"close".into());
            set(&o, "code", &code.into());
            set(&o, "reason", &reason.into());
        }
    }
    o.into()
}
