//! A bounded exhaustive explorer: every sequence of inputs from an alphabet, up to a depth, each
//! replayed from a fresh session (which cannot be cloned) by a `run` the test gives, which checks
//! the session's promises after every step.

use std::collections::BTreeMap;
use std::fmt::Debug;

/// A broken promise: what, and what was seen.
pub type Fail = (&'static str, String);

/// What `run` says of a sequence: `Ok(None)` when its last input does not apply in the state
/// reached (not explored), `Ok(Some(deeper))` when it holds (and whether to go deeper).
pub type Verdict = Result<Option<bool>, Fail>;

/// Every sequence of up to `depth` inputs of `alphabet` after `seed` (a way to a state deeper
/// than `depth` reaches). Prints the count and the time, and each promise broken with the
/// shortest sequence found; fails when one was. `INTERLEAVE_DEPTH` adds to `depth` (or takes
/// from it), to explore further by hand.
pub fn explore<A: Copy + Debug>(name: &str, alphabet: &[A], seed: &[A], depth: usize, run: impl Fn(&[A]) -> Verdict) {
    let depth = depth.saturating_add_signed(extra_depth());
    let hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(|_| {}));
    let started = std::time::Instant::now();
    let mut sequences = 0u64;
    let mut failures = BTreeMap::new();
    let mut prefix = seed.to_vec();
    dfs(
        alphabet,
        seed.len() + depth,
        &mut prefix,
        &run,
        &mut sequences,
        &mut failures,
    );
    std::panic::set_hook(hook);
    eprintln!(
        "{name} after {seed:?}: depth {depth}, {sequences} sequences, {:?}",
        started.elapsed()
    );
    for (what, (seq, detail)) in &failures {
        eprintln!("FAIL {what}: {seq:?} {detail}");
    }
    assert!(failures.is_empty(), "{} promises broken", failures.len());
}

fn dfs<A: Copy>(
    alphabet: &[A],
    max: usize,
    prefix: &mut Vec<A>,
    run: &impl Fn(&[A]) -> Verdict,
    sequences: &mut u64,
    failures: &mut BTreeMap<&'static str, (Vec<A>, String)>,
) {
    for &a in alphabet {
        prefix.push(a);
        match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| run(prefix))) {
            Err(_) => keep(failures, "panic", prefix, String::new()),
            Ok(Ok(None)) => {}
            Ok(Ok(Some(deeper))) => {
                *sequences += 1;
                if deeper && prefix.len() < max {
                    dfs(alphabet, max, prefix, run, sequences, failures);
                }
            }
            Ok(Err((what, detail))) => keep(failures, what, prefix, detail),
        }
        prefix.pop();
    }
}

fn keep<A: Copy>(
    failures: &mut BTreeMap<&'static str, (Vec<A>, String)>,
    what: &'static str,
    seq: &[A],
    detail: String,
) {
    if failures.get(what).is_none_or(|(s, _)| s.len() > seq.len()) {
        failures.insert(what, (seq.to_vec(), detail));
    }
}

fn extra_depth() -> isize {
    std::env::var("INTERLEAVE_DEPTH")
        .ok()
        .and_then(|d| d.parse().ok())
        .unwrap_or(0)
}
