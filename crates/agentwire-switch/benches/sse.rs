//! SSE parsing throughput: a ~1 MB stream made of the switch-core 0.19 captures repeated (with a
//! keepalive after each), fed to [`SseParser`] in 16 KiB chunks, against a naive baseline
//! (`split("\n\n")` then `lines()` over the whole `&str`, LF only, no limits) in the same group.

use agentwire_switch::sse::{encode_comment, SseEvent, SseLimits, SseParser};
use criterion::{black_box, criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use std::fs;

const VECTORS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/vectors/switch-0.19");
const TARGET_BYTES: usize = 1 << 20;
const CHUNK: usize = 16 << 10;

fn stream() -> String {
    let mut paths: Vec<_> = fs::read_dir(VECTORS)
        .expect("the switch-0.19 captures")
        .map(|e| e.expect("dir entry").path())
        .filter(|p| p.extension().is_some_and(|ext| ext == "sse"))
        .collect();
    paths.sort();
    let keepalive = encode_comment("keepalive");
    let mut one_round = String::new();
    for path in paths {
        one_round.push_str(&fs::read_to_string(path).expect("capture"));
        one_round.push_str(&keepalive);
    }
    assert!(!one_round.is_empty());
    let mut stream = String::with_capacity(TARGET_BYTES + one_round.len());
    while stream.len() < TARGET_BYTES {
        stream.push_str(&one_round);
    }
    stream
}

fn parse_chunks(bytes: &[u8], out: &mut Vec<Result<SseEvent, agentwire_switch::sse::SseError>>) -> usize {
    let mut parser = SseParser::new(SseLimits::default());
    out.clear();
    for chunk in bytes.chunks(CHUNK) {
        parser.feed(chunk, out);
    }
    out.len()
}

/// The baseline: no chunking, no CR, no limits, no BOM, no lossy decoding.
fn naive(text: &str) -> usize {
    let mut n = 0;
    for block in text.split("\n\n") {
        let mut event = "";
        let mut data = String::new();
        let mut has_data = false;
        let mut id = None;
        for line in block.lines() {
            if let Some(v) = line.strip_prefix("data: ") {
                if has_data {
                    data.push('\n');
                }
                data.push_str(v);
                has_data = true;
            } else if let Some(v) = line.strip_prefix("event: ") {
                event = v;
            } else if let Some(v) = line.strip_prefix("id: ") {
                id = Some(v.to_owned());
            }
        }
        if has_data {
            let event = if event.is_empty() { "message" } else { event };
            black_box((event.to_owned(), data, id));
            n += 1;
        }
    }
    n
}

fn bench(c: &mut Criterion) {
    let text = stream();
    let bytes = text.as_bytes();
    let mut out = Vec::new();
    let events = parse_chunks(bytes, &mut out);
    assert_eq!(events, naive(&text), "the parser and the baseline disagree");
    assert!(out.iter().all(Result::is_ok));

    let mut group = c.benchmark_group("sse");
    group.throughput(Throughput::Bytes(bytes.len() as u64));
    group.bench_function(BenchmarkId::new("parser_16k_chunks", bytes.len()), |b| {
        b.iter(|| parse_chunks(black_box(bytes), &mut out))
    });
    group.bench_function(BenchmarkId::new("naive_split_lines", bytes.len()), |b| {
        b.iter(|| naive(black_box(&text)))
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
