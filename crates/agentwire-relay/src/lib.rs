//! The sans-IO core of the agentwire relay (`worker-relay/`), which lets a browser use Switch
//! without ever holding an agent key.
//!
//! - [`token`]: relay tokens, minted by an app's backend and verified by the relay
//!   (HMAC-SHA256, base64url, claims `{agent_id, exp, origin?, rooms?}`).
//! - [`config`]: the relay's configuration, read from its environment and validated once.
//! - [`route`]: what the relay does with one browser request (refuse it, answer a preflight,
//!   proxy an HTTP route, open a WebSocket), with the upstream URL always built from the one
//!   configured origin.
//! - [`close`]: close codes that may cross the relay.
//! - [`limit`]: per-agent rate limits.
//! - [`redact`]: agent keys taken out of upstream text, even across a read bound.
//! - [`bridge`]: the SSE bridge that speaks the current WebSocket generation to the browser
//!   over a released (SSE + beat) server.
//!
//! Nothing here reads a clock, a socket or an environment: the Worker passes them in.

pub mod bridge;
pub mod close;
pub mod config;
pub mod limit;
pub mod redact;
pub mod route;
pub mod token;

/// The subprotocol the relay speaks and echoes.
pub const SUBPROTOCOL: &str = "agentwire.v1";
/// The prefix of the subprotocol that carries the relay token: `agentwire.token.<token>`.
pub const TOKEN_PROTOCOL_PREFIX: &str = "agentwire.token.";
/// The query parameter that may carry the relay token instead.
pub const TOKEN_QUERY: &str = "token";
