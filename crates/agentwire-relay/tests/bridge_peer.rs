//! End to end: the SSE bridge against the released-generation Switch peer (switch-core 0.19: an
//! SSE stream and HTTP beats, no WebSocket route), with the engine's own `Connection` in
//! WebSocket transport as the browser. The test plays the Worker: it turns the browser's open
//! into the upstream SSE open (a tiny blocking HTTP/1.1 client over `std::net::TcpStream` to
//! 127.0.0.1), feeds the stream to the bridge, hands the bridge's frames to the browser and the
//! browser's pongs to the bridge, and POSTs the beats. Every test is bounded in time.

use agentwire_core::{HttpRequest, Millis, SeededEntropy};
use agentwire_peer_switch::{bind, Agent, Faults, Generation, PeerConfig, PeerHandle};
use agentwire_relay::bridge::{Bridge, BridgeConfig, BridgeStats, Output};
use agentwire_switch::connection::{Connection, ConnectionConfig, Event, Transmit, Transport, Wire};
use agentwire_switch::frame::EvictionCode;
use agentwire_switch::open::OpenParams;
use std::net::{Shutdown, SocketAddr, TcpStream};
use std::sync::mpsc::{channel, Receiver, RecvTimeoutError, Sender};
use std::time::{Duration, Instant};

/// A tiny blocking HTTP/1.1 client: one request per connection, `Connection: close`.
mod http {
    use std::io::{self, Read, Write};
    use std::net::{SocketAddr, TcpStream};
    use std::time::Duration;

    pub struct Head {
        pub status: u16,
        pub content_type: Option<String>,
        pub chunked: bool,
        pub content_length: Option<usize>,
    }

    fn bad(m: &str) -> io::Error {
        io::Error::new(io::ErrorKind::InvalidData, m.to_owned())
    }

    /// Sends one request with `Authorization: Bearer <key>`; returns the socket, the answer's
    /// head and the bytes already read past it.
    pub fn send(
        addr: SocketAddr,
        method: &str,
        path: &str,
        key: &str,
        headers: &[(&str, &str)],
        body: Option<&str>,
    ) -> io::Result<(TcpStream, Head, Vec<u8>)> {
        let mut tcp = TcpStream::connect_timeout(&addr, Duration::from_secs(5))?;
        tcp.set_read_timeout(Some(Duration::from_secs(5)))?;
        tcp.set_write_timeout(Some(Duration::from_secs(5)))?;
        let mut req =
            format!("{method} {path} HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {key}\r\nConnection: close\r\n");
        for (name, value) in headers {
            req.push_str(&format!("{name}: {value}\r\n"));
        }
        if let Some(b) = body {
            req.push_str(&format!("Content-Length: {}\r\n", b.len()));
        }
        req.push_str("\r\n");
        req.push_str(body.unwrap_or(""));
        tcp.write_all(req.as_bytes())?;
        let mut buf = Vec::new();
        let mut scratch = [0u8; 4096];
        let end = loop {
            if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                break i;
            }
            if buf.len() > 64 << 10 {
                return Err(bad("response head too long"));
            }
            let n = tcp.read(&mut scratch)?;
            if n == 0 {
                return Err(io::ErrorKind::UnexpectedEof.into());
            }
            buf.extend_from_slice(&scratch[..n]);
        };
        let text = String::from_utf8_lossy(&buf[..end]).into_owned();
        let mut lines = text.split("\r\n");
        let status = lines
            .next()
            .and_then(|l| l.split(' ').nth(1))
            .and_then(|s| s.parse().ok())
            .ok_or_else(|| bad("no status"))?;
        let mut head = Head {
            status,
            content_type: None,
            chunked: false,
            content_length: None,
        };
        for line in lines {
            let Some((name, value)) = line.split_once(':') else {
                continue;
            };
            let value = value.trim();
            match name.trim().to_ascii_lowercase().as_str() {
                "content-type" => head.content_type = Some(value.to_owned()),
                "transfer-encoding" => head.chunked = value.eq_ignore_ascii_case("chunked"),
                "content-length" => head.content_length = value.parse().ok(),
                _ => {}
            }
        }
        Ok((tcp, head, buf[end + 4..].to_vec()))
    }

    /// The whole body of an answer (`Content-Length`, chunked, or up to the close).
    pub fn body(mut tcp: TcpStream, head: &Head, mut all: Vec<u8>) -> io::Result<String> {
        let mut scratch = [0u8; 4096];
        loop {
            if head.content_length.is_some_and(|n| all.len() >= n) {
                break;
            }
            match tcp.read(&mut scratch)? {
                0 => break,
                n => all.extend_from_slice(&scratch[..n]),
            }
        }
        if head.chunked {
            let mut out = Vec::new();
            Dechunker::default().feed(&all, &mut out);
            all = out;
        }
        if let Some(n) = head.content_length {
            all.truncate(n);
        }
        Ok(String::from_utf8_lossy(&all).into_owned())
    }

    /// A chunked body decoder, fed as bytes arrive.
    #[derive(Default)]
    pub struct Dechunker {
        buf: Vec<u8>,
        /// Bytes of data (plus its CRLF) still expected in the current chunk.
        data: Option<usize>,
        pub done: bool,
    }

    impl Dechunker {
        /// Appends the decoded data to `out`; `done` once the last chunk was read.
        pub fn feed(&mut self, bytes: &[u8], out: &mut Vec<u8>) {
            self.buf.extend_from_slice(bytes);
            while !self.done {
                match self.data {
                    None => {
                        let Some(eol) = self.buf.windows(2).position(|w| w == b"\r\n") else {
                            return;
                        };
                        let line = String::from_utf8_lossy(&self.buf[..eol]).into_owned();
                        let size = usize::from_str_radix(line.split(';').next().unwrap_or("").trim(), 16).unwrap_or(0);
                        self.buf.drain(..eol + 2);
                        if size == 0 {
                            self.done = true;
                        } else {
                            self.data = Some(size);
                        }
                    }
                    Some(size) => {
                        if self.buf.len() < size + 2 {
                            return;
                        }
                        out.extend_from_slice(&self.buf[..size]);
                        self.buf.drain(..size + 2);
                        self.data = None;
                    }
                }
            }
        }
    }
}

/// What the thread reading an upstream stream reports, tagged with the bridge it belongs to.
enum Up {
    Bytes(Vec<u8>),
    End(Option<String>),
}

/// Reads an upstream SSE body until it ends or the socket is shut down.
fn spawn_reader(tcp: TcpStream, head: http::Head, rest: Vec<u8>, epoch: u64, tx: Sender<(u64, Up)>) {
    use std::io::Read;
    std::thread::spawn(move || {
        let mut tcp = tcp;
        let _ = tcp.set_read_timeout(Some(Duration::from_secs(60)));
        let mut dechunker = http::Dechunker::default();
        let mut pass = |bytes: &[u8]| -> bool {
            if !head.chunked {
                return tx.send((epoch, Up::Bytes(bytes.to_vec()))).is_ok();
            }
            let mut out = Vec::new();
            dechunker.feed(bytes, &mut out);
            if !out.is_empty() && tx.send((epoch, Up::Bytes(out))).is_err() {
                return false;
            }
            if dechunker.done {
                let _ = tx.send((epoch, Up::End(None)));
                return false;
            }
            true
        };
        if !rest.is_empty() && !pass(&rest) {
            return;
        }
        let mut scratch = [0u8; 16 << 10];
        loop {
            match tcp.read(&mut scratch) {
                Ok(0) => {
                    let _ = tx.send((epoch, Up::End(Some("connection closed".into()))));
                    return;
                }
                Ok(n) => {
                    if !pass(&scratch[..n]) {
                        return;
                    }
                }
                Err(e) => {
                    let _ = tx.send((epoch, Up::End(Some(e.to_string()))));
                    return;
                }
            }
        }
    });
}

const CID: &str = "0f8fad5b-d9cb-469f-a165-70867728950e";

/// The peer, one agent in one room, the browser's engine and the test as the Worker.
struct World {
    // -- the Worker --
    bridge: Option<Bridge>,
    upstream: Option<TcpStream>,
    epoch: u64,
    tx: Sender<(u64, Up)>,
    rx: Receiver<(u64, Up)>,
    /// Upstream paths opened, in order.
    opens: Vec<String>,
    /// Every `Output::Close` of every bridge.
    closes: Vec<(u16, String)>,
    /// The stats of every bridge, when it ended.
    finished: Vec<BridgeStats>,
    key: String,
    // -- the browser --
    client: Connection,
    events: Vec<Event>,
    // -- the server --
    agent: Agent,
    room: String,
    start: Instant,
    peer: PeerHandle,
    _rt: tokio::runtime::Runtime,
}

const HEARTBEAT: Duration = Duration::from_millis(250);
const TTL: Duration = Duration::from_millis(1000);

impl World {
    fn new(configure: impl FnOnce(&mut OpenParams, &str)) -> World {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        let mut cfg = PeerConfig::new(Generation::Released);
        cfg.heartbeat_interval = HEARTBEAT;
        cfg.heartbeat_ttl = TTL;
        cfg.keepalive = Duration::from_millis(300);
        let peer = rt.block_on(bind(0, cfg)).unwrap();
        assert!(peer.addr().ip().is_loopback());
        let agent = peer.add_agent("alice");
        let room = peer.add_room("lobby", &[&agent.id]);
        let mut open = OpenParams::new(agent.id.clone(), CID);
        open.rooms = vec![room.clone()];
        configure(&mut open, &room);
        let mut ccfg = ConnectionConfig::new(open);
        ccfg.transport = Transport::WebSocket;
        let client = Connection::new(ccfg, Box::new(SeededEntropy::new(7)));
        let (tx, rx) = channel();
        let mut w = World {
            bridge: None,
            upstream: None,
            epoch: 0,
            tx,
            rx,
            opens: Vec::new(),
            closes: Vec::new(),
            finished: Vec::new(),
            key: agent.key.clone(),
            client,
            events: Vec::new(),
            agent,
            room,
            start: Instant::now(),
            peer,
            _rt: rt,
        };
        let now = w.now();
        w.client.start(now).unwrap();
        w
    }

    fn now(&self) -> Millis {
        1_700_000_000_000 + self.start.elapsed().as_millis() as u64
    }

    fn addr(&self) -> SocketAddr {
        self.peer.addr()
    }

    /// The browser opened its socket to the relay: a new bridge, and the upstream open.
    fn browser_open(&mut self, ws_path: &str) {
        self.end_bridge();
        let now = self.now();
        let cfg = BridgeConfig::new(self.agent.id.clone(), CID);
        let mut bridge = Bridge::new(cfg, now);
        self.epoch += 1;
        // The relay accepts the browser's socket at once; refusals travel over it.
        self.client.handle_open(now);
        let path = ws_path.replacen("/connection/ws?", "/events?", 1);
        assert_ne!(path, ws_path, "not a WebSocket open: {ws_path}");
        self.opens.push(path.clone());
        match http::send(
            self.addr(),
            "GET",
            &path,
            &self.key,
            &[("Accept", "text/event-stream")],
            None,
        ) {
            Err(_) => bridge.handle_open_response(now, 0, None, ""),
            Ok((tcp, head, rest)) if head.status == 200 => {
                bridge.handle_open_response(now, 200, head.content_type.as_deref(), "");
                self.upstream = tcp.try_clone().ok();
                spawn_reader(tcp, head, rest, self.epoch, self.tx.clone());
            }
            Ok((tcp, head, rest)) => {
                let body = http::body(tcp, &head, rest).unwrap_or_default();
                bridge.handle_open_response(now, head.status, head.content_type.as_deref(), &body);
            }
        }
        self.bridge = Some(bridge);
    }

    /// Aborts the upstream stream and forgets the bridge.
    fn end_bridge(&mut self) {
        if let Some(tcp) = self.upstream.take() {
            let _ = tcp.shutdown(Shutdown::Both);
        }
        if let Some(b) = self.bridge.take() {
            self.finished.push(b.stats().clone());
        }
        self.epoch += 1;
    }

    fn beat(&self, req: &HttpRequest) -> (u16, String) {
        let headers: Vec<(&str, &str)> = req.headers.iter().map(|(n, v)| (*n, v.as_str())).collect();
        match http::send(
            self.addr(),
            req.method.as_str(),
            &req.path,
            &self.key,
            &headers,
            req.body.as_deref(),
        ) {
            Ok((tcp, head, rest)) => {
                let status = head.status;
                (status, http::body(tcp, &head, rest).unwrap_or_default())
            }
            Err(_) => (0, String::new()),
        }
    }

    /// One round of every pending input; true when something happened.
    fn step(&mut self) -> bool {
        let mut progressed = false;
        let now = self.now();
        if self.client.poll_timeout().is_some_and(|t| t <= now) {
            self.client.handle_timeout(now);
        }
        if let Some(b) = self.bridge.as_mut() {
            if b.poll_timeout().is_some_and(|t| t <= now) {
                b.handle_timeout(now);
            }
        }
        while let Some(t) = self.client.poll_transmit() {
            progressed = true;
            match t {
                Transmit::Open(o) => {
                    assert_eq!(o.wire, Wire::WebSocket);
                    self.browser_open(&o.request.path);
                }
                Transmit::Text(text) => {
                    if let Some(b) = self.bridge.as_mut() {
                        b.handle_client_text(now, &text);
                    }
                }
                Transmit::Close { .. } => {
                    // The browser closed its socket: the bridge's close is for the upstream only.
                    if let Some(b) = self.bridge.as_mut() {
                        b.handle_client_close(now);
                        while let Some(o) = b.poll_output() {
                            if let Output::Close { code, reason } = o {
                                self.closes.push((code, reason));
                            }
                        }
                    }
                    self.end_bridge();
                }
                Transmit::Http { .. } => panic!("the WebSocket transport makes no HTTP calls"),
            }
        }
        while let Some(o) = self.bridge.as_mut().and_then(Bridge::poll_output) {
            progressed = true;
            match o {
                Output::ToClient(text) => self.client.handle_text(now, &text),
                Output::Beat(req) => {
                    let (status, body) = self.beat(&req);
                    let answered = self.now();
                    if let Some(b) = self.bridge.as_mut() {
                        b.handle_beat_response(answered, status, &body);
                    }
                }
                Output::Close { code, reason } => {
                    self.closes.push((code, reason.clone()));
                    self.end_bridge();
                    self.client.handle_close(now, code, &reason);
                }
            }
        }
        while let Some(e) = self.client.poll_event() {
            progressed = true;
            self.events.push(e);
        }
        progressed
    }

    /// Waits for upstream bytes or the next deadline (at most 20 ms).
    fn wait(&mut self) {
        let now = self.now();
        let next = [
            self.client.poll_timeout(),
            self.bridge.as_ref().and_then(Bridge::poll_timeout),
        ]
        .into_iter()
        .flatten()
        .min()
        .unwrap_or(now + 20);
        let wait = Duration::from_millis(next.saturating_sub(now).min(20));
        match self.rx.recv_timeout(wait) {
            Ok((epoch, up)) if epoch == self.epoch => {
                let now = self.now();
                if let Some(b) = self.bridge.as_mut() {
                    match up {
                        Up::Bytes(bytes) => b.handle_sse(now, &bytes),
                        Up::End(error) => b.handle_sse_end(now, error.as_deref()),
                    }
                }
            }
            Ok(_) | Err(RecvTimeoutError::Timeout) => {}
            Err(RecvTimeoutError::Disconnected) => unreachable!("the World holds a sender"),
        }
    }

    fn run_until(&mut self, what: &str, limit: Duration, done: impl Fn(&World) -> bool) {
        let deadline = Instant::now() + limit;
        loop {
            while self.step() {}
            if done(self) {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "timed out waiting for {what}; events: {:#?}; closes: {:?}",
                self.events,
                self.closes
            );
            self.wait();
        }
    }

    fn run_for(&mut self, d: Duration) {
        let until = Instant::now() + d;
        self.run_until("time to pass", d + Duration::from_secs(5), |_| Instant::now() >= until);
    }

    /// Message bodies surfaced so far, in order.
    fn messages(&self) -> Vec<String> {
        self.events
            .iter()
            .filter_map(|e| match e {
                Event::Event { event, .. } => event.message().ok().map(|m| m.body),
                _ => None,
            })
            .collect()
    }

    fn connected(&self) -> usize {
        self.events
            .iter()
            .filter(|e| matches!(e, Event::Connected { .. }))
            .count()
    }

    fn count(&self, f: impl Fn(&Event) -> bool) -> usize {
        self.events.iter().filter(|e| f(e)).count()
    }
}

impl Drop for World {
    fn drop(&mut self) {
        self.end_bridge();
    }
}

const LIMIT: Duration = Duration::from_secs(15);

#[test]
fn the_engine_goes_live_gets_a_message_once_and_beats_keep_it_alive_past_the_ttl() {
    let mut w = World::new(|_, _| {});
    w.run_until("connection_state", LIMIT, |w| w.connected() == 1);
    let Some(Event::Connected { state, wire, resumed }) =
        w.events.iter().find(|e| matches!(e, Event::Connected { .. }))
    else {
        unreachable!()
    };
    assert_eq!((*wire, *resumed), (Wire::WebSocket, false));
    assert!(state.generation.is_none(), "the released server issues no generation");
    assert_eq!(
        state.heartbeat_interval_seconds,
        Some(0.25),
        "the peer's interval, which the bridge pings at"
    );
    assert_eq!(state.rooms, vec![w.room.clone()]);
    assert_eq!(w.bridge.as_ref().map(Bridge::ping_interval_ms), Some(250));

    let room = w.room.clone();
    assert!(!w.peer.post_as_user(&room, "carol", "hello @alice").is_empty());
    w.run_until("the message", LIMIT, |w| !w.messages().is_empty());

    // Three TTLs: only the browser's pongs, turned into beats, keep the upstream from lapsing it.
    w.run_for(TTL * 3);
    assert_eq!(w.messages(), vec!["hello @alice".to_owned()], "exactly once");
    let trouble = w.count(|e| {
        matches!(
            e,
            Event::Evicted(_) | Event::Disconnected { .. } | Event::Stopped { .. }
        )
    });
    assert_eq!(trouble, 0, "{:#?}", w.events);
    assert_eq!(w.connected(), 1);
    assert!(w.closes.is_empty(), "{:?}", w.closes);
    assert_eq!(w.peer.connections(&w.agent.id), 1);
    let stats = w.bridge.as_ref().unwrap().stats().clone();
    assert!(stats.beats_sent >= 8, "{stats:?}");
    assert!(stats.pings_sent >= 8, "{stats:?}");
    assert_eq!((stats.beats_failed, stats.frames_dropped), (0, 0), "{stats:?}");
    assert!(
        stats.keepalives >= 1,
        "keepalives are read and not forwarded: {stats:?}"
    );
    assert_eq!(w.client.cursor(), Some(w.peer.head(&w.agent.id)));

    // Still live: the next message arrives too.
    w.peer.post_as_user(&room, "carol", "still there?");
    w.run_until("the second message", LIMIT, |w| w.messages().len() == 2);

    // The browser leaves: the bridge ends with 1000, the upstream is aborted.
    let now = w.now();
    w.client.close(now);
    w.run_until("the stop", LIMIT, |w| {
        w.count(|e| matches!(e, Event::Stopped { error: None })) == 1
    });
    assert_eq!(w.closes, vec![(1000, "client closed".to_owned())]);
    assert!(w.bridge.is_none());
}

#[test]
fn a_reconnect_through_a_new_bridge_resumes_without_loss_or_duplicates() {
    let mut w = World::new(|_, _| {});
    let room = w.room.clone();
    w.run_until("connection_state", LIMIT, |w| w.connected() == 1);
    w.peer.post_as_user(&room, "carol", "one");
    w.run_until("message one", LIMIT, |w| w.messages().len() == 1);

    // The server restarts: the stream ends without an eviction, the bridge closes 1011, and the
    // engine reopens through a new bridge from its cursor. A message posted meanwhile is
    // replayed from the server's buffer.
    w.peer.restart(false);
    w.peer.post_as_user(&room, "carol", "two");
    w.run_until("the reconnect", LIMIT, |w| w.connected() == 2);
    w.run_until("message two", LIMIT, |w| w.messages().len() == 2);
    w.peer.post_as_user(&room, "carol", "three");
    w.run_until("message three", LIMIT, |w| w.messages().len() == 3);
    w.run_for(HEARTBEAT * 4);

    assert_eq!(w.messages(), vec!["one", "two", "three"]);
    assert_eq!(w.client.duplicates(), 0);
    assert_eq!(w.closes.first().map(|c| c.0), Some(1011), "{:?}", w.closes);
    assert!(w
        .events
        .iter()
        .any(|e| matches!(e, Event::Connected { resumed: true, .. })));
    assert_eq!(w.opens.len(), 2, "{:?}", w.opens);
    let first = w
        .events
        .iter()
        .find_map(|e| match e {
            Event::Event { event, .. } => Some(event.sequence),
            _ => None,
        })
        .unwrap();
    let reopen = &w.opens[1];
    assert!(reopen.contains(&format!("start_from={first}")), "{reopen}");
    assert!(
        !reopen.contains("expected_generation"),
        "no generation was issued, so none is sent back: {reopen}"
    );
}

#[test]
fn an_upstream_lapse_reaches_the_engine_as_evicted_heartbeat_lapsed_and_it_resumes() {
    let mut w = World::new(|_, _| {});
    w.run_until("connection_state", LIMIT, |w| w.connected() == 1);
    // The peer ignores the beats: it lapses the connection, says `evicted {reason}` and ends
    // the stream (or answers the next beat 404); the bridge adds the code and closes 1000; the
    // engine resumes.
    w.peer.set_faults(Faults {
        ignore_heartbeats: true,
        ..Faults::default()
    });
    w.run_until("the eviction", LIMIT, |w| {
        w.count(|e| matches!(e, Event::Evicted(_))) >= 1
    });
    let evicted = w
        .events
        .iter()
        .find_map(|e| match e {
            Event::Evicted(ev) => Some(ev.clone()),
            _ => None,
        })
        .unwrap();
    // Either the stream's `evicted {reason: "heartbeat lapsed; ..."}` or, when a beat reaches the
    // peer between the lapse and that frame, the beat's 404: the same code both ways.
    assert_eq!(evicted.code, Some(EvictionCode::HeartbeatLapsed));
    assert!(
        evicted.reason.starts_with("heartbeat lapsed") || evicted.reason.contains("is not open"),
        "{}",
        evicted.reason
    );
    assert_eq!(w.closes[0], (1000, "evicted: heartbeat_lapsed".to_owned()));
    w.peer.set_faults(Faults::default());
    w.run_until("the resume", LIMIT, |w| {
        w.events
            .iter()
            .rev()
            .take_while(|e| !matches!(e, Event::Evicted(_)))
            .any(|e| matches!(e, Event::Connected { resumed: true, .. }))
    });
    assert_eq!(w.count(|e| matches!(e, Event::Stopped { .. })), 0, "{:#?}", w.events);
    let room = w.room.clone();
    w.peer.post_as_user(&room, "carol", "back");
    w.run_until("a message after the resume", LIMIT, |w| w.messages() == ["back"]);
}

#[test]
fn refusals_reach_the_engine_as_the_current_generation_refuses() {
    // A room the agent is not in: HTTP 403 → `refused {403}` and 4403 → stopped, not retried.
    let mut w = World::new(|open, _| open.rooms = vec!["00000000-0000-0000-0000-000000000000".into()]);
    w.run_until("the stop", LIMIT, |w| {
        w.count(|e| matches!(e, Event::Stopped { .. })) == 1
    });
    let Some(Event::Stopped { error: Some(e) }) = w.events.last() else {
        panic!("{:#?}", w.events)
    };
    assert_eq!(e.status, Some(403), "{e:?}");
    assert!(e.message.contains("Room not found"), "{e:?}");
    assert_eq!(w.closes.len(), 1);
    assert_eq!(w.closes[0].0, 4403);
    assert_eq!(w.opens.len(), 1, "a refusal is final");

    // The relay's key refused: HTTP 401 → 1011 with the relay's reason, no frame: a failure the
    // engine retries (a first open that fails so stops `could not connect`, retryable), never the
    // final auth stop of a 4401 (the browser's relay token was fine).
    let mut w = World::new(|_, _| {});
    w.key = "sk_switch_wrong".into();
    w.run_until("the stop", LIMIT, |w| {
        w.count(|e| matches!(e, Event::Stopped { .. })) == 1
    });
    let Some(Event::Stopped { error: Some(e) }) = w.events.last() else {
        panic!("{:#?}", w.events)
    };
    assert_eq!(e.kind, agentwire_core::ErrorKind::Closed, "{e:?}");
    assert!(e.retryable, "{e:?}");
    assert!(
        e.message.contains("the relay's key for this agent was refused"),
        "{e:?}"
    );
    assert_eq!(
        w.closes,
        vec![(1011, "the relay's key for this agent was refused".to_owned())]
    );
}

/// Without the peer, in simulated time: the browser's engine through bridges to an upstream
/// whose stream opens and attaches but answers every beat `beat_status`, for `duration` ms.
/// Returns the upstream streams opened and the browser's largest reconnect attempt.
fn failing_beats(beat_status: u16, duration: u64) -> (u64, u32) {
    const AGENT: &str = "e9dc227d-d507-4a61-98ac-65eb81f2f27a";
    let state = format!(
        "event: connection_state\ndata: {{\"connection_id\":\"{CID}\",\"agent_id\":\"{AGENT}\",\"scope\":\"single\",\"filter\":\"all\",\"spawn_capable\":false,\"rooms\":[],\"cursor\":0,\"protocol\":1,\"heartbeat_interval_seconds\":2.0}}\n\n"
    );
    let mut cfg = ConnectionConfig::new(OpenParams::new(AGENT, CID));
    cfg.transport = Transport::WebSocket;
    cfg.connect_attempts = None;
    let mut conn = Connection::new(cfg, Box::new(SeededEntropy::new(7)));
    let mut now: Millis = 1_000;
    conn.start(now).unwrap();
    let (mut bridge, mut opens, mut max_attempt) = (None::<Bridge>, 0, 0);
    let (mut keepalive, end) = (now + 15_000, now + duration);
    while now < end {
        let mut progressed = true;
        while progressed {
            progressed = false;
            while let Some(t) = conn.poll_transmit() {
                progressed = true;
                match t {
                    Transmit::Open(_) => {
                        opens += 1;
                        let mut b = Bridge::new(BridgeConfig::new(AGENT, CID), now);
                        conn.handle_open(now);
                        b.handle_open_response(now, 200, Some("text/event-stream"), "");
                        b.handle_sse(now, state.as_bytes());
                        bridge = Some(b);
                    }
                    Transmit::Text(pong) => {
                        if let Some(b) = &mut bridge {
                            b.handle_client_text(now, &pong);
                        }
                    }
                    Transmit::Close { .. } => {
                        if let Some(mut b) = bridge.take() {
                            b.handle_client_close(now);
                        }
                    }
                    Transmit::Http { .. } => unreachable!("WebSocket transport"),
                }
            }
            let mut closed = None;
            if let Some(b) = &mut bridge {
                while let Some(o) = b.poll_output() {
                    progressed = true;
                    match o {
                        Output::ToClient(text) => conn.handle_text(now, &text),
                        Output::Beat(_) => {
                            b.handle_beat_response(now, beat_status, r#"{"detail":"Service Unavailable"}"#)
                        }
                        Output::Close { code, reason } => closed = Some((code, reason)),
                    }
                }
            }
            if let Some((code, reason)) = closed {
                bridge = None;
                conn.handle_close(now, code, &reason);
            }
            while let Some(e) = conn.poll_event() {
                progressed = true;
                if let Event::Disconnected { attempt, .. } = e {
                    max_attempt = max_attempt.max(attempt);
                }
            }
        }
        let next = [
            conn.poll_timeout(),
            bridge.as_ref().and_then(Bridge::poll_timeout),
            Some(keepalive),
        ];
        now = now.max(next.into_iter().flatten().min().unwrap());
        if now >= keepalive {
            // The upstream's `: keepalive` every 15 s while idle.
            keepalive = now + 15_000;
            if let Some(b) = &mut bridge {
                b.handle_sse(now, b": keepalive\n\n");
            }
        }
        conn.handle_timeout(now);
        if let Some(b) = &mut bridge {
            b.handle_timeout(now);
        }
    }
    (opens, max_attempt)
}

#[test]
fn an_upstream_failing_every_beat_is_reopened_with_a_growing_delay() {
    // The bridge closes 1011 after three failed beats, ~6 s after each attach. Before, its
    // pings reset the browser's backoff, so a new upstream stream was opened every ~6 s (572 an
    // hour, attempt never past 1); now they count only once a socket has stayed up 30 s.
    for status in [503, 429] {
        let (opens, max_attempt) = failing_beats(status, 3_600_000);
        assert!(
            opens < 200 && max_attempt > 8,
            "{status}: {opens} opens, attempt up to {max_attempt}"
        );
    }
    // Beats answered: one upstream stream for the hour.
    assert_eq!(failing_beats(200, 3_600_000), (1, 0));
}
