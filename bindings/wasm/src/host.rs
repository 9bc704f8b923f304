//! What the drivers take from the JavaScript host: the clock, entropy, timers. Everything here
//! exists in browsers, Node ≥ 20 and Workers under the same global names.

use agentwire_core::{Clock, Millis};
use js_sys::{Function, JsString, Uint8Array};
use std::cell::{Cell, RefCell};
use std::rc::Rc;
use wasm_bindgen::prelude::*;

#[wasm_bindgen]
extern "C" {
    #[wasm_bindgen(js_namespace = Date, js_name = now)]
    fn date_now() -> f64;
    #[wasm_bindgen(js_namespace = performance, js_name = now)]
    fn performance_now() -> f64;
    #[wasm_bindgen(js_name = setTimeout)]
    fn set_timeout(f: &Function, ms: f64) -> JsValue;
    #[wasm_bindgen(js_name = clearTimeout)]
    fn clear_timeout(handle: &JsValue);
    #[wasm_bindgen(js_namespace = crypto, js_name = getRandomValues)]
    fn get_random_values(buf: &mut [u8]);
}

#[wasm_bindgen]
extern "C" {
    /// The host's `TextEncoder`.
    type Utf8Encoder;
    #[wasm_bindgen(constructor, js_class = "TextEncoder")]
    fn new() -> Utf8Encoder;
    #[wasm_bindgen(method, js_class = "TextEncoder", js_name = encodeInto)]
    fn encode_into(this: &Utf8Encoder, source: &JsString, dest: &Uint8Array) -> EncodeResult;
    /// `{read, written}`.
    type EncodeResult;
    #[wasm_bindgen(method, getter)]
    fn read(this: &EncodeResult) -> u32;
    #[wasm_bindgen(method, getter)]
    fn written(this: &EncodeResult) -> u32;
}

thread_local! {
    static ENCODER: Utf8Encoder = Utf8Encoder::new();
    static CLOCK: Cell<Clock> = const { Cell::new(Clock::new()) };
}

/// Appends `s` as UTF-8 to `buf`, into at least `room` bytes of spare capacity (what does not
/// fit is left out): `(UTF-16 units read, bytes written)`.
fn encode_into(s: &JsString, buf: &mut Vec<u8>, room: usize) -> (usize, usize) {
    buf.reserve(room);
    let len = buf.len();
    let spare = buf.capacity() - len;
    // SAFETY: the view covers the vector's spare capacity, which nothing else uses while the
    // view lives; encodeInto allocates nothing in wasm memory, so the view stays valid.
    let view = unsafe { Uint8Array::view_mut_raw(buf.as_mut_ptr().add(len), spare) };
    let r = ENCODER.with(|e| e.encode_into(s, &view));
    let (read, written) = (r.read() as usize, (r.written() as usize).min(spare));
    // SAFETY: encodeInto wrote `written` bytes (at most `spare`) after `len`.
    unsafe { buf.set_len(len + written) };
    (read, written)
}

/// A JavaScript string as UTF-8, written by the host's `TextEncoder.encodeInto` straight into
/// wasm memory (native, where wasm-bindgen's own conversion copies ASCII one unit at a time in
/// JavaScript). Lone surrogates become U+FFFD, as with wasm-bindgen's conversion.
pub(crate) fn utf8(s: &JsString) -> String {
    let units = s.length() as usize;
    let mut buf = Vec::new();
    // ASCII first: one byte per unit.
    let (read, _) = encode_into(s, &mut buf, units);
    if read < units {
        // The rest needs up to 3 bytes per unit.
        let rest = s.slice(read as u32, units as u32);
        encode_into(&rest, &mut buf, (units - read) * 3);
    }
    String::from_utf8(buf).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
}

/// `Date.now()` as it is: what a relay token's `exp` is compared with.
#[cfg(feature = "switch")]
pub(crate) fn wall() -> Millis {
    date_now().max(0.0) as Millis
}

/// Milliseconds since the epoch: `Date.now()` kept steady by `performance.now()` ([`Clock`]: never
/// back, small steps of the wall clock caught up with gradually).
pub(crate) fn now() -> Millis {
    let wall = date_now().max(0.0);
    let mono = performance_now().max(0.0) * 1_000.0;
    CLOCK.with(|c| {
        let mut clock = c.get();
        let now = clock.read(wall as Millis, mono as u64);
        c.set(clock);
        now
    })
}

/// `crypto.getRandomValues`, in slices it accepts (at most 65,536 bytes a call). RKT and Switch
/// take it; a MoltZap session takes no entropy.
#[cfg(any(feature = "rkt", feature = "switch"))]
pub(crate) struct JsEntropy;

#[cfg(any(feature = "rkt", feature = "switch"))]
impl agentwire_core::Entropy for JsEntropy {
    fn fill(&mut self, buf: &mut [u8]) {
        for chunk in buf.chunks_mut(65_536) {
            get_random_values(chunk);
        }
    }
}

/// Lets the host run its tasks (timers, other I/O, a page's rendering and input) before going
/// on: a `setTimeout` of 0. A read loop whose next read is already there (a stream body with
/// chunks queued) otherwise goes on in microtasks, which run before any task, until it has read
/// everything queued.
#[cfg(feature = "switch")]
pub(crate) async fn yield_to_tasks() {
    let tick = js_sys::Promise::new(&mut |resolve, _| {
        set_timeout(&resolve, 0.0);
    });
    let _ = wasm_bindgen_futures::JsFuture::from(tick).await;
}

/// The longest delay `setTimeout` keeps as given (longer ones fire at once); a later deadline is
/// reached in steps: firing early only makes the driver re-arm.
const MAX_DELAY_MS: Millis = (1 << 31) - 1;

/// How late a timer may fire and still be handed over at once. A timer later than this fired
/// after the event loop was held up (user code blocking it, a process stopped and continued, a
/// frozen tab resumed): the socket's input read meanwhile waits behind it, as Node runs its due
/// timers before the I/O of the same turn. It is handed over one task later, after that input,
/// so a reply that came in before the deadline answers its call rather than lose to it.
const LATE_MS: f64 = 50.0;

/// A `setTimeout` handle, shared with the closure that fires it.
type Handle = Rc<RefCell<Option<JsValue>>>;

/// One re-armable `setTimeout` calling `callback`: at once when it fires on time, one task later
/// when it fires late (see [`LATE_MS`]). Both closures are `Fn`s, which a fake clock may run
/// again from inside a callback that their run made (a tick in `onEvent`); an `FnMut` threw
/// there, and the driver, its host timer spent, waited for it for good.
pub(crate) struct Timer {
    /// What `setTimeout` calls: `callback`, or a `setTimeout` of 0 for it when late.
    fire: Closure<dyn Fn()>,
    _callback: Closure<dyn Fn()>,
    handle: Handle,
    /// When the timer is due, as `Date.now()` has it (what lateness is read against).
    due: Rc<Cell<f64>>,
    at: Option<Millis>,
}

impl Timer {
    pub(crate) fn new(callback: Closure<dyn Fn()>) -> Timer {
        let (handle, due) = (Handle::default(), Rc::new(Cell::new(0.0)));
        let later: Function = callback.as_ref().unchecked_ref::<Function>().clone();
        let (h, d) = (handle.clone(), due.clone());
        // The callback stays alive while `fire` may call it: both are dropped with the timer,
        // which clears its `setTimeout` first.
        let fire = Closure::new(move || match date_now() - d.get() > LATE_MS {
            true => *h.borrow_mut() = Some(set_timeout(&later, 0.0)),
            false => {
                let _ = later.call0(&JsValue::UNDEFINED);
            }
        });
        Timer {
            fire,
            _callback: callback,
            handle,
            due,
            at: None,
        }
    }

    /// Fires at `at` (nothing when `None`); a deadline already armed is kept.
    pub(crate) fn arm(&mut self, at: Option<Millis>, now: Millis) {
        if at == self.at && (at.is_none() || self.handle.borrow().is_some()) {
            return;
        }
        self.cancel();
        if let Some(at) = at {
            let delay = at.saturating_sub(now).min(MAX_DELAY_MS) as f64;
            self.due.set(date_now() + delay);
            *self.handle.borrow_mut() = Some(set_timeout(self.fire.as_ref().unchecked_ref(), delay));
            self.at = Some(at);
        }
    }

    /// Fires at `at` or before it: a timer armed for an earlier time is kept, where [`arm`]
    /// would replace it. For a driver's timer, which takes an early fire as a check that finds
    /// nothing due and re-arms: a deadline that only moves later (a Switch connection's at every
    /// ping) then costs no `clearTimeout` and `setTimeout` each time.
    ///
    /// [`arm`]: Timer::arm
    pub(crate) fn arm_by(&mut self, at: Option<Millis>, now: Millis) {
        let earlier = matches!((self.at, at), (Some(armed), Some(at)) if armed <= at);
        if !(earlier && self.handle.borrow().is_some()) {
            self.arm(at, now);
        }
    }

    /// The timer fired: it is no longer armed.
    pub(crate) fn fired(&mut self) {
        self.handle.borrow_mut().take();
        self.at = None;
    }

    pub(crate) fn cancel(&mut self) {
        if let Some(h) = self.handle.borrow_mut().take() {
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
