//! Names the npm package's TypeScript types write out, read from its source and checked against
//! the engine's (`State::as_str`, `Wire::as_str`), which the wasm driver hands to it.

use agentwire_switch::{State, Wire};

fn switch_ts() -> String {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../npm/src/switch.ts");
    std::fs::read_to_string(path).expect("npm/src/switch.ts")
}

/// The quoted names of every `FIELD: "a" | "b" …` union in the source, each sorted.
fn unions(ts: &str, field: &str) -> Vec<Vec<String>> {
    let start = format!("{field}: \"");
    ts.match_indices(&start)
        .map(|(i, _)| {
            let rest = &ts[i + field.len() + 2..];
            let end = rest.find([';', '}', '\n']).unwrap_or(rest.len());
            let mut names: Vec<String> = rest[..end].split('"').skip(1).step_by(2).map(str::to_owned).collect();
            names.sort_unstable();
            names
        })
        .collect()
}

fn sorted(names: impl IntoIterator<Item = &'static str>) -> Vec<String> {
    let mut v: Vec<String> = names.into_iter().map(str::to_owned).collect();
    v.sort_unstable();
    v
}

#[test]
fn the_packages_state_names_are_the_engines() {
    use State::*;
    let all = [Idle, Opening, Attaching, Live, Backoff, Stopped];
    // A new state fails to compile here until it is listed above.
    for s in all {
        match s {
            Idle | Opening | Attaching | Live | Backoff | Stopped => {}
        }
    }
    let found = unions(&switch_ts(), "state");
    assert_eq!(found, [sorted(all.map(State::as_str))]);
}

#[test]
fn the_packages_wire_names_are_the_engines() {
    let all = [Wire::WebSocket, Wire::Sse];
    for w in all {
        match w {
            Wire::WebSocket | Wire::Sse => {}
        }
    }
    let found = unions(&switch_ts(), "wire");
    assert!(found.len() >= 3, "{found:?}");
    for names in found {
        assert_eq!(names, sorted(all.map(Wire::as_str)));
    }
}
