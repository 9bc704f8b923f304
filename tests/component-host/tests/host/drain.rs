//! `drain` and `handle-texts-drain` (a text at a time, or 16) give what `handle-text` and the
//! `poll-*` calls one by one give: the same events and transmits in the same order, and the same
//! next timer. Fed valid frames mixed with garbage, each session three times over, no sockets.

use super::garbage::{connection_state_sse, inputs, switch_config};
use super::runtime;
use agentwire_component_host::bindings::exports::agentwire::engine::{moltzap, rkt, switch};
use agentwire_component_host::defaults::{self, rkt_reply};
use agentwire_component_host::{Instance, Outgoing};
use wasmtime::component::ResourceAny;

/// What a session gave: its transmits and events (as `Debug` text), and the timer after all.
#[derive(Debug, Clone)]
struct Gave {
    transmits: Vec<String>,
    events: Vec<String>,
    timeout: Option<u64>,
}

/// How the texts go in.
#[derive(Clone, Copy, Debug)]
enum Mode {
    /// `handle-text`, then `poll-transmit` and `poll-event` until none, for each.
    Polls,
    /// `handle-texts-drain` for each on its own.
    EachDrained,
    /// `handle-texts-drain`, 16 at a time.
    Batches,
}

/// `b` gave what `a` gave; else the first difference.
fn same(a: &Gave, b: &Gave, what: &str) {
    for (name, x, y) in [
        ("transmit", &a.transmits, &b.transmits),
        ("event", &a.events, &b.events),
    ] {
        if let Some(k) = (0..x.len().max(y.len())).find(|&k| x.get(k) != y.get(k)) {
            panic!("{what}: {name} {k} differs:\n{:?}\n{:?}", x.get(k), y.get(k));
        }
    }
    assert_eq!(a.timeout, b.timeout, "{what}: the timer");
}

const MODES: [Mode; 3] = [Mode::Polls, Mode::EachDrained, Mode::Batches];
const NOW: u64 = 5_000;

/// Garbage as text, each piece after `valid[k]` for the `k` it falls on.
fn mixed(valid: &[String]) -> Vec<String> {
    let garbage: Vec<String> = inputs()
        .iter()
        .map(|g| String::from_utf8_lossy(g).into_owned())
        .collect();
    let per = garbage.len().div_ceil(valid.len());
    valid
        .iter()
        .zip(garbage.chunks(per).chain(std::iter::repeat(&[][..])))
        .flat_map(|(v, g)| std::iter::once(v.clone()).chain(g.iter().cloned()))
        .collect()
}

/// Feeds `texts` in `mode` through one session's API; `$api` is its `session()` guest.
macro_rules! feed {
    ($mode:expr, $api:expr, $i:ident, $s:expr, $texts:expr) => {{
        let (api, s, texts) = ($api, $s, $texts);
        let mut gave = Gave {
            transmits: vec![],
            events: vec![],
            timeout: None,
        };
        let mut take = |transmits: Vec<String>, events: Vec<String>| {
            gave.transmits.extend(transmits);
            gave.events.extend(events);
        };
        match $mode {
            Mode::Polls => {
                for text in texts {
                    api.call_handle_text(&mut $i.store, s, NOW, text).unwrap();
                    let t = std::iter::from_fn(|| api.call_poll_transmit(&mut $i.store, s).unwrap());
                    let t = t.map(|t| format!("{t:?}")).collect();
                    let e = std::iter::from_fn(|| api.call_poll_event(&mut $i.store, s).unwrap());
                    let e = e.map(|e| format!("{e:?}")).collect();
                    take(t, e);
                }
                gave.timeout = api.call_poll_timeout(&mut $i.store, s).unwrap();
            }
            Mode::EachDrained => {
                for text in texts {
                    let d = api
                        .call_handle_texts_drain(&mut $i.store, s, NOW, std::slice::from_ref(text))
                        .unwrap();
                    let t = d.transmits.iter().map(|t| format!("{t:?}")).collect();
                    take(t, d.events.iter().map(|e| format!("{e:?}")).collect());
                    gave.timeout = d.timeout;
                }
            }
            Mode::Batches => {
                for batch in texts.chunks(16) {
                    let d = api.call_handle_texts_drain(&mut $i.store, s, NOW, batch).unwrap();
                    let t = d.transmits.iter().map(|t| format!("{t:?}")).collect();
                    take(t, d.events.iter().map(|e| format!("{e:?}")).collect());
                    gave.timeout = d.timeout;
                }
            }
        }
        // Nothing left behind, and `drain` on an empty queue gives the timer alone.
        let rest = api.call_drain(&mut $i.store, s).unwrap();
        assert!(rest.transmits.is_empty() && rest.events.is_empty(), "{:?}", $mode);
        assert_eq!(rest.timeout, gave.timeout, "{:?}", $mode);
        gave
    }};
}

pub(super) fn switch_live(i: &mut Instance, config: &switch::Config) -> ResourceAny {
    let api = i.engine.agentwire_engine_switch().session();
    let s = api.call_constructor(&mut i.store, config).unwrap();
    api.call_start(&mut i.store, s, NOW).unwrap().unwrap();
    api.call_handle_open(&mut i.store, s, NOW).unwrap();
    let sse = connection_state_sse();
    let data = sse.lines().find_map(|l| l.strip_prefix("data: ")).unwrap();
    let frame = format!(r#"{{"event":"connection_state","data":{data}}}"#);
    let d = api
        .call_handle_texts_drain(&mut i.store, s, NOW, std::slice::from_ref(&frame))
        .unwrap();
    assert!(matches!(d.events[..], [switch::Event::Connected(_)]), "{:?}", d.events);
    s
}

#[test]
fn switch_drains_give_what_the_polls_give() {
    let valid: Vec<String> = (1..=40)
        .map(|n| match n % 10 {
            // A ping: the session answers with a pong (a transmit).
            0 => r#"{"event":"ping","data":{}}"#.to_owned(),
            _ => format!(
                r#"{{"event":"message","data":{{"type":"message","room_id":"r{n}","payload":{{"body":"m{n}"}},"sequence":{n}}},"id":{n}}}"#
            ),
        })
        .collect();
    let texts = mixed(&valid);
    let gave: Vec<Gave> = MODES
        .iter()
        .map(|&mode| {
            let mut i = runtime().instantiate().unwrap();
            let s = switch_live(&mut i, &switch_config(switch::Transport::Websocket));
            let api = i.engine.agentwire_engine_switch().session();
            feed!(mode, api, i, s, &texts)
        })
        .collect();
    let events = |g: &Gave, what: &str| g.events.iter().filter(|e| e.contains(what)).count();
    assert_eq!(events(&gave[0], "DomainEvent"), 36, "{:?}", gave[0].events);
    assert!(events(&gave[0], "Diagnostic") >= 50);
    assert_eq!(gave[0].transmits.len(), 4, "the pongs");
    same(&gave[0], &gave[1], "a text at a time");
    // A pong acknowledges the events handed out, and in a batch those are the ones drained
    // before it: the same pongs, with cursors no further on.
    let cursor = |t: &String| {
        t.split("cursor\\\":")
            .nth(1)
            .and_then(|c| c.split('}').next()?.parse::<u64>().ok())
    };
    let (polled, batched) = (&gave[0].transmits, &gave[2].transmits);
    assert_eq!(polled.len(), batched.len());
    for (p, b) in polled.iter().zip(batched) {
        let (p, b) = (cursor(p).unwrap(), cursor(b).unwrap());
        assert!(b <= p && b + 4 > p, "batched pong {b}, polled {p}");
    }
    let (mut batched, mut polled) = (gave[2].clone(), gave[0].clone());
    batched.transmits.clear();
    polled.transmits.clear();
    same(&polled, &batched, "16 texts at a time");
}

#[test]
fn switch_a_drain_that_empties_an_overflowed_queue_leaves_nothing_behind() {
    // One event fits; the next two overflow it. The drain that hands the first out empties the
    // queue: the reopen from the cursor is then a timer due at once, not a transmit and an event
    // queued after the drain had looked.
    let mut i = runtime().instantiate().unwrap();
    let config = switch::Config {
        max_queued_events: Some(1),
        ..switch_config(switch::Transport::Websocket)
    };
    let s = switch_live(&mut i, &config);
    let api = i.engine.agentwire_engine_switch().session();
    let texts: Vec<String> = (1..=3)
        .map(|n| format!(r#"{{"event":"message","data":{{"type":"message","room_id":"r","payload":{{}},"sequence":{n}}},"id":{n}}}"#))
        .collect();
    let d = api.call_handle_texts_drain(&mut i.store, s, NOW, &texts).unwrap();
    assert!(
        matches!(d.events[..], [switch::Event::Event(_), switch::Event::Diagnostic(_)]),
        "{:?}",
        d.events
    );
    assert!(d.transmits.is_empty(), "{:?}", d.transmits);
    assert_eq!(d.timeout, Some(NOW), "the reopen is due at once");
    let rest = api.call_drain(&mut i.store, s).unwrap();
    assert!(rest.transmits.is_empty() && rest.events.is_empty(), "{rest:?}");
    api.call_handle_timeout(&mut i.store, s, NOW).unwrap();
    let d = api.call_drain(&mut i.store, s).unwrap();
    assert!(
        matches!(d.transmits[..], [switch::Transmit::Close(_), ..]),
        "{:?}",
        d.transmits
    );
    assert!(
        matches!(d.events[..], [switch::Event::Disconnected(_)]),
        "{:?}",
        d.events
    );
}

#[test]
fn moltzap_drains_give_what_the_polls_give() {
    let valid: Vec<String> = (1..=30)
        .map(|n| {
            format!(
                r#"{{"jsonrpc":"2.0","method":"messages/received","params":{{"message":{{"id":"m{n}","conversationId":"c","senderId":"s","parts":[{{"type":"text","text":"hi {n}"}}],"createdAt":"2026-12-04T12:00:00.000Z"}}}}}}"#
            )
        })
        .collect();
    let texts = mixed(&valid);
    let gave: Vec<Gave> = MODES
        .iter()
        .map(|&mode| {
            let mut i = runtime().instantiate().unwrap();
            let api = i.engine.agentwire_engine_moltzap().session();
            let s = api.call_constructor(&mut i.store, &defaults::moltzap()).unwrap();
            api.call_handle_open(&mut i.store, s, NOW).unwrap();
            let credentials = moltzap::Credentials::AgentKey("moltzap_agent_x".into());
            let id = api.call_connect(&mut i.store, s, NOW, &credentials).unwrap().unwrap();
            let hello = format!(r#"{{"jsonrpc":"2.0","id":"{id}","result":{{}}}}"#);
            let d = api
                .call_handle_texts_drain(&mut i.store, s, NOW, std::slice::from_ref(&hello))
                .unwrap();
            assert!(matches!(d.events[..], [moltzap::Event::Connected(_)]), "{:?}", d.events);
            feed!(mode, api, i, s, &texts)
        })
        .collect();
    let received = gave[0].events.iter().filter(|e| e.contains("hi ")).count();
    assert_eq!(received, 30, "{:?}", gave[0].events);
    same(&gave[0], &gave[1], "a text at a time");
    same(&gave[0], &gave[2], "16 texts at a time");
}

#[test]
fn rkt_drains_give_what_the_polls_give() {
    let gave: Vec<Gave> = MODES
        .iter()
        .map(|&mode| {
            let mut i = runtime().instantiate().unwrap();
            let api = i.engine.agentwire_engine_rkt().session();
            let s = api.call_constructor(&mut i.store, &defaults::rkt()).unwrap();
            api.call_handle_open(&mut i.store, s, NOW).unwrap();
            let d = api.call_drain(&mut i.store, s).unwrap();
            let [Outgoing::Text(hello)] = &d.transmits[..] else {
                panic!("no HELLO: {d:?}")
            };
            let ack = rkt_reply(hello, "HELLO_ACK", r#"{"agreed_version":1,"session_timeout":300}"#);
            let d = api
                .call_handle_texts_drain(&mut i.store, s, NOW, std::slice::from_ref(&ack))
                .unwrap();
            assert!(matches!(d.events[..], [rkt::Event::Ready(_)]), "{:?}", d.events);
            let options = defaults::rkt_request(true);
            let id = api
                .call_request(&mut i.store, s, NOW, "echo", None, &options)
                .unwrap()
                .unwrap();
            let d = api.call_drain(&mut i.store, s).unwrap();
            let [Outgoing::Text(request)] = &d.transmits[..] else {
                panic!("no REQUEST: {d:?}")
            };
            // Chunks 0..30, each pair swapped (1, 0, 3, 2, ...): held and released in order.
            let valid: Vec<String> = (0..30)
                .map(|k| k ^ 1)
                .map(|seq| {
                    rkt_reply(request, "STREAM_DATA", &format!(r#"{{"n":{seq}}}"#)).replacen(
                        "\n\n",
                        &format!("\nSeq: {seq}\n\n"),
                        1,
                    )
                })
                .collect();
            let mut gave = feed!(mode, api, i, s, &mixed(&valid));
            // The request's id is drawn at random in each session.
            for e in &mut gave.events {
                *e = e.replace(&id, "<id>");
            }
            gave
        })
        .collect();
    let chunks: Vec<&String> = gave[0].events.iter().filter(|e| e.contains("StreamData")).collect();
    assert_eq!(chunks.len(), 30, "{:?}", gave[0].events);
    assert!(chunks[29].contains(r#"{\"n\":29}"#), "in order: {}", chunks[29]);
    same(&gave[0], &gave[1], "a text at a time");
    same(&gave[0], &gave[2], "16 texts at a time");
}
