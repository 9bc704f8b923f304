//! Fuzzes the client session: the input is a script of operations (server text and bytes,
//! HelloOk and responses to pending ids, time, calls, cancels, pings, closes and reopens) on a
//! session that connected (some with a `max_send_bytes` around the connect frame's size, so
//! that the outgoing size check refuses some). Nothing may panic; `in_flight` stays within
//! `max_in_flight` and a refused call leaves it as it was; after a close every request handed
//! out has had exactly one terminal event, before `Disconnected`; every event's text
//! (`to_json_string`, what bindings hand out) is its `to_json` object.
#![no_main]

use agentwire_moltzap::{Credentials, Event, GenerationChoice, Session, SessionConfig};
use libfuzzer_sys::fuzz_target;
use std::collections::HashSet;

const MAX_IN_FLIGHT: usize = 8;

struct Run {
    s: Session,
    now: u64,
    /// Ids handed out and not yet ended.
    open: HashSet<String>,
    released: bool,
}

impl Run {
    fn drain(&mut self) {
        while self.s.poll_transmit().is_some() {}
        while let Some(e) = self.s.poll_event() {
            // What bindings hand out: the text is the `to_json` object.
            let text = e.to_json_string();
            let mut de = serde_json::Deserializer::from_str(&text);
            de.disable_recursion_limit();
            let read: serde_json::Value =
                serde::Deserialize::deserialize(&mut de).unwrap_or_else(|err| panic!("{text}: {err}"));
            assert_eq!(read, e.to_json(), "{text}");
            match e {
                Event::Response { id, .. } | Event::Failed { id, .. } | Event::ConnectFailed { id, .. } => {
                    assert!(self.open.remove(&id), "a second terminal event for {id}");
                }
                Event::Connected { id, .. } => assert!(self.open.remove(&id), "Connected for unknown {id}"),
                Event::Disconnected { .. } => assert!(self.open.is_empty(), "left open: {:?}", self.open),
                _ => {}
            }
        }
        assert!(self.s.in_flight() <= MAX_IN_FLIGHT);
    }

    fn answer(&self, id: &str, body: &str) -> String {
        if self.released {
            format!(r#"{{"jsonrpc":"2.0","type":"response","id":"{id}",{body}}}"#)
        } else {
            format!(r#"{{"jsonrpc":"2.0","id":"{id}",{body}}}"#)
        }
    }
}

fuzz_target!(|data: &[u8]| {
    let Some((&mode, script)) = data.split_first() else {
        return;
    };
    let generation = match mode % 3 {
        0 => GenerationChoice::Current,
        1 => GenerationChoice::Released,
        _ => GenerationChoice::Auto,
    };
    let mut cfg = SessionConfig {
        generation,
        max_in_flight: MAX_IN_FLIGHT,
        request_timeout_ms: 50,
        handshake_timeout_ms: 80,
        ping_interval_ms: (mode & 8 != 0).then_some(20),
        ..SessionConfig::default()
    };
    if mode & 16 != 0 {
        // 150..=178 bytes: around the connect frames (159 current, 167 released with id `aw-1`),
        // so the outgoing size check refuses connects, `auto` fallbacks and large calls.
        cfg.max_send_bytes = 150 + usize::from(mode >> 5) * 4;
    }
    let mut run = Run {
        s: Session::new(cfg),
        now: 0,
        open: HashSet::new(),
        released: generation == GenerationChoice::Released,
    };
    run.s.handle_open(0);
    if let Ok(id) = run.s.connect(0, Credentials::AgentKey("moltzap_agent_fuzz".into())) {
        run.open.insert(id);
    }
    run.drain();
    // Operations are separated by 0xff; the first byte of each picks what it is.
    for op in script.split(|&b| b == 0xff) {
        let Some((&kind, rest)) = op.split_first() else {
            continue;
        };
        let pending: Vec<String> = run.open.iter().cloned().collect();
        let pick = |n: u8| pending.get(usize::from(n) % pending.len().max(1)).cloned();
        match kind % 10 {
            0 => run.s.handle_text(run.now, &String::from_utf8_lossy(rest)),
            1 => run.s.handle_binary(run.now, rest),
            2 => {
                if let Some(id) = pick(rest.first().copied().unwrap_or(0)) {
                    let hello = if run.released {
                        r#""result":{"protocolVersion":"2026.425.3","agentId":"a"}"#
                    } else {
                        r#""result":{}"#
                    };
                    let text = run.answer(&id, hello);
                    run.s.handle_text(run.now, &text);
                }
            }
            3 => {
                if let Some(id) = pick(rest.first().copied().unwrap_or(0)) {
                    let body = format!(r#""error":{{"code":-326{:02},"message":"x"}}"#, rest.len() % 100);
                    let text = run.answer(&id, &body);
                    run.s.handle_text(run.now, &text);
                }
            }
            4 => {
                // From 0xf8 on, a leap of 2^b ms: clocks jump, and timers must still saturate.
                let (a, b) = (rest.first().copied().unwrap_or(1), rest.get(1).copied().unwrap_or(0));
                let step = if a >= 0xf8 { 1u64 << (b % 64) } else { u64::from(a) };
                run.now = run.now.saturating_add(step);
                run.s.handle_timeout(run.now);
            }
            5 => {
                let params = String::from_utf8_lossy(rest);
                let before = run.s.in_flight();
                match run.s.call(run.now, "system/ping", Some(&params)) {
                    Ok(id) => {
                        run.open.insert(id);
                    }
                    // A refusal (bad params, `limit`) leaves nothing behind.
                    Err(_) => assert_eq!(run.s.in_flight(), before),
                }
            }
            6 => {
                if let Ok(id) = run.s.system_ping(run.now) {
                    run.open.insert(id);
                }
            }
            7 => {
                if let Some(id) = pick(rest.first().copied().unwrap_or(0)) {
                    assert!(run.s.cancel(&id), "a pending id cancels");
                }
            }
            8 => run.s.handle_ping(run.now),
            _ => {
                run.s.handle_close(run.now, 1006, "fuzz");
                run.drain();
                assert!(run.open.is_empty());
                run.s.handle_open(run.now);
                run.released = generation == GenerationChoice::Released;
                if let Ok(id) = run
                    .s
                    .connect(run.now, Credentials::AgentKey("moltzap_agent_fuzz".into()))
                {
                    run.open.insert(id);
                }
            }
        }
        if generation == GenerationChoice::Auto {
            run.released = run.s.generation() == agentwire_moltzap::Generation::Released;
        }
        run.drain();
    }
    run.s.handle_close(run.now, 1000, "end");
    run.drain();
    assert!(run.open.is_empty());
});
