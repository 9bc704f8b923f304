//! Shared by the integration tests: a reference server on 127.0.0.1 and a bound on every test.

use agentwire_native::rkt::{self, ServerHandle};
use agentwire_rkt::reference::ReferenceConfig;
use std::future::Future;
use std::time::Duration;

/// Runs a test body with a hard time limit.
#[allow(dead_code)] // not every test binary that includes this module uses it
pub async fn bounded<T>(body: impl Future<Output = T>) -> T {
    tokio::time::timeout(Duration::from_secs(60), body)
        .await
        .expect("test timed out")
}

#[allow(dead_code)] // not every test binary that includes this module uses it
pub async fn server(cfg: ReferenceConfig) -> ServerHandle {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    rkt::spawn(listener, cfg).unwrap()
}

/// The server's side of an RKT open on `stream`: the upgrade (echoing `rkt.1.0`), then a
/// HELLO_ACK to the client's HELLO. `None` when the client leaves before its HELLO.
#[allow(dead_code)] // not every test binary that includes this module uses it
pub async fn rkt_hello<S>(stream: S) -> Option<tokio_tungstenite::WebSocketStream<S>>
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin,
{
    use futures_util::SinkExt;
    let (mut ws, id) = rkt_accept(stream).await?;
    let ack = format!(
        "RKT/1.0 HELLO_ACK\nVersion: 1\nMessage-ID: ack-1\nReply-To: {id}\nSession-ID: s-1\n\
         Timestamp: 2026-06-28T12:00:00Z\nTTL: 30\nContent-Type: application/json\n\n\
         {{\"agreed_version\":1,\"session_timeout\":300}}"
    );
    ws.send(tokio_tungstenite::tungstenite::Message::text(ack))
        .await
        .unwrap();
    Some(ws)
}

/// A test peer on 127.0.0.1 for one RKT connection: [`rkt_hello`], then `serve` on the socket,
/// all bounded to 30 s. Returns its `ws://` URL.
#[allow(dead_code)] // not every test binary that includes this module uses it
pub async fn rkt_peer<F, Fut>(serve: F) -> String
where
    F: FnOnce(tokio_tungstenite::WebSocketStream<tokio::net::TcpStream>) -> Fut + Send + 'static,
    Fut: Future<Output = ()> + Send,
{
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("ws://{}/rkt", listener.local_addr().unwrap());
    tokio::spawn(tokio::time::timeout(Duration::from_secs(30), async move {
        let (tcp, _) = listener.accept().await.unwrap();
        if let Some(ws) = rkt_hello(tcp).await {
            serve(ws).await;
        }
    }));
    url
}

/// The server's side of an RKT open on `stream` up to the client's HELLO: the upgrade (echoing
/// `rkt.1.0`) and the HELLO's Message-ID. `None` when the client leaves before its HELLO.
#[allow(dead_code)] // not every test binary that includes this module uses it
#[allow(clippy::result_large_err)] // tungstenite's upgrade callback returns its `ErrorResponse`
pub async fn rkt_accept<S>(stream: S) -> Option<(tokio_tungstenite::WebSocketStream<S>, String)>
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin,
{
    use futures_util::StreamExt;
    use tokio_tungstenite::tungstenite::handshake::server::{Request, Response};
    use tokio_tungstenite::tungstenite::Message;

    let echo = |_: &Request, mut resp: Response| {
        resp.headers_mut()
            .insert("Sec-WebSocket-Protocol", "rkt.1.0".parse().unwrap());
        Ok(resp)
    };
    let mut ws = tokio_tungstenite::accept_hdr_async(stream, echo).await.unwrap();
    let hello = loop {
        match ws.next().await {
            Some(Ok(Message::Text(t))) => break t.to_string(),
            Some(Ok(_)) => continue,
            _ => return None,
        }
    };
    let id = hello
        .lines()
        .find_map(|l| l.strip_prefix("Message-ID: "))
        .unwrap()
        .trim()
        .to_string();
    Some((ws, id))
}

/// The Message-ID of `text` when it is an RKT REQUEST, as a test peer answers it.
#[allow(dead_code)] // not every test binary that includes this module uses it
pub fn request_id(text: &str) -> Option<&str> {
    text.strip_prefix("RKT/1.0 REQUEST\n")?
        .lines()
        .find_map(|l| l.strip_prefix("Message-ID: "))
}

/// The head of a test peer's stream frame `kind` number `n` answering the REQUEST `id`, up to
/// its blank line: a STREAM_BEGIN has no `Seq`.
#[allow(dead_code)] // not every test binary that includes this module uses it
pub fn stream_head(kind: &str, n: u32, id: &str) -> String {
    let seq = if kind == "STREAM_BEGIN" {
        String::new()
    } else {
        format!("Seq: {n}\n")
    };
    format!(
        "RKT/1.0 {kind}\nVersion: 1\nMessage-ID: d{n}-{id}\nReply-To: {id}\n\
         Session-ID: s-1\nTimestamp: 2026-06-28T12:00:00Z\nTTL: 30\n{seq}\
         Content-Type: application/json\n\n"
    )
}

/// A peer on 127.0.0.1 that answers one WebSocket upgrade with HTTP `status`. Returns its
/// `ws://` URL (ending in `path`).
#[allow(dead_code)] // not every test binary that includes this module uses it
pub async fn refusing(status: u16, path: &str) -> String {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("ws://{}{path}", listener.local_addr().unwrap());
    tokio::spawn(async move {
        let Ok((mut tcp, _)) = listener.accept().await else {
            return;
        };
        let mut head = Vec::new();
        let mut buf = [0u8; 1024];
        while !head.windows(4).any(|w| w == b"\r\n\r\n") {
            match tcp.read(&mut buf).await {
                Ok(0) | Err(_) => return,
                Ok(n) => head.extend_from_slice(&buf[..n]),
            }
        }
        let answer = format!("HTTP/1.1 {status} Refused\r\nContent-Length: 2\r\nConnection: close\r\n\r\nno");
        let _ = tcp.write_all(answer.as_bytes()).await;
    });
    url
}

/// A small deterministic generator of tiny waits (no `rand` in the tests).
#[allow(dead_code)] // not every test binary that includes this module uses it
pub struct Tiny(pub u64);

#[allow(dead_code)]
impl Tiny {
    /// 0..`max_us` microseconds.
    pub fn next(&mut self, max_us: u64) -> Duration {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        Duration::from_micros(self.0 % max_us)
    }
}

/// Reads with `$next` (an expression giving `Option<item>`) beside a timer of a random few
/// hundred microseconds, as a `select!` loop does, until `$want` items came, the end, or 20 s:
/// the items in the order they came, and how often the timer won.
#[allow(unused_macros)] // not every test binary that includes this module uses it
macro_rules! read_beside_a_timer {
    ($want:expr, $next:expr) => {{
        let (mut tiny, mut got, mut timer_won) = ($crate::common::Tiny(0xC0FF_EE11), Vec::new(), 0u32);
        let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(20);
        while got.len() < $want && tokio::time::Instant::now() < deadline {
            tokio::select! {
                item = $next => match item {
                    Some(item) => got.push(item),
                    None => break,
                },
                () = tokio::time::sleep(tiny.next(400)) => timer_won += 1,
            }
        }
        (got, timer_won)
    }};
}

#[allow(unused_imports)]
pub(crate) use read_beside_a_timer;
