//! Facts the npm package's TypeScript keeps a copy of, read from its source and checked against
//! the engine's: the TypeScript makes some errors itself (a timeout, an abort) without loading
//! the wasm module, so it cannot ask the engine; `fetchWebSocket` reads a refusal before any
//! driver sees it.

use agentwire_core::{Error, ErrorKind};

/// `npm/src/errors.ts`: `agentwireError`'s `const retryable = kind === "a" || kind === "b" …;`.
#[test]
fn the_packages_retryable_kinds_are_the_engines() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../npm/src/errors.ts");
    let ts = std::fs::read_to_string(path).expect("npm/src/errors.ts");
    let line = ts
        .lines()
        .find(|l| l.trim_start().starts_with("const retryable = kind === "))
        .expect("agentwireError's `const retryable = kind === …` line");
    let mut theirs: Vec<&str> = line.split('"').skip(1).step_by(2).collect();
    theirs.sort_unstable();
    let mut ours: Vec<&str> = ErrorKind::ALL
        .iter()
        .filter(|k| Error::new(**k, "").retryable)
        .map(|k| k.as_str())
        .collect();
    ours.sort_unstable();
    assert_eq!(theirs, ours, "{line}");
    assert!(!ours.is_empty());
}

/// `npm/src/fetch-socket.ts`: `const REFUSAL_BODY = N;`, the characters of a refused upgrade's
/// answer `fetchWebSocket` keeps, is what the engines read of it (it was 4,096, and a `409
/// taken_over` of 6.7 KB was a retryable refusal without a code in npm, final natively).
#[test]
fn the_packages_refusal_body_is_the_engines() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../npm/src/fetch-socket.ts");
    let ts = std::fs::read_to_string(path).expect("npm/src/fetch-socket.ts");
    let value = ts
        .lines()
        .find_map(|l| l.trim().strip_prefix("const REFUSAL_BODY = "))
        .and_then(|v| v.strip_suffix(';'))
        .expect("`const REFUSAL_BODY = …;` in npm/src/fetch-socket.ts");
    assert_eq!(
        value.parse::<usize>(),
        Ok(agentwire_core::http::REFUSAL_BODY_MAX),
        "{value}"
    );
}

/// `npm/src/calls.ts`: `const MAY_HAVE_RUN = "…";`, what the package adds to a call it gave up on
/// after making it, is the engines' text for a call sent and unanswered.
#[test]
fn the_packages_may_have_run_is_the_engines() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../npm/src/calls.ts");
    let ts = std::fs::read_to_string(path).expect("npm/src/calls.ts");
    let value = ts
        .lines()
        .find_map(|l| l.trim().strip_prefix("const MAY_HAVE_RUN = "))
        .and_then(|v| v.strip_suffix(';'))
        .expect("`const MAY_HAVE_RUN = …;` in npm/src/calls.ts");
    assert_eq!(value, format!("{:?}", agentwire_core::MAY_HAVE_RUN));
}
