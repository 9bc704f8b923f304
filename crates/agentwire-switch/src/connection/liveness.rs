//! Liveness: server pings on the WebSocket, client beats over HTTP for SSE, the open deadline
//! and the SSE stream's idle deadline.

use super::{Connection, State, Timer, Transmit, Wire};
use crate::error::SwitchError;
use crate::frame::{beat_conflict_policy, EvictionCode, EvictionPolicy};
use crate::ops::{beat, decode_beat};
use agentwire_core::{ErrorKind, Millis};

impl Connection {
    /// WebSocket: the socket is dead after `missed_heartbeats` intervals without a ping.
    pub(super) fn arm_ping(&mut self, now: Millis) {
        let window = self
            .heartbeat_ms
            .saturating_mul(u64::from(self.cfg.missed_heartbeats.max(1)));
        self.timers.set(Timer::Ping, now.saturating_add(window));
    }

    /// A ping (WebSocket) or a beat answered 200 (SSE): the server is there. The backoff starts
    /// over only once the socket has stayed live for the backoff's longest delay (`max_ms`, 30 s
    /// by default): a server that attaches and drops every socket a few seconds later (after one
    /// ping, or a relay closing after three failed upstream beats) is then reopened with a
    /// growing delay, and `max_reconnect_attempts` counts its drops, instead of being reopened
    /// at the shortest delay forever. Once a socket has lived that long, reopening at the
    /// shortest delay costs at most one open per `max_ms`, as a backoff at its cap would.
    pub(super) fn heard_from(&mut self, now: Millis) {
        // `live_since` is the current socket's only once it has attached.
        if self.state == State::Live && now.saturating_sub(self.live_since) >= self.cfg.backoff.max_ms {
            self.attempt = 0;
        }
    }

    pub(super) fn on_ping_timeout(&mut self, now: Millis) {
        if self.state != State::Live || self.wire != Wire::WebSocket {
            return;
        }
        let window = self
            .heartbeat_ms
            .saturating_mul(u64::from(self.cfg.missed_heartbeats.max(1)));
        self.reconnect(now, None, &format!("no ping for {window} ms"), true);
    }

    pub(super) fn on_open_timeout(&mut self, now: Millis) {
        if !matches!(self.state, State::Opening | State::Attaching) {
            return;
        }
        let m = format!("no connection_state within {} ms of opening", self.cfg.open_timeout_ms);
        let timeout = SwitchError::local(ErrorKind::Timeout, m.clone()).retryable(true);
        self.reconnect_or_fail(now, None, &m, true, Some(timeout));
    }

    pub(super) fn arm_stream_idle(&mut self, now: Millis) {
        if self.cfg.stream_idle_timeout_ms > 0 {
            self.timers
                .set(Timer::StreamIdle, now.saturating_add(self.cfg.stream_idle_timeout_ms));
        }
    }

    pub(super) fn on_stream_idle(&mut self, now: Millis) {
        if !matches!(self.state, State::Attaching | State::Live) || self.wire != Wire::Sse {
            return;
        }
        let m = format!("nothing on the stream for {} ms", self.cfg.stream_idle_timeout_ms);
        self.reconnect(now, None, &m, true);
    }

    /// SSE: `POST .../connection/beat {connection_id, cursor}`, every interval whether or not
    /// earlier beats were answered (the server lapses the connection 6 s after the last beat it
    /// got, so a lost one must not hold the next back).
    pub(super) fn send_beat(&mut self, now: Millis) {
        if self.state != State::Live || self.wire != Wire::Sse {
            return;
        }
        self.timers.set(Timer::Beat, now.saturating_add(self.heartbeat_ms));
        let request = match beat(
            &self.cfg.open.agent_id,
            &self.cfg.open.connection_id,
            self.cursor.unwrap_or(0),
        ) {
            Ok(r) => r,
            Err(e) => return self.stop(Some(e), "cannot beat"),
        };
        let id = self.next_http_id;
        self.next_http_id += 1;
        self.beat_in_flight = match self.beat_in_flight {
            Some((oldest, _)) => Some((oldest, id)),
            None => {
                self.arm_beat_timeout(now);
                Some((id, id))
            }
        };
        self.transmit.push_back(Transmit::Http { id, request });
    }

    /// The stream ends (the driver reported it ended, or the engine drops it): its beats are no
    /// longer waited for, and those not polled yet go with it, as a pong goes with its socket. A
    /// beat keeps the stream it was sent for alive, and the server refuses one with no stream
    /// attached; sent now, its answer would only come back as a late one.
    pub(super) fn forget_beats(&mut self) {
        self.beat_in_flight = None;
        self.drop_transmits(|t| matches!(t, Transmit::Http { .. }));
    }

    fn arm_beat_timeout(&mut self, now: Millis) {
        self.timers
            .set(Timer::BeatTimeout, now.saturating_add(self.cfg.beat_timeout_ms));
    }

    /// No answer to any beat waiting for `beat_timeout_ms`: one failed beat. The beats stay
    /// waiting (a late 200 still counts) and the next failure is counted a timeout later.
    pub(super) fn on_beat_timeout(&mut self, now: Millis) {
        if self.beat_in_flight.is_none() || self.state != State::Live {
            return;
        }
        self.arm_beat_timeout(now);
        // Those beats are counted now: their own failure (the driver's fetch timing out) later is not.
        self.beats_counted_to = self.beat_in_flight.map(|(_, latest)| latest);
        let m = format!("beat got no answer within {} ms", self.cfg.beat_timeout_ms);
        self.beat_failed(now, m);
    }

    /// An answer to a beat. After `Stopped` nothing is waited for and nothing more happens: no
    /// timer, no diagnostic.
    pub(super) fn on_beat_answer(&mut self, now: Millis, id: u64, answer: Result<(u16, &str), &str>) {
        if self.state == State::Stopped {
            return;
        }
        let Some((_, latest)) = self.beat_in_flight.filter(|(o, l)| (*o..=*l).contains(&id)) else {
            let m = format!("answer to HTTP call {id}, which is not waiting (late or unknown); dropped");
            return self.diagnostic(SwitchError::local(ErrorKind::Protocol, m));
        };
        if id == latest {
            self.beat_in_flight = None;
            self.timers.cancel(&Timer::BeatTimeout);
        } else {
            // Earlier beats than this one are no longer waited for; later ones get a fresh timeout.
            self.beat_in_flight = Some((id + 1, latest));
            self.arm_beat_timeout(now);
        }
        if self.state != State::Live {
            return;
        }
        let counted = self.beats_counted_to.is_some_and(|to| id <= to);
        let (status, body) = match answer {
            Ok(a) => a,
            Err(_) if counted => return,
            Err(reason) => return self.beat_failed(now, format!("beat failed: {reason}")),
        };
        match decode_beat(status, body) {
            Ok(b) => {
                self.beats_failed = 0;
                self.heard_from(now);
                self.drop_released();
                if !b.rooms.is_empty() || !self.rooms.is_empty() {
                    self.rooms = b.rooms;
                }
            }
            Err(e) => self.on_beat_refused(now, e, counted),
        }
    }

    /// The spec's beat table: 401 fix the key; 404 reopen; 409 reopen except `taken_over`
    /// (stop) and `closed` ([`beat_conflict_policy`]), a code this client does not know too;
    /// 422 fix the request. Anything else (5xx, 429, an unreadable 200) is a failed beat,
    /// unless its timeout was `counted` as one already.
    fn on_beat_refused(&mut self, now: Millis, e: SwitchError, counted: bool) {
        let code = e.code.as_deref().map(EvictionCode::parse);
        match (e.status, beat_conflict_policy(code.as_ref())) {
            (Some(401), _) => self.stop(Some(e), "bad credentials"),
            (Some(409), EvictionPolicy::Stop) => self.stop(Some(e.retryable(false)), "taken over"),
            (Some(409), EvictionPolicy::ReadReason) => self.stop(Some(e.retryable(false)), "closed by the server"),
            (Some(404 | 409), _) => {
                let reason = match code {
                    // A code this client does not know: said, since it decided nothing.
                    Some(EvictionCode::Other(code)) => format!("beat refused: {} ({code})", e.message),
                    _ => format!("beat refused: {}", e.message),
                };
                self.reconnect(now, None, &reason, true);
            }
            (Some(422), _) => {
                let e = SwitchError {
                    kind: ErrorKind::Protocol,
                    message: format!("the server refused this client's beat as malformed: {}", e.message),
                    ..e
                };
                self.stop(Some(e), "beat refused as malformed");
            }
            _ if counted => {}
            _ => self.beat_failed(now, format!("beat failed: {}", e.message)),
        }
    }

    /// A beat that did not get through. The server lapses the connection after its TTL, so
    /// `missed_heartbeats` in a row reopen the stream.
    fn beat_failed(&mut self, now: Millis, message: String) {
        self.beats_failed += 1;
        let limit = self.cfg.missed_heartbeats.max(1);
        if self.beats_failed >= limit {
            self.reconnect(
                now,
                None,
                &format!("{limit} beats in a row failed; last: {message}"),
                true,
            );
        } else {
            self.diagnostic(SwitchError::local(ErrorKind::Timeout, message));
        }
    }
}
