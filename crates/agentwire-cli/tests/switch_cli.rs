//! The built `agentwire` binary: `peers switch` on 127.0.0.1 with port 0, in both generations,
//! driven by `switch watch|post|ops|op`.

mod common;

use common::{head1, run_full, Lines};
use serde_json::Value;
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

fn json(line: &str) -> Value {
    serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line}"))
}

/// A running `peers switch`: its URL, agents (name → (id, key)) and rooms (name → id).
struct Peer {
    _lines: Lines,
    url: String,
    agents: BTreeMap<String, (String, String)>,
    rooms: BTreeMap<String, String>,
}

/// `peers switch --port 0 ARGS`, read up to its `agents + rooms` lines after `listening on`.
fn peer(args: &[&str], agents: usize, rooms: usize) -> Peer {
    let mut all = vec!["peers", "switch", "--port", "0"];
    all.extend_from_slice(args);
    let lines = Lines::spawn(&all);
    let first = lines.next().expect("a first line");
    let url = first
        .strip_prefix("listening on ")
        .unwrap_or_else(|| panic!("unexpected first line: {first}"))
        .to_owned();
    assert!(url.starts_with("http://127.0.0.1:") && !url.ends_with(":0"), "{url}");
    let field = |line: &str, name: &str| {
        line.split(' ')
            .find_map(|w| w.strip_prefix(&format!("{name}=")))
            .unwrap_or_else(|| panic!("no {name}= in {line}"))
            .to_owned()
    };
    let mut peer = Peer {
        _lines: lines,
        url,
        agents: BTreeMap::new(),
        rooms: BTreeMap::new(),
    };
    for _ in 0..agents {
        let line = peer._lines.next().expect("an agent line");
        let name = line
            .strip_prefix("agent ")
            .and_then(|l| l.split(' ').next())
            .expect(&line)
            .to_owned();
        peer.agents.insert(name, (field(&line, "id"), field(&line, "key")));
    }
    for _ in 0..rooms {
        let line = peer._lines.next().expect("a room line");
        let name = line
            .strip_prefix("room ")
            .and_then(|l| l.split(' ').next())
            .expect(&line)
            .to_owned();
        assert!(line.contains(" members="), "{line}");
        peer.rooms.insert(name, field(&line, "id"));
    }
    peer
}

impl Peer {
    /// `switch VERB --url URL --agent ID --key KEY REST...` as agent `who`.
    fn args<'a>(&'a self, verb: &'a str, who: &str, rest: &[&'a str]) -> Vec<&'a str> {
        let (id, key) = &self.agents[who];
        let mut args = vec!["switch", verb, "--url", &self.url, "--agent", id, "--key", key];
        args.extend_from_slice(rest);
        args
    }
}

#[test]
fn peers_switch_prints_its_agents_and_rooms() {
    let p = peer(&[], 2, 1);
    assert_eq!(p.agents.keys().collect::<Vec<_>>(), ["alice", "bob"]);
    let (id, key) = &p.agents["alice"];
    assert_eq!(id.len(), 36, "a UUID: {id}");
    assert!(key.starts_with("sk_switch_"), "{key}");
    assert!(p.rooms.contains_key("lobby"));
    let p = peer(
        &[
            "--generation",
            "released",
            "--agent",
            "x",
            "--agent",
            "y",
            "--room",
            "r:x,y",
            "--room",
            "s:y",
        ],
        2,
        2,
    );
    assert_eq!(p.agents.keys().collect::<Vec<_>>(), ["x", "y"]);
    assert_eq!(p.rooms.keys().collect::<Vec<_>>(), ["r", "s"]);
}

#[test]
fn watch_sees_a_post_from_another_agent_in_both_generations() {
    for generation in ["current", "released"] {
        let p = peer(&["--generation", generation], 2, 1);
        let room = p.rooms["lobby"].clone();
        // `--transport websocket` (npm's and the WIT's name for `ws`) against the current peer.
        let transport = if generation == "current" { "websocket" } else { "auto" };
        let watch = p.args(
            "watch",
            "bob",
            &[
                "--room",
                &room,
                "--count",
                "1",
                "--for-ms",
                "15000",
                "--transport",
                transport,
            ],
        );
        let watcher = Lines::spawn(&watch);
        // `auto` against a released peer: a diagnostic and a disconnect (the move to SSE) first.
        let connected = loop {
            let event = json(&watcher.next().expect("the connected event"));
            if event["type"] == "connected" {
                break event;
            }
            assert!(
                matches!(event["type"].as_str(), Some("diagnostic" | "disconnected")),
                "{event}"
            );
        };
        let wire = if generation == "current" { "websocket" } else { "sse" };
        assert_eq!(connected["wire"], wire, "{connected}");
        assert_eq!(connected["state"]["rooms"][0], room.as_str());

        let (status, out, err) = run_full(&p.args("post", "alice", &["--room", &room, "hello bob"]));
        assert!(status.success(), "{generation}: {err}");
        assert!(json(out.trim())["event_id"].is_string(), "{out}");

        let mut events = Vec::new();
        while let Some(line) = watcher.next() {
            events.push(json(&line));
        }
        let mut process = watcher.process;
        assert!(process.wait().success(), "{generation}: {events:?}");
        let message = events.iter().find(|e| e["type"] == "event").expect("the message");
        assert_eq!(message["kind"], "message");
        assert_eq!(message["room_id"], room.as_str());
        assert_eq!(message["payload"]["body"], "hello bob", "{message}");
        assert!(message["sequence"].as_u64().is_some());
    }
}

#[test]
fn ops_lists_the_operations_and_op_runs_one() {
    let p = peer(&[], 2, 1);
    let (status, out, err) = run_full(&p.args("ops", "alice", &[]));
    assert!(status.success(), "{err}");
    let names: Vec<&str> = out.lines().collect();
    assert!(
        names.contains(&"post_message") && names.contains(&"connect_to_room"),
        "{out}"
    );
    let (status, out, _) = run_full(&p.args("ops", "alice", &["--json"]));
    assert!(status.success());
    assert!(
        json(out.trim())["operations"]["post_message"]["input_schema"].is_object(),
        "{out}"
    );

    let room = p.rooms["lobby"].clone();
    let (status, out, err) = run_full(&p.args(
        "op",
        "alice",
        &["post_message", r#"{"body":"via op"}"#, "--room", &room],
    ));
    assert!(status.success(), "{err}");
    assert!(json(out.trim())["event_id"].is_string(), "{out}");
}

#[test]
fn errors_exit_non_zero_with_a_clear_message() {
    let p = peer(&[], 2, 1);
    let room = p.rooms["lobby"].clone();

    let (id, _) = &p.agents["bob"];
    let bad_key = [
        "switch",
        "watch",
        "--url",
        &p.url,
        "--agent",
        id,
        "--key",
        "sk_switch_wrong",
        "--for-ms",
        "5000",
    ];
    let (status, out, err) = run_full(&bad_key);
    assert!(!status.success() && out.is_empty(), "{out}");
    assert!(err.contains("error: auth"), "{err}");

    let (status, out, err) = run_full(&p.args("op", "alice", &["no_such_operation", "{}"]));
    assert!(!status.success() && out.is_empty(), "{out}");
    assert!(err.contains("404"), "{err}");

    let (status, _, err) = run_full(&p.args("post", "alice", &["--room", &room, "--connection-id", "nope", "x"]));
    assert!(!status.success());
    assert!(err.contains("UUID"), "{err}");

    // https:// to the plain peer: TLS is attempted, and its handshake fails.
    let tls_url = p.url.replace("http://", "https://");
    let (status, _, err) = run_full(&["switch", "ops", "--url", &tls_url, "--agent", "a", "--key", "k"]);
    assert!(!status.success());
    assert!(err.contains("TLS handshake"), "{err}");

    let (status, _, err) = run_full(&["switch", "ops", "--url", &p.url, "--key", "k"]);
    assert!(!status.success(), "--agent is required");
    assert!(err.contains("--agent"), "{err}");
}

#[test]
fn watch_into_a_closed_pipe_stops_cleanly() {
    let p = peer(&[], 2, 1);
    let room = p.rooms["lobby"].clone();
    let (mut watcher, first, err) = head1(&p.args("watch", "bob", &["--room", &room, "--for-ms", "15000"]));
    assert!(first.contains(r#""type":"connected""#), "{first}");
    // The reader is gone: the next event the watch prints ends it.
    let (status, _, post_err) = run_full(&p.args("post", "alice", &["--room", &room, "hello"]));
    assert!(status.success(), "{post_err}");
    let status = watcher.wait();
    let err = err.join().unwrap();
    assert!(!err.contains("panicked"), "{err}");
    assert!(status.success(), "{status}: {err}");
}

#[test]
fn timeout_ms_bounds_the_connect_and_every_operation() {
    // A server that accepts and never answers, for a bounded time.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let silent = std::thread::spawn(move || {
        let mut held = Vec::new();
        let end = Instant::now() + Duration::from_secs(15);
        while Instant::now() < end {
            match listener.accept() {
                Ok((stream, _)) => held.push(stream),
                Err(_) => std::thread::sleep(Duration::from_millis(10)),
            }
        }
    });
    let common = [
        "--url",
        url.as_str(),
        "--agent",
        "a",
        "--key",
        "k",
        "--timeout-ms",
        "500",
    ];
    for verb in [
        &["switch", "ops"][..],
        &["switch", "op", "list_rooms"],
        &["switch", "post", "--room", "r", "hi"],
    ] {
        let mut args = verb.to_vec();
        args.extend_from_slice(&common);
        let started = Instant::now();
        let (status, out, err) = run_full(&args);
        let took = started.elapsed();
        assert!(!status.success() && out.is_empty(), "{verb:?}: {out}");
        assert!(err.contains("error:"), "{verb:?}: {err}");
        assert!(took < Duration::from_secs(3), "{verb:?} took {took:?}: {err}");
    }
    drop(silent);
}

/// Serves `answers.len()` HTTP requests on 127.0.0.1, each with the next (status, JSON body),
/// for 15 s at most; returns the origin and the server's thread.
fn hostile(answers: Vec<(u16, String)>) -> (String, std::thread::JoinHandle<()>) {
    use std::io::{BufRead, BufReader, Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    listener.set_nonblocking(true).unwrap();
    let server = std::thread::spawn(move || {
        let end = Instant::now() + Duration::from_secs(15);
        for (status, body) in answers {
            let stream = loop {
                match listener.accept() {
                    Ok((stream, _)) => break stream,
                    Err(_) if Instant::now() < end => std::thread::sleep(Duration::from_millis(10)),
                    Err(e) => panic!("no request in time: {e}"),
                }
            };
            stream.set_nonblocking(false).unwrap();
            stream.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
            let mut reader = BufReader::new(stream);
            let mut length = 0;
            loop {
                let mut line = String::new();
                if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
                    break;
                }
                if let Some((name, value)) = line.split_once(':') {
                    if name.eq_ignore_ascii_case("content-length") {
                        length = value.trim().parse().unwrap();
                    }
                }
            }
            let mut request_body = vec![0; length];
            let _ = reader.read_exact(&mut request_body);
            let mut stream = reader.into_inner();
            let _ = write!(
                stream,
                "HTTP/1.1 {status} X\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                body.len()
            );
        }
    });
    (url, server)
}

/// A server's operation names and error details reach the terminal with their controls escaped.
#[test]
fn a_hostile_servers_text_is_printed_terminal_safe() {
    let evil = "\u{1b}]0;PWNED\u{7}\u{1b}[2J\u{1b}]52;c;cm0gLXJmIH4=\u{7}\r\n\u{9b}31m\u{202e}";
    let escaped = r"\u001b]0;PWNED\u0007\u001b[2J\u001b]52;c;cm0gLXJmIH4=\u0007\u000d\u000a\u009b31m\u202e";
    let catalog = serde_json::json!({"operations": {
        format!("{evil}post_message"): {"description": evil, "input_schema": {}},
    }});
    let detail = serde_json::json!({ "detail": evil });
    let (url, server) = hostile(vec![
        (200, catalog.to_string()),
        (200, catalog.to_string()),
        (400, detail.to_string()),
    ]);
    let common = ["--url", url.as_str(), "--agent", "a", "--key", "k"];
    let with = |verb: &[&'static str]| [verb, &common[..]].concat();

    let (status, out, err) = run_full(&with(&["switch", "ops"]));
    assert!(status.success(), "{err}");
    assert_eq!(out, format!("{escaped}post_message\n"), "one line, escaped");

    // JSON: the same value, every control escaped as JSON does it.
    let (status, out, err) = run_full(&with(&["switch", "ops", "--json"]));
    assert!(status.success(), "{err}");
    assert!(out.is_ascii() && out.lines().count() == 1, "{out}");
    let ops = &json(out.trim())["operations"];
    assert_eq!(ops[format!("{evil}post_message")]["description"], evil, "{out}");

    let (status, out, err) = run_full(&with(&["switch", "op", "read_context", "{}"]));
    assert!(!status.success() && out.is_empty(), "{out}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains(escaped) && err.is_ascii(), "{err}");
    server.join().unwrap();
}

/// SIGTERM (from `kill`, `timeout`, a service manager) stops a watch as Ctrl-C does: the
/// connection is closed and the command exits 0. It was killed with the connection open.
#[test]
fn watch_stops_cleanly_on_sigterm_and_sigint() {
    let p = peer(&[], 2, 1);
    let room = p.rooms["lobby"].clone();
    for signal in ["TERM", "INT"] {
        let mut watcher = Lines::spawn(&p.args("watch", "bob", &["--room", &room, "--for-ms", "15000"]));
        let first = watcher.next().expect("the connected event");
        assert!(first.contains(r#""type":"connected""#), "{first}");
        watcher.signal(signal);
        let status = watcher.process.wait();
        assert!(status.success(), "SIG{signal}: {status}");
    }
}
