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

    pub fn advance(&mut self, ms: u64) {
        let target = self.now + ms;
        while let Some(at) = self.conn.poll_timeout() {
            if at > target {
                break;
            }
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
