//! The `moltzap-peer` binary: prints its URL once bound, serves, and stops on Ctrl-C.

mod common;

use agentwire_peer_kit::testing::start;

#[test]
fn binary_prints_its_url_and_serves() {
    let mut bin = start(
        env!("CARGO_BIN_EXE_moltzap-peer"),
        &["--port", "0", "--generation", "released"],
        1,
    );
    let line = bin.lines.first().expect("no output");
    let url = line.strip_prefix("listening on ").expect(line);
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
    assert_eq!(
        (status, body.as_str()),
        (200, r#"{"status":"ok","connections":0,"authenticated":0}"#)
    );
    let exited = bin.interrupt();
    assert!(exited.is_some_and(|s| s.success()), "{exited:?}");
}
