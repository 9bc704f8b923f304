//! Fuzzes the HTTP/1.1 answer decoders (`agentwire_core::http`) as a driver reads an answer off a
//! socket: the first byte is the size of each read (0: all at once), the rest is the answer. The
//! head is parsed after each read until it is whole; the body is then decoded by its framing,
//! read by read. Nothing may panic; a `HeadReader` fed the same reads says what `parse_head` says
//! when it says anything, and finds a whole head at its read; a head, once whole, is the head of
//! every longer read; a head error names the answer; a chunked body decodes to the same data, done or not, and fails or
//! not, however it is split, and never to more bytes than it came in.
#![no_main]

use agentwire_core::http::{parse_head, Dechunker, Framing, HeadReader};
use agentwire_core::ErrorKind;
use libfuzzer_sys::fuzz_target;

/// Dechunks `body` in pieces of `step` bytes: the data, whether the body ended, whether it failed.
fn dechunk(body: &[u8], step: usize) -> (Vec<u8>, bool, bool) {
    let mut d = Dechunker::default();
    let mut out = Vec::new();
    for piece in body.chunks(step) {
        if d.feed(piece, &mut out).is_err() {
            return (out, d.done(), true);
        }
    }
    (out, d.done(), false)
}

fuzz_target!(|data: &[u8]| {
    let [step, answer @ ..] = data else {
        return;
    };
    let step = if *step == 0 {
        answer.len().max(1)
    } else {
        usize::from(*step)
    };
    let mut read = 0;
    let mut reader = HeadReader::new();
    let head = loop {
        read = (read + step).min(answer.len());
        let parsed = parse_head(&answer[..read]);
        // The reader parses less often, never differently, and finds a head at its read.
        match (reader.poll(&answer[..read]), &parsed) {
            (Ok(None), Ok(Some(_))) => panic!("the reader missed a whole head"),
            (Ok(None), _) => {}
            (Ok(Some(h)), p) => assert_eq!(p.as_ref().ok(), Some(&Some(h))),
            (Err(e), p) => assert_eq!(p.as_ref().err().map(|p| &p.message), Some(&e.message)),
        }
        match parsed {
            Ok(Some(head)) => break head,
            Ok(None) if read < answer.len() => continue,
            Ok(None) => return,
            Err(e) => {
                assert_eq!(e.kind, ErrorKind::Decode);
                assert!(e.message.starts_with("HTTP answer: "), "{}", e.message);
                assert!(parse_head(answer).is_err(), "a longer read took what a shorter refused");
                return;
            }
        }
    };
    assert!(head.len <= read);
    assert_eq!(
        parse_head(answer).unwrap(),
        Some(head),
        "a longer read changed the head"
    );
    let body = &answer[head.len..];
    if head.framing == Framing::Chunked {
        let whole = dechunk(body, body.len().max(1));
        assert!(whole.0.len() <= body.len());
        assert_eq!(whole, dechunk(body, step), "split {step}");
    }
});
