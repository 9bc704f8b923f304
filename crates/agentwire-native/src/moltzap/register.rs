//! [`register`]: `POST /api/v1/auth/register` over HTTP/1.1 (`https://` with TLS). The request and the answer
//! are the engine's ([`agentwire_moltzap::register`]); the shared HTTP client moves them.

use crate::http::{exchange, Origin};
use agentwire_core::Error;
use agentwire_moltzap::register::{parse_response, unanswered, Registered, Registration, MAX_RESPONSE_BYTES};
use agentwire_moltzap::MoltZapError;
use std::time::Duration;

/// Registers an agent at `origin` (`http://host:port`, a trailing `/` or path prefix allowed;
/// `ws://` is taken as its `http://`, and a trailing `/ws`, the WebSocket path of the same
/// server, is dropped): returns the agent id and its agent key. Bounded by `timeout` from
/// connecting to the last byte.
pub async fn register(
    origin: &str,
    registration: &Registration,
    timeout: Duration,
) -> Result<Registered, MoltZapError> {
    let request = registration.request()?;
    let origin = Origin::parse(http_origin(origin)).map_err(local)?;
    let (status, body) = exchange(&origin, None, &request, timeout, MAX_RESPONSE_BYTES)
        .await
        .map_err(|f| unanswered(f.error, f.sent))?;
    parse_response(status, &body)
}

fn local(e: Error) -> MoltZapError {
    MoltZapError::local(e.kind, e.message)
}

/// `origin` without the WebSocket path (`/ws`) of the same server.
fn http_origin(origin: &str) -> &str {
    let trimmed = origin.trim_end_matches('/');
    trimmed.strip_suffix("/ws").unwrap_or(trimmed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_websocket_path_is_not_part_of_the_origin() {
        assert_eq!(http_origin("ws://127.0.0.1:9/ws"), "ws://127.0.0.1:9");
        assert_eq!(http_origin("http://h/base/"), "http://h/base");
        assert_eq!(http_origin("http://h/wsx"), "http://h/wsx");
    }
}
