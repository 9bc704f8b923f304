//! Messages per second through the component (wasmtime, this crate's host) against the native
//! engine crate, in the same process, on the same input: a MoltZap `messages/received` push of
//! about 1 KB, a Switch domain event, and an RKT request with its response. The host's per-call
//! cost (crossing into the component, lifting and lowering strings and variants) is what the
//! ratio measures; the engine code is the same. The target is component/native >= 0.5.
//!
//! Each case does what a host does with an input: feed it, then take everything the session
//! queued (every transmit, every event, the next timer). `native` calls the crate's `poll_*`
//! until none; `component` makes the one call `handle-texts-drain` with the one text (or `drain`); `component_polls`
//! makes the calls one by one (`handle-text`, then `poll-transmit` and `poll-event` until none,
//! and `poll-timeout`), which costs a crossing each; `component_batch` feeds the pushes of
//! MoltZap and Switch [`BATCH`] at a time (`handle-texts-drain`), as a host does with the
//! messages a socket had ready.
//!
//! `cargo bench -p agentwire-component-host --bench throughput` (build the component first:
//! `scripts/component.sh`). After criterion's report, the ratios are printed from its estimates.
//! To see where the component's time goes: `AGENTWIRE_PERFMAP=1 perf record -g <bench binary>
//! --bench <group>/component --profile-time 5` (wasmtime names the compiled functions for perf;
//! build the component with `strip = false` for Rust names).

use agentwire_component_host::bindings::exports::agentwire::engine::{moltzap as wm, rkt as wr, switch as ws};
use agentwire_component_host::defaults::{self, rkt_reply};
use agentwire_component_host::{Instance, Outgoing, Runtime};
use agentwire_core::SeededEntropy;
use criterion::{black_box, Criterion, Throughput};
use std::rc::Rc;
use std::time::{Duration, Instant};
use wasmtime::component::ResourceAny;

// This bench prints its own table (three component cases against one native), not `print_ratios`.
#[allow(dead_code)]
#[path = "../../../bench/criterion_estimates.rs"]
mod estimates;

/// Messages per `handle-texts-drain` call in the `component_batch` cases.
const BATCH: usize = 16;

/// The component cases and the messages each feeds per call.
const COMPONENT_CASES: [(&str, usize); 3] = [("component", 1), ("component_polls", 1), ("component_batch", BATCH)];

/// Chunks per RKT stream.
const STREAM_CHUNKS: usize = 10_000;

const CID: &str = "19209fad-88d2-4353-b857-10454fb40fa5";

/// What a host does after an input, on the native crate: every transmit and every event, then
/// the next timer. Gives the events.
macro_rules! drain_native {
    ($s:expr) => {{
        while let Some(t) = $s.poll_transmit() {
            black_box(t);
        }
        let events: Vec<_> = std::iter::from_fn(|| $s.poll_event()).collect();
        black_box($s.poll_timeout());
        events
    }};
}

/// The same through the component, a call at a time: `poll-transmit` and `poll-event` until
/// none, then `poll-timeout`. Gives the events.
macro_rules! drain_polls {
    ($api:expr, $i:expr, $r:expr) => {{
        while let Some(t) = $api.call_poll_transmit(&mut $i.store, $r).unwrap() {
            black_box(t);
        }
        let events: Vec<_> = std::iter::from_fn(|| $api.call_poll_event(&mut $i.store, $r).unwrap()).collect();
        black_box($api.call_poll_timeout(&mut $i.store, $r).unwrap());
        events
    }};
}

/// Feeds `texts` to component session `r` as case `case` does (`handle-texts-drain` a text at a time, the calls
/// one by one, or `handle-texts-drain`); gives the events.
macro_rules! feed_component {
    ($case:expr, $api:expr, $i:expr, $r:expr, $now:expr, $texts:expr) => {{
        let texts: &[String] = $texts;
        match $case {
            "component" => {
                $api.call_handle_texts_drain(&mut $i.store, $r, $now, &texts[..1])
                    .unwrap()
                    .events
            }
            "component_polls" => {
                $api.call_handle_text(&mut $i.store, $r, $now, &texts[0]).unwrap();
                drain_polls!($api, $i, $r)
            }
            _ => {
                $api.call_handle_texts_drain(&mut $i.store, $r, $now, texts)
                    .unwrap()
                    .events
            }
        }
    }};
}

/// `iters` messages through `feed`, `batch` at a time, from the texts `open` gives with its
/// session; a fresh `open` (off the clock) when they run out.
fn stream<S>(
    iters: u64,
    batch: usize,
    mut open: impl FnMut() -> (S, Rc<[String]>),
    mut feed: impl FnMut(&mut S, &[String]),
) -> Duration {
    let (mut s, mut texts) = open();
    let (mut n, mut done) = (0, 0);
    let mut spent = Duration::ZERO;
    let mut start = Instant::now();
    while done < iters {
        if n == texts.len() {
            spent += start.elapsed();
            (s, texts) = open();
            n = 0;
            start = Instant::now();
        }
        let m = batch.min((iters - done) as usize).min(texts.len() - n);
        feed(&mut s, &texts[n..n + m]);
        n += m;
        done += m as u64;
    }
    spent + start.elapsed()
}

/// STREAM_DATA chunks `0..n` (a ~200-byte JSON body each) of the stream its REQUEST `wire` opened.
fn rkt_chunks(wire: &str, n: usize) -> Rc<[String]> {
    (0..n)
        .map(|i| {
            let body = format!(
                r#"{{"seq":{i},"date":"2026-12-04","city":"Seoul","high":{},"low":{},"condition":"Sunny","humidity":{},"wind_kph":12,"precip_mm":0.3,"uv_index":4,"sunrise":"07:31","sunset":"17:14"}}"#,
                10 + i % 17,
                i % 9,
                40 + i % 50
            );
            rkt_reply(wire, "STREAM_DATA", &body).replacen("\n\n", &format!("\nSeq: {i}\n\n"), 1)
        })
        .collect()
}

fn moltzap_push() -> String {
    let text = "agentwire ".repeat(80);
    format!(
        r#"{{"jsonrpc":"2.0","method":"messages/received","params":{{"message":{{"id":"559081f9-4898-406d-9901-376f83859d30","conversationId":"000c5a76-408a-476c-864d-6bff007cf25f","senderId":"f5d5da7e-550a-482f-966b-7bab19bfa2b4","parts":[{{"type":"text","text":"{text}"}}],"createdAt":"2026-12-02T12:36:49.853Z"}}}}}}"#
    )
}

fn switch_event(seq: u64) -> String {
    format!(
        r#"{{"event":"message","data":{{"type":"message","room_id":"47e911ea-014b-427b-a600-1c72595f0c98","bridge_id":null,"channel_type":"channel_public","payload":{{"addressed":true,"sender":"@switch-agent-236ac4ff:localhost","sender_name":"peer-beta","message_id":"$O9U7xaWgLzTx4WiHeM6xTZmLfzTLug_jpcTn2A_4r6w","body":"@peer-alpha ping alpha","timestamp":1796214836233,"thread_id":null,"attachments":[]}},"sequence":{seq}}},"id":{seq}}}"#
    )
}

fn connection_state() -> String {
    format!(
        r#"{{"event":"connection_state","data":{{"connection_id":"{CID}","agent_id":"agent","generation":1,"scope":"single","filter":"all","spawn_capable":false,"rooms":[],"cursor":0,"protocol":1,"heartbeat_interval_seconds":2.0}}}}"#
    )
}

const RKT_BODY: &str = r#"{"data":{"city":"Seoul","temperature":24,"condition":"Sunny"}}"#;

mod native {
    use super::*;
    use agentwire_moltzap::{Credentials, Event, Session, SessionConfig};
    use agentwire_rkt::{ClientConfig, ClientEvent, ClientSession, RequestOptions};
    use agentwire_switch::connection::{Connection, ConnectionConfig};
    use agentwire_switch::open::OpenParams;

    pub fn moltzap() -> Session {
        let mut s = Session::new(SessionConfig::default());
        s.handle_open(0);
        let id = s
            .connect(0, Credentials::AgentKey("moltzap_agent_bench".into()))
            .unwrap();
        while s.poll_transmit().is_some() {}
        s.handle_text(1, &format!(r#"{{"jsonrpc":"2.0","id":"{id}","result":{{}}}}"#));
        assert!(matches!(s.poll_event(), Some(Event::Connected { .. })));
        s
    }

    pub fn switch() -> Connection {
        let cfg = ConnectionConfig::new(OpenParams::new("agent", CID));
        let mut c = Connection::new(cfg, Box::new(SeededEntropy::new(1)));
        c.start(0).unwrap();
        while c.poll_transmit().is_some() {}
        c.handle_open(0);
        c.handle_text(0, &connection_state());
        assert!(matches!(
            c.poll_event(),
            Some(agentwire_switch::Event::Connected { .. })
        ));
        c
    }

    pub fn rkt() -> ClientSession {
        let cfg = ClientConfig {
            keepalive: false,
            ..ClientConfig::default()
        };
        let mut s = ClientSession::new(cfg, Box::new(SeededEntropy::new(1)));
        s.handle_open(0);
        let hello = s.poll_transmit().and_then(|o| o.as_text().map(str::to_owned)).unwrap();
        s.handle_text(
            1,
            &rkt_reply(&hello, "HELLO_ACK", r#"{"agreed_version":1,"session_timeout":300}"#),
        );
        assert!(matches!(s.poll_event(), Some(ClientEvent::Ready { .. })));
        s
    }

    /// A session with a stream open, and its chunks.
    pub fn rkt_stream(n: usize) -> (ClientSession, Rc<[String]>) {
        let mut s = rkt();
        let opts = RequestOptions {
            stream: true,
            ..RequestOptions::default()
        };
        s.request(2, "bench.flood", None, opts).unwrap();
        let Some(agentwire_core::Outgoing::Text(wire)) = s.poll_transmit() else {
            panic!("no REQUEST")
        };
        (s, rkt_chunks(&wire, n))
    }

    /// One round trip; the time spent in the session (building the server's reply is not).
    pub fn rkt_round_trip(s: &mut ClientSession) -> Duration {
        let start = Instant::now();
        s.request(2, "weather.current", None, RequestOptions::default())
            .unwrap();
        let Some(agentwire_core::Outgoing::Text(wire)) = s.poll_transmit() else {
            panic!("no REQUEST")
        };
        assert!(drain_native!(s).is_empty());
        let first = start.elapsed();
        let reply = rkt_reply(&wire, "RESPONSE", RKT_BODY);
        let start = Instant::now();
        s.handle_text(3, &reply);
        match &drain_native!(s)[..] {
            [ClientEvent::Response { body, .. }] => {
                black_box(body);
            }
            other => panic!("{other:?}"),
        }
        first + start.elapsed()
    }
}

/// The same, through the component.
mod component {
    use super::*;

    pub fn moltzap(i: &mut Instance) -> ResourceAny {
        let api = i.engine.agentwire_engine_moltzap().session();
        let cfg = defaults::moltzap();
        let s = api.call_constructor(&mut i.store, &cfg).unwrap();
        api.call_handle_open(&mut i.store, s, 0).unwrap();
        let credentials = wm::Credentials::AgentKey("moltzap_agent_bench".into());
        let id = api.call_connect(&mut i.store, s, 0, &credentials).unwrap().unwrap();
        while api.call_poll_transmit(&mut i.store, s).unwrap().is_some() {}
        let hello = format!(r#"{{"jsonrpc":"2.0","id":"{id}","result":{{}}}}"#);
        api.call_handle_text(&mut i.store, s, 1, &hello).unwrap();
        assert!(matches!(
            api.call_poll_event(&mut i.store, s).unwrap(),
            Some(wm::Event::Connected(_))
        ));
        s
    }

    pub fn switch(i: &mut Instance) -> ResourceAny {
        let api = i.engine.agentwire_engine_switch().session();
        let cfg = defaults::switch("agent", CID);
        let c = api.call_constructor(&mut i.store, &cfg).unwrap();
        api.call_start(&mut i.store, c, 0).unwrap().unwrap();
        while api.call_poll_transmit(&mut i.store, c).unwrap().is_some() {}
        api.call_handle_open(&mut i.store, c, 0).unwrap();
        api.call_handle_text(&mut i.store, c, 0, &connection_state()).unwrap();
        assert!(matches!(
            api.call_poll_event(&mut i.store, c).unwrap(),
            Some(ws::Event::Connected(_))
        ));
        c
    }

    pub fn rkt(i: &mut Instance) -> ResourceAny {
        let api = i.engine.agentwire_engine_rkt().session();
        let cfg = wr::Config {
            keepalive: Some(false),
            ..defaults::rkt()
        };
        let s = api.call_constructor(&mut i.store, &cfg).unwrap();
        api.call_handle_open(&mut i.store, s, 0).unwrap();
        let Some(Outgoing::Text(hello)) = api.call_poll_transmit(&mut i.store, s).unwrap() else {
            panic!("no HELLO")
        };
        let ack = rkt_reply(&hello, "HELLO_ACK", r#"{"agreed_version":1,"session_timeout":300}"#);
        api.call_handle_text(&mut i.store, s, 1, &ack).unwrap();
        assert!(matches!(
            api.call_poll_event(&mut i.store, s).unwrap(),
            Some(wr::Event::Ready(_))
        ));
        s
    }

    /// A session with a stream open, and its chunks.
    pub fn rkt_stream(i: &mut Instance, n: usize) -> (ResourceAny, Rc<[String]>) {
        let s = rkt(i);
        let api = i.engine.agentwire_engine_rkt().session();
        let opts = defaults::rkt_request(true);
        api.call_request(&mut i.store, s, 2, "bench.flood", None, &opts)
            .unwrap()
            .unwrap();
        let Some(Outgoing::Text(wire)) = api.call_poll_transmit(&mut i.store, s).unwrap() else {
            panic!("no REQUEST")
        };
        (s, rkt_chunks(&wire, n))
    }

    /// One round trip; the time spent in the component (building the server's reply is not):
    /// `request`, `drain`, then `handle-texts-drain`, or (`polls`) every `poll-*` call apart.
    pub fn rkt_round_trip(i: &mut Instance, s: ResourceAny, polls: bool) -> Duration {
        let api = i.engine.agentwire_engine_rkt().session();
        let opts = defaults::rkt_request(false);
        let start = Instant::now();
        api.call_request(&mut i.store, s, 2, "weather.current", None, &opts)
            .unwrap()
            .unwrap();
        let wire = if polls {
            let Some(Outgoing::Text(wire)) = api.call_poll_transmit(&mut i.store, s).unwrap() else {
                panic!("no REQUEST")
            };
            assert!(drain_polls!(api, i, s).is_empty());
            wire
        } else {
            let mut d = api.call_drain(&mut i.store, s).unwrap();
            assert!(d.events.is_empty());
            let Some(Outgoing::Text(wire)) = d.transmits.pop() else {
                panic!("no REQUEST")
            };
            wire
        };
        let first = start.elapsed();
        let reply = rkt_reply(&wire, "RESPONSE", RKT_BODY);
        let start = Instant::now();
        let events = if polls {
            api.call_handle_text(&mut i.store, s, 3, &reply).unwrap();
            drain_polls!(api, i, s)
        } else {
            api.call_handle_texts_drain(&mut i.store, s, 3, std::slice::from_ref(&reply))
                .unwrap()
                .events
        };
        match &events[..] {
            [wr::Event::Response(r)] => {
                black_box(r);
            }
            other => panic!("{other:?}"),
        }
        first + start.elapsed()
    }
}

fn benches(c: &mut Criterion, rt: &Runtime) {
    let push = moltzap_push();
    let mut g = c.benchmark_group("moltzap_push_1kb");
    g.throughput(Throughput::Elements(1));
    let mut s = native::moltzap();
    g.bench_function("native", |b| {
        b.iter(|| {
            s.handle_text(2, black_box(&push));
            assert_eq!(drain_native!(s).len(), 1);
        })
    });
    for (case, batch) in COMPONENT_CASES {
        let mut i = rt.instantiate().unwrap();
        let r = component::moltzap(&mut i);
        let pushes = vec![push.clone(); batch];
        g.bench_function(case, |b| {
            b.iter_custom(|iters| {
                let start = Instant::now();
                let mut left = iters as usize;
                while left > 0 {
                    let n = left.min(batch);
                    let api = i.engine.agentwire_engine_moltzap().session();
                    let events = feed_component!(case, api, i, r, 2, &pushes[..n]);
                    assert_eq!(events.len(), n);
                    left -= n;
                }
                start.elapsed()
            })
        });
    }
    g.finish();

    // Sequences must rise: a fresh connection every 100,000 events (off the clock).
    let texts: Rc<[String]> = (1..=100_000).map(switch_event).collect();
    let mut g = c.benchmark_group("switch_event");
    g.throughput(Throughput::Elements(1));
    g.bench_function("native", |b| {
        b.iter_custom(|iters| {
            let open = || (native::switch(), texts.clone());
            stream(iters, 1, open, |c, t| {
                c.handle_text(1, &t[0]);
                assert_eq!(drain_native!(c).len(), 1);
            })
        })
    });
    for (case, batch) in COMPONENT_CASES {
        g.bench_function(case, |b| {
            b.iter_custom(|iters| {
                let open = || {
                    let mut i = rt.instantiate().unwrap();
                    let c = component::switch(&mut i);
                    ((i, c), texts.clone())
                };
                stream(iters, batch, open, |(i, c), t| {
                    let api = i.engine.agentwire_engine_switch().session();
                    let events = feed_component!(case, api, i, *c, 1, t);
                    assert_eq!(events.len(), t.len());
                })
            })
        });
    }
    g.finish();

    // Chunks of one stream: a fresh session and stream every 10,000 (off the clock).
    let mut g = c.benchmark_group("rkt_stream_chunk");
    g.throughput(Throughput::Elements(1));
    g.bench_function("native", |b| {
        b.iter_custom(|iters| {
            let open = || native::rkt_stream(STREAM_CHUNKS);
            stream(iters, 1, open, |s, t| {
                s.handle_text(3, &t[0]);
                assert!(matches!(
                    &drain_native!(s)[..],
                    [agentwire_rkt::ClientEvent::StreamData { .. }]
                ));
            })
        })
    });
    for (case, batch) in COMPONENT_CASES {
        g.bench_function(case, |b| {
            b.iter_custom(|iters| {
                let open = || {
                    let mut i = rt.instantiate().unwrap();
                    let (s, chunks) = component::rkt_stream(&mut i, STREAM_CHUNKS);
                    ((i, s), chunks)
                };
                stream(iters, batch, open, |(i, s), t| {
                    let api = i.engine.agentwire_engine_rkt().session();
                    let events = feed_component!(case, api, i, *s, 3, t);
                    assert_eq!(events.len(), t.len());
                    assert!(matches!(events[0], wr::Event::StreamData(_)));
                })
            })
        });
    }
    g.finish();

    let mut g = c.benchmark_group("rkt_request_response");
    g.throughput(Throughput::Elements(1));
    let mut s = native::rkt();
    g.bench_function("native", |b| {
        b.iter_custom(|iters| (0..iters).map(|_| native::rkt_round_trip(&mut s)).sum())
    });
    for (case, _) in &COMPONENT_CASES[..2] {
        let polls = *case == "component_polls";
        let mut i = rt.instantiate().unwrap();
        let r = component::rkt(&mut i);
        g.bench_function(*case, |b| {
            b.iter_custom(|iters| (0..iters).map(|_| component::rkt_round_trip(&mut i, r, polls)).sum())
        });
    }
    g.finish();
}

fn main() {
    let run = estimates::Estimates::start();
    let rt = Runtime::load().expect("the component loads (build it with scripts/component.sh)");
    // The defaults, then the command line's options over them.
    let mut c = Criterion::default()
        .measurement_time(Duration::from_secs(3))
        .warm_up_time(Duration::from_secs(1))
        .sample_size(30)
        .configure_from_args();
    benches(&mut c, &rt);
    c.final_summary();
    println!("\ncomponent vs native, messages per second (target: ratio >= 0.5)");
    println!(
        "{:<24} {:>12} {:>12} {:>7} {:>18} {:>7} {:>18} {:>7}",
        "group", "native/s", "component/s", "ratio", "component_polls/s", "ratio", "component_batch/s", "ratio"
    );
    for group in [
        "moltzap_push_1kb",
        "switch_event",
        "rkt_stream_chunk",
        "rkt_request_response",
    ] {
        let Some(n) = run.time_ns(group, "native") else {
            continue;
        };
        let cell = |name| {
            run.time_ns(group, name).map_or_else(
                || format!("{:>12} {:>7}", "-", "-"),
                |w| format!("{:>12.0} {:>7.2}", 1e9 / w, n / w),
            )
        };
        println!(
            "{group:<24} {:>12.0} {} {:>6}{} {:>6}{}",
            1e9 / n,
            cell("component"),
            "",
            cell("component_polls"),
            "",
            cell("component_batch")
        );
    }
}
