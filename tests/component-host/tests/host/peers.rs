//! The component in a wasmtime host, over real sockets on 127.0.0.1, against the local peers:
//! the RKT reference server, the MoltZap peer and the Switch peer, each in this process. Every
//! wait is bounded.

use super::runtime;
use agentwire_component_host::bindings::exports::agentwire::engine::{moltzap, rkt, switch};
use agentwire_component_host::moltzap::MoltZapSession;
use agentwire_component_host::rkt::RktSession;
use agentwire_component_host::switch::SwitchSession;
use agentwire_component_host::{defaults, now_ms, Drive, ErrorKind};
use serde_json::{json, Value};
use std::sync::OnceLock;
use std::time::Duration;
use tokio::net::TcpListener;

const WAIT: Duration = Duration::from_secs(10);

/// The peers' runtime: they run on its workers while the tests drive the component.
fn tokio() -> &'static tokio::runtime::Runtime {
    static RT: OnceLock<tokio::runtime::Runtime> = OnceLock::new();
    RT.get_or_init(|| {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap()
    })
}

fn json(text: &str) -> Value {
    serde_json::from_str(text).unwrap_or_else(|e| panic!("not JSON ({e}): {text}"))
}

#[test]
fn the_component_imports_only_wasi_random_and_exports_the_three_interfaces() {
    let rt = runtime();
    // Randomness only (ids, nonces, jitter): the list bindings/component/README.md documents.
    let imports: Vec<String> = rt
        .imports()
        .into_iter()
        .map(|i| i.split('@').next().unwrap_or_default().to_owned())
        .collect();
    let want = ["wasi:random/random"];
    assert_eq!(imports, want);
    let exports = rt.exports();
    for name in ["types", "rkt", "moltzap", "switch"] {
        let want = format!("agentwire:engine/{name}@0.1.0");
        assert!(exports.contains(&want), "{want} in {exports:?}");
    }
}

fn rkt_config() -> rkt::Config {
    rkt::Config {
        user_agent: Some("component-host-test".into()),
        ttl_s: Some(10),
        handshake_timeout_ms: Some(5_000),
        ..defaults::rkt()
    }
}

#[test]
fn rkt_request_stream_memory_discover_and_errors_through_the_component() {
    let server = tokio().block_on(async {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        agentwire_native::rkt::spawn(listener, Default::default()).unwrap()
    });
    let mut c = RktSession::open(runtime(), &server.url(), |api, store| {
        api.call_constructor(store, &rkt_config())
    })
    .unwrap();
    let (ready, _) = c
        .until(WAIT, |e| match e {
            rkt::Event::Ready(r) => Some(r.clone()),
            _ => None,
        })
        .unwrap();
    assert_eq!(ready.agreed_version, 1);
    assert!(
        ready.server.capabilities.contains(&"weather".to_string()),
        "{:?}",
        ready.server
    );

    // A request and its response.
    let id = c
        .with(|api, st, s| {
            api.call_request(
                st,
                s,
                now_ms(),
                "weather.current",
                Some(r#"{"city":"Seoul"}"#),
                &defaults::rkt_request(false),
            )
        })
        .unwrap()
        .unwrap();
    let (body, _) = c
        .until(WAIT, |e| match e {
            rkt::Event::Response(r) if r.id == id => Some(r.body.clone()),
            rkt::Event::Failed(f) => panic!("failed: {:?}", f.error),
            _ => None,
        })
        .unwrap();
    let now = json(&body.unwrap());
    assert_eq!(
        (&now["data"]["city"], &now["data"]["condition"]),
        (&json!("Seoul"), &json!("Sunny")),
        "{now}"
    );

    // A stream: begin, seven chunks in order, end.
    let id = c
        .with(|api, st, s| {
            let params = r#"{"city":"Seoul","days":7}"#;
            api.call_request(
                st,
                s,
                now_ms(),
                "weather.forecast",
                Some(params),
                &defaults::rkt_request(true),
            )
        })
        .unwrap()
        .unwrap();
    let (_, seen) = c
        .until(WAIT, |e| {
            matches!(e, rkt::Event::StreamEnd(r) if r.id == id).then_some(())
        })
        .unwrap();
    let seqs: Vec<u64> = seen
        .iter()
        .filter_map(|e| match e {
            rkt::Event::StreamData(d) if d.id == id => Some(d.seq),
            _ => None,
        })
        .collect();
    assert_eq!(seqs.len(), 7, "{seen:?}");
    assert!(seqs.windows(2).all(|w| w[0] < w[1]), "{seqs:?}");

    // Memory set, then get.
    let set = c
        .with(|api, st, s| api.call_memory_set(st, s, now_ms(), "k", r#"{"v":[1,2]}"#, None, None))
        .unwrap()
        .unwrap();
    c.until(WAIT, |e| {
        matches!(e, rkt::Event::Response(r) if r.id == set).then_some(())
    })
    .unwrap();
    let get = c
        .with(|api, st, s| api.call_memory_get(st, s, now_ms(), "k", None))
        .unwrap()
        .unwrap();
    let (body, _) = c
        .until(WAIT, |e| match e {
            rkt::Event::Response(r) if r.id == get => Some(r.body.clone()),
            _ => None,
        })
        .unwrap();
    assert_eq!(json(&body.unwrap())["value"], json!({"v": [1, 2]}));

    // Discover.
    let id = c
        .with(|api, st, s| api.call_discover(st, s, now_ms()))
        .unwrap()
        .unwrap();
    let (body, _) = c
        .until(WAIT, |e| match e {
            rkt::Event::Response(r) if r.id == id => Some(r.body.clone()),
            _ => None,
        })
        .unwrap();
    assert_eq!(
        json(&body.unwrap())["intents"],
        json!(["echo", "weather.current", "weather.forecast"])
    );

    // A remote error (an unknown intent) and a local one (bad JSON): values, not traps.
    let id = c
        .with(|api, st, s| api.call_request(st, s, now_ms(), "maps.navigate", None, &defaults::rkt_request(false)))
        .unwrap()
        .unwrap();
    let (error, _) = c
        .until(WAIT, |e| match e {
            rkt::Event::Failed(f) if f.id == id => Some(f.error.clone()),
            _ => None,
        })
        .unwrap();
    assert_eq!((error.kind, error.code), (ErrorKind::Remote, Some(602)), "{error:?}");
    let local = c
        .with(|api, st, s| {
            api.call_request(
                st,
                s,
                now_ms(),
                "echo",
                Some("{not json"),
                &defaults::rkt_request(false),
            )
        })
        .unwrap()
        .unwrap_err();
    assert_eq!(local.kind, ErrorKind::Invalid);
    assert!(local.message.contains("params"), "{local:?}");

    // Goodbye closes.
    c.with(|api, st, s| api.call_goodbye(st, s, now_ms())).unwrap();
    c.until(WAIT, |e| matches!(e, rkt::Event::Closed(_)).then_some(()))
        .unwrap();
    assert_eq!(c.with(|api, st, s| api.call_state(st, s)).unwrap(), rkt::State::Closed);
}

#[test]
fn rkt_a_refused_configured_authorization_ends_the_session_without_ready() {
    let server = tokio().block_on(async {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let cfg = agentwire_rkt::reference::ReferenceConfig {
            api_keys: vec!["the-key".into()],
            ..Default::default()
        };
        agentwire_native::rkt::spawn(listener, cfg).unwrap()
    });
    let config = rkt::Config {
        authorization: Some("Bearer not-the-key".into()),
        ..rkt_config()
    };
    let mut c = RktSession::open(runtime(), &server.url(), |api, store| {
        api.call_constructor(store, &config)
    })
    .unwrap();
    let (error, before) = c
        .until(WAIT, |e| match e {
            rkt::Event::Error(e) => Some(e.clone()),
            _ => None,
        })
        .unwrap();
    assert!(!before.iter().any(|e| matches!(e, rkt::Event::Ready(_))), "{before:?}");
    assert_eq!((error.kind, error.code), (ErrorKind::Auth, Some(401)), "{error:?}");
    assert!(error.message.contains("configured authorization"), "{error:?}");
    c.until(WAIT, |e| matches!(e, rkt::Event::Closed(_)).then_some(()))
        .unwrap();
}

fn moltzap_config() -> moltzap::Config {
    moltzap::Config {
        request_timeout_ms: Some(5_000),
        handshake_timeout_ms: Some(5_000),
        ..defaults::moltzap()
    }
}

/// A MoltZap peer of `generation` on 127.0.0.1 with alice and bob registered: its WebSocket URL
/// and their keys. The peer runs until the process ends.
fn moltzap_peer(generation: agentwire_peer_moltzap::Generation) -> (String, String, String) {
    tokio().block_on(async {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let cfg = agentwire_peer_moltzap::PeerConfig::new(generation);
        let h = agentwire_peer_moltzap::spawn(listener, cfg).unwrap();
        let key = |name: &'static str| {
            let url = h.http_url();
            async move {
                let reg = agentwire_moltzap::register::Registration::new(name);
                agentwire_native::moltzap::register(&url, &reg, WAIT)
                    .await
                    .unwrap()
                    .api_key
            }
        };
        let (a, b) = (key("alice").await, key("bob").await);
        let url = h.ws_url();
        std::mem::forget(h);
        (url, a, b)
    })
}

fn moltzap_connect(url: &str, key: &str) -> MoltZapSession {
    moltzap_connect_as(url, key, moltzap_config(), "current")
}

fn moltzap_connect_as(url: &str, key: &str, config: moltzap::Config, expected: &str) -> MoltZapSession {
    let mut c = MoltZapSession::open(runtime(), url, |api, store| api.call_constructor(store, &config)).unwrap();
    let credentials = moltzap::Credentials::AgentKey(key.to_owned());
    let id = c
        .with(|api, st, s| api.call_connect(st, s, now_ms(), &credentials))
        .unwrap()
        .unwrap();
    let (generation, _) = c
        .until(WAIT, |e| match e {
            moltzap::Event::Connected(ok) if ok.id == id => Some(ok.generation.clone()),
            moltzap::Event::ConnectFailed(f) => panic!("connect failed: {:?}", f.error),
            _ => None,
        })
        .unwrap();
    assert_eq!(generation, expected);
    c
}

#[test]
fn moltzap_connect_send_receive_and_list_through_the_component() {
    let (url, alice_key, bob_key) = moltzap_peer(agentwire_peer_moltzap::Generation::Current);
    let mut alice = moltzap_connect(&url, &alice_key);
    let mut bob = moltzap_connect(&url, &bob_key);
    let params = r#"{"to":"agent:bob","parts":[{"type":"text","text":"hello bob"}]}"#;
    let id = alice
        .with(|api, st, s| api.call_call(st, s, now_ms(), "messages/send", Some(params), None))
        .unwrap()
        .unwrap();
    let (sent, _) = alice
        .until(WAIT, |e| match e {
            moltzap::Event::Response(r) if r.id == id => Some(json(&r.body)),
            moltzap::Event::Failed(f) => panic!("send failed: {:?}", f.error),
            _ => None,
        })
        .unwrap();
    let (received, _) = bob
        .until(WAIT, |e| match e {
            moltzap::Event::MessageReceived(p) => Some(p.clone()),
            _ => None,
        })
        .unwrap();
    let message = json(&received.data);
    assert_eq!(message["message"]["parts"][0]["text"], "hello bob", "{message}");
    assert_eq!(received.message_id.as_deref(), sent["message"]["id"].as_str(), "{sent}");

    // Bob lists his recent messages: the one alice sent.
    let id = bob
        .with(|api, st, s| api.call_call(st, s, now_ms(), "agent/message/list", Some(r#"{"limit":10}"#), None))
        .unwrap()
        .unwrap();
    let (list, _) = bob
        .until(WAIT, |e| match e {
            moltzap::Event::Response(r) if r.id == id => Some(json(&r.body)),
            _ => None,
        })
        .unwrap();
    let texts: Vec<&str> = list["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|m| m["parts"][0]["text"].as_str())
        .collect();
    assert!(texts.contains(&"hello bob"), "{list}");

    // An unknown method is the server's error, as a value (-32601: invalid).
    let id = bob
        .with(|api, st, s| api.call_call(st, s, now_ms(), "no/such", None, None))
        .unwrap()
        .unwrap();
    let (error, _) = bob
        .until(WAIT, |e| match e {
            moltzap::Event::Failed(f) if f.id == id => Some(f.error.clone()),
            _ => None,
        })
        .unwrap();
    assert_eq!(
        (error.kind, error.code),
        (ErrorKind::Invalid, Some(-32601)),
        "{error:?}"
    );
    assert_eq!(json(&error.json)["name"], "MethodNotFound", "{}", error.json);

    // Close: disconnected.
    alice.with(|api, st, s| api.call_close(st, s, 1000, "done")).unwrap();
    alice
        .until(WAIT, |e| matches!(e, moltzap::Event::Disconnected(_)).then_some(()))
        .unwrap();
}

/// A released (2026.425) server: `auto` falls back to `auth/connect` on the same socket, and a
/// send reaches the other agent as the released `messages/received`.
#[test]
fn moltzap_auto_speaks_to_a_released_server_through_the_component() {
    let (url, alice_key, bob_key) = moltzap_peer(agentwire_peer_moltzap::Generation::Released);
    let auto = || moltzap::Config {
        generation: Some(moltzap::GenerationChoice::Auto),
        ..moltzap_config()
    };
    let mut alice = moltzap_connect_as(&url, &alice_key, auto(), "released");
    let mut bob = moltzap_connect_as(&url, &bob_key, auto(), "released");
    let params = r#"{"to":"agent:bob","parts":[{"type":"text","text":"hello from 2026.425"}]}"#;
    let id = alice
        .with(|api, st, s| api.call_call(st, s, now_ms(), "messages/send", Some(params), None))
        .unwrap()
        .unwrap();
    alice
        .until(WAIT, |e| match e {
            moltzap::Event::Response(r) if r.id == id => Some(()),
            moltzap::Event::Failed(f) => panic!("send failed: {:?}", f.error),
            _ => None,
        })
        .unwrap();
    let (received, _) = bob
        .until(WAIT, |e| match e {
            moltzap::Event::MessageReceived(p) => Some(p.clone()),
            _ => None,
        })
        .unwrap();
    assert!(received.data.contains("hello from 2026.425"), "{}", received.data);
    alice.with(|api, st, s| api.call_close(st, s, 1000, "done")).unwrap();
}

fn switch_config(agent_id: &str, room: &str) -> switch::Config {
    let connection_id = format!("00000000-0000-4000-8000-{:012x}", now_ms() ^ agent_id.len() as u64);
    switch::Config {
        rooms: vec![room.to_owned()],
        transport: Some(switch::Transport::Websocket),
        max_reconnect_attempts: Some(3),
        open_timeout_ms: Some(5_000),
        client: Some("component-host-test".into()),
        ..defaults::switch(agent_id, &connection_id)
    }
}

#[test]
fn switch_live_events_and_an_operation_through_the_component() {
    let (base, alice, bob, room) = tokio().block_on(async {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let cfg = agentwire_peer_switch::PeerConfig::new(agentwire_peer_switch::Generation::Current);
        let h = agentwire_peer_switch::spawn(listener, cfg).unwrap();
        let (a, b) = (h.add_agent("alice"), h.add_agent("bob"));
        let room = h.add_room("lobby", &[&a.id, &b.id]);
        let base = h.http_url();
        std::mem::forget(h);
        (base, a, b, room)
    });
    let mut a = SwitchSession::start(runtime(), &base, &alice.key, &switch_config(&alice.id, &room)).unwrap();
    let mut b = SwitchSession::start(runtime(), &base, &bob.key, &switch_config(&bob.id, &room)).unwrap();
    for s in [&mut a, &mut b] {
        let (resumed, _) = s
            .until(WAIT, |e| match e {
                switch::Event::Connected(c) => Some(c.resumed),
                switch::Event::Stopped(e) => panic!("stopped: {e:?}"),
                _ => None,
            })
            .unwrap();
        assert!(!resumed);
        assert_eq!(s.with(|api, st, x| api.call_state(st, x)).unwrap(), switch::State::Live);
        assert_eq!(
            s.with(|api, st, x| api.call_wire(st, x)).unwrap(),
            switch::Wire::Websocket
        );
        assert_eq!(s.with(|api, st, x| api.call_attempt(st, x)).unwrap(), 0);
        let generation = s.with(|api, st, x| api.call_generation(st, x)).unwrap();
        assert!(generation.is_some(), "the current generation issues one");
    }

    let joined = b
        .op("connect_to_room", &json!({ "room_id": room }).to_string())
        .unwrap()
        .unwrap();
    assert_eq!(json(&joined)["room_id"], room.as_str(), "{joined}");
    let posted = b.op("post_message", r#"{"body":"hello from bob"}"#).unwrap().unwrap();
    assert!(json(&posted).is_object(), "{posted}");
    let (event, _) = a
        .until(WAIT, |e| match e {
            switch::Event::Event(d) => Some(d.clone()),
            _ => None,
        })
        .unwrap();
    assert_eq!(
        (event.kind.as_str(), event.room_id.as_str()),
        ("message", room.as_str())
    );
    assert!(event.payload.contains("hello from bob"), "{}", event.payload);
    assert_eq!(
        a.with(|api, st, x| api.call_cursor(st, x)).unwrap(),
        Some(event.sequence)
    );

    // An operation the engine refuses before any request, and one the server refuses.
    let bad = b.op("post_message", "[1]").unwrap().unwrap_err();
    assert_eq!(bad.kind, ErrorKind::Invalid, "{bad:?}");
    let refused = b.op("no_such_operation", "{}").unwrap().unwrap_err();
    assert!(refused.code.is_some_and(|c| c >= 400), "{refused:?}");

    // Close: stopped, with no error.
    a.with(|api, st, x| api.call_close(st, x, now_ms())).unwrap();
    let (error, _) = a
        .until(WAIT, |e| match e {
            switch::Event::Stopped(e) => Some(e.clone()),
            _ => None,
        })
        .unwrap();
    assert!(error.is_none(), "{error:?}");
}
