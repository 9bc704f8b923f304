//! The upstream stream: SSE bytes → the engine's frames → the current generation's WebSocket
//! frames, with the released generation's gaps filled in.

use super::{encode, Bridge, Phase, Timer};
use agentwire_core::Millis;
use agentwire_switch::frame::{decode_sse_with, ConnectionState, EventKind, Evicted, Frame, FrameError, Gap};
use agentwire_switch::sse::SseEvent;
use serde_json::value::RawValue;

/// The SSE body is fed to the parser this many bytes at a time, so one huge chunk cannot make
/// the parser's output list grow past what the pending bound allows.
const FEED_SLICE: usize = 64 << 10;

impl Bridge {
    /// Bytes of the SSE body, split anywhere. Ignored before the open's 200 and after the close.
    pub fn handle_sse(&mut self, now: Millis, chunk: &[u8]) {
        if !matches!(self.phase, Phase::Attaching | Phase::Live) {
            return;
        }
        self.arm_stream_idle(now);
        let mut events = Vec::new();
        for slice in chunk.chunks(FEED_SLICE) {
            self.sse.feed(slice, &mut events);
            for item in events.drain(..) {
                if self.phase == Phase::Closed {
                    return;
                }
                match item {
                    Ok(ev) => self.on_sse_event(now, &ev),
                    Err(e) => self.on_dropped(&FrameError::from(e), None, false),
                }
            }
            self.stats.keepalives = self.sse.comments();
        }
    }

    /// The upstream stream ended (`error: None`) or failed. Without an `evicted` before it (which
    /// already closed the bridge) that is a server that failed to deliver: 1011, and the
    /// browser reopens from its cursor.
    pub fn handle_sse_end(&mut self, _now: Millis, error: Option<&str>) {
        match (self.phase, error) {
            (Phase::Closed, _) => {}
            (Phase::Opening, Some(e)) => self.close(1011, &format!("upstream unreachable: {e}")),
            (Phase::Opening, None) => self.close(1011, "upstream unreachable"),
            (_, Some(e)) => self.close(1011, &format!("upstream stream failed: {e}")),
            (_, None) => self.close(1011, "upstream stream ended"),
        }
    }

    fn on_sse_event(&mut self, now: Millis, ev: &SseEvent) {
        let frame = decode_sse_with(&ev.event, &ev.data, ev.id.as_deref(), &self.cfg.decode_options());
        match frame {
            Ok(frame) => self.forward(now, frame),
            Err(_) if ev.event.trim() == "gap" && self.phase == Phase::Live => self.pass_unreadable_gap(&ev.data),
            Err(e) => {
                let seq = ev
                    .id
                    .as_deref()
                    .and_then(|id| agentwire_core::decimal::parse_u64(id.trim()));
                let domain = EventKind::known(&ev.event).is_some(); // as the engine reads a name: untrimmed
                self.on_dropped(&e, seq, domain);
            }
        }
    }

    /// A `gap` that cannot be read still says events were lost, and perhaps that the numbering
    /// went back: it goes to the browser as it came (its `data` as a JSON string when it is not
    /// JSON; with no data when that would not fit a frame), whose engine takes an unreadable gap
    /// as a gap of unknown extent. The numbering is unknown here too from then on: a later event
    /// that cannot be relayed is reported whatever its sequence.
    fn pass_unreadable_gap(&mut self, data: &str) {
        let gap = |raw| Frame::Unknown {
            name: "gap".into(),
            raw,
        };
        let raw = RawValue::from_string(data.to_owned()).or_else(|_| serde_json::value::to_raw_value(data));
        // Too large to pass as it came: a gap without data says the same to the engine.
        let text = raw
            .ok()
            .and_then(|raw| self.fit(gap(raw)).ok())
            .unwrap_or_else(|| encode(&gap(RawValue::NULL.to_owned())));
        self.stats.frames_forwarded += 1;
        self.stats.gaps_reported += 1;
        self.last_seq = 0;
        self.send_text(text);
    }

    /// One decoded upstream frame, translated and sent on.
    fn forward(&mut self, now: Millis, frame: Frame) {
        let mut names_rooms = false;
        let frame = match frame {
            // The bridge pings the browser itself; a ping from upstream would double them.
            Frame::Ping => return,
            Frame::ConnectionState(s) => Frame::ConnectionState(self.on_connection_state(now, s)),
            Frame::Gap(g) => {
                names_rooms = g.rooms.is_none();
                Frame::Gap(self.fill_gap(g))
            }
            Frame::Evicted(e) => Frame::Evicted(Evicted {
                code: Some(e.effective_code()),
                ..e
            }),
            Frame::SubscriptionChanged(s) => {
                self.rooms.set(&s.rooms);
                Frame::SubscriptionChanged(s)
            }
            Frame::RoomReleased(r) => {
                self.rooms.release(&r.room_id);
                Frame::RoomReleased(r)
            }
            other => other,
        };
        // What follows the frame once sent, read before `fit` takes it.
        let seq = match &frame {
            Frame::Event(e) => Some(e.sequence),
            _ => None,
        };
        let then_close = match &frame {
            // The released server ends the stream after it.
            Frame::Evicted(e) => Some((
                1000,
                format!("evicted: {}", e.code.as_ref().map_or("closed", |c| c.as_str())),
            )),
            Frame::Refused(r) => {
                let code = if (100..=999).contains(&r.status) {
                    4000 + r.status
                } else {
                    1011
                };
                Some((code, format!("refused: {}", r.detail_text())))
            }
            _ => None,
        };
        let fitted = match frame {
            Frame::Gap(g) if names_rooms => self.fit_naming_rooms(g),
            frame => self.fit(frame),
        };
        let text = match fitted {
            Ok(text) => text,
            Err(len) => {
                let m = format!(
                    "frame of {len} bytes exceeds the browser frame limit of {} bytes",
                    self.cfg.max_frame_bytes
                );
                let e = FrameError::new(agentwire_switch::frame::FrameErrorKind::TooLarge, None, m);
                return self.on_dropped(&e, seq, false);
            }
        };
        self.stats.frames_forwarded += 1;
        self.send_text(text);
        if let Some(seq) = seq {
            self.last_seq = self.last_seq.max(seq);
        }
        if let Some((code, reason)) = then_close {
            self.close(code, &reason);
        }
    }

    /// The first `connection_state` attaches the browser: pings start and the pong deadline
    /// runs. The interval announced to the browser is the one the bridge pings at.
    fn on_connection_state(&mut self, now: Millis, mut s: ConnectionState) -> ConnectionState {
        if let Some(upstream) = s.heartbeat_interval_ms() {
            self.ping_ms = self.cfg.ping_interval().min(upstream);
        }
        s.heartbeat_interval_seconds = Some(self.ping_ms as f64 / 1000.0);
        self.rooms.set(&s.rooms);
        if self.phase == Phase::Attaching {
            self.phase = Phase::Live;
            self.last_seq = s.cursor;
            self.timers.cancel(&Timer::Open);
            self.timers.set(Timer::Ping, now.saturating_add(self.ping_ms));
            self.arm_pong_ttl(now);
        }
        s
    }

    /// A released `gap` has no `rooms`, `all_rooms` or `resumed_position`. It comes from the
    /// agent's one event buffer (retention, or a restart that reset the numbering), so the loss
    /// may cover every room of the agent: `all_rooms: true`, with the covered rooms as `rooms`
    /// (added by [`Bridge::fit_naming_rooms`] when it has none).
    /// `resumed_position` stays absent: its type is not given and nothing can be derived.
    fn fill_gap(&mut self, mut g: Gap) -> Gap {
        if g.all_rooms.is_none() {
            g.all_rooms = Some(true);
        }
        self.last_seq = g.resumed_at;
        g
    }

    /// A frame that cannot reach the browser. Counted; when it was (or may have been) a domain
    /// event of an attached connection, reported as a gap so the browser re-reads the room.
    fn on_dropped(&mut self, e: &FrameError, seq: Option<u64>, domain: bool) {
        self.stats.frames_dropped += 1;
        if self.phase != Phase::Live || !(seq.is_some() || e.is_limit() || domain) {
            return;
        }
        let from = self.last_seq;
        if seq.is_some_and(|n| n <= from) {
            return; // a replay of something already forwarded: the browser drops it anyway
        }
        let resumed_at = seq.unwrap_or(from);
        self.last_seq = resumed_at;
        let which = seq.map_or_else(|| "an event".to_owned(), |n| format!("event {n}"));
        let gap = Gap {
            from_sequence: from,
            resumed_at,
            resumed_position: None,
            rooms: None,
            all_rooms: Some(false),
            reason: format!("{which} could not be relayed ({}); re-read room context", e.message),
        };
        self.stats.gaps_reported += 1;
        self.send_fitted(self.fit_naming_rooms(gap));
    }
}

#[cfg(test)]
mod tests {
    use super::super::testutil::*;
    use super::super::{BridgeConfig, Output};
    use agentwire_switch::frame::{decode, Frame};
    use agentwire_switch::sse::encode_event;

    /// Every chunking of the same bytes gives the same outputs.
    #[test]
    fn any_chunking_gives_the_same_frames() {
        let body = format!(
            "{SSE_STATE}: keepalive\n\n{}{}",
            message_frame(1, "hé"),
            message_frame(2, "two")
        );
        let whole = {
            let mut b = streaming(0);
            b.handle_sse(1, body.as_bytes());
            drain(&mut b)
        };
        assert_eq!(whole.len(), 3, "{whole:?}");
        for size in [1, 2, 3, 7, 64] {
            let mut b = streaming(0);
            for c in body.as_bytes().chunks(size) {
                b.handle_sse(1, c);
            }
            assert_eq!(drain(&mut b), whole, "chunks of {size}");
            assert_eq!(b.stats().keepalives, 1);
        }
    }

    #[test]
    fn domain_events_are_the_current_envelope_with_a_numeric_id() {
        let mut b = live(0);
        b.handle_sse(1, message_frame(7, "hello").as_bytes());
        let out = drain(&mut b);
        assert_eq!(
            text(&out[0]),
            r#"{"event":"message","data":{"type":"message","room_id":"r1","bridge_id":null,"channel_type":"channel_public","payload":{"body":"hello"},"sequence":7},"id":7}"#
        );
        let Frame::Event(e) = decode(text(&out[0])).unwrap() else {
            panic!()
        };
        assert_eq!(e.sequence, 7);
        assert_eq!(b.stats().frames_forwarded, 2);
    }

    #[test]
    fn connection_state_has_no_generation_and_the_bridge_interval() {
        let mut b = streaming(0);
        b.handle_sse(1, SSE_STATE.as_bytes());
        let out = drain(&mut b);
        let v = json(&out[0]);
        assert_eq!(v["event"], "connection_state");
        assert!(v["data"].get("generation").is_none());
        assert_eq!(v["data"]["heartbeat_interval_seconds"], 2.0);
        assert_eq!(v["data"]["server"]["version"], "0.19.0");
        assert_eq!(v["data"]["cursor"], 4);
        assert!(b.is_attached());
        // Pings start one interval after the attach.
        assert_eq!(b.poll_timeout(), Some(2_001));
    }

    #[test]
    fn a_shorter_upstream_interval_sets_the_pace() {
        let mut b = streaming(0);
        let state = SSE_STATE.replace(HB, r#""heartbeat_interval_seconds":0.25"#);
        b.handle_sse(0, state.as_bytes());
        let v = json(&drain(&mut b)[0]);
        assert_eq!(v["data"]["heartbeat_interval_seconds"], 0.25);
        assert_eq!(b.ping_interval_ms(), 250);
        // A longer one does not slow the configured pace; an absurd one is clamped.
        let mut b = streaming(0);
        b.handle_sse(
            0,
            SSE_STATE.replace(HB, r#""heartbeat_interval_seconds":60"#).as_bytes(),
        );
        assert_eq!(b.ping_interval_ms(), 2_000);
        // The browser is told the interval the bridge pings at, not the upstream's.
        let v = json(&drain(&mut b)[0]);
        assert_eq!(v["data"]["heartbeat_interval_seconds"], 2.0);
        let mut b = streaming(0);
        b.handle_sse(
            0,
            SSE_STATE.replace(HB, r#""heartbeat_interval_seconds":1e-6"#).as_bytes(),
        );
        assert_eq!(b.ping_interval_ms(), 100);
        assert_eq!(json(&drain(&mut b)[0])["data"]["heartbeat_interval_seconds"], 0.1);
        // None announced upstream: the configured interval.
        let mut b = streaming(0);
        b.handle_sse(0, SSE_STATE.replace(&format!("{HB},"), "").as_bytes());
        let v = json(&drain(&mut b)[0]);
        assert_eq!(v["data"]["heartbeat_interval_seconds"], 2.0);
    }

    #[test]
    fn released_evictions_get_their_code_then_close_1000() {
        for (reason, code) in [
            ("another stream attached to this connection", "taken_over"),
            (
                "heartbeat lapsed; reopen the stream and resume from your cursor",
                "heartbeat_lapsed",
            ),
            ("the agent was deleted", "closed"),
        ] {
            let mut b = live(0);
            let data = format!(r#"{{"reason": "{reason}"}}"#);
            b.handle_sse(1, encode_event("evicted", &data, None).as_bytes());
            b.handle_sse(2, message_frame(9, "after").as_bytes());
            let out = drain(&mut b);
            assert_eq!(out.len(), 2, "{out:?}");
            let v = json(&out[0]);
            assert_eq!(
                v,
                serde_json::json!({"event":"evicted","data":{"code":code,"reason":reason}})
            );
            assert_eq!(
                out[1],
                Output::Close {
                    code: 1000,
                    reason: format!("evicted: {code}")
                }
            );
            assert!(b.is_closed());
        }
    }

    #[test]
    fn a_refused_frame_is_forwarded_then_closes_4000_plus_its_status() {
        for (status, close) in [(409, 4409), (400, 4400), (403, 4403)] {
            let mut b = streaming(0);
            let data = format!(r#"{{"status": {status}, "detail": "no"}}"#);
            b.handle_sse(1, encode_event("refused", &data, None).as_bytes());
            let out = drain(&mut b);
            assert_eq!(out.len(), 2, "{out:?}");
            assert_eq!(
                json(&out[0]),
                serde_json::json!({"event":"refused","data":{"status":status,"detail":"no"}})
            );
            assert_eq!(
                out[1],
                Output::Close {
                    code: close,
                    reason: "refused: no".to_owned()
                }
            );
            assert!(b.is_closed());
        }
    }

    #[test]
    fn released_gaps_are_filled_in_conservatively() {
        let mut b = live(0);
        let data = r#"{"from_sequence": 40, "resumed_at": 3, "reason": "the server restarted"}"#;
        b.handle_sse(1, encode_event("gap", data, None).as_bytes());
        let v = json(&drain(&mut b)[0]);
        assert_eq!(
            v,
            serde_json::json!({"event":"gap","data":{"from_sequence":40,"resumed_at":3,"rooms":["r1"],"all_rooms":true,"reason":"the server restarted"}})
        );
        // A gap that names its rooms (a current server's) keeps them: only missing fields are
        // filled in.
        let data = r#"{"from_sequence": 3, "resumed_at": 7, "rooms": ["r2"], "all_rooms": false, "reason": "r"}"#;
        b.handle_sse(2, encode_event("gap", data, None).as_bytes());
        let v = json(&drain(&mut b)[0]);
        assert_eq!(
            v,
            serde_json::json!({"event":"gap","data":{"from_sequence":3,"resumed_at":7,"rooms":["r2"],"all_rooms":false,"reason":"r"}})
        );
    }

    #[test]
    fn after_a_gap_that_lowers_the_numbering_later_events_are_not_replays() {
        // Events up to 40, then a restart: numbering goes on from 3. An unreadable event 5 is
        // new, not a replay of the old 5: the browser gets a gap for it (from 3, where the
        // numbering resumed), not silence.
        let mut b = live(0);
        b.handle_sse(1, message_frame(40, "before").as_bytes());
        let data = r#"{"from_sequence": 41, "resumed_at": 3, "reason": "the server restarted"}"#;
        b.handle_sse(2, encode_event("gap", data, None).as_bytes());
        assert_eq!(drain(&mut b).len(), 2);
        b.handle_sse(3, encode_event("message", "{\"broken\": ", Some("5")).as_bytes());
        let out = drain(&mut b);
        assert_eq!(out.len(), 1, "a new event dropped as a replay: {out:?}");
        let gap = json(&out[0]);
        assert_eq!(gap["event"], "gap");
        assert_eq!(
            (
                gap["data"]["from_sequence"].as_u64(),
                gap["data"]["resumed_at"].as_u64()
            ),
            (Some(3), Some(5))
        );
        assert_eq!(b.stats().gaps_reported, 1);
    }

    /// An upstream gap the bridge cannot read reaches the browser as a gap (its engine takes
    /// it as one of unknown extent), and a later event that cannot be relayed is reported even
    /// below what was forwarded, since the numbering may have gone back.
    #[test]
    fn an_unreadable_gap_passes_through_and_the_numbering_is_unknown_after_it() {
        let mut b = live(0);
        b.handle_sse(1, message_frame(40, "before").as_bytes());
        drain(&mut b);
        for (data, sent) in [
            (r#"{"from_sequence": 41}"#, serde_json::json!({"from_sequence": 41})),
            ("not json", serde_json::json!("not json")),
        ] {
            b.handle_sse(2, encode_event("gap", data, None).as_bytes());
            let out = drain(&mut b);
            assert_eq!(out.len(), 1, "{out:?}");
            assert_eq!(json(&out[0]), serde_json::json!({"event": "gap", "data": sent}));
        }
        // One too large for a browser frame (escaped, 600 KB of quotes pass 1 MiB) goes without
        // its data, still a gap the engine cannot read.
        b.handle_sse(2, encode_event("gap", &"\"".repeat(600_000), None).as_bytes());
        assert_eq!(text(&drain(&mut b)[0]), r#"{"event":"gap","data":null}"#);
        // Each gap counts as forwarded, after the state and the message.
        assert_eq!((b.stats().gaps_reported, b.stats().frames_forwarded), (3, 5));
        b.handle_sse(3, encode_event("message", "{\"broken\": ", Some("5")).as_bytes());
        let gap = json(&drain(&mut b)[0]);
        assert_eq!(
            (gap["event"].as_str(), gap["data"]["resumed_at"].as_u64()),
            (Some("gap"), Some(5))
        );
    }

    #[test]
    fn subscription_changes_pass_through_and_set_the_rooms() {
        let mut b = live(0);
        let data = r#"{"rooms": ["r2"], "reason": "connect_to_room"}"#;
        b.handle_sse(1, encode_event("subscription_changed", data, None).as_bytes());
        let v = json(&drain(&mut b)[0]);
        assert_eq!(
            v,
            serde_json::json!({"event":"subscription_changed","data":{"rooms":["r2"],"reason":"connect_to_room"}})
        );
        // The next made-up gap names the new room.
        b.handle_sse(2, encode_event("message", "{bad", Some("9")).as_bytes());
        assert_eq!(json(&drain(&mut b)[0])["data"]["rooms"][0], "r2");
    }

    #[test]
    fn keepalives_pings_and_unknown_frames() {
        let mut b = live(0);
        b.handle_sse(1, b": keepalive\n\n:\n\n");
        b.handle_sse(1, encode_event("ping", "{}", None).as_bytes());
        assert!(drain(&mut b).is_empty());
        assert_eq!(b.stats().keepalives, 2);
        b.handle_sse(1, encode_event("session_commands", r#"{"x":1}"#, None).as_bytes());
        assert_eq!(
            text(&drain(&mut b)[0]),
            r#"{"event":"session_commands","data":{"x":1}}"#
        );
        b.handle_sse(1, encode_event("task_accept", r#"{"type":"task_accept","room_id":"r1","bridge_id":null,"channel_type":null,"payload":{"task_id":"t"},"sequence":5}"#, Some("5")).as_bytes());
        assert_eq!(json(&drain(&mut b)[0])["id"], 5);
    }

    #[test]
    fn a_bad_frame_is_dropped_counted_and_reported_as_a_gap_when_it_was_an_event() {
        let mut b = live(0);
        b.handle_sse(1, message_frame(5, "a").as_bytes());
        assert_eq!(drain(&mut b).len(), 1);
        // Garbage without an id and not named for a domain kind: dropped, counted, nothing sent.
        b.handle_sse(1, encode_event("weather", "}{ not json", None).as_bytes());
        assert!(drain(&mut b).is_empty());
        assert_eq!(b.stats().frames_dropped, 1);
        // An event with an id that does not decode: a gap up to it.
        b.handle_sse(1, encode_event("message", "{\"broken\": ", Some("6")).as_bytes());
        b.handle_sse(1, message_frame(7, "b").as_bytes());
        let out = drain(&mut b);
        assert_eq!(out.len(), 2);
        let gap = json(&out[0]);
        assert_eq!(gap["event"], "gap");
        assert_eq!(
            (
                gap["data"]["from_sequence"].as_u64(),
                gap["data"]["resumed_at"].as_u64()
            ),
            (Some(5), Some(6))
        );
        assert_eq!(gap["data"]["all_rooms"], false);
        assert_eq!(json(&out[1])["id"], 7);
        // A replayed bad frame at or below what was forwarded: counted only.
        b.handle_sse(1, encode_event("message", "nope", Some("3")).as_bytes());
        assert!(drain(&mut b).is_empty());
        assert_eq!((b.stats().frames_dropped, b.stats().gaps_reported), (3, 1));
        // `+8` is not a sequence number (`u64::from_str` would take it): not relayed as event
        // 8, and no gap claimed up to 8; a `message` lost all the same, so a gap from 7 to 7.
        b.handle_sse(1, encode_event("message", &message_data(8, "c"), Some("+8")).as_bytes());
        let out = drain(&mut b);
        assert_eq!(out.len(), 1);
        let gap = json(&out[0]);
        assert_eq!(
            (
                gap["event"].as_str(),
                gap["data"]["from_sequence"].as_u64(),
                gap["data"]["resumed_at"].as_u64()
            ),
            (Some("gap"), Some(7), Some(7))
        );
        assert_eq!((b.stats().frames_dropped, b.stats().gaps_reported), (4, 2));
        assert!(!b.is_closed());
    }

    /// A frame named for a domain kind that cannot be read, without an id (the local peer's
    /// garbage, a `message` cut or with a string id), is an event lost: a gap from the last
    /// sequence forwarded, as the engine reports on a direct stream; its numbering unknown, the
    /// next event is forwarded whatever its sequence.
    #[test]
    fn a_broken_domain_event_without_an_id_is_a_gap() {
        for (name, data) in [
            ("message", "}{ not json"),
            ("message", r#"{"type":"message","room_id":"r1","sequence":"6"}"#),
            ("task_update", r#"{"type":"task_update""#),
        ] {
            let mut b = live(0);
            b.handle_sse(1, message_frame(5, "a").as_bytes());
            assert_eq!(drain(&mut b).len(), 1);
            b.handle_sse(1, encode_event(name, data, None).as_bytes());
            b.handle_sse(1, message_frame(6, "b").as_bytes());
            let out = drain(&mut b);
            assert_eq!(out.len(), 2, "{name} {data}");
            let gap = json(&out[0]);
            assert_eq!(gap["event"], "gap", "{name} {data}");
            assert_eq!(gap["data"]["from_sequence"], 5);
            assert_eq!(json(&out[1])["id"], 6);
            assert_eq!((b.stats().frames_dropped, b.stats().gaps_reported), (1, 1));
        }
    }

    #[test]
    fn oversized_frames_are_dropped_not_closed() {
        let mut cfg = BridgeConfig::new("agent", CID);
        cfg.max_frame_bytes = 400;
        cfg.sse.max_event_bytes = 1000;
        cfg.sse.max_line_bytes = 1000;
        let mut b = super::super::Bridge::new(cfg, 0);
        b.handle_open_response(0, 200, Some("text/event-stream"), "");
        b.handle_sse(0, SSE_STATE.as_bytes());
        drain(&mut b);
        // SSE data over the decoder's limit: a gap to its id.
        b.handle_sse(1, message_frame(5, &"x".repeat(450)).as_bytes());
        // An SSE line over the parser's limit: its id is unknown, so the gap stays put.
        b.handle_sse(1, message_frame(6, &"y".repeat(2000)).as_bytes());
        // Data within every limit whose WebSocket text is not (the envelope adds 34 bytes).
        let fill = 390 - message_data(7, "").len();
        assert_eq!(message_data(7, &"z".repeat(fill)).len(), 390);
        b.handle_sse(1, message_frame(7, &"z".repeat(fill)).as_bytes());
        b.handle_sse(1, message_frame(8, "ok").as_bytes());
        let out = drain(&mut b);
        let frames: Vec<serde_json::Value> = out.iter().map(json).collect();
        assert_eq!(frames.len(), 4, "{frames:?}");
        assert_eq!(frames[0]["data"]["resumed_at"], 5);
        assert_eq!(frames[1]["data"]["resumed_at"], 5);
        assert_eq!(frames[2]["data"]["resumed_at"], 7);
        assert_eq!(frames[3]["id"], 8);
        assert_eq!(b.stats().frames_dropped, 3);
        assert!(b.buffered_bytes() <= 3000);
        assert!(!b.is_closed());
    }

    #[test]
    fn the_end_of_the_stream_closes_1011() {
        let mut b = live(0);
        b.handle_sse_end(1, None);
        assert!(matches!(drain(&mut b)[..], [Output::Close { code: 1011, .. }]));
        let mut b = streaming(0);
        b.handle_sse_end(1, Some("connection reset"));
        let out = drain(&mut b);
        assert!(matches!(&out[..], [Output::Close { code: 1011, reason }] if reason.contains("reset")));
        let mut b = opening(0);
        b.handle_sse_end(1, Some("refused"));
        assert!(matches!(drain(&mut b)[..], [Output::Close { code: 1011, .. }]));
    }

    #[test]
    fn an_idle_stream_closes_1011() {
        let mut b = live(0);
        b.handle_client_text(44_000, r#"{"type":"pong","cursor":4}"#);
        drain(&mut b);
        b.handle_sse(44_000, b": keepalive\n\n");
        // Pings and pongs meanwhile; the stream deadline moved to 89 s.
        let mut now = 44_000;
        while now < 88_000 {
            now += 1_000;
            b.handle_client_text(now, r#"{"type":"pong","cursor":4}"#);
            b.handle_beat_response(now, 200, r#"{"ok":true}"#);
            b.handle_timeout(now);
            assert!(!b.is_closed(), "{now}");
            drain(&mut b);
        }
        b.handle_timeout(89_001);
        assert!(matches!(drain(&mut b)[..], [Output::Close { code: 1011, .. }]));
    }

    #[test]
    fn frames_before_the_stream_opened_are_ignored() {
        let mut b = opening(0);
        b.handle_sse(1, SSE_STATE.as_bytes());
        assert!(drain(&mut b).is_empty() && !b.is_attached());
    }
}

#[cfg(test)]
mod captures {
    use super::super::testutil::*;
    use agentwire_switch::frame::{decode, decode_sse, encode, Frame};
    use agentwire_switch::sse::SseParser;

    /// Every frame captured from a running switch-core 0.19 comes out as the engine's own
    /// encoding of it (domain events byte for byte), and the engine reads it back.
    #[test]
    fn every_capture_of_switch_core_0_19_crosses_the_bridge() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/vectors/switch-0.19");
        let mut seen = 0;
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().and_then(|e| e.to_str()) != Some("sse") {
                continue;
            }
            let bytes = std::fs::read(&path).unwrap();
            let mut events = Vec::new();
            SseParser::default().feed(&bytes, &mut events);
            let ev = events.remove(0).unwrap();
            let direct = decode_sse(&ev.event, &ev.data, ev.id.as_deref()).unwrap();
            let mut b = if ev.event == "connection_state" {
                streaming(0)
            } else {
                live(0)
            };
            b.handle_sse(5, &bytes);
            let out = drain(&mut b);
            let name = path.display();
            let relayed = decode(text(&out[0])).unwrap_or_else(|e| panic!("{name}: {e}"));
            match (&direct, &relayed) {
                (Frame::Event(_), Frame::Event(_)) => assert_eq!(text(&out[0]), encode(&direct), "{name}"),
                (Frame::Evicted(d), Frame::Evicted(r)) => {
                    assert_eq!(r.code, Some(d.effective_code()), "{name}");
                    assert!(matches!(out[1], super::super::Output::Close { code: 1000, .. }));
                }
                (Frame::Gap(d), Frame::Gap(r)) => {
                    assert_eq!(
                        (r.from_sequence, r.resumed_at, &r.reason),
                        (d.from_sequence, d.resumed_at, &d.reason)
                    );
                    assert_eq!(r.all_rooms, Some(true));
                }
                (Frame::ConnectionState(d), Frame::ConnectionState(r)) => {
                    assert_eq!(
                        (&r.connection_id, &r.rooms, r.cursor),
                        (&d.connection_id, &d.rooms, d.cursor)
                    );
                    assert!(r.generation.is_none());
                }
                (Frame::SubscriptionChanged(d), Frame::SubscriptionChanged(r)) => assert_eq!(d, r),
                (d, r) => panic!("{name}: {d:?} became {r:?}"),
            }
            seen += 1;
        }
        assert_eq!(seen, 14, "captures");
    }
}
