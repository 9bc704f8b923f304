//! A bounded exhaustive explorer: every sequence of inputs from an alphabet, up to a depth, each
//! replayed from a fresh session (which cannot be cloned) by a `run` the test gives, which checks
//! the session's promises after every step.

use agentwire_core::Outgoing;
use std::cell::Cell;
use std::collections::BTreeMap;
use std::fmt::Debug;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Once;

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
        match quietly(|| run(prefix)) {
            Err(message) => keep(failures, "panic", prefix, message),
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

/// A frame a session handed out to the explorer's driver: its text, or `None` for the close
/// frame (`close_polled` set). One handed out once the socket was reported gone
/// (`socket_gone`) or after the close frame, or one that is not text, breaks a promise.
pub fn frame_text(out: Outgoing, socket_gone: bool, close_polled: &mut bool) -> Result<Option<String>, Fail> {
    if socket_gone {
        return Err(("a frame is handed out after handle_close", format!("{out:?}")));
    }
    if *close_polled {
        return Err(("a frame is handed out after the close frame", format!("{out:?}")));
    }
    match out {
        Outgoing::Close { .. } => {
            *close_polled = true;
            Ok(None)
        }
        Outgoing::Text(t) => Ok(Some(t)),
        other => Err(("a frame that is not text", format!("{other:?}"))),
    }
}

thread_local! {
    static QUIET: Cell<bool> = const { Cell::new(false) };
}

/// Runs `f`, giving its panic's message as the error, without the panic printed: a panic is
/// one of the promises an explorer checks, and a search may meet thousands. The hook that keeps
/// it quiet is installed once and is silent only on a thread inside `quietly`: a test running
/// beside it (the harness runs a binary's tests on several threads) still prints its own panics.
pub fn quietly<T>(f: impl FnOnce() -> T) -> Result<T, String> {
    static HOOK: Once = Once::new();
    HOOK.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if !QUIET.with(Cell::get) {
                previous(info);
            }
        }));
    });
    let was = QUIET.with(|q| q.replace(true));
    let result = catch_unwind(AssertUnwindSafe(f));
    QUIET.with(|q| q.set(was));
    result.map_err(|p| {
        p.downcast_ref::<String>()
            .cloned()
            .or_else(|| p.downcast_ref::<&str>().map(|s| (*s).to_owned()))
            .unwrap_or_default()
    })
}

fn extra_depth() -> isize {
    std::env::var("INTERLEAVE_DEPTH")
        .ok()
        .and_then(|d| d.parse().ok())
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::quietly;

    #[test]
    fn quietly_gives_the_panics_message() {
        assert_eq!(quietly(|| 1), Ok(1));
        assert_eq!(
            quietly(|| panic!("at step {}", 3)),
            Err::<(), _>("at step 3".to_string())
        );
        assert_eq!(quietly(|| panic!("plain")), Err::<(), _>("plain".to_string()));
        // Nested: the outer call stays quiet after the inner one returns.
        let outer = quietly::<()>(|| {
            assert_eq!(quietly::<()>(|| panic!("in")), Err("in".to_string()));
            panic!("out")
        });
        assert_eq!(outer, Err("out".to_string()));
    }
}
