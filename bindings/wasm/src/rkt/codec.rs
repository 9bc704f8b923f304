//! `rktDecode`: the RKT codec on its own, for tools and for the package's vector tests.

use crate::errors::{self, text};
use agentwire_rkt::codec::{decode, DEFAULT_MAX_MESSAGE_SIZE};
use serde_json::{json, Map};
use wasm_bindgen::prelude::*;

/// Decodes one RKT message (`maxSize` bytes at most, default 1 MiB) into JSON text
/// `{type, headers: {name: value}, body: text | null}`. Throws an error of kind `decode` with
/// `reason` (the decode error's name, e.g. `bad_header_value`) and `field`.
#[wasm_bindgen(js_name = rktDecode)]
pub fn rkt_decode(wire: JsValue, max_size: Option<u32>) -> Result<String, JsValue> {
    let limit = max_size.map_or(DEFAULT_MAX_MESSAGE_SIZE, |m| m as usize);
    match decode(&text(wire, "wire")?, limit) {
        Ok(m) => {
            // Inserted one by one (the last of a repeated name wins, as with `collect`): a
            // `collect` into the map sorts first, and the sort is sizeable code in the wasm.
            let mut headers = Map::new();
            for (n, v) in m.headers.iter() {
                headers.insert(n.to_string(), json!(v));
            }
            Ok(json!({"type": m.kind.as_str(), "headers": headers, "body": m.body}).to_string())
        }
        Err(e) => Err(errors::to_js(&agentwire_rkt::json::decode_error_json(&e).to_string())),
    }
}
