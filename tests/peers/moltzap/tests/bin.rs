//! The `moltzap-peer` binary: prints its URL once bound and serves.

mod common;

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::Duration;

#[test]
fn binary_prints_its_url_and_serves() {
    let mut child = Command::new(env!("CARGO_BIN_EXE_moltzap-peer"))
        .args(["--port", "0", "--generation", "released"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut line = String::new();
        let _ = BufReader::new(stdout).read_line(&mut line);
        let _ = tx.send(line);
    });
    let line = rx.recv_timeout(Duration::from_secs(20));
    let result = std::panic::catch_unwind(|| {
        let line = line.expect("no output");
        let url = line.trim().strip_prefix("listening on ").expect(&line).to_string();
        let addr: std::net::SocketAddr = url
            .strip_prefix("ws://")
            .and_then(|u| u.strip_suffix("/ws"))
            .unwrap()
            .parse()
            .unwrap();
        assert!(addr.ip().is_loopback());
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let (status, body) = rt.block_on(common::http(addr, "GET", "/health", None));
        assert_eq!((status, body.as_str()), (200, r#"{"status":"ok","connections":0}"#));
    });
    let _ = child.kill();
    let _ = child.wait();
    result.unwrap();
}
