//! `agentwire relay token`: the printed token verifies with the relay's code; the secret comes
//! only from the environment and never reaches the output.

mod common;

use agentwire_relay::token::{verify, Claims};
use common::BIN;
use std::process::{Command, Output};
use std::time::{SystemTime, UNIX_EPOCH};

const SECRET: &str = "cli-relay-secret-0123456789abcdef";

fn relay(secret: Option<&str>, args: &[&str]) -> Output {
    relay_with(&[("AGENTWIRE_RELAY_SECRET", secret)], args)
}

/// The command with only the given secret variables set.
fn relay_with(vars: &[(&str, Option<&str>)], args: &[&str]) -> Output {
    let mut cmd = Command::new(BIN);
    cmd.arg("relay")
        .arg("token")
        .args(args)
        .env_remove("AGENTWIRE_RELAY_SECRET")
        .env_remove("RELAY_TOKEN_SECRET");
    for (name, value) in vars {
        if let Some(value) = value {
            cmd.env(name, value);
        }
    }
    cmd.output().unwrap()
}

#[test]
fn reads_the_relays_own_variable_too() {
    let agent = |out: Output| {
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let token = String::from_utf8(out.stdout).unwrap();
        verify(token.trim(), &[SECRET.as_bytes()], now_ms(), 60).map(|c| c.agent_id)
    };
    let args = ["--agent", "alice", "--exp-in", "60"];
    let other = "another-relay-secret-0123456789ab";
    assert_eq!(
        agent(relay_with(&[("RELAY_TOKEN_SECRET", Some(SECRET))], &args)).unwrap(),
        "alice"
    );
    // AGENTWIRE_RELAY_SECRET wins when both are set, even when it is empty (refused, not skipped).
    let both = [
        ("AGENTWIRE_RELAY_SECRET", Some(SECRET)),
        ("RELAY_TOKEN_SECRET", Some(other)),
    ];
    assert_eq!(agent(relay_with(&both, &args)).unwrap(), "alice");
    let empty = relay_with(
        &[
            ("AGENTWIRE_RELAY_SECRET", Some("")),
            ("RELAY_TOKEN_SECRET", Some(SECRET)),
        ],
        &args,
    );
    assert!(!empty.status.success());
}

fn now_ms() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_millis() as u64
}

#[test]
fn prints_a_token_the_relay_accepts() {
    let before = now_ms() / 1000;
    let out = relay(
        Some(SECRET),
        &[
            "--agent",
            "alice",
            "--exp-in",
            "120",
            "--origin",
            "http://localhost:5173",
            "--room",
            "lobby",
            "--room",
            "ops",
        ],
    );
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let stdout = String::from_utf8(out.stdout).unwrap();
    let token = stdout.strip_suffix('\n').expect("one line");
    assert!(!token.contains('\n') && !stdout.contains(SECRET));
    let claims = verify(token, &[SECRET.as_bytes()], now_ms(), 120).unwrap();
    let after = now_ms() / 1000;
    assert!((before + 120..=after + 120).contains(&claims.exp), "{claims:?}");
    assert_eq!(
        claims,
        Claims {
            agent_id: "alice".into(),
            exp: claims.exp,
            origin: Some("http://localhost:5173".into()),
            rooms: Some(vec!["lobby".into(), "ops".into()]),
        }
    );

    let out = relay(Some(SECRET), &["--agent", "bob", "--exp-in", "60"]);
    assert!(out.status.success());
    let claims = verify(
        String::from_utf8(out.stdout).unwrap().trim_end(),
        &[SECRET.as_bytes()],
        now_ms(),
        60,
    )
    .unwrap();
    assert_eq!(
        (claims.agent_id.as_str(), claims.origin, claims.rooms),
        ("bob", None, None)
    );
    assert!(out.stderr.is_empty(), "{}", String::from_utf8_lossy(&out.stderr));

    // Longer than a default relay takes: minted, with a warning.
    let out = relay(Some(SECRET), &["--agent", "bob", "--exp-in", "7200"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success() && err.starts_with("warning: --exp-in 7200 is over 3600 s"),
        "{err}"
    );
    assert!(verify(
        String::from_utf8(out.stdout).unwrap().trim_end(),
        &[SECRET.as_bytes()],
        now_ms(),
        7200
    )
    .is_ok());
}

#[test]
fn refusals() {
    let fails = |secret: Option<&str>, args: &[&str], says: &str| {
        let out = relay(secret, args);
        let stderr = String::from_utf8(out.stderr).unwrap();
        assert!(!out.status.success() && out.stdout.is_empty(), "{args:?}");
        assert!(stderr.contains(says), "{args:?}: {stderr}");
        if let Some(secret) = secret.filter(|s| !s.is_empty()) {
            assert!(!stderr.contains(secret), "{stderr}");
        }
    };
    let ok = ["--agent", "alice", "--exp-in", "60"];
    fails(None, &ok, "AGENTWIRE_RELAY_SECRET");
    fails(Some(""), &ok, "AGENTWIRE_RELAY_SECRET");
    fails(Some("too-short-secret"), &ok, "at least 32");
    fails(Some(SECRET), &["--agent", "a/b", "--exp-in", "60"], "agent_id");
    fails(
        Some(SECRET),
        &["--agent", "alice", "--exp-in", "60", "--origin", "https://a.com/"],
        "origin",
    );
    fails(
        Some(SECRET),
        &["--agent", "alice", "--exp-in", "60", "--room", "a,b"],
        "room",
    );
    fails(Some(SECRET), &["--agent", "alice", "--exp-in", "0"], "exp-in");
    fails(
        Some(SECRET),
        &["--agent", "alice", "--exp-in", "60", "--secret", SECRET],
        "--secret",
    );
}
