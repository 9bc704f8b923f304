//! The reconnect policy: which closes, refusals and open failures end the connection, which
//! reopen it, and when.

use super::{Connection, Event, State, Timer, Transmit, Transport, Wire};
use crate::error::SwitchError;
use crate::frame::{refusal_is_transient, refusal_status, EvictionCode};
use crate::unanswered::gateway_status;
use agentwire_core::{ErrorKind, Millis};

impl Connection {
    /// Drops the socket (when `close` and one is open) and schedules the next open after the
    /// jittered backoff of the next attempt, or stops after `max_reconnect_attempts` (or, before
    /// the first attach, `connect_attempts`).
    pub(super) fn reconnect(&mut self, now: Millis, code: Option<u16>, reason: &str, close: bool) {
        self.reconnect_or_fail(now, code, reason, close, None);
    }

    /// [`Connection::reconnect`], where `failure` (the last attempt's error, default a
    /// retryable `closed`) is what a connect that gives up stops with.
    pub(super) fn reconnect_or_fail(
        &mut self,
        now: Millis,
        code: Option<u16>,
        reason: &str,
        close: bool,
        failure: Option<SwitchError>,
    ) {
        if close {
            self.close_socket(reason);
        }
        self.socket_open = false;
        self.timers.clear();
        self.forget_beats();
        let tried = self.attempt.saturating_add(1);
        if let Some(max) = self
            .cfg
            .connect_attempts
            .filter(|&max| !self.ever_attached && tried >= max)
        {
            // A close's code is in `reason` ("closed with 1006"): `status` is for HTTP statuses.
            let mut error = failure.unwrap_or_else(|| SwitchError::local(ErrorKind::Closed, reason).retryable(true));
            let tries = if max > 1 {
                format!(" ({tried} attempts)")
            } else {
                String::new()
            };
            error.message = format!("could not connect{tries}: {}", error.message);
            return self.stop(Some(error), "could not connect");
        }
        // Before the first attach `connect_attempts` decides, when set.
        let reconnects = self.ever_attached || self.cfg.connect_attempts.is_none();
        if let Some(max) = self.cfg.max_reconnect_attempts.filter(|_| reconnects) {
            if self.attempt >= max {
                let s = if max == 1 { "" } else { "s" };
                let m = format!("gave up after {max} reconnect attempt{s}; last: {reason}");
                let error = SwitchError::local(ErrorKind::Closed, m).retryable(true);
                return self.stop(Some(error), "gave up");
            }
        }
        let delay = self.cfg.backoff.delay(self.attempt, &mut *self.entropy);
        self.attempt = self.attempt.saturating_add(1);
        self.state = State::Backoff;
        self.timers.set(Timer::Reopen, now.saturating_add(delay));
        self.push(Event::Disconnected {
            code,
            reason: reason.to_owned(),
            retry_in_ms: delay,
            attempt: self.attempt,
        });
    }

    /// Reopens right away, without counting an attempt (the queue drained after an overflow, or
    /// `auto` moving to SSE).
    fn reopen_now(&mut self, now: Millis, reason: &str) {
        self.close_socket(reason);
        self.socket_open = false;
        self.timers.clear();
        self.forget_beats();
        self.state = State::Backoff;
        self.timers.set(Timer::Reopen, now);
        self.push(Event::Disconnected {
            code: None,
            reason: reason.to_owned(),
            retry_in_ms: 0,
            attempt: self.attempt,
        });
    }

    /// Drops the current socket: a `Transmit::Close`, or, when the driver has not taken its
    /// `Transmit::Open` yet, that open taken back (never opened, it attached nothing).
    pub(super) fn close_socket(&mut self, reason: &str) {
        if self.socket_open {
            self.socket_open = false;
            let queued = self.transmit.len();
            self.drop_transmits(|t| matches!(t, Transmit::Open(_)));
            if self.transmit.len() != queued {
                self.open_may_attach = false;
                return;
            }
            self.transmit.push_back(Transmit::Close {
                code: 1000,
                reason: reason.to_owned(),
            });
        }
    }

    pub(super) fn on_drained(&mut self) {
        self.overflowed = false;
        if matches!(self.state, State::Attaching | State::Live) {
            let now = self.now;
            self.reopen_now(now, "reopening from the cursor after the event queue overflowed");
        }
    }

    /// A `taken_over` refusal of an open fenced with a generation that may be stale: an
    /// earlier open since the last `connection_state` was sent and not refused, and the server
    /// attaches (issuing a new generation) as soon as it reads an open, whether or not its
    /// answer comes back. The refusal may be this client's own lost attach rather than another
    /// client's takeover, which the two cannot be told apart by; instead of stopping for good,
    /// the connection forgets the generation, which the refusal proved stale, and reopens without
    /// `expected_generation` until the next `connection_state` gives it one again. So at most one
    /// `taken_over` refusal is set aside per attach (no open is fenced until then), and the
    /// unfenced opens evict whoever holds the connection, which stops for good on its `evicted`
    /// `taken_over`. Returns whether it did (otherwise the refusal is final, as the spec says).
    pub(super) fn retry_lost_attach(&mut self, now: Millis, error: &SwitchError, close: bool) -> bool {
        if !self.fence_may_be_stale || error.code.as_deref() != Some(EvictionCode::TakenOver.as_str()) {
            return false;
        }
        self.fence_may_be_stale = false;
        self.generation = None;
        let m = format!(
            "{}; an earlier open may have attached without its connection_state reaching this client, so the generation sent may be one the server moved past for this client: reopening without expected_generation until the next connection_state",
            error.message
        );
        self.reconnect(now, None, &m, close);
        true
    }

    pub(super) fn on_open_failed(&mut self, now: Millis, status: Option<u16>, body: &str) {
        self.socket_open = false;
        let Some(status) = status else {
            let reason = if body.is_empty() {
                String::new()
            } else {
                format!(": {body}")
            };
            // A browser's (or undici's) WebSocket reports a refused upgrade as this too.
            let m = format!(
                "open failed{reason} (no HTTP status: a network failure, a refused key and a server without the WebSocket route look the same)"
            );
            return self.reconnect(now, None, &m, false);
        };
        // An answer other than the upgrade or the stream: the server did not attach this open,
        // unless a gateway gave it (502, 504, 520-524: the server's answer was lost behind it,
        // after it may have read the open and attached).
        if !gateway_status(status) {
            self.open_may_attach = false;
        }
        let no_ws_route = self.wire == Wire::WebSocket && crate::open::no_websocket_route(status);
        if self.ever_attached && (no_ws_route || (self.wire == Wire::Sse && status == 404)) {
            // The route served this connection before (the wire never changes once attached):
            // a proxy or a server mid-deploy, not a server without it. A failed open, retried
            // with the backoff within `max_reconnect_attempts`.
            let route = match self.wire {
                Wire::WebSocket => "the WebSocket route",
                Wire::Sse => "the event stream",
            };
            let m = format!(
                "{} ({route} served this connection before: retried)",
                SwitchError::http(status, body).message
            );
            return self.reconnect(now, None, &m, false);
        }
        if no_ws_route && self.cfg.transport == Transport::Auto {
            self.wire = Wire::Sse;
            let m =
                format!("the WebSocket upgrade got HTTP {status} (a server without the WebSocket route); using SSE");
            self.diagnostic(SwitchError::local(ErrorKind::Version, m).with_status(status));
            return self.reopen_now(now, "switching to SSE");
        }
        let mut error = SwitchError::http(status, body);
        if no_ws_route {
            error.kind = ErrorKind::Version;
            error.message = format!(
                "{}: the server has no WebSocket route (switch-core 0.19 serves only SSE); use the SSE or auto transport",
                error.message
            );
        }
        if status == 403 && self.wire == Wire::Sse {
            // A room declared on the open the agent is not in (not a credential problem).
            error.kind = ErrorKind::Invalid;
        }
        if status == 409 && body.contains("\"contract\"") {
            error.kind = ErrorKind::Version;
        }
        if self.retry_lost_attach(now, &error, false) {
            return;
        }
        self.on_refusal(now, error, false, None);
    }

    /// The open refused with `error`'s status, over any wire (an HTTP answer, a `refused`
    /// frame, a 4000 + status close, whose `code` is given): a transient status
    /// ([`refusal_is_transient`]) reopens with the backoff, and a connect that gives up stops
    /// with `error`; any other stops, not retryable. `close`: the socket is still open (a
    /// `refused` frame) and is closed.
    pub(super) fn on_refusal(&mut self, now: Millis, error: SwitchError, close: bool, code: Option<u16>) {
        if error.status.is_some_and(refusal_is_transient) {
            let reason = error.message.clone();
            self.reconnect_or_fail(now, code, &reason, close, Some(error))
        } else {
            self.stop(Some(error.retryable(false)), "refused")
        }
    }

    pub(super) fn on_socket_closed(&mut self, now: Millis, code: u16, reason: &str) {
        self.socket_open = false;
        // The pongs not polled yet went with the socket (`handle_close`).
        let Some(status) = refusal_status(code) else {
            // 1000 (its eviction, if any, was followed when it came) and every other code.
            let reason = if reason.is_empty() {
                format!("closed with {code}")
            } else {
                format!("closed with {code}: {reason}")
            };
            return self.reconnect(now, Some(code), &reason, false);
        };
        // A refusal (4000 + status) without a `refused` frame before it: this open did not
        // attach, as a frame would say.
        self.open_may_attach = false;
        let mut error = SwitchError::refused(status, None);
        if !reason.is_empty() {
            error.message = format!("{} ({reason})", error.message);
        }
        self.on_refusal(now, error, false, Some(code));
    }
}
