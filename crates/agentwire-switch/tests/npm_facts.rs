//! Names and fields the npm package's TypeScript types write out, read from its source and
//! checked against the engine's (`State::as_str`, `Wire::as_str`, the `connected` state's JSON),
//! which the wasm driver hands to it.

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

/// The fields of `SwitchConnectionState`, the `connected` event's `state` in the package's
/// types, are the keys the engine writes for it.
#[test]
fn the_packages_connected_state_is_the_engines() {
    use agentwire_switch::frame::{decode, Frame};
    let text = r#"{"event":"connection_state","data":{"connection_id":"c","agent_id":"a","generation":1,"scope":"single","filter":"all","spawn_capable":false,"rooms":[],"cursor":0,"protocol":1,"heartbeat_interval_seconds":2.0}}"#;
    let Ok(Frame::ConnectionState(state)) = decode(text) else {
        panic!("not a connection_state")
    };
    let event = agentwire_switch::Event::Connected {
        state,
        wire: Wire::WebSocket,
        resumed: false,
    };
    let mut engine: Vec<String> = event.to_json()["state"].as_object().unwrap().keys().cloned().collect();
    engine.sort_unstable();
    let ts = switch_ts();
    let body = ts
        .split("export interface SwitchConnectionState {")
        .nth(1)
        .and_then(|rest| rest.split("\n}").next())
        .expect("SwitchConnectionState in npm/src/switch.ts");
    let mut fields: Vec<String> = body
        .lines()
        .filter_map(|l| l.trim().split_once(": ").map(|(k, _)| k))
        .filter(|k| k.bytes().all(|b| b.is_ascii_lowercase() || b == b'_'))
        .map(str::to_owned)
        .collect();
    fields.sort_unstable();
    assert_eq!(fields, engine);
}
