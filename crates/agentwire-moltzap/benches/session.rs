//! A connected `Session` taking a 1 KB `messages/received` push: decode + route to a typed
//! event (`handle_text`, then `poll_event`), in both generations, in messages per second; beside
//! it, two baselines on the same text: a typed decode by serde's derived `Deserialize` (the
//! envelope and the message, strings borrowed: what a hand-written typed client pays) and a bare
//! `serde_json::Value` parse (an untyped client). And a request round trip: `call`,
//! `poll_transmit`, the response, `poll_event`. After criterion's report, the ratios against both
//! baselines are printed from this run's estimates.
//!
//! `cargo bench -p agentwire-moltzap --bench session` (criterion's options after `--`, e.g.
//! `-- --measurement-time 6`, take effect: the defaults below are set before them).

use agentwire_moltzap::{Credentials, Event, GenerationChoice, Session, SessionConfig};
use criterion::{black_box, criterion_group, Criterion, Throughput};
use serde::Deserialize;
use std::borrow::Cow;
use std::time::Duration;

#[path = "../../../bench/criterion_estimates.rs"]
mod estimates;

const GROUP: &str = "messages_received_1kb";

/// The typed baseline, current generation: `{jsonrpc, method, params: {message}}`.
#[derive(Deserialize)]
struct CurrentPush<'a> {
    #[serde(borrow)]
    jsonrpc: &'a str,
    #[serde(borrow)]
    method: &'a str,
    #[serde(borrow)]
    params: Received<'a>,
}

/// Released: `{jsonrpc, type: "event", event, data: {message}}`.
#[derive(Deserialize)]
struct ReleasedPush<'a> {
    #[serde(borrow)]
    jsonrpc: &'a str,
    #[serde(borrow, rename = "type")]
    kind: &'a str,
    #[serde(borrow)]
    event: &'a str,
    #[serde(borrow)]
    data: Received<'a>,
}

#[derive(Deserialize)]
struct Received<'a> {
    #[serde(borrow)]
    message: Message<'a>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Message<'a> {
    #[serde(borrow)]
    id: &'a str,
    #[serde(borrow)]
    conversation_id: &'a str,
    #[serde(borrow)]
    sender_id: &'a str,
    #[serde(borrow)]
    parts: Vec<Part<'a>>,
    #[serde(borrow)]
    created_at: &'a str,
}

#[derive(Deserialize)]
struct Part<'a> {
    #[serde(borrow, rename = "type")]
    kind: &'a str,
    /// Borrowed unless it has escapes.
    #[serde(borrow)]
    text: Cow<'a, str>,
}

/// The typed baseline's decode of `text`: its fields, so that none is optimised away.
fn typed(generation: GenerationChoice, text: &str) -> impl Sized + '_ {
    let (names, m) = match generation {
        GenerationChoice::Released => {
            let p: ReleasedPush<'_> = serde_json::from_str(text).unwrap();
            ((p.jsonrpc, p.kind, p.event), p.data.message)
        }
        _ => {
            let p: CurrentPush<'_> = serde_json::from_str(text).unwrap();
            ((p.jsonrpc, p.method, ""), p.params.message)
        }
    };
    let parts: usize = m.parts.iter().map(|p| p.kind.len() + p.text.len()).sum();
    (names, m.id, m.conversation_id, m.sender_id, parts, m.created_at)
}

/// A `messages/received` payload of about 1 KB (a text part of 800 bytes).
fn message() -> String {
    let text = "agentwire ".repeat(80);
    format!(
        r#"{{"message":{{"id":"559081f9-4898-406d-9901-376f83859d30","conversationId":"000c5a76-408a-476c-864d-6bff007cf25f","senderId":"f5d5da7e-550a-482f-966b-7bab19bfa2b4","parts":[{{"type":"text","text":"{text}"}}],"createdAt":"2026-12-02T12:36:49.853Z"}}}}"#
    )
}

fn push(generation: GenerationChoice) -> String {
    match generation {
        GenerationChoice::Released => {
            format!(
                r#"{{"jsonrpc":"2.0","type":"event","event":"messages/received","data":{}}}"#,
                message()
            )
        }
        _ => format!(
            r#"{{"jsonrpc":"2.0","method":"messages/received","params":{}}}"#,
            message()
        ),
    }
}

/// A session of `generation`, connected.
fn ready(generation: GenerationChoice) -> Session {
    let cfg = SessionConfig {
        generation,
        ..SessionConfig::default()
    };
    let mut s = Session::new(cfg);
    s.handle_open(0);
    let id = s
        .connect(0, Credentials::AgentKey("moltzap_agent_bench".into()))
        .unwrap();
    while s.poll_transmit().is_some() {}
    let hello = match generation {
        GenerationChoice::Released => format!(
            r#"{{"jsonrpc":"2.0","type":"response","id":"{id}","result":{{"protocolVersion":"2026.425.3","agentId":"a"}}}}"#
        ),
        _ => format!(r#"{{"jsonrpc":"2.0","id":"{id}","result":{{}}}}"#),
    };
    s.handle_text(1, &hello);
    assert!(matches!(s.poll_event(), Some(Event::Connected { .. })));
    s
}

fn received(c: &mut Criterion) {
    let mut g = c.benchmark_group(GROUP);
    g.throughput(Throughput::Elements(1));
    for (name, generation) in [
        ("current", GenerationChoice::Current),
        ("released", GenerationChoice::Released),
    ] {
        let text = push(generation);
        assert!((1000..1200).contains(&text.len()), "{}", text.len());
        let mut s = ready(generation);
        g.bench_function(format!("session_{name}"), |b| {
            b.iter(|| {
                s.handle_text(2, black_box(&text));
                match s.poll_event() {
                    Some(Event::MessageReceived { data, .. }) => black_box(data),
                    other => panic!("{other:?}"),
                }
            })
        });
        g.bench_function(format!("serde_derived_{name}"), |b| {
            b.iter(|| black_box(typed(generation, black_box(&text))))
        });
        g.bench_function(format!("serde_json_value_{name}"), |b| {
            b.iter(|| black_box(serde_json::from_str::<serde_json::Value>(black_box(&text)).unwrap()))
        });
    }
    g.finish();
}

fn round_trip(c: &mut Criterion) {
    let mut g = c.benchmark_group("call_round_trip");
    g.throughput(Throughput::Elements(1));
    let mut s = ready(GenerationChoice::Current);
    g.bench_function("system_ping", |b| {
        b.iter(|| {
            let id = s.system_ping(2).unwrap();
            black_box(s.poll_transmit());
            s.handle_text(
                3,
                &format!(r#"{{"jsonrpc":"2.0","id":"{id}","result":{{"ts":"2026-12-02T12:36:49.731Z"}}}}"#),
            );
            match s.poll_event() {
                Some(Event::Response { result, .. }) => black_box(result),
                other => panic!("{other:?}"),
            }
        })
    });
    g.finish();
}

// The defaults; `criterion_group!` applies the command line's options after them.
criterion_group! {
    name = benches;
    config = Criterion::default().measurement_time(Duration::from_secs(3)).sample_size(30);
    targets = received, round_trip
}

fn main() {
    let run = estimates::Estimates::start();
    benches();
    Criterion::default().configure_from_args().final_summary();
    run.print_ratios(
        GROUP,
        &[
            ("session_current", "serde_derived_current"),
            ("session_current", "serde_json_value_current"),
            ("session_released", "serde_derived_released"),
            ("session_released", "serde_json_value_released"),
        ],
    );
}
