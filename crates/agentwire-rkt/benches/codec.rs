//! Codec throughput on a typical REQUEST (the guide's headers plus `To` and `Content-Type`, a
//! ~200-byte JSON body): decode, encode, and both as a round trip, in messages per second; and,
//! beside them, a naive parser that mirrors the guide's Python `parse_msg`, as a baseline.
//!
//! `cargo bench -p agentwire-rkt --bench codec -- --warm-up-time 1 --measurement-time 3`

use agentwire_rkt::codec::{self, DEFAULT_MAX_MESSAGE_SIZE};
use agentwire_rkt::{decode, encode, Message};
use criterion::{black_box, criterion_group, criterion_main, Criterion, Throughput};
use std::collections::HashMap;

const BODY: &str = r#"{"intent":"weather.forecast","params":{"city":"Seoul","days":7,"units":"metric"},"context":{"language":"ko","timezone":"Asia/Seoul","user":"did:rkt:user-7f3a9c"},"options":{"stream":false,"max_items":7}}"#;

fn request_wire() -> String {
    format!(
        "RKT/1.0 REQUEST\n\
         Version: 1\n\
         Message-ID: 01960000-0000-7000-ab12-000000000003\n\
         Session-ID: e3ad1f12-4e3a-4b1e-9c2d-000000000042\n\
         Timestamp: 2026-06-28T12:00:00.123Z\n\
         TTL: 30\n\
         From: did:rkt:my-agent\n\
         To: rkt://weather.ai\n\
         Content-Type: application/json\n\
         \n\
         {BODY}"
    )
}

/// The guide's Python `parse_msg`, in Rust: split on the first blank line, split the headers on
/// newlines, each header on its first `:`, trim. No validation, no body parsing.
fn naive_parse(raw: &str) -> (String, HashMap<String, String>, Option<String>) {
    let (header_part, body_part) = raw.split_once("\n\n").unwrap_or((raw, ""));
    let mut lines = header_part.split('\n');
    let msg_type = lines.next().and_then(|l| l.split(' ').nth(1)).unwrap_or("").to_string();
    let mut headers = HashMap::new();
    for line in lines {
        if let Some((k, v)) = line.split_once(':') {
            headers.insert(k.trim().to_string(), v.trim().to_string());
        }
    }
    let body = (!body_part.trim().is_empty()).then(|| body_part.to_string());
    (msg_type, headers, body)
}

fn benches(c: &mut Criterion) {
    let wire = request_wire();
    assert!((190..=230).contains(&BODY.len()), "body is {} bytes", BODY.len());
    let msg: Message = decode(&wire, DEFAULT_MAX_MESSAGE_SIZE).expect("the bench message decodes");
    assert_eq!(encode(&msg), wire, "the bench message re-encodes byte for byte");
    let (t, h, b) = naive_parse(&wire);
    assert_eq!((t.as_str(), h.len(), b.as_deref()), ("REQUEST", 8, Some(BODY)));

    let mut g = c.benchmark_group("rkt_request");
    g.throughput(Throughput::Elements(1));
    g.bench_function("decode", |bch| {
        bch.iter(|| decode(black_box(&wire), DEFAULT_MAX_MESSAGE_SIZE).unwrap())
    });
    g.bench_function("encode", |bch| bch.iter(|| encode(black_box(&msg))));
    let mut buf = String::with_capacity(wire.len());
    g.bench_function("encode_into_reused_buffer", |bch| {
        bch.iter(|| {
            buf.clear();
            codec::encode_into(black_box(&msg), &mut buf);
            buf.len()
        })
    });
    g.bench_function("round_trip", |bch| {
        bch.iter(|| decode(&encode(black_box(&msg)), DEFAULT_MAX_MESSAGE_SIZE).unwrap())
    });
    g.bench_function("baseline_naive_parse", |bch| bch.iter(|| naive_parse(black_box(&wire))));
    g.finish();
}

criterion_group!(codec_benches, benches);
criterion_main!(codec_benches);
