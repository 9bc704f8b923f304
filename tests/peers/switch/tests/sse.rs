//! The SSE stream and beats, mostly in the released generation, compared with the captures of
//! `tests/vectors/switch-0.19/` (ids substituted).

mod common;

use agentwire_peer_switch::Generation;
use common::*;
use serde_json::{json, Value};
use std::time::Duration;

const RESTART_REASON: &str = "the server restarted since your last connection; sequence numbers have been reset and \
    events from before the restart are gone \\u2014 re-read room context";

#[tokio::test]
async fn released_frames_match_the_captures() {
    bounded(async {
        let (h, a, _, room) = world(Generation::Released).await;
        let c = cid();
        let q = format!("connection_id={c}&rooms={room}&protocol=1&protocol_accepts=1&client=peer-probe&client_version=0.0.1");
        let mut s = sse(&h, &a, &q).await;
        assert_eq!(s.header("content-type").as_deref(), Some("text/event-stream; charset=utf-8"));
        assert_eq!(s.header("transfer-encoding").as_deref(), Some("chunked"));
        assert!(s.header("content-length").is_none());
        let (event, data, id) = s.next_raw().await.unwrap();
        assert_eq!((event.as_str(), id), ("connection_state", None));
        assert_eq!(
            data,
            format!(
                r#"{{"connection_id":"{c}","agent_id":"{}","scope":"single","filter":"all","spawn_capable":false,"rooms":["{room}"],"cursor":0,"protocol":1,"heartbeat_interval_seconds":0.1,"server":{{"version":"0.19.0","contracts":{{"agent-protocol":{{"speaks":1,"accepts":1}}}}}},"client":{{"speaks":1,"accepts":1,"artifact":"peer-probe","version":"0.0.1"}}}}"#,
                a.id
            )
        );
        let event_id = h.post_as_user(&room, "bob", "threaded reply @alice \u{2014} ok");
        let (event, data, id) = s.next_raw().await.unwrap();
        assert_eq!((event.as_str(), id.as_deref()), ("message", Some("1")));
        let v: Value = serde_json::from_str(&data).unwrap();
        let ts = v["payload"]["timestamp"].as_u64().unwrap();
        assert_eq!(
            data,
            format!(
                r#"{{"type":"message","room_id":"{room}","bridge_id":null,"channel_type":"channel_public","payload":{{"addressed":true,"sender":"@bob:localhost","sender_name":"@bob:localhost","message_id":"{event_id}","body":"threaded reply @alice \u2014 ok","timestamp":{ts},"thread_id":null,"attachments":[]}},"sequence":1}}"#
            )
        );
        h.shutdown().await;
    })
    .await;
}

#[tokio::test]
async fn open_errors_are_http_statuses() {
    bounded(async {
        let (h, a, _, _) = world(Generation::Released).await;
        let c = cid();
        let path = format!("/agents/{}/events?connection_id={c}", a.id);
        for (auth, body) in [
            (None, "Missing or invalid Authorization header"),
            (Some(format!("Token {}", a.key)), "Missing or invalid Authorization header"),
            (Some("Bearer nope".to_string()), "Invalid credentials"),
        ] {
            let headers: Vec<(&str, &str)> = auth.iter().map(|v| ("authorization", v.as_str())).collect();
            let r = sse_raw(h.addr(), &path, &headers).await.err().unwrap();
            assert_eq!((r.status, r.body.as_str()), (401, body));
            assert!(r.header("content-type").unwrap().starts_with("text/plain"));
        }
        let cases = [
            ("scope=all".to_string(), 400, r#"{"detail":"connection_id is required to open an event stream; generate a UUID and reuse it when reconnecting so the connection survives the drop"}"#.to_string()),
            (format!("connection_id={c}&scope=everything"), 400, r#"{"detail":"scope must be 'single' or 'all', got 'everything'"}"#.to_string()),
            (format!("connection_id={c}&start_from=banana"), 400, r#"{"detail":"start_from must be 'head' or a sequence number, got 'banana'"}"#.to_string()),
            (format!("connection_id={c}&rooms=00000000-0000-0000-0000-000000000000"), 403, r#"{"detail":"Room not found: 00000000-0000-0000-0000-000000000000"}"#.to_string()),
            (format!("connection_id={c}&protocol=2&protocol_accepts=2"), 409, r#"{"detail":{"message":"this client speaks agent-protocol 2-2 and the server speaks 1-1; the ranges do not overlap, so update switch-core","contract":"agent-protocol","server":{"version":"0.19.0","speaks":1,"accepts":1},"client":{"speaks":2,"accepts":2},"remedy":"update switch-core"}}"#.to_string()),
            (format!("connection_id={c}&protocol=one"), 422, r#"{"detail":[{"type":"int_parsing","loc":["query","protocol"],"msg":"Input should be a valid integer, unable to parse string as an integer","input":"one"}]}"#.to_string()),
        ];
        for (query, status, body) in cases {
            let r = sse_try(&h, &a, &query, None).await.err().unwrap();
            assert_eq!((r.status, r.body), (status, body), "{query}");
        }
        assert_eq!(h.connections(&a.id), 0);
        h.shutdown().await;
    })
    .await;
}

#[tokio::test]
async fn last_event_id_wins_over_start_from() {
    bounded(async {
        let (h, a, _, room) = world(Generation::Released).await;
        for i in 1..=3 {
            h.post_as_user(&room, "carol", &format!("m{i}"));
        }
        let q = format!("connection_id={}&rooms={room}&start_from=0", cid());
        let mut s = sse_try(&h, &a, &q, Some("2")).await.ok().unwrap();
        assert_eq!(s.next().await.1["cursor"], 2);
        let (event, data, id) = s.next().await;
        assert_eq!(
            (event.as_str(), id.as_deref(), data["payload"]["body"].as_str()),
            ("message", Some("3"), Some("m3"))
        );
        s.quiet(Duration::from_millis(200)).await;
        h.shutdown().await;
    })
    .await;
}

#[tokio::test]
async fn beats() {
    bounded(async {
        let (h, a, _, room) = world(Generation::Released).await;
        let c = cid();
        let mut s = sse(&h, &a, &format!("connection_id={c}&rooms={room}")).await;
        s.next().await;
        assert_eq!(beat(&h, &a, &c, 0).await, (200, json!({"ok": true, "rooms": [room], "cursor": 0})));
        h.post_as_user(&room, "carol", "one");
        h.post_as_user(&room, "carol", "two");
        assert_eq!(beat(&h, &a, &c, 1).await.1["cursor"], 1);
        assert_eq!(beat(&h, &a, &c, 0).await.1["cursor"], 1, "never rewinds");
        assert_eq!(beat(&h, &a, &c, 99).await.1["cursor"], 2, "clamped to the head");
        let raw = post(&h, &format!("/agents/{}/connection/beat", a.id), &a.key, r#"{"connection_id":"nope","cursor":0}"#).await;
        assert_eq!((raw.status, raw.body.as_str()), (404, r#"{"detail":"connection nope is not open; reconnect and resume from your cursor"}"#));
        let bad = post(&h, &format!("/agents/{}/connection/beat", a.id), &a.key, r#"{"cursor":0}"#).await;
        assert_eq!(
            (bad.status, bad.body.as_str()),
            (422, r#"{"detail":[{"type":"missing","loc":["body","connection_id"],"msg":"Field required","input":{"cursor":0}}]}"#)
        );
        assert_eq!(route(&h, &a, "beat", "not json").await.0, 422);
        assert_eq!(route(&h, &a, "beat", &format!(r#"{{"connection_id":"{c}","cursor":"x"}}"#)).await.0, 422);
        // switch-core 0.19 has no generations: an extra `generation` is ignored (FastAPI).
        let (status, body) = route(&h, &a, "beat", &format!(r#"{{"connection_id":"{c}","cursor":2,"generation":0}}"#)).await;
        assert_eq!((status, body["cursor"].as_u64()), (200, Some(2)));
        // The stream goes away: the connection survives, but beats alone cannot hold it.
        drop(s);
        let mut answer = (0, Value::Null);
        for _ in 0..50 {
            answer = beat(&h, &a, &c, 2).await;
            if answer.0 == 409 {
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        let detail = format!("connection {c} has no stream attached; reopen the event stream");
        // The capture (beat_no_stream): only the detail, no code, in the released generation.
        assert_eq!(answer, (409, json!({"detail": detail})));
        assert_eq!(h.connections(&a.id), 1);
        let r = request(h.addr(), "POST", &format!("/agents/{}/connection/beat", a.id), &[], Some("{}")).await;
        assert_eq!((r.status, r.body.as_str()), (401, "Missing or invalid Authorization header"));
        h.shutdown().await;
    })
    .await;
}

#[tokio::test]
async fn takeover_and_lapse_end_the_stream() {
    bounded(async {
        let mut c = cfg(Generation::Released);
        // Long enough that s2 opens before s1 lapses on a loaded machine.
        c.heartbeat_ttl = Duration::from_millis(1_500);
        let h = peer(c).await;
        let a = h.add_agent("alice");
        let id = cid();
        let mut s1 = sse(&h, &a, &format!("connection_id={id}")).await;
        s1.next().await;
        let mut s2 = sse(&h, &a, &format!("connection_id={id}")).await;
        assert_eq!(s2.next().await.0, "connection_state");
        assert_eq!(
            s1.next_raw().await,
            Some((
                "evicted".into(),
                r#"{"reason":"another stream attached to this connection"}"#.into(),
                None
            ))
        );
        assert_eq!(s1.next_raw().await, None);
        assert!(s1.finished, "the stream ends with the last chunk");
        // No beats: the connection lapses.
        assert_eq!(
            s2.next_raw().await,
            Some((
                "evicted".into(),
                // The capture evicted_heartbeat.sse, byte for byte.
                r#"{"reason":"heartbeat lapsed"}"#.into(),
                None
            ))
        );
        assert_eq!(s2.next_raw().await, None);
        assert!(s2.finished);
        assert_eq!(beat(&h, &a, &id, 0).await.0, 404);
        assert_eq!(h.connections(&a.id), 0);
        h.shutdown().await;
    })
    .await;
}

#[tokio::test]
async fn beats_keep_a_stream_alive() {
    bounded(async {
        let mut c = cfg(Generation::Released);
        c.heartbeat_ttl = Duration::from_millis(600);
        let h = peer(c).await;
        let a = h.add_agent("alice");
        let id = cid();
        let mut s = sse(&h, &a, &format!("connection_id={id}")).await;
        s.next().await;
        // 1.6 s of beats every 100 ms, well past the TTL (a pause under 500 ms is tolerated).
        for _ in 0..16 {
            assert_eq!(beat(&h, &a, &id, 0).await.0, 200);
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        assert_eq!(h.connections(&a.id), 1);
        h.shutdown().await;
    })
    .await;
}

#[tokio::test]
async fn keepalive_comments_when_idle() {
    bounded(async {
        let mut c = cfg(Generation::Released);
        c.keepalive = Duration::from_millis(100);
        let h = peer(c).await;
        let a = h.add_agent("alice");
        let mut s = sse(&h, &a, &format!("connection_id={}", cid())).await;
        s.next().await;
        assert_eq!(s.item_within(WAIT).await, Some(Item::Comment("keepalive".into())));
        assert_eq!(s.item_within(WAIT).await, Some(Item::Comment("keepalive".into())));
        h.shutdown().await;
    })
    .await;
}

#[tokio::test]
async fn restart_gap_in_the_released_shape() {
    bounded(async {
        let (h, a, _, room) = world(Generation::Released).await;
        let id = cid();
        let mut s = sse(&h, &a, &format!("connection_id={id}&rooms={room}")).await;
        s.next().await;
        for i in 1..=3 {
            h.post_as_user(&room, "carol", &format!("m{i}"));
            s.next().await;
        }
        h.restart(true);
        assert_eq!(s.next_raw().await, None);
        assert!(s.finished);
        // Numbering restarts at 1; the client's cursor (3) is above the new head (2).
        h.post_as_user(&room, "carol", "new 1");
        h.post_as_user(&room, "carol", "new 2");
        let mut s = sse_try(&h, &a, &format!("connection_id={id}&rooms={room}"), Some("3"))
            .await
            .ok()
            .unwrap();
        s.next().await;
        assert_eq!(
            s.next_raw().await,
            Some((
                "gap".into(),
                // As gap_restart.sse: from_sequence and resumed_at are both the head.
                format!(r#"{{"from_sequence":2,"resumed_at":2,"reason":"{RESTART_REASON}"}}"#),
                None
            ))
        );
        h.post_as_user(&room, "carol", "after");
        assert_eq!(s.next().await.2.as_deref(), Some("3"));
        h.shutdown().await;
    })
    .await;
}

#[tokio::test]
async fn the_current_generation_serves_sse_with_the_newer_fields() {
    bounded(async {
        let (h, a, _, room) = world(Generation::Current).await;
        let id = cid();
        let mut s1 = sse(&h, &a, &format!("connection_id={id}&rooms={room}")).await;
        let (_, state, _) = s1.next().await;
        let generation = state["generation"].as_u64().unwrap();
        assert_eq!(
            state["server"]["contracts"]["agent-protocol"],
            json!({"speaks": 6, "accepts": 1})
        );
        let mut s2 = sse(&h, &a, &format!("connection_id={id}&expected_generation={generation}")).await;
        s2.next().await;
        let (event, data, _) = s1.next().await;
        assert_eq!(
            (event.as_str(), data),
            (
                "evicted",
                json!({"code": "taken_over", "reason": "another stream attached to this connection"})
            )
        );
        // A stale generation is refused with HTTP 409 and code taken_over.
        let r = sse_try(
            &h,
            &a,
            &format!("connection_id={id}&expected_generation={generation}"),
            None,
        )
        .await
        .err()
        .unwrap();
        assert_eq!(r.status, 409);
        let v = r.json();
        assert_eq!(v["code"], "taken_over");
        assert!(v["detail"].as_str().unwrap().starts_with("taken_over: "));
        h.shutdown().await;
    })
    .await;
}

#[tokio::test]
async fn events_older_than_the_max_age_leave_the_buffer() {
    bounded(async {
        let mut c = cfg(Generation::Released);
        // 1 s: "fresh" must still be younger than it when the open trims the buffer, however
        // loaded the machine.
        c.replay_max_age = Duration::from_millis(1_000);
        let h = peer(c).await;
        let a = h.add_agent("alice");
        let room = h.add_room("lobby", &[&a.id]);
        h.post_as_user(&room, "carol", "old");
        h.post_as_user(&room, "carol", "old too");
        tokio::time::sleep(Duration::from_millis(1_500)).await;
        h.post_as_user(&room, "carol", "fresh");
        let mut s = sse(&h, &a, &format!("connection_id={}&rooms={room}&start_from=0", cid())).await;
        assert_eq!(s.next().await.1["cursor"], 0);
        let (event, data, _) = s.next_raw().await.unwrap();
        assert_eq!(
            (event.as_str(), data.as_str()),
            (
                "gap",
                r#"{"from_sequence":0,"resumed_at":2,"reason":"events older than the retention window were dropped; re-read room context"}"#
            )
        );
        let (_, data, id) = s.next().await;
        assert_eq!((id.as_deref(), data["payload"]["body"].as_str()), (Some("3"), Some("fresh")));
        h.shutdown().await;
    })
    .await;
}

/// The beat of a connection without a stream: the released body is the capture's
/// (`beat_no_stream`: only `detail`), the current one carries `code` (switch-agent-connection.md).
#[tokio::test]
async fn a_beat_without_a_stream_has_a_code_only_in_the_current_generation() {
    bounded(async {
        for (generation, want_code) in [(Generation::Released, None), (Generation::Current, Some("no_stream"))] {
            let (h, a, _, _) = world(generation).await;
            let c = cid();
            let mut s = sse(&h, &a, &format!("connection_id={c}")).await;
            s.next().await;
            drop(s);
            let mut answer = (0, Value::Null);
            for _ in 0..50 {
                answer = beat(&h, &a, &c, 0).await;
                if answer.0 == 409 {
                    break;
                }
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            let detail = format!("connection {c} has no stream attached; reopen the event stream");
            let want = match want_code {
                Some(code) => json!({"detail": detail, "code": code}),
                None => json!({"detail": detail}),
            };
            assert_eq!(answer, (409, want), "{generation:?}");
            h.shutdown().await;
        }
    })
    .await;
}

/// switch-released-0.19.md: the stream needs `Accept: text/event-stream`; without it the server
/// answers a legacy long-poll JSON. The peer answers a JSON body (no stream, nothing opened), so a
/// client that forgets the header fails here as it would against the real server.
#[tokio::test]
async fn without_accept_event_stream_the_answer_is_json_not_a_stream() {
    bounded(async {
        for generation in [Generation::Released, Generation::Current] {
            let (h, a, _, _) = world(generation).await;
            let path = format!("/agents/{}/events?connection_id={}", a.id, cid());
            let auth = bearer(&a.key);
            for accept in [None, Some("application/json"), Some("*/*")] {
                let mut headers = vec![("authorization", auth.as_str())];
                if let Some(v) = accept {
                    headers.push(("accept", v));
                }
                let r = request(h.addr(), "GET", &path, &headers, None).await;
                assert_eq!(r.status, 200, "{generation:?} {accept:?}");
                assert_eq!(r.header("content-type").as_deref(), Some("application/json"));
                assert_eq!(r.json(), json!({"events": []}));
            }
            assert_eq!(h.connections(&a.id), 0, "nothing was opened");
            // Any case and parameters, in a list: a stream.
            let headers = [
                ("authorization", auth.as_str()),
                ("accept", "text/html, Text/Event-Stream;q=0.9"),
            ];
            let mut s = sse_raw(h.addr(), &path, &headers).await.ok().unwrap();
            assert_eq!(s.next().await.0, "connection_state");
            h.shutdown().await;
        }
    })
    .await;
}

/// switch-core 0.19 has no placements route and no generations: `connection/placements` is an
/// unknown route (404 `{"detail":"Not Found"}` after the key), a beat's `generation` and an open's
/// `expected_generation` are ignored. The current generation fences with both.
#[tokio::test]
async fn the_released_generation_has_no_placements_and_no_fencing() {
    bounded(async {
        let (h, a, _, room) = world(Generation::Released).await;
        let c = cid();
        let mut s1 = sse(&h, &a, &format!("connection_id={c}&rooms={room}")).await;
        s1.next().await;
        let placed = format!(r#"{{"connection_id":"{c}","placements":{{"s1":"{room}"}}}}"#);
        let r = post(&h, &format!("/agents/{}/connection/placements", a.id), &a.key, &placed).await;
        assert_eq!((r.status, r.body.as_str()), (404, r#"{"detail":"Not Found"}"#));
        let r = post(&h, &format!("/agents/{}/connection/placements", a.id), "nope", &placed).await;
        assert_eq!((r.status, r.body.as_str()), (401, "Invalid credentials"));
        let stale = format!(r#"{{"connection_id":"{c}","cursor":0,"generation":12345}}"#);
        assert_eq!(route(&h, &a, "beat", &stale).await.0, 200);
        // An open with any expected_generation takes the connection over.
        let mut s2 = sse(&h, &a, &format!("connection_id={c}&expected_generation=12345")).await;
        assert_eq!(s2.next().await.0, "connection_state");
        assert_eq!(s1.next().await.0, "evicted");
        h.shutdown().await;
        // The current generation refuses both.
        let (h, a, _, room) = world(Generation::Current).await;
        let mut s1 = sse(&h, &a, &format!("connection_id={c}&rooms={room}")).await;
        s1.next().await;
        let (status, body) = route(&h, &a, "beat", &stale).await;
        assert_eq!((status, body["code"].as_str()), (409, Some("taken_over")));
        let r = sse_try(&h, &a, &format!("connection_id={c}&expected_generation=12345"), None).await;
        assert_eq!(r.err().unwrap().status, 409);
        let placed = format!(r#"{{"connection_id":"{c}","placements":{{"s1":"{room}"}}}}"#);
        let (status, body) = route(&h, &a, "placements", &placed).await;
        assert_eq!((status, body["rooms"].clone()), (200, json!([room])));
        h.shutdown().await;
    })
    .await;
}
