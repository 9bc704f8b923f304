//! The built `agentwire` binary: `rkt serve` on 127.0.0.1 with port 0, driven by the other verbs.

mod common;

use common::{
    head1, listen, listen_with_env, listen_with_stderr, listen_with_stderr_closed, run, run_full, run_with_stderr,
    run_with_stderr_closed, Guard, Lines,
};
use std::io::Write;
use std::process::Command;
use std::thread;
use std::time::Duration;

struct Server {
    process: Guard,
    url: String,
}

fn serve(args: &[&str]) -> Server {
    let mut all = vec!["rkt", "serve", "--port", "0"];
    all.extend_from_slice(args);
    let (process, url) = listen(&all);
    assert!(url.ends_with("/rkt"), "{url}");
    Server { process, url }
}

#[test]
fn repl_script_runs_in_order_and_exits_with_goodbye() {
    let server = serve(&["--caps", "weather,forecast"]);
    let script = [
        r#"{"intent":"echo","params":{"city":"Seoul"}}"#,
        r#"{"intent":"maps.navigate"}"#,
        "discover",
        "ping",
        r#"{"intent":"weather.forecast","params":{"days":3},"stream":true}"#,
        r#"memory set city "Seoul" user.prefs"#,
        "memory get city user.prefs",
        r#"{"intent":"weather.current","params":{"city":"Seoul"}}"#,
        "exit",
        r#"{"intent":"echo","params":"never sent"}"#,
    ]
    .join("\n");
    let (status, out) = run(&["rkt", "connect", &server.url], &script);
    assert!(status.success(), "{status}\n{out}");
    let lines: Vec<&str> = out.lines().collect();
    assert!(
        lines[0].starts_with(&format!("connected to {} (server agentwire/", server.url)),
        "{out}"
    );
    assert!(lines[0].ends_with("caps weather,forecast)"), "{out}");
    assert_eq!(lines[1], r#"{"data":{"city":"Seoul"},"intent":"echo"}"#);
    assert_eq!(lines[2], "error: remote 602: Intent 'maps.navigate' not found");
    assert!(lines[3].contains("available_intents"), "{out}");
    let manifest_end = lines.iter().position(|l| *l == "}").expect("manifest printed");
    let manifest: serde_json::Value = serde_json::from_str(&lines[4..=manifest_end].join("\n")).unwrap();
    assert_eq!(manifest["capabilities"], serde_json::json!(["weather", "forecast"]));
    let rest = &lines[manifest_end + 1..];
    let ms = rest[0]
        .strip_prefix("pong: ")
        .and_then(|r| r.strip_suffix(" ms"))
        .expect("pong line");
    assert!(ms.parse::<f64>().unwrap() >= 0.0);
    for day in &rest[1..4] {
        let chunk: serde_json::Value = serde_json::from_str(day).unwrap();
        assert!(chunk["date"].is_string(), "{day}");
    }
    assert!(rest[4].contains(r#""ok":true"#), "{out}");
    assert_eq!(rest[5], r#""Seoul""#);
    assert!(rest[6].contains(r#""temperature":24"#), "{out}");
    assert_eq!(rest.len(), 7, "nothing runs after exit:\n{out}");
}

/// A REPL against a server that requires AUTH: a request before it and `auth wrong` are refused,
/// `auth key` is taken, and the request then goes through.
fn refuses_then_takes(url: &str, wrong: &str, key: &str) {
    let script = format!("{{\"intent\":\"echo\"}}\nauth {wrong}\nauth {key}\n{{\"intent\":\"echo\",\"params\":1}}\n");
    let (status, out) = run(&["rkt", "connect", url], &script);
    assert!(status.success(), "{status}\n{out}");
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines[1], "error: auth 401: authentication required: send AUTH first");
    assert_eq!(lines[2], "error: auth 401: credentials not accepted");
    assert!(lines[3].contains("\"session_token\":\"rkt_"), "{out}");
    assert_eq!(lines[4], r#"{"data":1,"intent":"echo"}"#);
}

#[test]
fn repl_ends_at_end_of_input_and_handles_auth() {
    let server = serve(&["--api-key", "k1"]);
    refuses_then_takes(&server.url, "wrong", "k1");
}

/// The keys may come from `RKT_API_KEYS` (comma-separated), out of the process list.
#[test]
fn serve_takes_its_keys_from_the_environment() {
    let all = ["rkt", "serve", "--port", "0"];
    // Spaces around a key are not part of it; an empty entry is no key.
    let (_server, url) = listen_with_env(&all, &[("RKT_API_KEYS", " k1 , k2,")]);
    refuses_then_takes(&url, "k1,k2", "k2");
}

#[test]
fn ping_discover_and_graceful_sigterm() {
    let mut server = serve(&["--caps", "weather"]);
    let (status, out) = run(&["rkt", "ping", &server.url, "--count", "5", "--interval-ms", "10"], "");
    assert!(status.success(), "{out}");
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 6, "{out}");
    assert!(
        lines[..5].iter().all(|l| l.starts_with("pong: ") && l.ends_with(" ms")),
        "{out}"
    );
    let summary = lines[5]
        .strip_prefix("5 of 5 pongs, rtt min/median/p99/max = ")
        .expect(lines[5]);
    let stats: Vec<f64> = summary
        .trim_end_matches(" ms")
        .split('/')
        .map(|v| v.parse().unwrap())
        .collect();
    assert_eq!(stats.len(), 4);
    assert!(stats.windows(2).all(|w| w[0] <= w[1]), "{summary}");

    let (status, out) = run(&["rkt", "discover", &server.url], "");
    assert!(status.success(), "{out}");
    let manifest: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(manifest["agent"], "rkt://127.0.0.1");
    assert_eq!(manifest["intents"], serde_json::json!(["echo", "weather.current"]));

    let pid = server.process.0.id().to_string();
    assert!(Command::new("kill").args(["-TERM", &pid]).status().unwrap().success());
    assert!(server.process.wait().success(), "serve exits 0 on SIGTERM");
}

#[test]
fn resolve_prints_the_websocket_url() {
    for (address, url) in [
        ("rkt://weather.ai", "ws://weather.ai:7749/rkt"),
        ("weather.ai:9000", "ws://weather.ai:9000/rkt"),
        ("ws://localhost:7749/rkt", "ws://localhost:7749/rkt"),
    ] {
        let (status, out) = run(&["rkt", "resolve", address], "");
        assert!(status.success());
        assert_eq!(out, format!("{url}\n"));
    }
    let (status, out) = run(&["rkt", "resolve", "http://weather.ai"], "");
    assert!(!status.success() && out.is_empty());
}

#[test]
fn ping_into_a_closed_pipe_stops_cleanly() {
    let server = serve(&[]);
    let (mut process, first, err) = head1(&["rkt", "ping", &server.url, "--count", "50", "--interval-ms", "20"]);
    assert!(first.starts_with("pong: "), "{first}");
    let status = process.wait();
    let err = err.join().unwrap();
    assert!(!err.contains("panicked"), "{err}");
    assert!(status.success(), "{status}: {err}");
}

#[test]
fn a_huge_ping_count_reserves_no_memory_up_front() {
    // `--count 4294967295` once reserved room for every round-trip time before the first PING
    // (32 GiB): the allocation failed and the process aborted without a pong.
    let server = serve(&[]);
    let (mut process, first, err) = head1(&["rkt", "ping", &server.url, "--count", "4294967295"]);
    assert!(first.starts_with("pong: "), "{first}");
    let status = process.wait();
    let err = err.join().unwrap();
    assert!(!err.contains("memory allocation"), "{err}");
    assert!(status.success(), "{status}: {err}");
}

#[test]
fn an_error_into_a_closed_stderr_is_an_exit_code_not_a_panic() {
    // Nothing listens on port 1: the command fails and says so on stderr, whose reader is gone.
    let status = run_with_stderr_closed(&["rkt", "ping", "ws://127.0.0.1:1/rkt", "--count", "1"]);
    assert_eq!(status.code(), Some(1), "{status}");
}

#[test]
fn serve_goes_on_serving_when_its_stderr_is_closed() {
    // serve writes a line per connection on stderr; its reader is gone from the start.
    let (mut process, url) = listen_with_stderr_closed(&["rkt", "serve", "--port", "0"]);
    for _ in 0..2 {
        let (status, out, err) = run_full(&["rkt", "ping", &url, "--count", "1"]);
        assert!(status.success(), "{status}: {out}{err}");
        assert!(out.starts_with("pong: "), "{out}");
    }
    assert!(process.0.try_wait().unwrap().is_none(), "serve exited");
}

#[test]
fn serve_writes_a_line_per_connection_on_stderr() {
    let (_process, url, lines) = listen_with_stderr(&["rkt", "serve", "--port", "0"]);
    let (status, out, err) = run_full(&["rkt", "ping", &url, "--count", "1"]);
    assert!(status.success(), "{status}: {out}{err}");
    let mut seen = Vec::new();
    while let Ok(line) = lines.recv_timeout(common::LIMIT) {
        if line.starts_with("rkt 127.0.0.1:") && line.ends_with(": open") {
            return;
        }
        seen.push(line);
    }
    panic!("no `open` line on stderr: {seen:?}");
}

#[test]
fn serve_refuses_a_rate_that_is_not_a_positive_finite_number() {
    for rate in ["NaN", "inf", "-1", "0", "x"] {
        let flag = format!("--rate={rate}");
        let (status, out, err) = run_full(&["rkt", "serve", "--port", "0", &flag, "--burst", "3"]);
        assert!(!status.success() && out.is_empty(), "--rate {rate}: {out}");
        assert!(err.contains("--rate"), "--rate {rate}: {err}");
    }
    let (status, _, err) = run_full(&["rkt", "serve", "--port", "0", "--burst", "0"]);
    assert!(!status.success() && err.contains("--burst"), "{err}");
}

/// The status line's code of a WebSocket upgrade to `url` (`ws://127.0.0.1:PORT/rkt`) with
/// `Origin: origin`.
fn upgrade_status(url: &str, origin: &str) -> u16 {
    use std::io::{Read, Write};
    let addr = url.trim_start_matches("ws://").trim_end_matches("/rkt");
    let mut tcp = std::net::TcpStream::connect(addr).unwrap();
    tcp.set_read_timeout(Some(std::time::Duration::from_secs(10))).unwrap();
    write!(
        tcp,
        "GET /rkt HTTP/1.1\r\nHost: {addr}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\
         Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\
         Sec-WebSocket-Protocol: rkt.1.0\r\nOrigin: {origin}\r\n\r\n"
    )
    .unwrap();
    let mut head = [0u8; 12];
    tcp.read_exact(&mut head).unwrap();
    String::from_utf8_lossy(&head[9..12]).parse().unwrap()
}

#[test]
fn serve_answers_pages_on_this_machine_and_the_allowed_origins_only() {
    let server = serve(&[
        "--allow-origin",
        "https://app.example",
        "--allow-origin",
        "http://[fe80::1]:8080",
    ]);
    for (origin, status) in [
        ("http://127.0.0.1:7700", 101),
        ("https://app.example", 101),
        ("http://[fe80::1]:8080", 101),
        ("http://evil.example", 403),
        ("null", 403),
    ] {
        assert_eq!(upgrade_status(&server.url, origin), status, "{origin}");
    }
    drop(server);
    for bad in ["app.example", "https://app.example/", "null", "*"] {
        let (status, out, err) = run_full(&["rkt", "serve", "--port", "0", "--allow-origin", bad]);
        assert!(!status.success() && out.is_empty(), "{bad}: {out}");
        assert!(err.contains("--allow-origin"), "{bad}: {err}");
    }
    let (_, help, _) = run_full(&["rkt", "serve", "--help"]);
    assert!(
        help.contains("--allow-origin") && help.contains("127.0.0.1, localhost and ::1"),
        "{help}"
    );
}

#[test]
fn ping_reports_a_failed_ping_on_stderr() {
    // A burst of 3 and almost no refill: the fourth ping gets 429.
    let server = serve(&["--rate", "0.001", "--burst", "3"]);
    let (status, out, err) = run_full(&["rkt", "ping", &server.url, "--count", "4", "--interval-ms", "0"]);
    assert!(status.success(), "{status}: {err}");
    assert!(err.contains("error: ") && err.contains("429"), "{err}");
    assert!(!out.contains("error"), "{out}");
    assert!(out.lines().last().unwrap().starts_with("3 of 4 pongs"), "{out}");
}

/// What a server says in an ERROR reaches the terminal with its controls escaped: the reference
/// agent's "Intent '…' not found" repeats the intent as sent, escapes and newline included.
#[test]
fn a_servers_error_message_is_printed_terminal_safe() {
    let server = serve(&[]);
    let script = concat!(
        r#"{"intent":"\u001b]0;PWNED\u0007\u001b[2J\r\nerror: fake\u009b31m\u202eevil"}"#,
        "\nexit\n"
    );
    let (status, out) = run(&["rkt", "connect", &server.url], script);
    assert!(status.success(), "{status}\n{out}");
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 3, "the message stays on one line:\n{out}");
    assert_eq!(
        lines[1],
        r"error: remote 602: Intent '\u001b]0;PWNED\u0007\u001b[2J\u000d\u000aerror: fake\u009b31m\u202eevil' not found"
    );
    assert!(lines[2].starts_with("  details: {\"available_intents\":["), "{out}");
}

/// Ctrl-C (SIGINT) or SIGTERM in the REPL, idle at its prompt: the session says GOODBYE (the
/// server logs `closed 1000 goodbye`, not a reset) and the command exits 130 or 143, as a shell
/// reports a command its signal stopped.
#[test]
fn repl_says_goodbye_on_sigint_and_sigterm() {
    let (_server, url, log) = listen_with_stderr(&["rkt", "serve", "--port", "0"]);
    for (signal, code) in [("INT", 130), ("TERM", 143)] {
        let (mut repl, _stdin) = Lines::spawn_with_stdin(&["rkt", "connect", &url]);
        let first = repl.next().expect("connected line");
        assert!(first.starts_with("connected to "), "{first}");
        repl.signal(signal);
        assert_eq!(repl.process.wait().code(), Some(code), "SIG{signal}");
        let closed = std::iter::from_fn(|| log.recv_timeout(common::LIMIT).ok())
            .find(|l| l.contains(": closed "))
            .expect("a closed line");
        assert!(closed.contains("closed 1000 goodbye"), "SIG{signal}: {closed}");
    }
}

/// A script that is not UTF-8 stops the REPL at that line with a failing exit code and the
/// reason on stderr: it was exit 0 with the reason on stdout, as if the script had run.
#[test]
fn repl_input_that_is_not_utf8_fails_the_command() {
    let server = serve(&[]);
    let (status, out, err) = run_with_stderr(&["rkt", "connect", &server.url], b"ping\n\xff\nping\n");
    assert_eq!(status.code(), Some(1), "{out}{err}");
    assert_eq!(out.lines().filter(|l| l.starts_with("pong: ")).count(), 1, "{out}");
    assert!(!out.contains("cannot read input"), "{out}");
    assert!(err.contains("error: cannot read input"), "{err}");
}

/// A connection the server closed ends the pings there, with the summary: every ping after it
/// failed `closed` at once, and the command went on for the rest of `--count` (a second each by
/// default), an error a ping.
#[test]
fn ping_stops_when_the_connection_is_closed() {
    let server = serve(&[]);
    let mut pinger = Lines::spawn(&["rkt", "ping", &server.url, "--count", "100", "--interval-ms", "100"]);
    let first = pinger.next().expect("a pong");
    assert!(first.starts_with("pong: "), "{first}");
    let started = std::time::Instant::now();
    let pid = server.process.0.id().to_string();
    assert!(Command::new("kill").args(["-TERM", &pid]).status().unwrap().success());
    let summary = std::iter::from_fn(|| pinger.next())
        .find(|l| !l.starts_with("pong: "))
        .expect("a summary");
    assert!(summary.contains(" pongs, rtt "), "{summary}");
    assert!(pinger.process.wait().success());
    assert!(
        started.elapsed() < std::time::Duration::from_secs(4),
        "{:?}",
        started.elapsed()
    );
}

/// Ctrl-C or SIGTERM ends `rkt ping` as `--count` does, as ping(1)'s: GOODBYE, then the summary of
/// the pings sent, exit 0. It was killed: no summary, the connection reset.
#[test]
fn ping_ends_with_its_summary_on_sigint_and_sigterm() {
    let (_server, url, log) = listen_with_stderr(&["rkt", "serve", "--port", "0"]);
    for signal in ["INT", "TERM"] {
        let mut pinger = Lines::spawn(&["rkt", "ping", &url, "--count", "100", "--interval-ms", "50"]);
        for _ in 0..2 {
            let pong = pinger.next().expect("a pong");
            assert!(pong.starts_with("pong: "), "{pong}");
        }
        pinger.signal(signal);
        let summary = std::iter::from_fn(|| pinger.next())
            .find(|l| !l.starts_with("pong: "))
            .expect("a summary");
        let (answered, sent) = summary
            .split_once(" pongs, rtt ")
            .and_then(|(n, _)| n.split_once(" of "))
            .expect(&summary);
        assert_eq!(answered, sent, "SIG{signal}: {summary}");
        assert!(pinger.process.wait().success(), "SIG{signal}");
        let closed = std::iter::from_fn(|| log.recv_timeout(common::LIMIT).ok())
            .find(|l| l.contains(": closed "))
            .expect("a closed line");
        assert!(closed.contains("closed 1000 goodbye"), "SIG{signal}: {closed}");
    }
}

/// A connection the server closed ends the REPL, failing (exit 1), after the command that found
/// it closed printed its error: it went on reading commands, each failing `closed` at once, and
/// exited 0 at the end of its input.
#[test]
fn repl_ends_when_the_connection_is_closed() {
    let server = serve(&[]);
    let (mut repl, mut stdin) = Lines::spawn_with_stdin(&["rkt", "connect", &server.url]);
    assert!(repl.next().expect("connected").starts_with("connected to "));
    writeln!(stdin, "ping").unwrap();
    assert!(repl.next().expect("a pong").starts_with("pong: "));
    let pid = server.process.0.id().to_string();
    assert!(Command::new("kill").args(["-TERM", &pid]).status().unwrap().success());
    // The GOODBYE may come before or after this ping goes out: it fails `closed` either way.
    thread::sleep(Duration::from_millis(300));
    writeln!(stdin, "ping").unwrap();
    let error = repl.next().expect("the error");
    assert!(error.starts_with("error: closed: "), "{error}");
    assert_eq!(repl.process.wait().code(), Some(1), "stdin still open");
}
