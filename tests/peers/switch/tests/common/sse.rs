//! The SSE client: the stream's head, its chunked body decoded, SSE items parsed.

use super::{bearer, cid, request_text, Resp, WAIT};
use agentwire_peer_switch::{Agent, PeerHandle};
use serde_json::Value;
use std::net::SocketAddr;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// One SSE item.
#[derive(Debug, Clone, PartialEq)]
pub enum Item {
    Comment(String),
    Frame {
        event: String,
        data: String,
        id: Option<String>,
    },
}

pub struct Sse {
    tcp: TcpStream,
    raw: Vec<u8>,
    text: Vec<u8>,
    /// The last chunk arrived.
    pub finished: bool,
    pub head: String,
}

/// Opens `/agents/{id}/events?QUERY`; the error answer when it is not a stream.
pub async fn sse_try(h: &PeerHandle, a: &Agent, query: &str, last_event_id: Option<&str>) -> Result<Sse, Resp> {
    let auth = bearer(&a.key);
    let mut headers = vec![("authorization", auth.as_str()), ("accept", "text/event-stream")];
    if let Some(l) = last_event_id {
        headers.push(("last-event-id", l));
    }
    sse_raw(h.addr(), &format!("/agents/{}/events?{query}", a.id), &headers).await
}

pub async fn sse_raw(addr: SocketAddr, path: &str, headers: &[(&str, &str)]) -> Result<Sse, Resp> {
    tokio::time::timeout(WAIT, async {
        let mut tcp = TcpStream::connect(addr).await.unwrap();
        tcp.write_all(request_text(addr, "GET", path, headers, None).as_bytes())
            .await
            .unwrap();
        let mut raw = Vec::new();
        let mut chunk = [0u8; 4096];
        let end = loop {
            if let Some(i) = raw.windows(4).position(|w| w == b"\r\n\r\n") {
                break i;
            }
            let n = tcp.read(&mut chunk).await.unwrap();
            assert!(n > 0, "closed before the head");
            raw.extend_from_slice(&chunk[..n]);
        };
        let head = String::from_utf8(raw[..end].to_vec()).unwrap();
        let status: u16 = head[9..12].parse().unwrap();
        let rest = raw[end + 4..].to_vec();
        if status != 200 {
            let mut body = rest;
            tcp.read_to_end(&mut body).await.unwrap();
            return Err(Resp {
                status,
                head,
                body: String::from_utf8(body).unwrap(),
            });
        }
        Ok(Sse {
            tcp,
            raw: rest,
            text: Vec::new(),
            finished: false,
            head,
        })
    })
    .await
    .expect("SSE open timed out")
}

pub async fn sse(h: &PeerHandle, a: &Agent, query: &str) -> Sse {
    sse_try(h, a, query, None)
        .await
        .map_err(|r| format!("{} {}", r.status, r.body))
        .unwrap()
}

impl Sse {
    pub fn header(&self, name: &str) -> Option<String> {
        self.head.lines().find_map(|l| {
            let (n, v) = l.split_once(':')?;
            n.eq_ignore_ascii_case(name).then(|| v.trim().to_string())
        })
    }

    /// No frame (comments aside) within `wait`, and the stream still open.
    pub async fn quiet(&mut self, wait: Duration) {
        let got = tokio::time::timeout(wait, async {
            loop {
                match self.item_within(WAIT).await {
                    Some(Item::Comment(_)) => continue,
                    other => return other,
                }
            }
        })
        .await;
        if let Ok(item) = got {
            panic!("unexpected: {item:?}");
        }
    }

    /// Moves complete chunks from `raw` to `text`.
    fn dechunk(&mut self) {
        loop {
            let Some(i) = self.raw.windows(2).position(|w| w == b"\r\n") else {
                return;
            };
            let size = usize::from_str_radix(std::str::from_utf8(&self.raw[..i]).unwrap().trim(), 16).unwrap();
            if self.raw.len() < i + 2 + size + 2 {
                return;
            }
            if size == 0 {
                self.finished = true;
            }
            self.text.extend_from_slice(&self.raw[i + 2..i + 2 + size]);
            self.raw.drain(..i + 2 + size + 2);
        }
    }

    fn parse_one(&mut self) -> Option<Item> {
        let i = self.text.windows(2).position(|w| w == b"\n\n")?;
        let block = String::from_utf8(self.text[..i].to_vec()).unwrap();
        self.text.drain(..i + 2);
        let (mut event, mut data, mut id) = (String::from("message"), Vec::new(), None);
        for line in block.lines() {
            if let Some(c) = line.strip_prefix(':') {
                return Some(Item::Comment(c.trim().to_string()));
            }
            let (field, value) = line.split_once(": ").unwrap_or((line, ""));
            match field {
                "event" => event = value.to_string(),
                "data" => data.push(value.to_string()),
                "id" => id = Some(value.to_string()),
                _ => {}
            }
        }
        Some(Item::Frame {
            event,
            data: data.join("\n"),
            id,
        })
    }

    /// The next item, or `None` when the stream ended (cleanly or not: see `finished`).
    pub async fn item_within(&mut self, wait: Duration) -> Option<Item> {
        tokio::time::timeout(wait, async {
            loop {
                self.dechunk();
                if let Some(item) = self.parse_one() {
                    return Some(item);
                }
                if self.finished {
                    return None;
                }
                let mut chunk = [0u8; 4096];
                match self.tcp.read(&mut chunk).await {
                    Ok(0) | Err(_) => return None,
                    Ok(n) => self.raw.extend_from_slice(&chunk[..n]),
                }
            }
        })
        .await
        .expect("no SSE item in time")
    }

    /// The next frame (comments skipped): `(event, data as JSON, id)`.
    pub async fn next(&mut self) -> (String, Value, Option<String>) {
        self.next_raw()
            .await
            .map(|(e, d, i)| (e, serde_json::from_str(&d).unwrap(), i))
            .expect("stream ended")
    }

    /// The next frame with its data as text, `None` at the end.
    pub async fn next_raw(&mut self) -> Option<(String, String, Option<String>)> {
        loop {
            match self.item_within(WAIT).await? {
                Item::Comment(_) => continue,
                Item::Frame { event, data, id } => return Some((event, data, id)),
            }
        }
    }
}

/// A connection of `a` (an SSE stream kept open) with `rooms=` claimed.
pub async fn conn(h: &PeerHandle, a: &Agent, rooms: &str) -> (String, Sse) {
    let id = cid();
    let mut s = sse(h, a, &format!("connection_id={id}&rooms={rooms}")).await;
    s.next().await;
    (id, s)
}
