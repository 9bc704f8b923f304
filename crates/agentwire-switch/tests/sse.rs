//! The SSE parser against the switch-core 0.19 captures, every chunk boundary, the WHATWG corner
//! cases, the limits, and a model (proptest).

use agentwire_switch::sse::*;
use proptest::prelude::*;
use std::fs;

const VECTORS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/vectors/switch-0.19");

/// One capture file and what it says, read independently of the parser.
struct Capture {
    name: String,
    bytes: Vec<u8>,
    event: String,
    data: String,
    id: Option<String>,
}

fn captures() -> Vec<Capture> {
    let mut paths: Vec<_> = fs::read_dir(VECTORS)
        .unwrap_or_else(|e| panic!("{VECTORS}: {e}"))
        .map(|entry| entry.expect("dir entry").path())
        .filter(|p| p.extension().is_some_and(|ext| ext == "sse"))
        .collect();
    paths.sort();
    assert!(paths.len() >= 10, "expected the switch-0.19 captures in {VECTORS}");
    paths
        .into_iter()
        .map(|path| {
            let bytes = fs::read(&path).expect("read capture");
            let text = String::from_utf8(bytes.clone()).expect("captures are UTF-8");
            let field = |name: &str| text.lines().find_map(|l| l.strip_prefix(name)).map(str::to_owned);
            Capture {
                name: path.file_name().unwrap().to_string_lossy().into_owned(),
                event: field("event: ").expect("event line"),
                data: field("data: ").expect("data line"),
                id: field("id: "),
                bytes,
            }
        })
        .collect()
}

/// An outcome, comparable across chunkings (error messages may name a different size).
#[derive(Debug, Clone, PartialEq, Eq)]
enum Out {
    Event(SseEvent),
    Error(SseErrorKind),
}

fn normalize(out: Vec<Result<SseEvent, SseError>>) -> Vec<Out> {
    out.into_iter()
        .map(|r| match r {
            Ok(e) => Out::Event(e),
            Err(e) => Out::Error(e.kind),
        })
        .collect()
}

/// Feeds the chunks; returns the outcomes and the parser, checking the memory bound after each.
fn run<'a>(limits: SseLimits, chunks: impl IntoIterator<Item = &'a [u8]>) -> (Vec<Out>, SseParser) {
    let bound = limits.max_event_bytes + 1 + 3 * limits.max_line_bytes + 2;
    let mut parser = SseParser::new(limits);
    let mut out = Vec::new();
    for chunk in chunks {
        parser.feed(chunk, &mut out);
        assert!(
            parser.buffered_bytes() <= bound,
            "{} > {bound}",
            parser.buffered_bytes()
        );
    }
    (normalize(out), parser)
}

fn whole(bytes: &[u8]) -> (Vec<Out>, SseParser) {
    run(SseLimits::default(), [bytes])
}

fn ev(event: &str, data: &str, id: Option<&str>) -> Out {
    Out::Event(SseEvent {
        event: event.into(),
        data: data.into(),
        id: id.map(Into::into),
    })
}

fn events(bytes: &[u8]) -> Vec<Out> {
    whole(bytes).0
}

/// Same outcomes, last-event-ID, retry and comment count when fed whole, split in two at every
/// offset (with an empty chunk between the two halves), and one byte at a time.
fn assert_chunking_invariant(limits: SseLimits, bytes: &[u8]) -> Vec<Out> {
    let (expected, p) = run(limits, [bytes]);
    let state = |p: &SseParser| (p.last_event_id().map(str::to_owned), p.retry_ms(), p.comments());
    let expected_state = state(&p);
    for at in 0..=bytes.len() {
        let (a, b) = bytes.split_at(at);
        let (got, p) = run(limits, [a, &[], b]);
        assert_eq!(got, expected, "split at {at}");
        assert_eq!(state(&p), expected_state, "split at {at}");
    }
    let (got, p) = run(limits, bytes.chunks(1));
    assert_eq!(got, expected, "byte by byte");
    assert_eq!(state(&p), expected_state, "byte by byte");
    expected
}

fn with_endings(bytes: &[u8], ending: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(bytes.len() * 2);
    for &b in bytes {
        if b == b'\n' {
            out.extend_from_slice(ending);
        } else {
            out.push(b);
        }
    }
    out
}

// --- the captures ------------------------------------------------------------------------

#[test]
fn every_capture_parses_to_one_event() {
    for c in captures() {
        let (out, p) = whole(&c.bytes);
        assert_eq!(out, vec![ev(&c.event, &c.data, c.id.as_deref())], "{}", c.name);
        assert_eq!(c.id.is_some(), c.bytes.starts_with(b"id: "), "{}", c.name);
        assert_eq!(p.last_event_id(), c.id.as_deref(), "{}", c.name);
        assert_eq!(p.buffered_bytes(), 0, "{}", c.name);
        serde_json::from_str::<serde_json::Value>(&c.data).unwrap_or_else(|e| panic!("{}: {e}", c.name));
    }
}

#[test]
fn concatenated_captures_split_anywhere_with_any_line_ending() {
    let caps = captures();
    let concat: Vec<u8> = caps.iter().flat_map(|c| c.bytes.iter().copied()).collect();
    let expected: Vec<Out> = caps.iter().map(|c| ev(&c.event, &c.data, c.id.as_deref())).collect();
    for ending in [&b"\n"[..], b"\r\n", b"\r"] {
        let bytes = with_endings(&concat, ending);
        assert_eq!(assert_chunking_invariant(SseLimits::default(), &bytes), expected);
    }
}

#[test]
fn captures_with_bom_and_keepalives_split_anywhere() {
    let caps = captures();
    let keepalive = encode_comment("keepalive");
    let mut stream = b"\xEF\xBB\xBF".to_vec();
    for c in &caps {
        stream.extend_from_slice(&c.bytes);
        stream.extend_from_slice(keepalive.as_bytes());
    }
    let expected: Vec<Out> = caps.iter().map(|c| ev(&c.event, &c.data, c.id.as_deref())).collect();
    for ending in [&b"\n"[..], b"\r\n", b"\r"] {
        let bytes = with_endings(&stream, ending);
        assert_eq!(assert_chunking_invariant(SseLimits::default(), &bytes), expected);
        let (_, p) = whole(&bytes);
        assert_eq!(p.comments(), caps.len() as u64);
        let last_id = caps.iter().rev().find_map(|c| c.id.as_deref());
        assert_eq!(p.last_event_id(), last_id);
    }
}

#[test]
fn encode_event_reproduces_every_capture() {
    for c in captures() {
        let encoded = encode_event(&c.event, &c.data, c.id.as_deref());
        assert_eq!(encoded.as_bytes(), &c.bytes[..], "{}", c.name);
    }
}

// --- the encoder ---------------------------------------------------------------------------

#[test]
fn encode_event_round_trips() {
    let cases: &[(&str, &str, Option<&str>)] = &[
        ("message", "{}", Some("1")),
        ("gap", "", None),
        ("x", "line one\n\nline three\n", Some("")),
        ("x", "  two leading spaces\n:colon first\ndata: nested", Some("42")),
        ("unicode", "é — 😀", None),
    ];
    for &(event, data, id) in cases {
        let wire = encode_event(event, data, id);
        assert_eq!(events(wire.as_bytes()), vec![ev(event, data, id)], "{wire:?}");
    }
}

#[test]
fn encode_comment_is_the_keepalive() {
    assert_eq!(encode_comment("keepalive"), ": keepalive\n\n");
    assert_eq!(encode_comment(""), ":\n\n");
    assert_eq!(encode_comment("a\nb"), ": a\n: b\n\n");
    let (out, p) = whole(encode_comment("a\nb").as_bytes());
    assert!(out.is_empty());
    assert_eq!(p.comments(), 2);
}

// --- WHATWG corner cases -------------------------------------------------------------------

#[test]
fn field_without_colon_is_a_name_with_empty_value() {
    assert_eq!(events(b"data\n\n"), vec![ev("message", "", None)]);
    assert_eq!(events(b"data\ndata\n\n"), vec![ev("message", "\n", None)]);
    assert_eq!(events(b"event\ndata: x\n\n"), vec![ev("message", "x", None)]);
    let (out, p) = whole(b"id: 3\ndata: a\n\nid\ndata: b\n\n");
    assert_eq!(out, vec![ev("message", "a", Some("3")), ev("message", "b", Some(""))]);
    assert_eq!(p.last_event_id(), None, "an empty id empties the buffer");
}

#[test]
fn data_without_value_joins_as_empty_line() {
    assert_eq!(events(b"data:\ndata: x\n\n"), vec![ev("message", "\nx", None)]);
    assert_eq!(events(b"data: x\ndata:\n\n"), vec![ev("message", "x\n", None)]);
    assert_eq!(events(b"data:\n\n"), vec![ev("message", "", None)]);
}

#[test]
fn only_one_leading_space_is_removed() {
    assert_eq!(events(b"data:x\n\n"), vec![ev("message", "x", None)]);
    assert_eq!(events(b"data: x\n\n"), vec![ev("message", "x", None)]);
    assert_eq!(events(b"data:  x\n\n"), vec![ev("message", " x", None)]);
    assert_eq!(events(b"data:\tx \n\n"), vec![ev("message", "\tx ", None)]);
    assert_eq!(events(b"event:  e\ndata: a:b: c\n\n"), vec![ev(" e", "a:b: c", None)]);
}

#[test]
fn id_with_nul_is_ignored() {
    let (out, p) = whole(b"id: 1\ndata: a\n\nid: 2\0x\ndata: b\n\n");
    assert_eq!(out, vec![ev("message", "a", Some("1")), ev("message", "b", None)]);
    assert_eq!(p.last_event_id(), Some("1"));
}

#[test]
fn last_event_id_persists_but_event_id_is_its_own() {
    let (out, p) = whole(b"id: 5\nevent: message\ndata: a\n\nevent: gap\ndata: b\n\n");
    assert_eq!(out, vec![ev("message", "a", Some("5")), ev("gap", "b", None)]);
    assert_eq!(p.last_event_id(), Some("5"));
    // An id in an event with no data is not dispatched but still sets the buffer.
    let (out, p) = whole(b"id: 9\n\ndata: c\n\n");
    assert_eq!(out, vec![ev("message", "c", None)]);
    assert_eq!(p.last_event_id(), Some("9"));
    // The last id line of an event wins.
    assert_eq!(
        events(b"id: 1\nid: 2\ndata: d\n\n"),
        vec![ev("message", "d", Some("2"))]
    );
}

#[test]
fn retry_takes_digits_only() {
    let retry = |s: &[u8]| whole(s).1.retry_ms();
    assert_eq!(retry(b"retry: 3000\n"), Some(3000));
    assert_eq!(retry(b"retry:0\n"), Some(0));
    assert_eq!(retry(b"retry: 12a\n"), None);
    assert_eq!(retry(b"retry: 3000\nretry: 12a\n"), Some(3000));
    assert_eq!(retry(b"retry:\n"), None);
    assert_eq!(retry(b"retry\n"), None);
    assert_eq!(retry(b"retry:  5\n"), None);
    assert_eq!(retry(b"retry: -5\n"), None);
    assert_eq!(retry(b"retry: 1.5\n"), None);
    assert_eq!(retry(b"retry: 99999999999999999999999\n"), Some(u64::MAX));
    assert!(events(b"retry: 10\n\n").is_empty());
}

#[test]
fn bom_is_skipped_once_even_when_split() {
    let stream = b"\xEF\xBB\xBFdata: a\n\n";
    assert_eq!(
        assert_chunking_invariant(SseLimits::default(), stream),
        vec![ev("message", "a", None)]
    );
    // A second BOM is part of the first field name ("\u{FEFF}data"), which is unknown.
    assert!(events(b"\xEF\xBB\xBF\xEF\xBB\xBFdata: a\n\n").is_empty());
    // A BOM after the start is not skipped.
    assert_eq!(
        events(b"\ndata: \xEF\xBB\xBFa\n\n"),
        vec![ev("message", "\u{FEFF}a", None)]
    );
    // A partial BOM is ordinary (invalid) bytes.
    assert_eq!(events(b"\xEF\xBB\n\ndata: a\n\n"), vec![ev("message", "a", None)]);
}

#[test]
fn comments_are_counted_and_do_not_end_an_event() {
    let (out, p) = whole(b": keepalive\n\n:x\n:\ndata: a\n: mid\ndata: b\n\n: keepalive\n\n");
    assert_eq!(out, vec![ev("message", "a\nb", None)]);
    assert_eq!(p.comments(), 5);
    assert_eq!(p.buffered_bytes(), 0);
}

#[test]
fn blank_lines_without_data_do_not_dispatch_and_reset_the_type() {
    let (out, p) = whole(b"\n\n\r\n\revent: x\n\nid: 3\n\ndata: y\n\n");
    assert_eq!(out, vec![ev("message", "y", None)]);
    assert_eq!(p.last_event_id(), Some("3"));
}

#[test]
fn event_type_is_reset_after_dispatch() {
    assert_eq!(
        events(b"event: a\ndata: 1\n\ndata: 2\n\nevent: b\nevent: c\ndata: 3\n\n"),
        vec![ev("a", "1", None), ev("message", "2", None), ev("c", "3", None)]
    );
}

#[test]
fn unknown_fields_are_ignored_and_names_are_case_sensitive() {
    assert_eq!(
        events(b"foo: bar\nDATA: x\nData: x\n data: x\ndata: y\n\n"),
        vec![ev("message", "y", None)]
    );
}

#[test]
fn empty_chunk_after_a_cr_keeps_it_pending() {
    // Found by the proptest: an empty chunk used to forget that the previous one ended with CR.
    let (out, _) = run(SseLimits::default(), [&b"data: a\r"[..], b"", b"\ndata: b\n\n"]);
    assert_eq!(out, vec![ev("message", "a\nb", None)]);
    let limits = SseLimits {
        max_event_bytes: 0,
        max_line_bytes: 0,
    };
    let (out, _) = run(limits, [&b"data: a\r"[..], b"", b"\ndata: b\n\n"]);
    assert_eq!(out, vec![Out::Error(SseErrorKind::TooLarge)]);
}

#[test]
fn mixed_line_endings() {
    let stream = b"data: a\r\ndata: b\rdata: c\n\r\nevent: e\rdata\r\r";
    assert_eq!(
        assert_chunking_invariant(SseLimits::default(), stream),
        vec![ev("message", "a\nb\nc", None), ev("e", "", None)]
    );
}

#[test]
fn invalid_utf8_is_decoded_lossily_and_the_stream_goes_on() {
    let stream = b"event: \xFFe\ndata: \xFFab\xE2\x82\ndata: \xC3\xA9\xED\xA0\x80\n\nid: \xC0\ndata: ok\n\n";
    assert_eq!(
        assert_chunking_invariant(SseLimits::default(), stream),
        vec![
            ev("\u{FFFD}e", "\u{FFFD}ab\u{FFFD}\né\u{FFFD}\u{FFFD}\u{FFFD}", None),
            ev("message", "ok", Some("\u{FFFD}")),
        ]
    );
}

#[test]
fn unterminated_event_is_not_dispatched_and_reset_drops_it() {
    let mut p = SseParser::default();
    let mut out = Vec::new();
    p.feed(b"id: 4\nevent: e\ndata: x\n", &mut out);
    assert!(out.is_empty());
    assert!(p.buffered_bytes() > 0);
    p.reset();
    assert_eq!(p.buffered_bytes(), 0);
    assert_eq!(p.last_event_id(), Some("4"), "reset keeps the last-event-ID");
    p.feed(b"\n", &mut out);
    assert!(
        out.is_empty(),
        "the dropped event must not be dispatched by a later blank line"
    );
    p.feed(b"data: y\n\n", &mut out);
    assert_eq!(normalize(out), vec![ev("message", "y", None)]);
}

#[test]
fn reset_in_the_middle_of_a_crlf_and_of_a_skip() {
    let limits = SseLimits {
        max_event_bytes: 8,
        max_line_bytes: 8,
    };
    let mut p = SseParser::new(limits);
    let mut out = Vec::new();
    p.feed(b"data: a\r", &mut out);
    p.reset();
    // The LF is a blank line of the new stream, not the end of the old CR.
    p.feed(b"\ndata: b\n\n", &mut out);
    p.feed(b"data: 0123456789", &mut out);
    p.reset();
    p.feed(b"data: c\n\n", &mut out);
    assert_eq!(
        normalize(out),
        vec![
            ev("message", "b", None),
            Out::Error(SseErrorKind::TooLarge),
            ev("message", "c", None)
        ]
    );
}

// --- limits --------------------------------------------------------------------------------

#[test]
fn huge_data_line_is_skipped_with_bounded_memory() {
    let limits = SseLimits {
        max_event_bytes: 256 << 10,
        max_line_bytes: 256 << 10,
    };
    let mut stream = b"id: 1\nevent: message\ndata: before\n\nid: 2\nevent: message\ndata: ".to_vec();
    stream.resize(stream.len() + (5 << 20), b'x');
    stream.extend_from_slice(b"\ndata: more\n\nid: 3\nevent: gap\ndata: after\n\n");
    let mut p = SseParser::new(limits);
    let mut out = Vec::new();
    for chunk in stream.chunks(64 << 10) {
        p.feed(chunk, &mut out);
        assert!(
            p.buffered_bytes() <= limits.max_line_bytes + 64,
            "{}",
            p.buffered_bytes()
        );
    }
    assert_eq!(out.len(), 3, "{out:?}");
    assert_eq!(
        out[0],
        Ok(SseEvent {
            event: "message".into(),
            data: "before".into(),
            id: Some("1".into())
        })
    );
    let err = out[1].as_ref().unwrap_err();
    assert_eq!(err.kind, SseErrorKind::TooLarge);
    assert!(
        err.message.contains(&limits.max_line_bytes.to_string()),
        "{}",
        err.message
    );
    assert_eq!(
        out[2],
        Ok(SseEvent {
            event: "gap".into(),
            data: "after".into(),
            id: Some("3".into())
        })
    );
    assert_eq!(p.last_event_id(), Some("3"));
    assert_eq!(p.buffered_bytes(), 0);

    let frame_error: agentwire_switch::frame::FrameError = err.clone().into();
    assert_eq!(frame_error.kind, agentwire_switch::frame::FrameErrorKind::TooLarge);
    assert_eq!(frame_error.field.as_deref(), Some("data"));
    assert_eq!(frame_error.message, err.message);
}

#[test]
fn huge_event_of_small_lines_is_skipped_with_bounded_memory() {
    let limits = SseLimits {
        max_event_bytes: 4096,
        max_line_bytes: 1024,
    };
    let mut stream = b"event: big\n".to_vec();
    for _ in 0..10_000 {
        stream.extend_from_slice(b"data: 0123456789abcdef0123456789abcdef\n");
    }
    stream.extend_from_slice(b"\ndata: after\n\n");
    let mut p = SseParser::new(limits);
    let mut out = Vec::new();
    for chunk in stream.chunks(1000) {
        p.feed(chunk, &mut out);
        assert!(p.buffered_bytes() <= limits.max_event_bytes + limits.max_line_bytes + 16);
    }
    let out = normalize(out);
    assert_eq!(
        out,
        vec![Out::Error(SseErrorKind::TooLarge), ev("message", "after", None)]
    );
}

#[test]
fn long_lines_of_every_kind_are_errors_and_exact_limits_pass() {
    let limits = SseLimits {
        max_event_bytes: 10,
        max_line_bytes: 12,
    };
    // "data: 0123456" is 13 bytes; a comment, an id and an event line over the limit count too.
    for long in [
        &b"data: 0123456"[..],
        b": 0123456789ab",
        b"id: 0123456789",
        b"event: 012345",
    ] {
        let mut stream = long.to_vec();
        stream.extend_from_slice(b"\ndata: skipped\n\ndata: ok\n\n");
        let out = assert_chunking_invariant(limits, &stream);
        assert_eq!(
            out,
            vec![Out::Error(SseErrorKind::TooLarge), ev("message", "ok", None)],
            "{long:?}"
        );
    }
    // Exactly at the limits: a 12-byte line, 10 bytes of data.
    let out = assert_chunking_invariant(limits, b"data: 012345\ndata: 012\n\n");
    assert_eq!(out, vec![ev("message", "012345\n012", None)]);
    let out = assert_chunking_invariant(limits, b"data: 012345\ndata: 0123\n\n");
    assert_eq!(out, vec![Out::Error(SseErrorKind::TooLarge)]);
}

#[test]
fn skipping_ends_at_a_blank_line_of_any_ending() {
    let limits = SseLimits {
        max_event_bytes: 4,
        max_line_bytes: 64,
    };
    for end in [&b"\n\n"[..], b"\r\r", b"\r\n\r\n", b"\r\n\n", b"\n\r"] {
        let mut stream = b"data: 123456".to_vec();
        stream.extend_from_slice(end);
        stream.extend_from_slice(b"data: ok\n\n");
        let out = assert_chunking_invariant(limits, &stream);
        assert_eq!(
            out,
            vec![Out::Error(SseErrorKind::TooLarge), ev("message", "ok", None)],
            "{end:?}"
        );
    }
    // A CRLF is one terminator, not a blank line: the skip goes on.
    let out = assert_chunking_invariant(limits, b"data: 123456\r\ndata: x\r\n\r\ndata: ok\n\n");
    assert_eq!(out, vec![Out::Error(SseErrorKind::TooLarge), ev("message", "ok", None)]);
}

// --- the model -----------------------------------------------------------------------------

#[derive(Debug, Clone)]
enum Line {
    Event(String),
    Data(String),
    Id(String),
    Retry(String),
    Comment(String),
    Unknown(String, String),
}

fn line_strategy() -> impl Strategy<Value = Line> {
    prop_oneof![
        1 => "[a-z_]{0,12}".prop_map(Line::Event),
        4 => "[^\r\n]{0,40}".prop_map(Line::Data),
        1 => "[0-9a-z\u{0}]{0,6}".prop_map(Line::Id),
        1 => prop_oneof!["[0-9]{1,6}", "[0-9]{0,3}[a -]{1,2}[0-9]{0,2}"].prop_map(Line::Retry),
        1 => "[ -~]{0,20}".prop_map(Line::Comment),
        1 => ("[a-z]{1,6}", "[^\r\n]{0,10}")
            .prop_filter("not a known field", |(n, _)| !matches!(n.as_str(), "data" | "event" | "id" | "retry"))
            .prop_map(|(n, v)| Line::Unknown(n, v)),
    ]
}

/// Lines of one event (each with the encoder's choice: a space after the colon, or no colon for
/// an empty value), ended by a blank line.
type Block = Vec<(Line, bool)>;

/// Blocks, the line endings to use in turn (0 LF, 1 CRLF, 2 CR), and where to split the bytes.
fn stream_strategy() -> impl Strategy<Value = (Vec<Block>, Vec<u8>, Vec<prop::sample::Index>)> {
    (
        prop::collection::vec(prop::collection::vec((line_strategy(), any::<bool>()), 0..6), 0..12),
        prop::collection::vec(0u8..3, 200),
        prop::collection::vec(any::<prop::sample::Index>(), 0..10),
    )
}

#[derive(Debug, Default, PartialEq)]
struct Model {
    events: Vec<Out>,
    last_event_id: Option<String>,
    retry: Option<u64>,
    comments: u64,
}

/// Encodes the blocks with the chosen spacing and line endings, and computes what a WHATWG
/// parser must see.
fn encode_and_model(blocks: &[Block], endings: &[u8]) -> (Vec<u8>, Model) {
    let mut wire = Vec::new();
    let mut model = Model::default();
    let mut last_id = String::new();
    let mut n = 0usize;
    let mut prev_cr = false;
    let mut end_line = |wire: &mut Vec<u8>, empty: bool| {
        let choice = endings.get(n % endings.len().max(1)).copied().unwrap_or(0);
        n += 1;
        // A blank line after a lone CR must not start with LF (it would make a CRLF).
        let ending: &[u8] = match (choice, empty && prev_cr) {
            (0, false) => b"\n",
            (0, true) | (1, _) => b"\r\n",
            _ => b"\r",
        };
        prev_cr = ending == b"\r";
        wire.extend_from_slice(ending);
    };
    for block in blocks {
        let (mut event, mut data, mut id): (String, Option<String>, Option<String>) = (String::new(), None, None);
        for (line, space) in block {
            let (name, value) = match line {
                Line::Event(v) => {
                    event = v.clone();
                    ("event", v.as_str())
                }
                Line::Data(v) => {
                    data = Some(match data {
                        Some(d) => format!("{d}\n{v}"),
                        None => v.clone(),
                    });
                    ("data", v.as_str())
                }
                Line::Id(v) => {
                    if !v.contains('\0') {
                        id = Some(v.clone());
                        last_id = v.clone();
                    }
                    ("id", v.as_str())
                }
                Line::Retry(v) => {
                    if !v.is_empty() && v.bytes().all(|b| b.is_ascii_digit()) {
                        model.retry = Some(v.parse().unwrap());
                    }
                    ("retry", v.as_str())
                }
                Line::Comment(v) => {
                    model.comments += 1;
                    wire.push(b':');
                    wire.extend_from_slice(v.as_bytes());
                    end_line(&mut wire, false);
                    continue;
                }
                Line::Unknown(n, v) => (n.as_str(), v.as_str()),
            };
            wire.extend_from_slice(name.as_bytes());
            if value.is_empty() && *space {
                // `name` alone: no colon at all.
            } else {
                wire.push(b':');
                if *space || value.starts_with(' ') {
                    wire.push(b' ');
                }
                wire.extend_from_slice(value.as_bytes());
            }
            end_line(&mut wire, false);
        }
        end_line(&mut wire, true);
        if let Some(data) = data {
            let event = if event.is_empty() { "message".to_owned() } else { event };
            model.events.push(Out::Event(SseEvent { event, data, id }));
        }
    }
    model.last_event_id = Some(last_id).filter(|s| !s.is_empty());
    (wire, model)
}

fn split_at_indices<'a>(bytes: &'a [u8], cuts: &[prop::sample::Index]) -> Vec<&'a [u8]> {
    let mut at: Vec<usize> = cuts.iter().map(|i| i.index(bytes.len() + 1)).collect();
    at.sort_unstable();
    let mut chunks = Vec::new();
    let mut start = 0;
    for cut in at {
        chunks.push(&bytes[start..cut]);
        start = cut;
    }
    chunks.push(&bytes[start..]);
    chunks
}

/// Bytes that look like an event stream often enough to reach every state.
fn sse_bytes() -> impl Strategy<Value = Vec<u8>> {
    let token = prop_oneof![
        any::<u8>().prop_map(|b| vec![b]),
        prop::sample::select(vec![
            &b"data:"[..],
            b"data: ",
            b"id: ",
            b"event: ",
            b"retry: ",
            b":",
            b" ",
            b"\n",
            b"\r",
            b"\r\n",
            b"\n\n",
            b"\xEF\xBB\xBF",
            b"\xEF\xBB",
            b"x",
            b"12",
            b"\0",
            b"\xC3\xA9",
            b"\xFF",
            b"0123456789abcdef",
        ])
        .prop_map(<[u8]>::to_vec),
    ];
    prop::collection::vec(token, 0..200).prop_map(|t| t.concat())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn model_streams_parse_as_the_model((blocks, endings, cuts) in stream_strategy()) {
        let (wire, model) = encode_and_model(&blocks, &endings);
        let (events, p) = run(SseLimits::default(), split_at_indices(&wire, &cuts));
        let got = Model {
            events,
            last_event_id: p.last_event_id().map(str::to_owned),
            retry: p.retry_ms(),
            comments: p.comments(),
        };
        prop_assert_eq!(got, model, "{:?}", String::from_utf8_lossy(&wire));
        prop_assert_eq!(p.buffered_bytes(), 0);
    }

    #[test]
    fn arbitrary_bytes_never_panic_and_stay_bounded(
        bytes in sse_bytes(),
        cuts in prop::collection::vec(any::<prop::sample::Index>(), 0..10),
        max_line in 0usize..48,
        max_event in 0usize..64,
    ) {
        let limits = SseLimits { max_event_bytes: max_event, max_line_bytes: max_line };
        let (whole, p1) = run(limits, [&bytes[..]]);
        let (split, p2) = run(limits, split_at_indices(&bytes, &cuts));
        let (bytewise, p3) = run(limits, bytes.chunks(1));
        prop_assert_eq!(&split, &whole);
        prop_assert_eq!(&bytewise, &whole);
        for p in [&p2, &p3] {
            prop_assert_eq!(p.last_event_id(), p1.last_event_id());
            prop_assert_eq!(p.retry_ms(), p1.retry_ms());
            prop_assert_eq!(p.comments(), p1.comments());
            prop_assert_eq!(p.buffered_bytes(), p1.buffered_bytes());
        }
        // With the default limits too (no errors for such short input).
        let (unlimited, _) = run(SseLimits::default(), bytes.chunks(7));
        prop_assert!(unlimited.iter().all(|o| matches!(o, Out::Event(_))));
    }
}
