//! The relay's configuration, read once from its environment (Worker vars and secrets) and
//! validated: a relay that is misconfigured says which setting is wrong, never its value.
//!
//! | Name | Kind | Default | Meaning |
//! |---|---|---|---|
//! | `UPSTREAM` | var | required | The one Switch origin, `https://host[:port][/prefix]` (`http://` only to `127.0.0.1`, `[::1]` or `localhost`: the agent key travels in it) |
//! | `UPSTREAM_GENERATION` | var | `auto` | `ws` or `websocket` (current servers), `sse` (released: bridge), `auto` (try the WebSocket, bridge on refusal) |
//! | `AGENT_KEYS` | secret | required | JSON object: agent id → that agent's Switch API key |
//! | `RELAY_TOKEN_SECRET` | secret | required | The HMAC key relay tokens are verified with (≥ 32 bytes) |
//! | `RELAY_TOKEN_SECRET_PREVIOUS` | secret | none | The previous key, still accepted during a rotation |
//! | `ALLOWED_ORIGINS` | var | none | Comma-separated exact origins (`https://app.example`) a browser may come from; required unless `ALLOW_NO_ORIGIN` |
//! | `ALLOW_NO_ORIGIN` | var | `false` | Whether a request with no `Origin` (a server, a CLI) is served |
//! | `PATH_PREFIX` | var | none | The relay's own path prefix (`/switch`), stripped before routing |
//! | `MAX_MESSAGE_BYTES` | var | 262144 | Largest WebSocket message from the browser (else close 1009), and the bridge's largest frame to it |
//! | `MAX_BODY_BYTES` | var | 65536 | Largest HTTP request body (else 413) |
//! | `RATE_LIMIT_PER_MINUTE` | var | 600 | WebSocket opens and HTTP calls per agent a minute |
//! | `RATE_LIMIT_BURST` | var | 60 | How many of them at once |
//! | `FRAME_LIMIT_PER_MINUTE` | var | 600 | Frames a browser may send up one socket a minute (a Switch client sends a pong every 2 s: 30) |
//! | `FRAME_LIMIT_BURST` | var | 20 | How many of them at once |
//! | `MAX_TOKEN_LIFETIME_S` | var | 3600 | Tokens expiring later than this (plus 60 s for clock skew) are refused |
//! | `UPSTREAM_TIMEOUT_MS` | var | 10000 | Longest wait for the upstream to answer an open or a call, and a bridge's beat (else 1011) |
//! | `PING_INTERVAL_MS` | var | 2000 | The bridge's ping interval towards the browser |
//! | `MAX_UNACKED_BYTES` | var | 8388608 | The bridge: bytes sent to a browser that has not answered a ping after them; past this (or sooner, at a window fitted to how fast the browser reads) the relay stops reading the upstream stream until it does |
//! | `UPSTREAM_IDLE_MS` | var | 10000 | An upstream socket silent this long is gone (Switch pings every 2 s): both sides are closed with 1011 |

use agentwire_core::http::local::{as_sent, is_loopback_host, is_origin};
use std::collections::BTreeMap;
use std::fmt;

/// How the relay reaches the upstream's event stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UpstreamGeneration {
    /// The current WebSocket route: frames are piped.
    Ws,
    /// The released SSE stream and beats: the relay bridges.
    Sse,
    /// Try the WebSocket; bridge when the upstream refuses the upgrade.
    Auto,
}

impl UpstreamGeneration {
    pub fn as_str(self) -> &'static str {
        match self {
            UpstreamGeneration::Ws => "ws",
            UpstreamGeneration::Sse => "sse",
            UpstreamGeneration::Auto => "auto",
        }
    }
}

/// A setting that is missing or wrong. `Display` names the setting and what is wrong with it,
/// never its value (it may be a secret).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigError {
    pub name: &'static str,
    pub problem: String,
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "relay setting {}: {}", self.name, self.problem)
    }
}

impl std::error::Error for ConfigError {}

fn bad(name: &'static str, problem: impl Into<String>) -> ConfigError {
    ConfigError {
        name,
        problem: problem.into(),
    }
}

/// The relay's configuration. `Debug` never shows keys or secrets.
#[derive(Clone)]
pub struct Config {
    /// `http(s)://host[:port]`, no trailing slash.
    pub upstream_origin: String,
    /// `""` or `/prefix` (no trailing slash).
    pub upstream_prefix: String,
    pub generation: UpstreamGeneration,
    pub(crate) agent_keys: BTreeMap<String, String>,
    pub(crate) token_secrets: Vec<Vec<u8>>,
    pub allowed_origins: Vec<String>,
    pub allow_no_origin: bool,
    pub path_prefix: String,
    pub max_message_bytes: usize,
    pub max_body_bytes: usize,
    pub rate_per_minute: u32,
    pub rate_burst: u32,
    pub frame_per_minute: u32,
    pub frame_burst: u32,
    pub max_token_lifetime_s: u64,
    pub upstream_timeout_ms: u64,
    pub ping_interval_ms: u64,
    pub upstream_idle_ms: u64,
    pub max_unacked_bytes: usize,
}

impl fmt::Debug for Config {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Config")
            .field("upstream_origin", &self.upstream_origin)
            .field("upstream_prefix", &self.upstream_prefix)
            .field("generation", &self.generation)
            .field("agents", &self.agent_keys.keys().collect::<Vec<_>>())
            .field("token_secrets", &self.token_secrets.len())
            .field("allowed_origins", &self.allowed_origins)
            .field("allow_no_origin", &self.allow_no_origin)
            .field("path_prefix", &self.path_prefix)
            .field("max_message_bytes", &self.max_message_bytes)
            .field("max_body_bytes", &self.max_body_bytes)
            .field("rate_per_minute", &self.rate_per_minute)
            .field("rate_burst", &self.rate_burst)
            .field("frame_per_minute", &self.frame_per_minute)
            .field("frame_burst", &self.frame_burst)
            .field("max_token_lifetime_s", &self.max_token_lifetime_s)
            .field("upstream_timeout_ms", &self.upstream_timeout_ms)
            .field("ping_interval_ms", &self.ping_interval_ms)
            .field("upstream_idle_ms", &self.upstream_idle_ms)
            .field("max_unacked_bytes", &self.max_unacked_bytes)
            .finish()
    }
}

/// Longest agent key accepted.
const MAX_KEY_LEN: usize = 1024;

/// `MAX_TOKEN_LIFETIME_S` when unset: tokens expiring later than this many seconds are refused.
pub const DEFAULT_MAX_TOKEN_LIFETIME_S: u64 = 3600;

/// The setting holding the HMAC key relay tokens are verified with: the secret a backend mints
/// them with (`agentwire relay token` reads it from the environment under this name too).
pub const TOKEN_SECRET: &str = "RELAY_TOKEN_SECRET";

/// Every setting [`Config::from_env`] reads (vars and secrets), for a host to read from its `env`
/// (the Worker asks for this list).
pub const SETTINGS: [&str; 19] = [
    "UPSTREAM",
    "UPSTREAM_GENERATION",
    "AGENT_KEYS",
    TOKEN_SECRET,
    "RELAY_TOKEN_SECRET_PREVIOUS",
    "ALLOWED_ORIGINS",
    "ALLOW_NO_ORIGIN",
    "PATH_PREFIX",
    "MAX_MESSAGE_BYTES",
    "MAX_BODY_BYTES",
    "RATE_LIMIT_PER_MINUTE",
    "RATE_LIMIT_BURST",
    "FRAME_LIMIT_PER_MINUTE",
    "FRAME_LIMIT_BURST",
    "MAX_TOKEN_LIFETIME_S",
    "UPSTREAM_TIMEOUT_MS",
    "PING_INTERVAL_MS",
    "UPSTREAM_IDLE_MS",
    "MAX_UNACKED_BYTES",
];

impl Config {
    /// Reads the settings through `get` (the Worker's `env`; absent or empty is unset).
    pub fn from_env(get: impl Fn(&str) -> Option<String>) -> Result<Config, ConfigError> {
        // Values are trimmed, except the token secrets: a backend mints with the exact bytes.
        let get = |name: &str| {
            let secret = name.starts_with(TOKEN_SECRET);
            get(name)
                .map(|v| if secret { v } else { v.trim().to_owned() })
                .filter(|v| !v.trim().is_empty())
        };
        let (upstream_origin, upstream_prefix) =
            parse_upstream(&get("UPSTREAM").ok_or_else(|| bad("UPSTREAM", "is required"))?)?;
        let generation = match get("UPSTREAM_GENERATION").as_deref() {
            None | Some("auto") => UpstreamGeneration::Auto,
            // `websocket`: the name npm and the WIT give the wire.
            Some("ws" | "websocket") => UpstreamGeneration::Ws,
            Some("sse") => UpstreamGeneration::Sse,
            Some(_) => return Err(bad("UPSTREAM_GENERATION", "must be ws (or websocket), sse or auto")),
        };
        let agent_keys = parse_keys(&get("AGENT_KEYS").ok_or_else(|| bad("AGENT_KEYS", "is required"))?)?;
        let mut token_secrets = Vec::new();
        for name in [TOKEN_SECRET, "RELAY_TOKEN_SECRET_PREVIOUS"] {
            match get(name) {
                Some(s) if s.len() < crate::token::MIN_SECRET_LEN => {
                    return Err(bad(
                        name,
                        format!("must be at least {} bytes", crate::token::MIN_SECRET_LEN),
                    ))
                }
                Some(s) => token_secrets.push(s.into_bytes()),
                None if name == TOKEN_SECRET => return Err(bad(name, "is required")),
                None => {}
            }
        }
        let allowed_origins = match get("ALLOWED_ORIGINS") {
            None => Vec::new(),
            Some(list) => list
                .split(',')
                .map(str::trim)
                .filter(|o| !o.is_empty())
                .map(|o| {
                    if is_origin(o) {
                        Ok(as_sent(o))
                    } else {
                        Err(bad("ALLOWED_ORIGINS", "every entry must be scheme://host[:port]"))
                    }
                })
                .collect::<Result<_, _>>()?,
        };
        let allow_no_origin = flag(get("ALLOW_NO_ORIGIN"), "ALLOW_NO_ORIGIN")?;
        if allowed_origins.is_empty() && !allow_no_origin {
            // Every request would be refused: a browser sends an Origin no list allows, and a
            // request without one is not served.
            return Err(bad(
                "ALLOWED_ORIGINS",
                "is required unless ALLOW_NO_ORIGIN is true (without either the relay serves nothing)",
            ));
        }
        let path_prefix = match get("PATH_PREFIX") {
            None => String::new(),
            Some(p) => prefix(&p).ok_or_else(|| bad("PATH_PREFIX", "must be /segment[/segment...]"))?,
        };
        let num = |name: &'static str, default: u64, min: u64, max: u64| -> Result<u64, ConfigError> {
            match get(name) {
                None => Ok(default),
                // Digits only: `str::parse` would take `+60`.
                Some(v) => match agentwire_core::decimal::parse_u64(&v) {
                    Some(n) if (min..=max).contains(&n) => Ok(n),
                    _ => Err(bad(name, format!("must be an integer in {min}..={max}"))),
                },
            }
        };
        Ok(Config {
            upstream_origin,
            upstream_prefix,
            generation,
            agent_keys,
            token_secrets,
            allowed_origins,
            allow_no_origin,
            path_prefix,
            max_message_bytes: num("MAX_MESSAGE_BYTES", 262_144, 1024, 32 << 20)? as usize,
            max_body_bytes: num("MAX_BODY_BYTES", 65_536, 1024, 32 << 20)? as usize,
            rate_per_minute: num("RATE_LIMIT_PER_MINUTE", 600, 1, 1_000_000)? as u32,
            rate_burst: num("RATE_LIMIT_BURST", 60, 1, 1_000_000)? as u32,
            frame_per_minute: num("FRAME_LIMIT_PER_MINUTE", 600, 1, 100_000_000)? as u32,
            frame_burst: num("FRAME_LIMIT_BURST", 20, u64::from(crate::route::FRAME_BATCH), 1_000_000)? as u32,
            max_token_lifetime_s: num("MAX_TOKEN_LIFETIME_S", DEFAULT_MAX_TOKEN_LIFETIME_S, 1, 7 * 86_400)?,
            upstream_timeout_ms: num("UPSTREAM_TIMEOUT_MS", 10_000, 100, 120_000)?,
            ping_interval_ms: num("PING_INTERVAL_MS", 2000, 100, 60_000)?,
            upstream_idle_ms: num("UPSTREAM_IDLE_MS", 10_000, 500, 600_000)?,
            max_unacked_bytes: num("MAX_UNACKED_BYTES", 8 << 20, 64 << 10, 1 << 30)? as usize,
        })
    }

    /// The Switch key of `agent`, if the relay holds one.
    pub(crate) fn key(&self, agent: &str) -> Option<&str> {
        self.agent_keys.get(agent).map(String::as_str)
    }

    /// The token secrets, newest first.
    pub(crate) fn secrets(&self) -> Vec<&[u8]> {
        self.token_secrets.iter().map(Vec::as_slice).collect()
    }

    /// Every agent key, so a driver can make sure none ever leaves in an answer or a log line.
    pub fn keys(&self) -> impl Iterator<Item = &str> {
        self.agent_keys.values().map(String::as_str)
    }
}

fn flag(v: Option<String>, name: &'static str) -> Result<bool, ConfigError> {
    match v.as_deref() {
        None | Some("false") | Some("0") => Ok(false),
        Some("true") | Some("1") => Ok(true),
        Some(_) => Err(bad(name, "must be true or false")),
    }
}

/// `/a/b` from `/a/b/` or `a/b`: segments of unreserved characters only.
fn prefix(p: &str) -> Option<String> {
    let segs: Vec<&str> = p.split('/').filter(|s| !s.is_empty()).collect();
    let ok = segs
        .iter()
        .all(|s| *s != "." && *s != ".." && s.bytes().all(|b| b.is_ascii_alphanumeric() || b"-._~".contains(&b)));
    ok.then(|| segs.iter().map(|s| format!("/{s}")).collect())
}

fn parse_upstream(u: &str) -> Result<(String, String), ConfigError> {
    let scheme_end = u.find("://").map_or(0, |i| i + 3);
    let (origin, path) = match u[scheme_end..].find('/') {
        Some(i) => u.split_at(scheme_end + i),
        None => (u, ""),
    };
    if !is_origin(origin) {
        return Err(bad(
            "UPSTREAM",
            "must be http(s)://host[:port][/prefix], with no credentials",
        ));
    }
    if path.contains(['?', '#']) {
        return Err(bad("UPSTREAM", "must have no query or fragment"));
    }
    if let Some(host) = origin.strip_prefix("http://") {
        // The agent key goes upstream in `Authorization`: in clear only to this machine.
        if !is_loopback_host(host) {
            return Err(bad(
                "UPSTREAM",
                "must be https:// (http:// only to 127.0.0.1, [::1] or localhost): the agent key travels in it",
            ));
        }
    }
    let path = if path.is_empty() {
        String::new()
    } else {
        prefix(path).ok_or_else(|| bad("UPSTREAM", "the path must be plain segments"))?
    };
    Ok((origin.to_owned(), path))
}

fn parse_keys(json: &str) -> Result<BTreeMap<String, String>, ConfigError> {
    let keys: BTreeMap<String, String> =
        serde_json::from_str(json).map_err(|_| bad("AGENT_KEYS", "must be a JSON object of agent id to key"))?;
    if keys.is_empty() {
        return Err(bad("AGENT_KEYS", "names no agent"));
    }
    for (agent, key) in &keys {
        if !crate::route::is_segment(agent) {
            return Err(bad(
                "AGENT_KEYS",
                format!("agent id {agent:?} is not a plain path segment"),
            ));
        }
        let printable = key.bytes().all(|b| (0x21..0x7f).contains(&b));
        if key.is_empty() || key.len() > MAX_KEY_LEN || !printable {
            return Err(bad(
                "AGENT_KEYS",
                format!("the key of {agent:?} must be 1..={MAX_KEY_LEN} printable ASCII characters"),
            ));
        }
    }
    Ok(keys)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    pub(crate) const SECRET: &str = "0123456789abcdef0123456789abcdef";

    pub(crate) fn env(extra: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let mut vars: BTreeMap<String, String> = [
            ("UPSTREAM", "http://127.0.0.1:7751"),
            (
                "AGENT_KEYS",
                r#"{"agent-a":"sk_switch_aaaa","agent-b":"sk_switch_bbbb"}"#,
            ),
            ("RELAY_TOKEN_SECRET", SECRET),
            ("ALLOWED_ORIGINS", "http://127.0.0.1:7700, https://app.example"),
        ]
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
        for (k, v) in extra {
            vars.insert(k.to_string(), v.to_string());
        }
        move |k| vars.get(k).cloned()
    }

    #[test]
    fn allowed_origins_are_kept_as_a_browser_sends_them() {
        // A browser sends `https://app.example`, never the default port or capitals: an entry
        // written with either matched no request, and every browser was refused.
        let origins = "https://App.Example:443, http://LOCALHOST:80, https://h:8443, http://[::1]:443";
        let c = Config::from_env(env(&[("ALLOWED_ORIGINS", origins)])).unwrap();
        assert_eq!(
            c.allowed_origins,
            [
                "https://app.example",
                "http://localhost",
                "https://h:8443",
                "http://[::1]:443"
            ]
        );
    }

    #[test]
    fn defaults() {
        let c = Config::from_env(env(&[])).unwrap();
        assert_eq!(c.upstream_origin, "http://127.0.0.1:7751");
        assert_eq!(c.upstream_prefix, "");
        assert_eq!(c.generation, UpstreamGeneration::Auto);
        assert_eq!(c.allowed_origins, ["http://127.0.0.1:7700", "https://app.example"]);
        assert!(!c.allow_no_origin);
        assert_eq!(
            (c.max_message_bytes, c.rate_per_minute, c.ping_interval_ms),
            (262_144, 600, 2000)
        );
        assert_eq!(c.key("agent-a"), Some("sk_switch_aaaa"));
        let debug = format!("{c:?}");
        assert!(!debug.contains("sk_switch") && !debug.contains(SECRET), "{debug}");
    }

    #[test]
    fn every_setting() {
        let c = Config::from_env(env(&[
            ("UPSTREAM", "https://switch.example:8443/api/"),
            ("UPSTREAM_GENERATION", "sse"),
            ("RELAY_TOKEN_SECRET_PREVIOUS", "fedcba9876543210fedcba9876543210"),
            ("ALLOW_NO_ORIGIN", "true"),
            ("PATH_PREFIX", "/switch/"),
            ("MAX_MESSAGE_BYTES", "4096"),
            ("RATE_LIMIT_PER_MINUTE", "6"),
        ]))
        .unwrap();
        assert_eq!(
            (c.upstream_origin.as_str(), c.upstream_prefix.as_str()),
            ("https://switch.example:8443", "/api")
        );
        assert_eq!(c.generation, UpstreamGeneration::Sse);
        assert_eq!(c.secrets().len(), 2);
        assert!(c.allow_no_origin);
        assert_eq!(c.path_prefix, "/switch");
        assert_eq!((c.max_message_bytes, c.rate_per_minute), (4096, 6));
    }

    /// A number setting is digits only (once trimmed, as every value): `str::parse` took `+60`.
    #[test]
    fn a_number_setting_is_digits_only() {
        for bad in ["+60", "6e1", "60.0", "-1", "1_0"] {
            let e = Config::from_env(env(&[("RATE_LIMIT_PER_MINUTE", bad)])).unwrap_err();
            assert!(format!("{e}").contains("RATE_LIMIT_PER_MINUTE"), "{bad:?}: {e}");
        }
        let c = Config::from_env(env(&[("RATE_LIMIT_PER_MINUTE", "060")])).unwrap();
        assert_eq!(c.rate_per_minute, 60);
    }

    #[test]
    fn websocket_is_ws() {
        for name in ["ws", "websocket"] {
            let c = Config::from_env(env(&[("UPSTREAM_GENERATION", name)])).unwrap();
            assert_eq!(c.generation, UpstreamGeneration::Ws, "{name}");
        }
    }

    /// `SETTINGS` is what `from_env` reads: the Worker reads its `env` with that list, so a
    /// setting left out of it would never reach the relay.
    #[test]
    fn settings_are_what_from_env_reads() {
        let asked = std::cell::RefCell::new(std::collections::BTreeSet::new());
        let all = env(&[]);
        Config::from_env(|name| {
            asked.borrow_mut().insert(name.to_owned());
            all(name)
        })
        .unwrap();
        let listed: std::collections::BTreeSet<String> = SETTINGS.iter().map(|s| s.to_string()).collect();
        assert_eq!(asked.into_inner(), listed);
    }

    proptest::proptest! {
        /// Any value of any setting: no panic, and an error names a setting and never quotes a
        /// value (the marker stands for a key or a secret written into it).
        #[test]
        fn any_value_of_any_setting(
            at in 0..SETTINGS.len(),
            shape in 0..4usize,
            text in "\\PC{0,24}",
            marker in "[A-Z]{12}",
        ) {
            let value = match shape {
                0 => format!("{text}{marker}"),
                1 => format!(r#"{{"{text}":"{marker}"}}"#),
                2 => format!("http://{text}{marker}"),
                _ => format!("{marker},{text}"),
            };
            match Config::from_env(env(&[(SETTINGS[at], &value)])) {
                Ok(_) => {}
                Err(e) => {
                    proptest::prop_assert!(SETTINGS.contains(&e.name), "{}", e.name);
                    proptest::prop_assert!(!e.to_string().contains(&marker), "{}", e);
                }
            }
        }
    }

    #[test]
    fn errors_name_the_setting_never_the_value() {
        for (name, value) in [
            ("UPSTREAM", "ftp://x"),
            ("UPSTREAM", "http://user:pw@host"),
            ("UPSTREAM", "http://host/a?b"),
            ("UPSTREAM", "http://host/../x"),
            ("UPSTREAM_GENERATION", "grpc"),
            ("AGENT_KEYS", "sk_switch_secret"),
            ("AGENT_KEYS", "{}"),
            ("AGENT_KEYS", r#"{"a/b":"sk_switch_x"}"#),
            ("AGENT_KEYS", r#"{"a":"sk switch"}"#),
            ("RELAY_TOKEN_SECRET", "short-secret-value"),
            ("ALLOWED_ORIGINS", "https://app.example/path"),
            ("ALLOWED_ORIGINS", "*"),
            ("ALLOW_NO_ORIGIN", "yes"),
            ("PATH_PREFIX", "/a/../b"),
            ("MAX_MESSAGE_BYTES", "12"),
            ("RATE_LIMIT_BURST", "-1"),
        ] {
            let e = Config::from_env(env(&[(name, value)])).unwrap_err();
            assert_eq!(e.name, name, "{value}");
            let shown = e.to_string();
            assert!(!shown.contains(value) || value.len() < 4, "{shown}");
        }
        assert_eq!(
            Config::from_env(env(&[("UPSTREAM", "")])).unwrap_err().problem,
            "is required"
        );
        // Says what the setting must be, not what it is (it had "has no query or fragment").
        for u in ["https://h.example/p?x=1", "https://h.example/p#f"] {
            let e = Config::from_env(env(&[("UPSTREAM", u)])).unwrap_err();
            assert_eq!(e.to_string(), "relay setting UPSTREAM: must have no query or fragment");
        }
    }

    /// The agent key goes upstream in `Authorization`: over plain HTTP only to a loopback host.
    #[test]
    fn a_plain_http_upstream_must_be_loopback() {
        for u in [
            "http://127.0.0.1:7751",
            "http://127.0.0.1",
            "http://[::1]:8080/api",
            "http://localhost:7751",
            "http://LOCALHOST",
            "https://switch.example",
            "https://10.0.0.5:8443",
        ] {
            Config::from_env(env(&[("UPSTREAM", u)])).unwrap_or_else(|e| panic!("{u}: {e}"));
        }
        for u in [
            "http://switch.example",
            "http://10.0.0.5:7751",
            "http://127.0.0.2",
            "http://localhost.evil.example",
            "http://[::2]:80",
            "http://127.0.0.1.nip.io",
        ] {
            let e = Config::from_env(env(&[("UPSTREAM", u)])).unwrap_err();
            assert_eq!(e.name, "UPSTREAM", "{u}");
            assert!(e.problem.contains("https://"), "{u}: {e}");
        }
    }

    /// The token secret is required (a relay without one could verify no token); the previous
    /// one is not.
    #[test]
    fn the_token_secret_is_required() {
        let all = env(&[]);
        let e = Config::from_env(|k| if k == TOKEN_SECRET { None } else { all(k) }).unwrap_err();
        assert_eq!((e.name, e.problem.as_str()), (TOKEN_SECRET, "is required"));
        let c = Config::from_env(env(&[])).unwrap();
        assert_eq!(c.secrets(), [SECRET.as_bytes()]);
    }

    /// Every agent key, and only them, for the driver's redaction of answers and log lines.
    #[test]
    fn keys_are_every_configured_key() {
        let c = Config::from_env(env(&[])).unwrap();
        assert_eq!(c.keys().collect::<Vec<_>>(), ["sk_switch_aaaa", "sk_switch_bbbb"]);
    }

    /// An agent key is 1..=1024 printable ASCII characters.
    #[test]
    fn an_agent_key_is_1_to_1024_printable_characters() {
        let json = |key: &str| format!(r#"{{"agent-a":"{key}"}}"#);
        for bad in [String::new(), "k".repeat(MAX_KEY_LEN + 1)] {
            let e = Config::from_env(env(&[("AGENT_KEYS", &json(&bad))])).unwrap_err();
            assert_eq!(e.name, "AGENT_KEYS", "{}", bad.len());
        }
        for good in ["k".to_owned(), "k".repeat(MAX_KEY_LEN)] {
            let c = Config::from_env(env(&[("AGENT_KEYS", &json(&good))])).unwrap();
            assert_eq!(c.key("agent-a"), Some(good.as_str()));
        }
    }

    /// The number settings take their whole documented range, and not one more.
    #[test]
    fn number_settings_take_their_bounds() {
        for (name, max, default) in [
            ("MAX_MESSAGE_BYTES", 32u64 << 20, 262_144u64),
            ("MAX_BODY_BYTES", 32 << 20, 65_536),
            ("MAX_TOKEN_LIFETIME_S", 7 * 86_400, 3600),
            ("MAX_UNACKED_BYTES", 1 << 30, 8 << 20),
        ] {
            let get = |c: &Config| match name {
                "MAX_MESSAGE_BYTES" => c.max_message_bytes as u64,
                "MAX_BODY_BYTES" => c.max_body_bytes as u64,
                "MAX_TOKEN_LIFETIME_S" => c.max_token_lifetime_s,
                _ => c.max_unacked_bytes as u64,
            };
            assert_eq!(get(&Config::from_env(env(&[])).unwrap()), default, "{name}");
            let c = Config::from_env(env(&[(name, &max.to_string())])).unwrap();
            assert_eq!(get(&c), max, "{name}");
            let e = Config::from_env(env(&[(name, &(max + 1).to_string())])).unwrap_err();
            assert_eq!(e.name, name);
        }
        let e = Config::from_env(env(&[("MAX_UNACKED_BYTES", &((64 << 10) - 1).to_string())])).unwrap_err();
        assert_eq!(e.name, "MAX_UNACKED_BYTES");
        let c = Config::from_env(env(&[("MAX_UNACKED_BYTES", &(64 << 10).to_string())])).unwrap();
        assert_eq!(c.max_unacked_bytes, 64 << 10);
    }

    /// `as_str` names each generation as `UPSTREAM_GENERATION` spells it.
    #[test]
    fn a_generation_reads_back_from_its_name() {
        for g in [
            UpstreamGeneration::Ws,
            UpstreamGeneration::Sse,
            UpstreamGeneration::Auto,
        ] {
            let c = Config::from_env(env(&[("UPSTREAM_GENERATION", g.as_str())])).unwrap();
            assert_eq!(c.generation, g);
        }
        assert_eq!(UpstreamGeneration::Ws.as_str(), "ws");
    }

    /// `Debug` shows the settings an operator checks (agents by id, the number of secrets),
    /// never a key or a secret.
    #[test]
    fn debug_shows_the_settings_without_keys_or_secrets() {
        let debug = format!("{:?}", Config::from_env(env(&[])).unwrap());
        for shown in [
            "http://127.0.0.1:7751",
            "agent-a",
            "agent-b",
            "token_secrets: 1",
            "https://app.example",
        ] {
            assert!(debug.contains(shown), "{shown}: {debug}");
        }
        assert!(!debug.contains("sk_switch") && !debug.contains(SECRET), "{debug}");
    }

    /// No origin allowed and requests without one refused: a relay that would refuse everything
    /// is a configuration error, not a relay that starts and serves nothing.
    #[test]
    fn a_relay_that_serves_no_origin_at_all_is_an_error() {
        for origins in ["", " ", " , ,"] {
            let e = Config::from_env(env(&[("ALLOWED_ORIGINS", origins)])).unwrap_err();
            assert_eq!(e.name, "ALLOWED_ORIGINS", "{origins:?}");
            assert!(e.problem.contains("ALLOW_NO_ORIGIN"), "{e}");
            let e = Config::from_env(env(&[("ALLOWED_ORIGINS", origins), ("ALLOW_NO_ORIGIN", "false")])).unwrap_err();
            assert_eq!(e.name, "ALLOWED_ORIGINS");
            // Serving only requests without an Origin (servers, CLIs) is a relay that serves.
            let c = Config::from_env(env(&[("ALLOWED_ORIGINS", origins), ("ALLOW_NO_ORIGIN", "true")])).unwrap();
            assert!(c.allowed_origins.is_empty() && c.allow_no_origin);
        }
        let unset = env(&[]);
        let e = Config::from_env(|k| if k == "ALLOWED_ORIGINS" { None } else { unset(k) }).unwrap_err();
        assert_eq!(e.name, "ALLOWED_ORIGINS");
    }
}
