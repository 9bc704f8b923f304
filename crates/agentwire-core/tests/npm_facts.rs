//! Facts the npm package's TypeScript keeps a copy of, read from its source and checked against
//! the engine's: the TypeScript makes some errors itself (a timeout, an abort) without loading
//! the wasm module, so it cannot ask the engine; `fetchWebSocket` reads a refusal before any
//! driver sees it.

use agentwire_core::{Error, ErrorKind};

/// The value of `const NAME = …;` in the npm package's `npm/src/<file>`, as written.
fn ts_const(file: &str, name: &str) -> String {
    let path = format!("{}/../../npm/src/{file}", env!("CARGO_MANIFEST_DIR"));
    let ts = std::fs::read_to_string(&path).expect(&path);
    let start = format!("const {name} = ");
    ts.lines()
        .find_map(|l| l.trim().strip_prefix(start.as_str()))
        .and_then(|v| v.strip_suffix(';'))
        .unwrap_or_else(|| panic!("`const {name} = …;` in npm/src/{file}"))
        .to_string()
}

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
    let value = ts_const("fetch-socket.ts", "REFUSAL_BODY");
    assert_eq!(
        value.parse::<usize>(),
        Ok(agentwire_core::http::REFUSAL_BODY_MAX),
        "{value}"
    );
}

/// `npm/src/fetch-socket.ts`: `const REFUSAL_BODY_WAIT_MS = N;`, how long `fetchWebSocket` reads a
/// refused upgrade's answer, is how long every driver reads it (it read until the open's timeout,
/// which closed the socket without the status).
#[test]
fn the_packages_refusal_wait_is_the_engines() {
    let value = ts_const("fetch-socket.ts", "REFUSAL_BODY_WAIT_MS");
    assert_eq!(
        value.parse::<u64>(),
        Ok(agentwire_core::http::REFUSAL_BODY_WAIT_MS),
        "{value}"
    );
}

/// `npm/src/calls.ts`: `const MAY_HAVE_RUN = "…";`, what the package adds to a call it gave up on
/// after making it, is the engines' text for a call sent and unanswered.
#[test]
fn the_packages_may_have_run_is_the_engines() {
    let value = ts_const("calls.ts", "MAY_HAVE_RUN");
    assert_eq!(value, format!("{:?}", agentwire_core::MAY_HAVE_RUN));
}
