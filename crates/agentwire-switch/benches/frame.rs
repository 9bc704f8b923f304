//! WebSocket frame decoding in events per second, beside two baselines on the same text: a
//! typed decode by serde's derived `Deserialize` (borrowed strings, the payload a borrowed
//! `RawValue`: the fields `decode` gives, what a hand-written typed client pays) and a bare
//! `serde_json::Value` parse (an untyped client). Measured: `decode` alone, and a live
//! `Connection` taking the frame and surfacing the event (`handle_text` + `poll_event`: dedup,
//! cursor, queue). The event is the captured addressed message (about 450 bytes). After
//! criterion's report, the ratios against both baselines are printed from this run's estimates.
//!
//! `cargo bench -p agentwire-switch --bench frame` (criterion's options after `--`, e.g.
//! `-- --measurement-time 6`, take effect: the defaults below are set before them).

use agentwire_core::SeededEntropy;
use agentwire_switch::connection::{Connection, ConnectionConfig, Event};
use agentwire_switch::frame::{decode, encode, Frame};
use agentwire_switch::open::OpenParams;
use criterion::{black_box, criterion_group, Criterion, Throughput};
use serde::Deserialize;
use serde_json::value::RawValue;
use std::time::Duration;

#[path = "../../../bench/criterion_estimates.rs"]
mod estimates;

const GROUP: &str = "ws_message_event";

/// The typed baseline: what `decode` gives for a domain event, by serde's derive.
#[derive(Deserialize)]
struct Envelope<'a> {
    #[serde(borrow)]
    event: &'a str,
    #[serde(borrow)]
    data: Data<'a>,
    id: u64,
}

#[derive(Deserialize)]
struct Data<'a> {
    #[serde(borrow, rename = "type")]
    kind: &'a str,
    #[serde(borrow)]
    room_id: &'a str,
    #[serde(borrow)]
    bridge_id: Option<&'a str>,
    #[serde(borrow)]
    channel_type: Option<&'a str>,
    #[serde(borrow)]
    payload: &'a RawValue,
    sequence: u64,
}

const CID: &str = "19209fad-88d2-4353-b857-10454fb40fa5";

fn message(seq: u64) -> String {
    format!(
        r#"{{"event":"message","data":{{"type":"message","room_id":"47e911ea-014b-427b-a600-1c72595f0c98","bridge_id":null,"channel_type":"channel_public","payload":{{"addressed":true,"sender":"@switch-agent-236ac4ff:localhost","sender_name":"peer-beta","message_id":"$O9U7xaWgLzTx4WiHeM6xTZmLfzTLug_jpcTn2A_4r6w","body":"@peer-alpha ping alpha","timestamp":1796214836233,"thread_id":null,"attachments":[]}},"sequence":{seq}}},"id":{seq}}}"#
    )
}

fn live() -> Connection {
    let mut c = Connection::new(
        ConnectionConfig::new(OpenParams::new("agent", CID)),
        Box::new(SeededEntropy::new(1)),
    );
    c.start(0).unwrap();
    while c.poll_transmit().is_some() {}
    c.handle_open(0);
    c.handle_text(
        0,
        &format!(
            r#"{{"event":"connection_state","data":{{"connection_id":"{CID}","agent_id":"agent","generation":1,"scope":"single","filter":"all","spawn_capable":false,"rooms":[],"cursor":0,"protocol":1,"heartbeat_interval_seconds":2.0}}}}"#
        ),
    );
    assert!(matches!(c.poll_event(), Some(Event::Connected { .. })));
    c
}

fn frames(c: &mut Criterion) {
    let text = message(4813);
    let mut g = c.benchmark_group(GROUP);
    g.throughput(Throughput::Elements(1));
    g.bench_function("baseline_serde_json_value", |b| {
        b.iter(|| black_box(serde_json::from_str::<serde_json::Value>(black_box(&text)).unwrap()))
    });
    g.bench_function("baseline_serde_derived", |b| {
        b.iter(|| {
            let e: Envelope<'_> = serde_json::from_str(black_box(&text)).unwrap();
            let d = &e.data;
            black_box((
                e.event,
                d.kind,
                d.room_id,
                d.bridge_id,
                d.channel_type,
                d.payload,
                d.sequence,
                e.id,
            ));
        })
    });
    g.bench_function("decode", |b| b.iter(|| black_box(decode(black_box(&text)).unwrap())));
    let texts: Vec<String> = (1..=100_000).map(message).collect();
    g.bench_function("connection_handle_text_poll_event", |b| {
        b.iter_custom(|iters| {
            let mut c = live();
            let start = std::time::Instant::now();
            for i in 0..iters {
                // Sequences must rise: past the prepared texts, start a fresh connection.
                let i = (i % texts.len() as u64) as usize;
                if i == 0 {
                    c = live();
                }
                c.handle_text(1, &texts[i]);
                black_box(c.poll_event());
            }
            start.elapsed()
        })
    });
    let Ok(frame @ Frame::Event(_)) = decode(&text) else {
        panic!()
    };
    g.bench_function("encode", |b| b.iter(|| black_box(encode(black_box(&frame)))));
    g.finish();
}

// The defaults; `criterion_group!` applies the command line's options after them.
criterion_group! {
    name = benches;
    config = Criterion::default().warm_up_time(Duration::from_secs(1)).measurement_time(Duration::from_secs(3));
    targets = frames
}

fn main() {
    let run = estimates::Estimates::start();
    benches();
    Criterion::default().configure_from_args().final_summary();
    let mut pairs = Vec::new();
    for case in ["decode", "connection_handle_text_poll_event"] {
        for base in ["baseline_serde_derived", "baseline_serde_json_value"] {
            pairs.push((case, base));
        }
    }
    run.print_ratios(GROUP, &pairs);
}
