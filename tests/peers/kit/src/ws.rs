//! What the peers' WebSockets share: the upgrade (size-limited, within a bound) and a close that
//! waits a bounded time for the client's close frame.

use futures_util::StreamExt;
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio_tungstenite::tungstenite::handshake::server::{ErrorResponse, Request, Response};
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;
use tokio_tungstenite::tungstenite::protocol::{CloseFrame, WebSocketConfig};
use tokio_tungstenite::WebSocketStream;

// tungstenite fixes the callback's error type. The peer has chosen the route before the upgrade,
// and `read_head` has refused a request that is not this machine's (`crate::http::is_local`).
#[allow(clippy::result_large_err)]
fn any_path(_req: &Request, resp: Response) -> Result<Response, ErrorResponse> {
    Ok(resp)
}

/// Answers the upgrade on `stream` (its request head replayed, see [`crate::http::Prefixed`])
/// within `within`; messages and frames over `max_message` bytes are refused (tungstenite's
/// `Capacity` error). `None` when the upgrade failed or took too long.
pub async fn accept<S>(stream: S, max_message: usize, within: Duration) -> Option<WebSocketStream<S>>
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    let cfg = WebSocketConfig::default()
        .max_message_size(Some(max_message))
        .max_frame_size(Some(max_message));
    let upgrade = tokio_tungstenite::accept_hdr_async_with_config(stream, any_path, Some(cfg));
    tokio::time::timeout(within, upgrade).await.ok()?.ok()
}

/// Sends a close frame (`code`, `reason`) and reads until the client's close arrives, for at most
/// `grace` in all.
pub async fn close<S>(ws: &mut WebSocketStream<S>, code: u16, reason: &str, grace: Duration)
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    let frame = CloseFrame {
        code: CloseCode::from(code),
        reason: reason.to_owned().into(),
    };
    let _ = tokio::time::timeout(grace, async {
        let _ = ws.close(Some(frame)).await;
        while let Some(Ok(_)) = ws.next().await {}
    })
    .await;
}
