//! Liveness across the bridge: `ping` frames to the browser, its pongs turned into beats
//! upstream, and the beats' answers turned into the current generation's evictions and closes.

use super::{Bridge, Output, Phase, Timer};
use agentwire_core::Millis;
use agentwire_switch::frame::{beat_conflict_policy, Evicted, EvictionCode, EvictionPolicy, Frame};
use agentwire_switch::ops;
use agentwire_switch::SwitchError;
use serde::Deserialize;
use serde_json::value::RawValue;
use std::borrow::Cow;

/// Pings whose pong is awaited that keep a mark, at most (24 bytes each).
const MAX_PING_MARKS: usize = 1024;

/// A browser text longer than this is not a pong and is not parsed.
const MAX_PONG_BYTES: usize = 1024;

/// The bytes a browser may first be behind (`max_unacked_bytes` when that is less): a ping
/// waits behind them, so a browser reading 64 KB/s still answers the first ping within the TTL.
pub(super) const INITIAL_WINDOW_BYTES: u64 = 256 << 10;

/// The least the window shrinks to (`max_unacked_bytes` when that is less).
const MIN_WINDOW_BYTES: u64 = 64 << 10;

pub(super) fn initial_window(max_unacked_bytes: usize) -> u64 {
    INITIAL_WINDOW_BYTES.min(max_unacked_bytes as u64)
}

impl Bridge {
    pub(super) fn on_ping_timer(&mut self, now: Millis) {
        if self.phase != Phase::Live {
            return;
        }
        self.stats.pings_sent += 1;
        self.send_frame(Frame::Ping);
        // The pong to this ping acknowledges every frame before it. Marks are numbered, so a
        // browser far behind but still answering is credited for the pings it answered; past
        // MAX_PING_MARKS a ping gets no mark, and its pong credits the latest earlier one.
        if self.ping_marks.len() < MAX_PING_MARKS {
            self.ping_marks.push_back((self.stats.pings_sent, self.sent_bytes, now));
        }
        self.timers.set(Timer::Ping, now.saturating_add(self.ping_ms));
    }

    pub(super) fn arm_pong_ttl(&mut self, now: Millis) {
        let ttl = self.ping_ms.saturating_mul(u64::from(self.cfg.missed_pongs.max(1)));
        self.timers.set(Timer::PongTtl, now.saturating_add(ttl));
    }

    /// No pong for the TTL: what a current server does (`evicted heartbeat_lapsed`, close 1000).
    /// The upstream lapses the connection on its own: no beat reaches it any more.
    pub(super) fn on_pong_lapsed(&mut self) {
        if self.phase != Phase::Live {
            return;
        }
        let ttl = self.ping_ms.saturating_mul(u64::from(self.cfg.missed_pongs.max(1)));
        self.evict(
            EvictionCode::HeartbeatLapsed,
            format!("heartbeat lapsed: no pong for {ttl} ms; reopen and resume from your cursor"),
        );
    }

    /// A text frame from the browser. Only `{"type":"pong","cursor":N}` means something (the spec:
    /// the server ignores anything else); it becomes a beat. A pong without a readable cursor
    /// still counts as alive and beats with the cursor already known.
    pub fn handle_client_text(&mut self, now: Millis, text: &str) {
        if self.phase == Phase::Closed {
            return;
        }
        let cursor = match (self.phase, parse_pong(text)) {
            (Phase::Live, Some(cursor)) => cursor,
            _ => {
                self.stats.client_texts_ignored += 1;
                return;
            }
        };
        self.stats.pongs += 1;
        // It answers the oldest ping not answered yet (a pong with no ping to answer
        // acknowledges nothing): what was sent before that ping, or before the latest earlier
        // one that has a mark.
        if self.pings_answered < self.stats.pings_sent {
            self.pings_answered += 1;
            let (before, mut waited) = (self.acked_bytes, None);
            while let Some(&(p, bytes, sent)) = self.ping_marks.front().filter(|(p, ..)| *p <= self.pings_answered) {
                self.ping_marks.pop_front();
                self.acked_bytes = self.acked_bytes.max(bytes);
                waited = (p == self.pings_answered).then(|| now.saturating_sub(sent));
            }
            if let Some(waited) = waited {
                self.fit_window(waited, self.acked_bytes - before);
            }
        }
        if let Some(c) = cursor {
            self.cursor = Some(self.cursor.map_or(c, |old| old.max(c)));
        }
        self.arm_pong_ttl(now);
        if self.beat_in_flight {
            self.beat_wanted = true;
        } else {
            self.send_beat(now);
        }
    }

    /// Fits the window to the browser by how long the pong to a ping took (`waited`) and what it
    /// acknowledged (`acked` bytes): a ping waits behind what the browser has not read, so a
    /// pong later than one interval means the window holds more than an interval of the
    /// browser's reading, and it shrinks to about one interval's worth (`window × interval /
    /// waited`, not below 64 KiB); a quick pong that acknowledged half a window or more (the
    /// window was in use, and read with time to spare) lets it double, up to
    /// `max_unacked_bytes`. Quick is within a quarter of an interval, or, for a browser far
    /// away, at most a quarter interval and at most one round trip beyond the round trip (the
    /// least `waited` of the earlier pongs): a browser 600 ms away never answered within 500 ms,
    /// and its window stayed 256 KiB for good (128 KiB/s). Pongs then come within about an
    /// interval of their ping, and beats within the TTL, however slowly the browser reads a
    /// flood; a fixed `max_unacked_bytes` (8 MiB) had a browser reading under 1.4 MB/s answer
    /// after the 6 s TTL, evicted `heartbeat_lapsed` on every reopen.
    fn fit_window(&mut self, waited: Millis, acked: u64) {
        let max = self.cfg.max_unacked_bytes as u64;
        let floor = MIN_WINDOW_BYTES.min(max);
        // The round trip as the earlier pongs tell it (0 before the first). Beyond it, the
        // browser was reading; a near browser is judged as before (within a quarter interval).
        let round_trip = self.round_trip.unwrap_or(0);
        self.round_trip = Some(self.round_trip.map_or(waited, |r| r.min(waited)));
        let beyond = waited.saturating_sub(round_trip);
        let quick = waited <= self.ping_ms / 4 || beyond <= round_trip.min(self.ping_ms / 4);
        if waited > self.ping_ms {
            let fitted = u128::from(self.window) * u128::from(self.ping_ms) / u128::from(waited);
            self.window = (fitted as u64).max(floor);
        } else if quick && acked >= self.window / 2 {
            self.window = self.window.saturating_mul(2).min(max);
        }
    }

    fn send_beat(&mut self, now: Millis) {
        self.beat_wanted = false;
        let cursor = self.cursor.unwrap_or(0);
        match ops::beat(&self.cfg.agent_id, &self.cfg.connection_id, cursor) {
            Ok(request) => {
                self.beat_in_flight = true;
                self.stats.beats_sent += 1;
                self.timers
                    .set(Timer::BeatTimeout, now.saturating_add(self.cfg.beat_timeout_ms));
                self.out.push_back(Output::Beat(request));
            }
            // `new` checked both ids; nothing else can fail.
            Err(e) => self.close(1011, &format!("cannot beat: {}", e.message)),
        }
    }

    /// The answer to the last [`Output::Beat`]: its status (0: no answer, a network failure) and
    /// body. Without a beat in flight it is ignored.
    pub fn handle_beat_response(&mut self, now: Millis, status: u16, body: &str) {
        if self.phase == Phase::Closed {
            return;
        }
        if !self.beat_in_flight {
            self.stats.beat_answers_ignored += 1;
            return;
        }
        self.beat_in_flight = false;
        self.timers.cancel(&Timer::BeatTimeout);
        match status {
            // Alive. The body (`{ok, rooms, cursor}`) is not needed: the browser learns its rooms
            // from the stream's frames.
            200..=299 => self.beat_failures = 0,
            // The relay's own key refused (revoked while the bridge ran): a retryable 1011
            // with the relay's reason, never 4401 (final for the browser).
            401 => return self.close(crate::close::KEY_REFUSED, crate::close::KEY_REFUSED_REASON),
            404 => {
                // "The connection is unknown or dead": the released server forgot it because its
                // liveness lapsed, which a current server reports as `heartbeat_lapsed`
                // (recoverable: the browser reopens and resumes).
                let e = SwitchError::http(404, body);
                return self.evict(
                    EvictionCode::HeartbeatLapsed,
                    reason_of(&e, "connection unknown or dead"),
                );
            }
            409 => {
                // The body's `code`: `no_stream`, `unfenced` or `taken_over` (final); 0.19 may
                // send none, which means no stream attached. A code the eviction table does not
                // name is one the beat table reopens on (the engine's `beat_conflict_policy`),
                // where an `evicted` frame with it would stop the browser: `no_stream`, with the
                // code in the reason.
                let e = SwitchError::http(409, body);
                let code = e.code.as_deref().map_or(EvictionCode::NoStream, EvictionCode::parse);
                let reason = reason_of(&e, "beat refused");
                let resume = beat_conflict_policy(Some(&code)) == EvictionPolicy::Resume;
                return match code {
                    EvictionCode::Other(other) if resume => {
                        let reason = format!("{reason} ({other})");
                        self.evict(EvictionCode::NoStream, reason)
                    }
                    code => self.evict(code, reason),
                };
            }
            _ => {
                // 422 (our beat malformed), 429, 5xx, a network failure: retried at the next pong.
                self.stats.beats_failed += 1;
                self.beat_failures += 1;
                if self.beat_failures >= self.cfg.max_beat_failures.max(1) {
                    let what = if status == 0 {
                        "no answer".to_owned()
                    } else {
                        format!("HTTP {status}")
                    };
                    let m = format!("{} beats in a row failed (last: {what})", self.beat_failures);
                    return self.close(1011, &m);
                }
            }
        }
        if self.beat_wanted {
            self.send_beat(now);
        }
    }

    /// `evicted {code, reason}` to the browser, then close 1000.
    fn evict(&mut self, code: EvictionCode, reason: String) {
        let close_reason = format!("evicted: {}", code.as_str());
        self.send_frame(Frame::Evicted(Evicted {
            code: Some(code),
            reason,
            room_id: None,
        }));
        self.close(1000, &close_reason);
    }
}

/// `Some(cursor)` for a pong (the cursor when it is a non-negative integer), `None` for
/// anything else.
fn parse_pong(text: &str) -> Option<Option<u64>> {
    #[derive(Deserialize)]
    struct Pong<'a> {
        #[serde(borrow, default, rename = "type")]
        kind: Option<Cow<'a, str>>,
        #[serde(borrow, default)]
        cursor: Option<&'a RawValue>,
    }
    if text.len() > MAX_PONG_BYTES {
        return None;
    }
    let pong: Pong<'_> = serde_json::from_str(text).ok()?;
    if pong.kind? != "pong" {
        return None;
    }
    Some(pong.cursor.and_then(|c| c.get().parse::<u64>().ok()))
}

/// The server's detail text, or `fallback` when it gave none.
fn reason_of(e: &SwitchError, fallback: &str) -> String {
    let status = e.status.unwrap_or(0);
    match e.message.strip_prefix(&format!("HTTP {status}: ")) {
        Some(text) if !text.is_empty() => text.to_owned(),
        _ => fallback.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::super::testutil::*;
    use super::super::{Bridge, BridgeConfig, Output};
    use super::*;

    fn pong(b: &mut Bridge, now: Millis, cursor: u64) {
        b.handle_client_text(now, &format!(r#"{{"type":"pong","cursor":{cursor}}}"#));
    }

    fn beat_cursor(o: &Output) -> u64 {
        let Output::Beat(req) = o else { panic!("{o:?}") };
        assert_eq!(req.path, "/agents/agent/connection/beat");
        let v: serde_json::Value = serde_json::from_str(req.body.as_deref().unwrap()).unwrap();
        assert_eq!(v["connection_id"], CID);
        v["cursor"].as_u64().unwrap()
    }

    /// A browser under a flood (an upstream that always has more) reading steadily at `rate`
    /// bytes a second and answering each ping once it has read everything before it, `lat` ms
    /// away (a frame reaches it `lat` ms after the bridge outputs it, a pong the bridge `lat` ms
    /// after it is sent); every beat is answered 200 at once. The longest time without a beat
    /// (counted from the attach, to the end or the close), whether the bridge closed, and the
    /// bytes the browser read.
    fn flood(rate: u64, lat: Millis, secs: u64) -> (Millis, bool, u64) {
        let mut b = live(0);
        let chunk: String = (0..100).map(|i| message_frame(5 + i, &"x".repeat(300))).collect();
        let mut w = Browser {
            lat,
            ..Browser::default()
        };
        for now in (2..secs * 1000).step_by(10) {
            b.handle_timeout(now);
            w.take(&mut b, now);
            while b.wants_sse() && !w.closed {
                b.handle_sse(now, chunk.as_bytes());
                w.take(&mut b, now);
            }
            w.budget += rate / 100;
            while let Some(&(_, len, ping)) = w.unread.front().filter(|u| u.0 <= now && u.1 <= w.budget) {
                (w.budget, w.read) = (w.budget - len, w.read + len);
                w.unread.pop_front();
                if ping {
                    w.pongs.push_back(now + lat);
                }
            }
            if w.unread.front().is_none_or(|u| u.0 > now) {
                w.budget = 0;
            }
            while w.pongs.front().is_some_and(|&at| at <= now) {
                w.pongs.pop_front();
                pong(&mut b, now, 0);
                w.take(&mut b, now);
            }
            if w.closed {
                return (w.longest.max(now - w.last_beat), true, w.read);
            }
        }
        (w.longest.max(secs * 1000 - w.last_beat), false, w.read)
    }

    #[derive(Default)]
    struct Browser {
        /// Frames not read yet: when each reaches the browser, its length, and whether it is a
        /// ping.
        unread: std::collections::VecDeque<(Millis, u64, bool)>,
        /// When each pong sent reaches the bridge.
        pongs: std::collections::VecDeque<Millis>,
        /// The one-way latency, ms.
        lat: Millis,
        budget: u64,
        read: u64,
        last_beat: Millis,
        longest: Millis,
        closed: bool,
    }

    impl Browser {
        fn take(&mut self, b: &mut Bridge, now: Millis) {
            while let Some(o) = b.poll_output() {
                match o {
                    Output::ToClient(t) => {
                        self.unread
                            .push_back((now + self.lat, t.len() as u64, t.contains("\"ping\"")))
                    }
                    Output::Beat(_) => {
                        self.longest = self.longest.max(now - self.last_beat);
                        self.last_beat = now;
                        b.handle_beat_response(now, 200, r#"{"ok":true,"rooms":[],"cursor":0}"#);
                    }
                    Output::Close { .. } => self.closed = true,
                }
            }
        }
    }

    /// The spec's TTL is 6 s: a browser that reads a flood steadily, 100 KB/s or 4 MB/s,
    /// answering every ping as it reads it, keeps its connection, the upstream hears a beat
    /// well within every 6 s, and the browser reads most of what it can. Before, the bridge let
    /// `max_unacked_bytes` (8 MiB) wait unread before a ping: 8 s of reading at 1 MB/s, no pong
    /// and no beat meanwhile, and the browser was evicted `heartbeat_lapsed` (after every reopen).
    #[test]
    fn a_browser_reading_a_flood_steadily_keeps_its_beats_within_the_ttl() {
        for rate in [100_000, 1_000_000, 4_000_000] {
            reads_a_flood(rate, 0, 4_500);
        }
    }

    /// A browser 300 ms away (600 ms round trip: satellite, 3G) reading a flood at 2 MB/s gets
    /// no pong back within a quarter interval, however fast it reads: the window must not judge
    /// its reading by the round trip. Before, it stayed 256 KiB for good, 128 KiB/s.
    #[test]
    fn a_browser_far_away_reading_a_flood_fast_gets_a_window_that_grows() {
        reads_a_flood(2_000_000, 300, 6_000);
    }

    /// A browser `lat` ms away reading a flood at `rate` B/s for 30 s keeps its connection,
    /// hears a beat within `most` ms each time, and reads at least half of what it could.
    fn reads_a_flood(rate: u64, lat: Millis, most: Millis) {
        let (longest, closed, read) = flood(rate, lat, 30);
        let at = format!("{rate} B/s, {lat} ms away");
        assert!(
            !closed && longest <= most,
            "{at}: closed {closed}, {longest} ms without a beat"
        );
        assert!(read >= rate * 30 / 2, "{at}: read {read} in 30 s");
    }

    #[test]
    fn pings_every_interval_from_the_attach() {
        let mut b = live(0); // attached at 1
        let mut pings = 0;
        for t in (0..=10_000).step_by(100) {
            b.handle_timeout(t);
            for o in drain(&mut b) {
                assert_eq!(text(&o), r#"{"event":"ping","data":{}}"#);
                pings += 1;
            }
            if t % 2_000 == 1_000 {
                pong(&mut b, t, 4);
                b.handle_beat_response(t, 200, "{}");
                drain(&mut b);
            }
        }
        assert_eq!(pings, 4, "at 2001, 4001, 6001, 8001 (checked every 100 ms)");
        assert!(matches!(
            agentwire_switch::frame::decode(r#"{"event":"ping","data":{}}"#).unwrap(),
            Frame::Ping
        ));
    }

    #[test]
    fn a_pong_is_a_beat_with_a_cursor_that_never_goes_back() {
        let mut b = live(0);
        pong(&mut b, 10, 7);
        let out = drain(&mut b);
        assert_eq!(beat_cursor(&out[0]), 7);
        b.handle_beat_response(11, 200, r#"{"ok":true,"rooms":["r1"],"cursor":7}"#);
        pong(&mut b, 12, 3);
        assert_eq!(beat_cursor(&drain(&mut b)[0]), 7);
        b.handle_beat_response(13, 200, "");
        // A pong without a cursor is alive all the same.
        b.handle_client_text(14, r#"{"type":"pong"}"#);
        assert_eq!(beat_cursor(&drain(&mut b)[0]), 7);
        b.handle_beat_response(15, 200, "not json");
        b.handle_client_text(16, r#"{"type":"pong","cursor":9,"generation":3}"#);
        assert_eq!(beat_cursor(&drain(&mut b)[0]), 9);
        assert_eq!(b.stats().pongs, 4);
    }

    #[test]
    fn one_beat_in_flight_and_pongs_meanwhile_fold_into_one() {
        let mut b = live(0);
        pong(&mut b, 10, 5);
        assert_eq!(drain(&mut b).len(), 1);
        pong(&mut b, 20, 6);
        pong(&mut b, 30, 8);
        assert!(drain(&mut b).is_empty(), "a beat is in flight");
        b.handle_beat_response(40, 200, "{}");
        let out = drain(&mut b);
        assert_eq!(out.len(), 1);
        assert_eq!(beat_cursor(&out[0]), 8);
        b.handle_beat_response(50, 200, "{}");
        assert!(drain(&mut b).is_empty());
        // An answer with nothing in flight is ignored.
        b.handle_beat_response(60, 401, "");
        assert!(drain(&mut b).is_empty() && !b.is_closed());
        assert_eq!(b.stats().beat_answers_ignored, 1);
    }

    #[test]
    fn anything_but_a_pong_is_ignored_and_counted() {
        let mut b = live(0);
        for t in [
            "",
            "hello",
            "{}",
            r#"{"type":"ping"}"#,
            r#"{"type":"PONG","cursor":1}"#,
            r#"{"event":"pong","cursor":1}"#,
            r#"[{"type":"pong"}]"#,
        ] {
            b.handle_client_text(1, t);
        }
        b.handle_client_text(
            1,
            &format!(r#"{{"type":"pong","cursor":1,"pad":"{}"}}"#, "x".repeat(2000)),
        );
        assert!(drain(&mut b).is_empty());
        assert_eq!(b.stats().client_texts_ignored, 8);
        // Before the attach, even a pong is ignored.
        let mut b = streaming(0);
        pong(&mut b, 1, 1);
        assert!(drain(&mut b).is_empty());
        assert_eq!(b.stats().client_texts_ignored, 1);
    }

    #[test]
    fn no_pong_for_the_ttl_evicts_heartbeat_lapsed() {
        let mut b = live(0); // attached at 1: TTL 6 s
        b.handle_timeout(6_000);
        assert!(!b.is_closed());
        pong(&mut b, 6_000, 4); // moves it to 12 s
        b.handle_beat_response(6_000, 200, "{}");
        b.handle_timeout(11_999);
        assert!(!b.is_closed());
        drain(&mut b);
        b.handle_timeout(12_000);
        let out = drain(&mut b);
        assert_eq!(out.len(), 2, "{out:?}");
        let v = json(&out[0]);
        assert_eq!(
            (v["event"].as_str(), v["data"]["code"].as_str()),
            (Some("evicted"), Some("heartbeat_lapsed"))
        );
        assert!(v["data"]["reason"].as_str().unwrap().starts_with("heartbeat lapsed"));
        assert_eq!(
            out[1],
            Output::Close {
                code: 1000,
                reason: "evicted: heartbeat_lapsed".into()
            }
        );
    }

    fn answered(status: u16, body: &str) -> Vec<Output> {
        let mut b = live(0);
        pong(&mut b, 10, 5);
        drain(&mut b);
        b.handle_beat_response(11, status, body);
        drain(&mut b)
    }

    #[test]
    fn beat_refusals_become_evictions_and_closes() {
        let out = answered(401, "Invalid credentials");
        assert_eq!(
            out,
            vec![Output::Close {
                code: 1011,
                reason: crate::close::KEY_REFUSED_REASON.into()
            }]
        );

        let out = answered(
            404,
            r#"{"detail":"connection c is not open; reconnect and resume from your cursor"}"#,
        );
        let v = json(&out[0]);
        assert_eq!(v["data"]["code"], "heartbeat_lapsed");
        assert_eq!(
            v["data"]["reason"],
            "connection c is not open; reconnect and resume from your cursor"
        );
        assert!(matches!(out[1], Output::Close { code: 1000, .. }));

        for (body, code) in [
            (r#"{"detail":"no stream","code":"no_stream"}"#, "no_stream"),
            (r#"{"detail":"moved on","code":"unfenced"}"#, "unfenced"),
            (r#"{"detail":"taken","code":"taken_over"}"#, "taken_over"),
            (r#"{"detail":"connection c has no stream attached"}"#, "no_stream"),
            ("", "no_stream"),
        ] {
            let out = answered(409, body);
            assert_eq!(out.len(), 2, "{out:?}");
            assert_eq!(json(&out[0])["data"]["code"], code, "{body}");
            assert_eq!(
                out[1],
                Output::Close {
                    code: 1000,
                    reason: format!("evicted: {code}")
                }
            );
        }
        // A code the eviction table does not name: the beat table says reopen (the engine's
        // `beat_conflict_policy`), which an `evicted` frame with that code would not (an unknown
        // eviction code stops): `no_stream`, the code said in the reason. `closed` stays.
        let out = answered(409, r#"{"detail":"lease moved","code":"lease_expired"}"#);
        let v = json(&out[0]);
        assert_eq!(v["data"]["code"], "no_stream", "{out:?}");
        assert_eq!(v["data"]["reason"], "lease moved (lease_expired)");
        let out = answered(409, r#"{"detail":"agent deleted","code":"closed"}"#);
        assert_eq!(json(&out[0])["data"]["code"], "closed", "{out:?}");
        // The engine's reading of a taken_over eviction: final.
        let out = answered(409, r#"{"detail":"taken","code":"taken_over"}"#);
        let Frame::Evicted(e) = agentwire_switch::frame::decode(text(&out[0])).unwrap() else {
            panic!()
        };
        assert!(!e.effective_code().should_reconnect());
    }

    #[test]
    fn other_failures_retry_at_the_next_pong_then_close_1011() {
        let mut b = live(0);
        let mut t = 10;
        for status in [0, 503] {
            pong(&mut b, t, 5);
            assert_eq!(drain(&mut b).len(), 1);
            b.handle_beat_response(t, status, "");
            assert!(drain(&mut b).is_empty() && !b.is_closed());
            t += 10;
        }
        // A success resets the count.
        pong(&mut b, t, 5);
        drain(&mut b);
        b.handle_beat_response(t, 200, "{}");
        for (i, status) in [422, 429, 500].into_iter().enumerate() {
            t += 10;
            pong(&mut b, t, 5);
            assert_eq!(drain(&mut b).len(), 1);
            b.handle_beat_response(t, status, r#"{"detail":"x"}"#);
            let out = drain(&mut b);
            if i < 2 {
                assert!(out.is_empty());
            } else {
                assert_eq!(
                    out,
                    [Output::Close {
                        code: 1011,
                        reason: "3 beats in a row failed (last: HTTP 500)".into()
                    }]
                );
            }
        }
        assert_eq!(b.stats().beats_failed, 5);
        // The reason names the last failure: no answer at all is not an HTTP status.
        let mut b = live(0);
        for t in [10, 20, 30] {
            pong(&mut b, t, 5);
            drain(&mut b);
            b.handle_beat_response(t, 0, "");
        }
        assert_eq!(
            drain(&mut b),
            [Output::Close {
                code: 1011,
                reason: "3 beats in a row failed (last: no answer)".into()
            }]
        );
    }

    #[test]
    fn a_failed_beat_with_a_pong_waiting_beats_again_at_once() {
        let mut b = live(0);
        pong(&mut b, 10, 5);
        drain(&mut b);
        pong(&mut b, 20, 6);
        b.handle_beat_response(30, 0, "");
        let out = drain(&mut b);
        assert_eq!(out.len(), 1);
        assert_eq!(beat_cursor(&out[0]), 6);
    }

    #[test]
    fn a_beat_never_answered_closes_1011() {
        let mut cfg = BridgeConfig::new("agent", CID);
        cfg.beat_timeout_ms = 3_000;
        let mut b = Bridge::new(cfg, 0);
        b.handle_open_response(0, 200, Some("text/event-stream"), "");
        b.handle_sse(0, SSE_STATE.as_bytes());
        drain(&mut b);
        pong(&mut b, 100, 4);
        drain(&mut b);
        b.handle_timeout(3_099);
        assert!(!b.is_closed(), "{:?}", drain(&mut b));
        drain(&mut b);
        b.handle_timeout(3_100);
        assert!(matches!(drain(&mut b)[..], [Output::Close { code: 1011, ref reason }] if reason.contains("beat")));
    }

    #[test]
    fn pong_parsing() {
        assert_eq!(parse_pong(r#"{"type":"pong","cursor":4813}"#), Some(Some(4813)));
        assert_eq!(parse_pong(r#" { "cursor" : 1 , "type" : "pong" } "#), Some(Some(1)));
        assert_eq!(parse_pong(r#"{"type":"pong","cursor":-1}"#), Some(None));
        assert_eq!(parse_pong(r#"{"type":"pong","cursor":"5"}"#), Some(None));
        assert_eq!(parse_pong(r#"{"type":"pong","cursor":1.5}"#), Some(None));
        assert_eq!(parse_pong(r#"{"type":"pong","cursor":null}"#), Some(None));
        assert_eq!(parse_pong(r#"{"type":"pon\u0067"}"#), Some(None));
        assert_eq!(parse_pong(r#"{"type":7,"cursor":1}"#), None);
        assert_eq!(parse_pong(r#"{"type":"pong""#), None);
        // `MAX_PONG_BYTES` is the longest text read: one byte more is not parsed.
        let pong_of = |len: usize| {
            let head = r#"{"type":"pong","cursor":3,"pad":""#;
            let text = format!("{head}{}\"}}", "x".repeat(len - head.len() - 2));
            assert_eq!(text.len(), len);
            parse_pong(&text)
        };
        assert_eq!(pong_of(MAX_PONG_BYTES), Some(Some(3)));
        assert_eq!(pong_of(MAX_PONG_BYTES + 1), None);
    }
}
