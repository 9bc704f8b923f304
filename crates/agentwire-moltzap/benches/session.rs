//! A connected `Session` taking a 1 KB `messages/received` push: decode + route to a typed
//! event (`handle_text`, then `poll_event`), in both generations, in messages per second; beside
//! it, a bare `serde_json::Value` parse of the same text as the baseline. And a request round
//! trip: `call`, `poll_transmit`, the response, `poll_event`.
//!
//! `cargo bench -p agentwire-moltzap --bench session`

use agentwire_core::SeededEntropy;
use agentwire_moltzap::{Credentials, Event, GenerationChoice, Session, SessionConfig};
use criterion::{black_box, criterion_group, criterion_main, Criterion, Throughput};
use std::time::Duration;

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
    let mut s = Session::new(cfg, Box::new(SeededEntropy::new(1)));
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
    let mut g = c.benchmark_group("messages_received_1kb");
    g.measurement_time(Duration::from_secs(3)).sample_size(30);
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
        g.bench_function(format!("serde_json_value_{name}"), |b| {
            b.iter(|| black_box(serde_json::from_str::<serde_json::Value>(black_box(&text)).unwrap()))
        });
    }
    g.finish();
}

fn round_trip(c: &mut Criterion) {
    let mut g = c.benchmark_group("call_round_trip");
    g.measurement_time(Duration::from_secs(3)).sample_size(30);
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

criterion_group!(benches, received, round_trip);
criterion_main!(benches);
