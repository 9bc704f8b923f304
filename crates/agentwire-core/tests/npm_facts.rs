//! Facts the npm package's TypeScript keeps a copy of, read from its source and checked against
//! the engine's: the TypeScript makes some errors itself (a timeout, an abort) without loading
//! the wasm module, so it cannot ask the engine.

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
