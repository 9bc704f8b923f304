//! How a client session is set up, and what it reports: its configuration, state, peer,
//! request options and events.

use super::*;

/// How a client session is set up. `Default` gives the guide's values. `Debug` hides the
/// `authorization`.
#[derive(Clone)]
pub struct ClientConfig {
    pub user_agent: String,
    pub from: Option<String>,
    pub capabilities: Vec<String>,
    pub min_version: u32,
    pub max_version: u32,
    /// `TTL` of each message, in seconds; also how long a request waits for its reply. At least 1.
    pub ttl_s: u32,
    pub max_message_size: usize,
    /// Requests sent or queued and not yet answered; past it, commands fail with `limit`.
    pub max_in_flight: usize,
    /// Out-of-order stream chunks held per stream; past it, the stream fails with `limit`.
    pub max_stream_buffer: usize,
    /// Bytes of out-of-order chunks held over all streams; past it, the stream fails with `limit`.
    pub max_stream_buffer_bytes: usize,
    /// How long HELLO waits for HELLO_ACK, and the AUTH of `authorization` for its AUTH_OK, in
    /// milliseconds from HELLO. A HELLO_ACK read at or past it is the handshake timeout, as if
    /// `handle_timeout` had come first. At least 1.
    pub handshake_timeout_ms: u64,
    /// `Bearer <key>`: sent as an AUTH message right after HELLO_ACK, before anything queued.
    /// It ends as `AuthOk`, or, refused or unanswered, as [`ClientEvent::Error`] (when the
    /// connection closes first, only `Closed` comes). One with no token (`""`, `"Bearer "`) is
    /// refused at open, `invalid` "authorization has no token".
    pub authorization: Option<String>,
    /// Send a PING when nothing was sent for half the server's `session_timeout` (or, for a
    /// timeout over 65 s, sooner, to leave 65 s before it ends, but after at least a quarter of
    /// it); one without a PONG within `ttl_s` closes the connection (an [`ClientEvent::Error`]
    /// of kind `timeout`) when it left, the peer has answered a PING before, and nothing
    /// arrived since.
    pub keepalive: bool,
}

impl std::fmt::Debug for ClientConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Every field named: a new one fails to compile here until it is printed.
        let ClientConfig {
            user_agent,
            from,
            capabilities,
            min_version,
            max_version,
            ttl_s,
            max_message_size,
            max_in_flight,
            max_stream_buffer,
            max_stream_buffer_bytes,
            handshake_timeout_ms,
            authorization,
            keepalive,
        } = self;
        f.debug_struct("ClientConfig")
            .field("user_agent", user_agent)
            .field("from", from)
            .field("capabilities", capabilities)
            .field("min_version", min_version)
            .field("max_version", max_version)
            .field("ttl_s", ttl_s)
            .field("max_message_size", max_message_size)
            .field("max_in_flight", max_in_flight)
            .field("max_stream_buffer", max_stream_buffer)
            .field("max_stream_buffer_bytes", max_stream_buffer_bytes)
            .field("handshake_timeout_ms", handshake_timeout_ms)
            .field("authorization", &agentwire_core::redact::redacted(authorization))
            .field("keepalive", keepalive)
            .finish()
    }
}

impl Default for ClientConfig {
    fn default() -> Self {
        ClientConfig {
            user_agent: format!("agentwire/{}", env!("CARGO_PKG_VERSION")),
            from: None,
            capabilities: Vec::new(),
            min_version: 1,
            max_version: 1,
            ttl_s: 30,
            max_message_size: codec::DEFAULT_MAX_MESSAGE_SIZE,
            max_in_flight: 1024,
            max_stream_buffer: 1024,
            max_stream_buffer_bytes: 8 << 20,
            handshake_timeout_ms: 10_000,
            authorization: None,
            keepalive: true,
        }
    }
}

impl ClientConfig {
    /// The configuration refused (kind `invalid`, naming the field) where no session could work
    /// with it: a `ttl_s` or `handshake_timeout_ms` of 0 would time every request, or the
    /// handshake, out at once; a `min_version` above `max_version` offers no version; a `from`,
    /// `user_agent` or capability with a control character (tab apart; CR and LF included) or
    /// DEL, or a capability with a comma, would make a HELLO the server cannot read (or that
    /// splits the capability in two).
    /// [`ClientSession::handle_open`] checks it.
    pub fn check(&self) -> Result<(), RktError> {
        if let Some(from) = &self.from {
            check_header_value("from", from)?;
        }
        check_header_value("user_agent", &self.user_agent)?;
        // An AUTH with an empty token is one the server can only refuse.
        if self
            .authorization
            .as_deref()
            .is_some_and(|a| super::bearer_token(a).is_empty())
        {
            return Err(RktError::local(ErrorKind::Invalid, "authorization has no token"));
        }
        check_capabilities(&self.capabilities)?;
        if self.ttl_s == 0 {
            return Err(RktError::local(ErrorKind::Invalid, "ttl_s must be at least 1 second"));
        }
        if self.handshake_timeout_ms == 0 {
            return Err(RktError::local(
                ErrorKind::Invalid,
                "handshake_timeout_ms must be at least 1",
            ));
        }
        crate::envelope::check_versions(self.min_version, self.max_version)
    }
}

/// Where the session is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClientState {
    /// Created; `handle_open` not called yet.
    Idle,
    /// HELLO sent, waiting for HELLO_ACK.
    Handshaking,
    Ready,
    /// The connection is over, for good: what the driver hands the session after it (a text or
    /// binary frame, a close, an open, the time) is ignored, with no event, frame or timer.
    Closed,
}

/// What the server said about itself in HELLO_ACK.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct PeerInfo {
    pub from: Option<String>,
    pub user_agent: Option<String>,
    pub capabilities: Vec<String>,
}

/// Options of one request.
#[derive(Debug, Clone, Default)]
pub struct RequestOptions {
    pub stream: bool,
    pub priority: Option<Priority>,
    /// Overrides `ClientConfig::ttl_s` for this request.
    pub ttl_s: Option<u32>,
    /// The `To` header. A control character in it (tab apart; CR and LF included) or DEL is
    /// refused `invalid` by [`ClientSession::request`].
    pub to: Option<String>,
    /// The body's `context`; a JSON `null` is the same as none (the body has no `context`).
    /// Written as compact JSON from the value, not from any text it was read from: see
    /// [`ClientSession::request`].
    pub context: Option<Value>,
}

/// Everything the session reports. Bodies are raw JSON text.
#[derive(Debug, Clone, PartialEq)]
pub enum ClientEvent {
    Ready {
        agreed_version: u32,
        session_timeout: u64,
        server: PeerInfo,
    },
    /// The RESPONSE to a REQUEST, DISCOVER, MEMORY_SET, MEMORY_GET or PAY.
    Response {
        id: String,
        body: Option<String>,
    },
    StreamBegin {
        id: String,
        body: Option<String>,
    },
    /// Delivered in `Seq` order, each `seq` once.
    StreamData {
        id: String,
        seq: u64,
        body: Option<String>,
    },
    StreamEnd {
        id: String,
        body: Option<String>,
    },
    AuthOk {
        id: String,
        auth: AuthOkBody,
    },
    Pong {
        id: String,
        rtt_ms: u64,
    },
    /// A command failed: an ERROR reply, its TTL ran out, it was cancelled, the connection
    /// closed, or its stream had a gap.
    Failed {
        id: String,
        error: RktError,
    },
    /// Something went wrong that belongs to no command: a malformed frame (dropped; the session
    /// goes on), an unsolicited ERROR, a failed handshake.
    Error(RktError),
    /// The server said GOODBYE.
    Goodbye,
    /// The connection is over; every pending command has had its `Failed`.
    Closed {
        code: u16,
        reason: String,
    },
}
