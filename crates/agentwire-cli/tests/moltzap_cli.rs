//! The built `agentwire` binary: `peers moltzap` on 127.0.0.1 with port 0, in both generations,
//! driven by `moltzap register|send|list|watch|call|connect`.

mod common;

use common::{listen, listen_with_stderr_closed, run, run_with_stderr, Lines};
use serde_json::Value;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Command, ExitStatus, Stdio};
use std::thread;
use std::time::{Duration, Instant};

/// `GET /health` of the peer: its JSON body.
fn health(addr: &str) -> String {
    let mut tcp = TcpStream::connect(addr).unwrap();
    tcp.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    write!(tcp, "GET /health HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n").unwrap();
    let mut out = String::new();
    let _ = tcp.read_to_string(&mut out);
    out
}

fn json(line: &str) -> Value {
    serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line}"))
}

/// `agentwire moltzap VERB --url URL --key KEY REST...` with `input` on stdin.
fn mz(verb: &str, url: &str, key: &str, rest: &[&str], input: &str) -> (ExitStatus, String) {
    let mut args = vec!["moltzap", verb, "--url", url, "--key", key];
    args.extend_from_slice(rest);
    run(&args, input)
}

fn register(http: &str, name: &str) -> String {
    let (status, out) = run(&["moltzap", "register", name, "--server", http], "");
    assert!(status.success(), "{out}");
    let v = json(out.trim());
    assert!(v["agentId"].is_string(), "{out}");
    v["apiKey"].as_str().unwrap().to_string()
}

#[test]
fn the_peer_goes_on_serving_when_its_stderr_is_closed() {
    // The peer's start-up hint goes to stderr, whose reader is gone from the start.
    let (mut peer, url) = listen_with_stderr_closed(&["peers", "moltzap", "--port", "0"]);
    let http = url.replace("ws://", "http://").replace("/ws", "");
    let key = register(&http, "alice");
    let (status, out) = mz("list", &url, &key, &[], "");
    assert!(status.success(), "{status}: {out}");
    assert!(peer.0.try_wait().unwrap().is_none(), "the peer exited");
}

#[test]
fn register_send_watch_list_in_both_generations() {
    for generation in ["current", "released"] {
        let (_peer, url) = listen(&["peers", "moltzap", "--port", "0", "--generation", generation]);
        assert!(url.ends_with("/ws"), "{url}");
        let http = url.replace("ws://", "http://").replace("/ws", "");
        let (ka, kb) = (register(&http, "alice"), register(&http, "bob"));

        let (watch_url, watch_key) = (url.clone(), kb.clone());
        let watch = ["--count", "1", "--for-ms", "10000"];
        let watcher = thread::spawn(move || mz("watch", &watch_url, &watch_key, &watch, ""));
        // Wait (bounded) until the watcher's connection has authenticated: a push reaches
        // only those.
        let addr = http.trim_start_matches("http://").to_string();
        let open = (0..1000).any(|_| {
            thread::sleep(Duration::from_millis(10));
            health(&addr).contains(r#""authenticated":1"#)
        });
        assert!(open, "the watcher never connected");
        let (status, out) = mz("send", &url, &ka, &["--to", "bob", "hello bob"], "");
        assert!(status.success(), "{generation}: {out}");
        assert_eq!(json(out.trim())["message"]["parts"][0]["text"], "hello bob", "{out}");

        let (status, out) = watcher.join().unwrap();
        assert!(status.success(), "{out}");
        let events: Vec<Value> = out.lines().map(json).collect();
        assert!(
            events
                .iter()
                .any(|e| e["type"] == "messageReceived" && e["data"]["message"]["parts"][0]["text"] == "hello bob"),
            "{generation}: {out}"
        );

        let (status, out) = mz("list", &url, &kb, &[], "");
        assert!(status.success(), "{out}");
        assert!(out.contains("hello bob"), "{generation}: {out}");

        let script = "call system/ping {}\nsend bob again\nnonsense\nquit\ncall system/ping {}\n";
        let (status, out) = mz("connect", &url, &ka, &[], script);
        assert!(status.success(), "{out}");
        let lines: Vec<&str> = out.lines().filter(|l| !l.contains("presenceChanged")).collect();
        assert_eq!(lines.len(), 2, "nothing runs after quit: {out}");
        assert!(json(lines[0])["ts"].is_string(), "{out}");
        assert_eq!(json(lines[1])["message"]["parts"][0]["text"], "again");
    }
}

#[test]
fn refusals_fail_with_the_typed_error() {
    let (_peer, url) = listen(&["peers", "moltzap", "--port", "0"]);
    let (status, out) = mz("send", &url, "moltzap_agent_bad", &["--to", "x", "hi"], "");
    assert!(!status.success() && out.is_empty(), "{out}");
    let (status, _) = run(
        &["moltzap", "register", "Bad Name", "--server", "http://127.0.0.1:9"],
        "",
    );
    assert!(!status.success());
    let (status, _) = mz("send", &url, "k", &["hi"], "");
    assert!(!status.success(), "--to or --conversation is required");
}

#[test]
fn timeout_ms_must_be_at_least_one() {
    // Nothing listens on port 1: without the check, both fail later with a connect error.
    for args in [
        &[
            "moltzap",
            "list",
            "--url",
            "ws://127.0.0.1:1/ws",
            "--key",
            "k",
            "--timeout-ms",
            "0",
        ][..],
        &[
            "switch",
            "ops",
            "--url",
            "http://127.0.0.1:1",
            "--agent",
            "a",
            "--key",
            "k",
            "--timeout-ms",
            "0",
        ],
    ] {
        let (status, out, err) = common::run_full(args);
        assert!(!status.success() && out.is_empty(), "{args:?}: {out}");
        assert!(err.contains("--timeout-ms"), "{args:?}: {err}");
    }
}

/// A message's C1 controls (U+009B is a CSI to a terminal taking 8-bit controls), ESC and bidi
/// overrides reach the terminal escaped in the JSON `send`, `list` and `watch` print, which
/// stays JSON with the same text.
#[test]
fn controls_in_a_message_are_printed_escaped_in_json() {
    let text = "c1:\u{9b}2J\u{9d}0;T\u{9c} esc:\u{1b}[2J del:\u{7f} \u{202e}evil\u{202c} 서울";
    let escaped = r"c1:\u009b2J\u009d0;T\u009c esc:\u001b[2J del:\u007f \u202eevil\u202c";
    let (_peer, url) = listen(&["peers", "moltzap", "--port", "0"]);
    let http = url.replace("ws://", "http://").replace("/ws", "");
    let (ka, kb) = (register(&http, "alice"), register(&http, "bob"));
    let (watch_url, watch_key) = (url.clone(), kb.clone());
    let watcher = thread::spawn(move || {
        let filter = ["--count", "1", "--for-ms", "10000"];
        mz("watch", &watch_url, &watch_key, &filter, "")
    });
    let addr = http.trim_start_matches("http://").to_string();
    let open = (0..1000).any(|_| {
        thread::sleep(Duration::from_millis(10));
        health(&addr).contains(r#""authenticated":1"#)
    });
    assert!(open, "the watcher never connected");

    let (status, sent) = mz("send", &url, &ka, &["--to", "bob", text], "");
    assert!(status.success(), "{sent}");
    let (status, listed) = mz("list", &url, &kb, &[], "");
    assert!(status.success(), "{listed}");
    let (status, watched) = watcher.join().unwrap();
    assert!(status.success(), "{watched}");
    for out in [&sent, &listed, &watched] {
        let raw = ['\u{9b}', '\u{9c}', '\u{9d}', '\u{1b}', '\u{7f}', '\u{202e}', '\u{202c}'];
        assert!(!out.contains(raw), "{out:?}");
        assert!(out.contains(escaped), "{out}");
        assert!(out.lines().all(|l| serde_json::from_str::<Value>(l).is_ok()), "{out}");
    }
    assert_eq!(json(sent.trim())["message"]["parts"][0]["text"], text, "{sent}");
    let event = json(watched.lines().find(|l| l.contains("messageReceived")).expect(&watched));
    assert_eq!(event["data"]["message"]["parts"][0]["text"], text, "{watched}");
}

/// The REPL ends when the server goes away even while its input stays open (an idle terminal):
/// it printed `disconnected`, then waited for a line of input before it exited.
#[test]
fn connect_ends_when_the_server_goes_away_with_input_still_open() {
    let (mut peer, url) = listen(&["peers", "moltzap", "--port", "0"]);
    let http = url.replace("ws://", "http://").replace("/ws", "");
    let key = register(&http, "alice");
    let (mut repl, _stdin) = Lines::spawn_with_stdin(&["moltzap", "connect", "--url", &url, "--key", &key]);
    // The REPL is connected once a request through it is answered.
    let (status, _) = mz("list", &url, &key, &[], "");
    assert!(status.success());
    thread::sleep(Duration::from_millis(300));
    drop(peer.0.kill());
    let _ = peer.0.wait();
    let line = repl.next().expect("the disconnected event");
    assert_eq!(json(&line)["type"], "disconnected", "{line}");
    let started = Instant::now();
    let status = repl.process.wait();
    assert!(started.elapsed() < Duration::from_secs(5), "{:?}", started.elapsed());
    assert_eq!(status.code(), Some(1), "the server ended the session: {status}");
}

/// A watch the server ends (it went away) fails the command, as a Switch watch whose connection
/// stopped with an error does: it printed `disconnected` and exited 0, as at `--count`.
#[test]
fn watch_fails_when_the_server_goes_away() {
    let (mut peer, url) = listen(&["peers", "moltzap", "--port", "0"]);
    let key = register(&url.replace("ws://", "http://").replace("/ws", ""), "alice");
    let mut watch = Command::new(common::BIN)
        .args(["moltzap", "watch", "--url", &url, "--key", &key, "--for-ms", "15000"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut err = BufReader::new(watch.stderr.take().unwrap());
    let mut out = watch.stdout.take().unwrap();
    let mut watch = common::Guard(watch);
    let mut line = String::new();
    err.read_line(&mut line).unwrap();
    assert!(line.starts_with("connected to "), "{line}");
    drop(peer.0.kill());
    let _ = peer.0.wait();
    let status = watch.wait();
    let (mut out_text, mut err_text) = (String::new(), String::new());
    out.read_to_string(&mut out_text).unwrap();
    err.read_to_string(&mut err_text).unwrap();
    assert_eq!(status.code(), Some(1), "{out_text}{err_text}");
    assert_eq!(json(out_text.trim())["type"], "disconnected", "{out_text}");
    assert!(
        err_text.starts_with("error: closed: the connection ended: 1006 "),
        "{err_text}"
    );
}

/// Ctrl-C (SIGINT) or SIGTERM stops the REPL, closing its connection, with the exit code a shell
/// gives a command the signal stopped: it was killed with the connection open.
#[test]
fn connect_closes_on_sigint_and_sigterm() {
    let (_peer, url) = listen(&["peers", "moltzap", "--port", "0"]);
    let key = register(&url.replace("ws://", "http://").replace("/ws", ""), "alice");
    for (signal, code) in [("INT", 130), ("TERM", 143)] {
        let (mut repl, mut stdin) = Lines::spawn_with_stdin(&["moltzap", "connect", "--url", &url, "--key", &key]);
        // Listening once a command through it is answered.
        writeln!(stdin, "list").unwrap();
        let line = repl.next().expect("the list");
        assert!(json(&line)["messages"].is_array(), "{line}");
        repl.signal(signal);
        assert_eq!(repl.process.wait().code(), Some(code), "SIG{signal}");
    }
}

/// Input that is not UTF-8 stops the REPL with a failing exit code and the reason on stderr; it
/// stopped there silently, exit 0.
#[test]
fn connect_input_that_is_not_utf8_fails_the_command() {
    let (_peer, url) = listen(&["peers", "moltzap", "--port", "0"]);
    let key = register(&url.replace("ws://", "http://").replace("/ws", ""), "alice");
    let args = ["moltzap", "connect", "--url", &url, "--key", &key];
    let (status, out, err) = run_with_stderr(&args, b"list\n\xff\nlist\n");
    assert_eq!(status.code(), Some(1), "{out}{err}");
    assert_eq!(out.lines().count(), 1, "only the first list ran: {out}");
    assert!(
        err.contains("error: invalid: cannot read input: invalid utf-8"),
        "{err}"
    );
}
