//! Fuzzes the SSE parser: it must never panic, must give the same events (event, data, id) and
//! the same errors (by kind) whether the body comes whole, split in two (with an empty chunk
//! between the halves) or one byte at a time, and must hold no more than its limits allow. The
//! first two bytes pick the split position and (top bit) small limits, so the too-large paths
//! are reached.
#![no_main]

use agentwire_switch::sse::{SseError, SseErrorKind, SseEvent, SseLimits, SseParser};
use libfuzzer_sys::fuzz_target;

#[derive(Debug, PartialEq, Eq)]
enum Out {
    Event(SseEvent),
    Error(SseErrorKind),
}

#[derive(Debug, PartialEq, Eq)]
struct Run {
    out: Vec<Out>,
    last_event_id: Option<String>,
    retry_ms: Option<u64>,
    comments: u64,
    buffered: usize,
}

fn run<'a>(limits: SseLimits, chunks: impl IntoIterator<Item = &'a [u8]>) -> Run {
    let bound = limits.max_event_bytes + 1 + 3 * limits.max_line_bytes + 2;
    let mut parser = SseParser::new(limits);
    let mut raw: Vec<Result<SseEvent, SseError>> = Vec::new();
    for chunk in chunks {
        parser.feed(chunk, &mut raw);
        let held = parser.buffered_bytes();
        assert!(held <= bound, "buffered {held} bytes, bound {bound}");
    }
    let out = raw
        .into_iter()
        .map(|r| match r {
            Ok(e) => Out::Event(e),
            Err(e) => {
                assert!(!e.to_string().is_empty());
                Out::Error(e.kind)
            }
        })
        .collect();
    Run {
        out,
        last_event_id: parser.last_event_id().map(str::to_owned),
        retry_ms: parser.retry_ms(),
        comments: parser.comments(),
        buffered: parser.buffered_bytes(),
    }
}

fuzz_target!(|data: &[u8]| {
    let Some((head, input)) = data.split_first_chunk::<2>() else {
        return;
    };
    let selector = u16::from_le_bytes(*head);
    let limits = if selector & 0x8000 != 0 {
        SseLimits {
            max_event_bytes: usize::from(head[1] & 0x3f),
            max_line_bytes: usize::from(head[0] & 0x1f),
        }
    } else {
        SseLimits::default()
    };
    let at = usize::from(selector & 0x7fff) % (input.len() + 1);
    let (a, b) = input.split_at(at);

    let whole = run(limits, [input]);
    let split = run(limits, [a, &[], b]);
    let bytewise = run(limits, input.chunks(1));
    assert_eq!(split, whole, "split at {at}");
    assert_eq!(bytewise, whole, "byte by byte");

    let mut parser = SseParser::new(limits);
    let mut out = Vec::new();
    parser.feed(a, &mut out);
    parser.reset();
    assert_eq!(parser.buffered_bytes(), 0);
    parser.feed(b, &mut out);
});
