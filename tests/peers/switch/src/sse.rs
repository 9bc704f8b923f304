//! The SSE stream (`GET /agents/{id}/events`), both generations. Open errors are HTTP statuses
//! with `{"detail": ...}` bodies; a stream is `200 text/event-stream` with
//! `Transfer-Encoding: chunked` (one chunk per SSE frame) and `Connection: close`: the stream
//! ends with the last chunk (`0\r\n\r\n`) on an eviction or a restart, without it on an abrupt
//! drop. `: keepalive` comments when idle.

use crate::frames::{Out, GARBAGE};
use crate::http::{respond, Reply};
use crate::pump::{Pump, WRITE_TIMEOUT};
use crate::state::{EndKind, Opened};
use crate::{query, routes, Peer};
use agentwire_peer_kit::http::Head;
use agentwire_switch::sse::{encode_comment, encode_event};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::watch;
use tokio::time::Instant;

const RESPONSE_HEAD: &str = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream; charset=utf-8\r\n\
    cache-control: no-cache\r\nx-accel-buffering: no\r\ntransfer-encoding: chunked\r\nconnection: close\r\n\r\n";

/// Writes `bytes` within [`WRITE_TIMEOUT`]; false when the client is gone or stuck.
async fn put(tcp: &mut TcpStream, bytes: &[u8]) -> bool {
    matches!(
        tokio::time::timeout(WRITE_TIMEOUT, tcp.write_all(bytes)).await,
        Ok(Ok(()))
    )
}

/// One SSE frame as one chunk.
async fn chunk(tcp: &mut TcpStream, frame: &str) -> bool {
    let mut out = Vec::with_capacity(frame.len() + 16);
    out.extend_from_slice(format!("{:x}\r\n", frame.len()).as_bytes());
    out.extend_from_slice(frame.as_bytes());
    out.extend_from_slice(b"\r\n");
    put(tcp, &out).await
}

/// The last chunk, then the TCP connection is closed.
async fn finish(tcp: &mut TcpStream) {
    if put(tcp, b"0\r\n\r\n").await {
        let _ = tokio::time::timeout(WRITE_TIMEOUT, tcp.shutdown()).await;
    }
}

/// Opens and serves one stream until it ends.
pub(crate) async fn serve(mut tcp: TcpStream, head: Head, peer: &Peer, stopped: watch::Receiver<bool>) {
    let agent_id = match routes::authenticate(peer, head.header("authorization")) {
        Ok(a) => a,
        Err(reply) => return respond(&mut tcp, reply).await,
    };
    let last_event_id = head.header("last-event-id").and_then(|v| v.trim().parse::<u64>().ok());
    let opened = query::parse_open(peer.cfg.generation, &head.query)
        .and_then(|req| peer.state().open(&agent_id, &req, last_event_id));
    let opened = match opened {
        Ok(o) => o,
        Err(r) => return respond(&mut tcp, Reply::json(r.status, r.body())).await,
    };
    let (agent, conn, attach) = (opened.agent_id.clone(), opened.conn_id.clone(), opened.attach_id);
    if put(&mut tcp, RESPONSE_HEAD.as_bytes()).await {
        run(&mut tcp, opened, peer, stopped).await;
    }
    peer.state().detach(&agent, &conn, attach);
}

/// How the loop ended.
enum Ending {
    /// With the last chunk.
    Finish,
    /// Without it.
    Drop,
}

async fn run(tcp: &mut TcpStream, opened: Opened, peer: &Peer, mut stopped: watch::Receiver<bool>) {
    let Opened { first, rx, end, .. } = opened;
    let mut pump = Pump::new(first, rx);
    let mut faults_rx = peer.faults.subscribe();
    let keepalive = peer.cfg.keepalive.max(std::time::Duration::from_millis(1));
    let mut idle_until = Instant::now() + keepalive;
    let comment = encode_comment("keepalive");
    let garbage = encode_event("message", GARBAGE, None);
    let mut scratch = [0u8; 1024];
    let ending = loop {
        let stalled = faults_rx.borrow().stall;
        tokio::select! {
            biased;
            _ = end.notify.notified() => break match end.kind() {
                Some(EndKind::Restart) => Ending::Finish,
                _ => Ending::Drop,
            },
            _ = stopped.changed() => break Ending::Finish,
            _ = faults_rx.changed() => {}
            // The client sends nothing on a stream: a read ends only when it goes away.
            r = tcp.read(&mut scratch) => if matches!(r, Ok(0) | Err(_)) {
                break Ending::Drop;
            },
            out = pump.next(), if !stalled => {
                let ok = match out {
                    None => break Ending::Drop,
                    Some(Out::Close) => break Ending::Finish,
                    Some(Out::Frame { domain: false, enc }) => chunk(tcp, &enc.sse).await,
                    Some(Out::Frame { domain: true, enc }) => {
                        let f = pump.event(&peer.faults());
                        if f.garbage && !chunk(tcp, &garbage).await {
                            break Ending::Drop;
                        }
                        if f.drop_after {
                            let _ = chunk(tcp, &enc.sse).await;
                            break Ending::Drop;
                        }
                        chunk(tcp, &enc.sse).await
                    }
                };
                if !ok {
                    break Ending::Drop;
                }
                idle_until = Instant::now() + keepalive;
            }
            _ = tokio::time::sleep_until(idle_until), if !stalled => {
                if !chunk(tcp, &comment).await {
                    break Ending::Drop;
                }
                idle_until = Instant::now() + keepalive;
            }
        }
    };
    if let Ending::Finish = ending {
        finish(tcp).await;
    }
}
