//! The `switch-peer` binary: prints its URL, agents and rooms, then serves.

mod common;

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::Duration;

fn run(args: &[&str], lines: usize) -> (Vec<String>, std::process::Child) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_switch-peer"))
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut reader = BufReader::new(stdout);
        for _ in 0..lines {
            let mut line = String::new();
            if reader.read_line(&mut line).unwrap_or(0) == 0 {
                break;
            }
            let _ = tx.send(line.trim_end().to_string());
        }
    });
    let mut out = Vec::new();
    while out.len() < lines {
        match rx.recv_timeout(Duration::from_secs(20)) {
            Ok(l) => out.push(l),
            Err(_) => break,
        }
    }
    (out, child)
}

fn field<'a>(line: &'a str, name: &str) -> &'a str {
    line.split(' ')
        .find_map(|w| w.strip_prefix(&format!("{name}=")))
        .unwrap_or_else(|| panic!("no {name} in {line}"))
}

#[test]
fn binary_prints_listening_on_then_agents_and_rooms() {
    let (lines, mut child) = run(
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
    let result = std::panic::catch_unwind(|| {
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
    });
    let _ = child.kill();
    let _ = child.wait();
    result.unwrap();
}

#[test]
fn binary_defaults_to_alice_bob_and_lobby() {
    let (lines, mut child) = run(&["--port", "0"], 4);
    // Ctrl-C stops it.
    let _ = Command::new("kill").args(["-INT", &child.id().to_string()]).status();
    let mut exited = None;
    for _ in 0..100 {
        if let Ok(Some(status)) = child.try_wait() {
            exited = Some(status);
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    if exited.is_none() {
        let _ = child.kill();
        let _ = child.wait();
    }
    assert!(exited.is_some_and(|s| s.success()), "{exited:?}");
    assert_eq!(lines.len(), 4, "{lines:?}");
    assert!(lines[0].starts_with("listening on http://127.0.0.1:"));
    assert!(lines[1].starts_with("agent alice "));
    assert!(lines[2].starts_with("agent bob "));
    assert!(lines[3].starts_with("room lobby ") && lines[3].ends_with("members=alice,bob"));
}
