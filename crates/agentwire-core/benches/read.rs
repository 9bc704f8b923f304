//! The JSON reader (`json::read`) beside serde_json on the same text, in frames per second: a
//! Switch message event (about 450 bytes, the captured addressed message) read three ways —
//! serde_json into a `Value`, serde_json into a borrowed envelope of `RawValue` fields (what the
//! engines' derived decoders do), and `json::read` onto a tape with the same fields looked up.
//! After criterion's report, the ratios (serde's time / read's) are printed from this run's
//! estimates.
//!
//! `cargo bench -p agentwire-core --bench read` (criterion's options after `--`, e.g.
//! `-- --measurement-time 6`, take effect: the defaults below are set before them).

use agentwire_core::json::read;
use criterion::{black_box, criterion_group, Criterion, Throughput};
use serde::Deserialize;
use serde_json::value::RawValue;
use std::time::Duration;

#[path = "../../../bench/criterion_estimates.rs"]
mod estimates;

const MESSAGE: &str = r#"{"event":"message","data":{"type":"message","room_id":"47e911ea-014b-427b-a600-1c72595f0c98","bridge_id":null,"channel_type":"channel_public","payload":{"addressed":true,"sender":"@switch-agent-236ac4ff:localhost","sender_name":"peer-beta","message_id":"$O9U7xaWgLzTx4WiHeM6xTZmLfzTLug_jpcTn2A_4r6w","body":"@peer-alpha ping alpha","timestamp":1796214836233,"thread_id":null,"attachments":[]},"sequence":7},"id":7}"#;

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
    #[serde(borrow)]
    room_id: &'a str,
    #[serde(borrow)]
    payload: &'a RawValue,
    sequence: u64,
}

fn bench(c: &mut Criterion) {
    let mut g = c.benchmark_group("read");
    g.throughput(Throughput::Elements(1));
    g.bench_function("serde_json Value", |b| {
        b.iter(|| serde_json::from_str::<serde_json::Value>(black_box(MESSAGE)).unwrap())
    });
    g.bench_function("serde_json derived", |b| {
        b.iter(|| {
            let e: Envelope<'_> = serde_json::from_str(black_box(MESSAGE)).unwrap();
            (
                e.event.len(),
                e.data.room_id.len(),
                e.data.payload.get().len(),
                e.data.sequence,
                e.id,
            )
        })
    });
    g.bench_function("json::read", |b| {
        b.iter(|| {
            let t = read::parse(black_box(MESSAGE), 64).unwrap();
            let r = t.root();
            let d = r.get("data").unwrap();
            let event = r.get("event").unwrap().as_str().unwrap();
            let room = d.get("room_id").unwrap().as_str().unwrap();
            let payload = d.get("payload").unwrap().raw();
            (
                event.len(),
                room.len(),
                payload.len(),
                d.get("sequence").unwrap().as_u64(),
                r.get("id").unwrap().as_u64(),
            )
        })
    });
    g.finish();
}

// The defaults; `criterion_group!` applies the command line's options after them.
criterion_group! {
    name = benches;
    config = Criterion::default().measurement_time(Duration::from_secs(3));
    targets = bench
}

fn main() {
    let run = estimates::Estimates::start();
    benches();
    Criterion::default().configure_from_args().final_summary();
    run.print_ratios(
        "read",
        &[("json::read", "serde_json derived"), ("json::read", "serde_json Value")],
    );
}
