//! Fuzzes the relay's configuration (`Config::from_env`) on any value of any setting. It must
//! never panic and asks only for the settings `SETTINGS` lists. A refusal names one of them, and
//! that setting is the wrong one: given its good value back (unset, for an optional one), the
//! same refusal does not come again. Neither a refusal nor the configuration's `Debug` depends on
//! a secret: with every byte of the token secrets and of the agent keys replaced by another of
//! the same kind (what `from_env` checks is kept: lengths, whitespace, printable ASCII), the text
//! is the same. A configuration taken reads back as itself: its upstream, origins, prefix, flags
//! and numbers written as settings (with the same keys and secrets) give the same configuration,
//! whose prefixes are `""` or `/segment...` with no trailing `/`.
//!
//! Input: settings separated by NUL bytes, each a byte picking the setting (`b` modulo the
//! number of `SETTINGS`) and its value (lossy UTF-8; empty is unset). Settings not given keep a
//! good value for those `from_env` requires (`UPSTREAM`, `AGENT_KEYS`, `RELAY_TOKEN_SECRET`,
//! `ALLOWED_ORIGINS`) and are unset otherwise.
#![no_main]

use agentwire_relay::config::{Config, ConfigError, SETTINGS};
use libfuzzer_sys::fuzz_target;
use std::cell::RefCell;
use std::collections::BTreeMap;

const GOOD: [(&str, &str); 4] = [
    ("UPSTREAM", "http://127.0.0.1:7751"),
    (
        "AGENT_KEYS",
        r#"{"agent-a":"sk_switch_aaaa_fuzz","agent-b":"sk_switch_bbbb_fuzz"}"#,
    ),
    ("RELAY_TOKEN_SECRET", "fuzz-secret-0123456789abcdef-0123"),
    ("ALLOWED_ORIGINS", "https://app.example"),
];

type Env = BTreeMap<&'static str, String>;

/// `from_env` on `env`, checking that it asks only for what `SETTINGS` lists.
fn read(env: &Env) -> Result<Config, ConfigError> {
    let asked = RefCell::new(Vec::new());
    let got = Config::from_env(|name| {
        asked.borrow_mut().push(name.to_owned());
        env.get(name).cloned()
    });
    for name in asked.into_inner() {
        assert!(SETTINGS.contains(&name.as_str()), "asked for {name}, not in SETTINGS");
    }
    got
}

/// What the outcome shows: the refusal's text, or the configuration's `Debug`.
fn shown(got: &Result<Config, ConfigError>) -> String {
    match got {
        Ok(c) => format!("{c:?} keys {}", c.keys().count()),
        Err(e) => format!("{e} ({e:?})"),
    }
}

/// Every byte of a secret changed, what `from_env` checks kept: its byte length and which
/// characters are whitespace (a secret that is only whitespace is unset).
fn mask_secret(s: &str) -> String {
    s.chars()
        .map(|c| {
            if c.is_whitespace() {
                c.to_string()
            } else {
                "Z".repeat(c.len_utf8())
            }
        })
        .collect()
}

/// The agent keys changed the same way (printable ASCII stays printable, the rest stays as it
/// is, so lengths and the printable check are kept), when the value is a map of them.
fn mask_keys(json: &str) -> Option<String> {
    let keys: BTreeMap<String, String> = serde_json::from_str(json.trim()).ok()?;
    let masked: BTreeMap<String, String> = keys
        .into_iter()
        .map(|(agent, key)| {
            let key = key
                .chars()
                .map(|c| if ('!'..='~').contains(&c) { 'Z' } else { c })
                .collect();
            (agent, key)
        })
        .collect();
    serde_json::to_string(&masked).ok()
}

fn prefix_form(p: &str) -> bool {
    p.is_empty()
        || (p.starts_with('/')
            && !p.ends_with('/')
            && p[1..].split('/').all(|s| !s.is_empty() && s != "." && s != ".."))
}

fuzz_target!(|data: &[u8]| {
    let mut env: Env = GOOD.iter().map(|(k, v)| (*k, (*v).to_owned())).collect();
    for piece in data.split(|&b| b == 0) {
        if let Some((&which, value)) = piece.split_first() {
            env.insert(
                SETTINGS[usize::from(which) % SETTINGS.len()],
                String::from_utf8_lossy(value).into_owned(),
            );
        }
    }
    let got = read(&env);

    // No secret shows: the same text with every secret changed.
    let mut masked = env.clone();
    for name in ["RELAY_TOKEN_SECRET", "RELAY_TOKEN_SECRET_PREVIOUS"] {
        if let Some(v) = masked.get_mut(name) {
            *v = mask_secret(v);
        }
    }
    if let Some(keys) = env.get("AGENT_KEYS").and_then(|j| mask_keys(j)) {
        masked.insert("AGENT_KEYS", keys);
    }
    assert_eq!(shown(&read(&masked)), shown(&got), "a secret shows");

    match got {
        Err(e) => {
            assert!(SETTINGS.contains(&e.name), "{e}");
            // The setting named is the wrong one: its good value (or none) takes the refusal away.
            let mut fixed = env.clone();
            match GOOD.iter().find(|(k, _)| *k == e.name) {
                Some((k, v)) => fixed.insert(k, (*v).to_owned()),
                None => fixed.remove(e.name),
            };
            if let Err(again) = read(&fixed) {
                assert_ne!(again.name, e.name, "{e}, and again with {} fixed: {again}", e.name);
            }
        }
        Ok(c) => {
            assert!(prefix_form(&c.upstream_prefix) && prefix_form(&c.path_prefix), "{c:?}");
            assert!(
                c.upstream_origin.starts_with("https://") || c.upstream_origin.starts_with("http://"),
                "{c:?}"
            );
            assert!(c.allow_no_origin || !c.allowed_origins.is_empty(), "{c:?}");
            // Written back as settings, the configuration reads as itself.
            let mut again = env.clone();
            for (name, value) in [
                ("UPSTREAM", format!("{}{}", c.upstream_origin, c.upstream_prefix)),
                ("UPSTREAM_GENERATION", c.generation.as_str().to_owned()),
                ("ALLOWED_ORIGINS", c.allowed_origins.join(",")),
                ("ALLOW_NO_ORIGIN", c.allow_no_origin.to_string()),
                ("PATH_PREFIX", c.path_prefix.clone()),
                ("MAX_MESSAGE_BYTES", c.max_message_bytes.to_string()),
                ("MAX_BODY_BYTES", c.max_body_bytes.to_string()),
                ("RATE_LIMIT_PER_MINUTE", c.rate_per_minute.to_string()),
                ("RATE_LIMIT_BURST", c.rate_burst.to_string()),
                ("FRAME_LIMIT_PER_MINUTE", c.frame_per_minute.to_string()),
                ("FRAME_LIMIT_BURST", c.frame_burst.to_string()),
                ("MAX_TOKEN_LIFETIME_S", c.max_token_lifetime_s.to_string()),
                ("UPSTREAM_TIMEOUT_MS", c.upstream_timeout_ms.to_string()),
                ("PING_INTERVAL_MS", c.ping_interval_ms.to_string()),
                ("UPSTREAM_IDLE_MS", c.upstream_idle_ms.to_string()),
                ("MAX_UNACKED_BYTES", c.max_unacked_bytes.to_string()),
            ] {
                again.insert(name, value);
            }
            let back = read(&again).unwrap_or_else(|e| panic!("{c:?} written back is refused: {e}"));
            assert_eq!(shown(&Ok(back)), shown(&Ok(c)));
        }
    }
});
