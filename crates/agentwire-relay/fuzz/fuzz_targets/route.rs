//! Fuzzes the relay's router (`Relay::route`) on whatever a browser can send: any method, URL,
//! headers and body. It must never panic; no answer to the browser (a response, a refusal frame,
//! a close reason) may hold an agent key or the token secret the browser did not send itself; what goes upstream goes to the
//! configured origin, as an agent the token names, with that agent's key, and never forwards the
//! `token` parameter; every decision serializes (the Worker reads it as JSON).
//!
//! Input: a flags byte, then lossy UTF-8 lines: the method, the URL, header lines `name: value`
//! up to an empty line, then the body. `TOKEN` anywhere is replaced by a relay token signed for
//! `agent-a` (flags bit 0: for `agent-b`; bit 1: expired), so the routes behind the token check
//! are reached. Bits 2–3 pick `UPSTREAM_GENERATION` (ws, sse, auto); bit 4 sets `PATH_PREFIX`
//! `/switch`; bit 5 `ALLOW_NO_ORIGIN`.
#![no_main]

use agentwire_relay::config::Config;
use agentwire_relay::route::{Decision, Relay, Request};
use agentwire_relay::token::{mint, Claims};
use libfuzzer_sys::fuzz_target;

const SECRET: &str = "fuzz-secret-0123456789abcdef-0123";
const KEYS: [(&str, &str); 2] = [("agent-a", "sk_switch_aaaa_fuzz"), ("agent-b", "sk_switch_bbbb_fuzz")];
const UPSTREAM: &str = "http://127.0.0.1:7751";
const NOW: u64 = 1_800_000_000_000;

fuzz_target!(|data: &[u8]| {
    let Some((&flags, rest)) = data.split_first() else {
        return;
    };
    let agent = KEYS[usize::from(flags & 1)].0;
    let exp = if flags & 2 != 0 {
        NOW / 1000 - 1
    } else {
        NOW / 1000 + 300
    };
    let token = mint(SECRET.as_bytes(), &Claims::new(agent, exp)).expect("minted");
    let text = String::from_utf8_lossy(rest).replace("TOKEN", &token);

    let mut lines = text.split('\n');
    let method = lines.next().unwrap_or("").trim_end_matches('\r').to_owned();
    let url = lines.next().unwrap_or("").trim_end_matches('\r').to_owned();
    let mut headers = Vec::new();
    for line in lines.by_ref() {
        let line = line.trim_end_matches('\r');
        if line.is_empty() {
            break;
        }
        let (n, v) = line.split_once(':').unwrap_or((line, ""));
        headers.push((n.to_owned(), v.trim_start().to_owned()));
    }
    let body: Vec<&str> = lines.collect();
    let body = body.join("\n");

    let generation = ["ws", "sse", "auto", "auto"][usize::from(flags >> 2 & 3)];
    let keys = format!(r#"{{"{}":"{}","{}":"{}"}}"#, KEYS[0].0, KEYS[0].1, KEYS[1].0, KEYS[1].1);
    let env = move |k: &str| -> Option<String> {
        Some(match k {
            "UPSTREAM" => UPSTREAM.to_owned(),
            "UPSTREAM_GENERATION" => generation.to_owned(),
            "AGENT_KEYS" => keys.clone(),
            "RELAY_TOKEN_SECRET" => SECRET.to_owned(),
            "ALLOWED_ORIGINS" => "https://app.example".to_owned(),
            "PATH_PREFIX" if flags & 16 != 0 => "/switch".to_owned(),
            "ALLOW_NO_ORIGIN" if flags & 32 != 0 => "true".to_owned(),
            _ => return None,
        })
    };
    let mut relay = Relay::new(Config::from_env(env).expect("a valid configuration"));
    let req = Request {
        method: &method,
        url: &url,
        headers: &headers,
        body: (!body.is_empty()).then_some(body.as_str()),
    };
    let decision = relay.route(&req, NOW);
    let json = serde_json::to_string(&decision).expect("a decision serializes");

    // What the browser sent, as sent and percent-decoded: an answer may echo that back (a bad
    // parameter's name), so a key the browser typed itself is no leak.
    let sent = format!("{text}\n{}", percent_decoded(&text));
    let secret_free = |what: &str, s: &str| {
        for (_, key) in KEYS {
            assert!(!s.contains(key) || sent.contains(key), "{what} shows a key: {s:?}");
        }
        assert!(
            !s.contains(SECRET) || sent.contains(SECRET),
            "{what} shows the secret: {s:?}"
        );
    };
    let upstream_bound = |what: &str, url: &str| {
        assert!(url.starts_with(UPSTREAM), "{what} leaves the upstream: {url:?}");
        // The `token` parameter is the relay's; it is never forwarded (a browser may still
        // choose to put the text of its token in a value of its own).
        let query = url.split_once('?').map_or("", |(_, q)| q);
        assert!(
            !query.split('&').any(|p| p.split('=').next() == Some("token")),
            "{what} forwards the token parameter: {url:?}"
        );
        let rest = &url[UPSTREAM.len()..];
        assert!(
            rest.is_empty() || rest.starts_with('/'),
            "{what} changes the authority: {url:?}"
        );
    };
    // Upstream as the token's agent, with its key, and only with a token still valid.
    let as_the_token = |what: &str, headers: &[(String, String)]| {
        let auth = headers.iter().find(|(n, _)| n.eq_ignore_ascii_case("authorization"));
        let key = KEYS
            .iter()
            .find(|(a, _)| *a == agent)
            .map(|(_, k)| format!("Bearer {k}"));
        assert_eq!(
            auth.map(|(_, v)| v.as_str()),
            key.as_deref(),
            "{what} with another agent's key"
        );
        assert!(exp > NOW / 1000, "{what} with an expired token");
    };
    match &decision {
        Decision::Respond(_) | Decision::Refuse(_) => secret_free("an answer", &json),
        Decision::Proxy(p) => {
            upstream_bound("a call", &p.url);
            as_the_token("a call upstream", &p.headers);
            // Only the relay's own headers go upstream (no cookie, no forwarded host).
            for (name, value) in &p.headers {
                let own = ["Authorization", "Accept", "X-Switch-Connection-Id", "Content-Type"];
                assert!(own.contains(&name.as_str()), "a browser's header went upstream: {name}");
                assert!(!value.contains(['\r', '\n']), "a header value splits: {value:?}");
            }
            secret_free("CORS headers", &format!("{:?}", p.cors));
        }
        Decision::Connect(c) => {
            upstream_bound("a socket", &c.ws_url);
            upstream_bound("a stream", &c.sse_url);
            upstream_bound("the beats' base", &c.upstream_base);
            assert_eq!(c.agent_id, agent, "connected as another agent than the token's");
            as_the_token("a socket upstream", &c.headers);
        }
    }
});

/// `%XX` escapes decoded wherever they are well formed, lossily.
fn percent_decoded(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let hex = b.get(i + 1..i + 3).filter(|h| h.iter().all(u8::is_ascii_hexdigit));
        match (b[i], hex) {
            (b'%', Some(h)) => {
                out.push(u8::from_str_radix(std::str::from_utf8(h).unwrap_or("0"), 16).unwrap_or(0));
                i += 3;
            }
            (c, _) => {
                out.push(c);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}
