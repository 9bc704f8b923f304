//! What the drivers take from the JavaScript host: the clock, entropy, timers. Everything here
//! exists in browsers, Node ≥ 20 and Workers under the same global names.

use agentwire_core::{Entropy, Millis};
use js_sys::Function;
use wasm_bindgen::prelude::*;

#[wasm_bindgen]
extern "C" {
    #[wasm_bindgen(js_namespace = Date, js_name = now)]
    fn date_now() -> f64;
    #[wasm_bindgen(js_name = setTimeout)]
    fn set_timeout(f: &Function, ms: f64) -> JsValue;
    #[wasm_bindgen(js_name = clearTimeout)]
    fn clear_timeout(handle: &JsValue);
    #[wasm_bindgen(js_namespace = crypto, js_name = getRandomValues)]
    fn get_random_values(buf: &mut [u8]);
}

/// Milliseconds since the epoch, from `Date.now()`.
pub(crate) fn now() -> Millis {
    date_now().max(0.0) as Millis
}

/// `crypto.getRandomValues`, in slices it accepts (at most 65,536 bytes a call).
pub(crate) struct JsEntropy;

impl Entropy for JsEntropy {
    fn fill(&mut self, buf: &mut [u8]) {
        for chunk in buf.chunks_mut(65_536) {
            get_random_values(chunk);
        }
    }
}

/// The longest delay `setTimeout` keeps as given (longer ones fire at once); a later deadline is
/// reached in steps: firing early only makes the driver re-arm.
const MAX_DELAY_MS: Millis = (1 << 31) - 1;

/// One re-armable `setTimeout` calling `callback`.
pub(crate) struct Timer {
    callback: Closure<dyn FnMut()>,
    handle: Option<JsValue>,
    at: Option<Millis>,
}

impl Timer {
    pub(crate) fn new(callback: Closure<dyn FnMut()>) -> Timer {
        Timer {
            callback,
            handle: None,
            at: None,
        }
    }

    /// Fires at `at` (nothing when `None`); a deadline already armed is kept.
    pub(crate) fn arm(&mut self, at: Option<Millis>, now: Millis) {
        if at == self.at && (at.is_none() || self.handle.is_some()) {
            return;
        }
        self.cancel();
        if let Some(at) = at {
            let delay = at.saturating_sub(now).min(MAX_DELAY_MS);
            self.handle = Some(set_timeout(self.callback.as_ref().unchecked_ref(), delay as f64));
            self.at = Some(at);
        }
    }

    /// The timer fired: it is no longer armed.
    pub(crate) fn fired(&mut self) {
        self.handle = None;
        self.at = None;
    }

    pub(crate) fn cancel(&mut self) {
        if let Some(h) = self.handle.take() {
            clear_timeout(&h);
        }
        self.at = None;
    }
}

impl Drop for Timer {
    fn drop(&mut self) {
        self.cancel();
    }
}
