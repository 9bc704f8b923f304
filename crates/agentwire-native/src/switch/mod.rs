//! Switch Rooms over tokio: [`SwitchClient`], an agent connection (WebSocket, or the released
//! generation's SSE stream plus beats) driven by the sans-IO [`agentwire_switch::Connection`],
//! and operations over HTTP/1.1.
//!
//! The engine decides everything about the protocol (open parameters, pongs, beats, resume,
//! gaps, reconnects and when to stop); the task behind a client only performs its transmits and
//! reports what happened, with time from [`crate::now_ms`] and entropy from [`crate::OsEntropy`].
//!
//! ```no_run
//! # async fn demo() -> Result<(), agentwire_switch::SwitchError> {
//! use agentwire_native::switch::SwitchClient;
//! use agentwire_switch::open::OpenParams;
//! use agentwire_switch::ops::{ConnectToRoom, PostMessage};
//! use agentwire_switch::{ConnectionConfig, Transport};
//!
//! let mut cfg = ConnectionConfig::new(OpenParams::new("agent-id", "0f8fad5b-d9cb-469f-a165-70867728950e"));
//! cfg.transport = Transport::Auto;
//! cfg.open.rooms = vec!["room-id".into()];
//! let mut client = SwitchClient::connect("http://127.0.0.1:7751", "sk_switch_...", cfg).await?;
//! client.call(&ConnectToRoom::new("room-id")).await?;
//! client.call(&PostMessage::new("hello")).await?;
//! while let Some(event) = client.next_event().await {
//!     println!("{event:?}");
//! }
//! # Ok(()) }
//! ```
//!
//! `https://` and `wss://` origins use TLS for everything (WebSocket, SSE, operations), with the
//! trust of [`crate::tls`]; `http://` and `ws://` stay plain.

mod client;
mod driver;
mod socket;

pub use client::{Events, SwitchClient, SwitchOptions, CONNECT_OPEN_TIMEOUTS, DEFAULT_OP_TIMEOUT};

use crate::http;
use agentwire_switch::frame::ConnGeneration;
use agentwire_switch::ops::{self, OpsCatalog};
use agentwire_switch::unanswered;
use agentwire_switch::{HttpRequest, State, SwitchError, Wire};
use serde_json::value::RawValue;
use std::time::Duration;

/// Where a connection is, as its task last saw it.
#[derive(Debug, Clone, PartialEq)]
pub struct Status {
    pub state: State,
    /// The transport of the current (or next) open.
    pub wire: Wire,
    /// The highest sequence handed to the reader's channel (the pong's and the resume's cursor).
    pub cursor: Option<u64>,
    /// The generation of the last `connection_state`, sent as `expected_generation` (`None` from
    /// a `taken_over` refusal of a lost attach's reopen until the next).
    pub generation: Option<ConnGeneration>,
    /// The covered rooms as the server last reported them.
    pub rooms: Vec<String>,
    /// Reconnect attempts since the connection was last stable.
    pub attempt: u32,
    /// The reason of the last `Disconnected`.
    pub last_problem: Option<String>,
}

/// `POST /agents/{agent_id}/ops/{name}` with `args` (a JSON object), without a client: acting
/// for `connection_id` when given. Returns the answer's `result`, raw. Bounded by `timeout`,
/// from connecting to the last byte (a client's operations use [`DEFAULT_OP_TIMEOUT`] unless
/// [`SwitchOptions::op_timeout`] says otherwise); past it, a `timeout` error. Under 1 ms, an
/// `invalid` error before anything is sent.
pub async fn op(
    origin: &str,
    key: &str,
    agent_id: &str,
    connection_id: Option<&str>,
    name: &str,
    args: &str,
    timeout: Duration,
) -> Result<Box<RawValue>, SwitchError> {
    check_op_timeout(timeout, "timeout")?;
    let origin = http::Origin::parse(origin)?;
    let request = ops::op(agent_id, connection_id, name, args)?;
    let (status, body) = exchange(&origin, key, &request, timeout).await?;
    ops::decode_result(status, &body).map_err(|e| unanswered::answered(&request, e))
}

/// `GET /agents/{agent_id}/ops`: the operations the server offers, without a client. Bounded by
/// `timeout`, as [`op`].
pub async fn list_ops(origin: &str, key: &str, agent_id: &str, timeout: Duration) -> Result<OpsCatalog, SwitchError> {
    check_op_timeout(timeout, "timeout")?;
    let origin = http::Origin::parse(origin)?;
    let request = ops::list_ops(agent_id)?;
    let (status, body) = exchange(&origin, key, &request, timeout).await?;
    ops::decode_ops(status, &body)
}

/// An operation's bound, checked by the engine's rule ([`ops::check_op_timeout_ms`]): under
/// 1 ms (`Duration::ZERO` would end it at the next tick), `invalid` naming the option `what`.
pub(crate) fn check_op_timeout(timeout: Duration, what: &str) -> Result<(), SwitchError> {
    let ms = u64::try_from(timeout.as_millis()).unwrap_or(u64::MAX);
    ops::check_op_timeout_ms(ms, what).map(drop)
}

/// One Switch call with the agent key: the answer, or the transport failure as a `SwitchError`.
pub(crate) async fn exchange(
    origin: &http::Origin,
    key: &str,
    request: &HttpRequest,
    timeout: Duration,
) -> Result<(u16, String), SwitchError> {
    http::exchange(origin, Some(key), request, timeout, ops::MAX_RESPONSE_BYTES)
        .await
        .map_err(|f| unanswered::unanswered(request, f.error, f.sent))
}
