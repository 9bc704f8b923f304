//! Properties of the session: arbitrary server text, interleaved with calls, cancels, replies
//! (well-formed, malformed, truncated, concatenated, `id: null`), timeouts and pings, never
//! panics; and once the socket closes, every id the session handed out has had exactly one
//! terminal event (`Response`, `Failed`, `Connected` or `ConnectFailed`), and none other did.

use agentwire_moltzap::{Credentials, Event, GenerationChoice, Session, SessionConfig};
use proptest::prelude::*;
use std::collections::HashMap;

#[derive(Debug, Clone)]
enum Action {
    Text(String),
    /// A reply to the `idx`-th id handed out: `kind` picks result / error / both (malformed) /
    /// truncated; `typed` adds the released `type` key.
    Reply {
        idx: usize,
        kind: u8,
        typed: bool,
        twice: bool,
    },
    NullError(i64),
    Event(String, bool),
    Call(usize),
    Connect(bool),
    Cancel(usize),
    Advance(u64),
    Ping,
}

fn action() -> impl Strategy<Value = Action> {
    prop_oneof![
        "\\PC{0,40}".prop_map(Action::Text),
        "[\\[\\]{}\":,a-z0-9 ]{0,40}".prop_map(Action::Text),
        (any::<usize>(), 0u8..6, any::<bool>(), any::<bool>()).prop_map(|(idx, kind, typed, twice)| Action::Reply {
            idx,
            kind,
            typed,
            twice
        }),
        prop_oneof![Just(-32700i64), Just(-32600), any::<i64>()].prop_map(Action::NullError),
        ("[a-z/]{0,20}", any::<bool>()).prop_map(|(n, t)| Action::Event(n, t)),
        (0usize..4).prop_map(Action::Call),
        any::<bool>().prop_map(Action::Connect),
        any::<usize>().prop_map(Action::Cancel),
        (0u64..40_000).prop_map(Action::Advance),
        Just(Action::Ping),
    ]
}

fn choice() -> impl Strategy<Value = GenerationChoice> {
    prop_oneof![
        Just(GenerationChoice::Current),
        Just(GenerationChoice::Released),
        Just(GenerationChoice::Auto)
    ]
}

const HELLO: &str = r#"{"protocolVersion":"2026.425.3","agentId":"a","policy":{"heartbeatIntervalMs":30000}}"#;

fn reply(id: &str, kind: u8, typed: bool) -> String {
    let t = if typed { r#","type":"response""# } else { "" };
    match kind {
        0 => format!(r#"{{"jsonrpc":"2.0"{t},"id":"{id}","result":{{"ok":1}}}}"#),
        1 => format!(r#"{{"jsonrpc":"2.0"{t},"id":"{id}","result":{HELLO}}}"#),
        2 => {
            format!(r#"{{"jsonrpc":"2.0"{t},"id":"{id}","error":{{"code":-32600,"message":"Invalid request frame"}}}}"#)
        }
        3 => format!(
            r#"{{"jsonrpc":"2.0"{t},"id":"{id}","error":{{"code":-32000,"message":"no","_tag":"Unauthorized"}}}}"#
        ),
        4 => format!(r#"{{"jsonrpc":"2.0"{t},"id":"{id}","result":1,"error":{{"code":1,"message":"m"}}}}"#),
        _ => {
            let full = format!(r#"{{"jsonrpc":"2.0"{t},"id":"{id}","result":{{"ok":[1,2,3]}}}}"#);
            full[..full.len() / 2 + 5].to_string()
        }
    }
}

fn run(choice: GenerationChoice, actions: Vec<Action>) -> Result<(), TestCaseError> {
    let cfg = SessionConfig {
        generation: choice,
        max_in_flight: 8,
        request_timeout_ms: 5_000,
        handshake_timeout_ms: 3_000,
        ping_interval_ms: Some(1_000),
        ..SessionConfig::default()
    };
    let mut s = Session::new(cfg);
    let mut now = 0u64;
    s.handle_open(now);
    let mut issued: Vec<String> = Vec::new();
    let mut events = Vec::new();
    if let Ok(id) = s.connect(now, Credentials::AgentKey("k".into())) {
        issued.push(id);
    }
    for a in actions {
        match a {
            Action::Text(t) => s.handle_text(now, &t),
            Action::Reply {
                idx,
                kind,
                typed,
                twice,
            } => {
                if !issued.is_empty() {
                    let id = issued[idx % issued.len()].clone();
                    let mut msg = reply(&id, kind, typed);
                    if twice {
                        msg = format!("{msg}{msg}");
                    }
                    s.handle_text(now, &msg);
                }
            }
            Action::NullError(code) => s.handle_text(
                now,
                &format!(r#"{{"jsonrpc":"2.0","type":"response","id":null,"error":{{"code":{code},"message":"x"}}}}"#),
            ),
            Action::Event(name, typed) => {
                let msg = if typed {
                    format!(r#"{{"jsonrpc":"2.0","type":"event","event":"{name}","data":{{"conversationId":1}}}}"#)
                } else {
                    format!(r#"{{"jsonrpc":"2.0","method":"{name}","params":[]}}"#)
                };
                s.handle_text(now, &msg);
            }
            Action::Call(n) => {
                let r = match n {
                    0 => s.system_ping(now),
                    1 => s.messages_list(now, "c", Some(3)),
                    2 => s.call(now, "x/y", Some(r#"{"a":[1]}"#)),
                    _ => s.call_with_timeout(now, "x/z", None, 100),
                };
                if let Ok(id) = r {
                    issued.push(id);
                }
            }
            Action::Connect(token) => {
                let c = if token {
                    Credentials::SessionToken("t".into())
                } else {
                    Credentials::AgentKey("k".into())
                };
                if let Ok(id) = s.connect(now, c) {
                    issued.push(id);
                }
            }
            Action::Cancel(idx) => {
                if !issued.is_empty() {
                    let id = issued[idx % issued.len()].clone();
                    s.cancel(&id);
                }
            }
            Action::Advance(ms) => {
                now += ms;
                if s.poll_timeout().is_some_and(|t| t <= now) {
                    s.handle_timeout(now);
                }
            }
            Action::Ping => s.handle_ping(now),
        }
        while s.poll_transmit().is_some() {}
        events.extend(std::iter::from_fn(|| s.poll_event()));
    }
    s.handle_close(now, 1006, "end");
    events.extend(std::iter::from_fn(|| s.poll_event()));
    prop_assert_eq!(s.poll_timeout(), None);
    prop_assert_eq!(s.in_flight(), 0);
    prop_assert!(matches!(events.last(), Some(Event::Disconnected { .. })), "last event");

    let mut terminal: HashMap<String, usize> = HashMap::new();
    for e in &events {
        let id = match e {
            Event::Response { id, .. }
            | Event::Failed { id, .. }
            | Event::Connected { id, .. }
            | Event::ConnectFailed { id, .. } => id,
            _ => continue,
        };
        *terminal.entry(id.clone()).or_default() += 1;
    }
    for id in &issued {
        prop_assert_eq!(terminal.get(id).copied(), Some(1), "id {} in {:?}", id, events);
    }
    prop_assert_eq!(terminal.len(), issued.len());
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn every_id_ends_exactly_once(choice in choice(), actions in prop::collection::vec(action(), 0..40)) {
        run(choice, actions)?;
    }

    #[test]
    fn arbitrary_text_never_panics(choice in choice(), texts in prop::collection::vec("\\PC{0,200}", 0..8)) {
        run(choice, texts.into_iter().map(Action::Text).collect())?;
    }

    #[test]
    fn arbitrary_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..200)) {
        let mut s = Session::new(SessionConfig::default());
        s.handle_open(0);
        let _ = s.connect(0, Credentials::AgentKey("k".into()));
        s.handle_binary(1, &bytes);
        s.handle_close(2, 1000, "");
        let events: Vec<Event> = std::iter::from_fn(|| s.poll_event()).collect();
        prop_assert!(matches!(events.last(), Some(Event::Disconnected { .. })), "last event");
    }
}
