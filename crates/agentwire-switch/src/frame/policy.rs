//! What a client does after an eviction or a close, and the one frame a client sends.

/// The `code` of an `evicted` frame (also the body `code` of a 409 from the SSE beat).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum EvictionCode {
    /// Another open took the connection. Final.
    TakenOver,
    /// The connection stopped answering pings. Resume.
    HeartbeatLapsed,
    /// The server refused the last pong: no stream attached. Resume.
    NoStream,
    /// The server refused the last pong: the generation moved on. Resume.
    Unfenced,
    /// The server refused the last pong: it could not record it. Resume.
    ConnectionError,
    /// The server closed the connection; read `reason`, don't retry automatically.
    Closed,
    /// A code this client does not know, passed through.
    Other(String),
}

/// What to do after an eviction, per the spec's table.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum EvictionPolicy {
    /// Reopen with the same `connection_id`, `start_from` = cursor, `expected_generation`.
    Resume,
    /// Stop; reconnecting would take the connection back from the client that won it.
    Stop,
    /// Don't retry automatically; the `reason` says whether the cause is permanent.
    ReadReason,
}

impl EvictionCode {
    pub fn parse(code: &str) -> Self {
        match code {
            "taken_over" => EvictionCode::TakenOver,
            "heartbeat_lapsed" => EvictionCode::HeartbeatLapsed,
            "no_stream" => EvictionCode::NoStream,
            "unfenced" => EvictionCode::Unfenced,
            "connection_error" => EvictionCode::ConnectionError,
            "closed" => EvictionCode::Closed,
            other => EvictionCode::Other(other.to_owned()),
        }
    }

    pub fn as_str(&self) -> &str {
        match self {
            EvictionCode::TakenOver => "taken_over",
            EvictionCode::HeartbeatLapsed => "heartbeat_lapsed",
            EvictionCode::NoStream => "no_stream",
            EvictionCode::Unfenced => "unfenced",
            EvictionCode::ConnectionError => "connection_error",
            EvictionCode::Closed => "closed",
            EvictionCode::Other(s) => s,
        }
    }

    /// The spec's table. An unknown code is treated like `closed`: not automatically.
    pub fn policy(&self) -> EvictionPolicy {
        match self {
            EvictionCode::TakenOver => EvictionPolicy::Stop,
            EvictionCode::HeartbeatLapsed
            | EvictionCode::NoStream
            | EvictionCode::Unfenced
            | EvictionCode::ConnectionError => EvictionPolicy::Resume,
            EvictionCode::Closed | EvictionCode::Other(_) => EvictionPolicy::ReadReason,
        }
    }

    /// True only for the codes the spec says to resume after.
    pub fn should_reconnect(&self) -> bool {
        self.policy() == EvictionPolicy::Resume
    }
}

/// What to do after a beat answered 409 with this body `code` (none: switch-core 0.19, no stream
/// attached). The spec's beat table: "Reopen the stream, except on `taken_over`: stop"; and
/// "the same codes come back in the body of a 409 from the SSE heartbeat", so `closed` is not
/// retried automatically, as after an `evicted` frame. A code the eviction table does not name
/// is not `closed`: the beat table decides, resume (unlike an `evicted` frame's unknown code).
pub fn beat_conflict_policy(code: Option<&EvictionCode>) -> EvictionPolicy {
    match code {
        Some(EvictionCode::TakenOver) => EvictionPolicy::Stop,
        Some(EvictionCode::Closed) => EvictionPolicy::ReadReason,
        _ => EvictionPolicy::Resume,
    }
}

/// The code of a released (0.19) `evicted {reason}`, which carries free text only.
pub fn eviction_from_reason(reason: &str) -> EvictionCode {
    if reason == "another stream attached to this connection" {
        EvictionCode::TakenOver
    } else if reason.starts_with("heartbeat lapsed") {
        EvictionCode::HeartbeatLapsed
    } else {
        EvictionCode::Closed
    }
}

/// What to do when the socket closes with a given code.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ClosePolicy {
    /// Reopen and resume from the cursor.
    Reconnect,
    /// Don't reconnect: the request, key or rooms must change first (a refusal).
    Stop,
    /// A normal close: follow the `evicted` frame that preceded it (its code decides); with no
    /// eviction seen, the client closed it or the server ended cleanly.
    FollowEviction,
}

/// The close-code table of the spec. 1011 (server failed to deliver), 1012 (web server restart)
/// and any other non-4xxx code (1001, 1006: a drop) reconnect; 4000 + status is a refusal,
/// decided as the same status refusing the open over HTTP ([`refusal_is_transient`]): a
/// transient status (4408, 4429, 45xx) reconnects, any other stops.
pub fn close_code_policy(code: u16) -> ClosePolicy {
    match refusal_status(code) {
        Some(status) if refusal_is_transient(status) => ClosePolicy::Reconnect,
        Some(_) => ClosePolicy::Stop,
        None if code == 1000 => ClosePolicy::FollowEviction,
        None => ClosePolicy::Reconnect,
    }
}

/// Whether a refusal of the open with this HTTP status is transient: the same open may succeed
/// later (408 timeout, 429 too many requests, 5xx), so the connection reopens with its backoff.
/// The one rule for every wire: an HTTP answer to the upgrade or the stream open, a `refused`
/// frame's `status`, a 4000 + status close. Any other status is final (the request, key or
/// rooms must change first).
pub fn refusal_is_transient(status: u16) -> bool {
    matches!(status, 408 | 429 | 500..=599)
}

/// The HTTP status a 4xxx close code carries (4409 → 409), if any.
pub fn refusal_status(code: u16) -> Option<u16> {
    (4000..=4999).contains(&code).then(|| code - 4000)
}

/// The pong, the only frame a client sends: exactly `{"type":"pong","cursor":N}`.
pub fn encode_pong(cursor: u64) -> String {
    format!(r#"{{"type":"pong","cursor":{cursor}}}"#)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every reason switch-released-0.19.md lists, the long one included: the 0.19 stream sends
    /// "heartbeat lapsed; reopen the stream and resume from your cursor", and it must resume.
    #[test]
    fn released_reasons_give_the_code_of_the_table() {
        for (reason, code) in [
            ("another stream attached to this connection", EvictionCode::TakenOver),
            ("heartbeat lapsed", EvictionCode::HeartbeatLapsed),
            (
                "heartbeat lapsed; reopen the stream and resume from your cursor",
                EvictionCode::HeartbeatLapsed,
            ),
            ("the agent was deleted", EvictionCode::Closed),
        ] {
            assert_eq!(eviction_from_reason(reason), code, "{reason}");
        }
        assert!(
            eviction_from_reason("heartbeat lapsed; reopen the stream and resume from your cursor").should_reconnect()
        );
    }
}
