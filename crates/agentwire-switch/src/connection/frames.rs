//! What each decoded frame does to the connection.

use super::{Connection, Event, Item, State, Timer, Wire};
use crate::error::SwitchError;
use crate::frame::{
    encode_pong, ConnectionState, DomainEvent, EventKind, Evicted, EvictionPolicy, Frame, FrameError, Gap, Refused,
};
use agentwire_core::{ErrorKind, Millis};

impl Connection {
    /// `name` and `sequence` are what the transport says about an undecodable frame: the SSE
    /// `event:` and `id:` lines, or the top-level `"event"` and `"id"` of a WebSocket message
    /// ([`crate::frame::event_id_hint`]).
    pub(super) fn on_decoded(
        &mut self,
        now: Millis,
        frame: Result<Frame, FrameError>,
        name: Option<&str>,
        sequence: Option<u64>,
    ) {
        let frame = match frame {
            Ok(f) => f,
            Err(e) => return self.on_undecodable(&e, name, sequence),
        };
        match frame {
            Frame::ConnectionState(s) => self.on_connection_state(now, s),
            Frame::Refused(r) => self.on_refused(r),
            Frame::Evicted(e) => self.on_evicted(now, e),
            _ if self.state != State::Live => {
                let m = "a frame before `connection_state`; dropped (connection_state is always first)";
                self.diagnostic(SwitchError::local(ErrorKind::Protocol, m));
            }
            Frame::Event(e) => self.on_event(e),
            Frame::Ping => self.on_ping(now),
            Frame::Gap(g) => self.on_gap(g),
            Frame::SubscriptionChanged(s) => {
                self.remember_rooms(&s.rooms);
                self.push(Event::SubscriptionChanged(s));
            }
            Frame::RoomReleased(r) => {
                // Taken out of `rooms` and `declare` once the input is read (`drop_released`).
                self.released.push(r.room_id.clone());
                self.push(Event::RoomReleased(r));
            }
            Frame::Unknown { name, raw } => self.push(Event::Control { name, raw }),
        }
    }

    /// A frame that could not be decoded. When it was (or may have been) a domain event (its
    /// sequence is readable, its name is a domain kind, or it is over a limit), the event is lost
    /// to this client: that is recorded as a gap held for the next event, so the user re-reads
    /// the room. Its sequence is unchecked (the frame is broken), so it never moves the dedup
    /// bound or the cursor: a wrong one would drop every later event below it.
    /// A `gap` frame that could not be read is still a gap, from what was received, in every
    /// room; its `resumed_at` is unknown, so the next event is taken whatever its sequence (a
    /// lost numbering would otherwise make every later event a duplicate). Anything else is a
    /// diagnostic.
    pub(super) fn on_undecodable(&mut self, e: &FrameError, name: Option<&str>, sequence: Option<u64>) {
        let mut err = SwitchError::from(e.clone());
        if let Some(field) = &e.field {
            err.code = Some(field.clone());
        }
        err.message = format!("frame dropped: {}", err.message);
        self.diagnostic(err);
        if name == Some("connection_state") && self.state == State::Attaching {
            return self.on_unreadable_attach(e);
        }
        let gap = name == Some("gap");
        // A domain kind's name makes it a domain event whatever else is broken (its id absent,
        // a string, or cut off): the spec's rule, so no loss is hidden.
        let domain = name.is_some_and(|n| EventKind::known(n).is_some());
        let may_be_event = sequence.is_some() || e.is_limit() || domain;
        if self.state != State::Live || self.overflowed || !(gap || may_be_event) {
            return;
        }
        let from = self.received.unwrap_or(0);
        if gap {
            self.numbering_unknown = true;
            return self.push_gap(Gap {
                from_sequence: from,
                resumed_at: from,
                resumed_position: None,
                rooms: None,
                all_rooms: Some(true),
                reason: format!(
                    "a gap frame could not be read ({}); events may be missing in any room: re-read room context",
                    e.message
                ),
            });
        }
        if sequence.is_some_and(|n| n <= from) {
            return; // a duplicate of something already taken
        }
        let which = sequence.map_or_else(|| "an event".to_owned(), |n| format!("an event (id {n})"));
        self.push_gap(Gap {
            from_sequence: from,
            resumed_at: from,
            resumed_position: None,
            rooms: None,
            all_rooms: None,
            reason: format!("{which} could not be read ({}); re-read room context", e.message),
        });
    }

    /// The socket's `connection_state` could not be read: it cannot attach, and no other
    /// `connection_state` comes on it, so it closes now rather than at the open deadline. Before
    /// the first attach the connection stops with the decode error, not retryable (the same
    /// server sends the same frame again), whatever `connect_attempts` says, as
    /// `handle_open_unusable` does; once it has been live, it reopens with the backoff.
    fn on_unreadable_attach(&mut self, e: &FrameError) {
        let mut error = SwitchError::from(e.clone());
        error.code = e.field.clone();
        error.message = format!("connection_state could not be read: {}", error.message);
        if self.ever_attached {
            let (now, reason) = (self.now, error.message);
            return self.reconnect(now, None, &reason, true);
        }
        error.message = format!("could not connect: {}", error.message);
        self.stop(Some(error.retryable(false)), "unreadable connection_state");
    }

    fn on_connection_state(&mut self, now: Millis, s: ConnectionState) {
        if s.connection_id != self.cfg.open.connection_id {
            let m = format!(
                "connection_state names connection {:?}, not this one ({:?}); kept, but the server may be confused",
                s.connection_id, self.cfg.open.connection_id
            );
            self.diagnostic(SwitchError::local(ErrorKind::Protocol, m));
        }
        if let Some(g) = &s.generation {
            // One the open URL cannot carry would make every reopen fail: reopen unfenced
            // instead (the previous generation is stale and would be refused as taken over).
            match crate::open::check_query_value("generation", &g.to_string()) {
                Ok(()) => self.generation = Some(g.clone()),
                Err(e) => {
                    self.generation = None;
                    let m = format!("{}; reopens go without expected_generation", e.message);
                    self.diagnostic(SwitchError::local(ErrorKind::Protocol, m));
                }
            }
        }
        if let Some(ms) = s.heartbeat_interval_ms() {
            self.heartbeat_ms = ms;
        }
        if self.cursor.is_none() && self.received.is_none() {
            // Nothing processed yet: the server's cursor is where reading starts.
            self.cursor = Some(s.cursor);
            self.received = Some(s.cursor);
        }
        self.remember_rooms(&s.rooms);
        let resumed = self.ever_attached;
        self.ever_attached = true;
        let attach = self.state != State::Live;
        if attach {
            self.live_since = now;
            self.attach_unconfirmed = false;
            self.open_may_attach = false;
            self.fence_may_be_stale = false;
        }
        self.state = State::Live;
        self.timers.cancel(&Timer::Open);
        match self.wire {
            Wire::WebSocket => self.arm_ping(now),
            Wire::Sse => self.timers.set(Timer::Beat, now.saturating_add(self.heartbeat_ms)),
        }
        let mut connected = Event::Connected {
            state: s,
            wire: self.wire,
            resumed,
        };
        if !attach {
            return self.push(connected);
        }
        // An attach's Connected is never refused for its bytes: past them it goes without the
        // server's room list and parts.
        if self.over_control_bytes(connected.queued_bytes()) {
            if let Event::Connected { state, .. } = &mut connected {
                state.rooms = Vec::new();
                state.server = None;
                state.client = None;
            }
        }
        self.push_bounded(connected, false);
    }

    fn on_refused(&mut self, r: Refused) {
        let error = SwitchError::refused(r.status, Some(&r.detail));
        // A refusal: this open did not attach.
        self.open_may_attach = false;
        if self.retry_lost_attach(self.now, &error, true) {
            return;
        }
        // The close (4000 + status) follows; decide now (the close then finds the connection in
        // backoff, or stopped, and changes nothing), by the rule of an HTTP refusal.
        self.on_refusal(self.now, error, true, None);
    }

    fn on_event(&mut self, e: DomainEvent) {
        if let Some(high) = self.received.filter(|_| !self.numbering_unknown) {
            if e.sequence <= high {
                self.duplicates += 1;
                if std::mem::replace(&mut self.in_duplicate_run, true) {
                    return; // one diagnostic per run of replayed events
                }
                let m = format!(
                    "event {} ({}) is at or below sequence {high}, already received; dropped",
                    e.sequence,
                    e.kind.as_str()
                );
                return self.diagnostic(SwitchError::local(ErrorKind::Protocol, m).with_code("duplicate"));
            }
        }
        self.in_duplicate_run = false;
        if self.overflowed {
            // Taking a later event now would skip the ones already refused: wait for the reopen.
            return;
        }
        if self.queued_events >= self.cfg.max_queued_events || self.queued_bytes >= self.cfg.max_queued_bytes {
            if !self.overflowed {
                self.overflowed = true;
                let m = format!(
                    "{} events ({} bytes) wait to be polled; later ones are not taken and the connection reopens from the cursor once they are",
                    self.queued_events, self.queued_bytes
                );
                self.diagnostic(SwitchError::local(ErrorKind::Limit, m));
            }
            return;
        }
        if std::mem::take(&mut self.numbering_unknown) {
            if let Some(high) = self.received.filter(|&high| e.sequence <= high) {
                let m = format!(
                    "event {} is at or below sequence {high}, already received, but taken: a gap that could not be read may have numbered events again",
                    e.sequence
                );
                self.diagnostic(SwitchError::local(ErrorKind::Protocol, m));
            }
        }
        self.received = Some(e.sequence);
        self.queued_events += 1;
        self.queued_bytes += super::domain_bytes(&e);
        self.queue.push_back(Item::Event(Event::Event { event: e, gap: None }));
    }

    fn on_ping(&mut self, now: Millis) {
        if self.wire != Wire::WebSocket {
            return;
        }
        self.transmit
            .push_back(super::Transmit::Text(encode_pong(self.cursor.unwrap_or(0))));
        self.pongs_unsent += 1;
        self.heard_from(now);
        self.arm_ping(now);
    }

    fn on_gap(&mut self, g: Gap) {
        // Events after the gap are numbered from `resumed_at`: they are new even when below the
        // old numbering (a restart that lost it).
        if self.overflowed {
            // Events before it were refused; the reopen asks for them again, and the server
            // sends this gap again if it still applies.
            return;
        }
        self.received = Some(g.resumed_at);
        self.numbering_unknown = false;
        self.push_gap(g);
    }

    fn on_evicted(&mut self, now: Millis, e: Evicted) {
        let code = e.effective_code();
        // It always goes in the queue (one per socket): the server's text is cut to 512 bytes.
        let e = Evicted {
            reason: agentwire_core::text::clip(&e.reason, agentwire_core::text::QUOTE_MAX).into_owned(),
            ..e
        };
        // The user sees the code even when the server sent only text (switch-core 0.19).
        self.push(Event::Evicted(Evicted {
            code: Some(code.clone()),
            ..e.clone()
        }));
        match code.policy() {
            EvictionPolicy::Resume => self.reconnect(now, None, &format!("evicted: {}", code.as_str()), true),
            EvictionPolicy::Stop => {
                let error = SwitchError::local(
                    ErrorKind::Closed,
                    format!("taken over by another open of this connection id: {}", e.reason),
                )
                .with_code(code.as_str())
                .retryable(false);
                self.stop(Some(error), "taken over");
            }
            EvictionPolicy::ReadReason => {
                let error = SwitchError::local(
                    ErrorKind::Closed,
                    format!(
                        "the server closed the connection: {} (not retried automatically)",
                        e.reason
                    ),
                )
                .with_code(code.as_str())
                .retryable(false);
                self.stop(Some(error), "closed by the server");
            }
        }
    }
}
