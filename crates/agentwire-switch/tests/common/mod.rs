//! A connection driven by hand: time passed in, server frames written as literals.
#![allow(dead_code)]

use agentwire_core::SeededEntropy;
use agentwire_switch::connection::{Connection, ConnectionConfig, Event, Transmit, Transport};
use agentwire_switch::open::OpenParams;

pub const AGENT: &str = "e9dc227d-d507-4a61-98ac-65eb81f2f27a";
pub const CID: &str = "19209fad-88d2-4353-b857-10454fb40fa5";
pub const ROOM: &str = "47e911ea-014b-427b-a600-1c72595f0c98";

pub fn config(transport: Transport) -> ConnectionConfig {
    let mut cfg = ConnectionConfig::new(OpenParams::new(AGENT, CID));
    cfg.transport = transport;
    cfg
}

pub struct Driver {
    pub conn: Connection,
    pub now: u64,
}

impl Driver {
    pub fn new(cfg: ConnectionConfig) -> Self {
        Driver {
            conn: Connection::new(cfg, Box::new(SeededEntropy::new(7))),
            now: 1_000,
        }
    }

    /// Started and opened; the Open request's path is returned.
    pub fn opened(cfg: ConnectionConfig) -> (Self, String) {
        let mut d = Driver::new(cfg);
        d.conn.start(d.now).unwrap();
        let path = d.expect_open();
        d.conn.handle_open(d.now);
        (d, path)
    }

    /// Opened and attached with `connection_state` (generation 3, rooms, cursor).
    pub fn live_ws(cfg: ConnectionConfig, cursor: u64, rooms: &[&str]) -> Self {
        let (mut d, _) = Driver::opened(cfg);
        d.text(&connection_state(Some(3), cursor, rooms));
        let ev = d.events();
        assert!(matches!(ev[..], [Event::Connected { .. }]), "{ev:?}");
        d
    }

    pub fn text(&mut self, t: &str) {
        self.conn.handle_text(self.now, t);
    }

    /// Fires every timer due up to `ms` from now, in order. A timer still due after 1,000
    /// handlings at the same instant fails the test: a driver would spin on it (a mutant that
    /// did so hung the tests for their whole timeout).
    pub fn advance(&mut self, ms: u64) {
        let target = self.now + ms;
        let mut spins = 0;
        while let Some(at) = self.conn.poll_timeout() {
            if at > target {
                break;
            }
            spins = if at > self.now { 0 } else { spins + 1 };
            assert!(
                spins < 1_000,
                "a timer stays due at {}: handle_timeout did not move it",
                self.now
            );
            self.now = self.now.max(at);
            self.conn.handle_timeout(self.now);
        }
        self.now = target;
    }

    /// Advances to the next timer (the reopen after a backoff) and returns the Open's path.
    pub fn reopen(&mut self) -> String {
        let at = self.conn.poll_timeout().expect("a reopen is scheduled");
        self.now = self.now.max(at);
        self.conn.handle_timeout(self.now);
        self.expect_open()
    }

    /// Transmits, then events.
    pub fn transmits(&mut self) -> Vec<Transmit> {
        std::iter::from_fn(|| self.conn.poll_transmit()).collect()
    }

    pub fn events(&mut self) -> Vec<Event> {
        std::iter::from_fn(|| self.conn.poll_event()).collect()
    }

    /// Drains both, as a driver does: events first, then transmits, until both are empty.
    pub fn drain(&mut self) -> (Vec<Transmit>, Vec<Event>) {
        let (mut t, mut e) = (Vec::new(), Vec::new());
        loop {
            let before = t.len() + e.len();
            e.extend(std::iter::from_fn(|| self.conn.poll_event()));
            t.extend(std::iter::from_fn(|| self.conn.poll_transmit()));
            if t.len() + e.len() == before {
                return (t, e);
            }
        }
    }

    pub fn expect_open(&mut self) -> String {
        let t = self.transmits();
        match &t[..] {
            [.., Transmit::Open(o)] => o.request.path.clone(),
            other => panic!("expected an Open, got {other:?}"),
        }
    }

    /// Sequences of the domain events among `events`.
    pub fn delivered(&mut self) -> Vec<u64> {
        sequences(&self.events())
    }
}

/// One input handed to a connection.
pub type Input = Box<dyn Fn(&mut Driver)>;

/// Every input a driver may still hand a stopped connection (late HTTP answers, among them to
/// `http_ids`, frames, closes, open outcomes, timeouts, commands): each leaves it stopped with
/// no event, no transmit and no timer.
pub fn assert_inert_when_stopped(d: &mut Driver, http_ids: &[u64]) {
    use agentwire_switch::connection::State;
    use agentwire_switch::SwitchError;
    assert_eq!(d.conn.state(), State::Stopped);
    let unknown = http_ids.iter().max().map_or(1, |id| id + 100);
    let mut inputs: Vec<(String, Input)> = Vec::new();
    for &id in http_ids.iter().chain([&unknown]) {
        for (status, body) in [
            (200, r#"{"ok":true,"rooms":[]}"#),
            (500, ""),
            (409, r#"{"detail":"taken_over","code":"taken_over"}"#),
            (404, ""),
        ] {
            inputs.push((
                format!("HTTP {id} answered {status}"),
                Box::new(move |d: &mut Driver| d.conn.handle_http_response(d.now, id, status, body)),
            ));
        }
        inputs.push((
            format!("HTTP {id} failed"),
            Box::new(move |d: &mut Driver| d.conn.handle_http_failed(d.now, id, "reset")),
        ));
    }
    let frames = [
        message(1_000),
        PING.to_owned(),
        gap(0, 0),
        "}{".to_owned(),
        evicted("taken_over"),
    ];
    for frame in frames {
        let sse = match serde_json::from_str::<serde_json::Value>(&frame) {
            Ok(v) => format!("event: {}\ndata: {}\n\n", v["event"].as_str().unwrap_or("x"), v["data"]),
            Err(_) => format!("event: message\nid: 1000\ndata: {frame}\n\n"),
        };
        let text = frame.clone();
        inputs.push((
            format!("text {frame:.30}"),
            Box::new(move |d: &mut Driver| d.text(&text)),
        ));
        inputs.push((
            format!("bytes {sse:.30}"),
            Box::new(move |d: &mut Driver| d.conn.handle_bytes(d.now, sse.as_bytes())),
        ));
    }
    inputs.push((
        "binary".into(),
        Box::new(|d: &mut Driver| d.conn.handle_binary(d.now, &[0xff])),
    ));
    inputs.push((
        "close".into(),
        Box::new(|d: &mut Driver| d.conn.handle_close(d.now, 1006, "")),
    ));
    inputs.push(("open".into(), Box::new(|d: &mut Driver| d.conn.handle_open(d.now))));
    inputs.push((
        "open failed".into(),
        Box::new(|d: &mut Driver| d.conn.handle_open_failed(d.now, Some(503), "")),
    ));
    inputs.push((
        "open error".into(),
        Box::new(|d: &mut Driver| d.conn.handle_open_error(d.now, "x")),
    ));
    inputs.push((
        "open unusable".into(),
        Box::new(|d: &mut Driver| {
            let e = SwitchError::local(agentwire_core::ErrorKind::Protocol, "x");
            d.conn.handle_open_unusable(d.now, e)
        }),
    ));
    inputs.push((
        "timeout".into(),
        Box::new(|d: &mut Driver| d.conn.handle_timeout(d.now + 600_000)),
    ));
    inputs.push((
        "reconnect_now".into(),
        Box::new(|d: &mut Driver| assert!(!d.conn.reconnect_now(d.now))),
    ));
    inputs.push(("close()".into(), Box::new(|d: &mut Driver| d.conn.close(d.now))));
    for (name, input) in inputs {
        input(d);
        let (t, e) = d.drain();
        assert!(t.is_empty() && e.is_empty(), "{name} after Stopped: {t:?} {e:?}");
        assert_eq!(d.conn.poll_timeout(), None, "{name} after Stopped armed a timer");
        assert_eq!(d.conn.state(), State::Stopped, "{name}");
        d.now += 1;
    }
}

pub fn sequences(events: &[Event]) -> Vec<u64> {
    events
        .iter()
        .filter_map(|e| match e {
            Event::Event { event, .. } => Some(event.sequence),
            _ => None,
        })
        .collect()
}

/// Each gap delivered: `(the event's sequence, from_sequence, resumed_at)`.
pub fn gaps(events: &[Event]) -> Vec<(u64, u64, u64)> {
    events
        .iter()
        .filter_map(|e| match e {
            Event::Event { gap: Some(g), event } => Some((event.sequence, g.from_sequence, g.resumed_at)),
            _ => None,
        })
        .collect()
}

pub fn connection_state(generation: Option<u64>, cursor: u64, rooms: &[&str]) -> String {
    let generation = generation.map(|g| format!(r#""generation":{g},"#)).unwrap_or_default();
    let rooms: Vec<String> = rooms.iter().map(|r| format!("\"{r}\"")).collect();
    format!(
        r#"{{"event":"connection_state","data":{{"connection_id":"{CID}","agent_id":"{AGENT}",{generation}"scope":"single","filter":"all","spawn_capable":false,"rooms":[{}],"cursor":{cursor},"protocol":1,"heartbeat_interval_seconds":2.0,"server":{{"version":"0.20.0","contracts":{{"agent-protocol":{{"speaks":6,"accepts":1}}}}}},"client":{{}}}}}}"#,
        rooms.join(",")
    )
}

pub fn message(seq: u64) -> String {
    format!(
        r#"{{"event":"message","data":{{"type":"message","room_id":"{ROOM}","bridge_id":null,"channel_type":"channel_public","payload":{{"addressed":true,"sender":"@bob:localhost","body":"m{seq}"}},"sequence":{seq}}},"id":{seq}}}"#
    )
}

pub const PING: &str = r#"{"event":"ping","data":{}}"#;

pub fn gap(from: u64, resumed_at: u64) -> String {
    format!(
        r#"{{"event":"gap","data":{{"from_sequence":{from},"resumed_at":{resumed_at},"rooms":["{ROOM}"],"all_rooms":false,"reason":"events older than the retention window were dropped"}}}}"#
    )
}

pub fn evicted(code: &str) -> String {
    format!(r#"{{"event":"evicted","data":{{"code":"{code}","reason":"r","room_id":null}}}}"#)
}
