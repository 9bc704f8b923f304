use super::*;
use crate::config::tests::{env, SECRET};
use crate::token::mint;

const NOW: Millis = 1_800_000_000_000;
const APP: &str = "https://app.example";

fn relay(extra: &[(&str, &str)]) -> Relay {
    Relay::new(Config::from_env(env(extra)).unwrap())
}

fn token(agent: &str, f: impl FnOnce(&mut Claims)) -> String {
    let mut c = Claims::new(agent, NOW / 1000 + 300);
    f(&mut c);
    mint(SECRET.as_bytes(), &c).unwrap()
}

fn h(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
    pairs.iter().map(|(n, v)| (n.to_string(), v.to_string())).collect()
}

fn ws(relay: &mut Relay, url: &str, headers: &[(&str, &str)]) -> Decision {
    ws_at(relay, url, headers, NOW)
}

fn ws_at(relay: &mut Relay, url: &str, headers: &[(&str, &str)], now: Millis) -> Decision {
    let mut all = h(&[("Upgrade", "websocket"), ("Origin", APP)]);
    for (n, v) in headers {
        all.retain(|(k, _)| !k.eq_ignore_ascii_case(n));
        all.push((n.to_string(), v.to_string()));
    }
    relay.route(
        &Request {
            method: "GET",
            url,
            headers: &all,
            body: None,
        },
        now,
    )
}

fn ws_token(relay: &mut Relay, url: &str, tok: &str) -> Decision {
    ws_token_at(relay, url, tok, NOW)
}

fn ws_token_at(relay: &mut Relay, url: &str, tok: &str, now: Millis) -> Decision {
    let protocol = format!("agentwire.v1, agentwire.token.{tok}");
    ws_at(relay, url, &[("Sec-WebSocket-Protocol", &protocol)], now)
}

fn http(relay: &mut Relay, method: &str, url: &str, headers: &[(&str, &str)], body: Option<&str>) -> Decision {
    let all = h(headers);
    relay.route(
        &Request {
            method,
            url,
            headers: &all,
            body,
        },
        NOW,
    )
}

const WS: &str = "https://relay.example/agents/agent-a/connection/ws?connection_id=c-1";

fn refused(d: Decision) -> Refusal {
    match d {
        Decision::Refuse(r) => r,
        other => panic!("not refused over the socket: {other:?}"),
    }
}

fn answered(d: Decision) -> Answer {
    match d {
        Decision::Respond(a) => a,
        other => panic!("not answered: {other:?}"),
    }
}

#[test]
fn a_good_open_connects_upstream_with_the_key_and_echoes_only_the_protocol() {
    let mut r = relay(&[]);
    let t = token("agent-a", |_| {});
    let url = format!("{WS}&rooms=r1,r2&start_from=7&token={t}&evil=x");
    let Decision::Connect(c) = ws_token(&mut r, &url, &t) else {
        panic!()
    };
    assert_eq!(c.protocol, Some("agentwire.v1"));
    assert_eq!(c.transport, Transport::Auto);
    assert_eq!(c.connection_id, "c-1");
    assert_eq!(
        c.ws_url,
        "http://127.0.0.1:7751/agents/agent-a/connection/ws?connection_id=c-1&rooms=r1,r2&start_from=7"
    );
    assert_eq!(
        c.sse_url,
        "http://127.0.0.1:7751/agents/agent-a/events?connection_id=c-1&rooms=r1,r2&start_from=7"
    );
    assert_eq!(c.headers, h(&[("Authorization", "Bearer sk_switch_aaaa")]));
    assert_eq!(
        c.expires_at_ms,
        (NOW / 1000 + 300) * 1000,
        "the socket ends with its token"
    );
    // The token may come in the query alone (no subprotocol offered: none echoed).
    let Decision::Connect(c) = ws(&mut r, &format!("{WS}&token={t}"), &[]) else {
        panic!()
    };
    assert_eq!(c.protocol, None);
}

#[test]
fn tokens_missing_forged_expired_or_for_another_agent_are_refused() {
    let mut r = relay(&[]);
    let other_secret = mint(
        b"another-secret-another-secret-32b",
        &Claims::new("agent-a", NOW / 1000 + 60),
    )
    .unwrap();
    let expired = token("agent-a", |c| c.exp = NOW / 1000 - 1);
    let too_long = token("agent-a", |c| c.exp = NOW / 1000 + 7200);
    let mut forged = token("agent-a", |_| {});
    let last = forged.pop().unwrap();
    forged.push(if last == 'A' { 'B' } else { 'A' });
    for (tok, code) in [
        (None, 4401),
        (Some(other_secret.as_str()), 4401),
        (Some(expired.as_str()), 4401),
        (Some(too_long.as_str()), 4401),
        (Some(forged.as_str()), 4401),
        (Some(token("agent-b", |_| {})).as_deref(), 4403),
    ] {
        let r = refused(match tok {
            Some(t) => ws_token(&mut r, WS, t),
            None => ws(&mut r, WS, &[("Sec-WebSocket-Protocol", "agentwire.v1")]),
        });
        assert_eq!(r.code, code, "{r:?}");
        assert_eq!(r.protocol, Some("agentwire.v1"));
        // 4401 closes without a refused frame, as Switch does; others send one.
        assert_eq!(r.frame.is_some(), code != 4401);
        assert!(!r.reason.contains("sk_switch"));
    }
    // Over HTTP: 401 / 403 with a JSON detail.
    let a = answered(http(
        &mut r,
        "GET",
        "https://relay.example/agents/agent-a/ops",
        &[("Origin", APP)],
        None,
    ));
    assert_eq!(a.status, 401);
    assert!(a.body.contains(r#""error":"token""#), "{}", a.body);
    let b = format!("Bearer {}", token("agent-b", |_| {}));
    let a = answered(http(
        &mut r,
        "GET",
        "https://relay.example/agents/agent-a/ops",
        &[("Origin", APP), ("Authorization", &b)],
        None,
    ));
    assert_eq!(a.status, 403);
}

#[test]
fn a_refused_tokens_close_reason_keeps_its_numbers() {
    // A UUID agent: the reason was cut inside "more than the 3600 s allowed".
    const AGENT: &str = "f959a0d2-5d4e-4c1b-9a57-0c1f2e3d4b5a";
    let mut r = relay(&[("AGENT_KEYS", &format!(r#"{{"{AGENT}":"sk_switch_x"}}"#))]);
    let url = WS.replace("agent-a", AGENT);
    for (exp, says) in [
        (NOW / 1000 + 7200, "expires in 7200 s, more than the 3600 s allowed"),
        (
            NOW / 1000 - 1,
            &*format!("expired at {} (now {})", NOW / 1000 - 1, NOW / 1000),
        ),
    ] {
        let no = refused(ws_token(&mut r, &url, &token(AGENT, |c| c.exp = exp)));
        assert_eq!(no.code, 4401, "{no:?}");
        assert!(
            no.reason.len() <= crate::close::MAX_REASON && no.reason.contains(says),
            "{}",
            no.reason
        );
    }
}

#[test]
fn a_token_in_the_query_is_checked_as_a_token_whatever_its_length() {
    let mut r = relay(&[]);
    // Four UUID rooms make a token of about 300 bytes: longer than other query values.
    let rooms: Vec<String> = (0..4)
        .map(|i| format!("00000000-0000-4000-8000-00000000000{i}"))
        .collect();
    let t = token("agent-a", |c| c.rooms = Some(rooms.clone()));
    assert!(t.len() > query::MAX_VALUE, "{}", t.len());
    let url = format!("{WS}&rooms={}&token={t}", rooms[0]);
    assert!(matches!(ws(&mut r, &url, &[]), Decision::Connect(_)));
    // Any token problem is 4401 (a client may retry with a new token), never 4400 (final):
    // over MAX_TOKEN_LEN, or with characters no token has.
    for bad in [
        "a".repeat(crate::token::MAX_TOKEN_LEN + 1),
        format!("{t}%0a"),
        format!("{t}%20"),
    ] {
        let no = refused(ws(&mut r, &format!("{WS}&token={bad}"), &[]));
        assert_eq!(no.code, 4401, "{no:?}");
        assert!(no.frame.is_none());
    }
}

#[test]
fn a_rotated_secret_still_verifies() {
    let mut r = relay(&[
        ("RELAY_TOKEN_SECRET", "new-secret-new-secret-new-secret"),
        ("RELAY_TOKEN_SECRET_PREVIOUS", SECRET),
    ]);
    let t = token("agent-a", |_| {});
    assert!(matches!(ws_token(&mut r, WS, &t), Decision::Connect(_)));
}

#[test]
fn origins_are_checked_against_the_list_and_the_token() {
    let mut r = relay(&[]);
    let t = token("agent-a", |_| {});
    for bad in [
        "https://evil.example",
        "null",
        "https://app.example.evil",
        "https://app.example:443",
    ] {
        let f = refused(ws(
            &mut r,
            WS,
            &[
                ("Origin", bad),
                ("Sec-WebSocket-Protocol", &format!("agentwire.v1, agentwire.token.{t}")),
            ],
        ));
        assert_eq!(f.code, 4403, "{bad}");
    }
    // No Origin: refused unless ALLOW_NO_ORIGIN.
    let mut hs = h(&[
        ("Upgrade", "websocket"),
        ("Sec-WebSocket-Protocol", &format!("agentwire.v1, agentwire.token.{t}")),
    ]);
    let req = Request {
        method: "GET",
        url: WS,
        headers: &hs,
        body: None,
    };
    assert_eq!(refused(r.route(&req, NOW)).code, 4403);
    let mut open = relay(&[("ALLOW_NO_ORIGIN", "true")]);
    assert!(matches!(open.route(&req, NOW), Decision::Connect(_)));
    // A token bound to an origin needs exactly it.
    let bound = token("agent-a", |c| c.origin = Some("http://127.0.0.1:7700".into()));
    assert_eq!(refused(ws_token(&mut r, WS, &bound)).code, 4403);
    hs.push(("Origin".into(), "http://127.0.0.1:7700".into()));
    hs[1].1 = format!("agentwire.v1, agentwire.token.{bound}");
    assert!(matches!(
        r.route(
            &Request {
                method: "GET",
                url: WS,
                headers: &hs,
                body: None
            },
            NOW
        ),
        Decision::Connect(_)
    ));
}

#[test]
fn no_path_or_query_changes_the_upstream_host() {
    let mut r = relay(&[("ALLOW_NO_ORIGIN", "true")]);
    let t = format!("Bearer {}", token("agent-a", |_| {}));
    for path in [
        "/agents/agent-a/../agent-b/ops",
        "/agents/agent-a/ops/..%2F..%2Fadmin",
        "/agents/agent-a%2F..%2Fx/ops",
        "/agents/agent-a/ops/%2e%2e",
        "//evil.example/agents/agent-a/ops",
        "/agents/agent-a//ops",
        "/agents/agent-a/ops\\..\\x",
        "/agents/@evil.example/ops",
        "/agents/agent-a/ops/x/y",
        "/agents/agent-a/events",
        "/agents",
    ] {
        let d = http(
            &mut r,
            "GET",
            &format!("https://relay.example{path}"),
            &[("Authorization", &t)],
            None,
        );
        let a = answered(d);
        assert!(matches!(a.status, 400 | 404 | 405), "{path}: {}", a.status);
    }
    for (url, host) in [
        (
            "https://evil.example/agents/agent-a/ops?x=http://evil",
            "http://127.0.0.1:7751/agents/agent-a/ops",
        ),
        (
            "http://relay.example:80/agents/agent-a/ops#@evil.example",
            "http://127.0.0.1:7751/agents/agent-a/ops",
        ),
    ] {
        let d = http(
            &mut r,
            "GET",
            url,
            &[("Authorization", &t), ("Host", "evil.example")],
            None,
        );
        let Decision::Proxy(p) = d else { panic!("{d:?}") };
        assert_eq!(p.url, host);
    }
}

#[test]
fn only_the_relays_own_headers_go_upstream() {
    let mut r = relay(&[]);
    let t = format!("Bearer {}", token("agent-a", |_| {}));
    let d = http(
        &mut r,
        "POST",
        "https://relay.example/agents/agent-a/ops/post_message",
        &[
            ("Origin", APP),
            ("Authorization", &t),
            ("Cookie", "session=1"),
            ("cf-connecting-ip", "1.2.3.4"),
            ("X-Forwarded-Host", "evil.example"),
            ("X-Switch-Connection-Id", "c-1"),
        ],
        Some(r#"{"body":"hi"}"#),
    );
    let Decision::Proxy(p) = d else { panic!("{d:?}") };
    assert_eq!(p.method, "POST");
    assert_eq!(p.url, "http://127.0.0.1:7751/agents/agent-a/ops/post_message");
    let names: Vec<&str> = p.headers.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(
        names,
        ["Authorization", "Accept", "X-Switch-Connection-Id", "Content-Type"]
    );
    assert_eq!(p.headers[0].1, "Bearer sk_switch_aaaa");
    assert_eq!(p.cors[0], ("Access-Control-Allow-Origin".into(), APP.into()));
    assert_eq!(p.body.as_deref(), Some(r#"{"body":"hi"}"#));
    // The connection id is read whatever its case, and refused naming Switch's header.
    let a = answered(http(
        &mut r,
        "POST",
        "https://relay.example/agents/agent-a/ops/post_message",
        &[
            ("Origin", APP),
            ("Authorization", &t),
            ("x-switch-connection-id", "c/1"),
        ],
        Some(r#"{"body":"hi"}"#),
    ));
    assert_eq!(a.status, 400);
    assert!(
        a.body.contains("X-Switch-Connection-Id must be a plain id"),
        "{}",
        a.body
    );
}

#[test]
fn preflights_are_answered_by_the_relay() {
    let mut r = relay(&[]);
    let url = "https://relay.example/agents/agent-a/ops/post_message";
    let a = answered(http(
        &mut r,
        "OPTIONS",
        url,
        &[("Origin", APP), ("Access-Control-Request-Method", "POST")],
        None,
    ));
    assert_eq!(a.status, 204);
    assert!(a.headers.contains(&("Access-Control-Allow-Origin".into(), APP.into())));
    assert!(a.headers.contains(&(
        "Access-Control-Allow-Headers".into(),
        "authorization, content-type, x-switch-connection-id".into()
    )));
    let a = answered(http(
        &mut r,
        "OPTIONS",
        url,
        &[
            ("Origin", "https://evil.example"),
            ("Access-Control-Request-Method", "POST"),
        ],
        None,
    ));
    assert_eq!(a.status, 403);
    assert!(!a.headers.iter().any(|(n, _)| n.starts_with("Access-Control-Allow")));
}

#[test]
fn rooms_claims_limit_what_can_be_claimed() {
    let mut r = relay(&[]);
    let t = token("agent-a", |c| c.rooms = Some(vec!["r1".into()]));
    assert!(matches!(
        ws_token(&mut r, &format!("{WS}&rooms=r1"), &t),
        Decision::Connect(_)
    ));
    // Checked trimmed, and so forwarded: the upstream reads the room the token allows.
    match ws_token(&mut r, &format!("{WS}&rooms=%20r1%E3%80%80"), &t) {
        Decision::Connect(c) => assert!(
            c.ws_url.ends_with("&rooms=r1") && c.sse_url.ends_with("&rooms=r1"),
            "{c:?}"
        ),
        other => panic!("{other:?}"),
    }
    assert_eq!(refused(ws_token(&mut r, &format!("{WS}&rooms=r1,r2"), &t)).code, 4403);
    assert_eq!(refused(ws_token(&mut r, &format!("{WS}&scope=all"), &t)).code, 4403);
    assert_eq!(refused(ws_token(&mut r, &format!("{WS}&scope=ALL"), &t)).code, 4403);
    assert!(matches!(
        ws_token(&mut r, &format!("{WS}&scope=single"), &t),
        Decision::Connect(_)
    ));
    let bearer = format!("Bearer {t}");
    let post = |r: &mut Relay, path: &str, body: &str| {
        http(
            r,
            "POST",
            &format!("https://relay.example/agents/agent-a/{path}"),
            &[("Origin", APP), ("Authorization", &bearer)],
            Some(body),
        )
    };
    assert!(matches!(
        post(&mut r, "ops/connect_to_room", r#"{"room_id":"r1"}"#),
        Decision::Proxy(_)
    ));
    assert_eq!(
        answered(post(&mut r, "ops/connect_to_room", r#"{"room_id":"r2"}"#)).status,
        403
    );
    assert_eq!(
        answered(post(
            &mut r,
            "connection/subscribe",
            r#"{"connection_id":"c","room_id":"r2"}"#
        ))
        .status,
        403
    );
    assert_eq!(
        answered(post(&mut r, "connection/placements", r#"{"placements":{"s":"r2"}}"#)).status,
        403
    );
    // A room that is not a string is a bad request, not a room the token does not allow (it
    // was 403 "the relay token does not allow room \"\\0\"").
    for (path, body, detail) in [
        ("ops/connect_to_room", r#"{"room_id":7}"#, "room_id must be a string"),
        (
            "connection/subscribe",
            r#"{"room_id":null}"#,
            "room_id must be a string",
        ),
        (
            "connection/placements",
            r#"{"placements":{"s":["r1"]}}"#,
            "every room of placements must be a string",
        ),
    ] {
        let a = answered(post(&mut r, path, body));
        assert_eq!(a.status, 400, "{body}");
        assert_eq!(
            a.body,
            format!(r#"{{"detail":"{detail}","error":"invalid"}}"#),
            "{body}"
        );
    }
    assert_eq!(answered(post(&mut r, "ops/connect_to_room", "not json")).status, 400);
}

#[test]
fn the_rate_limit_is_per_agent() {
    let mut r = relay(&[("RATE_LIMIT_BURST", "2"), ("RATE_LIMIT_PER_MINUTE", "1")]);
    let t = token("agent-a", |_| {});
    assert!(matches!(ws_token(&mut r, WS, &t), Decision::Connect(_)));
    assert!(matches!(ws_token(&mut r, WS, &t), Decision::Connect(_)));
    assert_eq!(refused(ws_token(&mut r, WS, &t)).code, 1013);
    let bearer = format!("Bearer {t}");
    let a = answered(http(
        &mut r,
        "GET",
        "https://relay.example/agents/agent-a/ops",
        &[("Origin", APP), ("Authorization", &bearer)],
        None,
    ));
    assert_eq!(a.status, 429);
    assert!(a.headers.contains(&("Retry-After".into(), "60".into())));
    let b = token("agent-b", |_| {});
    let url = "https://relay.example/agents/agent-b/connection/ws?connection_id=c-2";
    assert!(matches!(ws_token(&mut r, url, &b), Decision::Connect(_)));
}

#[test]
fn frames_are_limited_per_socket_not_per_agent() {
    let mut r = relay(&[
        ("RATE_LIMIT_BURST", "1"),
        ("RATE_LIMIT_PER_MINUTE", "1"),
        ("FRAME_LIMIT_BURST", "20"),
    ]);
    // 20 frames of burst: two batches of 8, not a third.
    assert!(r.take_frames(1, NOW).is_ok());
    assert!(r.take_frames(1, NOW).is_ok());
    assert!(r.take_frames(1, NOW).is_err());
    assert!(r.take_frames(2, NOW).is_ok());
    r.forget_socket(1);
    assert!(r.take_frames(1, NOW).is_ok());
    // The agent's own budget is untouched by frames.
    let t = token("agent-a", |_| {});
    assert!(matches!(ws_token(&mut r, WS, &t), Decision::Connect(_)));
}

#[test]
fn a_bad_open_is_refused_like_switch_does() {
    let mut r = relay(&[]);
    let t = token("agent-a", |_| {});
    let f = refused(ws_token(
        &mut r,
        "https://relay.example/agents/agent-a/connection/ws",
        &t,
    ));
    assert_eq!(f.code, 4400);
    let frame = f.frame.unwrap();
    assert_eq!(
        frame,
        r#"{"event":"refused","data":{"status":400,"detail":"connection_id is required: a plain id (1 to 256 of A-Z a-z 0-9 - . _ ~ :)"}}"#
    );
    // One given but malformed is told so, with what is accepted (it was told "connection_id is
    // required (a UUID)", though any plain id is accepted).
    for bad in ["a%20b", "", "..", "a/b"] {
        let url = format!("https://relay.example/agents/agent-a/connection/ws?connection_id={bad}");
        let f = refused(ws_token(&mut r, &url, &t));
        assert_eq!(f.code, 4400, "{bad}");
        assert_eq!(
            f.reason, "the connection_id given is not a plain id (1 to 256 of A-Z a-z 0-9 - . _ ~ :)",
            "{bad}"
        );
    }
    // The shape the engine decodes, as from a server.
    let decoded = agentwire_switch::frame::decode(&frame).unwrap();
    assert!(matches!(decoded, agentwire_switch::frame::Frame::Refused(r) if r.status == 400));
    // Offering protocols without ours: the handshake cannot succeed, so HTTP 4xx.
    let d = ws(
        &mut r,
        WS,
        &[("Sec-WebSocket-Protocol", &format!("chat, agentwire.token.{t}"))],
    );
    assert_eq!(answered(d).status, 400);
    // The WebSocket route is only an upgrade; the others never are.
    let a = answered(http(&mut r, "GET", WS, &[("Origin", APP)], None));
    assert_eq!(a.status, 426);
    let a = answered(http(
        &mut r,
        "POST",
        "https://relay.example/agents/agent-a/ops",
        &[("Origin", APP)],
        Some("{}"),
    ));
    assert_eq!(a.status, 405);
}

/// An upgrade to a route that is not the WebSocket's is told so (it was told "this route is only
/// a WebSocket upgrade", the reverse); a plain GET of the WebSocket route is told that one.
#[test]
fn an_upgrade_to_a_plain_route_is_told_it_is_not_a_websocket_route() {
    let mut r = relay(&[]);
    let t = token("agent-a", |_| {});
    let f = refused(ws_token(&mut r, "https://relay.example/agents/agent-a/ops", &t));
    assert_eq!(
        (f.code, f.reason.as_str()),
        (4400, "this route is not a WebSocket route: call it over plain HTTP")
    );
    let a = answered(http(&mut r, "GET", WS, &[("Origin", APP)], None));
    assert_eq!(a.status, 426);
    assert!(a.body.contains("this route is only a WebSocket upgrade"), "{}", a.body);
}

#[test]
fn a_prefix_and_a_learned_released_upstream() {
    let mut r = relay(&[("PATH_PREFIX", "/switch"), ("UPSTREAM", "http://127.0.0.1:9/base")]);
    let t = token("agent-a", |_| {});
    assert_eq!(refused(ws_token(&mut r, WS, &t)).code, 4404);
    let url = "https://relay.example/switch/agents/agent-a/connection/ws?connection_id=c-1&expected_generation=g1";
    let Decision::Connect(c) = ws_token(&mut r, url, &t) else {
        panic!()
    };
    assert_eq!(
        c.ws_url,
        "http://127.0.0.1:9/base/agents/agent-a/connection/ws?connection_id=c-1&expected_generation=g1"
    );
    assert_eq!(
        c.sse_url,
        "http://127.0.0.1:9/base/agents/agent-a/events?connection_id=c-1"
    );
    r.learn_released(NOW);
    let Decision::Connect(c) = ws_token(&mut r, url, &t) else {
        panic!()
    };
    assert_eq!(c.transport, Transport::Sse);
    // Switch's statuses of a server without the WebSocket route.
    for status in [403, 404, 405, 426] {
        assert_eq!(upgrade_refused(status), UpgradeRefused::Bridge);
    }
    assert_ne!(upgrade_refused(400), UpgradeRefused::Bridge);
    // 401: the relay's own key refused, a retryable 1011 (never 4401, final for the browser).
    assert_eq!(
        upgrade_refused(401),
        UpgradeRefused::Close {
            code: 1011,
            key_refused: true
        }
    );
    assert_eq!(
        upgrade_refused(502),
        UpgradeRefused::Close {
            code: 1011,
            key_refused: false
        }
    );
    assert_eq!(
        serde_json::to_string(&upgrade_refused(401)).unwrap(),
        r#"{"then":"close","code":1011,"keyRefused":true}"#
    );
    assert_eq!(
        serde_json::to_string(&upgrade_refused(500)).unwrap(),
        r#"{"then":"close","code":1011}"#
    );
}

#[test]
fn decisions_serialise_for_the_worker() {
    let mut r = relay(&[]);
    let t = token("agent-a", |_| {});
    let json = serde_json::to_string(&ws_token(&mut r, WS, &t)).unwrap();
    assert!(
        json.starts_with(r#"{"action":"connect","protocol":"agentwire.v1","transport":"auto","agentId":"agent-a""#),
        "{json}"
    );
}

/// Every refusal carries what the Worker logs about it (one line each): kind, status, close
/// code on a socket, the path's agent, the detail; never the token.
#[test]
fn refusals_carry_their_log_line_without_the_token() {
    let mut r = relay(&[]);
    let tok = token("agent-a", |_| {});
    let d = ws(
        &mut r,
        WS,
        &[
            ("Origin", "https://evil.example"),
            (
                "Sec-WebSocket-Protocol",
                &format!("agentwire.v1, agentwire.token.{tok}"),
            ),
        ],
    );
    let log = refused(d.clone()).log;
    assert_eq!(
        (log.kind, log.status, log.code, log.agent.as_deref()),
        ("origin", 403, Some(4403), Some("agent-a"))
    );
    assert!(!serde_json::to_string(&d).unwrap().contains(&tok[..20]));

    let forged = format!("{}x", &tok[..tok.len() - 1]);
    let d = http(
        &mut r,
        "GET",
        "https://relay.example/agents/agent-a/ops",
        &[("Origin", APP), ("Authorization", &format!("Bearer {forged}"))],
        None,
    );
    let a = answered(d.clone());
    let log = a.log.expect("a refusal is logged");
    assert_eq!(
        (log.kind, log.status, log.code, log.agent.as_deref()),
        ("token", 401, None, Some("agent-a"))
    );
    let json = serde_json::to_string(&d).unwrap();
    assert!(!json.contains(&forged[..20]) && !json.contains(&tok[..20]), "{json}");

    let log = answered(http(
        &mut r,
        "GET",
        "https://relay.example/nowhere",
        &[("Origin", APP)],
        None,
    ))
    .log
    .unwrap();
    assert_eq!((log.kind, log.status, log.agent), ("not_found", 404, None));

    let log = refused(ws(
        &mut r,
        "https://relay.example/agents/agent-z/connection/ws?connection_id=c",
        &[(
            "Sec-WebSocket-Protocol",
            &format!("agentwire.v1, agentwire.token.{tok}"),
        )],
    ))
    .log;
    assert_eq!(
        (log.kind, log.code, log.agent.as_deref()),
        ("agent", Some(4403), Some("agent-z"))
    );

    // A preflight answered 204 is no refusal; one refused is.
    let ok = http(
        &mut r,
        "OPTIONS",
        "https://relay.example/agents/agent-a/ops",
        &[("Origin", APP), ("Access-Control-Request-Method", "GET")],
        None,
    );
    assert_eq!(answered(ok).log, None);
    let no = http(
        &mut r,
        "OPTIONS",
        "https://relay.example/agents/agent-a/ops",
        &[
            ("Origin", "https://evil.example"),
            ("Access-Control-Request-Method", "GET"),
        ],
        None,
    );
    assert_eq!(answered(no).log.unwrap().agent.as_deref(), Some("agent-a"));

    // A proxied call names its agent.
    let Decision::Proxy(p) = http(
        &mut r,
        "GET",
        "https://relay.example/agents/agent-a/ops",
        &[("Origin", APP), ("Authorization", &format!("Bearer {tok}"))],
        None,
    ) else {
        panic!("not proxied")
    };
    assert_eq!(p.agent_id, "agent-a");
}

#[test]
fn an_agent_id_with_a_colon_passes_as_the_engine_writes_it() {
    use agentwire_switch::{open::OpenParams, ops};
    const CID: &str = "0f8fad5b-d9cb-469f-a165-70867728950e";
    let mut r = relay(&[("AGENT_KEYS", r#"{"org:bot":"sk_switch_x"}"#)]);
    let t = token("org:bot", |_| {});
    let path = OpenParams::new("org:bot", CID).ws_path().unwrap();
    let Decision::Connect(c) = ws_token(&mut r, &format!("https://relay.example{path}"), &t) else {
        panic!("the engine's open path for org:bot is refused: {path}")
    };
    assert_eq!(
        c.ws_url,
        format!("http://127.0.0.1:7751/agents/org:bot/connection/ws?connection_id={CID}")
    );
    let auth = format!("Bearer {t}");
    for req in [
        ops::op("org:bot", Some(CID), "post_message", r#"{"body":"hi"}"#).unwrap(),
        ops::list_ops("org:bot").unwrap(),
    ] {
        let url = format!("https://relay.example{}", req.path);
        let d = http(
            &mut r,
            req.method.as_str(),
            &url,
            &[("Origin", APP), ("Authorization", &auth)],
            req.body.as_deref(),
        );
        let Decision::Proxy(p) = d else {
            panic!("the engine's {url} is not proxied: {d:?}")
        };
        assert_eq!(p.url, format!("http://127.0.0.1:7751{}", req.path));
        assert!(p.url.contains("/agents/org:bot/"), "{}", p.url);
    }
}

/// `auto`: a learned "no WebSocket route" is kept 5 minutes (as `worker-relay/README.md`
/// says), then the WebSocket is tried again.
#[test]
fn a_learned_released_upstream_is_kept_five_minutes() {
    assert_eq!(RELEASED_MEMORY_MS, 300_000);
    let mut r = relay(&[]);
    let t = token("agent-a", |_| {});
    let transport = |r: &mut Relay, now: Millis| match ws_token_at(r, WS, &t, now) {
        Decision::Connect(c) => c.transport,
        other => panic!("not connected: {other:?}"),
    };
    assert_eq!(transport(&mut r, NOW), Transport::Auto);
    r.learn_released(NOW - 299_000);
    assert_eq!(transport(&mut r, NOW), Transport::Sse);
    r.learn_released(NOW - 300_000);
    assert_eq!(transport(&mut r, NOW), Transport::Auto);
}

/// The log line's `agent` is the path's agent only when it is a plain segment: a path whose
/// agent is not (an escape, a space, a `..`) logs none, so no text a browser chose beyond an
/// id reaches the log as an agent.
#[test]
fn a_refusals_log_names_no_agent_that_is_not_a_plain_id() {
    let mut r = relay(&[]);
    for agent in ["a%2Fb", "..", "a b", "a\"b"] {
        let url = format!("https://relay.example/agents/{agent}/ops");
        let log = answered(http(&mut r, "GET", &url, &[("Origin", APP)], None))
            .log
            .expect("a refusal is logged");
        assert_eq!(log.agent, None, "{url}");
        let url = format!("https://relay.example/agents/{agent}/connection/ws?connection_id=c");
        let log = refused(ws(&mut r, &url, &[("Sec-WebSocket-Protocol", "agentwire.v1")])).log;
        assert_eq!(log.agent, None, "{url}");
    }
}

/// Over HTTP only `Authorization: Bearer <token>` carries the relay token: another scheme
/// with a good token, or `Bearer` with nothing after it, is refused 401 for its form.
#[test]
fn only_a_bearer_authorization_with_a_token_is_read() {
    let mut r = relay(&[]);
    let t = token("agent-a", |_| {});
    for auth in [format!("Basic {t}"), format!("Token {t}"), "Bearer   ".to_owned()] {
        let a = answered(http(
            &mut r,
            "GET",
            "https://relay.example/agents/agent-a/ops",
            &[("Origin", APP), ("Authorization", &auth)],
            None,
        ));
        assert_eq!(a.status, 401, "{auth:?}");
        assert!(
            a.body.contains("Authorization must be Bearer <relay token>"),
            "{auth:?}: {}",
            a.body
        );
    }
    let ok = http(
        &mut r,
        "GET",
        "https://relay.example/agents/agent-a/ops",
        &[("Origin", APP), ("Authorization", &format!("bearer {t}"))],
        None,
    );
    assert!(matches!(ok, Decision::Proxy(_)), "{ok:?}");
}

/// A WebSocket open with one token in the subprotocol and another in the query is refused
/// 4400, whichever of them is good: the relay never picks one of two.
#[test]
fn two_different_relay_tokens_are_refused() {
    let mut r = relay(&[]);
    let good = token("agent-a", |_| {});
    let other = token("agent-a", |c| c.exp -= 1);
    assert_ne!(good, other);
    let d = ws_token(&mut r, &format!("{WS}&token={other}"), &good);
    let no = refused(d);
    assert_eq!((no.code, no.log.kind), (4400, "invalid"), "{no:?}");
    assert!(no.reason.contains("two different relay tokens"), "{}", no.reason);
    // The same token twice is one token.
    let d = ws_token(&mut r, &format!("{WS}&token={good}"), &good);
    assert!(matches!(d, Decision::Connect(_)), "{d:?}");
}

/// An empty token (`?token=`, or the subprotocol `agentwire.token.` with nothing after it) is
/// no token: the close reason says what to send, not that a token was malformed.
#[test]
fn an_empty_relay_token_is_no_token() {
    let mut r = relay(&[]);
    for d in [
        ws(
            &mut r,
            &format!("{WS}&token="),
            &[("Sec-WebSocket-Protocol", "agentwire.v1")],
        ),
        ws_token(&mut r, WS, ""),
    ] {
        let no = refused(d);
        assert_eq!(no.code, 4401, "{no:?}");
        assert!(no.reason.starts_with("no relay token"), "{}", no.reason);
    }
}

/// An answer carries `Access-Control-Allow-Origin` only for an allowed origin: a page of any
/// other origin cannot read the relay's refusals (nor anything else), one of the allowed
/// origins can read why it was refused.
#[test]
fn only_an_allowed_origin_may_read_an_answer() {
    let mut r = relay(&[]);
    let url = "https://relay.example/agents/agent-a/ops";
    for origin in ["https://evil.example", "https://app.example.evil", "null"] {
        let a = answered(http(&mut r, "GET", url, &[("Origin", origin)], None));
        assert_eq!(a.status, 403, "{origin}");
        assert!(
            !a.headers.iter().any(|(n, _)| n.starts_with("Access-Control-")),
            "{origin}: {:?}",
            a.headers
        );
        assert!(a.headers.contains(&("Vary".into(), "Origin".into())), "{origin}");
    }
    let a = answered(http(&mut r, "GET", url, &[("Origin", APP)], None));
    assert_eq!(a.status, 401);
    assert!(
        a.headers.contains(&("Access-Control-Allow-Origin".into(), APP.into())),
        "{:?}",
        a.headers
    );
}

/// `MAX_BODY_BYTES` is the largest body forwarded: a body of exactly that many bytes goes
/// upstream, one byte more is refused 413.
#[test]
fn a_body_at_the_bound_is_forwarded_one_byte_over_is_413() {
    let mut r = relay(&[("MAX_BODY_BYTES", "1024")]);
    let auth = format!("Bearer {}", token("agent-a", |_| {}));
    let url = "https://relay.example/agents/agent-a/ops/post_message";
    let body = |n: usize| format!(r#"{{"body":"{}"}}"#, "x".repeat(n - 11));
    assert_eq!(body(1024).len(), 1024);
    let d = http(
        &mut r,
        "POST",
        url,
        &[("Origin", APP), ("Authorization", &auth)],
        Some(&body(1024)),
    );
    let Decision::Proxy(p) = d else {
        panic!("a body at the bound is not forwarded: {d:?}")
    };
    assert_eq!(p.body.as_deref(), Some(body(1024).as_str()));
    let a = answered(http(
        &mut r,
        "POST",
        url,
        &[("Origin", APP), ("Authorization", &auth)],
        Some(&body(1025)),
    ));
    assert_eq!((a.status, a.log.map(|l| l.kind)), (413, Some("size")));
}

/// The path is read from the first `/` after the authority, however short the host.
#[test]
fn a_short_relay_host_still_routes() {
    let mut r = relay(&[]);
    let auth = format!("Bearer {}", token("agent-a", |_| {}));
    for url in ["http://r/agents/agent-a/ops", "https://r.x/agents/agent-a/ops"] {
        let d = http(&mut r, "GET", url, &[("Origin", APP), ("Authorization", &auth)], None);
        let Decision::Proxy(p) = d else {
            panic!("{url} is not proxied: {d:?}")
        };
        assert_eq!(p.url, "http://127.0.0.1:7751/agents/agent-a/ops");
    }
}

/// An operation's name is lowercase letters, digits and `_` (as every Switch operation is):
/// any other plain segment is no route.
#[test]
fn an_operation_name_is_lowercase_digits_and_underscores() {
    let mut r = relay(&[]);
    let auth = format!("Bearer {}", token("agent-a", |_| {}));
    for name in [
        "Post_message",
        "post-message",
        "post.message",
        "post:message",
        "post~message",
    ] {
        let url = format!("https://relay.example/agents/agent-a/ops/{name}");
        let a = answered(http(
            &mut r,
            "POST",
            &url,
            &[("Origin", APP), ("Authorization", &auth)],
            Some("{}"),
        ));
        assert_eq!((a.status, a.log.map(|l| l.kind)), (404, Some("not_found")), "{name}");
    }
    let url = "https://relay.example/agents/agent-a/ops/post_message2";
    let d = http(
        &mut r,
        "POST",
        url,
        &[("Origin", APP), ("Authorization", &auth)],
        Some("{}"),
    );
    assert!(matches!(d, Decision::Proxy(_)), "{d:?}");
}

/// A 405 says which methods there are (`Allow`, as HTTP requires); no other refusal has one.
#[test]
fn only_a_405_carries_allow() {
    let mut r = relay(&[]);
    let allow = |a: &Answer| a.headers.iter().find(|(n, _)| n == "Allow").map(|(_, v)| v.clone());
    let a = answered(http(
        &mut r,
        "PUT",
        "https://relay.example/agents/agent-a/ops",
        &[("Origin", APP)],
        Some("{}"),
    ));
    assert_eq!((a.status, allow(&a).as_deref()), (405, Some("GET, OPTIONS")));
    // The route's own method and OPTIONS, never a method the route refuses (it sent `Allow:
    // GET, POST, OPTIONS` to every 405, with "use GET" to a POST).
    for (method, url, allowed) in [
        ("POST", "https://relay.example/agents/agent-a/ops", "GET"),
        ("GET", "https://relay.example/agents/agent-a/ops/post_message", "POST"),
        (
            "DELETE",
            "https://relay.example/agents/agent-a/connection/subscribe",
            "POST",
        ),
        ("POST", "https://relay.example/agents/agent-a/connection/ws", "GET"),
    ] {
        let a = answered(http(&mut r, method, url, &[("Origin", APP)], Some("{}")));
        assert_eq!(a.status, 405, "{method} {url}");
        assert_eq!(allow(&a), Some(format!("{allowed}, OPTIONS")), "{method} {url}");
        assert!(a.body.contains(&format!("use {allowed}")), "{}", a.body);
    }
    for (url, status) in [
        ("https://relay.example/agents/agent-a/ops", 401),
        ("https://relay.example/nowhere", 404),
        (WS, 426),
    ] {
        let a = answered(http(&mut r, "GET", url, &[("Origin", APP)], None));
        assert_eq!((a.status, allow(&a)), (status, None), "{url}");
    }
}

/// The relay's answer in place of an upstream's to an HTTP call says, with a `code`, when the
/// upstream did answer: its 401 (the relay's own key refused) carried nothing out, so a post
/// answered with it is a retryable error to the Switch engine, not one that may have run. A
/// redirect (a 303 after a post may say it was carried out) and a status no answer can have are
/// taken as no answer (no code), as the relay's own 502 and 504 for an unreachable or late
/// upstream are. Before, the 401 was a 502 without a code too, which the engine takes for "the
/// server may have carried it out": a refused post was reported as possibly posted, and a user
/// who believed it never sent it again.
#[test]
fn an_upstream_answer_the_relay_replaces_says_whether_the_upstream_answered() {
    use agentwire_switch::error::SwitchError;
    use agentwire_switch::unanswered::answered;
    let cid = "0f8fad5b-d9cb-469f-a165-70867728950e";
    let post = agentwire_switch::ops::op("a", Some(cid), "post_message", r#"{"body":"x"}"#).unwrap();
    for status in [200, 204, 400, 403, 404, 409, 429, 500, 502, 503, 504] {
        assert_eq!(upstream_answer(status), UpstreamAnswer::Pass, "{status}");
    }
    assert_eq!(
        serde_json::to_string(&upstream_answer(401)).unwrap(),
        r#"{"then":"replace","status":502,"body":"{\"code\":\"relay_key_refused\",\"detail\":\"the relay's key for this agent was refused\",\"error\":\"upstream\"}","keyRefused":true}"#
    );
    let replaced = |status| match upstream_answer(status) {
        UpstreamAnswer::Replace { status, body, .. } => answered(&post, SwitchError::http(status, &body)),
        UpstreamAnswer::Pass => panic!("{status} passed"),
    };
    let e = replaced(401);
    assert_eq!(
        (e.status, e.code.as_deref(), e.retryable),
        (Some(502), Some(KEY_REFUSED_CODE), true)
    );
    assert!(!e.message.contains(agentwire_core::MAY_HAVE_RUN), "{}", e.message);
    for status in [0, 101, 199, 301, 303, 399, 600, 999] {
        let e = replaced(status);
        assert_eq!((e.status, e.code, e.retryable), (Some(502), None, false), "{status}");
        let said = match status {
            300..=399 => "with a redirect".to_owned(),
            _ => format!("status {status}"),
        };
        assert!(e.message.contains(&said), "{}", e.message);
        assert!(
            e.message.ends_with(agentwire_core::MAY_HAVE_RUN),
            "{status}: {}",
            e.message
        );
    }
}
