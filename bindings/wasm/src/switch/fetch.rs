//! One HTTP call of an engine's [`HttpRequest`] over the host's global `fetch` (windows, workers,
//! Node ≥ 20), with `Authorization: Bearer <token>`, a deadline (an `AbortController`) and the
//! engine's bound on the answer's body.

use super::headers_object;
use crate::host::{now, Timer};
use crate::socket::describe;
use agentwire_core::{Error, ErrorKind};
use agentwire_switch::ops::MAX_RESPONSE_BYTES;
use agentwire_switch::{HttpRequest, SwitchError};
use js_sys::{Promise, Reflect, Uint8Array};
use std::cell::Cell;
use std::rc::Rc;
use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::JsFuture;
use web_sys::{AbortController, ReadableStreamDefaultReader, RequestInit, Response};

#[wasm_bindgen]
extern "C" {
    /// The global `fetch`, whatever the global object is.
    #[wasm_bindgen(catch, js_name = fetch)]
    fn global_fetch(url: &str, init: &RequestInit) -> Result<Promise, JsValue>;
    /// An `AbortController`, as [`abort`] calls it.
    type Abortable;
    #[wasm_bindgen(method, catch)]
    fn abort(this: &Abortable) -> Result<(), JsValue>;
}

/// Aborts a call. What the host throws is dropped: workerd throws for a call another request
/// made, and an exception through the module while a driver is borrowed leaves it borrowed.
pub(crate) fn abort(controller: &AbortController) {
    let _ = controller.unchecked_ref::<Abortable>().abort();
}

/// The longest deadline `setTimeout` keeps (about 24.8 days); longer ones are cut to it.
const MAX_TIMEOUT_MS: u64 = (1 << 31) - 1;

/// Why a call got no usable answer.
#[derive(Debug)]
pub(crate) struct FetchError {
    pub(crate) kind: ErrorKind,
    pub(crate) message: String,
    /// The status, when an answer came but was refused (too large).
    pub(crate) status: Option<u16>,
}

impl From<FetchError> for SwitchError {
    fn from(e: FetchError) -> Self {
        let retryable = !matches!(e.kind, ErrorKind::Limit | ErrorKind::Cancelled);
        let mut out = SwitchError::local(e.kind, e.message).retryable(retryable);
        out.status = e.status;
        out
    }
}

impl FetchError {
    /// As an operation's failure: `fetch` does not say whether the request left once it was
    /// made, so it may have, and a `closed` or `timeout` of a call that is not idempotent is not
    /// retryable (the engine's rule, [`agentwire_switch::unanswered`]).
    pub(crate) fn unanswered(self, request: &HttpRequest) -> SwitchError {
        match self.kind {
            ErrorKind::Closed | ErrorKind::Timeout => {
                agentwire_switch::unanswered::unanswered(request, Error::new(self.kind, self.message), true)
            }
            _ => self.into(),
        }
    }
}

/// A controller to cancel a call with (`abort()`); the call then fails with kind `cancelled`.
pub(crate) fn controller() -> Result<AbortController, FetchError> {
    AbortController::new().map_err(|e| FetchError {
        kind: ErrorKind::Internal,
        message: format!("AbortController is not available: {}", describe(&e)),
        status: None,
    })
}

/// Sends `request` to `base` + its path; the status and the body text of the answer, whatever
/// the status. Fails when no answer came within `timeout_ms` (kind `timeout`), when `controller`
/// was aborted (`cancelled`), when the body exceeds [`MAX_RESPONSE_BYTES`] (`limit`), or when the
/// host could not make the call (`closed`: refused, DNS, CORS, TLS).
pub(crate) async fn fetch(
    base: Rc<str>,
    token: Rc<str>,
    request: HttpRequest,
    timeout_ms: u64,
    controller: AbortController,
) -> Result<(u16, String), FetchError> {
    let method = request.method.as_str();
    let (url, init) = request_init(&base, &token, &request, &controller);
    let signal = controller.signal();

    // Aborts the call (the body's reading too) at the deadline; cancelled when dropped.
    let timed_out = Rc::new(Cell::new(false));
    let mut deadline = {
        let (flag, controller) = (timed_out.clone(), controller.clone());
        Timer::new(Closure::new(move || {
            flag.set(true);
            abort(&controller);
        }))
    };
    let start = now();
    deadline.arm(Some(start.saturating_add(timeout_ms.min(MAX_TIMEOUT_MS))), start);

    let failed = |e: JsValue| {
        let (kind, message) = if timed_out.get() {
            (ErrorKind::Timeout, format!("no answer within {timeout_ms} ms"))
        } else if signal.aborted() {
            (ErrorKind::Cancelled, "the call was cancelled".to_owned())
        } else {
            (ErrorKind::Closed, describe(&e))
        };
        FetchError {
            kind,
            message: format!("{method} {url}: {message}"),
            status: None,
        }
    };
    let promise = global_fetch(&url, &init).map_err(failed)?;
    let response: Response = JsFuture::from(promise).await.map_err(failed)?.unchecked_into();
    let status = response.status();
    let too_large = |size: String| FetchError {
        kind: ErrorKind::Limit,
        message: format!("{method} {url}: answer of {size} bytes exceeds {MAX_RESPONSE_BYTES}"),
        status: Some(status),
    };
    // Read a chunk at a time and counted as it comes, whatever Content-Length says: an answer
    // past the bound is cut there, not read whole until the deadline.
    let mut body = Vec::new();
    if let Some(reader) = reader(&response) {
        while let Some(chunk) = next_chunk(&reader).await.map_err(failed)? {
            body.extend(chunk);
            if body.len() > MAX_RESPONSE_BYTES {
                abort(&controller);
                return Err(too_large(format!("at least {}", body.len())));
            }
        }
    }
    deadline.cancel();
    // A sequence that is not UTF-8 is U+FFFD, as `Response.text()` decodes (a leading BOM is
    // kept, where `text()` drops it: JSON has none).
    Ok((status, String::from_utf8_lossy(&body).into_owned()))
}

/// The URL and the `fetch` options of `request` to `base`: its headers with
/// `Authorization: Bearer <token>`, its body, and `controller`'s signal.
fn request_init(base: &str, token: &str, request: &HttpRequest, controller: &AbortController) -> (String, RequestInit) {
    let url = format!("{base}{}", request.path);
    let init = RequestInit::new();
    init.set_method(request.method.as_str());
    let headers = headers_object(request);
    let _ = Reflect::set(
        &headers,
        &JsValue::from_str("Authorization"),
        &JsValue::from_str(&format!("Bearer {token}")),
    );
    init.set_headers(&headers);
    if let Some(body) = &request.body {
        init.set_body(&JsValue::from_str(body));
    }
    init.set_signal(Some(&controller.signal()));
    (url, init)
}

/// A reader of the answer's body (`None`: it has none).
pub(crate) fn reader(response: &Response) -> Option<ReadableStreamDefaultReader> {
    Some(response.body()?.get_reader().unchecked_into())
}

/// The body's next chunk as it came (`None`: the body ended); what the host threw when it broke
/// or was aborted.
pub(crate) async fn next_chunk(reader: &ReadableStreamDefaultReader) -> Result<Option<Vec<u8>>, JsValue> {
    let chunk = JsFuture::from(reader.read()).await?;
    let field = |name| Reflect::get(&chunk, &JsValue::from_str(name));
    if field("done")?.is_truthy() {
        return Ok(None);
    }
    // A view of any realm's bytes (not an `instanceof` check).
    Ok(Some(Uint8Array::new(&field("value")?).to_vec()))
}

/// Opens a stream (the SSE transport's `GET`): the answer, its body unread, with no deadline of
/// its own (the engine's open and idle timers bound it, and close it through `controller`);
/// what the host threw when no answer came (refused, DNS, CORS, TLS, or aborted).
pub(crate) async fn open_stream(
    base: &str,
    token: &str,
    request: &HttpRequest,
    controller: &AbortController,
) -> Result<Response, JsValue> {
    let (url, init) = request_init(base, token, request, controller);
    Ok(JsFuture::from(global_fetch(&url, &init)?).await?.unchecked_into())
}
