//! The SSE wire's stream (`transport` `sse`, or `auto` after a refused upgrade; a Switch server
//! reached directly with the agent key): a streamed `fetch` per `open`, its answer and body fed to
//! the engine as they come.

use super::driver::{Current, Driver, Link};
use super::fetch;
use crate::host::Timer;
use crate::socket::{deliver_calls, describe, Calls};
use agentwire_core::Millis;
use agentwire_switch::connection::OpenRequest;
use std::rc::Rc;
use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::spawn_local;

/// What happened to the SSE wire's stream.
pub(super) enum Stream {
    /// The `200`.
    Open,
    Bytes(Vec<u8>),
    /// Another status, and the start of its body.
    Refused(u16, String),
    /// No answer: what the host said (refused, DNS, TLS, CORS).
    Failed(String),
    /// The body ended or broke after the `200`.
    Ended(String),
}

/// Bytes of a refused stream's body given to the engine (its error's detail: what the engine
/// reads of it), and how long they are read (the engine's bounds, which every driver keeps).
const REFUSAL_BODY: usize = agentwire_core::http::REFUSAL_BODY_MAX;
const REFUSAL_BODY_MS: Millis = agentwire_core::http::REFUSAL_BODY_WAIT_MS;

/// A body chunk is fed to the engine this many bytes at a time, its events polled between: a
/// browser's `fetch` hands over everything that arrived since the last read as one chunk (under a
/// flood, Chromium gave 727 KB at once), and the engine holds at most `maxQueuedEvents` (4,096)
/// between polls, past which it drops the rest and reopens from the cursor. 16 KiB holds a few
/// hundred events at most.
const FEED_SLICE: usize = 16 << 10;
impl Driver {
    /// Opens the SSE wire's stream with `fetch` (the engine's request, with the token as
    /// `Authorization: Bearer`, as the HTTP calls), then feeds the engine its answer and its body
    /// a chunk at a time as it comes (framing, resume and beats are the engine's). A close, a
    /// reopen or a stop aborts it.
    pub(super) fn open_stream(&mut self, now: Millis, open: OpenRequest) {
        let controller = match fetch::controller() {
            Ok(c) => c,
            Err(e) => return self.conn.handle_open_error(now, &e.message),
        };
        let epoch = self.epoch;
        self.socket = Some(Current {
            link: Link::Stream(controller.clone()),
            epoch,
            opened: false,
            token: self.tokens,
        });
        let (me, base, token) = (self.me.clone(), self.http_base.clone(), self.token.clone());
        spawn_local(async move {
            // Whether the stream is still the current one (else it is left).
            let feed = |input| {
                me.upgrade()
                    .and_then(|state| {
                        deliver_calls(&state, |d, now, calls| d.stream_input(epoch, now, input, calls)).ok()
                    })
                    .unwrap_or(false)
            };
            let request = &open.request;
            let input = match fetch::open_stream(&base, &token, request, &controller).await {
                // The URL without its query (the connection's parameters), as the native driver.
                Err(e) => Stream::Failed(format!(
                    "GET {base}{}: {}",
                    request.path.split('?').next().unwrap_or_default(),
                    describe(&e)
                )),
                Ok(response) => {
                    let reader = fetch::reader(&response);
                    match (response.status(), reader) {
                        (200, Some(reader)) => {
                            let mut go_on = feed(Stream::Open);
                            while go_on {
                                let input = match fetch::next_chunk(&reader).await {
                                    Ok(Some(chunk)) => Stream::Bytes(chunk),
                                    Ok(None) => Stream::Ended("the event stream ended".into()),
                                    Err(e) => Stream::Ended(format!("the event stream broke: {}", describe(&e))),
                                };
                                let last = !matches!(input, Stream::Bytes(_));
                                go_on = feed(input) && !last;
                                // Under a flood the next chunk is already queued and its read
                                // resolves in a microtask: without a task between chunks, timers
                                // (the beats), the beats' answers and the page waited until all
                                // that was queued was read (8.8 s in Chromium at 80,000 events/s).
                                if go_on {
                                    crate::host::yield_to_tasks().await;
                                }
                            }
                            return fetch::abort(&controller);
                        }
                        (200, None) => Stream::Failed("the event stream's answer has no body".into()),
                        (status, reader) => {
                            // Its start only, read for REFUSAL_BODY_MS at most (then the stream is
                            // aborted and the read ends): a refusal whose body never ends is still
                            // its status, not the engine's open timeout. One that breaks off before
                            // its end, the wait or REFUSAL_BODY is no answer (retried): cut, a
                            // `409 taken_over` would be a final refusal without its code.
                            let waited = Rc::new(std::cell::Cell::new(false));
                            let mut cut = {
                                let (controller, waited) = (controller.clone(), waited.clone());
                                Timer::new(Closure::new(move || {
                                    waited.set(true);
                                    fetch::abort(&controller)
                                }))
                            };
                            let start = crate::host::now();
                            cut.arm(Some(start.saturating_add(REFUSAL_BODY_MS)), start);
                            let mut body = Vec::new();
                            let mut broke = None;
                            while let (Some(r), true) = (&reader, body.len() < REFUSAL_BODY) {
                                match fetch::next_chunk(r).await {
                                    Ok(Some(chunk)) => body.extend(chunk),
                                    Ok(None) => break,
                                    Err(e) => {
                                        broke = Some(e).filter(|_| !waited.get());
                                        break;
                                    }
                                }
                            }
                            drop(cut);
                            body.truncate(REFUSAL_BODY);
                            match broke {
                                Some(e) => {
                                    Stream::Failed(format!("the HTTP {status} answer broke off: {}", describe(&e)))
                                }
                                None => Stream::Refused(status, String::from_utf8_lossy(&body).into_owned()),
                            }
                        }
                    }
                }
            };
            fetch::abort(&controller);
            feed(input);
        });
    }

    /// What happened to the stream of open `epoch`; whether it is still the current one.
    pub(super) fn stream_input(&mut self, epoch: u64, now: Millis, input: Stream, calls: &mut Calls) -> bool {
        let Some(current) = self.socket.as_mut().filter(|c| c.epoch == epoch) else {
            return false; // a replaced stream
        };
        self.share.bound(&mut self.conn);
        match input {
            Stream::Open => {
                current.opened = true;
                self.conn.handle_open(now);
            }
            Stream::Bytes(chunk) => {
                for slice in chunk.chunks(FEED_SLICE) {
                    self.conn.handle_bytes(now, slice);
                    self.pump(now, calls);
                    if self.socket.as_ref().is_none_or(|c| c.epoch != epoch) {
                        return false; // the engine closed or replaced the stream: the rest is not its
                    }
                }
            }
            Stream::Refused(status, body) => {
                self.retire_socket(None);
                self.conn.handle_open_failed(now, Some(status), &body);
            }
            // No answer: the message is the host's reason (a WebSocket's guess at a refused key
            // or a missing route does not apply: a refused stream has its status).
            Stream::Failed(m) => {
                self.retire_socket(None);
                self.conn.handle_open_error(now, &m);
            }
            Stream::Ended(m) => {
                self.retire_socket(None);
                self.conn.handle_close(now, 1006, &m);
            }
        }
        self.pump(now, calls);
        self.socket.as_ref().is_some_and(|c| c.epoch == epoch)
    }
}
