//! [`BridgeConfig`]: who the bridge speaks for, its pace and its bounds.

use agentwire_switch::frame::DecodeOptions;
use agentwire_switch::open::OpenParams;
use agentwire_switch::sse::SseLimits;
use agentwire_switch::ConnectionConfig;

/// The shortest ping interval the bridge uses, whatever the configuration or the upstream says:
/// the engine's bound on a `connection_state`'s interval.
pub const MIN_PING_INTERVAL_MS: u64 = agentwire_switch::frame::MIN_HEARTBEAT_INTERVAL_MS;
/// The longest ping interval the bridge uses (the engine's bound too).
pub const MAX_PING_INTERVAL_MS: u64 = agentwire_switch::frame::MAX_HEARTBEAT_INTERVAL_MS;

/// How one bridge behaves. [`BridgeConfig::new`] gives the documented defaults.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BridgeConfig {
    /// The agent of the token (the path of the upstream stream and of every beat).
    pub agent_id: String,
    /// The browser's `connection_id` (a UUID), forwarded on the upstream open and on every beat.
    pub connection_id: String,
    /// A `ping` frame to the browser this often once attached (2 s, the spec's interval). When
    /// the upstream's `connection_state` announces a shorter `heartbeat_interval_seconds`, that
    /// is used instead (beats must keep the upstream's pace); clamped to 100 ms..=600 s.
    pub ping_interval_ms: u64,
    /// Ping intervals without a pong before the browser is evicted `heartbeat_lapsed` (3: the
    /// spec's 6 s TTL at 2 s).
    pub missed_pongs: u32,
    /// Largest WebSocket text frame sent to the browser (1 MiB, Cloudflare's message limit); also
    /// the decoder's limit on one SSE frame's `data`. [`BridgeConfig::set_max_frame_bytes`] sets
    /// it with the SSE bounds that go with it.
    pub max_frame_bytes: usize,
    /// Deepest JSON nesting of one SSE frame (64, the engine's default).
    pub max_depth: usize,
    /// The SSE parser's bounds (by default `max_frame_bytes` of data per event and per line,
    /// plus room for the `data: ` prefix: [`SseLimits::for_message`], as a client connection's).
    pub sse: SseLimits,
    /// From [`Bridge::new`](super::Bridge::new) to the upstream's `connection_state` (10 s, as
    /// the engine waits).
    pub open_timeout_ms: u64,
    /// No byte at all on the upstream stream for this long (45 s: three of switch-core's 15 s
    /// keepalives) and it counts as dead.
    pub stream_idle_timeout_ms: u64,
    /// A beat without an answer for this long means the Worker's fetch is stuck (10 s). The
    /// Worker sets it to `UPSTREAM_TIMEOUT_MS` and gives its beat `fetch` no timeout of its own,
    /// so this is the one bound on a beat.
    pub beat_timeout_ms: u64,
    /// Failed beats in a row (network failure, 5xx, 429, 422, ...) before the bridge gives up (3).
    pub max_beat_failures: u32,
    /// Bytes of browser frames waiting in [`poll_output`](super::Bridge::poll_output) (4 MiB).
    /// The Worker drains after every input; past the bound the bridge closes with 1011 and the
    /// browser resumes from its cursor.
    pub max_pending_bytes: usize,
    /// Bytes of frames sent to the browser that it has not acknowledged yet (8 MiB). A browser
    /// acknowledges everything sent before a `ping` by answering it: WebSocket frames arrive in
    /// order and a spec client answers each ping as it reads it. Past this bound
    /// [`Bridge::wants_sse`](super::Bridge::wants_sse) is false and the Worker stops reading the
    /// upstream stream until the browser catches up, so a slow browser holds back the upstream
    /// (over TCP) rather than the Worker's memory: workerd queues WebSocket sends without limit
    /// and cannot say how much is queued. A browser that stops reading stops answering pings too,
    /// and is evicted `heartbeat_lapsed` after `missed_pongs` intervals. The stream is held back
    /// sooner, at a window fitted to how fast the browser reads (256 KiB at first, up to this
    /// bound), so that a ping never waits much over an interval behind what is unread
    /// (`docs/relay-bridge.md`, "The window").
    pub max_unacked_bytes: usize,
}

impl BridgeConfig {
    pub fn new(agent_id: impl Into<String>, connection_id: impl Into<String>) -> Self {
        let (agent_id, connection_id) = (agent_id.into(), connection_id.into());
        // The engine's defaults, where the bridge does what a client connection does.
        let engine = ConnectionConfig::new(OpenParams::new(agent_id.clone(), connection_id.clone()));
        BridgeConfig {
            agent_id,
            connection_id,
            ping_interval_ms: engine.heartbeat_interval_ms,
            missed_pongs: engine.missed_heartbeats,
            max_frame_bytes: engine.decode.max_message_bytes,
            max_depth: engine.decode.max_depth,
            sse: engine.sse,
            open_timeout_ms: engine.open_timeout_ms,
            stream_idle_timeout_ms: engine.stream_idle_timeout_ms,
            beat_timeout_ms: 10_000,
            max_beat_failures: 3,
            max_pending_bytes: 4 << 20,
            max_unacked_bytes: 8 << 20,
        }
    }

    /// The largest frame, `n` bytes: to the browser, and from the upstream (the decoder's bound
    /// and the SSE parser's, [`SseLimits::for_message`]), as
    /// [`ConnectionConfig::set_max_message_bytes`] sets a client connection's.
    pub fn set_max_frame_bytes(&mut self, n: usize) {
        self.max_frame_bytes = n;
        self.sse = SseLimits::for_message(n);
    }

    pub(super) fn decode_options(&self) -> DecodeOptions {
        DecodeOptions {
            max_message_bytes: self.max_frame_bytes,
            max_depth: self.max_depth.max(1),
        }
    }

    /// The configured ping interval, clamped.
    pub(super) fn ping_interval(&self) -> u64 {
        self.ping_interval_ms.clamp(MIN_PING_INTERVAL_MS, MAX_PING_INTERVAL_MS)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The bridge bounds a frame as a client connection does, by default and when set.
    #[test]
    fn frame_bounds_are_a_client_connections() {
        let mut bridge = BridgeConfig::new("a", "c");
        let mut client = ConnectionConfig::new(OpenParams::new("a", "c"));
        let same = |b: &BridgeConfig, c: &ConnectionConfig| {
            assert_eq!((b.max_frame_bytes, b.sse), (c.decode.max_message_bytes, c.sse));
        };
        same(&bridge, &client);
        bridge.set_max_frame_bytes(5000);
        client.set_max_message_bytes(5000);
        same(&bridge, &client);
        assert_eq!(bridge.sse.max_line_bytes, 5000 + agentwire_switch::sse::LINE_OVERHEAD);
    }
}
