//! The `switch-peer` binary: prints its URL, agents and rooms, then serves.

mod common;

use agentwire_peer_kit::testing::start;

fn field<'a>(line: &'a str, name: &str) -> &'a str {
    line.split(' ')
        .find_map(|w| w.strip_prefix(&format!("{name}=")))
        .unwrap_or_else(|| panic!("no {name} in {line}"))
}

#[test]
fn binary_prints_listening_on_then_agents_and_rooms() {
    let bin = start(
        env!("CARGO_BIN_EXE_switch-peer"),
        &[
            "--port",
            "0",
            "--generation",
            "released",
            "--agent",
            "ann",
            "--room",
            "ops:ann,ben",
        ],
        4,
    );
    let lines = &bin.lines;
    assert_eq!(lines.len(), 4, "{lines:?}");
    let url = lines[0].strip_prefix("listening on ").expect(&lines[0]);
    let addr: std::net::SocketAddr = url.strip_prefix("http://").unwrap().parse().unwrap();
    assert!(addr.ip().is_loopback());
    assert!(lines[1].starts_with("agent ann id="), "{}", lines[1]);
    assert!(lines[2].starts_with("agent ben id="), "{}", lines[2]);
    assert!(field(&lines[1], "key").starts_with("sk_switch_"));
    assert!(
        lines[3].starts_with("room ops id=") && lines[3].ends_with(" members=ann,ben"),
        "{}",
        lines[3]
    );
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let r = rt.block_on(common::request(addr, "GET", "/version", &[], None));
    assert_eq!(r.status, 200);
    assert_eq!(r.json()["version"], "0.19.0");
    let (id, key) = (field(&lines[1], "id"), field(&lines[1], "key"));
    let auth = common::bearer(key);
    let r = rt.block_on(common::request(
        addr,
        "POST",
        &format!("/agents/{id}/ops/list_rooms"),
        &[("authorization", &auth)],
        Some("{}"),
    ));
    assert_eq!(r.json()["result"][0]["room_id"], field(&lines[3], "id"));
}

#[test]
fn binary_defaults_to_alice_bob_and_lobby() {
    let mut bin = start(env!("CARGO_BIN_EXE_switch-peer"), &["--port", "0"], 4);
    // Ctrl-C stops it.
    let exited = bin.interrupt();
    assert!(exited.is_some_and(|s| s.success()), "{exited:?}");
    let lines = &bin.lines;
    assert_eq!(lines.len(), 4, "{lines:?}");
    assert!(lines[0].starts_with("listening on http://127.0.0.1:"));
    assert!(lines[1].starts_with("agent alice "));
    assert!(lines[2].starts_with("agent bob "));
    assert!(lines[3].starts_with("room lobby ") && lines[3].ends_with("members=alice,bob"));
}

/// The registration token is random per run unless given: the fixed one the library's tests use
/// registers nothing on a binary started without `--registration-token`.
#[test]
fn the_registration_token_is_random_unless_given() {
    let body = r#"{"name":"dora"}"#;
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    for (args, token, status) in [
        (&["--port", "0"][..], "switch-peer-registration", 401),
        (&["--port", "0", "--registration-token", "t0ken"][..], "t0ken", 200),
    ] {
        let bin = start(env!("CARGO_BIN_EXE_switch-peer"), args, 1);
        let url = bin.lines[0].strip_prefix("listening on http://").expect(&bin.lines[0]);
        let auth = common::bearer(token);
        let r = rt.block_on(common::request(
            url.parse().unwrap(),
            "POST",
            "/agents",
            &[("authorization", &auth)],
            Some(body),
        ));
        assert_eq!(r.status, status, "{args:?}: {}", r.body);
    }
}
