//! Properties of the connection against a simulated server that drops, replays, duplicates,
//! pings and sends garbage: every event is delivered exactly once, in order, whatever happens;
//! arbitrary input never panics.

mod common;

use agentwire_switch::connection::{Event, State, Transmit, Transport};
use common::*;
use proptest::prelude::*;

#[derive(Debug, Clone)]
enum Step {
    /// The server sends its next new event.
    Next,
    /// The server sends an old event again (a replay overlap).
    Repeat(u8),
    /// This many new events are lost on the server (outside its window): a `gap` covers them.
    Lose(u8),
    Ping,
    Garbage(String),
    /// The socket drops; the server will replay from what the client's open asks.
    Drop(u16),
    /// The user polls up to this many events.
    Poll(u8),
    Advance(u16),
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        6 => Just(Step::Next),
        1 => any::<u8>().prop_map(Step::Repeat),
        1 => (1u8..5).prop_map(Step::Lose),
        2 => Just(Step::Ping),
        1 => ".{0,40}".prop_map(Step::Garbage),
        1 => prop::sample::select(vec![1000u16, 1006, 1011, 1012]).prop_map(Step::Drop),
        3 => any::<u8>().prop_map(Step::Poll),
        1 => (0u16..8000).prop_map(Step::Advance),
    ]
}

/// `start_from` of an open path.
fn start_from(path: &str) -> u64 {
    path.split(['?', '&'])
        .find_map(|kv| kv.strip_prefix("start_from="))
        .map_or(0, |v| v.parse().unwrap())
}

struct Sim {
    d: Driver,
    /// Events the server has produced: 1..=head.
    head: u64,
    /// What the server sends next on this socket.
    next_on_socket: u64,
    open: bool,
    delivered: Vec<u64>,
    lost: std::collections::BTreeSet<u64>,
    /// Delivered events that carried a gap.
    with_gap: Vec<u64>,
}

impl Sim {
    fn collect(&mut self, limit: usize) {
        let mut n = 0;
        while n < limit {
            while self.d.conn.poll_transmit().is_some() {}
            match self.d.conn.poll_event() {
                Some(Event::Event { event, gap }) => {
                    if gap.is_some() {
                        self.with_gap.push(event.sequence);
                    }
                    self.delivered.push(event.sequence);
                    n += 1;
                }
                Some(Event::Stopped { error }) => panic!("stopped: {error:?}"),
                Some(_) => {}
                None => break,
            }
        }
    }

    /// Handles the engine's transmits the way a server and driver would.
    fn serve(&mut self) {
        while let Some(t) = self.d.conn.poll_transmit() {
            match t {
                Transmit::Open(o) => {
                    self.d.conn.handle_open(self.d.now);
                    self.d.text(&connection_state(Some(1), 0, &[ROOM]));
                    self.next_on_socket = start_from(&o.request.path) + 1;
                    self.open = true;
                }
                Transmit::Close { .. } => self.open = false,
                _ => {}
            }
        }
    }

    fn send_pending(&mut self) {
        // Replay what the server has beyond the socket's position.
        while self.open && self.next_on_socket <= self.head && self.d.conn.state() == State::Live {
            let n = self.next_on_socket;
            if self.lost.contains(&n) {
                let mut end = n;
                while self.lost.contains(&(end + 1)) {
                    end += 1;
                }
                self.d.text(&gap(n - 1, end));
                self.next_on_socket = end + 1;
                continue;
            }
            self.d.text(&message(n));
            self.next_on_socket += 1;
            self.serve();
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn every_event_exactly_once_in_order(
        steps in prop::collection::vec(step(), 1..120),
        cap in 1usize..8,
        cap_bytes in prop::option::of(1usize..2_000),
    ) {
        let mut cfg = config(Transport::WebSocket);
        cfg.max_queued_events = cap;
        if let Some(bytes) = cap_bytes {
            cfg.max_queued_bytes = bytes;
        }
        let mut d = Driver::new(cfg);
        d.conn.start(d.now).unwrap();
        let mut sim = Sim {
            d,
            head: 0,
            next_on_socket: 1,
            open: false,
            delivered: Vec::new(),
            lost: Default::default(),
            with_gap: Vec::new(),
        };
        sim.serve();
        for s in steps {
            match s {
                Step::Next => {
                    sim.head += 1;
                    sim.send_pending();
                }
                Step::Lose(k) => {
                    for _ in 0..k {
                        sim.head += 1;
                        sim.lost.insert(sim.head);
                    }
                }
                Step::Repeat(k) => {
                    if sim.open && sim.head > 0 {
                        let n = 1 + u64::from(k) % sim.head;
                        if !sim.lost.contains(&n) {
                            sim.d.text(&message(n));
                        }
                    }
                }
                Step::Ping => {
                    if sim.open {
                        sim.d.text(PING);
                    }
                }
                Step::Garbage(g) => {
                    if sim.open {
                        sim.d.text(&g);
                    }
                }
                Step::Drop(code) => {
                    if sim.open {
                        sim.open = false;
                        sim.d.conn.handle_close(sim.d.now, code, "");
                    }
                }
                Step::Poll(k) => sim.collect(usize::from(k)),
                Step::Advance(ms) => {
                    sim.d.advance(u64::from(ms));
                }
            }
            sim.serve();
            sim.send_pending();
        }
        // Settle: poll everything, let every reopen happen, replay the rest (with a cap of 1, two
        // rounds an event: the poll that drains the queue, then the reopen).
        for _ in 0..512 {
            sim.collect(usize::MAX);
            sim.serve();
            sim.send_pending();
            // A timer already due (the reopen after an overflow drained) runs as a host runs it.
            let due = sim.d.conn.poll_timeout().is_some_and(|at| at <= sim.d.now);
            if !sim.open || due {
                let at = sim.d.conn.poll_timeout().unwrap_or(sim.d.now);
                sim.d.now = sim.d.now.max(at);
                sim.d.conn.handle_timeout(sim.d.now);
                sim.serve();
                sim.send_pending();
            }
        }
        sim.collect(usize::MAX);
        let expected: Vec<u64> = (1..=sim.head).filter(|n| !sim.lost.contains(n)).collect();
        // Every event right after a lost run carries a gap.
        let after_loss: Vec<u64> = expected.iter().copied().filter(|n| sim.lost.contains(&(n - 1))).collect();
        for n in &after_loss {
            prop_assert!(sim.with_gap.contains(n), "event {} after a loss has no gap: {:?}", n, sim.with_gap);
        }
        prop_assert_eq!(sim.delivered, expected);
    }

    #[test]
    fn arbitrary_input_never_panics_and_the_connection_goes_on(
        texts in prop::collection::vec(any::<String>(), 0..40),
        bytes in prop::collection::vec(any::<Vec<u8>>(), 0..20),
    ) {
        // A sequence no garbage above can have claimed: after any input, a real event still
        // comes through (the connection kept its state).
        const LATER: u64 = 1 << 50;
        for transport in [Transport::WebSocket, Transport::Sse] {
            let (mut d, _) = Driver::opened(config(transport));
            let sse = |frame: &str| {
                let v: serde_json::Value = serde_json::from_str(frame).unwrap();
                let id = v.get("id").map(|i| format!("id: {i}\n")).unwrap_or_default();
                format!("{id}event: {}\ndata: {}\n\n", v["event"].as_str().unwrap(), v["data"])
            };
            let feed = |d: &mut Driver, frame: &str| match transport {
                Transport::Sse => d.conn.handle_bytes(d.now, sse(frame).as_bytes()),
                _ => d.text(frame),
            };
            feed(&mut d, &connection_state(Some(1), 0, &[]));
            for t in &texts {
                d.text(t);
                d.conn.handle_binary(d.now, t.as_bytes());
            }
            for b in &bytes {
                d.conn.handle_bytes(d.now, b);
                d.conn.handle_http_response(d.now, 1, 200, &String::from_utf8_lossy(b));
            }
            // Garbage can end an SSE event mid-way: a blank line closes whatever it left open.
            d.conn.handle_bytes(d.now, b"\n\n");
            d.drain();
            if d.conn.state() == State::Live {
                feed(&mut d, &message(LATER));
                let (_, e) = d.drain();
                prop_assert_eq!(sequences(&e), vec![LATER]);
            }
            d.advance(100_000);
            d.drain();
        }
    }
}
