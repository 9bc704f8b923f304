//! The WebSocket of the current generation: the key and the open are checked once the upgrade
//! is accepted (bad key: close 4401, no frame; any other refusal: a `refused` frame, then close
//! 4000 + status), then `connection_state`, catch-up and live frames, `ping` every heartbeat
//! interval, pongs read back, and the faults.

use crate::frames::{self, Encoded, Out, GARBAGE};
use crate::pump::{Pump, WRITE_TIMEOUT};
use crate::state::{EndKind, Opened};
use crate::{query, routes, Peer};
use agentwire_peer_kit::http::{Head, Prefixed, MAX_BODY, REQUEST_TIMEOUT};
use agentwire_peer_kit::ws as kit_ws;
use agentwire_switch::frame::Frame;
use futures_util::{SinkExt, StreamExt};
use std::time::Duration;
use tokio::net::TcpStream;
use tokio::sync::watch;
use tokio_tungstenite::tungstenite::{Error as WsError, Message};
use tokio_tungstenite::WebSocketStream;

type Ws = WebSocketStream<Prefixed<TcpStream>>;

/// How long a close waits for the client's close frame.
const CLOSE_GRACE: Duration = Duration::from_secs(1);
/// The same on shutdown, when the peer's owner waits for every task.
const SHUTDOWN_GRACE: Duration = Duration::from_millis(100);

async fn close(ws: &mut Ws, code: u16, reason: &str) {
    kit_ws::close(ws, code, reason, CLOSE_GRACE).await;
}

/// Upgrades and serves one WebSocket until it ends.
pub(crate) async fn serve(stream: Prefixed<TcpStream>, head: Head, peer: &Peer, stopped: watch::Receiver<bool>) {
    let Some(mut ws) = kit_ws::accept(stream, MAX_BODY, REQUEST_TIMEOUT).await else {
        return;
    };
    let Ok(agent_id) = routes::authenticate(peer, head.header("authorization")) else {
        return close(&mut ws, 4401, "").await;
    };
    let opened =
        query::parse_open(peer.cfg.generation, &head.query).and_then(|req| peer.state().open(&agent_id, &req, None));
    let opened = match opened {
        Ok(o) => o,
        Err(r) => {
            let text = Encoded::new(&frames::refused(r.status, &r.frame_detail())).ws.clone();
            let _ = tokio::time::timeout(CLOSE_GRACE, ws.send(Message::text(text))).await;
            return close(&mut ws, 4000 + r.status, "refused").await;
        }
    };
    let (agent, conn, attach) = (opened.agent_id.clone(), opened.conn_id.clone(), opened.attach_id);
    run(ws, opened, peer, stopped).await;
    peer.state().detach(&agent, &conn, attach);
}

/// How the loop ended.
enum Ending {
    /// Close with this code.
    Close(u16, &'static str),
    /// End the TCP connection without a close frame.
    Drop,
}

async fn run(mut ws: Ws, opened: Opened, peer: &Peer, mut stopped: watch::Receiver<bool>) {
    let Opened {
        agent_id,
        conn_id,
        attach_id,
        first,
        rx,
        end,
    } = opened;
    let mut pump = Pump::new(first, rx);
    let mut faults_rx = peer.faults.subscribe();
    let every = peer.cfg.heartbeat_interval.max(Duration::from_millis(1));
    let mut ticker = tokio::time::interval_at(tokio::time::Instant::now() + every, every);
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let ping = Encoded::new(&Frame::Ping).ws.clone();
    let ending = loop {
        let stalled = faults_rx.borrow().stall;
        tokio::select! {
            biased;
            _ = end.notify.notified() => break ended(end.kind()),
            _ = stopped.changed() => {
                return kit_ws::close(&mut ws, 1001, "server shutting down", SHUTDOWN_GRACE).await;
            }
            _ = faults_rx.changed() => {}
            msg = ws.next() => match msg {
                Some(Ok(Message::Text(t))) => on_text(peer, &agent_id, &conn_id, attach_id, t.as_str()),
                Some(Ok(Message::Close(_))) => break Ending::Close(1000, ""),
                Some(Ok(_)) => {}
                Some(Err(WsError::Capacity(_))) => break Ending::Close(1009, "message too big"),
                Some(Err(_)) | None => break Ending::Drop,
            },
            out = pump.next(), if !stalled => {
                // The connection ended: its queue is gone, and the end may have been signalled
                // while this pass of the select was already past the notification.
                let Some(out) = out else { break ended(end.kind()) };
                if let Some(ending) = write(&mut ws, &mut pump, peer, out).await {
                    break ending;
                }
            }
            _ = ticker.tick(), if !stalled => {
                if !peer.faults.borrow().no_pings && !send(&mut ws, ping.clone()).await {
                    break Ending::Drop;
                }
            }
        }
    };
    if let Ending::Close(code, reason) = ending {
        close(&mut ws, code, reason).await;
    }
}

/// How a socket ends when its connection was ended: a restart closes with 1012, anything else
/// drops the TCP connection.
fn ended(kind: Option<EndKind>) -> Ending {
    match kind {
        Some(EndKind::Restart) => Ending::Close(1012, "service restart"),
        _ => Ending::Drop,
    }
}

/// Writes one frame with the faults; `Some` when the socket is to end.
async fn write(ws: &mut Ws, pump: &mut Pump, peer: &Peer, out: Out) -> Option<Ending> {
    match out {
        Out::Close => Some(Ending::Close(1000, "evicted")),
        Out::Frame { domain: false, enc } => (!send(ws, enc.ws.clone()).await).then_some(Ending::Drop),
        Out::Frame { domain: true, enc } => {
            let f = pump.event(&peer.faults());
            if f.garbage && !send(ws, GARBAGE.to_owned()).await {
                return Some(Ending::Drop);
            }
            if !send(ws, enc.ws.clone()).await || f.drop_after {
                return Some(Ending::Drop);
            }
            None
        }
    }
}

/// Sends one text message; false when the socket is gone or the write blocked too long.
async fn send(ws: &mut Ws, text: String) -> bool {
    matches!(
        tokio::time::timeout(WRITE_TIMEOUT, ws.send(Message::text(text))).await,
        Ok(Ok(()))
    )
}

/// The one frame a client sends: `{"type":"pong","cursor":N}`. Anything else is ignored.
fn on_text(peer: &Peer, agent_id: &str, conn_id: &str, attach_id: u64, text: &str) {
    let Ok(v) = serde_json::from_str::<serde_json::Value>(text) else {
        return;
    };
    if v.get("type").and_then(|t| t.as_str()) != Some("pong") {
        return;
    }
    let cursor = v.get("cursor").and_then(serde_json::Value::as_u64);
    let ignore = peer.faults.borrow().ignore_heartbeats;
    peer.state().pong(agent_id, conn_id, attach_id, cursor, ignore);
}
