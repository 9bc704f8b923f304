//! The driver's side of the token's renewal (`refreshToken`; when, in `refresh.rs`): the call,
//! its answer, its failure, and the reopen that waited for it.

use super::driver::Driver;
use super::refresh::{check_token, token_exp};
use crate::host::wall;
use crate::socket::{deliver_calls, describe, Calls};
use agentwire_core::{ErrorKind, Millis};
use agentwire_switch::{Event, State, SwitchError};
use js_sys::Promise;
use std::rc::Rc;
use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::{spawn_local, JsFuture};

impl Driver {
    /// Calls `refreshToken` (in a task of its own: never while the driver is borrowed), then
    /// takes its token, or reports its failure, and releases the reopen that waited.
    pub(super) fn renew(&mut self, now: Millis) {
        let Some(r) = &mut self.refresh else { return };
        let n = r.start(now);
        let (f, me) = (r.f.clone(), self.me.clone());
        spawn_local(async move {
            let got = match f.call1(&JsValue::UNDEFINED, &JsValue::UNDEFINED) {
                Ok(v) => JsFuture::from(Promise::resolve(&v)).await,
                Err(e) => Err(e),
            };
            let Some(state) = me.upgrade() else { return };
            let _ = deliver_calls(&state, |d, now, calls| {
                d.renewed(now, n, got, calls);
                d.pump(now, calls);
            });
        });
    }

    pub(super) fn renewed(&mut self, now: Millis, n: u64, got: Result<JsValue, JsValue>, calls: &mut Calls) {
        let Some(r) = &mut self.refresh else { return }; // stopped meanwhile
        let current = r.answered(n);
        let wall = wall();
        let token = got.map_err(|e| describe(&e)).and_then(|t| {
            let t = t.as_string().ok_or("it returned no string")?;
            check_token(&t)?;
            Ok(t)
        });
        let (t, (take, ahead)) = match token {
            Ok(t) => {
                let exp = token_exp(&t);
                (t, r.answer(exp, wall))
            }
            Err(m) if current => return self.refresh_failed(now, &m, calls),
            Err(_) => return, // a call given up on: its failure was reported then
        };
        if let (Some(by), Some(f)) = (ahead, &self.on_event) {
            // The relay judges expiry: the token goes all the same.
            let m = format!(
                "this clock looks {} s ahead at least: refreshToken's token looks expired",
                by / 1000
            );
            calls.push_event(
                f,
                Event::Diagnostic(SwitchError::local(ErrorKind::Auth, m)).to_json_lazy(),
            );
        }
        if take {
            // Also from a call given up on: its token outlives the current one.
            r.schedule(token_exp(&t), wall);
            self.token = Rc::from(t);
            self.tokens += 1;
        } else if r.stale || !r.ahead {
            // One expiring no later would be renewed again at once, without end.
            if current {
                self.refresh_failed(now, "its token expires no later", calls);
            }
            return;
        } // else the same token, the clock ahead: the reopen goes with it (the relay judges)
        self.release(now, None);
    }

    /// The call in flight failed (`m`, or it did not answer in time): a diagnostic, and the reopen
    /// that waited is released.
    pub(super) fn refresh_failed(&mut self, now: Millis, m: &str, calls: &mut Calls) {
        let Some(r) = &mut self.refresh else { return };
        r.failed(wall());
        let m = format!("refreshToken failed: {m}");
        if let Some(f) = &self.on_event {
            let e = SwitchError::local(ErrorKind::Auth, m.clone());
            calls.push_event(f, Event::Diagnostic(e).to_json_lazy());
        }
        self.release(now, Some(&m));
    }

    /// Makes the reopen that waited for the renewal, if the engine still waits for it; after a
    /// failed renewal (`failure`) with the token still expired, fails it instead (the relay would
    /// refuse it, 4401, and the connection would stop for good): the engine retries it with its
    /// backoff, and that reopen calls `refreshToken` again.
    pub(super) fn release(&mut self, now: Millis, failure: Option<&str>) {
        let Some(open) = self.waiting_open.take() else { return };
        if self.conn.state() != State::Opening {
            return; // its deadline passed (its close follows)
        }
        match failure.filter(|_| self.refresh.as_ref().is_some_and(|r| r.spent(wall()))) {
            Some(m) => self.conn.handle_open_error(now, m),
            None => self.open(now, open),
        }
    }
}
